/* layers.h - what the models of stacked aggregate-then-multiply layers
 * share (GraphSAGE-mean in sage.c, the GCN aggregator in gcn.c): the
 * per-layer shapes, the parameter and gradient blocks, the workspaces, the
 * initialisation, and the forward and backward loops over the layers. A
 * model brings two row functions: how a layer aggregates its block into
 * X_l, and how the gradient of X_l flows back to the block's source rows.
 *
 * Layer l has `nmat` weight matrices of in_l x out_l and a bias, stored
 * row-major one after the other: the (nmat in_l + 1) x out_l matrix
 * [W_1; ...; W_nmat; b], layer after layer in one contiguous block (the
 * all-reduce, Adam and checkpoints see one array). The model's aggregation
 * writes X_l (num_dst x ldx, its first nmat in_l + 1 columns used, the last
 * a column of ones), so one sgemm X_l [W; b] gives the layer's output and
 * one sgemm X_l^T dY gives every gradient of the layer. ReLU then dropout
 * follow every layer but the last. Not thread-safe: one per model. */
#ifndef TR_LAYERS_H
#define TR_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "model.h"

struct tr_layer_spec;

struct tr_layers {
	struct tr_model_cfg cfg;
	const struct tr_layer_spec *spec;
	uint32_t nmat;                     /* weight matrices per layer (the spec's) */
	uint32_t in[GNN_PROTO_MAX_LAYERS], out[GNN_PROTO_MAX_LAYERS];
	size_t ldx[GNN_PROTO_MAX_LAYERS];  /* row stride of X_l: nmat in + 1 rounded up to a 64-byte line */
	size_t off[GNN_PROTO_MAX_LAYERS];  /* layer l's first parameter */
	size_t nparams;
	float *params, *grads;
	uint32_t keep_below;               /* dropout: keep when the 32-bit draw < this */
	float keep_scale;                  /* 1 / (1 - p) */
	struct tr_fbuf x[GNN_PROTO_MAX_LAYERS];  /* X_l, kept for the backward pass */
	struct tr_fbuf h[GNN_PROTO_MAX_LAYERS];  /* outputs after ReLU + dropout; h[L-1] the logits */
	struct tr_fbuf d[2], dx;                 /* backward: dY ping-pong, dX = dY [W_1; ...]^T */
	struct tr_ibuf tptr, tidx;               /* backward: the block grouped by source */
};

/* What a model's aggregation reads and writes for dst rows [lo, hi):
 * X rows of block b from the source rows h (num_src x in). */
struct tr_agg_ctx {
	const struct gnn_block *b;
	const float *h;     /* num_src x in */
	float *x;           /* num_dst x ldx */
	size_t in, ldx;
};

/* What a model's gradient pass reads and writes for source rows [lo,
 * hi): dh (num_src x in) from dx = dY [W_1; ...]^T (num_dst x nmat in)
 * through the block grouped by source, masked where H_{l-1} (h) is not
 * positive and scaled by scale (dropout's). */
struct tr_grad_ctx {
	const struct gnn_block *b;
	const int32_t *tptr, *tidx;
	const float *dx;
	const float *h;
	float *dh;
	size_t in;
	float scale;
};

/* What a model of this kind is: its weight matrices per layer, the tag
 * of its initial draws (tells the models apart), and its two row
 * functions (tr_par_for's signature; ctx is a struct tr_agg_ctx or a
 * struct tr_grad_ctx). */
struct tr_layer_spec {
	uint32_t nmat;
	uint64_t init_tag;
	tr_range_fn agg_rows, grad_rows;
};

/* The model's create (model.h) for a spec: a stack for cfg (widths above
 * 2^20 refused, logged), parameters zero. spec is borrowed for the
 * stack's life (a static). */
int tr_layers_create(const struct tr_model_cfg *cfg, const struct tr_layer_spec *spec, void **self);

/* The rest of the model seam's operations (model.h), the same for every
 * model of this kind: a model's ops table points at them. init draws
 * every parameter ~ U(-1/sqrt(in_l), 1/sqrt(in_l)), PyTorch's nn.Linear
 * default, biases included, from (seed, the spec's tag, index). */
void tr_layers_destroy(void *self);
void tr_layers_init(void *self, uint64_t seed);
size_t tr_layers_num_params(const void *self);
float *tr_layers_params(void *self);
float *tr_layers_grads(void *self);
int tr_layers_forward(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		      struct tr_kstats *ks, const float **logits);
int tr_layers_backward(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks);
int tr_layers_infer_layer(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			  struct tr_kstats *ks);

/* The ops table's fields above, for a model's designated initialiser:
 * { .name = ..., .summary = ..., .create = ..., TR_LAYERS_OPS }. */
#define TR_LAYERS_OPS                                                                       \
	.destroy = tr_layers_destroy, .init = tr_layers_init, .num_params = tr_layers_num_params, \
	.params = tr_layers_params, .grads = tr_layers_grads, .forward = tr_layers_forward,       \
	.backward = tr_layers_backward, .infer_layer = tr_layers_infer_layer

#endif
