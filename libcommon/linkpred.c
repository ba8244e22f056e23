/* linkpred.c - see linkpred.h. */
#include "linkpred.h"

#include <math.h>
#include <stdlib.h>

#include "err.h"
#include "proto.h"

double gnn_linkdec_score(const struct gnn_linkdec *d, const float *a, const float *b)
{
	const float *W1 = d->params, *b1, *w2;
	double s = 0;

	if (d->kind != GNN_LINK_MLP) {
		for (uint32_t i = 0; i < d->dim; i++)
			s += (double)a[i] * b[i];
		return s;
	}
	b1 = W1 + (size_t)d->hidden * d->dim;
	w2 = b1 + d->hidden;
	for (uint32_t j = 0; j < d->hidden; j++) {
		const float *row = W1 + (size_t)j * d->dim;
		double z = b1[j];

		for (uint32_t i = 0; i < d->dim; i++)
			z += (double)row[i] * ((double)a[i] * b[i]);
		if (z > 0)
			s += (double)w2[j] * z;
	}
	return s + w2[d->hidden];
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
			lq->wq[j * d->dim + i] = (double)W1[j * d->dim + i] * q[i];
	return GNN_OK;
}

double gnn_linkq_score(const struct gnn_linkq *lq, const float *r)
{
	const struct gnn_linkdec *d = &lq->d;
	const float *b1 = d->params + (size_t)d->hidden * d->dim, *w2 = b1 + d->hidden;
	double s = 0;

	if (d->kind != GNN_LINK_MLP)
		return gnn_linkdec_score(d, lq->q, r);
	for (uint32_t j = 0; j < d->hidden; j++) {
		const double *row = lq->wq + (size_t)j * d->dim;
		double z = b1[j];

		for (uint32_t i = 0; i < d->dim; i++)
			z += row[i] * r[i];
		if (z > 0)
			s += (double)w2[j] * z;
	}
	return s + w2[d->hidden];
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
