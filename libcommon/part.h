/* part.h - reads gnn-partition's output (docs/formats.md): meta.json and
 * one partition's mapped arrays. Shared by the graph store (which serves a
 * partition), tools and tests; the partitioner writes the same layout. */
#ifndef GNN_PART_H
#define GNN_PART_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "arr.h"

#define GNN_PART_FORMAT "gnn-dist-partitions"
/* Version 2 added node types and relations; version 1 outputs (one type,
 * one relation) are still read, as the schema gnn_schema_plain gives. */
#define GNN_PART_FORMAT_VERSION 2

/* Split membership codes stored in split.arr. */
enum { GNN_SPLIT_NONE = 0, GNN_SPLIT_TRAIN = 1, GNN_SPLIT_VALID = 2, GNN_SPLIT_TEST = 3 };

/* Schema limits: every component and the wire protocol enforce them. */
#define GNN_MAX_TYPES 64        /* node types (a type index fits a u8) */
#define GNN_MAX_RELS 256        /* relations */
#define GNN_NAME_MAX 64         /* bytes of a type or relation name, NUL included */

/* A node type: its name, how many nodes of it the graph has and the width
 * of their feature rows (0: the type has no features). */
struct gnn_ntype {
	char name[GNN_NAME_MAX];
	int64_t num_nodes;
	uint32_t feat_dim;
};

/* A relation (DGL's canonical edge type src:name:dst): its edges u -> v
 * join a node u of type src to a node v of type dst, and are stored as
 * v's in-neighbours under this relation. num_edges counts them. */
struct gnn_rel {
	char name[GNN_NAME_MAX];
	uint32_t src, dst;
	int64_t num_edges;
};

/* The node types and relations of a graph, and the type whose nodes carry
 * labels and splits (training, evaluation and predictions run on it). A
 * homogeneous graph is the one-type, one-relation schema (gnn_schema_plain):
 * every component reads both the same way. */
struct gnn_schema {
	uint32_t num_types, num_rels;
	uint32_t label_type;
	struct gnn_ntype types[GNN_MAX_TYPES];
	struct gnn_rel rels[GNN_MAX_RELS];
};

/* The one-type ("node"), one-relation ("edge") schema of a homogeneous
 * graph of num_nodes nodes with feat_dim features and num_edges edges. */
void gnn_schema_plain(struct gnn_schema *s, int64_t num_nodes, int64_t num_edges, uint32_t feat_dim);

/* Whether a type or relation name is acceptable: 1..63 bytes of letters,
 * digits, '_', '-' and '.' (names go into file names, fanout lists, logs). */
bool gnn_name_ok(const char *name);

/* Checks a schema's own consistency: counts within the limits, valid and
 * distinct type names, valid relation names with src and dst below
 * num_types and no (src, name, dst) twice, the label type below num_types,
 * feature widths up to 65536, counts >= 0. Returns GNN_OK, or GNN_EFORMAT
 * with why (cap bytes, caller's) saying what is wrong. */
int gnn_schema_check(const struct gnn_schema *s, char *why, size_t cap);

/* The type called name, or -1. */
int32_t gnn_schema_type(const struct gnn_schema *s, const char *name);
/* The relation called name: its canonical "src:rel:dst", or its bare name
 * when no other relation has it. -1 when none; -2 when a bare name is
 * ambiguous. */
int32_t gnn_schema_rel(const struct gnn_schema *s, const char *name);
/* "src:name:dst" of relation r into buf (cap bytes; 3 * GNN_NAME_MAX suffice). */
void gnn_schema_rel_label(const struct gnn_schema *s, uint32_t r, char *buf, size_t cap);
/* The widest type's feature width: what a model's first layer reads. */
uint32_t gnn_schema_max_feat_dim(const struct gnn_schema *s);
/* A digest of the schema (names, types of each relation, feature widths,
 * the label type; not the counts): a trained model's and a checkpoint's
 * identity include it. */
uint64_t gnn_schema_hash(const struct gnn_schema *s);
/* Whether s is one type and one relation, the homogeneous case. */
bool gnn_schema_is_plain(const struct gnn_schema *s);

/* A partitioned graph's layout as every component sees it: its sizes, the
 * node range each partition owns, the schema, the range each (partition,
 * type) pair owns within it, and which partition output it is. The graph
 * store reads it from meta.json, a sampler learns it from the graph stores
 * (INFO) and a trainer from the samplers. The pointers are borrowed from
 * whoever filled it in (gnn_layout_dup makes an owned copy). */
struct gnn_layout {
	int64_t num_nodes, num_edges;   /* whole graph; directed edges */
	uint32_t num_parts;
	uint32_t feat_dim;              /* the widest type's (gnn_schema_max_feat_dim) */
	uint32_t num_classes;           /* classes of the label type */
	uint64_t graph_id;              /* the partition output's (0: unknown, e.g. in process) */
	const int64_t *offsets;         /* [num_parts + 1]: part p owns [offsets[p], offsets[p+1]) */
	const struct gnn_schema *schema;
	/* [num_parts * num_types + 1]: type t's nodes of part p are
	 * [type_offsets[p T + t], type_offsets[p T + t + 1]); type_offsets[p T]
	 * is offsets[p]. A range may be empty. */
	const int64_t *type_offsets;
};

/* Deep copy of src into *dst, whose pointers then point into one block
 * *dst owns: gnn_layout_free. GNN_ENOMEM. */
int gnn_layout_dup(const struct gnn_layout *src, struct gnn_layout *dst);
void gnn_layout_free(struct gnn_layout *l);

/* Checks that type_offsets agrees with offsets and the schema: it starts
 * each partition at offsets[p], never decreases, ends at num_nodes, and
 * each type's ranges add up to its num_nodes; and that the schema checks.
 * GNN_EFORMAT with why saying what is wrong. */
int gnn_layout_check(const struct gnn_layout *l, char *why, size_t cap);

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
void gnn_meta_free(struct gnn_meta *m);

/* A 64-bit identifier of a partition output, the same in every graph store
 * of one output (their INFO replies carry it, and trainers mix it into
 * their model hash): a hash of meta.json's node-map CRC-32, the graph's
 * sizes, the partition offsets and every partition file's CRC-32. Returns
 * GNN_EFORMAT (logged) when meta.json lacks those fields. */
int gnn_meta_graph_id(const struct gnn_meta *m, uint64_t *out);

/* gnn_owner_of over a layout: the partition owning node gid, or -1. */
int32_t gnn_layout_owner(const struct gnn_layout *l, int64_t gid);

/* The partition, type and row of node gid: part p, type t, and its row
 * among type t's nodes of part p (gid - type_offsets[p T + t]), which is
 * its row in that partition's type-t feature array. Returns the type, or
 * -1 (outputs untouched) when gid lies outside [0, num_nodes). */
int32_t gnn_layout_locate(const struct gnn_layout *l, int64_t gid, uint32_t *part, int64_t *row);

/* The type of node gid, or -1 outside the graph. */
int32_t gnn_layout_type(const struct gnn_layout *l, int64_t gid);

/* The partition owning global node gid, given the node ranges offsets
 * [num_parts + 1] (partition p owns [offsets[p], offsets[p+1]), from 0 to
 * num_nodes = offsets[num_parts]): a binary search; -1 when gid lies
 * outside [0, num_nodes). Every component that routes node IDs to graph
 * stores uses this one. */
int32_t gnn_owner_of(const int64_t *offsets, uint32_t num_parts, int64_t gid);

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
	const float *feat[GNN_MAX_TYPES];   /* [type rows x feat_dim[t]] or NULL */
	uint32_t feat_dim[GNN_MAX_TYPES];
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

/* The feature row of node gid (owned by pt) and its width into *dim; NULL
 * (and *dim 0) for a type without features. gid must be pt's. */
const float *gnn_part_feat_row(const struct gnn_part *pt, int64_t gid, uint32_t *dim);

#endif
