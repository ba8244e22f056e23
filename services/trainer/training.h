/* train.h - the training loop (docs/training.md): the work split, epochs of
 * synchronous data-parallel steps, evaluation, checkpoints and resume. */
#ifndef TR_TRAIN_H
#define TR_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "embeddings.h"
#include "feats.h"
#include "fanouts.h"
#include "decoder.h"
#include "metrics.h"
#include "proto.h"
#include "ring.h"
#include "samplers.h"

struct tr_config {
	uint32_t rank, world;
	uint32_t epochs, batch, eval_batch, layers, hidden, prefetch;
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

/* What the loop runs on, all borrowed. */
struct tr_env {
	struct tr_samplers *samplers;
	struct tr_ring *ring;
	struct tr_emb *emb;             /* learnable embeddings (emb.h), NULL: none */
	struct tr_feats *feats;         /* feature rows from the stores (feats.h), NULL: from the samplers */
	const struct gnn_layout *graph;
	struct gnn_metrics *metrics;
	bool (*stop)(void);
};

/* Resolves the fanout texts on the graph's relations into c->fanouts and
 * c->eval_fanouts (GNN_EINVAL, logged, for a relation named that the graph
 * lacks, or one without a list). */
int tr_config_resolve(struct tr_config *c, const struct gnn_layout *g);

/* The digest of the model's shape and graph a checkpoint must match. */
uint64_t tr_model_hash(const struct tr_config *c, const struct gnn_layout *g);
/* The digest every rank must share to train together (tr_ring_connect). */
uint64_t tr_config_hash(const struct tr_config *c, const struct gnn_layout *g);

/* Trains (or resumes, or finds the run finished in the checkpoint dir) and
 * evaluates. On GNN_OK *out holds the result and *resumed_finished tells
 * whether it was already there. GNN_ECLOSED: stop requested. GNN_ESTALE:
 * a graph store lost the embeddings (it restarted): every rank must
 * resume from the checkpoint, as after a ring failure. Registers its
 * metrics in env->metrics (gnn_trainer_*). */
int tr_train(const struct tr_config *c, const struct tr_env *env, struct gnn_result *out, bool *already_finished);

/* Sets the trainer's gauges (epoch, accuracies, finished) to a finished
 * run's result learnt from a peer (tr_ring_peer_result), as tr_train does
 * for one found in the checkpoint dir. */
int tr_publish_result(struct gnn_metrics *reg, const struct gnn_result *res);

#endif
