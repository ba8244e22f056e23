/* synth_steps.h - the steps the two synthetic generators share, in
 * synth_steps.c: synth.c (the homogeneous presets) and synth_mag.c (the
 * heterogeneous ones) both build on them. Internal to the partitioner.
 *
 * Determinism rules for everything here (docs/synthetic.md): randomness
 * only from xoshiro256** / splitmix64 streams of (seed, tag), floating
 * point limited to + - * / and sqrt, no libm. */
#ifndef GNN_PART_SYNTH_STEPS_H
#define GNN_PART_SYNTH_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "hash.h"
#include "synth.h"

/* Mean Chung-Lu weight: density exponent 2.5 is tail index a = 1.5, and
 * with x_min = 1 the mean is a / (a - 1) = 3 (a little less after the cap). */
#define PT_SYNTH_PARETO_MEAN 3.0

/* ---- random numbers (inline: they sit in the candidate loops) ---- */

struct pt_synth_rng {
	uint64_t s[4];
};

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64 as its authors
 * recommend, so that nearby seeds give unrelated streams. */
static inline void rng_seed(struct pt_synth_rng *r, uint64_t seed, uint64_t tag)
{
	uint64_t x = gnn_mix64(seed ^ gnn_mix64(tag * GNN_GOLDEN64));

	for (int i = 0; i < 4; i++)
		r->s[i] = gnn_splitmix64(&x);
}

static inline uint64_t rng_next(struct pt_synth_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in [0, n) for n <= 2^32 by multiply-shift (Lemire); the bias is
 * below n / 2^32 and, unlike rejection, uses exactly one draw. */
static inline uint64_t rng_below(struct pt_synth_rng *r, uint64_t n)
{
	return ((rng_next(r) >> 32) * n) >> 32;
}

/* 32 random bits below this threshold happen with probability p. */
static inline uint32_t prob_threshold(double p)
{
	return (uint32_t)(p * 4294967295.0);
}

/* ---- alias tables ---- */

/* One slot of an alias table, in one cache line access: a draw landing on
 * the slot yields item when its low 32 bits are below thr, else alt. */
struct pt_synth_alias_slot {
	uint32_t thr;
	int32_t item;
	int32_t alt;
};

/* The slot of [b, e) that the high 32 bits of r pick. */
static inline int64_t slot_in(int64_t b, int64_t e, uint64_t r)
{
	return b + (int64_t)(((r >> 32) * (uint64_t)(e - b)) >> 32);
}

static inline int32_t slot_draw(const struct pt_synth_alias_slot *t, uint64_t r)
{
	return (uint32_t)r < t->thr ? t->item : t->alt;
}

/* Vose alias tables over groups of slots: group i is slots [off[i],
 * off[i+1]) of tab, slot s holding item items ? items[s] : s of weight
 * w[item]. Returns GNN_ENOMEM. */
int pt_synth_alias_groups(const double *w, const int32_t *items, const int64_t *off, int64_t groups,
			  struct pt_synth_alias_slot *tab);

/* ---- classes, weights, edge keys ---- */

/* Fisher-Yates shuffle of a[0..n). */
void pt_synth_shuffle_i32(int32_t *a, int64_t n, struct pt_synth_rng *r);

/* rank[c]: the Zipf rank of class c, a seeded permutation of 0..k-1 (the
 * stream of tag), so that class 0 is not always the biggest. */
void pt_synth_class_ranks(int32_t k, uint64_t seed, uint64_t tag, int32_t *rank);

/* Class sizes proportional to 1 / (rank + 1) (Zipf, exponent 1), at least
 * 1 each, summing to n >= k exactly. Returns GNN_ENOMEM. */
int pt_synth_class_sizes(int64_t n, int32_t k, const int32_t *rank, int64_t *size);

/* Relabels a share of the nodes with another class, drawn in proportion to
 * class size (the class of a uniformly drawn slot of perm): nodes
 * perm[class_off[c] ..] form community c, n in all. The first node of each
 * community is never relabelled, so every class keeps a node. */
void pt_synth_assign_misfits(const int32_t *perm, const int64_t *class_off, int32_t k, int64_t n,
			     double share, struct pt_synth_rng *r, int32_t *labels);

/* The weight cap that makes deg_cap the top expected degree of a side
 * whose mean degree is mean_deg (at least 1). */
double pt_synth_weight_cap(double deg_cap, double mean_deg);

/* *w: n Pareto(2.5) weights with x_min = 1 (P(w > x) = x^-1.5), capped at
 * cap, from the stream of tag. Returns GNN_ENOMEM. */
int pt_synth_pareto_weights(int64_t n, double cap, uint64_t seed, uint64_t tag, double **w);

/* x rounded to bits significant bits (synth_steps.c says why). */
double pt_synth_round_bits(double x, int bits);

/* Bits that hold a node ID below n. */
int pt_synth_key_bits(int64_t n);

/* Writes count candidate keys to out; uniform: the fallback after too many
 * top-up rounds, drawing plain uniform pairs. */
typedef void (*pt_synth_draw_fn)(void *ctx, bool uniform, uint64_t *out, size_t count);

/* Exactly count sorted unique keys below 2^bits into *keys (malloc'd):
 * draws count candidates, sorts and deduplicates them, then draws exactly
 * the deficit round by round (so it never overshoots, deterministically);
 * after 64 rounds the rest is drawn uniformly (logged, naming what). *rounds: the top-up rounds. GNN_ENOMEM, GNN_ECLOSED. */
int pt_synth_unique_keys(pt_synth_draw_fn draw, void *ctx, int64_t count, int bits, const char *what,
			 uint64_t **keys, int *rounds);

/* GNN_ECLOSED when a stop signal arrived: checked between phases. */
int pt_synth_stop_point(void);

/* ---- features ---- */

/* A point of z(K) (see pt_synth_noise_z). */
struct pt_synth_zpoint {
	int32_t k;
	double z;
};

/* z = (distance between two centroids) / (2 * noise sd) for K = k classes,
 * interpolated linearly in K in a table computed offline. */
double pt_synth_noise_z(const struct pt_synth_zpoint *t, size_t n, int32_t k);

struct pt_synth_feat;

/* Class centroids ~ N(0, I) and a noise sd that puts neighbouring centroids
 * 2 z noise sds apart, into *out (g->feat_ctx for pt_synth_feat_row); *sigma:
 * the noise sd. Returns GNN_ENOMEM. */
int pt_synth_make_features(uint64_t seed, int32_t dim, int32_t classes, double z, struct pt_synth_feat **out,
			double *sigma);

/* g->feat_row of a synthetic graph: node's class centroid (its label's)
 * plus noise from a stream of (seed, node) alone. */
int pt_synth_feat_row(const struct pt_graph *g, int64_t node, float *out);

/* ---- validation ---- */

/* p's preset name, or "custom" when it has none. */
const char *pt_synth_preset_name(const struct pt_synth_params *p);
/* Invalid parameter: logs synth_invalid naming the field and why, GNN_EINVAL. */
int pt_synth_invalid(const struct pt_synth_params *p, const char *field, long long value, const char *why);
/* feat_dim, classes, and classes <= nodes (what: their name in the log). */
int pt_synth_check_classes(const struct pt_synth_params *p, int64_t nodes, const char *what);
/* Split sizes within [0, nodes] and their sum at most nodes. */
int pt_synth_check_split(const struct pt_synth_params *p, int64_t nodes, const char *what);

#endif
