/* gscheck - checks gnn-cli's answers from a graph store against the
 * partition files themselves (read through libcommon/part.h, independently
 * of the graph store's code):
 *
 *   gscheck DIR sample   FILE   neighbours are true in-neighbours, no
 *                               duplicates, min(degree, fanout) of them,
 *                               and exactly gnn_sample_choose's pick for
 *                               the reply's seed
 *   gscheck DIR features FILE   rows equal the feature files (feat-<type>.arr) bit for bit
 *   gscheck DIR labels   FILE   labels equal label.arr
 *   gscheck DIR split    FILE   split names equal split.arr
 *   gscheck DIR nodes    FILE --part P
 *                               the IDs are exactly partition P's nodes of
 *                               the reply's split, in ID order
 *
 * FILE is the JSON document gnn-cli printed. Prints "gscheck: ok ..." or
 * "gscheck: FAIL ..." lines and exits 0 or 1. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "part.h"
#include "sample.h"

#define MAX_PARTS 1024 /* partitions gscheck opens at most */

static int failures;

#define FAIL(...)                                       \
	do {                                            \
		if (failures++ < 20) {                  \
			printf("gscheck: FAIL " __VA_ARGS__); \
			printf("\n");                   \
		}                                       \
	} while (0)

static struct gnn_meta meta;
static struct gnn_part parts[MAX_PARTS];

/* The opened partition owning node v (opened on first use), or NULL. */
static const struct gnn_part *part_of(const char *dir, int64_t v)
{
	int32_t p = gnn_layout_owner(&meta.layout, v);

	if (p < 0 || p >= MAX_PARTS)
		return NULL;
	if (parts[p].indptr == NULL && gnn_part_open(dir, &meta, p, 0, &parts[p]) != GNN_OK)
		return NULL;
	return &parts[p];
}

static const char *const split_names[] = { "none", "train", "valid", "test" };

/* Fanout of relation r in the reply's "fanout" (a number: every relation). */
static int32_t fanout_of(json_t *doc, uint32_t r)
{
	json_t *f = json_object_get(doc, "fanout");

	return (int32_t)json_integer_value(json_is_array(f) ? json_array_get(f, r) : f);
}

/* Node v's sampled neighbours under relation r (the entries of got whose
 * relation, rels[j] or 0 without "relations", is r) against its stored
 * list: the count, true in-neighbours, distinct, gnn_sample_choose's pick. */
static void check_sample_rel(const struct gnn_part *pt, int64_t v, uint32_t r, int32_t fanout, uint64_t seed,
			     json_t *got, json_t *rels, size_t *items)
{
	int64_t row = (v - pt->node_start) * pt->num_rels + r, deg = pt->indptr[row + 1] - pt->indptr[row];
	const int64_t *adj = pt->indices + pt->indptr[row];
	uint32_t *pos = malloc(sizeof(uint32_t) * (size_t)(deg > 0 ? deg : 1));
	int64_t mine[4096];
	size_t n = 0, want = fanout == 0 ? 0 : (fanout < 0 || deg <= fanout) ? (size_t)deg : (size_t)fanout;

	for (size_t j = 0; j < json_array_size(got); j++)
		if ((rels == NULL ? 0 : json_integer_value(json_array_get(rels, j))) == r && n < 4096)
			mine[n++] = json_integer_value(json_array_get(got, j));
	if (n != want) {
		FAIL("sample: node %lld relation %u degree %lld fanout %d: %zu neighbours, want %zu", (long long)v, r,
		     (long long)deg, fanout, n, want);
		free(pos);
		return;
	}
	for (size_t j = 0; j < n; j++) {
		bool found = false;

		for (int64_t e = 0; e < deg && !found; e++)
			found = adj[e] == mine[j];
		if (!found)
			FAIL("sample: %lld is not an in-neighbour of %lld under relation %u", (long long)mine[j],
			     (long long)v, r);
		for (size_t k = 0; k < j; k++)
			if (mine[k] == mine[j])
				FAIL("sample: node %lld: neighbour %lld twice", (long long)v, (long long)mine[j]);
	}
	/* The rule every component shares: positions from gnn_sample_choose. */
	if (fanout > 0 && deg > fanout) {
		uint32_t k = gnn_sample_choose(gnn_sample_rel_seed(seed, r), v, (uint32_t)deg, fanout, pos);

		for (uint32_t j = 0; j < k; j++)
			if (mine[j] != adj[pos[j]]) {
				FAIL("sample: node %lld relation %u seed %llu: not gnn_sample_choose's pick", (long long)v, r,
				     (unsigned long long)seed);
				break;
			}
	}
	*items += n;
	free(pos);
}

static void check_sample(const char *dir, json_t *doc, size_t *items)
{
	json_t *nodes = json_object_get(doc, "nodes"), *lists = json_object_get(doc, "neighbours");
	json_t *rels = json_object_get(doc, "relations");
	uint64_t seed = (uint64_t)json_integer_value(json_object_get(doc, "seed"));
	uint32_t R = meta.layout.schema->num_rels;

	if (json_array_size(nodes) != json_array_size(lists) || (R > 1 && json_array_size(rels) != json_array_size(nodes))) {
		FAIL("sample: nodes, neighbours and relations differ in length");
		return;
	}
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		int64_t v = json_integer_value(json_array_get(nodes, i));
		const struct gnn_part *pt = part_of(dir, v);

		if (pt == NULL) {
			FAIL("sample: node %lld not in the graph", (long long)v);
			continue;
		}
		for (uint32_t r = 0; r < R; r++)
			check_sample_rel(pt, v, r, fanout_of(doc, r), seed, json_array_get(lists, i),
					 R > 1 ? json_array_get(rels, i) : NULL, items);
	}
}

static void check_rows(const char *dir, const char *kind, json_t *doc, size_t *items)
{
	json_t *nodes = json_object_get(doc, "nodes");
	json_t *vals = json_object_get(doc, strcmp(kind, "labels") == 0 ? "labels" : kind);

	if (json_array_size(nodes) == 0 || json_array_size(nodes) != json_array_size(vals)) {
		FAIL("%s: nodes and values differ in length or are empty", kind);
		return;
	}
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		int64_t v = json_integer_value(json_array_get(nodes, i));
		const struct gnn_part *pt = part_of(dir, v);
		json_t *x = json_array_get(vals, i);
		int64_t r;

		if (pt == NULL) {
			FAIL("%s: node %lld not in the graph", kind, (long long)v);
			continue;
		}
		r = v - pt->node_start;
		if (strcmp(kind, "features") == 0) {
			uint32_t dim;
			const float *row = gnn_part_feat_row(pt, v, &dim);

			if (json_array_size(x) != (size_t)dim) {
				FAIL("features: node %lld has %zu values, want %u", (long long)v, json_array_size(x), dim);
				continue;
			}
			for (uint32_t k = 0; k < dim; k++)
				if ((float)json_number_value(json_array_get(x, (size_t)k)) != row[k]) {
					FAIL("features: node %lld column %d: %.9g, file has %.9g", (long long)v, k,
					     json_number_value(json_array_get(x, (size_t)k)), row[k]);
					break;
				}
		} else if (strcmp(kind, "labels") == 0) {
			if (!json_is_integer(x) || json_integer_value(x) != pt->labels[r])
				FAIL("labels: node %lld: %lld, file has %d", (long long)v, (long long)json_integer_value(x),
				     pt->labels[r]);
		} else {
			const char *s = json_string_value(x);

			if (s == NULL || strcmp(s, split_names[pt->split[r] & 3]) != 0)
				FAIL("split: node %lld: %s, file has %s", (long long)v, s ? s : "?",
				     split_names[pt->split[r] & 3]);
		}
		(*items)++;
	}
}

static void check_nodes(const char *dir, json_t *doc, int32_t p, size_t *items)
{
	json_t *nodes = json_object_get(doc, "nodes");
	const char *split = json_string_value(json_object_get(doc, "split"));
	const struct gnn_part *pt;
	size_t at = 0;
	int code = -1;

	for (int i = 0; i < 4; i++)
		if (split != NULL && strcmp(split, split_names[i]) == 0)
			code = i;
	if (p < 0 || p >= (int32_t)meta.layout.num_parts || code < 0 ||
	    (pt = part_of(dir, meta.offsets[p])) == NULL) {
		FAIL("nodes: need --part P and a reply with a split name");
		return;
	}
	for (int64_t r = 0; r < pt->num_nodes; r++) {
		if (pt->split[r] != code)
			continue;
		if (at >= json_array_size(nodes) ||
		    json_integer_value(json_array_get(nodes, at)) != pt->node_start + r) {
			FAIL("nodes: entry %zu should be %lld", at, (long long)(pt->node_start + r));
			return;
		}
		at++;
	}
	if (at != json_array_size(nodes))
		FAIL("nodes: %zu IDs, partition %d has %zu %s nodes", json_array_size(nodes), p, at, split);
	*items = at;
}

int main(int argc, char **argv)
{
	json_error_t e;
	json_t *doc;
	size_t items = 0;
	int32_t part = -1;

	gnn_log_init("gscheck");
	if (argc < 4) {
		fprintf(stderr, "usage: gscheck DIR sample|features|labels|split|nodes FILE [--part P]\n");
		return 2;
	}
	if (argc == 6 && strcmp(argv[4], "--part") == 0)
		part = atoi(argv[5]);
	if (gnn_meta_load(argv[1], &meta) != GNN_OK) {
		printf("gscheck: FAIL cannot load %s/meta.json\n", argv[1]);
		return 1;
	}
	if (meta.layout.num_parts > MAX_PARTS) {
		printf("gscheck: FAIL more than %d partitions\n", MAX_PARTS);
		return 1;
	}
	doc = json_load_file(argv[3], 0, &e);
	if (doc == NULL) {
		printf("gscheck: FAIL %s: not JSON: %s (line %d)\n", argv[3], e.text, e.line);
		return 1;
	}
	if (strcmp(argv[2], "sample") == 0)
		check_sample(argv[1], doc, &items);
	else if (strcmp(argv[2], "features") == 0 || strcmp(argv[2], "labels") == 0 ||
		 strcmp(argv[2], "split") == 0)
		check_rows(argv[1], argv[2], doc, &items);
	else if (strcmp(argv[2], "nodes") == 0)
		check_nodes(argv[1], doc, part, &items);
	else
		FAIL("unknown check %s", argv[2]);
	if (failures == 0)
		printf("gscheck: ok %s items=%zu\n", argv[2], items);
	json_decref(doc);
	for (int32_t p = 0; p < (int32_t)meta.layout.num_parts; p++)
		if (parts[p].indptr != NULL)
			gnn_part_close(&parts[p]);
	gnn_meta_free(&meta);
	return failures ? 1 : 0;
}
