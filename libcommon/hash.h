/* hash.h - splitmix64, the one integer hash and random stream of gnn-dist.
 *
 * Every seeded choice (neighbour sampling, dropout masks, the synthetic
 * graph, partition splits, minibatch seeds) and every content hash (graph
 * IDs, configuration hashes) is built from these, so that processes agree
 * bit for bit. Changing them changes every params_crc and graph_id: don't.
 * Header-only: they sit in inner loops (a dropout mask bit per element). */
#ifndef GNN_HASH_H
#define GNN_HASH_H

#include <stdint.h>

/* 2^64 / golden ratio: splitmix64's increment. */
#define GNN_GOLDEN64 0x9e3779b97f4a7c15ull

/* splitmix64's finaliser (Stafford's Mix13): every input bit affects every
 * output bit. */
static inline uint64_t gnn_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The next output of the splitmix64 stream whose state is *state. */
static inline uint64_t gnn_splitmix64(uint64_t *state)
{
	*state += GNN_GOLDEN64;
	return gnn_mix64(*state);
}

/* Output i (0-based) of the splitmix64 stream started at key, without the
 * stream: a pure function of both (counter-based random numbers). */
static inline uint64_t gnn_draw64(uint64_t key, uint64_t i)
{
	return gnn_mix64(key + (i + 1) * GNN_GOLDEN64);
}

/* Folds v into the running hash h: content hashes (graph IDs, schema
 * digests) are chains of these. */
static inline uint64_t gnn_fold64(uint64_t h, uint64_t v)
{
	return gnn_mix64(h ^ gnn_mix64(v + GNN_GOLDEN64));
}

/* The top 53 bits of x as a double in [0, 1). */
static inline double gnn_unit64(uint64_t x)
{
	return (double)(x >> 11) * 0x1.0p-53;
}

#endif
