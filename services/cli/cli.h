/* cli.h - gnn-cli's commands (docs/cli.md): each sends requests to a graph
 * store or a sampler and turns the checked replies into one JSON document.
 *
 * Parsing helpers and the reply-to-JSON conversions are separate from the
 * network calls so that unit tests can check them without a server. */
#ifndef CLI_H
#define CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "tls.h"

/* Every option of every command (each command's table uses some). */
struct cli_config {
	const char *store, *sampler;      /* nng URLs */
	const char *nodes, *seeds;        /* ID lists: "1,2,3", or @FILE / @- */
	const char *fanouts, *fanout, *split, *type;
	const char *ids_file;             /* --ids-file: --nodes are the user's IDs, looked up in it */
	const char *pairs, *exclude, *candidate_type;  /* score, topk */
	int64_t seed, limit, page, timeout_ms, retries;
	int64_t node, k;                  /* topk */
	bool json, no_features, no_labels, best;
	struct gnn_tls_paths tls;         /* the data plane's (tls.h) */
};

/* Prints "gnn-cli: error: ..." on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a list of node IDs: decimal integers >= 0 separated by commas or
 * white space; text "@FILE" reads them from FILE, "@-" from stdin. At least
 * one, at most GNN_PROTO_MAX_IDS. what names the option in errors
 * ("--nodes"). *ids is malloc'd, the caller frees it; written only on
 * success. Returns GNN_EINVAL (error printed), GNN_EIO or GNN_ENOMEM. */
int cli_parse_ids(const char *text, const char *what, int64_t **ids, uint32_t *n);

/* --ids-file: a list of the user's node IDs (comma-separated; "@FILE" one
 * a line, commas allowed) looked up in ids_file, a graph description's
 * node-ids/TYPE.txt (line i: the type's node i). *ids gets their line
 * numbers (the original IDs, 0-based) and *names copies of them, in the
 * list's order, both the caller's (free, cli_free_names). An ID not in the
 * file is an error (GNN_EINVAL, printed). */
int cli_parse_names(const char *text, const char *what, const char *ids_file, int64_t **ids, char ***names,
		    uint32_t *n);
void cli_free_names(char **names, uint32_t n);

/* The same for a list of node pairs u:v ("1:2,3:4"; at most
 * GNN_PROTO_MAX_LINK_PAIRS): *ids holds 2 *n IDs, u then v. */
int cli_parse_pairs(const char *text, const char *what, int64_t **ids, uint32_t *n);

/* Parses the fanouts of option what ("--fanouts": "10,5", or per relation,
 * fanouts.h; layers 1..GNN_PROTO_MAX_LAYERS, or exactly one when one_layer)
 * and resolves them on schema s into out[layers * num_rels] (layer-major),
 * each -1 (all), 0 (none) or in 1..GNN_PROTO_MAX_FANOUT. Returns GNN_EINVAL
 * (error printed). */
int cli_parse_fanouts(const char *what, const char *text, bool one_layer, const struct gnn_schema *s,
		      int32_t out[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS], uint32_t *n);

/* Split names and codes (GNN_SPLIT_* of part.h): "none", "train", "valid",
 * "test". cli_split_code returns GNN_EINVAL for another name. */
int cli_split_code(const char *name, uint8_t *out);
const char *cli_split_name(uint8_t code);

/* A JSON array of the n IDs (a new reference; NULL when out of memory). */
json_t *cli_id_array(const int64_t *ids, uint64_t n);

/* Reply -> JSON conversions. They return a new reference (NULL when out of
 * memory); the decoded replies are borrowed. */
/* Row i of feature rows of dtype (F32 or F16) and width dim, as a JSON array of numbers. */
json_t *cli_feat_row(const void *rows, uint32_t dtype, size_t i, uint32_t dim);
/* key names the URL's field: "store" or "sampler". A sampler's answer
 * (part_id == num_parts: the whole graph) has no node_start/node_end. */
json_t *cli_info_json(const char *key, const char *url, const struct gnn_info *info);
/* schema: the store's; one relation gives "neighbours" per node, more
 * also "relations" (each neighbour's relation) and "relation_names". */
json_t *cli_sample_json(uint64_t seed, const int32_t *fanouts, const int64_t *ids, const struct gnn_sample_resp *r,
			const struct gnn_schema *schema);
json_t *cli_minibatch_json(const struct gnn_minibatch_req *req, const struct gnn_minibatch *mb,
			   const struct gnn_schema *schema);
/* {"params_crc", "top_k", "predictions": [{"node", "original_id", "class",
 * "top": [{"class", "prob"}, ...]}, ...]} for ids[r->n], each with "id",
 * the user's, when names (--ids-file) is not NULL. */
json_t *cli_predict_json(const int64_t *ids, const struct gnn_predict_resp *r, char *const *names);

/* LINK replies: {"params_crc", "decoder": {"kind", "dim", "hidden"},
 * "scores": [{"src", "dst", "score", "prob"}, ...]} for pairs[2 r->n], and
 * {"node", "k", "params_crc", "decoder", "top": [{"node", "score", "prob"}, ...]}. */
json_t *cli_score_json(const int64_t *pairs, const struct gnn_link_resp *r);
json_t *cli_topk_json(int64_t node, uint32_t k, const struct gnn_link_resp *r);

/* The commands (cmd.c): each is one row of the path cli_cmd_run takes
 * (its options, the connection, the INFO handshake where it needs the
 * schema, its requests, the clean-up) and its own body. */
struct cli_cmd;
extern const struct cli_cmd cli_cmd_info, cli_cmd_sample, cli_cmd_features, cli_cmd_labels, cli_cmd_split,
	cli_cmd_nodes, cli_cmd_minibatch, cli_cmd_predict, cli_cmd_lookup;
/* A graph store's learned embedding rows (or the best epoch's, --best) of
 * nodes of --type given by their original IDs. */
extern const struct cli_cmd cli_cmd_embedding;
/* A link-prediction model's scores of --pairs, and the --k best-scoring
 * nodes for --node (docs/inference.md, "Link prediction"). */
extern const struct cli_cmd cli_cmd_score, cli_cmd_topk;

/* Runs cmd: checks its options, calls the service and on success sets
 * *out to the JSON document to print (a new reference, the caller's;
 * NULL otherwise). On failure the reason is printed and the return value
 * is GNN_EINVAL for bad options or the call's error code. */
int cli_cmd_run(const struct cli_cmd *cmd, const struct cli_config *c, json_t **out);

#endif
