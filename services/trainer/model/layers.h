/* layers.h - what the models of stacked aggregate-then-multiply layers
 * share (GraphSAGE-mean in sage.c, the GCN aggregator in gcn.c, R-GCN in
 * rgcn.c): the input rows, the per-layer shapes, the parameter and
 * gradient blocks, the workspaces, the initialisation, and the forward and
 * backward loops over the layers. A model brings two row functions: how a
 * layer aggregates its block into X_l, and how the gradient of X_l flows
 * back to the block's source rows. The relational mean (X_l = [H_dst |
 * mean_1 | ... | mean_R | 1]) is here, for GraphSAGE (R = 1) and R-GCN.
 *
 * Layer l has `nmat` weight matrices of in_l x out_l and a bias: the
 * (nmat in_l + 1) x out_l matrix [W_1; ...; W_nmat; b] that X_l
 * (num_dst x ldx, its first nmat in_l + 1 columns used, the last a column
 * of ones) multiplies, so one sgemm X_l [W; b] gives the layer's output and
 * one sgemm X_l^T dY gives every gradient of the layer. ReLU then dropout
 * follow every layer but the last. A relational model (nmat = R + 1) may
 * store its relation matrices as combinations of B bases (cfg num_bases);
 * the stack then materialises [W; b] per layer and reduces its gradient
 * to the bases'. The parameter block, one contiguous array (the
 * all-reduce, Adam and checkpoints see one), holds layer after layer, then
 * the learned input vectors of the types without features:
 *
 *   layer l, no bases:  [W_1; ...; W_nmat; b]        (nmat in + 1) x out
 *   layer l, B bases:   W_self [in x out], V_1..V_B [in x out each],
 *                       a [R x B] (W_r = sum_b a[r][b] V_b), b [out]
 *   then:               the input rows' parameters (input.h): the per-type
 *                       encoders, if any, and one D-float row per type
 *                       without features, in type order
 *
 * Layer 0 reads D-wide input rows (input.h): the minibatch's feature rows
 * in place when it has one type as wide as D, else rows assembled from
 * the features (zero-padded, or projected per type) and the type vectors.
 * Not thread-safe: one per model. */
#ifndef TR_LAYERS_H
#define TR_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "kernels.h"
#include "model.h"

struct tr_layer_spec;

struct tr_layers {
	struct tr_model_cfg cfg;           /* its schema pointer cleared: copied out below */
	const struct tr_layer_spec *spec;
	uint32_t nmat;                     /* weight matrices per layer: the spec's, or R + 1 */
	uint32_t R, B;                     /* relations; bases per layer (0: full matrices) */
	struct tr_input inp;               /* layer 0's input rows (input.h), D = inp.D wide */
	uint32_t in[GNN_PROTO_MAX_LAYERS], out[GNN_PROTO_MAX_LAYERS];
	size_t ldx[GNN_PROTO_MAX_LAYERS];  /* row stride of X_l: nmat in + 1 rounded up to a 64-byte line */
	size_t off[GNN_PROTO_MAX_LAYERS];  /* layer l's first parameter */
	size_t inp_off;                    /* the input rows' parameters' first */
	size_t nparams;
	float *params, *grads;
	uint32_t keep_below;               /* dropout: keep when the 32-bit draw < this */
	float keep_scale;                  /* 1 / (1 - p) */
	struct tr_fbuf x[GNN_PROTO_MAX_LAYERS];  /* X_l, kept for the backward pass */
	struct tr_fbuf h[GNN_PROTO_MAX_LAYERS];  /* outputs after ReLU + dropout; h[L-1] the logits */
	struct tr_fbuf w[GNN_PROTO_MAX_LAYERS];  /* with bases: [W; b] materialised by the forward pass */
	struct tr_fbuf d[2], dx;                 /* backward: dY ping-pong, dX = dY [W_1; ...]^T */
	struct tr_fbuf gw;                       /* with bases: a layer's [dW; db] before the reduction */
	struct tr_ibuf tptr, tidx;               /* backward: the block grouped by source */
};

/* What a model's aggregation reads and writes for dst rows [lo, hi):
 * X rows of block b (R relations: indptr has num_dst R + 1 entries) from
 * the source rows h (num_src x in). */
struct tr_agg_ctx {
	const struct gnn_block *b;
	size_t R;
	const float *h;     /* num_src x in */
	float *x;           /* num_dst x ldx */
	size_t in, ldx;
};

/* What a model's gradient pass reads and writes for source rows [lo,
 * hi): dh (num_src x in) from dx = dY [W_1; ...]^T (num_dst x nmat in)
 * through the block grouped by source (tidx holds each edge's (dst,
 * relation) row, dst R + relation), masked where H_{l-1} (h) is not
 * positive and scaled by scale (dropout's); h NULL: no mask (layer 0's
 * input rows, whose gradient trains the type vectors). */
struct tr_grad_ctx {
	const struct gnn_block *b;
	size_t R;
	const int32_t *tptr, *tidx;
	const float *dx;
	const float *h;
	float *dh;
	size_t in;
	float scale;
};

/* The mask of the gradient pass on source row u's gradient d (in floats):
 * d * scale where h > 0 (ReLU passed and dropout kept: kept units are
 * scaled, dropped ones 0), else 0; nothing when h is NULL. */
static inline void tr_grad_mask(const struct tr_grad_ctx *c, size_t u, float *restrict d)
{
	const float *hu;
	size_t j = 0;

	if (c->h == NULL)
		return;
	hu = c->h + u * c->in;
	for (; j + 4 <= c->in; j += 4)
		tr_vst(d + j, (v4f)((v4i)(tr_vld(d + j) * c->scale) & (tr_vld(hu + j) > 0.0f)));
	for (; j < c->in; j++)
		d[j] = hu[j] > 0.0f ? d[j] * c->scale : 0.0f;
}

/* What a model of this kind is: its weight matrices per layer (nmat > 0:
 * a model of one relation, which refuses a schema of more; 0: W_self and
 * one matrix per relation, R + 1, bases allowed), the tag of its initial
 * draws (tells the models apart), and its two row functions (tr_par_for's
 * signature; ctx is a struct tr_agg_ctx or a struct tr_grad_ctx). */
struct tr_layer_spec {
	uint32_t nmat;
	uint64_t init_tag;
	tr_range_fn agg_rows, grad_rows;
};

/* The relational mean and its gradient, row functions for a spec with
 * nmat R + 1: X[v] = [H_v | mean_{u in N_1(v)} H_u | ... | mean over
 * N_R(v) | 1] (the mean of no neighbours 0), and dH[u] = mask_u (dX_self[u]
 * (u < num_dst) + sum over the edges u -> v of relation r of
 * dX_r[v] / deg_r(v)). GraphSAGE is R = 1. */
void tr_layers_rel_agg_rows(void *ctx, size_t lo, size_t hi);
void tr_layers_rel_grad_rows(void *ctx, size_t lo, size_t hi);

/* The model's create (model.h) for a spec: a stack for cfg (widths above
 * 2^20, more than one relation for a spec of one, bases for a spec of
 * one relation or more bases than relations refused, logged), parameters
 * zero. spec is borrowed for the stack's life (a static). */
int tr_layers_create(const struct tr_model_cfg *cfg, const struct tr_layer_spec *spec, void **self);

/* The rest of the model seam's operations (model.h), the same for every
 * model of this kind: a model's ops table points at them. init draws
 * every parameter from (seed, the spec's tag, its index): weights and
 * biases ~ U(-1/sqrt(in_l), 1/sqrt(in_l)), PyTorch's nn.Linear default;
 * basis coefficients ~ U(-sqrt(3/B), sqrt(3/B)), so that each W_r has an
 * nn.Linear weight's variance; type vectors ~ U(-1, 1), the scale of
 * standardised features. */
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
void tr_layers_input_row(const void *self, uint32_t t, const float *feat, float *out);
const float *tr_layers_input_grad(const void *self, size_t *ld);
uint32_t tr_layers_weight_mats(const void *self);

/* The ops table's fields above, for a model's designated initialiser:
 * { .name = ..., .summary = ..., .create = ..., TR_LAYERS_OPS }. */
#define TR_LAYERS_OPS                                                                       \
	.destroy = tr_layers_destroy, .init = tr_layers_init, .num_params = tr_layers_num_params, \
	.params = tr_layers_params, .grads = tr_layers_grads, .forward = tr_layers_forward,       \
	.backward = tr_layers_backward, .infer_layer = tr_layers_infer_layer,                     \
	.input_row = tr_layers_input_row, .input_grad = tr_layers_input_grad,                    \
	.weight_mats = tr_layers_weight_mats

#endif
