/* model.c - GraphSAGE-mean forward and backward by hand on OpenBLAS sgemm
 * (model.h; formulas, multiply order and measurements in docs/model.md).
 *
 * Layer l keeps X_l = [h_dst | mean_nbr | 1], num_dst x ldx (ldx >= 2 in + 1),
 * whose first 2 in + 1 columns multiply the parameter rows
 * [W_self_l; W_neigh_l; b_l]: model.h's layout stores exactly that
 * (2 in + 1) x out row-major matrix, so one sgemm gives the self term, the
 * neighbour term and the bias, and one sgemm X_l^T dY gives all three
 * gradients. Aggregating before multiplying (num_dst rows through the
 * product instead of num_src) is the cheaper order for sampled blocks,
 * where num_src is 6-10x num_dst (docs/model.md has the cost model). */
#include "model.h"

#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "hash.h"
#include "log.h"

#define ALIGN_BYTES 64
/* Row stride of X_l rounded up to a 64-byte line: aligned rows for the
 * aggregation, and an lda OpenBLAS packs without penalty. */
#define LD_FLOATS 16

/* A float workspace that only grows (contents are not kept on growth). */
struct fbuf {
	float *p;
	size_t cap;   /* floats */
};

/* An int32 workspace that only grows. */
struct ibuf {
	int32_t *p;
	size_t cap;
};

struct tr_model {
	struct tr_model_cfg cfg;
	uint32_t in[GNN_PROTO_MAX_LAYERS], out[GNN_PROTO_MAX_LAYERS];
	size_t ldx[GNN_PROTO_MAX_LAYERS];  /* row stride of X_l */
	size_t off[GNN_PROTO_MAX_LAYERS];  /* W_self_l's offset; W_neigh_l and b_l follow */
	size_t nparams;
	float *params, *grads;
	uint32_t keep_below;               /* dropout: keep when the 32-bit draw < this */
	float keep_scale;                  /* 1 / (1 - p) */
	struct fbuf x[GNN_PROTO_MAX_LAYERS];  /* X_l, kept for the backward pass */
	struct fbuf h[GNN_PROTO_MAX_LAYERS];  /* layer outputs after ReLU + dropout; h[L-1] the logits */
	struct fbuf d[2], dx;                 /* backward: dY ping-pong, dX = dY [W_self; W_neigh]^T */
	struct ibuf tptr, tidx;               /* backward: the block's out-CSR (src -> dst) */
	double flops, matmul_s;               /* of the current call */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fbuf_reserve(struct fbuf *b, size_t n)
{
	void *p;

	if (n <= b->cap)
		return GNN_OK;
	/* 1/8 headroom: minibatch sizes wander a little from step to step. */
	n += n / 8;
	if (n > SIZE_MAX / sizeof(float) || posix_memalign(&p, ALIGN_BYTES, n * sizeof(float) + ALIGN_BYTES) != 0)
		return GNN_ENOMEM;
	free(b->p);
	b->p = p;
	b->cap = n;
	return GNN_OK;
}

static int ibuf_reserve(struct ibuf *b, size_t n)
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

/* ---- counter-based random numbers (splitmix64) ---- */

static uint64_t dropout_key(uint64_t seed, uint32_t layer)
{
	return gnn_draw64(gnn_mix64(seed ^ 0x64726f706f7574ull), layer);
}

/* The mask bit of element (row, col) of a layer: row r draws
 * k = gnn_draw64(layer key, r) once, and column c hashes the 32-bit counter
 * (uint32)k + c * 0x9e3779b9 with lowbias32 (a 32-bit integer hash with
 * near-ideal avalanche), keeping the unit when the hash is below
 * (1 - p) 2^32. 32-bit multiplies keep the hash in SIMD registers: a
 * 64-bit hash per element made this pass cost as much as the layer's
 * matrix product. */
static inline uint32_t lowbias32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* ---- SIMD helpers (GCC vector extensions: SSE2 at the baseline ISA) ----
 * -O2 leaves loops with run-time trip counts scalar, and the selects
 * below must not be branches (dropout makes them unpredictable). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));

static inline v4f vld(const float *p)
{
	v4f v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void vst(float *p, v4f v)
{
	memcpy(p, &v, sizeof(v));
}

static inline v4u vlowbias32(v4u x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* acc[0:n] += src[0:n] */
static inline void vadd(float *restrict acc, const float *restrict src, size_t n)
{
	size_t j = 0;

	for (; j + 8 <= n; j += 8) {
		vst(acc + j, vld(acc + j) + vld(src + j));
		vst(acc + j + 4, vld(acc + j + 4) + vld(src + j + 4));
	}
	for (; j < n; j++)
		acc[j] += src[j];
}

/* d[0:n] += a * g[0:n] */
static inline void vaxpy(float *restrict d, const float *restrict g, float a, size_t n)
{
	size_t j = 0;

	for (; j + 4 <= n; j += 4)
		vst(d + j, vld(d + j) + vld(g + j) * a);
	for (; j < n; j++)
		d[j] += g[j] * a;
}

/* d[0:n] = a * g[0:n] */
static inline void vscale_to(float *restrict d, const float *restrict g, float a, size_t n)
{
	size_t j = 0;

	for (; j + 4 <= n; j += 4)
		vst(d + j, vld(g + j) * a);
	for (; j < n; j++)
		d[j] = g[j] * a;
}

static inline void vscale(float *x, float a, size_t n)
{
	size_t j = 0;

	for (; j + 4 <= n; j += 4)
		vst(x + j, vld(x + j) * a);
	for (; j < n; j++)
		x[j] *= a;
}

/* Fetches every cache line of a row: one prefetch brings 64 bytes, a
 * 100-float row spans seven lines. */
static inline void prefetch_row(const float *row, size_t n)
{
	const char *p = (const char *)row, *end = p + n * sizeof(float);

	for (; p < end; p += 64)
		__builtin_prefetch(p);
}

/* ---- a parallel for over [0, n) on up to nt threads ---- */

typedef void (*range_fn)(void *ctx, size_t lo, size_t hi);

struct par_part {
	range_fn fn;
	void *ctx;
	size_t lo, hi;
};

static void *par_main(void *arg)
{
	struct par_part *p = arg;

	p->fn(p->ctx, p->lo, p->hi);
	return NULL;
}

/* Threads live for one loop: creating one costs ~20 us against loops of
 * milliseconds, and nothing stays behind to compete with OpenBLAS's
 * threads. min_n: the least work worth a thread; a failed pthread_create
 * runs its part on the caller. */
static void par_for(size_t n, size_t min_n, range_fn fn, void *ctx)
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

/* ---- the model ---- */

int tr_model_new(const struct tr_model_cfg *cfg, struct tr_model **out)
{
	struct tr_model *m;
	size_t n = 0;
	double keep;

	if (cfg->num_layers < 1 || cfg->num_layers > GNN_PROTO_MAX_LAYERS || cfg->in_dim < 1 || cfg->hidden < 1 ||
	    cfg->num_classes < 2 || !(cfg->dropout >= 0.0f && cfg->dropout < 1.0f)) {
		GNN_ERROR("bad_config", "layers=%" PRIu32 " in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " dropout=%g reason=\"model needs 1..%d layers, in_dim and hidden >= 1, classes >= 2, "
			  "dropout in [0, 1)\"",
			  cfg->num_layers, cfg->in_dim, cfg->hidden, cfg->num_classes, (double)cfg->dropout,
			  GNN_PROTO_MAX_LAYERS);
		return GNN_EINVAL;
	}
	/* Widths up to 2^20 keep every count below in size_t and int. */
	if (cfg->in_dim > (1u << 20) || cfg->hidden > (1u << 20) || cfg->num_classes > (1u << 20)) {
		GNN_ERROR("bad_config", "in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " reason=\"widths above 1048576 are not supported\"",
			  cfg->in_dim, cfg->hidden, cfg->num_classes);
		return GNN_EINVAL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return GNN_ENOMEM;
	m->cfg = *cfg;
	for (uint32_t l = 0; l < cfg->num_layers; l++) {
		m->in[l] = l == 0 ? cfg->in_dim : cfg->hidden;
		m->out[l] = l + 1 == cfg->num_layers ? cfg->num_classes : cfg->hidden;
		m->ldx[l] = (2 * (size_t)m->in[l] + 1 + LD_FLOATS - 1) / LD_FLOATS * LD_FLOATS;
		m->off[l] = n;
		n += (2 * (size_t)m->in[l] + 1) * m->out[l];
	}
	m->nparams = n;
	m->params = calloc(n, sizeof(float));
	m->grads = calloc(n, sizeof(float));
	if (m->params == NULL || m->grads == NULL) {
		tr_model_free(m);
		return GNN_ENOMEM;
	}
	/* Keep with probability keep_below / 2^32 = 1 - p to within 2^-32
	 * (p = 0 skips the mask altogether). */
	keep = 1.0 - (double)cfg->dropout;
	m->keep_below = keep * 4294967296.0 >= 4294967295.0 ? UINT32_MAX : (uint32_t)llround(keep * 4294967296.0);
	m->keep_scale = (float)(1.0 / keep);
	*out = m;
	return GNN_OK;
}

void tr_model_free(struct tr_model *m)
{
	if (m == NULL)
		return;
	for (int l = 0; l < GNN_PROTO_MAX_LAYERS; l++) {
		free(m->x[l].p);
		free(m->h[l].p);
	}
	free(m->d[0].p);
	free(m->d[1].p);
	free(m->dx.p);
	free(m->tptr.p);
	free(m->tidx.p);
	free(m->params);
	free(m->grads);
	free(m);
}

void tr_model_init(struct tr_model *m, uint64_t seed)
{
	uint64_t key = gnn_mix64(seed ^ 0x696e6974ull);

	memset(m->params, 0, m->nparams * sizeof(float));
	for (uint32_t l = 0; l < m->cfg.num_layers; l++) {
		size_t nw = (2 * (size_t)m->in[l] + 1) * m->out[l];
		/* W_self, W_neigh and b ~ U(-1/sqrt(in), 1/sqrt(in)): PyTorch's
		 * nn.Linear default, which PyG's SAGEConv keeps. DGL's
		 * xavier_uniform_ with the ReLU gain is about 2x wider per
		 * layer; with two matrices summed per layer the logits start
		 * large (first-epoch loss 26 instead of 4 on `small`, and 0.59
		 * instead of 0.93 test accuracy after 10 epochs: docs/model.md). */
		double bound = 1.0 / sqrt((double)m->in[l]);

		for (size_t i = 0; i < nw; i++) {
			size_t j = m->off[l] + i;
			double u = gnn_unit64(gnn_draw64(key, j));

			m->params[j] = (float)((2.0 * u - 1.0) * bound);
		}
	}
}

size_t tr_model_num_params(const struct tr_model *m)
{
	return m->nparams;
}

float *tr_model_params(struct tr_model *m)
{
	return m->params;
}

float *tr_model_grads(struct tr_model *m)
{
	return m->grads;
}

/* ---- validation ---- */

struct errbuf {
	char *s;
	size_t len, used;
	int count;
};

__attribute__((format(printf, 2, 3))) static void err_add(struct errbuf *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	e->count++;
	if (e->s == NULL || e->len == 0 || e->used + 1 >= e->len)
		return;
	if (e->used > 0) {
		n = snprintf(e->s + e->used, e->len - e->used, "; ");
		e->used += n > 0 ? (size_t)n : 0;
		if (e->used >= e->len) {
			e->used = e->len - 1;
			return;
		}
	}
	va_start(ap, fmt);
	n = vsnprintf(e->s + e->used, e->len - e->used, fmt, ap);
	va_end(ap);
	e->used += n > 0 ? (size_t)n : 0;
	if (e->used >= e->len)
		e->used = e->len - 1;
}

/* The structure the model reads: the O(layers) part (train_step and the
 * others run it every call, as it guards their buffer sizes). */
static void check_shape(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels,
			struct errbuf *e)
{
	uint32_t L = m->cfg.num_layers;

	if (mb->num_layers != L) {
		err_add(e, "minibatch has %" PRIu32 " layers, the model %" PRIu32, mb->num_layers, L);
		return;
	}
	if (mb->feat == NULL)
		err_add(e, "minibatch has no feature rows");
	else if (mb->feat_dim != m->cfg.in_dim)
		err_add(e, "feature width %" PRIu32 " differs from the model's in_dim %" PRIu32, mb->feat_dim,
			m->cfg.in_dim);
	if (need_labels && mb->labels == NULL)
		err_add(e, "minibatch has no labels");
	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if (b->num_src > INT32_MAX)
			err_add(e, "block %" PRIu32 ": %" PRIu32 " src nodes exceed 2^31-1", l, b->num_src);
		if (b->num_dst > b->num_src)
			err_add(e, "block %" PRIu32 ": num_dst %" PRIu32 " > num_src %" PRIu32, l, b->num_dst,
				b->num_src);
		if (b->num_edges > INT32_MAX)
			err_add(e, "block %" PRIu32 ": %" PRIu64 " edges exceed 2^31-1", l, b->num_edges);
		if (b->indptr == NULL || (b->num_edges > 0 && b->indices == NULL))
			err_add(e, "block %" PRIu32 ": missing indptr or indices", l);
		if (l + 1 < L && b->num_dst != mb->blocks[l + 1].num_src)
			err_add(e, "block %" PRIu32 " has %" PRIu32 " dst nodes but block %" PRIu32 " has %" PRIu32
				" src nodes", l, b->num_dst, l + 1, mb->blocks[l + 1].num_src);
	}
	if (mb->blocks[L - 1].num_dst != mb->num_seeds)
		err_add(e, "last block has %" PRIu32 " dst nodes for %" PRIu32 " seeds", mb->blocks[L - 1].num_dst,
			mb->num_seeds);
}

static int check_labels(const struct tr_model *m, const struct gnn_minibatch *mb, struct errbuf *e)
{
	for (uint32_t i = 0; i < mb->num_seeds; i++) {
		int32_t y = mb->labels[i];

		if (y < -1 || y >= (int32_t)m->cfg.num_classes) {
			err_add(e, "seed %" PRIu32 " has label %" PRId32 ", outside [-1, %" PRIu32 ")", i, y,
				m->cfg.num_classes);
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

int tr_model_check(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels, char *err,
		   size_t err_len)
{
	struct errbuf e = { err, err_len, 0, 0 };

	if (err != NULL && err_len > 0)
		err[0] = '\0';
	check_shape(m, mb, need_labels, &e);
	if (e.count > 0)
		return GNN_EINVAL;
	/* The CSR itself, so a malformed block is refused here rather than
	 * read out of bounds later (O(edges): ~1 ms for a products-size
	 * minibatch, against ~100 ms of compute). */
	for (uint32_t l = 0; l < mb->num_layers; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if (b->indptr[0] != 0 || (uint64_t)b->indptr[b->num_dst] != b->num_edges) {
			err_add(&e, "block %" PRIu32 ": indptr runs from %" PRId32 " to %" PRId32 ", not 0 to %" PRIu64,
				l, b->indptr[0], b->indptr[b->num_dst], b->num_edges);
			continue;
		}
		for (uint32_t v = 0; v < b->num_dst; v++)
			if (b->indptr[v + 1] < b->indptr[v]) {
				err_add(&e, "block %" PRIu32 ": indptr decreases at dst %" PRIu32, l, v);
				break;
			}
		for (uint64_t k = 0; k < b->num_edges; k++)
			if (b->indices[k] < 0 || (uint32_t)b->indices[k] >= b->num_src) {
				err_add(&e, "block %" PRIu32 ": edge %" PRIu64 " has source %" PRId32 ", outside [0, %" PRIu32
					")", l, k, b->indices[k], b->num_src);
				break;
			}
	}
	if (need_labels)
		check_labels(m, mb, &e);
	return e.count > 0 ? GNN_EINVAL : GNN_OK;
}

/* ---- forward ---- */

static void sgemm(struct tr_model *m, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, size_t M, size_t N, size_t K,
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
	t0 = now_s();
	cblas_sgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0f, A, (blasint)lda, B,
		    (blasint)ldb, 0.0f, C, (blasint)ldc);
	m->matmul_s += now_s() - t0;
	m->flops += 2.0 * (double)M * (double)N * (double)K;
}

/* X = [h_dst | mean of the in-neighbours' rows | 1] for dst rows [lo, hi). */
struct agg_ctx {
	const struct gnn_block *b;
	const float *h;     /* num_src x in */
	float *x;           /* num_dst x ldx */
	size_t in, ldx;
};

/* The neighbour rows are scattered over the source matrix (for layer 0,
 * hundreds of MB of features): each is a cache miss, so rows AHEAD edges
 * ahead in the edge list are prefetched while this one is added. */
#define AHEAD 8

static void agg_rows(void *arg, size_t lo, size_t hi)
{
	const struct agg_ctx *c = arg;
	const int32_t *indptr = c->b->indptr, *idx = c->b->indices;
	const size_t in = c->in;
	const int32_t e_end = indptr[hi];

	for (int32_t e = indptr[lo]; e < indptr[lo] + AHEAD && e < e_end; e++)
		prefetch_row(c->h + (size_t)idx[e] * in, in);
	for (size_t v = lo; v < hi; v++) {
		float *restrict row = c->x + v * c->ldx;
		float *restrict acc = row + in;
		int32_t e0 = indptr[v], e1 = indptr[v + 1];

		memcpy(row, c->h + v * in, in * sizeof(float));
		row[2 * in] = 1.0f;
		if (e1 == e0) {
			memset(acc, 0, in * sizeof(float));
			continue;
		}
		for (int32_t e = e0; e < e1; e++) {
			if (e + AHEAD < e_end)
				prefetch_row(c->h + (size_t)idx[e + AHEAD] * in, in);
			if (e == e0)
				memcpy(acc, c->h + (size_t)idx[e] * in, in * sizeof(float));
			else
				vadd(acc, c->h + (size_t)idx[e] * in, in);
		}
		vscale(acc, 1.0f / (float)(e1 - e0), in);
	}
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

/* One row of the dropout step: keep y[j] * scale where y[j] > 0 and the
 * hash of column j is below keep_below, else 0. Two builds of the same
 * arithmetic: 4 lanes for the baseline ISA (SSE2, whose missing 32-bit
 * multiply the compiler emulates), and 8 lanes for AVX2 (4x faster here:
 * the hash is this pass's whole cost). Bit-identical results. */
static void dropout_row_sse2(float *y, size_t n, uint32_t base, uint32_t keep_below, float scale)
{
	const v4u lane = { 0, 1, 2, 3 };
	size_t j = 0;

	for (; j + 4 <= n; j += 4) {
		v4u h = vlowbias32(base + ((uint32_t)j + lane) * 0x9e3779b9u);
		v4f v = vld(y + j);
		v4i keep = (v > 0.0f) & (v4i)(h < keep_below);

		vst(y + j, (v4f)((v4i)(v * scale) & keep));
	}
	for (; j < n; j++) {
		uint32_t h = lowbias32(base + (uint32_t)j * 0x9e3779b9u);

		y[j] = (y[j] > 0.0f && h < keep_below) ? y[j] * scale : 0.0f;
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_PATH 1
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

__attribute__((target("avx2"))) static void dropout_row_avx2(float *y, size_t n, uint32_t base,
							     uint32_t keep_below, float scale)
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
		keep = (v > 0.0f) & (v8i)(h < keep_below);
		r = (v8f)((v8i)(v * scale) & keep);
		memcpy(y + j, &r, sizeof(r));
	}
	if (j < n)
		dropout_row_sse2(y + j, n - j, base + (uint32_t)j * 0x9e3779b9u, keep_below, scale);
}
#endif

typedef void (*dropout_row_fn)(float *y, size_t n, uint32_t base, uint32_t keep_below, float scale);

static dropout_row_fn pick_dropout_row(void)
{
#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return dropout_row_avx2;
#endif
	return dropout_row_sse2;
}

static void act_rows(void *arg, size_t lo, size_t hi)
{
	const struct act_ctx *c = arg;
	const size_t n = c->cols;
	dropout_row_fn row_fn = c->dropout ? pick_dropout_row() : NULL;

	for (size_t r = lo; r < hi; r++) {
		float *y = c->y + r * n;
		size_t j = 0;

		if (row_fn != NULL) {
			row_fn(y, n, (uint32_t)gnn_draw64(c->key, r), c->keep_below, c->scale);
			continue;
		}
		for (; j + 4 <= n; j += 4) {
			v4f v = vld(y + j);

			vst(y + j, (v4f)((v4i)v & (v > 0.0f)));
		}
		for (; j < n; j++)
			y[j] = y[j] > 0.0f ? y[j] : 0.0f;
	}
}

/* Runs the layers; m->h[L-1] holds the logits. */
static int forward(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed)
{
	uint32_t L = m->cfg.num_layers;
	const float *h = mb->feat;
	int rc;

	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];
		size_t nd = b->num_dst, in = m->in[l], out = m->out[l], ldx = m->ldx[l];
		struct agg_ctx ac;

		if ((rc = fbuf_reserve(&m->x[l], nd * ldx)) != GNN_OK ||
		    (rc = fbuf_reserve(&m->h[l], nd * out)) != GNN_OK)
			return rc;
		ac = (struct agg_ctx){ b, h, m->x[l].p, in, ldx };
		/* ~64 KiB of gathered rows per thread at least. */
		par_for(nd, 1 + 16384 / (in * (1 + b->num_edges / (nd ? nd : 1))), agg_rows, &ac);
		sgemm(m, CblasNoTrans, CblasNoTrans, nd, out, 2 * in + 1, m->x[l].p, ldx, m->params + m->off[l], out,
		      m->h[l].p, out);
		if (l + 1 < L) {
			struct act_ctx c = { m->h[l].p, out, dropout_key(dropout_seed, l), m->keep_below, m->keep_scale,
					     train && m->cfg.dropout > 0.0f };

			par_for(nd, 1 + 16384 / out, act_rows, &c);
		}
		h = m->h[l].p;
	}
	return GNN_OK;
}

/* Mean cross-entropy of the logits over the labelled seeds; with dlogits,
 * also its gradient (zero rows for unlabelled seeds). */
static void softmax_xent(const float *logits, const int32_t *labels, size_t n, size_t C, float *dlogits,
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

/* ---- backward ---- */

/* The block's edges grouped by source (a counting sort, stable in dst
 * order): tptr [num_src + 1], tidx [num_edges] = dst of each edge. The
 * backward pass then gathers into each source row instead of scattering
 * into it, so threads split rows without sharing a float, the sum for a
 * row has one fixed order, and the ReLU/dropout mask fuses into the same
 * pass (no zeroing pass, no separate mask pass over num_src x in). */
static int transpose_block(struct tr_model *m, const struct gnn_block *b)
{
	int32_t *ptr, *idx;
	int rc;

	if ((rc = ibuf_reserve(&m->tptr, (size_t)b->num_src + 1)) != GNN_OK ||
	    (rc = ibuf_reserve(&m->tidx, b->num_edges ? b->num_edges : 1)) != GNN_OK)
		return rc;
	ptr = m->tptr.p;
	idx = m->tidx.p;
	memset(ptr, 0, ((size_t)b->num_src + 1) * sizeof(int32_t));
	for (uint64_t e = 0; e < b->num_edges; e++)
		ptr[b->indices[e] + 1]++;
	for (uint32_t u = 0; u < b->num_src; u++)
		ptr[u + 1] += ptr[u];
	for (uint32_t v = 0; v < b->num_dst; v++)
		for (int32_t e = b->indptr[v]; e < b->indptr[v + 1]; e++)
			idx[ptr[b->indices[e]]++] = (int32_t)v;
	/* The fill advanced ptr[u] to the start of u + 1: shift back. */
	memmove(ptr + 1, ptr, (size_t)b->num_src * sizeof(int32_t));
	ptr[0] = 0;
	return GNN_OK;
}

/* dY_{l-1}[u] = mask_u * (dX_self[u] (u < num_dst) + sum over the edges
 * u -> v of dX_neigh[v] / deg(v)), where dX = dY_l [W_self; W_neigh]^T
 * (num_dst x 2 in) and mask_u = (H_{l-1}[u] > 0) * scale: H > 0 exactly
 * where ReLU passed and dropout kept (kept units are scaled, dropped 0). */
struct grad_ctx {
	const struct gnn_block *b;
	const int32_t *tptr, *tidx;
	const float *dx;    /* num_dst x 2 in */
	const float *h;     /* H_{l-1}: num_src x in */
	float *dh;          /* num_src x in: dY_{l-1} */
	size_t in;
	float scale;
};

static void grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct grad_ctx *c = arg;
	const int32_t *indptr = c->b->indptr;
	const size_t in = c->in, nd = c->b->num_dst;

	for (size_t u = lo; u < hi; u++) {
		float *restrict d = c->dh + u * in;
		const float *hu = c->h + u * in;
		size_t j = 0;

		int32_t e = c->tptr[u], e1 = c->tptr[u + 1];

		/* The first term initialises the row (most rows >= num_dst have
		 * exactly one in-block edge: no zeroing pass for them). */
		if (u < nd) {
			memcpy(d, c->dx + u * 2 * in, in * sizeof(float));
		} else if (e < e1) {
			int32_t v = c->tidx[e++];

			vscale_to(d, c->dx + (size_t)v * 2 * in + in, 1.0f / (float)(indptr[v + 1] - indptr[v]), in);
		} else {
			memset(d, 0, in * sizeof(float));
		}
		for (; e < e1; e++) {
			int32_t v = c->tidx[e];

			vaxpy(d, c->dx + (size_t)v * 2 * in + in, 1.0f / (float)(indptr[v + 1] - indptr[v]), in);
		}
		for (; j + 4 <= in; j += 4)
			vst(d + j, (v4f)((v4i)(vld(d + j) * c->scale) & (vld(hu + j) > 0.0f)));
		for (; j < in; j++)
			d[j] = hu[j] > 0.0f ? d[j] * c->scale : 0.0f;
	}
}

static int backward(struct tr_model *m, const struct gnn_minibatch *mb, bool dropout)
{
	uint32_t L = m->cfg.num_layers;
	int cur = 0, rc;

	for (uint32_t l = L; l-- > 0;) {
		const struct gnn_block *b = &mb->blocks[l];
		size_t nd = b->num_dst, ns = b->num_src, in = m->in[l], out = m->out[l];
		float *dy = m->d[cur].p;
		struct grad_ctx gc;

		/* [dW_self; dW_neigh; db] = X^T dY, straight into the gradient block. */
		if (nd == 0)
			memset(m->grads + m->off[l], 0, (2 * in + 1) * out * sizeof(float));
		else
			sgemm(m, CblasTrans, CblasNoTrans, 2 * in + 1, out, nd, m->x[l].p, m->ldx[l], dy, out,
			      m->grads + m->off[l], out);
		if (l == 0)
			break;  /* no gradient for the input features */
		if ((rc = fbuf_reserve(&m->d[1 - cur], ns * in)) != GNN_OK ||
		    (rc = fbuf_reserve(&m->dx, nd * 2 * in)) != GNN_OK || (rc = transpose_block(m, b)) != GNN_OK)
			return rc;
		/* [W_self; W_neigh] is (2 in) x out row-major: one product gives
		 * both halves of dX. */
		sgemm(m, CblasNoTrans, CblasTrans, nd, 2 * in, out, dy, out, m->params + m->off[l], out, m->dx.p,
		      2 * in);
		gc = (struct grad_ctx){ b, m->tptr.p, m->tidx.p, m->dx.p, m->h[l - 1].p, m->d[1 - cur].p, in,
					dropout ? m->keep_scale : 1.0f };
		par_for(ns, 1 + 16384 / (in * (1 + b->num_edges / (ns ? ns : 1))), grad_rows, &gc);
		cur = 1 - cur;
	}
	return GNN_OK;
}

/* The O(layers) checks every entry point repeats (tr_model_check does the
 * O(edges) ones): they guard the sizes the buffers are made from. */
static int entry_check(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels,
		       const char *what)
{
	char err[256];
	struct errbuf e = { err, sizeof(err), 0, 0 };

	err[0] = '\0';
	check_shape(m, mb, need_labels, &e);
	if (e.count == 0 && need_labels)
		check_labels(m, mb, &e);
	if (e.count > 0) {
		GNN_ERROR("bad_minibatch", "call=%s reason=\"%s\"", what, err);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

int tr_model_train_step(struct tr_model *m, const struct gnn_minibatch *mb, uint64_t dropout_seed,
			struct tr_step_stats *st)
{
	uint32_t L = m->cfg.num_layers;
	size_t n = mb->num_seeds, C = m->cfg.num_classes;
	bool dropout = m->cfg.dropout > 0.0f;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = entry_check(m, mb, true, "train_step")) != GNN_OK)
		return rc;
	m->flops = 0.0;
	m->matmul_s = 0.0;
	if ((rc = forward(m, mb, true, dropout_seed)) != GNN_OK || (rc = fbuf_reserve(&m->d[0], n * C)) != GNN_OK)
		goto out;
	softmax_xent(m->h[L - 1].p, mb->labels, n, C, m->d[0].p, st);
	if (st->labelled == 0) {
		/* Nothing to learn from: a zero gradient, as documented. */
		memset(m->grads, 0, m->nparams * sizeof(float));
		goto out;
	}
	rc = backward(m, mb, dropout);
out:
	st->flops = m->flops;
	st->matmul_s = m->matmul_s;
	return rc;
}

int tr_model_loss(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		  double *loss)
{
	struct tr_step_stats st;
	int rc;

	if ((rc = entry_check(m, mb, true, "loss")) != GNN_OK)
		return rc;
	if ((rc = forward(m, mb, train, dropout_seed)) != GNN_OK)
		return rc;
	softmax_xent(m->h[m->cfg.num_layers - 1].p, mb->labels, mb->num_seeds, m->cfg.num_classes, NULL, &st);
	*loss = st.loss;
	return GNN_OK;
}

int tr_model_predict(struct tr_model *m, const struct gnn_minibatch *mb, int32_t *pred)
{
	size_t C = m->cfg.num_classes;
	const float *z;
	int rc;

	if ((rc = entry_check(m, mb, false, "predict")) != GNN_OK)
		return rc;
	if ((rc = forward(m, mb, false, 0)) != GNN_OK)
		return rc;
	z = m->h[m->cfg.num_layers - 1].p;
	for (size_t i = 0; i < mb->num_seeds; i++, z += C) {
		size_t arg = 0;

		for (size_t j = 1; j < C; j++)
			if (z[j] > z[arg])
				arg = j;
		pred[i] = (int32_t)arg;
	}
	return GNN_OK;
}

/* ---- Adam ---- */

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
