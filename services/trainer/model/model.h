/* model.h - the model seam: what the trainer needs of a model, and the
 * registry of models (--model). A model is an operations table (struct
 * tr_model_ops) in a file of its own; GraphSAGE-mean (sage.c) is the first.
 * Everything a model has in common lives here once: the configuration and
 * its checks, the minibatch checks, softmax cross-entropy on the logits,
 * the training step (forward, loss, backward), the loss alone and
 * prediction. Kernels the models share are in kernels.h, the optimizer in
 * adam.h. docs/HACKING.md, "Adding a model", walks through adding one.
 *
 * A model reads proto.h's struct gnn_minibatch as the sampler sends it
 * (typed blocks in DGL's convention, the input nodes' types, one feature
 * matrix per type with features, labels of the seeds) and maps it to
 * logits (num_seeds x num_classes). Its
 * parameters live in one contiguous float block and its gradients in
 * another of the same layout, so the all-reduce, Adam and checkpoints each
 * see one array. Dropout masks must be a pure function of (dropout_seed,
 * element) so that steps are reproducible and the gradient check can
 * difference the loss. Not thread-safe: one model per thread. */
#ifndef TR_MODEL_H
#define TR_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "proto.h"

/* What the model is for. The graph's schema decides the input: node
 * types (each with its feature width, 0 for a type without features) and
 * relations. Layer 0 reads D-wide input rows, D = in_dim, or hidden when
 * no type has features (in_dim 0): a node of a type with features takes
 * its feature row, zero-padded to D when the type is narrower; a node of a
 * type without features takes its type's learned vector (D parameters of
 * the model, trained). docs/model.md, "R-GCN", has the layouts. */
enum tr_encoder { TR_ENC_AUTO, TR_ENC_ON, TR_ENC_OFF };

/* Whether layer 0's input rows are a per-type projection (input.h) for
 * this setting, a schema of num_types node types whose widest features
 * are in_dim wide, and hidden: auto projects a typed graph's rows when
 * some are wider than hidden (bag-of-words: the encoder's point is to
 * bring them down; rows already narrower are cheaper padded, and the
 * relations' weights are no wider than the hidden layers' then). */
static inline bool tr_encoder_projects(enum tr_encoder e, uint32_t num_types, uint32_t in_dim, uint32_t hidden)
{
	return e == TR_ENC_ON || (e == TR_ENC_AUTO && num_types > 1 && in_dim > hidden);
}

/* --encoder's value: "on", "off", anything else auto (the option table
 * checks the choices). */
enum tr_encoder tr_encoder_named(const char *v);

struct tr_model_cfg {
	uint32_t num_layers;   /* 1 .. GNN_PROTO_MAX_LAYERS */
	uint32_t in_dim;       /* the widest type's feature width (gnn_schema_max_feat_dim); >= 1
				* without a schema, 0 only when no type of the schema has features */
	uint32_t hidden;       /* width of every hidden layer, >= 1 */
	uint32_t num_classes;  /* >= 2 */
	float dropout;         /* probability in [0, 1) */
	const char *model;     /* a registered name (tr_model_find); NULL: "graphsage" */
	/* Borrowed, read by tr_model_new only. NULL: the plain schema, one
	 * type with in_dim features and one relation. graphsage and gcn read
	 * one relation (any number of types); rgcn any number of both. */
	const struct gnn_schema *schema;
	uint32_t num_bases;    /* rgcn: basis matrices per layer, 1..relations; 0: a full weight
				* matrix per relation (other models: 0) */
	enum tr_encoder encoder;   /* layer 0's input rows (input.h; tr_encoder_projects) */
	uint32_t heads;        /* rgat, gat: attention heads of the hidden layers (0: 1) */
	uint64_t input_grad;   /* bit t set: the backward pass also gives the gradient of layer
				* 0's input rows of node type t (learnable embeddings,
				* embeddings.h: tr_model_input_grad); 0: none. Only the
				* types asked for: at ogbn-mag's size the papers' rows,
				* which learn nothing, were most of that work */
	uint64_t embed_only;   /* bit t set: type t's input rows are a learnable embedding
				* alone (no features beside it). Where the encoder projects
				* and the rows are as wide as it (hidden), they enter layer
				* 0 as they are, without W_t and b_t: a linear map of a
				* free table can learn nothing the table cannot, and at
				* ogbn-mag's size it was most of the step's extra cost
				* (DGL's DistEmbedLayer does the same; input.h) */
	/* The last layer's aggregate of each destination v (its X row but
	 * the bias column) times sqrt(deg(v) + 1), deg(v) its in-degree in
	 * the block: outputs whose size grows with the node's degree. A dot
	 * product of two such embeddings then carries both degrees, as the
	 * symmetric normalisation D^-1/2 (A + I) D^-1/2 of GAE's GCN does
	 * (docs/training.md, "Link prediction"). */
	bool degree_scale;
};

/* Layer 0's width for cfg on a schema of num_types types: hidden when the
 * encoder projects (or no type has features), else in_dim (input.h). */
static inline uint32_t tr_input_width(const struct tr_model_cfg *cfg, uint32_t num_types)
{
	return cfg->in_dim == 0 || tr_encoder_projects(cfg->encoder, num_types, cfg->in_dim, cfg->hidden) ?
		       cfg->hidden :
		       cfg->in_dim;
}

/* Time and work in the matrix products of one call: flops / matmul_s is
 * the GFLOP/s `gnn-trainer bench` reports. */
struct tr_kstats {
	double flops, matmul_s;
};

/* What a model implements. self is the model's own state (create's). */
struct tr_model_ops {
	const char *name;      /* its --model value */
	const char *summary;   /* one line for --help and docs */
	/* Allocates self for cfg (already checked against the ranges above,
	 * cfg->model its name, cfg->schema never NULL and valid during the
	 * call only; a model may refuse more, logged, with GNN_EINVAL),
	 * parameters zero. */
	int (*create)(const struct tr_model_cfg *cfg, void **self);
	void (*destroy)(void *self);
	/* Initial parameters, a pure function of seed (every rank the same). */
	void (*init)(void *self, uint64_t seed);
	size_t (*num_params)(const void *self);
	float *(*params)(void *self);   /* [num_params], the model's */
	float *(*grads)(void *self);    /* [num_params], the model's */
	/* Logits of mb's seeds into *logits (num_seeds x num_classes, the
	 * model's, valid until its next call); with train, dropout with the
	 * mask of dropout_seed. Keeps what backward needs. mb passed the
	 * O(layers) checks of tr_model_check. */
	int (*forward)(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		       struct tr_kstats *ks, const float **logits);
	/* After a forward with train: the gradient of the loss whose gradient
	 * with respect to the logits is dlogits, written over the gradient
	 * block. */
	int (*backward)(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks);
	/* Layer l alone, without dropout (layer-wise inference, inference.c):
	 * block b's destination rows of the layer's output, from its source
	 * rows h (num_src x in_l), into out (num_dst x out_l, the caller's);
	 * ReLU after every layer but the last, as forward does. */
	int (*infer_layer)(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			   struct tr_kstats *ks);
	/* Layer 0's input row (D floats into out) of a node of type t (below
	 * the schema's types) whose feature row is feat (feat_dim floats of
	 * its type; NULL exactly for a type without features). */
	void (*input_row)(const void *self, uint32_t t, const float *feat, float *out);
	/* After a backward with cfg input_grad: the gradient of layer 0's
	 * input rows (num_src x *ld, the model's, valid until its next call). */
	const float *(*input_grad)(const void *self, size_t *ld);
	/* The weight matrices each layer multiplies its aggregate by (the
	 * products `gnn-trainer bench` measures the peak on); NULL: 1. */
	uint32_t (*weight_mats)(const void *self);
};

/* The registered model of this name, or NULL. */
const struct tr_model_ops *tr_model_find(const char *name);
/* The i-th registered model, or NULL past the last. */
const struct tr_model_ops *tr_model_at(size_t i);
/* The registered names as "a|b|c" (for an option's choices). */
const char *tr_model_names(void);

struct tr_model;

/* Allocates the model cfg->model names (parameters zero; see
 * tr_model_init) and checks the configuration (GNN_EINVAL, logged, when a
 * value is outside the ranges above or the name is unknown). *out is the
 * caller's: tr_model_free. */
int tr_model_new(const struct tr_model_cfg *cfg, struct tr_model **out);
void tr_model_free(struct tr_model *m);

/* The model's initial parameters (its ops->init); every rank starts identical. */
void tr_model_init(struct tr_model *m, uint64_t seed);
/* The configuration the model was made with (model: the canonical name;
 * schema: NULL, the schema being tr_model_new's to read only). */
const struct tr_model_cfg *tr_model_config(const struct tr_model *m);

size_t tr_model_num_params(const struct tr_model *m);
/* Its ops->weight_mats (1 when the model has none). */
uint32_t tr_model_weight_mats(const struct tr_model *m);
/* The parameter and gradient blocks, [tr_model_num_params] floats each,
 * owned by the model. */
float *tr_model_params(struct tr_model *m);
float *tr_model_grads(struct tr_model *m);

/* Checks that mb fits the model before any work: num_layers equal to the
 * model's; as many node types and relations as the schema, each type's
 * feat_dims as the schema's, feature rows present for every type with
 * features and rows, input types below num_types and counted in
 * type_rows; blocks chained, their CSR over (dst, relation) rows well
 * formed; labels present (when need_labels) and each in
 * [-1, num_classes). GNN_EINVAL with why (why_len bytes, NUL-terminated)
 * saying what does not match. */
int tr_model_check(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels,
		   char *why, size_t why_len);

struct tr_step_stats {
	double loss;           /* mean cross-entropy over labelled seeds */
	uint32_t labelled;     /* seeds with a label >= 0 */
	uint32_t correct;      /* of those, argmax(logits) == label */
	double flops;          /* floating-point operations of the matrix products */
	double matmul_s;       /* seconds spent inside those products (flops / matmul_s
				* is the GFLOP/s `gnn-trainer bench` reports) */
};

/* One training step's computation: forward with dropout (mask from
 * dropout_seed), the mean cross-entropy over the labelled seeds, and its
 * gradient with respect to every parameter, written over the gradient
 * block (seeds labelled -1 contribute nothing; with none labelled the
 * gradient is zero). mb must have passed tr_model_check with labels. */
int tr_model_train_step(struct tr_model *m, const struct gnn_minibatch *mb, uint64_t dropout_seed,
			struct tr_step_stats *st);

/* The loss alone, forward only: with train true, dropout with the mask of
 * dropout_seed (the same mask tr_model_train_step uses); with train false,
 * no dropout. For the gradient check. */
int tr_model_loss(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		  double *loss);

/* Layer l's input and output widths: D (in_dim, or hidden when in_dim is
 * 0), hidden..., num_classes. */
void tr_model_layer_dims(const struct tr_model *m, uint32_t l, uint32_t *in, uint32_t *out);

/* Layer 0's input row of one node, D floats into out (the caller's): the
 * node's feature row feat (its type's feat_dim floats, the caller's),
 * zero-padded to D, or, for a type without features (feat NULL), the
 * type's learned vector. What layer-wise inference gathers for layer 0.
 * GNN_EINVAL when t is not a type of the schema, or feat is NULL for a
 * type with features or not NULL for one without. feat may be out itself. */
int tr_model_input_row(const struct tr_model *m, uint32_t t, const float *feat, float *out);

/* Whether its input rows are projected per type (input.h): a product per
 * row, which layer-wise inference makes once per node rather than per edge. */
bool tr_model_input_projects(const struct tr_model *m);

/* After tr_model_train_step of a model made with input_grad: the
 * gradient of the loss with respect to layer 0's input rows, one row per
 * input node of the minibatch (num_src x *ld floats, the first D columns
 * used; the model's, valid until its next call). */
const float *tr_model_input_grad(const struct tr_model *m, size_t *ld);

/* Layer-wise inference, one layer for the destination rows of one block
 * (the model's infer_layer): out is the caller's, num_dst x out_l; h is
 * num_src x in_l (for layer 0, rows of tr_model_input_row). b must be
 * well formed (indices below num_src, num_dst <= num_src, indptr of
 * num_dst R + 1 entries for the model's R relations; b->num_rels is not
 * read): the caller built it. */
int tr_model_infer_layer(struct tr_model *m, uint32_t l, const struct gnn_block *b, const float *h, float *out);

/* The last layer's outputs of mb's seeds (num_seeds x num_classes, the
 * model's, valid until its next call): link prediction's embeddings
 * (num_classes is then the embedding width). With train, dropout with the
 * mask of dropout_seed, and tr_model_backward may follow. Labels are not
 * read. */
int tr_model_forward(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		     const float **out);
/* After tr_model_forward with train: the gradient of a loss whose
 * gradient with respect to those outputs is dout (num_seeds x
 * num_classes), written over the gradient block. */
int tr_model_backward(struct tr_model *m, const struct gnn_minibatch *mb, const float *dout);

/* Inference without dropout: pred[i] = argmax of seed i's logits
 * (pred has mb->num_seeds entries, the caller's). */
int tr_model_predict(struct tr_model *m, const struct gnn_minibatch *mb, int32_t *pred);

#endif
