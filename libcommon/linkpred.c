/* linkpred.c - see linkpred.h. */
#include "linkpred.h"

#include <math.h>
#include <stdlib.h>

#include "err.h"
#include "proto.h"

/* One hidden unit's pre-activation z + sum_i (w[i] a[i]) b[i], with the
 * trainer's grouping and order (see linkpred.h); a NULL: w is a row of
 * W1 diag(q) already (gnn_linkq), the same products. */
static float unit(const float *w, const float *a, const float *b, float z, uint32_t dim)
{
	if (a == NULL) {
		for (uint32_t i = 0; i < dim; i++)
			z += w[i] * b[i];
		return z;
	}
	for (uint32_t i = 0; i < dim; i++)
		z += w[i] * a[i] * b[i];
	return z;
}

/* b2 + sum_j w2[j] relu(z_j) with first-layer rows w1 (W1, or W1 diag(q)
 * with a NULL). Every term is added, a zero too, as the trainer does. */
static float mlp_score(const struct gnn_linkdec *d, const float *w1, const float *a, const float *b)
{
	const float *b1 = d->params + (size_t)d->hidden * d->dim, *w2 = b1 + d->hidden;
	float s = w2[d->hidden];

	for (uint32_t j = 0; j < d->hidden; j++) {
		float z = unit(w1 + (size_t)j * d->dim, a, b, b1[j], d->dim);

		s += w2[j] * (z > 0 ? z : 0);
	}
	return s;
}

float gnn_linkdec_score(const struct gnn_linkdec *d, const float *a, const float *b)
{
	float s = 0;

	if (d->kind == GNN_LINK_MLP)
		return mlp_score(d, d->params, a, b);
	for (uint32_t i = 0; i < d->dim; i++)
		s += a[i] * b[i];
	return s;
}

void gnn_linkdec_hidden(const struct gnn_linkdec *d, const float *a, const float *b, float *z)
{
	const float *b1 = d->params + (size_t)d->hidden * d->dim;

	for (uint32_t j = 0; j < d->hidden; j++)
		z[j] = unit(d->params + (size_t)j * d->dim, a, b, b1[j], d->dim);
}

int gnn_linkq_init(struct gnn_linkq *lq, const struct gnn_linkdec *d, const float *q)
{
	const float *W1 = d->params;

	*lq = (struct gnn_linkq){ .d = *d, .q = q };
	if (d->kind != GNN_LINK_MLP)
		return GNN_OK;
	if ((lq->wq = malloc((size_t)d->hidden * d->dim * sizeof(*lq->wq))) == NULL)
		return GNN_ENOMEM;
	for (size_t j = 0; j < d->hidden; j++)
		for (size_t i = 0; i < d->dim; i++)
			lq->wq[j * d->dim + i] = W1[j * d->dim + i] * q[i];
	return GNN_OK;
}

float gnn_linkq_score(const struct gnn_linkq *lq, const float *r)
{
	if (lq->d.kind != GNN_LINK_MLP)
		return gnn_linkdec_score(&lq->d, lq->q, r);
	return mlp_score(&lq->d, lq->wq, NULL, r);
}

void gnn_linkq_free(struct gnn_linkq *lq)
{
	free(lq->wq);
	lq->wq = NULL;
}

double gnn_sigmoid(double x)
{
	if (x >= 0)
		return 1 / (1 + exp(-x));
	return exp(x) / (1 + exp(x));
}

int gnn_topk_init(struct gnn_topk *t, uint32_t k)
{
	*t = (struct gnn_topk){ .k = k };
	t->nodes = malloc((size_t)k * sizeof(*t->nodes) + 1);
	t->scores = malloc((size_t)k * sizeof(*t->scores) + 1);
	if (t->nodes == NULL || t->scores == NULL) {
		gnn_topk_free(t);
		return GNN_ENOMEM;
	}
	return GNN_OK;
}

/* Whether entry i ranks below (is worse than) entry j. */
static int worse(const struct gnn_topk *t, uint32_t i, int64_t node, float score)
{
	return t->scores[i] < score || (t->scores[i] == score && t->nodes[i] > node);
}

static void swap(struct gnn_topk *t, uint32_t i, uint32_t j)
{
	int64_t n = t->nodes[i];
	float s = t->scores[i];

	t->nodes[i] = t->nodes[j];
	t->scores[i] = t->scores[j];
	t->nodes[j] = n;
	t->scores[j] = s;
}

/* A heap with the worst entry at 0: sift entry i down within [0, n). */
static void sift_down(struct gnn_topk *t, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < n && worse(t, l, t->nodes[m], t->scores[m]))
			m = l;
		if (r < n && worse(t, r, t->nodes[m], t->scores[m]))
			m = r;
		if (m == i)
			return;
		swap(t, i, m);
		i = m;
	}
}

void gnn_topk_offer(struct gnn_topk *t, int64_t node, float score)
{
	uint32_t i;

	if (t->n < t->k) {
		i = t->n++;
		t->nodes[i] = node;
		t->scores[i] = score;
		while (i > 0 && worse(t, i, t->nodes[(i - 1) / 2], t->scores[(i - 1) / 2])) {
			swap(t, i, (i - 1) / 2);
			i = (i - 1) / 2;
		}
		return;
	}
	if (!worse(t, 0, node, score))
		return;
	t->nodes[0] = node;
	t->scores[0] = score;
	sift_down(t, 0, t->n);
}

void gnn_topk_sort(struct gnn_topk *t)
{
	/* heap sort: the worst goes to the end, leaving the best first */
	for (uint32_t end = t->n; end > 1; end--) {
		swap(t, 0, end - 1);
		sift_down(t, 0, end - 1);
	}
}

void gnn_topk_free(struct gnn_topk *t)
{
	free(t->nodes);
	free(t->scores);
	t->nodes = NULL;
	t->scores = NULL;
	t->n = 0;
}
