/* Unit tests of the wire protocol (proto.h) and the sampling primitive
 * (sample.h): round trips of every message, every truncation, limits,
 * trailing bytes, misaligned buffers, and sampling uniformity. */
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "proto.h"
#include "sample.h"
#include "testlib.h"

/* Decodes the header of w's message; returns the payload, copied to an
 * 8-aligned buffer as nng delivers it (so decoders work in place; the
 * misaligned path is check_robust's), or NULL. Valid until the next call. */
static const void *open_msg(const struct gnn_wbuf *w, struct gnn_hdr *h)
{
	static void *aligned;
	const void *payload = NULL;

	free(aligned);
	aligned = NULL;
	if (!CHECK(gnn_proto_decode_hdr(w->buf, w->len, h, &payload) == GNN_OK))
		return NULL;
	aligned = malloc(h->len + 8);
	if (aligned == NULL)
		return NULL;
	memcpy(aligned, payload, h->len);
	return aligned;
}

typedef int (*decode_fn)(const void *payload, size_t len, void *out);

/* Every strict prefix of the payload and one extra byte must be refused;
 * the payload copied to an odd address must decode the same. */
static void check_robust(const struct gnn_wbuf *w, decode_fn decode, size_t out_size)
{
	struct gnn_hdr h;
	const void *payload = open_msg(w, &h);
	uint8_t *shifted = malloc(h.len + 9);
	void *out = calloc(1, out_size);
	int bad = 0;

	if (payload == NULL)
		return;
	for (size_t cut = 0; cut < h.len; cut++)
		bad += decode(payload, cut, out) == GNN_OK;
	CHECK(bad == 0);
	memcpy(shifted, payload, h.len);
	shifted[h.len] = 0;
	CHECK(decode(shifted, h.len + 1, out) != GNN_OK);
	memcpy(shifted + 1, payload, h.len);
	CHECK(decode(shifted + 1, h.len, out) == GNN_OK);
	/* every decoded struct here has `owned` as its last member */
	gnn_proto_release(*(void **)((char *)out + out_size - sizeof(void *)));
	free(shifted);
	free(out);
}

static void test_header(void)
{
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_info_req(&w, 77) == GNN_OK && w.len == GNN_PROTO_HDR_BYTES);
	CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &p) == GNN_OK);
	CHECK(h.type == GNN_MSG_INFO_REQ && h.req_id == 77 && h.len == 0 && h.status == 0);
	CHECK(gnn_proto_decode_hdr(w.buf, w.len - 1, &h, &p) == GNN_EPROTO);
	w.buf[0] ^= 1;
	CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &p) == GNN_EPROTO);
	w.buf[0] ^= 1;
	w.buf[4] = 1;  /* version 1: before node types and relations */
	CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &p) == GNN_EVERSION);
	w.buf[4] = GNN_PROTO_VERSION;
	w.buf[6] = 99;  /* type */
	CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &p) == GNN_EPROTO);
	w.buf[6] = GNN_MSG_INFO_REQ;
	w.buf[16] = 1;  /* claims a payload byte it does not have */
	CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &p) == GNN_EPROTO);
	w.buf[16] = 0;
	w.buf[19] = 0x80;  /* 2 GiB */
	CHECK(gnn_proto_decode_hdr(w.buf, w.len, &h, &p) == GNN_ERANGE);
	CHECK(strcmp(gnn_msg_name(GNN_MSG_MINIBATCH_REQ), "minibatch") == 0);
	CHECK(strcmp(gnn_msg_name(0), "unknown") == 0 && strcmp(gnn_msg_name(500), "unknown") == 0);
	gnn_wbuf_free(&w);
}

static void test_error(void)
{
	struct gnn_wbuf w;
	struct gnn_hdr h;
	struct gnn_error_msg e;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_error(&w, 5, GNN_EUNAVAIL, "graphstore tcp://x:1 unreachable") == GNN_OK);
	if ((p = open_msg(&w, &h)) == NULL)
		return;
	CHECK(gnn_decode_error(&h, p, &e) == GNN_OK && e.status == GNN_EUNAVAIL);
	CHECK(e.text_len == 32 && memcmp(e.text, "graphstore tcp://x:1 unreachable", 32) == 0);
	h.len--;
	CHECK(gnn_decode_error(&h, p, &e) == GNN_EPROTO);
	gnn_wbuf_free(&w);
}

/* A typed layout: authors (no features) and papers (4 features), three
 * relations, two partitions each holding both types. */
static struct gnn_schema g_schema;
static int64_t g_offsets[] = { 0, 10, 25 }, g_type_offsets[] = { 0, 3, 10, 14, 25 };

static struct gnn_layout typed_layout(void)
{
	struct gnn_schema *s = &g_schema;

	memset(s, 0, sizeof(*s));
	s->num_types = 2;
	s->num_rels = 3;
	s->label_type = 1;
	s->types[0] = (struct gnn_ntype){ "author", 7, 0 };
	s->types[1] = (struct gnn_ntype){ "paper", 18, 4 };
	s->rels[0] = (struct gnn_rel){ "writes", 0, 1, 30 };
	s->rels[1] = (struct gnn_rel){ "rev_writes", 1, 0, 30 };
	s->rels[2] = (struct gnn_rel){ "cites", 1, 1, 40 };
	return (struct gnn_layout){ .num_parts = 2, .num_nodes = 25, .num_edges = 100, .feat_dim = 4,
				    .num_classes = 3, .graph_id = 0xabc, .offsets = g_offsets, .schema = s,
				    .type_offsets = g_type_offsets };
}

/* Encodes in and expects its decoding to fail with rc. */
static void info_refused(const struct gnn_info *in, int rc, const char *what)
{
	struct gnn_info out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	gnn_encode_info_resp(&w, 1, in);
	if ((p = open_msg(&w, &h)) != NULL && !CHECK(gnn_decode_info_resp(p, h.len, &out) == rc))
		printf("  %s: not refused with %s\n", what, gnn_errname(rc));
	gnn_wbuf_free(&w);
}

static void test_info(void)
{
	struct gnn_info in = { .part_id = 1, .layout = typed_layout(), .part_edges = 60 }, out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	uint32_t part;
	int64_t row;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_info_resp(&w, 1, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) == NULL)
		return;
	if (CHECK(gnn_decode_info_resp(p, h.len, &out) == GNN_OK)) {
		const struct gnn_schema *s = out.layout.schema;

		CHECK(out.part_id == 1 && out.layout.num_parts == 2 && out.layout.num_nodes == 25 &&
		      out.layout.graph_id == 0xabc && out.layout.offsets[1] == 10 && out.layout.offsets[2] == 25 &&
		      out.part_edges == 60);
		CHECK(s->num_types == 2 && s->num_rels == 3 && s->label_type == 1 && strcmp(s->types[1].name, "paper") == 0 &&
		      s->types[1].feat_dim == 4 && s->types[0].num_nodes == 7 && strcmp(s->rels[1].name, "rev_writes") == 0 &&
		      s->rels[1].src == 1 && s->rels[1].dst == 0 && s->rels[2].num_edges == 40);
		CHECK(out.layout.type_offsets[3] == 14);
		/* (partition, type, row) of a few nodes, empty-range free here */
		CHECK(gnn_layout_locate(&out.layout, 2, &part, &row) == 0 && part == 0 && row == 2);
		CHECK(gnn_layout_locate(&out.layout, 3, &part, &row) == 1 && part == 0 && row == 0);
		CHECK(gnn_layout_locate(&out.layout, 13, &part, &row) == 0 && part == 1 && row == 3);
		CHECK(gnn_layout_locate(&out.layout, 24, &part, &row) == 1 && part == 1 && row == 10);
		CHECK(gnn_layout_type(&out.layout, 25) == -1 && gnn_layout_type(&out.layout, -1) == -1);
		gnn_proto_release(out.owned);
	}
	check_robust(&w, (decode_fn)gnn_decode_info_resp, sizeof(out));
	gnn_wbuf_free(&w);

	g_offsets[1] = 30;
	g_type_offsets[2] = 30;
	info_refused(&in, GNN_EPROTO, "offsets not increasing");
	g_offsets[1] = 10;
	g_type_offsets[2] = 12;
	info_refused(&in, GNN_EPROTO, "type ranges that do not tile the partition");
	g_type_offsets[2] = 10;
	g_type_offsets[1] = 4;
	info_refused(&in, GNN_EPROTO, "type ranges that disagree with the types' sizes");
	g_type_offsets[1] = 3;
	g_schema.rels[2].src = 2;
	info_refused(&in, GNN_EPROTO, "a relation from a type that does not exist");
	g_schema.rels[2].src = 1;
	snprintf(g_schema.types[0].name, GNN_NAME_MAX, "auth or");
	info_refused(&in, GNN_EPROTO, "a type name with a blank");
	snprintf(g_schema.types[0].name, GNN_NAME_MAX, "paper");
	info_refused(&in, GNN_EPROTO, "two types of one name");
	snprintf(g_schema.types[0].name, GNN_NAME_MAX, "author");
	in.layout.feat_dim = 5;
	info_refused(&in, GNN_EPROTO, "a feature width that is not the widest type's");
	in.layout.feat_dim = 4;

	in.part_id = 2;  /* num_parts: a sampler's answer for the whole graph */
	in.part_edges = 100;
	gnn_encode_info_resp(&w, 1, &in);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_info_resp(p, h.len, &out) == GNN_OK)) {
		CHECK(out.part_id == 2 && out.layout.num_parts == 2 && out.part_edges == 100);
		gnn_proto_release(out.owned);
	}
	gnn_wbuf_free(&w);
	in.part_id = 3;  /* beyond num_parts */
	info_refused(&in, GNN_ERANGE, "part_id beyond num_parts");
}

/* The one-type, one-relation layout travels the same way. */
static void test_info_plain(void)
{
	int64_t offsets[] = { 0, 10, 25 };
	struct gnn_schema s;
	struct gnn_info in = { .part_id = 0,
			       .layout = { .num_parts = 2, .num_nodes = 25, .num_edges = 100, .feat_dim = 8,
					   .num_classes = 3, .offsets = offsets, .schema = &s, .type_offsets = offsets },
			       .part_edges = 60 }, out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_schema_plain(&s, 25, 100, 8);
	gnn_wbuf_init(&w);
	CHECK(gnn_encode_info_resp(&w, 1, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_info_resp(p, h.len, &out) == GNN_OK)) {
		CHECK(gnn_schema_is_plain(out.layout.schema) && out.layout.type_offsets[1] == 10 &&
		      gnn_layout_type(&out.layout, 24) == 0 && strcmp(out.layout.schema->types[0].name, "node") == 0);
		gnn_proto_release(out.owned);
	}
	gnn_wbuf_free(&w);
}

static void test_sample_msgs(void)
{
	int64_t ids[] = { 3, 9, 12 }, nbrs[] = { 1, 2, 7, 8, 9 };
	int32_t fanouts[] = { 10, 0 }, none[] = { 0, 0 }, over[] = { GNN_PROTO_MAX_FANOUT + 1, 1 };
	uint32_t counts[] = { 2, 0, 0, 0, 1, 2 };
	struct gnn_sample_req rq;
	struct gnn_sample_resp rs;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_sample_req(&w, 2, 42, 2, fanouts, ids, 3) == GNN_OK);
	if ((p = open_msg(&w, &h)) == NULL)
		return;
	CHECK(gnn_decode_sample_req(p, h.len, &rq) == GNN_OK);
	CHECK(rq.seed == 42 && rq.num_rels == 2 && rq.fanouts[0] == 10 && rq.fanouts[1] == 0 && rq.n == 3 &&
	      rq.ids[2] == 12);
	check_robust(&w, (decode_fn)gnn_decode_sample_req, sizeof(rq));
	gnn_wbuf_free(&w);
	gnn_encode_sample_req(&w, 2, 42, 2, none, ids, 3);  /* every fanout 0: nothing to do */
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_sample_req(p, h.len, &rq) == GNN_ERANGE);
	gnn_wbuf_free(&w);
	gnn_encode_sample_req(&w, 2, 42, 2, over, ids, 3);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_sample_req(p, h.len, &rq) == GNN_ERANGE);
	gnn_wbuf_free(&w);

	CHECK(gnn_encode_sample_resp(&w, 2, counts, 3, 2, nbrs, 5) == GNN_OK);
	if ((p = open_msg(&w, &h)) == NULL)
		return;
	CHECK(gnn_decode_sample_resp(p, h.len, &rs) == GNN_OK);
	CHECK(rs.n == 3 && rs.num_rels == 2 && rs.total == 5 && rs.counts[5] == 2 && rs.nbrs[4] == 9);
	check_robust(&w, (decode_fn)gnn_decode_sample_resp, sizeof(rs));
	gnn_wbuf_free(&w);
	counts[1] = 1;  /* counts no longer add up to total */
	gnn_encode_sample_resp(&w, 2, counts, 3, 2, nbrs, 5);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_sample_resp(p, h.len, &rs) == GNN_EPROTO);
	gnn_wbuf_free(&w);
}

static void test_row_msgs(void)
{
	float rows[6] = { 1, 2, 3, 4, 5, 6 };
	int32_t labels[3] = { 0, -1, 6 };
	uint8_t codes[3] = { 1, 0, 3 };
	int64_t ids[2] = { 5, 6 };
	struct gnn_feat_resp f;
	struct gnn_label_resp l;
	struct gnn_split_resp s;
	struct gnn_nodes_req nq;
	struct gnn_nodes_resp nr;
	struct gnn_ids in;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_ids_req(&w, GNN_MSG_FEAT_REQ, 3, ids, 2) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_FEAT_REQ))
		CHECK(gnn_decode_ids_req(p, h.len, &in) == GNN_OK && in.n == 2 && in.ids[1] == 6);
	check_robust(&w, (decode_fn)gnn_decode_ids_req, sizeof(in));
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_feat_resp(&w, 3, rows, 2, 3) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_feat_resp(p, h.len, &f) == GNN_OK && f.n == 2 && f.dim == 3 && f.rows[5] == 6);
	check_robust(&w, (decode_fn)gnn_decode_feat_resp, sizeof(f));
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_label_resp(&w, 3, labels, 3) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_label_resp(p, h.len, &l) == GNN_OK && l.n == 3 && l.labels[1] == -1);
	check_robust(&w, (decode_fn)gnn_decode_label_resp, sizeof(l));
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_split_resp(&w, 3, codes, 3) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL) {
		CHECK(gnn_decode_split_resp(p, h.len, &s) == GNN_OK && s.n == 3 && s.codes[2] == 3);
		CHECK(gnn_decode_split_resp(p, h.len - 1, &s) == GNN_EPROTO);
	}
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_nodes_req(&w, 4, 1, 100, 7) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_nodes_req(p, h.len, &nq) == GNN_OK && nq.split == 1 && nq.limit == 100 &&
		      nq.cursor == 7);
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_nodes_req(&w, 4, 4, 100, 7) == GNN_OK);  /* no split code 4 */
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_nodes_req(p, h.len, &nq) == GNN_ERANGE);
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_nodes_resp(&w, 4, ids, 2, -1) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_nodes_resp(p, h.len, &nr) == GNN_OK && nr.n == 2 && nr.next_cursor == -1);
	check_robust(&w, (decode_fn)gnn_decode_nodes_resp, sizeof(nr));
	gnn_wbuf_free(&w);
}

/* PREDICT_RESP: 3 nodes, top 2 (odd counts: the padding after pred and
 * after each top-k array is exercised), and k out of range refused. */
static void test_predict(void)
{
	int64_t orig[3] = { 100, 7, 42 };
	int32_t pred[3] = { 1, 0, 2 }, cls[6] = { 1, 2, 0, 1, 2, 0 };
	float prob[6] = { 0.7f, 0.2f, 0.5f, 0.4f, 0.9f, 0.05f };
	struct gnn_predict_resp in = { .n = 3, .k = 2, .params_crc = 0xabcdef01u, .orig_ids = orig, .pred = pred,
				       .classes = cls, .probs = prob }, out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_predict_resp(&w, 9, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_PREDICT_RESP) &&
	    CHECK(gnn_decode_predict_resp(p, h.len, &out) == GNN_OK)) {
		CHECK(out.n == 3 && out.k == 2 && out.params_crc == 0xabcdef01u && out.orig_ids[2] == 42);
		CHECK(out.pred[1] == 0 && out.classes[5] == 0 && out.probs[4] == 0.9f);
		gnn_proto_release(out.owned);
	}
	check_robust(&w, (decode_fn)gnn_decode_predict_resp, sizeof(out));
	gnn_wbuf_free(&w);
	in.k = GNN_PROTO_MAX_TOP_K + 1;
	in.n = 0;
	CHECK(gnn_encode_predict_resp(&w, 9, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_predict_resp(p, h.len, &out) == GNN_ERANGE);
	gnn_wbuf_free(&w);
	CHECK(strcmp(gnn_msg_name(GNN_MSG_PREDICT_REQ), "predict") == 0);
}

/* A 2-layer minibatch of one type and one relation: seeds {10, 11};
 * block 1 src {10, 11, 12}; block 0 src {10, 11, 12, 13}. */
static void test_minibatch(void)
{
	int64_t seeds[] = { 10, 11 }, src1[] = { 10, 11, 12 }, src0[] = { 10, 11, 12, 13 };
	int32_t ptr1[] = { 0, 1, 2 }, idx1[] = { 2, 0 }, ptr0[] = { 0, 1, 2, 3 }, idx0[] = { 3, 2, 0 };
	int32_t fan[2] = { 10, 5 };
	uint8_t types[4] = { 0 };
	float feat[4 * 2] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	int32_t labels[] = { 1, 2 };
	struct gnn_minibatch_req rq = { .seed = 9, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_layers = 2,
					.num_rels = 1, .fanouts = fan, .num_seeds = 2, .seeds = seeds }, rq2;
	struct gnn_minibatch mb = { .num_layers = 2, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_types = 1,
				    .num_rels = 1, .feat_dims = { 2 }, .num_seeds = 2, .src_types = types,
				    .type_rows = { 4 }, .feat = { feat }, .labels = labels }, out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	mb.blocks[0] = (struct gnn_block){ 3, 4, 1, 3, src0, ptr0, idx0 };
	mb.blocks[1] = (struct gnn_block){ 2, 3, 1, 2, src1, ptr1, idx1 };
	gnn_wbuf_init(&w);
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_minibatch_req(p, h.len, &rq2) == GNN_OK && rq2.num_layers == 2 && rq2.num_rels == 1 &&
		      rq2.fanouts[1] == 5 && rq2.seeds[1] == 11 && rq2.flags == rq.flags);
	check_robust(&w, (decode_fn)gnn_decode_minibatch_req, sizeof(rq2));
	gnn_wbuf_free(&w);
	/* Fanout 0 (no neighbours for that layer) is a valid minibatch fanout,
	 * though SAMPLE_REQ refuses a request of nothing but 0s; below -1 and
	 * over the limit are not. */
	static const int32_t fanouts[][2] = { { 0, 0 }, { 0, 5 }, { -1, 0 }, { -2, 5 }, { 5, 4097 } };
	for (int t = 0; t < 5; t++) {
		memcpy(fan, fanouts[t], sizeof(fanouts[t]));
		gnn_encode_minibatch_req(&w, 8, &rq);
		if ((p = open_msg(&w, &h)) != NULL) {
			int rc = gnn_decode_minibatch_req(p, h.len, &rq2);

			if (!CHECK(rc == (t < 3 ? GNN_OK : GNN_ERANGE)))
				printf("  fanouts %d,%d: %s\n", fanouts[t][0], fanouts[t][1], gnn_errname(rc));
			if (rc == GNN_OK) {
				CHECK(rq2.fanouts[0] == fanouts[t][0] && rq2.fanouts[1] == fanouts[t][1]);
				gnn_proto_release(rq2.owned);
			}
		}
		gnn_wbuf_free(&w);
	}

	CHECK(gnn_encode_minibatch_resp(&w, 8, &mb) == GNN_OK);
	if ((p = open_msg(&w, &h)) == NULL)
		return;
	CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_OK);
	CHECK(out.blocks[0].num_src == 4 && out.blocks[1].num_dst == 2 && out.blocks[0].indices[0] == 3 &&
	      out.blocks[0].num_rels == 1 && out.type_rows[0] == 4);
	CHECK(out.feat[0][7] == 7 && out.labels[1] == 2 && ((uintptr_t)out.feat[0] & 3) == 0);
	gnn_proto_release(out.owned);
	check_robust(&w, (decode_fn)gnn_decode_minibatch_resp, sizeof(out));
	gnn_wbuf_free(&w);

	idx0[0] = 4;  /* local index beyond num_src */
	gnn_encode_minibatch_resp(&w, 8, &mb);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_EPROTO);
	gnn_wbuf_free(&w);
	idx0[0] = 3;
	src0[2] = 99;  /* block 0's destinations differ from block 1's sources */
	gnn_encode_minibatch_resp(&w, 8, &mb);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_EPROTO);
	gnn_wbuf_free(&w);
	src0[2] = 12;
	ptr1[1] = 3;  /* indptr not monotone */
	gnn_encode_minibatch_resp(&w, 8, &mb);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_EPROTO);
	gnn_wbuf_free(&w);
}

/* Typed: authors (type 0, no features) and papers (type 1, 2 features),
 * two relations. Seeds {10, 11} (papers); block 1's sources {10, 11, 12,
 * 3}: 10 <-r0- 12, 11 <-r1- 3; block 0's sources add 13: 10 <-r0- 13,
 * 12 <-r0- 10, 3 <-r1- 12. */
static void test_minibatch_typed(void)
{
	int64_t seeds[] = { 10, 11 }, src1[] = { 10, 11, 12, 3 }, src0[] = { 10, 11, 12, 3, 13 };
	int32_t ptr1[] = { 0, 1, 1, 1, 2 }, idx1[] = { 2, 3 };
	int32_t ptr0[] = { 0, 1, 1, 1, 1, 2, 2, 2, 3 }, idx0[] = { 4, 0, 2 };
	int32_t fan[4] = { 3, 1, 2, 0 }, labels[] = { 0, 2 };
	uint8_t types[5] = { 1, 1, 1, 0, 1 };
	float rows[4 * 2] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct gnn_minibatch_req rq = { .seed = 9, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_layers = 2,
					.num_rels = 2, .fanouts = fan, .num_seeds = 2, .seeds = seeds }, rq2;
	struct gnn_minibatch mb = { .num_layers = 2, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_types = 2,
				    .num_rels = 2, .feat_dims = { 0, 2 }, .num_seeds = 2, .src_types = types,
				    .feat = { NULL, rows }, .labels = labels }, out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	mb.blocks[0] = (struct gnn_block){ 4, 5, 2, 3, src0, ptr0, idx0 };
	mb.blocks[1] = (struct gnn_block){ 2, 4, 2, 2, src1, ptr1, idx1 };
	gnn_minibatch_count_types(&mb);
	CHECK(mb.type_rows[0] == 1 && mb.type_rows[1] == 4);
	gnn_wbuf_init(&w);
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_minibatch_req(p, h.len, &rq2) == GNN_OK)) {
		CHECK(rq2.num_rels == 2 && rq2.fanouts[2] == 2 && rq2.fanouts[3] == 0);
		gnn_proto_release(rq2.owned);
	}
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_minibatch_resp(&w, 8, &mb) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_OK)) {
		CHECK(out.num_types == 2 && out.num_rels == 2 && out.feat_dims[0] == 0 && out.feat_dims[1] == 2 &&
		      out.type_rows[0] == 1 && out.type_rows[1] == 4 && out.feat[0] == NULL && out.feat[1][7] == 7 &&
		      out.src_types[3] == 0 && out.blocks[0].indptr[8] == 3 && out.labels[1] == 2);
		gnn_proto_release(out.owned);
	}
	check_robust(&w, (decode_fn)gnn_decode_minibatch_resp, sizeof(out));
	gnn_wbuf_free(&w);
	types[3] = 2;  /* a type the minibatch does not have */
	gnn_encode_minibatch_resp(&w, 8, &mb);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_EPROTO);
	gnn_wbuf_free(&w);
	types[3] = 0;
	ptr0[8] = 4;  /* the last row claims an edge the block does not have */
	gnn_encode_minibatch_resp(&w, 8, &mb);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_EPROTO);
	gnn_wbuf_free(&w);
}

/* The in-place writer the sampler uses: rows written where it says, the
 * sections in order, nothing half-written left in the buffer on an error,
 * and the size helpers agree with what it writes. */
static void test_minibatch_writer(void)
{
	int64_t src[] = { 5, 6, 7 };
	int32_t ptr[] = { 0, 2 }, idx[] = { 1, 2 }, labels[] = { 4 };
	uint8_t types[3] = { 0 };
	struct gnn_minibatch mb = { .num_layers = 1, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .num_types = 1,
				    .num_rels = 1, .feat_dims = { 3 }, .num_seeds = 1, .src_types = types }, out;
	struct gnn_mb_writer mw;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	float *rows[GNN_PROTO_MAX_TYPES];

	mb.blocks[0] = (struct gnn_block){ 1, 3, 1, 2, src, ptr, idx };
	gnn_minibatch_count_types(&mb);
	gnn_wbuf_init(&w);
	CHECK(gnn_encode_info_req(&w, 1) == GNN_OK);   /* a message before it in the buffer */
	size_t before = w.len;
	CHECK(gnn_mb_writer_begin(&mw, &w, 3, &mb) == GNN_OK);
	CHECK(gnn_mb_writer_end(&mw) == GNN_EINVAL && w.len == before);   /* no sections written */
	CHECK(gnn_mb_writer_begin(&mw, &w, 3, &mb) == GNN_OK);
	gnn_mb_writer_labels(&mw, labels);                                 /* out of order: ignored */
	CHECK(mw.written == 0);
	/* 8-aligned within the payload, as every array of a message */
	if (!CHECK(gnn_mb_writer_features(&mw, rows) == GNN_OK && rows[0] != NULL &&
		   ((uint8_t *)rows[0] - (w.buf + before + GNN_PROTO_HDR_BYTES)) % 8 == 0))
		return;
	for (int i = 0; i < 9; i++)
		rows[0][i] = (float)i / 2;
	gnn_mb_writer_labels(&mw, labels);
	CHECK(gnn_mb_writer_end(&mw) == GNN_OK);
	CHECK(w.len - before == GNN_PROTO_HDR_BYTES + gnn_minibatch_resp_head_bytes(1) +
				 gnn_minibatch_resp_block_bytes(1, 3, 2, 1) + gnn_minibatch_resp_section_bytes(3) +
				 gnn_minibatch_resp_section_bytes(9 * 4) + gnn_minibatch_resp_section_bytes(4));
	/* the second message in the buffer decodes to what was written */
	struct gnn_wbuf second = { .buf = w.buf + before, .len = w.len - before, .cap = w.len - before };
	if ((p = open_msg(&second, &h)) != NULL) {
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_OK && out.feat[0][8] == 4.0f &&
		      out.labels[0] == 4 && out.flags == mb.flags);
		gnn_proto_release(out.owned);
	}
	mb.blocks[0].num_src = 1u << 30;   /* over the message limit: refused before anything is written */
	before = w.len;
	CHECK(gnn_mb_writer_begin(&mw, &w, 3, &mb) == GNN_ERANGE && w.len == before);
	gnn_wbuf_free(&w);
}

/* LOOKUP_REQ: an ID list whose second word is the node type. */
static void test_lookup(void)
{
	int64_t orig[] = { 7, 0, 3 };
	struct gnn_lookup_req out;
	struct gnn_ids ids;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_lookup_req(&w, 3, 2, orig, 3) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_LOOKUP_REQ) &&
	    CHECK(gnn_decode_lookup_req(p, h.len, &out) == GNN_OK)) {
		CHECK(out.n == 3 && out.node_type == 2 && out.orig_ids[0] == 7 && out.orig_ids[2] == 3);
		gnn_proto_release(out.owned);
	}
	check_robust(&w, (decode_fn)gnn_decode_lookup_req, sizeof(out));
	gnn_wbuf_free(&w);
	gnn_encode_lookup_req(&w, 3, GNN_PROTO_MAX_TYPES, orig, 3);  /* no such type can exist */
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_lookup_req(p, h.len, &out) == GNN_ERANGE);
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_ids_req(&w, GNN_MSG_LOOKUP_RESP, 3, (const int64_t[]){ 12, -1 }, 2) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_ids_req(p, h.len, &ids) == GNN_OK)) {
		CHECK(ids.n == 2 && ids.ids[0] == 12 && ids.ids[1] == -1);
		gnn_proto_release(ids.owned);
	}
	gnn_wbuf_free(&w);
	CHECK(strcmp(gnn_msg_name(GNN_MSG_LOOKUP_REQ), "lookup") == 0);
}

static void test_sample_choose(void)
{
	uint32_t out[64], again[64], hits[20] = { 0 };
	uint32_t n;
	int bad = 0;

	CHECK(gnn_sample_choose(1, 5, 7, 10, out) == 7 && out[0] == 0 && out[6] == 6);
	CHECK(gnn_sample_choose(1, 5, 7, -1, out) == 7);
	CHECK(gnn_sample_choose(1, 5, 0, 3, out) == 0);
	/* Exactly k distinct sorted positions, repeatable, seed- and node-dependent. */
	for (int64_t v = 0; v < 2000; v++) {
		n = gnn_sample_choose(7, v, 20, 5, out);
		bad += n != 5;
		for (uint32_t i = 1; i < n; i++)
			bad += out[i] <= out[i - 1] || out[i] >= 20;
		gnn_sample_choose(7, v, 20, 5, again);
		bad += memcmp(out, again, sizeof(uint32_t) * 5) != 0;
		for (uint32_t i = 0; i < n; i++)
			hits[out[i]]++;
	}
	CHECK(bad == 0);
	/* Uniform: each position chosen 2000 * 5 / 20 = 500 times; allow 5 sigma
	 * (sd = sqrt(2000 * 0.25 * 0.75) ~ 19.4). */
	for (int i = 0; i < 20; i++)
		bad += hits[i] < 403 || hits[i] > 597;
	CHECK(bad == 0);
	gnn_sample_choose(7, 1, 1000, 8, out);
	gnn_sample_choose(8, 1, 1000, 8, again);
	CHECK(memcmp(out, again, sizeof(uint32_t) * 8) != 0);
	CHECK(gnn_sample_layer_seed(1, 0) != gnn_sample_layer_seed(1, 1));
	/* relation 0 samples as before relations existed; the others apart */
	CHECK(gnn_sample_rel_seed(77, 0) == 77 && gnn_sample_rel_seed(77, 1) != 77 &&
	      gnn_sample_rel_seed(77, 1) != gnn_sample_rel_seed(77, 2));
}

int main(void)
{
	RUN(test_header);
	RUN(test_error);
	RUN(test_info);
	RUN(test_info_plain);
	RUN(test_sample_msgs);
	RUN(test_row_msgs);
	RUN(test_minibatch);
	RUN(test_minibatch_typed);
	RUN(test_predict);
	RUN(test_minibatch_writer);
	RUN(test_lookup);
	RUN(test_sample_choose);
	return t_done();
}
