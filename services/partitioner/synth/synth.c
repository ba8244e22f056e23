/* synth.c - deterministic synthetic graph generator (see synth.h and
 * docs/synthetic.md): the presets, validation and generation of either
 * kind, and the homogeneous model itself; the heterogeneous one is
 * synth_mag.c, and the steps both use are synth_steps.c.
 *
 * Pipeline, with what each step holds at ogbn-products scale:
 *   1. communities: a seeded permutation of the nodes is cut into Zipf-sized
 *      communities, one per class, each cut into sub-communities; nodes are
 *      labelled with their community's class, a few (misfits) with another
 *      (perm, labels, node_sub: 30 MB);
 *   2. Chung-Lu weights, and alias tables to draw a node in proportion to its
 *      weight from everywhere, from one community, from one sub-community
 *      (90 MB);
 *   3. exactly `edges` candidates packed as (min << B | max) in a uint64,
 *      radix-sorted and deduplicated, then topped up round by round with the
 *      deficit until exactly `edges` unique edges exist (2 x 495 MB while
 *      sorting the first batch: the peak);
 *   4. the keys are unpacked in place into src/dst and handed to
 *      pt_graph_build_csr, which sorts them into the symmetric CSR.
 * Features are never stored: feat_row recomputes a row from the seed.
 *
 * Determinism: all randomness comes from xoshiro256** / splitmix64 streams
 * derived from the seed and a per-purpose tag; floating point is limited to
 * + - * / and sqrt, which IEEE-754 rounds identically everywhere (no libm). */
#include "synth.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "synth_mag.h"
#include "synth_steps.h"

/* ---- model constants (documented in docs/synthetic.md) ---- */

/* Of the edges whose second endpoint is drawn inside the first endpoint's
 * community, this share is drawn inside its sub-community: enough locality for
 * METIS to find cuts inside big classes. */
#define SUB_SHARE 0.6
/* A community is cut into sub-communities of at least SUB_SIZE_PER_CAP
 * times the degree cap nodes (and SUB_SIZE_MIN), so that a hub's expected
 * neighbours fit inside its sub-community instead of colliding into
 * duplicates. */
#define SUB_SIZE_PER_CAP 4
#define SUB_SIZE_MIN 256

/* Stream tags: each purpose gets its own independent stream of the seed, so
 * changing how many numbers one step draws never shifts another step. */
enum {
	TAG_CLASS_RANK = 1,
	TAG_CLASS_PERM,
	TAG_WEIGHTS,
	TAG_EDGES,
	TAG_SPLIT,
	/* 6 and 7: the features' streams (synth_steps.c) */
	TAG_MISFIT = 8,
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- presets and validation ---- */

/* tiny: unit tests. small: the demo. medium: products' density at a fifth of
 * its size. products: ogbn-products' exact sizes and split. small and medium
 * use products' split proportions (8% / 1.6% / rest). */
static const struct pt_synth_params presets[] = {
	{ .preset = "tiny", .nodes = 2000, .edges = 10000, .feat_dim = 32, .classes = 5,
	  .num_train = 400, .num_valid = 200, .num_test = 1400 },
	{ .preset = "small", .nodes = 100000, .edges = 1000000, .feat_dim = 100, .classes = 47,
	  .num_train = 8000, .num_valid = 1600, .num_test = 90400 },
	{ .preset = "medium", .nodes = 500000, .edges = 12500000, .feat_dim = 100, .classes = 47,
	  .num_train = 40000, .num_valid = 8000, .num_test = 452000 },
	{ .preset = "products", .nodes = 2449029, .edges = 61859140, .feat_dim = 100, .classes = 47,
	  .num_train = 196615, .num_valid = 39323, .num_test = 2213091 },
};

const char *pt_synth_preset_names(void)
{
	return "tiny|small|medium|products|mag-tiny|mag-small|mag";
}

/* Copies the preset called name among t[0..n) into *p with the seed. */
static bool find_preset(const struct pt_synth_params *t, size_t n, const char *name, uint64_t seed,
			struct pt_synth_params *p)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(name, t[i].preset) != 0)
			continue;
		*p = t[i];
		p->seed = seed;
		return true;
	}
	return false;
}

int pt_synth_preset(const char *name, uint64_t seed, struct pt_synth_params *p)
{
	if (name != NULL && (find_preset(presets, sizeof(presets) / sizeof(presets[0]), name, seed, p) ||
			     find_preset(pt_synth_mag_presets, pt_synth_mag_num_presets, name, seed, p)))
		return GNN_OK;
	GNN_ERROR("synth_unknown_preset", "preset=\"%s\" known=%s", name ? name : "(null)",
		  pt_synth_preset_names());
	return GNN_ENOENT;
}

int pt_synth_validate(const struct pt_synth_params *p)
{
	int64_t pairs;
	int rc;

	if (p == NULL) {
		GNN_ERROR("synth_invalid", "reason=\"no parameters\"");
		return GNN_EINVAL;
	}
	if (p->kind == PT_SYNTH_MAG)
		return pt_synth_mag_validate(p);
	if (p->kind != PT_SYNTH_PLAIN)
		return pt_synth_invalid(p, "kind", p->kind, "must be SYNTH_PLAIN or SYNTH_MAG");
	if (p->nodes < 1 || p->nodes > INT32_MAX)
		return pt_synth_invalid(p, "nodes", p->nodes, "must be in [1, 2147483647]");
	if ((rc = pt_synth_check_classes(p, p->nodes, "nodes")) != GNN_OK)
		return rc;
	pairs = p->nodes * (p->nodes - 1) / 2; /* < 2^61: no overflow */
	if (p->edges < 0)
		return pt_synth_invalid(p, "edges", p->edges, "must be >= 0");
	if (p->edges > pairs)
		return pt_synth_invalid(p, "edges", p->edges,
			       "more than nodes*(nodes-1)/2, the number of distinct node pairs");
	if (p->edges > pairs / 2)
		return pt_synth_invalid(p, "edges", p->edges,
			       "more than half of all node pairs: too dense to generate by rejecting duplicates");
	return pt_synth_check_split(p, p->nodes, "nodes");
}

/* ---- communities ---- */

/* Community c is the set of nodes whose edges follow class c; all but the
 * misfits among them are labelled c. */
struct model {
	int64_t n;
	int32_t classes;     /* = communities */
	int64_t nsub;
	int32_t *perm;       /* [n] nodes ordered by community, then sub-community */
	int64_t *class_off;  /* [classes + 1] community ranges of perm */
	int64_t *sub_off;    /* [nsub + 1] sub-community ranges of perm */
	int32_t *node_sub;   /* [n] sub-community of each node */
	int32_t *sub_class;  /* [nsub] community of each sub-community */
	int32_t *labels;     /* [n] label: the community, or another for misfits */
	double *w;           /* [n] Chung-Lu weight of each node */
	double weight_cap;
	double h_in;         /* P(second endpoint drawn inside the community) */
	/* Alias tables (Vose). Global: slot = node. Class and sub: slot = perm
	 * index, each community's table over its own perm range. */
	struct pt_synth_alias_slot *g_tab, *c_tab, *s_tab;
};

static void model_free(struct model *m)
{
	free(m->perm);
	free(m->class_off);
	free(m->sub_off);
	free(m->node_sub);
	free(m->labels);
	free(m->w);
	free(m->sub_class);
	free(m->g_tab);
	free(m->c_tab);
	free(m->s_tab);
	memset(m, 0, sizeof(*m));
}

/* The homogeneous model's class sizes: Zipf, ranks from TAG_CLASS_RANK. */
static int class_sizes(int64_t n, int32_t k, uint64_t seed, int64_t *size)
{
	int32_t *rank = malloc((size_t)k * sizeof(*rank));
	int rc;

	if (rank == NULL)
		return GNN_ENOMEM;
	pt_synth_class_ranks(k, seed, TAG_CLASS_RANK, rank);
	rc = pt_synth_class_sizes(n, k, rank, size);
	free(rank);
	return rc;
}

static int build_communities(struct model *m, uint64_t seed, int64_t sub_size)
{
	int64_t *size = NULL, nsub = 0, s = 0;
	struct pt_synth_rng r;
	int rc = GNN_ENOMEM;

	size = malloc((size_t)m->classes * sizeof(*size));
	m->perm = malloc((size_t)m->n * sizeof(*m->perm));
	m->labels = malloc((size_t)m->n * sizeof(*m->labels));
	m->node_sub = malloc((size_t)m->n * sizeof(*m->node_sub));
	m->class_off = malloc(((size_t)m->classes + 1) * sizeof(*m->class_off));
	if (size == NULL || m->perm == NULL || m->labels == NULL || m->node_sub == NULL ||
	    m->class_off == NULL)
		goto out;
	rc = class_sizes(m->n, m->classes, seed, size);
	if (rc != GNN_OK)
		goto out;
	rc = GNN_ENOMEM;
	for (int32_t c = 0; c < m->classes; c++)
		nsub += size[c] / sub_size > 1 ? size[c] / sub_size : 1;
	m->nsub = nsub;
	m->sub_off = malloc(((size_t)nsub + 1) * sizeof(*m->sub_off));
	m->sub_class = malloc((size_t)nsub * sizeof(*m->sub_class));
	if (m->sub_off == NULL || m->sub_class == NULL)
		goto out;

	/* Community membership is a random permutation, so node IDs carry no
	 * hint of the structure (as in real datasets). */
	for (int64_t i = 0; i < m->n; i++)
		m->perm[i] = (int32_t)i;
	rng_seed(&r, seed, TAG_CLASS_PERM);
	pt_synth_shuffle_i32(m->perm, m->n, &r);
	m->class_off[0] = 0;
	for (int32_t c = 0; c < m->classes; c++) {
		int64_t b = m->class_off[c], k = size[c] / sub_size > 1 ? size[c] / sub_size : 1;

		m->class_off[c + 1] = b + size[c];
		for (int64_t j = 0; j < k; j++, s++) {
			m->sub_off[s] = b + size[c] * j / k;
			m->sub_class[s] = c;
			for (int64_t i = m->sub_off[s]; i < b + size[c] * (j + 1) / k; i++) {
				m->labels[m->perm[i]] = c;
				m->node_sub[m->perm[i]] = (int32_t)s;
			}
		}
	}
	m->sub_off[nsub] = m->n;
	rc = GNN_OK;
out:
	free(size);
	return rc;
}

/* ---- weights and alias tables ---- */
/* Global table (slot = node), one per community and one per
 * sub-community (slot = perm index). */
static int build_alias_tables(struct model *m)
{
	size_t n = (size_t)m->n;
	int64_t all[2] = { 0, m->n };
	int rc;

	m->g_tab = malloc(n * sizeof(*m->g_tab));
	m->c_tab = malloc(n * sizeof(*m->c_tab));
	m->s_tab = malloc(n * sizeof(*m->s_tab));
	if (m->g_tab == NULL || m->c_tab == NULL || m->s_tab == NULL)
		return GNN_ENOMEM;
	if ((rc = pt_synth_alias_groups(m->w, NULL, all, 1, m->g_tab)) != GNN_OK ||
	    (rc = pt_synth_alias_groups(m->w, m->perm, m->class_off, m->classes, m->c_tab)) != GNN_OK)
		return rc;
	return pt_synth_alias_groups(m->w, m->perm, m->sub_off, m->nsub, m->s_tab);
}

/* x * y with both rounded to 26 significant bits, so that the product is
 * exact and an FMA-fused sum over such products rounds like an unfused one
 * (see pt_synth_round_bits). */
static double exact_mul(double x, double y)
{
	return pt_synth_round_bits(x, 26) * pt_synth_round_bits(y, 26);
}

/* In-community probability h_in such that the expected share of candidate
 * edges whose endpoints carry the same label is PT_SYNTH_HOMOPHILY. With
 * endpoints drawn in proportion to weight, a partner from u's community
 * shares u's label with probability A = sum_c (W_c / W) sum_l (W_cl / W_c)^2
 * (W_cl: weight of community c's nodes labelled l), a partner from
 * anywhere with q = sum_l (W_l / W)^2; so h_in A + (1 - h_in) q = H. */
static int solve_homophily(struct model *m)
{
	double *in_comm = calloc((size_t)m->classes, sizeof(*in_comm));
	double *by_label = calloc((size_t)m->classes, sizeof(*by_label));
	int32_t *touched = malloc((size_t)m->classes * sizeof(*touched));
	double total = 0.0, a = 0.0, q = 0.0;

	if (in_comm == NULL || by_label == NULL || touched == NULL) {
		free(in_comm);
		free(by_label);
		free(touched);
		return GNN_ENOMEM;
	}
	for (int64_t v = 0; v < m->n; v++)
		total += m->w[v];
	for (int32_t c = 0; c < m->classes; c++) {
		double wc = 0.0, sq = 0.0;
		int32_t nt = 0;

		for (int64_t i = m->class_off[c]; i < m->class_off[c + 1]; i++) {
			int32_t v = m->perm[i], l = m->labels[v];

			if (in_comm[l] == 0.0) /* weights are >= 1 */
				touched[nt++] = l;
			in_comm[l] += m->w[v];
			wc += m->w[v];
		}
		for (int32_t t = 0; t < nt; t++) {
			int32_t l = touched[t];

			sq += exact_mul(in_comm[l] / wc, in_comm[l] / wc);
			by_label[l] += in_comm[l];
			in_comm[l] = 0.0;
		}
		a += exact_mul(sq, wc / total);
	}
	for (int32_t l = 0; l < m->classes; l++)
		q += exact_mul(by_label[l] / total, by_label[l] / total);
	m->h_in = a > q ? (PT_SYNTH_HOMOPHILY - q) / (a - q) : 0.0;
	if (m->h_in < 0.0)
		m->h_in = 0.0;
	if (m->h_in > 1.0)
		m->h_in = 1.0;
	free(in_comm);
	free(by_label);
	free(touched);
	return GNN_OK;
}

/* ---- edge candidates ---- */

struct gen {
	const struct model *m;
	int key_bits;        /* B: a key is min << B | max */
	uint32_t in_class;   /* thresholds on 32 random bits */
	uint32_t in_sub;
	struct pt_synth_rng r;
	int64_t drawn;       /* candidates drawn, self-loops included */
};

/* Candidates are drawn in batches whose stages run over the whole batch, so
 * that the random reads of one stage (alias slots, node records) are all
 * prefetched before they are used: each candidate costs about three cache
 * misses, which would otherwise be paid one after another. */
#define GEN_BATCH 256

/* Writes count candidate keys to out. Attempt i of a batch uses exactly
 * three numbers of the stream (first endpoint, choice of community, second
 * endpoint): the first endpoint in proportion to weight; the second, with
 * probability h_in, from the first's community (and then with probability
 * SUB_SHARE from its sub-community), else again from everywhere. Both
 * endpoints are then marginally proportional to weight (Chung-Lu).
 * Self-loops are dropped; surplus keys of the last batch are discarded.
 * uniform: plain uniform pairs instead (pt_synth_unique_keys' fallback). */
static void gen_keys(void *ctx, bool uniform, uint64_t *out, size_t count)
{
	struct gen *g = ctx;
	const struct model *m = g->m;
	uint64_t r[3 * GEN_BATCH];
	int64_t slot[GEN_BATCH];
	int32_t u[GEN_BATCH];
	const struct pt_synth_alias_slot *tab[GEN_BATCH];
	size_t done = 0;

	while (done < count) {
		for (int i = 0; i < 3 * GEN_BATCH; i++)
			r[i] = rng_next(&g->r);
		g->drawn += GEN_BATCH;
		for (int i = 0; i < GEN_BATCH; i++) {
			slot[i] = slot_in(0, m->n, r[3 * i]);
			__builtin_prefetch(&m->g_tab[slot[i]]);
		}
		for (int i = 0; i < GEN_BATCH; i++) {
			u[i] = uniform ? (int32_t)slot[i] : slot_draw(&m->g_tab[slot[i]], r[3 * i]);
			__builtin_prefetch(&m->node_sub[u[i]]);
		}
		for (int i = 0; i < GEN_BATCH; i++) {
			uint64_t c = r[3 * i + 1], rv = r[3 * i + 2];

			tab[i] = m->g_tab;
			slot[i] = slot_in(0, m->n, rv);
			if (!uniform && (uint32_t)c < g->in_class) {
				int32_t sub = m->node_sub[u[i]], cls = m->sub_class[sub];
				int64_t sb = m->sub_off[sub], se = m->sub_off[sub + 1];
				int64_t cb = m->class_off[cls], ce = m->class_off[cls + 1];

				/* A one-node community could only give a self-loop. */
				if ((uint32_t)(c >> 32) < g->in_sub && se - sb > 1) {
					tab[i] = m->s_tab;
					slot[i] = slot_in(sb, se, rv);
				} else if (ce - cb > 1) {
					tab[i] = m->c_tab;
					slot[i] = slot_in(cb, ce, rv);
				}
			}
			__builtin_prefetch(&tab[i][slot[i]]);
		}
		for (int i = 0; i < GEN_BATCH && done < count; i++) {
			int32_t a = u[i], b;

			b = uniform ? (int32_t)slot[i] : slot_draw(&tab[i][slot[i]], r[3 * i + 2]);
			if (a == b)
				continue;
			if (a > b) {
				int32_t t = a;

				a = b;
				b = t;
			}
			out[done++] = ((uint64_t)a << g->key_bits) | (uint64_t)b;
		}
	}
}

/* The z at which an ideal nearest-centroid classifier on one node's
 * features is right with probability PT_SYNTH_RAW_ACCURACY, for equidistant
 * centroids: P(correct) = E_g[Phi(sqrt(2) z - g)^(K-1)]. Computed offline
 * (numerical integration); interpolated in code to stay libm-free. */
static const struct pt_synth_zpoint raw_accuracy_z[] = {
	{ 2, 0.253 },   { 3, 0.626 },   { 4, 0.815 },   { 5, 0.940 },   { 7, 1.102 },
	{ 10, 1.252 },  { 15, 1.402 },  { 20, 1.500 },  { 30, 1.628 },  { 47, 1.759 },
	{ 70, 1.868 },  { 100, 1.961 }, { 200, 2.129 }, { 500, 2.334 }, { 1000, 2.478 },
};

/* The feature rows' centroids and noise (g->feat_ctx), *sigma the noise sd. */
static int make_features(const struct pt_synth_params *p, struct pt_synth_feat **feat, double *sigma)
{
	double z = pt_synth_noise_z(raw_accuracy_z, sizeof(raw_accuracy_z) / sizeof(raw_accuracy_z[0]), p->classes);

	return pt_synth_make_features(p->seed, p->feat_dim, p->classes, z, feat, sigma);
}

/* ---- generation ---- */

/* Unpacks sorted keys into src (min) and dst (max), reusing the key buffer
 * for src, so the peak is keys + dst rather than keys + src + dst. Counts
 * within-class edges on the way. Frees keys in every case. */
static int unpack_edges(uint64_t *keys, int64_t m, int bits, const int32_t *labels,
			int32_t **src_out, int32_t **dst_out, int64_t *same_class)
{
	int32_t *dst = malloc((size_t)(m ? m : 1) * sizeof(*dst)), *src;
	uint64_t mask = ((uint64_t)1 << bits) - 1;
	int64_t same = 0;

	if (dst == NULL) {
		free(keys);
		return GNN_ENOMEM;
	}
	for (int64_t i = 0; i < m; i++) {
		uint64_t k = keys[i];
		int32_t a = (int32_t)(k >> bits), b = (int32_t)(k & mask);

		/* Writes bytes [4i, 4i+4), which lie below the key still to be
		 * read at [8(i+1), ...); memcpy keeps it free of aliasing UB. */
		memcpy((char *)keys + (size_t)i * sizeof(int32_t), &a, sizeof(a));
		dst[i] = b;
		same += labels[a] == labels[b];
	}
	src = realloc(keys, (size_t)(m ? m : 1) * sizeof(*src));
	if (src == NULL)
		src = (int32_t *)(void *)keys; /* shrinking failed: keep the big block */
	*src_out = src;
	*dst_out = dst;
	*same_class = same;
	return GNN_OK;
}

/* What synth_done reports, gathered while the model still exists. */
struct synth_stats {
	double t0, mean_deg, weight_cap, h_in, sigma;
	int64_t nsub, same, drawn;
	int rounds;
};

/* The generative model: communities, weights, their alias tables, the
 * misfits and the in-class probability that gives the homophily asked
 * for, and its numbers in st. On failure m holds what was built
 * (model_free). */
static int build_model(const struct pt_synth_params *p, struct model *m, struct synth_stats *st)
{
	double deg_cap = sqrt(2.0 * (double)p->edges);
	int64_t sub_size;
	struct pt_synth_rng r;
	int rc;

	m->n = p->nodes;
	m->classes = p->classes;
	st->mean_deg = 2.0 * (double)p->edges / (double)p->nodes;
	m->weight_cap = pt_synth_weight_cap(deg_cap, st->mean_deg);
	sub_size = (int64_t)(SUB_SIZE_PER_CAP * deg_cap);
	if (sub_size < SUB_SIZE_MIN)
		sub_size = SUB_SIZE_MIN;

	if ((rc = build_communities(m, p->seed, sub_size)) != GNN_OK ||
	    (rc = pt_synth_pareto_weights(m->n, m->weight_cap, p->seed, TAG_WEIGHTS, &m->w)) != GNN_OK ||
	    (rc = build_alias_tables(m)) != GNN_OK)
		return rc;
	rng_seed(&r, p->seed, TAG_MISFIT);
	pt_synth_assign_misfits(m->perm, m->class_off, m->classes, m->n, PT_SYNTH_MISFIT, &r, m->labels);
	if ((rc = solve_homophily(m)) != GNN_OK || (rc = pt_synth_stop_point()) != GNN_OK)
		return rc;
	free(m->w);
	m->w = NULL;
	st->weight_cap = m->weight_cap;
	st->h_in = m->h_in;
	st->nsub = m->nsub;
	return GNN_OK;
}

/* Exactly p->edges unique edge keys drawn from the model (gen_keys) into
 * *keys; *bits: the bits of one endpoint in a key. */
static int draw_edges(const struct pt_synth_params *p, const struct model *m, uint64_t **keys, int *bits,
		      struct synth_stats *st)
{
	struct gen gen = { .m = m, .key_bits = pt_synth_key_bits(m->n), .in_class = prob_threshold(m->h_in),
			   .in_sub = prob_threshold(SUB_SHARE) };
	int rc;

	rng_seed(&gen.r, p->seed, TAG_EDGES);
	rc = pt_synth_unique_keys(gen_keys, &gen, p->edges, 2 * gen.key_bits, "edge", keys, &st->rounds);
	st->drawn = gen.drawn;
	*bits = gen.key_bits;
	return rc;
}

/* Split: a fresh permutation (m->perm reused), independent of the class
 * layout; the first num_train nodes train, the next num_valid validate,
 * the next num_test test. */
static int assign_split(const struct pt_synth_params *p, struct model *m, struct pt_graph *g)
{
	struct pt_synth_rng r;

	g->split = calloc((size_t)m->n, sizeof(*g->split));
	if (g->split == NULL)
		return GNN_ENOMEM;
	for (int64_t i = 0; i < m->n; i++)
		m->perm[i] = (int32_t)i;
	rng_seed(&r, p->seed, TAG_SPLIT);
	pt_synth_shuffle_i32(m->perm, m->n, &r);
	for (int64_t i = 0; i < p->num_train + p->num_valid + p->num_test; i++)
		g->split[m->perm[i]] = i < p->num_train ? GNN_SPLIT_TRAIN
				       : i < p->num_train + p->num_valid ? GNN_SPLIT_VALID
									  : GNN_SPLIT_TEST;
	return GNN_OK;
}

/* The model's last use: its labels go to g, keys (taken) become the
 * edges *src and *dst, the split is drawn, and the model is freed (first
 * the alias tables: their 90 MB go back before the peaks). */
static int take_model(const struct pt_synth_params *p, struct model *m, uint64_t *keys, int bits, int32_t **src,
		      int32_t **dst, struct pt_graph *g, struct synth_stats *st)
{
	int rc;

	free(m->g_tab);
	free(m->c_tab);
	free(m->s_tab);
	m->g_tab = m->c_tab = m->s_tab = NULL;
	g->labels = m->labels;
	m->labels = NULL;
	rc = unpack_edges(keys, p->edges, bits, g->labels, src, dst, &st->same);
	if (rc == GNN_OK)
		rc = assign_split(p, m, g);
	model_free(m);
	return rc;
}

/* g's CSR from src and dst (taken) and the rest of g but its features.
 * The edges are in (min, max) order, so pt_graph_build_csr fills each row
 * already sorted and its per-row sort has no work to do. */
static int build_graph(const struct pt_synth_params *p, int32_t *src, int32_t *dst, struct pt_graph *g)
{
	int rc;

	gnn_schema_plain(&g->schema, p->nodes, 0, (uint32_t)p->feat_dim);
	g->type_start[1] = p->nodes;
	if ((rc = pt_graph_build_csr(g, p->nodes, src, dst, NULL, p->edges, true)) != GNN_OK)
		return rc;
	if (g->num_edges != 2 * p->edges) {
		GNN_ERROR("synth_internal", "directed_edges=%lld expected=%lld",
			  (long long)g->num_edges, (long long)(2 * p->edges));
		return GNN_EINTERNAL;
	}
	g->feat_dim = p->feat_dim;
	g->num_classes = p->classes;
	return GNN_OK;
}

static void log_done(const struct pt_synth_params *p, const struct pt_graph *g, const struct synth_stats *st)
{
	int64_t max_deg = 0;

	for (int64_t v = 0; v < g->num_nodes; v++)
		if (g->indptr[v + 1] - g->indptr[v] > max_deg)
			max_deg = g->indptr[v + 1] - g->indptr[v];
	GNN_INFO("synth_done",
		 "preset=%s nodes=%lld edges=%lld directed_edges=%lld classes=%d feat_dim=%d "
		 "homophily=%.4f mean_degree=%.2f max_degree=%lld weight_cap=%.1f "
		 "in_community_prob=%.4f sub_communities=%lld noise_sd=%.3f candidates=%lld "
		 "topup_rounds=%d seconds=%.2f",
		 pt_synth_preset_name(p), (long long)p->nodes, (long long)p->edges, (long long)g->num_edges,
		 p->classes, p->feat_dim, p->edges ? (double)st->same / (double)p->edges : 0.0,
		 st->mean_deg, (long long)max_deg, st->weight_cap, st->h_in, (long long)st->nsub, st->sigma,
		 (long long)st->drawn, st->rounds, now_s() - st->t0);
}

/* Edges from the model, then the labels, the split, the features and the
 * CSR; the model is freed as soon as its last use is done. */
int pt_synth_generate(const struct pt_synth_params *p, struct pt_graph *g)
{
	struct model m = { 0 };
	struct pt_synth_feat *feat = NULL;
	struct synth_stats st = { .t0 = now_s() };
	uint64_t *keys = NULL;
	int32_t *src = NULL, *dst = NULL;
	int bits, rc;

	if ((rc = pt_synth_validate(p)) != GNN_OK)
		return rc;
	if (p->kind == PT_SYNTH_MAG)
		return pt_synth_mag_generate(p, g);
	GNN_INFO("synth_start", "preset=%s nodes=%lld edges=%lld feat_dim=%d classes=%d seed=%llu",
		 pt_synth_preset_name(p), (long long)p->nodes, (long long)p->edges, p->feat_dim, p->classes,
		 (unsigned long long)p->seed);
	if ((rc = build_model(p, &m, &st)) != GNN_OK || (rc = draw_edges(p, &m, &keys, &bits, &st)) != GNN_OK ||
	    (rc = pt_synth_stop_point()) != GNN_OK)
		goto out;
	rc = take_model(p, &m, keys, bits, &src, &dst, g, &st);
	keys = NULL;
	if (rc != GNN_OK || (rc = make_features(p, &feat, &st.sigma)) != GNN_OK ||
	    (rc = pt_synth_stop_point()) != GNN_OK)
		goto out;
	rc = build_graph(p, src, dst, g);
	src = dst = NULL;
	if (rc != GNN_OK)
		goto out;
	g->feat_row = pt_synth_feat_row;
	g->feat_ctx = feat;
	log_done(p, g, &st);
	return GNN_OK;

out:
	model_free(&m);
	free(keys);
	free(src);
	free(dst);
	free(feat);
	pt_graph_free(g);
	return rc;
}
