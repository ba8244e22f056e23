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
 * (num_seeds x num_classes). in_0 = D (model.h: in_dim, or hidden when the
 * graph has no features), out_{L-1} = num_classes, every other width is
 * hidden. GraphSAGE takes plain graphs only (one type, one relation).
 *
 * Parameters live in one contiguous float block, and gradients in another
 * of the same layout, layer after layer:
 *   W_self_l [in_l x out_l] row-major, W_neigh_l [in_l x out_l], b_l [out_l]
 * then, for a graph without features, the learned input vector (layers.h),
 * so the all-reduce, Adam and checkpoints each see one array.
 *
 * The minibatch is proto.h's struct gnn_minibatch as the sampler sends it
 * (blocks in DGL's convention, blocks[0]'s source rows per type with
 * src_types, labels of the seeds); the model only reads it.
 *
 * Dropout masks are a pure function of (dropout_seed, layer, element), so
 * the same seed gives the same mask: steps are reproducible and the
 * gradient check can difference the loss. Not thread-safe: one model per
 * thread. The matrix products use OpenBLAS's threads, and the model's own
 * loops (gathers, activations) as many threads as openblas_get_num_threads()
 * reports, started and joined inside each call; results do not depend on
 * the thread count beyond the products' rounding.
 *
 * The layer stack (input rows, shapes, parameter block, workspaces, the
 * loops over the layers, initialisation) is layers.h's, shared with gcn.c
 * and rgcn.c; so is the aggregation: GraphSAGE is R-GCN's relational mean
 * with one relation (a schema of more is refused: --model rgcn). Several
 * node types with one relation read the input rows of model.h (features
 * zero-padded, learned vectors for types without features).
 *
 * Layer l keeps X_l = [h_dst | mean_nbr | 1], num_dst x ldx (ldx >= 2 in + 1),
 * whose first 2 in + 1 columns multiply the parameter rows
 * [W_self_l; W_neigh_l; b_l]: the layout above stores exactly that
 * (2 in + 1) x out row-major matrix, so one sgemm gives the self term, the
 * neighbour term and the bias, and one sgemm X_l^T dY gives all three
 * gradients. Aggregating before multiplying (num_dst rows through the
 * product instead of num_src) is the cheaper order for sampled blocks,
 * where num_src is 6-10x num_dst (docs/model.md has the cost model). */
#include "layers.h"
#include "model.h"

/* One weight matrix per term: W_self and W_neigh. */
#define SAGE_NMAT 2
#define SAGE_INIT_TAG 0x696e6974ull

/* Initial W_self, W_neigh and b ~ U(-1/sqrt(in), 1/sqrt(in)) (layers.h):
 * PyTorch's nn.Linear default, which PyG's SAGEConv keeps. DGL's
 * xavier_uniform_ with the ReLU gain is about 2x wider per layer; with two
 * matrices summed per layer the logits start large (first-epoch loss 26
 * instead of 4 on `small`, and 0.59 instead of 0.93 test accuracy after 10
 * epochs: docs/model.md). */
static const struct tr_layer_spec sage_spec = { SAGE_NMAT, SAGE_INIT_TAG, tr_layers_rel_agg_rows,
						 tr_layers_rel_grad_rows };

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
