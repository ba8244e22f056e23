/* gcn.c - GraphSAGE with the GCN aggregator (Hamilton et al. 2017, eq. 2;
 * DGL's SAGEConv('gcn')), behind the model seam (model.h: `--model gcn`).
 * The second model, added by following docs/HACKING.md's recipe: this
 * file and one registration line in model.c; the layer stack (shapes,
 * parameters, the loops over the layers) is layers.h's, shared with sage.c.
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
 * Parameters, one contiguous block, layer after layer (then, for a graph
 * without features, the learned input vector of layers.h): W_l [in_l x
 * out_l] row-major then b_l [out_l], i.e. the (in_l + 1) x out_l matrix [W_l; b_l]
 * that X_l = [mean | 1] multiplies in one sgemm; X_l^T dY gives dW and db
 * in one sgemm too. Dropout masks come from kernels.h (a pure function of
 * the step's seed, the layer and the element), initial parameters are
 * PyTorch's nn.Linear default U(-1/sqrt(in), 1/sqrt(in)). Not thread-safe:
 * one model per thread. */
#include <string.h>

#include "kernels.h"
#include "layers.h"
#include "model.h"

#define GCN_NMAT 1  /* one weight matrix: W */
#define GCN_INIT_TAG 0x67636e69ull

/* X[v] = [(h_v + sum of the in-neighbours' rows) / (deg + 1) | 1] for dst
 * rows [lo, hi). */
static void agg_rows(void *arg, size_t lo, size_t hi)
{
	const struct tr_agg_ctx *c = arg;
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

/* dY_{l-1}[u] = mask_u * sum over the dst rows v that averaged u in (u
 * itself when u < num_dst, and every v with an edge u -> v) of
 * dX[v] / (deg(v) + 1); mask_u (layers.h's tr_grad_mask) = (H_{l-1}[u] > 0)
 * * scale, H > 0 exactly where ReLU passed and dropout kept. One relation
 * (the stack refuses more), so tidx holds the dst. */
static void grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct tr_grad_ctx *c = arg;
	const int32_t *indptr = c->b->indptr;
	const size_t in = c->in, nd = c->b->num_dst;

	for (size_t u = lo; u < hi; u++) {
		float *restrict d = c->dh + u * in;

		if (u < nd)
			tr_vscale_to(d, c->dx + u * in, 1.0f / (float)(indptr[u + 1] - indptr[u] + 1), in);
		else
			memset(d, 0, in * sizeof(float));
		for (int32_t e = c->tptr[u]; e < c->tptr[u + 1]; e++) {
			int32_t v = c->tidx[e];

			tr_vaxpy(d, c->dx + (size_t)v * in, 1.0f / (float)(indptr[v + 1] - indptr[v] + 1), in);
		}
		tr_grad_mask(c, u, d);
	}
}

static const struct tr_layer_spec gcn_spec = { GCN_NMAT, GCN_INIT_TAG, agg_rows, grad_rows };

static int gcn_create(const struct tr_model_cfg *cfg, void **self)
{
	return tr_layers_create(cfg, &gcn_spec, self);
}

const struct tr_model_ops tr_model_gcn = {
	.name = "gcn",
	.summary = "GraphSAGE with the GCN aggregator (DGL's SAGEConv('gcn')): one weight per layer over the mean "
		   "of the node and its neighbours",
	.create = gcn_create,
	TR_LAYERS_OPS,
};
