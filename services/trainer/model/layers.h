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

/* Layer l's destination rows grouped by node type, for the relational
 * mean: a destination's relations can only be those that end at its
 * type, so each group's X holds only theirs, [H_v | mean over each of
 * them | 1], and multiplies the weights gathered for it, [W_self; theirs;
 * b] (R-GCN on ogbn-mag's schema: a paper row has 3 relation blocks of 7).
 * A group is found from the block itself (the type its first relation
 * with edges ends at; none: the first group), so layer-wise inference
 * needs no types. One group (n == 1) is the plain layout, rows in block
 * order. Every size_t is in floats. */
struct tr_groups {
	uint32_t n;                          /* groups: group t holds type t's destinations */
	size_t start[GNN_MAX_TYPES + 1];     /* group g's rows [start[g], start[g + 1]) in the grouped order */
	size_t k[GNN_MAX_TYPES];             /* its X columns (the ones column last) */
	size_t ldx[GNN_MAX_TYPES];           /* its X row stride (k rounded up to a 64-byte line) */
	size_t xoff[GNN_MAX_TYPES];          /* its X rows' first float */
	size_t dxoff[GNN_MAX_TYPES];         /* its dX rows' first (k - 1 floats a row) */
	size_t woff[GNN_MAX_TYPES];          /* its weights' [k x out] first in wt */
	size_t xsize, dxsize, wsize;         /* the floats of X, dX and wt */
	struct tr_ibuf grp, pos;             /* n > 1: dst v's group and row in the grouped order */
	struct tr_fbuf wt;                   /* n > 1: the groups' weights, gathered */
};

/* dst v's group (*grp: its type) and row within it; its X row (x: layer
 * l's X) and dX row (dx: the layer's dX). */
static inline size_t tr_groups_row(const struct tr_groups *g, size_t v, uint32_t *grp)
{
	if (g->n == 1) {
		*grp = 0;
		return v;
	}
	*grp = (uint32_t)g->grp.p[v];
	return (size_t)g->pos.p[v] - g->start[*grp];
}

static inline float *tr_groups_xrow(const struct tr_groups *g, float *x, size_t v)
{
	uint32_t k;
	size_t r = tr_groups_row(g, v, &k);

	return x + g->xoff[k] + r * g->ldx[k];
}

static inline const float *tr_groups_dxrow(const struct tr_groups *g, const float *dx, size_t v)
{
	uint32_t k;
	size_t r = tr_groups_row(g, v, &k);

	return dx + g->dxoff[k] + r * (g->k[k] - 1);
}

struct tr_layers {
	struct tr_model_cfg cfg;           /* its schema pointer cleared: copied out below */
	const struct tr_layer_spec *spec;
	uint32_t nmat;                     /* weight matrices per layer: the spec's, or R + 1 */
	uint32_t R, B;                     /* relations; bases per layer (0: full matrices) */
	bool grouped;                      /* the relational mean on a schema of several types (tr_groups) */
	uint32_t rel_dst[GNN_MAX_RELS];    /* relation r's destination type */
	uint32_t blk[GNN_MAX_RELS];        /* its block among its destination type's (X's block 1 + blk) */
	uint32_t nrel[GNN_MAX_TYPES];      /* the relations that end at type t */
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
	struct tr_groups grp[GNN_PROTO_MAX_LAYERS];  /* X_l's rows by group (one when not grouped) */
	struct tr_fbuf yp, dyp;                  /* grouped: a layer's Y and dY in the grouped order */
	struct tr_fbuf h[GNN_PROTO_MAX_LAYERS];  /* outputs after ReLU + dropout; h[L-1] the logits */
	struct tr_fbuf w[GNN_PROTO_MAX_LAYERS];  /* with bases: [W; b] materialised by the forward pass */
	struct tr_fbuf d[2], dx;                 /* backward: dY ping-pong, dX = dY [W_1; ...]^T */
	struct tr_fbuf gw;                       /* with bases: a layer's [dW; db] before the reduction */
	struct tr_fbuf gt;                       /* grouped: one group's [dW; db] before it is added */
	struct tr_ibuf tptr, tidx;               /* backward: the block grouped by source */
};

/* What a model's aggregation reads and writes for dst rows [lo, hi):
 * X rows of block b (R relations: indptr has num_dst R + 1 entries) from
 * the source rows h (num_src x in). */
struct tr_agg_ctx {
	const struct gnn_block *b;
	size_t R;
	const float *h;     /* num_src x in */
	float *x;           /* num_dst x ldx (the relational mean: rows where g puts them) */
	size_t in, ldx;
	const struct tr_groups *g;
	const uint32_t *blk;      /* the relational mean: relation r's block in its row, 1 + blk[r] */
	const uint32_t *rel_dst;  /* and the type it ends at (group t has the blocks of type t's) */
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
	const float *dx;       /* the relational mean: rows where g puts them */
	const float *h;
	float *dh;
	size_t in;
	float scale;
	const struct tr_groups *g;
	const uint32_t *blk;
	const uint32_t *rel_dst;
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

/* ---- the grouped rows (groups.c) ---- */

/* Layer l's groups for block b into g (one group unless s->grouped);
 * GNN_EINVAL (logged) for a dst with edges of relations that end at two
 * types. */
int tr_groups_build(const struct tr_layers *s, uint32_t l, const struct gnn_block *b, struct tr_groups *g);
/* Y = X_l [W; b] (y: nd x out_l, block order) group by group, the
 * groups' weights gathered from w (the layer's whole [W_1; ...; b]). */
int tr_groups_product(struct tr_layers *s, uint32_t l, size_t nd, const float *w, struct tr_kstats *ks, float *y);
/* The layer's whole [dW; db] into gw from dy (nd x out_l): X_l^T dY,
 * group by group. */
int tr_groups_weight_grads(struct tr_layers *s, uint32_t l, size_t nd, const float *dy, float *gw,
			   struct tr_kstats *ks);
/* After tr_groups_weight_grads of the same layer: dX = dY [W_1; ...]^T
 * into s->dx, group by group (w: one group's whole weights). */
int tr_groups_dx(struct tr_layers *s, uint32_t l, size_t nd, const float *dy, const float *w, struct tr_kstats *ks);
/* cfg degree_scale (model.h): the rows of m (X_l, or with dx its dX),
 * but the ones column, times sqrt(deg(v) + 1), deg(v) the dst's edges
 * over all R relations: a constant of the block. */
void tr_groups_degree_scale(const struct tr_groups *g, const struct gnn_block *b, size_t R, float *m, bool dx);

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
