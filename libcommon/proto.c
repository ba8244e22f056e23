#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "err.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the wire format is little-endian");

static const char *const msg_names[GNN_MSG_TYPE_COUNT] = {
	[GNN_MSG_ERROR] = "error",
	[GNN_MSG_INFO_REQ] = "info",
	[GNN_MSG_INFO_RESP] = "info_resp",
	[GNN_MSG_SAMPLE_REQ] = "sample",
	[GNN_MSG_SAMPLE_RESP] = "sample_resp",
	[GNN_MSG_FEAT_REQ] = "features",
	[GNN_MSG_FEAT_RESP] = "features_resp",
	[GNN_MSG_LABEL_REQ] = "labels",
	[GNN_MSG_LABEL_RESP] = "labels_resp",
	[GNN_MSG_SPLIT_REQ] = "split",
	[GNN_MSG_SPLIT_RESP] = "split_resp",
	[GNN_MSG_NODES_REQ] = "nodes",
	[GNN_MSG_NODES_RESP] = "nodes_resp",
	[GNN_MSG_MINIBATCH_REQ] = "minibatch",
	[GNN_MSG_MINIBATCH_RESP] = "minibatch_resp",
	[GNN_MSG_PREDICT_REQ] = "predict",
	[GNN_MSG_PREDICT_RESP] = "predict_resp",
	[GNN_MSG_LOOKUP_REQ] = "lookup",
	[GNN_MSG_LOOKUP_RESP] = "lookup_resp",
	[GNN_MSG_EMB_REQ] = "emb",
	[GNN_MSG_EMB_RESP] = "emb_resp",
	[GNN_MSG_LINK_REQ] = "link",
	[GNN_MSG_LINK_RESP] = "link_resp",
};

const char *gnn_msg_name(uint16_t type)
{
	if (type >= GNN_MSG_TYPE_COUNT || msg_names[type] == NULL)
		return "unknown";
	return msg_names[type];
}

/* ---- writing ---- */

static void put_u32(struct gnn_wbuf *w, uint32_t v) { gnn_wbuf_put(w, &v, 4); }
static void put_u64(struct gnn_wbuf *w, uint64_t v) { gnn_wbuf_put(w, &v, 8); }

/* Zero padding up to the next multiple of 8 from the payload start. */
static void pad8(struct gnn_wbuf *w, size_t start)
{
	static const uint8_t zero[8];

	gnn_wbuf_put(w, zero, (8 - (w->len - start - GNN_PROTO_HDR_BYTES) % 8) % 8);
}

/* Starts a message: the header with a length patched in by finish(). */
static size_t begin(struct gnn_wbuf *w, uint16_t type, uint64_t req_id, uint32_t status)
{
	uint32_t magic = GNN_PROTO_MAGIC;
	uint16_t version = GNN_PROTO_VERSION;
	size_t start = w->len;

	gnn_wbuf_put(w, &magic, 4);
	gnn_wbuf_put(w, &version, 2);
	gnn_wbuf_put(w, &type, 2);
	put_u64(w, req_id);
	put_u32(w, 0);
	put_u32(w, status);
	put_u32(w, 0);
	return start;
}

static int finish(struct gnn_wbuf *w, size_t start)
{
	uint64_t payload = w->len - start - GNN_PROTO_HDR_BYTES;
	uint32_t len32 = (uint32_t)payload;

	if (w->failed)
		return GNN_ENOMEM;
	if (payload > GNN_PROTO_MAX_MSG_BYTES) {
		w->len = start;
		return GNN_ERANGE;
	}
	memcpy(w->buf + start + 16, &len32, 4);
	return GNN_OK;
}

/* ---- reading ---- */

struct rd {
	const uint8_t *p;
	size_t off, len;
	bool bad;
};

/* Starts reading a payload; copies it when it is not 8-byte aligned, so
 * the arrays handed out are aligned. *owned receives one block (or NULL):
 * head zeroed bytes for the decoder's own use (head > 0: always), then the
 * copy when one is made. */
static int rd_init_head(struct rd *r, const void *payload, size_t len, size_t head, void **owned)
{
	bool copy = ((uintptr_t)payload & 7) != 0 && len > 0;

	*owned = NULL;
	r->p = payload;
	r->off = 0;
	r->len = len;
	r->bad = false;
	head = (head + 7) / 8 * 8;  /* keeps the copy aligned */
	if (head == 0 && !copy)
		return GNN_OK;
	if ((*owned = malloc(head + (copy ? len : 0))) == NULL)
		return GNN_ENOMEM;
	memset(*owned, 0, head);
	if (copy) {
		memcpy((uint8_t *)*owned + head, payload, len);
		r->p = (const uint8_t *)*owned + head;
	}
	return GNN_OK;
}

static int rd_init(struct rd *r, const void *payload, size_t len, void **owned)
{
	return rd_init_head(r, payload, len, 0, owned);
}

/* Returns a pointer to n items of size bytes and advances, or NULL (and
 * marks the reader bad) when they do not fit. n * size cannot overflow: n
 * is checked against the limits first, and both are below 2^32. */
static const void *take(struct rd *r, uint64_t n, size_t size)
{
	uint64_t bytes = n * size;
	const void *at = r->p + r->off;

	if (r->bad || bytes > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	r->off += bytes;
	return at;
}

static uint32_t get_u32(struct rd *r)
{
	const void *p = take(r, 1, 4);
	uint32_t v = 0;

	if (p != NULL)
		memcpy(&v, p, 4);
	return v;
}

static uint64_t get_u64(struct rd *r)
{
	const void *p = take(r, 1, 8);
	uint64_t v = 0;

	if (p != NULL)
		memcpy(&v, p, 8);
	return v;
}

static void skip8(struct rd *r)
{
	take(r, (8 - r->off % 8) % 8, 1);
}

/* The end of a decoder: everything read, nothing left over. */
static int rd_done(struct rd *r, void **owned)
{
	if (!r->bad && r->off == r->len)
		return GNN_OK;
	free(*owned);
	*owned = NULL;
	return GNN_EPROTO;
}

static int rd_fail(void **owned, int rc)
{
	free(*owned);
	*owned = NULL;
	return rc;
}

void gnn_proto_release(void *owned)
{
	free(owned);
}

int gnn_proto_decode_hdr(const void *msg, size_t len, struct gnn_hdr *h, const void **payload)
{
	const uint8_t *b = msg;
	uint32_t magic, reserved;

	if (len < GNN_PROTO_HDR_BYTES)
		return GNN_EPROTO;
	memcpy(&magic, b, 4);
	memcpy(&h->version, b + 4, 2);
	memcpy(&h->type, b + 6, 2);
	memcpy(&h->req_id, b + 8, 8);
	memcpy(&h->len, b + 16, 4);
	memcpy(&h->status, b + 20, 4);
	memcpy(&reserved, b + 24, 4);
	if (magic != GNN_PROTO_MAGIC || reserved != 0)
		return GNN_EPROTO;
	if (h->version != GNN_PROTO_VERSION)
		return GNN_EVERSION;
	if (h->type == 0 || h->type >= GNN_MSG_TYPE_COUNT)
		return GNN_EPROTO;
	if (h->len > GNN_PROTO_MAX_MSG_BYTES)
		return GNN_ERANGE;
	if ((uint64_t)h->len != len - GNN_PROTO_HDR_BYTES)
		return GNN_EPROTO;
	*payload = b + GNN_PROTO_HDR_BYTES;
	return GNN_OK;
}

/* ---- ERROR ---- */

int gnn_encode_error(struct gnn_wbuf *w, uint64_t req_id, uint32_t status, const char *text)
{
	size_t start = begin(w, GNN_MSG_ERROR, req_id, status), n = text ? strlen(text) : 0;

	if (n > GNN_PROTO_MAX_ERROR_TEXT)
		n = GNN_PROTO_MAX_ERROR_TEXT;
	put_u32(w, (uint32_t)n);
	gnn_wbuf_put(w, text, n);
	return finish(w, start);
}

int gnn_decode_error(const struct gnn_hdr *h, const void *payload, struct gnn_error_msg *out)
{
	struct rd r = { .p = payload, .len = h->len };
	uint32_t n = get_u32(&r);
	const char *text;

	if (n > GNN_PROTO_MAX_ERROR_TEXT)
		return GNN_ERANGE;
	text = take(&r, n, 1);
	if (r.bad || r.off != r.len)
		return GNN_EPROTO;
	out->status = h->status;
	out->text = text;
	out->text_len = n;
	return GNN_OK;
}

/* ---- INFO ---- */

int gnn_encode_info_req(struct gnn_wbuf *w, uint64_t req_id)
{
	return finish(w, begin(w, GNN_MSG_INFO_REQ, req_id, 0));
}

/* A schema entry's name: GNN_NAME_MAX bytes, NUL-padded. */
static void put_name(struct gnn_wbuf *w, const char *name)
{
	char field[GNN_NAME_MAX] = { 0 };

	snprintf(field, sizeof(field), "%s", name);
	gnn_wbuf_put(w, field, sizeof(field));
}

int gnn_encode_info_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_info *in)
{
	const struct gnn_layout *l = &in->layout;
	const struct gnn_schema *sc = l->schema;
	size_t start = begin(w, GNN_MSG_INFO_RESP, req_id, 0);

	put_u32(w, in->part_id);
	put_u32(w, l->num_parts);
	put_u64(w, (uint64_t)l->num_nodes);
	put_u64(w, (uint64_t)l->num_edges);
	put_u32(w, l->feat_dim);
	put_u32(w, l->num_classes);
	put_u64(w, (uint64_t)in->part_edges);
	put_u64(w, l->graph_id);
	gnn_wbuf_put(w, l->offsets, ((size_t)l->num_parts + 1) * sizeof(int64_t));
	put_u32(w, sc->num_types);
	put_u32(w, sc->num_rels);
	put_u32(w, sc->label_type);
	put_u32(w, l->feat_dtype);
	for (uint32_t t = 0; t < sc->num_types; t++) {
		put_name(w, sc->types[t].name);
		put_u64(w, (uint64_t)sc->types[t].num_nodes);
		put_u32(w, sc->types[t].feat_dim);
		put_u32(w, 0);
	}
	for (uint32_t r = 0; r < sc->num_rels; r++) {
		put_name(w, sc->rels[r].name);
		put_u64(w, (uint64_t)sc->rels[r].num_edges);
		put_u32(w, sc->rels[r].src);
		put_u32(w, sc->rels[r].dst);
	}
	gnn_wbuf_put(w, l->type_offsets, ((size_t)l->num_parts * sc->num_types + 1) * sizeof(int64_t));
	return finish(w, start);
}

/* A GNN_NAME_MAX-byte name field into name (left as is when short). */
static void get_name(struct rd *r, char name[GNN_NAME_MAX])
{
	const void *at = take(r, GNN_NAME_MAX, 1);

	if (at != NULL)
		memcpy(name, at, GNN_NAME_MAX);
}

/* INFO_RESP's schema section into s, and the feature dtype it carries
 * into *feat_dtype (names and dtype are checked by the caller's
 * gnn_layout_check). */
static void get_schema(struct rd *r, struct gnn_schema *s, uint32_t *feat_dtype)
{
	s->num_types = get_u32(r);
	s->num_rels = get_u32(r);
	s->label_type = get_u32(r);
	*feat_dtype = get_u32(r);
	if (r->bad || s->num_types == 0 || s->num_types > GNN_PROTO_MAX_TYPES || s->num_rels == 0 ||
	    s->num_rels > GNN_PROTO_MAX_RELS) {
		r->bad = true;
		return;
	}
	for (uint32_t t = 0; t < s->num_types; t++) {
		get_name(r, s->types[t].name);
		s->types[t].num_nodes = (int64_t)get_u64(r);
		s->types[t].feat_dim = get_u32(r);
		get_u32(r);
	}
	for (uint32_t q = 0; q < s->num_rels; q++) {
		get_name(r, s->rels[q].name);
		s->rels[q].num_edges = (int64_t)get_u64(r);
		s->rels[q].src = get_u32(r);
		s->rels[q].dst = get_u32(r);
	}
}

int gnn_decode_info_resp(const void *payload, size_t len, struct gnn_info *out)
{
	struct gnn_info v = { 0 };
	struct gnn_layout *l = &v.layout;
	struct gnn_schema *sc;
	char why[256];
	struct rd r;

	/* The schema lives at the head of the block the caller frees. */
	if (rd_init_head(&r, payload, len, sizeof(*sc), &v.owned) != GNN_OK)
		return GNN_ENOMEM;
	sc = v.owned;
	l->schema = sc;
	v.part_id = get_u32(&r);
	l->num_parts = get_u32(&r);
	l->num_nodes = (int64_t)get_u64(&r);
	l->num_edges = (int64_t)get_u64(&r);
	l->feat_dim = get_u32(&r);
	l->num_classes = get_u32(&r);
	v.part_edges = (int64_t)get_u64(&r);
	l->graph_id = get_u64(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	/* part_id == num_parts: a sampler answering for the whole graph. */
	if (l->num_parts == 0 || l->num_parts > GNN_PROTO_MAX_PARTS || v.part_id > l->num_parts ||
	    l->num_nodes <= 0 || l->num_edges < 0 || v.part_edges < 0 || v.part_edges > l->num_edges ||
	    l->feat_dim > GNN_PROTO_MAX_FEAT_DIM || l->num_classes == 0)
		return rd_fail(&v.owned, GNN_ERANGE);
	l->offsets = take(&r, (uint64_t)l->num_parts + 1, 8);
	get_schema(&r, sc, &l->feat_dtype);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	l->type_offsets = take(&r, (uint64_t)l->num_parts * sc->num_types + 1, 8);
	if (r.bad || r.off != r.len)
		return rd_fail(&v.owned, GNN_EPROTO);
	for (uint32_t p = 0; p < l->num_parts; p++)
		if (l->offsets[p + 1] <= l->offsets[p])
			return rd_fail(&v.owned, GNN_EPROTO);
	if (gnn_layout_check(l, why, sizeof(why)) != GNN_OK)
		return rd_fail(&v.owned, GNN_EPROTO);
	*out = v;
	return GNN_OK;
}

/* ---- ID lists ---- */

/* An ID list whose second word is word (0, or LOOKUP's node type). */
static int encode_ids(struct gnn_wbuf *w, uint16_t type, uint64_t req_id, uint32_t word, const int64_t *ids,
		      uint32_t n)
{
	size_t start = begin(w, type, req_id, 0);

	put_u32(w, n);
	put_u32(w, word);
	gnn_wbuf_put(w, ids, (size_t)n * 8);
	return finish(w, start);
}

static int decode_ids(const void *payload, size_t len, uint32_t *word, struct gnn_ids *out)
{
	struct gnn_ids v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.n = get_u32(&r);
	*word = get_u32(&r);
	if (v.n > GNN_PROTO_MAX_IDS)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.ids = take(&r, v.n, 8);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

int gnn_encode_ids_req(struct gnn_wbuf *w, uint16_t type, uint64_t req_id, const int64_t *ids,
		       uint32_t n)
{
	return encode_ids(w, type, req_id, 0, ids, n);
}

int gnn_decode_ids_req(const void *payload, size_t len, struct gnn_ids *out)
{
	uint32_t word;

	return decode_ids(payload, len, &word, out);
}

int gnn_encode_lookup_req(struct gnn_wbuf *w, uint64_t req_id, uint32_t node_type, const int64_t *orig_ids,
			  uint32_t n)
{
	return encode_ids(w, GNN_MSG_LOOKUP_REQ, req_id, node_type, orig_ids, n);
}

int gnn_decode_lookup_req(const void *payload, size_t len, struct gnn_lookup_req *out)
{
	struct gnn_ids v;
	uint32_t word = 0;
	int rc;

	if ((rc = decode_ids(payload, len, &word, &v)) != GNN_OK)
		return rc;
	if (word >= GNN_PROTO_MAX_TYPES) {
		gnn_proto_release(v.owned);
		return GNN_ERANGE;
	}
	*out = (struct gnn_lookup_req){ .n = v.n, .node_type = word, .orig_ids = v.ids, .owned = v.owned };
	return GNN_OK;
}

/* ---- SAMPLE ---- */

int gnn_encode_sample_req(struct gnn_wbuf *w, uint64_t req_id, uint64_t seed, uint32_t num_rels,
			  const int32_t *fanouts, const int64_t *ids, uint32_t n)
{
	size_t start = begin(w, GNN_MSG_SAMPLE_REQ, req_id, 0);

	put_u64(w, seed);
	put_u32(w, num_rels);
	put_u32(w, n);
	gnn_wbuf_put(w, fanouts, (size_t)num_rels * 4);
	pad8(w, start);
	gnn_wbuf_put(w, ids, (size_t)n * 8);
	return finish(w, start);
}

int gnn_decode_sample_req(const void *payload, size_t len, struct gnn_sample_req *out)
{
	struct gnn_sample_req v = { 0 };
	bool any = false;
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.seed = get_u64(&r);
	v.num_rels = get_u32(&r);
	v.n = get_u32(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.n > GNN_PROTO_MAX_IDS || v.num_rels == 0 || v.num_rels > GNN_PROTO_MAX_RELS)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.fanouts = take(&r, v.num_rels, 4);
	skip8(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	for (uint32_t k = 0; k < v.num_rels; k++) {
		if (v.fanouts[k] < -1 || v.fanouts[k] > GNN_PROTO_MAX_FANOUT)
			return rd_fail(&v.owned, GNN_ERANGE);
		any = any || v.fanouts[k] != 0;
	}
	if (!any)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.ids = take(&r, v.n, 8);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

int gnn_encode_sample_resp(struct gnn_wbuf *w, uint64_t req_id, const uint32_t *counts, uint32_t n,
			   uint32_t num_rels, const int64_t *nbrs, uint64_t total)
{
	size_t start = begin(w, GNN_MSG_SAMPLE_RESP, req_id, 0);

	put_u32(w, n);
	put_u32(w, num_rels);
	put_u64(w, total);
	gnn_wbuf_put(w, counts, (size_t)n * num_rels * 4);
	pad8(w, start);
	gnn_wbuf_put(w, nbrs, (size_t)total * 8);
	return finish(w, start);
}

int gnn_decode_sample_resp(const void *payload, size_t len, struct gnn_sample_resp *out)
{
	struct gnn_sample_resp v = { 0 };
	uint64_t sum = 0, nc;
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.n = get_u32(&r);
	v.num_rels = get_u32(&r);
	v.total = get_u64(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.n > GNN_PROTO_MAX_IDS || v.num_rels == 0 || v.num_rels > GNN_PROTO_MAX_RELS ||
	    v.total > GNN_PROTO_MAX_MSG_BYTES / 8)
		return rd_fail(&v.owned, GNN_ERANGE);
	nc = (uint64_t)v.n * v.num_rels;
	v.counts = take(&r, nc, 4);
	skip8(&r);
	v.nbrs = take(&r, v.total, 8);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	for (uint64_t i = 0; i < nc; i++)
		sum += v.counts[i];
	if (sum != v.total)
		return rd_fail(&v.owned, GNN_EPROTO);
	*out = v;
	return GNN_OK;
}

/* ---- FEAT / LABEL / SPLIT responses ---- */

int gnn_encode_feat_resp_in_place(struct gnn_wbuf *w, uint64_t req_id, uint32_t dtype, uint32_t n, uint32_t dim,
				  void **rows)
{
	size_t start = w->len, bytes = (size_t)n * dim * gnn_dtype_size(dtype);
	size_t padded = (bytes + 7) & ~(size_t)7;
	int rc;

	*rows = NULL;
	if (!gnn_feat_dtype_ok(dtype))
		return GNN_EINVAL;
	/* one reservation: the rows' address stays valid until w changes */
	if (!gnn_wbuf_reserve(w, GNN_PROTO_HDR_BYTES + 16 + padded))
		return GNN_ENOMEM;
	begin(w, GNN_MSG_FEAT_RESP, req_id, 0);
	put_u32(w, n);
	put_u32(w, dim);
	put_u32(w, dtype);
	put_u32(w, 0);
	memset(w->buf + w->len + bytes, 0, padded - bytes);
	w->len += padded;
	if ((rc = finish(w, start)) == GNN_OK)
		*rows = w->buf + w->len - padded;
	return rc;
}

int gnn_encode_feat_resp(struct gnn_wbuf *w, uint64_t req_id, uint32_t dtype, const void *rows, uint32_t n,
			 uint32_t dim)
{
	void *dst;
	int rc = gnn_encode_feat_resp_in_place(w, req_id, dtype, n, dim, &dst);

	if (rc == GNN_OK)
		memcpy(dst, rows, (size_t)n * dim * gnn_dtype_size(dtype));
	return rc;
}

int gnn_decode_feat_resp(const void *payload, size_t len, struct gnn_feat_resp *out)
{
	struct gnn_feat_resp v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.n = get_u32(&r);
	v.dim = get_u32(&r);
	v.dtype = get_u32(&r);
	if (get_u32(&r) != 0 || r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.n > GNN_PROTO_MAX_IDS || v.dim == 0 || v.dim > GNN_PROTO_MAX_FEAT_DIM || !gnn_feat_dtype_ok(v.dtype))
		return rd_fail(&v.owned, GNN_ERANGE);
	v.rows = take(&r, (uint64_t)v.n * v.dim, gnn_dtype_size(v.dtype));
	skip8(&r);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

int gnn_encode_label_resp(struct gnn_wbuf *w, uint64_t req_id, const int32_t *labels, uint32_t n)
{
	size_t start = begin(w, GNN_MSG_LABEL_RESP, req_id, 0);

	put_u32(w, n);
	put_u32(w, 0);
	gnn_wbuf_put(w, labels, (size_t)n * 4);
	pad8(w, start);
	return finish(w, start);
}

int gnn_decode_label_resp(const void *payload, size_t len, struct gnn_label_resp *out)
{
	struct gnn_label_resp v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.n = get_u32(&r);
	get_u32(&r);
	if (v.n > GNN_PROTO_MAX_IDS)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.labels = take(&r, v.n, 4);
	skip8(&r);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

/* ---- PREDICT ---- */

int gnn_encode_predict_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_predict_resp *p)
{
	size_t start = begin(w, GNN_MSG_PREDICT_RESP, req_id, 0), nk = (size_t)p->n * p->k;

	put_u32(w, p->n);
	put_u32(w, p->k);
	put_u32(w, p->params_crc);
	put_u32(w, 0);
	gnn_wbuf_put(w, p->orig_ids, (size_t)p->n * 8);
	gnn_wbuf_put(w, p->pred, (size_t)p->n * 4);
	pad8(w, start);
	gnn_wbuf_put(w, p->classes, nk * 4);
	pad8(w, start);
	gnn_wbuf_put(w, p->probs, nk * 4);
	pad8(w, start);
	return finish(w, start);
}

int gnn_decode_predict_resp(const void *payload, size_t len, struct gnn_predict_resp *out)
{
	struct gnn_predict_resp v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.n = get_u32(&r);
	v.k = get_u32(&r);
	v.params_crc = get_u32(&r);
	get_u32(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.n > GNN_PROTO_MAX_IDS || v.k < 1 || v.k > GNN_PROTO_MAX_TOP_K)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.orig_ids = take(&r, v.n, 8);
	v.pred = take(&r, v.n, 4);
	skip8(&r);
	v.classes = take(&r, (uint64_t)v.n * v.k, 4);
	skip8(&r);
	v.probs = take(&r, (uint64_t)v.n * v.k, 4);
	skip8(&r);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

int gnn_encode_split_resp(struct gnn_wbuf *w, uint64_t req_id, const uint8_t *codes, uint32_t n)
{
	size_t start = begin(w, GNN_MSG_SPLIT_RESP, req_id, 0);

	put_u32(w, n);
	put_u32(w, 0);
	gnn_wbuf_put(w, codes, n);
	pad8(w, start);
	return finish(w, start);
}

int gnn_decode_split_resp(const void *payload, size_t len, struct gnn_split_resp *out)
{
	struct rd r = { .p = payload, .len = len };
	struct gnn_split_resp v = { 0 };

	v.n = get_u32(&r);
	get_u32(&r);
	if (v.n > GNN_PROTO_MAX_IDS)
		return GNN_ERANGE;
	v.codes = take(&r, v.n, 1);
	skip8(&r);
	if (r.bad || r.off != r.len)
		return GNN_EPROTO;
	for (uint32_t i = 0; i < v.n; i++)
		if (v.codes[i] > 3)
			return GNN_EPROTO;
	*out = v;
	return GNN_OK;
}

/* ---- NODES ---- */

int gnn_encode_nodes_req(struct gnn_wbuf *w, uint64_t req_id, uint8_t split, uint32_t limit,
			 int64_t cursor)
{
	size_t start = begin(w, GNN_MSG_NODES_REQ, req_id, 0);

	put_u32(w, split);
	put_u32(w, limit);
	put_u64(w, (uint64_t)cursor);
	return finish(w, start);
}

int gnn_decode_nodes_req(const void *payload, size_t len, struct gnn_nodes_req *out)
{
	struct rd r = { .p = payload, .len = len };
	uint32_t split = get_u32(&r);
	struct gnn_nodes_req v;

	v.limit = get_u32(&r);
	v.cursor = (int64_t)get_u64(&r);
	if (r.bad || r.off != r.len)
		return GNN_EPROTO;
	if (split > 3 || v.limit == 0 || v.limit > GNN_PROTO_MAX_IDS || v.cursor < 0)
		return GNN_ERANGE;
	v.split = (uint8_t)split;
	*out = v;
	return GNN_OK;
}

int gnn_encode_nodes_resp(struct gnn_wbuf *w, uint64_t req_id, const int64_t *ids, uint32_t n,
			  int64_t next_cursor)
{
	size_t start = begin(w, GNN_MSG_NODES_RESP, req_id, 0);

	put_u32(w, n);
	put_u32(w, 0);
	put_u64(w, (uint64_t)next_cursor);
	gnn_wbuf_put(w, ids, (size_t)n * 8);
	return finish(w, start);
}

int gnn_decode_nodes_resp(const void *payload, size_t len, struct gnn_nodes_resp *out)
{
	struct gnn_nodes_resp v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.n = get_u32(&r);
	get_u32(&r);
	v.next_cursor = (int64_t)get_u64(&r);
	if (v.n > GNN_PROTO_MAX_IDS || v.next_cursor < -1)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.ids = take(&r, v.n, 8);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

/* ---- MINIBATCH ---- */

/* Payload bytes of a MINIBATCH_REQ with an exclusion section of pairs. */
static uint64_t minibatch_req_bytes(uint32_t layers, uint32_t rels, uint32_t seeds, uint32_t pairs)
{
	return 24 + ((uint64_t)layers * rels * 4 + 7) / 8 * 8 + 8 + (uint64_t)seeds * 8 + 8 + (uint64_t)pairs * 16;
}

int gnn_encode_minibatch_req(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_minibatch_req *in)
{
	bool excl = (in->flags & GNN_MB_EXCLUDE) != 0;
	size_t start;

	if (in->num_layers > GNN_PROTO_MAX_LAYERS || in->num_rels > GNN_PROTO_MAX_RELS ||
	    (excl && (in->num_excl > GNN_PROTO_MAX_EXCL_PAIRS ||
		      minibatch_req_bytes(in->num_layers, in->num_rels, in->num_seeds, in->num_excl) >
			      GNN_PROTO_MAX_REQ_BYTES)))
		return GNN_ERANGE;
	/* Pairs without the flag would silently not be excluded. */
	if (!excl && (in->num_excl != 0 || in->excl_rel != 0 || in->excl != NULL))
		return GNN_EINVAL;
	start = begin(w, GNN_MSG_MINIBATCH_REQ, req_id, 0);
	put_u64(w, in->seed);
	put_u32(w, in->flags);
	put_u32(w, in->num_layers);
	put_u32(w, in->num_rels);
	put_u32(w, 0);
	gnn_wbuf_put(w, in->fanouts, (size_t)in->num_layers * in->num_rels * 4);
	pad8(w, start);
	put_u32(w, in->num_seeds);
	put_u32(w, 0);
	gnn_wbuf_put(w, in->seeds, (size_t)in->num_seeds * 8);
	if (excl) {
		put_u32(w, in->num_excl);
		put_u32(w, in->excl_rel);
		gnn_wbuf_put(w, in->excl, (size_t)in->num_excl * 16);
	}
	return finish(w, start);
}

/* The exclusion section after the seeds (GNN_MB_EXCLUDE): its count, its
 * relation and the pairs. */
static int decode_excl(struct rd *r, struct gnn_minibatch_req *v, size_t len)
{
	v->num_excl = get_u32(r);
	v->excl_rel = get_u32(r);
	if (r->bad)
		return GNN_EPROTO;
	if (v->num_excl > GNN_PROTO_MAX_EXCL_PAIRS || len > GNN_PROTO_MAX_REQ_BYTES)
		return GNN_ERANGE;
	v->excl = take(r, (uint64_t)v->num_excl * 2, 8);
	return GNN_OK;
}

int gnn_decode_minibatch_req(const void *payload, size_t len, struct gnn_minibatch_req *out)
{
	struct gnn_minibatch_req v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.seed = get_u64(&r);
	v.flags = get_u32(&r);
	v.num_layers = get_u32(&r);
	v.num_rels = get_u32(&r);
	get_u32(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.num_layers == 0 || v.num_layers > GNN_PROTO_MAX_LAYERS || v.num_rels == 0 ||
	    v.num_rels > GNN_PROTO_MAX_RELS || (v.flags & ~(uint32_t)GNN_MB_FLAGS_KNOWN) != 0)
		return rd_fail(&v.owned, GNN_ERANGE);
	v.fanouts = take(&r, (uint64_t)v.num_layers * v.num_rels, 4);
	skip8(&r);
	v.num_seeds = get_u32(&r);
	get_u32(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.num_seeds == 0 || v.num_seeds > GNN_PROTO_MAX_IDS)
		return rd_fail(&v.owned, GNN_ERANGE);
	/* 0 is allowed here (no neighbours), even for a whole layer. */
	for (uint32_t k = 0; k < v.num_layers * v.num_rels; k++)
		if (v.fanouts[k] < -1 || v.fanouts[k] > GNN_PROTO_MAX_FANOUT)
			return rd_fail(&v.owned, GNN_ERANGE);
	v.seeds = take(&r, v.num_seeds, 8);
	if ((v.flags & GNN_MB_EXCLUDE) && (rc = decode_excl(&r, &v, len)) != GNN_OK)
		return rd_fail(&v.owned, rc);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

uint64_t gnn_minibatch_resp_section_bytes(uint64_t n)
{
	return (n + 7) / 8 * 8;
}

uint64_t gnn_minibatch_resp_head_bytes(uint32_t num_types)
{
	return 24 + gnn_minibatch_resp_section_bytes((uint64_t)num_types * 4);
}

uint64_t gnn_minibatch_resp_block_bytes(uint64_t num_dst, uint64_t num_src, uint64_t num_edges, uint32_t num_rels)
{
	return 16 + 8 * num_src + gnn_minibatch_resp_section_bytes((num_dst * num_rels + 1) * 4) +
	       gnn_minibatch_resp_section_bytes(num_edges * 4);
}

void gnn_minibatch_count_types(struct gnn_minibatch *mb)
{
	memset(mb->type_rows, 0, sizeof(mb->type_rows));
	if (mb->num_types == 1) {
		mb->type_rows[0] = mb->blocks[0].num_src;
		return;
	}
	for (uint32_t i = 0; i < mb->blocks[0].num_src; i++)
		mb->type_rows[mb->src_types[i] < GNN_PROTO_MAX_TYPES ? mb->src_types[i] : 0]++;
}

int gnn_minibatch_widen(struct gnn_minibatch *mb, float *rows[GNN_PROTO_MAX_TYPES])
{
	if (!(mb->flags & GNN_MB_FEATURES) || mb->feat_dtype == GNN_DT_F32)
		return GNN_OK;
	for (uint32_t t = 0; t < mb->num_types; t++) {
		size_t n = (size_t)mb->type_rows[t] * mb->feat_dims[t];

		if (mb->feat[t] == NULL)
			continue;
		if (rows[t] == NULL && (rows[t] = malloc(n * sizeof(float))) == NULL)
			return GNN_ENOMEM;
		gnn_feat_to_f32(mb->feat[t], mb->feat_dtype, n, rows[t]);
		mb->feat[t] = rows[t];
	}
	mb->feat_dtype = GNN_DT_F32;
	return GNN_OK;
}

int gnn_mb_writer_begin(struct gnn_mb_writer *mw, struct gnn_wbuf *w, uint64_t req_id, const struct gnn_minibatch *in)
{
	uint32_t T = in->num_types, R = in->num_rels;
	uint64_t total, feat = 0;

	*mw = (struct gnn_mb_writer){ .w = w, .start = w->len, .flags = in->flags, .num_seeds = in->num_seeds,
				      .num_types = T };
	if (in->num_layers == 0 || in->num_layers > GNN_PROTO_MAX_LAYERS || T == 0 || T > GNN_PROTO_MAX_TYPES ||
	    R == 0 || R > GNN_PROTO_MAX_RELS || (in->flags & ~(uint32_t)(GNN_MB_FEATURES | GNN_MB_LABELS)) != 0 ||
	    ((in->flags & GNN_MB_FEATURES) && !gnn_feat_dtype_ok(in->feat_dtype)))
		return GNN_ERANGE;
	for (uint32_t t = 0; t < T; t++) {
		mw->feat_off[t] = feat;
		if (in->flags & GNN_MB_FEATURES)
			feat += gnn_minibatch_resp_section_bytes((uint64_t)in->type_rows[t] * in->feat_dims[t] *
								 gnn_dtype_size(in->feat_dtype));
	}
	mw->feat_elem = (in->flags & GNN_MB_FEATURES) ? gnn_dtype_size(in->feat_dtype) : 0;
	mw->feat_off[T] = feat;
	if (in->flags & GNN_MB_LABELS)
		mw->label_bytes = gnn_minibatch_resp_section_bytes((uint64_t)in->num_seeds * 4);
	total = gnn_minibatch_resp_head_bytes(T) + gnn_minibatch_resp_section_bytes(in->blocks[0].num_src) + feat +
		mw->label_bytes;
	for (uint32_t l = 0; l < in->num_layers; l++)
		total += gnn_minibatch_resp_block_bytes(in->blocks[l].num_dst, in->blocks[l].num_src,
							in->blocks[l].num_edges, R);
	if (total > GNN_PROTO_MAX_MSG_BYTES)
		return GNN_ERANGE;
	begin(w, GNN_MSG_MINIBATCH_RESP, req_id, 0);
	put_u32(w, in->num_layers);
	put_u32(w, in->flags);
	put_u32(w, T);
	put_u32(w, R);
	put_u32(w, in->num_seeds);
	put_u32(w, (in->flags & GNN_MB_FEATURES) ? in->feat_dtype : 0);
	gnn_wbuf_put(w, in->feat_dims, (size_t)T * 4);
	pad8(w, mw->start);
	for (uint32_t l = 0; l < in->num_layers; l++) {
		const struct gnn_block *b = &in->blocks[l];

		put_u32(w, b->num_dst);
		put_u32(w, b->num_src);
		put_u64(w, b->num_edges);
		gnn_wbuf_put(w, b->src_ids, (size_t)b->num_src * 8);
		gnn_wbuf_put(w, b->indptr, ((size_t)b->num_dst * R + 1) * 4);
		pad8(w, mw->start);
		gnn_wbuf_put(w, b->indices, (size_t)b->num_edges * 4);
		pad8(w, mw->start);
	}
	if (T == 1) {
		/* every input is of type 0 */
		size_t at = w->len;

		if (gnn_wbuf_reserve(w, in->blocks[0].num_src)) {
			memset(w->buf + at, 0, in->blocks[0].num_src);
			w->len += in->blocks[0].num_src;
		}
	} else {
		gnn_wbuf_put(w, in->src_types, in->blocks[0].num_src);
	}
	pad8(w, mw->start);
	if (w->failed || !gnn_wbuf_reserve(w, (size_t)(feat + mw->label_bytes))) {
		gnn_mb_writer_abort(mw);
		return GNN_ENOMEM;
	}
	return GNN_OK;
}

/* Appends a zeroed section of bytes (a multiple of 8) within the reserved
 * room; returns where it starts. */
static uint8_t *section(struct gnn_wbuf *w, uint64_t bytes)
{
	uint8_t *p = w->buf + w->len;

	memset(p, 0, (size_t)bytes);
	w->len += (size_t)bytes;
	return p;
}

int gnn_mb_writer_features(struct gnn_mb_writer *mw, void *rows[GNN_PROTO_MAX_TYPES])
{
	uint8_t *base;

	if (!(mw->flags & GNN_MB_FEATURES) || (mw->written & (GNN_MB_FEATURES | GNN_MB_LABELS)))
		return GNN_EINVAL;
	mw->written |= GNN_MB_FEATURES;
	base = section(mw->w, mw->feat_off[mw->num_types]);
	for (uint32_t t = 0; t < mw->num_types; t++)
		rows[t] = mw->feat_off[t + 1] > mw->feat_off[t] ? base + mw->feat_off[t] : NULL;
	return GNN_OK;
}

void gnn_mb_writer_labels(struct gnn_mb_writer *mw, const int32_t *labels)
{
	uint8_t *p;

	if (!(mw->flags & GNN_MB_LABELS) || (mw->written & GNN_MB_LABELS) ||
	    ((mw->flags & GNN_MB_FEATURES) && !(mw->written & GNN_MB_FEATURES)))
		return;
	mw->written |= GNN_MB_LABELS;
	p = section(mw->w, mw->label_bytes);
	memcpy(p, labels, (size_t)mw->num_seeds * 4);   /* then padding */
}

int gnn_mb_writer_end(struct gnn_mb_writer *mw)
{
	int rc;

	if (mw->written != mw->flags) {
		gnn_mb_writer_abort(mw);
		return GNN_EINVAL;
	}
	if ((rc = finish(mw->w, mw->start)) != GNN_OK)
		gnn_mb_writer_abort(mw);
	return rc;
}

void gnn_mb_writer_abort(struct gnn_mb_writer *mw)
{
	mw->w->len = mw->start;
}

int gnn_encode_minibatch_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_minibatch *in)
{
	struct gnn_mb_writer mw;
	void *rows[GNN_PROTO_MAX_TYPES];
	int rc;

	if ((rc = gnn_mb_writer_begin(&mw, w, req_id, in)) != GNN_OK)
		return rc;
	if ((in->flags & GNN_MB_FEATURES) && gnn_mb_writer_features(&mw, rows) == GNN_OK)
		for (uint32_t t = 0; t < in->num_types; t++)
			if (rows[t] != NULL && in->feat[t] != NULL)
				memcpy(rows[t], in->feat[t], (size_t)in->type_rows[t] * in->feat_dims[t] * mw.feat_elem);
	if (in->flags & GNN_MB_LABELS)
		gnn_mb_writer_labels(&mw, in->labels);
	return gnn_mb_writer_end(&mw);
}

/* Checks one decoded block's CSR. */
static bool block_ok(const struct gnn_block *b)
{
	uint64_t rows = (uint64_t)b->num_dst * b->num_rels;

	if (b->num_dst > b->num_src || b->indptr[0] != 0 || (uint64_t)b->indptr[rows] != b->num_edges)
		return false;
	for (uint64_t i = 0; i < rows; i++)
		if (b->indptr[i + 1] < b->indptr[i])
			return false;
	for (uint64_t e = 0; e < b->num_edges; e++)
		if (b->indices[e] < 0 || (uint32_t)b->indices[e] >= b->num_src)
			return false;
	return true;
}

/* The blocks of a MINIBATCH_RESP, checked and chained. */
static int get_blocks(struct rd *r, struct gnn_minibatch *v)
{
	for (uint32_t l = 0; l < v->num_layers; l++) {
		struct gnn_block *b = &v->blocks[l];

		b->num_dst = get_u32(r);
		b->num_src = get_u32(r);
		b->num_edges = get_u64(r);
		b->num_rels = v->num_rels;
		if (r->bad)
			return GNN_EPROTO;
		if (b->num_src > GNN_PROTO_MAX_MSG_BYTES / 8 || b->num_edges > GNN_PROTO_MAX_MSG_BYTES / 4 ||
		    (uint64_t)b->num_dst * v->num_rels > GNN_PROTO_MAX_MSG_BYTES / 4)
			return GNN_ERANGE;
		b->src_ids = take(r, b->num_src, 8);
		b->indptr = take(r, (uint64_t)b->num_dst * v->num_rels + 1, 4);
		skip8(r);
		b->indices = take(r, b->num_edges, 4);
		skip8(r);
		if (r->bad || !block_ok(b))
			return GNN_EPROTO;
		/* Chaining: block l-1's destinations are this block's sources. */
		if (l > 0 && (v->blocks[l - 1].num_dst != b->num_src ||
			      memcmp(v->blocks[l - 1].src_ids, b->src_ids, (size_t)b->num_src * 8) != 0))
			return GNN_EPROTO;
	}
	return v->blocks[v->num_layers - 1].num_dst == v->num_seeds ? GNN_OK : GNN_EPROTO;
}

int gnn_decode_minibatch_resp(const void *payload, size_t len, struct gnn_minibatch *out)
{
	struct gnn_minibatch v = { 0 };
	const uint32_t *dims;
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.num_layers = get_u32(&r);
	v.flags = get_u32(&r);
	v.num_types = get_u32(&r);
	v.num_rels = get_u32(&r);
	v.num_seeds = get_u32(&r);
	v.feat_dtype = get_u32(&r);
	if (r.bad || ((v.flags & GNN_MB_FEATURES) ? !gnn_feat_dtype_ok(v.feat_dtype) : v.feat_dtype != 0))
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.num_layers == 0 || v.num_layers > GNN_PROTO_MAX_LAYERS ||
	    (v.flags & ~(uint32_t)(GNN_MB_FEATURES | GNN_MB_LABELS)) != 0 || v.num_types == 0 ||
	    v.num_types > GNN_PROTO_MAX_TYPES || v.num_rels == 0 || v.num_rels > GNN_PROTO_MAX_RELS ||
	    v.num_seeds == 0 || v.num_seeds > GNN_PROTO_MAX_IDS)
		return rd_fail(&v.owned, GNN_ERANGE);
	dims = take(&r, v.num_types, 4);
	skip8(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	for (uint32_t t = 0; t < v.num_types; t++) {
		if (dims[t] > GNN_PROTO_MAX_FEAT_DIM)
			return rd_fail(&v.owned, GNN_ERANGE);
		v.feat_dims[t] = dims[t];
	}
	if ((rc = get_blocks(&r, &v)) != GNN_OK)
		return rd_fail(&v.owned, rc);
	v.src_types = take(&r, v.blocks[0].num_src, 1);
	skip8(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	for (uint32_t i = 0; i < v.blocks[0].num_src; i++)
		if (v.src_types[i] >= v.num_types)
			return rd_fail(&v.owned, GNN_EPROTO);
	gnn_minibatch_count_types(&v);
	if (v.flags & GNN_MB_FEATURES) {
		for (uint32_t t = 0; t < v.num_types; t++) {
			uint64_t n = (uint64_t)v.type_rows[t] * v.feat_dims[t];

			if (n == 0)
				continue;
			v.feat[t] = take(&r, n, gnn_dtype_size(v.feat_dtype));
			skip8(&r);
		}
	}
	if (v.flags & GNN_MB_LABELS) {
		v.labels = take(&r, v.num_seeds, 4);
		skip8(&r);
	}
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

/* ---- EMB ---- */

static bool emb_has_ids(uint32_t op) { return op == GNN_EMB_PULL || op == GNN_EMB_PUSH || op == GNN_EMB_DELTA; }
static bool emb_has_data(uint32_t op) { return op == GNN_EMB_PUSH || op == GNN_EMB_WRITE; }

int gnn_encode_emb_req(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_emb_req *in)
{
	size_t start = begin(w, GNN_MSG_EMB_REQ, req_id, 0);

	put_u32(w, in->op);
	put_u32(w, in->node_type);
	put_u32(w, in->array);
	put_u32(w, in->rank);
	put_u32(w, in->world);
	put_u32(w, in->n);
	put_u64(w, in->gen);
	put_u64(w, in->step);
	put_u64(w, (uint64_t)in->first);
	put_u32(w, in->dim);
	put_u32(w, 0);
	if (in->op == GNN_EMB_INIT || in->op == GNN_EMB_JOIN) {
		const struct gnn_emb_cfg *c = &in->cfg;

		put_u32(w, c->num_types);
		put_u32(w, c->optimizer);
		gnn_wbuf_put(w, c->dim, (size_t)c->num_types * 4);
		pad8(w, start);
		gnn_wbuf_put(w, &c->lr, 4);
		gnn_wbuf_put(w, &c->beta1, 4);
		gnn_wbuf_put(w, &c->beta2, 4);
		gnn_wbuf_put(w, &c->eps, 4);
		put_u64(w, c->seed);
		put_u64(w, c->hash);
	}
	if (emb_has_ids(in->op))
		gnn_wbuf_put(w, in->ids, (size_t)in->n * 8);
	if (emb_has_data(in->op)) {
		gnn_wbuf_put(w, in->data, (size_t)in->n * in->dim * 4);
		pad8(w, start);
	}
	if (in->op == GNN_EMB_SAVE) {
		gnn_wbuf_put(w, in->data, in->n);
		pad8(w, start);
	}
	return finish(w, start);
}

static float get_f32(struct rd *r)
{
	uint32_t u = get_u32(r);
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* INIT's configuration, checked as proto.h documents it. */
static int get_emb_cfg(struct rd *r, struct gnn_emb_cfg *c)
{
	const uint32_t *dim;
	bool any = false;

	c->num_types = get_u32(r);
	c->optimizer = get_u32(r);
	if (r->bad)
		return GNN_EPROTO;
	if (c->num_types == 0 || c->num_types > GNN_PROTO_MAX_TYPES ||
	    (c->optimizer != GNN_EMB_ADAM && c->optimizer != GNN_EMB_ADAGRAD))
		return GNN_ERANGE;
	if ((dim = take(r, c->num_types, 4)) == NULL)
		return GNN_EPROTO;
	memcpy(c->dim, dim, (size_t)c->num_types * 4);
	skip8(r);
	c->lr = get_f32(r);
	c->beta1 = get_f32(r);
	c->beta2 = get_f32(r);
	c->eps = get_f32(r);
	c->seed = get_u64(r);
	c->hash = get_u64(r);
	if (r->bad)
		return GNN_EPROTO;
	for (uint32_t t = 0; t < c->num_types; t++) {
		if (c->dim[t] > GNN_PROTO_MAX_FEAT_DIM)
			return GNN_ERANGE;
		any |= c->dim[t] > 0;
	}
	if (!any || !(c->lr > 0 && c->lr < 1e6f) || !(c->beta1 >= 0 && c->beta1 < 1) ||
	    !(c->beta2 >= 0 && c->beta2 < 1) || !(c->eps > 0 && c->eps < 1))
		return GNN_ERANGE;
	return GNN_OK;
}

int gnn_decode_emb_req(const void *payload, size_t len, struct gnn_emb_req *out)
{
	struct gnn_emb_req v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.op = get_u32(&r);
	v.node_type = get_u32(&r);
	v.array = get_u32(&r);
	v.rank = get_u32(&r);
	v.world = get_u32(&r);
	v.n = get_u32(&r);
	v.gen = get_u64(&r);
	v.step = get_u64(&r);
	v.first = (int64_t)get_u64(&r);
	v.dim = get_u32(&r);
	if (get_u32(&r) != 0 || r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.op == 0 || v.op >= GNN_EMB_OP_END)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.node_type >= GNN_PROTO_MAX_TYPES || v.array >= GNN_EMB_ARRAYS || v.n > GNN_PROTO_MAX_IDS ||
	    v.dim > GNN_PROTO_MAX_FEAT_DIM || (v.op == GNN_EMB_PUSH && (v.world == 0 || v.world > 65536 ||
	    v.rank >= v.world)) || v.first < 0)
		return rd_fail(&v.owned, GNN_ERANGE);
	if ((v.op == GNN_EMB_INIT || v.op == GNN_EMB_JOIN) && (rc = get_emb_cfg(&r, &v.cfg)) != GNN_OK)
		return rd_fail(&v.owned, rc);
	if (emb_has_ids(v.op))
		v.ids = take(&r, v.n, 8);
	if (emb_has_data(v.op)) {
		if (v.dim == 0 && v.n > 0)
			return rd_fail(&v.owned, GNN_ERANGE);
		v.data = take(&r, (uint64_t)v.n * v.dim, 4);
		skip8(&r);
	}
	if (v.op == GNN_EMB_SAVE) {
		if (v.n == 0 || v.n >= 4096)
			return rd_fail(&v.owned, GNN_ERANGE);
		v.data = take(&r, v.n, 1);
		if (v.data != NULL && memchr(v.data, 0, v.n) != NULL)
			return rd_fail(&v.owned, GNN_EPROTO);
		skip8(&r);
	}
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	*out = v;
	return GNN_OK;
}

int gnn_encode_emb_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_emb_resp *in)
{
	size_t start = begin(w, GNN_MSG_EMB_RESP, req_id, 0);

	put_u64(w, in->gen);
	put_u64(w, in->version);
	put_u64(w, in->cfg_hash);
	put_u32(w, in->n);
	put_u32(w, in->dim);
	gnn_wbuf_put(w, in->data, (size_t)in->n * in->dim * 4);
	pad8(w, start);
	return finish(w, start);
}

int gnn_decode_emb_resp(const void *payload, size_t len, struct gnn_emb_resp *out)
{
	struct gnn_emb_resp v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.gen = get_u64(&r);
	v.version = get_u64(&r);
	v.cfg_hash = get_u64(&r);
	v.n = get_u32(&r);
	v.dim = get_u32(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if (v.n > GNN_PROTO_MAX_IDS || v.dim > GNN_PROTO_MAX_FEAT_DIM + 1)   /* + 1: DELTA's index */
		return rd_fail(&v.owned, GNN_ERANGE);
	v.data = take(&r, (uint64_t)v.n * v.dim, 4);
	skip8(&r);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	if (v.n * (uint64_t)v.dim == 0)
		v.data = NULL;
	*out = v;
	return GNN_OK;
}

/* ---- LINK ---- */

/* IDs a LINK_REQ of op carries for n. */
static uint64_t link_req_ids(uint32_t op, uint32_t n)
{
	return op == GNN_LINK_SCORE ? 2 * (uint64_t)n : n;
}

static uint32_t link_max_n(uint32_t op)
{
	return op == GNN_LINK_ROWS ? GNN_PROTO_MAX_IDS : op == GNN_LINK_SCORE ? GNN_PROTO_MAX_LINK_PAIRS :
	       op == GNN_LINK_TOPK ? GNN_PROTO_MAX_LINK_EXCL : 0;
}

/* GNN_OK, GNN_EPROTO (unknown op or flags, unused fields set) or
 * GNN_ERANGE (over a limit) for a request's fixed fields. */
static int link_req_check(const struct gnn_link_req *v)
{
	if (v->op < GNN_LINK_ROWS || v->op >= GNN_LINK_OP_END ||
	    (v->flags & ~(uint32_t)(v->op == GNN_LINK_ROWS ? GNN_LINK_WITH_DECODER : 0)) != 0)
		return GNN_EPROTO;
	if (v->n > link_max_n(v->op))
		return GNN_ERANGE;
	if (v->op != GNN_LINK_TOPK)
		return v->k == 0 && v->dim == 0 && v->node_type == 0 && v->node == -1 ? GNN_OK : GNN_EPROTO;
	if (v->k < 1 || v->k > GNN_PROTO_MAX_LINK_K || v->dim > GNN_PROTO_MAX_FEAT_DIM ||
	    (v->node_type >= GNN_PROTO_MAX_TYPES && v->node_type != GNN_LINK_ANY_TYPE))
		return GNN_ERANGE;
	return (v->dim == 0 && v->node >= 0) || (v->dim > 0 && v->node == -1) ? GNN_OK : GNN_EPROTO;
}

int gnn_encode_link_req(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_link_req *in)
{
	size_t start;
	int rc;

	if ((rc = link_req_check(in)) != GNN_OK)
		return rc;
	start = begin(w, GNN_MSG_LINK_REQ, req_id, 0);
	put_u32(w, in->op);
	put_u32(w, in->flags);
	put_u32(w, in->n);
	put_u32(w, in->k);
	put_u32(w, in->dim);
	put_u32(w, in->node_type);
	put_u64(w, (uint64_t)in->node);
	gnn_wbuf_put(w, in->query, (size_t)in->dim * 4);
	pad8(w, start);
	gnn_wbuf_put(w, in->ids, (size_t)link_req_ids(in->op, in->n) * 8);
	return finish(w, start);
}

int gnn_decode_link_req(const void *payload, size_t len, struct gnn_link_req *out)
{
	struct gnn_link_req v = { 0 };
	struct rd r;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.op = get_u32(&r);
	v.flags = get_u32(&r);
	v.n = get_u32(&r);
	v.k = get_u32(&r);
	v.dim = get_u32(&r);
	v.node_type = get_u32(&r);
	v.node = (int64_t)get_u64(&r);
	if (r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if ((rc = link_req_check(&v)) != GNN_OK)
		return rd_fail(&v.owned, rc);
	v.query = take(&r, v.dim, 4);
	skip8(&r);
	v.ids = take(&r, link_req_ids(v.op, v.n), 8);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	if (v.dim == 0)
		v.query = NULL;
	*out = v;
	return GNN_OK;
}

uint64_t gnn_link_params_count(uint32_t decoder, uint32_t dim, uint32_t hidden)
{
	return decoder == GNN_LINK_MLP ? (uint64_t)hidden * dim + 2 * (uint64_t)hidden + 1 : 0;
}

/* The reply's fixed fields: GNN_OK, GNN_EPROTO or GNN_ERANGE. */
static int link_resp_check(const struct gnn_link_resp *v)
{
	if (v->op < GNN_LINK_ROWS || v->op >= GNN_LINK_OP_END ||
	    (v->flags & ~(uint32_t)(v->op == GNN_LINK_ROWS ? GNN_LINK_WITH_DECODER : 0)) != 0 ||
	    (v->decoder != GNN_LINK_DOT && v->decoder != GNN_LINK_MLP) ||
	    (v->decoder == GNN_LINK_DOT) != (v->hidden == 0))
		return GNN_EPROTO;
	if (v->dim < 1 || v->dim > GNN_PROTO_MAX_FEAT_DIM || v->hidden > GNN_PROTO_MAX_FEAT_DIM ||
	    v->n > (v->op == GNN_LINK_TOPK ? GNN_PROTO_MAX_LINK_K : link_max_n(v->op)))
		return GNN_ERANGE;
	return GNN_OK;
}

int gnn_encode_link_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_link_resp *in)
{
	uint64_t np = in->flags & GNN_LINK_WITH_DECODER ? gnn_link_params_count(in->decoder, in->dim, in->hidden) : 0;
	size_t start;
	int rc;

	if ((rc = link_resp_check(in)) != GNN_OK)
		return rc;
	if (32 + 8 * (uint64_t)in->n + 4 * (uint64_t)in->n * in->dim + 4 * np + 16 > GNN_PROTO_MAX_MSG_BYTES)
		return GNN_ERANGE;
	start = begin(w, GNN_MSG_LINK_RESP, req_id, 0);
	put_u32(w, in->op);
	put_u32(w, in->n);
	put_u32(w, in->params_crc);
	put_u32(w, in->decoder);
	put_u32(w, in->dim);
	put_u32(w, in->hidden);
	put_u32(w, in->flags);
	put_u32(w, 0);
	if (in->op == GNN_LINK_ROWS)
		gnn_wbuf_put(w, in->rows, (size_t)in->n * in->dim * 4);
	if (in->op == GNN_LINK_TOPK)
		gnn_wbuf_put(w, in->nodes, (size_t)in->n * 8);
	if (in->op != GNN_LINK_ROWS)
		gnn_wbuf_put(w, in->scores, (size_t)in->n * 4);
	pad8(w, start);
	gnn_wbuf_put(w, in->params, (size_t)np * 4);
	pad8(w, start);
	return finish(w, start);
}

int gnn_decode_link_resp(const void *payload, size_t len, struct gnn_link_resp *out)
{
	struct gnn_link_resp v = { 0 };
	struct rd r;
	uint64_t np;
	int rc;

	if ((rc = rd_init(&r, payload, len, &v.owned)) != GNN_OK)
		return rc;
	v.op = get_u32(&r);
	v.n = get_u32(&r);
	v.params_crc = get_u32(&r);
	v.decoder = get_u32(&r);
	v.dim = get_u32(&r);
	v.hidden = get_u32(&r);
	v.flags = get_u32(&r);
	if (get_u32(&r) != 0 || r.bad)
		return rd_fail(&v.owned, GNN_EPROTO);
	if ((rc = link_resp_check(&v)) != GNN_OK)
		return rd_fail(&v.owned, rc);
	if (v.op == GNN_LINK_ROWS)
		v.rows = take(&r, (uint64_t)v.n * v.dim, 4);
	if (v.op == GNN_LINK_TOPK)
		v.nodes = take(&r, v.n, 8);
	if (v.op != GNN_LINK_ROWS)
		v.scores = take(&r, v.n, 4);
	skip8(&r);
	np = v.flags & GNN_LINK_WITH_DECODER ? gnn_link_params_count(v.decoder, v.dim, v.hidden) : 0;
	v.params = take(&r, np, 4);
	skip8(&r);
	if ((rc = rd_done(&r, &v.owned)) != GNN_OK)
		return rc;
	if (np == 0)
		v.params = NULL;
	*out = v;
	return GNN_OK;
}
