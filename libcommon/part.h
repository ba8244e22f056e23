/* part.h - reads gnn-partition's output (docs/formats.md): meta.json and
 * one partition's mapped arrays. Shared by the graph store (which serves a
 * partition), tools and tests; the partitioner writes the same layout.
 * The graph's schema and node ranges (struct gnn_layout) are layout.h's. */
#ifndef GNN_PART_H
#define GNN_PART_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "arr.h"
#include "layout.h"

#define GNN_PART_FORMAT "gnn-dist-partitions"
/* Version 2 added node types and relations; version 1 outputs (one type,
 * one relation) are still read, as the schema gnn_schema_plain gives. */
#define GNN_PART_FORMAT_VERSION 2

/* Split membership codes stored in split.arr. */
enum { GNN_SPLIT_NONE = 0, GNN_SPLIT_TRAIN = 1, GNN_SPLIT_VALID = 2, GNN_SPLIT_TEST = 3 };

/* meta.json as loaded. */
struct gnn_meta {
	struct gnn_layout layout;   /* its pointers point at this meta's own arrays; graph_id
				     * is 0: meta.json does not hold it, and only the graph
				     * store computes one (gnn_meta_graph_id) */
	bool symmetric;
	int version;                /* format_version of the file (1 or 2) */
	int64_t *offsets;           /* [num_parts + 1] (owned); layout.offsets borrows */
	int64_t *type_offsets;      /* [num_parts * num_types + 1] (owned) */
	struct gnn_schema *schema;  /* (owned) */
	json_t *json;               /* the whole document (owned), for the remaining fields */
};

/* Loads and validates DIR/meta.json: format and version, counts and ranges,
 * offsets strictly increasing from 0 to num_nodes and matching each part's
 * node_start/node_end. *out owns its memory: gnn_meta_free. */
int gnn_meta_load(const char *dir, struct gnn_meta *out);

/* The schema as meta.json holds it (format 2): {"node_types": [{name,
 * num_nodes, feat_dim}], "relations": [{name, src, dst, num_edges}],
 * "label_type"}. A new reference (the caller's), NULL when out of memory. */
json_t *gnn_schema_json(const struct gnn_schema *s);
void gnn_meta_free(struct gnn_meta *m);

/* A 64-bit identifier of a partition output, the same in every graph store
 * of one output (their INFO replies carry it, and trainers mix it into
 * their model hash): a hash of meta.json's node-map CRC-32, the graph's
 * sizes, the partition offsets and every partition file's CRC-32. Returns
 * GNN_EFORMAT (logged) when meta.json lacks those fields. */
int gnn_meta_graph_id(const struct gnn_meta *m, uint64_t *out);

/* One partition, mapped. Rows of indptr are (local node, relation) pairs:
 * node v's in-neighbours under relation r (global IDs, ascending) are
 * indices[indptr[v R + r] .. indptr[v R + r + 1]), so with one relation
 * indptr is the plain in-CSR over the partition's nodes. Node v's row in
 * labels and split is v; its features are row (gid - type_start[t]) of
 * feat[t], its type t's array (NULL for a type without features). */
struct gnn_part {
	int32_t id;
	int64_t node_start, node_end, num_nodes, num_edges;
	uint32_t num_types, num_rels;
	const int64_t *type_start;          /* [num_types + 1] global IDs (the layout's) */
	const int64_t *indptr;              /* [num_nodes * num_rels + 1] */
	const int64_t *indices;             /* [num_edges], global IDs */
	const void *feat[GNN_MAX_TYPES];    /* [type rows x feat_dim[t]] of feat_dtype, or NULL */
	uint32_t feat_dim[GNN_MAX_TYPES];
	uint32_t feat_dtype;                /* the layout's: F32 or F16 (arr.h) */
	const int32_t *labels;              /* [num_nodes], -1 = unlabeled */
	const uint8_t *split;               /* [num_nodes], 0 none 1 train 2 valid 3 test */
	struct gnn_arr arrs[4 + GNN_MAX_TYPES];  /* indptr, indices, label, split, feat[t] */
};

enum { GNN_PART_VERIFY = 1 };  /* check CRCs and every value (reads it all) */

/* Maps partition p of the output in dir. Always checks each file's header
 * against meta.json (dtype, shape); with GNN_PART_VERIFY also the data
 * CRCs and the contents: offsets monotone from 0 to num_edges, neighbour IDs
 * in range and of their relation's source type, labels in [-1,
 * num_classes) and only on the label type, split codes <= 3. */
int gnn_part_open(const char *dir, const struct gnn_meta *m, int32_t p, unsigned flags,
		  struct gnn_part *out);
void gnn_part_close(struct gnn_part *part);

/* Maps DIR/node-map.arr (new global ID -> original per-type ID) into out
 * and checks it against meta.json's node_map entry (rows, CRC-32 in the
 * header; with GNN_PART_VERIFY also the data's). GNN_EFORMAT (logged) on a
 * mismatch. */
int gnn_node_map_open(const char *dir, const struct gnn_meta *m, unsigned flags, struct gnn_arr *out);

/* The global ID of the node of type t in partition p whose original ID is
 * orig, from a node map (gnn_node_map_open): a binary search, as a
 * (partition, type) range lists its nodes in original order; -1 when p
 * has no such node. */
int64_t gnn_node_map_find(const struct gnn_layout *l, const struct gnn_arr *map, uint32_t p, uint32_t t,
			  int64_t orig);

/* An output's link-prediction edge split (docs/formats.md "Edge split"):
 * meta.json's edge_split and the arrays of OUT/edge-split/, mapped. For
 * set s (GNN_ES_VALID, GNN_ES_TEST) of num[s] held-out pairs: pos[s] and
 * neg[s] are [num[s] x 2] (u, v) global IDs, neg_dst[s] [num[s] x
 * eval_negatives]. The training pairs are the relation's edges left in
 * the partitions' CSRs. Borrowed from the mapping: valid until
 * gnn_edge_split_close. */
enum { GNN_ES_VALID = 0, GNN_ES_TEST = 1, GNN_ES_SETS = 2 };
struct gnn_edge_split {
	uint32_t rel;                 /* the relation (schema index) */
	int32_t rev_rel;              /* its reverse (gnn_schema_reverse), or -1 */
	uint32_t eval_negatives;      /* K */
	int64_t num_pairs, num_train, removed_edges;
	int64_t num[GNN_ES_SETS];
	const int64_t *pos[GNN_ES_SETS], *neg[GNN_ES_SETS], *neg_dst[GNN_ES_SETS];
	struct gnn_arr arrs[3 * GNN_ES_SETS];
};

/* Opens the edge split of the output in dir (m its meta.json): the
 * relation and its reverse as meta.json names them (they must agree with
 * the schema), the counts, and the six files, each checked against its
 * meta.json entry (dtype, shape, the CRC-32 in its header); with
 * GNN_PART_VERIFY also the data CRCs and every ID (in the graph, of the
 * relation's source or destination type as its column requires). Errors,
 * logged with the file or field: GNN_ENOENT when meta.json has no
 * edge_split or a file is missing, GNN_EFORMAT / GNN_ECHECKSUM for one
 * that does not match, GNN_EIO. *out (the caller's: gnn_edge_split_close)
 * is written only on success. */
int gnn_edge_split_open(const char *dir, const struct gnn_meta *m, unsigned flags, struct gnn_edge_split *out);
/* Unmaps the files. Safe on a zeroed struct. */
void gnn_edge_split_close(struct gnn_edge_split *es);

/* The feature row of node gid (owned by pt), *dim elements of
 * pt->feat_dtype; NULL (and *dim 0) for a type without features. gid must
 * be pt's. */
const void *gnn_part_feat_row(const struct gnn_part *pt, int64_t gid, uint32_t *dim);

#endif
