/* graph.h - the partitioner's in-memory graph: an in-neighbour CSR over the
 * original node IDs plus labels, split membership and features.
 *
 * Node IDs are int32 while building because METIS 5.1 (Debian) has a 32-bit
 * idx_t; edge offsets are int64. Features either live in memory (imported
 * graphs) or are produced row by row on demand (synthetic graphs, so that a
 * products-scale feature matrix is never held whole). */
#ifndef GNN_PART_GRAPH_H
#define GNN_PART_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "part.h"  /* GNN_SPLIT_* codes */

struct graph;

/* Writes the feature row of node (feat_dim floats) to out. */
typedef int (*graph_feat_fn)(const struct graph *g, int64_t node, float *out);

struct graph {
	int64_t num_nodes;
	int64_t num_edges;   /* directed edges stored in the CSR */
	int32_t feat_dim;
	int32_t num_classes;
	bool symmetric;      /* every stored edge u->v has v->u (undirected input) */

	int64_t *indptr;     /* [num_nodes + 1] */
	int32_t *indices;    /* [num_edges] in-neighbours (sources) of each node,
			      * sorted ascending, no duplicates, no self-loops */
	int32_t *labels;     /* [num_nodes], 0 .. num_classes-1 */
	uint8_t *split;      /* [num_nodes], GNN_SPLIT_* */

	float *feat;         /* [num_nodes * feat_dim] row-major, or NULL ... */
	graph_feat_fn feat_row; /* ... then rows come from this function */
	void *feat_ctx;      /* owned by the graph, freed by graph_free() */
};

/* Builds g->indptr / g->indices (and num_edges, symmetric) for num_nodes nodes
 * from m edges src[i] -> dst[i]. With symmetrize, every edge is added in both
 * directions. Self-loops and duplicate edges are removed either way.
 * Takes ownership of src and dst (freed before returning, also on error) so
 * the peak stays near one copy of the edges. IDs must already be validated
 * to lie in [0, num_nodes). Returns GNN_ENOMEM or GNN_ERANGE (more than
 * INT32_MAX nodes). */
int graph_build_csr(struct graph *g, int64_t num_nodes, int32_t *src, int32_t *dst,
		    int64_t m, bool symmetrize);

/* Copies node's feature row into out (feat_dim floats). */
int graph_feature_row(const struct graph *g, int64_t node, float *out);

/* Frees everything the graph owns and zeroes it. Safe on a zeroed graph. */
void graph_free(struct graph *g);

#endif
