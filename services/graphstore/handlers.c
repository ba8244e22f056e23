/* handlers.c - the graph store's requests: INFO, SAMPLE, FEAT, LABEL, SPLIT,
 * NODES and LOOKUP over the mapped partition (store.h), PREDICT over the
 * inference's predictions (preds.h), LINK over a link model's (link_query.h), EMB over the embeddings (emb_table.h).
 *
 * Every handler decodes and checks the whole request before any work and
 * answers with exactly one message: the reply, or an ERROR whose text says
 * what was wrong (which node, which range, which limit). Requests come from
 * the network, so nothing in them is trusted: IDs are range-checked against
 * the partition, and the size of the reply is computed and bounded before
 * anything is allocated. Handlers run concurrently on the server's workers;
 * they only read the partition and update atomic metrics (the embeddings,
 * which change, lock for themselves). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "err.h"
#include "log.h"
#include "link_query.h"
#include "partq.h"
#include "store.h"

/* Payload bytes a reply may have (the protocol's message limit). */
#define MAX_REPLY GNN_PROTO_MAX_MSG_BYTES

/* Appends an ERROR reply with a formatted text and returns GNN_OK: the
 * error is the answer, so the server must send it rather than a generic one. */
__attribute__((format(printf, 4, 5)))
static int reply_error(struct gnn_wbuf *out, uint64_t req_id, int code, const char *fmt, ...)
{
	char text[GNN_PROTO_MAX_ERROR_TEXT];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	GNN_DEBUG("request_error", "req_id=%llu code=%s text=\"%s\"", (unsigned long long)req_id,
		  gnn_errname(code), text);
	rc = gnn_encode_error(out, req_id, (uint32_t)code, text);
	return rc;
}

static int reply_malformed(struct gnn_wbuf *out, const struct gnn_hdr *h, int code)
{
	return reply_error(out, h->req_id, code, "malformed %s request (%zu payload bytes): %s",
			   gnn_msg_name(h->type), (size_t)h->len,
			   code == GNN_ERANGE ? "a count or value is over the protocol's limits" : gnn_strerror(code));
}

/* Checks that every ID is owned by this partition. On the first one that is
 * not, appends the ERROR reply naming it, the owned range and (when it is
 * in the graph) its owner, and returns false. */
static bool check_owned(const struct gs_store *s, const struct gnn_hdr *h, const int64_t *ids,
			uint32_t n, struct gnn_wbuf *out, int *rc)
{
	const struct gnn_part *pt = &s->part;

	for (uint32_t i = 0; i < n; i++) {
		int64_t v = ids[i];
		int32_t owner;

		if (v >= pt->node_start && v < pt->node_end)
			continue;
		owner = gnn_layout_owner(&s->meta.layout, v);
		if (owner < 0)
			*rc = reply_error(out, h->req_id, GNN_ERANGE,
					  "node %lld (ids[%u]) is outside the graph [0, %lld); graph store %d owns [%lld, %lld)",
					  (long long)v, i, (long long)s->meta.layout.num_nodes, pt->id,
					  (long long)pt->node_start, (long long)pt->node_end);
		else
			*rc = reply_error(out, h->req_id, GNN_ERANGE,
					  "node %lld (ids[%u]) is not owned by graph store %d, which owns [%lld, %lld); partition %d owns it",
					  (long long)v, i, pt->id, (long long)pt->node_start, (long long)pt->node_end,
					  owner);
		return false;
	}
	return true;
}

static int on_info(struct gs_store *s, const struct gnn_hdr *h, struct gnn_wbuf *out)
{
	struct gnn_info info = {
		.part_id = (uint32_t)s->part.id,
		.layout = s->meta.layout,
		.part_edges = s->part.num_edges,
	};

	if (h->len != 0)
		return reply_error(out, h->req_id, GNN_EPROTO, "INFO request carries %u payload bytes; it has none",
				   h->len);
	return gnn_encode_info_resp(out, h->req_id, &info);
}

/* SAMPLE: the neighbours of owned nodes (partq.h), sized before anything
 * is allocated. */
static int on_sample(struct gs_store *s, const struct gnn_hdr *h, const void *payload,
		     struct gnn_wbuf *out)
{
	const struct gnn_part *pt = &s->part;
	uint32_t R = pt->num_rels;
	struct gnn_sample_req req;
	struct gnn_partq_sample ans = { 0 };
	char why[GNN_PROTO_MAX_ERROR_TEXT / 2];
	int rc;

	if ((rc = gnn_decode_sample_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	if (req.num_rels != R) {
		rc = reply_error(out, h->req_id, GNN_EINVAL, "SAMPLE request has fanouts for %u relations; the graph has %u",
				 req.num_rels, R);
		goto out_release;
	}
	if (!check_owned(s, h, req.ids, req.n, out, &rc))
		goto out_release;
	if ((rc = gnn_partq_sample_size(pt, req.ids, req.n, req.fanouts, &ans, why, sizeof(why))) != GNN_OK) {
		rc = reply_error(out, h->req_id, rc, "%s", why);
		goto out_release;
	}
	if (16 + 4 * (uint64_t)req.n * R + 8 + 8 * ans.total > MAX_REPLY) {
		rc = reply_error(out, h->req_id, GNN_ERANGE,
				 "reply would hold %llu neighbours of %u nodes, over the %u-byte message limit: send fewer nodes per request",
				 (unsigned long long)ans.total, req.n, MAX_REPLY);
		goto out_release;
	}
	if ((rc = gnn_partq_sample(pt, req.seed, req.ids, req.n, req.fanouts, &ans)) != GNN_OK)
		goto out_release;
	rc = gnn_encode_sample_resp(out, h->req_id, ans.counts, req.n, R, ans.nbrs, ans.total);
	if (rc == GNN_OK)
		gnn_counter_add(s->sampled_edges, (double)ans.total);

out_release:
	gnn_partq_sample_free(&ans);
	gnn_proto_release(req.owned);
	return rc;
}

/* FEAT asks for nodes of one type with features: the type of ids[0], all
 * the others checked against it. On a mix, or a type without features,
 * appends the ERROR naming the node and returns false. */
static bool check_feat_type(const struct gs_store *s, const struct gnn_hdr *h, const int64_t *ids, uint32_t n,
			    uint32_t *dim, struct gnn_wbuf *out, int *rc)
{
	const struct gnn_layout *l = &s->meta.layout;
	const struct gnn_schema *sc = l->schema;
	int32_t t0 = n > 0 ? gnn_layout_type(l, ids[0]) : 0;

	*dim = n > 0 ? sc->types[t0].feat_dim : 0;
	for (uint32_t i = 1; sc->num_types > 1 && i < n; i++) {
		int32_t t = gnn_layout_type(l, ids[i]);

		if (t != t0) {
			*rc = reply_error(out, h->req_id, GNN_EINVAL,
					  "FEAT request mixes node types: node %lld (ids[0]) is of type %s, node %lld (ids[%u]) of type %s; "
					  "ask for one type per request", (long long)ids[0], sc->types[t0].name,
					  (long long)ids[i], i, sc->types[t].name);
			return false;
		}
	}
	if (n > 0 && *dim == 0) {
		*rc = reply_error(out, h->req_id, GNN_EINVAL, "nodes of type %s (node %lld) have no features",
				  sc->types[t0].name, (long long)ids[0]);
		return false;
	}
	return true;
}

/* FEAT's answer: the rows gathered straight into the reply (partq.h):
 * they are most of what a store sends. */
static int answer_feat(struct gs_store *s, const struct gnn_hdr *h, const struct gnn_ids *req, uint32_t dim,
		       struct gnn_wbuf *out)
{
	char why[GNN_PROTO_MAX_ERROR_TEXT / 2];
	size_t mark = out->len;
	void *dst;
	int rc;

	if ((rc = gnn_encode_feat_resp_in_place(out, h->req_id, s->part.feat_dtype, req->n, dim, &dst)) != GNN_OK)
		return rc;
	if ((rc = gnn_partq_feat_rows(&s->part, req->ids, req->n, dim, dst, why, sizeof(why))) != GNN_OK) {
		out->len = mark;  /* the rows' checks came first: not expected */
		return reply_error(out, h->req_id, rc, "%s", why);
	}
	gnn_counter_add(s->feature_rows, req->n);
	return GNN_OK;
}

/* LABEL's and SPLIT's answer: one value per ID. */
static int answer_values(struct gs_store *s, const struct gnn_hdr *h, const struct gnn_ids *req,
			 struct gnn_wbuf *out)
{
	const struct gnn_part *pt = &s->part;
	char why[GNN_PROTO_MAX_ERROR_TEXT / 2];
	uint8_t *buf = malloc((size_t)req->n * (h->type == GNN_MSG_LABEL_REQ ? 4 : 1) + 1);
	int rc;

	if (buf == NULL)
		return GNN_ENOMEM;
	if (h->type == GNN_MSG_SPLIT_REQ) {
		for (uint32_t i = 0; i < req->n; i++)
			buf[i] = pt->split[req->ids[i] - pt->node_start];
		rc = gnn_encode_split_resp(out, h->req_id, buf, req->n);
	} else if ((rc = gnn_partq_labels(pt, req->ids, req->n, (int32_t *)(void *)buf, why, sizeof(why))) == GNN_OK) {
		rc = gnn_encode_label_resp(out, h->req_id, (const int32_t *)(void *)buf, req->n);
	} else {
		rc = reply_error(out, h->req_id, rc, "%s", why);
	}
	free(buf);
	return rc;
}

/* FEAT, LABEL and SPLIT: one value (row) per ID, in request order. */
static int on_rows(struct gs_store *s, const struct gnn_hdr *h, const void *payload, struct gnn_wbuf *out)
{
	uint32_t dim = 1;
	size_t elem;
	struct gnn_ids req;
	int rc;

	if ((rc = gnn_decode_ids_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	if (!check_owned(s, h, req.ids, req.n, out, &rc) ||
	    (h->type == GNN_MSG_FEAT_REQ && !check_feat_type(s, h, req.ids, req.n, &dim, out, &rc)))
		goto out_release;
	elem = h->type == GNN_MSG_FEAT_REQ ? dim * gnn_dtype_size(s->part.feat_dtype) :
	       h->type == GNN_MSG_LABEL_REQ ? 4 : 1;
	if (16 + (uint64_t)req.n * elem + 8 > MAX_REPLY)
		rc = reply_error(out, h->req_id, GNN_ERANGE,
				 "reply would hold %u rows of %zu bytes, over the %u-byte message limit: send fewer nodes per request",
				 req.n, elem, MAX_REPLY);
	else if (h->type == GNN_MSG_FEAT_REQ)
		rc = answer_feat(s, h, &req, dim, out);
	else
		rc = answer_values(s, h, &req, out);

out_release:
	gnn_proto_release(req.owned);
	return rc;
}

static int on_nodes(struct gs_store *s, const struct gnn_hdr *h, const void *payload, struct gnn_wbuf *out)
{
	struct gnn_nodes_req req;
	int64_t *ids, next;
	uint32_t n;
	int rc;

	if ((rc = gnn_decode_nodes_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	if ((rc = gnn_partq_nodes(&s->part, req.split, req.cursor, req.limit, &ids, &n, &next)) != GNN_OK)
		return rc;
	rc = gnn_encode_nodes_resp(out, h->req_id, ids, n, next);
	free(ids);
	return rc;
}

/* Predictions exist for the nodes of the label type only: on another,
 * appends the ERROR naming it and returns false. */
static bool check_label_type(const struct gs_store *s, const struct gnn_hdr *h, const int64_t *ids, uint32_t n,
			     struct gnn_wbuf *out, int *rc)
{
	const struct gnn_layout *l = &s->meta.layout;
	const struct gnn_schema *sc = l->schema;

	for (uint32_t i = 0; sc->num_types > 1 && i < n; i++) {
		int32_t t = gnn_layout_type(l, ids[i]);

		if (t != (int32_t)sc->label_type) {
			*rc = reply_error(out, h->req_id, GNN_EINVAL,
					  "node %lld (ids[%u]) is of type %s: predictions are of %s nodes (the label type)",
					  (long long)ids[i], i, sc->types[t].name, sc->types[sc->label_type].name);
			return false;
		}
	}
	return true;
}

/* PREDICT: the inference's predictions of owned nodes (preds.h). */
static int on_predict(struct gs_store *s, const struct gnn_hdr *h, const void *payload, struct gnn_wbuf *out)
{
	struct gnn_ids req;
	char why[GNN_PROTO_MAX_ERROR_TEXT / 2];
	int rc;

	if ((rc = gnn_decode_ids_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	if (check_owned(s, h, req.ids, req.n, out, &rc) && check_label_type(s, h, req.ids, req.n, out, &rc)) {
		why[0] = '\0';
		rc = gs_preds_answer(s->preds, h->req_id, req.ids, req.n, out, why, sizeof(why));
		if (rc == GNN_ENOENT || rc == GNN_EFORMAT || rc == GNN_EUNAVAIL)
			rc = reply_error(out, h->req_id, rc, "graph store %d has no predictions to answer with: %s",
					 s->part_id, why);
	}
	gnn_proto_release(req.owned);
	return rc;
}

/* LOOKUP: the global IDs of original per-type IDs, -1 for those this
 * partition does not hold (partq.h). */
static int on_lookup(struct gs_store *s, const struct gnn_hdr *h, const void *payload, struct gnn_wbuf *out)
{
	struct gnn_lookup_req req;
	char why[GNN_PROTO_MAX_ERROR_TEXT / 2];
	int64_t *ids;
	int rc;

	if ((rc = gnn_decode_lookup_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	if ((ids = malloc((size_t)req.n * sizeof(*ids) + 1)) == NULL)
		rc = GNN_ENOMEM;
	else if ((rc = gnn_partq_lookup(&s->meta.layout, &s->node_map, (uint32_t)s->part.id, req.node_type,
					req.orig_ids, req.n, ids, why, sizeof(why))) != GNN_OK)
		rc = reply_error(out, h->req_id, rc, "%s", why);
	else
		rc = gnn_encode_ids_req(out, GNN_MSG_LOOKUP_RESP, h->req_id, ids, req.n);
	free(ids);
	gnn_proto_release(req.owned);
	return rc;
}

/* LINK: rows, scores and top-k of the link-prediction output (link_query.h). */
static int on_link(struct gs_store *s, const struct gnn_hdr *h, const void *payload, struct gnn_wbuf *out)
{
	struct gnn_link_req req;
	struct gs_link_view v;
	char why[GNN_PROTO_MAX_ERROR_TEXT / 2];
	uint32_t nids;
	int rc;

	if ((rc = gnn_decode_link_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	/* ROWS and SCORE read owned rows only; TOPK by node the node's */
	nids = req.op == GNN_LINK_ROWS ? req.n : req.op == GNN_LINK_SCORE ? 2 * req.n : req.dim == 0 ? 1 : 0;
	if (!check_owned(s, h, req.op == GNN_LINK_TOPK ? &req.node : req.ids, nids, out, &rc))
		goto out;
	why[0] = '\0';
	if ((rc = gs_preds_link_acquire(s->preds, &v, why, sizeof(why))) != GNN_OK) {
		rc = reply_error(out, h->req_id, rc, "graph store %d has no link-prediction output to answer with: %s",
				 s->part_id, why);
		goto out;
	}
	rc = gs_link_answer(&v, &s->part, s->meta.layout.schema, h->req_id, &req, out, why, sizeof(why));
	gs_preds_release(s->preds);
	if (rc != GNN_OK && rc != GNN_ENOMEM)
		rc = reply_error(out, h->req_id, rc, "graph store %d: %s", s->part_id, why);
out:
	gnn_proto_release(req.owned);
	return rc;
}

/* EMB: the trainers' embeddings; a refusal's why is the ERROR's text. */
static int on_emb(struct gs_store *s, const struct gnn_hdr *h, const void *payload, struct gnn_wbuf *out)
{
	struct gnn_emb_req req;
	char why[GNN_PROTO_MAX_ERROR_TEXT];
	int rc;

	if ((rc = gnn_decode_emb_req(payload, h->len, &req)) != GNN_OK)
		return reply_malformed(out, h, rc);
	rc = gs_emb_answer(s->emb, &s->meta.layout, (uint32_t)s->part.id, h->req_id, &req, out, why, sizeof(why));
	if (rc != GNN_OK && why[0] != '\0')
		rc = reply_error(out, h->req_id, rc, "%s", why);
	gnn_proto_release(req.owned);
	return rc;
}

void gs_after_reply(void *ctx)
{
	const struct gs_store *s = ctx;

	if (s->emb != NULL)
		gs_emb_settle(s->emb);
}

int gs_handle(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len, struct gnn_wbuf *out)
{
	struct gs_store *s = ctx;
	int state = atomic_load_explicit(&s->state, memory_order_acquire);

	(void)len; /* equal to h->len: the server checked the header */
	if (state != GS_READY)
		return reply_error(out, h->req_id, GNN_EUNAVAIL, "graph store %d is %s", s->part_id,
				   state == GS_STOPPING ? "stopping" :
				   state == GS_LOADING ? "still loading its partition" :
				   "waiting for its partition output");
	switch (h->type) {
	case GNN_MSG_INFO_REQ:
		return on_info(s, h, out);
	case GNN_MSG_SAMPLE_REQ:
		return on_sample(s, h, payload, out);
	case GNN_MSG_FEAT_REQ:
	case GNN_MSG_LABEL_REQ:
	case GNN_MSG_SPLIT_REQ:
		return on_rows(s, h, payload, out);
	case GNN_MSG_NODES_REQ:
		return on_nodes(s, h, payload, out);
	case GNN_MSG_PREDICT_REQ:
		return on_predict(s, h, payload, out);
	case GNN_MSG_LOOKUP_REQ:
		return on_lookup(s, h, payload, out);
	case GNN_MSG_EMB_REQ:
		return on_emb(s, h, payload, out);
	case GNN_MSG_LINK_REQ:
		return on_link(s, h, payload, out);
	default:
		return reply_error(out, h->req_id, GNN_EPROTO,
				   "a graph store does not serve %s messages (type %u)", gnn_msg_name(h->type),
				   h->type);
	}
}
