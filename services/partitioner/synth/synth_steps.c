/* synth_steps.c - the steps both synthetic generators take (synth_steps.h):
 * validation helpers, Zipf classes and their misfits, Pareto weights and
 * alias tables, exactly-count unique edge keys, and the feature rows.
 * Determinism rules as in synth.c: randomness only from the streams of
 * synth_steps.h, floating point limited to + - * / and sqrt, no libm. */
#include "synth_steps.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "sys.h"

/* Top-up rounds drawn from the model before the remaining deficit is filled
 * with uniform pairs (only reachable for very dense custom graphs). */
#define MODEL_ROUNDS 64

/* The features' stream tags, beside synth.c's (1-5 and 8; synth_mag.c's
 * are above 100). */
enum {
	TAG_CENTROIDS = 6,
	TAG_FEATURES = 7,
};

/* ---- random numbers (the stream itself is in synth_steps.h) ---- */

/* Uniform in (0, 1], 53 bits. */
static double rng_unit_open0(struct pt_synth_rng *r)
{
	return (double)((rng_next(r) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* Standard deviation of the sum of four uniform 16-bit integers. */
#define IH_MEAN 131070
static double ih_sd(void)
{
	return sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
}

/* An approximately standard normal number from 64 random bits: the sum of
 * four 16-bit uniforms (Irwin-Hall, n = 4), centred; times 1 / ih_sd().
 * Integer arithmetic, so identical everywhere; the tails stop at 3.46 sd. */
static int32_t ih_sum(uint64_t r)
{
	return (int32_t)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) -
	       IH_MEAN;
}

/* Cube root of x >= 1 by Newton's method from a power-of-two guess: libm's
 * cbrt may differ in the last bit between libraries, this may not. The
 * step is written so that no a * b + c can be fused into an FMA with a
 * different rounding (2 * y is exact either way). */
static double det_cbrt(double x)
{
	int e;
	double y;

	frexp(x, &e);
	y = ldexp(1.0, e / 3);
	for (int i = 0; i < 10; i++)
		y = (2.0 * y + x / (y * y)) / 3.0;
	return y;
}

/* x rounded to `bits` significant bits. The product of a value of b1 bits
 * and one of b2 bits is exact when b1 + b2 fits the significand, and then
 * a compiler that fuses a * b + c into an FMA (clang by default, GCC in
 * gnu modes with -march=native) gets the same result as one that does not:
 * this keeps the output bit-identical whatever the build flags. */
double pt_synth_round_bits(double x, int bits)
{
	int e;
	double f = frexp(x, &e); /* x = f * 2^e, 0.5 <= |f| < 1 */

	return ldexp((double)(int64_t)(ldexp(f, bits) + (f < 0 ? -0.5 : 0.5)), e - bits);
}

/* ---- validation ---- */

const char *pt_synth_preset_name(const struct pt_synth_params *p)
{
	return p->preset != NULL ? p->preset : "custom";
}

int pt_synth_invalid(const struct pt_synth_params *p, const char *field, long long value, const char *why)
{
	GNN_ERROR("synth_invalid", "preset=%s field=%s value=%lld reason=\"%s\"", pt_synth_preset_name(p),
		  field, value, why);
	return GNN_EINVAL;
}

int pt_synth_check_classes(const struct pt_synth_params *p, int64_t nodes, const char *what)
{
	char why[128];

	if (p->feat_dim < 0 || p->feat_dim > 65536)
		return pt_synth_invalid(p, "feat_dim", p->feat_dim, "must be in [0, 65536] (0: no features)");
	if (p->classes < 2 || p->classes > 65536)
		return pt_synth_invalid(p, "classes", p->classes, "must be in [2, 65536]");
	snprintf(why, sizeof(why), "must not exceed %s (every class gets a node)", what);
	if (p->classes > nodes)
		return pt_synth_invalid(p, "classes", p->classes, why);
	return GNN_OK;
}

int pt_synth_check_split(const struct pt_synth_params *p, int64_t nodes, const char *what)
{
	char why[128];

	snprintf(why, sizeof(why), "must be in [0, %s]", what);
	if (p->num_train < 0 || p->num_train > nodes)
		return pt_synth_invalid(p, "num_train", p->num_train, why);
	if (p->num_valid < 0 || p->num_valid > nodes)
		return pt_synth_invalid(p, "num_valid", p->num_valid, why);
	if (p->num_test < 0 || p->num_test > nodes)
		return pt_synth_invalid(p, "num_test", p->num_test, why);
	snprintf(why, sizeof(why), "num_train + num_valid + num_test exceeds %s", what);
	if (p->num_train + p->num_valid + p->num_test > nodes)
		return pt_synth_invalid(p, "num_test", p->num_train + p->num_valid + p->num_test, why);
	return GNN_OK;
}

/* ---- classes ---- */

void pt_synth_shuffle_i32(int32_t *a, int64_t n, struct pt_synth_rng *r)
{
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)rng_below(r, (uint64_t)i + 1);
		int32_t t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

void pt_synth_class_ranks(int32_t k, uint64_t seed, uint64_t tag, int32_t *rank)
{
	struct pt_synth_rng r;

	for (int32_t i = 0; i < k; i++)
		rank[i] = i;
	rng_seed(&r, seed, tag);
	pt_synth_shuffle_i32(rank, k, &r);
}

int pt_synth_class_sizes(int64_t n, int32_t k, const int32_t *rank, int64_t *size)
{
	int32_t *by_rank = malloc((size_t)k * sizeof(*by_rank));
	double harmonic = 0.0;
	int64_t sum = 0;

	if (by_rank == NULL)
		return GNN_ENOMEM;
	for (int32_t i = 0; i < k; i++)
		harmonic += 1.0 / (double)(i + 1);
	for (int32_t c = 0; c < k; c++) {
		by_rank[rank[c]] = c;
		size[c] = (int64_t)((double)n / ((double)(rank[c] + 1) * harmonic));
		if (size[c] < 1)
			size[c] = 1;
		sum += size[c];
	}
	/* Rounding leftovers go to (or come from) the classes in rank order;
	 * k <= n, so taking can always stop at sizes of 1. */
	for (int32_t i = 0; sum != n; i = (i + 1) % k) {
		int32_t c = by_rank[i];

		if (sum < n) {
			size[c]++;
			sum++;
		} else if (size[c] > 1) {
			size[c]--;
			sum--;
		}
	}
	free(by_rank);
	return GNN_OK;
}

/* The community whose range of class_off[0..k] holds slot i. */
static int32_t class_of_slot(const int64_t *class_off, int32_t k, int64_t i)
{
	int32_t lo = 0, hi = k - 1;

	while (lo < hi) {
		int32_t mid = lo + (hi - lo + 1) / 2;

		if (class_off[mid] <= i)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Misfits keep their community's edges (so their neighbours vote for the
 * community's class) while their own features follow the new label, only
 * weakly. That caps what aggregating neighbours can reach below 1, as
 * ambiguous labels do in real data; without it the mean over ~50
 * neighbours classifies products-scale graphs perfectly. */
void pt_synth_assign_misfits(const int32_t *perm, const int64_t *class_off, int32_t k, int64_t n,
			     double share, struct pt_synth_rng *r, int32_t *labels)
{
	uint32_t thr = prob_threshold(share);

	for (int32_t c = 0; c < k; c++) {
		for (int64_t i = class_off[c] + 1; i < class_off[c + 1]; i++) {
			int32_t other;

			if ((uint32_t)rng_next(r) >= thr)
				continue;
			do
				other = class_of_slot(class_off, k, (int64_t)rng_below(r, (uint64_t)n));
			while (other == c);
			labels[perm[i]] = other;
		}
	}
}

/* ---- weights and alias tables ---- */

/* w = u^(-2/3) for u uniform in (0, 1]. The homogeneous model caps it at
 * weight_cap, which makes the expected maximum degree about sqrt(2 *
 * edges), the Chung-Lu limit below which a pair's expected number of edges
 * stays under one (ogbn-products: sqrt(2 * 61.9M) = 11k, max 17k). */
/* Degree is proportional to weight, and a weight-1 node gets mean_deg /
 * PT_SYNTH_PARETO_MEAN: the cap that makes deg_cap the top degree. */
double pt_synth_weight_cap(double deg_cap, double mean_deg)
{
	double cap = mean_deg > 0.0 ? deg_cap * PT_SYNTH_PARETO_MEAN / mean_deg : 1.0;

	return cap < 1.0 ? 1.0 : cap;
}

int pt_synth_pareto_weights(int64_t n, double cap, uint64_t seed, uint64_t tag, double **out)
{
	double cap3 = cap * cap * cap, *w = malloc((size_t)(n ? n : 1) * sizeof(*w));
	struct pt_synth_rng r;

	if (w == NULL)
		return GNN_ENOMEM;
	rng_seed(&r, seed, tag);
	for (int64_t v = 0; v < n; v++) {
		double s = 1.0 / rng_unit_open0(&r), s2 = s * s;

		w[v] = s2 >= cap3 ? cap : det_cbrt(s2);
	}
	*out = w;
	return GNN_OK;
}

/* Vose's alias method over slots [b, e): slot i holds item(i) = items ?
 * items[i] : i, of weight w[item(i)]. scaled/small/large: scratch of at
 * least e - b entries. */
static void alias_build(const double *w, const int32_t *items, int64_t b, int64_t e,
			struct pt_synth_alias_slot *tab, double *scaled, int32_t *small, int32_t *large)
{
	int64_t k = e - b, ns = 0, nl = 0;
	double total = 0.0;

	for (int64_t i = b; i < e; i++) {
		tab[i].item = items ? items[i] : (int32_t)i;
		total += w[tab[i].item];
	}
	for (int64_t i = 0; i < k; i++) {
		scaled[i] = w[tab[b + i].item] * (double)k / total;
		if (scaled[i] < 1.0)
			small[ns++] = (int32_t)i;
		else
			large[nl++] = (int32_t)i;
	}
	while (ns > 0 && nl > 0) {
		int32_t sm = small[--ns], l = large[--nl];

		tab[b + sm].thr = (uint32_t)(scaled[sm] * 4294967296.0);
		tab[b + sm].alt = tab[b + l].item;
		scaled[l] = (scaled[l] + scaled[sm]) - 1.0;
		if (scaled[l] < 1.0)
			small[ns++] = l;
		else
			large[nl++] = l;
	}
	/* What is left has scaled weight 1 up to rounding: always itself. */
	while (nl > 0) {
		int32_t l = large[--nl];

		tab[b + l].thr = UINT32_MAX;
		tab[b + l].alt = tab[b + l].item;
	}
	while (ns > 0) {
		int32_t sm = small[--ns];

		tab[b + sm].thr = UINT32_MAX;
		tab[b + sm].alt = tab[b + sm].item;
	}
}

int pt_synth_alias_groups(const double *w, const int32_t *items, const int64_t *off, int64_t groups,
			  struct pt_synth_alias_slot *tab)
{
	size_t n = (size_t)(off[groups] - off[0]);
	double *scaled = malloc((n ? n : 1) * sizeof(*scaled));
	int32_t *small = malloc((n ? n : 1) * sizeof(*small)), *large = malloc((n ? n : 1) * sizeof(*large));
	int rc = GNN_ENOMEM;

	if (scaled == NULL || small == NULL || large == NULL)
		goto out;
	for (int64_t i = 0; i < groups; i++)
		alias_build(w, items, off[i], off[i + 1], tab, scaled, small, large);
	rc = GNN_OK;
out:
	free(scaled);
	free(small);
	free(large);
	return rc;
}

/* ---- edge keys: drawn, sorted, merged ---- */

int pt_synth_key_bits(int64_t n)
{
	int b = 1;

	while (b < 31 && ((int64_t)1 << b) < n)
		b++;
	return b;
}

#define RADIX_BITS 11
#define RADIX_SIZE (1 << RADIX_BITS)

/* LSD radix sort of n keys below 2^bits, RADIX_BITS per pass, ping-ponging
 * between keys and tmp (n entries each); passes in which every key has the
 * same digit are skipped. *sorted gets whichever buffer holds the result. */
static int radix_sort(uint64_t *keys, uint64_t *tmp, size_t n, int bits, uint64_t **sorted)
{
	int passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
	size_t (*hist)[RADIX_SIZE] = calloc((size_t)passes, sizeof(*hist));
	uint64_t *from = keys, *to = tmp;

	if (hist == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (int p = 0; p < passes; p++)
			hist[p][(keys[i] >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
	for (int p = 0; p < passes; p++) {
		size_t sum = 0;
		bool trivial = false;

		for (int d = 0; d < RADIX_SIZE; d++) {
			size_t c = hist[p][d];

			if (c == n)
				trivial = true;
			hist[p][d] = sum;
			sum += c;
		}
		if (trivial)
			continue;
		for (size_t i = 0; i < n; i++) {
			uint64_t k = from[i];

			to[hist[p][(k >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++] = k;
		}
		uint64_t *t = from;
		from = to;
		to = t;
	}
	free(hist);
	*sorted = from;
	return GNN_OK;
}

/* Removes adjacent duplicates of sorted keys in place; returns the count. */
static size_t unique_sorted(uint64_t *keys, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++)
		if (w == 0 || keys[i] != keys[w - 1])
			keys[w++] = keys[i];
	return w;
}

/* Keeps the sorted unique add[0..k) that are not in sorted have[0..u);
 * returns how many. */
static size_t drop_present(const uint64_t *have, size_t u, uint64_t *add, size_t k)
{
	size_t lo = 0, w = 0;

	for (size_t i = 0; i < k; i++) {
		size_t hi = u;

		while (lo < hi) { /* first have[j] >= add[i], from the last one */
			size_t mid = lo + (hi - lo) / 2;

			if (have[mid] < add[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < u && have[lo] == add[i])
			continue;
		add[w++] = add[i];
	}
	return w;
}

/* Merges sorted add[0..k) into sorted have[0..u), which has room for u + k,
 * from the back so that no second buffer is needed. */
static void merge_back(uint64_t *have, size_t u, const uint64_t *add, size_t k)
{
	size_t i = u, j = k, w = u + k;

	while (j > 0) {
		if (i > 0 && have[i - 1] > add[j - 1])
			have[--w] = have[--i];
		else
			have[--w] = add[--j];
	}
}

/* Between the generator's phases (each at most a few seconds at products
 * scale): a stop signal ends the run, the watchdog is only the backstop. */
int pt_synth_stop_point(void)
{
	return gnn_stop_requested() ? GNN_ECLOSED : GNN_OK;
}

/* The first batch: m candidates drawn, sorted and deduplicated into
 * *keys_out (m entries; the first *unique hold the keys). The sort's other
 * buffer is freed before the top-up rounds. */
static int first_batch(pt_synth_draw_fn draw, void *ctx, size_t m, int bits, uint64_t **keys_out, size_t *unique)
{
	uint64_t *keys = malloc((m ? m : 1) * sizeof(*keys));
	uint64_t *tmp = malloc((m ? m : 1) * sizeof(*tmp)), *sorted = NULL;
	int rc = GNN_ENOMEM;

	if (keys == NULL || tmp == NULL)
		goto out;
	draw(ctx, false, keys, m);
	if ((rc = pt_synth_stop_point()) != GNN_OK || (rc = radix_sort(keys, tmp, m, bits, &sorted)) != GNN_OK ||
	    (rc = pt_synth_stop_point()) != GNN_OK)
		goto out;
	if (sorted == tmp) {
		tmp = keys;
		keys = sorted;
	}
	free(tmp);
	tmp = NULL;
	*unique = unique_sorted(keys, m);
	*keys_out = keys;
	keys = NULL;
out:
	free(keys);
	free(tmp);
	return rc;
}

/* Tops the sorted unique keys[0..u) up to m (keys has room for m). Each
 * round draws exactly the deficit, so it can never overshoot: the result
 * is deterministic without tracking draw order. Duplicates are rarer each
 * round (a few % of candidates at products scale). */
static int top_up(pt_synth_draw_fn draw, void *ctx, uint64_t *keys, size_t u, size_t m, int bits, const char *what,
		  int *rounds_out)
{
	uint64_t *add = NULL, *add_tmp = NULL, *sorted;
	size_t cap = 0;
	int rounds = 0, rc = GNN_OK;
	bool uniform = false;

	while (u < m) {
		size_t d = m - u, k;

		rounds++;
		if (rounds > MODEL_ROUNDS && !uniform) {
			uniform = true;
			GNN_WARN("synth_uniform_fill",
				 "edges=%s missing=%zu rounds=%d reason=\"model keeps redrawing existing edges; filling with uniform pairs\"",
				 what, d, rounds - 1);
		}
		if (d > cap) {
			free(add);
			free(add_tmp);
			add = malloc(d * sizeof(*add));
			add_tmp = malloc(d * sizeof(*add_tmp));
			if (add == NULL || add_tmp == NULL) {
				rc = GNN_ENOMEM;
				goto out;
			}
			cap = d;
		}
		draw(ctx, uniform, add, d);
		if ((rc = radix_sort(add, add_tmp, d, bits, &sorted)) != GNN_OK)
			goto out;
		k = unique_sorted(sorted, d);
		k = drop_present(keys, u, sorted, k);
		merge_back(keys, u, sorted, k);
		u += k;
	}
	*rounds_out = rounds;
out:
	free(add);
	free(add_tmp);
	return rc;
}

int pt_synth_unique_keys(pt_synth_draw_fn draw, void *ctx, int64_t count, int bits, const char *what,
			 uint64_t **keys_out, int *rounds_out)
{
	uint64_t *keys = NULL;
	size_t u;
	int rc;

	if ((rc = first_batch(draw, ctx, (size_t)count, bits, &keys, &u)) != GNN_OK)
		return rc;
	if ((rc = top_up(draw, ctx, keys, u, (size_t)count, bits, what, rounds_out)) != GNN_OK) {
		free(keys);
		return rc;
	}
	*keys_out = keys;
	return GNN_OK;
}

/* ---- features ---- */

struct pt_synth_feat {
	uint64_t seed;       /* TAG_FEATURES stream of the graph's seed */
	int32_t dim;
	int32_t classes;
	float scale;         /* noise sd / ih_sd() */
	float centroid[];    /* [classes * dim] */
};

double pt_synth_noise_z(const struct pt_synth_zpoint *t, size_t n, int32_t k)
{
	if (k <= t[0].k)
		return t[0].z;
	for (size_t i = 1; i < n; i++)
		if (k <= t[i].k)
			return t[i - 1].z + (t[i].z - t[i - 1].z) * (double)(k - t[i - 1].k) /
						    (double)(t[i].k - t[i - 1].k);
	return t[n - 1].z;
}

/* Row of node v: centroid of its class plus noise from a stream seeded by
 * (seed, v) alone, so any row can be computed in any order, on any pod. */
int pt_synth_feat_row(const struct pt_graph *g, int64_t node, float *out)
{
	const struct pt_synth_feat *f = g->feat_ctx;
	const float *mu;
	uint64_t x;
	int32_t c;

	if (f == NULL || g->labels == NULL || node < 0 || node >= g->num_nodes)
		return GNN_EINTERNAL;
	c = g->labels[node];
	if (c < 0 || c >= f->classes)
		return GNN_EINTERNAL;
	mu = f->centroid + (size_t)c * (size_t)f->dim;
	x = gnn_mix64(f->seed ^ gnn_mix64((uint64_t)node));
	for (int32_t j = 0; j < f->dim; j++)
		out[j] = mu[j] + (float)ih_sum(gnn_splitmix64(&x)) * f->scale;
	return GNN_OK;
}

/* Centroid distance is about sqrt(2 * dim). */
int pt_synth_make_features(uint64_t seed, int32_t dim, int32_t classes, double z, struct pt_synth_feat **out,
			double *sigma)
{
	size_t n = (size_t)classes * (size_t)dim;
	struct pt_synth_feat *f = malloc(sizeof(*f) + n * sizeof(float));
	float unit = (float)(1.0 / ih_sd());
	struct pt_synth_rng r;

	if (f == NULL)
		return GNN_ENOMEM;
	rng_seed(&r, seed, TAG_FEATURES);
	f->seed = rng_next(&r);
	f->dim = dim;
	f->classes = classes;
	*sigma = sqrt((double)dim / 2.0) / z;
	/* ih_sum() has at most 17 significant bits, the scale 6: their float
	 * product is exact, so mu + noise * scale rounds once, fused or not. */
	f->scale = (float)pt_synth_round_bits(*sigma / ih_sd(), 6);
	rng_seed(&r, seed, TAG_CENTROIDS);
	for (size_t i = 0; i < n; i++)
		f->centroid[i] = (float)ih_sum(rng_next(&r)) * unit;
	*out = f;
	return GNN_OK;
}
