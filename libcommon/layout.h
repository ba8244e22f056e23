/* layout.h - a partitioned graph as every component sees it: its schema
 * (node types, relations, the labelled type) and which global node IDs
 * each partition, and each (partition, type) pair, owns. The graph store
 * reads it from meta.json (part.h), the wire carries it in INFO (proto.h).
 * A homogeneous graph is the one-type, one-relation schema. */
#ifndef GNN_LAYOUT_H
#define GNN_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * with why (why_len bytes, caller's) saying what is wrong. */
int gnn_schema_check(const struct gnn_schema *s, char *why, size_t why_len);

/* The type called name, or -1. */
int32_t gnn_schema_type(const struct gnn_schema *s, const char *name);
/* The relation called name: its canonical "src:rel:dst", or its bare name
 * when no other relation has it. -1 when none; -2 when a bare name is
 * ambiguous. */
int32_t gnn_schema_rel(const struct gnn_schema *s, const char *name);
/* The reverse of relation r (r < num_rels), as the importer names it:
 * rev_NAME for NAME (and NAME for rev_NAME) with the types swapped; -1
 * when r joins a type to itself (it holds both directions) or the schema
 * has no such relation. The edge split and the sampler's exclusion
 * (GNN_MB_EXCLUDE) both use it. */
int32_t gnn_schema_reverse(const struct gnn_schema *s, uint32_t r);
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
	uint32_t feat_dtype;            /* the feature rows' enum gnn_dtype (arr.h): F32 or F16 */
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

/* Checks that the schema checks; that offsets runs from 0 to num_nodes
 * (num_parts >= 1); and that type_offsets agrees with offsets and the
 * schema: it starts each partition at offsets[p], never decreases, ends at
 * num_nodes, and each type's ranges add up to its num_nodes; that
 * feat_dim is the widest type's, and feat_dtype F32 or F16. (Offsets that decrease show as a type
 * range that does.)
 * GNN_EFORMAT with why saying what is wrong. */
int gnn_layout_check(const struct gnn_layout *l, char *why, size_t why_len);

/* Type t's nodes in partition p: [*begin, *end) (t < the schema's types,
 * p < num_parts). */
static inline void gnn_layout_type_range(const struct gnn_layout *l, uint32_t p, uint32_t t, int64_t *begin,
					 int64_t *end)
{
	const int64_t *to = l->type_offsets + (size_t)p * l->schema->num_types + t;

	*begin = to[0];
	*end = to[1];
}

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
 * stores uses this one; it finds a node's type the same way over a type
 * range list (type_offsets + p T, a partition's type_start), where empty
 * ranges (offsets[k] == offsets[k+1]) are never the answer. */
int32_t gnn_owner_of(const int64_t *offsets, uint32_t num_parts, int64_t gid);

#endif
