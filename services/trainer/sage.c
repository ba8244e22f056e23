/* sage.c - GraphSAGE with the mean aggregator (DGL's SAGEConv('mean'),
 * PyG's SAGEConv), forward and backward written by hand on OpenBLAS sgemm,
 * behind the model seam (model.h: `--model graphsage`, the default).
 * docs/model.md: formulas as implemented, multiply order, dropout mask,
 * benchmark; docs/training.md: its use.
 *
 * Layer l maps its block's source rows h (num_src x in_l) to destination
 * rows (num_dst x out_l):
 *
 *   h'_v = h_v W_self + (mean_{u in N(v)} h_u) W_neigh + b
 *
 * with the mean of an empty neighbourhood 0 (fanout 0 makes the model an
 * MLP on the features: the demo's features-only baseline). ReLU then dropout
 * follow every layer but the last; the last layer's outputs are the logits
 * (num_seeds x num_classes). in_0 = in_dim, out_{L-1} = num_classes, every
 * other width is hidden.
 *
 * Parameters live in one contiguous float block, and gradients in another
 * of the same layout, layer after layer:
 *   W_self_l [in_l x out_l] row-major, W_neigh_l [in_l x out_l], b_l [out_l]
 * so the all-reduce, Adam and checkpoints each see one array.
 *
 * The minibatch is proto.h's struct gnn_minibatch as the sampler sends it
 * (blocks in DGL's convention, features of blocks[0]'s sources, labels of
 * the seeds); the model only reads it.
 *
 * Dropout masks are a pure function of (dropout_seed, layer, element), so
 * the same seed gives the same mask: steps are reproducible and the
 * gradient check can difference the loss. Not thread-safe: one model per
 * thread. The matrix products use OpenBLAS's threads, and the model's own
 * loops (gathers, activations) as many threads as openblas_get_num_threads()
 * reports, started and joined inside each call; results do not depend on
 * the thread count beyond the products' rounding.
 *
 * Layer l keeps X_l = [h_dst | mean_nbr | 1], num_dst x ldx (ldx >= 2 in + 1),
 * whose first 2 in + 1 columns multiply the parameter rows
 * [W_self_l; W_neigh_l; b_l]: the layout above stores exactly that
 * (2 in + 1) x out row-major matrix, so one sgemm gives the self term, the
 * neighbour term and the bias, and one sgemm X_l^T dY gives all three
 * gradients. Aggregating before multiplying (num_dst rows through the
 * product instead of num_src) is the cheaper order for sampled blocks,
 * where num_src is 6-10x num_dst (docs/model.md has the cost model). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "kernels.h"
#include "log.h"
#include "model.h"

/* Row stride of X_l rounded up to a 64-byte line: aligned rows for the
 * aggregation, and an lda OpenBLAS packs without penalty. */
#define LD_FLOATS 16

struct sage {
	struct tr_model_cfg cfg;
	uint32_t in[GNN_PROTO_MAX_LAYERS], out[GNN_PROTO_MAX_LAYERS];
	size_t ldx[GNN_PROTO_MAX_LAYERS];  /* row stride of X_l */
	size_t off[GNN_PROTO_MAX_LAYERS];  /* W_self_l's offset; W_neigh_l and b_l follow */
	size_t nparams;
	float *params, *grads;
	uint32_t keep_below;               /* dropout: keep when the 32-bit draw < this */
	float keep_scale;                  /* 1 / (1 - p) */
	struct tr_fbuf x[GNN_PROTO_MAX_LAYERS];  /* X_l, kept for the backward pass */
	struct tr_fbuf h[GNN_PROTO_MAX_LAYERS];  /* layer outputs after ReLU + dropout; h[L-1] the logits */
	struct tr_fbuf d[2], dx;              /* backward: dY ping-pong, dX = dY [W_self; W_neigh]^T */
	struct tr_ibuf tptr, tidx;               /* backward: the block's out-CSR (src -> dst) */
};

static void sage_destroy(void *self);

static int sage_create(const struct tr_model_cfg *cfg, void **out)
{
	struct sage *m;
	size_t n = 0;

	/* Widths up to 2^20 keep every count below in size_t and int. */
	if (cfg->in_dim > (1u << 20) || cfg->hidden > (1u << 20) || cfg->num_classes > (1u << 20)) {
		GNN_ERROR("bad_config", "in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " reason=\"widths above 1048576 are not supported\"",
			  cfg->in_dim, cfg->hidden, cfg->num_classes);
		return GNN_EINVAL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return GNN_ENOMEM;
	m->cfg = *cfg;
	for (uint32_t l = 0; l < cfg->num_layers; l++) {
		m->in[l] = l == 0 ? cfg->in_dim : cfg->hidden;
		m->out[l] = l + 1 == cfg->num_layers ? cfg->num_classes : cfg->hidden;
		m->ldx[l] = (2 * (size_t)m->in[l] + 1 + LD_FLOATS - 1) / LD_FLOATS * LD_FLOATS;
		m->off[l] = n;
		n += (2 * (size_t)m->in[l] + 1) * m->out[l];
	}
	m->nparams = n;
	m->params = calloc(n, sizeof(float));
	m->grads = calloc(n, sizeof(float));
	if (m->params == NULL || m->grads == NULL) {
		sage_destroy(m);
		return GNN_ENOMEM;
	}
	/* p = 0 skips the mask altogether */
	m->keep_below = tr_dropout_keep_below(cfg->dropout);
	m->keep_scale = (float)(1.0 / (1.0 - (double)cfg->dropout));
	*out = m;
	return GNN_OK;
}

static void sage_destroy(void *self)
{
	struct sage *m = self;

	if (m == NULL)
		return;
	for (int l = 0; l < GNN_PROTO_MAX_LAYERS; l++) {
		free(m->x[l].p);
		free(m->h[l].p);
	}
	free(m->d[0].p);
	free(m->d[1].p);
	free(m->dx.p);
	free(m->tptr.p);
	free(m->tidx.p);
	free(m->params);
	free(m->grads);
	free(m);
}

static void sage_init(void *self, uint64_t seed)
{
	struct sage *m = self;
	uint64_t key = gnn_mix64(seed ^ 0x696e6974ull);

	memset(m->params, 0, m->nparams * sizeof(float));
	for (uint32_t l = 0; l < m->cfg.num_layers; l++) {
		size_t nw = (2 * (size_t)m->in[l] + 1) * m->out[l];
		/* W_self, W_neigh and b ~ U(-1/sqrt(in), 1/sqrt(in)): PyTorch's
		 * nn.Linear default, which PyG's SAGEConv keeps. DGL's
		 * xavier_uniform_ with the ReLU gain is about 2x wider per
		 * layer; with two matrices summed per layer the logits start
		 * large (first-epoch loss 26 instead of 4 on `small`, and 0.59
		 * instead of 0.93 test accuracy after 10 epochs: docs/model.md). */
		double bound = 1.0 / sqrt((double)m->in[l]);

		for (size_t i = 0; i < nw; i++) {
			size_t j = m->off[l] + i;
			double u = gnn_unit64(gnn_draw64(key, j));

			m->params[j] = (float)((2.0 * u - 1.0) * bound);
		}
	}
}

static size_t sage_num_params(const void *self)
{
	return ((const struct sage *)self)->nparams;
}

static float *sage_params(void *self)
{
	return ((struct sage *)self)->params;
}

static float *sage_grads(void *self)
{
	return ((struct sage *)self)->grads;
}

/* X = [h_dst | mean of the in-neighbours' rows | 1] for dst rows [lo, hi). */
struct agg_ctx {
	const struct gnn_block *b;
	const float *h;     /* num_src x in */
	float *x;           /* num_dst x ldx */
	size_t in, ldx;
};

/* The neighbour rows are scattered over the source matrix (for layer 0,
 * hundreds of MB of features): each is a cache miss, so rows AHEAD edges
 * ahead in the edge list are prefetched while this one is added. */
#define AHEAD 8

static void agg_rows(void *arg, size_t lo, size_t hi)
{
	const struct agg_ctx *c = arg;
	const int32_t *indptr = c->b->indptr, *idx = c->b->indices;
	const size_t in = c->in;
	const int32_t e_end = indptr[hi];

	for (int32_t e = indptr[lo]; e < indptr[lo] + AHEAD && e < e_end; e++)
		tr_prefetch_row(c->h + (size_t)idx[e] * in, in);
	for (size_t v = lo; v < hi; v++) {
		float *restrict row = c->x + v * c->ldx;
		float *restrict acc = row + in;
		int32_t e0 = indptr[v], e1 = indptr[v + 1];

		memcpy(row, c->h + v * in, in * sizeof(float));
		row[2 * in] = 1.0f;
		if (e1 == e0) {
			memset(acc, 0, in * sizeof(float));
			continue;
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
}

/* Layer l of block b from the source rows h into y (num_dst x out_l),
 * keeping X_l for the backward pass; dropout with key when asked. */
static int sage_layer(struct sage *m, uint32_t l, const struct gnn_block *b, const float *h, bool dropout,
		      uint64_t key, struct tr_kstats *ks, float *y)
{
	size_t nd = b->num_dst, in = m->in[l], out = m->out[l], ldx = m->ldx[l];
	struct agg_ctx ac;
	int rc;

	if ((rc = tr_fbuf_reserve(&m->x[l], nd * ldx)) != GNN_OK)
		return rc;
	ac = (struct agg_ctx){ b, h, m->x[l].p, in, ldx };
	/* ~64 KiB of gathered rows per thread at least. */
	tr_par_for(nd, 1 + 16384 / (in * (1 + b->num_edges / (nd ? nd : 1))), agg_rows, &ac);
	tr_sgemm(ks, CblasNoTrans, CblasNoTrans, nd, out, 2 * in + 1, m->x[l].p, ldx, m->params + m->off[l], out, y,
		 out);
	if (l + 1 < m->cfg.num_layers)
		tr_relu_dropout(y, nd, out, dropout, key, m->keep_below, m->keep_scale);
	return GNN_OK;
}

/* Runs the layers; m->h[L-1] holds the logits. */
static int sage_forward(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
			struct tr_kstats *ks, const float **logits)
{
	struct sage *m = self;
	uint32_t L = m->cfg.num_layers;
	const float *h = mb->feat;
	int rc;

	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if ((rc = tr_fbuf_reserve(&m->h[l], (size_t)b->num_dst * m->out[l])) != GNN_OK ||
		    (rc = sage_layer(m, l, b, h, train && m->cfg.dropout > 0.0f, tr_dropout_key(dropout_seed, l), ks,
				     m->h[l].p)) != GNN_OK)
			return rc;
		h = m->h[l].p;
	}
	*logits = m->h[L - 1].p;
	return GNN_OK;
}

static int sage_infer_layer(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			    struct tr_kstats *ks)
{
	return sage_layer(self, l, b, h, false, 0, ks, out);
}

/* dY_{l-1}[u] = mask_u * (dX_self[u] (u < num_dst) + sum over the edges
 * u -> v of dX_neigh[v] / deg(v)), where dX = dY_l [W_self; W_neigh]^T
 * (num_dst x 2 in) and mask_u = (H_{l-1}[u] > 0) * scale: H > 0 exactly
 * where ReLU passed and dropout kept (kept units are scaled, dropped 0). */
struct grad_ctx {
	const struct gnn_block *b;
	const int32_t *tptr, *tidx;
	const float *dx;    /* num_dst x 2 in */
	const float *h;     /* H_{l-1}: num_src x in */
	float *dh;          /* num_src x in: dY_{l-1} */
	size_t in;
	float scale;
};

static void grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct grad_ctx *c = arg;
	const int32_t *indptr = c->b->indptr;
	const size_t in = c->in, nd = c->b->num_dst;

	for (size_t u = lo; u < hi; u++) {
		float *restrict d = c->dh + u * in;
		const float *hu = c->h + u * in;
		size_t j = 0;

		int32_t e = c->tptr[u], e1 = c->tptr[u + 1];

		/* The first term initialises the row (most rows >= num_dst have
		 * exactly one in-block edge: no zeroing pass for them). */
		if (u < nd) {
			memcpy(d, c->dx + u * 2 * in, in * sizeof(float));
		} else if (e < e1) {
			int32_t v = c->tidx[e++];

			tr_vscale_to(d, c->dx + (size_t)v * 2 * in + in, 1.0f / (float)(indptr[v + 1] - indptr[v]), in);
		} else {
			memset(d, 0, in * sizeof(float));
		}
		for (; e < e1; e++) {
			int32_t v = c->tidx[e];

			tr_vaxpy(d, c->dx + (size_t)v * 2 * in + in, 1.0f / (float)(indptr[v + 1] - indptr[v]), in);
		}
		for (; j + 4 <= in; j += 4)
			tr_vst(d + j, (v4f)((v4i)(tr_vld(d + j) * c->scale) & (tr_vld(hu + j) > 0.0f)));
		for (; j < in; j++)
			d[j] = hu[j] > 0.0f ? d[j] * c->scale : 0.0f;
	}
}

/* Layer by layer from the logits' gradient down: dY ping-pongs between
 * d[0] and d[1]. */
static int sage_backward(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks)
{
	struct sage *m = self;
	bool dropout = m->cfg.dropout > 0.0f;
	const float *dy = dlogits;
	uint32_t L = m->cfg.num_layers;
	int nxt = 0, rc;

	for (uint32_t l = L; l-- > 0;) {
		const struct gnn_block *b = &mb->blocks[l];
		size_t nd = b->num_dst, ns = b->num_src, in = m->in[l], out = m->out[l];
		struct grad_ctx gc;

		/* [dW_self; dW_neigh; db] = X^T dY, straight into the gradient block. */
		if (nd == 0)
			memset(m->grads + m->off[l], 0, (2 * in + 1) * out * sizeof(float));
		else
			tr_sgemm(ks, CblasTrans, CblasNoTrans, 2 * in + 1, out, nd, m->x[l].p, m->ldx[l], dy, out,
			      m->grads + m->off[l], out);
		if (l == 0)
			break;  /* no gradient for the input features */
		if ((rc = tr_fbuf_reserve(&m->d[nxt], ns * in)) != GNN_OK ||
		    (rc = tr_fbuf_reserve(&m->dx, nd * 2 * in)) != GNN_OK || (rc = tr_block_transpose(b, &m->tptr, &m->tidx)) != GNN_OK)
			return rc;
		/* [W_self; W_neigh] is (2 in) x out row-major: one product gives
		 * both halves of dX. */
		tr_sgemm(ks, CblasNoTrans, CblasTrans, nd, 2 * in, out, dy, out, m->params + m->off[l], out, m->dx.p,
		      2 * in);
		gc = (struct grad_ctx){ b, m->tptr.p, m->tidx.p, m->dx.p, m->h[l - 1].p, m->d[nxt].p, in,
					dropout ? m->keep_scale : 1.0f };
		tr_par_for(ns, 1 + 16384 / (in * (1 + b->num_edges / (ns ? ns : 1))), grad_rows, &gc);
		dy = m->d[nxt].p;
		nxt = 1 - nxt;
	}
	return GNN_OK;
}

const struct tr_model_ops tr_model_graphsage = {
	.name = "graphsage",
	.summary = "GraphSAGE with the mean aggregator (DGL's SAGEConv('mean'), PyG's SAGEConv)",
	.create = sage_create,
	.destroy = sage_destroy,
	.init = sage_init,
	.num_params = sage_num_params,
	.params = sage_params,
	.grads = sage_grads,
	.forward = sage_forward,
	.backward = sage_backward,
	.infer_layer = sage_infer_layer,
};
