/* proto.h - gnn-dist's wire protocol (docs/protocol.md): binary,
 * little-endian, versioned messages carried over nng req/rep sockets between
 * trainers, samplers and graph stores.
 *
 * Every message is a 28-byte header followed by a payload:
 *
 *   off size field
 *     0    4 magic "GNNP"
 *     4    2 version (GNN_PROTO_VERSION)
 *     6    2 type (enum gnn_msg_type)
 *     8    8 request ID (echoed in the reply)
 *    16    4 payload length in bytes
 *    20    4 status: 0 in requests and replies, a GNN_E* code in GNN_MSG_ERROR
 *    24    4 reserved, zero
 *
 * Payload arrays start at 8-byte aligned offsets from the start of the
 * payload (padding is zero). nng's REQ and REP protocols strip a 4-byte
 * request ID from the front of every received message, which leaves the
 * body at 4 (mod 8); the 28-byte header puts the payload back on an 8-byte
 * boundary, so a reply can be used in place. Decoders check
 * every length against the buffer and every count against the limits below
 * and return GNN_EPROTO (malformed), GNN_EVERSION or GNN_ERANGE (over a
 * limit); range checks of node IDs against a partition are the service's.
 * Decoded structs point into the message buffer (borrowed: valid while the
 * buffer is) unless an array was misaligned in memory, in which case the
 * decoder copied it into the struct's `owned` block: free it with
 * gnn_proto_release(). */
#ifndef GNN_PROTO_H
#define GNN_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "buf.h"
#include "layout.h"

#define GNN_PROTO_MAGIC 0x504e4e47u /* "GNNP" little-endian */
/* 2: node types and relations (INFO's schema, per-relation SAMPLE and
 * MINIBATCH fanouts, typed minibatches). 3: feature rows of f32 or f16
 * (INFO's, FEAT_RESP's and MINIBATCH_RESP's feature dtype). */
#define GNN_PROTO_VERSION 3
#define GNN_PROTO_HDR_BYTES 28
/* The bytes a socket receives beyond a message: its header and the
 * request ID nng's REQ and REP put before it on the wire, which nng's
 * receive limit (NNG_OPT_RECVMAXSZ) counts. */
#define GNN_PROTO_WIRE_BYTES(payload) ((size_t)(payload) + GNN_PROTO_HDR_BYTES + 4)

/* Limits every decoder enforces (a request over them gets GNN_ERANGE). */
#define GNN_PROTO_MAX_IDS (1 << 22)       /* node IDs in one request */
#define GNN_PROTO_MAX_FANOUT 4096         /* per node and relation; -1 all neighbours, 0 none (see SAMPLE_REQ) */
#define GNN_PROTO_MAX_LAYERS 8
#define GNN_PROTO_MAX_FEAT_DIM 65536
#define GNN_PROTO_MAX_PARTS 65536
#define GNN_PROTO_MAX_MSG_BYTES (1u << 30) /* also the clients' and graph stores' receive limit */
/* The largest request but EMB_REQ's (whose rows come with INIT's widths):
 * 2^22 IDs or seeds and MINIBATCH_REQ's 8 x 256 fanouts, with room to
 * spare. A sampler's receive limit (docs/protocol.md, "Limits"). */
#define GNN_PROTO_MAX_REQ_BYTES ((uint64_t)GNN_PROTO_MAX_IDS * 8 + 65536)
#define GNN_PROTO_MAX_ERROR_TEXT 1024
#define GNN_PROTO_MAX_TOP_K 64            /* classes per node in PREDICT_RESP */
#define GNN_PROTO_MAX_TYPES GNN_MAX_TYPES /* node types (layout.h) */
#define GNN_PROTO_MAX_RELS GNN_MAX_RELS   /* relations (layout.h) */

enum gnn_msg_type {
	GNN_MSG_ERROR = 1,          /* reply: status + UTF-8 text */
	GNN_MSG_INFO_REQ = 2,       /* graph store: partition and layout; sampler: the whole graph's layout */
	GNN_MSG_INFO_RESP = 3,
	GNN_MSG_SAMPLE_REQ = 4,     /* graph store: sample in-neighbours of owned nodes */
	GNN_MSG_SAMPLE_RESP = 5,
	GNN_MSG_FEAT_REQ = 6,       /* graph store: feature rows of owned nodes */
	GNN_MSG_FEAT_RESP = 7,
	GNN_MSG_LABEL_REQ = 8,      /* graph store: labels of owned nodes */
	GNN_MSG_LABEL_RESP = 9,
	GNN_MSG_SPLIT_REQ = 10,     /* graph store: split codes of owned nodes */
	GNN_MSG_SPLIT_RESP = 11,
	GNN_MSG_NODES_REQ = 12,     /* graph store: list owned nodes of one split, paged;
				     * sampler: the same across the whole graph */
	GNN_MSG_NODES_RESP = 13,
	GNN_MSG_MINIBATCH_REQ = 14, /* sampler: build a minibatch */
	GNN_MSG_MINIBATCH_RESP = 15,
	GNN_MSG_PREDICT_REQ = 16,   /* graph store: the predictions of owned nodes (gnn-trainer infer's);
				     * sampler: of any nodes, asking their owners */
	GNN_MSG_PREDICT_RESP = 17,
	GNN_MSG_LOOKUP_REQ = 18,    /* graph store: global IDs of original per-type IDs in its partition;
				     * sampler: in the whole graph */
	GNN_MSG_LOOKUP_RESP = 19,
	GNN_MSG_EMB_REQ = 20,       /* graph store: the learnable embeddings of owned nodes (EMB below) */
	GNN_MSG_EMB_RESP = 21,
	GNN_MSG_LINK_REQ = 22,      /* graph store: link prediction's rows, scores and top-k over its partition;
				     * sampler: the same over the whole graph (LINK below) */
	GNN_MSG_LINK_RESP = 23,
	GNN_MSG_TYPE_COUNT
};

/* Name of a message type for logs and metrics labels ("unknown" otherwise). */
const char *gnn_msg_name(uint16_t type);

struct gnn_hdr {
	uint16_t version;
	uint16_t type;
	uint64_t req_id;
	uint32_t len;     /* payload bytes */
	uint32_t status;
};

/* Decodes and checks the header of a received message of len bytes: magic,
 * version, type known, reserved word zero, payload length equal to
 * len - 28 and within the limit. On success *payload points at the payload (borrowed). */
int gnn_proto_decode_hdr(const void *msg, size_t len, struct gnn_hdr *h, const void **payload);

/* ---- messages ----
 * Each encoder appends one whole message (header included) to w and returns
 * GNN_ENOMEM if the buffer could not grow. Each decoder reads a payload of
 * len bytes (from gnn_proto_decode_hdr) into its struct. */

/* ERROR: status is a GNN_E* code; text is a human-readable reason naming
 * what failed (e.g. the unreachable graph store), cut to 1024 bytes. */
int gnn_encode_error(struct gnn_wbuf *w, uint64_t req_id, uint32_t status, const char *text);
/* text points into the payload and is NOT NUL-terminated: text_len bytes. */
struct gnn_error_msg {
	uint32_t status;
	const char *text;
	uint32_t text_len;
};
int gnn_decode_error(const struct gnn_hdr *h, const void *payload, struct gnn_error_msg *out);

/* INFO_REQ has an empty payload. */
int gnn_encode_info_req(struct gnn_wbuf *w, uint64_t req_id);

struct gnn_info {
	uint32_t part_id;           /* a graph store's partition, below num_parts; a sampler
				     * answers num_parts: the whole graph, no one partition */
	struct gnn_layout layout;   /* the whole graph's, schema and type ranges included;
				     * graph_id identifies the partition output (a hash of its
				     * node map, sizes and file CRCs): every graph store of one
				     * graph sends the same */
	int64_t part_edges;         /* edges stored in this partition (a sampler: num_edges) */
	void *owned;                /* the decoder's: it holds the decoded schema */
};
int gnn_encode_info_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_info *in);
/* Also checks the offsets: 0, strictly increasing, ending at num_nodes,
 * part_id <= num_parts (so offsets[part_id + 1] exists only when
 * part_id < num_parts: callers indexing by part_id check that first), and
 * the schema and type ranges (gnn_layout_check). layout.schema always
 * points into out->owned: release it with gnn_proto_release. */
int gnn_decode_info_resp(const void *payload, size_t len, struct gnn_info *out);

/* A list of node IDs: FEAT_REQ, LABEL_REQ and SPLIT_REQ carry only this. */
struct gnn_ids {
	uint32_t n;
	const int64_t *ids;
	void *owned;
};
int gnn_encode_ids_req(struct gnn_wbuf *w, uint16_t type, uint64_t req_id, const int64_t *ids,
		       uint32_t n);
int gnn_decode_ids_req(const void *payload, size_t len, struct gnn_ids *out);

/* SAMPLE_REQ: for each node and each of the graph's num_rels relations,
 * up to fanouts[r] of its in-neighbours under relation r, uniformly
 * without replacement (all of them when there are at most that many, or
 * fanouts[r] is -1; none when it is 0). The choice for node v under
 * relation r depends only on (gnn_sample_rel_seed(seed, r), v, fanout),
 * see sample.h, so a request can be split or retried. */
struct gnn_sample_req {
	uint64_t seed;
	uint32_t num_rels;        /* 1..GNN_PROTO_MAX_RELS: the graph's */
	uint32_t n;
	const int32_t *fanouts;   /* [num_rels]: each -1, 0 or 1..GNN_PROTO_MAX_FANOUT, not all 0 */
	const int64_t *ids;
	void *owned;
};
int gnn_encode_sample_req(struct gnn_wbuf *w, uint64_t req_id, uint64_t seed, uint32_t num_rels,
			  const int32_t *fanouts, const int64_t *ids, uint32_t n);
int gnn_decode_sample_req(const void *payload, size_t len, struct gnn_sample_req *out);

/* SAMPLE_RESP: counts[i R + r] neighbours of ids[i] under relation r,
 * concatenated in nbrs node after node, relation after relation. */
struct gnn_sample_resp {
	uint32_t n, num_rels;
	uint64_t total;           /* sum of counts */
	const uint32_t *counts;   /* [n * num_rels] */
	const int64_t *nbrs;      /* [total], global IDs */
	void *owned;
};
int gnn_encode_sample_resp(struct gnn_wbuf *w, uint64_t req_id, const uint32_t *counts, uint32_t n,
			   uint32_t num_rels, const int64_t *nbrs, uint64_t total);
/* Checks that the counts add up to total and the arrays fit. */
int gnn_decode_sample_resp(const void *payload, size_t len, struct gnn_sample_resp *out);

/* FEAT calls carry fewer IDs when rows are wide: about this many bytes of
 * answer each (below glibc's largest mmap threshold, so answer buffers are
 * reused rather than mapped and zeroed for every call). The sampler and
 * the trainers split their FEAT calls so. */
#define GNN_FEAT_CALL_BYTES (4u << 20)

/* FEAT_REQ asks for rows of nodes of one type (a graph store refuses a
 * mix, or a type without features); FEAT_RESP: n rows of dim elements of
 * dtype (GNN_DT_F32 or GNN_DT_F16 of arr.h: the graph's, as stored), dim
 * being that type's feature width. */
struct gnn_feat_resp {
	uint32_t n, dim, dtype;
	const void *rows;         /* [n * dim] of dtype */
	void *owned;
};
int gnn_encode_feat_resp(struct gnn_wbuf *w, uint64_t req_id, uint32_t dtype, const void *rows, uint32_t n,
			 uint32_t dim);
/* The same message with the n x dim rows left for the caller to write at
 * *rows (valid until w changes): a store gathers its rows in place. */
int gnn_encode_feat_resp_in_place(struct gnn_wbuf *w, uint64_t req_id, uint32_t dtype, uint32_t n, uint32_t dim,
				  void **rows);
/* Also checks the dtype (GNN_ERANGE). */
int gnn_decode_feat_resp(const void *payload, size_t len, struct gnn_feat_resp *out);

/* LABEL_RESP: n int32 labels (-1 = unlabeled). */
struct gnn_label_resp {
	uint32_t n;
	const int32_t *labels;
	void *owned;
};
int gnn_encode_label_resp(struct gnn_wbuf *w, uint64_t req_id, const int32_t *labels, uint32_t n);
int gnn_decode_label_resp(const void *payload, size_t len, struct gnn_label_resp *out);

/* SPLIT_RESP: n split codes (GNN_SPLIT_* of part.h). */
struct gnn_split_resp {
	uint32_t n;
	const uint8_t *codes;
};
int gnn_encode_split_resp(struct gnn_wbuf *w, uint64_t req_id, const uint8_t *codes, uint32_t n);
int gnn_decode_split_resp(const void *payload, size_t len, struct gnn_split_resp *out);

/* PREDICT_REQ is an ids request (gnn_encode_ids_req). PREDICT_RESP: for
 * each requested node, in order, its original ID (node-map), predicted
 * class and the k most likely classes with their probabilities, most
 * likely first; params_crc names the parameters that made them. */
struct gnn_predict_resp {
	uint32_t n, k, params_crc;
	const int64_t *orig_ids;  /* [n] */
	const int32_t *pred;      /* [n] */
	const int32_t *classes;   /* [n * k] */
	const float *probs;       /* [n * k] */
	void *owned;
};
int gnn_encode_predict_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_predict_resp *p);
/* Checks n against GNN_PROTO_MAX_IDS, k in [1, GNN_PROTO_MAX_TOP_K] and
 * that the arrays fill the payload exactly (values are the sender's). */
int gnn_decode_predict_resp(const void *payload, size_t len, struct gnn_predict_resp *out);

/* LOOKUP_REQ: the global IDs of nodes of type node_type known by their
 * original IDs (the input's per-type IDs, node-map.arr's values). Its
 * payload is an ID list whose second word is the type. LOOKUP_RESP is an
 * ID list (gnn_encode_ids_req / gnn_decode_ids_req with that type): ids[i]
 * is the global ID of orig_ids[i], or -1 where a graph store does not
 * hold it (a sampler answers every one or an ERROR). */
struct gnn_lookup_req {
	uint32_t n, node_type;    /* node_type < GNN_PROTO_MAX_TYPES */
	const int64_t *orig_ids;
	void *owned;
};
int gnn_encode_lookup_req(struct gnn_wbuf *w, uint64_t req_id, uint32_t node_type, const int64_t *orig_ids,
			  uint32_t n);
int gnn_decode_lookup_req(const void *payload, size_t len, struct gnn_lookup_req *out);

/* NODES_REQ: up to limit owned nodes whose split code is split, in ID order,
 * starting at global ID cursor (use the partition's node_start, or 0, first).
 * Sent to a sampler it lists the whole graph: cursor must lie in
 * [0, num_nodes), and a page never crosses a partition boundary (it ends
 * with next_cursor = the next partition's first node), so a client loops
 * "cursor = 0; while (cursor != -1) ..." over the whole graph. */
struct gnn_nodes_req {
	uint8_t split;
	uint32_t limit;
	int64_t cursor;
};
int gnn_encode_nodes_req(struct gnn_wbuf *w, uint64_t req_id, uint8_t split, uint32_t limit,
			 int64_t cursor);
int gnn_decode_nodes_req(const void *payload, size_t len, struct gnn_nodes_req *out);

/* NODES_RESP: the nodes found and where to continue (-1 when done). */
struct gnn_nodes_resp {
	uint32_t n;
	int64_t next_cursor;
	const int64_t *ids;
	void *owned;
};
int gnn_encode_nodes_resp(struct gnn_wbuf *w, uint64_t req_id, const int64_t *ids, uint32_t n,
			  int64_t next_cursor);
int gnn_decode_nodes_resp(const void *payload, size_t len, struct gnn_nodes_resp *out);

/* MINIBATCH_REQ: seed nodes (global IDs) and, for each layer in model
 * order, one fanout per relation: fanouts[l R + r] is layer l's for
 * relation r. fanouts[0 .. R) belong to the first (input) layer, the last
 * R to the layer producing the seeds' outputs, as DGL's
 * NeighborSampler([15, 10, 5]); sampling therefore starts at the seeds
 * with layer L-1's. Each fanout is 1..GNN_PROTO_MAX_FANOUT, -1 (all
 * neighbours) or 0 (none); a layer whose fanouts are all 0 has a block
 * with num_src == num_dst and no edges (a features-only model).
 *
 * GNN_MB_EXCLUDE (link prediction, DGL's exclude='reverse_id'): excl holds
 * num_excl pairs (u, v) of relation excl_rel; every block then lacks the
 * edges u -> v and v -> u of excl_rel and of its reverse relation
 * (gnn_schema_reverse) between them. Without the flag the three excl
 * fields must be zero and the message is the one without them (byte for
 * byte). The encoder borrows excl like fanouts and seeds (the caller's,
 * read during the call only); a decoded excl points into the payload. The
 * decoder checks the count (at most GNN_PROTO_MAX_EXCL_PAIRS) and that the
 * request fits GNN_PROTO_MAX_REQ_BYTES; the relation, the IDs and their
 * types are the sampler's to check (smp_check_request). */
enum { GNN_MB_FEATURES = 1, GNN_MB_LABELS = 2, GNN_MB_EXCLUDE = 4 };
#define GNN_MB_FLAGS_KNOWN (GNN_MB_FEATURES | GNN_MB_LABELS | GNN_MB_EXCLUDE)
/* Pairs in one exclusion list: their 2 x 2^21 IDs are the 2^22 of any ID
 * list (and seeds plus pairs must fit GNN_PROTO_MAX_REQ_BYTES). */
#define GNN_PROTO_MAX_EXCL_PAIRS (1 << 21)
struct gnn_minibatch_req {
	uint64_t seed;
	uint32_t flags;           /* GNN_MB_* */
	uint32_t num_layers;
	uint32_t num_rels;        /* the graph's relations, 1..GNN_PROTO_MAX_RELS */
	const int32_t *fanouts;   /* [num_layers * num_rels], layer-major */
	uint32_t num_seeds;
	const int64_t *seeds;
	uint32_t num_excl;        /* GNN_MB_EXCLUDE: pairs, 0..GNN_PROTO_MAX_EXCL_PAIRS */
	uint32_t excl_rel;        /* GNN_MB_EXCLUDE: their relation, below num_rels */
	const int64_t *excl;      /* GNN_MB_EXCLUDE: [2 num_excl] (u, v) global IDs, borrowed */
	void *owned;
};
/* Encoder errors: GNN_ERANGE for counts over the limits, GNN_EINVAL for
 * excl fields set without GNN_MB_EXCLUDE, GNN_ENOMEM. */
int gnn_encode_minibatch_req(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_minibatch_req *in);
int gnn_decode_minibatch_req(const void *payload, size_t len, struct gnn_minibatch_req *out);

/* One block (message flow graph) of a minibatch, for layer l. Its
 * destination nodes are the first num_dst of its source nodes (DGL's
 * convention), so src_ids[0 .. num_dst) are the dst IDs. Edges are an
 * in-CSR over (destination, relation) pairs in local source indices:
 * destination i's edges of relation r are indices[indptr[i R + r] ..
 * indptr[i R + r + 1]). Block l's destination nodes are block l+1's
 * source nodes; the last block's destinations are the seeds, in request
 * order. */
struct gnn_block {
	uint32_t num_dst, num_src;
	uint32_t num_rels;        /* R: the minibatch's */
	uint64_t num_edges;
	const int64_t *src_ids;   /* [num_src] global IDs */
	const int32_t *indptr;    /* [num_dst * num_rels + 1] */
	const int32_t *indices;   /* [num_edges], each < num_src */
};

/* MINIBATCH_RESP: the blocks in layer order (blocks[0] is the input layer),
 * the node type of each of blocks[0]'s sources, then (if asked for) one
 * feature matrix per node type with features: the rows of that type's
 * sources in source order, elements of feat_dtype, then (if asked for) the
 * seeds' labels. With one type, feat[0] holds a row per source. */
struct gnn_minibatch {
	uint32_t num_layers, flags, num_types, num_rels, num_seeds;
	uint32_t feat_dtype;                      /* with GNN_MB_FEATURES: F32 or F16 (arr.h); else 0 */
	uint32_t feat_dims[GNN_PROTO_MAX_TYPES];  /* each type's feature width (0: none) */
	struct gnn_block blocks[GNN_PROTO_MAX_LAYERS];
	const uint8_t *src_types;                 /* [blocks[0].num_src], each < num_types */
	uint32_t type_rows[GNN_PROTO_MAX_TYPES];  /* sources of each type (the decoder counts them) */
	const void *feat[GNN_PROTO_MAX_TYPES];    /* [type_rows[t] * feat_dims[t]] of feat_dtype, NULL when none */
	const int32_t *labels;                    /* [num_seeds] or NULL */
	void *owned;
};
int gnn_encode_minibatch_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_minibatch *in);

/* Payload bytes of a MINIBATCH_RESP's fixed head (for num_types types),
 * of one block, and of an optional section (the input types, feature
 * rows, labels) of n bytes: what a producer checks against
 * GNN_PROTO_MAX_MSG_BYTES while it is still building the blocks. */
uint64_t gnn_minibatch_resp_head_bytes(uint32_t num_types);
uint64_t gnn_minibatch_resp_block_bytes(uint64_t num_dst, uint64_t num_src, uint64_t num_edges, uint32_t num_rels);
uint64_t gnn_minibatch_resp_section_bytes(uint64_t n);

/* The feature rows of a decoded mb as f32 (what a model reads): rows of
 * another dtype are converted into rows[t] and mb->feat[t] points at it.
 * rows[t] is the caller's buffer of type_rows[t] * feat_dims[t] floats,
 * or NULL: then a new array (the caller's to free). Nothing to do for f32
 * rows or none, or for a type without rows. GNN_ENOMEM (what was
 * allocated is in rows). */
int gnn_minibatch_widen(struct gnn_minibatch *mb, float *rows[GNN_PROTO_MAX_TYPES]);

/* Counts blocks[0]'s sources of each type into mb->type_rows. */
void gnn_minibatch_count_types(struct gnn_minibatch *mb);

/* A MINIBATCH_RESP written in place, for a producer that fills the feature
 * rows straight into the message (the sampler, from the graph stores'
 * answers). gnn_mb_writer_begin appends the header, in's blocks and input
 * types to w and reserves the room for the sections in->flags asks for
 * (in->type_rows must be counted; in->feat and in->labels are not read);
 * then, for each of them in this order, gnn_mb_writer_features sets
 * rows[t] to where type t's type_rows[t] x feat_dims[t] rows of
 * in->feat_dtype go (NULL for
 * a type without features; valid until w changes), gnn_mb_writer_labels
 * copies num_seeds labels; gnn_mb_writer_end checks that both were written
 * and seals the message. begin returns GNN_ERANGE (over the message limit,
 * or bad layers or types) or GNN_ENOMEM; on any error, and on
 * gnn_mb_writer_abort, w is as it was before begin.
 * gnn_encode_minibatch_resp is this writer. */
struct gnn_mb_writer {
	struct gnn_wbuf *w;
	size_t start;             /* where the message starts in w */
	uint32_t flags, written;  /* GNN_MB_* asked for, and written */
	uint32_t num_seeds, num_types;
	uint64_t feat_off[GNN_PROTO_MAX_TYPES + 1];  /* each type's section within the features' */
	size_t feat_elem;                            /* bytes per feature element (0: no features) */
	uint64_t label_bytes;
};
int gnn_mb_writer_begin(struct gnn_mb_writer *mw, struct gnn_wbuf *w, uint64_t req_id, const struct gnn_minibatch *in);
int gnn_mb_writer_features(struct gnn_mb_writer *mw, void *rows[GNN_PROTO_MAX_TYPES]);
void gnn_mb_writer_labels(struct gnn_mb_writer *mw, const int32_t *labels);
int gnn_mb_writer_end(struct gnn_mb_writer *mw);
void gnn_mb_writer_abort(struct gnn_mb_writer *mw);
/* Checks the structure completely: chaining (block l's num_dst equals block
 * l+1's num_src, with the same IDs), num_dst <= num_src, indptr monotone
 * from 0 to num_edges, indices below num_src, the last block's num_dst equal
 * to num_seeds, input types below num_types, feature rows present for
 * exactly the types of nonzero width, their dtype F32 or F16. */
int gnn_decode_minibatch_resp(const void *payload, size_t len, struct gnn_minibatch *out);

/* ---- EMB: learnable node embeddings (docs/embeddings.md) ----
 * A graph store holds the embedding rows of its partition's nodes of the
 * embedded types, their sparse optimizer's state and the rows of the best
 * validation epoch. The trainers name a state by (gen, version): gen is
 * what the last INIT set (rank 0 sends one at every start and resume),
 * version the number of sparse updates applied (the trainers' global
 * step). A request whose gen, or PULL's step, is not the store's gets
 * GNN_ESTALE: the store restarted or was restored, and the trainers must
 * resume from their checkpoint. */
enum gnn_emb_op {
	GNN_EMB_INIT = 1,    /* cfg: the embedded types, optimizer, seed. Rows from the seed,
			      * state zero, version = step, gen = gen (any previous state dropped) */
	GNN_EMB_PULL = 2,    /* rows of array (ROWS or BEST) of ids, all of node_type; version must be step */
	GNN_EMB_PUSH = 3,    /* rank's gradients (data: n x dim floats) of ids of node_type for
			      * update `step` (= version); applied once every rank of world pushed
			      * for every embedded type; a repeated push is acknowledged and ignored */
	GNN_EMB_READ = 4,    /* n rows of array of node_type from global ID first (a checkpoint);
			      * version must be step */
	GNN_EMB_WRITE = 5,   /* the same rows written (data: n x dim); then the store is at version step */
	GNN_EMB_BEST = 6,    /* BEST = ROWS, every type (a new best validation accuracy) */
	GNN_EMB_STATUS = 7,  /* nothing: the reply's gen, version and cfg_hash */
	GNN_EMB_JOIN = 8,    /* a replica catching up (docs/embeddings.md, "Replicas"): INIT's, and
			      * then, until READY, PULL, READ and BEST refused (GNN_ESTALE), PUSHes
			      * for version step kept but not applied, WRITEs of version step keep them */
	GNN_EMB_READY = 9,   /* the end of a JOIN's WRITEs: served, and the pushes kept applied
			      * once complete; GNN_ESTALE when not joining */
	GNN_EMB_SAVE = 10,   /* every row and state of this store written by the store into the
			      * checkpoint folder data names (n bytes: an absolute ".tmp-epoch-*"
			      * folder the store can open) at version step: into the files
			      * embfile.h names, which must exist (the trainer made them:
			      * gnn_arr_shared_create, an empty emb-part-PPPP.snap), from a
			      * copy taken now, by a thread that ends with the record in
			      * emb-part-PPPP.snap; the reply (nothing) comes once the copy is
			      * taken. node_type and first unused (0). GNN_ENOENT: the store
			      * cannot open them (not on its file system) */
	GNN_EMB_DELTA = 11,  /* the ROWS of ids (node_type's, as PULL) that changed after version
			      * `first` (when an earlier PULL read them), at version step (the
			      * store's): the reply's n rows are dim + 1 words each, the ID's
			      * index in ids (a uint32, ascending) then the row; every row when
			      * the store cannot tell (its state was set whole since `first`).
			      * The trainers pull the next minibatch's rows while a step
			      * computes, and then only what that step's update changed */
	GNN_EMB_OP_END
};
/* The arrays of one embedded type; each has one row per node, dim floats
 * (STATE1 and STATE2 Adam's m and v, Adagrad's sum of squares in STATE1
 * and nothing in STATE2), STEPS one uint32 (Adam's per-row step count). */
enum gnn_emb_array { GNN_EMB_ROWS, GNN_EMB_STATE1, GNN_EMB_STATE2, GNN_EMB_STEPS, GNN_EMB_BEST_ROWS,
		     GNN_EMB_ARRAYS };
enum gnn_emb_optim { GNN_EMB_ADAM = 1, GNN_EMB_ADAGRAD = 2 };

struct gnn_emb_cfg {
	uint32_t num_types;                 /* the graph's, 1..GNN_PROTO_MAX_TYPES */
	uint32_t dim[GNN_PROTO_MAX_TYPES];  /* per type: 0 (none) or 1..GNN_PROTO_MAX_FEAT_DIM, one at least */
	uint32_t optimizer;                 /* enum gnn_emb_optim */
	float lr, beta1, beta2, eps;        /* lr > 0, betas in [0, 1), eps > 0 */
	uint64_t seed;                      /* initial rows: a pure function of (seed, type, node, column) */
	uint64_t hash;                      /* the trainers' digest of all of it and the graph */
};

struct gnn_emb_req {
	uint32_t op;                        /* enum gnn_emb_op */
	uint32_t node_type;                 /* PULL, PUSH, READ, WRITE */
	uint32_t array;                     /* PULL (ROWS or BEST_ROWS), READ, WRITE */
	uint32_t rank, world;               /* PUSH: rank < world <= 65536 */
	uint64_t gen, step;
	int64_t first;                      /* READ, WRITE: the first row's global ID; DELTA: a version */
	uint32_t n;                         /* IDs (PULL, PUSH, DELTA) or rows (READ, WRITE) */
	uint32_t dim;                       /* PUSH, WRITE: words per row of data */
	const int64_t *ids;                 /* PULL, PUSH, DELTA: [n]; NULL otherwise */
	const void *data;                   /* PUSH, WRITE: [n * dim] 4-byte words; SAVE: n bytes
					     * of a path (< 4096, no NUL); NULL otherwise */
	struct gnn_emb_cfg cfg;             /* INIT */
	void *owned;
};
/* The encoder writes what in->op uses (cfg for INIT, ids for PULL,
 * PUSH and DELTA, data for PUSH and WRITE). The decoder checks op, the limits
 * (n <= GNN_PROTO_MAX_IDS, dim <= GNN_PROTO_MAX_FEAT_DIM, the array and
 * type indexes, INIT's cfg as documented there) and that the payload is
 * exactly what op carries: GNN_EPROTO or GNN_ERANGE otherwise. */
int gnn_encode_emb_req(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_emb_req *in);
int gnn_decode_emb_req(const void *payload, size_t len, struct gnn_emb_req *out);

/* EMB_RESP: the store's state after the request, and rows for PULL and
 * READ (n rows of dim 4-byte words: floats, or STEPS' uint32). */
struct gnn_emb_resp {
	uint64_t gen, version, cfg_hash;
	uint32_t n, dim;
	const void *data;
	void *owned;
};
int gnn_encode_emb_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_emb_resp *in);
int gnn_decode_emb_resp(const void *payload, size_t len, struct gnn_emb_resp *out);

/* ---- LINK: serving a link-prediction model (docs/inference.md, "Link
 * prediction: score and top-k") ----
 * A graph store answers from the link output gnn-trainer infer wrote
 * (every node's final embedding and the decoder); a sampler answers for
 * the whole graph by asking the owners. Ops:
 *   ROWS   the final embeddings of ids[n] (a store: owned nodes); with
 *          GNN_LINK_WITH_DECODER the reply also carries the decoder's
 *          parameters, so that a sampler can score pairs itself
 *   SCORE  the decoder's score of each of n pairs (ids[2i], ids[2i+1])
 *          (a store: both endpoints owned)
 *   TOPK   the k best-scoring candidates against a query: the row of
 *          `node` (dim 0) or the dim floats of `query`; candidates are the
 *          nodes of node_type (GNN_LINK_ANY_TYPE: every type) but the n of
 *          ids (the exclusion list) and the query node; best first by score, then node ID
 *          ascending. A store scores its own partition's nodes only:
 *          n_p x dim (dot) or n_p x dim x hidden (mlp) multiply-adds. */
enum gnn_link_op { GNN_LINK_ROWS = 1, GNN_LINK_SCORE = 2, GNN_LINK_TOPK = 3, GNN_LINK_OP_END };
enum gnn_link_decoder { GNN_LINK_DOT = 1, GNN_LINK_MLP = 2 };
enum { GNN_LINK_WITH_DECODER = 1 };       /* ROWS request and reply flag */
#define GNN_PROTO_MAX_LINK_K 1000         /* TOPK's k */
#define GNN_PROTO_MAX_LINK_PAIRS 65536    /* SCORE's pairs */
#define GNN_PROTO_MAX_LINK_EXCL 65536     /* TOPK's excluded nodes */
#define GNN_LINK_ANY_TYPE 0xffffffffu     /* TOPK's node_type: every type */

struct gnn_link_req {
	uint32_t op;             /* enum gnn_link_op */
	uint32_t flags;          /* ROWS: GNN_LINK_WITH_DECODER or 0; others 0 */
	uint32_t n;              /* ROWS: IDs (<= GNN_PROTO_MAX_IDS); SCORE: pairs
				  * (<= GNN_PROTO_MAX_LINK_PAIRS); TOPK: excluded (<= GNN_PROTO_MAX_LINK_EXCL) */
	uint32_t k;              /* TOPK: 1..GNN_PROTO_MAX_LINK_K; others 0 */
	uint32_t dim;            /* TOPK: query floats, 0 (query by node) or 1..GNN_PROTO_MAX_FEAT_DIM; others 0 */
	uint32_t node_type;      /* TOPK: candidates' type, below GNN_PROTO_MAX_TYPES or GNN_LINK_ANY_TYPE; others 0 */
	int64_t node;            /* TOPK with dim 0: the query node (>= 0); otherwise -1 */
	const float *query;      /* TOPK: [dim]; NULL when dim is 0 */
	const int64_t *ids;      /* ROWS [n]; SCORE [2 n] (u, v) pairs; TOPK [n] excluded nodes */
	void *owned;
};
/* The encoder borrows in's arrays (read during the call). The decoder
 * checks op, flags, the limits above, that the fields an op does not use
 * are zero (node -1) and that the payload is exactly what the op carries:
 * GNN_EPROTO or GNN_ERANGE otherwise. IDs' ranges and types are the
 * service's. */
int gnn_encode_link_req(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_link_req *in);
int gnn_decode_link_req(const void *payload, size_t len, struct gnn_link_req *out);

/* LINK_RESP: what the model is (params_crc, decoder, dim, hidden) and the
 * answer to op: ROWS rows[n x dim] (n = the request's), SCORE scores[n],
 * TOPK nodes[n] and scores[n], n <= k, best first. With
 * GNN_LINK_WITH_DECODER, params holds gnn_link_params_count(decoder, dim,
 * hidden) floats (mlp: W1 [hidden x dim] row-major, b1 [hidden], w2
 * [hidden], b2; dot: none). */
struct gnn_link_resp {
	uint32_t op, n, params_crc;
	uint32_t decoder;        /* enum gnn_link_decoder */
	uint32_t dim;            /* 1..GNN_PROTO_MAX_FEAT_DIM */
	uint32_t hidden;         /* mlp: 1..GNN_PROTO_MAX_FEAT_DIM; dot: 0 */
	uint32_t flags;          /* GNN_LINK_WITH_DECODER (ROWS only) */
	const float *rows;       /* ROWS: [n x dim]; else NULL */
	const int64_t *nodes;    /* TOPK: [n]; else NULL */
	const float *scores;     /* SCORE, TOPK: [n]; else NULL */
	const float *params;     /* with GNN_LINK_WITH_DECODER and mlp: [gnn_link_params_count]; else NULL */
	void *owned;
};
/* Floats of a decoder's parameters: mlp hidden x dim + 2 hidden + 1, dot 0. */
uint64_t gnn_link_params_count(uint32_t decoder, uint32_t dim, uint32_t hidden);
/* The encoder refuses a reply over GNN_PROTO_MAX_MSG_BYTES (GNN_ERANGE).
 * The decoder checks op, decoder, dim, hidden, flags, n within the op's
 * limit (TOPK: GNN_PROTO_MAX_LINK_K) and that the arrays fill the payload
 * exactly; the values are the sender's. */
int gnn_encode_link_resp(struct gnn_wbuf *w, uint64_t req_id, const struct gnn_link_resp *in);
int gnn_decode_link_resp(const void *payload, size_t len, struct gnn_link_resp *out);

/* Frees the copy a decoder made of misaligned arrays (owned may be NULL). */
void gnn_proto_release(void *owned);

#endif
