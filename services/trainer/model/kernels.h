/* kernels.h - the trainer's numeric building blocks, shared by every model
 * (model.h): workspaces that only grow, SIMD row helpers (GCC vector
 * extensions, SSE2 at the baseline ISA), a parallel for, OpenBLAS sgemm
 * with flop accounting, ReLU + inverted dropout with counter-based masks,
 * and softmax cross-entropy. docs/model.md measures them. */
#ifndef TR_KERNELS_H
#define TR_KERNELS_H

#include <cblas.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model.h"

#define TR_ALIGN_BYTES 64

/* A float workspace that only grows (contents are not kept on growth),
 * 64-byte aligned; an int32 one. Free with free(b->p). */
struct tr_fbuf {
	float *p;
	size_t cap;   /* floats */
};
struct tr_ibuf {
	int32_t *p;
	size_t cap;
};
int tr_fbuf_reserve(struct tr_fbuf *b, size_t n);
int tr_ibuf_reserve(struct tr_ibuf *b, size_t n);

/* ---- SIMD helpers (GCC vector extensions: SSE2 at the baseline ISA) ----
 * -O2 leaves loops with run-time trip counts scalar, and the selects
 * below must not be branches (dropout makes them unpredictable). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));

static inline v4f tr_vld(const float *p)
{
	v4f v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void tr_vst(float *p, v4f v)
{
	memcpy(p, &v, sizeof(v));
}

/* acc[0:n] += src[0:n] */
static inline void tr_vadd(float *restrict acc, const float *restrict src, size_t n)
{
	size_t j = 0;

	for (; j + 8 <= n; j += 8) {
		tr_vst(acc + j, tr_vld(acc + j) + tr_vld(src + j));
		tr_vst(acc + j + 4, tr_vld(acc + j + 4) + tr_vld(src + j + 4));
	}
	for (; j < n; j++)
		acc[j] += src[j];
}

/* d[0:n] += a * g[0:n] */
static inline void tr_vaxpy(float *restrict d, const float *restrict g, float a, size_t n)
{
	size_t j = 0;

	for (; j + 4 <= n; j += 4)
		tr_vst(d + j, tr_vld(d + j) + tr_vld(g + j) * a);
	for (; j < n; j++)
		d[j] += g[j] * a;
}

/* d[0:n] = a * g[0:n] */
static inline void tr_vscale_to(float *restrict d, const float *restrict g, float a, size_t n)
{
	size_t j = 0;

	for (; j + 4 <= n; j += 4)
		tr_vst(d + j, tr_vld(g + j) * a);
	for (; j < n; j++)
		d[j] = g[j] * a;
}

static inline void tr_vscale(float *x, float a, size_t n)
{
	size_t j = 0;

	for (; j + 4 <= n; j += 4)
		tr_vst(x + j, tr_vld(x + j) * a);
	for (; j < n; j++)
		x[j] *= a;
}

/* Fetches every cache line of a row: one prefetch brings 64 bytes, a
 * 100-float row spans seven lines. */
static inline void tr_prefetch_row(const float *row, size_t n)
{
	const char *p = (const char *)row, *end = p + n * sizeof(float);

	for (; p < end; p += 64)
		__builtin_prefetch(p);
}

/* ---- a parallel for over [0, n) on up to openblas_get_num_threads() threads ---- */

typedef void (*tr_range_fn)(void *ctx, size_t lo, size_t hi);

/* Threads live for one loop: creating one costs ~20 us against loops of
 * milliseconds, and nothing stays behind to compete with OpenBLAS's
 * threads. min_n: the least work worth a thread; a failed pthread_create
 * runs its part on the caller. */
void tr_par_for(size_t n, size_t min_n, tr_range_fn fn, void *ctx);

/* C = op(A) op(B) (row-major, beta 0; K == 0 gives zeros), adding its
 * flops and seconds to *ks. */
void tr_sgemm(struct tr_kstats *ks, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, size_t M, size_t N, size_t K,
	      const float *A, size_t lda, const float *B, size_t ldb, float *C, size_t ldc);

/* Dropout: keep an element with probability keep_below / 2^32. The key of
 * layer `layer` for a step's dropout_seed, and keep_below for probability p. */
uint64_t tr_dropout_key(uint64_t seed, uint32_t layer);
uint32_t tr_dropout_keep_below(float p);

/* ReLU, then (when dropout) inverted dropout with the mask of key: keep
 * y[r][j] * scale where it is > 0 and the hash of (row r, column j) is
 * below keep_below. In place on rows x cols floats, in parallel. */
void tr_relu_dropout(float *y, size_t rows, size_t cols, bool dropout, uint64_t key, uint32_t keep_below,
		     float scale);

/* Inverted dropout alone (no ReLU) on row r of a matrix, with the mask
 * of key: y[j] * scale where the hash of (row r, column j) is below
 * keep_below, else 0. The same call on the row's gradient applies the same
 * mask. In place, on cols floats; the caller runs rows in parallel. */
void tr_dropout_row(float *y, size_t cols, uint64_t key, size_t r, uint32_t keep_below, float scale);

/* The block's edges grouped by source (a counting sort, stable in dst
 * order) into tptr [num_src + 1] and tidx [num_edges] (the (dst,
 * relation) row of each edge, dst R + relation, for a block of R
 * relations: its indptr has num_dst R + 1 entries), both grown as needed.
 * A backward pass then gathers into each source row instead of scattering
 * into it: threads split rows without sharing a float, each row's sum has
 * one fixed order, and the ReLU/dropout mask fuses into the same pass. */
int tr_block_transpose(const struct gnn_block *b, size_t R, struct tr_ibuf *tptr, struct tr_ibuf *tidx);

/* Mean cross-entropy of logits [n x C] over the labelled seeds (label >=
 * 0) into st->loss, labelled, correct; with dlogits [n x C], also its
 * gradient (zero rows for unlabelled seeds). */
void tr_softmax_xent(const float *logits, const int32_t *labels, size_t n, size_t C, float *dlogits,
		     struct tr_step_stats *st);

#endif
