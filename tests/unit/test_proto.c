/* Unit tests of the wire protocol (proto.h) and the sampling primitive
 * (sample.h): round trips of every message, every truncation, limits,
 * trailing bytes, misaligned buffers, and sampling uniformity. */
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "linkpred.h"
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
				    .num_classes = 3, .feat_dtype = GNN_DT_F32, .graph_id = 0xabc, .offsets = g_offsets, .schema = s,
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
					   .num_classes = 3, .feat_dtype = GNN_DT_F32, .offsets = offsets, .schema = &s, .type_offsets = offsets },
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
	CHECK(gnn_encode_feat_resp(&w, 3, GNN_DT_F32, rows, 2, 3) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL)
		CHECK(gnn_decode_feat_resp(p, h.len, &f) == GNN_OK && f.n == 2 && f.dim == 3 && f.dtype == GNN_DT_F32 &&
		      ((const float *)f.rows)[5] == 6);
	check_robust(&w, (decode_fn)gnn_decode_feat_resp, sizeof(f));
	gnn_wbuf_free(&w);
	/* f16 rows: 3 x 1 halves (6 bytes, padded to 8); an unknown dtype is refused */
	const uint16_t halves[3] = { 0x3c00, 0x4000, 0xc000 };
	CHECK(gnn_encode_feat_resp(&w, 3, GNN_DT_F16, halves, 3, 1) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL) {
		CHECK(h.len == 16 + 8);
		CHECK(gnn_decode_feat_resp(p, h.len, &f) == GNN_OK && f.n == 3 && f.dtype == GNN_DT_F16 &&
		      ((const uint16_t *)f.rows)[2] == 0xc000);
		((uint8_t *)p)[8] = GNN_DT_I32;   /* the dtype word (p is open_msg's copy) */
		CHECK(gnn_decode_feat_resp(p, h.len, &f) == GNN_ERANGE);
	}
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_feat_resp(&w, 3, GNN_DT_I64, halves, 1, 1) == GNN_EINVAL);
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

/* LINK_REQ and LINK_RESP: round trips of each op, the limits, the
 * fields an op does not use. */
static void test_link(void)
{
	int64_t ids[4] = { 5, 1, 9, 2 };
	float q[3] = { 0.5f, -1, 2 }, params[11] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	struct gnn_link_req rq = { .op = GNN_LINK_TOPK, .n = 2, .k = 10, .dim = 3, .node_type = GNN_LINK_ANY_TYPE,
				   .node = -1, .query = q, .ids = ids }, dq;
	struct gnn_link_resp rs = { .op = GNN_LINK_ROWS, .n = 1, .params_crc = 7, .decoder = GNN_LINK_MLP, .dim = 3,
				    .hidden = 2, .flags = GNN_LINK_WITH_DECODER, .rows = q, .params = params }, ds;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_link_req(&w, 3, &rq) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_LINK_REQ && h.len == 32 + 16 + 16) &&
	    CHECK(gnn_decode_link_req(p, h.len, &dq) == GNN_OK)) {
		CHECK(dq.op == GNN_LINK_TOPK && dq.k == 10 && dq.dim == 3 && dq.query[2] == 2 && dq.ids[1] == 1 &&
		      dq.node == -1 && dq.node_type == GNN_LINK_ANY_TYPE);
		gnn_proto_release(dq.owned);
	}
	check_robust(&w, (decode_fn)gnn_decode_link_req, sizeof(dq));
	gnn_wbuf_free(&w);
	/* refused by the encoder (the decoder checks the same): k 0 and 1001,
	 * a TOPK by query naming a node, a SCORE with k, an unknown op */
	rq.k = 0;
	CHECK(gnn_encode_link_req(&w, 3, &rq) == GNN_ERANGE);
	rq.k = GNN_PROTO_MAX_LINK_K + 1;
	CHECK(gnn_encode_link_req(&w, 3, &rq) == GNN_ERANGE);
	rq.k = 1;
	rq.node = 4;
	CHECK(gnn_encode_link_req(&w, 3, &rq) == GNN_EPROTO);
	CHECK(gnn_encode_link_req(&w, 3, &(struct gnn_link_req){ .op = GNN_LINK_SCORE, .k = 1, .node = -1 }) ==
	      GNN_EPROTO);
	CHECK(gnn_encode_link_req(&w, 3, &(struct gnn_link_req){ .op = 4, .node = -1 }) == GNN_EPROTO);
	CHECK(gnn_encode_link_req(&w, 3, &(struct gnn_link_req){ .op = GNN_LINK_SCORE, .node = -1,
								  .n = GNN_PROTO_MAX_LINK_PAIRS + 1 }) == GNN_ERANGE);
	CHECK(w.len == 0);
	CHECK(gnn_encode_link_resp(&w, 4, &rs) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_LINK_RESP) &&
	    CHECK(gnn_decode_link_resp(p, h.len, &ds) == GNN_OK)) {
		CHECK(ds.n == 1 && ds.hidden == 2 && ds.rows[1] == -1 && ds.params[10] == 11 && ds.scores == NULL &&
		      ds.nodes == NULL);
		gnn_proto_release(ds.owned);
	}
	check_robust(&w, (decode_fn)gnn_decode_link_resp, sizeof(ds));
	gnn_wbuf_free(&w);
	rs.hidden = 0;  /* mlp without a hidden layer */
	CHECK(gnn_encode_link_resp(&w, 4, &rs) == GNN_EPROTO);
	rs = (struct gnn_link_resp){ .op = GNN_LINK_TOPK, .n = 3, .decoder = GNN_LINK_DOT, .dim = 16, .nodes = ids,
				     .scores = q };
	CHECK(gnn_encode_link_resp(&w, 4, &rs) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_link_resp(p, h.len, &ds) == GNN_OK)) {
		CHECK(ds.nodes[2] == 9 && ds.scores[2] == 2 && ds.rows == NULL && ds.params == NULL);
		gnn_proto_release(ds.owned);
	}
	gnn_wbuf_free(&w);
	CHECK(strcmp(gnn_msg_name(GNN_MSG_LINK_REQ), "link") == 0);
}

/* The decoders of linkpred.h and the top-k: ties by node ID, O(k). */
static void test_linkpred(void)
{
	float a[2] = { 1, 2 }, b[2] = { 3, -1 };
	/* mlp dim 2 hidden 2: W1 = [[1, 0], [0, 1]], b1 = [0, -10], w2 = [2, 5], b2 = 0.5 */
	float mlp[9] = { 1, 0, 0, 1, 0, -10, 2, 5, 0.5f };
	struct gnn_linkdec dot = { .kind = GNN_LINK_DOT, .dim = 2 }, m = { .kind = GNN_LINK_MLP, .dim = 2, .hidden = 2,
									 .params = mlp };
	float sc[8] = { 1, 5, 3, 5, 2, 5, 0, 4 };
	struct gnn_topk t;

	CHECK(gnn_linkdec_score(&dot, a, b) == 1);
	/* h = a * b = [3, -2]: unit 0 = relu(3) = 3, unit 1 = relu(-12) = 0 */
	CHECK(gnn_linkdec_score(&m, a, b) == 2 * 3 + 0.5);
	{
		struct gnn_linkq lq;

		if (CHECK(gnn_linkq_init(&lq, &m, a) == GNN_OK))
			CHECK(gnn_linkq_score(&lq, b) == gnn_linkdec_score(&m, a, b));
		gnn_linkq_free(&lq);
	}
	CHECK(gnn_sigmoid(0) == 0.5 && gnn_sigmoid(-1000) == 0 && gnn_sigmoid(1000) == 1);
	if (!CHECK(gnn_topk_init(&t, 3) == GNN_OK))
		return;
	for (int64_t i = 7; i >= 0; i--)  /* offered out of order */
		gnn_topk_offer(&t, i, sc[i]);
	gnn_topk_sort(&t);
	/* three 5s (nodes 1, 3, 5): the lowest IDs first; the 4 is out */
	CHECK(t.n == 3 && t.nodes[0] == 1 && t.nodes[1] == 3 && t.nodes[2] == 5 && t.scores[2] == 5);
	gnn_topk_free(&t);
}

/* The bytes of a MINIBATCH_REQ without exclusion, written out by hand from
 * docs/protocol.md: GNN_MB_EXCLUDE's fields left zero change nothing. */
static void test_minibatch_req_bytes(void)
{
	int32_t fan[1] = { 7 };
	int64_t seeds[2] = { 5, 6 };
	struct gnn_minibatch_req rq = { .seed = 3, .flags = GNN_MB_LABELS, .num_layers = 1, .num_rels = 1,
					.fanouts = fan, .num_seeds = 2, .seeds = seeds };
	uint8_t want[24 + 8 + 8 + 16] = { 0 };
	uint32_t u32;
	uint64_t u64 = 3;
	struct gnn_wbuf w;

	memcpy(want, &u64, 8);
	u32 = GNN_MB_LABELS, memcpy(want + 8, &u32, 4);
	u32 = 1, memcpy(want + 12, &u32, 4);
	memcpy(want + 16, &u32, 4);
	memcpy(want + 24, fan, 4);
	u32 = 2, memcpy(want + 32, &u32, 4);
	memcpy(want + 40, seeds, 16);
	gnn_wbuf_init(&w);
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_OK);
	CHECK(w.len == GNN_PROTO_HDR_BYTES + sizeof(want) &&
	      memcmp(w.buf + GNN_PROTO_HDR_BYTES, want, sizeof(want)) == 0);
	gnn_wbuf_free(&w);
}

/* GNN_MB_EXCLUDE: the pairs after the seeds, decoded as sent; what the
 * encoder and the decoder refuse. */
static void test_minibatch_req_excl(void)
{
	int32_t fan[2] = { -1, 5 };
	int64_t seeds[3] = { 1, 2, 3 }, pairs[4] = { 1, 2, 3, 1 };
	struct gnn_minibatch_req rq = { .seed = 9, .flags = GNN_MB_EXCLUDE, .num_layers = 2, .num_rels = 1,
					.fanouts = fan, .num_seeds = 3, .seeds = seeds, .num_excl = 2,
					.excl_rel = 0, .excl = pairs }, rq2;
	uint32_t big = GNN_PROTO_MAX_EXCL_PAIRS + 1, unknown = 8;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	uint8_t *p;
	size_t len;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_OK);
	if ((p = (uint8_t *)open_msg(&w, &h)) != NULL &&
	    CHECK(gnn_decode_minibatch_req(p, h.len, &rq2) == GNN_OK)) {
		CHECK(rq2.flags == GNN_MB_EXCLUDE && rq2.num_seeds == 3 && rq2.seeds[2] == 3 && rq2.num_excl == 2 &&
		      rq2.excl_rel == 0 && memcmp(rq2.excl, pairs, sizeof(pairs)) == 0);
		gnn_proto_release(rq2.owned);
		/* 24 head + 8 fanouts + 8 + 24 seeds: the count, then the relation */
		CHECK(h.len == 64 + 8 + 32);
		memcpy(p + 64, &big, 4);
		CHECK(gnn_decode_minibatch_req(p, h.len, &rq2) == GNN_ERANGE);
		memcpy(p + 8, &unknown, 4);
		CHECK(gnn_decode_minibatch_req(p, h.len, &rq2) == GNN_ERANGE);
	}
	check_robust(&w, (decode_fn)gnn_decode_minibatch_req, sizeof(rq2));
	gnn_wbuf_free(&w);
	/* Pairs without the flag; too many pairs; seeds and pairs over the
	 * request limit (refused before the arrays are read). */
	rq.flags = 0;
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_EINVAL && w.len == 0);
	rq.flags = GNN_MB_EXCLUDE;
	rq.num_excl = GNN_PROTO_MAX_EXCL_PAIRS + 1;
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_ERANGE && w.len == 0);
	rq.num_excl = GNN_PROTO_MAX_EXCL_PAIRS;
	rq.num_seeds = GNN_PROTO_MAX_IDS;
	CHECK(gnn_encode_minibatch_req(&w, 8, &rq) == GNN_ERANGE && w.len == 0);
	gnn_wbuf_free(&w);
	/* The decoder's own check of the size: a payload over the limit. */
	len = 24 + 8 + 8 + (size_t)GNN_PROTO_MAX_IDS * 8 + 8 + (size_t)GNN_PROTO_MAX_EXCL_PAIRS * 16;
	if (!CHECK((p = calloc(len, 1)) != NULL))
		return;
	memcpy(p + 8, &(uint32_t){ GNN_MB_EXCLUDE }, 4);
	memcpy(p + 12, &(uint32_t){ 1 }, 4);
	memcpy(p + 16, &(uint32_t){ 1 }, 4);
	memcpy(p + 32, &(uint32_t){ GNN_PROTO_MAX_IDS }, 4);
	memcpy(p + 40 + (size_t)GNN_PROTO_MAX_IDS * 8, &(uint32_t){ GNN_PROTO_MAX_EXCL_PAIRS }, 4);
	CHECK(gnn_decode_minibatch_req(p, len, &rq2) == GNN_ERANGE);
	free(p);
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
	struct gnn_minibatch mb = { .num_layers = 2, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .feat_dtype = GNN_DT_F32, .num_types = 1,
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
	CHECK(((const float *)out.feat[0])[7] == 7 && out.labels[1] == 2 && ((uintptr_t)out.feat[0] & 3) == 0);
	gnn_proto_release(out.owned);
	check_robust(&w, (decode_fn)gnn_decode_minibatch_resp, sizeof(out));
	gnn_wbuf_free(&w);

	/* f16 rows travel as such, and widen to the f32 the model reads */
	uint16_t half8[8];
	float *wide[GNN_PROTO_MAX_TYPES] = { NULL };
	gnn_f32_to_f16(feat, 8, half8);
	mb.feat_dtype = GNN_DT_F16;
	mb.feat[0] = half8;
	CHECK(gnn_encode_minibatch_resp(&w, 8, &mb) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_OK)) {
		CHECK(out.feat_dtype == GNN_DT_F16 && ((const uint16_t *)out.feat[0])[7] == half8[7]);
		CHECK(gnn_minibatch_widen(&out, wide) == GNN_OK && out.feat_dtype == GNN_DT_F32 &&
		      out.feat[0] == wide[0] && wide[0] != NULL && wide[0][7] == 7.0f && wide[0][1] == 1.0f);
		gnn_proto_release(out.owned);
	}
	free(wide[0]);
	check_robust(&w, (decode_fn)gnn_decode_minibatch_resp, sizeof(out));
	gnn_wbuf_free(&w);
	mb.feat_dtype = GNN_DT_F32;
	mb.feat[0] = feat;

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
	struct gnn_minibatch mb = { .num_layers = 2, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .feat_dtype = GNN_DT_F32, .num_types = 2,
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
		      out.type_rows[0] == 1 && out.type_rows[1] == 4 && out.feat[0] == NULL && ((const float *)out.feat[1])[7] == 7 &&
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
	struct gnn_minibatch mb = { .num_layers = 1, .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .feat_dtype = GNN_DT_F32, .num_types = 1,
				    .num_rels = 1, .feat_dims = { 3 }, .num_seeds = 1, .src_types = types }, out;
	struct gnn_mb_writer mw;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	void *rows[GNN_PROTO_MAX_TYPES];

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
		((float *)rows[0])[i] = (float)i / 2;
	gnn_mb_writer_labels(&mw, labels);
	CHECK(gnn_mb_writer_end(&mw) == GNN_OK);
	CHECK(w.len - before == GNN_PROTO_HDR_BYTES + gnn_minibatch_resp_head_bytes(1) +
				 gnn_minibatch_resp_block_bytes(1, 3, 2, 1) + gnn_minibatch_resp_section_bytes(3) +
				 gnn_minibatch_resp_section_bytes(9 * 4) + gnn_minibatch_resp_section_bytes(4));
	/* the second message in the buffer decodes to what was written */
	struct gnn_wbuf second = { .buf = w.buf + before, .len = w.len - before, .cap = w.len - before };
	if ((p = open_msg(&second, &h)) != NULL) {
		CHECK(gnn_decode_minibatch_resp(p, h.len, &out) == GNN_OK && ((const float *)out.feat[0])[8] == 4.0f &&
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

/* ---- EMB ---- */

/* An INIT of 3 types (type 0 not embedded; an odd count, so the padding
 * after the widths is exercised). */
static struct gnn_emb_req emb_init(void)
{
	return (struct gnn_emb_req){
		.op = GNN_EMB_INIT, .gen = 7, .step = 40,
		.cfg = { .num_types = 3, .dim = { 0, 16, 8 }, .optimizer = GNN_EMB_ADAM, .lr = 0.01f,
			 .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .seed = 0x5eed, .hash = 0xfeedfacecafebeefull },
	};
}

/* Encodes in, checks it with check_robust, and decodes it from an aligned
 * copy; returns the decoder's code, *out the decoding (in place: valid
 * until the next open_msg) and *len the payload's length. */
static int emb_req_round(const struct gnn_emb_req *in, struct gnn_emb_req *out, size_t *len)
{
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	int rc = GNN_EINTERNAL;

	gnn_wbuf_init(&w);
	if (!CHECK(gnn_encode_emb_req(&w, 4, in) == GNN_OK)) {
		gnn_wbuf_free(&w);
		return rc;
	}
	check_robust(&w, (decode_fn)gnn_decode_emb_req, sizeof(*out));
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_EMB_REQ)) {
		*len = h.len;
		/* in place: ids right after the 56-byte head, data after them */
		if ((rc = gnn_decode_emb_req(p, h.len, out)) == GNN_OK)
			CHECK(out->owned == NULL && (out->ids == NULL || (const void *)out->ids == (const uint8_t *)p + 56) &&
			      (out->data == NULL ||
			       out->data == (const void *)((const uint8_t *)p + 56 + (out->ids ? (size_t)out->n * 8 : 0))));
	}
	gnn_wbuf_free(&w);
	return rc;
}

/* Every op travels with what it carries, at the documented offsets. */
static void test_emb_req(void)
{
	int64_t ids[3] = { 12, 5, 40 };
	float grad[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	uint32_t steps[3] = { 1, 0, 7 };
	struct gnn_emb_req in = emb_init(), out;
	size_t len = 0;

	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK)) {
		const struct gnn_emb_cfg *c = &out.cfg;

		CHECK(len == 56 + 8 + 16 + 16 + 16);
		CHECK(out.op == GNN_EMB_INIT && out.gen == 7 && out.step == 40 && out.ids == NULL && out.data == NULL);
		CHECK(c->num_types == 3 && c->dim[0] == 0 && c->dim[1] == 16 && c->dim[2] == 8 && c->dim[3] == 0 &&
		      c->optimizer == GNN_EMB_ADAM && c->lr == 0.01f && c->beta1 == 0.9f && c->beta2 == 0.999f &&
		      c->eps == 1e-8f && c->seed == 0x5eed && c->hash == 0xfeedfacecafebeefull);
	}

	in = (struct gnn_emb_req){ .op = GNN_EMB_PULL, .node_type = 2, .array = GNN_EMB_BEST_ROWS, .gen = 7,
				   .step = 41, .n = 3, .ids = ids };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 + 24 && out.op == GNN_EMB_PULL && out.node_type == 2 && out.array == GNN_EMB_BEST_ROWS &&
		      out.gen == 7 && out.step == 41 && out.n == 3 && out.ids[0] == 12 && out.ids[2] == 40 &&
		      out.data == NULL && out.cfg.num_types == 0);

	/* 9 words of data: 4 bytes of padding after them */
	in = (struct gnn_emb_req){ .op = GNN_EMB_PUSH, .node_type = 1, .rank = 2, .world = 3, .gen = 7, .step = 41,
				   .n = 3, .dim = 3, .ids = ids, .data = grad };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 + 24 + 40 && out.op == GNN_EMB_PUSH && out.node_type == 1 && out.rank == 2 &&
		      out.world == 3 && out.n == 3 && out.dim == 3 && out.ids[1] == 5 &&
		      memcmp(out.data, grad, sizeof(grad)) == 0);

	in = (struct gnn_emb_req){ .op = GNN_EMB_DELTA, .node_type = 2, .gen = 7, .step = 42, .first = 41, .n = 3,
				   .ids = ids };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 + 24 && out.op == GNN_EMB_DELTA && out.step == 42 && out.first == 41 && out.n == 3 &&
		      out.ids[0] == 12 && out.ids[2] == 40 && out.data == NULL);

	in = (struct gnn_emb_req){ .op = GNN_EMB_READ, .node_type = 1, .array = GNN_EMB_STEPS, .gen = 7,
				   .first = 1000, .n = 5 };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 && out.op == GNN_EMB_READ && out.array == GNN_EMB_STEPS && out.first == 1000 &&
		      out.n == 5 && out.ids == NULL && out.data == NULL);

	in = (struct gnn_emb_req){ .op = GNN_EMB_WRITE, .node_type = 1, .array = GNN_EMB_STEPS, .gen = 7, .step = 9,
				   .first = 1000, .n = 3, .dim = 1, .data = steps };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 + 16 && out.op == GNN_EMB_WRITE && out.array == GNN_EMB_STEPS && out.first == 1000 &&
		      out.step == 9 && out.n == 3 && out.dim == 1 && out.ids == NULL &&
		      memcmp(out.data, steps, sizeof(steps)) == 0);

	in = (struct gnn_emb_req){ .op = GNN_EMB_BEST, .gen = 8, .step = 100 };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 && out.op == GNN_EMB_BEST && out.gen == 8 && out.step == 100 && out.ids == NULL &&
		      out.data == NULL);

	in = (struct gnn_emb_req){ .op = GNN_EMB_STATUS };
	if (CHECK(emb_req_round(&in, &out, &len) == GNN_OK))
		CHECK(len == 56 && out.op == GNN_EMB_STATUS && out.n == 0);
	CHECK(strcmp(gnn_msg_name(GNN_MSG_EMB_REQ), "emb") == 0 &&
	      strcmp(gnn_msg_name(GNN_MSG_EMB_RESP), "emb_resp") == 0);
}

/* The payload at an odd address: the decoder copies it into owned, and
 * ids and data point into that copy, 8-aligned. */
static void test_emb_misaligned(void)
{
	int64_t ids[3] = { 12, 5, 40 };
	float grad[6] = { 1, 2, 3, 4, 5, 6 };
	struct gnn_emb_req in = { .op = GNN_EMB_PUSH, .node_type = 1, .rank = 0, .world = 1, .n = 3, .dim = 2,
				  .ids = ids, .data = grad }, out;
	struct gnn_emb_resp rin = { .gen = 1, .version = 2, .cfg_hash = 3, .n = 3, .dim = 2, .data = grad }, rout;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	uint8_t *odd;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_emb_req(&w, 4, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && (odd = malloc(h.len + 1)) != NULL) {
		memcpy(odd + 1, p, h.len);
		if (CHECK(gnn_decode_emb_req(odd + 1, h.len, &out) == GNN_OK)) {
			CHECK(out.owned != NULL && (const void *)out.ids == (const uint8_t *)out.owned + 56 &&
			      ((uintptr_t)out.ids & 7) == 0 && out.data == (const void *)(out.ids + 3));
			CHECK(out.ids[0] == 12 && out.ids[2] == 40 && memcmp(out.data, grad, sizeof(grad)) == 0);
			gnn_proto_release(out.owned);
		}
		free(odd);
	}
	gnn_wbuf_free(&w);
	CHECK(gnn_encode_emb_resp(&w, 4, &rin) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && (odd = malloc(h.len + 1)) != NULL) {
		memcpy(odd + 1, p, h.len);
		if (CHECK(gnn_decode_emb_resp(odd + 1, h.len, &rout) == GNN_OK)) {
			CHECK(rout.owned != NULL && rout.data == (const void *)((const uint8_t *)rout.owned + 32) &&
			      memcmp(rout.data, grad, sizeof(grad)) == 0);
			gnn_proto_release(rout.owned);
		}
		free(odd);
	}
	gnn_wbuf_free(&w);
}

/* Encodes in; with off >= 0 overwrites the payload's u32 at off with val;
 * with extra > 0 appends extra zero bytes (or, below 0, cuts -extra).
 * Expects the decoder to refuse with rc. */
static void emb_req_refused(const struct gnn_emb_req *in, int off, uint32_t val, int extra, int rc,
			    const char *what)
{
	struct gnn_emb_req out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	uint8_t *copy;
	int got;

	gnn_wbuf_init(&w);
	gnn_encode_emb_req(&w, 1, in);
	if ((p = open_msg(&w, &h)) != NULL && (copy = calloc(1, h.len + 16)) != NULL) {
		memcpy(copy, p, h.len);
		if (off >= 0)
			memcpy(copy + off, &val, 4);
		got = gnn_decode_emb_req(copy, (size_t)((int64_t)h.len + extra), &out);
		if (!CHECK(got == rc))
			printf("  %s: %s, not %s\n", what, gnn_errname(got), gnn_errname(rc));
		if (got == GNN_OK)
			gnn_proto_release(out.owned);
		free(copy);
	}
	gnn_wbuf_free(&w);
}

/* Each check of the decoder, one refusal apiece: a valid request with one
 * field broken. */
static void test_emb_req_refused(void)
{
	int64_t ids[2] = { 3, 4 };
	float grad[2] = { 1, 2 }, nan_f = NAN, inf_f = INFINITY;
	struct gnn_emb_req pull = { .op = GNN_EMB_PULL, .node_type = 1, .n = 2, .ids = ids };
	struct gnn_emb_req push = { .op = GNN_EMB_PUSH, .node_type = 1, .rank = 1, .world = 2, .n = 2, .dim = 1,
				    .ids = ids, .data = grad };
	struct gnn_emb_req wr = { .op = GNN_EMB_WRITE, .node_type = 1, .first = 5, .n = 2, .dim = 1, .data = grad };
	struct gnn_emb_req init = emb_init(), in;
	size_t lr_off = 56 + 8 + 16;  /* INIT of 3 types: lr, beta1, beta2, eps from here */
	uint32_t u;

	/* the valid ones first: what follows refuses only the broken field */
	emb_req_refused(&pull, -1, 0, 0, GNN_OK, "pull");
	emb_req_refused(&push, -1, 0, 0, GNN_OK, "push");
	emb_req_refused(&wr, -1, 0, 0, GNN_OK, "write");
	emb_req_refused(&init, -1, 0, 0, GNN_OK, "init");

	in = (struct gnn_emb_req){ .op = 0 };
	emb_req_refused(&in, -1, 0, 0, GNN_EPROTO, "op 0");
	in.op = GNN_EMB_OP_END;
	emb_req_refused(&in, -1, 0, 0, GNN_EPROTO, "op GNN_EMB_OP_END");
	emb_req_refused(&pull, 52, 1, 0, GNN_EPROTO, "a nonzero reserved word");
	emb_req_refused(&pull, 4, GNN_PROTO_MAX_TYPES, 0, GNN_ERANGE, "node_type GNN_PROTO_MAX_TYPES");
	emb_req_refused(&pull, 8, GNN_EMB_ARRAYS, 0, GNN_ERANGE, "array GNN_EMB_ARRAYS");
	emb_req_refused(&pull, 20, GNN_PROTO_MAX_IDS + 1, 0, GNN_ERANGE, "n over GNN_PROTO_MAX_IDS");
	emb_req_refused(&wr, 48, GNN_PROTO_MAX_FEAT_DIM + 1, 0, GNN_ERANGE, "dim over GNN_PROTO_MAX_FEAT_DIM");
	emb_req_refused(&wr, 44, 0x80000000u, 0, GNN_ERANGE, "first < 0");
	emb_req_refused(&wr, 48, 0, 0, GNN_ERANGE, "WRITE of 2 rows of 0 words");

	/* SAVE: a path of n bytes, no NUL in it, under 4096 */
	struct gnn_emb_req save = { .op = GNN_EMB_SAVE, .node_type = 1, .first = 3, .n = 9, .data = "/x/y.tmp\0" };

	save.n = 8;
	emb_req_refused(&save, -1, 0, 0, GNN_OK, "save");
	save.n = 9;
	emb_req_refused(&save, -1, 0, 0, GNN_EPROTO, "SAVE path with a NUL");
	save.n = 0;
	emb_req_refused(&save, -1, 0, 0, GNN_ERANGE, "SAVE without a path");
	save.n = 8;
	emb_req_refused(&save, 20, 4096, 0, GNN_ERANGE, "SAVE path of 4096 bytes");
	emb_req_refused(&push, 12, 2, 0, GNN_ERANGE, "PUSH rank == world");
	emb_req_refused(&push, 12, 5, 0, GNN_ERANGE, "PUSH rank > world");
	in = push;
	in.rank = 0;
	in.world = 0;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "PUSH world 0");
	in.world = 65537;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "PUSH world over 65536");
	in.world = 65536;
	in.rank = 65535;
	emb_req_refused(&in, -1, 0, 0, GNN_OK, "PUSH rank 65535 of 65536");

	in = init;
	in.cfg.dim[1] = in.cfg.dim[2] = 0;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "INIT with no embedded type");
	in = init;
	in.cfg.dim[2] = GNN_PROTO_MAX_FEAT_DIM + 1;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "INIT with a width over GNN_PROTO_MAX_FEAT_DIM");
	emb_req_refused(&init, 56, 0, 0, GNN_ERANGE, "INIT of 0 types");
	emb_req_refused(&init, 56, GNN_PROTO_MAX_TYPES + 1, 0, GNN_ERANGE, "INIT of 65 types");
	in = init;
	in.cfg.optimizer = 0;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "optimizer 0");
	in.cfg.optimizer = GNN_EMB_ADAGRAD + 1;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "optimizer 3");
	in.cfg.optimizer = GNN_EMB_ADAGRAD;
	emb_req_refused(&in, -1, 0, 0, GNN_OK, "Adagrad");
	in = init;
	in.cfg.lr = 0;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "lr 0");
	in.cfg.lr = -0.01f;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "lr < 0");
	memcpy(&u, &nan_f, 4);
	emb_req_refused(&init, (int)lr_off, u, 0, GNN_ERANGE, "lr NaN");
	memcpy(&u, &inf_f, 4);
	emb_req_refused(&init, (int)lr_off, u, 0, GNN_ERANGE, "lr infinite");
	in = init;
	in.cfg.beta1 = 1;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "beta1 1");
	in.cfg.beta1 = -0.5f;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "beta1 < 0");
	in.cfg.beta1 = 0;
	emb_req_refused(&in, -1, 0, 0, GNN_OK, "beta1 0");
	in = init;
	in.cfg.beta2 = 1;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "beta2 1");
	in = init;
	in.cfg.eps = 0;
	emb_req_refused(&in, -1, 0, 0, GNN_ERANGE, "eps 0");

	/* lengths: short by the data's padding, by a whole id, long by a
	 * word or by an aligned 8 bytes (which the final padding does not
	 * swallow) */
	emb_req_refused(&push, -1, 0, -4, GNN_EPROTO, "PUSH without its padding");
	emb_req_refused(&pull, -1, 0, -8, GNN_EPROTO, "PULL short of an id");
	emb_req_refused(&init, -1, 0, -8, GNN_EPROTO, "INIT short of its hash");
	emb_req_refused(&pull, -1, 0, 4, GNN_EPROTO, "PULL and 4 bytes more");
	emb_req_refused(&pull, -1, 0, 8, GNN_EPROTO, "PULL and 8 bytes more");
	in = (struct gnn_emb_req){ .op = GNN_EMB_STATUS };
	emb_req_refused(&in, -1, 0, 8, GNN_EPROTO, "STATUS and 8 bytes more");
	emb_req_refused(&in, -1, 0, -1, GNN_EPROTO, "STATUS short of a byte");
	emb_req_refused(&pull, 20, 3, 0, GNN_EPROTO, "PULL claiming 3 ids, carrying 2");
	emb_req_refused(&push, 48, 2, 0, GNN_EPROTO, "PUSH claiming 2 words a row, carrying 1");
}

/* EMB_RESP: with rows (PULL, READ) and without (everything else). */
static void test_emb_resp(void)
{
	float rows[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct gnn_emb_resp in = { .gen = 7, .version = 41, .cfg_hash = 0xabcdef0123456789ull, .n = 3, .dim = 3,
				   .data = rows }, out;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	const void *p;
	uint8_t *copy;

	gnn_wbuf_init(&w);
	CHECK(gnn_encode_emb_resp(&w, 4, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.type == GNN_MSG_EMB_RESP && h.len == 32 + 40) &&
	    CHECK(gnn_decode_emb_resp(p, h.len, &out) == GNN_OK)) {
		CHECK(out.gen == 7 && out.version == 41 && out.cfg_hash == 0xabcdef0123456789ull && out.n == 3 &&
		      out.dim == 3 && out.owned == NULL && out.data == (const void *)((const uint8_t *)p + 32) &&
		      memcmp(out.data, rows, sizeof(rows)) == 0);
	}
	check_robust(&w, (decode_fn)gnn_decode_emb_resp, sizeof(out));
	/* over the limits: n and dim patched in */
	if ((p = open_msg(&w, &h)) != NULL && (copy = malloc(h.len)) != NULL) {
		uint32_t big = GNN_PROTO_MAX_IDS + 1, wide = GNN_PROTO_MAX_FEAT_DIM + 2;   /* + 1: DELTA's index */

		memcpy(copy, p, h.len);
		memcpy(copy + 24, &big, 4);
		CHECK(gnn_decode_emb_resp(copy, h.len, &out) == GNN_ERANGE);
		memcpy(copy, p, h.len);
		memcpy(copy + 28, &wide, 4);
		CHECK(gnn_decode_emb_resp(copy, h.len, &out) == GNN_ERANGE);
		free(copy);
	}
	gnn_wbuf_free(&w);

	in = (struct gnn_emb_resp){ .gen = 7, .version = 42, .cfg_hash = 5 };
	CHECK(gnn_encode_emb_resp(&w, 4, &in) == GNN_OK);
	if ((p = open_msg(&w, &h)) != NULL && CHECK(h.len == 32) &&
	    CHECK(gnn_decode_emb_resp(p, h.len, &out) == GNN_OK))
		CHECK(out.gen == 7 && out.version == 42 && out.cfg_hash == 5 && out.n == 0 && out.dim == 0 &&
		      out.data == NULL && out.owned == NULL);
	check_robust(&w, (decode_fn)gnn_decode_emb_resp, sizeof(out));
	gnn_wbuf_free(&w);
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
	RUN(test_minibatch_req_bytes);
	RUN(test_minibatch_req_excl);
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
	RUN(test_emb_req);
	RUN(test_emb_misaligned);
	RUN(test_emb_req_refused);
	RUN(test_emb_resp);
	RUN(test_sample_choose);
	RUN(test_link);
	RUN(test_linkpred);
	return t_done();
}
