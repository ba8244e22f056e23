/* Unit tests of the graph store (services/graphstore) and of gnn-cli's
 * parsing and JSON conversions (services/cli), without sockets: a small
 * two-partition output is written here with libcommon's array writer, and
 * requests go straight to gs_handle.
 *
 * The graph (6 nodes; partition 0 owns [0, 3), partition 1 owns [3, 6)),
 * as in-neighbour lists:
 *   0 <- 1 2 3 4 5     3 <- 0 1
 *   1 <- 0             4 <- 5
 *   2 <- (none)        5 <- 0 1 2 3 4 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "arr.h"
#include "cli.h"
#include "embfile.h"
#include "err.h"
#include "hash.h"
#include "json.h"
#include "log.h"
#include "part.h"
#include "peers.h"
#include "proto.h"
#include "sample.h"
#include "store.h"
#include "sys.h"
#include "testlib.h"

static enum gnn_log_level log_level = GNN_LOG_ERROR; /* between tests */
static char tmpdir[] = "/tmp/gnn-gs-unit.XXXXXX";
static char out_dir[256];

static const int64_t indptr0[] = { 0, 5, 6, 6 }, indices0[] = { 1, 2, 3, 4, 5, 0 };
static const int64_t indptr1[] = { 0, 2, 3, 8 }, indices1[] = { 0, 1, 5, 0, 1, 2, 3, 4 };
static const float feat[6][2] = { { 0, 0.5f }, { 1, 1.5f }, { 2, 2.5f }, { 3, 3.5f }, { 4, 4.5f }, { 5, 5.5f } };
static const int32_t labels[6] = { 0, 1, 2, -1, 1, 0 };
static const uint8_t split[6] = { 1, 0, 1, 2, 1, 3 };

static json_t *file_entry(const char *name, const struct gnn_arr_info *in)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "file", name, "dtype", gnn_dtype_name(in->dtype), "rows",
			 (json_int_t)in->rows, "cols", (json_int_t)in->cols, "bytes", (json_int_t)in->file_bytes,
			 "crc32", (json_int_t)in->data_crc32);
}

/* Writes the graph above as a gnn-partition output in out_dir. */
static int make_output(void)
{
	const int64_t *ptrs[2] = { indptr0, indptr1 }, *idx[2] = { indices0, indices1 };
	const int64_t nedges[2] = { 6, 8 }, map[6] = { 0, 1, 2, 3, 4, 5 };
	json_t *meta, *parts = json_array();
	struct gnn_arr_info info;
	char path[512];

	snprintf(out_dir, sizeof(out_dir), "%s/out", tmpdir);
	if (gnn_mkdir_p(out_dir) != GNN_OK)
		return GNN_EIO;
	snprintf(path, sizeof(path), "%s/node-map.arr", out_dir);
	if (gnn_arr_write(path, GNN_DT_I64, 6, 1, map, &info) != GNN_OK)
		return GNN_EIO;
	meta = json_pack("{s:s, s:i, s:I, s:I, s:b, s:i, s:i, s:i, s:[i,i,i], s:o}", "format", GNN_PART_FORMAT,
			 "format_version", 1, "num_nodes", (json_int_t)6, "num_edges", (json_int_t)14, "symmetric", 0,
			 "feat_dim", 2, "num_classes", 3, "num_parts", 2, "node_offsets", 0, 3, 6, "node_map",
			 file_entry("node-map.arr", &info));
	for (int p = 0; p < 2; p++) {
		json_t *files = json_object();
		char pdir[400];

		snprintf(pdir, sizeof(pdir), "%s/part-%d", out_dir, p);
		gnn_mkdir_p(pdir);
#define WRITE(key, name, dt, rows, cols, data)                                              \
	snprintf(path, sizeof(path), "%s/%s", pdir, name);                                  \
	if (gnn_arr_write(path, dt, rows, cols, data, &info) != GNN_OK)                     \
		return GNN_EIO;                                                             \
	json_object_set_new(files, key, file_entry(name, &info))
		WRITE("indptr", "indptr.arr", GNN_DT_I64, 4, 1, ptrs[p]);
		WRITE("indices", "indices.arr", GNN_DT_I64, (uint64_t)nedges[p], 1, idx[p]);
		WRITE("feat", "feat.arr", GNN_DT_F32, 3, 2, feat[3 * p]);
		WRITE("label", "label.arr", GNN_DT_I32, 3, 1, labels + 3 * p);
		WRITE("split", "split.arr", GNN_DT_U8, 3, 1, split + 3 * p);
#undef WRITE
		json_array_append_new(parts, json_pack("{s:i, s:s, s:i, s:i, s:i, s:I, s:o}", "id", p, "dir",
						       p ? "part-1" : "part-0", "node_start", 3 * p, "node_end",
						       3 * p + 3, "num_nodes", 3, "num_edges", (json_int_t)nedges[p],
						       "files", files));
	}
	json_object_set_new(meta, "parts", parts);
	snprintf(path, sizeof(path), "%s/meta.json", out_dir);
	if (gnn_json_save_atomic(path, meta) != GNN_OK)
		return GNN_EIO;
	json_decref(meta);
	return GNN_OK;
}

/* ---- a typed graph: format 2, one partition ----
 * authors 0..2 (no features), papers 3..6 (2 features); relations writes
 * (author -> paper), rev_writes (paper -> author), cites (paper <-> paper).
 * Row v*3 + r of indptr lists v's in-neighbours under relation r. */
static char typed_dir[256];
static const int64_t t_indptr[22] = { 0, 0, 2, 2, 2, 3, 3, 3, 4, 4, 5, 5, 6, 8, 8, 10, 10, 10, 11, 12, 12, 12 };
static const int64_t t_indices[12] = { 3, 4, 4, 6, 0, 4, 0, 1, 3, 5, 4, 2 };
static const float t_feat[4][2] = { { 10, 11 }, { 20, 21 }, { 30, 31 }, { 40, 41 } };
static const int32_t t_labels[7] = { -1, -1, -1, 0, 1, 0, 1 };
static const uint8_t t_split[7] = { 0, 0, 0, 1, 2, 3, 1 };

/* Writes the typed graph into dir; label and split can be overridden to
 * write a broken output. */
static int make_typed_output(const char *dir, const int32_t *lab, const int64_t *indices)
{
	const int64_t map[7] = { 0, 1, 2, 0, 1, 2, 3 };
	json_t *meta, *files = json_object(), *feats;
	struct gnn_arr_info info;
	char path[512], pdir[400];

	snprintf(pdir, sizeof(pdir), "%s/part-0", dir);
	if (gnn_mkdir_p(pdir) != GNN_OK)
		return GNN_EIO;
	snprintf(path, sizeof(path), "%s/node-map.arr", dir);
	if (gnn_arr_write(path, GNN_DT_I64, 7, 1, map, &info) != GNN_OK)
		return GNN_EIO;
	meta = json_pack("{s:s, s:i, s:I, s:I, s:b, s:i, s:i, s:i, s:[i,i], s:o, s:s}", "format", GNN_PART_FORMAT,
			 "format_version", 2, "num_nodes", (json_int_t)7, "num_edges", (json_int_t)12, "symmetric", 1,
			 "feat_dim", 2, "num_classes", 2, "num_parts", 1, "node_offsets", 0, 7, "node_map",
			 file_entry("node-map.arr", &info), "label_type", "paper");
	json_object_set_new(meta, "node_types",
			    json_pack("[{s:s, s:i, s:i}, {s:s, s:i, s:i}]", "name", "author", "num_nodes", 3, "feat_dim", 0,
				      "name", "paper", "num_nodes", 4, "feat_dim", 2));
	json_object_set_new(meta, "relations",
			    json_pack("[{s:s, s:s, s:s, s:i}, {s:s, s:s, s:s, s:i}, {s:s, s:s, s:s, s:i}]", "name", "writes",
				      "src", "author", "dst", "paper", "num_edges", 4, "name", "rev_writes", "src", "paper",
				      "dst", "author", "num_edges", 4, "name", "cites", "src", "paper", "dst", "paper",
				      "num_edges", 4));
#define WRITE(key, name, dt, rows, cols, data)                                              \
	snprintf(path, sizeof(path), "%s/%s", pdir, name);                                  \
	if (gnn_arr_write(path, dt, rows, cols, data, &info) != GNN_OK)                     \
		return GNN_EIO;                                                             \
	json_object_set_new(files, key, file_entry(name, &info))
	WRITE("indptr", "indptr.arr", GNN_DT_I64, 22, 1, t_indptr);
	WRITE("indices", "indices.arr", GNN_DT_I64, 12, 1, indices);
	WRITE("label", "label.arr", GNN_DT_I32, 7, 1, lab);
	WRITE("split", "split.arr", GNN_DT_U8, 7, 1, t_split);
	WRITE("paper_feat", "feat-paper.arr", GNN_DT_F32, 4, 2, t_feat);
#undef WRITE
	feats = json_pack("[n, O]", json_object_get(files, "paper_feat"));
	json_object_del(files, "paper_feat");
	json_object_set_new(files, "feat", feats);
	json_object_set_new(meta, "parts",
			    json_pack("[{s:i, s:s, s:i, s:i, s:i, s:i, s:[i,i,i], s:o}]", "id", 0, "dir", "part-0",
				      "node_start", 0, "node_end", 7, "num_nodes", 7, "num_edges", 12, "type_offsets", 0,
				      3, 7, "files", files));
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	if (gnn_json_save_atomic(path, meta) != GNN_OK)
		return GNN_EIO;
	json_decref(meta);
	return GNN_OK;
}

/* A loaded store of partition p with its own registry. */
struct fixture {
	struct gnn_metrics *reg;
	struct gs_store s;
};

static bool open_store(struct fixture *f, int32_t p, bool load)
{
	memset(f, 0, sizeof(*f));
	/* no predictions there: PREDICT is tests/e2e/infer.sh's */
	if (!CHECK(gnn_metrics_new(&f->reg) == GNN_OK) ||
	    !CHECK(gs_store_init(&f->s, out_dir, "/nonexistent/predictions", p, f->reg) == GNN_OK))
		return false;
	return !load || CHECK(gs_store_load(&f->s) == GNN_OK);
}

static void close_store(struct fixture *f)
{
	gs_store_close(&f->s);
	gnn_metrics_free(f->reg);
}

/* Sends the message in req to the handler; the reply lands in rep and its
 * header in *h, its payload in *payload. Returns false if either message
 * is not a well-formed one. */
static bool call(struct gs_store *s, const struct gnn_wbuf *req, struct gnn_wbuf *rep, struct gnn_hdr *h,
		 const void **payload)
{
	struct gnn_hdr rh;
	const void *rp;

	rep->len = 0;
	if (!CHECK(gnn_proto_decode_hdr(req->buf, req->len, &rh, &rp) == GNN_OK))
		return false;
	if (!CHECK(gs_handle(s, &rh, rp, rh.len, rep) == GNN_OK) || !CHECK(!rep->failed))
		return false;
	return CHECK(gnn_proto_decode_hdr(rep->buf, rep->len, h, payload) == GNN_OK) && CHECK(h->req_id == rh.req_id);
}

/* The reply must be an ERROR with code and a text containing want. */
static bool is_error(const struct gnn_hdr *h, const void *payload, int code, const char *want)
{
	struct gnn_error_msg e;
	char text[GNN_PROTO_MAX_ERROR_TEXT + 1];

	if (!CHECK(h->type == GNN_MSG_ERROR) || !CHECK(gnn_decode_error(h, payload, &e) == GNN_OK))
		return false;
	snprintf(text, sizeof(text), "%.*s", (int)e.text_len, e.text);
	if (!CHECK((int)e.status == code) || !CHECK(strstr(text, want) != NULL)) {
		printf("  error reply: %s (%s)\n", text, gnn_errname((int)e.status));
		return false;
	}
	return true;
}

static void test_ordinal_from_host(void)
{
	int64_t v = -1;

	CHECK(gnn_host_ordinal("graphstore-3", &v) == GNN_OK && v == 3);
	CHECK(gnn_host_ordinal("gnn-dist-graphstore-12", &v) == GNN_OK && v == 12);
	CHECK(gnn_host_ordinal("graphstore-007", &v) == GNN_OK && v == 7);
	CHECK(gnn_host_ordinal("graphstore", &v) == GNN_EINVAL);
	CHECK(gnn_host_ordinal("graphstore-", &v) == GNN_EINVAL);
	CHECK(gnn_host_ordinal("graphstore-1a", &v) == GNN_EINVAL);
	CHECK(gnn_host_ordinal("graphstore-65536", &v) == GNN_EINVAL);
	CHECK(gnn_host_ordinal("graphstore-99999999999999999999999", &v) == GNN_EINVAL);
	CHECK(gnn_host_ordinal(NULL, &v) == GNN_EINVAL);
	CHECK(v == 7);  /* untouched by the failures */
}

static void test_not_ready_until_loaded(void)
{
	struct fixture f;
	struct gnn_wbuf req, rep;
	struct gnn_hdr h;
	const void *payload;
	char reason[128] = "";

	if (!open_store(&f, 0, false))
		return;
	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	CHECK(!gs_ready(&f.s, reason, sizeof(reason)) && strstr(reason, "waiting for") != NULL);
	gnn_encode_info_req(&req, 5);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EUNAVAIL, "waiting");
	CHECK(gs_store_load(&f.s) == GNN_OK);
	CHECK(gs_ready(&f.s, reason, sizeof(reason)));
	gs_store_close(&f.s);
	CHECK(!gs_ready(&f.s, reason, sizeof(reason)) && strcmp(reason, "stopping") == 0);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EUNAVAIL, "stopping");
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	gnn_metrics_free(f.reg);
}

static void test_info(void)
{
	struct fixture f0, f1;
	struct gnn_wbuf req, rep;
	struct gnn_info info;
	struct gnn_hdr h;
	const void *payload;
	uint64_t id0 = 0;

	if (!open_store(&f0, 0, true) || !open_store(&f1, 1, true))
		return;
	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	gnn_encode_info_req(&req, 9);
	if (call(&f0.s, &req, &rep, &h, &payload) && CHECK(h.type == GNN_MSG_INFO_RESP) &&
	    CHECK(gnn_decode_info_resp(payload, h.len, &info) == GNN_OK)) {
		const struct gnn_layout *l = &info.layout;

		CHECK(info.part_id == 0 && l->num_parts == 2 && l->num_nodes == 6 && l->num_edges == 14);
		CHECK(l->feat_dim == 2 && l->num_classes == 3 && info.part_edges == 6);
		CHECK(l->offsets[0] == 0 && l->offsets[1] == 3 && l->offsets[2] == 6);
		CHECK(gnn_meta_graph_id(&f0.s.meta, &id0) == GNN_OK && l->graph_id == id0 && id0 != 0);
		CHECK(f0.s.meta.layout.graph_id == id0);
		gnn_proto_release(info.owned);
	}
	if (call(&f1.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_info_resp(payload, h.len, &info) == GNN_OK)) {
		CHECK(info.part_id == 1 && info.part_edges == 8 && info.layout.graph_id == id0);
		gnn_proto_release(info.owned);
	}
	/* Another graph (a changed checksum) has another identifier. */
	json_integer_set(json_object_get(json_object_get(f0.s.meta.json, "node_map"), "crc32"), 12345);
	uint64_t other = 0;
	CHECK(gnn_meta_graph_id(&f0.s.meta, &other) == GNN_OK && other != id0);
	/* INFO carries no payload. */
	rep.len = 0;
	struct gnn_hdr bad = { .version = 1, .type = GNN_MSG_INFO_REQ, .req_id = 3, .len = 8 };
	uint64_t junk = 1;
	if (CHECK(gs_handle(&f0.s, &bad, &junk, 8, &rep) == GNN_OK) &&
	    CHECK(gnn_proto_decode_hdr(rep.buf, rep.len, &h, &payload) == GNN_OK))
		is_error(&h, payload, GNN_EPROTO, "carries 8 payload bytes");
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	close_store(&f0);
	close_store(&f1);
}

static void test_sample(void)
{
	struct fixture f;
	struct gnn_wbuf req, rep;
	struct gnn_sample_resp r;
	struct gnn_hdr h;
	const void *payload;
	const int64_t ids[] = { 0, 1, 2, 0 };
	uint32_t pos[8];

	if (!open_store(&f, 0, true))
		return;
	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	gnn_encode_sample_req(&req, 1, 77, 1, (const int32_t[]){ 2 }, ids, 4);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(h.type == GNN_MSG_SAMPLE_RESP) &&
	    CHECK(gnn_decode_sample_resp(payload, h.len, &r) == GNN_OK)) {
		/* node 0: 2 of 5, exactly gnn_sample_choose's; node 1: its only
		 * one; node 2: none; node 0 again: the same two. */
		CHECK(r.n == 4 && r.total == 5 && r.counts[0] == 2 && r.counts[1] == 1 && r.counts[2] == 0 &&
		      r.counts[3] == 2);
		CHECK(gnn_sample_choose(77, 0, 5, 2, pos) == 2);
		CHECK(r.nbrs[0] == indices0[pos[0]] && r.nbrs[1] == indices0[pos[1]]);
		CHECK(r.nbrs[2] == 0 && r.nbrs[3] == r.nbrs[0] && r.nbrs[4] == r.nbrs[1]);
		gnn_proto_release(r.owned);
	}
	CHECK(gnn_counter_value(f.s.sampled_edges) == 5);
	req.len = 0;
	gnn_encode_sample_req(&req, 2, 77, 1, (const int32_t[]){ -1 }, ids, 2);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_sample_resp(payload, h.len, &r) == GNN_OK)) {
		CHECK(r.total == 6 && memcmp(r.nbrs, indices0, sizeof(indices0)) == 0);
		gnn_proto_release(r.owned);
	}
	/* A node of partition 1, and one outside the graph. */
	req.len = 0;
	gnn_encode_sample_req(&req, 3, 77, 1, (const int32_t[]){ 2 }, (const int64_t[]){ 1, 4 }, 2);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_ERANGE, "node 4 (ids[1]) is not owned by graph store 0, which owns [0, 3); partition 1 owns it");
	req.len = 0;
	gnn_encode_sample_req(&req, 4, 77, 1, (const int32_t[]){ 2 }, (const int64_t[]){ -3 }, 1);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_ERANGE, "node -3 (ids[0]) is outside the graph [0, 6)");
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	close_store(&f);
}

static void test_rows(void)
{
	struct fixture f;
	struct gnn_wbuf req, rep;
	struct gnn_hdr h;
	const void *payload;
	const int64_t ids[] = { 5, 3, 5 };

	if (!open_store(&f, 1, true))
		return;
	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	gnn_encode_ids_req(&req, GNN_MSG_FEAT_REQ, 1, ids, 3);
	struct gnn_feat_resp fr;
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_feat_resp(payload, h.len, &fr) == GNN_OK)) {
		const float *r = fr.rows;

		CHECK(fr.n == 3 && fr.dim == 2 && fr.dtype == GNN_DT_F32 && r[0] == 5 && r[1] == 5.5f && r[2] == 3 &&
		      r[3] == 3.5f && r[5] == 5.5f);
		gnn_proto_release(fr.owned);
	}
	CHECK(gnn_counter_value(f.s.feature_rows) == 3);
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_LABEL_REQ, 2, ids, 3);
	struct gnn_label_resp lr;
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_label_resp(payload, h.len, &lr) == GNN_OK)) {
		CHECK(lr.n == 3 && lr.labels[0] == 0 && lr.labels[1] == -1 && lr.labels[2] == 0);
		gnn_proto_release(lr.owned);
	}
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_SPLIT_REQ, 3, ids, 3);
	struct gnn_split_resp sr;
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_split_resp(payload, h.len, &sr) == GNN_OK))
		CHECK(sr.n == 3 && sr.codes[0] == 3 && sr.codes[1] == 2 && sr.codes[2] == 3);
	/* An empty list is a valid request with an empty answer. */
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_LABEL_REQ, 4, NULL, 0);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_label_resp(payload, h.len, &lr) == GNN_OK)) {
		CHECK(lr.n == 0);
		gnn_proto_release(lr.owned);
	}
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_FEAT_REQ, 5, (const int64_t[]){ 2 }, 1);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_ERANGE, "node 2 (ids[0]) is not owned by graph store 1, which owns [3, 6); partition 0 owns it");
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	close_store(&f);
}

static void test_nodes_paging(void)
{
	struct fixture f;
	struct gnn_wbuf req, rep;
	struct gnn_nodes_resp r;
	struct gnn_hdr h;
	const void *payload;

	if (!open_store(&f, 0, true))
		return;
	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	/* Train nodes of partition 0: 0 and 2. Limit 1 pages one at a time. */
	gnn_encode_nodes_req(&req, 1, GNN_SPLIT_TRAIN, 1, 0);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_nodes_resp(payload, h.len, &r) == GNN_OK)) {
		CHECK(r.n == 1 && r.ids[0] == 0 && r.next_cursor == 1);
		gnn_proto_release(r.owned);
	}
	req.len = 0;
	gnn_encode_nodes_req(&req, 2, GNN_SPLIT_TRAIN, 1, 1);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_nodes_resp(payload, h.len, &r) == GNN_OK)) {
		CHECK(r.n == 1 && r.ids[0] == 2 && r.next_cursor == -1);  /* 2 is the last node */
		gnn_proto_release(r.owned);
	}
	req.len = 0;
	gnn_encode_nodes_req(&req, 3, GNN_SPLIT_TRAIN, 100, 0);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_nodes_resp(payload, h.len, &r) == GNN_OK)) {
		CHECK(r.n == 2 && r.ids[0] == 0 && r.ids[1] == 2 && r.next_cursor == -1);
		gnn_proto_release(r.owned);
	}
	/* A cursor past the partition: nothing, done. A huge limit allocates
	 * nothing more than the partition. */
	req.len = 0;
	gnn_encode_nodes_req(&req, 4, GNN_SPLIT_TEST, GNN_PROTO_MAX_IDS, 1000);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_nodes_resp(payload, h.len, &r) == GNN_OK)) {
		CHECK(r.n == 0 && r.next_cursor == -1);
		gnn_proto_release(r.owned);
	}
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	close_store(&f);
}

/* Every truncation of every request, and trailing bytes, get an ERROR
 * reply, never a crash or a success. */
static void test_malformed_requests(void)
{
	struct fixture f;
	struct gnn_wbuf reqs[5], rep;
	const int64_t ids[] = { 0, 1 };
	const float grad[4] = { 1, 2, 3, 4 };
	int bad = 0;

	if (!open_store(&f, 0, true))
		return;
	for (int i = 0; i < 5; i++)
		gnn_wbuf_init(&reqs[i]);
	gnn_wbuf_init(&rep);
	gnn_encode_sample_req(&reqs[0], 1, 5, 1, (const int32_t[]){ 3 }, ids, 2);
	gnn_encode_ids_req(&reqs[1], GNN_MSG_FEAT_REQ, 1, ids, 2);
	gnn_encode_nodes_req(&reqs[2], 1, GNN_SPLIT_TRAIN, 10, 0);
	gnn_encode_ids_req(&reqs[3], GNN_MSG_MINIBATCH_REQ, 1, ids, 2);  /* not served here */
	/* intact, an ERROR too: no INIT yet */
	gnn_encode_emb_req(&reqs[4], 1, &(struct gnn_emb_req){ .op = GNN_EMB_PUSH, .world = 1, .n = 2, .dim = 2,
							       .ids = ids, .data = grad });
	for (int i = 0; i < 5; i++) {
		size_t plen = reqs[i].len - GNN_PROTO_HDR_BYTES;
		uint8_t *copy = calloc(1, plen + 8);

		memcpy(copy, reqs[i].buf + GNN_PROTO_HDR_BYTES, plen);
		for (size_t cut = 0; cut <= plen + 1; cut++) {
			struct gnn_hdr h = { .version = 1, .req_id = 42, .len = (uint32_t)cut };
			struct gnn_hdr rh;
			const void *rp;

			memcpy(&h.type, reqs[i].buf + 6, 2);
			if (cut == plen && i < 3)
				continue;  /* the intact request */
			rep.len = 0;
			if (gs_handle(&f.s, &h, copy, cut, &rep) != GNN_OK ||
			    gnn_proto_decode_hdr(rep.buf, rep.len, &rh, &rp) != GNN_OK || rh.type != GNN_MSG_ERROR ||
			    rh.req_id != 42)
				bad++;
		}
		free(copy);
	}
	CHECK(bad == 0);
	for (int i = 0; i < 5; i++)
		gnn_wbuf_free(&reqs[i]);
	gnn_wbuf_free(&rep);
	close_store(&f);
}

static void test_load_failures(void)
{
	struct fixture f;
	char path[512], cmd[1200];
	uint8_t b;
	FILE *fp;

	gnn_log_set_level(GNN_LOG_ERROR + 1);  /* these log errors on purpose */
	if (open_store(&f, 2, false)) {
		CHECK(gs_store_load(&f.s) == GNN_ERANGE);
		CHECK(!gs_ready(&f.s, path, sizeof(path)));
		close_store(&f);
	}
	CHECK(gs_wait_data(out_dir, 0) == GNN_OK);
	CHECK(gs_wait_data(tmpdir, 0) == GNN_ENOENT);
	double t0 = gnn_now();
	CHECK(gs_wait_data(tmpdir, 1) == GNN_ETIMEDOUT);
	CHECK(gnn_now() - t0 >= 0.9 && gnn_now() - t0 < 3);
	/* Flip one byte of partition 1's features: its checksum fails. */
	snprintf(path, sizeof(path), "%s/part-1/feat.arr", out_dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.orig'", path, path);
	CHECK(system(cmd) == 0);
	fp = fopen(path, "r+b");
	if (CHECK(fp != NULL)) {
		fseek(fp, GNN_ARR_HEADER_BYTES + 3, SEEK_SET);
		b = (uint8_t)fgetc(fp);
		fseek(fp, GNN_ARR_HEADER_BYTES + 3, SEEK_SET);
		fputc(b ^ 0x10, fp);
		fclose(fp);
	}
	if (open_store(&f, 1, false)) {
		CHECK(gs_store_load(&f.s) == GNN_ECHECKSUM);
		CHECK(atomic_load(&f.s.state) != GS_READY);
		close_store(&f);
	}
	snprintf(cmd, sizeof(cmd), "mv '%s.orig' '%s'", path, path);
	CHECK(system(cmd) == 0);
	gnn_log_set_level(log_level);
}

static void test_metrics_registered(void)
{
	struct fixture f;
	char *text = NULL;

	if (!open_store(&f, 0, true))
		return;
	if (CHECK(gnn_metrics_render(f.reg, &text, NULL) == GNN_OK)) {
		CHECK(t_sample_value(text, "gnn_graphstore_ready") == 1);
		CHECK(t_sample_value(text, "gnn_graphstore_partition_nodes") == 3);
		CHECK(t_sample_value(text, "gnn_graphstore_partition_edges") == 6);
		CHECK(t_sample_value(text, "gnn_graphstore_partition_id") == 0);
		CHECK(t_sample_value(text, "gnn_graphstore_partition_bytes") == (double)f.s.mapped_bytes);
		CHECK(f.s.mapped_bytes == 5 * 64 + 4 * 8 + 6 * 8 + 3 * 8 + 3 * 4 + 3);
		CHECK(t_sample_value(text, "gnn_graphstore_sampled_edges_total") == 0);
		CHECK(t_sample_value(text, "gnn_graphstore_predictions_timestamp_seconds") == 0);
	}
	free(text);
	close_store(&f);
}

/* The predictions' time is read at each render: 0 without summary.json,
 * its modification time once the inference wrote it, 0 again when gone. */
static void test_predictions_time(void)
{
	char dir[] = "/tmp/gnn-gs-preds.XXXXXX", path[sizeof(dir) + 32], *text = NULL;
	struct gnn_metrics *reg = NULL;
	struct gs_store s;
	struct stat st;
	FILE *fp;

	if (!CHECK(mkdtemp(dir) != NULL) || !CHECK(gnn_metrics_new(&reg) == GNN_OK) ||
	    !CHECK(gs_store_init(&s, out_dir, dir, 0, reg) == GNN_OK)) {
		gnn_metrics_free(reg);
		return;
	}
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	if (CHECK(gnn_metrics_render(reg, &text, NULL) == GNN_OK))
		CHECK(t_sample_value(text, "gnn_graphstore_predictions_timestamp_seconds") == 0);
	free(text);
	text = NULL;
	if (CHECK((fp = fopen(path, "w")) != NULL)) {
		fputs("{}\n", fp);
		fclose(fp);
	}
	if (CHECK(stat(path, &st) == 0) && CHECK(gnn_metrics_render(reg, &text, NULL) == GNN_OK))
		CHECK(fabs(t_sample_value(text, "gnn_graphstore_predictions_timestamp_seconds") -
			   ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9)) < 1e-3);
	free(text);
	text = NULL;
	unlink(path);
	if (CHECK(gnn_metrics_render(reg, &text, NULL) == GNN_OK))
		CHECK(t_sample_value(text, "gnn_graphstore_predictions_timestamp_seconds") == 0);
	free(text);
	rmdir(dir);
	gs_store_close(&s);
	gnn_metrics_free(reg);
}

/* ---- gnn-cli ---- */

/* The parsers print their reasons on stderr: hide them while failing on
 * purpose. quiet() returns the saved descriptor for loud(). */
static int quiet(void)
{
	int saved = dup(2), null = open("/dev/null", O_WRONLY);

	fflush(stderr);
	if (null >= 0) {
		dup2(null, 2);
		close(null);
	}
	return saved;
}

static void loud(int saved)
{
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
}

static void test_cli_parse_ids(void)
{
	int64_t *ids = NULL;
	uint32_t n = 0;
	char path[300];
	FILE *fp;

	if (CHECK(cli_parse_ids("1,2, 3 ,40", "--nodes", &ids, &n) == GNN_OK))
		CHECK(n == 4 && ids[0] == 1 && ids[2] == 3 && ids[3] == 40);
	free(ids);
	ids = NULL;
	int saved = quiet();
	CHECK(cli_parse_ids("", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids(NULL, "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("1,,2", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("1,2,", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids(",1", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("1;2", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("-1", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("+1", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("1x", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("99999999999999999999", "--nodes", &ids, &n) == GNN_EINVAL);
	CHECK(cli_parse_ids("@/nonexistent/file", "--nodes", &ids, &n) == GNN_EIO);
	CHECK(ids == NULL);
	loud(saved);
	snprintf(path, sizeof(path), "%s/ids.txt", tmpdir);
	fp = fopen(path, "w");
	if (CHECK(fp != NULL)) {
		fputs("7\n8 9,\n10\n", fp);
		fclose(fp);
	}
	snprintf(path, sizeof(path), "@%s/ids.txt", tmpdir);
	if (CHECK(cli_parse_ids(path, "--nodes", &ids, &n) == GNN_OK))
		CHECK(n == 4 && ids[0] == 7 && ids[3] == 10);
	free(ids);
}

static void test_cli_parse_fanouts_and_split(void)
{
	int32_t f[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	struct gnn_schema plain, typed;
	uint32_t n = 0;
	uint8_t code = 9;
	int saved;

	gnn_schema_plain(&plain, 10, 10, 2);
	memset(&typed, 0, sizeof(typed));
	typed.num_types = 2;
	typed.num_rels = 2;
	typed.types[0] = (struct gnn_ntype){ "author", 5, 0 };
	typed.types[1] = (struct gnn_ntype){ "paper", 5, 2 };
	typed.rels[0] = (struct gnn_rel){ "writes", 0, 1, 3 };
	typed.rels[1] = (struct gnn_rel){ "rev_writes", 1, 0, 3 };
	typed.label_type = 1;
	CHECK(cli_parse_fanouts("--fanouts", "10,5", false, &plain, f, &n) == GNN_OK && n == 2 && f[0] == 10 && f[1] == 5);
	CHECK(cli_parse_fanouts("--fanouts", "-1", false, &plain, f, &n) == GNN_OK && n == 1 && f[0] == -1);
	CHECK(cli_parse_fanouts("--fanouts", "10,5", false, &typed, f, &n) == GNN_OK && n == 2 && f[0] == 10 &&
	      f[1] == 10 && f[2] == 5 && f[3] == 5);
	CHECK(cli_parse_fanouts("--fanouts", "writes=3,2;*=0,1", false, &typed, f, &n) == GNN_OK && n == 2 &&
	      f[0] == 3 && f[1] == 0 && f[2] == 2 && f[3] == 1);
	CHECK(cli_parse_fanouts("--fanout", "paper:rev_writes:author=4;writes=1", true, &typed, f, &n) == GNN_OK &&
	      n == 1 && f[0] == 1 && f[1] == 4);
	saved = quiet();
	CHECK(cli_parse_fanouts("--fanouts", "0,-1", false, &plain, f, &n) == GNN_OK && n == 2 && f[0] == 0);
	CHECK(cli_parse_fanouts("--fanouts", "-2", false, &plain, f, &n) == GNN_EINVAL);
	CHECK(cli_parse_fanouts("--fanouts", "5000", false, &plain, f, &n) == GNN_EINVAL);
	CHECK(cli_parse_fanouts("--fanouts", "1,2,3,4,5,6,7,8,9", false, &plain, f, &n) == GNN_EINVAL);
	CHECK(cli_parse_fanouts("--fanouts", "3,", false, &plain, f, &n) == GNN_EINVAL);
	CHECK(cli_parse_fanouts("--fanouts", NULL, false, &plain, f, &n) == GNN_EINVAL);
	CHECK(cli_parse_fanouts("--fanout", "3,2", true, &plain, f, &n) == GNN_EINVAL);
	CHECK(cli_parse_fanouts("--fanouts", "cites=3", false, &typed, f, &n) == GNN_EINVAL);     /* unknown */
	CHECK(cli_parse_fanouts("--fanouts", "writes=3", false, &typed, f, &n) == GNN_EINVAL);    /* rev_writes? */
	CHECK(cli_parse_fanouts("--fanouts", "writes=3,2;*=1", false, &typed, f, &n) == GNN_EINVAL); /* layers */
	loud(saved);
	CHECK(cli_split_code("train", &code) == GNN_OK && code == GNN_SPLIT_TRAIN);
	CHECK(cli_split_code("test", &code) == GNN_OK && code == GNN_SPLIT_TEST);
	CHECK(cli_split_code("bogus", &code) == GNN_EINVAL && code == GNN_SPLIT_TEST);
	CHECK(strcmp(cli_split_name(GNN_SPLIT_VALID), "valid") == 0 && strcmp(cli_split_name(7), "unknown") == 0);
}

static void test_cli_minibatch_json(void)
{
	/* Two layers over seeds {7, 8}: block 1 (the seeds') has sources
	 * 7 8 3, block 0 has sources 7 8 3 5. */
	const int64_t seeds[] = { 7, 8 }, src0[] = { 7, 8, 3, 5 }, src1[] = { 7, 8, 3 };
	const int32_t ptr0[] = { 0, 1, 2, 4 }, idx0[] = { 2, 3, 0, 1 };
	const int32_t ptr1[] = { 0, 2, 3 }, idx1[] = { 1, 2, 0 };
	const float feat4[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const int32_t lab[] = { 1, -1 };
	const int32_t fanouts[] = { 10, 5 };
	const uint8_t types[4] = { 0 };
	struct gnn_schema plain;
	struct gnn_minibatch_req req = { .seed = 3, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_layers = 2,
					 .num_rels = 1, .fanouts = fanouts, .num_seeds = 2, .seeds = seeds };
	struct gnn_minibatch mb = {
		.num_layers = 2, .flags = req.flags, .feat_dtype = GNN_DT_F32, .num_types = 1, .num_rels = 1,
		.feat_dims = { 2 }, .num_seeds = 2,
		.blocks = { { .num_dst = 3, .num_src = 4, .num_rels = 1, .num_edges = 4, .src_ids = src0, .indptr = ptr0,
			      .indices = idx0 },
			    { .num_dst = 2, .num_src = 3, .num_rels = 1, .num_edges = 3, .src_ids = src1, .indptr = ptr1,
			      .indices = idx1 } },
		.src_types = types, .type_rows = { 4 }, .feat = { feat4 }, .labels = lab,
	};
	json_t *doc;

	gnn_schema_plain(&plain, 10, 10, 2);
	doc = cli_minibatch_json(&req, &mb, &plain);
	char *s;

	if (!CHECK(doc != NULL))
		return;
	s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(9));
	CHECK(strstr(s, "\"fanouts\":[10,5]") != NULL);
	CHECK(strstr(s, "\"seeds\":[7,8]") != NULL);
	CHECK(strstr(s, "{\"layer\":1,\"num_dst\":2,\"num_src\":3,\"num_edges\":3,\"dst\":[7,8],\"src\":[7,8,3],"
		      "\"edges\":[[0,1],[0,2],[1,0]]}") != NULL);
	CHECK(strstr(s, "\"edges\":[[0,2],[1,3],[2,0],[2,1]]") != NULL);
	CHECK(strstr(s, "\"features\":[[0.0,1.0],[2.0,3.0],[4.0,5.0],[6.0,7.0]]") != NULL);
	CHECK(strstr(s, "\"labels\":[1,-1]") != NULL);
	free(s);
	json_decref(doc);
}

/* The typed store: its schema in INFO, sampling per relation, features
 * of one type per request, and a partition whose edges or labels break
 * the schema refused at load. */
static void test_typed(void)
{
	struct fixture f;
	struct gnn_wbuf req, rep;
	struct gnn_info info;
	struct gnn_sample_resp r;
	struct gnn_feat_resp fr;
	struct gnn_hdr h;
	const void *payload;
	uint32_t pos[2];

	memset(&f, 0, sizeof(f));
	if (!CHECK(gnn_metrics_new(&f.reg) == GNN_OK) ||
	    !CHECK(gs_store_init(&f.s, typed_dir, "/nonexistent/predictions", 0, f.reg) == GNN_OK) ||
	    !CHECK(gs_store_load(&f.s) == GNN_OK))
		return;
	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	gnn_encode_info_req(&req, 1);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_info_resp(payload, h.len, &info) == GNN_OK)) {
		const struct gnn_schema *sc = info.layout.schema;

		CHECK(sc->num_types == 2 && sc->num_rels == 3 && sc->label_type == 1 && sc->types[0].feat_dim == 0 &&
		      strcmp(sc->rels[1].name, "rev_writes") == 0 && info.layout.type_offsets[1] == 3 &&
		      info.layout.feat_dim == 2);
		gnn_proto_release(info.owned);
	}
	/* author 0: its rev_writes row only; paper 4: all of writes, 1 of cites */
	req.len = 0;
	gnn_encode_sample_req(&req, 2, 77, 3, (const int32_t[]){ -1, -1, 1 }, (const int64_t[]){ 0, 4 }, 2);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_sample_resp(payload, h.len, &r) == GNN_OK)) {
		CHECK(r.num_rels == 3 && r.total == 5 && r.counts[0] == 0 && r.counts[1] == 2 && r.counts[2] == 0 &&
		      r.counts[3] == 2 && r.counts[4] == 0 && r.counts[5] == 1);
		CHECK(r.nbrs[0] == 3 && r.nbrs[1] == 4 && r.nbrs[2] == 0 && r.nbrs[3] == 1);
		CHECK(gnn_sample_choose(gnn_sample_rel_seed(77, 2), 4, 2, 1, pos) == 1 && r.nbrs[4] == (pos[0] ? 5 : 3));
		gnn_proto_release(r.owned);
	}
	req.len = 0;
	gnn_encode_sample_req(&req, 3, 77, 2, (const int32_t[]){ 1, 1 }, (const int64_t[]){ 0 }, 1);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EINVAL, "fanouts for 2 relations; the graph has 3");
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_FEAT_REQ, 4, (const int64_t[]){ 6, 3 }, 2);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_feat_resp(payload, h.len, &fr) == GNN_OK)) {
		const float *fv = fr.rows;

		CHECK(fr.n == 2 && fr.dim == 2 && fv[0] == 40 && fv[1] == 41 && fv[2] == 10);
		gnn_proto_release(fr.owned);
	}
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_FEAT_REQ, 5, (const int64_t[]){ 3, 0 }, 2);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EINVAL, "mixes node types: node 3 (ids[0]) is of type paper, node 0 (ids[1]) of type author");
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_FEAT_REQ, 6, (const int64_t[]){ 1 }, 1);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EINVAL, "nodes of type author (node 1) have no features");
	req.len = 0;
	gnn_encode_ids_req(&req, GNN_MSG_PREDICT_REQ, 7, (const int64_t[]){ 4, 2 }, 2);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EINVAL, "node 2 (ids[1]) is of type author: predictions are of paper nodes");
	/* LOOKUP: papers 3, 0 and 9 (none such) by their original IDs; author 2 */
	struct gnn_ids lr;
	req.len = 0;
	gnn_encode_lookup_req(&req, 8, 1, (const int64_t[]){ 3, 0, 9 }, 3);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(h.type == GNN_MSG_LOOKUP_RESP) &&
	    CHECK(gnn_decode_ids_req(payload, h.len, &lr) == GNN_OK)) {
		CHECK(lr.n == 3 && lr.ids[0] == 6 && lr.ids[1] == 3 && lr.ids[2] == -1);
		gnn_proto_release(lr.owned);
	}
	req.len = 0;
	gnn_encode_lookup_req(&req, 9, 0, (const int64_t[]){ 2 }, 1);
	if (call(&f.s, &req, &rep, &h, &payload) && CHECK(gnn_decode_ids_req(payload, h.len, &lr) == GNN_OK)) {
		CHECK(lr.n == 1 && lr.ids[0] == 2);
		gnn_proto_release(lr.owned);
	}
	req.len = 0;
	gnn_encode_lookup_req(&req, 10, 5, (const int64_t[]){ 2 }, 1);
	if (call(&f.s, &req, &rep, &h, &payload))
		is_error(&h, payload, GNN_EINVAL, "no node type 5: the graph has 2");
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	close_store(&f);
}

/* Outputs that break the schema: a store refuses to load them. */
static void test_typed_refused(void)
{
	int32_t lab[7];
	int64_t indices[12];
	char dir[300];
	struct fixture f;
	int saved = quiet();

	memcpy(lab, t_labels, sizeof(lab));
	memcpy(indices, t_indices, sizeof(indices));
	lab[1] = 0;  /* a label on an author */
	snprintf(dir, sizeof(dir), "%s/typed-label", tmpdir);
	CHECK(make_typed_output(dir, lab, indices) == GNN_OK);
	memset(&f, 0, sizeof(f));
	if (CHECK(gnn_metrics_new(&f.reg) == GNN_OK) && CHECK(gs_store_init(&f.s, dir, "/none", 0, f.reg) == GNN_OK))
		CHECK(gs_store_load(&f.s) == GNN_EFORMAT);
	close_store(&f);
	lab[1] = -1;
	indices[4] = 1;  /* paper 3's writes row names author 1... */
	indices[5] = 2;  /* ...and its cites row author 2: not a paper */
	snprintf(dir, sizeof(dir), "%s/typed-edge", tmpdir);
	CHECK(make_typed_output(dir, lab, indices) == GNN_OK);
	memset(&f, 0, sizeof(f));
	if (CHECK(gnn_metrics_new(&f.reg) == GNN_OK) && CHECK(gs_store_init(&f.s, dir, "/none", 0, f.reg) == GNN_OK))
		CHECK(gs_store_load(&f.s) == GNN_EFORMAT);
	close_store(&f);
	loud(saved);
}

/* ---- learnable embeddings (services/graphstore/emb_table.h) ----
 * On the typed store: authors 0..2 embedded 3 wide, papers 3..6 2 wide.
 * The reference below recomputes emb_table.h's rule row by row from the
 * pushes, in rank order, with the same float and double operations. */
#define EMB_NODES 7
#define EMB_GEN 7
#define EMB_STEP 5

static uint32_t emb_type_of(int64_t v)
{
	return v < 3 ? 0 : 1;
}

static struct gnn_emb_cfg emb_cfg(uint32_t optimizer, uint64_t seed)
{
	return (struct gnn_emb_cfg){ .num_types = 2, .dim = { 3, 2 }, .optimizer = optimizer, .lr = 0.05f,
				     .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-6f, .seed = seed, .hash = 0xabcdef12 };
}

/* Column j of node v's initial row (proto.h's INIT, emb_table.h). */
static float emb_init_value(uint64_t seed, uint32_t t, int64_t v, uint32_t j)
{
	return (float)(2 * gnn_unit64(gnn_draw64(gnn_draw64(gnn_draw64(seed ^ 0x656d6265646400ull, t), (uint64_t)v), j)) - 1);
}

/* One rank's push of one type: n rows of ids and their gradients. */
struct emb_push {
	uint32_t rank, type, n;
	const int64_t *ids;
	const float *grad;
};

/* The reference state: node v's row, optimizer state (m is Adagrad's
 * sum of squares) and step count; papers use 2 of the 3 columns. */
struct emb_ref {
	struct gnn_emb_cfg cfg;
	float w[EMB_NODES][3], m[EMB_NODES][3], v[EMB_NODES][3];
	uint32_t steps[EMB_NODES];
};

static void ref_init(struct emb_ref *r, const struct gnn_emb_cfg *cfg)
{
	memset(r, 0, sizeof(*r));
	r->cfg = *cfg;
	for (int64_t v = 0; v < EMB_NODES; v++)
		for (uint32_t j = 0; j < cfg->dim[emb_type_of(v)]; j++)
			r->w[v][j] = emb_init_value(cfg->seed, emb_type_of(v), v, j);
}

/* One update of np pushes (any order) from world ranks. */
static void ref_update(struct emb_ref *r, const struct emb_push *p, size_t np, uint32_t world)
{
	const struct gnn_emb_cfg *c = &r->cfg;

	for (int64_t v = 0; v < EMB_NODES; v++) {
		uint32_t t = emb_type_of(v), d = c->dim[t], cnt = 0;
		float g[3] = { 0, 0, 0 };

		for (uint32_t rank = 0; rank < world; rank++)
			for (size_t k = 0; k < np; k++)
				for (uint32_t i = 0; p[k].rank == rank && p[k].type == t && i < p[k].n; i++)
					if (p[k].ids[i] == v) {
						for (uint32_t j = 0; j < d; j++)
							g[j] += p[k].grad[i * d + j];
						cnt++;
					}
		if (cnt == 0)
			continue;  /* lazy: untouched rows keep value, state and step count */
		for (uint32_t j = 0; j < d; j++)
			g[j] /= (float)cnt;
		if (c->optimizer == GNN_EMB_ADAM) {
			double c1 = 1.0 - pow((double)c->beta1, (double)++r->steps[v]);
			double c2 = 1.0 - pow((double)c->beta2, (double)r->steps[v]);

			for (uint32_t j = 0; j < d; j++) {
				r->m[v][j] = c->beta1 * r->m[v][j] + (1.0f - c->beta1) * g[j];
				r->v[v][j] = c->beta2 * r->v[v][j] + (1.0f - c->beta2) * g[j] * g[j];
				r->w[v][j] -= (float)((double)c->lr * (r->m[v][j] / c1) /
						      (sqrt(r->v[v][j] / c2) + (double)c->eps));
			}
		} else {
			for (uint32_t j = 0; j < d; j++) {
				r->m[v][j] += g[j] * g[j];
				r->w[v][j] -= c->lr * g[j] / (sqrtf(r->m[v][j]) + c->eps);
			}
		}
	}
}

/* Update A: two ranks, overlapping rows, author 1 twice in each push and
 * author 2, papers 4 and 6 untouched. Author 1's column 0 sums to 1 in
 * rank order ((1e8 + 0.5) - 1e8 + 1) and to 0.5 in the reverse one. */
static const int64_t a_ids0[] = { 1, 0, 1 }, a_ids1[] = { 1, 1 }, p_ids0[] = { 3, 5 }, p_ids1[] = { 5 };
static const float a_grad0[] = { 1e8f, 0.5f, -0.25f, 0.125f, 2, 3, 0.5f, -1, 0.75f };
static const float a_grad1[] = { -1e8f, 0.25f, 4, 1, 1.5f, 0.5f };
static const float p_grad0[] = { 0.1f, -0.2f, 0.3f, 0.4f }, p_grad1[] = { -0.7f, 0.9f };
static const struct emb_push update_a[4] = {
	{ .rank = 0, .type = 0, .n = 3, .ids = a_ids0, .grad = a_grad0 },
	{ .rank = 1, .type = 0, .n = 2, .ids = a_ids1, .grad = a_grad1 },
	{ .rank = 0, .type = 1, .n = 2, .ids = p_ids0, .grad = p_grad0 },
	{ .rank = 1, .type = 1, .n = 1, .ids = p_ids1, .grad = p_grad1 },
};
/* Update B: one rank; author 1 and paper 3 again, an empty push of papers
 * would do too but this one is not empty. */
static const int64_t b_ids_a[] = { 1 }, b_ids_p[] = { 3 };
static const float b_grad_a[] = { 0.5f, -0.5f, 0.25f }, b_grad_p[] = { 2, -3 };
static const struct emb_push update_b[2] = {
	{ .rank = 0, .type = 0, .n = 1, .ids = b_ids_a, .grad = b_grad_a },
	{ .rank = 0, .type = 1, .n = 1, .ids = b_ids_p, .grad = b_grad_p },
};

/* A store with its buffers and the last reply. */
struct emb_fix {
	struct fixture f;
	struct gnn_wbuf req, rep;
	struct gnn_hdr h;
	const void *payload;
	struct gnn_emb_resp r;  /* the last EMB_RESP (its data borrowed from rep) */
	uint64_t id;
};

/* A store of partition p of dir; wal: its embeddings' log (NULL: none). */
static bool emb_open_wal(struct emb_fix *x, const char *dir, int32_t p, const char *wal)
{
	memset(x, 0, sizeof(*x));
	gnn_wbuf_init(&x->req);
	gnn_wbuf_init(&x->rep);
	if (!CHECK(gnn_metrics_new(&x->f.reg) == GNN_OK) ||
	    !CHECK(gs_store_init(&x->f.s, dir, "/nonexistent/predictions", p, x->f.reg) == GNN_OK))
		return false;
	x->f.s.emb_wal_dir = wal;
	return CHECK(gs_store_load(&x->f.s) == GNN_OK);
}

static bool emb_open(struct emb_fix *x, const char *dir, int32_t p)
{
	return emb_open_wal(x, dir, p, NULL);
}

static void emb_close(struct emb_fix *x)
{
	gnn_proto_release(x->r.owned);
	gnn_wbuf_free(&x->req);
	gnn_wbuf_free(&x->rep);
	close_store(&x->f);
}

/* Sends q; true when the answer is an EMB_RESP (in x->r), false for an
 * ERROR (in x->h and x->payload). */
static bool emb_send(struct emb_fix *x, const struct gnn_emb_req *q)
{
	gnn_proto_release(x->r.owned);
	x->r = (struct gnn_emb_resp){ 0 };
	x->req.len = 0;
	if (!CHECK(gnn_encode_emb_req(&x->req, ++x->id, q) == GNN_OK) ||
	    !call(&x->f.s, &x->req, &x->rep, &x->h, &x->payload))
		return false;
	return x->h.type == GNN_MSG_EMB_RESP && CHECK(gnn_decode_emb_resp(x->payload, x->h.len, &x->r) == GNN_OK);
}

/* q must be answered, with the state (gen, version) after it. */
static bool emb_ok(struct emb_fix *x, const struct gnn_emb_req *q, uint64_t gen, uint64_t version)
{
	struct gnn_error_msg e;

	if (emb_send(x, q))
		return CHECK(x->r.gen == gen) && CHECK(x->r.version == version);
	if (x->h.type == GNN_MSG_ERROR && gnn_decode_error(&x->h, x->payload, &e) == GNN_OK)
		printf("  unexpected error reply to op %u: %.*s\n", q->op, (int)e.text_len, e.text);
	return CHECK(false);
}

/* q must get an ERROR of code whose text contains want. */
static bool emb_refused(struct emb_fix *x, const struct gnn_emb_req *q, int code, const char *want)
{
	return CHECK(!emb_send(x, q)) && is_error(&x->h, x->payload, code, want);
}

static bool emb_init(struct emb_fix *x, const struct gnn_emb_cfg *cfg, uint64_t gen, uint64_t step)
{
	struct gnn_emb_req q = { .op = GNN_EMB_INIT, .gen = gen, .step = step, .cfg = *cfg };

	return emb_ok(x, &q, gen, step) && CHECK(x->r.cfg_hash == cfg->hash);
}

static bool emb_push(struct emb_fix *x, const struct emb_push *p, uint32_t world, uint64_t gen, uint64_t step,
		     uint64_t version_after)
{
	struct gnn_emb_req q = { .op = GNN_EMB_PUSH, .node_type = p->type, .rank = p->rank, .world = world,
				 .gen = gen, .step = step, .n = p->n, .dim = p->type == 0 ? 3 : 2, .ids = p->ids,
				 .data = p->grad };

	return emb_ok(x, &q, gen, version_after);
}

/* Pushes update u (np pushes, in the order given) as update step. */
static bool emb_update(struct emb_fix *x, const struct emb_push *u, size_t np, uint32_t world, uint64_t gen,
		       uint64_t step)
{
	for (size_t k = 0; k < np; k++)
		if (!emb_push(x, &u[k], world, gen, step, k + 1 < np ? step : step + 1))
			return false;
	return true;
}

/* Every node's row of array (ROWS or BEST_ROWS) at version step, by PULL. */
static bool emb_pull_all(struct emb_fix *x, uint64_t gen, uint64_t step, uint32_t array, float out[EMB_NODES][3])
{
	static const int64_t ids[2][4] = { { 2, 0, 1 }, { 6, 3, 5, 4 } };
	static const uint32_t n[2] = { 3, 4 };

	memset(out, 0, sizeof(float) * EMB_NODES * 3);
	for (uint32_t t = 0; t < 2; t++) {
		struct gnn_emb_req q = { .op = GNN_EMB_PULL, .node_type = t, .array = array, .gen = gen, .step = step,
					 .n = n[t], .ids = ids[t] };
		uint32_t d = t == 0 ? 3 : 2;

		if (!emb_ok(x, &q, gen, step) || !CHECK(x->r.n == n[t] && x->r.dim == d))
			return false;
		for (uint32_t i = 0; i < n[t]; i++)
			memcpy(out[ids[t][i]], (const float *)x->r.data + i * d, d * sizeof(float));
	}
	return true;
}

/* Rows [first, first + n) of one array of type t, by READ, into out (words). */
static bool emb_read(struct emb_fix *x, uint64_t gen, uint32_t t, uint32_t array, int64_t first, uint32_t n,
		     uint32_t *out)
{
	struct gnn_emb_req q = { .op = GNN_EMB_READ, .node_type = t, .array = array, .gen = gen,
				 .step = x->r.version, .first = first, .n = n };
	uint32_t d = array == GNN_EMB_STEPS ? 1 : t == 0 ? 3 : 2;

	if (!emb_ok(x, &q, gen, x->r.version) || !CHECK(x->r.n == n && x->r.dim == d))
		return false;
	memcpy(out, x->r.data, (size_t)n * d * 4);
	return true;
}

static bool rows_equal(float a[EMB_NODES][3], float b[EMB_NODES][3])
{
	return memcmp(a, b, sizeof(float) * EMB_NODES * 3) == 0;
}

static double metric(struct gnn_metrics *reg, const char *key)
{
	char *text = NULL;
	double v = NAN;

	if (CHECK(gnn_metrics_render(reg, &text, NULL) == GNN_OK))
		v = t_sample_value(text, key);
	free(text);
	return v;
}

/* INIT's rows are the seed's formula; a second INIT of the seed gives
 * them back; STATUS answers before any INIT. */
static void test_emb_init_pull(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42), other = emb_cfg(GNN_EMB_ADAM, 43);
	struct emb_fix x;
	float rows[EMB_NODES][3], best[EMB_NODES][3];
	uint32_t steps[3] = { 7, 7, 7 };
	struct emb_ref ref;

	if (!emb_open(&x, typed_dir, 0))
		goto out;
	if (emb_ok(&x, &(struct gnn_emb_req){ .op = GNN_EMB_STATUS, .gen = 3 }, 0, 0))
		CHECK(x.r.cfg_hash == 0 && x.r.n == 0);
	cfg.num_types = 3;
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_INIT, .gen = 1, .cfg = cfg }, GNN_EINVAL,
		    "INIT configures 3 node types; the graph has 2");
	cfg.num_types = 2;
	if (!emb_init(&x, &cfg, EMB_GEN, EMB_STEP) || !emb_pull_all(&x, EMB_GEN, EMB_STEP, GNN_EMB_ROWS, rows) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP, GNN_EMB_BEST_ROWS, best))
		goto out;
	CHECK(rows[0][0] == emb_init_value(42, 0, 0, 0) && rows[2][2] == emb_init_value(42, 0, 2, 2) &&
	      rows[5][1] == emb_init_value(42, 1, 5, 1));
	CHECK(rows[4][0] != rows[4][1] && rows[4][0] > -1 && rows[4][0] < 1);
	ref_init(&ref, &cfg);
	CHECK(rows_equal(rows, ref.w) && rows_equal(best, ref.w));
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_rows") == 7);
	/* authors 3 x (16 x 3 + 16), papers 4 x (16 x 2 + 16) */
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_state_bytes") == 3 * 64 + 4 * 48);
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_rows_pulled_total") == 14);
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_bytes_total{direction=\"out\"}") == 2 * (9 + 8) * 4);
	/* another seed, then this one again: the formula's rows, not the last state's */
	if (emb_init(&x, &other, EMB_GEN + 1, 0) && emb_pull_all(&x, EMB_GEN + 1, 0, GNN_EMB_ROWS, rows))
		CHECK(rows[0][0] == emb_init_value(43, 0, 0, 0) && rows[0][0] != ref.w[0][0]);
	if (emb_update(&x, update_b, 2, 1, EMB_GEN + 1, 0) && emb_init(&x, &cfg, EMB_GEN + 2, 9) &&
	    emb_pull_all(&x, EMB_GEN + 2, 9, GNN_EMB_ROWS, rows) && emb_pull_all(&x, EMB_GEN + 2, 9, GNN_EMB_BEST_ROWS, best))
		CHECK(rows_equal(rows, ref.w) && rows_equal(best, ref.w));
	if (emb_read(&x, EMB_GEN + 2, 0, GNN_EMB_STEPS, 0, 3, steps))
		CHECK(steps[0] == 0 && steps[1] == 0 && steps[2] == 0);
out:
	emb_close(&x);
}

/* Two ranks' pushes in either arrival order give the same rows bit for
 * bit, the reference's (Adam, then Adagrad); the update waits for the
 * last push, and is applied after its answer. */
static void test_emb_push_order(void)
{
	static const uint32_t optims[2] = { GNN_EMB_ADAM, GNN_EMB_ADAGRAD };

	for (int o = 0; o < 2; o++) {
		struct gnn_emb_cfg cfg = emb_cfg(optims[o], 42);
		float rows[2][EMB_NODES][3], before[EMB_NODES][3];
		struct emb_push reversed[4];
		struct emb_ref ref;
		struct emb_fix x;

		for (int k = 0; k < 4; k++)
			reversed[k] = update_a[3 - k];
		if (!emb_open(&x, typed_dir, 0))
			goto next;
		for (int order = 0; order < 2; order++) {
			const struct emb_push *u = order ? reversed : update_a;

			if (!emb_init(&x, &cfg, EMB_GEN, EMB_STEP) || !emb_push(&x, &u[0], 2, EMB_GEN, EMB_STEP, EMB_STEP) ||
			    !emb_push(&x, &u[1], 2, EMB_GEN, EMB_STEP, EMB_STEP) ||
			    !emb_push(&x, &u[2], 2, EMB_GEN, EMB_STEP, EMB_STEP) ||
			    !emb_pull_all(&x, EMB_GEN, EMB_STEP, GNN_EMB_ROWS, before) ||
			    !emb_push(&x, &u[3], 2, EMB_GEN, EMB_STEP, EMB_STEP + 1))
				goto next;
			/* answered first, applied after: by the hook after the
			 * answer, or else by the next request */
			CHECK(metric(x.f.reg, "gnn_graphstore_embedding_updates_total") == order);
			if (order == 0)
				gs_after_reply(&x.f.s);
			CHECK(metric(x.f.reg, "gnn_graphstore_embedding_updates_total") == order + (order == 0));
			if (!emb_pull_all(&x, EMB_GEN, EMB_STEP + 1, GNN_EMB_ROWS, rows[order]))
				goto next;
			CHECK(metric(x.f.reg, "gnn_graphstore_embedding_updates_total") == order + 1);
			ref_init(&ref, &cfg);
			CHECK(rows_equal(before, ref.w));  /* three of four pushes: nothing applied */
		}
		ref_update(&ref, update_a, 4, 2);
		CHECK(rows_equal(rows[0], rows[1]));
		CHECK(rows_equal(rows[0], ref.w));
		CHECK(rows[0][2][0] == emb_init_value(42, 0, 2, 0) && rows[0][1][0] != emb_init_value(42, 0, 1, 0));
		CHECK(metric(x.f.reg, "gnn_graphstore_embedding_updates_total") == 2);
		CHECK(metric(x.f.reg, "gnn_graphstore_embedding_rows_pushed_total") == 16);
		CHECK(metric(x.f.reg, "gnn_graphstore_embedding_bytes_total{direction=\"in\"}") == 2 * (5 * 12 + 3 * 8));
		CHECK(metric(x.f.reg, "gnn_graphstore_embedding_update_seconds_total") > 0);
next:
		emb_close(&x);
	}
}

/* Lazy Adam: an untouched row keeps its value, state and step count;
 * each row's bias correction uses its own count. */
static void test_emb_lazy_adam(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	float rows[EMB_NODES][3], after_a[EMB_NODES][3];
	uint32_t steps[4], m[12];
	struct emb_ref ref;
	struct emb_fix x;

	ref_init(&ref, &cfg);
	ref_update(&ref, update_a, 4, 2);
	ref_update(&ref, update_b, 2, 1);
	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) ||
	    !emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP + 1, GNN_EMB_ROWS, after_a) ||
	    !emb_update(&x, update_b, 2, 1, EMB_GEN, EMB_STEP + 1) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP + 2, GNN_EMB_ROWS, rows))
		goto out;
	CHECK(rows_equal(rows, ref.w));
	CHECK(memcmp(rows[0], after_a[0], 12) == 0 && memcmp(rows[5], after_a[5], 8) == 0);
	CHECK(rows[2][1] == emb_init_value(42, 0, 2, 1) && rows[4][0] == emb_init_value(42, 1, 4, 0));
	CHECK(memcmp(rows[1], after_a[1], 12) != 0);
	if (emb_read(&x, EMB_GEN, 0, GNN_EMB_STEPS, 0, 3, steps))
		CHECK(steps[0] == 1 && steps[1] == 2 && steps[2] == 0);
	if (emb_read(&x, EMB_GEN, 1, GNN_EMB_STEPS, 3, 4, steps))
		CHECK(steps[0] == 2 && steps[1] == 0 && steps[2] == 1 && steps[3] == 0);
	if (emb_read(&x, EMB_GEN, 0, GNN_EMB_STATE1, 0, 3, m))
		CHECK(memcmp(m, ref.m[0], 36) == 0 && m[6] == 0 && m[7] == 0 && m[8] == 0);
out:
	emb_close(&x);
}

/* DELTA of type t's ids from version `from` at version step must answer
 * the rows at indexes want[nw] (ascending), each as rows (a PULL's) has it. */
static void emb_delta_is(struct emb_fix *x, uint32_t t, const int64_t *ids, uint32_t n, uint64_t from, uint64_t step,
			 const uint32_t *want, uint32_t nw, float rows[EMB_NODES][3])
{
	struct gnn_emb_req q = { .op = GNN_EMB_DELTA, .node_type = t, .gen = EMB_GEN, .step = step,
				 .first = (int64_t)from, .n = n, .ids = ids };
	uint32_t d = t == 0 ? 3 : 2;
	const uint32_t *w;

	if (!emb_ok(x, &q, EMB_GEN, step) || !CHECK(x->r.n == nw) || nw == 0 || !CHECK(x->r.dim == d + 1))
		return;
	w = x->r.data;
	for (uint32_t k = 0; k < nw; k++, w += d + 1)
		CHECK(w[0] == want[k] && memcmp(w + 1, rows[ids[want[k]]], d * 4) == 0);
}

/* DELTA: of the IDs asked, the rows updates changed since a version, each
 * after its index, as they are now; every row once a WRITE set them;
 * refused at another version than the store's. */
static void test_emb_delta(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	static const int64_t authors[] = { 2, 0, 1 }, papers[] = { 6, 3, 5, 4 };
	float rows[EMB_NODES][3];
	struct emb_fix x;

	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP, GNN_EMB_ROWS, rows))
		goto out;
	emb_delta_is(&x, 0, authors, 3, EMB_STEP, EMB_STEP, NULL, 0, rows);
	/* update A: authors 0 and 1, papers 3 and 5 */
	if (!emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP + 1, GNN_EMB_ROWS, rows))
		goto out;
	emb_delta_is(&x, 0, authors, 3, EMB_STEP, EMB_STEP + 1, (const uint32_t[]){ 1, 2 }, 2, rows);
	emb_delta_is(&x, 1, papers, 4, EMB_STEP, EMB_STEP + 1, (const uint32_t[]){ 1, 2 }, 2, rows);
	/* update B: author 1, paper 3; from before A: both updates' rows */
	if (!emb_update(&x, update_b, 2, 1, EMB_GEN, EMB_STEP + 1) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP + 2, GNN_EMB_ROWS, rows))
		goto out;
	emb_delta_is(&x, 0, authors, 3, EMB_STEP + 1, EMB_STEP + 2, (const uint32_t[]){ 2 }, 1, rows);
	emb_delta_is(&x, 1, papers, 4, EMB_STEP + 1, EMB_STEP + 2, (const uint32_t[]){ 1 }, 1, rows);
	emb_delta_is(&x, 0, authors, 3, EMB_STEP, EMB_STEP + 2, (const uint32_t[]){ 1, 2 }, 2, rows);
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_rows_refreshed_total") == 8);
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_DELTA, .gen = EMB_GEN, .step = EMB_STEP + 1,
					       .first = EMB_STEP, .n = 3, .ids = authors },
		    GNN_ESTALE, "DELTA from version 5 to 6, but graph store 0 is at version 7");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_DELTA, .gen = EMB_GEN, .step = EMB_STEP + 2,
					       .first = EMB_STEP + 3, .n = 3, .ids = authors },
		    GNN_ESTALE, "DELTA from version 8 to 7");
	/* a WRITE of the authors' rows (the same values): the store cannot
	 * tell what changed, so every row of either type, from any version */
	emb_ok(&x, &(struct gnn_emb_req){ .op = GNN_EMB_WRITE, .node_type = 0, .array = GNN_EMB_ROWS, .gen = EMB_GEN,
					  .step = EMB_STEP + 2, .first = 0, .n = 3, .dim = 3, .data = rows[0] },
	       EMB_GEN, EMB_STEP + 2);
	emb_delta_is(&x, 0, authors, 3, EMB_STEP + 2, EMB_STEP + 2, (const uint32_t[]){ 0, 1, 2 }, 3, rows);
	emb_delta_is(&x, 1, papers, 4, EMB_STEP + 2, EMB_STEP + 2, (const uint32_t[]){ 0, 1, 2, 3 }, 4, rows);
out:
	emb_close(&x);
}

/* Rows wider than the store's vector path (11 columns: two blocks of 4
 * and a tail of 3) come out bit for bit as the scalar rule's, step after
 * step, for gradients of very different sizes. */
static void test_emb_adam_wide(void)
{
	struct gnn_emb_cfg cfg = { .num_types = 2, .dim = { 11, 0 }, .optimizer = GNN_EMB_ADAM, .lr = 0.05f,
				   .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-6f, .seed = 9, .hash = 0x1234 };
	static const int64_t ids[] = { 2, 0, 2 };  /* node 2 twice: its mean */
	float w[2][11], m[2][11] = { { 0 } }, v[2][11] = { { 0 } }, g[33];
	struct emb_fix x;

	for (uint32_t i = 0; i < 2; i++)
		for (uint32_t j = 0; j < 11; j++)
			w[i][j] = emb_init_value(9, 0, ids[i], j);
	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, 0))
		goto out;
	for (uint32_t s = 0; s < 5; s++) {
		double c1 = 1.0 - pow((double)cfg.beta1, (double)(s + 1));
		double c2 = 1.0 - pow((double)cfg.beta2, (double)(s + 1));
		struct gnn_emb_req q = { .op = GNN_EMB_PUSH, .world = 1, .gen = EMB_GEN, .step = s, .n = 3, .dim = 11,
					 .ids = ids, .data = g };

		for (uint32_t k = 0; k < 33; k++)
			g[k] = (float)sin(1.0 + s * 22 + k) * (k % 3 == 0 ? 10.0f : k % 3 == 1 ? 1e-3f : 1e-7f);
		if (!emb_ok(&x, &q, EMB_GEN, s + 1))
			goto out;
		for (uint32_t i = 0; i < 2; i++)
			for (uint32_t j = 0; j < 11; j++) {
				float gj = i == 0 ? (g[j] + g[22 + j]) / 2.0f : g[11 + j];

				m[i][j] = cfg.beta1 * m[i][j] + (1.0f - cfg.beta1) * gj;
				v[i][j] = cfg.beta2 * v[i][j] + (1.0f - cfg.beta2) * gj * gj;
				w[i][j] -= (float)((double)cfg.lr * (m[i][j] / c1) / (sqrt(v[i][j] / c2) + (double)cfg.eps));
			}
	}
	struct gnn_emb_req pull = { .op = GNN_EMB_PULL, .gen = EMB_GEN, .step = 5, .n = 2, .ids = ids };  /* 2, 0 */

	if (emb_ok(&x, &pull, EMB_GEN, 5) && CHECK(x.r.n == 2 && x.r.dim == 11))
		CHECK(memcmp(x.r.data, w, sizeof(w)) == 0);
	/* the moments too: a float rounding of theirs rarely shows in w */
	for (uint32_t a = GNN_EMB_STATE1; a <= GNN_EMB_STATE2; a++) {
		struct gnn_emb_req rd = { .op = GNN_EMB_READ, .array = a, .gen = EMB_GEN, .step = 5, .first = 0, .n = 3 };
		float (*want)[11] = a == GNN_EMB_STATE1 ? m : v;

		if (emb_ok(&x, &rd, EMB_GEN, 5) && CHECK(x.r.n == 3 && x.r.dim == 11))
			CHECK(memcmp((const float *)x.r.data + 2 * 11, want[0], sizeof(want[0])) == 0 &&
			      memcmp(x.r.data, want[1], sizeof(want[1])) == 0);
	}
out:
	emb_close(&x);
}

/* SAVE: a forked child writes every array of the store into the
 * checkpoint's files as they were at the SAVE, while the store goes on
 * (an update applied right after it does not reach the files), then its
 * record; and what SAVE refuses. */
#define SAVE_FILES 10   /* 2 types x 5 arrays (Adam) */

static bool save_files(const struct emb_fix *x, const char *dir, bool make)
{
	const struct gnn_schema *sc = x->f.s.meta.layout.schema;
	char path[700];
	int fd;

	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++) {
			if (!CHECK(gnn_emb_file(path, sizeof(path), dir, sc->types[t].name, a) == GNN_OK))
				return false;
			if (!make)
				gnn_arr_shared_abort(path);
			else if (!CHECK(gnn_arr_shared_create(path, a == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32,
							      t == 0 ? 3 : 4, a == GNN_EMB_STEPS ? 1 : 2 + (t == 0)) == GNN_OK))
				return false;
		}
	if (!CHECK(gnn_emb_snap_file(path, sizeof(path), dir, 0) == GNN_OK))
		return false;
	unlink(path);
	if (make && !CHECK((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0))
		return false;
	if (make)
		close(fd);
	return true;
}

/* The child's record, once whole (30 s at most). */
static bool save_record(const char *dir, struct gnn_emb_snap *r)
{
	uint8_t buf[GNN_EMB_SNAP_BYTES + 1];
	char path[700];

	gnn_emb_snap_file(path, sizeof(path), dir, 0);
	for (int i = 0; i < 3000; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

		if (fd >= 0)
			close(fd);
		if (len > 0 && gnn_emb_snap_decode(buf, (size_t)len, r) == GNN_OK)
			return true;
		usleep(10000);
	}
	return CHECK(false);
}

static void test_emb_save(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	char dir[512], bad[600], path[700];
	uint32_t want[2][GNN_EMB_ARRAYS][12];
	struct gnn_emb_snap r;
	struct emb_fix x;

	snprintf(dir, sizeof(dir), "%s/ck/.tmp-epoch-000001-000000-1", tmpdir);
	struct gnn_emb_req q = { .op = GNN_EMB_SAVE, .gen = EMB_GEN, .step = EMB_STEP + 1, .n = (uint32_t)strlen(dir),
				 .data = dir };

	if (!emb_open(&x, typed_dir, 0) || !CHECK(gnn_mkdir_p(dir) == GNN_OK) ||
	    !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) || !emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP))
		goto out;
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++)
			if (!emb_read(&x, EMB_GEN, t, a, t == 0 ? 0 : 3, t == 0 ? 3 : 4, want[t][a]))
				goto out;
	emb_refused(&x, &q, GNN_ENOENT, "cannot open");   /* not created: not on this store's file system */
	/* the update right after the SAVE changes rows the child must not see */
	if (!save_files(&x, dir, true) || !emb_ok(&x, &q, EMB_GEN, EMB_STEP + 1) ||
	    !emb_update(&x, update_b, 2, 1, EMB_GEN, EMB_STEP + 1) || !save_record(dir, &r) ||
	    !CHECK(r.gen == EMB_GEN && r.version == EMB_STEP + 1 && r.part == 0 && r.n == SAVE_FILES))
		goto out;
	for (uint32_t i = 0; i < r.n; i++) {
		const struct gnn_emb_snap_entry *e = &r.e[i];
		uint32_t cols = e->array == GNN_EMB_STEPS ? 1 : e->type == 0 ? 3 : 2;
		struct gnn_arr arr = { 0 };

		if (!CHECK(e->err == 0 && e->type < 2 && e->array < GNN_EMB_ARRAYS && e->row == 0 &&
			   e->rows == (e->type == 0 ? 3u : 4u)))
			continue;
		gnn_emb_file(path, sizeof(path), dir, x.f.s.meta.layout.schema->types[e->type].name, e->array);
		if (CHECK(gnn_arr_shared_seal(path, e->array == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32, e->rows, cols,
					      e->crc) == GNN_OK) &&
		    CHECK(gnn_arr_open(path, e->array == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32, GNN_ARR_VERIFY, &arr) ==
			  GNN_OK))
			CHECK(memcmp(arr.data, want[e->type][e->array], e->rows * cols * 4) == 0);
		gnn_arr_close(&arr);
	}
	/* the store's thread counts the bytes once the child exited */
	for (int i = 0; i < 500 && metric(x.f.reg, "gnn_graphstore_embedding_saved_bytes_total") != 300; i++)
		usleep(10000);
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_saved_bytes_total") == 300);
	/* another version; a file too small for the rows; folders it must not write into */
	q.step = EMB_STEP + 1;
	emb_refused(&x, &q, GNN_ESTALE, "SAVE of version 6, but graph store 0 is at version 7");
	q.step = EMB_STEP + 2;
	if (save_files(&x, dir, true)) {
		gnn_emb_file(path, sizeof(path), dir, x.f.s.meta.layout.schema->types[1].name, GNN_EMB_STATE2);
		CHECK(gnn_arr_shared_create(path, GNN_DT_F32, 3, 2) == GNN_OK);
		emb_refused(&x, &q, GNN_EINVAL, "with room for rows [0, 4)");
	}
	save_files(&x, dir, false);
	const char *refused[] = { "%s/ck/.tmp-epoch-1/..", "%s/ck/epoch-000001", "%s/ck/.tmp-epoch-1/../x",
				  "ck/.tmp-epoch-1", "%s//ck/.tmp-epoch-1" };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(bad, sizeof(bad), refused[i], tmpdir);
		q.n = (uint32_t)strlen(bad);
		q.data = bad;
		emb_refused(&x, &q, GNN_EINVAL, "SAVE");
	}
out:
	emb_close(&x);
}

/* ---- the embeddings' log (services/graphstore/emb_wal.h) ---- */

typedef uint32_t emb_words[2][GNN_EMB_ARRAYS][12];

/* Every array of both types (READ), after a STATUS that must say version. */
static bool emb_state(struct emb_fix *x, uint64_t version, emb_words out)
{
	struct gnn_emb_req st = { .op = GNN_EMB_STATUS, .gen = EMB_GEN };

	memset(out, 0, sizeof(emb_words));
	if (!emb_ok(x, &st, EMB_GEN, version))
		return false;
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++)
			if (!emb_read(x, EMB_GEN, t, a, t == 0 ? 0 : 3, t == 0 ? 3 : 4, out[t][a]))
				return false;
	return true;
}

/* SAVE into tmp (its files made first), then commit it as the trainer
 * does: the record awaited, every file sealed, the folder renamed. */
static bool emb_save_commit(struct emb_fix *x, const char *tmp, const char *final, uint64_t version)
{
	struct gnn_emb_req q = { .op = GNN_EMB_SAVE, .gen = EMB_GEN, .step = version, .n = (uint32_t)strlen(tmp),
				 .data = tmp };
	struct gnn_emb_snap r;
	char path[700];

	if (!CHECK(gnn_mkdir_p(tmp) == GNN_OK) || !save_files(x, tmp, true) || !emb_ok(x, &q, EMB_GEN, version))
		return false;
	if (final == NULL)
		return true;
	if (!save_record(tmp, &r))
		return false;
	for (uint32_t i = 0; i < r.n; i++) {
		const struct gnn_emb_snap_entry *e = &r.e[i];

		gnn_emb_file(path, sizeof(path), tmp, x->f.s.meta.layout.schema->types[e->type].name, e->array);
		if (!CHECK(gnn_arr_shared_seal(path, e->array == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32, e->rows,
					       e->array == GNN_EMB_STEPS ? 1 : e->type == 0 ? 3 : 2, e->crc) == GNN_OK))
			return false;
	}
	return CHECK(rename(tmp, final) == 0);
}

/* The log's segments of partition 0 in dir; the newest's path in last. */
static int wal_segments(const char *dir, char *last, size_t cap)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort), k = 0;

	for (int i = 0; i < n; i++) {
		if (strncmp(names[i]->d_name, "emb-wal-0000-", 13) == 0) {
			k++;
			snprintf(last, cap, "%s/%s", dir, names[i]->d_name);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return k;
}

/* A store opened again on its log has the rows, optimizer state, version
 * and pending pushes it had: from the generation's INIT, then from a
 * committed checkpoint (at the SAVE after it, the INIT's segment goes,
 * its file written over by the new segment), and the same rows as a
 * store that never stopped. What follows the last record is the log's
 * end, and written over after a restart; a damaged record drops the log
 * whole, and the store starts without rows, as without a log. */
static void test_emb_wal(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	struct gnn_emb_req best = { .op = GNN_EMB_BEST, .gen = EMB_GEN };
	struct gnn_emb_req pull = { .op = GNN_EMB_PULL, .gen = EMB_GEN, .step = EMB_STEP + 3, .n = 1,
				    .ids = (const int64_t[]){ 0 } };
	char wal[512], ck1[512], ck1f[512], ck2[512], seg[800], spare[800];
	emb_words want, got, ref;
	struct emb_fix x, z;
	struct stat st;
	off_t first;
	int fd;

	snprintf(wal, sizeof(wal), "%s/wal", tmpdir);
	snprintf(ck1, sizeof(ck1), "%s/wck/.tmp-epoch-000001-000000-1", tmpdir);
	snprintf(ck1f, sizeof(ck1f), "%s/wck/epoch-000001", tmpdir);
	snprintf(ck2, sizeof(ck2), "%s/wck/.tmp-epoch-000001-000004-1", tmpdir);
	snprintf(spare, sizeof(spare), "%s/emb-wal-spare-0000.log", wal);
	/* the reference: a store without a log, never stopped */
	if (!emb_open(&z, typed_dir, 0) || !emb_init(&z, &cfg, EMB_GEN, EMB_STEP) ||
	    !emb_update(&z, update_a, 4, 2, EMB_GEN, EMB_STEP) || !emb_ok(&z, &best, EMB_GEN, EMB_STEP + 1) ||
	    !emb_update(&z, update_b, 2, 1, EMB_GEN, EMB_STEP + 1) || !emb_state(&z, EMB_STEP + 2, ref))
		goto out_z;
	/* 1. from the INIT: a pending push comes back */
	if (!emb_open_wal(&x, typed_dir, 0, wal) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) ||
	    !emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP) || !emb_ok(&x, &best, EMB_GEN, EMB_STEP + 1) ||
	    !emb_push(&x, &update_b[0], 1, EMB_GEN, EMB_STEP + 1, EMB_STEP + 1) || !emb_state(&x, EMB_STEP + 1, want))
		goto out;
	emb_close(&x);
	if (!emb_open_wal(&x, typed_dir, 0, wal) || !emb_state(&x, EMB_STEP + 1, got) ||
	    !CHECK(memcmp(got, want, sizeof(got)) == 0) ||
	    !emb_push(&x, &update_b[1], 1, EMB_GEN, EMB_STEP + 1, EMB_STEP + 2) || !emb_state(&x, EMB_STEP + 2, got) ||
	    !CHECK(memcmp(got, ref, sizeof(got)) == 0))
		goto out;
	/* 2. from a committed checkpoint: the INIT's segment goes at the SAVE
	 * after it, its file the new segment's, its longer, older records
	 * that segment's end */
	snprintf(seg, sizeof(seg), "%s/emb-wal-0000-0000000001.log", wal);
	if (!emb_save_commit(&x, ck1, ck1f, EMB_STEP + 2) || !CHECK(stat(seg, &st) == 0))
		goto out;
	first = st.st_size;
	if (!emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP + 2) || !emb_save_commit(&x, ck2, NULL, EMB_STEP + 3) ||
	    !CHECK(wal_segments(wal, seg, sizeof(seg)) == 2) || !CHECK(stat(seg, &st) == 0 && st.st_size == first) ||
	    !CHECK(access(spare, F_OK) != 0) ||
	    !emb_push(&x, &update_b[0], 1, EMB_GEN, EMB_STEP + 3, EMB_STEP + 3) || !emb_state(&x, EMB_STEP + 3, want))
		goto out;
	emb_close(&x);
	if (!emb_open_wal(&x, typed_dir, 0, wal) || !emb_state(&x, EMB_STEP + 3, got) ||
	    !CHECK(memcmp(got, want, sizeof(got)) == 0))
		goto out;
	emb_close(&x);
	/* 3. the file's older records after the last one (as the payload of a
	 * record the store died writing, before its header) are the log's
	 * end, and written over after a restart */
	if (!emb_open_wal(&x, typed_dir, 0, wal) || !emb_state(&x, EMB_STEP + 3, got) ||
	    !CHECK(memcmp(got, want, sizeof(got)) == 0) ||
	    !emb_push(&x, &update_b[1], 1, EMB_GEN, EMB_STEP + 3, EMB_STEP + 4) || !emb_state(&x, EMB_STEP + 4, want))
		goto out;
	emb_close(&x);
	if (!emb_open_wal(&x, typed_dir, 0, wal) || !emb_state(&x, EMB_STEP + 4, got) ||
	    !CHECK(memcmp(got, want, sizeof(got)) == 0))
		goto out;
	emb_close(&x);
	/* 4. a damaged record (the newest segment's first one's payload): the
	 * log goes, the store has no rows */
	if (!CHECK((fd = open(seg, O_RDWR)) >= 0))
		goto out_z;
	CHECK(pwrite(fd, "\xff\xff", 2, 32 + 32 + 8) == 2);
	close(fd);
	if (emb_open_wal(&x, typed_dir, 0, wal)) {
		emb_refused(&x, &pull, GNN_ESTALE, "no embeddings here");
		CHECK(wal_segments(wal, seg, sizeof(seg)) == 0);
	}
out:
	emb_close(&x);
out_z:
	emb_close(&z);
}

/* The child holds a lock on its record's file until it exits: the
 * trainer tells a writer at work (stalled here by the test's fault) from
 * one gone. */
static void test_emb_save_locked(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	char dir[512], path[700];
	struct gnn_emb_snap r;
	struct emb_fix x;
	bool opened;
	int fd = -1;

	snprintf(dir, sizeof(dir), "%s/ck/.tmp-epoch-000002-000000-1", tmpdir);
	struct gnn_emb_req q = { .op = GNN_EMB_SAVE, .gen = EMB_GEN, .step = EMB_STEP, .n = (uint32_t)strlen(dir),
				 .data = dir };

	setenv("GNN_FAULT_SNAPSHOT_STALL_S", "1", 1);
	opened = emb_open(&x, typed_dir, 0);
	unsetenv("GNN_FAULT_SNAPSHOT_STALL_S");
	if (!opened || !CHECK(gnn_mkdir_p(dir) == GNN_OK) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) ||
	    !save_files(&x, dir, true) || !emb_ok(&x, &q, EMB_GEN, EMB_STEP))
		goto out;
	gnn_emb_snap_file(path, sizeof(path), dir, 0);
	if (!CHECK((fd = open(path, O_RDONLY)) >= 0))
		goto out;
	CHECK(flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK);   /* stalled: at work */
	if (save_record(dir, &r)) {
		bool free_now = false;

		for (int i = 0; i < 500 && !(free_now = flock(fd, LOCK_SH | LOCK_NB) == 0); i++)
			usleep(10000);
		CHECK(free_now && r.n == SAVE_FILES && r.version == EMB_STEP);
	}
out:
	if (fd >= 0)
		close(fd);
	save_files(&x, dir, false);
	emb_close(&x);
}

/* Stale requests get GNN_ESTALE; repeated pushes and the retry of an
 * applied one are acknowledged and change nothing. */
static void test_emb_stale(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	static const int64_t ids[] = { 1 };
	static const float junk[9] = { 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000 };
	struct emb_push repeat = update_a[0];
	float rows[EMB_NODES][3], again[EMB_NODES][3];
	struct gnn_emb_req pull = { .op = GNN_EMB_PULL, .gen = EMB_GEN, .step = EMB_STEP, .n = 1, .ids = ids };
	struct emb_ref ref;
	struct emb_fix x;

	if (!emb_open(&x, typed_dir, 0))
		goto out;
	emb_refused(&x, &pull, GNN_ESTALE, "no embeddings here");
	if (!emb_init(&x, &cfg, EMB_GEN, EMB_STEP))
		goto out;
	pull.step = EMB_STEP - 1;
	emb_refused(&x, &pull, GNN_ESTALE, "PULL of version 4, but graph store 0 is at version 5 (generation 7)");
	pull.step = EMB_STEP + 1;
	emb_refused(&x, &pull, GNN_ESTALE, "PULL of version 6, but graph store 0 is at version 5");
	pull.step = EMB_STEP;
	pull.gen = EMB_GEN - 1;
	emb_refused(&x, &pull, GNN_ESTALE, "PULL of generation 6, but graph store 0 holds generation 7");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PUSH, .world = 1, .gen = EMB_GEN, .step = EMB_STEP - 2,
					       .dim = 3 },
		    GNN_ESTALE, "PUSH for update 3, but graph store 0 is at version 5");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_BEST, .gen = EMB_GEN + 1 }, GNN_ESTALE,
		    "BEST of generation 8");
	/* rank 0's author push, then a repeat of other rows and values */
	repeat.ids = (const int64_t[]){ 0, 2, 2 };
	repeat.grad = junk;
	if (!emb_push(&x, &update_a[0], 2, EMB_GEN, EMB_STEP, EMB_STEP) ||
	    !emb_push(&x, &repeat, 2, EMB_GEN, EMB_STEP, EMB_STEP))
		goto out;
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PUSH, .node_type = 1, .rank = 0, .world = 3, .gen = EMB_GEN,
					       .step = EMB_STEP, .dim = 2 },
		    GNN_EINVAL, "PUSH from rank 0 of 3 ranks, but update 5's first push came from one of 2");
	if (!emb_update(&x, update_a + 1, 3, 2, EMB_GEN, EMB_STEP) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP + 1, GNN_EMB_ROWS, rows))
		goto out;
	ref_init(&ref, &cfg);
	ref_update(&ref, update_a, 4, 2);
	CHECK(rows_equal(rows, ref.w));
	/* the retry of update 5's last push (its answer lost): acknowledged at version 6 */
	if (emb_push(&x, &update_a[3], 2, EMB_GEN, EMB_STEP, EMB_STEP + 1) &&
	    emb_push(&x, &repeat, 2, EMB_GEN, EMB_STEP, EMB_STEP + 1) &&
	    emb_pull_all(&x, EMB_GEN, EMB_STEP + 1, GNN_EMB_ROWS, again))
		CHECK(rows_equal(again, rows));
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_updates_total") == 1);
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_rows_pushed_total") == 8);
	/* the store restarted: its state is gone, STATUS says so */
	close_store(&x.f);
	if (!CHECK(gnn_metrics_new(&x.f.reg) == GNN_OK) ||
	    !CHECK(gs_store_init(&x.f.s, typed_dir, "/none", 0, x.f.reg) == GNN_OK) ||
	    !CHECK(gs_store_load(&x.f.s) == GNN_OK))
		goto out;
	pull.gen = EMB_GEN;
	emb_refused(&x, &pull, GNN_ESTALE, "no embeddings here: graph store 0 (re)started since the trainers' INIT");
	if (emb_ok(&x, &(struct gnn_emb_req){ .op = GNN_EMB_STATUS }, 0, 0))
		CHECK(x.r.cfg_hash == 0);
out:
	emb_close(&x);
}

/* READ every array, a new INIT, WRITE them back: the state is the one
 * read, and the next update gives what it gave on the original. */
static void test_emb_read_write(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42), other = emb_cfg(GNN_EMB_ADAM, 1234);
	static const uint32_t n[2] = { 3, 4 };
	static const int64_t first[2] = { 0, 3 };
	uint32_t saved[2][GNN_EMB_ARRAYS][12], after[2][GNN_EMB_ARRAYS][12], back[12];
	float rows[EMB_NODES][3], best[EMB_NODES][3], init_rows[EMB_NODES][3];
	struct emb_fix x;
	bool ok = true;

	memset(saved, 0, sizeof(saved));
	memset(after, 0, sizeof(after));
	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) ||
	    !emb_pull_all(&x, EMB_GEN, EMB_STEP, GNN_EMB_ROWS, init_rows) ||
	    !emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP))
		goto out;
	/* BEST_ROWS stay the initial rows: a state where every array differs */
	for (uint32_t t = 0; ok && t < 2; t++)
		for (uint32_t a = 0; ok && a < GNN_EMB_ARRAYS; a++)
			ok = emb_read(&x, EMB_GEN, t, a, first[t], n[t], saved[t][a]);
	if (!ok || !emb_update(&x, update_b, 2, 1, EMB_GEN, EMB_STEP + 1))
		goto out;
	for (uint32_t t = 0; ok && t < 2; t++)
		for (uint32_t a = 0; ok && a < GNN_EMB_ARRAYS; a++)
			ok = emb_read(&x, EMB_GEN, t, a, first[t], n[t], after[t][a]);
	if (!ok)
		goto out;
	CHECK(memcmp(saved[0][GNN_EMB_ROWS], saved[0][GNN_EMB_BEST_ROWS], 36) != 0 &&
	      memcmp(saved[0][GNN_EMB_ROWS], after[0][GNN_EMB_ROWS], 36) != 0 &&
	      memcmp(saved[1][GNN_EMB_STEPS], after[1][GNN_EMB_STEPS], 16) != 0);
	/* a partial READ addresses from the type's first row */
	if (emb_read(&x, EMB_GEN, 1, GNN_EMB_STATE2, 5, 2, back))
		CHECK(memcmp(back, after[1][GNN_EMB_STATE2] + 4, 16) == 0);
	/* restore into a store set up from another seed: authors in two chunks */
	if (!emb_init(&x, &other, EMB_GEN + 1, 0))
		goto out;
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++) {
			uint32_t d = a == GNN_EMB_STEPS ? 1 : t == 0 ? 3 : 2, cut = t == 0 ? 1 : 0;
			struct gnn_emb_req q = { .op = GNN_EMB_WRITE, .node_type = t, .array = a, .gen = EMB_GEN + 1,
						 .step = EMB_STEP + 1, .first = first[t], .n = cut, .dim = d,
						 .data = saved[t][a] };

			if (cut > 0)
				emb_ok(&x, &q, EMB_GEN + 1, EMB_STEP + 1);
			q.first += cut;
			q.n = n[t] - cut;
			q.data = saved[t][a] + cut * d;
			emb_ok(&x, &q, EMB_GEN + 1, EMB_STEP + 1);
			if (emb_read(&x, EMB_GEN + 1, t, a, first[t], n[t], back))
				CHECK(memcmp(back, saved[t][a], n[t] * d * 4) == 0);
		}
	if (!emb_update(&x, update_b, 2, 1, EMB_GEN + 1, EMB_STEP + 1))
		goto out;
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++)
			if (emb_read(&x, EMB_GEN + 1, t, a, first[t], n[t], back))
				CHECK(memcmp(back, after[t][a], n[t] * (a == GNN_EMB_STEPS ? 1 : t == 0 ? 3 : 2) * 4) == 0);
	/* BEST: the best rows were the initial ones until now */
	if (emb_pull_all(&x, EMB_GEN + 1, EMB_STEP + 2, GNN_EMB_BEST_ROWS, best))
		CHECK(rows_equal(best, init_rows));
	if (emb_ok(&x, &(struct gnn_emb_req){ .op = GNN_EMB_BEST, .gen = EMB_GEN + 1 }, EMB_GEN + 1, EMB_STEP + 2) &&
	    emb_pull_all(&x, EMB_GEN + 1, EMB_STEP + 2, GNN_EMB_BEST_ROWS, best) &&
	    emb_pull_all(&x, EMB_GEN + 1, EMB_STEP + 2, GNN_EMB_ROWS, rows))
		CHECK(rows_equal(best, rows) && !rows_equal(best, init_rows));
out:
	emb_close(&x);
}

/* A replica catching up: JOIN, the update's pushes kept while its rows
 * are written (PULL refused meanwhile), READY applies them: the state of
 * a store that had it all along. */
static void test_emb_join(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42), other = emb_cfg(GNN_EMB_ADAM, 1234);
	static const uint32_t n[2] = { 3, 4 };
	static const int64_t first[2] = { 0, 3 };
	uint32_t saved[2][GNN_EMB_ARRAYS][12], after[2][GNN_EMB_ARRAYS][12], back[12];
	const uint64_t g2 = EMB_GEN + 1, v = EMB_STEP + 1;
	struct emb_fix x;
	bool ok = true;

	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP) ||
	    !emb_update(&x, update_a, 4, 2, EMB_GEN, EMB_STEP))
		goto out;
	for (uint32_t t = 0; ok && t < 2; t++)
		for (uint32_t a = 0; ok && a < GNN_EMB_ARRAYS; a++)
			ok = emb_read(&x, EMB_GEN, t, a, first[t], n[t], saved[t][a]);
	if (!ok || !emb_update(&x, update_b, 2, 1, EMB_GEN, v))
		goto out;
	for (uint32_t t = 0; ok && t < 2; t++)
		for (uint32_t a = 0; ok && a < GNN_EMB_ARRAYS; a++)
			ok = emb_read(&x, EMB_GEN, t, a, first[t], n[t], after[t][a]);
	/* the store restarts and joins at version v, from another seed */
	if (!ok || !emb_ok(&x, &(struct gnn_emb_req){ .op = GNN_EMB_JOIN, .gen = g2, .step = v, .cfg = other }, g2, v))
		goto out;
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .node_type = 0, .array = GNN_EMB_ROWS, .gen = g2,
					       .step = v, .n = 1, .ids = (const int64_t[]){ 0 } },
		    GNN_ESTALE, "catching up");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_BEST, .gen = g2 }, GNN_ESTALE, "catching up");
	/* every push of update v comes before the rows: kept, not applied */
	for (int k = 0; k < 2; k++)
		if (!emb_push(&x, &update_b[k], 1, g2, v, v))
			goto out;
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_WRITE, .node_type = 0, .array = GNN_EMB_ROWS, .gen = g2,
					       .step = v + 1, .first = 0, .n = 1, .dim = 3, .data = saved[0][0] },
		    GNN_ESTALE, "joins at version");
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++) {
			struct gnn_emb_req q = { .op = GNN_EMB_WRITE, .node_type = t, .array = a, .gen = g2, .step = v,
						 .first = first[t], .n = n[t],
						 .dim = a == GNN_EMB_STEPS ? 1 : t == 0 ? 3 : 2, .data = saved[t][a] };

			if (!emb_ok(&x, &q, g2, v))
				goto out;
		}
	if (!emb_ok(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READY, .gen = g2 }, g2, v + 1))
		goto out;
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++)
			if (emb_read(&x, g2, t, a, first[t], n[t], back))
				CHECK(memcmp(back, after[t][a], n[t] * (a == GNN_EMB_STEPS ? 1 : t == 0 ? 3 : 2) * 4) == 0);
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READY, .gen = g2 }, GNN_ESTALE, "not joining");
out:
	emb_close(&x);
}

/* Wrong types, IDs, widths, ranges and arrays get the right codes, and
 * a refused push stores nothing. */
static void test_emb_bad_input(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42), wide = cfg, ada = emb_cfg(GNN_EMB_ADAGRAD, 42);
	struct gnn_emb_cfg one = { .num_types = 1, .dim = { 2 }, .optimizer = GNN_EMB_ADAM, .lr = 0.1f, .beta1 = 0.9f,
				   .beta2 = 0.99f, .eps = 1e-8f, .seed = 1 };
	static const int64_t mixed[] = { 0, 4 }, many[4097] = { 0 };
	static const float g6[6] = { 1, 2, 3, 4, 5, 6 };
	float rows[EMB_NODES][3];
	struct emb_ref ref;
	struct emb_fix x;

	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, EMB_STEP))
		goto out;
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .gen = EMB_GEN, .step = EMB_STEP, .n = 2, .ids = mixed },
		    GNN_ERANGE, "node 4 (ids[1]) is of type paper, not author: graph store 0 holds author nodes [0, 3)");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .node_type = 2, .gen = EMB_GEN, .step = EMB_STEP },
		    GNN_EINVAL, "no node type 2: the graph has 2");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .array = GNN_EMB_STATE1, .gen = EMB_GEN,
					       .step = EMB_STEP, .n = 1, .ids = mixed },
		    GNN_EINVAL, "PULL reads ROWS or BEST_ROWS, not STATE1");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PUSH, .world = 1, .gen = EMB_GEN, .step = EMB_STEP,
					       .n = 2, .dim = 2, .ids = (const int64_t[]){ 0, 1 }, .data = g6 },
		    GNN_EINVAL, "PUSH of 2-wide gradient rows; type author's embeddings are 3 wide");
	/* a paper among the authors: refused, and its slot stays free */
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PUSH, .world = 1, .gen = EMB_GEN, .step = EMB_STEP,
					       .n = 2, .dim = 3, .ids = mixed, .data = g6 },
		    GNN_ERANGE, "node 4 (ids[1]) is of type paper, not author");
	if (emb_update(&x, update_b, 2, 1, EMB_GEN, EMB_STEP) &&
	    emb_pull_all(&x, EMB_GEN, EMB_STEP + 1, GNN_EMB_ROWS, rows)) {
		ref_init(&ref, &cfg);
		ref_update(&ref, update_b, 2, 1);
		CHECK(rows_equal(rows, ref.w));
	}
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READ, .gen = EMB_GEN, .first = 2, .n = 2 }, GNN_ERANGE,
		    "rows [2, 4) are not all author nodes of graph store 0, which holds [0, 3)");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READ, .node_type = 1, .gen = EMB_GEN, .first = 0, .n = 1 },
		    GNN_ERANGE, "rows [0, 1) are not all paper nodes of graph store 0, which holds [3, 7)");
	/* a checkpoint reading a version the store has moved on from */
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READ, .gen = EMB_GEN, .step = EMB_STEP, .first = 0, .n = 1 },
		    GNN_ESTALE, "READ of version");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_WRITE, .array = GNN_EMB_STEPS, .gen = EMB_GEN, .step = 1,
					       .n = 2, .dim = 3, .data = g6 },
		    GNN_EINVAL, "WRITE of 3-wide rows into STEPS of type author, which is 1 wide");
	/* a reply over the message limit: 4097 rows of 65536 floats */
	wide.dim[0] = GNN_PROTO_MAX_FEAT_DIM;
	if (emb_init(&x, &wide, EMB_GEN, 0))
		emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .gen = EMB_GEN, .n = 4097, .ids = many },
			    GNN_ERANGE, "over the 1073741824-byte message limit");
	/* Adagrad has no STATE2 nor STEPS; a type of width 0 has no rows */
	ada.dim[1] = 0;
	if (emb_init(&x, &ada, EMB_GEN, 0)) {
		emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READ, .array = GNN_EMB_STATE2, .gen = EMB_GEN, .n = 1 },
			    GNN_EINVAL, "STATE2 exists with Adam only; these embeddings use Adagrad");
		emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READ, .array = GNN_EMB_STEPS, .gen = EMB_GEN, .n = 1 },
			    GNN_EINVAL, "STEPS exists with Adam only");
		emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .node_type = 1, .gen = EMB_GEN, .n = 1,
						       .ids = (const int64_t[]){ 3 } },
			    GNN_EINVAL, "node type paper has no embeddings");
		CHECK(metric(x.f.reg, "gnn_graphstore_embedding_rows") == 3);
		CHECK(metric(x.f.reg, "gnn_graphstore_embedding_state_bytes") == 3 * (12 * 3 + 12));
	}
	emb_close(&x);
	/* the two-partition graph: nodes of partition 1 and outside the graph */
	if (!emb_open(&x, out_dir, 0) || !emb_init(&x, &one, 1, 0))
		goto out;
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PULL, .gen = 1, .n = 2, .ids = (const int64_t[]){ 1, 4 } },
		    GNN_ERANGE, "node 4 (ids[1]) is not owned by graph store 0, which holds node nodes [0, 3); partition 1 owns it");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_PUSH, .world = 1, .gen = 1, .n = 1, .dim = 2,
					       .ids = (const int64_t[]){ 100 }, .data = g6 },
		    GNN_ERANGE, "node 100 (ids[0]) is outside the graph [0, 6)");
	emb_refused(&x, &(struct gnn_emb_req){ .op = GNN_EMB_READ, .gen = 1, .first = 2, .n = 2 }, GNN_ERANGE,
		    "rows [2, 4) are not all node nodes of graph store 0, which holds [0, 3)");
out:
	emb_close(&x);
}

/* Eight ranks on threads (the server's workers answer them at once),
 * each pushing update after update and waiting for it like a trainer:
 * the rows are the reference's at the end. */
#define EMB_RANKS 8
#define EMB_ROUNDS 100
#define EMB_MAX_N 32

/* Rank r's push of type t for update step: a function of the three. */
static struct emb_push emb_rank_push(uint32_t r, uint32_t t, uint64_t step, int64_t *ids, float *grad)
{
	uint32_t n = (uint32_t)((r * 5 + step * 3 + t) % (EMB_MAX_N + 1)), d = t == 0 ? 3 : 2;

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = t == 0 ? (int64_t)((r + i + step) % 3) : 3 + (int64_t)((r * i + step) % 4);
		for (uint32_t j = 0; j < d; j++)
			grad[i * d + j] = (float)((int)(r * 7 + i * 3 + j + step) % 11 - 5) / 3.0f;
	}
	return (struct emb_push){ .rank = r, .type = t, .n = n, .ids = ids, .grad = grad };
}

struct emb_rank {
	struct gs_store *s;
	uint32_t rank;
	bool ok;
};

/* Sends q from a thread (CHECK is not for threads): whether the answer is
 * an EMB_RESP, and its version. */
static bool emb_thread_call(struct gs_store *s, const struct gnn_emb_req *q, struct gnn_wbuf *req,
			    struct gnn_wbuf *rep, uint64_t *version)
{
	struct gnn_emb_resp r;
	struct gnn_hdr h;
	const void *payload;

	req->len = rep->len = 0;
	if (gnn_encode_emb_req(req, 1, q) != GNN_OK || gnn_proto_decode_hdr(req->buf, req->len, &h, &payload) != GNN_OK ||
	    gs_handle(s, &h, payload, h.len, rep) != GNN_OK ||
	    gnn_proto_decode_hdr(rep->buf, rep->len, &h, &payload) != GNN_OK || h.type != GNN_MSG_EMB_RESP ||
	    gnn_decode_emb_resp(payload, h.len, &r) != GNN_OK)
		return false;
	*version = r.version;
	gnn_proto_release(r.owned);
	return true;
}

static void *emb_rank_main(void *arg)
{
	struct emb_rank *me = arg;
	struct gnn_wbuf req, rep;
	int64_t ids[EMB_MAX_N];
	float grad[EMB_MAX_N * 3];
	uint64_t version = 0;

	gnn_wbuf_init(&req);
	gnn_wbuf_init(&rep);
	me->ok = true;
	for (uint64_t step = 0; me->ok && step < EMB_ROUNDS; step++) {
		double deadline = gnn_now() + 10;

		for (uint32_t t = 0; me->ok && t < 2; t++) {
			struct emb_push p = emb_rank_push(me->rank, t, step, ids, grad);
			struct gnn_emb_req q = { .op = GNN_EMB_PUSH, .node_type = t, .rank = me->rank, .world = EMB_RANKS,
						 .gen = EMB_GEN, .step = step, .n = p.n, .dim = t == 0 ? 3 : 2,
						 .ids = p.ids, .data = p.grad };

			me->ok = emb_thread_call(me->s, &q, &req, &rep, &version);
		}
		/* the next update starts once every rank's push made this one */
		while (me->ok && version <= step && (sched_yield(), true))
			me->ok = emb_thread_call(me->s, &(struct gnn_emb_req){ .op = GNN_EMB_STATUS }, &req, &rep,
						 &version) && gnn_now() < deadline;
	}
	gnn_wbuf_free(&req);
	gnn_wbuf_free(&rep);
	return NULL;
}

static void test_emb_concurrent(void)
{
	struct gnn_emb_cfg cfg = emb_cfg(GNN_EMB_ADAM, 42);
	static int64_t ids[2 * EMB_RANKS][EMB_MAX_N];
	static float grad[2 * EMB_RANKS][EMB_MAX_N * 3];
	struct emb_rank ranks[EMB_RANKS];
	struct emb_push all[2 * EMB_RANKS];
	float rows[EMB_NODES][3];
	pthread_t th[EMB_RANKS];
	bool started[EMB_RANKS];
	struct emb_ref ref;
	struct emb_fix x;
	int bad = 0;

	ref_init(&ref, &cfg);
	for (uint64_t step = 0; step < EMB_ROUNDS; step++) {
		for (uint32_t k = 0; k < 2 * EMB_RANKS; k++)
			all[k] = emb_rank_push(k / 2, k % 2, step, ids[k], grad[k]);
		ref_update(&ref, all, 2 * EMB_RANKS, EMB_RANKS);
	}
	if (!emb_open(&x, typed_dir, 0) || !emb_init(&x, &cfg, EMB_GEN, 0))
		goto out;
	for (uint32_t r = 0; r < EMB_RANKS; r++) {
		ranks[r] = (struct emb_rank){ .s = &x.f.s, .rank = r };
		started[r] = pthread_create(&th[r], NULL, emb_rank_main, &ranks[r]) == 0;
	}
	for (uint32_t r = 0; r < EMB_RANKS; r++) {
		if (started[r])
			pthread_join(th[r], NULL);
		bad += !started[r] || !ranks[r].ok;
	}
	CHECK(bad == 0);
	if (emb_pull_all(&x, EMB_GEN, EMB_ROUNDS, GNN_EMB_ROWS, rows))
		CHECK(rows_equal(rows, ref.w));
	CHECK(metric(x.f.reg, "gnn_graphstore_embedding_updates_total") == EMB_ROUNDS);
out:
	emb_close(&x);
}

int main(void)
{
	gnn_log_init("test_graphstore");
	if (getenv("GNN_LOG_LEVEL") == NULL)
		gnn_log_set_level(log_level);
	else
		while (log_level > GNN_LOG_DEBUG && gnn_log_enabled((enum gnn_log_level)(log_level - 1)))
			log_level--;
	if (mkdtemp(tmpdir) == NULL || make_output() != GNN_OK ||
	    snprintf(typed_dir, sizeof(typed_dir), "%s/typed", tmpdir) < 0 ||
	    make_typed_output(typed_dir, t_labels, t_indices) != GNN_OK) {
		printf("FAIL setup: cannot write the test partition output under /tmp\n");
		return 1;
	}
	RUN(test_ordinal_from_host);
	RUN(test_not_ready_until_loaded);
	RUN(test_info);
	RUN(test_sample);
	RUN(test_rows);
	RUN(test_nodes_paging);
	RUN(test_malformed_requests);
	RUN(test_load_failures);
	RUN(test_metrics_registered);
	RUN(test_predictions_time);
	RUN(test_cli_parse_ids);
	RUN(test_cli_parse_fanouts_and_split);
	RUN(test_cli_minibatch_json);
	RUN(test_typed);
	RUN(test_typed_refused);
	RUN(test_emb_init_pull);
	RUN(test_emb_push_order);
	RUN(test_emb_lazy_adam);
	RUN(test_emb_delta);
	RUN(test_emb_adam_wide);
	RUN(test_emb_save);
	RUN(test_emb_save_locked);
	RUN(test_emb_wal);
	RUN(test_emb_stale);
	RUN(test_emb_read_write);
	RUN(test_emb_join);
	RUN(test_emb_bad_input);
	RUN(test_emb_concurrent);
	gnn_rm_rf(tmpdir);
	return t_done();
}
