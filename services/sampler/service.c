#include "service.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "sys.h"

struct smp_service {
	const struct smp_backend *be;
	struct smp_build_opts build;
	struct gnn_counter *minibatches, *edges, *feat_bytes, *excluded;
	struct gnn_histogram *seconds;
};

int smp_service_new(const struct smp_service_opts *o, struct smp_service **out)
{
	struct smp_service *s;
	double bounds[16];
	int rc;

	if (o->backend == NULL || o->metrics == NULL)
		return GNN_EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return GNN_ENOMEM;
	s->be = o->backend;
	s->build.max_ids_per_call = o->max_ids_per_call;
	s->build.admit = o->admit;
	gnn_metrics_exp_buckets(0.001, 2, 16, bounds);  /* 1 ms .. 33 s */
	if ((rc = gnn_metrics_counter(o->metrics, "gnn_sampler_minibatches_total",
				      "Minibatches built and sent", NULL, 0, &s->minibatches)) ||
	    (rc = gnn_metrics_histogram(o->metrics, "gnn_sampler_minibatch_seconds",
					"Time to build one minibatch (sampling, features, labels, encoding)",
					NULL, 0, bounds, 16, &s->seconds)) ||
	    (rc = gnn_metrics_counter(o->metrics, "gnn_sampler_sampled_edges_total",
				      "Edges of the blocks of the minibatches sent", NULL, 0, &s->edges)) ||
	    (rc = gnn_metrics_counter(o->metrics, "gnn_sampler_feature_bytes_total",
				      "Bytes of input feature rows in the minibatches sent", NULL, 0,
				      &s->feat_bytes)) ||
	    (rc = gnn_metrics_counter(o->metrics, "gnn_sampler_excluded_edges_total",
				      "Sampled edges dropped from the minibatches sent as excluded pairs' "
				      "(GNN_MB_EXCLUDE, link prediction)", NULL, 0, &s->excluded))) {
		free(s);
		return rc;
	}
	*out = s;
	return GNN_OK;
}

void smp_service_free(struct smp_service *s)
{
	if (s == NULL)
		return;
	/* What this replica served, for its log (and benchmarks' rates). */
	GNN_INFO("served", "minibatches=%.0f sampled_edges=%.0f feature_bytes=%.0f", gnn_counter_value(s->minibatches),
		 gnn_counter_value(s->edges), gnn_counter_value(s->feat_bytes));
	free(s);
}

/* The bytes admitted for the reply this worker thread is sending. */
static _Thread_local uint64_t reply_admitted;

void smp_service_after_reply(void *ctx)
{
	struct smp_service *s = ctx;

	if (reply_admitted > 0)
		smp_admit_release(s->build.admit, reply_admitted);
	reply_admitted = 0;
}

/* Replaces whatever is in out by an ERROR for h, logged as "<op>_failed"
 * (minibatch_failed, nodes_failed, info_failed, request_failed). */
static int reply_error(struct gnn_wbuf *out, const struct gnn_hdr *h, int code, const char *text)
{
	const char *event = h->type == GNN_MSG_MINIBATCH_REQ ? "minibatch_failed" :
			    h->type == GNN_MSG_NODES_REQ ? "nodes_failed" :
			    h->type == GNN_MSG_INFO_REQ ? "info_failed" : "request_failed";

	out->len = 0;
	out->failed = false;
	GNN_WARN(event, "req_id=%" PRIu64 " code=%s reason=\"%s\"", h->req_id, gnn_errname(code), text);
	return gnn_encode_error(out, h->req_id, (uint32_t)code, text);
}

/* INFO: the whole graph's layout. part_id = num_parts says that the answer
 * is not one partition's (docs/protocol.md); part_edges is every edge. */
static int on_info(struct smp_service *s, const struct gnn_hdr *h, size_t len, struct gnn_wbuf *out)
{
	const struct gnn_layout *l = s->be->layout;
	struct gnn_info info = { .part_id = l->num_parts, .layout = *l, .part_edges = l->num_edges };
	char text[128];

	if (len != 0) {
		snprintf(text, sizeof(text), "INFO request carries %zu payload bytes; it has none", len);
		return reply_error(out, h, GNN_EPROTO, text);
	}
	if (gnn_encode_info_resp(out, h->req_id, &info) != GNN_OK)
		return reply_error(out, h, GNN_ENOMEM, "out of memory");
	return GNN_OK;
}

static int on_nodes(struct smp_service *s, const struct gnn_hdr *h, const void *payload, size_t len,
		    struct gnn_wbuf *out)
{
	struct gnn_nodes_req req;
	char err[512], text[640];
	uint32_t n = 0;
	int rc;

	if ((rc = gnn_decode_nodes_req(payload, len, &req)) != GNN_OK) {
		snprintf(text, sizeof(text), "malformed nodes request: %s (%s)",
			 rc == GNN_ERANGE ? "split over 3, limit 0 or over 2^22, or a negative cursor"
					  : "its payload is not 16 bytes",
			 gnn_errname(rc));
		return reply_error(out, h, rc, text);
	}
	if ((rc = smp_nodes_message(s->be, h->req_id, &req, out, &n, err, sizeof(err))) != GNN_OK)
		return reply_error(out, h, rc, err);
	GNN_DEBUG("nodes", "req_id=%" PRIu64 " split=%u cursor=%" PRId64 " limit=%" PRIu32 " listed=%" PRIu32,
		  h->req_id, (unsigned)req.split, req.cursor, req.limit, n);
	return GNN_OK;
}

/* PREDICT: the inference's predictions of any nodes, from their owners. */
static int on_predict(struct smp_service *s, const struct gnn_hdr *h, const void *payload, size_t len,
		      struct gnn_wbuf *out)
{
	struct gnn_ids req;
	char err[512], text[640];
	int rc;

	if ((rc = gnn_decode_ids_req(payload, len, &req)) != GNN_OK) {
		snprintf(text, sizeof(text), "malformed predict request: %s (%s)",
			 rc == GNN_ERANGE ? "over 2^22 node IDs" : "lengths do not match the payload", gnn_errname(rc));
		return reply_error(out, h, rc, text);
	}
	rc = smp_predict_message(s->be, h->req_id, req.ids, req.n, out, err, sizeof(err));
	gnn_proto_release(req.owned);
	return rc == GNN_OK ? GNN_OK : reply_error(out, h, rc, err);
}

/* LINK: rows, scores and top-k of a link-prediction model, from the owners. */
static int on_link(struct smp_service *s, const struct gnn_hdr *h, const void *payload, size_t len,
		   struct gnn_wbuf *out)
{
	struct gnn_link_req req;
	char err[512], text[640];
	int rc;

	if ((rc = gnn_decode_link_req(payload, len, &req)) != GNN_OK) {
		snprintf(text, sizeof(text), "malformed link request: %s (%s)",
			 rc == GNN_ERANGE ? "over a limit: k 1..1000, pairs 65536, excluded 65536, IDs 2^22 (docs/protocol.md)"
					  : "unknown op or flags, or lengths that do not match the payload",
			 gnn_errname(rc));
		return reply_error(out, h, rc, text);
	}
	rc = smp_link_message(s->be, h->req_id, &req, out, err, sizeof(err));
	gnn_proto_release(req.owned);
	return rc == GNN_OK ? GNN_OK : reply_error(out, h, rc, err);
}

/* LOOKUP: global IDs of original per-type IDs, from every store. */
static int on_lookup(struct smp_service *s, const struct gnn_hdr *h, const void *payload, size_t len,
		     struct gnn_wbuf *out)
{
	struct gnn_lookup_req req;
	char err[512], text[640];
	int rc;

	if ((rc = gnn_decode_lookup_req(payload, len, &req)) != GNN_OK) {
		snprintf(text, sizeof(text), "malformed lookup request: %s (%s)",
			 rc == GNN_ERANGE ? "over 2^22 IDs or a type over 63" : "lengths do not match the payload",
			 gnn_errname(rc));
		return reply_error(out, h, rc, text);
	}
	rc = smp_lookup_message(s->be, h->req_id, req.node_type, req.orig_ids, req.n, out, err, sizeof(err));
	gnn_proto_release(req.owned);
	return rc == GNN_OK ? GNN_OK : reply_error(out, h, rc, err);
}

static int on_minibatch(struct smp_service *s, const struct gnn_hdr *h, const void *payload, size_t len,
			struct gnn_wbuf *out)
{
	struct gnn_minibatch_req req;
	struct smp_minibatch_stats st;
	double t0 = gnn_now();
	char err[512], text[640];
	int rc;

	if ((rc = gnn_decode_minibatch_req(payload, len, &req)) != GNN_OK) {
		snprintf(text, sizeof(text), "malformed minibatch request: %s (%s)",
			 rc == GNN_ERANGE ? "a count, fanout, flag or exclusion list is outside the limits of docs/protocol.md"
					  : "lengths do not match the payload",
			 gnn_errname(rc));
		return reply_error(out, h, rc, text);
	}
	if ((rc = smp_check_request(s->be->layout, &req, err, sizeof(err))) != GNN_OK ||
	    (rc = smp_build_message(s->be, &s->build, h->req_id, &req, out, &st, err, sizeof(err))) != GNN_OK) {
		gnn_proto_release(req.owned);
		return reply_error(out, h, rc, err);
	}
	reply_admitted = st.admitted_bytes;
	gnn_counter_inc(s->minibatches);
	gnn_counter_add(s->edges, (double)st.sampled_edges);
	gnn_counter_add(s->feat_bytes, (double)st.feature_bytes);
	gnn_counter_add(s->excluded, (double)st.excluded_edges);
	gnn_histogram_observe(s->seconds, gnn_now() - t0);
	GNN_DEBUG("minibatch", "req_id=%" PRIu64 " seeds=%" PRIu32 " layers=%" PRIu32 " edges=%" PRIu64
		  " excluded_pairs=%" PRIu32 " excluded_edges=%" PRIu64 " input_nodes=%" PRIu32 " bytes=%" PRIu64
		  " seconds=%.4f", h->req_id, req.num_seeds, req.num_layers, st.sampled_edges, req.num_excl,
		  st.excluded_edges, st.input_nodes, st.wire_bytes, gnn_now() - t0);
	gnn_proto_release(req.owned);
	return GNN_OK;
}

int smp_service_handle(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len,
		       struct gnn_wbuf *out)
{
	struct smp_service *s = ctx;
	char text[640];

	if (h->type != GNN_MSG_MINIBATCH_REQ && h->type != GNN_MSG_NODES_REQ && h->type != GNN_MSG_INFO_REQ &&
	    h->type != GNN_MSG_PREDICT_REQ && h->type != GNN_MSG_LOOKUP_REQ && h->type != GNN_MSG_LINK_REQ) {
		snprintf(text, sizeof(text), "the sampler answers info, nodes, minibatch, predict, lookup and link requests only, "
			 "not %s (type %u)", gnn_msg_name(h->type), (unsigned)h->type);
		return reply_error(out, h, GNN_EPROTO, text);
	}
	/* Until the stores have told the layout there is nothing to answer
	 * with: say so, rather than let the client time out. */
	if (s->be->layout_known != NULL && !s->be->layout_known(s->be->ctx, text, sizeof(text)))
		return reply_error(out, h, GNN_EUNAVAIL, text);
	if (h->type == GNN_MSG_INFO_REQ)
		return on_info(s, h, len, out);
	if (h->type == GNN_MSG_NODES_REQ)
		return on_nodes(s, h, payload, len, out);
	if (h->type == GNN_MSG_PREDICT_REQ)
		return on_predict(s, h, payload, len, out);
	if (h->type == GNN_MSG_LOOKUP_REQ)
		return on_lookup(s, h, payload, len, out);
	if (h->type == GNN_MSG_LINK_REQ)
		return on_link(s, h, payload, len, out);
	return on_minibatch(s, h, payload, len, out);
}
