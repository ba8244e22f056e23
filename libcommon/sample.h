/* sample.h - the neighbour-sampling primitive every component agrees on.
 *
 * gnn_sample_choose picks k of a node's deg neighbours uniformly without
 * replacement, as a function of (seed, node, deg, k) only: the graph store
 * answering a request, a retry of it, and an in-process reference all pick
 * the same neighbours. */
#ifndef GNN_SAMPLE_H
#define GNN_SAMPLE_H

#include <stdint.h>

/* Writes to out the sorted positions (in [0, deg)) of the chosen neighbours
 * of node and returns how many: all deg of them when k < 0 or deg <= k,
 * else exactly k. out must hold min(deg, k) entries (deg when k < 0). */
uint32_t gnn_sample_choose(uint64_t seed, int64_t node, uint32_t deg, int32_t k, uint32_t *out);

/* How many of a row's deg neighbours fanout f takes (-1 all, 0 none):
 * what gnn_sample_row returns. */
uint64_t gnn_sample_count(uint64_t deg, int32_t f);

/* Samples one (node, relation) row, as every graph store answers SAMPLE:
 * of node's deg in-neighbours under relation rel, list[0..deg) (ascending),
 * the ones fanout f picks with the relation's seed (gnn_sample_rel_seed of
 * the layer's), into out in list order; returns how many
 * (gnn_sample_count). pos: scratch of min(deg, f) entries; out holds that
 * many, or deg when f < 0. */
uint32_t gnn_sample_row(uint64_t layer_seed, uint32_t rel, int64_t node, const int64_t *list, uint32_t deg,
			int32_t f, uint32_t *pos, int64_t *out);

/* Writes to out n distinct nodes of [0, num_nodes), drawn uniformly from a
 * stream seeded by (seed, i): batch i of a run. Deterministic, so two
 * processes (the sampling benchmark's two halves) draw the same batches.
 * Returns GNN_EINVAL unless 0 < n <= num_nodes, or GNN_ENOMEM. */
int gnn_sample_distinct(uint64_t seed, uint64_t i, int64_t num_nodes, uint32_t n, int64_t *out);

/* The seed for one layer of a minibatch: hashes (minibatch seed, layer). */
uint64_t gnn_sample_layer_seed(uint64_t seed, uint32_t layer);

/* The seed for one relation of a layer: relation 0 samples with the layer's
 * seed itself (so a one-relation graph samples as before relations
 * existed), every other with a hash of (layer seed, relation), so that a
 * node's lists under two relations are not drawn alike. */
uint64_t gnn_sample_rel_seed(uint64_t layer_seed, uint32_t rel);

#endif
