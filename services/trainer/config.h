/* config.h - the trainer's configuration: struct tr_config, made from
 * the model table's values (libcommon/modelcfg.h) by tr_config_from_model,
 * resolved on the graph, and the two digests that guard checkpoints (the
 * model hash) and the ring (the configuration hash). gnn-trainer and
 * `gnn-trainer infer` both build it here, so the hashes agree. */
#ifndef TR_CONFIG_H
#define TR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "decoder.h"
#include "embeddings.h"
#include "fanouts.h"
#include "layout.h"
#include "model.h"
#include "modelcfg.h"
#include "proto.h"

struct tr_config {
	/* The model's configuration as given (modelcfg.h): the source of the
	 * typed fields below (tr_config_from_model), the model hash, and the
	 * record in checkpoints and result.json. */
	struct gnn_model_cfg mcfg;
	uint32_t rank, world;
	uint32_t epochs, batch, eval_batch, layers, hidden, prefetch;   /* epochs 0: the run decides (training.c) */
	uint32_t min_steps, eval_every;
	uint32_t val_nodes, test_nodes;  /* evaluation samples (0: the whole split) */
	uint32_t num_bases;              /* rgcn: basis matrices per layer (0: none) */
	struct gnn_fanouts fanouts_text, eval_fanouts_text;  /* as given (--fanouts, --eval-fanouts) */
	/* Resolved on the graph's relations (tr_config_resolve): layer l's
	 * fanout for relation r at l num_rels + r. */
	uint32_t num_rels;
	int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	int32_t eval_fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	float lr, weight_decay, dropout;
	uint64_t seed;
	const char *model;            /* tr_model_find's name; NULL: graphsage */
	uint64_t embed_hash;          /* tr_emb_hash of the learnable embeddings; 0: none */
	float embed_lr;
	uint32_t cache_presample;     /* minibatches that rank the nodes for the feature cache */
	const char *checkpoint_dir;   /* NULL: no checkpoints */
	double checkpoint_interval_s; /* also checkpoint within an epoch this often (0: only after each) */
	double log_interval_s;
	/* --task link (docs/training.md, "Link prediction"); false: node
	 * classification, and none of the fields below is read. */
	bool link;
	const char *data;             /* the partition output: its edge split and training edges */
	uint32_t emb_dim;             /* the last layer's width: the node embeddings */
	enum tr_decoder_kind decoder;
	uint32_t decoder_hidden;      /* mlp: h */
	uint32_t neg_k;               /* negatives per positive, >= 1 */
	uint64_t epoch_pairs;         /* positives an epoch visits over all ranks, a new sample each epoch; 0: all */
	bool neg_in_batch;            /* from the batch's other destinations, not uniform */
	bool exclude;                 /* the positives' edges out of their neighbourhoods (GNN_MB_EXCLUDE) */
	bool degree_scale;            /* tr_model_cfg's (model.h): any task, on by default for link */
};


/* The typed fields of *c from mc (checked as flags were: ranges, choices),
 * with a copy of mc kept in c->mcfg (whose strings point into c->mcfg:
 * copy a tr_config by assignment only while the original lives): the model, its
 * widths, the training recipe, the link task's fields (emb_dim 0: hidden,
 * decoder_hidden 0: emb_dim), and the fanout texts, parsed (--layers not
 * given beside --fanouts: their number, recorded in c->mcfg): GNN_EINVAL,
 * logged, for a fanout list that is not one per layer. The process's own
 * fields (rank, checkpoints, timing) are the caller's. */
int tr_config_from_model(struct tr_config *c, const struct gnn_model_cfg *mc);

/* The model c describes on graph g, for tr_model_new: its widths, the
 * classes (a link model's last layer gives the embeddings instead), and
 * the schema it reads: g's, or with learnable embeddings emb (NULL:
 * none) g's widened by them into *mschema (the caller's, which must
 * outlive *mc's use). */
void tr_config_model(const struct tr_config *c, const struct gnn_layout *g, const struct tr_emb *emb,
		     struct gnn_schema *mschema, struct tr_model_cfg *mc);

/* A link model's decoder (c->link), parameters not included. */
struct tr_decoder tr_config_decoder(const struct tr_config *c);

/* The learnable embeddings' options of mc (dim, types, input, optimizer,
 * lr, seed) into *eo; the rest of *eo is left as it is. */
void tr_emb_opts_from_model(struct tr_emb_opts *eo, const struct gnn_model_cfg *mc);

/* Resolves the fanout texts on the graph's relations into c->fanouts and
 * c->eval_fanouts (GNN_EINVAL, logged, for a relation named that the graph
 * lacks, or one without a list). */
int tr_config_resolve(struct tr_config *c, const struct gnn_layout *g);

/* The digest of the model's shape and graph a checkpoint must match. */
uint64_t tr_model_hash(const struct tr_config *c, const struct gnn_layout *g);
/* The digest every rank must share to train together (tr_ring_connect). */
uint64_t tr_config_hash(const struct tr_config *c, const struct gnn_layout *g);

#endif
