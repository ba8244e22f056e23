#include "edgesplit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arr.h"
#include "csv.h"
#include "err.h"
#include "hash.h"
#include "log.h"
#include "write.h"

/* Stream keys under the seed: the held-out choice and each kind of
 * negative draw from their own stream, so one does not shift another. */
#define KEY_CHOICE 0x65646765ull  /* "edge" */
#define KEY_NEG 0x6e6567ull       /* "neg" */
#define KEY_NEG_DST 0x647374ull   /* "dst" */
/* Rejection sampling gives up after this many draws per wanted sample
 * (plus a floor): only a nearly complete graph gets there. */
#define TRIES_PER_SAMPLE 100
#define TRIES_FLOOR 10000

static const char *const set_names[PT_ES_SETS] = { "valid", "test" };

int pt_edge_split_parse_ratios(const char *text, double ratios[3])
{
	const char *p = text;
	char *end;
	double sum = 0;

	for (int k = 0; k < 3; k++) {
		errno = 0;
		ratios[k] = strtod(p, &end);
		if (end == p || errno != 0 || !isfinite(ratios[k]) || (k < 2 && *end != ',') || (k == 2 && *end != '\0')) {
			GNN_ERROR("bad_config", "edge_split=\"%s\" reason=\"expected three numbers TRAIN,VALID,TEST, e.g. 0.85,0.05,0.10\"",
				  text);
			return GNN_EINVAL;
		}
		if (ratios[k] < 0) {
			GNN_ERROR("bad_config", "edge_split=\"%s\" reason=\"a ratio is negative\"", text);
			return GNN_EINVAL;
		}
		sum += ratios[k];
		p = end + 1;
	}
	if (fabs(sum - 1.0) > 1e-6) {
		GNN_ERROR("bad_config", "edge_split=\"%s\" sum=%.6g reason=\"the ratios must add up to 1\"", text, sum);
		return GNN_EINVAL;
	}
	if (ratios[0] <= 0) {
		GNN_ERROR("bad_config", "edge_split=\"%s\" reason=\"the train ratio must be above 0\"", text);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* Where u -> v of relation r is stored (u in v's sorted row), or -1. */
static int64_t find_edge(const struct pt_graph *g, uint32_t r, int32_t u, int32_t v)
{
	int64_t R = g->schema.num_rels, lo = g->indptr[(int64_t)v * R + r], hi = g->indptr[(int64_t)v * R + r + 1];

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (g->indices[mid] == u)
			return mid;
		if (g->indices[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static bool has_edge(const struct pt_graph *g, uint32_t r, int32_t u, int32_t v)
{
	return find_edge(g, r, u, v) >= 0;
}

/* Whether u and v are a pair of relation r: u -> v, or for a relation
 * from a type to itself also v -> u. */
static bool joined(const struct pt_graph *g, uint32_t r, int32_t u, int32_t v)
{
	const struct gnn_rel *re = &g->schema.rels[r];

	return has_edge(g, r, u, v) || (re->src == re->dst && has_edge(g, r, v, u));
}

/* The key of pair (u, v) in a pair set: unordered within one type. */
static uint64_t pair_key(const struct pt_graph *g, uint32_t r, int32_t u, int32_t v)
{
	if (g->schema.rels[r].src == g->schema.rels[r].dst && u > v) {
		int32_t t = u;

		u = v;
		v = t;
	}
	return (uint64_t)(uint32_t)u << 32 | (uint32_t)v;
}

/* A set of pair keys: open addressing, linear probing, doubled when half
 * full; key ~0 marks an empty slot (no pair has it: IDs are below
 * INT32_MAX). */
struct pair_set {
	uint64_t *slot;
	uint64_t mask, count;
};

static int pair_set_init(struct pair_set *s, uint64_t cap)
{
	s->slot = malloc(cap * sizeof(*s->slot));
	if (s->slot == NULL)
		return GNN_ENOMEM;
	memset(s->slot, 0xff, cap * sizeof(*s->slot));
	s->mask = cap - 1;
	s->count = 0;
	return GNN_OK;
}

static void pair_set_put(struct pair_set *s, uint64_t key)
{
	uint64_t i = gnn_mix64(key) & s->mask;

	while (s->slot[i] != ~0ull && s->slot[i] != key)
		i = (i + 1) & s->mask;
	s->count += s->slot[i] != key;
	s->slot[i] = key;
}

/* Adds key: *added false when it was there already. GNN_ENOMEM. */
static int pair_set_add(struct pair_set *s, uint64_t key, bool *added)
{
	uint64_t before = s->count;

	if (2 * (s->count + 1) > s->mask + 1) {
		struct pair_set grown;

		if (pair_set_init(&grown, 2 * (s->mask + 1)) != GNN_OK)
			return GNN_ENOMEM;
		for (uint64_t i = 0; i <= s->mask; i++)
			if (s->slot[i] != ~0ull)
				pair_set_put(&grown, s->slot[i]);
		free(s->slot);
		*s = grown;
	}
	pair_set_put(s, key);
	*added = s->count > before;
	return GNN_OK;
}

/* Relation r's pairs, each once, in (v, u) order of the CSR; pairs NULL
 * only counts them. */
static int64_t list_pairs(const struct pt_graph *g, uint32_t r, int32_t *pairs)
{
	const struct gnn_rel *re = &g->schema.rels[r];
	int64_t R = g->schema.num_rels, n = 0;

	for (int64_t v = g->type_start[re->dst]; v < g->type_start[re->dst + 1]; v++)
		for (int64_t k = g->indptr[v * R + r]; k < g->indptr[v * R + r + 1]; k++) {
			int32_t u = g->indices[k];

			/* Within one type a pair joined both ways is listed from u < v. */
			if (re->src == re->dst && u > v && has_edge(g, r, (int32_t)v, u))
				continue;
			if (pairs != NULL) {
				pairs[2 * n] = u;
				pairs[2 * n + 1] = (int32_t)v;
			}
			n++;
		}
	return n;
}

static int cmp_pair(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;

	return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* The relation o names (default "edge") and its reverse into es. */
static int find_relation(const struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es)
{
	const struct gnn_schema *s = &g->schema;
	const char *name = o->relation != NULL ? o->relation : "edge";
	char rels[2048];
	int32_t r = gnn_schema_rel(s, name);

	if (r < 0) {
		pt_graph_names(s, true, rels, sizeof(rels));
		GNN_ERROR("bad_config", "edge_relation=%s relations=%s reason=\"%s\"", name, rels,
			  r == -2 ? "ambiguous relation name: give it as src:rel:dst"
			  : o->relation == NULL ? "the graph has no relation edge: name one with --edge-relation"
						: "no such relation");
		return GNN_EINVAL;
	}
	es->rel = (uint32_t)r;
	es->rev_rel = gnn_schema_reverse(s, (uint32_t)r);
	return GNN_OK;
}

static int alloc_sets(struct pt_edge_split *es)
{
	for (int s = 0; s < PT_ES_SETS; s++) {
		size_t n = (size_t)(es->num_held[s] ? es->num_held[s] : 1);

		es->pos[s] = malloc(n * 2 * sizeof(int32_t));
		es->neg[s] = malloc(n * 2 * sizeof(int32_t));
		es->neg_dst[s] = malloc(n * (size_t)es->k * sizeof(int32_t));
		if (es->pos[s] == NULL || es->neg[s] == NULL || es->neg_dst[s] == NULL)
			return GNN_ENOMEM;
	}
	return GNN_OK;
}

/* Ratios: num_held from the pair count (floor, as GAE's), then a seeded
 * partial shuffle deals the held-out pairs; each set sorted. */
static int choose_by_ratio(const struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es)
{
	char label[3 * GNN_NAME_MAX];
	int64_t n = es->num_pairs, h;
	uint64_t key = gnn_fold64(o->seed, KEY_CHOICE);
	int32_t *pairs;
	bool too_small;
	int rc;

	for (int s = 0; s < PT_ES_SETS; s++)
		es->num_held[s] = (int64_t)floor((double)n * o->ratios[1 + s] + 1e-9);
	h = es->num_held[PT_ES_VALID] + es->num_held[PT_ES_TEST];
	too_small = n - h < 1;
	for (int s = 0; s < PT_ES_SETS; s++)
		too_small |= o->ratios[1 + s] > 0 && es->num_held[s] == 0;
	if (too_small) {
		gnn_schema_rel_label(&g->schema, es->rel, label, sizeof(label));
		GNN_ERROR("edge_split_too_small",
			  "relation=%s pairs=%lld train=%lld valid=%lld test=%lld reason=\"too few edges for the split: "
			  "every set with a ratio above 0 needs at least one pair, and training one\"",
			  label, (long long)n, (long long)(n - h), (long long)es->num_held[PT_ES_VALID],
			  (long long)es->num_held[PT_ES_TEST]);
		return GNN_ERANGE;
	}
	if ((rc = alloc_sets(es)) != GNN_OK)
		return rc;
	if ((pairs = malloc((size_t)n * 2 * sizeof(*pairs))) == NULL)
		return GNN_ENOMEM;
	list_pairs(g, es->rel, pairs);
	for (int64_t i = 0; i < h; i++) {
		int64_t j = i + (int64_t)(gnn_draw64(key, (uint64_t)i) % (uint64_t)(n - i));
		int32_t u = pairs[2 * j], v = pairs[2 * j + 1];

		pairs[2 * j] = pairs[2 * i];
		pairs[2 * j + 1] = pairs[2 * i + 1];
		pairs[2 * i] = u;
		pairs[2 * i + 1] = v;
	}
	memcpy(es->pos[PT_ES_VALID], pairs, (size_t)es->num_held[PT_ES_VALID] * 2 * sizeof(*pairs));
	memcpy(es->pos[PT_ES_TEST], pairs + 2 * es->num_held[PT_ES_VALID],
	       (size_t)es->num_held[PT_ES_TEST] * 2 * sizeof(*pairs));
	free(pairs);
	for (int s = 0; s < PT_ES_SETS; s++)
		qsort(es->pos[s], (size_t)es->num_held[s], 2 * sizeof(int32_t), cmp_pair);
	return GNN_OK;
}

/* One line of the user's files: "u,v", per-type IDs of the relation's
 * source and destination types, into pair as node IDs of g; the pair an
 * edge of the relation, not listed before (seen). Errors name the line. */
static int read_csv_pair(struct pt_csv *c, char *line, const struct pt_graph *g, uint32_t rel,
			 struct pair_set *seen, int32_t pair[2])
{
	const struct gnn_rel *re = &g->schema.rels[rel];
	int64_t os = g->type_start[re->src], ns = g->type_start[re->src + 1] - os;
	int64_t od = g->type_start[re->dst], nd = g->type_start[re->dst + 1] - od, u, v;
	char *p = line, why[160];
	bool added;
	int rc;

	if (!pt_csv_field_i64(&p, &u) || !pt_csv_field_i64(&p, &v) || *p != '\0')
		return pt_csv_fail(c, "expected two integer columns: src,dst");
	if (u < 0 || u >= ns || v < 0 || v >= nd) {
		snprintf(why, sizeof(why), "node ID out of range: src in [0, %lld) (type %s), dst in [0, %lld) (type %s)",
			 (long long)ns, g->schema.types[re->src].name, (long long)nd, g->schema.types[re->dst].name);
		return pt_csv_fail(c, why);
	}
	pair[0] = (int32_t)(u + os);
	pair[1] = (int32_t)(v + od);
	if (!joined(g, rel, pair[0], pair[1])) {
		snprintf(why, sizeof(why), "not an edge of relation %s", re->name);
		return pt_csv_fail(c, why);
	}
	if ((rc = pair_set_add(seen, pair_key(g, rel, pair[0], pair[1]), &added)) != GNN_OK)
		return rc;
	if (!added)
		return pt_csv_fail(c, "pair listed twice (in this file or the other; either direction)");
	return GNN_OK;
}

/* One of the user's files, DIR/<set>.csv (read_csv_pair: each a pair of
 * the relation listed once across both files, seen). Positives kept as
 * given. */
static int read_csv_set(const struct pt_graph *g, const struct pt_edge_split_opts *o, int set, struct pair_set *seen,
			struct pt_edge_split *es)
{
	int64_t cap = 1024, n = 0;
	struct pt_csv c;
	char name[32], *line;
	int32_t *pos = malloc((size_t)cap * 2 * sizeof(*pos));
	int rc;

	if (pos == NULL)
		return GNN_ENOMEM;
	snprintf(name, sizeof(name), "%s.csv", set_names[set]);
	if ((rc = pt_csv_open(&c, o->csv_dir, name)) != GNN_OK) {
		free(pos);
		return rc;
	}
	while ((rc = pt_csv_next(&c, &line)) == 1) {
		if (n == cap) {
			int32_t *grown = realloc(pos, (size_t)cap * 4 * sizeof(*pos));

			if (grown == NULL) {
				rc = GNN_ENOMEM;
				goto out;
			}
			pos = grown;
			cap *= 2;
		}
		if ((rc = read_csv_pair(&c, line, g, es->rel, seen, &pos[2 * n])) != GNN_OK)
			goto out;
		n++;
	}
	rc = rc < 0 ? -rc : GNN_OK;
out:
	pt_csv_close(&c);
	if (rc == GNN_OK) {
		es->pos[set] = pos;
		es->num_held[set] = n;
	} else {
		free(pos);
	}
	return rc;
}

/* The user's splits: DIR/valid.csv and DIR/test.csv. */
static int choose_from_csv(const struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es)
{
	struct pair_set seen = { 0 };
	char label[3 * GNN_NAME_MAX];
	int32_t *pos[PT_ES_SETS];
	int64_t h;
	int rc;

	if ((rc = pair_set_init(&seen, 1024)) != GNN_OK)
		return rc;
	for (int s = 0; s < PT_ES_SETS && rc == GNN_OK; s++)
		rc = read_csv_set(g, o, s, &seen, es);
	free(seen.slot);
	if (rc != GNN_OK)
		return rc;
	h = es->num_held[PT_ES_VALID] + es->num_held[PT_ES_TEST];
	if (h == 0 || es->num_pairs - h < 1) {
		gnn_schema_rel_label(&g->schema, es->rel, label, sizeof(label));
		GNN_ERROR("edge_split_too_small", "relation=%s pairs=%lld held_out=%lld dir=%s reason=\"%s\"", label,
			  (long long)es->num_pairs, (long long)h, o->csv_dir,
			  h == 0 ? "valid.csv and test.csv list no pair" : "no pair left for training");
		return GNN_ERANGE;
	}
	/* The positives are read; the negatives' arrays come with the rest. */
	for (int s = 0; s < PT_ES_SETS; s++) {
		pos[s] = es->pos[s];
		es->pos[s] = NULL;
	}
	rc = alloc_sets(es);
	for (int s = 0; s < PT_ES_SETS; s++) {
		free(es->pos[s]);
		es->pos[s] = pos[s];
	}
	return rc;
}

/* A node drawn uniformly among type t's. */
static int32_t draw_node(const struct pt_graph *g, uint32_t t, uint64_t key, uint64_t i)
{
	uint64_t n = (uint64_t)(g->type_start[t + 1] - g->type_start[t]);

	return (int32_t)(g->type_start[t] + (int64_t)(gnn_draw64(key, i) % n));
}

/* GAE's negatives: per positive one pair (a, b), a of the source type and
 * b of the destination type, a != b, not a pair of the full graph, no two
 * alike across both sets. */
static int sample_pair_negatives(const struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es)
{
	const struct gnn_rel *re = &g->schema.rels[es->rel];
	double ns = (double)(g->type_start[re->src + 1] - g->type_start[re->src]);
	double nd = (double)(g->type_start[re->dst + 1] - g->type_start[re->dst]);
	double room = re->src == re->dst ? ns * (ns - 1) / 2 : ns * nd;
	int64_t want = es->num_held[PT_ES_VALID] + es->num_held[PT_ES_TEST];
	uint64_t key = gnn_fold64(o->seed, KEY_NEG), i = 0, budget = (uint64_t)want * TRIES_PER_SAMPLE + TRIES_FLOOR;
	struct pair_set taken = { 0 };
	char label[3 * GNN_NAME_MAX];
	int rc;

	gnn_schema_rel_label(&g->schema, es->rel, label, sizeof(label));
	if (room - (double)es->num_pairs < (double)want) {
		GNN_ERROR("edge_split_too_dense", "relation=%s pairs=%lld negatives=%lld reason=\"fewer non-edges than negatives wanted\"",
			  label, (long long)es->num_pairs, (long long)want);
		return GNN_ERANGE;
	}
	if ((rc = pair_set_init(&taken, 1024)) != GNN_OK)
		return rc;
	for (int s = 0; s < PT_ES_SETS; s++)
		for (int64_t k = 0; k < es->num_held[s]; k++) {
			int32_t a, b;
			bool added = false;

			do {
				if (i >= budget) {
					GNN_ERROR("edge_split_too_dense", "relation=%s draws=%llu reason=\"no negative pair found: the relation is nearly complete\"",
						  label, (unsigned long long)i);
					free(taken.slot);
					return GNN_ERANGE;
				}
				a = draw_node(g, re->src, key, i++);
				b = draw_node(g, re->dst, key, i++);
				if (a == b || joined(g, es->rel, a, b))
					continue;
				if ((rc = pair_set_add(&taken, pair_key(g, es->rel, a, b), &added)) != GNN_OK) {
					free(taken.slot);
					return rc;
				}
			} while (!added);
			es->neg[s][2 * k] = a;
			es->neg[s][2 * k + 1] = b;
		}
	free(taken.slot);
	return GNN_OK;
}

/* For ranking (MRR, Hits@K): per positive (u, v), k destinations b of the
 * destination type with b != u and (u, b) not a pair of the full graph,
 * drawn with replacement as OGB's are. */
static int sample_dst_negatives(const struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es)
{
	const struct gnn_rel *re = &g->schema.rels[es->rel];
	uint64_t key = gnn_fold64(o->seed, KEY_NEG_DST), i = 0;
	char label[3 * GNN_NAME_MAX];

	for (int s = 0; s < PT_ES_SETS; s++)
		for (int64_t k = 0; k < es->num_held[s]; k++) {
			int32_t u = es->pos[s][2 * k], *out = es->neg_dst[s] + k * es->k;
			uint64_t budget = i + (uint64_t)es->k * TRIES_PER_SAMPLE + TRIES_FLOOR;

			for (int64_t j = 0; j < es->k; j++) {
				int32_t b;

				do {
					if (i >= budget) {
						gnn_schema_rel_label(&g->schema, es->rel, label, sizeof(label));
						GNN_ERROR("edge_split_too_dense", "relation=%s src=%d reason=\"no negative destination found: the node is joined to nearly every node\"",
							  label, u);
						return GNN_ERANGE;
					}
					b = draw_node(g, re->dst, key, i++);
				} while (b == u || joined(g, es->rel, u, b));
				out[j] = b;
			}
		}
	return GNN_OK;
}

/* Marks u -> v of relation r, if stored, in removed (a bit per stored
 * edge). */
static void mark_edge(const struct pt_graph *g, uint32_t r, int32_t u, int32_t v, uint64_t *removed)
{
	int64_t k = find_edge(g, r, u, v);

	if (k >= 0)
		removed[k / 64] |= 1ull << (k % 64);
}

/* Removes every held-out pair's stored edges from g's CSR: u -> v, within
 * one type v -> u too, and v -> u of the reverse relation; compacts the
 * CSR in place and recounts. */
static int remove_held(struct pt_graph *g, struct pt_edge_split *es)
{
	int64_t R = g->schema.num_rels, rows = g->num_nodes * R, w = 0;
	const struct gnn_rel *re = &g->schema.rels[es->rel];
	uint64_t *removed = calloc((size_t)(g->num_edges / 64 + 1), sizeof(*removed));

	if (removed == NULL)
		return GNN_ENOMEM;
	for (int s = 0; s < PT_ES_SETS; s++)
		for (int64_t k = 0; k < es->num_held[s]; k++) {
			int32_t u = es->pos[s][2 * k], v = es->pos[s][2 * k + 1];

			mark_edge(g, es->rel, u, v, removed);
			if (re->src == re->dst)
				mark_edge(g, es->rel, v, u, removed);
			if (es->rev_rel >= 0)
				mark_edge(g, (uint32_t)es->rev_rel, v, u, removed);
		}
	for (int64_t row = 0; row < rows; row++) {
		int64_t b = g->indptr[row], e = g->indptr[row + 1];

		g->indptr[row] = w;
		for (int64_t k = b; k < e; k++)
			if (!(removed[k / 64] >> (k % 64) & 1))
				g->indices[w++] = g->indices[k];
	}
	g->indptr[rows] = w;
	free(removed);
	es->removed_edges = g->num_edges - w;
	g->num_edges = w;
	for (int64_t r = 0; r < R; r++)
		g->schema.rels[r].num_edges = 0;
	for (int64_t row = 0; row < rows; row++)
		g->schema.rels[row % R].num_edges += g->indptr[row + 1] - g->indptr[row];
	return GNN_OK;
}

int pt_edge_split_apply(struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es)
{
	char label[3 * GNN_NAME_MAX];
	int rc;

	es->k = o->eval_negatives;
	if ((rc = find_relation(g, o, es)) != GNN_OK)
		return rc;
	es->num_pairs = list_pairs(g, es->rel, NULL);
	if ((rc = o->from_csv ? choose_from_csv(g, o, es) : choose_by_ratio(g, o, es)) != GNN_OK ||
	    (rc = sample_pair_negatives(g, o, es)) != GNN_OK || (rc = sample_dst_negatives(g, o, es)) != GNN_OK ||
	    (rc = remove_held(g, es)) != GNN_OK)
		return rc;
	gnn_schema_rel_label(&g->schema, es->rel, label, sizeof(label));
	GNN_INFO("edge_split", "relation=%s reverse=%s from=%s pairs=%lld train=%lld valid=%lld test=%lld removed_edges=%lld eval_negatives=%lld",
		 label, es->rev_rel >= 0 ? g->schema.rels[es->rev_rel].name : "none", o->from_csv ? o->csv_dir : "ratios",
		 (long long)es->num_pairs,
		 (long long)(es->num_pairs - es->num_held[PT_ES_VALID] - es->num_held[PT_ES_TEST]),
		 (long long)es->num_held[PT_ES_VALID], (long long)es->num_held[PT_ES_TEST],
		 (long long)es->removed_edges, (long long)es->k);
	return GNN_OK;
}

/* rows x cols graph IDs as new global IDs into dir/name, its entry into
 * files[key]. */
static int write_ids(const struct pt_partition *pt, const int32_t *ids, int64_t rows, int64_t cols, const char *dir,
		     const char *name, const char *key, json_t *files)
{
	size_t n = (size_t)(rows * cols);
	int64_t *out = malloc((n ? n : 1) * sizeof(*out));
	struct gnn_arr_info info;
	char path[4096];
	int rc;

	if (out == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < n; i++)
		out[i] = pt->new_id[ids[i]];
	if ((rc = pt_write_join(path, sizeof(path), dir, name)) == GNN_OK &&
	    (rc = gnn_arr_write(path, GNN_DT_I64, (uint64_t)rows, (uint64_t)cols, out, &info)) == GNN_OK &&
	    json_object_set_new(files, key, pt_write_file_entry(name, &info)) != 0)
		rc = GNN_ENOMEM;
	free(out);
	return rc;
}

int pt_edge_split_write(const struct pt_edge_split *es, const struct pt_edge_split_opts *o, const struct pt_graph *g,
			const struct pt_partition *pt, const char *dir, json_t *meta)
{
	char sdir[4096], name[64], key[64], label[3 * GNN_NAME_MAX], rev[3 * GNN_NAME_MAX];
	json_t *files = json_object(), *obj;
	int rc;

	if (files == NULL)
		return GNN_ENOMEM;
	if ((rc = pt_write_join(sdir, sizeof(sdir), dir, "edge-split")) != GNN_OK)
		goto out;
	if (mkdir(sdir, 0755) != 0) {
		GNN_ERROR("mkdir_failed", "dir=%s error=\"%s\"", sdir, strerror(errno));
		rc = GNN_EIO;
		goto out;
	}
	for (int s = 0; s < PT_ES_SETS; s++) {
		const char *set = set_names[s];

		snprintf(name, sizeof(name), "%s-pos.arr", set);
		snprintf(key, sizeof(key), "%s_pos", set);
		if ((rc = write_ids(pt, es->pos[s], es->num_held[s], 2, sdir, name, key, files)) != GNN_OK)
			goto out;
		snprintf(name, sizeof(name), "%s-neg.arr", set);
		snprintf(key, sizeof(key), "%s_neg", set);
		if ((rc = write_ids(pt, es->neg[s], es->num_held[s], 2, sdir, name, key, files)) != GNN_OK)
			goto out;
		snprintf(name, sizeof(name), "%s-neg-dst.arr", set);
		snprintf(key, sizeof(key), "%s_neg_dst", set);
		if ((rc = write_ids(pt, es->neg_dst[s], es->num_held[s], es->k, sdir, name, key, files)) != GNN_OK)
			goto out;
	}
	gnn_schema_rel_label(&g->schema, es->rel, label, sizeof(label));
	if (es->rev_rel >= 0)
		gnn_schema_rel_label(&g->schema, (uint32_t)es->rev_rel, rev, sizeof(rev));
	obj = json_pack("{s:s, s:o, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:O}", "relation", label,
			"reverse_relation", es->rev_rel >= 0 ? json_string(rev) : json_null(), "source",
			o->from_csv ? "csv" : "ratios", "ratios",
			o->from_csv ? json_null() : json_pack("[f, f, f]", o->ratios[0], o->ratios[1], o->ratios[2]),
			"seed", (json_int_t)o->seed, "eval_negatives", (json_int_t)es->k, "num_pairs",
			(json_int_t)es->num_pairs, "num_train",
			(json_int_t)(es->num_pairs - es->num_held[PT_ES_VALID] - es->num_held[PT_ES_TEST]), "num_valid",
			(json_int_t)es->num_held[PT_ES_VALID], "num_test", (json_int_t)es->num_held[PT_ES_TEST],
			"removed_edges", (json_int_t)es->removed_edges, "dir", "edge-split", "files", files);
	if (obj == NULL || json_object_set_new(meta, "edge_split", obj) != 0)
		rc = GNN_ENOMEM;
out:
	json_decref(files);
	return rc;
}

void pt_edge_split_free(struct pt_edge_split *es)
{
	for (int s = 0; s < PT_ES_SETS; s++) {
		free(es->pos[s]);
		free(es->neg[s]);
		free(es->neg_dst[s]);
	}
	memset(es, 0, sizeof(*es));
}
