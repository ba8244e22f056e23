/* partition.h - assigns every node to one of P partitions and relabels the
 * nodes so that partition p owns the contiguous new-ID range
 * [offsets[p], offsets[p+1]), and within it each node type t the range
 * [type_offsets[p T + t], type_offsets[p T + t + 1]) (type after type, in
 * the schema's order); within a type new IDs follow original IDs.
 *
 * metis: METIS k-way with balance constraints per node: one 0/1 weight per
 * node type (for one type: 1), the degree over every relation, is-train,
 * as DGL's --balance_train --balance_edges (and its balance_ntypes for
 * typed graphs). A graph with several relations or directed edges is
 * handed to METIS as one symmetric adjacency: a pair of nodes joined in
 * any relation or direction is one edge of weight 1. Then a pass
 * that moves boundary training nodes until every partition holds within 5%
 * of the mean number of training nodes.
 * METIS keeps every coarsening level in memory, and on sparse power-law
 * graphs the edge count barely shrinks from level to level, so its memory
 * reaches several times the adjacency. Graphs with more than max_edges
 * directed edges are therefore handed to METIS as an importance-sampled
 * subgraph: an edge {u,v} is kept with probability p = min(1, k / min(deg u,
 * deg v)) (edges between low-degree nodes always) and weighted 1/p, so the
 * expected cut of any partition is unchanged; k is chosen so that about
 * max_edges edges remain. Balance weights still come from the full graph.
 *
 * random: a seeded shuffle dealt round-robin, training and other nodes
 * separately, so those counts balance exactly (node types are not dealt
 * separately: they balance only statistically); the baseline for edge cut. */
#ifndef GNN_PART_PARTITION_H
#define GNN_PART_PARTITION_H

#include <stdint.h>

#include "graph.h"

struct pt_partition_opts {
	int32_t parts;          /* 1 <= parts <= num_nodes */
	const char *method;     /* "metis" or "random" */
	uint64_t seed;
	int64_t metis_max_edges; /* sparsify METIS's input above this many edges */
};

struct pt_partition {
	int32_t num_parts;
	int32_t *part;      /* [num_nodes] partition of each original node */
	int64_t *offsets;   /* [num_parts + 1] new-ID boundaries */
	uint32_t num_types; /* the graph's */
	int64_t *type_offsets; /* [num_parts * num_types + 1] new-ID boundaries per (part, type) */
	int64_t *orig_id;   /* [num_nodes] new ID -> original (graph) ID */
	int64_t *new_id;    /* [num_nodes] original (graph) ID -> new ID */
	int64_t edge_cut;   /* stored edges (every relation) whose two ends lie in different partitions */
	int64_t train_moves; /* training nodes moved by the balance pass */
	int64_t metis_edges; /* directed edges METIS saw (0 for random) */
};

/* Partitions g as o says. *out (zeroed by the caller) owns its arrays:
 * pt_partition_free. GNN_EINVAL for a bad method or part count. */
int pt_partition_compute(const struct pt_graph *g, const struct pt_partition_opts *o, struct pt_partition *out);
void pt_partition_free(struct pt_partition *pt);

#endif
