/* gcn.c - GraphSAGE with the GCN aggregator (Hamilton et al. 2017, eq. 2;
 * DGL's SAGEConv('gcn')), behind the model seam (model.h: `--model gcn`).
 * The second model, added by following docs/HACKING.md's recipe: this
 * file and one registration line in model.c.
 *
 * Layer l maps its block's source rows h (num_src x in_l) to destination
 * rows (num_dst x out_l) with one weight matrix instead of GraphSAGE's two:
 *
 *   h'_v = ((h_v + sum_{u in N(v)} h_u) / (deg(v) + 1)) W + b
 *
 * so the node's own row is averaged in with its sampled neighbours (DGL's
 * 'gcn' aggregator: the sum over the neighbours plus the node, divided by
 * the in-degree plus one). ReLU then dropout follow every layer but the
 * last, whose outputs are the logits. About half of GraphSAGE's parameters
 * and multiply work per layer; it cannot tell a node from its
 * neighbourhood, which costs accuracy where the node's own features matter
 * (docs/model.md compares the two).
 *
 * Parameters, one contiguous block, layer after layer: W_l [in_l x out_l]
 * row-major then b_l [out_l], i.e. the (in_l + 1) x out_l matrix [W_l; b_l]
 * that X_l = [mean | 1] multiplies in one sgemm; X_l^T dY gives dW and db
 * in one sgemm too. Dropout masks come from kernels.h (a pure function of
 * the step's seed, the layer and the element), initial parameters are
 * PyTorch's nn.Linear default U(-1/sqrt(in), 1/sqrt(in)). Not thread-safe:
 * one model per thread. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "kernels.h"
#include "log.h"
#include "model.h"

#define LD_FLOATS 16  /* X_l's row stride: a multiple of a 64-byte line */

struct gcn {
	struct tr_model_cfg cfg;
	uint32_t in[GNN_PROTO_MAX_LAYERS], out[GNN_PROTO_MAX_LAYERS];
	size_t ldx[GNN_PROTO_MAX_LAYERS];  /* row stride of X_l */
	size_t off[GNN_PROTO_MAX_LAYERS];  /* W_l's offset; b_l follows */
	size_t nparams;
	float *params, *grads;
	uint32_t keep_below;
	float keep_scale;
	struct tr_fbuf x[GNN_PROTO_MAX_LAYERS];  /* X_l = [mean | 1], kept for backward */
	struct tr_fbuf h[GNN_PROTO_MAX_LAYERS];  /* outputs after ReLU + dropout; h[L-1] the logits */
	struct tr_fbuf d[2], dx;                 /* backward: dY ping-pong, dX = dY W^T */
	struct tr_ibuf tptr, tidx;               /* backward: the block grouped by source */
};

static void gcn_destroy(void *self)
{
	struct gcn *m = self;

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

static int gcn_create(const struct tr_model_cfg *cfg, void **out)
{
	struct gcn *m;
	size_t n = 0;

	if (cfg->in_dim > (1u << 20) || cfg->hidden > (1u << 20) || cfg->num_classes > (1u << 20)) {
		GNN_ERROR("bad_config", "in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " reason=\"widths above 1048576 are not supported\"", cfg->in_dim, cfg->hidden,
			  cfg->num_classes);
		return GNN_EINVAL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return GNN_ENOMEM;
	m->cfg = *cfg;
	for (uint32_t l = 0; l < cfg->num_layers; l++) {
		m->in[l] = l == 0 ? cfg->in_dim : cfg->hidden;
		m->out[l] = l + 1 == cfg->num_layers ? cfg->num_classes : cfg->hidden;
		m->ldx[l] = ((size_t)m->in[l] + 1 + LD_FLOATS - 1) / LD_FLOATS * LD_FLOATS;
		m->off[l] = n;
		n += ((size_t)m->in[l] + 1) * m->out[l];
	}
	m->nparams = n;
	m->params = calloc(n, sizeof(float));
	m->grads = calloc(n, sizeof(float));
	if (m->params == NULL || m->grads == NULL) {
		gcn_destroy(m);
		return GNN_ENOMEM;
	}
	m->keep_below = tr_dropout_keep_below(cfg->dropout);
	m->keep_scale = (float)(1.0 / (1.0 - (double)cfg->dropout));
	*out = m;
	return GNN_OK;
}

static void gcn_init(void *self, uint64_t seed)
{
	struct gcn *m = self;
	uint64_t key = gnn_mix64(seed ^ 0x67636e69ull);

	for (uint32_t l = 0; l < m->cfg.num_layers; l++) {
		double bound = 1.0 / sqrt((double)m->in[l]);
		size_t nw = ((size_t)m->in[l] + 1) * m->out[l];

		for (size_t i = 0; i < nw; i++) {
			size_t j = m->off[l] + i;

			m->params[j] = (float)((2.0 * gnn_unit64(gnn_draw64(key, j)) - 1.0) * bound);
		}
	}
}

static size_t gcn_num_params(const void *self)
{
	return ((const struct gcn *)self)->nparams;
}

static float *gcn_params(void *self)
{
	return ((struct gcn *)self)->params;
}

static float *gcn_grads(void *self)
{
	return ((struct gcn *)self)->grads;
}

/* X[v] = [(h_v + sum of the in-neighbours' rows) / (deg + 1) | 1] for dst
 * rows [lo, hi). */
struct agg_ctx {
	const struct gnn_block *b;
	const float *h;
	float *x;
	size_t in, ldx;
};

static void agg_rows(void *arg, size_t lo, size_t hi)
{
	const struct agg_ctx *c = arg;
	const int32_t *indptr = c->b->indptr, *idx = c->b->indices;
	const size_t in = c->in;

	for (size_t v = lo; v < hi; v++) {
		float *restrict row = c->x + v * c->ldx;
		int32_t e0 = indptr[v], e1 = indptr[v + 1];

		memcpy(row, c->h + v * in, in * sizeof(float));
		for (int32_t e = e0; e < e1; e++) {
			if (e + 1 < e1)
				tr_prefetch_row(c->h + (size_t)idx[e + 1] * in, in);
			tr_vadd(row, c->h + (size_t)idx[e] * in, in);
		}
		tr_vscale(row, 1.0f / (float)(e1 - e0 + 1), in);
		row[in] = 1.0f;
	}
}

/* Layer l of block b from the source rows h into y (num_dst x out_l),
 * keeping X_l for the backward pass; dropout with key when asked. */
static int gcn_layer(struct gcn *m, uint32_t l, const struct gnn_block *b, const float *h, bool dropout,
		     uint64_t key, struct tr_kstats *ks, float *y)
{
	size_t nd = b->num_dst, in = m->in[l], out = m->out[l];
	struct agg_ctx ac;
	int rc;

	if ((rc = tr_fbuf_reserve(&m->x[l], nd * m->ldx[l])) != GNN_OK)
		return rc;
	ac = (struct agg_ctx){ b, h, m->x[l].p, in, m->ldx[l] };
	tr_par_for(nd, 1 + 16384 / (in * (1 + b->num_edges / (nd ? nd : 1))), agg_rows, &ac);
	tr_sgemm(ks, CblasNoTrans, CblasNoTrans, nd, out, in + 1, m->x[l].p, m->ldx[l], m->params + m->off[l], out, y,
		 out);
	if (l + 1 < m->cfg.num_layers)
		tr_relu_dropout(y, nd, out, dropout, key, m->keep_below, m->keep_scale);
	return GNN_OK;
}

static int gcn_forward(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		       struct tr_kstats *ks, const float **logits)
{
	struct gcn *m = self;
	uint32_t L = m->cfg.num_layers;
	const float *h = mb->feat;
	int rc;

	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if ((rc = tr_fbuf_reserve(&m->h[l], (size_t)b->num_dst * m->out[l])) != GNN_OK ||
		    (rc = gcn_layer(m, l, b, h, train && m->cfg.dropout > 0.0f, tr_dropout_key(dropout_seed, l), ks,
				    m->h[l].p)) != GNN_OK)
			return rc;
		h = m->h[l].p;
	}
	*logits = m->h[L - 1].p;
	return GNN_OK;
}

static int gcn_infer_layer(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			   struct tr_kstats *ks)
{
	return gcn_layer(self, l, b, h, false, 0, ks, out);
}

/* dY_{l-1}[u] = mask_u * sum over the dst rows v that averaged u in (u
 * itself when u < num_dst, and every v with an edge u -> v) of
 * dX[v] / (deg(v) + 1); mask_u = (H_{l-1}[u] > 0) * scale, H > 0 exactly
 * where ReLU passed and dropout kept. */
struct grad_ctx {
	const struct gnn_block *b;
	const int32_t *tptr, *tidx;
	const float *dx;    /* num_dst x in */
	const float *h;     /* H_{l-1}: num_src x in */
	float *dh;          /* num_src x in */
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

		if (u < nd)
			tr_vscale_to(d, c->dx + u * in, 1.0f / (float)(indptr[u + 1] - indptr[u] + 1), in);
		else
			memset(d, 0, in * sizeof(float));
		for (int32_t e = c->tptr[u]; e < c->tptr[u + 1]; e++) {
			int32_t v = c->tidx[e];

			tr_vaxpy(d, c->dx + (size_t)v * in, 1.0f / (float)(indptr[v + 1] - indptr[v] + 1), in);
		}
		for (size_t j = 0; j < in; j++)
			d[j] = hu[j] > 0.0f ? d[j] * c->scale : 0.0f;
	}
}

static int gcn_backward(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks)
{
	struct gcn *m = self;
	const float *dy = dlogits;
	int nxt = 0, rc;

	for (uint32_t l = m->cfg.num_layers; l-- > 0;) {
		const struct gnn_block *b = &mb->blocks[l];
		size_t nd = b->num_dst, ns = b->num_src, in = m->in[l], out = m->out[l];
		struct grad_ctx gc;

		/* [dW; db] = X^T dY */
		if (nd == 0)
			memset(m->grads + m->off[l], 0, (in + 1) * out * sizeof(float));
		else
			tr_sgemm(ks, CblasTrans, CblasNoTrans, in + 1, out, nd, m->x[l].p, m->ldx[l], dy, out,
				 m->grads + m->off[l], out);
		if (l == 0)
			break;
		if ((rc = tr_fbuf_reserve(&m->d[nxt], ns * in)) != GNN_OK ||
		    (rc = tr_fbuf_reserve(&m->dx, nd * in)) != GNN_OK ||
		    (rc = tr_block_transpose(b, &m->tptr, &m->tidx)) != GNN_OK)
			return rc;
		/* dX = dY W^T: W is the first in rows of [W; b] */
		tr_sgemm(ks, CblasNoTrans, CblasTrans, nd, in, out, dy, out, m->params + m->off[l], out, m->dx.p, in);
		gc = (struct grad_ctx){ b, m->tptr.p, m->tidx.p, m->dx.p, m->h[l - 1].p, m->d[nxt].p, in,
					m->cfg.dropout > 0.0f ? m->keep_scale : 1.0f };
		tr_par_for(ns, 1 + 16384 / (in * (1 + b->num_edges / (ns ? ns : 1))), grad_rows, &gc);
		dy = m->d[nxt].p;
		nxt = 1 - nxt;
	}
	return GNN_OK;
}

const struct tr_model_ops tr_model_gcn = {
	.name = "gcn",
	.summary = "GraphSAGE with the GCN aggregator (DGL's SAGEConv('gcn')): one weight per layer over the mean "
		   "of the node and its neighbours",
	.create = gcn_create,
	.destroy = gcn_destroy,
	.init = gcn_init,
	.num_params = gcn_num_params,
	.params = gcn_params,
	.grads = gcn_grads,
	.forward = gcn_forward,
	.backward = gcn_backward,
	.infer_layer = gcn_infer_layer,
};
