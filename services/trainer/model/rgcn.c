/* rgcn.c - R-GCN (Schlichtkrull et al. 2018) with the mean per relation
 * (DGL's RelGraphConv with self-loop and norm 1/|N_r(v)|), behind the
 * model seam (model.h: `--model rgcn`), for typed (heterogeneous)
 * minibatches. docs/model.md, "R-GCN": formulas as implemented, the
 * parameter layouts, cost.
 *
 * Layer l maps its block's source rows H (num_src x in_l) to destination
 * rows (num_dst x out_l):
 *
 *   Y_v = H_v W_self + sum_r mean_{u in N_r(v)} H_u W_r + b
 *
 * with the mean over no neighbours 0, through X_l = [H_dst | mean_1 | ...
 * | mean_R | 1] times [W_self; W_1; ...; W_R; b]: GraphSAGE is the case
 * R = 1, and the aggregation, its gradient, the layer stack and the input
 * rows are layers.h's, shared with sage.c. ReLU then dropout follow every
 * layer but the last, whose outputs are the logits. Layer 0's input rows
 * are D wide (model.h): feature rows zero-padded to D, and a learned
 * vector per node type without features.
 *
 * With num_bases B > 0 each layer's relation matrices are combinations of
 * B shared bases, W_r = sum_b a[r][b] V_b (basis decomposition): the
 * stored layer is W_self, V_1..V_B, a (R x B), b, and the stack
 * materialises [W_self; W_1..W_R; b] for the forward pass and reduces the
 * full gradient to dV_b = sum_r a[r][b] dW_r and da[r][b] = <dW_r, V_b>.
 * With B = 0 the stored layer is [W_self; W_1..W_R; b] itself. Then, at
 * the end of the block, the type vectors. Not thread-safe: one model per
 * thread. */
#include "layers.h"
#include "model.h"

#define RGCN_INIT_TAG 0x7267636eull

/* nmat 0: W_self and one matrix per relation of the schema. */
static const struct tr_layer_spec rgcn_spec = { 0, RGCN_INIT_TAG, tr_layers_rel_agg_rows,
						tr_layers_rel_grad_rows };

static int rgcn_create(const struct tr_model_cfg *cfg, void **self)
{
	return tr_layers_create(cfg, &rgcn_spec, self);
}

const struct tr_model_ops tr_model_rgcn = {
	.name = "rgcn",
	.summary = "R-GCN: W_self plus a weight per relation over the mean of its neighbours, optional basis "
		   "decomposition (--num-bases), learned input vectors for node types without features",
	.create = rgcn_create,
	TR_LAYERS_OPS,
};
