/* Unit tests of the sampler (services/sampler): the minibatch core over the
 * in-process backend on graphs built in memory and on a gnn-partition
 * output, checked against an independent reference (every sampled edge
 * exists, the fanout holds, low-degree nodes get all their neighbours, the
 * exact choice of gnn_sample_choose, first-seen source order, features,
 * labels); determinism and independence from how calls are split; bad
 * requests and broken backend answers; the request handler; and the graph
 * store backend against fake graph stores over real nng sockets. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "core.h"
#include "err.h"
#include "multicall.h"
#include "http.h"
#include "local_backend.h"
#include "log.h"
#include "metrics.h"
#include "part.h"
#include "proto.h"
#include "sample.h"
#include "server.h"
#include "service.h"
#include "store_backend.h"
#include "sys.h"
#include "testlib.h"

/* ---- a graph in memory ---- */

#define G_NODES 600
#define G_PARTS 3
#define G_DIM 4
#define G_CLASSES 6

#define G_GRAPH_ID 0x5eed0f5eed0full

static int64_t g_offsets[G_PARTS + 1] = { 0, 150, 380, G_NODES };
static int64_t *g_indptr[G_PARTS], *g_indices[G_PARTS];
static float *g_feat[G_PARTS];
static int32_t *g_labels[G_PARTS];
static uint8_t *g_split[G_PARTS];
static int64_t g_edges;
static struct gnn_schema g_schema;
static struct smp_local *g_local;

static uint64_t rng_state = 12345;

static uint64_t rnd(uint64_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (rng_state >> 33) % n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Degrees: 15% none, 15% exactly 5, the rest 1..60 (a few hubs up to
 * 200); neighbours distinct, sorted, no self-loops. Features v*10+d.
 * Splits: random codes, except that partition 1 has no test node (so a
 * NODES listing crosses an empty partition). */
static void make_graph(void)
{
	struct gnn_part parts[G_PARTS];
	struct gnn_layout layout = { .num_nodes = G_NODES, .num_parts = G_PARTS, .feat_dim = G_DIM,
				     .num_classes = G_CLASSES, .feat_dtype = GNN_DT_F32, .graph_id = G_GRAPH_ID, .offsets = g_offsets,
				     .schema = &g_schema, .type_offsets = g_offsets };

	for (int p = 0; p < G_PARTS; p++) {
		int64_t n = g_offsets[p + 1] - g_offsets[p], m = 0;

		g_indptr[p] = malloc((size_t)(n + 1) * sizeof(int64_t));
		g_indices[p] = malloc((size_t)n * 200 * sizeof(int64_t));
		g_feat[p] = malloc((size_t)n * G_DIM * sizeof(float));
		g_labels[p] = malloc((size_t)n * sizeof(int32_t));
		g_split[p] = malloc((size_t)n);
		g_indptr[p][0] = 0;
		for (int64_t r = 0; r < n; r++) {
			int64_t v = g_offsets[p] + r, deg, k = 0;
			uint64_t kind = rnd(100);

			deg = kind < 15 ? 0 : kind < 30 ? 5 : kind < 97 ? 1 + (int64_t)rnd(60) : 100 + (int64_t)rnd(100);
			while (k < deg) {
				int64_t u = (int64_t)rnd(G_NODES);
				bool dup = u == v;

				for (int64_t q = 0; q < k && !dup; q++)
					dup = g_indices[p][m + q] == u;
				if (!dup)
					g_indices[p][m + k++] = u;
			}
			qsort(g_indices[p] + m, (size_t)deg, sizeof(int64_t), cmp_i64);
			m += deg;
			g_indptr[p][r + 1] = m;
			for (int d = 0; d < G_DIM; d++)
				g_feat[p][r * G_DIM + d] = (float)(v * 10 + d);
			g_labels[p][r] = (int32_t)(v % (G_CLASSES + 1)) - 1;
			g_split[p][r] = (uint8_t)rnd(p == 1 ? 3 : 4);
		}
		g_edges += m;
		parts[p] = (struct gnn_part){ .id = p, .node_start = g_offsets[p], .node_end = g_offsets[p + 1],
					      .num_nodes = n, .num_edges = m, .num_types = 1, .num_rels = 1,
					      .type_start = g_offsets + p, .indptr = g_indptr[p], .indices = g_indices[p],
					      .feat = { g_feat[p] }, .feat_dim = { G_DIM }, .feat_dtype = GNN_DT_F32, .labels = g_labels[p],
					      .split = g_split[p] };
	}
	layout.num_edges = g_edges;
	gnn_schema_plain(&g_schema, G_NODES, g_edges, G_DIM);
	if (smp_local_wrap(&layout, parts, &g_local) != GNN_OK)
		abort();
}

static void free_graph(void)
{
	smp_local_close(g_local);
	for (int p = 0; p < G_PARTS; p++) {
		free(g_indptr[p]);
		free(g_indices[p]);
		free(g_feat[p]);
		free(g_labels[p]);
		free(g_split[p]);
	}
}

/* ---- the reference check ---- */

/* Node v's in-neighbours under relation r in l's partitions. */
static const int64_t *adj_of(const struct smp_local *l, int64_t v, uint32_t r, uint32_t *deg)
{
	const struct gnn_layout *lay = smp_local_layout(l);
	const struct gnn_part *pt = smp_local_part(l, (uint32_t)gnn_layout_owner(lay, v));
	int64_t row = (v - pt->node_start) * pt->num_rels + r;

	*deg = (uint32_t)(pt->indptr[row + 1] - pt->indptr[row]);
	return pt->indices + pt->indptr[row];
}

/* Checks block b's (destination, relation) row of dst i: the count the
 * fanout allows, real edges, gnn_sample_choose's pick, ascending; new
 * sources appended to expect (first-seen order). */
static void check_row(const struct smp_local *l, const struct gnn_block *blk, uint32_t i, uint32_t r, uint64_t seed,
		      int32_t fanout, uint32_t *pos, int64_t *expect, uint32_t *n_expect)
{
	int64_t v = blk->src_ids[i];
	size_t row = (size_t)i * blk->num_rels + r;
	uint32_t deg, k = 0, got = (uint32_t)(blk->indptr[row + 1] - blk->indptr[row]);
	const int64_t *adj = adj_of(l, v, r, &deg);

	if (fanout != 0)
		k = gnn_sample_choose(gnn_sample_rel_seed(seed, r), v, deg, fanout, pos);
	CHECK(got == (fanout == 0 ? 0 : fanout < 0 || deg <= (uint32_t)fanout ? deg : (uint32_t)fanout));
	if (!CHECK(got == k))
		return;
	for (uint32_t e = 0; e < got; e++) {
		int64_t u = blk->src_ids[blk->indices[blk->indptr[row] + e]];
		bool seen = false;

		CHECK(bsearch(&u, adj, deg, sizeof(*adj), cmp_i64) != NULL);   /* the edge exists */
		CHECK(u == adj[pos[e]]);                                       /* the agreed choice */
		if (e > 0)                                                     /* distinct (ascending) */
			CHECK(u > blk->src_ids[blk->indices[blk->indptr[row] + e - 1]]);
		/* first-seen order of new sources */
		for (uint32_t q = 0; q < *n_expect && !seen; q++)
			seen = expect[q] == u;
		if (!seen && CHECK(*n_expect < blk->num_src))
			expect[(*n_expect)++] = u;
	}
}

/* The input nodes' types and feature rows against l's partitions. */
static void check_features(const struct smp_local *l, const struct gnn_minibatch *mb)
{
	const struct gnn_layout *lay = smp_local_layout(l);
	const struct gnn_block *b0 = &mb->blocks[0];
	uint32_t at[GNN_MAX_TYPES] = { 0 };

	CHECK(mb->num_types == lay->schema->num_types);
	for (uint32_t i = 0; i < b0->num_src; i++) {
		int64_t v = b0->src_ids[i];
		const struct gnn_part *pt = smp_local_part(l, (uint32_t)gnn_layout_owner(lay, v));
		int32_t t = gnn_layout_type(lay, v);
		uint32_t d;
		const float *want = gnn_part_feat_row(pt, v, &d);

		if (!CHECK(mb->src_types[i] == t && mb->feat_dims[t] == d))
			break;
		if (d > 0 && !CHECK(mb->feat[t] != NULL && memcmp((const float *)mb->feat[t] + (size_t)at[t] * d, want, d * 4) == 0))
			break;
		at[t]++;
	}
}

/* Checks mb, built for req over l's graph, independently of the core; also
 * that its encoding decodes to the same thing. Returns whether all held. */
static bool check_minibatch(const struct smp_local *l, const struct gnn_minibatch_req *req,
			    const struct gnn_minibatch *mb)
{
	const struct gnn_layout *lay = smp_local_layout(l);
	uint32_t L = req->num_layers, R = req->num_rels, *pos = malloc(100000 * sizeof(*pos));
	int before = t_failed_checks;

	if (!CHECK(mb->num_layers == L && mb->num_seeds == req->num_seeds && mb->num_rels == R))
		goto out;
	if (!CHECK(memcmp(mb->blocks[L - 1].src_ids, req->seeds, req->num_seeds * 8) == 0 &&
		   mb->blocks[L - 1].num_dst == req->num_seeds))
		goto out;
	for (uint32_t b = 0; b < L; b++) {
		const struct gnn_block *blk = &mb->blocks[b];
		uint64_t seed = gnn_sample_layer_seed(req->seed, b);
		int64_t *expect_src = malloc(((size_t)blk->num_src + 1) * 8), *sorted;
		uint32_t n_expect = blk->num_dst;

		/* Chaining (block b's destinations are block b+1's sources). */
		if (b + 1 < L)
			CHECK(blk->num_dst == mb->blocks[b + 1].num_src &&
			      memcmp(blk->src_ids, mb->blocks[b + 1].src_ids, (size_t)blk->num_dst * 8) == 0);
		memcpy(expect_src, blk->src_ids, (size_t)blk->num_dst * 8);
		for (uint32_t i = 0; i < blk->num_dst && t_failed_checks == before; i++)
			for (uint32_t r = 0; r < R; r++)
				check_row(l, blk, i, r, seed, req->fanouts[(size_t)b * R + r], pos, expect_src, &n_expect);
		CHECK(n_expect == blk->num_src);
		CHECK(memcmp(expect_src, blk->src_ids, (size_t)n_expect * 8) == 0);
		sorted = malloc(((size_t)blk->num_src + 1) * 8);
		memcpy(sorted, blk->src_ids, (size_t)blk->num_src * 8);
		qsort(sorted, blk->num_src, 8, cmp_i64);
		for (uint32_t i = 1; i < blk->num_src; i++)
			CHECK(sorted[i] != sorted[i - 1]);           /* unique sources */
		free(sorted);
		free(expect_src);
		if (t_failed_checks != before)
			goto out;
	}
	if (req->flags & GNN_MB_FEATURES)
		check_features(l, mb);
	if (req->flags & GNN_MB_LABELS) {
		CHECK(mb->labels != NULL);
		for (uint32_t i = 0; mb->labels != NULL && i < req->num_seeds; i++) {
			int64_t v = req->seeds[i];
			const struct gnn_part *pt = smp_local_part(l, (uint32_t)gnn_layout_owner(lay, v));

			if (!CHECK(mb->labels[i] == pt->labels[v - pt->node_start]))
				break;
		}
	}
out:
	free(pos);
	return t_failed_checks == before;
}

/* Encodes mb and decodes it again (the decoder checks the structure). */
static bool roundtrip(const struct gnn_minibatch *mb, struct gnn_wbuf *w, struct gnn_minibatch *back)
{
	struct gnn_hdr h;
	const void *payload;

	w->len = 0;
	return CHECK(gnn_encode_minibatch_resp(w, 7, mb) == GNN_OK) &&
	       CHECK(gnn_proto_decode_hdr(w->buf, w->len, &h, &payload) == GNN_OK) &&
	       CHECK(gnn_decode_minibatch_resp(payload, h.len, back) == GNN_OK);
}

/* Builds req over be and checks it (and its wire form) against l. */
static bool build_and_check(const struct smp_backend *be, const struct smp_local *l, uint32_t max_ids,
			    const struct gnn_minibatch_req *req, struct gnn_wbuf *w)
{
	struct smp_build_opts o = { .max_ids_per_call = max_ids };
	struct smp_minibatch mb;
	struct gnn_minibatch back;
	char err[512] = "";
	bool ok;

	if (!CHECK(smp_check_request(be->layout, req, err, sizeof(err)) == GNN_OK))
		return false;
	if (!CHECK(smp_build(be, &o, req, &mb, err, sizeof(err)) == GNN_OK)) {
		printf("  build failed: %s\n", err);
		return false;
	}
	ok = check_minibatch(l, req, &mb.mb) && roundtrip(&mb.mb, w, &back) && check_minibatch(l, req, &back);
	if (ok)
		CHECK(mb.wire_bytes + GNN_PROTO_HDR_BYTES == w->len);
	gnn_proto_release(back.owned);
	smp_minibatch_free(&mb);
	return ok;
}

static void random_seeds(int64_t num_nodes, uint32_t n, int64_t *out)
{
	for (uint32_t i = 0; i < n;) {
		int64_t v = (int64_t)rnd((uint64_t)num_nodes);
		bool dup = false;

		for (uint32_t q = 0; q < i && !dup; q++)
			dup = out[q] == v;
		if (!dup)
			out[i++] = v;
	}
}

/* ---- tests ---- */

static int broken_run(void *ctx, struct smp_call *calls, size_t n, char *why, size_t why_len);
static void broken_release(void *ctx, struct smp_call *calls, size_t n);
enum { BREAK_NONE, BREAK_NBR, BREAK_COUNT, BREAK_LABEL, BREAK_FAIL, BREAK_NODES_ORDER, BREAK_NODES_RANGE,
       BREAK_NODES_NEXT };
static int break_mode;

static void test_blocks_valid(void)
{
	static const int32_t fanouts[][4] = { { 3, 5 }, { 15, 10, 5 }, { -1 }, { 1, 1, 1, 1 }, { 5, -1 } };
	static const uint32_t layers[] = { 2, 3, 1, 4, 2 };
	struct smp_backend be;
	struct gnn_wbuf w;
	int64_t seeds[64];

	smp_local_backend(g_local, &be);
	gnn_wbuf_init(&w);
	for (int t = 0; t < 40; t++) {
		struct gnn_minibatch_req req = { .seed = (uint64_t)t * 977 + 1, .num_layers = layers[t % 5],
						 .num_rels = 1, .fanouts = fanouts[t % 5],
						 .num_seeds = 1 + (uint32_t)rnd(64), .seeds = seeds,
						 .flags = (uint32_t)(t % 4) };

		random_seeds(G_NODES, req.num_seeds, seeds);
		if (!build_and_check(&be, g_local, (uint32_t)(t % 3 == 0 ? 7 : 0), &req, &w)) {
			printf("  minibatch %d failed\n", t);
			break;
		}
	}
	gnn_wbuf_free(&w);
}

/* Degree-0 seeds: empty blocks that still chain; a seed whose degree is
 * exactly the fanout gets all its neighbours. */
static void test_edge_cases(void)
{
	struct smp_backend be;
	struct gnn_wbuf w;
	int64_t zero[8], exact[8];
	uint32_t nz = 0, ne = 0, deg;

	smp_local_backend(g_local, &be);
	gnn_wbuf_init(&w);
	for (int64_t v = 0; v < G_NODES && (nz < 8 || ne < 8); v++) {
		adj_of(g_local, v, 0, &deg);
		if (deg == 0 && nz < 8)
			zero[nz++] = v;
		if (deg == 5 && ne < 8)
			exact[ne++] = v;
	}
	if (!CHECK(nz == 8 && ne == 8))
		return;
	struct gnn_minibatch_req req = { .seed = 3, .num_layers = 2, .num_rels = 1, .fanouts = (const int32_t[]){ 5, 5 }, .num_seeds = 8,
					 .seeds = zero, .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
	struct smp_minibatch mb;
	char err[256];

	build_and_check(&be, g_local, 0, &req, &w);
	if (CHECK(smp_build(&be, NULL, &req, &mb, err, sizeof(err)) == GNN_OK)) {
		CHECK(mb.sampled_edges == 0 && mb.mb.blocks[0].num_src == 8 && mb.mb.blocks[1].num_src == 8);
		smp_minibatch_free(&mb);
	}
	req.seeds = exact;
	req.num_layers = 1;
	build_and_check(&be, g_local, 0, &req, &w);
	if (CHECK(smp_build(&be, NULL, &req, &mb, err, sizeof(err)) == GNN_OK)) {
		CHECK(mb.sampled_edges == 8 * 5);
		smp_minibatch_free(&mb);
	}
	gnn_wbuf_free(&w);
}

/* The same request gives byte-identical minibatches however its nodes are
 * split into calls; another seed gives another minibatch. */
static void test_deterministic(void)
{
	static const uint32_t splits[] = { 0, 1, 3, 50 };
	struct smp_backend be;
	struct gnn_wbuf w[4], other;
	int64_t seeds[100];
	struct gnn_minibatch_req req = { .seed = 99, .num_layers = 3, .num_rels = 1, .fanouts = (const int32_t[]){ 4, 3, 2 }, .num_seeds = 100,
					 .seeds = seeds, .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
	struct smp_build_opts o = { 0 };
	struct smp_minibatch mb;
	char err[256];

	smp_local_backend(g_local, &be);
	random_seeds(G_NODES, 100, seeds);
	for (int i = 0; i < 4; i++) {
		gnn_wbuf_init(&w[i]);
		o.max_ids_per_call = splits[i];
		if (!CHECK(smp_build(&be, &o, &req, &mb, err, sizeof(err)) == GNN_OK))
			return;
		gnn_encode_minibatch_resp(&w[i], 1, &mb.mb);
		smp_minibatch_free(&mb);
		CHECK(w[i].len == w[0].len && memcmp(w[i].buf, w[0].buf, w[0].len) == 0);
	}
	req.seed = 100;
	gnn_wbuf_init(&other);
	if (CHECK(smp_build(&be, NULL, &req, &mb, err, sizeof(err)) == GNN_OK)) {
		gnn_encode_minibatch_resp(&other, 1, &mb.mb);
		CHECK(other.len != w[0].len || memcmp(other.buf, w[0].buf, other.len) != 0);
		smp_minibatch_free(&mb);
	}
	gnn_wbuf_free(&other);
	for (int i = 0; i < 4; i++)
		gnn_wbuf_free(&w[i]);
}

/* smp_build_message writes what gnn_encode_minibatch_resp makes of
 * smp_build's minibatch, byte for byte: every flag combination, odd seed
 * counts and an odd feature dimension (padding after the rows). */
static void test_message_equals_encoder(void)
{
	struct gnn_layout odd = *smp_local_layout(g_local);
	struct gnn_part parts[G_PARTS];
	struct gnn_schema odd_schema = g_schema;
	struct smp_local *l3;
	struct smp_backend be;
	struct gnn_wbuf a, b;
	int64_t seeds[33];
	char err[256];

	for (uint32_t p = 0; p < G_PARTS; p++) {
		parts[p] = *smp_local_part(g_local, p);
		parts[p].feat_dim[0] = 3;  /* reads the same arrays as 3 columns */
	}
	odd_schema.types[0].feat_dim = 3;
	odd.schema = &odd_schema;
	odd.feat_dim = 3;
	if (!CHECK(smp_local_wrap(&odd, parts, &l3) == GNN_OK))
		return;
	gnn_wbuf_init(&a);
	gnn_wbuf_init(&b);
	for (int t = 0; t < 16; t++) {
		struct gnn_minibatch_req req = { .seed = (uint64_t)t, .num_layers = 2, .num_rels = 1, .fanouts = (const int32_t[]){ 4, 3 },
						 .num_seeds = 31 + (uint32_t)(t % 3), .seeds = seeds,
						 .flags = (uint32_t)(t % 4) };
		struct smp_minibatch_stats st;
		struct smp_minibatch mb;

		smp_local_backend(t < 8 ? g_local : l3, &be);
		random_seeds(G_NODES, req.num_seeds, seeds);
		gnn_encode_info_req(&a, 5);  /* something before: the message is appended */
		b.len = 0;
		gnn_encode_info_req(&b, 5);
		if (!CHECK(smp_build(&be, NULL, &req, &mb, err, sizeof(err)) == GNN_OK))
			break;
		CHECK(gnn_encode_minibatch_resp(&b, 77, &mb.mb) == GNN_OK);
		CHECK(smp_build_message(&be, NULL, 77, &req, &a, &st, err, sizeof(err)) == GNN_OK);
		if (!CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0))
			printf("  t=%d flags=%u dim=%u: %zu vs %zu bytes\n", t, req.flags, be.layout->feat_dim, a.len,
			       b.len);
		CHECK(st.sampled_edges == mb.sampled_edges && st.feature_bytes == mb.feature_bytes &&
		      st.wire_bytes == mb.wire_bytes && st.input_nodes == mb.mb.blocks[0].num_src);
		smp_minibatch_free(&mb);
		a.len = 0;
	}
	/* A failure leaves the buffer as it was. */
	seeds[0] = seeds[1];
	smp_local_backend(g_local, &be);
	gnn_encode_info_req(&a, 5);
	{
		struct gnn_minibatch_req req = { .seed = 1, .num_layers = 1, .num_rels = 1, .fanouts = (const int32_t[]){ 2 }, .num_seeds = 2,
						 .seeds = seeds, .flags = 3 };
		size_t before = a.len;

		be.run = broken_run;
		be.release = broken_release;
		break_mode = BREAK_FAIL;
		CHECK(smp_build_message(&be, NULL, 1, &req, &a, NULL, err, sizeof(err)) == GNN_EUNAVAIL);
		CHECK(a.len == before && !a.failed);
		break_mode = BREAK_NONE;
	}
	gnn_wbuf_free(&a);
	gnn_wbuf_free(&b);
	smp_local_close(l3);
}

static void test_bad_requests(void)
{
	struct smp_backend be;
	int64_t seeds[3] = { 1, 2, 3 };
	struct gnn_minibatch_req req = { .seed = 1, .num_layers = 1, .num_rels = 1, .fanouts = (const int32_t[]){ 2 }, .num_seeds = 3,
					 .seeds = seeds };
	char err[256];

	smp_local_backend(g_local, &be);
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_OK);
	seeds[1] = G_NODES;
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_EINVAL);
	CHECK(strstr(err, "outside [0, 600)") != NULL);
	seeds[1] = -1;
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_EINVAL);
	seeds[1] = 3;
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_EINVAL);
	CHECK(strstr(err, "appears twice") != NULL);
}

/* GNN_MB_EXCLUDE: 20 pairs (u, v), edges u -> v of the graph, their
 * endpoints as seeds, fanouts -1: every row of every block is the stored
 * neighbours less the pairs' (both directions: one relation within one
 * type), the same however the calls are split; the refusals. */
static void test_exclusion(void)
{
	int64_t pairs[40], seeds[40];
	int32_t fan[2] = { -1, -1 };
	struct gnn_minibatch_req req = { .seed = 5, .flags = GNN_MB_EXCLUDE, .num_layers = 2, .num_rels = 1,
					 .fanouts = fan, .seeds = seeds, .num_excl = 0, .excl = pairs };
	struct smp_build_opts small = { .max_ids_per_call = 7 };
	struct smp_minibatch_stats st[2];
	struct gnn_wbuf w[2];
	struct smp_backend be;
	uint64_t dropped = 0;
	char err[256];

	smp_local_backend(g_local, &be);
	for (int64_t v = 0; v < G_NODES && req.num_excl < 20; v += 7) {
		uint32_t deg;
		const int64_t *adj = adj_of(g_local, v, 0, &deg);
		bool seen = false;

		for (uint32_t k = 0; k < req.num_seeds && !seen; k++)
			seen = deg == 0 || seeds[k] == v || seeds[k] == adj[0];
		if (seen)
			continue;
		pairs[2 * req.num_excl] = adj[0];
		pairs[2 * req.num_excl++ + 1] = v;
		seeds[req.num_seeds++] = adj[0];
		seeds[req.num_seeds++] = v;
	}
	if (!CHECK(req.num_excl == 20) || !CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_OK))
		return;
	for (int t = 0; t < 2; t++) {
		gnn_wbuf_init(&w[t]);
		CHECK(smp_build_message(&be, t ? &small : NULL, 3, &req, &w[t], &st[t], err, sizeof(err)) == GNN_OK);
	}
	CHECK(w[0].len == w[1].len && memcmp(w[0].buf, w[1].buf, w[0].len) == 0);
	CHECK(st[0].excluded_edges == st[1].excluded_edges && st[0].excluded_edges > 0);
	{
		struct gnn_minibatch mb;
		struct gnn_hdr h;
		const void *payload;

		if (CHECK(gnn_proto_decode_hdr(w[0].buf, w[0].len, &h, &payload) == GNN_OK) &&
		    CHECK(gnn_decode_minibatch_resp(payload, h.len, &mb) == GNN_OK)) {
			CHECK(mb.flags == 0);
			for (uint32_t l = 0; l < 2; l++) {
				const struct gnn_block *b = &mb.blocks[l];

				for (uint32_t i = 0; i < b->num_dst; i++) {
					uint32_t deg, want = 0, got = (uint32_t)(b->indptr[i + 1] - b->indptr[i]);
					const int64_t *adj = adj_of(g_local, b->src_ids[i], 0, &deg);

					for (uint32_t k = 0; k < deg; k++) {
						bool ex = false;

						for (uint32_t q = 0; q < req.num_excl && !ex; q++)
							ex = (pairs[2 * q] == adj[k] && pairs[2 * q + 1] == b->src_ids[i]) ||
							     (pairs[2 * q] == b->src_ids[i] && pairs[2 * q + 1] == adj[k]);
						want += !ex;
					}
					dropped += deg - want;
					if (!CHECK(got == want))
						printf("  layer %u node %" PRId64 ": %u neighbours, %u expected\n", l,
						       b->src_ids[i], got, want);
				}
			}
			gnn_proto_release(mb.owned);
		}
	}
	CHECK(dropped == st[0].excluded_edges);
	for (int t = 0; t < 2; t++)
		gnn_wbuf_free(&w[t]);
	/* The refusals: a relation the graph lacks, IDs outside it. */
	req.excl_rel = 1;
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_EINVAL && strstr(err, "exclusion relation 1"));
	req.excl_rel = 0;
	pairs[7] = G_NODES;
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_EINVAL && strstr(err, "excluded pair 3"));
	pairs[7] = -1;
	CHECK(smp_check_request(be.layout, &req, err, sizeof(err)) == GNN_EINVAL && strstr(err, "outside [0, 600)"));
}

/* A backend that breaks its answers after the local backend made them. */
static void *break_buf;

static int broken_run(void *ctx, struct smp_call *calls, size_t n, char *why, size_t why_len)
{
	struct smp_backend local;
	int rc;

	smp_local_backend(ctx, &local);
	if (break_mode == BREAK_FAIL) {
		snprintf(why, why_len, "graph store graphstore-9 (tcp://nowhere:1) unavailable");
		return GNN_EUNAVAIL;
	}
	if ((rc = local.run(ctx, calls, n, why, why_len)) != GNN_OK)
		return rc;
	for (size_t i = 0; i < n && break_buf == NULL; i++) {
		struct smp_call *c = &calls[i];

		if (break_mode == BREAK_NBR && c->type == GNN_MSG_SAMPLE_REQ && c->total > 0) {
			int64_t *nb = malloc(c->total * 8);

			memcpy(nb, c->nbrs, c->total * 8);
			nb[c->total - 1] = G_NODES + 5;
			c->nbrs = nb;
			break_buf = nb;
		} else if (break_mode == BREAK_COUNT && c->type == GNN_MSG_SAMPLE_REQ) {
			/* One node gets fanout + 1 neighbours (node 0, repeated). */
			uint32_t extra = (uint32_t)c->fanouts[0] + 1;
			char *b = malloc(c->n * 4 + (c->total + extra) * 8);
			uint32_t *cnt = (uint32_t *)b;
			int64_t *nb = (int64_t *)(b + c->n * 4);

			memcpy(cnt, c->counts, c->n * 4);
			memcpy(nb + extra, c->nbrs + cnt[0], (c->total - cnt[0]) * 8);
			memset(nb, 0, extra * 8);
			cnt[0] = extra;
			c->counts = cnt;
			c->nbrs = nb;
			break_buf = b;
		} else if (break_mode == BREAK_LABEL && c->type == GNN_MSG_LABEL_REQ) {
			int32_t *y = malloc(c->n * 4);

			memcpy(y, c->labels, c->n * 4);
			y[0] = G_CLASSES;
			c->labels = y;
			break_buf = y;
		} else if ((break_mode == BREAK_NODES_ORDER || break_mode == BREAK_NODES_RANGE) &&
			   c->type == GNN_MSG_NODES_REQ && c->num_found >= 2) {
			int64_t *ids = malloc(c->num_found * 8);

			memcpy(ids, c->found, c->num_found * 8);
			if (break_mode == BREAK_NODES_ORDER) {
				ids[0] = c->found[1];
				ids[1] = c->found[0];
			} else {  /* the next partition's first node */
				ids[c->num_found - 1] = g_offsets[c->part + 1];
			}
			c->found = ids;
			break_buf = ids;
		} else if (break_mode == BREAK_NODES_NEXT && c->type == GNN_MSG_NODES_REQ) {
			c->next_cursor = c->cursor;  /* no progress */
		}
	}
	return GNN_OK;
}

static void broken_release(void *ctx, struct smp_call *calls, size_t n)
{
	struct smp_backend local;

	smp_local_backend(ctx, &local);
	local.release(ctx, calls, n);
	free(break_buf);
	break_buf = NULL;
}

static void test_bad_answers(void)
{
	static const struct { int mode, rc; const char *text; } cases[] = {
		{ BREAK_NBR, GNN_EPROTO, "outside [0, 600)" },
		{ BREAK_COUNT, GNN_EPROTO, "for fanout 3" },
		{ BREAK_LABEL, GNN_EPROTO, "label 6" },
		{ BREAK_FAIL, GNN_EUNAVAIL, "graphstore-9 (tcp://nowhere:1)" },
	};
	struct smp_backend be;
	int64_t seeds[20];
	struct gnn_minibatch_req req = { .seed = 5, .num_layers = 2, .num_rels = 1, .fanouts = (const int32_t[]){ 3, 3 }, .num_seeds = 20,
					 .seeds = seeds, .flags = GNN_MB_LABELS };
	struct smp_minibatch mb;
	char err[512];

	smp_local_backend(g_local, &be);
	be.run = broken_run;
	be.release = broken_release;
	/* Seeds with neighbours, so every break applies. */
	for (uint32_t v = 0, k = 0; k < 20; v++) {
		uint32_t deg;

		adj_of(g_local, v, 0, &deg);
		if (deg >= 3)
			seeds[k++] = v;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		break_mode = cases[i].mode;
		err[0] = '\0';
		CHECK(smp_build(&be, NULL, &req, &mb, err, sizeof(err)) == cases[i].rc);
		if (!CHECK(strstr(err, cases[i].text) != NULL))
			printf("  case %zu: err=\"%s\"\n", i, err);
		CHECK(strstr(err, "partition") != NULL || strstr(err, "graphstore") != NULL);
	}
	break_mode = BREAK_NONE;
}

/* ---- the handler ---- */

static struct gnn_metrics *reg;

static double metric(const char *key)
{
	char *text;
	double v;

	if (gnn_metrics_render(reg, &text, NULL) != GNN_OK)
		return NAN;
	v = t_sample_value(text, key);
	free(text);
	return v;
}

/* Runs the handler on the message in in; returns the reply's type and
 * status in *h (and the reply in out). */
static void handle(struct smp_service *svc, const struct gnn_wbuf *in, size_t cut, struct gnn_wbuf *out,
		   struct gnn_hdr *rh)
{
	struct gnn_hdr h;
	const void *payload, *rp;

	out->len = 0;
	if (!CHECK(gnn_proto_decode_hdr(in->buf, in->len, &h, &payload) == GNN_OK))
		return;
	CHECK(smp_service_handle(svc, &h, payload, h.len - cut, out) == GNN_OK);
	memset(rh, 0, sizeof(*rh));
	CHECK(gnn_proto_decode_hdr(out->buf, out->len, rh, &rp) == GNN_OK && rh->req_id == h.req_id);
}

static void test_handler(void)
{
	struct smp_backend be;
	struct smp_service *svc;
	struct smp_service_opts o = { .backend = &be, .metrics = reg };
	struct gnn_wbuf in, out;
	struct gnn_hdr rh;
	int64_t seeds[10];
	struct gnn_minibatch_req req = { .seed = 1, .num_layers = 2, .num_rels = 1, .fanouts = (const int32_t[]){ 5, 3 }, .num_seeds = 10,
					 .seeds = seeds, .flags = GNN_MB_FEATURES | GNN_MB_LABELS };

	smp_local_backend(g_local, &be);
	if (!CHECK(smp_service_new(&o, &svc) == GNN_OK))
		return;
	gnn_wbuf_init(&in);
	gnn_wbuf_init(&out);
	random_seeds(G_NODES, 10, seeds);
	gnn_encode_minibatch_req(&in, 11, &req);
	handle(svc, &in, 0, &out, &rh);
	if (CHECK(rh.type == GNN_MSG_MINIBATCH_RESP)) {
		struct gnn_minibatch mb;

		CHECK(gnn_decode_minibatch_resp(out.buf + GNN_PROTO_HDR_BYTES, rh.len, &mb) == GNN_OK &&
		      check_minibatch(g_local, &req, &mb));
		gnn_proto_release(mb.owned);
	}
	CHECK(metric("gnn_sampler_minibatches_total") == 1);
	CHECK(metric("gnn_sampler_sampled_edges_total") > 0);
	CHECK(metric("gnn_sampler_feature_bytes_total") > 0);
	CHECK(metric("gnn_sampler_minibatch_seconds_count") == 1);

	handle(svc, &in, 5, &out, &rh);  /* truncated payload */
	CHECK(rh.type == GNN_MSG_ERROR && rh.status == GNN_EPROTO);
	seeds[3] = G_NODES + 1;          /* seed outside the graph */
	in.len = 0;
	gnn_encode_minibatch_req(&in, 12, &req);
	handle(svc, &in, 0, &out, &rh);
	CHECK(rh.type == GNN_MSG_ERROR && rh.status == GNN_EINVAL);
	CHECK(out.len > 28 && memmem(out.buf, out.len, "outside", 7) != NULL);
	seeds[3] = seeds[4];             /* a seed twice */
	in.len = 0;
	gnn_encode_minibatch_req(&in, 13, &req);
	handle(svc, &in, 0, &out, &rh);
	CHECK(rh.type == GNN_MSG_ERROR && rh.status == GNN_EINVAL);
	in.len = 0;                      /* fanout -2: over the limits */
	req.fanouts = (const int32_t[]){ -2, 3 };
	gnn_encode_minibatch_req(&in, 14, &req);
	handle(svc, &in, 0, &out, &rh);
	CHECK(rh.type == GNN_MSG_ERROR && rh.status == GNN_ERANGE);
	in.len = 0;                      /* a message type samplers do not serve */
	gnn_encode_sample_req(&in, 15, 1, 1, (const int32_t[]){ 5 }, seeds, 2);
	handle(svc, &in, 0, &out, &rh);
	CHECK(rh.type == GNN_MSG_ERROR && rh.status == GNN_EPROTO);
	CHECK(out.len > 28 && memmem(out.buf, out.len, "info, nodes, minibatch, predict, lookup and link", 48) != NULL);
	in.len = 0;                      /* PREDICT over in-process partitions: none to give */
	gnn_encode_ids_req(&in, GNN_MSG_PREDICT_REQ, 16, seeds, 2);
	handle(svc, &in, 0, &out, &rh);
	CHECK(rh.type == GNN_MSG_ERROR && rh.status == GNN_ENOENT);
	CHECK(out.len > 28 && memmem(out.buf, out.len, "no predictions", 14) != NULL);
	CHECK(metric("gnn_sampler_minibatches_total") == 1);
	gnn_wbuf_free(&in);
	gnn_wbuf_free(&out);
	smp_service_free(svc);
}

/* ---- fanout 0 ---- */

/* Calls the in-process backend was asked for, by operation. */
static struct {
	size_t calls[GNN_MSG_TYPE_COUNT];
	size_t zero_fanout;      /* SAMPLE calls with fanout 0: must never happen */
} counted;

static int counting_run(void *ctx, struct smp_call *calls, size_t n, char *why, size_t why_len)
{
	struct smp_backend local;

	smp_local_backend(ctx, &local);
	for (size_t i = 0; i < n; i++) {
		counted.calls[calls[i].type]++;
		counted.zero_fanout += calls[i].type == GNN_MSG_SAMPLE_REQ && calls[i].fanouts[0] == 0;
	}
	return local.run(ctx, calls, n, why, why_len);
}

/* A fanout-0 layer's block is its destinations as sources, no edges, and
 * costs no SAMPLE call; the other layers are sampled as usual; labels and
 * features still come. The reply message equals the encoder's. */
static void test_fanout_zero(void)
{
	static const int32_t fanouts[][3] = { { 0, 0, 0 }, { 0, 5, 0 }, { 5, 0, 3 }, { 0 }, { -1, 0 } };
	static const uint32_t layers[] = { 3, 3, 3, 1, 2 };
	struct smp_backend be;
	struct gnn_wbuf a, b;
	int64_t seeds[40];
	char err[256];

	smp_local_backend(g_local, &be);
	be.run = counting_run;
	gnn_wbuf_init(&a);
	gnn_wbuf_init(&b);
	for (int t = 0; t < 5; t++) {
		struct gnn_minibatch_req req = { .seed = 40 + (uint64_t)t, .num_layers = layers[t], .num_rels = 1,
						 .fanouts = fanouts[t], .num_seeds = 40, .seeds = seeds,
						 .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
		struct smp_minibatch mb;
		bool sampled = false, shape = true;

		random_seeds(G_NODES, 40, seeds);
		memset(&counted, 0, sizeof(counted));
		if (!CHECK(smp_build(&be, NULL, &req, &mb, err, sizeof(err)) == GNN_OK)) {
			printf("  t=%d: %s\n", t, err);
			break;
		}
		CHECK(check_minibatch(g_local, &req, &mb.mb));
		for (uint32_t l = 0; l < req.num_layers; l++) {
			const struct gnn_block *blk = &mb.mb.blocks[l];

			if (req.fanouts[l] != 0) {
				sampled = true;
				continue;
			}
			shape = shape && blk->num_src == blk->num_dst && blk->num_edges == 0;
			for (uint32_t i = 0; shape && i <= blk->num_dst; i++)
				shape = blk->indptr[i] == 0;
		}
		if (!CHECK(shape))
			printf("  t=%d: a fanout-0 block has edges or new sources\n", t);
		CHECK(counted.zero_fanout == 0);
		CHECK((counted.calls[GNN_MSG_SAMPLE_REQ] > 0) == sampled);
		CHECK(counted.calls[GNN_MSG_LABEL_REQ] > 0 && counted.calls[GNN_MSG_FEAT_REQ] > 0);
		if (t == 0 || t == 3)  /* features only: the input nodes are the seeds */
			CHECK(mb.sampled_edges == 0 && mb.mb.blocks[0].num_src == 40 &&
			      memcmp(mb.mb.blocks[0].src_ids, seeds, sizeof(seeds)) == 0 &&
			      mb.feature_bytes == 40 * G_DIM * sizeof(float));
		a.len = b.len = 0;
		CHECK(gnn_encode_minibatch_resp(&b, 9, &mb.mb) == GNN_OK);
		CHECK(smp_build_message(&be, NULL, 9, &req, &a, NULL, err, sizeof(err)) == GNN_OK);
		CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0);
		smp_minibatch_free(&mb);
	}
	gnn_wbuf_free(&a);
	gnn_wbuf_free(&b);
}

/* ---- INFO and NODES ---- */

/* Every node of split in ID order from node from on, read straight from
 * the partitions' arrays. */
static size_t ref_split(uint8_t split, int64_t from, int64_t *out)
{
	size_t n = 0;

	for (int p = 0; p < G_PARTS; p++)
		for (int64_t v = g_offsets[p]; v < g_offsets[p + 1]; v++)
			if (v >= from && g_split[p][v - g_offsets[p]] == split)
				out[n++] = v;
	return n;
}

/* Lists split through svc's NODES, limit nodes a page, from cursor until
 * next_cursor is -1, checking each page: at most limit nodes, ascending,
 * inside the partition owning the cursor, next_cursor moving forward to at
 * most that partition's end, -1 only after the last partition. Returns
 * the number of nodes (in out), or -1 when a reply was wrong. */
static long list_nodes(struct smp_service *svc, uint8_t split, uint32_t limit, int64_t cursor, int64_t *out,
		       int *pages)
{
	const struct gnn_layout *lay = smp_local_layout(g_local);
	struct gnn_wbuf in, rep;
	long n = 0;

	*pages = 0;
	gnn_wbuf_init(&in);
	gnn_wbuf_init(&rep);
	while (cursor != -1 && *pages <= G_NODES + G_PARTS) {
		int32_t part = gnn_layout_owner(lay, cursor);
		struct gnn_nodes_resp r;
		struct gnn_hdr rh;
		bool ok = true;

		in.len = 0;
		gnn_encode_nodes_req(&in, 100 + (uint64_t)*pages, split, limit, cursor);
		handle(svc, &in, 0, &rep, &rh);
		(*pages)++;
		if (!CHECK(rh.type == GNN_MSG_NODES_RESP) ||
		    !CHECK(gnn_decode_nodes_resp(rep.buf + GNN_PROTO_HDR_BYTES, rh.len, &r) == GNN_OK)) {
			n = -1;
			break;
		}
		ok = part >= 0 && r.n <= limit;
		for (uint32_t i = 0; ok && i < r.n; i++) {
			ok = r.ids[i] >= cursor && r.ids[i] < g_offsets[part + 1] && (i == 0 || r.ids[i] > r.ids[i - 1]);
			out[n++] = r.ids[i];
		}
		ok = ok && (r.next_cursor == -1 ? part == G_PARTS - 1
						: r.next_cursor > cursor && r.next_cursor <= g_offsets[part + 1]);
		cursor = r.next_cursor;
		gnn_proto_release(r.owned);
		if (!CHECK(ok)) {
			printf("  split %u limit %u: page %d is wrong\n", split, limit, *pages);
			n = -1;
			break;
		}
	}
	CHECK(cursor == -1);
	gnn_wbuf_free(&in);
	gnn_wbuf_free(&rep);
	return n;
}

/* Sends the message in in and checks that the answer is an ERROR with
 * code and text containing what. */
static void expect_error(struct smp_service *svc, const struct gnn_wbuf *in, size_t cut, int code, const char *what)
{
	struct gnn_wbuf out;
	struct gnn_hdr rh;

	gnn_wbuf_init(&out);
	handle(svc, in, cut, &out, &rh);
	if (!CHECK(rh.type == GNN_MSG_ERROR && rh.status == (uint32_t)code) ||
	    !CHECK(out.len > GNN_PROTO_HDR_BYTES && memmem(out.buf, out.len, what, strlen(what)) != NULL))
		printf("  expected %s \"%s\": got type %u status %s \"%.*s\"\n", gnn_errname(code), what, rh.type,
		       gnn_errname((int)rh.status), out.len > 32 ? (int)(out.len - 32) : 0, (const char *)out.buf + 32);
	gnn_wbuf_free(&out);
}

static bool never_known(void *ctx, char *why, size_t why_len)
{
	(void)ctx;
	snprintf(why, why_len, "waiting for graph stores: graphstore-1(tcp://nowhere:1)");
	return false;
}

/* INFO describes the whole graph; NODES pages through every partition and
 * lists exactly each split's nodes in ID order, whatever the page size;
 * bad cursors, failing stores and broken answers give clear errors. */
static void test_info_nodes(void)
{
	static const uint32_t limits[] = { 1, 7, 64, 1000, GNN_PROTO_MAX_IDS };
	struct smp_backend be, bad;
	struct smp_service *svc, *svc_bad;
	struct smp_service_opts o = { .backend = &be }, ob = { .backend = &bad };
	struct gnn_metrics *m = NULL, *mb = NULL;
	struct gnn_wbuf in, out;
	struct gnn_hdr rh;
	int64_t got[G_NODES], want[G_NODES];
	size_t total = 0;
	int pages;

	smp_local_backend(g_local, &be);
	/* A registry per service: each registers the same metric names. */
	gnn_metrics_new(&m);
	o.metrics = m;
	if (!CHECK(smp_service_new(&o, &svc) == GNN_OK)) {
		gnn_metrics_free(m);
		return;
	}
	gnn_wbuf_init(&in);
	gnn_wbuf_init(&out);

	gnn_encode_info_req(&in, 20);
	handle(svc, &in, 0, &out, &rh);
	if (CHECK(rh.type == GNN_MSG_INFO_RESP)) {
		struct gnn_info info;

		if (CHECK(gnn_decode_info_resp(out.buf + GNN_PROTO_HDR_BYTES, rh.len, &info) == GNN_OK)) {
			const struct gnn_layout *il = &info.layout;

			CHECK(info.part_id == G_PARTS && il->num_parts == G_PARTS && il->num_nodes == G_NODES &&
			      il->num_edges == g_edges && info.part_edges == g_edges && il->feat_dim == G_DIM &&
			      il->num_classes == G_CLASSES && il->graph_id == G_GRAPH_ID);
			CHECK(memcmp(il->offsets, g_offsets, sizeof(g_offsets)) == 0);
			gnn_proto_release(info.owned);
		}
	}
	{	/* an INFO request with a payload */
		struct gnn_hdr h = { .version = GNN_PROTO_VERSION, .type = GNN_MSG_INFO_REQ, .req_id = 21, .len = 8 };
		uint64_t junk = 0;

		out.len = 0;
		CHECK(smp_service_handle(svc, &h, &junk, 8, &out) == GNN_OK);
		CHECK(gnn_proto_decode_hdr(out.buf, out.len, &rh, &(const void *){ NULL }) == GNN_OK &&
		      rh.type == GNN_MSG_ERROR && rh.status == GNN_EPROTO);
	}

	for (uint8_t split = 0; split < 4; split++) {
		size_t nref = ref_split(split, 0, want);

		CHECK(nref > 0);
		total += nref;
		for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
			long n = list_nodes(svc, split, limits[k], 0, got, &pages);

			if (!CHECK(n == (long)nref && memcmp(got, want, nref * 8) == 0))
				printf("  split %u limit %u: %ld nodes listed, %zu expected\n", split, limits[k], n, nref);
			if (limits[k] >= G_NODES)  /* one page per partition, the empty ones too */
				CHECK(pages == G_PARTS);
			else
				CHECK(pages >= (int)((nref + limits[k] - 1) / limits[k]));
		}
		/* From the middle of partition 1. */
		nref = ref_split(split, 200, want);
		CHECK(list_nodes(svc, split, 13, 200, got, &pages) == (long)nref && memcmp(got, want, nref * 8) == 0);
	}
	CHECK(total == G_NODES);
	CHECK(ref_split(GNN_SPLIT_TEST, 0, want) > 0);  /* partition 1 holds none: an empty page between */

	/* Cursors outside the graph, and malformed requests. */
	in.len = 0;
	gnn_encode_nodes_req(&in, 30, GNN_SPLIT_TRAIN, 10, G_NODES);
	expect_error(svc, &in, 0, GNN_ERANGE, "cursor 600 is outside the graph's nodes [0, 600)");
	in.len = 0;
	gnn_encode_nodes_req(&in, 31, GNN_SPLIT_TRAIN, 10, INT64_MAX);
	expect_error(svc, &in, 0, GNN_ERANGE, "outside the graph");
	in.len = 0;
	gnn_encode_nodes_req(&in, 32, GNN_SPLIT_TRAIN, 10, -1);
	expect_error(svc, &in, 0, GNN_ERANGE, "malformed nodes request");
	in.len = 0;
	gnn_encode_nodes_req(&in, 33, GNN_SPLIT_TRAIN, 0, 0);
	expect_error(svc, &in, 0, GNN_ERANGE, "limit 0");
	in.len = 0;
	gnn_encode_nodes_req(&in, 34, 4, 10, 0);
	expect_error(svc, &in, 0, GNN_ERANGE, "split over 3");
	in.len = 0;
	gnn_encode_nodes_req(&in, 35, GNN_SPLIT_TRAIN, 10, 0);
	expect_error(svc, &in, 1, GNN_EPROTO, "malformed nodes request");

	/* A failing store, and stores breaking the contract. */
	smp_local_backend(g_local, &bad);
	bad.run = broken_run;
	bad.release = broken_release;
	gnn_metrics_new(&mb);
	ob.metrics = mb;
	if (CHECK(smp_service_new(&ob, &svc_bad) == GNN_OK)) {
		static const struct { int mode, rc; const char *text; } cases[] = {
			{ BREAK_FAIL, GNN_EUNAVAIL, "graph store graphstore-9 (tcp://nowhere:1) unavailable" },
			{ BREAK_NODES_ORDER, GNN_EPROTO, "out of order" },
			{ BREAK_NODES_RANGE, GNN_EPROTO, "outside [160, 380)" },
			{ BREAK_NODES_NEXT, GNN_EPROTO, "does not move forward" },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			break_mode = cases[i].mode;
			in.len = 0;
			gnn_encode_nodes_req(&in, 40 + i, GNN_SPLIT_NONE, 5, 160);
			expect_error(svc_bad, &in, 0, cases[i].rc, cases[i].text);
		}
		break_mode = BREAK_NONE;
		smp_service_free(svc_bad);
	}
	gnn_metrics_free(mb);

	/* Before the layout is known every request is told what is awaited. */
	bad = be;
	bad.layout_known = never_known;
	gnn_metrics_new(&mb);
	ob.metrics = mb;
	if (CHECK(smp_service_new(&ob, &svc_bad) == GNN_OK)) {
		int64_t seeds[1] = { 3 };
		struct gnn_minibatch_req req = { .seed = 1, .num_layers = 1, .num_rels = 1, .fanouts = (const int32_t[]){ 2 }, .num_seeds = 1,
						 .seeds = seeds };

		in.len = 0;
		gnn_encode_info_req(&in, 50);
		expect_error(svc_bad, &in, 0, GNN_EUNAVAIL, "waiting for graph stores: graphstore-1");
		in.len = 0;
		gnn_encode_nodes_req(&in, 51, GNN_SPLIT_TRAIN, 10, 0);
		expect_error(svc_bad, &in, 0, GNN_EUNAVAIL, "waiting for graph stores: graphstore-1");
		in.len = 0;
		gnn_encode_minibatch_req(&in, 52, &req);
		expect_error(svc_bad, &in, 0, GNN_EUNAVAIL, "waiting for graph stores: graphstore-1");
		smp_service_free(svc_bad);
	}
	gnn_metrics_free(mb);

	/* A partition without split codes (in process only). */
	{
		struct gnn_part parts[G_PARTS];
		struct smp_local *nosplit;

		for (uint32_t p = 0; p < G_PARTS; p++)
			parts[p] = *smp_local_part(g_local, p);
		parts[2].split = NULL;
		if (CHECK(smp_local_wrap(smp_local_layout(g_local), parts, &nosplit) == GNN_OK)) {
			smp_local_backend(nosplit, &bad);
			gnn_metrics_new(&mb);
			ob.metrics = mb;
			if (CHECK(smp_service_new(&ob, &svc_bad) == GNN_OK)) {
				in.len = 0;
				gnn_encode_nodes_req(&in, 60, GNN_SPLIT_TRAIN, 10, 500);
				expect_error(svc_bad, &in, 0, GNN_EINVAL, "partition 2 (in process) has no split codes");
				smp_service_free(svc_bad);
			}
			gnn_metrics_free(mb);
			smp_local_close(nosplit);
		}
	}
	gnn_wbuf_free(&in);
	gnn_wbuf_free(&out);
	smp_service_free(svc);
	gnn_metrics_free(m);
}

/* ---- the graph store backend against fake graph stores ---- */

/* A fake graph store: answers INFO, SAMPLE, FEAT, LABEL and NODES for
 * partition part of g_local with the in-process backend's answers. */
struct fake {
	uint32_t part, claim_part;
	uint64_t graph_id;
	struct gnn_server *srv;
};

static int fake_handler(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len,
			struct gnn_wbuf *out)
{
	struct fake *f = ctx;
	struct smp_backend be;
	struct smp_call c = { .part = f->part };
	struct gnn_sample_req sr = { 0 };
	struct gnn_ids ir = { 0 };
	char err[256];
	int rc;

	smp_local_backend(g_local, &be);
	if (h->type == GNN_MSG_INFO_REQ) {
		struct gnn_info in = { .part_id = f->claim_part,
				       .layout = { .num_parts = G_PARTS, .num_nodes = G_NODES, .num_edges = 1000,
						   .feat_dim = G_DIM, .num_classes = G_CLASSES, .feat_dtype = GNN_DT_F32,
						   .graph_id = f->graph_id, .offsets = g_offsets, .schema = &g_schema,
						   .type_offsets = g_offsets } };

		return gnn_encode_info_resp(out, h->req_id, &in);
	}
	if (h->type == GNN_MSG_NODES_REQ) {
		struct gnn_nodes_req nr;

		if ((rc = gnn_decode_nodes_req(payload, len, &nr)) != GNN_OK)
			return rc;
		c = (struct smp_call){ .type = GNN_MSG_NODES_REQ, .part = f->part, .split = nr.split, .limit = nr.limit,
				       .cursor = nr.cursor };
	} else if (h->type == GNN_MSG_SAMPLE_REQ) {
		if ((rc = gnn_decode_sample_req(payload, len, &sr)) != GNN_OK)
			return rc;
		c = (struct smp_call){ .type = GNN_MSG_SAMPLE_REQ, .part = f->part, .n = sr.n, .ids = sr.ids,
				       .seed = sr.seed, .fanouts = sr.fanouts };
	} else {
		if ((rc = gnn_decode_ids_req(payload, len, &ir)) != GNN_OK)
			return rc;
		c = (struct smp_call){ .type = h->type,
				       .part = f->part, .n = ir.n, .ids = ir.ids, .feat_dim = G_DIM,
				       .feat_dtype = GNN_DT_F32 };
	}
	rc = be.run(be.ctx, &c, 1, err, sizeof(err));
	if (rc != GNN_OK)
		rc = gnn_encode_error(out, h->req_id, (uint32_t)rc, err);
	else if (c.type == GNN_MSG_SAMPLE_REQ)
		rc = gnn_encode_sample_resp(out, h->req_id, c.counts, c.n, 1, c.nbrs, c.total);
	else if (c.type == GNN_MSG_FEAT_REQ)
		rc = gnn_encode_feat_resp(out, h->req_id, GNN_DT_F32, c.rows, c.n, G_DIM);
	else if (c.type == GNN_MSG_NODES_REQ)
		rc = gnn_encode_nodes_resp(out, h->req_id, c.found, c.num_found, c.next_cursor);
	else
		rc = gnn_encode_label_resp(out, h->req_id, c.labels, c.n);
	be.release(be.ctx, &c, 1);
	gnn_proto_release(sr.owned);
	gnn_proto_release(ir.owned);
	return rc;
}

static int fake_start(struct fake *f, const char *url)
{
	char name[32];
	struct gnn_server_opts o = { .name = name, .listen = url, .workers = 2, .metrics = reg,
				     .handler = fake_handler, .ctx = f };

	snprintf(name, sizeof(name), "fake%u", f->part);
	return gnn_server_start(&o, &f->srv);
}

static bool stop_never(void)
{
	return false;
}

static int open_stores(struct fake *f, size_t n, int timeout_ms, int retries, struct gnn_metrics *m,
		       struct smp_stores **out)
{
	char urls[G_PARTS + 1][64];
	const char *u[G_PARTS + 1];
	struct smp_stores_opts o = { .urls = u, .n = n, .timeout_ms = timeout_ms, .retries = retries,
				     .check_interval_ms = 200, .check_timeout_ms = 200, .metrics = m };

	for (size_t i = 0; i < n; i++) {
		snprintf(urls[i], sizeof(urls[i]), "tcp://127.0.0.1:%d", gnn_server_port(f[i].srv));
		u[i] = urls[i];
	}
	return smp_stores_open(&o, out);
}

static void test_stores(void)
{
	struct fake f[G_PARTS];
	struct smp_stores *st = NULL;
	struct smp_backend net, local;
	struct gnn_metrics *m;
	struct smp_minibatch a, b;
	struct smp_service *svc = NULL;
	struct smp_service_opts so = { .backend = &net };
	struct gnn_wbuf wa, wb;
	int64_t seeds[50], got[G_NODES], want[G_NODES];
	struct gnn_minibatch_req req = { .seed = 8, .num_layers = 2, .num_rels = 1, .fanouts = (const int32_t[]){ 6, 4 }, .num_seeds = 50,
					 .seeds = seeds, .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
	char err[512], reason[128], url[64];
	double t0, dt;
	int port;

	/* Stores listed out of partition order: the INFO part_id decides. */
	for (int i = 0; i < G_PARTS; i++) {
		char listen[64];

		/* store 1 comes back on its port below while the sampler dials it:
		 * a port outside the ephemeral range (testlib.h, t_free_port) */
		snprintf(listen, sizeof(listen), "tcp://127.0.0.1:%d", t_free_port());
		f[i] = (struct fake){ .part = (uint32_t)(G_PARTS - 1 - i), .claim_part = (uint32_t)(G_PARTS - 1 - i),
				      .graph_id = 42 };
		if (!CHECK(fake_start(&f[i], listen) == GNN_OK))
			return;
	}
	gnn_metrics_new(&m);
	if (!CHECK(open_stores(f, G_PARTS, 500, 1, m, &st) == GNN_OK))
		goto out;
	CHECK(!smp_stores_ready(st, reason, sizeof(reason)) && strstr(reason, "waiting") != NULL);
	/* The service may run before the layout is known: it says so. */
	smp_stores_backend(st, &net);
	so.metrics = m;
	if (!CHECK(smp_service_new(&so, &svc) == GNN_OK))
		goto out;
	gnn_wbuf_init(&wa);
	gnn_encode_info_req(&wa, 1);
	expect_error(svc, &wa, 0, GNN_EUNAVAIL, "waiting for graph stores: graphstore-0(tcp://127.0.0.1:");
	gnn_wbuf_free(&wa);
	if (!CHECK(smp_stores_connect(st, 10, stop_never) == GNN_OK))
		goto out;
	CHECK(smp_stores_ready(st, reason, sizeof(reason)));
	CHECK(smp_stores_layout(st)->num_nodes == G_NODES && smp_stores_layout(st)->num_parts == G_PARTS);
	smp_local_backend(g_local, &local);

	/* INFO: the stores' graph; NODES: the split lists, over nng. */
	gnn_wbuf_init(&wa);
	gnn_wbuf_init(&wb);
	gnn_encode_info_req(&wa, 2);
	handle(svc, &wa, 0, &wb, &(struct gnn_hdr){ 0 });
	{
		struct gnn_hdr rh;
		const void *payload;
		struct gnn_info info;

		if (CHECK(gnn_proto_decode_hdr(wb.buf, wb.len, &rh, &payload) == GNN_OK && rh.type == GNN_MSG_INFO_RESP) &&
		    CHECK(gnn_decode_info_resp(payload, rh.len, &info) == GNN_OK)) {
			CHECK(info.layout.graph_id == 42 && info.layout.num_edges == 1000 && info.part_id == G_PARTS &&
			      memcmp(info.layout.offsets, g_offsets, sizeof(g_offsets)) == 0);
			gnn_proto_release(info.owned);
		}
	}
	gnn_wbuf_free(&wa);
	gnn_wbuf_free(&wb);
	for (uint8_t split = 0; split < 4; split++) {
		size_t k = ref_split(split, 0, want);
		int pages;

		CHECK(list_nodes(svc, split, 50, 0, got, &pages) == (long)k && memcmp(got, want, k * 8) == 0);
	}
	random_seeds(G_NODES, 50, seeds);
	gnn_wbuf_init(&wa);
	gnn_wbuf_init(&wb);
	/* Over the network, equal to in process, byte for byte. */
	if (CHECK(smp_build(&net, NULL, &req, &a, err, sizeof(err)) == GNN_OK)) {
		struct smp_build_opts o = { .max_ids_per_call = 4 };

		CHECK(check_minibatch(g_local, &req, &a.mb));
		CHECK(smp_build(&local, &o, &req, &b, err, sizeof(err)) == GNN_OK);
		gnn_encode_minibatch_resp(&wa, 1, &a.mb);
		gnn_encode_minibatch_resp(&wb, 1, &b.mb);
		CHECK(wa.len == wb.len && memcmp(wa.buf, wb.buf, wa.len) == 0);
		smp_minibatch_free(&a);
		smp_minibatch_free(&b);
	}
	gnn_wbuf_free(&wa);
	gnn_wbuf_free(&wb);
	CHECK(smp_stores_start_check(st) == GNN_OK);

	/* A store goes down: an error naming it, within the timeouts. */
	port = gnn_server_port(f[1].srv);
	gnn_server_stop(f[1].srv);
	f[1].srv = NULL;
	t0 = gnn_now();
	CHECK(smp_build(&net, NULL, &req, &a, err, sizeof(err)) == GNN_EUNAVAIL);
	dt = gnn_now() - t0;
	printf("  store down: error after %.2f s (2 attempts x 500 ms): %s\n", dt, err);
	CHECK(dt < 2 * 0.5 * 2 + 0.5);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	CHECK(strstr(err, "graphstore-1") != NULL && strstr(err, url) != NULL);
	{	/* NODES in its partition: the same error */
		char text[128];

		gnn_wbuf_init(&wa);
		gnn_encode_nodes_req(&wa, 3, GNN_SPLIT_TRAIN, 10, 150);
		snprintf(text, sizeof(text), "graph store graphstore-1 (%s) unavailable: nodes call failed", url);
		expect_error(svc, &wa, 0, GNN_EUNAVAIL, text);
		gnn_wbuf_free(&wa);
	}
	usleep(600 * 1000);  /* the check notices */
	CHECK(!smp_stores_ready(st, reason, sizeof(reason)) && strstr(reason, "graphstore-1") != NULL);

	/* It comes back on the same port: minibatches work again. */
	if (CHECK(fake_start(&f[1], url) == GNN_OK)) {
		int rc = GNN_EUNAVAIL;

		t0 = gnn_now();
		while (rc != GNN_OK && gnn_now() - t0 < 8) {
			rc = smp_build(&net, NULL, &req, &a, err, sizeof(err));
			if (rc == GNN_OK)
				smp_minibatch_free(&a);
		}
		CHECK(rc == GNN_OK);
		t0 = gnn_now();
		while (!smp_stores_ready(st, reason, sizeof(reason)) && gnn_now() - t0 < 5)
			usleep(50 * 1000);
		CHECK(smp_stores_ready(st, reason, sizeof(reason)));
	}
	{
		char *text;

		if (CHECK(gnn_metrics_render(m, &text, NULL) == GNN_OK)) {
			CHECK(t_sample_value(text, "gnn_sampler_graphstore_errors_total{graphstore=\"graphstore-1\"}") >= 1);
			CHECK(t_sample_value(text, "gnn_sampler_graphstore_retries_total{graphstore=\"graphstore-1\"}") >= 1);
			CHECK(t_sample_value(text, "gnn_sampler_graphstore_requests_total{graphstore=\"graphstore-0\"}") >= 2);
			CHECK(t_sample_value(text, "gnn_sampler_graphstores_ready") == G_PARTS);
			free(text);
		}
	}
out:
	smp_service_free(svc);
	smp_stores_close(st);
	gnn_metrics_free(m);
	for (int i = 0; i < G_PARTS; i++)
		gnn_server_stop(f[i].srv);
}

/* Inconsistent stores are refused with a clear error; a missing one times out. */
static void test_stores_mismatch(void)
{
	struct fake f[G_PARTS];
	struct smp_stores *st = NULL;
	struct gnn_metrics *m;
	int port;

	for (int i = 0; i < G_PARTS; i++) {
		f[i] = (struct fake){ .part = (uint32_t)i, .claim_part = (uint32_t)i, .graph_id = 42 };
		if (!CHECK(fake_start(&f[i], "tcp://127.0.0.1:0") == GNN_OK))
			return;
	}
	f[2].claim_part = 0;  /* two stores serve partition 0 */
	gnn_metrics_new(&m);
	CHECK(open_stores(f, G_PARTS, 300, 0, m, &st) == GNN_OK && smp_stores_connect(st, 5, stop_never) == GNN_EINVAL);
	smp_stores_close(st);
	gnn_metrics_free(m);

	f[2].claim_part = 2;
	f[1].graph_id = 43;   /* another graph */
	gnn_metrics_new(&m);
	CHECK(open_stores(f, G_PARTS, 300, 0, m, &st) == GNN_OK && smp_stores_connect(st, 5, stop_never) == GNN_EINVAL);
	smp_stores_close(st);
	gnn_metrics_free(m);

	f[1].graph_id = 42;
	f[2].claim_part = G_PARTS;  /* answers for the whole graph: a sampler */
	gnn_metrics_new(&m);
	CHECK(open_stores(f, G_PARTS, 300, 0, m, &st) == GNN_OK && smp_stores_connect(st, 5, stop_never) == GNN_EINVAL);
	smp_stores_close(st);
	gnn_metrics_free(m);

	f[2].claim_part = 2;  /* too few stores for 3 partitions */
	gnn_metrics_new(&m);
	CHECK(open_stores(f, 2, 300, 0, m, &st) == GNN_OK && smp_stores_connect(st, 5, stop_never) == GNN_EINVAL);
	smp_stores_close(st);
	gnn_metrics_free(m);

	port = gnn_server_port(f[2].srv);  /* one store down for good */
	gnn_server_stop(f[2].srv);
	f[2].srv = NULL;
	gnn_metrics_new(&m);
	{
		double t0 = gnn_now();
		struct smp_stores_opts o;
		char u0[64], u1[64], u2[64];
		const char *u[3] = { u0, u1, u2 };

		snprintf(u0, sizeof(u0), "tcp://127.0.0.1:%d", gnn_server_port(f[0].srv));
		snprintf(u1, sizeof(u1), "tcp://127.0.0.1:%d", gnn_server_port(f[1].srv));
		snprintf(u2, sizeof(u2), "tcp://127.0.0.1:%d", port);
		o = (struct smp_stores_opts){ .urls = u, .n = 3, .timeout_ms = 300, .retries = 0,
					      .check_interval_ms = 200, .check_timeout_ms = 200, .metrics = m };
		CHECK(smp_stores_open(&o, &st) == GNN_OK && smp_stores_connect(st, 1.5, stop_never) == GNN_ETIMEDOUT);
		CHECK(gnn_now() - t0 < 4);
	}
	smp_stores_close(st);
	gnn_metrics_free(m);
	for (int i = 0; i < G_PARTS; i++)
		gnn_server_stop(f[i].srv);
}

/* A store found serving another graph: every request refused from then
 * on, naming the store and both graphs, /readyz false, latched. Found by
 * the data path (a restarted store's answers are verified before use,
 * without the background check) and by the check (a change in place). */
static void test_stores_changed(void)
{
	struct fake f[G_PARTS];
	struct smp_stores *st = NULL;
	struct smp_backend net;
	struct gnn_metrics *m = NULL;
	struct smp_minibatch a;
	struct smp_service *svc = NULL;
	struct smp_service_opts so = { .backend = &net };
	struct gnn_wbuf w;
	int64_t seeds[20];
	struct gnn_minibatch_req req = { .seed = 3, .num_layers = 2, .num_rels = 1, .fanouts = (const int32_t[]){ 5, 3 }, .num_seeds = 20,
					 .seeds = seeds, .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
	const char *changed = "graph store graphstore-1 (tcp://127.0.0.1:";
	const char *ids = "now serves graph_id 000000000000002b partition 1 of 3, not graph_id 000000000000002a";
	char err[640], reason[GNN_HTTP_REASON_MAX], url[64];
	double since = -1, t0;

	for (int i = 0; i < G_PARTS; i++) {
		f[i] = (struct fake){ .part = (uint32_t)i, .claim_part = (uint32_t)i, .graph_id = 42 };
		if (!CHECK(fake_start(&f[i], "tcp://127.0.0.1:0") == GNN_OK))
			return;
	}
	random_seeds(G_NODES, 20, seeds);
	for (int round = 0; round < 2; round++) {
		gnn_metrics_new(&m);
		so.metrics = m;
		if (!CHECK(open_stores(f, G_PARTS, 500, 1, m, &st) == GNN_OK) ||
		    !CHECK(smp_stores_connect(st, 10, stop_never) == GNN_OK))
			goto out;
		smp_stores_backend(st, &net);
		if (!CHECK(smp_service_new(&so, &svc) == GNN_OK))
			goto out;
		if (CHECK(smp_build(&net, NULL, &req, &a, err, sizeof(err)) == GNN_OK))
			smp_minibatch_free(&a);
		CHECK(!smp_stores_changed(st, NULL));
		if (round == 0) {
			/* Restarted on another graph, no check running: the
			 * first minibatch after it is refused, not mixed. */
			snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", gnn_server_port(f[1].srv));
			gnn_server_stop(f[1].srv);
			f[1].srv = NULL;
			f[1].graph_id = 43;
			if (!CHECK(fake_start(&f[1], url) == GNN_OK))
				goto out;
			/* Time for the data connection to come back: only the
			 * watch connection's closing says the process changed. */
			usleep(1500 * 1000);
			CHECK(smp_build(&net, NULL, &req, &a, err, sizeof(err)) == GNN_EUNAVAIL);
		} else {
			/* Changed in place (same connection): the check finds it. */
			CHECK(smp_stores_start_check(st) == GNN_OK);
			f[1].graph_id = 43;
			t0 = gnn_now();
			while (!smp_stores_changed(st, NULL) && gnn_now() - t0 < 5)
				usleep(20 * 1000);
			printf("  changed in place: noticed after %.2f s (check every 200 ms)\n", gnn_now() - t0);
			CHECK(smp_build(&net, NULL, &req, &a, err, sizeof(err)) == GNN_EUNAVAIL);
		}
		printf("  round %d: %s\n", round, err);
		CHECK(strstr(err, changed) != NULL && strstr(err, ids) != NULL);
		CHECK(smp_stores_changed(st, &since) && since > 0);
		CHECK(!smp_stores_ready(st, reason, sizeof(reason)) &&
		      strstr(reason, "graph changed: graphstore-1") != NULL);
		/* Latched, and INFO refused too: a trainer must not take this
		 * replica back. */
		f[1].graph_id = 42;
		usleep(300 * 1000);
		CHECK(smp_build(&net, NULL, &req, &a, err, sizeof(err)) == GNN_EUNAVAIL && strstr(err, ids) != NULL);
		gnn_wbuf_init(&w);
		gnn_encode_info_req(&w, 9);
		expect_error(svc, &w, 0, GNN_EUNAVAIL, ids);
		gnn_wbuf_free(&w);
		CHECK(!smp_stores_ready(st, reason, sizeof(reason)));
		smp_service_free(svc);
		svc = NULL;
		smp_stores_close(st);
		st = NULL;
		gnn_metrics_free(m);
		m = NULL;
	}
out:
	smp_service_free(svc);
	smp_stores_close(st);
	gnn_metrics_free(m);
	for (int i = 0; i < G_PARTS; i++)
		gnn_server_stop(f[i].srv);
}

/* ---- a batch of calls (libcommon/multicall.h) ---- */

/* Counts each call's results; refuses call 1's first answer. */
struct calls_seen {
	int answers[3];
	uint64_t req_id[3];
};

static int calls_answer(void *ctx, size_t i, struct gnn_call *c)
{
	struct calls_seen *seen = ctx;
	struct gnn_hdr h;
	const void *payload;

	if (c->rc != GNN_OK || gnn_proto_decode_hdr(nng_msg_body(c->reply), nng_msg_len(c->reply), &h, &payload) !=
	    GNN_OK || h.type != GNN_MSG_INFO_RESP)
		return GNN_EPROTO;
	seen->req_id[i] = h.req_id;
	return seen->answers[i]++ == 0 && i == 1 ? GNN_EUNAVAIL : GNN_OK;
}

/* Three INFO calls to a fake store: a refused answer's call runs again,
 * alone, with the same request bytes; a cleared batch reuses its request
 * buffers. */
static void test_multicall_retry(void)
{
	struct fake f = { .part = 0, .claim_part = 0, .graph_id = 7 };
	struct gnn_client_opts co = { .name = "fake", .timeout_ms = 5000 };
	struct gnn_client *c = NULL;
	struct calls_seen seen = { { 0 } };
	struct gnn_multicall mc;
	struct gnn_wbuf *req, *first = NULL;
	char url[64];

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", t_free_port());
	co.url = url;
	if (!CHECK(fake_start(&f, url) == GNN_OK))
		return;
	gnn_multicall_init(&mc);
	if (!CHECK(gnn_client_open(&co, &c) == GNN_OK))
		goto out;
	for (uint64_t i = 0; i < 3; i++) {
		CHECK(gnn_multicall_add(&mc, c, 0, &req) == GNN_OK && gnn_encode_info_req(req, 101 + i) == GNN_OK);
		first = i == 0 ? req : first;
	}
	CHECK(gnn_multicall_run(&mc, calls_answer, &seen) == GNN_EUNAVAIL);
	CHECK(mc.done[0] && !mc.done[1] && mc.done[2]);
	CHECK(gnn_multicall_run(&mc, calls_answer, &seen) == GNN_OK && mc.done[1]);
	CHECK(seen.answers[0] == 1 && seen.answers[1] == 2 && seen.answers[2] == 1);
	CHECK(seen.req_id[0] == 101 && seen.req_id[1] == 102 && seen.req_id[2] == 103);
	gnn_multicall_clear(&mc);
	CHECK(mc.n == 0 && mc.inited == 3);
	CHECK(gnn_multicall_add(&mc, c, 0, &req) == GNN_OK && req == first && req->len == 0);
	CHECK(gnn_encode_info_req(req, 104) == GNN_OK && gnn_multicall_run(&mc, NULL, NULL) == GNN_OK);
out:
	gnn_multicall_free(&mc);
	gnn_client_close(c);
	gnn_server_stop(f.srv);
}

/* ---- a real gnn-partition output ---- */

/* LOOKUP in process, as the graph stores answer it (libcommon/partq.h):
 * every 7th node found again from its original ID, and an original ID
 * nobody holds refused. */
static void check_lookup_files(const struct smp_backend *be, const char *dir, const struct gnn_meta *meta,
			       struct gnn_wbuf *w)
{
	struct gnn_arr map;
	int64_t orig[64], want[64];
	uint32_t n = 0;
	char why[256];

	if (!CHECK(gnn_node_map_open(dir, meta, GNN_PART_VERIFY, &map) == GNN_OK))
		return;
	for (int64_t v = 0; v < meta->layout.num_nodes && n < 64; v += 7, n++) {
		want[n] = v;
		orig[n] = ((const int64_t *)map.data)[v];
	}
	w->len = 0;
	if (CHECK(smp_lookup_message(be, 3, 0, orig, n, w, why, sizeof(why)) == GNN_OK)) {
		struct gnn_ids r = { 0 };
		struct gnn_hdr h;
		const void *payload;

		if (CHECK(gnn_proto_decode_hdr(w->buf, w->len, &h, &payload) == GNN_OK) &&
		    CHECK(h.type == GNN_MSG_LOOKUP_RESP && gnn_decode_ids_req(payload, h.len, &r) == GNN_OK))
			CHECK(r.n == n && memcmp(r.ids, want, n * sizeof(int64_t)) == 0);
		gnn_proto_release(r.owned);
	} else {
		printf("  lookup: %s\n", why);
	}
	orig[0] = -1;
	w->len = 0;
	CHECK(smp_lookup_message(be, 4, 0, orig, 1, w, why, sizeof(why)) == GNN_ENOENT && w->len == 0);
	gnn_arr_close(&map);
}

static void test_partition_files(void)
{
	const char *build = getenv("GNN_BUILD");
	char dir[] = "/tmp/gnn-test-sampler.XXXXXX", cmd[1024], bin[512], out[64];
	struct smp_local *l;
	struct smp_backend be;
	struct gnn_wbuf w;
	int64_t seeds[256];

	snprintf(bin, sizeof(bin), "%s/bin/gnn-partition", build ? build : "build");
	if (access(bin, X_OK) != 0) {
		SKIP("gnn-partition is not built (set GNN_BUILD)");
		return;
	}
	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(out, sizeof(out), "%s/t", dir);
	snprintf(cmd, sizeof(cmd), "'%s' --synthetic tiny --parts 3 --out '%s' >/dev/null 2>&1", bin, out);
	if (CHECK(system(cmd) == 0) && CHECK(smp_local_open_dir(out, true, &l) == GNN_OK)) {
		const struct gnn_layout *lay = smp_local_layout(l);

		smp_local_backend(l, &be);
		gnn_wbuf_init(&w);
		for (int t = 0; t < 10; t++) {
			struct gnn_minibatch_req req = { .seed = (uint64_t)t, .num_layers = 3, .num_rels = 1, .fanouts = (const int32_t[]){ 15, 10, 5 },
							 .num_seeds = 256, .seeds = seeds,
							 .flags = GNN_MB_FEATURES | GNN_MB_LABELS };

			random_seeds(lay->num_nodes, 256, seeds);
			if (!build_and_check(&be, l, 0, &req, &w))
				break;
		}
		/* NODES over the files: each split's count is meta.json's, in
		 * ascending order, every node carrying that split code. */
		static const char *const keys[] = { NULL, "num_train", "num_valid", "num_test" };
		struct gnn_meta meta;
		int64_t total = 0;

		if (CHECK(gnn_meta_load(out, &meta) == GNN_OK)) {
			for (uint8_t split = 0; split < 4; split++) {
				int64_t cursor = 0, count = 0, prev = -1;
				bool ok = true;
				char err[256];

				while (ok && cursor != -1) {
					struct gnn_nodes_req nr = { .split = split, .limit = 100, .cursor = cursor };
					struct gnn_nodes_resp r = { 0 };
					struct gnn_hdr h;
					const void *payload;

					w.len = 0;
					ok = CHECK(smp_nodes_message(&be, 1, &nr, &w, NULL, err, sizeof(err)) == GNN_OK) &&
					     CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &payload) == GNN_OK) &&
					     CHECK(gnn_decode_nodes_resp(payload, h.len, &r) == GNN_OK);
					for (uint32_t i = 0; ok && i < r.n; i++) {
						const struct gnn_part *pt = smp_local_part(l, (uint32_t)gnn_layout_owner(lay, r.ids[i]));

						ok = CHECK(r.ids[i] > prev && pt->split[r.ids[i] - pt->node_start] == split);
						prev = r.ids[i];
					}
					if (ok) {
						count += r.n;
						cursor = r.next_cursor;
					}
					gnn_proto_release(r.owned);
				}
				total += count;
				if (keys[split] != NULL)
					CHECK(count == json_integer_value(json_object_get(meta.json, keys[split])));
			}
			CHECK(total == meta.layout.num_nodes);
			check_lookup_files(&be, out, &meta, &w);
			gnn_meta_free(&meta);
		}
		gnn_wbuf_free(&w);
		smp_local_close(l);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	gnn_log_init("test_sampler");
	gnn_log_set_level(GNN_LOG_ERROR);  /* the failures provoked here log warnings */
	gnn_metrics_new(&reg);
	make_graph();
	RUN(test_blocks_valid);
	RUN(test_edge_cases);
	RUN(test_deterministic);
	RUN(test_message_equals_encoder);
	RUN(test_bad_requests);
	RUN(test_exclusion);
	RUN(test_bad_answers);
	RUN(test_handler);
	RUN(test_fanout_zero);
	RUN(test_info_nodes);
	RUN(test_stores);
	RUN(test_stores_mismatch);
	RUN(test_stores_changed);
	RUN(test_multicall_retry);
	RUN(test_partition_files);
	free_graph();
	gnn_metrics_free(reg);
	return t_done();
}
