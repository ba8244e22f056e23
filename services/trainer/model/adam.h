/* adam.h - Adam as torch.optim.Adam (weight_decay adds weight_decay * p to
 * the gradient, L2 as in PyTorch's Adam, not AdamW): betas 0.9 and 0.999,
 * eps 1e-8, bias-corrected. m and v are [n] floats owned by the struct;
 * t counts the steps taken (checkpoints save t, m and v). */
#ifndef TR_ADAM_H
#define TR_ADAM_H

#include <stddef.h>
#include <stdint.h>

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
