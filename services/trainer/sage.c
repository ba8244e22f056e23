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
 * The layer stack (shapes, parameter block, workspaces, the loops over the
 * layers, initialisation) is layers.h's, shared with gcn.c; this file is
 * GraphSAGE's aggregation and its gradient.
 *
 * Layer l keeps X_l = [h_dst | mean_nbr | 1], num_dst x ldx (ldx >= 2 in + 1),
 * whose first 2 in + 1 columns multiply the parameter rows
 * [W_self_l; W_neigh_l; b_l]: the layout above stores exactly that
 * (2 in + 1) x out row-major matrix, so one sgemm gives the self term, the
 * neighbour term and the bias, and one sgemm X_l^T dY gives all three
 * gradients. Aggregating before multiplying (num_dst rows through the
 * product instead of num_src) is the cheaper order for sampled blocks,
 * where num_src is 6-10x num_dst (docs/model.md has the cost model). */
#include <string.h>

#include "kernels.h"
#include "layers.h"
#include "model.h"

/* One weight matrix per term: W_self and W_neigh. */
#define SAGE_NMAT 2
#define SAGE_INIT_TAG 0x696e6974ull

/* X = [h_dst | mean of the in-neighbours' rows | 1] for dst rows [lo, hi).
 * The neighbour rows are scattered over the source matrix (for layer 0,
 * hundreds of MB of features): each is a cache miss, so rows AHEAD edges
 * ahead in the edge list are prefetched while this one is added. */
#define AHEAD 8

static void agg_rows(void *arg, size_t lo, size_t hi)
{
	const struct tr_agg_ctx *c = arg;
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

/* dY_{l-1}[u] = mask_u * (dX_self[u] (u < num_dst) + sum over the edges
 * u -> v of dX_neigh[v] / deg(v)), where dX = dY_l [W_self; W_neigh]^T
 * (num_dst x 2 in) and mask_u = (H_{l-1}[u] > 0) * scale: H > 0 exactly
 * where ReLU passed and dropout kept (kept units are scaled, dropped 0). */
static void grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct tr_grad_ctx *c = arg;
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

/* Initial W_self, W_neigh and b ~ U(-1/sqrt(in), 1/sqrt(in)) (layers.h):
 * PyTorch's nn.Linear default, which PyG's SAGEConv keeps. DGL's
 * xavier_uniform_ with the ReLU gain is about 2x wider per layer; with two
 * matrices summed per layer the logits start large (first-epoch loss 26
 * instead of 4 on `small`, and 0.59 instead of 0.93 test accuracy after 10
 * epochs: docs/model.md). */
static const struct tr_layer_spec sage_spec = { SAGE_NMAT, SAGE_INIT_TAG, agg_rows, grad_rows };

static int sage_create(const struct tr_model_cfg *cfg, void **self)
{
	return tr_layers_create(cfg, &sage_spec, self);
}

const struct tr_model_ops tr_model_graphsage = {
	.name = "graphsage",
	.summary = "GraphSAGE with the mean aggregator (DGL's SAGEConv('mean'), PyG's SAGEConv)",
	.create = sage_create,
	TR_LAYERS_OPS,
};
