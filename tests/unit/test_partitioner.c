/* Unit tests of the partitioner's pieces: CSR building (one relation and
 * several), partition methods, the OGB importer on ../shared/datasets/cora
 * (skipped when absent) and on tests/data/hetero-tiny (heterogeneous
 * layout), the importer's errors on broken copies of hetero-tiny, and the
 * link-prediction edge split (ratios, pairs, removal, negatives). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "edgesplit.h"
#include "err.h"
#include "graph.h"
#include "import.h"
#include "log.h"
#include "partition.h"
#include "synth.h"
#include "sys.h"
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
	struct pt_graph g = { 0 };

	if (!CHECK(pt_graph_build_csr(&g, 4, ints(4, src), ints(4, dst), NULL, 4, true) == GNN_OK))
		return;
	CHECK(g.num_edges == 4 && g.symmetric);
	CHECK(memcmp(g.indptr, want_ptr, sizeof(want_ptr)) == 0);
	CHECK(memcmp(g.indices, want_idx, sizeof(want_idx)) == 0);
	pt_graph_free(&g);
}

static void test_csr_directed(void)
{
	/* Edges u->v go into v's in-neighbour list. */
	static const int32_t src[] = { 0, 0, 2, 0 }, dst[] = { 1, 2, 1, 1 };
	static const int64_t want_ptr[] = { 0, 0, 2, 3 };
	static const int32_t want_idx[] = { 0, 2, 0 };
	struct pt_graph g = { 0 };

	if (!CHECK(pt_graph_build_csr(&g, 3, ints(4, src), ints(4, dst), NULL, 4, false) == GNN_OK))
		return;
	CHECK(g.num_edges == 3 && !g.symmetric);
	CHECK(memcmp(g.indptr, want_ptr, sizeof(want_ptr)) == 0);
	CHECK(memcmp(g.indices, want_idx, sizeof(want_idx)) == 0);
	pt_graph_free(&g);
}

static void test_csr_typed(void)
{
	/* 3 nodes, 2 relations: 0->1 in both (kept in each), 0->1 twice in
	 * relation 1 (once), 2->1 in 0, a self-loop 2->2 in 1 (dropped). */
	static const int32_t src[] = { 0, 0, 0, 2, 2 }, dst[] = { 1, 1, 1, 1, 2 };
	static const uint16_t rel[] = { 0, 1, 1, 0, 1 };
	static const int64_t want_ptr[] = { 0, 0, 0, 2, 3, 3, 3 };
	static const int32_t want_idx[] = { 0, 2, 0 };
	struct pt_graph g = { 0 };
	uint16_t *r = malloc(sizeof(rel));

	memcpy(r, rel, sizeof(rel));
	g.schema.num_rels = 2;
	if (!CHECK(pt_graph_build_csr(&g, 3, ints(5, src), ints(5, dst), r, 5, false) == GNN_OK))
		return;
	CHECK(g.num_edges == 3 && !g.symmetric);
	CHECK(memcmp(g.indptr, want_ptr, sizeof(want_ptr)) == 0);
	CHECK(memcmp(g.indices, want_idx, sizeof(want_idx)) == 0);
	CHECK(g.schema.rels[0].num_edges == 2 && g.schema.rels[1].num_edges == 1);
	CHECK(graph_row_begin(&g, 1) == 0 && graph_row_end(&g, 1) == 3);
	pt_graph_free(&g);
}

static int make_tiny(struct pt_graph *g)
{
	struct pt_synth_params p;

	if (pt_synth_preset("tiny", 3, &p) != GNN_OK)
		return -1;
	return pt_synth_generate(&p, g);
}

static void check_partition(const struct pt_graph *g, const struct pt_partition *pt, int32_t parts)
{
	int64_t *count = calloc((size_t)parts, sizeof(*count)), cut = 0;

	CHECK(pt->num_parts == parts && pt->offsets[0] == 0 && pt->offsets[parts] == g->num_nodes);
	for (int64_t v = 0; v < g->num_nodes; v++) {
		int32_t p = pt->part[v];

		count[p]++;
		/* new IDs of partition p lie in its range; the maps are inverse */
		CHECK(pt->new_id[v] >= pt->offsets[p] && pt->new_id[v] < pt->offsets[p + 1]);
		CHECK(pt->orig_id[pt->new_id[v]] == v);
		for (int64_t e = graph_row_begin(g, v); e < graph_row_end(g, v); e++)
			cut += pt->part[g->indices[e]] != p;
	}
	for (int32_t p = 0; p < parts; p++)
		CHECK(count[p] == pt->offsets[p + 1] - pt->offsets[p] && count[p] > 0);
	CHECK(cut == pt->edge_cut);
	free(count);
}

static void test_partition_methods(void)
{
	struct pt_graph g = { 0 };
	struct pt_partition metis = { 0 }, rnd = { 0 };
	int64_t train[8] = { 0 }, total = 0;

	if (!CHECK(make_tiny(&g) == GNN_OK))
		return;
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 8, "random", 5, 1 << 30 }, &rnd) == GNN_OK);
	check_partition(&g, &rnd, 8);
	for (int64_t v = 0; v < g.num_nodes; v++) {
		if (g.split[v] == GNN_SPLIT_TRAIN) {
			train[rnd.part[v]]++;
			total++;
		}
	}
	for (int p = 0; p < 8; p++)  /* random deals training nodes exactly */
		CHECK(train[p] == total / 8 || train[p] == total / 8 + 1);
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 8, "metis", 5, 1 << 30 }, &metis) == GNN_OK);
	check_partition(&g, &metis, 8);
	CHECK(metis.edge_cut < rnd.edge_cut);
	pt_partition_free(&metis);
	pt_partition_free(&rnd);
	/* Five communities: two parts can follow them, eight cannot. */
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 2, "metis", 5, 1 << 30 }, &metis) == GNN_OK);
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 2, "random", 5, 1 << 30 }, &rnd) == GNN_OK);
	printf("  tiny P=2 edge_cut metis=%lld random=%lld\n", (long long)metis.edge_cut, (long long)rnd.edge_cut);
	CHECK(metis.edge_cut * 2 < rnd.edge_cut);
	pt_partition_free(&metis);
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 1, "metis", 5, 1 << 30 }, &metis) == GNN_OK);
	CHECK(metis.edge_cut == 0 && metis.offsets[1] == g.num_nodes);
	pt_partition_free(&metis);
	/* As many partitions as nodes: every partition gets one node. */
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ (int32_t)g.num_nodes, "random", 1, 1 << 30 },
				   &metis) == GNN_OK);
	check_partition(&g, &metis, (int32_t)g.num_nodes);
	pt_partition_free(&metis);
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ (int32_t)g.num_nodes + 1, "metis", 1, 1 << 30 },
				   &metis) == GNN_EINVAL);
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 2, "kmeans", 1, 1 << 30 }, &metis) == GNN_EINVAL);
	pt_partition_free(&rnd);
	pt_graph_free(&g);
}

/* Reads a gzip file's lines through zcat, independently of import.c. */
static FILE *zcat(const char *dir, const char *name)
{
	char cmd[8400];

	snprintf(cmd, sizeof(cmd), "zcat '%s/%s'", dir, name);
	return popen(cmd, "r");
}

/* Feature values of type t that differ from the raw file DIR/NAME. */
static int64_t feature_mismatches(const struct pt_graph *g, uint32_t t, const char *dir, const char *name)
{
	int64_t bad = 0, d = g->schema.types[t].feat_dim;
	FILE *f = zcat(dir, name);

	for (int64_t v = 0; f != NULL && v < g->type_start[t + 1] - g->type_start[t]; v++) {
		for (int64_t j = 0; j < d; j++) {
			float x;

			bad += fscanf(f, j ? ",%f" : "%f", &x) != 1 || x != g->feat[t][v * d + j];
		}
	}
	if (f == NULL || pclose(f) != 0)
		bad++;
	return bad;
}

static void test_import_cora(void)
{
	const char *root = getenv("GNN_DATASETS");
	char dir[2048], raw[2100];
	struct pt_import_opts o = { 0 };
	struct pt_graph g = { 0 };
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
	if (!CHECK(pt_import_ogb(&o, &g, split, sizeof(split)) == GNN_OK))
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
	CHECK(feature_mismatches(&g, 0, raw, "node-feat.csv.gz") == 0);
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

	pt_graph_free(&g);
	o.keep_directed = true;
	CHECK(pt_import_ogb(&o, &g, split, sizeof(split)) == GNN_OK && g.num_edges == 5278 && !g.symmetric);
	pt_graph_free(&g);
}

/* ---- the heterogeneous layout: tests/data/hetero-tiny ---- */

/* tests/data/hetero-tiny of this checkout into path. */
static void hetero_tiny(char *path, size_t cap)
{
	const char *root = getenv("GNN_ROOT");

	snprintf(path, cap, "%s/tests/data/hetero-tiny", root ? root : ".");
}

/* Whether node v's row under relation r lists u. */
static bool row_has(const struct pt_graph *g, int64_t v, uint32_t r, int64_t u)
{
	int64_t R = g->schema.num_rels;

	if (v < 0 || v >= g->num_nodes || r >= g->schema.num_rels)
		return false;
	for (int64_t e = g->indptr[v * R + r]; e < g->indptr[v * R + r + 1]; e++)
		if (g->indices[e] == u)
			return true;
	return false;
}

/* Raw edges of relation folder rel (per-type IDs u of type src, v of type
 * dst) missing from relation fw's rows (u -> v) or, when rev >= 0, from
 * relation rev's (v -> u). */
static int64_t edges_missing(const struct pt_graph *g, const char *raw, const char *rel, uint32_t src, uint32_t dst,
			     uint32_t fw, int32_t rev)
{
	char dir[4200];
	int64_t bad = 0;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/relations/%s", raw, rel);
	f = zcat(dir, "edge.csv.gz");
	for (long long u, v; f != NULL && fscanf(f, "%lld,%lld", &u, &v) == 2;) {
		int64_t a = g->type_start[src] + u, b = g->type_start[dst] + v;

		if (a == b)
			continue;
		bad += !row_has(g, b, fw, a) || (rev >= 0 && !row_has(g, a, (uint32_t)rev, b));
	}
	if (f == NULL || pclose(f) != 0)
		bad++;
	return bad;
}

static void test_import_hetero(void)
{
	static const char *const rels[] = { "writes", "cites", "has_subject", "rev_writes", "rev_has_subject" };
	static const uint32_t src[] = { 0, 1, 1, 1, 2 }, dst[] = { 1, 1, 2, 0, 1 };
	static const int64_t edges[] = { 804, 1874, 320, 804, 320 };
	struct pt_import_opts o = { 0 };
	struct pt_graph g = { 0 };
	char dir[4096], raw[4200], split[64];
	int64_t counts[4] = { 0 }, other = 0;

	hetero_tiny(dir, sizeof(dir));
	snprintf(raw, sizeof(raw), "%s/raw", dir);
	o.dir = dir;
	if (!CHECK(pt_import_ogb(&o, &g, split, sizeof(split)) == GNN_OK))
		return;
	/* types in name order, though num-node-dict lists paper first */
	CHECK(strcmp(split, "random") == 0 && g.schema.num_types == 3 && g.schema.num_rels == 5);
	CHECK(strcmp(g.schema.types[0].name, "author") == 0 && strcmp(g.schema.types[1].name, "paper") == 0 &&
	      strcmp(g.schema.types[2].name, "subject") == 0);
	if (!CHECK(g.type_start[1] == 120 && g.type_start[2] == 440 && g.type_start[3] == 448 && g.num_nodes == 448))
		goto out;
	CHECK(g.schema.types[0].feat_dim == 8 && g.schema.types[1].feat_dim == 16 && g.schema.types[2].feat_dim == 0);
	CHECK(g.feat_dim == 16 && g.feat[2] == NULL && g.schema.label_type == 1 && g.num_classes == 4 && g.symmetric);
	for (uint32_t r = 0; r < 5; r++)
		CHECK(strcmp(g.schema.rels[r].name, rels[r]) == 0 && g.schema.rels[r].src == src[r] &&
		      g.schema.rels[r].dst == dst[r] && g.schema.rels[r].num_edges == edges[r]);
	CHECK(g.num_edges == 804 * 2 + 1874 + 320 * 2);
	/* every raw edge, through the per-type IDs, in its relation and its reverse */
	CHECK(edges_missing(&g, raw, "author___writes___paper", 0, 1, 0, 3) == 0);
	CHECK(edges_missing(&g, raw, "paper___cites___paper", 1, 1, 1, 1) == 0);
	CHECK(edges_missing(&g, raw, "paper___has_subject___subject", 1, 2, 2, 4) == 0);
	CHECK(feature_mismatches(&g, 0, raw, "node-feat/author/node-feat.csv.gz") == 0);
	CHECK(feature_mismatches(&g, 1, raw, "node-feat/paper/node-feat.csv.gz") == 0);
	for (int64_t v = 0; v < g.num_nodes; v++) {
		if (v >= 120 && v < 440)
			counts[g.split[v]]++;
		else
			other += g.labels[v] != -1 || g.split[v] != 0;
	}
	CHECK(other == 0 && counts[GNN_SPLIT_TRAIN] == 120 && counts[GNN_SPLIT_VALID] == 60 &&
	      counts[GNN_SPLIT_TEST] == 120);
out:
	pt_graph_free(&g);

	o.keep_directed = true;
	if (!CHECK(pt_import_ogb(&o, &g, split, sizeof(split)) == GNN_OK))
		return;
	CHECK(!g.symmetric && g.schema.num_rels == 3 && g.num_edges == 804 + 947 + 320);
	CHECK(edges_missing(&g, raw, "paper___cites___paper", 1, 1, 1, -1) == 0);
	CHECK(!row_has(&g, 120 + 12, 0, 120 + 12) && g.schema.rels[2].num_edges == 320);
	pt_graph_free(&g);
}

/* METIS and random on hetero-tiny: each (partition, type) range holds
 * exactly that partition's nodes of that type, in input order. */
static void test_partition_typed(void)
{
	struct pt_import_opts o = { 0 };
	struct pt_graph g = { 0 };
	struct pt_partition pt[2] = { 0 };
	char dir[4096], split[64];

	hetero_tiny(dir, sizeof(dir));
	o.dir = dir;
	if (!CHECK(pt_import_ogb(&o, &g, split, sizeof(split)) == GNN_OK))
		return;
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 3, "metis", 1, 1 << 30 }, &pt[0]) == GNN_OK);
	CHECK(pt_partition_compute(&g, &(struct pt_partition_opts){ 3, "random", 1, 1 << 30 }, &pt[1]) == GNN_OK);
	for (int k = 0; k < 2; k++) {
		int64_t bad = 0;

		check_partition(&g, &pt[k], 3);
		CHECK(pt[k].num_types == 3 && pt[k].type_offsets[0] == 0 && pt[k].type_offsets[9] == g.num_nodes);
		for (int64_t v = 0; v < g.num_nodes; v++) {
			uint32_t t = pt_graph_node_type(&g, v);
			const int64_t *to = pt[k].type_offsets + pt[k].part[v] * 3;

			bad += pt[k].new_id[v] < to[t] || pt[k].new_id[v] >= to[t + 1] ||
			       (v > g.type_start[t] && pt[k].part[v - 1] == pt[k].part[v] &&
				pt[k].new_id[v - 1] + 1 != pt[k].new_id[v]);
		}
		CHECK(bad == 0);
	}
	printf("  hetero-tiny P=3 edge_cut metis=%lld random=%lld\n", (long long)pt[0].edge_cut,
	       (long long)pt[1].edge_cut);
	CHECK(pt[0].edge_cut * 3 < pt[1].edge_cut * 2);
	pt_partition_free(&pt[0]);
	pt_partition_free(&pt[1]);
	pt_graph_free(&g);
}

/* ---- bad heterogeneous input: a broken copy of hetero-tiny each ---- */

/* One change to the copy: file REL (under the dataset) gets text as its
 * line LINE (0: text is the whole file, created with its folders). */
struct edit {
	const char *rel;
	int line;
	const char *text;
};

static bool gz_write(const char *path, const char *text)
{
	gzFile z = gzopen(path, "wb");
	bool ok = z != NULL && gzputs(z, text) >= 0;

	return z != NULL && gzclose(z) == Z_OK && ok;
}

/* Applies e to the dataset copy in dir. */
static bool apply_edit(const char *dir, const struct edit *e)
{
	char path[4400], line[1 << 16], *text = NULL;
	size_t len = 0;
	FILE *mem;
	gzFile z;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, e->rel);
	if (e->line == 0) {
		*strrchr(path, '/') = '\0';
		gnn_mkdir_p(path);
		snprintf(path, sizeof(path), "%s/%s", dir, e->rel);
		return gz_write(path, e->text);
	}
	if ((z = gzopen(path, "rb")) == NULL || (mem = open_memstream(&text, &len)) == NULL)
		return false;
	for (int k = 1; gzgets(z, line, sizeof(line)) != NULL; k++)
		fputs(k == e->line ? e->text : line, mem);
	gzclose(z);
	fclose(mem);
	ok = gz_write(path, text);
	free(text);
	return ok;
}

/* Imports a copy of hetero-tiny with the edits applied: the import must
 * fail, and its log must hold every string of want (NULL-terminated). */
static void bad_hetero(const struct edit *edits, int n, const char *const *want)
{
	char dir[] = "/tmp/gnn-test-hetero.XXXXXX", src[4096], cmd[8400], log[4200], buf[8192] = "";
	struct pt_import_opts o = { .dir = dir };
	struct pt_graph g = { 0 };
	int saved, fd, rc = GNN_OK;
	ssize_t got;

	hetero_tiny(src, sizeof(src));
	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'/", src, dir);
	if (!CHECK(system(cmd) == 0))
		goto out;
	for (int k = 0; k < n; k++)
		if (!CHECK(apply_edit(dir, &edits[k])))
			goto out;
	snprintf(log, sizeof(log), "%s/log", dir);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	fd = open(log, O_RDWR | O_CREAT | O_TRUNC, 0600);
	dup2(fd, STDERR_FILENO);
	rc = pt_import_ogb(&o, &g, cmd, sizeof(cmd));
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	got = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	CHECK(rc != GNN_OK);
	for (; *want != NULL; want++)
		if (!CHECK(strstr(buf, *want) != NULL))
			printf("  wanted \"%s\" in the log:\n%s\n", *want, buf);
out:
	pt_graph_free(&g);
	gnn_rm_rf(dir);
}

#define W(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define E(...) ((const struct edit[]){ __VA_ARGS__ }), (int)(sizeof((const struct edit[]){ __VA_ARGS__ }) / sizeof(struct edit))

/* One test per broken input: its edits and the strings its error must name. */
#define BAD_TEST(name, edits, want) \
	static void name(void) { bad_hetero(edits, want); }

BAD_TEST(test_bad_triplet_unknown_type, E({ "raw/triplet-type-list.csv.gz", 2, "paper,cites,journal\n" }),
	 W("triplet-type-list.csv.gz line=2 reason=\"relation names an unknown node type journal"))
BAD_TEST(test_bad_folder_unknown_type, E({ "raw/relations/journal___cites___paper/edge.csv.gz", 0, "0,1\n" }),
	 W("journal___cites___paper reason=\"relation folder names an unknown node type"))
BAD_TEST(test_bad_folder_without_triplet, E({ "raw/relations/paper___reviews___paper/edge.csv.gz", 0, "0,1\n" }),
	 W("paper___reviews___paper reason=\"relation folder without a line in triplet-type-list"))
BAD_TEST(test_bad_triplet_without_folder, E({ "raw/triplet-type-list.csv.gz", 3, "paper,has_subject,subject\npaper,reviews,paper\n" }),
	 W("triplet-type-list.csv.gz line=4 reason=\"no folder relations/paper___reviews___paper"))
BAD_TEST(test_bad_src_id_out_of_range, E({ "raw/relations/author___writes___paper/edge.csv.gz", 5, "120,3\n" }),
	 W("author___writes___paper/edge.csv.gz line=5 reason=\"node ID out of range [0, 120) for node type author (column 1)"))
BAD_TEST(test_bad_dst_id_out_of_range, E({ "raw/relations/paper___has_subject___subject/edge.csv.gz", 3, "2,8\n" }),
	 W("has_subject___subject/edge.csv.gz line=3 reason=\"node ID out of range [0, 8) for node type subject (column 2)"))
BAD_TEST(test_bad_ragged_features_short, E({ "raw/node-feat/author/node-feat.csv.gz", 4, "1,2,3,4,5,6,7\n" }),
	 W("node-feat/author/node-feat.csv.gz line=4 reason=\"expected 8 numeric columns (column 7)"))
BAD_TEST(test_bad_ragged_features_long, E({ "raw/node-feat/paper/node-feat.csv.gz", 9, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\n" }),
	 W("node-feat/paper/node-feat.csv.gz line=9 reason=\"expected 16 columns, found more"))
BAD_TEST(test_bad_labels_for_unlabelled_type, E({ "raw/node-label/author/node-label.csv.gz", 0, "1\n" }),
	 W("nodetype-has-label.csv.gz line=2 reason=\"node type author is marked False", "node-label/author holds"))
BAD_TEST(test_bad_split_for_type_without_split, E({ "split/random/subject/train.csv.gz", 0, "1\n" }),
	 W("nodetype-has-split.csv.gz line=2 reason=\"node type subject is marked False", "random/subject holds"))
BAD_TEST(test_bad_split_type_without_labels, E({ "split/random/nodetype-has-split.csv.gz", 2, "True,True,False\n" }, { "split/random/author/train.csv.gz", 0, "1\n" }),
	 W("nodetype-has-split.csv.gz line=2 reason=\"node type author has a split but no labels"))
BAD_TEST(test_bad_several_labelled_types, E({ "raw/nodetype-has-label.csv.gz", 2, "True,True,False\n" }, { "raw/node-label/author/node-label.csv.gz", 0, "1\n" }),
	 W("nodetype-has-label.csv.gz line=2 reason=\"several node types are marked True: exactly one labelled type is supported"))
BAD_TEST(test_bad_flag_value, E({ "raw/nodetype-has-label.csv.gz", 2, "True,false,False\n" }),
	 W("nodetype-has-label.csv.gz line=2 reason=\"node type author: expected True or False"))
BAD_TEST(test_bad_flag_unknown_type, E({ "split/random/nodetype-has-split.csv.gz", 1, "paper,journal,subject\n" }),
	 W("nodetype-has-split.csv.gz line=1 reason=\"node type journal is not in num-node-dict.csv"))
BAD_TEST(test_bad_node_counts_values, E({ "raw/num-node-dict.csv.gz", 2, "320,120\n" }),
	 W("num-node-dict.csv.gz line=2 reason=\"expected 3 values, one per node type of line 1"))
BAD_TEST(test_bad_node_counts_duplicate_type, E({ "raw/num-node-dict.csv.gz", 1, "paper,author,paper\n" }),
	 W("num-node-dict.csv.gz line=1 reason=\"node type paper appears twice"))
BAD_TEST(test_bad_edge_count, E({ "raw/relations/paper___cites___paper/num-edge-list.csv.gz", 1, "961\n" }),
	 W("paper___cites___paper/edge.csv.gz reason=\"edge count 962 differs from num-edge-list.csv (961)"))
BAD_TEST(test_bad_split_duplicate, E({ "split/random/paper/test.csv.gz", 1, "0\n" }, { "split/random/paper/train.csv.gz", 1, "0\n" }),
	 W("paper/test.csv.gz line=1 reason=\"node listed twice"))
/* paper 319's label is set to nan: the split lists it */
BAD_TEST(test_bad_split_unlabelled, E({ "raw/node-label/paper/node-label.csv.gz", 320, "nan\n" }),
	 W("reason=\"node in the split has no label (nan)"))
BAD_TEST(test_bad_split_id_out_of_range, E({ "split/random/paper/valid.csv.gz", 2, "320\n" }),
	 W("paper/valid.csv.gz line=2 reason=\"node ID out of range [0, 320) for node type paper"))

static void test_edge_split_ratios(void)
{
	static const char *const bad[] = { "0.8,0.1,0.2", "1.1,-0.2,0.1", "0.9,0.1", "0,0.5,0.5", "a,b,c",
					   "0.8,0.1,0.1,0", "0.8,0.1,0.1x", "", "nan,0,0" };
	double r[3];

	CHECK(pt_edge_split_parse_ratios("0.85,0.05,0.10", r) == GNN_OK && r[0] == 0.85 && r[1] == 0.05 &&
	      r[2] == 0.10);
	CHECK(pt_edge_split_parse_ratios("1,0,0", r) == GNN_OK);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(pt_edge_split_parse_ratios(bad[i], r) == GNN_EINVAL);
}

/* A one-type, one-relation graph of n nodes from m edges (symmetrised or
 * as given). */
static int plain_graph(struct pt_graph *g, int64_t n, const int32_t *src, const int32_t *dst, int m, bool sym)
{
	memset(g, 0, sizeof(*g));
	gnn_schema_plain(&g->schema, n, 0, 0);
	g->type_start[1] = n;
	return pt_graph_build_csr(g, n, ints(m, src), ints(m, dst), NULL, m, sym);
}

static bool stored(const struct pt_graph *g, int32_t u, int32_t v)
{
	for (int64_t k = g->indptr[v]; k < g->indptr[v + 1]; k++)
		if (g->indices[k] == u)
			return true;
	return false;
}

/* A ring of 30 nodes with chords i -> i+3, symmetrised: 60 pairs, 120
 * stored edges; half held out. */
static void test_edge_split_homogeneous(void)
{
	int32_t src[60], dst[60];
	struct pt_edge_split_opts o = { .ratios = { 0.5, 0.25, 0.25 }, .eval_negatives = 3, .seed = 7 };
	struct pt_graph g, full, again;
	struct pt_edge_split es = { 0 }, es2 = { 0 };

	for (int i = 0; i < 30; i++) {
		src[i] = src[30 + i] = i;
		dst[i] = (i + 1) % 30;
		dst[30 + i] = (i + 3) % 30;
	}
	if (!CHECK(plain_graph(&g, 30, src, dst, 60, true) == GNN_OK && plain_graph(&full, 30, src, dst, 60, true) == GNN_OK &&
		   plain_graph(&again, 30, src, dst, 60, true) == GNN_OK))
		return;
	if (!CHECK(pt_edge_split_apply(&g, &o, &es) == GNN_OK))
		goto out;
	CHECK(es.num_pairs == 60 && es.num_held[PT_ES_VALID] == 15 && es.num_held[PT_ES_TEST] == 15);
	CHECK(es.removed_edges == 60 && g.num_edges == 60 && g.schema.rels[0].num_edges == 60 && es.rev_rel == -1);
	CHECK(g.indptr[30] == 60);
	for (int s = 0; s < PT_ES_SETS; s++)
		for (int64_t k = 0; k < es.num_held[s]; k++) {
			int32_t u = es.pos[s][2 * k], v = es.pos[s][2 * k + 1], a = es.neg[s][2 * k], b = es.neg[s][2 * k + 1];

			CHECK(u < v && stored(&full, u, v));      /* an edge, stored once as u < v */
			CHECK(!stored(&g, u, v) && !stored(&g, v, u));  /* gone both ways */
			CHECK(a != b && !stored(&full, a, b));    /* a negative: no edge of the full graph */
			for (int64_t j = 0; j < es.k; j++) {
				int32_t d = es.neg_dst[s][k * es.k + j];

				CHECK(d != u && d >= 0 && d < 30 && !stored(&full, u, d));
			}
		}
	/* The same seed, the same split. */
	if (CHECK(pt_edge_split_apply(&again, &o, &es2) == GNN_OK))
		for (int s = 0; s < PT_ES_SETS; s++)
			CHECK(memcmp(es.pos[s], es2.pos[s], (size_t)es.num_held[s] * 8) == 0 &&
			      memcmp(es.neg[s], es2.neg[s], (size_t)es.num_held[s] * 8) == 0 &&
			      memcmp(es.neg_dst[s], es2.neg_dst[s], (size_t)es.num_held[s] * 12) == 0);
	CHECK(memcmp(g.indptr, again.indptr, 31 * sizeof(int64_t)) == 0 &&
	      memcmp(g.indices, again.indices, 60 * sizeof(int32_t)) == 0);
out:
	pt_edge_split_free(&es);
	pt_edge_split_free(&es2);
	pt_graph_free(&g);
	pt_graph_free(&full);
	pt_graph_free(&again);
}

/* Directed (--keep-directed): 0->1 and 1->0 are one pair, stored as (0, 1),
 * whose removal takes both; 2->3 and 1->2 one direction each. */
static void test_edge_split_directed(void)
{
	static const int32_t src[] = { 0, 1, 2, 1 }, dst[] = { 1, 0, 3, 2 };
	struct pt_edge_split_opts o = { .ratios = { 0.2, 0.4, 0.4 }, .eval_negatives = 1, .seed = 1 };
	struct pt_graph g, full;
	struct pt_edge_split es = { 0 };
	int64_t removed = 0;

	if (!CHECK(plain_graph(&g, 4, src, dst, 4, false) == GNN_OK && plain_graph(&full, 4, src, dst, 4, false) == GNN_OK))
		return;
	if (CHECK(pt_edge_split_apply(&g, &o, &es) == GNN_OK)) {
		CHECK(es.num_pairs == 3 && es.num_held[PT_ES_VALID] == 1 && es.num_held[PT_ES_TEST] == 1);
		for (int s = 0; s < PT_ES_SETS; s++) {
			int32_t u = es.pos[s][0], v = es.pos[s][1];

			CHECK(stored(&full, u, v) && !stored(&g, u, v) && !stored(&g, v, u));
			removed += 1 + stored(&full, v, u);
		}
		CHECK(es.removed_edges == removed && g.num_edges == 4 - removed);
	}
	pt_edge_split_free(&es);
	pt_graph_free(&g);
	pt_graph_free(&full);
}

/* Refusals leave the graph as it was: an unknown relation, too few pairs,
 * a complete graph (no room for negatives). */
static void test_edge_split_refusals(void)
{
	static const int32_t src[] = { 0, 0, 0, 0, 1, 1, 1, 2, 2, 3 }, dst[] = { 1, 2, 3, 4, 2, 3, 4, 3, 4, 4 };
	struct pt_edge_split_opts o = { .ratios = { 0.6, 0.2, 0.2 }, .eval_negatives = 1, .seed = 1 };
	struct pt_graph g;
	struct pt_edge_split es = { 0 };

	if (!CHECK(plain_graph(&g, 5, src, dst, 10, true) == GNN_OK))
		return;
	CHECK(pt_edge_split_apply(&g, &o, &es) == GNN_ERANGE);  /* K5: every pair an edge */
	pt_edge_split_free(&es);
	o.relation = "nosuch";
	CHECK(pt_edge_split_apply(&g, &o, &es) == GNN_EINVAL);
	pt_edge_split_free(&es);
	o.relation = NULL;
	o.ratios[0] = 0.98;
	o.ratios[1] = o.ratios[2] = 0.01;                     /* 10 pairs: no valid pair */
	CHECK(pt_edge_split_apply(&g, &o, &es) == GNN_ERANGE);
	pt_edge_split_free(&es);
	CHECK(g.num_edges == 20 && g.indptr[5] == 20);
	pt_graph_free(&g);
}

int main(void)
{
	gnn_log_init("test_partitioner");
	gnn_log_set_level(GNN_LOG_WARN);
	RUN(test_csr_symmetrize_dedupe);
	RUN(test_csr_directed);
	RUN(test_csr_typed);
	RUN(test_partition_methods);
	RUN(test_import_cora);
	RUN(test_import_hetero);
	RUN(test_partition_typed);
	RUN(test_bad_triplet_unknown_type);
	RUN(test_bad_folder_unknown_type);
	RUN(test_bad_folder_without_triplet);
	RUN(test_bad_triplet_without_folder);
	RUN(test_bad_src_id_out_of_range);
	RUN(test_bad_dst_id_out_of_range);
	RUN(test_bad_ragged_features_short);
	RUN(test_bad_ragged_features_long);
	RUN(test_bad_labels_for_unlabelled_type);
	RUN(test_bad_split_for_type_without_split);
	RUN(test_bad_split_type_without_labels);
	RUN(test_bad_several_labelled_types);
	RUN(test_bad_flag_value);
	RUN(test_bad_flag_unknown_type);
	RUN(test_bad_node_counts_values);
	RUN(test_bad_node_counts_duplicate_type);
	RUN(test_bad_edge_count);
	RUN(test_bad_split_duplicate);
	RUN(test_bad_split_unlabelled);
	RUN(test_bad_split_id_out_of_range);
	RUN(test_edge_split_ratios);
	RUN(test_edge_split_homogeneous);
	RUN(test_edge_split_directed);
	RUN(test_edge_split_refusals);
	return t_done();
}
