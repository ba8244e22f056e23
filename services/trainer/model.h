/* model.h - GraphSAGE with the mean aggregator (DGL's SAGEConv('mean'),
 * PyG's SAGEConv), forward and backward written by hand on OpenBLAS sgemm,
 * softmax cross-entropy, and Adam (docs/model.md: formulas as implemented,
 * multiply order, dropout mask, benchmark; docs/training.md: its use).
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
 * the thread count beyond the products' rounding. */
#ifndef TR_MODEL_H
#define TR_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct tr_model_cfg {
	uint32_t num_layers;   /* 1 .. GNN_PROTO_MAX_LAYERS */
	uint32_t in_dim;       /* input feature width, >= 1 */
	uint32_t hidden;       /* width of every hidden layer, >= 1 */
	uint32_t num_classes;  /* >= 2 */
	float dropout;         /* probability in [0, 1) */
};

struct tr_model;

/* Allocates the model (parameters zero; see tr_model_init) and checks the
 * configuration (GNN_EINVAL, logged, when a value is outside the ranges
 * above). *out is the caller's: tr_model_free. */
int tr_model_new(const struct tr_model_cfg *cfg, struct tr_model **out);
void tr_model_free(struct tr_model *m);

/* Glorot-uniform weights with the ReLU gain (as DGL's SAGEConv), zero
 * biases; a pure function of seed, so every rank starts identical. */
void tr_model_init(struct tr_model *m, uint64_t seed);

size_t tr_model_num_params(const struct tr_model *m);
/* The parameter and gradient blocks, [tr_model_num_params] floats each,
 * owned by the model. */
float *tr_model_params(struct tr_model *m);
float *tr_model_grads(struct tr_model *m);

/* Checks that mb fits the model before any work: num_layers equal to the
 * model's, feature rows present with feat_dim == in_dim, labels present
 * (when need_labels) and each in [-1, num_classes). GNN_EINVAL with err
 * (err_len bytes, NUL-terminated) saying what does not match. */
int tr_model_check(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels,
		   char *err, size_t err_len);

struct tr_step_stats {
	double loss;           /* mean cross-entropy over labelled seeds */
	uint32_t labelled;     /* seeds with a label >= 0 */
	uint32_t correct;      /* of those, argmax(logits) == label */
	double flops;          /* floating-point operations of the matrix products */
	double matmul_s;       /* seconds spent inside those products (flops / matmul_s
				* is the GFLOP/s `gnn-trainer bench` reports) */
};

/* One training step's computation: forward with dropout (mask from
 * dropout_seed), the mean cross-entropy over the labelled seeds, and its
 * gradient with respect to every parameter, written over the gradient
 * block (seeds labelled -1 contribute nothing; with none labelled the
 * gradient is zero). mb must have passed tr_model_check with labels. */
int tr_model_train_step(struct tr_model *m, const struct gnn_minibatch *mb, uint64_t dropout_seed,
			struct tr_step_stats *st);

/* The loss alone, forward only: with train true, dropout with the mask of
 * dropout_seed (the same mask tr_model_train_step uses); with train false,
 * no dropout. For the gradient check. */
int tr_model_loss(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		  double *loss);

/* Inference without dropout: pred[i] = argmax of seed i's logits
 * (pred has mb->num_seeds entries, the caller's). */
int tr_model_predict(struct tr_model *m, const struct gnn_minibatch *mb, int32_t *pred);

/* Adam as torch.optim.Adam (weight_decay adds weight_decay * p to the
 * gradient, L2 as in PyTorch's Adam, not AdamW): betas 0.9 and 0.999,
 * eps 1e-8, bias-corrected. m and v are [n] floats owned by the struct;
 * t counts the steps taken (checkpoints save t, m and v). */
struct tr_adam {
	float lr, beta1, beta2, eps, weight_decay;
	uint64_t t;
	size_t n;
	float *m, *v;
};

/* Allocates m and v (zeroed), t = 0. GNN_ENOMEM on failure. */
int tr_adam_init(struct tr_adam *a, size_t n, float lr, float weight_decay);
/* One update of params[n] with grads[n]; increments t first. */
void tr_adam_step(struct tr_adam *a, float *params, const float *grads);
void tr_adam_free(struct tr_adam *a);

#endif
