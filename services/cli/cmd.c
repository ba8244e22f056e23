/* cmd.c - gnn-cli's commands: build one request (or a series, for nodes),
 * call the graph store or sampler with a timeout and bounded retries
 * (client.h), check the reply completely and convert it to JSON. info and
 * nodes ask a graph store (--store: its partition) or a sampler
 * (--sampler: the whole graph), which answer the same messages.
 *
 * Every command takes one path, cli_cmd_run: its options that need no
 * server, the target, its ID list, the connection, the INFO handshake when
 * it needs the graph's schema, then its body (its requests, their checks
 * and its JSON), then the clean-up. A command is a row of that path
 * (struct cli_cmd) and its body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "cli.h"
#include "client.h"
#include "err.h"
#include "fanouts.h"
#include "part.h"

/* Request IDs only have to differ between the requests of one socket. */
static uint64_t next_req_id = 1;

/* One run of a command: what the common path sets up for its body and
 * holds until the end. */
struct job {
	const struct cli_config *c;
	const char *url, *opt;        /* the target and its option: "--store" or "--sampler" */
	struct gnn_client *cl;
	struct gnn_info info;         /* with the INFO handshake: the target's (its layout a copy, owned) */
	int64_t *ids;                 /* the command's ID list (pairs: 2 n IDs), owned; NULL: none given */
	uint32_t n;                   /* its IDs (pairs: its pairs) */
	char **names;                 /* --ids-file: the user's IDs of ids, owned; else NULL */
	int64_t *looked_up;           /* --type: the global IDs of ids, owned */
	const int64_t *global;        /* ids as global IDs: looked_up, or ids itself */
	struct gnn_wbuf req;          /* the request being built (request()) */
	nng_msg *reply;               /* the last reply; payload, len point into it */
	const void *payload;
	size_t len;
	void *owned;                  /* what the last reply's decoder allocated (gnn_proto_release) */
};

enum target { STORE = 0, SAMPLER, STORE_OR_SAMPLER };
enum id_list { NO_LIST = 0, NODES, SEEDS, PAIRS, EXCLUDE };   /* EXCLUDE: optional */
enum info { NO_INFO = 0, WITH_INFO, INFO_FOR_TYPES };         /* INFO_FOR_TYPES: with --type or --candidate-type */

/* A command, in the order cli_cmd_run takes its steps. */
struct cli_cmd {
	int (*check)(const struct cli_config *c);   /* options that need no server; NULL: none */
	enum target target;
	enum id_list list;
	enum info info;
	/* Its requests and its document: on GNN_OK *out is the document,
	 * or NULL when memory ran out building it. Errors are printed. */
	int (*body)(struct job *j, json_t **out);
};

/* ---- the common path ---- */

static int print_json_failed(void)
{
	cli_error("out of memory building the output");
	return GNN_ENOMEM;
}

static int bad_reply(const char *url, const char *what, int rc)
{
	cli_error("malformed reply from %s: %s (%s)", url, what, gnn_errname(rc));
	return rc ? rc : GNN_EPROTO;
}

/* The decoder's rc, and whether the decoded reply answers the request:
 * GNN_OK, or the error printed naming what. */
static int checked(const struct job *j, int rc, bool answers, const char *what)
{
	if (rc != GNN_OK || !answers)
		return bad_reply(j->url, what, rc ? rc : GNN_EPROTO);
	return GNN_OK;
}

/* The target of the command into j->url and j->opt. info, nodes, ...
 * ask either one: neither or both is bad usage. */
static int pick_target(enum target target, struct job *j)
{
	const struct cli_config *c = j->c;

	if (target == STORE_OR_SAMPLER && (c->store == NULL) == (c->sampler == NULL)) {
		cli_error("give either --store URL (a graph store: its partition) or --sampler URL (a sampler: the "
			  "whole graph)%s", c->store != NULL ? ", not both" : ", e.g. --store tcp://127.0.0.1:7000");
		return GNN_EINVAL;
	}
	if (target == SAMPLER || (target == STORE_OR_SAMPLER && c->store == NULL)) {
		j->url = c->sampler;
		j->opt = "--sampler";
	} else {
		j->url = c->store;
		j->opt = "--store";
	}
	return GNN_OK;
}

/* The command's ID list into j->ids, j->n. */
static int parse_id_list(enum id_list list, struct job *j)
{
	const struct cli_config *c = j->c;

	switch (list) {
	case NODES:
		if (c->ids_file != NULL && c->type == NULL) {
			cli_error("--ids-file needs --type: the node type whose IDs it lists");
			return GNN_EINVAL;
		}
		if (c->ids_file != NULL)
			return cli_parse_names(c->nodes, "--nodes", c->ids_file, &j->ids, &j->names, &j->n);
		return cli_parse_ids(c->nodes, "--nodes", &j->ids, &j->n);
	case SEEDS:
		return cli_parse_ids(c->seeds, "--seeds", &j->ids, &j->n);
	case PAIRS:
		return cli_parse_pairs(c->pairs, "--pairs", &j->ids, &j->n);
	case EXCLUDE:
		return c->exclude != NULL ? cli_parse_ids(c->exclude, "--exclude", &j->ids, &j->n) : GNN_OK;
	default:
		return GNN_OK;
	}
}

static int connect_to(struct job *j)
{
	const struct cli_config *c = j->c;
	struct gnn_client_opts o = { .url = j->url, .name = strcmp(j->opt, "--sampler") == 0 ? "sampler" : "graphstore",
				     .timeout_ms = (int)c->timeout_ms,
				     .retries = (int)c->retries };
	int rc;

	if (j->url == NULL) {
		cli_error("%s URL is required, e.g. %s tcp://127.0.0.1:7000", j->opt, j->opt);
		return GNN_EINVAL;
	}
	if ((rc = gnn_client_open(&o, &j->cl)) != GNN_OK)
		cli_error("cannot use %s \"%s\": %s (expected an nng URL such as tcp://HOST:PORT)", j->opt, j->url,
			  gnn_strerror(rc));
	return rc;
}

/* j->req emptied for the next request. */
static struct gnn_wbuf *request(struct job *j)
{
	j->req.len = 0;
	return &j->req;
}

/* Drops the last reply and what was decoded from it. */
static void drop_reply(struct job *j)
{
	gnn_proto_release(j->owned);
	j->owned = NULL;
	if (j->reply != NULL)
		nng_msg_free(j->reply);
	j->reply = NULL;
}

/* Sends j->req, waits for the reply and checks that it is a want_type
 * message: j->reply then holds j->payload, j->len (the previous reply and
 * its decoded parts are gone). */
static int exchange(struct job *j, uint16_t want_type)
{
	char why[512] = "";
	uint16_t op;
	int rc;

	drop_reply(j);
	if (j->req.failed) {
		cli_error("out of memory building the request");
		return GNN_ENOMEM;
	}
	memcpy(&op, j->req.buf + 6, 2);
	rc = gnn_client_call(j->cl, &j->req, &j->reply, why, sizeof(why));
	if (rc == GNN_ETIMEDOUT) {
		cli_error("%s request to %s failed: %s (is the service running there, %s? see --timeout-ms, --retries)",
			  gnn_msg_name(op), j->url, why, gnn_tls_data_plane() != NULL ?
			  "with TLS, its certificate of the same CA as ours and naming the host dialled (docs/security.md)" :
			  "without TLS (a service with --tls-* refuses plain connections)");
		return rc;
	}
	if (rc != GNN_OK) {
		/* An error reply's text comes as "PEER: text": the URL says which peer. */
		const char *text = why, *colon = strstr(why, ": ");

		if (colon != NULL && strncmp(why, gnn_client_name(j->cl), (size_t)(colon - why)) == 0)
			text = colon + 2;
		cli_error("%s request to %s failed: %s: %s", gnn_msg_name(op), j->url, gnn_errname(rc), text);
		return rc;
	}
	if ((rc = gnn_reply_payload(j->reply, want_type, &j->payload, &j->len)) != GNN_OK) {
		cli_error("%s request to %s: the reply is not a %s message", gnn_msg_name(op), j->url,
			  gnn_msg_name(want_type));
		drop_reply(j);
	}
	return rc;
}

/* The INFO handshake: the target's graph into j->info, whose layout is
 * then a copy (the reply it was decoded from goes with the next one). */
static int fetch_info(struct job *j)
{
	struct gnn_info got = { 0 };
	int rc;

	gnn_encode_info_req(request(j), next_req_id++);
	if ((rc = exchange(j, GNN_MSG_INFO_RESP)) != GNN_OK)
		return rc;
	if ((rc = gnn_decode_info_resp(j->payload, j->len, &got)) != GNN_OK)
		return bad_reply(j->url, "INFO", rc);
	j->info = got;
	j->info.owned = NULL;
	if ((rc = gnn_layout_dup(&got.layout, &j->info.layout)) != GNN_OK)
		memset(&j->info.layout, 0, sizeof(j->info.layout));
	gnn_proto_release(got.owned);
	return rc;
}

static bool needs_info(enum info info, const struct cli_config *c)
{
	return info == WITH_INFO || (info == INFO_FOR_TYPES && (c->type != NULL || c->candidate_type != NULL));
}

static void job_free(struct job *j)
{
	drop_reply(j);
	gnn_wbuf_free(&j->req);
	gnn_layout_free(&j->info.layout);
	gnn_client_close(j->cl);
	cli_free_names(j->names, j->n);
	free(j->ids);
	free(j->looked_up);
}

int cli_cmd_run(const struct cli_cmd *cmd, const struct cli_config *c, json_t **out)
{
	struct job j = { .c = c };
	int rc;

	*out = NULL;
	gnn_wbuf_init(&j.req);
	if ((cmd->check != NULL && (rc = cmd->check(c)) != GNN_OK) || (rc = pick_target(cmd->target, &j)) != GNN_OK ||
	    (rc = parse_id_list(cmd->list, &j)) != GNN_OK || (rc = connect_to(&j)) != GNN_OK ||
	    (needs_info(cmd->info, c) && (rc = fetch_info(&j)) != GNN_OK))
		goto out;
	if ((rc = cmd->body(&j, out)) == GNN_OK && *out == NULL)
		rc = print_json_failed();
out:
	job_free(&j);
	return rc;
}

/* ---- what commands share: node types, original IDs, LINK ---- */

/* NAME's index in the target's schema (INFO); what names the option. */
static int type_index(const struct job *j, const char *what, const char *name, uint32_t *t)
{
	const struct gnn_schema *s = j->info.layout.schema;
	int32_t k = gnn_schema_type(s, name);
	char names[512];
	size_t used = 0;

	*t = k < 0 ? 0 : (uint32_t)k;
	if (k >= 0)
		return GNN_OK;
	names[0] = '\0';
	for (uint32_t i = 0; i < s->num_types && used + 1 < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", s->types[i].name);
	cli_error("%s %s: not a node type of the graph (%s)", what, name, names);
	return GNN_EINVAL;
}

/* LOOKUP of the count IDs of j->ids, original IDs of type --type, into
 * j->looked_up and j->global: every one must be found (a store answers -1
 * for the nodes of other partitions: an error here). */
static int lookup(struct job *j, uint32_t count)
{
	const struct cli_config *c = j->c;
	struct gnn_ids r = { 0 };
	uint32_t t;
	int rc;

	if ((rc = type_index(j, "--type", c->type, &t)) != GNN_OK)
		return rc;
	gnn_encode_lookup_req(request(j), next_req_id++, t, j->ids, count);
	if ((rc = exchange(j, GNN_MSG_LOOKUP_RESP)) != GNN_OK)
		return rc;
	rc = gnn_decode_ids_req(j->payload, j->len, &r);
	j->owned = r.owned;
	if ((rc = checked(j, rc, r.n == count, "the reply does not hold one ID per original ID")) != GNN_OK)
		return rc;
	for (uint32_t i = 0; i < count; i++)
		if (r.ids[i] < 0) {
			cli_error("%s %lld is not held by %s (a graph store answers for its own partition: ask a sampler "
				  "for the whole graph)", c->type, (long long)j->ids[i], j->url);
			return GNN_ENOENT;
		}
	if ((j->looked_up = malloc((size_t)count * sizeof(*j->looked_up) + 1)) == NULL)
		return GNN_ENOMEM;
	memcpy(j->looked_up, r.ids, (size_t)count * sizeof(*j->looked_up));
	j->global = j->looked_up;
	return GNN_OK;
}

/* j->global: the count IDs given, or with --type the original IDs of
 * type T looked up. */
static int to_global(struct job *j, uint32_t count)
{
	if (j->c->type != NULL)
		return lookup(j, count);
	j->global = j->ids;
	return GNN_OK;
}

/* Sends a LINK request and decodes the reply into *r (its arrays point
 * into j->reply), checking that it answers lr. */
static int link_call(struct job *j, const struct gnn_link_req *lr, struct gnn_link_resp *r)
{
	int rc;

	if ((rc = gnn_encode_link_req(request(j), next_req_id++, lr)) != GNN_OK) {
		cli_error("cannot build the link request: %s", gnn_strerror(rc));
		return rc;
	}
	if ((rc = exchange(j, GNN_MSG_LINK_RESP)) != GNN_OK)
		return rc;
	rc = gnn_decode_link_resp(j->payload, j->len, r);
	j->owned = r->owned;
	return checked(j, rc, r->op == lr->op && (lr->op == GNN_LINK_TOPK ? r->n <= lr->k : r->n == lr->n),
		       "the reply does not answer the link request");
}

/* ---- the commands ---- */

static int info_body(struct job *j, json_t **out)
{
	*out = cli_info_json(j->opt + 2, j->url, &j->info);
	return GNN_OK;
}

static int sample_body(struct job *j, json_t **out)
{
	const struct cli_config *c = j->c;
	const struct gnn_schema *s = j->info.layout.schema;
	int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	struct gnn_sample_resp r = { 0 };
	uint32_t layers;
	int rc;

	if ((rc = cli_parse_fanouts("--fanout", c->fanout, true, s, fanouts, &layers)) != GNN_OK)
		return rc;
	if (!gnn_fanouts_any(fanouts, s->num_rels)) {
		cli_error("--fanout %s samples nothing: give -1 (all neighbours) or 1..%d", c->fanout, GNN_PROTO_MAX_FANOUT);
		return GNN_EINVAL;
	}
	gnn_encode_sample_req(request(j), next_req_id++, (uint64_t)c->seed, s->num_rels, fanouts, j->ids, j->n);
	if ((rc = exchange(j, GNN_MSG_SAMPLE_RESP)) != GNN_OK)
		return rc;
	rc = gnn_decode_sample_resp(j->payload, j->len, &r);
	j->owned = r.owned;
	if ((rc = checked(j, rc, r.n == j->n && r.num_rels == s->num_rels,
			  "SAMPLE reply does not match the request")) != GNN_OK)
		return rc;
	*out = cli_sample_json((uint64_t)c->seed, fanouts, j->ids, &r, s);
	return GNN_OK;
}

/* Sends the ID list as a req_type request; the reply is req_type + 1. */
static int ask_ids(struct job *j, uint16_t req_type, const int64_t *ids)
{
	gnn_encode_ids_req(request(j), req_type, next_req_id++, ids, j->n);
	return exchange(j, (uint16_t)(req_type + 1));
}

/* A decoded FEAT, LABEL or SPLIT reply: n entries, entry(r, i) the i-th as JSON. */
struct rows_reply {
	uint32_t n;
	json_t *(*entry)(const struct rows_reply *r, uint32_t i);
	union {
		struct gnn_feat_resp feat;
		struct gnn_label_resp label;
		struct gnn_split_resp split;
	} u;
};

static json_t *feat_entry(const struct rows_reply *r, uint32_t i)
{
	return cli_feat_row(r->u.feat.rows, r->u.feat.dtype, i, r->u.feat.dim);
}

static json_t *label_entry(const struct rows_reply *r, uint32_t i)
{
	return json_integer(r->u.label.labels[i]);
}

static json_t *split_entry(const struct rows_reply *r, uint32_t i)
{
	return json_string(cli_split_name(r->u.split.codes[i]));
}

/* The reply to a req_type request into *r, and *doc: the document with
 * the command's own keys (features: the rows' width and dtype). */
static int decode_rows(struct job *j, uint16_t req_type, struct rows_reply *r, json_t **doc)
{
	int rc;

	if (req_type == GNN_MSG_FEAT_REQ) {
		if ((rc = gnn_decode_feat_resp(j->payload, j->len, &r->u.feat)) != GNN_OK)
			return rc;
		j->owned = r->u.feat.owned;
		r->n = r->u.feat.n;
		r->entry = feat_entry;
		*doc = json_pack("{s:I, s:s}", "feat_dim", (json_int_t)r->u.feat.dim, "feature_dtype",
				 gnn_dtype_name(r->u.feat.dtype));
	} else if (req_type == GNN_MSG_LABEL_REQ) {
		if ((rc = gnn_decode_label_resp(j->payload, j->len, &r->u.label)) != GNN_OK)
			return rc;
		j->owned = r->u.label.owned;
		r->n = r->u.label.n;
		r->entry = label_entry;
		*doc = json_object();
	} else {
		if ((rc = gnn_decode_split_resp(j->payload, j->len, &r->u.split)) != GNN_OK)
			return rc;
		r->n = r->u.split.n;
		r->entry = split_entry;
		*doc = json_object();
	}
	return GNN_OK;
}

/* features, labels, split: one ID list in, one value or row per ID out,
 * under key. */
static int rows_body(struct job *j, uint16_t req_type, const char *key, json_t **out)
{
	struct rows_reply r = { 0 };
	json_t *vals, *doc = NULL;
	int rc;

	if ((rc = ask_ids(j, req_type, j->ids)) != GNN_OK)
		return rc;
	vals = json_array();
	rc = decode_rows(j, req_type, &r, &doc);
	for (uint32_t i = 0; rc == GNN_OK && vals != NULL && i < r.n && i < j->n; i++)
		json_array_append_new(vals, r.entry(&r, i));
	rc = checked(j, rc, r.n == j->n, "the reply does not hold one entry per requested node");
	if (rc == GNN_OK && doc != NULL && vals != NULL &&
	    json_object_set_new(doc, "nodes", cli_id_array(j->ids, j->n)) == 0 && json_object_set(doc, key, vals) == 0) {
		*out = doc;
		doc = NULL;
	}
	json_decref(doc);
	json_decref(vals);
	return rc;
}

static int features_body(struct job *j, json_t **out)
{
	return rows_body(j, GNN_MSG_FEAT_REQ, "features", out);
}

static int labels_body(struct job *j, json_t **out)
{
	return rows_body(j, GNN_MSG_LABEL_REQ, "labels", out);
}

static int split_body(struct job *j, json_t **out)
{
	return rows_body(j, GNN_MSG_SPLIT_REQ, "split", out);
}

static int nodes_check(const struct cli_config *c)
{
	uint8_t split;

	if (cli_split_code(c->split, &split) != GNN_OK) {
		cli_error("--split is required: train, valid, test or none");
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* Where nodes' paging stands. */
struct pages {
	int64_t cursor, last;
	uint64_t count;
	int pages;
	json_t *ids;
};

/* One NODES page of at most want IDs from p->cursor on, appended to
 * p->ids. The IDs must ascend, at or past the cursor, and the cursor must
 * move on. */
static int nodes_page(struct job *j, uint8_t split, uint64_t want, struct pages *p)
{
	struct gnn_nodes_resp r = { 0 };
	int rc;

	gnn_encode_nodes_req(request(j), next_req_id++, split, (uint32_t)want, p->cursor);
	if ((rc = exchange(j, GNN_MSG_NODES_RESP)) != GNN_OK)
		return rc;
	rc = gnn_decode_nodes_resp(j->payload, j->len, &r);
	if (rc == GNN_OK) {
		j->owned = r.owned;
		for (uint32_t i = 0; i < r.n && rc == GNN_OK; i++) {
			if (r.ids[i] < p->cursor || r.ids[i] <= p->last)
				rc = GNN_EPROTO;
			p->last = r.ids[i];
			json_array_append_new(p->ids, json_integer(r.ids[i]));
		}
		if (r.n > want || (r.next_cursor >= 0 && r.next_cursor <= p->cursor) ||
		    (r.next_cursor >= 0 && r.next_cursor <= p->last))
			rc = GNN_EPROTO;
		p->count += r.n;
		p->cursor = r.next_cursor;
	}
	p->pages++;
	return rc != GNN_OK ? bad_reply(j->url, "NODES reply out of order or not advancing", rc) : GNN_OK;
}

/* Pages through the partition (a sampler: the whole graph, a partition
 * after another): each reply says where to continue. */
static int nodes_body(struct job *j, json_t **out)
{
	const struct cli_config *c = j->c;
	struct pages p = { .cursor = 0, .last = -1, .ids = json_array() };
	uint64_t limit = c->limit > 0 ? (uint64_t)c->limit : UINT64_MAX;
	uint8_t split;
	int rc = GNN_OK;

	if (p.ids == NULL)
		return GNN_OK;   /* out of memory */
	cli_split_code(c->split, &split);
	while (rc == GNN_OK && p.cursor >= 0 && p.count < limit)
		rc = nodes_page(j, split, limit - p.count < (uint64_t)c->page ? limit - p.count : (uint64_t)c->page, &p);
	if (rc == GNN_OK)
		*out = json_pack("{s:s, s:s, s:I, s:I, s:i, s:O}", j->opt + 2, j->url, "split", c->split, "count",
				 (json_int_t)p.count, "next_cursor", (json_int_t)p.cursor, "pages", p.pages, "nodes", p.ids);
	json_decref(p.ids);
	return rc;
}

static int minibatch_body(struct job *j, json_t **out)
{
	const struct cli_config *c = j->c;
	const struct gnn_schema *s = j->info.layout.schema;
	int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	struct gnn_minibatch_req mr = { .num_seeds = j->n, .num_rels = s->num_rels, .fanouts = fanouts,
					.seed = (uint64_t)c->seed, .seeds = j->ids,
					.flags = (c->no_features ? 0 : GNN_MB_FEATURES) | (c->no_labels ? 0 : GNN_MB_LABELS) };
	struct gnn_minibatch mb = { 0 };
	int rc;

	if ((rc = cli_parse_fanouts("--fanouts", c->fanouts, false, s, fanouts, &mr.num_layers)) != GNN_OK)
		return rc;
	gnn_encode_minibatch_req(request(j), next_req_id++, &mr);
	if ((rc = exchange(j, GNN_MSG_MINIBATCH_RESP)) != GNN_OK)
		return rc;
	/* The decoder checks the blocks' structure; the seeds, the shape and
	 * the parts asked for are checked here. */
	rc = gnn_decode_minibatch_resp(j->payload, j->len, &mb);
	j->owned = mb.owned;
	if ((rc = checked(j, rc, rc == GNN_OK && mb.num_layers == mr.num_layers && mb.num_seeds == mr.num_seeds &&
			  mb.flags == mr.flags && mb.num_rels == mr.num_rels && mb.num_types == s->num_types &&
			  memcmp(mb.blocks[mb.num_layers - 1].src_ids, j->ids, (size_t)mr.num_seeds * 8) == 0,
			  "MINIBATCH reply does not match the request")) != GNN_OK)
		return rc;
	*out = cli_minibatch_json(&mr, &mb, s);
	return GNN_OK;
}

static int type_required(const struct cli_config *c)
{
	if (c->type == NULL) {
		cli_error("--type NAME is required: the node type the original IDs are of");
		return GNN_EINVAL;
	}
	return GNN_OK;
}

static int lookup_body(struct job *j, json_t **out)
{
	int rc;

	if ((rc = lookup(j, j->n)) != GNN_OK)
		return rc;
	*out = json_pack("{s:s, s:s, s:o, s:o}", j->opt + 2, j->url, "type", j->c->type, "original_ids",
			 cli_id_array(j->ids, j->n), "nodes", cli_id_array(j->global, j->n));
	return GNN_OK;
}

/* PREDICT: a store's own nodes, or any nodes through a sampler; with
 * --type, nodes given by their original IDs (a LOOKUP first). */
static int predict_body(struct job *j, json_t **out)
{
	struct gnn_predict_resp r = { 0 };
	int rc;

	if ((rc = to_global(j, j->n)) != GNN_OK || (rc = ask_ids(j, GNN_MSG_PREDICT_REQ, j->global)) != GNN_OK)
		return rc;
	rc = gnn_decode_predict_resp(j->payload, j->len, &r);
	j->owned = r.owned;
	if ((rc = checked(j, rc, r.n == j->n, "the reply does not hold one prediction per requested node")) != GNN_OK)
		return rc;
	*out = cli_predict_json(j->global, &r, j->names);
	return GNN_OK;
}

static int embedding_check(const struct cli_config *c)
{
	if (c->type == NULL || c->store == NULL) {
		cli_error("--store URL and --type NAME are required: the graph store that holds the nodes, and their type");
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* The generation and version of the embeddings the store holds (STATUS). */
static int emb_status(struct job *j, struct gnn_emb_resp *sr)
{
	int rc;

	gnn_encode_emb_req(request(j), next_req_id++, &(struct gnn_emb_req){ .op = GNN_EMB_STATUS });
	if ((rc = exchange(j, GNN_MSG_EMB_RESP)) != GNN_OK)
		return rc;
	rc = gnn_decode_emb_resp(j->payload, j->len, sr);
	j->owned = sr->owned;
	if (rc == GNN_OK && sr->gen == 0) {
		cli_error("%s holds no embeddings: no trainer with --embed-dim has set it up since it started", j->url);
		rc = GNN_ENOENT;
	}
	return rc;
}

/* pr's n rows of pr->dim floats as a JSON array of arrays. */
static json_t *emb_rows_json(const struct gnn_emb_resp *pr)
{
	json_t *rows = json_array();

	for (uint32_t i = 0; rows != NULL && i < pr->n; i++) {
		json_t *row = json_array();

		for (uint32_t k = 0; row != NULL && k < pr->dim; k++)
			json_array_append_new(row, json_real(((const float *)pr->data)[(size_t)i * pr->dim + k]));
		json_array_append_new(rows, row);
	}
	return rows;
}

/* The rows of a graph store's learned embeddings (docs/embeddings.md) of
 * the looked-up nodes, of type t: STATUS for the generation and version it
 * holds, then a PULL of them. */
static int embedding_body(struct job *j, json_t **out)
{
	const struct cli_config *c = j->c;
	struct gnn_emb_resp sr = { 0 }, pr = { 0 };
	struct gnn_emb_req pull = { .op = GNN_EMB_PULL, .n = j->n, .array = c->best ? GNN_EMB_BEST_ROWS : GNN_EMB_ROWS };
	char gen[17];
	int rc;

	if ((rc = type_index(j, "--type", c->type, &pull.node_type)) != GNN_OK || (rc = lookup(j, j->n)) != GNN_OK ||
	    (rc = emb_status(j, &sr)) != GNN_OK)
		return rc;
	pull.gen = sr.gen;
	pull.step = sr.version;
	pull.ids = j->global;
	gnn_encode_emb_req(request(j), next_req_id++, &pull);
	if ((rc = exchange(j, GNN_MSG_EMB_RESP)) != GNN_OK)
		return rc;
	rc = gnn_decode_emb_resp(j->payload, j->len, &pr);
	j->owned = pr.owned;
	if ((rc = checked(j, rc, pr.n == j->n, "the reply does not hold one row per requested node")) != GNN_OK)
		return rc;
	snprintf(gen, sizeof(gen), "%016llx", (unsigned long long)sr.gen);
	*out = json_pack("{s:s, s:s, s:I, s:s, s:i, s:o, s:s, s:o, s:o}", "generation", gen, "array",
			 c->best ? "best" : "rows", "version", (json_int_t)sr.version, "type", c->type, "dim", (int)pr.dim,
			 "rows", emb_rows_json(&pr), "store", c->store, "original_ids", cli_id_array(j->ids, j->n),
			 "nodes", cli_id_array(j->global, j->n));
	return GNN_OK;
}

/* SCORE: pairs of a store's own nodes, or any pairs through a sampler;
 * with --type, pairs of original IDs of that type (a LOOKUP first). */
static int score_body(struct job *j, json_t **out)
{
	struct gnn_link_resp r = { 0 };
	int rc;

	if ((rc = to_global(j, 2 * j->n)) != GNN_OK ||
	    (rc = link_call(j, &(struct gnn_link_req){ .op = GNN_LINK_SCORE, .n = j->n, .ids = j->global, .node = -1 },
			    &r)) != GNN_OK)
		return rc;
	*out = cli_score_json(j->global, &r);
	return GNN_OK;
}

static int topk_check(const struct cli_config *c)
{
	if (c->node < 0) {
		cli_error("--node N is required: the global ID of the node to find links for");
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* TOPK: the --k best-scoring nodes for --node, of every store through a
 * sampler (the node itself excluded), or of one store's partition. */
static int topk_body(struct job *j, json_t **out)
{
	const struct cli_config *c = j->c;
	struct gnn_link_req lr = { .op = GNN_LINK_TOPK, .k = (uint32_t)c->k, .node = c->node,
				   .node_type = GNN_LINK_ANY_TYPE, .n = j->n, .ids = j->ids };
	struct gnn_link_resp r = { 0 };
	int rc;

	if (c->candidate_type != NULL && (rc = type_index(j, "--candidate-type", c->candidate_type, &lr.node_type)) != GNN_OK)
		return rc;
	if (lr.n > GNN_PROTO_MAX_LINK_EXCL) {
		cli_error("--exclude: %u nodes; at most %d", (unsigned)lr.n, GNN_PROTO_MAX_LINK_EXCL);
		return GNN_EINVAL;
	}
	if ((rc = link_call(j, &lr, &r)) != GNN_OK)
		return rc;
	*out = cli_topk_json(c->node, lr.k, &r);
	return GNN_OK;
}

/* Each command's path: check, target, ID list, INFO, body (left out: none,
 * a store, no list, no INFO). */
const struct cli_cmd cli_cmd_info = { .target = STORE_OR_SAMPLER, .info = WITH_INFO, .body = info_body };
const struct cli_cmd cli_cmd_sample = { .list = NODES, .info = WITH_INFO, .body = sample_body };
const struct cli_cmd cli_cmd_features = { .list = NODES, .body = features_body };
const struct cli_cmd cli_cmd_labels = { .list = NODES, .body = labels_body };
const struct cli_cmd cli_cmd_split = { .list = NODES, .body = split_body };
const struct cli_cmd cli_cmd_nodes = { .check = nodes_check, .target = STORE_OR_SAMPLER, .body = nodes_body };
const struct cli_cmd cli_cmd_minibatch = { .target = SAMPLER, .list = SEEDS, .info = WITH_INFO, .body = minibatch_body };
const struct cli_cmd cli_cmd_predict = { .target = STORE_OR_SAMPLER, .list = NODES, .info = INFO_FOR_TYPES,
					 .body = predict_body };
const struct cli_cmd cli_cmd_lookup = { .check = type_required, .target = STORE_OR_SAMPLER, .list = NODES,
					.info = INFO_FOR_TYPES, .body = lookup_body };
const struct cli_cmd cli_cmd_embedding = { .check = embedding_check, .list = NODES, .info = INFO_FOR_TYPES,
					   .body = embedding_body };
const struct cli_cmd cli_cmd_score = { .target = STORE_OR_SAMPLER, .list = PAIRS, .info = INFO_FOR_TYPES,
				       .body = score_body };
const struct cli_cmd cli_cmd_topk = { .check = topk_check, .target = STORE_OR_SAMPLER, .list = EXCLUDE,
				      .info = INFO_FOR_TYPES, .body = topk_body };
