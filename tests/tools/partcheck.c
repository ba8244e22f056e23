/* partcheck - verifies a gnn-partition output, independently of the
 * partitioner's code: it reads the output through libcommon/part.h and, with
 * --raw, the original OGB files (homogeneous or heterogeneous layout)
 * through zcat, and checks
 *   - every file's checksum and contents (GNN_PART_VERIFY),
 *   - node-map.arr maps each node type's new IDs onto its per-type IDs one
 *     to one, so every node is in exactly one partition,
 *   - every relation's edges lie in its rows, between nodes of its source
 *     and destination types (gnn_layout_type); rows sorted, no duplicates
 *     or self-loops; every edge's reverse stored (in the same relation, or
 *     in rev_NAME for NAME) when meta says symmetric,
 *   - meta.json's per-partition counts, per-relation edge counts and
 *     edge_cut equal the recomputed ones,
 *   - with --raw: every relation's edge set (through the ID map, reverse
 *     relations and symmetrised ones included), each type's features (as
 *     meta.json's feat_norm normalises them), the labels and the split
 *     membership equal the raw files'.
 * Prints key=value statistics and "partcheck: ok", or "partcheck: FAIL ..."
 * and exits 1. Usage: partcheck DIR [--raw OGBDIR [--split NAME] [--directed]] */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arr.h"
#include "err.h"
#include "log.h"
#include "part.h"

static int failures;

#define FAIL(...)                                          \
	do {                                               \
		printf("partcheck: FAIL " __VA_ARGS__);    \
		printf("\n");                              \
		failures++;                                \
	} while (0)

/* The output under test. Edge keys are (dst << 32 | src) in original
 * per-type IDs, one sorted array per relation. */
struct out {
	struct gnn_meta m;
	const struct gnn_layout *l;
	const struct gnn_schema *s;
	struct gnn_part *parts;
	const int64_t *map;
	int64_t cum[GNN_MAX_TYPES + 1];  /* type t's per-type IDs index inv from cum[t] */
	int64_t *inv;                    /* cum[t] + per-type ID -> new global ID */
	uint64_t *keys[GNN_MAX_RELS];
	size_t nkeys[GNN_MAX_RELS];
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static size_t sort_unique(uint64_t *k, size_t n)
{
	size_t w = 0;

	qsort(k, n, sizeof(*k), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || k[i] != k[w - 1])
			k[w++] = k[i];
	return w;
}

static FILE *zopen(const char *path)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "zcat -f '%s'", path);
	return popen(cmd, "r");
}

/* The new global ID of type t's node v (per-type ID), or -1. */
static int64_t node_of(const struct out *o, uint32_t t, int64_t v)
{
	return v >= 0 && v < o->s->types[t].num_nodes ? o->inv[o->cum[t] + v] : -1;
}

static const struct gnn_part *part_of(const struct out *o, int64_t g)
{
	return &o->parts[gnn_layout_owner(o->l, g)];
}

/* node-map.arr: per type, a one-to-one map onto [0, num_nodes of the type). */
static void check_map(struct out *o)
{
	for (uint32_t t = 0; t < o->s->num_types; t++)
		o->cum[t + 1] = o->cum[t] + o->s->types[t].num_nodes;
	o->inv = malloc(((size_t)o->l->num_nodes + 1) * sizeof(*o->inv));
	for (int64_t g = 0; g < o->l->num_nodes; g++)
		o->inv[g] = -1;
	for (int64_t g = 0; g < o->l->num_nodes; g++) {
		int32_t t = gnn_layout_type(o->l, g);
		int64_t id = o->map[g];

		if (t < 0 || id < 0 || id >= o->s->types[t].num_nodes || o->inv[o->cum[t] + id] >= 0) {
			FAIL("node-map.arr is not a permutation of each type's IDs (new ID %" PRId64 ")", g);
			return;
		}
		o->inv[o->cum[t] + id] = g;
	}
}

/* One partition's rows: types of both ends, order, edge keys, counts
 * against meta.json. Returns its remote edges; adds its training nodes. */
static int64_t check_part(struct out *o, int32_t p, int64_t *train)
{
	const struct gnn_part *q = &o->parts[p];
	json_t *po = json_array_get(json_object_get(o->m.json, "parts"), (size_t)p);
	json_t *tn = json_object_get(po, "type_nodes");
	uint32_t R = o->s->num_rels;
	int64_t counts[4] = { 0 }, remote = 0, bad = 0;

	for (int64_t i = 0; i < q->num_nodes; i++) {
		int64_t g = q->node_start + i;
		int32_t t = gnn_layout_type(o->l, g);

		counts[q->split[i] & 3]++;
		for (uint32_t r = 0; r < R; r++) {
			const struct gnn_rel *re = &o->s->rels[r];

			for (int64_t e = q->indptr[i * R + r]; e < q->indptr[i * R + r + 1]; e++) {
				int64_t u = q->indices[e];

				bad += u == g || (e > q->indptr[i * R + r] && q->indices[e - 1] >= u) ||
				       t != (int32_t)re->dst || gnn_layout_type(o->l, u) != (int32_t)re->src;
				remote += gnn_layout_owner(o->l, u) != p;
				if (o->nkeys[r] < (size_t)re->num_edges)
					o->keys[r][o->nkeys[r]] = (uint64_t)o->map[g] << 32 | (uint64_t)o->map[u];
				o->nkeys[r]++;
			}
		}
	}
	if (bad)
		FAIL("partition %d: %" PRId64 " entries with a self-loop, unsorted or duplicate neighbour, or an end of the wrong type", p, bad);
	for (uint32_t t = 0; tn != NULL && t < o->s->num_types; t++)
		if (json_integer_value(json_object_get(tn, o->s->types[t].name)) != q->type_start[t + 1] - q->type_start[t])
			FAIL("partition %d: type_nodes of %s differs from its type range", p, o->s->types[t].name);
	*train += counts[GNN_SPLIT_TRAIN];
	if (counts[1] != json_integer_value(json_object_get(po, "num_train")) ||
	    counts[2] != json_integer_value(json_object_get(po, "num_valid")) ||
	    counts[3] != json_integer_value(json_object_get(po, "num_test")) ||
	    remote != json_integer_value(json_object_get(po, "num_remote_edges")))
		FAIL("partition %d counts differ from meta.json", p);
	return remote;
}

/* The relation holding relation r's reverse edges: rev_NAME for NAME and
 * back, or r itself for a relation from a type to itself; -1 for none. */
static int32_t reverse_of(const struct gnn_schema *s, uint32_t r)
{
	const struct gnn_rel *re = &s->rels[r];

	for (uint32_t q = 0; q < s->num_rels; q++) {
		const struct gnn_rel *x = &s->rels[q];

		if (x->src != re->dst || x->dst != re->src)
			continue;
		if ((strncmp(x->name, "rev_", 4) == 0 && strcmp(x->name + 4, re->name) == 0) ||
		    (strncmp(re->name, "rev_", 4) == 0 && strcmp(re->name + 4, x->name) == 0))
			return (int32_t)q;
	}
	return re->src == re->dst ? (int32_t)r : -1;
}

static void check_symmetric(const struct out *o)
{
	for (uint32_t r = 0; r < o->s->num_rels; r++) {
		int32_t b = reverse_of(o->s, r);

		if (b < 0) {
			FAIL("meta.json says symmetric but relation %s has no reverse relation", o->s->rels[r].name);
			continue;
		}
		for (size_t i = 0; i < o->nkeys[r]; i++) {
			uint64_t rev = o->keys[r][i] << 32 | o->keys[r][i] >> 32;

			if (bsearch(&rev, o->keys[b], o->nkeys[b], sizeof(rev), cmp_u64) == NULL) {
				FAIL("meta.json says symmetric but edge %zu of relation %s has no reverse", i, o->s->rels[r].name);
				break;
			}
		}
	}
}

/* ---- --raw: the OGB files ---- */

/* Where the raw dataset keeps what: each forward relation's edge file, the
 * relation its edges are stored in and the one holding their reverses
 * (-1: none), each type's feature file ("" for none), the labels, the
 * split folder of the label type. */
struct raw {
	int n;
	struct { char file[4400]; uint32_t r; int32_t rev; } rels[GNN_MAX_RELS];
	char feat[GNN_MAX_TYPES][4400];
	char label[4400], split[4400];
};

static void raw_plain(const char *dir, const char *split, bool directed, struct raw *w)
{
	w->n = 1;
	snprintf(w->rels[0].file, sizeof(w->rels[0].file), "%s/raw/edge.csv.gz", dir);
	w->rels[0].r = 0;
	w->rels[0].rev = directed ? -1 : 0;
	snprintf(w->feat[0], sizeof(w->feat[0]), "%s/raw/node-feat.csv.gz", dir);
	snprintf(w->label, sizeof(w->label), "%s/raw/node-label.csv.gz", dir);
	snprintf(w->split, sizeof(w->split), "%s/split/%s", dir, split);
}

/* The first line of a gzip file, without its newline, into buf. */
static bool first_line(const char *path, char *buf, size_t cap)
{
	FILE *f = zopen(path);
	bool ok = f != NULL && fgets(buf, (int)cap, f) != NULL;

	if (f != NULL)
		pclose(f);
	buf[ok ? strcspn(buf, "\r\n") : 0] = '\0';
	return ok;
}

/* The heterogeneous layout: num-node-dict's types must be the schema's,
 * triplet-type-list's relations its forward ones, with their reverses
 * (rev_NAME, or in place) unless directed, and nothing else. */
static void raw_hetero(const char *dir, const char *split, bool directed, const struct gnn_schema *s, struct raw *w)
{
	char path[4400], line[4096], *tok, *save = NULL;
	uint32_t types = 0, reverses = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/raw/num-node-dict.csv.gz", dir);
	first_line(path, line, sizeof(line));
	for (tok = strtok_r(line, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save), types++)
		if (gnn_schema_type(s, tok) < 0)
			FAIL("raw node type %s is not in meta.json", tok);
	if (types != s->num_types)
		FAIL("raw files have %u node types, meta.json %u", types, s->num_types);
	snprintf(path, sizeof(path), "%s/raw/triplet-type-list.csv.gz", dir);
	f = zopen(path);
	while (f != NULL && w->n < GNN_MAX_RELS && fgets(line, sizeof(line), f) != NULL) {
		char src[GNN_NAME_MAX], rel[GNN_NAME_MAX], dst[GNN_NAME_MAX], label[3 * GNN_NAME_MAX + 8];
		int32_t r, b;

		if (sscanf(line, "%63[^,],%63[^,],%63[^,\r\n]", src, rel, dst) != 3) {
			FAIL("unreadable line in triplet-type-list: %s", line);
			break;
		}
		snprintf(label, sizeof(label), "%s:%s:%s", src, rel, dst);
		r = gnn_schema_rel(s, label);
		snprintf(label, sizeof(label), "%s:rev_%s:%s", dst, rel, src);
		b = directed ? -1 : strcmp(src, dst) == 0 ? r : gnn_schema_rel(s, label);
		if (r < 0 || (!directed && b < 0)) {
			FAIL("raw relation %s:%s:%s or its reverse is not in meta.json", src, rel, dst);
			continue;
		}
		reverses += b >= 0 && b != r;
		snprintf(w->rels[w->n].file, sizeof(w->rels[w->n].file), "%s/raw/relations/%s___%s___%s/edge.csv.gz", dir,
			 src, rel, dst);
		w->rels[w->n].r = (uint32_t)r;
		w->rels[w->n++].rev = b;
	}
	if (f != NULL)
		pclose(f);
	if ((uint32_t)w->n + reverses != s->num_rels)
		FAIL("meta.json has %u relations, the raw files give %d forward and %u reverse", s->num_rels, w->n, reverses);
	for (uint32_t t = 0; t < s->num_types; t++) {
		snprintf(w->feat[t], sizeof(w->feat[t]), "%s/raw/node-feat/%s/node-feat.csv.gz", dir, s->types[t].name);
		if ((access(w->feat[t], R_OK) == 0) != (s->types[t].feat_dim > 0))
			FAIL("node type %s: feat_dim %u, but the raw feature file is %s", s->types[t].name,
			     s->types[t].feat_dim, s->types[t].feat_dim ? "missing" : "there");
		if (access(w->feat[t], R_OK) != 0)
			w->feat[t][0] = '\0';
	}
	snprintf(w->label, sizeof(w->label), "%s/raw/node-label/%s/node-label.csv.gz", dir, s->types[s->label_type].name);
	snprintf(w->split, sizeof(w->split), "%s/split/%s/%s", dir, split, s->types[s->label_type].name);
}

/* Each relation's raw edges (both ways unless directed; no self-loop of a
 * relation from a type to itself) against the partitions'. */
static void check_raw_edges(const struct out *o, const struct raw *w)
{
	uint32_t R = o->s->num_rels;
	uint64_t *want[GNN_MAX_RELS];
	size_t n[GNN_MAX_RELS] = { 0 }, cap[GNN_MAX_RELS], total = 0;
	int64_t bad = 0;

	for (uint32_t r = 0; r < R; r++)
		want[r] = malloc((cap[r] = 1 << 10) * sizeof(**want));
	for (int k = 0; k < w->n; k++) {
		const struct gnn_rel *re = &o->s->rels[w->rels[k].r];
		FILE *f = zopen(w->rels[k].file);
		long long u, v;

		while (f != NULL && fscanf(f, "%lld,%lld", &u, &v) == 2) {
			uint32_t side[2] = { w->rels[k].r, (uint32_t)w->rels[k].rev };

			if (re->src == re->dst && u == v)
				continue;
			for (int d = 0; d < (w->rels[k].rev >= 0 ? 2 : 1); d++) {
				uint32_t r = side[d];

				if (n[r] == cap[r])
					want[r] = realloc(want[r], (cap[r] *= 2) * sizeof(**want));
				want[r][n[r]++] = d == 0 ? (uint64_t)v << 32 | (uint64_t)u : (uint64_t)u << 32 | (uint64_t)v;
			}
		}
		if (f != NULL)
			pclose(f);
	}
	for (uint32_t r = 0; r < R; r++) {
		n[r] = sort_unique(want[r], n[r]);
		if (n[r] != o->nkeys[r] || memcmp(want[r], o->keys[r], n[r] * sizeof(**want)) != 0) {
			FAIL("relation %s: edge set differs from the raw edges: raw=%zu partitions=%zu", o->s->rels[r].name,
			     n[r], o->nkeys[r]);
			bad++;
		}
		total += n[r];
		free(want[r]);
	}
	if (!bad)
		printf("raw_edges_equal=%zu relations=%u\n", total, R);
}

/* The labels (integers, nan = none) of the label type, in per-type order. */
static void check_raw_labels(const struct out *o, const struct raw *w)
{
	uint32_t t = o->s->label_type;
	int64_t mismatched = 0, n = o->s->types[t].num_nodes;
	FILE *f = zopen(w->label);
	char word[64];

	for (int64_t v = 0; f != NULL && v < n; v++) {
		int64_t g = node_of(o, t, v);
		const struct gnn_part *p = part_of(o, g);
		double x;

		if (fscanf(f, "%63s", word) != 1) {
			mismatched += n - v;
			break;
		}
		x = strtod(word, NULL);
		mismatched += p->labels[g - p->node_start] != (isnan(x) ? -1 : (int64_t)x);
	}
	if (f != NULL)
		pclose(f);
	if (mismatched)
		FAIL("%" PRId64 " labels differ from the raw file", mismatched);
	else
		printf("raw_labels_equal=%" PRId64 "\n", n);
}

/* The normalisation meta.json records for type t: 'n'one (also when
 * absent: outputs from before --feat-norm), 'r'ow or 's'tandard. */
static char norm_of(const struct out *o, uint32_t t)
{
	const char *m = json_string_value(json_object_get(json_array_get(json_object_get(o->m.json, "node_types"), t),
							  "feat_norm"));

	return m == NULL || strcmp(m, "none") == 0 ? 'n' : m[0];
}

/* One raw row of dim floats from f (a comma-separated line). */
static bool read_row(FILE *f, uint32_t dim, double *x)
{
	float v;

	for (uint32_t j = 0; j < dim; j++) {
		if (fscanf(f, j ? ",%f" : "%f", &v) != 1)
			return false;
		x[j] = v;
	}
	return true;
}

/* standard's column statistics from a first pass over the raw file: the
 * mean and the population sd, sd 0 for a column of one value. */
static void raw_column_stats(const char *file, uint32_t dim, int64_t n, double *mean, double *sd)
{
	double *x = malloc(dim * sizeof(*x)), *lo = malloc(dim * sizeof(*lo)), *hi = malloc(dim * sizeof(*hi));
	double *sq = calloc(dim, sizeof(*sq));
	FILE *f = zopen(file);

	memset(mean, 0, dim * sizeof(*mean));
	for (int64_t v = 0; f != NULL && v < n && read_row(f, dim, x); v++)
		for (uint32_t j = 0; j < dim; j++) {
			mean[j] += x[j];
			sq[j] += x[j] * x[j];
			lo[j] = v == 0 || x[j] < lo[j] ? x[j] : lo[j];
			hi[j] = v == 0 || x[j] > hi[j] ? x[j] : hi[j];
		}
	if (f != NULL)
		pclose(f);
	for (uint32_t j = 0; j < dim; j++) {
		mean[j] /= (double)(n > 0 ? n : 1);
		sd[j] = n > 0 && lo[j] != hi[j] ? sqrt(fmax(sq[j] / (double)n - mean[j] * mean[j], 0.0)) : 0.0;
	}
	free(x);
	free(lo);
	free(hi);
	free(sq);
}

/* Row x normalised as mode says, in place (what the output should hold). */
static void normalise(char mode, uint32_t dim, double *x, const double *mean, const double *sd)
{
	double sum = 0.0;

	for (uint32_t j = 0; mode == 'r' && j < dim; j++)
		sum += x[j];
	for (uint32_t j = 0; j < dim; j++)
		if (mode == 'r' && sum != 0.0)
			x[j] /= sum;
		else if (mode == 's')
			x[j] = sd[j] > 0.0 ? (x[j] - mean[j]) / sd[j] : 0.0;
}

/* Each type's features: every parsed float exactly, or, where meta.json
 * records a normalisation, the raw row normalised here (independently of
 * the partitioner's code) within float rounding. */
static void check_raw_features(const struct out *o, const struct raw *w)
{
	int64_t mismatched = 0, rows = 0;

	for (uint32_t t = 0; t < o->s->num_types; t++) {
		uint32_t dim = o->s->types[t].feat_dim;
		int64_t n = o->s->types[t].num_nodes;
		char mode = norm_of(o, t);
		double *x = malloc((dim + 1) * sizeof(*x)), *mean = malloc((dim + 1) * sizeof(*mean));
		double *sd = malloc((dim + 1) * sizeof(*sd));
		FILE *f;

		if (w->feat[t][0] && mode == 's')
			raw_column_stats(w->feat[t], dim, n, mean, sd);
		f = w->feat[t][0] ? zopen(w->feat[t]) : NULL;
		for (int64_t v = 0; f != NULL && v < n; v++, rows++) {
			int64_t g = node_of(o, t, v);
			uint32_t got_dim;
			const float *row = gnn_part_feat_row(part_of(o, g), g, &got_dim);

			if (row == NULL || got_dim != dim || !read_row(f, dim, x)) {
				mismatched++;
				continue;
			}
			normalise(mode, dim, x, mean, sd);
			for (uint32_t j = 0; j < dim; j++)
				if (mode == 'n' ? (float)x[j] != row[j] : fabs(x[j] - row[j]) > 1e-6 + 1e-5 * fabs(x[j])) {
					mismatched++;
					break;
				}
		}
		if (f != NULL)
			pclose(f);
		free(x);
		free(mean);
		free(sd);
	}
	if (mismatched)
		FAIL("%" PRId64 " feature rows differ from the raw files", mismatched);
	else
		printf("raw_features_equal=%" PRId64 "\n", rows);
}

/* Split: every listed node has that code, and the counts match. */
static void check_raw_split(const struct out *o, const struct raw *w)
{
	static const char *const files[4] = { NULL, "train.csv.gz", "valid.csv.gz", "test.csv.gz" };
	int64_t mismatched = 0;
	char path[4600];

	for (int s = 1; s <= 3; s++) {
		int64_t listed = 0, coded = 0;
		long long v;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", w->split, files[s]);
		f = zopen(path);
		while (f != NULL && fscanf(f, "%lld", &v) == 1) {
			int64_t g = node_of(o, o->s->label_type, v);
			const struct gnn_part *p;

			listed++;
			if (g < 0) {
				mismatched++;
				continue;
			}
			p = part_of(o, g);
			mismatched += p->split[g - p->node_start] != s;
		}
		if (f != NULL)
			pclose(f);
		for (uint32_t q = 0; q < o->l->num_parts; q++)
			for (int64_t i = 0; i < o->parts[q].num_nodes; i++)
				coded += o->parts[q].split[i] == s;
		mismatched += listed != coded;
	}
	if (mismatched)
		FAIL("split membership differs from the raw split files (%" PRId64 ")", mismatched);
	else
		printf("raw_split_equal=1\n");
}

static void check_raw(const struct out *o, const char *dir, const char *split, bool directed)
{
	struct raw *w = calloc(1, sizeof(*w));
	char path[4400];

	snprintf(path, sizeof(path), "%s/raw/num-node-dict.csv.gz", dir);
	if (access(path, R_OK) == 0)
		raw_hetero(dir, split, directed, o->s, w);
	else
		raw_plain(dir, split, directed, w);
	check_raw_edges(o, w);
	check_raw_labels(o, w);
	check_raw_features(o, w);
	check_raw_split(o, w);
	free(w);
}

/* Opens meta.json, every partition (verified) and node-map.arr. */
static int open_output(const char *dir, struct out *o, struct gnn_arr *map_arr)
{
	char path[4200];

	if (gnn_meta_load(dir, &o->m) != GNN_OK) {
		printf("partcheck: FAIL meta.json does not load\n");
		return 1;
	}
	o->l = &o->m.layout;
	o->s = o->l->schema;
	o->parts = calloc((size_t)o->l->num_parts, sizeof(*o->parts));
	for (int32_t p = 0; p < (int32_t)o->l->num_parts; p++) {
		if (gnn_part_open(dir, &o->m, p, GNN_PART_VERIFY, &o->parts[p]) != GNN_OK) {
			printf("partcheck: FAIL partition %d does not open and verify\n", p);
			return 1;
		}
	}
	snprintf(path, sizeof(path), "%s/node-map.arr", dir);
	if (gnn_arr_open(path, GNN_DT_I64, GNN_ARR_VERIFY, map_arr) != GNN_OK ||
	    map_arr->info.rows != (uint64_t)o->l->num_nodes) {
		printf("partcheck: FAIL node-map.arr missing or of the wrong size\n");
		return 1;
	}
	o->map = map_arr->data;
	return 0;
}

/* Every partition's edges, each relation's count and the edge cut. */
static void check_edges(struct out *o, int64_t *cut, int64_t *train)
{
	for (uint32_t r = 0; r < o->s->num_rels; r++)
		o->keys[r] = malloc(((size_t)o->s->rels[r].num_edges + 1) * sizeof(**o->keys));
	for (int32_t p = 0; p < (int32_t)o->l->num_parts; p++)
		*cut += check_part(o, p, train);
	for (uint32_t r = 0; r < o->s->num_rels; r++) {
		if ((int64_t)o->nkeys[r] != o->s->rels[r].num_edges) {
			FAIL("relation %s: partitions hold %zu edges, meta.json says %" PRId64, o->s->rels[r].name,
			     o->nkeys[r], o->s->rels[r].num_edges);
			o->nkeys[r] = 0;
		} else if (sort_unique(o->keys[r], o->nkeys[r]) != o->nkeys[r]) {
			FAIL("relation %s: duplicate edges across partitions", o->s->rels[r].name);
		}
	}
	if (*cut != json_integer_value(json_object_get(o->m.json, "edge_cut")))
		FAIL("recomputed edge_cut %" PRId64 " differs from meta.json", *cut);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *raw = NULL, *split = NULL;
	bool directed = false;
	struct out o = { 0 };
	struct gnn_arr map_arr = { 0 };
	int64_t cut = 0, train_max = 0, train_sum = 0;

	gnn_log_init("partcheck");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--raw") == 0 && i + 1 < argc)
			raw = argv[++i];
		else if (strcmp(argv[i], "--split") == 0 && i + 1 < argc)
			split = argv[++i];
		else if (strcmp(argv[i], "--directed") == 0)
			directed = true;
		else if (dir == NULL && argv[i][0] != '-')
			dir = argv[i];
		else {
			fprintf(stderr, "usage: partcheck DIR [--raw OGBDIR [--split NAME] [--directed]]\n");
			return 2;
		}
	}
	if (dir == NULL || (raw != NULL && split == NULL)) {
		fprintf(stderr, "usage: partcheck DIR [--raw OGBDIR --split NAME [--directed]]\n");
		return 2;
	}
	if (open_output(dir, &o, &map_arr) != 0)
		return 1;
	check_map(&o);
	check_edges(&o, &cut, &train_sum);
	for (uint32_t p = 0; p < o.l->num_parts; p++) {
		int64_t t = 0;

		for (int64_t i = 0; i < o.parts[p].num_nodes; i++)
			t += o.parts[p].split[i] == GNN_SPLIT_TRAIN;
		train_max = t > train_max ? t : train_max;
	}
	if (o.m.symmetric)
		check_symmetric(&o);
	if (raw != NULL && failures == 0)
		check_raw(&o, raw, split, directed);
	printf("nodes=%" PRId64 " edges=%" PRId64 " types=%u relations=%u parts=%" PRIu32 " edge_cut=%" PRId64
	       " train_max_over_mean=%.4f\n",
	       o.l->num_nodes, o.l->num_edges, o.s->num_types, o.s->num_rels, o.l->num_parts, cut,
	       train_sum ? (double)train_max * o.l->num_parts / (double)train_sum : 1.0);
	for (int32_t p = 0; p < (int32_t)o.l->num_parts; p++)
		gnn_part_close(&o.parts[p]);
	free(o.parts);
	for (uint32_t r = 0; r < o.s->num_rels; r++)
		free(o.keys[r]);
	free(o.inv);
	gnn_arr_close(&map_arr);
	gnn_meta_free(&o.m);
	if (failures)
		return 1;
	printf("partcheck: ok\n");
	return 0;
}
