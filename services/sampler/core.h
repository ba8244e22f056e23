/* core.h - builds a minibatch (struct gnn_minibatch of proto.h) from seed
 * nodes: multi-hop sampled blocks, the input nodes' features and the seeds'
 * labels (docs/sampler.md); and pages through one split's nodes across the
 * whole graph (NODES).
 *
 * The core does the work that does not depend on where the partitions live:
 * it groups each layer's frontier by owning partition, asks the backend for
 * every partition's share at once, checks every answer and merges the
 * answers into a block. The backend answers per-partition SAMPLE, FEAT,
 * LABEL and NODES calls: the graph stores over nng in the service (store_backend.h), or
 * partitions mapped into this process (local_backend.h) in tests and in the
 * benchmark, so both run exactly this code.
 *
 * Sampling starts at the seeds with layer L-1's fanouts (proto.h's
 * convention: layer 0 is the input layer) and block l is sampled with the
 * seed gnn_sample_layer_seed(req.seed, l). Since the graph stores choose
 * each node's neighbours under relation r with gnn_sample_choose(
 * gnn_sample_rel_seed(layer seed, r), node, ...) and the merge walks the
 * destinations in order, each one's relations in order, the same request
 * gives the same minibatch however its nodes are split among calls. With
 * GNN_MB_EXCLUDE the excluded pairs' edges are then dropped from the
 * answers before a block is built (an order-keeping filter: still
 * deterministic). The
 * input nodes' features are gathered type by type (a FEAT call asks for
 * one type). */
#ifndef SMP_CORE_H
#define SMP_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "part.h"
#include "proto.h"

/* One request to the owner of one partition and, once run, its answer.
 * What it asks is named by the request's message type (proto.h), the one
 * a graph store answers: a forwarded RPC has no name of its own. */
struct smp_call {
	/* Set by the core. ids is borrowed from the core for the call. */
	uint16_t type;            /* GNN_MSG_SAMPLE_REQ, FEAT_REQ, LABEL_REQ, NODES_REQ,
				   * PREDICT_REQ, LOOKUP_REQ or LINK_REQ */
	uint32_t part;
	uint32_t n;
	const int64_t *ids;       /* [n], every one owned by part */
	uint64_t seed;            /* SAMPLE: the layer's seed */
	const int32_t *fanouts;   /* SAMPLE: [num_rels] the layer's, borrowed; not all 0 */
	uint32_t feat_dim;        /* FEAT: the width of the rows (ids are of one type) */
	uint32_t feat_dtype;      /* FEAT: their elements' (the layout's: F32 or F16) */
	uint32_t node_type;       /* LOOKUP: ids are original IDs of nodes of this type */
	uint32_t first;           /* the core's bookkeeping: where ids start in its list */
	uint8_t split;            /* NODES (n = 0, ids unused): the partition's nodes of */
	uint32_t limit;           /*   this split, at most limit (>= 1) of them, */
	int64_t cursor;           /*   from this global ID on, as a NODES_REQ to its store */
	/* Set by the backend's run on success; the memory stays the backend's
	 * until its release. The backend checks the sizes (n answers, feat_dim
	 * columns); the core checks the values. */
	const uint32_t *counts;   /* SAMPLE: [n * num_rels] neighbours per node and relation */
	const int64_t *nbrs;      /* SAMPLE: [total] global IDs, node after node, relation after relation */
	uint64_t total;           /* SAMPLE: sum of counts */
	const void *rows;         /* FEAT: [n * feat_dim] of feat_dtype */
	const int32_t *labels;    /* LABEL: [n] */
	const int64_t *found;     /* NODES: [num_found] node IDs (num_found <= limit);
				   * LOOKUP: [n] global IDs, -1 where the store has none */
	uint32_t num_found;
	int64_t next_cursor;      /* NODES: where the store continues, -1 when done */
	struct gnn_predict_resp predict;  /* PREDICT: the answer (n rows; owned unused) */
	struct gnn_link_req link;         /* LINK: the request sent (ROWS: its ids and n are
					   * the call's; arrays borrowed from the core) */
	struct gnn_link_resp link_resp;   /* LINK: the answer (ROWS: n rows; TOPK: at most k; owned unused) */
	void *keep;               /* the backend's: what the answers point into */
};

struct smp_backend {
	const struct gnn_layout *layout;  /* borrowed; outlives the backend */
	void *ctx;
	/* Runs n calls (concurrently, when it can) and fills their answers.
	 * Returns GNN_OK when every call succeeded; otherwise an error code,
	 * with why (why_len bytes, NUL-terminated) naming the partition's
	 * server and what failed. Called from many threads at once. release
	 * must follow in both cases. */
	int (*run)(void *ctx, struct smp_call *calls, size_t n, char *why, size_t why_len);
	/* Frees what run kept for these calls (safe on calls never run). */
	void (*release)(void *ctx, struct smp_call *calls, size_t n);
	/* Writes a name for partition part's server for error texts:
	 * "graphstore-1 (tcp://...)". */
	void (*describe)(void *ctx, uint32_t part, char *buf, size_t size);
	/* Optional (NULL: always true). Whether layout is filled in yet (and
	 * still true: false again for good once the graph behind it changed);
	 * the other calls may be used only while it returns true. When false,
	 * why (NUL-terminated) says what is awaited or wrong: "waiting for
	 * graph stores: graphstore-1(tcp://...)". Thread-safe. */
	bool (*layout_known)(void *ctx, char *why, size_t why_len);
};

struct smp_build_opts {
	uint32_t max_ids_per_call;  /* a partition's share is split into calls of at
				     * most this many IDs (0: SMP_DEFAULT_IDS_PER_CALL) */
	struct smp_admit *admit;    /* borrowed; NULL: no admission control. A
				     * minibatch with features waits here, once
				     * sampled, until its bytes fit (admit.h) */
};

/* Small enough that a partition's share of a large layer becomes several
 * calls its server handles on several workers at once; large enough that
 * the per-message cost stays small. */
#define SMP_DEFAULT_IDS_PER_CALL 8192

/* A built minibatch: mb's arrays point into the arrays below, all owned by
 * it (mb.owned is NULL). Free with smp_minibatch_free. */
struct smp_minibatch {
	struct gnn_minibatch mb;
	int64_t *src_ids[GNN_PROTO_MAX_LAYERS];
	int32_t *indptr[GNN_PROTO_MAX_LAYERS];
	int32_t *indices[GNN_PROTO_MAX_LAYERS];
	uint8_t *src_types;
	void *feat[GNN_PROTO_MAX_TYPES];
	int32_t *labels;
	uint64_t sampled_edges;   /* edges of all blocks */
	uint64_t excluded_edges;  /* GNN_MB_EXCLUDE: sampled edges dropped as excluded */
	uint64_t feature_bytes;   /* bytes of feat */
	uint64_t wire_bytes;      /* size of the MINIBATCH_RESP payload it encodes to */
};

/* Checks a request against the layout: fanouts for the graph's number of
 * relations, every seed in [0, num_nodes), no seed twice; with
 * GNN_MB_EXCLUDE the exclusion relation below R and every pair's IDs in
 * [0, num_nodes) and of that relation's source and destination types.
 * (The decoder already checked counts, fanouts and flags.)
 * Returns GNN_OK, or GNN_EINVAL / GNN_ENOMEM with why saying which seed
 * or pair. */
int smp_check_request(const struct gnn_layout *l, const struct gnn_minibatch_req *req, char *why,
		      size_t why_len);

/* Builds the minibatch for req (checked with smp_check_request first).
 * On success *out holds it (the caller's: smp_minibatch_free). Errors:
 * the backend's code (its why text names the server), GNN_EPROTO for an
 * answer that breaks the contract (a neighbour ID out of range, more
 * neighbours than the fanout, a label out of range), GNN_ERANGE when the
 * minibatch would not fit one message (GNN_PROTO_MAX_MSG_BYTES) or a block
 * would exceed 2^31-1 edges, GNN_ENOMEM; why says which. *out is written
 * only on success. */
int smp_build(const struct smp_backend *be, const struct smp_build_opts *o,
	      const struct gnn_minibatch_req *req, struct smp_minibatch *out, char *why, size_t why_len);

/* What smp_build_message built. */
struct smp_minibatch_stats {
	uint64_t sampled_edges, feature_bytes, wire_bytes;
	uint64_t excluded_edges;  /* as smp_minibatch's */
	uint32_t input_nodes;     /* blocks[0].num_src */
	uint64_t admitted_bytes;  /* held in opts->admit for the message: the
				   * caller's to smp_admit_release once sent */
};

/* The same minibatch as smp_build, appended to w as one MINIBATCH_RESP
 * message (request ID req_id) byte-identical to what
 * gnn_encode_minibatch_resp makes of smp_build's result, but with the
 * feature rows copied from the answers straight into the message (the
 * largest part of it) instead of through an array of their own. The
 * service and the benchmark use it. On success st (may be NULL) gets the
 * sizes, and with o->admit the bytes still admitted for the message,
 * st->admitted_bytes (released here when st is NULL); on error w is as it was (its failed flag set on GNN_ENOMEM) and
 * why says what failed, as for smp_build. */
int smp_build_message(const struct smp_backend *be, const struct smp_build_opts *o, uint64_t req_id,
		      const struct gnn_minibatch_req *req, struct gnn_wbuf *w, struct smp_minibatch_stats *st,
		      char *why, size_t why_len);

/* Frees the minibatch's arrays. Safe on a zeroed struct. */
void smp_minibatch_free(struct smp_minibatch *m);

/* NODES across the whole graph: req (decoded) is forwarded to the
 * partition owning req->cursor; its answer is checked (IDs ascending,
 * inside that partition, at or after the cursor, at most limit; a
 * next_cursor that moves forward) and appended to w as one NODES_RESP
 * (request ID req_id). When the partition is exhausted and more follow,
 * next_cursor is the next partition's first node, so a client's loop from
 * cursor 0 to -1 visits every partition in ID order. On success *n (may
 * be NULL) gets the number of nodes listed. Errors, with why saying which:
 * GNN_ERANGE for a cursor outside [0, num_nodes), the backend's code (its
 * text names the store), GNN_EPROTO for an answer breaking the contract,
 * GNN_ENOMEM; w is then as it was (its failed flag set on GNN_ENOMEM). */
int smp_nodes_message(const struct smp_backend *be, uint64_t req_id, const struct gnn_nodes_req *req,
		      struct gnn_wbuf *w, uint32_t *n, char *why, size_t why_len);

/* PREDICT through the sampler: the predictions of n nodes anywhere in the
 * graph, asked of their owners (one call per partition, in parallel) and
 * appended to w as one PREDICT_RESP in the order of ids. Every owner must
 * answer with the same params_crc and k (one inference run). On error w
 * is as it was and why says what failed: a node outside the graph
 * (GNN_ERANGE), a store without predictions (its code and text), owners
 * of different runs (GNN_EPROTO). */
int smp_predict_message(const struct smp_backend *be, uint64_t req_id, const int64_t *ids, uint32_t n,
			struct gnn_wbuf *w, char *why, size_t why_len);

/* LINK through the sampler (docs/inference.md, "Link prediction: score
 * and top-k"), for req (decoded):
 *   ROWS   the final embeddings of any nodes, from their owners at once
 *   SCORE  any pairs: both endpoints' rows from their owners at once (with
 *          the decoder), scored here
 *   TOPK   by node: the node's row from its owner, then a TOPK of that
 *          query to every store at once (the node itself and req's
 *          exclusion list excluded), merged into the k best; by query
 *          vector: the TOPK to every store at once
 * Every answer must come from one model (params_crc, decoder, dim,
 * hidden). The reply, one LINK_RESP, is appended to w. On error w is as it
 * was and why says what failed: a node outside the graph (GNN_ERANGE), a
 * store without a link output (its code and text), owners of different
 * models (GNN_EPROTO), GNN_ENOMEM. */
int smp_link_message(const struct smp_backend *be, uint64_t req_id, const struct gnn_link_req *req,
		     struct gnn_wbuf *w, char *why, size_t why_len);

/* LOOKUP through the sampler: the global IDs of n nodes of type
 * node_type known by their original IDs, asked of every store at once
 * (each answers for its partition) and appended to w as one LOOKUP_RESP in
 * the order of orig_ids. Errors, with why saying which: GNN_EINVAL for a
 * type the graph lacks, GNN_ENOENT for an original ID no store holds,
 * GNN_EPROTO for one two stores claim, the backend's code. w is then as
 * it was. */
int smp_lookup_message(const struct smp_backend *be, uint64_t req_id, uint32_t node_type, const int64_t *orig_ids,
		       uint32_t n, struct gnn_wbuf *w, char *why, size_t why_len);

#endif
