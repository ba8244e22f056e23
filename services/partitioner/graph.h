/* graph.h - the partitioner's in-memory graph: in-neighbour lists per
 * (node, relation) over the input's node IDs, plus labels, split
 * membership and features per node type.
 *
 * Node IDs are int32 while building because METIS 5.1 (Debian) has a 32-bit
 * idx_t; edge offsets are int64. Nodes are numbered type after type (the
 * schema's order): type t's nodes are [type_start[t], type_start[t+1]),
 * in the order of their per-type IDs in the input, so node type_start[t] + i
 * is type t's node i. A homogeneous graph is the one-type, one-relation
 * case (gnn_schema_plain). Features either live in memory (imported
 * graphs) or are produced row by row on demand (synthetic graphs, so that a
 * products-scale feature matrix is never held whole). */
#ifndef GNN_PART_GRAPH_H
#define GNN_PART_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "part.h"  /* GNN_SPLIT_* codes, struct gnn_schema */

struct pt_graph;

/* Writes the feature row of node (its type's feat_dim floats) to out. */
typedef int (*pt_graph_feat_fn)(const struct pt_graph *g, int64_t node, float *out);

/* How a type's feature rows are normalised (gnn-partition --feat-norm,
 * featnorm.h). AUTO is only ever asked for: it resolves to ROW or NONE. */
enum pt_feat_norm { PT_FEAT_NORM_NONE, PT_FEAT_NORM_ROW, PT_FEAT_NORM_STANDARD, PT_FEAT_NORM_AUTO };

/* One type's normalisation: rows in memory are normalised in place once;
 * rows from feat_row are normalised as they are read (pt_graph_feature_row),
 * so a generated matrix is still never held whole. */
struct pt_row_norm {
	enum pt_feat_norm mode;  /* applied: NONE, ROW or STANDARD */
	double *shift, *scale;   /* STANDARD: [feat_dim] column means and 1/sd (0 for a
				  * constant column), owned; NULL otherwise */
};

struct pt_graph {
	int64_t num_nodes;
	int64_t num_edges;   /* directed edges stored in the CSR, every relation */
	int32_t feat_dim;    /* the widest type's feature width (gnn_schema_max_feat_dim) */
	int32_t num_classes; /* of the label type */
	bool symmetric;      /* every stored edge u->v has v->u (in its relation or its reverse) */

	struct gnn_schema schema;                /* types, relations (num_edges filled by
						  * pt_graph_build_csr), the label type */
	int64_t type_start[GNN_MAX_TYPES + 1];   /* [num_types + 1] */

	int64_t *indptr;     /* [num_nodes * R + 1]: row v R + r lists v's in-neighbours
			      * under relation r (R = schema.num_rels) */
	int32_t *indices;    /* [num_edges] in-neighbours (sources), sorted ascending
			      * per row, no duplicates within a row, no self-loops */
	int32_t *labels;     /* [num_nodes], 0 .. num_classes-1, -1 unlabelled */
	uint8_t *split;      /* [num_nodes], GNN_SPLIT_* (only on the label type) */

	float *feat[GNN_MAX_TYPES]; /* type t's rows [nodes of t x its feat_dim], or NULL ... */
	pt_graph_feat_fn feat_row;  /* ... then rows come from this function */
	void *feat_ctx;             /* owned by the graph, freed by pt_graph_free() ... */
	void (*feat_free)(void *ctx); /* ... with this (NULL: free()) */
	struct pt_row_norm norm[GNN_MAX_TYPES]; /* zeroed: NONE (featnorm.c sets them) */
};

/* The first and one-past-last entry of node v's in-neighbours, every
 * relation (relation by relation). */
static inline int64_t graph_row_begin(const struct pt_graph *g, int64_t v)
{
	return g->indptr[v * (int64_t)g->schema.num_rels];
}

static inline int64_t graph_row_end(const struct pt_graph *g, int64_t v)
{
	return g->indptr[(v + 1) * (int64_t)g->schema.num_rels];
}

/* The type of node v, in [0, num_nodes). */
uint32_t pt_graph_node_type(const struct pt_graph *g, int64_t v);

/* Builds g->indptr / g->indices (and num_edges, symmetric, and each
 * relation's num_edges in g->schema) for num_nodes nodes and
 * g->schema.num_rels relations (set by the caller) from m edges src[i] ->
 * dst[i] of relation rel[i] (rel NULL: every edge is relation 0). With
 * symmetrize, every edge is added in both directions within its relation
 * (homogeneous graphs; a typed importer adds reverse relations itself).
 * Self-loops and duplicate edges of one relation are removed either way.
 * Takes ownership of src, dst and rel (freed before returning, also on
 * error) so the peak stays near one copy of the edges. IDs must already
 * be validated to lie in [0, num_nodes) and relations below num_rels.
 * Returns GNN_ENOMEM or GNN_ERANGE (more than INT32_MAX nodes). */
int pt_graph_build_csr(struct pt_graph *g, int64_t num_nodes, int32_t *src, int32_t *dst, uint16_t *rel,
		       int64_t m, bool symmetrize);

/* The comma-separated names of s's node types (rels false) or relations
 * into buf (cap bytes; cut short when they do not fit), for logs. */
void pt_graph_names(const struct gnn_schema *s, bool rels, char *buf, size_t cap);

/* Copies node's feature row into out (its type's feat_dim floats; nothing
 * for a type without features), normalised as g->norm says. */
int pt_graph_feature_row(const struct pt_graph *g, int64_t node, float *out);

/* Normalises one row of dim floats in place as n says: ROW divides by the
 * row's sum (in double; a row summing to 0 stays), STANDARD maps column j
 * to (x - shift[j]) * scale[j], NONE leaves it. */
void pt_graph_norm_row(const struct pt_row_norm *n, float *row, size_t dim);

/* Frees everything the graph owns and zeroes it. Safe on a zeroed graph. */
void pt_graph_free(struct pt_graph *g);

#endif
