/* linkpred.h - a link-prediction model's decoder and a bounded top-k:
 * what a graph store and a sampler compute to serve LINK requests
 * (proto.h, docs/inference.md "Link prediction: score and top-k").
 *
 * score(u, v) of the final embeddings h_u, h_v (dim floats each):
 *   dot  h_u . h_v
 *   mlp  w2 . relu(W1 (h_u * h_v) + b1) + b2   (W1 [hidden x dim] row-major,
 *        then b1 [hidden], w2 [hidden], b2: gnn_link_params_count floats)
 * probability = sigmoid(score). This is the one implementation: the
 * trainer scores its training pairs with it too (services/trainer/model/
 * decoder.c adds the gradients), so it accumulates in float, in the
 * trainer's order (b1[j] + sum_i (W1[j][i] a[i]) b[i], then b2 + sum_j
 * w2[j] relu(z[j])): a model's params_crc depends on every bit of it.
 * Symmetric in u and v up to float rounding. Pure functions; the top-k is
 * the caller's, one per thread. */
#ifndef GNN_LINKPRED_H
#define GNN_LINKPRED_H

#include <stdint.h>

/* A decoder; params is borrowed (NULL for dot). */
struct gnn_linkdec {
	uint32_t kind;            /* enum gnn_link_decoder (proto.h) */
	uint32_t dim, hidden;     /* hidden 0 for dot */
	const float *params;      /* mlp: gnn_link_params_count(kind, dim, hidden) floats */
};

/* The score of rows a and b (dim floats each). */
float gnn_linkdec_score(const struct gnn_linkdec *d, const float *a, const float *b);

/* mlp only: the hidden pre-activations z = W1 (a * b) + b1 into z[hidden]
 * (the caller's), each as gnn_linkdec_score computes it (a backward pass
 * needs them). */
void gnn_linkdec_hidden(const struct gnn_linkdec *d, const float *a, const float *b, float *z);

/* One query q (dim floats, borrowed) scored against many rows, as a
 * TOPK does: for mlp, W1 diag(q) is computed once (hidden x dim floats),
 * so that each row costs hidden x dim multiply-adds rather than twice
 * that; gnn_linkq_score(lq, r) equals gnn_linkdec_score(d, q, r) bit for
 * bit (the same products in the same order). init returns GNN_ENOMEM (lq
 * then holds nothing); gnn_linkq_free is safe on a zeroed struct. */
struct gnn_linkq {
	struct gnn_linkdec d;     /* a copy; params borrowed */
	const float *q;
	float *wq;                /* mlp: [hidden x dim], owned; dot: NULL */
};
int gnn_linkq_init(struct gnn_linkq *lq, const struct gnn_linkdec *d, const float *q);
float gnn_linkq_score(const struct gnn_linkq *lq, const float *r);
void gnn_linkq_free(struct gnn_linkq *lq);

/* 1 / (1 + e^-x), without overflow for large |x|. */
double gnn_sigmoid(double x);

/* The k best (node, score) pairs offered, best first by score descending
 * then node ascending: memory O(k) whatever is offered. Scores must not
 * be NaN (the callers check the rows they score). */
struct gnn_topk {
	uint32_t k, n;            /* capacity, held */
	int64_t *nodes;           /* [k], owned */
	float *scores;            /* [k], owned */
};
/* Allocates room for k >= 1. GNN_ENOMEM (t then holds nothing). */
int gnn_topk_init(struct gnn_topk *t, uint32_t k);
void gnn_topk_offer(struct gnn_topk *t, int64_t node, float score);
/* Puts the n held in order, best first (after that, offer no more). */
void gnn_topk_sort(struct gnn_topk *t);
/* Frees the arrays; safe on a zeroed struct. */
void gnn_topk_free(struct gnn_topk *t);

#endif
