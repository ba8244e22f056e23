/* partq.h - queries over one mapped partition (part.h): what a graph
 * store answers to SAMPLE, FEAT, LABEL, NODES and LOOKUP, and what the
 * sampler's in-process backend answers in its place, so that both give the
 * same answers bit for bit (the same sampled neighbours, the same rows).
 *
 * The queries check what they read (IDs owned by the partition, its CSR
 * rows sane: the in-process backend may map files it did not verify) and
 * say what is wrong in why (why_len bytes, NUL-terminated), naming the
 * node and its index in the request; a caller that words its own
 * refusals checks first. Nothing here allocates but the answers it says it
 * allocates; the partition and the request's arrays are borrowed. */
#ifndef GNN_PARTQ_H
#define GNN_PARTQ_H

#include <stddef.h>
#include <stdint.h>

#include "arr.h"
#include "layout.h"
#include "part.h"

/* A SAMPLE answer over one partition: for each requested node, node after
 * node, and each relation r, relation after relation, counts[i R + r]
 * neighbours sampled with gnn_sample_row, listed in nbrs in that order. */
struct gnn_partq_sample {
	uint64_t total;     /* neighbours in the answer (sum of counts) */
	uint32_t maxk;      /* the most neighbours one (node, relation) row gives */
	uint32_t *counts;   /* [n * num_rels], in mem */
	int64_t *nbrs;      /* [total], in mem */
	void *mem;          /* the one allocation behind them: gnn_partq_sample_free */
};

/* SAMPLE, first step: checks ids[0..n) (each owned by pt, its CSR rows
 * sane, at most 2^32 - 1 in-neighbours under any relation) and sizes the
 * answer of fanouts[0..pt->num_rels) (-1 all, 0 none) into s->total and
 * s->maxk; s holds no memory yet. GNN_ERANGE (a node not pt's, or with
 * too many neighbours) or GNN_EFORMAT (its rows corrupt), why naming the
 * node; s is then zeroed. */
int gnn_partq_sample_size(const struct gnn_part *pt, const int64_t *ids, uint32_t n, const int32_t *fanouts,
			  struct gnn_partq_sample *s, char *why, size_t why_len);

/* SAMPLE, second step, with the ids and fanouts s was sized for: samples
 * every row with the layer's seed (gnn_sample_row) into s->counts and
 * s->nbrs, one allocation that s owns (gnn_partq_sample_free, also safe
 * after an error). GNN_ENOMEM. */
int gnn_partq_sample(const struct gnn_part *pt, uint64_t seed, const int64_t *ids, uint32_t n,
		     const int32_t *fanouts, struct gnn_partq_sample *s);
void gnn_partq_sample_free(struct gnn_partq_sample *s);

/* FEAT: copies the feature rows of ids[0..n) (each owned by pt and of a
 * type whose rows are dim wide) into dst, n rows of dim elements of
 * pt->feat_dtype in ids order (dst is the caller's, n x dim x the dtype's
 * size bytes). GNN_ERANGE, why naming the node, for an ID not pt's or
 * whose type has no rows dim wide; dst is then written up to it. */
int gnn_partq_feat_rows(const struct gnn_part *pt, const int64_t *ids, uint32_t n, uint32_t dim, void *dst,
			char *why, size_t why_len);

/* LABEL: the labels of ids[0..n) (each owned by pt) into dst[0..n) (the
 * caller's). GNN_ERANGE, why naming the node, for an ID not pt's. */
int gnn_partq_labels(const struct gnn_part *pt, const int64_t *ids, uint32_t n, int32_t *dst, char *why,
		     size_t why_len);

/* NODES: pt's nodes of split code split, ascending from global ID cursor
 * on (a cursor before pt's first node starts there), at most limit of them:
 * *found (allocated here, never more than the nodes left: the caller's to
 * free, also when *n is 0) holds *n; *next is where to continue when the
 * limit stopped the walk with nodes left to look at, else -1. GNN_EINVAL
 * when pt has no split codes, GNN_ENOMEM; *found is then NULL. */
int gnn_partq_nodes(const struct gnn_part *pt, uint8_t split, int64_t cursor, uint32_t limit, int64_t **found,
		    uint32_t *n, int64_t *next);

/* LOOKUP: the global IDs of the nodes of type t of partition p whose
 * original IDs are orig[0..n), into out[0..n) (the caller's), -1 for those
 * p does not hold, from the graph's node map (gnn_node_map_open, checked
 * for p by gnn_partq_node_map_check) and layout l (both borrowed).
 * GNN_EINVAL, why saying so, for a type the graph does not have. */
int gnn_partq_lookup(const struct gnn_layout *l, const struct gnn_arr *map, uint32_t p, uint32_t t,
		     const int64_t *orig, uint32_t n, int64_t *out, char *why, size_t why_len);

/* Whether map can answer LOOKUP for partition p: a (partition, type)
 * range lists its nodes in original order, so their original IDs must
 * ascend. GNN_EFORMAT if not, logged (bad_partition) naming the output
 * folder dir and the first node out of order. */
int gnn_partq_node_map_check(const struct gnn_layout *l, const struct gnn_arr *map, uint32_t p, const char *dir);

#endif
