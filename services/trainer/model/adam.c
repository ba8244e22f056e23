/* adam.c - the optimizer (adam.h). */
#include "adam.h"

#include <math.h>
#include <stdlib.h>

#include "err.h"

int tr_adam_init(struct tr_adam *a, size_t n, float lr, float weight_decay)
{
	*a = (struct tr_adam){ .lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = weight_decay,
			       .n = n };
	a->m = calloc(n ? n : 1, sizeof(float));
	a->v = calloc(n ? n : 1, sizeof(float));
	if (a->m == NULL || a->v == NULL) {
		tr_adam_free(a);
		return GNN_ENOMEM;
	}
	return GNN_OK;
}

/* torch.optim.Adam's single-tensor update (amsgrad off, maximize off):
 *   g = grad + wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * with the bias corrections computed in double, as Python does. */
void tr_adam_step(struct tr_adam *a, float *params, const float *grads)
{
	double bc1, bc2;
	float step, bc2_sqrt, b1 = a->beta1, b2 = a->beta2, eps = a->eps, wd = a->weight_decay;
	float c1 = 1.0f - b1, c2 = 1.0f - b2;

	a->t++;
	bc1 = 1.0 - pow((double)a->beta1, (double)a->t);
	bc2 = 1.0 - pow((double)a->beta2, (double)a->t);
	step = (float)((double)a->lr / bc1);
	bc2_sqrt = (float)sqrt(bc2);
	for (size_t i = 0; i < a->n; i++) {
		float g = grads[i] + wd * params[i];
		float mi = b1 * a->m[i] + c1 * g;
		float vi = b2 * a->v[i] + c2 * g * g;

		a->m[i] = mi;
		a->v[i] = vi;
		params[i] -= step * (mi / (sqrtf(vi) / bc2_sqrt + eps));
	}
}

void tr_adam_free(struct tr_adam *a)
{
	free(a->m);
	free(a->v);
	a->m = a->v = NULL;
}
