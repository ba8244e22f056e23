/* link_query.c - see link_query.h. */
#include "link_query.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "linkpred.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* TOPK over the candidates [lo, hi) of pt but the excluded ones and the
 * query node itself. */
static int topk(const struct gs_link_view *v, const struct gnn_part *pt, const struct gnn_link_req *req,
		const float *query, int64_t lo, int64_t hi, struct gnn_topk *t)
{
	int64_t *excl = malloc((size_t)req->n * sizeof(*excl) + 1);
	struct gnn_linkq lq = { 0 };
	uint32_t e = 0;
	float s;
	int rc;

	if (excl == NULL)
		return GNN_ENOMEM;
	if ((rc = gnn_topk_init(t, req->k)) != GNN_OK || (rc = gnn_linkq_init(&lq, &v->dec, query)) != GNN_OK)
		goto out;
	memcpy(excl, req->ids, (size_t)req->n * sizeof(*excl));
	qsort(excl, req->n, sizeof(*excl), cmp_i64);
	/* candidates in ID order, the sorted exclusion list walked alongside */
	for (int64_t u = lo; u < hi; u++) {
		while (e < req->n && excl[e] < u)
			e++;
		if ((e < req->n && excl[e] == u) || (req->dim == 0 && u == req->node))
			continue;
		s = (float)gnn_linkq_score(&lq, v->rows + (size_t)(u - pt->node_start) * v->dec.dim);
		gnn_topk_offer(t, u, isnan(s) ? -INFINITY : s);  /* inf - inf of huge values: last */
	}
	gnn_topk_sort(t);
out:
	gnn_linkq_free(&lq);
	free(excl);
	return rc;
}

/* A TOPK request's query against the model (d floats wide) and the
 * schema sc: a query vector of finite floats, a node type the graph has. */
static int check_topk(const struct gnn_link_req *req, uint32_t d, const struct gnn_schema *sc, char *why,
		      size_t why_len)
{
	if (req->dim != 0 && req->dim != d) {
		snprintf(why, why_len, "the query has %" PRIu32 " floats; the model's embeddings have %" PRIu32,
			 req->dim, d);
		return GNN_EINVAL;
	}
	for (uint32_t i = 0; i < req->dim; i++)
		if (!isfinite(req->query[i])) {
			snprintf(why, why_len, "query[%" PRIu32 "] is not a finite number", i);
			return GNN_EINVAL;
		}
	if (req->node_type != GNN_LINK_ANY_TYPE && req->node_type >= sc->num_types) {
		snprintf(why, why_len, "no node type %" PRIu32 ": the graph has %" PRIu32, req->node_type,
			 sc->num_types);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

int gs_link_answer(const struct gs_link_view *v, const struct gnn_part *pt, const struct gnn_schema *sc,
		   uint64_t req_id, const struct gnn_link_req *req, struct gnn_wbuf *out, char *why, size_t why_len)
{
	struct gnn_link_resp r = { .op = req->op, .n = req->n, .params_crc = v->params_crc, .decoder = v->dec.kind,
				   .dim = v->dec.dim, .hidden = v->dec.hidden };
	uint32_t d = v->dec.dim;
	struct gnn_topk t = { 0 };
	float *buf = NULL;
	const float *query;
	int64_t lo = pt->node_start, hi = pt->node_end;
	int rc = GNN_OK;

	if (req->op == GNN_LINK_ROWS) {
		if (16 + 4 * (uint64_t)req->n * d + 4 * gnn_link_params_count(r.decoder, d, r.hidden) > GNN_PROTO_MAX_MSG_BYTES) {
			snprintf(why, why_len, "%" PRIu32 " rows of %" PRIu32 " floats are over the %u-byte message limit: "
				 "ask for fewer", req->n, d, GNN_PROTO_MAX_MSG_BYTES);
			return GNN_ERANGE;
		}
		if ((buf = malloc((size_t)req->n * d * 4 + 1)) == NULL)
			return GNN_ENOMEM;
		for (uint32_t i = 0; i < req->n; i++)
			memcpy(buf + (size_t)i * d, v->rows + (size_t)(req->ids[i] - pt->node_start) * d, (size_t)d * 4);
		r.rows = buf;
		r.flags = req->flags & GNN_LINK_WITH_DECODER;
		r.params = r.flags ? v->dec.params : NULL;
	} else if (req->op == GNN_LINK_SCORE) {
		if ((buf = malloc((size_t)req->n * 4 + 1)) == NULL)
			return GNN_ENOMEM;
		for (uint32_t i = 0; i < req->n; i++)
			buf[i] = (float)gnn_linkdec_score(&v->dec, v->rows + (size_t)(req->ids[2 * i] - pt->node_start) * d,
							  v->rows + (size_t)(req->ids[2 * i + 1] - pt->node_start) * d);
		r.scores = buf;
	} else {
		if ((rc = check_topk(req, d, sc, why, why_len)) != GNN_OK)
			return rc;
		if (req->node_type != GNN_LINK_ANY_TYPE) {
			lo = pt->type_start[req->node_type];
			hi = pt->type_start[req->node_type + 1];
		}
		query = req->dim != 0 ? req->query : v->rows + (size_t)(req->node - pt->node_start) * d;
		if ((rc = topk(v, pt, req, query, lo, hi, &t)) != GNN_OK)
			goto out;
		r.n = t.n;
		r.nodes = t.nodes;
		r.scores = t.scores;
	}
	if ((rc = gnn_encode_link_resp(out, req_id, &r)) != GNN_OK)
		snprintf(why, why_len, "cannot encode the reply (%s)", gnn_strerror(rc));
out:
	free(buf);
	gnn_topk_free(&t);
	return rc;
}
