/* Unit tests of the partitioner's pieces: CSR building, partition methods,
 * and the OGB importer on ../shared/datasets/cora (skipped when absent). */
#include <stdlib.h>
#include <unistd.h>

#include "err.h"
#include "graph.h"
#include "import.h"
#include "log.h"
#include "partition.h"
#include "synth.h"
#include "testlib.h"

static int32_t *ints(int n, const int32_t *v)
{
	int32_t *p = malloc((size_t)n * sizeof(*p));

	memcpy(p, v, (size_t)n * sizeof(*p));
	return p;
}

static void test_csr_symmetrize_dedupe(void)
{
	/* 0-1 twice (once reversed), a self-loop 2-2, 1-3. */
	static const int32_t src[] = { 0, 1, 2, 1 }, dst[] = { 1, 0, 2, 3 };
	static const int64_t want_ptr[] = { 0, 1, 3, 3, 4 };
	static const int32_t want_idx[] = { 1, 0, 3, 1 };
	struct graph g = { 0 };

	if (!CHECK(graph_build_csr(&g, 4, ints(4, src), ints(4, dst), NULL, 4, true) == GNN_OK))
		return;
	CHECK(g.num_edges == 4 && g.symmetric);
	CHECK(memcmp(g.indptr, want_ptr, sizeof(want_ptr)) == 0);
	CHECK(memcmp(g.indices, want_idx, sizeof(want_idx)) == 0);
	graph_free(&g);
}

static void test_csr_directed(void)
{
	/* Edges u->v go into v's in-neighbour list. */
	static const int32_t src[] = { 0, 0, 2, 0 }, dst[] = { 1, 2, 1, 1 };
	static const int64_t want_ptr[] = { 0, 0, 2, 3 };
	static const int32_t want_idx[] = { 0, 2, 0 };
	struct graph g = { 0 };

	if (!CHECK(graph_build_csr(&g, 3, ints(4, src), ints(4, dst), NULL, 4, false) == GNN_OK))
		return;
	CHECK(g.num_edges == 3 && !g.symmetric);
	CHECK(memcmp(g.indptr, want_ptr, sizeof(want_ptr)) == 0);
	CHECK(memcmp(g.indices, want_idx, sizeof(want_idx)) == 0);
	graph_free(&g);
}

static int make_tiny(struct graph *g)
{
	struct synth_params p;

	if (synth_preset("tiny", 3, &p) != GNN_OK)
		return -1;
	return synth_generate(&p, g);
}

static void check_partition(const struct graph *g, const struct partition *pt, int32_t parts)
{
	int64_t *count = calloc((size_t)parts, sizeof(*count)), cut = 0;

	CHECK(pt->num_parts == parts && pt->offsets[0] == 0 && pt->offsets[parts] == g->num_nodes);
	for (int64_t v = 0; v < g->num_nodes; v++) {
		int32_t p = pt->part[v];

		count[p]++;
		/* new IDs of partition p lie in its range; the maps are inverse */
		CHECK(pt->new_id[v] >= pt->offsets[p] && pt->new_id[v] < pt->offsets[p + 1]);
		CHECK(pt->orig_id[pt->new_id[v]] == v);
		for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++)
			cut += pt->part[g->indices[e]] != p;
	}
	for (int32_t p = 0; p < parts; p++)
		CHECK(count[p] == pt->offsets[p + 1] - pt->offsets[p] && count[p] > 0);
	CHECK(cut == pt->edge_cut);
	free(count);
}

static void test_partition_methods(void)
{
	struct graph g = { 0 };
	struct partition metis = { 0 }, rnd = { 0 };
	int64_t train[8] = { 0 }, total = 0;

	if (!CHECK(make_tiny(&g) == GNN_OK))
		return;
	CHECK(partition_compute(&g, &(struct partition_opts){ 8, "random", 5, 1 << 30 }, &rnd) == GNN_OK);
	check_partition(&g, &rnd, 8);
	for (int64_t v = 0; v < g.num_nodes; v++) {
		if (g.split[v] == GNN_SPLIT_TRAIN) {
			train[rnd.part[v]]++;
			total++;
		}
	}
	for (int p = 0; p < 8; p++)  /* random deals training nodes exactly */
		CHECK(train[p] == total / 8 || train[p] == total / 8 + 1);
	CHECK(partition_compute(&g, &(struct partition_opts){ 8, "metis", 5, 1 << 30 }, &metis) == GNN_OK);
	check_partition(&g, &metis, 8);
	CHECK(metis.edge_cut < rnd.edge_cut);
	partition_free(&metis);
	partition_free(&rnd);
	/* Five communities: two parts can follow them, eight cannot. */
	CHECK(partition_compute(&g, &(struct partition_opts){ 2, "metis", 5, 1 << 30 }, &metis) == GNN_OK);
	CHECK(partition_compute(&g, &(struct partition_opts){ 2, "random", 5, 1 << 30 }, &rnd) == GNN_OK);
	printf("  tiny P=2 edge_cut metis=%lld random=%lld\n", (long long)metis.edge_cut, (long long)rnd.edge_cut);
	CHECK(metis.edge_cut * 2 < rnd.edge_cut);
	partition_free(&metis);
	CHECK(partition_compute(&g, &(struct partition_opts){ 1, "metis", 5, 1 << 30 }, &metis) == GNN_OK);
	CHECK(metis.edge_cut == 0 && metis.offsets[1] == g.num_nodes);
	partition_free(&metis);
	/* As many partitions as nodes: every partition gets one node. */
	CHECK(partition_compute(&g, &(struct partition_opts){ (int32_t)g.num_nodes, "random", 1, 1 << 30 }, &metis) == GNN_OK);
	check_partition(&g, &metis, (int32_t)g.num_nodes);
	partition_free(&metis);
	CHECK(partition_compute(&g, &(struct partition_opts){ (int32_t)g.num_nodes + 1, "metis", 1, 1 << 30 }, &metis) == GNN_EINVAL);
	CHECK(partition_compute(&g, &(struct partition_opts){ 2, "kmeans", 1, 1 << 30 }, &metis) == GNN_EINVAL);
	partition_free(&rnd);
	graph_free(&g);
}

/* Reads a gzip file's lines through zcat, independently of import.c. */
static FILE *zcat(const char *dir, const char *name)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "zcat '%s/%s'", dir, name);
	return popen(cmd, "r");
}

static void test_import_cora(void)
{
	const char *root = getenv("GNN_DATASETS");
	char dir[2048], raw[2100];
	struct import_opts o = { 0 };
	struct graph g = { 0 };
	char split[64];
	int64_t counts[4] = { 0 }, bad = 0;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/cora", root ? root : "../shared/datasets");
	snprintf(raw, sizeof(raw), "%s/raw", dir);
	if (access(raw, R_OK) != 0) {
		SKIP("reads ../shared/datasets/cora, which is absent");
		return;
	}
	o.dir = dir;
	if (!CHECK(import_ogb(&o, &g, split, sizeof(split)) == GNN_OK))
		return;
	CHECK(strcmp(split, "planetoid") == 0);
	CHECK(g.num_nodes == 2708 && g.num_edges == 10556 && g.feat_dim == 1433 && g.num_classes == 7);
	CHECK(g.symmetric);
	for (int64_t v = 0; v < g.num_nodes; v++)
		counts[g.split[v]]++;
	CHECK(counts[GNN_SPLIT_TRAIN] == 140 && counts[GNN_SPLIT_VALID] == 500 && counts[GNN_SPLIT_TEST] == 1000);

	f = zcat(raw, "node-label.csv.gz");
	for (int64_t v = 0; f != NULL && v < g.num_nodes; v++) {
		int lab;

		bad += fscanf(f, "%d", &lab) != 1 || lab != g.labels[v];
	}
	if (f != NULL)
		pclose(f);
	CHECK(bad == 0);
	f = zcat(raw, "node-feat.csv.gz");
	for (int64_t v = 0; f != NULL && v < g.num_nodes; v++) {
		for (int j = 0; j < g.feat_dim; j++) {
			float x;

			bad += fscanf(f, j ? ",%f" : "%f", &x) != 1 || x != g.feat[0][v * g.feat_dim + j];
		}
	}
	if (f != NULL)
		pclose(f);
	CHECK(bad == 0);
	/* Every input edge is present in both directions. */
	f = zcat(raw, "edge.csv.gz");
	for (int u, v; f != NULL && fscanf(f, "%d,%d", &u, &v) == 2;) {
		bool uv = false, vu = false;

		for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; e++)
			uv |= g.indices[e] == u;
		for (int64_t e = g.indptr[u]; e < g.indptr[u + 1]; e++)
			vu |= g.indices[e] == v;
		bad += !(uv && vu);
	}
	if (f != NULL)
		pclose(f);
	CHECK(bad == 0);

	graph_free(&g);
	o.keep_directed = true;
	CHECK(import_ogb(&o, &g, split, sizeof(split)) == GNN_OK && g.num_edges == 5278 && !g.symmetric);
	graph_free(&g);
}

int main(void)
{
	gnn_log_init("test_partitioner");
	gnn_log_set_level(GNN_LOG_WARN);
	RUN(test_csr_symmetrize_dedupe);
	RUN(test_csr_directed);
	RUN(test_partition_methods);
	RUN(test_import_cora);
	return t_done();
}
