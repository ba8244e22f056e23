/* synth_mag.c - the heterogeneous synthetic graph: ogbn-mag's schema
 * (authors, fields of study, institutions, papers; affiliated_with,
 * writes, cites, has_topic and their reverses), generated from a seed
 * (docs/synthetic.md, "Heterogeneous presets").
 *
 * Model: every class (a venue in ogbn-mag) is a community with its own
 * papers, authors, fields and institutions, Zipf-sized with the same class
 * ranks for every type. An edge of a forward relation is drawn as (first
 * endpoint, second endpoint): the first uniformly (cites: by weight), the
 * second in proportion to a Pareto weight, from the first's community with
 * the relation's probability h, else from everywhere (Chung-Lu, as in the
 * homogeneous model). Papers are labelled with their community, a share
 * MAG_MISFIT with another class; their features are the label's centroid
 * plus noise strong enough that a paper's own features classify poorly,
 * while its typed neighbourhood (co-authors' papers, cited papers, topics,
 * institutions) mostly shares its class. Papers are numbered in
 * publication order and split by it: oldest train, then valid, newest
 * test. Determinism rules as in synth.c (synth_steps.h). */
#include "synth_mag.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "synth_steps.h"
#include "sys.h"

/* ---- model constants (documented in docs/synthetic.md) ---- */

/* Probability that an edge's second endpoint is drawn from its first
 * endpoint's community, per forward relation. Lower than the homogeneous
 * model's: a paper has ~40 typed neighbours, and their majority must not
 * give its class away every time. */
#define MAG_H_AFFILIATED 0.80 /* institution of an author */
#define MAG_H_WRITES 0.70     /* author of a paper */
#define MAG_H_CITES 0.60      /* paper cited by a paper */
#define MAG_H_TOPIC 0.50      /* field of a paper */

/* Share of papers labelled with another class than the community their
 * edges follow (their features follow the label): what caps a
 * relation-reading classifier below 1. */
#define MAG_MISFIT 0.15

/* The top expected degree of a hub is at least this many times its mean:
 * sqrt(2 * edges) alone would flatten a side of few nodes with high
 * degrees (institutions: 450 nodes of mean degree 116 in mag-small). */
#define MAG_MIN_TAIL 20.0

/* Stream tags (synth.c's are below 100): per type and per relation. */
enum {
	TAG_RANK = 101,
	TAG_MISFIT,
	TAG_PLACE = 110,   /* + type */
	TAG_WEIGHTS = 120, /* + forward relation */
	TAG_EDGES = 130,   /* + forward relation */
};

/* The z (pt_synth_noise_z) at which an ideal nearest-centroid classifier on a
 * paper's own features is right with probability 1/K + 0.3 (1 - 1/K): 0.3
 * of the way from chance to certain. Estimated centroids do a little
 * worse: 0.27 measured with 349 classes (ogbn-mag's MLP: 0.27). Same
 * offline integral as synth.c's table. */
static const struct pt_synth_zpoint mag_raw_z[] = {
	{ 2, 0.385 },   { 3, 0.470 },   { 4, 0.536 },   { 5, 0.591 },   { 6, 0.637 },
	{ 8, 0.711 },   { 10, 0.771 },  { 15, 0.881 },  { 20, 0.959 },  { 30, 1.068 },
	{ 50, 1.203 },  { 70, 1.290 },  { 100, 1.379 }, { 200, 1.546 }, { 349, 1.673 },
	{ 500, 1.752 }, { 1000, 1.898 },
};

#define AUTHOR PT_SYNTH_MAG_AUTHOR
#define FIELD PT_SYNTH_MAG_FIELD
#define INSTITUTION PT_SYNTH_MAG_INSTITUTION
#define PAPER PT_SYNTH_MAG_PAPER
#define CITES PT_SYNTH_MAG_CITES

static const char *const type_names[PT_SYNTH_MAG_TYPES] = { "author", "field_of_study", "institution",
							   "paper" };

/* A forward relation src:name:dst. The hub side carries the Pareto weights
 * (papers per author, authors per institution, topic popularity,
 * citations) and is drawn second; the other side is drawn first, uniformly
 * (a Poisson count per node), except for cites, where both ends are papers
 * drawn by weight. */
static const struct rel_spec {
	const char *name;
	uint32_t src, dst;
	bool hub_is_src;
	double h;
} rel_spec[PT_SYNTH_MAG_FWD] = {
	{ "affiliated_with", AUTHOR, INSTITUTION, false, MAG_H_AFFILIATED },
	{ "writes", AUTHOR, PAPER, true, MAG_H_WRITES },
	{ "cites", PAPER, PAPER, false, MAG_H_CITES },
	{ "has_topic", PAPER, FIELD, false, MAG_H_TOPIC },
};

/* ---- presets ---- */

const struct pt_synth_params pt_synth_mag_presets[] = {
	/* ogbn-mag's sizes and split. */
	{ .preset = "mag", .kind = PT_SYNTH_MAG, .type_nodes = { 1134649, 59965, 8740, 736389 },
	  .rel_edges = { 1043998, 7145660, 5416271, 7505078 }, .feat_dim = 128, .classes = 349,
	  .num_train = 629571, .num_valid = 64879, .num_test = 41939 },
	/* 1/20 of it (fields: 1/10, so that a class's papers still have fields
	 * enough to pick ~10 from), 50 classes. */
	{ .preset = "mag-small", .kind = PT_SYNTH_MAG, .type_nodes = { 56000, 6000, 450, 37000 },
	  .rel_edges = { 52000, 357000, 271000, 375000 }, .feat_dim = 128, .classes = 50,
	  .num_train = 31630, .num_valid = 3260, .num_test = 2110 },
	/* Unit and end-to-end tests: milliseconds. */
	{ .preset = "mag-tiny", .kind = PT_SYNTH_MAG, .type_nodes = { 2400, 400, 40, 1500 },
	  .rel_edges = { 2200, 14500, 11000, 15000 }, .feat_dim = 128, .classes = 8,
	  .num_train = 1282, .num_valid = 132, .num_test = 86 },
};
const size_t pt_synth_mag_num_presets = sizeof(pt_synth_mag_presets) / sizeof(pt_synth_mag_presets[0]);

/* ---- validation ---- */

/* Distinct node pairs of forward relation r. */
static int64_t rel_pairs(const struct pt_synth_params *p, int r)
{
	int64_t ns = p->type_nodes[rel_spec[r].src], nd = p->type_nodes[rel_spec[r].dst];

	return rel_spec[r].src == rel_spec[r].dst ? ns * (ns - 1) / 2 : ns * nd;
}

int pt_synth_mag_validate(const struct pt_synth_params *p)
{
	int64_t total = 0;
	uint32_t fewest = 0;
	char field[GNN_NAME_MAX + 8];
	int rc;

	for (uint32_t t = 0; t < PT_SYNTH_MAG_TYPES; t++) {
		snprintf(field, sizeof(field), "nodes.%s", type_names[t]);
		if (p->type_nodes[t] < 1 || p->type_nodes[t] > INT32_MAX)
			return pt_synth_invalid(p, field, p->type_nodes[t], "must be in [1, 2147483647]");
		total += p->type_nodes[t];
		if (p->type_nodes[t] < p->type_nodes[fewest])
			fewest = t;
	}
	if (total > INT32_MAX)
		return pt_synth_invalid(p, "nodes", total,
					"all types together must be at most 2147483647 (METIS idx_t is 32-bit)");
	snprintf(field, sizeof(field), "nodes.%s", type_names[fewest]);
	if ((rc = pt_synth_check_classes(p, p->type_nodes[fewest], field)) != GNN_OK)
		return rc;
	for (int r = 0; r < PT_SYNTH_MAG_FWD; r++) {
		snprintf(field, sizeof(field), "edges.%s", rel_spec[r].name);
		if (p->rel_edges[r] < 0)
			return pt_synth_invalid(p, field, p->rel_edges[r], "must be >= 0");
		if (p->rel_edges[r] > rel_pairs(p, r) / 2)
			return pt_synth_invalid(p, field, p->rel_edges[r],
						"more than half of the relation's node pairs: too dense to generate by rejecting duplicates");
	}
	return pt_synth_check_split(p, p->type_nodes[PAPER], "nodes.paper");
}

/* ---- communities ---- */

/* One node type's communities, over its local IDs 0 .. n-1. */
struct mag_type {
	int64_t n;
	int32_t *perm;       /* [n] local IDs ordered by community */
	int64_t *class_off;  /* [classes + 1] community ranges of perm */
	int32_t *comm;       /* [n] community of each local ID */
};

struct mag_model {
	int32_t classes;
	struct mag_type type[PT_SYNTH_MAG_TYPES];
	int32_t *labels;     /* [papers] the community, or another class for misfits */
};

static void model_free(struct mag_model *m)
{
	for (int t = 0; t < PT_SYNTH_MAG_TYPES; t++) {
		free(m->type[t].perm);
		free(m->type[t].class_off);
		free(m->type[t].comm);
	}
	free(m->labels);
	memset(m, 0, sizeof(*m));
}

/* Zipf community sizes from the shared class ranks, placed by a seeded
 * permutation: local IDs carry no hint of the communities. */
static int build_type(struct mag_type *t, int64_t n, int32_t k, const int32_t *rank, uint64_t seed,
		      uint64_t tag)
{
	int64_t *size = malloc((size_t)k * sizeof(*size));
	struct pt_synth_rng r;
	int rc = GNN_ENOMEM;

	t->n = n;
	t->perm = malloc((size_t)n * sizeof(*t->perm));
	t->class_off = malloc(((size_t)k + 1) * sizeof(*t->class_off));
	t->comm = malloc((size_t)n * sizeof(*t->comm));
	if (size == NULL || t->perm == NULL || t->class_off == NULL || t->comm == NULL)
		goto out;
	if ((rc = pt_synth_class_sizes(n, k, rank, size)) != GNN_OK)
		goto out;
	for (int64_t i = 0; i < n; i++)
		t->perm[i] = (int32_t)i;
	rng_seed(&r, seed, tag);
	pt_synth_shuffle_i32(t->perm, n, &r);
	t->class_off[0] = 0;
	for (int32_t c = 0; c < k; c++) {
		t->class_off[c + 1] = t->class_off[c] + size[c];
		for (int64_t i = t->class_off[c]; i < t->class_off[c + 1]; i++)
			t->comm[t->perm[i]] = c;
	}
out:
	free(size);
	return rc;
}

/* Every type's communities (the same class ranks for all, so a big class
 * has many papers, authors, fields and institutions), and the papers'
 * labels with the misfits. */
static int build_model(const struct pt_synth_params *p, struct mag_model *m)
{
	const struct mag_type *papers = &m->type[PAPER];
	int32_t *rank = malloc((size_t)p->classes * sizeof(*rank));
	struct pt_synth_rng r;
	int rc = GNN_ENOMEM;

	m->classes = p->classes;
	if (rank == NULL)
		goto out;
	pt_synth_class_ranks(p->classes, p->seed, TAG_RANK, rank);
	for (uint32_t t = 0; t < PT_SYNTH_MAG_TYPES; t++)
		if ((rc = build_type(&m->type[t], p->type_nodes[t], p->classes, rank, p->seed, TAG_PLACE + t)) !=
		    GNN_OK)
			goto out;
	rc = GNN_ENOMEM;
	m->labels = malloc((size_t)papers->n * sizeof(*m->labels));
	if (m->labels == NULL)
		goto out;
	memcpy(m->labels, papers->comm, (size_t)papers->n * sizeof(*m->labels));
	rng_seed(&r, p->seed, TAG_MISFIT);
	pt_synth_assign_misfits(papers->perm, papers->class_off, p->classes, papers->n, MAG_MISFIT, &r,
				m->labels);
	rc = GNN_OK;
out:
	free(rank);
	return rc;
}

/* ---- edge candidates ---- */

/* Key bits of forward relation r: a local ID of either end fits. */
static int rel_bits(const struct pt_synth_params *p, int r)
{
	int64_t ns = p->type_nodes[rel_spec[r].src], nd = p->type_nodes[rel_spec[r].dst];

	return pt_synth_key_bits(ns > nd ? ns : nd);
}

/* Draws one forward relation's candidates. Keys are src << bits | dst in
 * local IDs; cites keys are older << bits | newer (the newer paper cites
 * the older: IDs are in publication order). */
struct rel_gen {
	const struct mag_type *first, *hub;
	const struct pt_synth_alias_slot *first_tab;  /* NULL: first endpoint uniform */
	const struct pt_synth_alias_slot *g_tab;      /* hub by weight, slot = local ID */
	const struct pt_synth_alias_slot *c_tab;      /* hub by weight within a community, slot = perm index */
	uint32_t in_class;
	bool hub_is_src, same_type;
	int bits;
	struct pt_synth_rng r;
	int64_t drawn;
};

/* Each attempt uses exactly three numbers of the stream: first endpoint,
 * choice of community, hub endpoint. */
static void draw_rel(void *ctx, bool uniform, uint64_t *out, size_t count)
{
	struct rel_gen *g = ctx;
	size_t done = 0;

	while (done < count) {
		uint64_t r0 = rng_next(&g->r), r1 = rng_next(&g->r), r2 = rng_next(&g->r);
		int64_t s = slot_in(0, g->first->n, r0);
		int32_t a = uniform || g->first_tab == NULL ? (int32_t)s : slot_draw(&g->first_tab[s], r0), b;

		g->drawn++;
		if (!uniform && (uint32_t)r1 < g->in_class) {
			int32_t c = g->first->comm[a];

			b = slot_draw(&g->c_tab[slot_in(g->hub->class_off[c], g->hub->class_off[c + 1], r2)], r2);
		} else {
			s = slot_in(0, g->hub->n, r2);
			b = uniform ? (int32_t)s : slot_draw(&g->g_tab[s], r2);
		}
		if (g->same_type) {
			if (a == b)
				continue;
			out[done++] = a < b ? (uint64_t)a << g->bits | (uint64_t)b : (uint64_t)b << g->bits | (uint64_t)a;
		} else {
			out[done++] = g->hub_is_src ? (uint64_t)b << g->bits | (uint64_t)a
						    : (uint64_t)a << g->bits | (uint64_t)b;
		}
	}
}

/* What synth_done reports per forward relation. */
struct rel_stats {
	int64_t drawn, same_comm;
	int rounds;
};

/* Hub weights capped so that the top expected degree is sqrt(2 * edges), the
 * homogeneous model's Chung-Lu limit, but at least MAG_MIN_TAIL times the
 * mean degree, and their alias tables (everywhere, per community). */
static int hub_tables(const struct pt_synth_params *p, const struct mag_type *hub, int r, double mean_deg,
		      struct pt_synth_alias_slot **g_tab, struct pt_synth_alias_slot **c_tab)
{
	double deg_cap = sqrt(2.0 * (double)p->rel_edges[r]), *w = NULL, cap;
	int64_t all[2] = { 0, hub->n };
	int rc;

	cap = pt_synth_weight_cap(deg_cap > MAG_MIN_TAIL * mean_deg ? deg_cap : MAG_MIN_TAIL * mean_deg, mean_deg);
	*g_tab = malloc((size_t)hub->n * sizeof(**g_tab));
	*c_tab = malloc((size_t)hub->n * sizeof(**c_tab));
	if (*g_tab == NULL || *c_tab == NULL)
		return GNN_ENOMEM;
	if ((rc = pt_synth_pareto_weights(hub->n, cap, p->seed, TAG_WEIGHTS + (uint64_t)r, &w)) == GNN_OK &&
	    (rc = pt_synth_alias_groups(w, NULL, all, 1, *g_tab)) == GNN_OK)
		rc = pt_synth_alias_groups(w, hub->perm, hub->class_off, p->classes, *c_tab);
	free(w);
	return rc;
}

/* Exactly p->rel_edges[r] sorted unique keys of forward relation r. */
static int rel_keys(const struct pt_synth_params *p, const struct mag_model *m, int r, uint64_t **keys,
		    struct rel_stats *st)
{
	const struct rel_spec *sp = &rel_spec[r];
	uint32_t hub = sp->hub_is_src ? sp->src : sp->dst, first = sp->hub_is_src ? sp->dst : sp->src;
	struct pt_synth_alias_slot *g_tab = NULL, *c_tab = NULL;
	struct rel_gen gen = {
		.first = &m->type[first],
		.hub = &m->type[hub],
		.in_class = prob_threshold(sp->h),
		.hub_is_src = sp->hub_is_src,
		.same_type = sp->src == sp->dst,
		.bits = rel_bits(p, r),
	};
	/* Both ends of a cites edge are papers drawn by weight. */
	double mean_deg = (double)p->rel_edges[r] * (gen.same_type ? 2.0 : 1.0) / (double)gen.hub->n;
	int rc;

	if ((rc = hub_tables(p, gen.hub, r, mean_deg, &g_tab, &c_tab)) != GNN_OK)
		goto out;
	gen.g_tab = g_tab;
	gen.c_tab = c_tab;
	gen.first_tab = gen.same_type ? g_tab : NULL;
	rng_seed(&gen.r, p->seed, TAG_EDGES + (uint64_t)r);
	rc = pt_synth_unique_keys(draw_rel, &gen, p->rel_edges[r], 2 * gen.bits, sp->name, keys, &st->rounds);
	st->drawn = gen.drawn;
out:
	free(g_tab);
	free(c_tab);
	return rc;
}

/* ---- the typed edge list ---- */

/* The directed edges handed to pt_graph_build_csr: every forward edge and its
 * reverse (in rev_<name>, or in cites itself). */
struct edge_list {
	int32_t *src, *dst;
	uint16_t *rel;
	int64_t n;
};

/* The schema: types, the forward relations, then rev_<name> of each
 * forward relation between two types, in order; rev[r]: the relation that
 * holds r's reversed edges (r itself for cites). */
static void fill_schema(const struct pt_synth_params *p, struct gnn_schema *s, uint16_t rev[PT_SYNTH_MAG_FWD])
{
	memset(s, 0, sizeof(*s));
	s->num_types = PT_SYNTH_MAG_TYPES;
	s->label_type = PAPER;
	for (uint32_t t = 0; t < PT_SYNTH_MAG_TYPES; t++) {
		snprintf(s->types[t].name, sizeof(s->types[t].name), "%s", type_names[t]);
		s->types[t].num_nodes = p->type_nodes[t];
		s->types[t].feat_dim = t == PAPER ? (uint32_t)p->feat_dim : 0;
	}
	s->num_rels = PT_SYNTH_MAG_FWD;
	for (uint16_t r = 0; r < PT_SYNTH_MAG_FWD; r++) {
		const struct rel_spec *sp = &rel_spec[r];
		struct gnn_rel *f = &s->rels[r], *b;

		snprintf(f->name, sizeof(f->name), "%s", sp->name);
		f->src = sp->src;
		f->dst = sp->dst;
		rev[r] = r;
		if (sp->src == sp->dst)
			continue;
		rev[r] = (uint16_t)s->num_rels;
		b = &s->rels[s->num_rels++];
		snprintf(b->name, sizeof(b->name), "rev_%s", sp->name);
		b->src = sp->dst;
		b->dst = sp->src;
	}
}

/* Appends forward relation r's edges, from its sorted keys (freed), in
 * both directions. Keys in ascending order keep every CSR row sorted.
 * Counts the edges within one community. */
static void append_rel(struct edge_list *e, const struct mag_model *m, const int64_t *type_start, int r,
		       uint16_t rev, uint64_t *keys, int64_t count, int bits, int64_t *same_comm)
{
	const struct rel_spec *sp = &rel_spec[r];
	const int32_t *cs = m->type[sp->src].comm, *cd = m->type[sp->dst].comm;
	uint64_t mask = ((uint64_t)1 << bits) - 1;
	int64_t same = 0;

	for (int64_t i = 0; i < count; i++) {
		int32_t a = (int32_t)(keys[i] >> bits), b = (int32_t)(keys[i] & mask);
		int32_t u = (int32_t)(type_start[sp->src] + a), v = (int32_t)(type_start[sp->dst] + b);

		same += cs[a] == cd[b];
		e->src[e->n] = u;
		e->dst[e->n] = v;
		e->rel[e->n++] = (uint16_t)r;
		e->src[e->n] = v;
		e->dst[e->n] = u;
		e->rel[e->n++] = rev;
	}
	free(keys);
	*same_comm = same;
}

static int make_edges(const struct pt_synth_params *p, const struct mag_model *m, const int64_t *type_start,
		      const uint16_t *rev, struct edge_list *e, struct rel_stats *st)
{
	int64_t total = 0;
	int rc;

	for (int r = 0; r < PT_SYNTH_MAG_FWD; r++)
		total += 2 * p->rel_edges[r];
	e->src = malloc((size_t)(total ? total : 1) * sizeof(*e->src));
	e->dst = malloc((size_t)(total ? total : 1) * sizeof(*e->dst));
	e->rel = malloc((size_t)(total ? total : 1) * sizeof(*e->rel));
	if (e->src == NULL || e->dst == NULL || e->rel == NULL)
		return GNN_ENOMEM;
	for (int r = 0; r < PT_SYNTH_MAG_FWD; r++) {
		uint64_t *keys = NULL;

		if ((rc = rel_keys(p, m, r, &keys, &st[r])) != GNN_OK || (rc = pt_synth_stop_point()) != GNN_OK) {
			free(keys);
			return rc;
		}
		append_rel(e, m, type_start, r, rev[r], keys, p->rel_edges[r], rel_bits(p, r), &st[r].same_comm);
	}
	return GNN_OK;
}

/* ---- labels, split, generation ---- */

/* Labels on papers (-1 elsewhere); the split by publication order, which
 * is paper ID order: the oldest num_train papers train, the next num_valid
 * (the following year) validate, the next num_test (the newest) test. */
static int label_split(const struct pt_synth_params *p, const struct mag_model *m, int64_t num_nodes,
		       int64_t paper0, struct pt_graph *g)
{
	g->labels = malloc((size_t)num_nodes * sizeof(*g->labels));
	g->split = calloc((size_t)num_nodes, sizeof(*g->split));
	if (g->labels == NULL || g->split == NULL)
		return GNN_ENOMEM;
	for (int64_t v = 0; v < num_nodes; v++)
		g->labels[v] = v >= paper0 && v < paper0 + p->type_nodes[PAPER] ? m->labels[v - paper0] : -1;
	for (int64_t i = 0; i < p->num_train + p->num_valid + p->num_test; i++)
		g->split[paper0 + i] = i < p->num_train ? GNN_SPLIT_TRAIN
				      : i < p->num_train + p->num_valid ? GNN_SPLIT_VALID
									 : GNN_SPLIT_TEST;
	return GNN_OK;
}

/* Share of cites edges between two papers of the same label. */
static double cites_label_homophily(const struct pt_graph *g)
{
	int64_t same = 0, all = 0, R = g->schema.num_rels;

	for (int64_t v = g->type_start[PAPER]; v < g->type_start[PAPER + 1]; v++) {
		int64_t b = g->indptr[v * R + CITES], e = g->indptr[v * R + CITES + 1];

		for (int64_t i = b; i < e; i++)
			same += g->labels[g->indices[i]] == g->labels[v];
		all += e - b;
	}
	return all ? (double)same / (double)all : 0.0;
}

static void log_done(const struct pt_synth_params *p, const struct pt_graph *g, const struct rel_stats *st,
		     double sigma, double t0)
{
	char rels[512];
	size_t len = 0;

	for (int r = 0; r < PT_SYNTH_MAG_FWD; r++)
		len += (size_t)snprintf(rels + len, sizeof(rels) - len,
					" %s_edges=%lld %s_same_community=%.3f %s_candidates=%lld %s_topup_rounds=%d",
					rel_spec[r].name, (long long)p->rel_edges[r], rel_spec[r].name,
					p->rel_edges[r] ? (double)st[r].same_comm / (double)p->rel_edges[r] : 0.0,
					rel_spec[r].name, (long long)st[r].drawn, rel_spec[r].name, st[r].rounds);
	GNN_INFO("synth_done",
		 "preset=%s kind=mag nodes=%lld directed_edges=%lld relations=%u classes=%d feat_dim=%d "
		 "cites_label_homophily=%.4f noise_sd=%.3f%s seconds=%.2f",
		 pt_synth_preset_name(p), (long long)g->num_nodes, (long long)g->num_edges,
		 g->schema.num_rels, p->classes, p->feat_dim, cites_label_homophily(g), sigma, rels,
		 gnn_now() - t0);
}

/* The papers' feature rows (g->feat_ctx), *sigma the noise sd. */
static int make_features(const struct pt_synth_params *p, struct pt_synth_feat **feat, double *sigma)
{
	double z = pt_synth_noise_z(mag_raw_z, sizeof(mag_raw_z) / sizeof(mag_raw_z[0]), p->classes);

	return pt_synth_make_features(p->seed, p->feat_dim, p->classes, z, feat, sigma);
}

/* g's typed CSR from e (taken), checked against the edges asked for, and
 * the rest of g but its features. */
static int build_graph(const struct pt_synth_params *p, struct edge_list *e, struct pt_graph *g)
{
	int64_t expect = 0;
	int rc;

	for (int r = 0; r < PT_SYNTH_MAG_FWD; r++)
		expect += 2 * p->rel_edges[r];
	rc = pt_graph_build_csr(g, g->type_start[PT_SYNTH_MAG_TYPES], e->src, e->dst, e->rel, e->n, false);
	*e = (struct edge_list){ 0 };
	if (rc != GNN_OK)
		return rc;
	if (g->num_edges != expect) {
		GNN_ERROR("synth_internal", "directed_edges=%lld expected=%lld", (long long)g->num_edges,
			  (long long)expect);
		return GNN_EINTERNAL;
	}
	/* Every edge's reverse is stored: in cites itself or in rev_<name>. */
	g->symmetric = true;
	g->feat_dim = p->feat_dim;
	g->num_classes = p->classes;
	return GNN_OK;
}

int pt_synth_mag_generate(const struct pt_synth_params *p, struct pt_graph *g)
{
	struct mag_model m = { 0 };
	struct edge_list e = { 0 };
	struct rel_stats st[PT_SYNTH_MAG_FWD] = { 0 };
	struct pt_synth_feat *feat = NULL;
	uint16_t rev[PT_SYNTH_MAG_FWD];
	double t0 = gnn_now(), sigma;
	int rc;

	GNN_INFO("synth_start",
		 "preset=%s kind=mag authors=%lld fields=%lld institutions=%lld papers=%lld feat_dim=%d classes=%d seed=%llu",
		 pt_synth_preset_name(p), (long long)p->type_nodes[AUTHOR],
		 (long long)p->type_nodes[FIELD], (long long)p->type_nodes[INSTITUTION],
		 (long long)p->type_nodes[PAPER], p->feat_dim, p->classes, (unsigned long long)p->seed);
	fill_schema(p, &g->schema, rev);
	for (uint32_t t = 0; t < PT_SYNTH_MAG_TYPES; t++)
		g->type_start[t + 1] = g->type_start[t] + p->type_nodes[t];

	if ((rc = build_model(p, &m)) != GNN_OK || (rc = pt_synth_stop_point()) != GNN_OK ||
	    (rc = make_edges(p, &m, g->type_start, rev, &e, st)) != GNN_OK ||
	    (rc = label_split(p, &m, g->type_start[PT_SYNTH_MAG_TYPES], g->type_start[PAPER], g)) != GNN_OK)
		goto out;
	model_free(&m);
	if ((rc = make_features(p, &feat, &sigma)) != GNN_OK || (rc = pt_synth_stop_point()) != GNN_OK ||
	    (rc = build_graph(p, &e, g)) != GNN_OK)
		goto out;
	g->feat_row = pt_synth_feat_row;
	g->feat_ctx = feat;
	log_done(p, g, st, sigma, t0);
	return GNN_OK;

out:
	model_free(&m);
	free(e.src);
	free(e.dst);
	free(e.rel);
	free(feat);
	pt_graph_free(g);
	return rc;
}
