/* kernels.c - the trainer's numeric building blocks (kernels.h). */
#include "kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "err.h"
#include "hash.h"
#include "sys.h"

/* ---- workspaces ---- */

int tr_fbuf_reserve(struct tr_fbuf *b, size_t n)
{
	void *p;

	if (n <= b->cap)
		return GNN_OK;
	/* 1/8 headroom: minibatch sizes wander a little from step to step. */
	n += n / 8;
	if (n > SIZE_MAX / sizeof(float) || posix_memalign(&p, TR_ALIGN_BYTES, n * sizeof(float) + TR_ALIGN_BYTES) != 0)
		return GNN_ENOMEM;
	free(b->p);
	b->p = p;
	b->cap = n;
	return GNN_OK;
}

int tr_ibuf_reserve(struct tr_ibuf *b, size_t n)
{
	int32_t *p;

	if (n <= b->cap)
		return GNN_OK;
	n += n / 8;
	if (n > SIZE_MAX / sizeof(int32_t) || (p = malloc(n * sizeof(int32_t))) == NULL)
		return GNN_ENOMEM;
	free(b->p);
	b->p = p;
	b->cap = n;
	return GNN_OK;
}

/* ---- a parallel for ---- */

struct par_part {
	tr_range_fn fn;
	void *ctx;
	size_t lo, hi;
};

static void *par_main(void *arg)
{
	struct par_part *p = arg;

	p->fn(p->ctx, p->lo, p->hi);
	return NULL;
}

void tr_par_for(size_t n, size_t min_n, tr_range_fn fn, void *ctx)
{
	enum { MAXT = 64 };
	struct par_part part[MAXT];
	pthread_t tid[MAXT];
	bool started[MAXT] = { false };
	int nt = openblas_get_num_threads();
	size_t k;

	if (nt < 1)
		nt = 1;
	if (nt > MAXT)
		nt = MAXT;
	if (min_n < 1)
		min_n = 1;
	if ((size_t)nt > n / min_n)
		nt = (int)(n / min_n);
	if (nt <= 1) {
		if (n > 0)
			fn(ctx, 0, n);
		return;
	}
	for (k = 0; k < (size_t)nt; k++)
		part[k] = (struct par_part){ fn, ctx, n * k / (size_t)nt, n * (k + 1) / (size_t)nt };
	for (k = 1; k < (size_t)nt; k++)
		started[k] = pthread_create(&tid[k], NULL, par_main, &part[k]) == 0;
	fn(ctx, part[0].lo, part[0].hi);
	for (k = 1; k < (size_t)nt; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else
			fn(ctx, part[k].lo, part[k].hi);
	}
}

/* ---- matrix products ---- */

void tr_sgemm(struct tr_kstats *ks, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, size_t M, size_t N, size_t K,
	      const float *A, size_t lda, const float *B, size_t ldb, float *C, size_t ldc)
{
	double t0;

	if (M == 0 || N == 0)
		return;
	if (K == 0) {
		for (size_t i = 0; i < M; i++)
			memset(C + i * ldc, 0, N * sizeof(float));
		return;
	}
	t0 = gnn_now();
	cblas_sgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0f, A, (blasint)lda, B,
		    (blasint)ldb, 0.0f, C, (blasint)ldc);
	ks->matmul_s += gnn_now() - t0;
	ks->flops += 2.0 * (double)M * (double)N * (double)K;
}

/* ---- ReLU and dropout ---- */

uint64_t tr_dropout_key(uint64_t seed, uint32_t layer)
{
	return gnn_draw64(gnn_mix64(seed ^ 0x64726f706f7574ull), layer);
}

/* Keep with probability keep_below / 2^32 = 1 - p to within 2^-32. */
uint32_t tr_dropout_keep_below(float p)
{
	double keep = 1.0 - (double)p;

	return keep * 4294967296.0 >= 4294967295.0 ? UINT32_MAX : (uint32_t)llround(keep * 4294967296.0);
}

/* The mask bit of element (row, col) of a layer: row r draws
 * k = gnn_draw64(layer key, r) once, and column c hashes the 32-bit counter
 * (uint32)k + c * 0x9e3779b9 with lowbias32 (a 32-bit integer hash with
 * near-ideal avalanche), keeping the unit when the hash is below
 * (1 - p) 2^32. 32-bit multiplies keep the hash in SIMD registers: a
 * 64-bit hash per element made this pass cost as much as the layer's
 * matrix product. */
static inline v4u vlowbias32(v4u x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* The same for one lane (the columns after the last full vector). */
static inline uint32_t lowbias32(uint32_t x)
{
	return vlowbias32((v4u){ x, 0, 0, 0 })[0];
}

/* ReLU then inverted dropout, in place, on rows [lo, hi) of y. */
struct act_ctx {
	float *y;
	size_t cols;
	uint64_t key;
	uint32_t keep_below;
	float scale;
	bool dropout;
};

/* One row of the dropout step: keep y[j] * scale where the hash of column
 * j is below keep_below (and, with relu, y[j] > 0), else 0. Two builds of
 * the same arithmetic: 4 lanes for the baseline ISA (SSE2, whose missing
 * 32-bit multiply the compiler emulates), and 8 lanes for AVX2 (4x faster
 * here: the hash is this pass's whole cost). Bit-identical results. The
 * relu flag is a constant in each wrapper below, so it costs no branch. */
static inline __attribute__((always_inline)) void dropout_row_sse2(float *y, size_t n, uint32_t base,
								  uint32_t keep_below, float scale, bool relu)
{
	const v4u lane = { 0, 1, 2, 3 };
	size_t j = 0;

	for (; j + 4 <= n; j += 4) {
		v4u h = vlowbias32(base + ((uint32_t)j + lane) * 0x9e3779b9u);
		v4f v = tr_vld(y + j);
		v4i keep = (v4i)(h < keep_below);

		if (relu)
			keep &= (v > 0.0f);
		tr_vst(y + j, (v4f)((v4i)(v * scale) & keep));
	}
	for (; j < n; j++) {
		uint32_t h = lowbias32(base + (uint32_t)j * 0x9e3779b9u);

		y[j] = ((!relu || y[j] > 0.0f) && h < keep_below) ? y[j] * scale : 0.0f;
	}
}

static void relu_dropout_row_sse2(float *y, size_t n, uint32_t base, uint32_t keep_below, float scale)
{
	dropout_row_sse2(y, n, base, keep_below, scale, true);
}

static void drop_row_sse2(float *y, size_t n, uint32_t base, uint32_t keep_below, float scale)
{
	dropout_row_sse2(y, n, base, keep_below, scale, false);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_PATH 1
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

__attribute__((target("avx2"), always_inline)) static inline void dropout_row_avx2(float *y, size_t n, uint32_t base,
										    uint32_t keep_below, float scale,
										    bool relu)
{
	const v8u lane = { 0, 1, 2, 3, 4, 5, 6, 7 };
	size_t j = 0;

	for (; j + 8 <= n; j += 8) {
		v8u h = base + ((uint32_t)j + lane) * 0x9e3779b9u;
		v8f v, r;
		v8i keep;

		h ^= h >> 16;
		h *= 0x7feb352du;
		h ^= h >> 15;
		h *= 0x846ca68bu;
		h ^= h >> 16;
		memcpy(&v, y + j, sizeof(v));
		keep = (v8i)(h < keep_below);
		if (relu)
			keep &= (v > 0.0f);
		r = (v8f)((v8i)(v * scale) & keep);
		memcpy(y + j, &r, sizeof(r));
	}
	if (j < n)
		dropout_row_sse2(y + j, n - j, base + (uint32_t)j * 0x9e3779b9u, keep_below, scale, relu);
}

__attribute__((target("avx2"))) static void relu_dropout_row_avx2(float *y, size_t n, uint32_t base,
								  uint32_t keep_below, float scale)
{
	dropout_row_avx2(y, n, base, keep_below, scale, true);
}

__attribute__((target("avx2"))) static void drop_row_avx2(float *y, size_t n, uint32_t base, uint32_t keep_below,
							  float scale)
{
	dropout_row_avx2(y, n, base, keep_below, scale, false);
}
#endif

typedef void (*dropout_row_fn)(float *y, size_t n, uint32_t base, uint32_t keep_below, float scale);

static dropout_row_fn pick_dropout_row(bool relu)
{
#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return relu ? relu_dropout_row_avx2 : drop_row_avx2;
#endif
	return relu ? relu_dropout_row_sse2 : drop_row_sse2;
}

static void act_rows(void *arg, size_t lo, size_t hi)
{
	const struct act_ctx *c = arg;
	const size_t n = c->cols;
	dropout_row_fn row_fn = c->dropout ? pick_dropout_row(true) : NULL;

	for (size_t r = lo; r < hi; r++) {
		float *y = c->y + r * n;
		size_t j = 0;

		if (row_fn != NULL) {
			row_fn(y, n, (uint32_t)gnn_draw64(c->key, r), c->keep_below, c->scale);
			continue;
		}
		for (; j + 4 <= n; j += 4) {
			v4f v = tr_vld(y + j);

			tr_vst(y + j, (v4f)((v4i)v & (v > 0.0f)));
		}
		for (; j < n; j++)
			y[j] = y[j] > 0.0f ? y[j] : 0.0f;
	}
}

void tr_relu_dropout(float *y, size_t rows, size_t cols, bool dropout, uint64_t key, uint32_t keep_below,
		     float scale)
{
	struct act_ctx c = { y, cols, key, keep_below, scale, dropout };

	tr_par_for(rows, 1 + 16384 / cols, act_rows, &c);
}

void tr_dropout_row(float *y, size_t cols, uint64_t key, size_t r, uint32_t keep_below, float scale)
{
	pick_dropout_row(false)(y, cols, (uint32_t)gnn_draw64(key, r), keep_below, scale);
}

/* ---- loss ---- */

void tr_softmax_xent(const float *logits, const int32_t *labels, size_t n, size_t C, float *dlogits,
		     struct tr_step_stats *st)
{
	double sum = 0.0;
	uint32_t labelled = 0, correct = 0;

	for (size_t i = 0; i < n; i++)
		labelled += labels[i] >= 0;
	for (size_t i = 0; i < n; i++) {
		const float *z = logits + i * C;
		int32_t y = labels[i];
		size_t arg = 0;
		float mx = z[0];
		double s = 0.0;

		if (y < 0) {
			if (dlogits != NULL)
				memset(dlogits + i * C, 0, C * sizeof(float));
			continue;
		}
		for (size_t j = 1; j < C; j++)
			if (z[j] > mx) {
				mx = z[j];
				arg = j;
			}
		correct += arg == (size_t)y;
		for (size_t j = 0; j < C; j++)
			s += exp((double)z[j] - (double)mx);
		sum += (double)mx + log(s) - (double)z[y];
		if (dlogits != NULL) {
			double scale = 1.0 / ((double)labelled * s);

			for (size_t j = 0; j < C; j++)
				dlogits[i * C + j] = (float)(exp((double)z[j] - (double)mx) * scale);
			dlogits[i * C + (size_t)y] -= (float)(1.0 / labelled);
		}
	}
	st->loss = labelled > 0 ? sum / labelled : 0.0;
	st->labelled = labelled;
	st->correct = correct;
}

int tr_block_transpose(const struct gnn_block *b, size_t R, struct tr_ibuf *tptr, struct tr_ibuf *tidx)
{
	int32_t *ptr, *idx;
	int rc;

	if ((rc = tr_ibuf_reserve(tptr, (size_t)b->num_src + 1)) != GNN_OK ||
	    (rc = tr_ibuf_reserve(tidx, b->num_edges ? b->num_edges : 1)) != GNN_OK)
		return rc;
	ptr = tptr->p;
	idx = tidx->p;
	memset(ptr, 0, ((size_t)b->num_src + 1) * sizeof(int32_t));
	for (uint64_t e = 0; e < b->num_edges; e++)
		ptr[b->indices[e] + 1]++;
	for (uint32_t u = 0; u < b->num_src; u++)
		ptr[u + 1] += ptr[u];
	for (size_t q = 0; q < b->num_dst * R; q++)
		for (int32_t e = b->indptr[q]; e < b->indptr[q + 1]; e++)
			idx[ptr[b->indices[e]]++] = (int32_t)q;
	/* The fill advanced ptr[u] to the start of u + 1: shift back. */
	memmove(ptr + 1, ptr, (size_t)b->num_src * sizeof(int32_t));
	ptr[0] = 0;
	return GNN_OK;
}
