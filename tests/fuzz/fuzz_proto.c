/* fuzz_proto.c - libFuzzer targets of the wire-protocol decoders (proto.h).
 *
 * One source, one target per decoder: built with -DFUZZ_DECODER='"NAME"'
 * (NAME from the table at the end: error, info_resp, ids_req, ...) the
 * target exercises that decoder only; built with "proto" (the default) it
 * exercises all of them. Each input is used as
 *   - a whole message: gnn_proto_decode_hdr, then the decoder its type
 *     selects (the path a service takes), and
 *   - a bare payload handed to the decoder directly, whatever it holds;
 * each on the input placed at three alignments (see shifts[] below), so
 * both the in-place and the copying paths of the decoders run.
 *
 * Every decoder must refuse with a documented code (GNN_EPROTO, GNN_ERANGE,
 * GNN_EVERSION, GNN_ENOMEM) leaving its output untouched, or accept a
 * message that keeps every promise of proto.h (limits, offsets, counts
 * adding up, CSR structure, chaining). On success the target also reads
 * every element of every array the decoder handed out (ASan reports a
 * pointer past the input, UBSan a misaligned one), re-encodes the message
 * with the matching gnn_encode_*, decodes it again and compares. Any
 * violation prints "fuzz_proto: WHAT: WHY" and abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"

#ifndef FUZZ_DECODER
#define FUZZ_DECODER "proto"
#endif

#define FUZZ_REQ_ID 0x0123456789abcdefull

/* Keeps the reads of the touch_* helpers from being optimised away. */
static volatile uint64_t sink;

static void touch_i64(const int64_t *a, uint64_t n)
{
	uint64_t s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += (uint64_t)a[i];
	sink += s;
}

static void touch_i32(const int32_t *a, uint64_t n)
{
	uint64_t s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += (uint32_t)a[i];
	sink += s;
}

static void touch_f32(const float *a, uint64_t n)
{
	double s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += a[i];
	sink += s == s; /* NaN-safe: no float-to-int conversion of s itself */
}

static void touch_u8(const void *p, uint64_t n)
{
	const uint8_t *a = p;
	uint64_t s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += a[i];
	sink += s;
}

/* A property failed: say which and stop (libFuzzer saves the input). */
static _Noreturn void broken(const char *msg, const char *what)
{
	fprintf(stderr, "fuzz_proto: %s: %s\n", msg, what);
	abort();
}

/* memcmp that accepts n == 0 with any pointers. */
static bool same(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

/* Outputs are filled with this before a decode: a failed decode must leave
 * them so (results are written only on success). */
#define FILL 0xa5

/* Judges a decoder's result rc, out being its output of size bytes: true
 * when it decoded; false when it refused with a documented code. */
static bool decoded(const char *msg, int rc, const void *out, size_t size)
{
	const uint8_t *b = out;

	if (rc == GNN_OK)
		return true;
	if (rc != GNN_EPROTO && rc != GNN_ERANGE && rc != GNN_EVERSION && rc != GNN_ENOMEM)
		broken(msg, "refused with an undocumented error code");
	for (size_t i = 0; i < size; i++)
		if (b[i] != FILL)
			broken(msg, "wrote its output although it failed");
	return false;
}

/* Checks the message just encoded into w (rc is the encoder's result) and
 * returns its payload; *h receives its header. */
static const void *reopen(const char *msg, int rc, const struct gnn_wbuf *w, uint16_t type,
			  struct gnn_hdr *h)
{
	const void *payload = NULL;

	if (rc != GNN_OK || w->failed)
		broken(msg, "round trip: the encoder failed");
	if (gnn_proto_decode_hdr(w->buf, w->len, h, &payload) != GNN_OK)
		broken(msg, "round trip: the header of the re-encoded message is refused");
	if (h->type != type || h->req_id != FUZZ_REQ_ID || h->len != w->len - GNN_PROTO_HDR_BYTES)
		broken(msg, "round trip: the re-encoded header differs");
	return payload;
}

/* A fanout: -1 (all), 0 (none) or 1..GNN_PROTO_MAX_FANOUT. */
static bool fanout_ok(int32_t f)
{
	return f == -1 || (f >= 1 && f <= GNN_PROTO_MAX_FANOUT);
}

static bool layer_fanout_ok(int32_t f)
{
	return f == 0 || fanout_ok(f);
}

/* ---- one checker per decoder ----
 * Each decodes the payload p of len bytes (h is the message's header, or
 * one made up for a direct call). On success it checks what proto.h
 * promises of an accepted message, reading every element of every array,
 * then re-encodes, decodes again, compares and releases. */

static void check_error(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_error_msg m, m2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	char *text;

	(void)len;
	memset(&m, FILL, sizeof(m));
	if (!decoded("error", gnn_decode_error(h, p, &m), &m, sizeof(m)))
		return;
	if (m.text_len > GNN_PROTO_MAX_ERROR_TEXT || m.status != h->status)
		broken("error", "accepted with a text over the limit or another status");
	touch_u8(m.text, m.text_len);
	/* The encoder takes a C string: only texts without NUL round-trip. */
	if (memchr(m.text, 0, m.text_len) != NULL || (text = malloc(m.text_len + 1)) == NULL)
		return;
	memcpy(text, m.text, m.text_len);
	text[m.text_len] = '\0';
	gnn_wbuf_init(&w);
	p2 = reopen("error", gnn_encode_error(&w, FUZZ_REQ_ID, m.status, text), &w, GNN_MSG_ERROR, &h2);
	if (gnn_decode_error(&h2, p2, &m2) != GNN_OK)
		broken("error", "round trip: the re-encoded message is refused");
	if (m2.status != m.status || m2.text_len != m.text_len || !same(m2.text, m.text, m.text_len))
		broken("error", "round trip: status or text differs");
	gnn_wbuf_free(&w);
	free(text);
}

static void check_info_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_info v, v2;
	const struct gnn_layout *l = &v.layout, *l2 = &v2.layout;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	char why[256];
	size_t nt;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("info_resp", gnn_decode_info_resp(p, len, &v), &v, sizeof(v)))
		return;
	/* part_id == num_parts: a sampler's answer (the whole graph). */
	if (l->num_parts == 0 || l->num_parts > GNN_PROTO_MAX_PARTS || v.part_id > l->num_parts ||
	    l->num_nodes <= 0 || l->num_edges < 0 || v.part_edges < 0 || v.part_edges > l->num_edges ||
	    l->feat_dim > GNN_PROTO_MAX_FEAT_DIM || l->num_classes == 0)
		broken("info_resp", "accepted with a field out of range");
	touch_i64(l->offsets, (uint64_t)l->num_parts + 1);
	for (uint32_t i = 0; i < l->num_parts; i++)
		if (l->offsets[i + 1] <= l->offsets[i])
			broken("info_resp", "accepted with offsets not strictly increasing");
	if (l->offsets[0] != 0 || l->offsets[l->num_parts] != l->num_nodes)
		broken("info_resp", "accepted with offsets not from 0 to num_nodes");
	nt = (size_t)l->num_parts * l->schema->num_types + 1;
	touch_i64(l->type_offsets, nt);
	if (gnn_layout_check(l, why, sizeof(why)) != GNN_OK)
		broken("info_resp", "accepted a schema or type ranges gnn_layout_check refuses");
	gnn_wbuf_init(&w);
	p2 = reopen("info_resp", gnn_encode_info_resp(&w, FUZZ_REQ_ID, &v), &w, GNN_MSG_INFO_RESP, &h2);
	if (gnn_decode_info_resp(p2, h2.len, &v2) != GNN_OK)
		broken("info_resp", "round trip: the re-encoded message is refused");
	if (v2.part_id != v.part_id || l2->num_parts != l->num_parts || l2->num_nodes != l->num_nodes ||
	    l2->num_edges != l->num_edges || l2->feat_dim != l->feat_dim ||
	    l2->num_classes != l->num_classes || v2.part_edges != v.part_edges ||
	    l2->graph_id != l->graph_id || !same(l2->offsets, l->offsets, ((size_t)l->num_parts + 1) * 8) ||
	    gnn_schema_hash(l2->schema) != gnn_schema_hash(l->schema) ||
	    !same(l2->type_offsets, l->type_offsets, nt * 8))
		broken("info_resp", "round trip: a field, the offsets or the schema differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_ids_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_ids v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	memset(&v, FILL, sizeof(v));
	if (!decoded("ids_req", gnn_decode_ids_req(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS)
		broken("ids_req", "accepted over the ID limit");
	touch_i64(v.ids, v.n);
	gnn_wbuf_init(&w);
	p2 = reopen("ids_req", gnn_encode_ids_req(&w, h->type, FUZZ_REQ_ID, v.ids, v.n), &w, h->type, &h2);
	if (gnn_decode_ids_req(p2, h2.len, &v2) != GNN_OK)
		broken("ids_req", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || !same(v2.ids, v.ids, (size_t)v.n * 8))
		broken("ids_req", "round trip: the IDs differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_lookup_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_lookup_req v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("lookup_req", gnn_decode_lookup_req(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.node_type >= GNN_PROTO_MAX_TYPES)
		broken("lookup_req", "accepted over the ID limit or with a type out of range");
	touch_i64(v.orig_ids, v.n);
	gnn_wbuf_init(&w);
	p2 = reopen("lookup_req", gnn_encode_lookup_req(&w, FUZZ_REQ_ID, v.node_type, v.orig_ids, v.n), &w,
		    GNN_MSG_LOOKUP_REQ, &h2);
	if (gnn_decode_lookup_req(p2, h2.len, &v2) != GNN_OK)
		broken("lookup_req", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || v2.node_type != v.node_type || !same(v2.orig_ids, v.orig_ids, (size_t)v.n * 8))
		broken("lookup_req", "round trip: the type or the IDs differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_sample_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_sample_req v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	bool any = false;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("sample_req", gnn_decode_sample_req(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.num_rels == 0 || v.num_rels > GNN_PROTO_MAX_RELS)
		broken("sample_req", "accepted over the ID or relation limit");
	for (uint32_t r = 0; r < v.num_rels; r++) {
		if (!layer_fanout_ok(v.fanouts[r]))
			broken("sample_req", "accepted a bad fanout");
		any = any || v.fanouts[r] != 0;
	}
	if (!any)
		broken("sample_req", "accepted fanouts that are all 0");
	touch_i64(v.ids, v.n);
	gnn_wbuf_init(&w);
	p2 = reopen("sample_req",
		    gnn_encode_sample_req(&w, FUZZ_REQ_ID, v.seed, v.num_rels, v.fanouts, v.ids, v.n), &w,
		    GNN_MSG_SAMPLE_REQ, &h2);
	if (gnn_decode_sample_req(p2, h2.len, &v2) != GNN_OK)
		broken("sample_req", "round trip: the re-encoded message is refused");
	if (v2.seed != v.seed || v2.num_rels != v.num_rels || !same(v2.fanouts, v.fanouts, (size_t)v.num_rels * 4) ||
	    v2.n != v.n || !same(v2.ids, v.ids, (size_t)v.n * 8))
		broken("sample_req", "round trip: seed, fanouts or IDs differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_sample_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_sample_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	uint64_t sum = 0, nc;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("sample_resp", gnn_decode_sample_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.num_rels == 0 || v.num_rels > GNN_PROTO_MAX_RELS)
		broken("sample_resp", "accepted over the ID or relation limit");
	nc = (uint64_t)v.n * v.num_rels;
	for (uint64_t i = 0; i < nc; i++)
		sum += v.counts[i];
	if (sum != v.total)
		broken("sample_resp", "accepted with counts not adding up to total");
	touch_i64(v.nbrs, v.total);
	gnn_wbuf_init(&w);
	p2 = reopen("sample_resp",
		    gnn_encode_sample_resp(&w, FUZZ_REQ_ID, v.counts, v.n, v.num_rels, v.nbrs, v.total), &w,
		    GNN_MSG_SAMPLE_RESP, &h2);
	if (gnn_decode_sample_resp(p2, h2.len, &v2) != GNN_OK)
		broken("sample_resp", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || v2.num_rels != v.num_rels || v2.total != v.total || !same(v2.counts, v.counts, nc * 4) ||
	    !same(v2.nbrs, v.nbrs, (size_t)v.total * 8))
		broken("sample_resp", "round trip: counts or neighbours differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_feat_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_feat_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("feat_resp", gnn_decode_feat_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.dim == 0 || v.dim > GNN_PROTO_MAX_FEAT_DIM || !gnn_feat_dtype_ok(v.dtype))
		broken("feat_resp", "accepted with n, dim or dtype out of range");
	touch_u8(v.rows, (uint64_t)v.n * v.dim * gnn_dtype_size(v.dtype));
	gnn_wbuf_init(&w);
	p2 = reopen("feat_resp", gnn_encode_feat_resp(&w, FUZZ_REQ_ID, v.dtype, v.rows, v.n, v.dim), &w,
		    GNN_MSG_FEAT_RESP, &h2);
	if (gnn_decode_feat_resp(p2, h2.len, &v2) != GNN_OK)
		broken("feat_resp", "round trip: the re-encoded message is refused");
	/* bytes, not floats: NaN rows must come back bit for bit */
	if (v2.n != v.n || v2.dim != v.dim || v2.dtype != v.dtype ||
	    !same(v2.rows, v.rows, (size_t)v.n * v.dim * gnn_dtype_size(v.dtype)))
		broken("feat_resp", "round trip: the rows differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_label_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_label_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("label_resp", gnn_decode_label_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS)
		broken("label_resp", "accepted over the ID limit");
	touch_i32(v.labels, v.n);
	gnn_wbuf_init(&w);
	p2 = reopen("label_resp", gnn_encode_label_resp(&w, FUZZ_REQ_ID, v.labels, v.n), &w,
		    GNN_MSG_LABEL_RESP, &h2);
	if (gnn_decode_label_resp(p2, h2.len, &v2) != GNN_OK)
		broken("label_resp", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || !same(v2.labels, v.labels, (size_t)v.n * 4))
		broken("label_resp", "round trip: the labels differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_predict_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_predict_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	uint64_t nk;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("predict_resp", gnn_decode_predict_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.k < 1 || v.k > GNN_PROTO_MAX_TOP_K)
		broken("predict_resp", "accepted a count out of range");
	nk = (uint64_t)v.n * v.k;
	touch_i64(v.orig_ids, v.n);
	touch_i32(v.pred, v.n);
	touch_i32(v.classes, nk);
	touch_f32(v.probs, nk);
	gnn_wbuf_init(&w);
	p2 = reopen("predict_resp", gnn_encode_predict_resp(&w, FUZZ_REQ_ID, &v), &w, GNN_MSG_PREDICT_RESP, &h2);
	if (gnn_decode_predict_resp(p2, h2.len, &v2) != GNN_OK)
		broken("predict_resp", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || v2.k != v.k || v2.params_crc != v.params_crc ||
	    !same(v2.orig_ids, v.orig_ids, (size_t)v.n * 8) || !same(v2.pred, v.pred, (size_t)v.n * 4) ||
	    !same(v2.classes, v.classes, nk * 4) || !same(v2.probs, v.probs, nk * 4))
		broken("predict_resp", "round trip: the predictions differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_split_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_split_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("split_resp", gnn_decode_split_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS)
		broken("split_resp", "accepted over the ID limit");
	for (uint32_t i = 0; i < v.n; i++)
		if (v.codes[i] > 3)
			broken("split_resp", "accepted a split code over 3");
	gnn_wbuf_init(&w);
	p2 = reopen("split_resp", gnn_encode_split_resp(&w, FUZZ_REQ_ID, v.codes, v.n), &w,
		    GNN_MSG_SPLIT_RESP, &h2);
	if (gnn_decode_split_resp(p2, h2.len, &v2) != GNN_OK)
		broken("split_resp", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || !same(v2.codes, v.codes, v.n))
		broken("split_resp", "round trip: the codes differ");
	gnn_wbuf_free(&w);
}

static void check_nodes_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_nodes_req v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("nodes_req", gnn_decode_nodes_req(p, len, &v), &v, sizeof(v)))
		return;
	if (v.split > 3 || v.limit == 0 || v.limit > GNN_PROTO_MAX_IDS || v.cursor < 0)
		broken("nodes_req", "accepted with split, limit or cursor out of range");
	gnn_wbuf_init(&w);
	p2 = reopen("nodes_req", gnn_encode_nodes_req(&w, FUZZ_REQ_ID, v.split, v.limit, v.cursor),
		    &w, GNN_MSG_NODES_REQ, &h2);
	if (gnn_decode_nodes_req(p2, h2.len, &v2) != GNN_OK)
		broken("nodes_req", "round trip: the re-encoded message is refused");
	if (v2.split != v.split || v2.limit != v.limit || v2.cursor != v.cursor)
		broken("nodes_req", "round trip: split, limit or cursor differs");
	gnn_wbuf_free(&w);
}

static void check_nodes_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_nodes_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("nodes_resp", gnn_decode_nodes_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.next_cursor < -1)
		broken("nodes_resp", "accepted over the ID limit or with a cursor below -1");
	touch_i64(v.ids, v.n);
	gnn_wbuf_init(&w);
	p2 = reopen("nodes_resp", gnn_encode_nodes_resp(&w, FUZZ_REQ_ID, v.ids, v.n, v.next_cursor),
		    &w, GNN_MSG_NODES_RESP, &h2);
	if (gnn_decode_nodes_resp(p2, h2.len, &v2) != GNN_OK)
		broken("nodes_resp", "round trip: the re-encoded message is refused");
	if (v2.n != v.n || v2.next_cursor != v.next_cursor || !same(v2.ids, v.ids, (size_t)v.n * 8))
		broken("nodes_resp", "round trip: IDs or next_cursor differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static bool flags_ok(uint32_t flags)
{
	return (flags & ~(uint32_t)(GNN_MB_FEATURES | GNN_MB_LABELS)) == 0;
}

static void check_minibatch_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_minibatch_req v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("minibatch_req", gnn_decode_minibatch_req(p, len, &v), &v, sizeof(v)))
		return;
	/* A request may also ask for the exclusion (GNN_MB_EXCLUDE); a reply's
	 * flags are its sections' only (flags_ok). */
	if (v.num_layers == 0 || v.num_layers > GNN_PROTO_MAX_LAYERS || v.num_rels == 0 ||
	    v.num_rels > GNN_PROTO_MAX_RELS || !flags_ok(v.flags & ~(uint32_t)GNN_MB_EXCLUDE) || v.num_seeds == 0 ||
	    v.num_seeds > GNN_PROTO_MAX_IDS)
		broken("minibatch_req", "accepted with layers, relations, flags or seeds out of range");
	if ((v.flags & GNN_MB_EXCLUDE) ? v.num_excl > GNN_PROTO_MAX_EXCL_PAIRS || (v.num_excl > 0 && v.excl == NULL)
				       : v.num_excl != 0 || v.excl_rel != 0 || v.excl != NULL)
		broken("minibatch_req", "accepted an exclusion list over the limit, or one without GNN_MB_EXCLUDE");
	touch_i64(v.excl, 2 * (size_t)v.num_excl);
	for (uint32_t k = 0; k < v.num_layers * v.num_rels; k++)
		if (!layer_fanout_ok(v.fanouts[k]))
			broken("minibatch_req", "accepted a bad fanout");
	touch_i64(v.seeds, v.num_seeds);
	gnn_wbuf_init(&w);
	p2 = reopen("minibatch_req", gnn_encode_minibatch_req(&w, FUZZ_REQ_ID, &v), &w,
		    GNN_MSG_MINIBATCH_REQ, &h2);
	if (gnn_decode_minibatch_req(p2, h2.len, &v2) != GNN_OK)
		broken("minibatch_req", "round trip: the re-encoded message is refused");
	if (v2.seed != v.seed || v2.flags != v.flags || v2.num_layers != v.num_layers || v2.num_rels != v.num_rels ||
	    !same(v2.fanouts, v.fanouts, (size_t)v.num_layers * v.num_rels * 4) || v2.num_seeds != v.num_seeds ||
	    !same(v2.seeds, v.seeds, (size_t)v.num_seeds * 8) || v2.num_excl != v.num_excl ||
	    v2.excl_rel != v.excl_rel || !same(v2.excl, v.excl, (size_t)v.num_excl * 16))
		broken("minibatch_req", "round trip: seed, flags, fanouts, seeds or exclusion differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

/* What proto.h promises of an accepted block: num_dst <= num_src, indptr
 * over the (destination, relation) rows monotone from 0 to num_edges,
 * indices below num_src. */
static void check_block(const struct gnn_block *b, uint32_t R)
{
	uint64_t rows = (uint64_t)b->num_dst * R;

	touch_i64(b->src_ids, b->num_src);
	if (b->num_rels != R || b->num_dst > b->num_src || b->indptr[0] != 0 ||
	    (uint64_t)(uint32_t)b->indptr[rows] != b->num_edges)
		broken("minibatch_resp", "accepted a block with bad sizes or indptr ends");
	for (uint64_t i = 0; i < rows; i++)
		if (b->indptr[i + 1] < b->indptr[i])
			broken("minibatch_resp", "accepted a block with indptr decreasing");
	for (uint64_t e = 0; e < b->num_edges; e++)
		if (b->indices[e] < 0 || (uint32_t)b->indices[e] >= b->num_src)
			broken("minibatch_resp", "accepted a block with an index out of range");
}

static bool same_block(const struct gnn_block *a, const struct gnn_block *b)
{
	return a->num_dst == b->num_dst && a->num_src == b->num_src && a->num_rels == b->num_rels &&
	       a->num_edges == b->num_edges && same(a->src_ids, b->src_ids, (size_t)a->num_src * 8) &&
	       same(a->indptr, b->indptr, ((size_t)a->num_dst * a->num_rels + 1) * 4) &&
	       same(a->indices, b->indices, (size_t)a->num_edges * 4);
}

/* The input types and per-type feature matrices of an accepted minibatch. */
static void check_inputs(const struct gnn_minibatch *v)
{
	uint32_t rows[GNN_PROTO_MAX_TYPES] = { 0 };

	for (uint32_t i = 0; i < v->blocks[0].num_src; i++) {
		if (v->src_types[i] >= v->num_types)
			broken("minibatch_resp", "accepted an input node type out of range");
		rows[v->src_types[i]]++;
	}
	for (uint32_t t = 0; t < v->num_types; t++) {
		uint64_t n = (uint64_t)rows[t] * v->feat_dims[t];

		if (rows[t] != v->type_rows[t] || v->feat_dims[t] > GNN_PROTO_MAX_FEAT_DIM)
			broken("minibatch_resp", "accepted with type counts or a feature width out of range");
		if ((v->flags & GNN_MB_FEATURES) && n > 0 && v->feat[t] == NULL)
			broken("minibatch_resp", "accepted features without a type's rows");
		if ((v->flags & GNN_MB_FEATURES) && n > 0)
			touch_u8(v->feat[t], n * gnn_dtype_size(v->feat_dtype));
	}
}

static void check_minibatch_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_minibatch v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("minibatch_resp", gnn_decode_minibatch_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.num_layers == 0 || v.num_layers > GNN_PROTO_MAX_LAYERS || !flags_ok(v.flags) || v.num_types == 0 ||
	    v.num_types > GNN_PROTO_MAX_TYPES || v.num_rels == 0 || v.num_rels > GNN_PROTO_MAX_RELS ||
	    v.num_seeds == 0 || v.num_seeds > GNN_PROTO_MAX_IDS)
		broken("minibatch_resp", "accepted with layers, flags, types, relations or seeds out of range");
	for (uint32_t l = 0; l < v.num_layers; l++) {
		check_block(&v.blocks[l], v.num_rels);
		if (l > 0 && (v.blocks[l - 1].num_dst != v.blocks[l].num_src ||
			      !same(v.blocks[l - 1].src_ids, v.blocks[l].src_ids,
				    (size_t)v.blocks[l].num_src * 8)))
			broken("minibatch_resp", "accepted blocks that do not chain");
	}
	if (v.blocks[v.num_layers - 1].num_dst != v.num_seeds)
		broken("minibatch_resp", "accepted a last block without num_seeds destinations");
	check_inputs(&v);
	if ((v.flags & GNN_MB_LABELS) && v.labels == NULL)
		broken("minibatch_resp", "accepted labels without the array");
	if (v.flags & GNN_MB_LABELS)
		touch_i32(v.labels, v.num_seeds);
	gnn_wbuf_init(&w);
	p2 = reopen("minibatch_resp", gnn_encode_minibatch_resp(&w, FUZZ_REQ_ID, &v), &w,
		    GNN_MSG_MINIBATCH_RESP, &h2);
	if (gnn_decode_minibatch_resp(p2, h2.len, &v2) != GNN_OK)
		broken("minibatch_resp", "round trip: the re-encoded message is refused");
	if (v2.num_layers != v.num_layers || v2.flags != v.flags || v2.feat_dtype != v.feat_dtype || v2.num_types != v.num_types ||
	    v2.num_rels != v.num_rels || v2.num_seeds != v.num_seeds ||
	    !same(v2.feat_dims, v.feat_dims, (size_t)v.num_types * 4) ||
	    !same(v2.src_types, v.src_types, v.blocks[0].num_src))
		broken("minibatch_resp", "round trip: a header field or the input types differ");
	for (uint32_t l = 0; l < v.num_layers; l++)
		if (!same_block(&v2.blocks[l], &v.blocks[l]))
			broken("minibatch_resp", "round trip: a block differs");
	for (uint32_t t = 0; (v.flags & GNN_MB_FEATURES) && t < v.num_types; t++)
		if (!same(v2.feat[t], v.feat[t], (size_t)v.type_rows[t] * v.feat_dims[t] * gnn_dtype_size(v.feat_dtype)))
			broken("minibatch_resp", "round trip: the features differ");
	if ((v.flags & GNN_MB_LABELS) && !same(v2.labels, v.labels, (size_t)v.num_seeds * 4))
		broken("minibatch_resp", "round trip: the labels differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

/* Where a decoder's array must be: 8-aligned, and inside the payload p
 * (len bytes) when p is 8-aligned (decoded in place), outside it when not
 * (the decoder's copy). n bytes from at; at may be NULL only when n == 0. */
static void check_array_at(const char *msg, const void *at, uint64_t n, const uint8_t *p, size_t len)
{
	const uint8_t *a = at;
	bool inside = a >= p && a <= p + len;

	if (at == NULL)
		return;
	if (((uintptr_t)at & 7) != 0)
		broken(msg, "an array at a misaligned address");
	if (((uintptr_t)p & 7) == 0 ? !inside || n > (uint64_t)(p + len - a) : inside)
		broken(msg, "an array neither in the aligned payload nor in the decoder's copy");
}

static bool emb_op_has_ids(uint32_t op)
{
	return op == GNN_EMB_PULL || op == GNN_EMB_PUSH || op == GNN_EMB_DELTA;
}

static bool emb_op_has_data(uint32_t op)
{
	return op == GNN_EMB_PUSH || op == GNN_EMB_WRITE;
}

/* INIT's configuration as proto.h documents it. */
static bool emb_cfg_ok(const struct gnn_emb_cfg *c)
{
	bool any = false;

	if (c->num_types == 0 || c->num_types > GNN_PROTO_MAX_TYPES ||
	    (c->optimizer != GNN_EMB_ADAM && c->optimizer != GNN_EMB_ADAGRAD) || !(c->lr > 0) ||
	    !(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1) || !(c->eps > 0))
		return false;
	for (uint32_t t = 0; t < GNN_PROTO_MAX_TYPES; t++) {
		if (c->dim[t] > GNN_PROTO_MAX_FEAT_DIM || (t >= c->num_types && c->dim[t] != 0))
			return false;
		any = any || c->dim[t] > 0;
	}
	return any;
}

static bool same_emb_cfg(const struct gnn_emb_cfg *a, const struct gnn_emb_cfg *b)
{
	/* floats by their bits */
	return a->num_types == b->num_types && same(a->dim, b->dim, sizeof(a->dim)) &&
	       a->optimizer == b->optimizer && same(&a->lr, &b->lr, 4) && same(&a->beta1, &b->beta1, 4) &&
	       same(&a->beta2, &b->beta2, 4) && same(&a->eps, &b->eps, 4) && a->seed == b->seed && a->hash == b->hash;
}

static void check_emb_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_emb_req v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	uint64_t bytes;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("emb_req", gnn_decode_emb_req(p, len, &v), &v, sizeof(v)))
		return;
	if (v.op == 0 || v.op >= GNN_EMB_OP_END || v.node_type >= GNN_PROTO_MAX_TYPES || v.array >= GNN_EMB_ARRAYS ||
	    v.n > GNN_PROTO_MAX_IDS || v.dim > GNN_PROTO_MAX_FEAT_DIM || v.first < 0)
		broken("emb_req", "accepted with op, type, array, n, dim or first out of range");
	if (v.op == GNN_EMB_PUSH && (v.world == 0 || v.world > 65536 || v.rank >= v.world))
		broken("emb_req", "accepted a PUSH with rank or world out of range");
	if (v.op == GNN_EMB_INIT && !emb_cfg_ok(&v.cfg))
		broken("emb_req", "accepted a bad INIT configuration");
	if (emb_op_has_data(v.op) && v.n > 0 && v.dim == 0)
		broken("emb_req", "accepted rows of data without words");
	/* the data's bytes: rows of 4-byte words, or SAVE's path */
	bytes = emb_op_has_data(v.op) ? (uint64_t)v.n * v.dim * 4 : v.op == GNN_EMB_SAVE ? v.n : 0;
	if ((!emb_op_has_ids(v.op) && v.ids != NULL) ||
	    (!emb_op_has_data(v.op) && v.op != GNN_EMB_SAVE && v.data != NULL) ||
	    (emb_op_has_ids(v.op) && v.n > 0 && v.ids == NULL) || (bytes > 0 && v.data == NULL))
		broken("emb_req", "ids or data set for an op without them, or missing");
	if (v.op == GNN_EMB_SAVE && (v.n == 0 || v.n >= 4096 || memchr(v.data, 0, v.n) != NULL))
		broken("emb_req", "accepted a SAVE path that is empty, 4096 bytes or more, or holds a NUL");
	check_array_at("emb_req", v.ids, v.ids ? (uint64_t)v.n * 8 : 0, p, len);
	check_array_at("emb_req", v.data, bytes, p, len);
	if (v.ids != NULL)
		touch_i64(v.ids, v.n);
	if (v.data != NULL)
		touch_u8(v.data, bytes);
	gnn_wbuf_init(&w);
	p2 = reopen("emb_req", gnn_encode_emb_req(&w, FUZZ_REQ_ID, &v), &w, GNN_MSG_EMB_REQ, &h2);
	if (h2.len != len)
		broken("emb_req", "round trip: the re-encoded payload has another length");
	if (gnn_decode_emb_req(p2, h2.len, &v2) != GNN_OK)
		broken("emb_req", "round trip: the re-encoded message is refused");
	if (v2.op != v.op || v2.node_type != v.node_type || v2.array != v.array || v2.rank != v.rank ||
	    v2.world != v.world || v2.gen != v.gen || v2.step != v.step || v2.first != v.first || v2.n != v.n ||
	    v2.dim != v.dim || (v2.ids == NULL) != (v.ids == NULL) || (v2.data == NULL) != (v.data == NULL) ||
	    (v.ids != NULL && !same(v2.ids, v.ids, (size_t)v.n * 8)) ||
	    (v.data != NULL && !same(v2.data, v.data, bytes)) ||
	    (v.op == GNN_EMB_INIT && !same_emb_cfg(&v2.cfg, &v.cfg)))
		broken("emb_req", "round trip: a field, the IDs, the data or the configuration differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_emb_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_emb_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	uint64_t words;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("emb_resp", gnn_decode_emb_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.n > GNN_PROTO_MAX_IDS || v.dim > GNN_PROTO_MAX_FEAT_DIM + 1)   /* + 1: DELTA's index */
		broken("emb_resp", "accepted with n or dim out of range");
	words = (uint64_t)v.n * v.dim;
	if ((v.data != NULL) != (words > 0))
		broken("emb_resp", "data set without rows, or rows without data");
	check_array_at("emb_resp", v.data, words * 4, p, len);
	if (v.data != NULL)
		touch_i32(v.data, words);
	gnn_wbuf_init(&w);
	p2 = reopen("emb_resp", gnn_encode_emb_resp(&w, FUZZ_REQ_ID, &v), &w, GNN_MSG_EMB_RESP, &h2);
	if (h2.len != len)
		broken("emb_resp", "round trip: the re-encoded payload has another length");
	if (gnn_decode_emb_resp(p2, h2.len, &v2) != GNN_OK)
		broken("emb_resp", "round trip: the re-encoded message is refused");
	if (v2.gen != v.gen || v2.version != v.version || v2.cfg_hash != v.cfg_hash || v2.n != v.n ||
	    v2.dim != v.dim || !same(v2.data, v.data, words * 4))
		broken("emb_resp", "round trip: a field or the rows differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

/* ---- LINK ---- */

static uint64_t link_ids(const struct gnn_link_req *v)
{
	return v->op == GNN_LINK_SCORE ? 2 * (uint64_t)v->n : v->n;
}

static void check_link_req(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_link_req v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("link_req", gnn_decode_link_req(p, len, &v), &v, sizeof(v)))
		return;
	if (v.op < GNN_LINK_ROWS || v.op > GNN_LINK_TOPK ||
	    (v.flags & ~(uint32_t)(v.op == GNN_LINK_ROWS ? GNN_LINK_WITH_DECODER : 0)) != 0)
		broken("link_req", "accepted an unknown op or flag");
	if (v.n > (v.op == GNN_LINK_ROWS ? GNN_PROTO_MAX_IDS : v.op == GNN_LINK_SCORE ? GNN_PROTO_MAX_LINK_PAIRS :
		   GNN_PROTO_MAX_LINK_EXCL))
		broken("link_req", "accepted a count over the op's limit");
	if (v.op == GNN_LINK_TOPK ? v.k < 1 || v.k > GNN_PROTO_MAX_LINK_K || v.dim > GNN_PROTO_MAX_FEAT_DIM ||
				    (v.node_type >= GNN_PROTO_MAX_TYPES && v.node_type != GNN_LINK_ANY_TYPE) ||
				    (v.dim == 0) != (v.node >= 0) || (v.dim > 0 && v.node != -1)
				  : v.k != 0 || v.dim != 0 || v.node_type != 0 || v.node != -1)
		broken("link_req", "accepted k, dim, node_type or node out of range for the op");
	if ((v.query != NULL) != (v.dim > 0))
		broken("link_req", "query set without dim, or dim without query");
	check_array_at("link_req", v.query, (uint64_t)v.dim * 4, p, len);
	check_array_at("link_req", v.ids, link_ids(&v) * 8, p, len);
	if (v.query != NULL)
		touch_f32(v.query, v.dim);
	touch_i64(v.ids, link_ids(&v));
	gnn_wbuf_init(&w);
	p2 = reopen("link_req", gnn_encode_link_req(&w, FUZZ_REQ_ID, &v), &w, GNN_MSG_LINK_REQ, &h2);
	if (h2.len != len)
		broken("link_req", "round trip: the re-encoded payload has another length");
	if (gnn_decode_link_req(p2, h2.len, &v2) != GNN_OK)
		broken("link_req", "round trip: the re-encoded message is refused");
	if (v2.op != v.op || v2.flags != v.flags || v2.n != v.n || v2.k != v.k || v2.dim != v.dim ||
	    v2.node_type != v.node_type || v2.node != v.node || !same(v2.query, v.query, (size_t)v.dim * 4) ||
	    !same(v2.ids, v.ids, link_ids(&v) * 8))
		broken("link_req", "round trip: a field, the query or the IDs differ");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

static void check_link_resp(const struct gnn_hdr *h, const uint8_t *p, size_t len)
{
	struct gnn_link_resp v, v2;
	struct gnn_wbuf w;
	struct gnn_hdr h2;
	const void *p2;
	uint64_t nr, np;

	(void)h;
	memset(&v, FILL, sizeof(v));
	if (!decoded("link_resp", gnn_decode_link_resp(p, len, &v), &v, sizeof(v)))
		return;
	if (v.op < GNN_LINK_ROWS || v.op > GNN_LINK_TOPK || (v.decoder != GNN_LINK_DOT && v.decoder != GNN_LINK_MLP) ||
	    v.dim < 1 || v.dim > GNN_PROTO_MAX_FEAT_DIM || v.hidden > GNN_PROTO_MAX_FEAT_DIM ||
	    (v.decoder == GNN_LINK_DOT) != (v.hidden == 0) ||
	    (v.flags & ~(uint32_t)(v.op == GNN_LINK_ROWS ? GNN_LINK_WITH_DECODER : 0)) != 0 ||
	    v.n > (v.op == GNN_LINK_TOPK ? GNN_PROTO_MAX_LINK_K : v.op == GNN_LINK_SCORE ? GNN_PROTO_MAX_LINK_PAIRS :
		   GNN_PROTO_MAX_IDS))
		broken("link_resp", "accepted an op, decoder, width, flag or count out of range");
	nr = v.op == GNN_LINK_ROWS ? (uint64_t)v.n * v.dim : 0;
	np = v.flags & GNN_LINK_WITH_DECODER ? gnn_link_params_count(v.decoder, v.dim, v.hidden) : 0;
	if ((v.rows != NULL) != (v.op == GNN_LINK_ROWS) || (v.nodes != NULL) != (v.op == GNN_LINK_TOPK) ||
	    (v.scores != NULL) != (v.op != GNN_LINK_ROWS) || (v.params != NULL) != (np > 0))
		broken("link_resp", "an array set that the op does not carry, or one missing");
	check_array_at("link_resp", v.rows, nr * 4, p, len);
	check_array_at("link_resp", v.nodes, (uint64_t)v.n * 8, p, len);
	check_array_at("link_resp", v.scores, (uint64_t)v.n * 4, p, len);
	check_array_at("link_resp", v.params, np * 4, p, len);
	if (v.rows != NULL)
		touch_f32(v.rows, nr);
	if (v.nodes != NULL)
		touch_i64(v.nodes, v.n);
	if (v.scores != NULL)
		touch_f32(v.scores, v.n);
	if (v.params != NULL)
		touch_f32(v.params, np);
	gnn_wbuf_init(&w);
	p2 = reopen("link_resp", gnn_encode_link_resp(&w, FUZZ_REQ_ID, &v), &w, GNN_MSG_LINK_RESP, &h2);
	if (h2.len != len)
		broken("link_resp", "round trip: the re-encoded payload has another length");
	if (gnn_decode_link_resp(p2, h2.len, &v2) != GNN_OK)
		broken("link_resp", "round trip: the re-encoded message is refused");
	if (v2.op != v.op || v2.n != v.n || v2.params_crc != v.params_crc || v2.decoder != v.decoder ||
	    v2.dim != v.dim || v2.hidden != v.hidden || v2.flags != v.flags || !same(v2.rows, v.rows, nr * 4) ||
	    (v.nodes != NULL && !same(v2.nodes, v.nodes, (size_t)v.n * 8)) ||
	    (v.scores != NULL && !same(v2.scores, v.scores, (size_t)v.n * 4)) || !same(v2.params, v.params, np * 4))
		broken("link_resp", "round trip: a field or an array differs");
	gnn_proto_release(v2.owned);
	gnn_wbuf_free(&w);
	gnn_proto_release(v.owned);
}

/* ---- targets ---- */

struct decoder {
	const char *name;          /* the target is fuzz_<name> */
	uint16_t types[5];         /* message types with this payload; types[0] for direct calls */
	void (*check)(const struct gnn_hdr *h, const uint8_t *p, size_t len);
};

static const struct decoder decoders[] = {
	{ "error", { GNN_MSG_ERROR }, check_error },
	{ "info_resp", { GNN_MSG_INFO_RESP }, check_info_resp },
	{ "ids_req", { GNN_MSG_FEAT_REQ, GNN_MSG_LABEL_REQ, GNN_MSG_SPLIT_REQ, GNN_MSG_PREDICT_REQ, GNN_MSG_LOOKUP_RESP },
	  check_ids_req },
	{ "lookup_req", { GNN_MSG_LOOKUP_REQ }, check_lookup_req },
	{ "predict_resp", { GNN_MSG_PREDICT_RESP }, check_predict_resp },
	{ "sample_req", { GNN_MSG_SAMPLE_REQ }, check_sample_req },
	{ "sample_resp", { GNN_MSG_SAMPLE_RESP }, check_sample_resp },
	{ "feat_resp", { GNN_MSG_FEAT_RESP }, check_feat_resp },
	{ "label_resp", { GNN_MSG_LABEL_RESP }, check_label_resp },
	{ "split_resp", { GNN_MSG_SPLIT_RESP }, check_split_resp },
	{ "nodes_req", { GNN_MSG_NODES_REQ }, check_nodes_req },
	{ "nodes_resp", { GNN_MSG_NODES_RESP }, check_nodes_resp },
	{ "minibatch_req", { GNN_MSG_MINIBATCH_REQ }, check_minibatch_req },
	{ "minibatch_resp", { GNN_MSG_MINIBATCH_RESP }, check_minibatch_resp },
	{ "emb_req", { GNN_MSG_EMB_REQ }, check_emb_req },
	{ "emb_resp", { GNN_MSG_EMB_RESP }, check_emb_resp },
	{ "link_req", { GNN_MSG_LINK_REQ }, check_link_req },
	{ "link_resp", { GNN_MSG_LINK_RESP }, check_link_resp },
};
#define NUM_DECODERS (sizeof(decoders) / sizeof(decoders[0]))

/* The decoders this target runs: [first, end) of the table. */
static size_t first, end;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (strcmp(FUZZ_DECODER, "proto") == 0) {
		first = 0;
		end = NUM_DECODERS;
		return 0;
	}
	for (size_t i = 0; i < NUM_DECODERS; i++) {
		if (strcmp(FUZZ_DECODER, decoders[i].name) == 0) {
			first = i;
			end = i + 1;
			return 0;
		}
	}
	fprintf(stderr, "fuzz_proto: unknown FUZZ_DECODER \"%s\"\n", FUZZ_DECODER);
	exit(2);
}

static bool carries(const struct decoder *d, uint16_t type)
{
	for (size_t i = 0; i < sizeof(d->types) / sizeof(d->types[0]); i++)
		if (d->types[i] != 0 && d->types[i] == type)
			return true;
	return false;
}

/* Runs the selected decoders on buf: as a whole message, then directly. */
static void fuzz_buffer(const uint8_t *buf, size_t size)
{
	static const uint8_t unset;
	const void *payload = &unset;
	struct gnn_hdr h;
	int rc = gnn_proto_decode_hdr(buf, size, &h, &payload);

	if (rc == GNN_OK) {
		if (payload != buf + GNN_PROTO_HDR_BYTES || h.len != size - GNN_PROTO_HDR_BYTES ||
		    h.type == 0 || h.type >= GNN_MSG_TYPE_COUNT || h.version != GNN_PROTO_VERSION ||
		    h.len > GNN_PROTO_MAX_MSG_BYTES)
			broken("header", "accepted with a wrong field");
		for (size_t i = first; i < end; i++)
			if (carries(&decoders[i], h.type))
				decoders[i].check(&h, payload, h.len);
	} else if ((rc != GNN_EPROTO && rc != GNN_EVERSION && rc != GNN_ERANGE) || payload != &unset) {
		broken("header", "refused with an undocumented code or set the payload");
	}
	for (size_t i = first; i < end; i++) {
		struct gnn_hdr direct = { .version = GNN_PROTO_VERSION, .type = decoders[i].types[0],
					  .len = (uint32_t)size };

		decoders[i].check(&direct, buf, size);
	}
}

/* Offsets (mod 8) the input is placed at: libFuzzer's own buffer (aligned);
 * 4, where nng leaves a message body once it strips its 4-byte request ID
 * (the payload after the 28-byte header is then aligned and decoded in
 * place); 1, where every array is misaligned and must be copied. Each copy
 * ends where its allocation ends, so ASan sees a read past the input. */
static const size_t shifts[] = { 0, 4, 1 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > GNN_PROTO_MAX_MSG_BYTES)
		return 0;
	for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
		uint8_t *copy;

		if (shifts[i] == 0) {
			fuzz_buffer(data, size);
			continue;
		}
		copy = malloc(size + shifts[i]);
		if (copy == NULL)
			return 0;
		memcpy(copy + shifts[i], data, size);
		fuzz_buffer(copy + shifts[i], size);
		free(copy);
	}
	return 0;
}
