/* make_corpus.c - writes the seed inputs of the fuzz targets: real messages
 * built with the encoders of proto.h, so the seeds follow the format when
 * it changes. Usage: make_corpus OUTDIR
 *
 * For every message it writes OUTDIR/<decoder>/msg-<name> (the whole
 * message, for the path through gnn_proto_decode_hdr),
 * OUTDIR/<decoder>/payload-<name> (the payload alone, for the direct call
 * of the decoder) and OUTDIR/proto/<name> (the target of all decoders).
 * Existing files of those names are overwritten; others are left alone
 * (the fuzzer adds its finds to the same folders). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "proto.h"

static const char *outdir;

static void die(const char *what, const char *path)
{
	fprintf(stderr, "make_corpus: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void make_dir(const char *path)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		die("cannot create", path);
}

static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, dir);
	make_dir(path);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		die("cannot write", path);
}

/* Writes the message in w (the encoder returned rc) as seeds of target
 * (NULL: only the all-decoders target), then empties w. */
static void emit(const char *target, const char *name, int rc, struct gnn_wbuf *w)
{
	char file[256];

	if (rc != GNN_OK) {
		fprintf(stderr, "make_corpus: encoding %s: %s\n", name, gnn_strerror(rc));
		exit(1);
	}
	write_file("proto", name, w->buf, w->len);
	if (target != NULL) {
		snprintf(file, sizeof(file), "msg-%s", name);
		write_file(target, file, w->buf, w->len);
		snprintf(file, sizeof(file), "payload-%s", name);
		write_file(target, file, w->buf + GNN_PROTO_HDR_BYTES, w->len - GNN_PROTO_HDR_BYTES);
	}
	gnn_wbuf_free(w);
}

/* A 2-layer minibatch for the seeds {100, 200}: block 1 samples 300 for
 * 100 and 100 for 200; block 0 samples 400 for 100 and 100 for 300. */
static void emit_minibatches(struct gnn_wbuf *w)
{
	static const int64_t src0[] = { 100, 200, 300, 400 }, src1[] = { 100, 200, 300 };
	static const int32_t indptr0[] = { 0, 1, 1, 2 }, indices0[] = { 3, 0 };
	static const int32_t indptr1[] = { 0, 1, 2 }, indices1[] = { 2, 0 };
	static const float feat[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const int32_t labels[] = { 3, -1 };
	static const int64_t seeds[] = { 100, 200 }, one_seed[] = { 7 };
	static const int32_t indptr_one[] = { 0, 0 };
	static const uint8_t types[4] = { 0 }, typed[4] = { 1, 1, 0, 1 };
	/* typed: two relations; 300 is of type 0 (no features) */
	static const int32_t tptr0[] = { 0, 1, 1, 1, 1, 1, 2 }, tptr1[] = { 0, 0, 1, 1, 2 };
	static const int32_t tfan[] = { 2, 0, 3, 1 };
	struct gnn_minibatch mb = {
		.num_layers = 2, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .feat_dtype = GNN_DT_F32, .num_types = 1, .num_rels = 1,
		.feat_dims = { 2 }, .num_seeds = 2, .src_types = types, .type_rows = { 4 }, .feat = { feat },
		.labels = labels,
		.blocks = {
			{ .num_dst = 3, .num_src = 4, .num_rels = 1, .num_edges = 2, .src_ids = src0,
			  .indptr = indptr0, .indices = indices0 },
			{ .num_dst = 2, .num_src = 3, .num_rels = 1, .num_edges = 2, .src_ids = src1,
			  .indptr = indptr1, .indices = indices1 },
		},
	};
	struct gnn_minibatch tmb = {
		.num_layers = 2, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .feat_dtype = GNN_DT_F32, .num_types = 2, .num_rels = 2,
		.feat_dims = { 0, 2 }, .num_seeds = 2, .src_types = typed, .type_rows = { 1, 3 },
		.feat = { NULL, feat }, .labels = labels,
		.blocks = {
			{ .num_dst = 3, .num_src = 4, .num_rels = 2, .num_edges = 2, .src_ids = src0,
			  .indptr = tptr0, .indices = indices0 },
			{ .num_dst = 2, .num_src = 3, .num_rels = 2, .num_edges = 2, .src_ids = src1,
			  .indptr = tptr1, .indices = indices1 },
		},
	};
	struct gnn_minibatch bare = {
		.num_layers = 1, .num_types = 1, .num_rels = 1, .num_seeds = 1, .src_types = types, .type_rows = { 1 },
		.blocks = { { .num_dst = 1, .num_src = 1, .num_rels = 1, .src_ids = one_seed, .indptr = indptr_one } },
	};
	struct gnn_minibatch_req req = {
		.seed = 42, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_layers = 2, .num_rels = 1,
		.fanouts = (const int32_t[]){ 10, 5 }, .num_seeds = 2, .seeds = seeds,
	};
	struct gnn_minibatch_req req3 = {
		.seed = 1, .num_layers = 3, .num_rels = 1, .fanouts = (const int32_t[]){ -1, 2, 1 }, .num_seeds = 1,
		.seeds = one_seed,
	};
	struct gnn_minibatch_req req0 = {  /* features only: no neighbours */
		.seed = 2, .flags = GNN_MB_FEATURES, .num_layers = 3, .num_rels = 1,
		.fanouts = (const int32_t[]){ 0, 0, 0 }, .num_seeds = 2, .seeds = seeds,
	};
	struct gnn_minibatch_req treq = {
		.seed = 3, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_layers = 2, .num_rels = 2, .fanouts = tfan,
		.num_seeds = 2, .seeds = seeds,
	};
	struct gnn_minibatch_req xreq = {  /* link prediction: the seeds' pair excluded */
		.seed = 4, .flags = GNN_MB_FEATURES | GNN_MB_EXCLUDE, .num_layers = 2, .num_rels = 1,
		.fanouts = (const int32_t[]){ 10, 5 }, .num_seeds = 2, .seeds = seeds, .num_excl = 1, .excl_rel = 0,
		.excl = seeds,
	};

	emit("minibatch_resp", "minibatch_resp-2layers", gnn_encode_minibatch_resp(w, 15, &mb), w);
	emit("minibatch_resp", "minibatch_resp-typed", gnn_encode_minibatch_resp(w, 15, &tmb), w);
	emit("minibatch_resp", "minibatch_resp-bare", gnn_encode_minibatch_resp(w, 16, &bare), w);
	emit("minibatch_req", "minibatch_req-2layers", gnn_encode_minibatch_req(w, 13, &req), w);
	emit("minibatch_req", "minibatch_req-3layers", gnn_encode_minibatch_req(w, 14, &req3), w);
	emit("minibatch_req", "minibatch_req-fanout0", gnn_encode_minibatch_req(w, 14, &req0), w);
	emit("minibatch_req", "minibatch_req-typed", gnn_encode_minibatch_req(w, 14, &treq), w);
	emit("minibatch_req", "minibatch_req-exclude", gnn_encode_minibatch_req(w, 14, &xreq), w);
}

/* A typed layout: 3 partitions of 2 types ("a" without features, "b"
 * with 8), 3 relations. */
static void emit_typed_info(struct gnn_wbuf *w, const int64_t *offsets)
{
	static const int64_t toff[] = { 0, 1, 4, 6, 9, 10, 12 };
	static struct gnn_schema s = {
		.num_types = 2, .num_rels = 3, .label_type = 1,
		.types = { { "a", 4, 0 }, { "b", 8, 8 } },
		.rels = { { "ab", 0, 1, 10 }, { "rev_ab", 1, 0, 10 }, { "bb", 1, 1, 20 } },
	};
	struct gnn_info info = {
		.part_id = 2, .part_edges = 13,
		.layout = { .num_parts = 3, .num_nodes = 12, .num_edges = 40, .feat_dim = 8, .num_classes = 4,
			    .graph_id = 0xbeefu, .offsets = offsets, .schema = &s, .type_offsets = toff },
	};

	emit("info_resp", "info_resp-typed", gnn_encode_info_resp(w, 3, &info), w);
}

/* EMB: a request of every op, and replies with and without rows. */
static void emit_emb(struct gnn_wbuf *w)
{
	static const int64_t ids[] = { 5, 1, 9 };
	static const float grad[] = { 0.5f, -1.0f, 2.0f, 0.0f, 1e-3f, 3.5f, -0.25f, 8.0f, 1.0f };
	static const uint32_t steps[] = { 3, 0, 12 };
	struct gnn_emb_req init = {
		.op = GNN_EMB_INIT, .gen = 1, .step = 0,
		.cfg = { .num_types = 3, .dim = { 0, 16, 8 }, .optimizer = GNN_EMB_ADAM, .lr = 0.01f, .beta1 = 0.9f,
			 .beta2 = 0.999f, .eps = 1e-8f, .seed = 42, .hash = 0x0123456789abcdefull },
	};
	struct gnn_emb_req adagrad = {
		.op = GNN_EMB_INIT, .gen = 2, .step = 100,
		.cfg = { .num_types = 1, .dim = { 4 }, .optimizer = GNN_EMB_ADAGRAD, .lr = 0.1f, .eps = 1e-10f,
			 .seed = 7, .hash = 9 },
	};
	struct gnn_emb_req pull = { .op = GNN_EMB_PULL, .node_type = 1, .array = GNN_EMB_ROWS, .gen = 1, .step = 3,
				    .n = 3, .ids = ids };
	struct gnn_emb_req pull_best = { .op = GNN_EMB_PULL, .node_type = 2, .array = GNN_EMB_BEST_ROWS, .gen = 1,
					 .step = 3, .n = 1, .ids = ids };
	struct gnn_emb_req push = { .op = GNN_EMB_PUSH, .node_type = 1, .rank = 1, .world = 2, .gen = 1, .step = 3,
				    .n = 3, .dim = 3, .ids = ids, .data = grad };
	struct gnn_emb_req push_empty = { .op = GNN_EMB_PUSH, .node_type = 2, .rank = 0, .world = 4, .gen = 1,
					  .step = 3, .dim = 8, .ids = ids, .data = grad };
	struct gnn_emb_req delta = { .op = GNN_EMB_DELTA, .node_type = 1, .gen = 1, .step = 4, .first = 3, .n = 3,
				     .ids = ids };
	struct gnn_emb_req read = { .op = GNN_EMB_READ, .node_type = 1, .array = GNN_EMB_STATE1, .gen = 1,
				    .first = 1000, .n = 64 };
	struct gnn_emb_req write = { .op = GNN_EMB_WRITE, .node_type = 1, .array = GNN_EMB_ROWS, .gen = 1, .step = 5,
				     .first = 1000, .n = 2, .dim = 3, .data = grad };
	struct gnn_emb_req write_steps = { .op = GNN_EMB_WRITE, .node_type = 1, .array = GNN_EMB_STEPS, .gen = 1,
					   .step = 5, .first = 1000, .n = 3, .dim = 1, .data = steps };
	static const char save_path[] = "/ck/.tmp-epoch-000001-000000-7/emb-author-rows.arr.tmp";
	struct gnn_emb_req save = { .op = GNN_EMB_SAVE, .node_type = 1, .array = GNN_EMB_STATE2, .gen = 1, .step = 5,
				    .first = 1000, .n = sizeof(save_path) - 1, .data = save_path };
	struct gnn_emb_req best = { .op = GNN_EMB_BEST, .gen = 1, .step = 9 };
	struct gnn_emb_req status = { .op = GNN_EMB_STATUS };
	struct gnn_emb_resp rows = { .gen = 1, .version = 3, .cfg_hash = 0x0123456789abcdefull, .n = 3, .dim = 3,
				     .data = grad };
	struct gnn_emb_resp steps_resp = { .gen = 1, .version = 3, .cfg_hash = 5, .n = 3, .dim = 1, .data = steps };
	struct gnn_emb_resp bare = { .gen = 1, .version = 4, .cfg_hash = 0x0123456789abcdefull };
	/* DELTA's rows: the ID's index, then a row of 3 */
	static const uint32_t changed[8] = { 0, 0x3f800000, 0x40000000, 0x40400000, 2, 0xbf800000, 0, 0x3f000000 };
	struct gnn_emb_resp delta_resp = { .gen = 1, .version = 4, .cfg_hash = 5, .n = 2, .dim = 4, .data = changed };

	emit("emb_req", "emb_req-init", gnn_encode_emb_req(w, 20, &init), w);
	emit("emb_req", "emb_req-init-adagrad", gnn_encode_emb_req(w, 20, &adagrad), w);
	emit("emb_req", "emb_req-pull", gnn_encode_emb_req(w, 20, &pull), w);
	emit("emb_req", "emb_req-save", gnn_encode_emb_req(w, 20, &save), w);
	emit("emb_req", "emb_req-pull-best", gnn_encode_emb_req(w, 20, &pull_best), w);
	emit("emb_req", "emb_req-push", gnn_encode_emb_req(w, 20, &push), w);
	emit("emb_req", "emb_req-delta", gnn_encode_emb_req(w, 20, &delta), w);
	emit("emb_req", "emb_req-push-empty", gnn_encode_emb_req(w, 20, &push_empty), w);
	emit("emb_req", "emb_req-read", gnn_encode_emb_req(w, 20, &read), w);
	emit("emb_req", "emb_req-write", gnn_encode_emb_req(w, 20, &write), w);
	emit("emb_req", "emb_req-write-steps", gnn_encode_emb_req(w, 20, &write_steps), w);
	emit("emb_req", "emb_req-best", gnn_encode_emb_req(w, 20, &best), w);
	emit("emb_req", "emb_req-status", gnn_encode_emb_req(w, 20, &status), w);
	emit("emb_resp", "emb_resp-rows", gnn_encode_emb_resp(w, 21, &rows), w);
	emit("emb_resp", "emb_resp-steps", gnn_encode_emb_resp(w, 21, &steps_resp), w);
	emit("emb_resp", "emb_resp-bare", gnn_encode_emb_resp(w, 21, &bare), w);
	emit("emb_resp", "emb_resp-delta", gnn_encode_emb_resp(w, 21, &delta_resp), w);
}

/* LINK: every op of the request and the reply, by node and by query, dot and mlp. */
static void emit_link(struct gnn_wbuf *w)
{
	static const int64_t ids[] = { 5, 1, 9, 2 };
	static const float q[] = { 0.5f, -1, 2 }, params[] = { 1, 2, 3, 4, 5, 6, 0.5f, -0.5f, 1, -1, 0.25f };
	struct gnn_link_req rows = { .op = GNN_LINK_ROWS, .flags = GNN_LINK_WITH_DECODER, .n = 3, .ids = ids, .node = -1 };
	struct gnn_link_req score = { .op = GNN_LINK_SCORE, .n = 2, .ids = ids, .node = -1 };
	struct gnn_link_req by_node = { .op = GNN_LINK_TOPK, .n = 2, .k = 10, .node_type = GNN_LINK_ANY_TYPE, .node = 7,
					.ids = ids };
	struct gnn_link_req by_query = { .op = GNN_LINK_TOPK, .k = 1000, .dim = 3, .node_type = 1, .node = -1, .query = q,
					 .ids = ids };
	/* mlp, dim 3, hidden 2: 2 x 3 + 2 + 2 + 1 = 11 parameters */
	struct gnn_link_resp rows_resp = { .op = GNN_LINK_ROWS, .n = 1, .params_crc = 0x1f97ab63u, .decoder = GNN_LINK_MLP,
					   .dim = 3, .hidden = 2, .flags = GNN_LINK_WITH_DECODER, .rows = q, .params = params };
	struct gnn_link_resp score_resp = { .op = GNN_LINK_SCORE, .n = 3, .params_crc = 7, .decoder = GNN_LINK_DOT,
					    .dim = 16, .scores = q };
	struct gnn_link_resp topk_resp = { .op = GNN_LINK_TOPK, .n = 3, .params_crc = 7, .decoder = GNN_LINK_DOT, .dim = 16,
					   .nodes = ids, .scores = q };

	emit("link_req", "link_req-rows", gnn_encode_link_req(w, 22, &rows), w);
	emit("link_req", "link_req-score", gnn_encode_link_req(w, 22, &score), w);
	emit("link_req", "link_req-topk-node", gnn_encode_link_req(w, 22, &by_node), w);
	emit("link_req", "link_req-topk-query", gnn_encode_link_req(w, 22, &by_query), w);
	emit("link_resp", "link_resp-rows-mlp", gnn_encode_link_resp(w, 23, &rows_resp), w);
	emit("link_resp", "link_resp-score", gnn_encode_link_resp(w, 23, &score_resp), w);
	emit("link_resp", "link_resp-topk", gnn_encode_link_resp(w, 23, &topk_resp), w);
	topk_resp.n = 0;
	emit("link_resp", "link_resp-topk-empty", gnn_encode_link_resp(w, 23, &topk_resp), w);
}

int main(int argc, char **argv)
{
	static const int64_t ids[] = { 5, 1, 9 }, offsets[] = { 0, 4, 9, 12 };
	static const uint32_t counts[] = { 2, 0, 1 };
	static const float rows[] = { 0.5f, -1.0f, 2.0f, 0.0f, 1e-3f, 3.5f };
	static const int32_t labels[] = { 0, -1, 6 }, classes[] = { 6, 0, 1, 2, 0, 6 };
	struct gnn_predict_resp predict = { .n = 3, .k = 2, .params_crc = 0x1f97ab63u, .orig_ids = ids, .pred = labels,
					    .classes = classes, .probs = rows };
	static const uint8_t codes[] = { 0, 1, 2, 3, 1 };
	struct gnn_schema plain12, plain4;
	struct gnn_info info = {
		.part_id = 1, .part_edges = 13,
		.layout = { .num_parts = 3, .num_nodes = 12, .num_edges = 40, .feat_dim = 8,
			    .num_classes = 4, .graph_id = 0xfeedu, .offsets = offsets, .schema = &plain12,
			    .type_offsets = offsets },
	};
	struct gnn_info info1 = {
		.layout = { .num_parts = 1, .num_nodes = 4, .num_edges = 0, .feat_dim = 1, .num_classes = 1,
			    .offsets = (const int64_t[]){ 0, 4 }, .schema = &plain4,
			    .type_offsets = (const int64_t[]){ 0, 4 } },
	};
	struct gnn_wbuf w;

	gnn_schema_plain(&plain12, 12, 40, 8);
	gnn_schema_plain(&plain4, 4, 0, 1);

	if (argc != 2) {
		fprintf(stderr, "usage: make_corpus OUTDIR\n");
		return 2;
	}
	outdir = argv[1];
	make_dir(outdir);
	gnn_wbuf_init(&w);

	emit("error", "error-text", gnn_encode_error(&w, 1, GNN_EUNAVAIL, "graph store 2 unreachable"), &w);
	emit("error", "error-empty", gnn_encode_error(&w, 2, GNN_EPROTO, ""), &w);
	emit(NULL, "info_req", gnn_encode_info_req(&w, 3), &w);
	emit("info_resp", "info_resp-3parts", gnn_encode_info_resp(&w, 3, &info), &w);
	emit("info_resp", "info_resp-1part", gnn_encode_info_resp(&w, 3, &info1), &w);
	info.part_id = info.layout.num_parts;  /* a sampler's answer: the whole graph */
	info.part_edges = info.layout.num_edges;
	emit("info_resp", "info_resp-sampler", gnn_encode_info_resp(&w, 3, &info), &w);
	emit_typed_info(&w, offsets);
	emit("ids_req", "feat_req", gnn_encode_ids_req(&w, GNN_MSG_FEAT_REQ, 4, ids, 3), &w);
	emit("ids_req", "label_req-empty", gnn_encode_ids_req(&w, GNN_MSG_LABEL_REQ, 5, ids, 0), &w);
	emit("ids_req", "split_req", gnn_encode_ids_req(&w, GNN_MSG_SPLIT_REQ, 6, ids, 1), &w);
	emit("sample_req", "sample_req", gnn_encode_sample_req(&w, 7, 99, 1, (const int32_t[]){ 5 }, ids, 3), &w);
	emit("sample_req", "sample_req-all", gnn_encode_sample_req(&w, 7, 0, 1, (const int32_t[]){ -1 }, ids, 1), &w);
	emit("sample_req", "sample_req-rels",
	     gnn_encode_sample_req(&w, 7, 5, 3, (const int32_t[]){ 0, 2, -1 }, ids, 2), &w);
	emit("sample_resp", "sample_resp", gnn_encode_sample_resp(&w, 7, counts, 3, 1, ids, 3), &w);
	emit("sample_resp", "sample_resp-rels",
	     gnn_encode_sample_resp(&w, 7, (const uint32_t[]){ 1, 0, 0, 2, 0, 0 }, 2, 3, ids, 3), &w);
	emit("sample_resp", "sample_resp-empty", gnn_encode_sample_resp(&w, 7, counts, 0, 1, ids, 0), &w);
	emit("feat_resp", "feat_resp", gnn_encode_feat_resp(&w, 8, GNN_DT_F32, rows, 2, 3), &w);
	emit("feat_resp", "feat_resp-f16", gnn_encode_feat_resp(&w, 8, GNN_DT_F16, rows, 3, 1), &w);
	emit("feat_resp", "feat_resp-empty", gnn_encode_feat_resp(&w, 8, GNN_DT_F32, rows, 0, 1), &w);
	emit("label_resp", "label_resp", gnn_encode_label_resp(&w, 9, labels, 3), &w);
	emit("label_resp", "label_resp-empty", gnn_encode_label_resp(&w, 9, labels, 0), &w);
	emit("ids_req", "predict_req", gnn_encode_ids_req(&w, GNN_MSG_PREDICT_REQ, 6, ids, 3), &w);
	emit("ids_req", "lookup_resp", gnn_encode_ids_req(&w, GNN_MSG_LOOKUP_RESP, 6, (const int64_t[]){ 4, -1 }, 2), &w);
	emit("lookup_req", "lookup_req", gnn_encode_lookup_req(&w, 6, 1, ids, 3), &w);
	emit("predict_resp", "predict_resp", gnn_encode_predict_resp(&w, 13, &predict), &w);
	predict.n = 0;
	emit("predict_resp", "predict_resp-empty", gnn_encode_predict_resp(&w, 13, &predict), &w);
	emit("split_resp", "split_resp", gnn_encode_split_resp(&w, 10, codes, 5), &w);
	emit("split_resp", "split_resp-empty", gnn_encode_split_resp(&w, 10, codes, 0), &w);
	emit("nodes_req", "nodes_req", gnn_encode_nodes_req(&w, 11, 0, 100, 0), &w);
	emit("nodes_req", "nodes_req-test", gnn_encode_nodes_req(&w, 11, 3, 1, 1000), &w);
	emit("nodes_resp", "nodes_resp", gnn_encode_nodes_resp(&w, 12, ids, 3, 17), &w);
	emit("nodes_resp", "nodes_resp-done", gnn_encode_nodes_resp(&w, 12, ids, 0, -1), &w);
	emit_minibatches(&w);
	emit_emb(&w);
	emit_link(&w);
	return 0;
}
