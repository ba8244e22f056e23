/* cmd.c - gnn-cli's commands: build one request (or a series, for nodes),
 * call the graph store or sampler with a timeout and bounded retries
 * (client.h), check the reply completely and convert it to JSON. info and
 * nodes ask a graph store (--store: its partition) or a sampler
 * (--sampler: the whole graph), which answer the same messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "cli.h"
#include "client.h"
#include "err.h"
#include "fanouts.h"
#include "part.h"

/* Nodes asked for per NODES request while paging. */
#define NODES_PAGE 65536

/* Request IDs only have to differ between the requests of one socket. */
static uint64_t next_req_id = 1;

static int connect_to(const struct cli_config *c, const char *url, const char *what,
		      struct gnn_client **out)
{
	struct gnn_client_opts o = { .url = url, .name = strcmp(what, "--sampler") == 0 ? "sampler" : "graphstore",
				     .timeout_ms = (int)c->timeout_ms,
				     .retries = (int)c->retries };
	int rc;

	if (url == NULL) {
		cli_error("%s URL is required, e.g. %s tcp://127.0.0.1:7000", what, what);
		return GNN_EINVAL;
	}
	if ((rc = gnn_client_open(&o, out)) != GNN_OK)
		cli_error("cannot use %s \"%s\": %s (expected an nng URL such as tcp://HOST:PORT)", what, url,
			  gnn_strerror(rc));
	return rc;
}

/* Sends req, waits for the reply and checks that it is a want_type
 * message: *reply (the caller's: nng_msg_free) holds *payload, *len. */
static int call(struct gnn_client *cl, const char *url, struct gnn_wbuf *req, uint16_t want_type,
		nng_msg **reply, const void **payload, size_t *len)
{
	char err[512] = "";
	uint16_t op;
	int rc;

	if (req->failed) {
		cli_error("out of memory building the request");
		return GNN_ENOMEM;
	}
	memcpy(&op, req->buf + 6, 2);
	rc = gnn_client_call(cl, req, reply, err, sizeof(err));
	if (rc == GNN_ETIMEDOUT) {
		cli_error("%s request to %s failed: %s (is the service running there, %s? see --timeout-ms, --retries)",
			  gnn_msg_name(op), url, err, gnn_tls_data_plane() != NULL ?
			  "with TLS, its certificate of the same CA as ours and naming the host dialled (docs/security.md)" :
			  "without TLS (a service with --tls-* refuses plain connections)");
		return rc;
	}
	if (rc != GNN_OK) {
		/* An error reply's text comes as "PEER: text": the URL says which peer. */
		const char *text = err, *colon = strstr(err, ": ");

		if (colon != NULL && strncmp(err, gnn_client_name(cl), (size_t)(colon - err)) == 0)
			text = colon + 2;
		cli_error("%s request to %s failed: %s: %s", gnn_msg_name(op), url, gnn_errname(rc), text);
		return rc;
	}
	if ((rc = gnn_reply_payload(*reply, want_type, payload, len)) != GNN_OK) {
		cli_error("%s request to %s: the reply is not a %s message", gnn_msg_name(op), url,
			  gnn_msg_name(want_type));
		nng_msg_free(*reply);
		*reply = NULL;
	}
	return rc;
}

/* The one service info and nodes talk to: *url and *opt ("--store" or
 * "--sampler"). Neither or both is bad usage. */
static int pick_target(const struct cli_config *c, const char **url, const char **opt)
{
	if ((c->store == NULL) == (c->sampler == NULL)) {
		cli_error("give either --store URL (a graph store: its partition) or --sampler URL (a sampler: the "
			  "whole graph)%s", c->store != NULL ? ", not both" : ", e.g. --store tcp://127.0.0.1:7000");
		return GNN_EINVAL;
	}
	*url = c->store != NULL ? c->store : c->sampler;
	*opt = c->store != NULL ? "--store" : "--sampler";
	return GNN_OK;
}

static int bad_reply(const char *url, const char *what, int rc)
{
	cli_error("malformed reply from %s: %s (%s)", url, what, gnn_errname(rc));
	return rc ? rc : GNN_EPROTO;
}

static int print_json_failed(void)
{
	cli_error("out of memory building the output");
	return GNN_ENOMEM;
}

/* INFO of url over cl into *info, whose layout is then a copy the caller
 * frees with gnn_layout_free (the reply it was decoded from is gone). */
static int fetch_info(struct gnn_client *cl, const char *url, struct gnn_info *info)
{
	struct gnn_wbuf req;
	struct gnn_info got = { 0 };
	nng_msg *reply = NULL;
	const void *payload;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	gnn_encode_info_req(&req, next_req_id++);
	if ((rc = call(cl, url, &req, GNN_MSG_INFO_RESP, &reply, &payload, &len)) == GNN_OK &&
	    (rc = gnn_decode_info_resp(payload, len, &got)) != GNN_OK)
		rc = bad_reply(url, "INFO", rc);
	if (rc == GNN_OK) {
		*info = got;
		info->owned = NULL;
		if ((rc = gnn_layout_dup(&got.layout, &info->layout)) != GNN_OK)
			memset(&info->layout, 0, sizeof(info->layout));
	}
	gnn_proto_release(got.owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&req);
	return rc;
}

int cli_cmd_info(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	struct gnn_info info = { 0 };
	const char *url, *opt;
	int rc;

	if ((rc = pick_target(c, &url, &opt)) != GNN_OK || (rc = connect_to(c, url, opt, &cl)) != GNN_OK ||
	    (rc = fetch_info(cl, url, &info)) != GNN_OK)
		goto out;
	if ((*out = cli_info_json(opt + 2, url, &info)) == NULL)
		rc = print_json_failed();
out:
	gnn_layout_free(&info.layout);
	gnn_client_close(cl);
	return rc;
}

int cli_cmd_sample(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	struct gnn_info info = { 0 };
	struct gnn_wbuf req;
	struct gnn_sample_resp r = { 0 };
	int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	nng_msg *reply = NULL;
	int64_t *ids = NULL;
	const void *payload;
	uint32_t n, layers, R;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	if ((rc = cli_parse_ids(c->nodes, "--nodes", &ids, &n)) != GNN_OK ||
	    (rc = connect_to(c, c->store, "--store", &cl)) != GNN_OK || (rc = fetch_info(cl, c->store, &info)) != GNN_OK ||
	    (rc = cli_parse_fanouts("--fanout", c->fanout, true, info.layout.schema, fanouts, &layers)) != GNN_OK)
		goto out;
	R = info.layout.schema->num_rels;
	if (!gnn_fanouts_any(fanouts, R)) {
		cli_error("--fanout %s samples nothing: give -1 (all neighbours) or 1..%d", c->fanout, GNN_PROTO_MAX_FANOUT);
		rc = GNN_EINVAL;
		goto out;
	}
	gnn_encode_sample_req(&req, next_req_id++, (uint64_t)c->seed, R, fanouts, ids, n);
	if ((rc = call(cl, c->store, &req, GNN_MSG_SAMPLE_RESP, &reply, &payload, &len)) != GNN_OK)
		goto out;
	if ((rc = gnn_decode_sample_resp(payload, len, &r)) != GNN_OK || r.n != n || r.num_rels != R) {
		rc = bad_reply(c->store, "SAMPLE reply does not match the request", rc ? rc : GNN_EPROTO);
		goto out;
	}
	if ((*out = cli_sample_json((uint64_t)c->seed, fanouts, ids, &r, info.layout.schema)) == NULL)
		rc = print_json_failed();
out:
	gnn_proto_release(r.owned);
	gnn_layout_free(&info.layout);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&req);
	gnn_client_close(cl);
	free(ids);
	return rc;
}

/* features, labels, split: one ID list in, one value or row per ID out. */
static int rows_cmd(const struct cli_config *c, uint16_t req_type, json_t **out)
{
	struct gnn_client *cl = NULL;
	struct gnn_wbuf req;
	nng_msg *reply = NULL;
	void *owned = NULL;
	json_t *doc = NULL, *vals = NULL;
	int64_t *ids = NULL;
	const void *payload;
	uint32_t n, got = 0;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	if ((rc = cli_parse_ids(c->nodes, "--nodes", &ids, &n)) != GNN_OK ||
	    (rc = connect_to(c, c->store, "--store", &cl)) != GNN_OK)
		goto out;
	gnn_encode_ids_req(&req, req_type, next_req_id++, ids, n);
	if ((rc = call(cl, c->store, &req, (uint16_t)(req_type + 1), &reply, &payload, &len)) != GNN_OK)
		goto out;
	vals = json_array();
	if (req_type == GNN_MSG_FEAT_REQ) {
		struct gnn_feat_resp r;

		if ((rc = gnn_decode_feat_resp(payload, len, &r)) == GNN_OK) {
			owned = r.owned;
			got = r.n;
			for (uint32_t i = 0; vals != NULL && i < r.n && i < n; i++)
				json_array_append_new(vals, cli_feat_row(r.rows, r.dtype, i, r.dim));
			doc = json_pack("{s:I, s:s}", "feat_dim", (json_int_t)r.dim, "feature_dtype",
					gnn_dtype_name(r.dtype));
		}
	} else if (req_type == GNN_MSG_LABEL_REQ) {
		struct gnn_label_resp r;

		if ((rc = gnn_decode_label_resp(payload, len, &r)) == GNN_OK) {
			owned = r.owned;
			got = r.n;
			for (uint32_t i = 0; vals != NULL && i < r.n && i < n; i++)
				json_array_append_new(vals, json_integer(r.labels[i]));
			doc = json_object();
		}
	} else {
		struct gnn_split_resp r;

		if ((rc = gnn_decode_split_resp(payload, len, &r)) == GNN_OK) {
			got = r.n;
			for (uint32_t i = 0; vals != NULL && i < r.n && i < n; i++)
				json_array_append_new(vals, json_string(cli_split_name(r.codes[i])));
			doc = json_object();
		}
	}
	if (rc != GNN_OK || got != n) {
		rc = bad_reply(c->store, "the reply does not hold one entry per requested node",
			       rc ? rc : GNN_EPROTO);
		goto out;
	}
	if (doc == NULL || vals == NULL ||
	    json_object_set_new(doc, "nodes", cli_id_array(ids, n)) != 0 ||
	    json_object_set(doc, req_type == GNN_MSG_FEAT_REQ ? "features" :
			    req_type == GNN_MSG_LABEL_REQ ? "labels" : "split", vals) != 0) {
		rc = print_json_failed();
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	json_decref(vals);
	gnn_proto_release(owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&req);
	gnn_client_close(cl);
	free(ids);
	return rc;
}

int cli_cmd_features(const struct cli_config *c, json_t **out)
{
	return rows_cmd(c, GNN_MSG_FEAT_REQ, out);
}

int cli_cmd_labels(const struct cli_config *c, json_t **out)
{
	return rows_cmd(c, GNN_MSG_LABEL_REQ, out);
}

int cli_cmd_split(const struct cli_config *c, json_t **out)
{
	return rows_cmd(c, GNN_MSG_SPLIT_REQ, out);
}

int cli_cmd_nodes(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	struct gnn_wbuf req;
	json_t *ids = json_array();
	int64_t cursor = 0, last = -1;
	uint64_t count = 0, limit = c->limit > 0 ? (uint64_t)c->limit : UINT64_MAX;
	const char *url, *opt;
	int pages = 0;
	uint8_t split;
	int rc;

	gnn_wbuf_init(&req);
	if (ids == NULL)
		return print_json_failed();
	if (cli_split_code(c->split, &split) != GNN_OK) {
		cli_error("--split is required: train, valid, test or none");
		rc = GNN_EINVAL;
		goto out;
	}
	if ((rc = pick_target(c, &url, &opt)) != GNN_OK || (rc = connect_to(c, url, opt, &cl)) != GNN_OK)
		goto out;
	/* Page through the partition (a sampler: the whole graph, a partition
	 * after another): each reply says where to continue. */
	while (cursor >= 0 && count < limit) {
		uint64_t want = limit - count < (uint64_t)c->page ? limit - count : (uint64_t)c->page;
		struct gnn_nodes_resp r;
		nng_msg *reply = NULL;
		const void *payload;
		size_t len;

		req.len = 0;
		gnn_encode_nodes_req(&req, next_req_id++, split, (uint32_t)want, cursor);
		if ((rc = call(cl, url, &req, GNN_MSG_NODES_RESP, &reply, &payload, &len)) != GNN_OK)
			goto out;
		rc = gnn_decode_nodes_resp(payload, len, &r);
		if (rc == GNN_OK) {
			/* IDs ascending, at or past the cursor, and the cursor must move on. */
			for (uint32_t i = 0; i < r.n && rc == GNN_OK; i++) {
				if (r.ids[i] < cursor || r.ids[i] <= last)
					rc = GNN_EPROTO;
				last = r.ids[i];
				json_array_append_new(ids, json_integer(r.ids[i]));
			}
			if (r.n > want || (r.next_cursor >= 0 && r.next_cursor <= cursor) ||
			    (r.next_cursor >= 0 && r.next_cursor <= last))
				rc = GNN_EPROTO;
			count += r.n;
			cursor = r.next_cursor;
			gnn_proto_release(r.owned);
		}
		nng_msg_free(reply);
		pages++;
		if (rc != GNN_OK) {
			rc = bad_reply(url, "NODES reply out of order or not advancing", rc);
			goto out;
		}
	}
	*out = json_pack("{s:s, s:s, s:I, s:I, s:i, s:O}", opt + 2, url, "split", c->split,
			 "count", (json_int_t)count, "next_cursor", (json_int_t)cursor, "pages", pages, "nodes",
			 ids);
	if (*out == NULL)
		rc = print_json_failed();
out:
	json_decref(ids);
	gnn_wbuf_free(&req);
	gnn_client_close(cl);
	return rc;
}

int cli_cmd_minibatch(const struct cli_config *c, json_t **out)
{
	static int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	struct gnn_client *cl = NULL;
	struct gnn_info info = { 0 };
	struct gnn_wbuf req;
	struct gnn_minibatch_req mr = { 0 };
	struct gnn_minibatch mb = { 0 };
	nng_msg *reply = NULL;
	int64_t *seeds = NULL;
	const void *payload;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	if ((rc = cli_parse_ids(c->seeds, "--seeds", &seeds, &mr.num_seeds)) != GNN_OK ||
	    (rc = connect_to(c, c->sampler, "--sampler", &cl)) != GNN_OK ||
	    (rc = fetch_info(cl, c->sampler, &info)) != GNN_OK ||
	    (rc = cli_parse_fanouts("--fanouts", c->fanouts, false, info.layout.schema, fanouts, &mr.num_layers)) !=
		    GNN_OK)
		goto out;
	mr.num_rels = info.layout.schema->num_rels;
	mr.fanouts = fanouts;
	mr.seed = (uint64_t)c->seed;
	mr.seeds = seeds;
	mr.flags = (c->no_features ? 0 : GNN_MB_FEATURES) | (c->no_labels ? 0 : GNN_MB_LABELS);
	gnn_encode_minibatch_req(&req, next_req_id++, &mr);
	if ((rc = call(cl, c->sampler, &req, GNN_MSG_MINIBATCH_RESP, &reply, &payload, &len)) != GNN_OK)
		goto out;
	/* The decoder checks the blocks' structure; the seeds, the shape and
	 * the parts asked for are checked here. */
	if ((rc = gnn_decode_minibatch_resp(payload, len, &mb)) != GNN_OK || mb.num_layers != mr.num_layers ||
	    mb.num_seeds != mr.num_seeds || mb.flags != mr.flags || mb.num_rels != mr.num_rels ||
	    mb.num_types != info.layout.schema->num_types ||
	    memcmp(mb.blocks[mb.num_layers - 1].src_ids, seeds, (size_t)mr.num_seeds * 8) != 0) {
		rc = bad_reply(c->sampler, "MINIBATCH reply does not match the request", rc ? rc : GNN_EPROTO);
		goto out;
	}
	if ((*out = cli_minibatch_json(&mr, &mb, info.layout.schema)) == NULL)
		rc = print_json_failed();
out:
	gnn_proto_release(mb.owned);
	gnn_layout_free(&info.layout);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&req);
	gnn_client_close(cl);
	free(seeds);
	return rc;
}

/* --type NAME's index in url's schema (INFO over cl). */
static int type_index(struct gnn_client *cl, const char *url, const char *what, const char *name, uint32_t *t)
{
	struct gnn_info info = { 0 };
	int32_t k;
	int rc;

	if ((rc = fetch_info(cl, url, &info)) != GNN_OK)
		return rc;
	if ((k = gnn_schema_type(info.layout.schema, name)) < 0) {
		char names[512];
		size_t used = 0;

		names[0] = '\0';
		for (uint32_t i = 0; i < info.layout.schema->num_types && used + 1 < sizeof(names); i++)
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
						 info.layout.schema->types[i].name);
		cli_error("%s %s: not a node type of the graph (%s)", what, name, names);
		rc = GNN_EINVAL;
	}
	gnn_layout_free(&info.layout);
	*t = k < 0 ? 0 : (uint32_t)k;
	return rc;
}

/* LOOKUP of n original IDs of type c->type over cl into *ids (malloc'd,
 * the caller's): every one must be found (a store answers -1 for the
 * nodes of other partitions: an error here). */
static int lookup(const struct cli_config *c, struct gnn_client *cl, const char *url, const int64_t *orig,
		  uint32_t n, int64_t **ids)
{
	struct gnn_wbuf req;
	struct gnn_ids r = { 0 };
	nng_msg *reply = NULL;
	const void *payload;
	uint32_t t;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	if ((rc = type_index(cl, url, "--type", c->type, &t)) != GNN_OK)
		goto out;
	gnn_encode_lookup_req(&req, next_req_id++, t, orig, n);
	if ((rc = call(cl, url, &req, GNN_MSG_LOOKUP_RESP, &reply, &payload, &len)) != GNN_OK)
		goto out;
	if ((rc = gnn_decode_ids_req(payload, len, &r)) != GNN_OK || r.n != n) {
		rc = bad_reply(url, "the reply does not hold one ID per original ID", rc ? rc : GNN_EPROTO);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		if (r.ids[i] < 0) {
			cli_error("%s %lld is not held by %s (a graph store answers for its own partition: ask a sampler "
				  "for the whole graph)", c->type, (long long)orig[i], url);
			rc = GNN_ENOENT;
			goto out;
		}
	if ((*ids = malloc((size_t)n * sizeof(**ids) + 1)) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	memcpy(*ids, r.ids, (size_t)n * sizeof(**ids));
out:
	gnn_proto_release(r.owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&req);
	return rc;
}

/* The global IDs of the n IDs *given: themselves (*given is then taken
 * into *ids and set to NULL), or with --type T, original IDs of type T
 * looked up (*ids new, the caller's). */
static int global_ids(const struct cli_config *c, struct gnn_client *cl, const char *url, int64_t **given,
		      uint32_t n, int64_t **ids)
{
	if (c->type != NULL)
		return lookup(c, cl, url, *given, n, ids);
	*ids = *given;
	*given = NULL;
	return GNN_OK;
}

int cli_cmd_lookup(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	int64_t *orig = NULL, *ids = NULL;
	const char *url, *opt;
	uint32_t n;
	int rc;

	if (c->type == NULL) {
		cli_error("--type NAME is required: the node type the original IDs are of");
		return GNN_EINVAL;
	}
	if ((rc = pick_target(c, &url, &opt)) != GNN_OK || (rc = cli_parse_ids(c->nodes, "--nodes", &orig, &n)) != GNN_OK ||
	    (rc = connect_to(c, url, opt, &cl)) != GNN_OK || (rc = lookup(c, cl, url, orig, n, &ids)) != GNN_OK)
		goto out;
	if ((*out = json_pack("{s:s, s:s, s:o, s:o}", opt + 2, url, "type", c->type, "original_ids",
			      cli_id_array(orig, n), "nodes", cli_id_array(ids, n))) == NULL)
		rc = print_json_failed();
out:
	gnn_client_close(cl);
	free(orig);
	free(ids);
	return rc;
}

/* PREDICT: a store's own nodes, or any nodes through a sampler; with
 * --type, nodes given by their original IDs (a LOOKUP first). */
int cli_cmd_predict(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	struct gnn_predict_resp r = { 0 };
	struct gnn_wbuf req;
	nng_msg *reply = NULL;
	const void *payload;
	const char *url, *opt;
	int64_t *ids = NULL, *given = NULL;
	uint32_t n;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	if ((rc = pick_target(c, &url, &opt)) != GNN_OK || (rc = cli_parse_ids(c->nodes, "--nodes", &given, &n)) != GNN_OK ||
	    (rc = connect_to(c, url, opt, &cl)) != GNN_OK)
		goto out;
	if ((rc = global_ids(c, cl, url, &given, n, &ids)) != GNN_OK)
		goto out;
	gnn_encode_ids_req(&req, GNN_MSG_PREDICT_REQ, next_req_id++, ids, n);
	if ((rc = call(cl, url, &req, GNN_MSG_PREDICT_RESP, &reply, &payload, &len)) != GNN_OK)
		goto out;
	if ((rc = gnn_decode_predict_resp(payload, len, &r)) != GNN_OK || r.n != n) {
		rc = bad_reply(url, "the reply does not hold one prediction per requested node", rc ? rc : GNN_EPROTO);
		goto out;
	}
	if ((*out = cli_predict_json(ids, &r)) == NULL)
		rc = print_json_failed();
out:
	gnn_proto_release(r.owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&req);
	gnn_client_close(cl);
	free(ids);
	free(given);
	return rc;
}

/* The rows of a graph store's learned embeddings (docs/embeddings.md):
 * STATUS for the generation and version it holds, then a PULL of them. */
static int pull_rows(const struct cli_config *c, struct gnn_client *cl, const char *url, uint32_t t,
		     const int64_t *ids, uint32_t n, json_t **out)
{
	struct gnn_emb_req st = { .op = GNN_EMB_STATUS }, pull = { .op = GNN_EMB_PULL, .node_type = t, .n = n,
								   .ids = ids };
	struct gnn_emb_resp sr = { 0 }, pr = { 0 };
	nng_msg *r1 = NULL, *r2 = NULL;
	struct gnn_wbuf req;
	const void *payload;
	json_t *rows = NULL;
	char gen[17];
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	gnn_encode_emb_req(&req, next_req_id++, &st);
	if ((rc = call(cl, url, &req, GNN_MSG_EMB_RESP, &r1, &payload, &len)) != GNN_OK ||
	    (rc = gnn_decode_emb_resp(payload, len, &sr)) != GNN_OK)
		goto out;
	if (sr.gen == 0) {
		cli_error("%s holds no embeddings: no trainer with --embed-dim has set it up since it started", url);
		rc = GNN_ENOENT;
		goto out;
	}
	pull.gen = sr.gen;
	pull.step = sr.version;
	pull.array = c->best ? GNN_EMB_BEST_ROWS : GNN_EMB_ROWS;
	req.len = 0;
	gnn_encode_emb_req(&req, next_req_id++, &pull);
	if ((rc = call(cl, url, &req, GNN_MSG_EMB_RESP, &r2, &payload, &len)) != GNN_OK)
		goto out;
	if ((rc = gnn_decode_emb_resp(payload, len, &pr)) != GNN_OK || pr.n != n) {
		rc = bad_reply(url, "the reply does not hold one row per requested node", rc ? rc : GNN_EPROTO);
		goto out;
	}
	if ((rows = json_array()) == NULL) {
		rc = print_json_failed();
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		json_t *row = json_array();

		for (uint32_t j = 0; row != NULL && j < pr.dim; j++)
			json_array_append_new(row, json_real(((const float *)pr.data)[(size_t)i * pr.dim + j]));
		json_array_append_new(rows, row);
	}
	snprintf(gen, sizeof(gen), "%016llx", (unsigned long long)sr.gen);
	if ((*out = json_pack("{s:s, s:s, s:I, s:s, s:i, s:o}", "generation", gen, "array", c->best ? "best" : "rows",
			      "version", (json_int_t)sr.version, "type", c->type, "dim", (int)pr.dim, "rows",
			      rows)) == NULL)
		rc = print_json_failed();
	rows = NULL;
out:
	json_decref(rows);
	gnn_proto_release(sr.owned);
	gnn_proto_release(pr.owned);
	if (r1 != NULL)
		nng_msg_free(r1);
	if (r2 != NULL)
		nng_msg_free(r2);
	gnn_wbuf_free(&req);
	return rc;
}

int cli_cmd_embedding(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	int64_t *orig = NULL, *ids = NULL;
	json_t *doc = NULL;
	uint32_t n, t;
	int rc;

	if (c->type == NULL || c->store == NULL) {
		cli_error("--store URL and --type NAME are required: the graph store that holds the nodes, and their type");
		return GNN_EINVAL;
	}
	if ((rc = cli_parse_ids(c->nodes, "--nodes", &orig, &n)) != GNN_OK ||
	    (rc = connect_to(c, c->store, "--store", &cl)) != GNN_OK || (rc = type_index(cl, c->store, "--type", c->type, &t)) != GNN_OK ||
	    (rc = lookup(c, cl, c->store, orig, n, &ids)) != GNN_OK || (rc = pull_rows(c, cl, c->store, t, ids, n, &doc)) != GNN_OK)
		goto out;
	if (json_object_set_new(doc, "store", json_string(c->store)) != 0 ||
	    json_object_set_new(doc, "original_ids", cli_id_array(orig, n)) != 0 ||
	    json_object_set_new(doc, "nodes", cli_id_array(ids, n)) != 0) {
		rc = print_json_failed();
		goto out;
	}
	*out = doc;
	doc = NULL;
out:
	json_decref(doc);
	gnn_client_close(cl);
	free(orig);
	free(ids);
	return rc;
}

/* Sends a LINK request and decodes the reply into *r (its arrays point
 * into *reply, the caller's: nng_msg_free), checking its op. */
static int link_call(struct gnn_client *cl, const char *url, const struct gnn_link_req *lr, nng_msg **reply,
		     struct gnn_link_resp *r)
{
	struct gnn_wbuf req;
	const void *payload;
	size_t len;
	int rc;

	gnn_wbuf_init(&req);
	if ((rc = gnn_encode_link_req(&req, next_req_id++, lr)) != GNN_OK) {
		cli_error("cannot build the link request: %s", gnn_strerror(rc));
		goto out;
	}
	if ((rc = call(cl, url, &req, GNN_MSG_LINK_RESP, reply, &payload, &len)) != GNN_OK)
		goto out;
	if ((rc = gnn_decode_link_resp(payload, len, r)) != GNN_OK || r->op != lr->op ||
	    (lr->op == GNN_LINK_TOPK ? r->n > lr->k : r->n != lr->n))
		rc = bad_reply(url, "the reply does not answer the link request", rc ? rc : GNN_EPROTO);
out:
	gnn_wbuf_free(&req);
	return rc;
}

/* SCORE: pairs of a store's own nodes, or any pairs through a sampler;
 * with --type, pairs of original IDs of that type (a LOOKUP first). */
int cli_cmd_score(const struct cli_config *c, json_t **out)
{
	struct gnn_client *cl = NULL;
	struct gnn_link_resp r = { 0 };
	nng_msg *reply = NULL;
	const char *url, *opt;
	int64_t *ids = NULL, *given = NULL;
	uint32_t n;
	int rc;

	if ((rc = pick_target(c, &url, &opt)) != GNN_OK || (rc = cli_parse_pairs(c->pairs, "--pairs", &given, &n)) != GNN_OK ||
	    (rc = connect_to(c, url, opt, &cl)) != GNN_OK)
		goto out;
	if ((rc = global_ids(c, cl, url, &given, 2 * n, &ids)) != GNN_OK)
		goto out;
	if ((rc = link_call(cl, url, &(struct gnn_link_req){ .op = GNN_LINK_SCORE, .n = n, .ids = ids, .node = -1 },
			    &reply, &r)) != GNN_OK)
		goto out;
	if ((*out = cli_score_json(ids, &r)) == NULL)
		rc = print_json_failed();
out:
	gnn_proto_release(r.owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_client_close(cl);
	free(ids);
	free(given);
	return rc;
}

/* TOPK: the --k best-scoring nodes for --node, of every store through a
 * sampler (the node itself excluded), or of one store's partition. */
int cli_cmd_topk(const struct cli_config *c, json_t **out)
{
	struct gnn_link_req lr = { .op = GNN_LINK_TOPK, .k = (uint32_t)c->k, .node = c->node,
				   .node_type = GNN_LINK_ANY_TYPE };
	struct gnn_client *cl = NULL;
	struct gnn_link_resp r = { 0 };
	nng_msg *reply = NULL;
	const char *url, *opt;
	int64_t *excl = NULL;
	int rc;

	if (c->node < 0) {
		cli_error("--node N is required: the global ID of the node to find links for");
		return GNN_EINVAL;
	}
	if ((rc = pick_target(c, &url, &opt)) != GNN_OK ||
	    (c->exclude != NULL && (rc = cli_parse_ids(c->exclude, "--exclude", &excl, &lr.n)) != GNN_OK) ||
	    (rc = connect_to(c, url, opt, &cl)) != GNN_OK ||
	    (c->candidate_type != NULL && (rc = type_index(cl, url, "--candidate-type", c->candidate_type, &lr.node_type)) != GNN_OK))
		goto out;
	if (lr.n > GNN_PROTO_MAX_LINK_EXCL) {
		cli_error("--exclude: %u nodes; at most %d", (unsigned)lr.n, GNN_PROTO_MAX_LINK_EXCL);
		rc = GNN_EINVAL;
		goto out;
	}
	lr.ids = excl;
	if ((rc = link_call(cl, url, &lr, &reply, &r)) != GNN_OK)
		goto out;
	if ((*out = cli_topk_json(c->node, lr.k, &r)) == NULL)
		rc = print_json_failed();
out:
	gnn_proto_release(r.owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_client_close(cl);
	free(excl);
	return rc;
}
