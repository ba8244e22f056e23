/* partcheck - verifies a gnn-partition output, independently of the
 * partitioner's code: it reads the output through libcommon/part.h and, with
 * --raw, the original OGB files through zcat, and checks
 *   - every file's checksum and contents (GNN_PART_VERIFY),
 *   - node-map.arr is a permutation, so every node is in exactly one partition,
 *   - rows sorted, no duplicates or self-loops, symmetric when meta says so,
 *   - meta.json's per-partition counts and edge_cut equal the recomputed ones,
 *   - with --raw: the edge set (through the ID map), features, labels and
 *     split membership equal the raw files'.
 * Prints key=value statistics and "partcheck: ok", or "partcheck: FAIL ..."
 * and exits 1. Usage: partcheck DIR [--raw OGBDIR [--split NAME] [--directed]] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static FILE *zopen(const char *dir, const char *name)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "zcat -f '%s/%s'", dir, name);
	return popen(cmd, "r");
}

/* Returns the (dst << 32 | src) keys of the raw edge list, as stored after
 * import: both directions unless directed, no self-loops, sorted, unique. */
static uint64_t *raw_edges(const char *raw, bool directed, size_t *n_out)
{
	size_t cap = 1 << 16, n = 0;
	uint64_t *k = malloc(cap * sizeof(*k));
	long long u, v;
	FILE *f = zopen(raw, "edge.csv.gz");

	while (f != NULL && fscanf(f, "%lld,%lld", &u, &v) == 2) {
		if (n + 2 > cap)
			k = realloc(k, (cap *= 2) * sizeof(*k));
		if (u == v)
			continue;
		k[n++] = (uint64_t)v << 32 | (uint64_t)u;
		if (!directed)
			k[n++] = (uint64_t)u << 32 | (uint64_t)v;
	}
	if (f != NULL)
		pclose(f);
	*n_out = sort_unique(k, n);
	return k;
}

static void check_raw(const char *raw, const char *splitdir, bool directed, const struct gnn_meta *m,
		      struct gnn_part *parts, const int64_t *map, const uint64_t *got, size_t n_got)
{
	size_t n_want;
	uint64_t *want = raw_edges(raw, directed, &n_want);
	int64_t *inv = malloc((size_t)m->layout.num_nodes * sizeof(*inv));
	static const char *const split_files[4] = { NULL, "train.csv.gz", "valid.csv.gz", "test.csv.gz" };
	int64_t mismatched = 0;
	FILE *f;

	if (n_want != n_got || memcmp(want, got, n_got * sizeof(*got)) != 0)
		FAIL("edge set differs from the raw edges: raw=%zu partitions=%zu", n_want, n_got);
	else
		printf("raw_edges_equal=%zu\n", n_got);
	free(want);
	for (int64_t g = 0; g < m->layout.num_nodes; g++)
		inv[map[g]] = g;

	/* Labels: one per line, in original order. */
	f = zopen(raw, "node-label.csv.gz");
	for (int64_t v = 0; f != NULL && v < m->layout.num_nodes; v++) {
		long long lab;
		int64_t g = inv[v];
		const struct gnn_part *p = &parts[gnn_layout_owner(&m->layout, g)];

		if (fscanf(f, "%lld", &lab) != 1 || p->labels[g - p->node_start] != lab)
			mismatched++;
	}
	if (f != NULL)
		pclose(f);
	if (mismatched)
		FAIL("%" PRId64 " labels differ from the raw file", mismatched);
	else
		printf("raw_labels_equal=%" PRId64 "\n", m->layout.num_nodes);

	/* Features: compare each parsed float exactly. */
	mismatched = 0;
	f = zopen(raw, "node-feat.csv.gz");
	for (int64_t v = 0; f != NULL && v < m->layout.num_nodes; v++) {
		int64_t g = inv[v];
		const struct gnn_part *p = &parts[gnn_layout_owner(&m->layout, g)];
		uint32_t dim;
		const float *row = gnn_part_feat_row(p, g, &dim);

		for (uint32_t j = 0; j < m->layout.feat_dim; j++) {
			float x;

			if (fscanf(f, j ? ",%f" : "%f", &x) != 1 || x != row[j]) {
				mismatched++;
				break;
			}
		}
	}
	if (f != NULL)
		pclose(f);
	if (mismatched)
		FAIL("%" PRId64 " feature rows differ from the raw file", mismatched);
	else
		printf("raw_features_equal=%" PRId64 "\n", m->layout.num_nodes);

	/* Split: every listed node has that code, and the counts match. */
	mismatched = 0;
	for (int s = 1; s <= 3; s++) {
		int64_t listed = 0, coded = 0;
		long long v;

		f = zopen(splitdir, split_files[s]);
		while (f != NULL && fscanf(f, "%lld", &v) == 1) {
			int64_t g = inv[v];
			const struct gnn_part *p = &parts[gnn_layout_owner(&m->layout, g)];

			listed++;
			mismatched += p->split[g - p->node_start] != s;
		}
		if (f != NULL)
			pclose(f);
		for (uint32_t q = 0; q < m->layout.num_parts; q++)
			for (int64_t i = 0; i < parts[q].num_nodes; i++)
				coded += parts[q].split[i] == s;
		mismatched += listed != coded;
	}
	if (mismatched)
		FAIL("split membership differs from the raw split files (%" PRId64 ")", mismatched);
	else
		printf("raw_split_equal=1\n");
	free(inv);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *raw = NULL, *split = NULL;
	bool directed = false;
	struct gnn_meta m;
	struct gnn_part *parts;
	struct gnn_arr map_arr;
	const int64_t *map;
	uint8_t *seen;
	uint64_t *keys;
	size_t nk = 0;
	int64_t cut = 0, train_max = 0, train_sum = 0;
	char path[4200], rawdir[4200], splitdir[4200];

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
	if (gnn_meta_load(dir, &m) != GNN_OK) {
		printf("partcheck: FAIL meta.json does not load\n");
		return 1;
	}
	parts = calloc((size_t)m.layout.num_parts, sizeof(*parts));
	for (int32_t p = 0; p < (int32_t)m.layout.num_parts; p++) {
		if (gnn_part_open(dir, &m, p, GNN_PART_VERIFY, &parts[p]) != GNN_OK) {
			printf("partcheck: FAIL partition %d does not open and verify\n", p);
			return 1;
		}
	}
	snprintf(path, sizeof(path), "%s/node-map.arr", dir);
	if (gnn_arr_open(path, GNN_DT_I64, GNN_ARR_VERIFY, &map_arr) != GNN_OK ||
	    map_arr.info.rows != (uint64_t)m.layout.num_nodes) {
		printf("partcheck: FAIL node-map.arr missing or of the wrong size\n");
		return 1;
	}
	map = map_arr.data;
	seen = calloc((size_t)m.layout.num_nodes, 1);
	for (int64_t g = 0; g < m.layout.num_nodes; g++) {
		if (map[g] < 0 || map[g] >= m.layout.num_nodes || seen[map[g]]++) {
			FAIL("node-map.arr is not a permutation (new ID %" PRId64 ")", g);
			break;
		}
	}
	free(seen);

	/* Edge keys in original IDs, per-partition counts against meta.json. */
	keys = malloc(((size_t)m.layout.num_edges + 1) * sizeof(*keys));
	for (int32_t p = 0; p < (int32_t)m.layout.num_parts; p++) {
		const struct gnn_part *q = &parts[p];
		json_t *po = json_array_get(json_object_get(m.json, "parts"), (size_t)p);
		int64_t counts[4] = { 0 }, remote = 0;

		for (int64_t i = 0; i < q->num_nodes; i++) {
			int64_t g = q->node_start + i;

			counts[q->split[i]]++;
			for (int64_t e = q->indptr[i]; e < q->indptr[i + 1]; e++) {
				int64_t u = q->indices[e];

				if (u == g || (e > q->indptr[i] && q->indices[e - 1] >= u)) {
					FAIL("partition %d row %" PRId64 " has a self-loop, duplicate or unsorted neighbour", p, i);
					break;
				}
				remote += gnn_layout_owner(&m.layout, u) != p;
				keys[nk++] = (uint64_t)map[g] << 32 | (uint64_t)map[u];
			}
		}
		cut += remote;
		train_sum += counts[GNN_SPLIT_TRAIN];
		if (counts[GNN_SPLIT_TRAIN] > train_max)
			train_max = counts[GNN_SPLIT_TRAIN];
		if (counts[1] != json_integer_value(json_object_get(po, "num_train")) ||
		    counts[2] != json_integer_value(json_object_get(po, "num_valid")) ||
		    counts[3] != json_integer_value(json_object_get(po, "num_test")) ||
		    remote != json_integer_value(json_object_get(po, "num_remote_edges")))
			FAIL("partition %d counts differ from meta.json", p);
	}
	if ((int64_t)nk != m.layout.num_edges)
		FAIL("partitions hold %zu edges, meta.json says %" PRId64, nk, m.layout.num_edges);
	if (cut != json_integer_value(json_object_get(m.json, "edge_cut")))
		FAIL("recomputed edge_cut %" PRId64 " differs from meta.json", cut);
	if (sort_unique(keys, nk) != nk)
		FAIL("duplicate edges across partitions");
	if (m.symmetric) {
		for (size_t i = 0; i < nk; i++) {
			uint64_t rev = keys[i] << 32 | keys[i] >> 32;

			if (bsearch(&rev, keys, nk, sizeof(*keys), cmp_u64) == NULL) {
				FAIL("meta.json says symmetric but edge %zu has no reverse", i);
				break;
			}
		}
	}
	if (raw != NULL) {
		snprintf(rawdir, sizeof(rawdir), "%s/raw", raw);
		snprintf(splitdir, sizeof(splitdir), "%s/split/%s", raw, split);
		check_raw(rawdir, splitdir, directed, &m, parts, map, keys, nk);
	}
	printf("nodes=%" PRId64 " edges=%" PRId64 " parts=%" PRIu32 " edge_cut=%" PRId64 " train_max_over_mean=%.4f\n",
	       m.layout.num_nodes, m.layout.num_edges, m.layout.num_parts, cut,
	       train_sum ? (double)train_max * m.layout.num_parts / (double)train_sum : 1.0);
	for (int32_t p = 0; p < (int32_t)m.layout.num_parts; p++)
		gnn_part_close(&parts[p]);
	free(parts);
	free(keys);
	gnn_arr_close(&map_arr);
	gnn_meta_free(&m);
	if (failures)
		return 1;
	printf("partcheck: ok\n");
	return 0;
}
