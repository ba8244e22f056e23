/* layers.c - the layer stack the models share (layers.h). */
#include "layers.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "log.h"

/* Row stride of X_l rounded up to a 64-byte line: aligned rows for the
 * aggregation, and an lda OpenBLAS packs without penalty. */
#define LD_FLOATS 16

void tr_layers_destroy(void *self)
{
	struct tr_layers *s = self;

	if (s == NULL)
		return;
	for (int l = 0; l < GNN_PROTO_MAX_LAYERS; l++) {
		free(s->grp[l].grp.p);
		free(s->grp[l].pos.p);
		free(s->grp[l].wt.p);
		free(s->x[l].p);
		free(s->h[l].p);
		free(s->w[l].p);
	}
	free(s->d[0].p);
	free(s->d[1].p);
	free(s->dx.p);
	free(s->gw.p);
	free(s->gt.p);
	free(s->yp.p);
	free(s->dyp.p);
	tr_input_free(&s->inp);
	free(s->tptr.p);
	free(s->tidx.p);
	free(s->params);
	free(s->grads);
	free(s);
}

/* What the stack refuses of a configuration the seam accepted. */
static int check_cfg(const struct tr_model_cfg *cfg, const struct tr_layer_spec *spec)
{
	uint32_t R = cfg->schema->num_rels;

	if (spec->nmat > 0 && R > 1) {
		GNN_ERROR("bad_config", "model=%s relations=%" PRIu32 " reason=\"%s reads one relation: use --model "
			  "rgcn\"", cfg->model, R, cfg->model);
		return GNN_EINVAL;
	}
	if (cfg->num_bases > 0 && (spec->nmat > 0 || cfg->num_bases > R)) {
		GNN_ERROR("bad_config", "model=%s num_bases=%" PRIu32 " relations=%" PRIu32 " reason=\"bases "
			  "decompose R-GCN's relation weights: 1..relations with --model rgcn, else 0\"",
			  cfg->model, cfg->num_bases, R);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* Floats of layer l's parameters (layers.h's layout). */
static size_t layer_size(const struct tr_layers *s, uint32_t l)
{
	size_t io = (size_t)s->in[l] * s->out[l];

	if (s->B == 0)
		return ((size_t)s->nmat * s->in[l] + 1) * s->out[l];
	return (1 + (size_t)s->B) * io + (size_t)s->R * s->B + s->out[l];
}

int tr_layers_create(const struct tr_model_cfg *cfg, const struct tr_layer_spec *spec, void **out)
{
	struct tr_layers *s;
	size_t n = 0;

	if (check_cfg(cfg, spec) != GNN_OK)
		return GNN_EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return GNN_ENOMEM;
	s->cfg = *cfg;
	s->cfg.schema = NULL;
	s->spec = spec;
	s->R = cfg->schema->num_rels;
	for (uint32_t r = 0; r < s->R; r++) {
		s->rel_dst[r] = cfg->schema->rels[r].dst;
		s->blk[r] = s->nrel[s->rel_dst[r]]++;
	}
	s->grouped = spec->agg_rows == tr_layers_rel_agg_rows && cfg->schema->num_types > 1;
	s->nmat = spec->nmat > 0 ? spec->nmat : s->R + 1;
	s->B = cfg->num_bases;
	tr_input_setup(&s->inp, cfg);
	for (uint32_t l = 0; l < cfg->num_layers; l++) {
		s->in[l] = l == 0 ? s->inp.D : cfg->hidden;
		s->out[l] = l + 1 == cfg->num_layers ? cfg->num_classes : cfg->hidden;
		s->ldx[l] = ((size_t)s->nmat * s->in[l] + 1 + LD_FLOATS - 1) / LD_FLOATS * LD_FLOATS;
		s->off[l] = n;
		n += layer_size(s, l);
	}
	s->inp_off = n;
	if (tr_input_alloc(&s->inp, n, &s->params, &s->grads, &s->nparams) != GNN_OK) {
		tr_layers_destroy(s);
		return GNN_ENOMEM;
	}
	/* p = 0 skips the mask altogether */
	s->keep_below = tr_dropout_keep_below(cfg->dropout);
	s->keep_scale = (float)(1.0 / (1.0 - (double)cfg->dropout));
	*out = s;
	return GNN_OK;
}

/* The half-width of parameter i's initial draw (layers.h): i is the
 * index within layer l's parameters. */
static double init_bound(const struct tr_layers *s, uint32_t l, size_t i)
{
	size_t coef;

	coef = (1 + (size_t)s->B) * s->in[l] * s->out[l];
	if (s->B > 0 && i >= coef && i < coef + (size_t)s->R * s->B)
		return sqrt(3.0 / s->B);
	return 1.0 / sqrt((double)s->in[l]);
}

void tr_layers_init(void *self, uint64_t seed)
{
	struct tr_layers *s = self;
	uint64_t key = gnn_mix64(seed ^ s->spec->init_tag);

	for (uint32_t l = 0; l < s->cfg.num_layers; l++)
		for (size_t i = 0; i < layer_size(s, l); i++) {
			size_t j = s->off[l] + i;
			double u = gnn_unit64(gnn_draw64(key, j));

			s->params[j] = (float)((2.0 * u - 1.0) * init_bound(s, l, i));
		}
	tr_input_init(&s->inp, key, s->inp_off);
}

size_t tr_layers_num_params(const void *self)
{
	return ((const struct tr_layers *)self)->nparams;
}

float *tr_layers_params(void *self)
{
	return ((struct tr_layers *)self)->params;
}

float *tr_layers_grads(void *self)
{
	return ((struct tr_layers *)self)->grads;
}

/* ---- the relational mean (GraphSAGE: R = 1) ---- */

/* The neighbour rows are scattered over the source matrix (for layer 0,
 * hundreds of MB of features): each is a cache miss, so rows AHEAD edges
 * ahead in the edge list are prefetched while this one is added. */
#define AHEAD 8

/* acc = the mean of the rows of edges [e0, e1) (0 for none), prefetching
 * AHEAD edges ahead up to e_end. */
static inline void mean_rows(const struct tr_agg_ctx *c, int32_t e0, int32_t e1, int32_t e_end,
			     float *restrict acc)
{
	const int32_t *idx = c->b->indices;
	const size_t in = c->in;

	if (e1 == e0) {
		memset(acc, 0, in * sizeof(float));
		return;
	}
	for (int32_t e = e0; e < e1; e++) {
		if (e + AHEAD < e_end)
			tr_prefetch_row(c->h + (size_t)idx[e + AHEAD] * in, in);
		if (e == e0)
			memcpy(acc, c->h + (size_t)idx[e] * in, in * sizeof(float));
		else
			tr_vadd(acc, c->h + (size_t)idx[e] * in, in);
	}
	tr_vscale(acc, 1.0f / (float)(e1 - e0), in);
}

/* X = [h_dst | the mean over each relation of the dst's type | 1] for
 * dst rows [lo, hi), each where its group puts it: a dst's relations'
 * edges are consecutive, so the prefetch runs over [lo, hi)'s edges as
 * over one list. */
void tr_layers_rel_agg_rows(void *arg, size_t lo, size_t hi)
{
	const struct tr_agg_ctx *c = arg;
	const int32_t *indptr = c->b->indptr, *idx = c->b->indices;
	const size_t in = c->in, R = c->R;
	const int32_t e_end = indptr[hi * R];

	for (int32_t e = indptr[lo * R]; e < indptr[lo * R] + AHEAD && e < e_end; e++)
		tr_prefetch_row(c->h + (size_t)idx[e] * in, in);
	for (size_t v = lo; v < hi; v++) {
		uint32_t t;
		size_t i = tr_groups_row(c->g, v, &t);
		float *restrict row = c->x + c->g->xoff[t] + i * c->g->ldx[t];

		memcpy(row, c->h + v * in, in * sizeof(float));
		row[c->g->k[t] - 1] = 1.0f;
		for (size_t r = 0; r < R; r++)
			if (c->rel_dst[r] == t)
				mean_rows(c, indptr[v * R + r], indptr[v * R + r + 1], e_end, row + (1 + c->blk[r]) * in);
	}
}

/* dX's row of dst v is [dX_self | dX_r for each relation of its type]
 * (in floats each, where its group puts it): edge row q = v R + r reads
 * dX_r[v], scaled by 1 / deg_r(v). The first term initialises the row
 * (most rows >= num_dst have exactly one in-block edge: no zeroing pass
 * for them). */
static inline const float *rel_grad_src(const struct tr_grad_ctx *c, size_t q, float *scale)
{
	size_t v = q / c->R, r = q % c->R;

	*scale = 1.0f / (float)(c->b->indptr[q + 1] - c->b->indptr[q]);
	return tr_groups_dxrow(c->g, c->dx, v) + (1 + c->blk[r]) * c->in;
}

/* The dX row of transposed edge e, prefetching the one AHEAD edges ahead
 * (up to e_end): as in the forward pass, each is a cache miss. */
static inline const float *rel_grad_next(const struct tr_grad_ctx *c, int32_t e, int32_t e_end, float *scale)
{
	float ignored;

	if (e + AHEAD < e_end)
		tr_prefetch_row(rel_grad_src(c, (size_t)c->tidx[e + AHEAD], &ignored), c->in);
	return rel_grad_src(c, (size_t)c->tidx[e], scale);
}

void tr_layers_rel_grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct tr_grad_ctx *c = arg;
	const size_t in = c->in, nd = c->b->num_dst;
	const int32_t e_end = c->tptr[hi];
	float ignored;

	for (int32_t e = c->tptr[lo]; e < c->tptr[lo] + AHEAD && e < e_end; e++)
		tr_prefetch_row(rel_grad_src(c, (size_t)c->tidx[e], &ignored), in);
	for (size_t u = lo; u < hi; u++) {
		float *restrict d = c->dh + u * in, a;
		int32_t e = c->tptr[u], e1 = c->tptr[u + 1];
		const float *src;

		if (u < nd) {
			memcpy(d, tr_groups_dxrow(c->g, c->dx, u), in * sizeof(float));
		} else if (e < e1) {
			src = rel_grad_next(c, e++, e_end, &a);
			tr_vscale_to(d, src, a, in);
		} else {
			memset(d, 0, in * sizeof(float));
		}
		for (; e < e1; e++) {
			src = rel_grad_next(c, e, e_end, &a);
			tr_vaxpy(d, src, a, in);
		}
		tr_grad_mask(c, u, d);
	}
}

/* ---- layer 0's input rows ---- */

void tr_layers_input_row(const void *self, uint32_t t, const float *feat, float *out)
{
	tr_input_row(&((const struct tr_layers *)self)->inp, t, feat, out);
}

/* ---- forward ---- */

/* Layer l's [W_1; ...; W_nmat; b]: the stored block, or with bases the
 * one the forward pass materialised. */
static const float *weights(const struct tr_layers *s, uint32_t l)
{
	return s->B == 0 ? s->params + s->off[l] : s->w[l].p;
}

/* With bases, [W_self; W_1..W_R; b] of layer l into w[l]: W_self and b
 * copied, W_r = sum_b a[r][b] V_b in one product (R x B times
 * B x (in out)). */
static int materialise(struct tr_layers *s, uint32_t l, struct tr_kstats *ks)
{
	size_t io = (size_t)s->in[l] * s->out[l], R = s->R, B = s->B;
	const float *p = s->params + s->off[l];
	float *w;
	int rc;

	if (B == 0)
		return GNN_OK;
	if ((rc = tr_fbuf_reserve(&s->w[l], (R + 1) * io + s->out[l])) != GNN_OK)
		return rc;
	w = s->w[l].p;
	memcpy(w, p, io * sizeof(float));
	tr_sgemm(ks, CblasNoTrans, CblasNoTrans, R, io, B, p + (1 + B) * io, B, p + io, io, w + io, io);
	memcpy(w + (R + 1) * io, p + (1 + B) * io + R * B, s->out[l] * sizeof(float));
	return GNN_OK;
}

static bool scaled(const struct tr_layers *s, uint32_t l)
{
	return s->cfg.degree_scale && l + 1 == s->cfg.num_layers;
}

/* Layer l of block b from the source rows h into y (num_dst x out_l),
 * keeping X_l for the backward pass; dropout with key when asked. */
static int layer(struct tr_layers *s, uint32_t l, const struct gnn_block *b,
		 const float *h, bool dropout, uint64_t key, struct tr_kstats *ks, float *y)
{
	struct tr_groups *g = &s->grp[l];
	size_t nd = b->num_dst, in = s->in[l];
	struct tr_agg_ctx ac;
	int rc;

	if ((rc = tr_groups_build(s, l, b, g)) != GNN_OK ||
	    (rc = tr_fbuf_reserve(&s->x[l], g->xsize ? g->xsize : 1)) != GNN_OK || (rc = materialise(s, l, ks)) != GNN_OK)
		return rc;
	ac = (struct tr_agg_ctx){ b, s->R, h, s->x[l].p, in, s->ldx[l], g, s->blk, s->rel_dst };
	/* ~64 KiB of gathered rows per thread at least. */
	tr_par_for(nd, 1 + 16384 / (in * (1 + b->num_edges / (nd ? nd : 1))), s->spec->agg_rows, &ac);
	if (scaled(s, l))
		tr_groups_degree_scale(g, b, s->R, s->x[l].p, false);
	if ((rc = tr_groups_product(s, l, nd, weights(s, l), ks, y)) != GNN_OK)
		return rc;
	if (l + 1 < s->cfg.num_layers)
		tr_relu_dropout(y, nd, s->out[l], dropout, key, s->keep_below, s->keep_scale);
	return GNN_OK;
}

int tr_layers_forward(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		      struct tr_kstats *ks, const float **logits)
{
	struct tr_layers *s = self;
	uint32_t L = s->cfg.num_layers;
	const float *h;
	int rc;

	if ((rc = tr_input_forward(&s->inp, mb, train && s->cfg.dropout > 0.0f, tr_dropout_key(dropout_seed, L), ks,
				   &h)) != GNN_OK)
		return rc;
	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if ((rc = tr_fbuf_reserve(&s->h[l], (size_t)b->num_dst * s->out[l])) != GNN_OK ||
		    (rc = layer(s, l, b, h, train && s->cfg.dropout > 0.0f, tr_dropout_key(dropout_seed, l), ks,
				s->h[l].p)) != GNN_OK)
			return rc;
		h = s->h[l].p;
	}
	*logits = s->h[L - 1].p;
	return GNN_OK;
}

int tr_layers_infer_layer(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			  struct tr_kstats *ks)
{
	return layer(self, l, b, h, false, 0, ks, out);
}

/* ---- backward ---- */

/* With bases, the stored layer's gradient from the full one in gw
 * ([dW_self; dW_1..dW_R; db]): dW_self and db copied, dV_b = sum_r
 * a[r][b] dW_r (B x R times R x (in out)) and da[r][b] = <dW_r, V_b>
 * (R x (in out) times (in out) x B). */
static void reduce_bases(struct tr_layers *s, uint32_t l, struct tr_kstats *ks)
{
	size_t io = (size_t)s->in[l] * s->out[l], R = s->R, B = s->B;
	const float *p = s->params + s->off[l], *gw = s->gw.p;
	float *g = s->grads + s->off[l];

	memcpy(g, gw, io * sizeof(float));
	tr_sgemm(ks, CblasTrans, CblasNoTrans, B, io, R, p + (1 + B) * io, B, gw + io, io, g + io, io);
	tr_sgemm(ks, CblasNoTrans, CblasTrans, R, B, io, gw + io, io, p + io, io, g + (1 + B) * io, B);
	memcpy(g + (1 + B) * io + R * B, gw + (R + 1) * io, s->out[l] * sizeof(float));
}

/* [dW_1; ...; db] = X^T dY of layer l (nd dst rows), straight into the
 * gradient block, or with bases into gw and reduced from there. */
static int weight_grads(struct tr_layers *s, uint32_t l, size_t nd, const float *dy, struct tr_kstats *ks)
{
	size_t rows = (size_t)s->nmat * s->in[l] + 1, out = s->out[l];
	float *g = s->grads + s->off[l];
	int rc;

	if (s->B > 0) {
		if ((rc = tr_fbuf_reserve(&s->gw, rows * out)) != GNN_OK)
			return rc;
		g = s->gw.p;
	}
	if ((rc = tr_groups_weight_grads(s, l, nd, dy, g, ks)) != GNN_OK)
		return rc;
	if (s->B > 0)
		reduce_bases(s, l, ks);
	return GNN_OK;
}

/* The gradient of layer l's source rows into dh (num_src x in_l) from its
 * dY: dX = dY [W_1; ...]^T (tr_groups_dx), then the model's gather
 * through the block grouped by source, masked by h (NULL: no mask) and
 * scale. After weight_grads of the same layer. */
static int source_grads(struct tr_layers *s, uint32_t l, const struct gnn_block *b, const float *dy,
			const float *h, float scale, struct tr_fbuf *dh, struct tr_kstats *ks)
{
	size_t ns = b->num_src, in = s->in[l];
	struct tr_grad_ctx gc;
	int rc;

	if ((rc = tr_fbuf_reserve(dh, ns * in)) != GNN_OK ||
	    (rc = tr_block_transpose(b, s->R, &s->tptr, &s->tidx)) != GNN_OK ||
	    (rc = tr_groups_dx(s, l, b->num_dst, dy, weights(s, l), ks)) != GNN_OK)
		return rc;
	if (scaled(s, l))
		tr_groups_degree_scale(&s->grp[l], b, s->R, s->dx.p, true);
	gc = (struct tr_grad_ctx){ b, s->R, s->tptr.p, s->tidx.p, s->dx.p, h, dh->p, in, scale, &s->grp[l], s->blk,
				   s->rel_dst };
	tr_par_for(ns, 1 + 16384 / (in * (1 + b->num_edges / (ns ? ns : 1))), s->spec->grad_rows, &gc);
	return GNN_OK;
}

/* After layer 0's weights: the gradient of its input rows (without a
 * mask: they are not a ReLU's output) when the input rows learn or the
 * model learns its inputs (tr_input_wants_grad), then theirs. */
static int input_grads(struct tr_layers *s, const struct gnn_minibatch *mb, const float *dy, struct tr_fbuf *dh,
		       struct tr_kstats *ks)
{
	int rc;

	if (!tr_input_wants_grad(&s->inp, mb))
		return tr_input_backward(&s->inp, mb, NULL, ks);
	if ((rc = source_grads(s, 0, &mb->blocks[0], dy, NULL, 1.0f, dh, ks)) != GNN_OK)
		return rc;
	return tr_input_backward(&s->inp, mb, dh->p, ks);
}

uint32_t tr_layers_weight_mats(const void *self)
{
	return ((const struct tr_layers *)self)->nmat;
}

const float *tr_layers_input_grad(const void *self, size_t *ld)
{
	return tr_input_grad(&((const struct tr_layers *)self)->inp, ld);
}

/* Layer by layer from the logits' gradient down: dY ping-pongs between
 * d[0] and d[1]. */
int tr_layers_backward(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks)
{
	struct tr_layers *s = self;
	float scale = s->cfg.dropout > 0.0f ? s->keep_scale : 1.0f;
	const float *dy = dlogits;
	int nxt = 0, rc;

	for (uint32_t l = s->cfg.num_layers; l-- > 0;) {
		const struct gnn_block *b = &mb->blocks[l];

		if ((rc = weight_grads(s, l, b->num_dst, dy, ks)) != GNN_OK)
			return rc;
		if (l == 0)
			break;
		if ((rc = source_grads(s, l, b, dy, s->h[l - 1].p, scale, &s->d[nxt], ks)) != GNN_OK)
			return rc;
		dy = s->d[nxt].p;
		nxt = 1 - nxt;
	}
	return input_grads(s, mb, dy, &s->d[nxt], ks);
}
