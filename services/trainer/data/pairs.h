/* pairs.h - link prediction's minibatches of node pairs (docs/training.md,
 * "Link prediction"): the training edges of a partition output, uniform
 * negative destinations, and steps of pairs laid out as the loader's
 * variable-sized jobs (loader.h, tr_job's step_off and excl). */
#ifndef TR_PAIRS_H
#define TR_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "part.h"

/* Steps of pairs. Step k asks the sampler for seeds[step_off[k] ..
 * step_off[k+1]), the unique endpoints of its pairs in order of first
 * appearance; its pairs are pairs[2 pair_off[k] .. 2 pair_off[k+1]) as
 * indices into those seeds, the first npos(k) = excl_off[k+1] -
 * excl_off[k] positives, the rest negatives; excl holds the positives as
 * global (u, v) pairs (the exclusion list). Every array is the struct's;
 * a zeroed struct is empty. */
struct tr_pair_steps {
	size_t steps;
	int64_t *seeds, *excl;
	size_t *step_off, *excl_off, *pair_off;   /* [steps + 1] each */
	uint32_t *pairs;
	size_t cap_steps, cap_seeds, cap_excl, cap_pairs;
	int64_t *hkeys;                           /* scratch: open addressing, gid -> local index */
	uint32_t *hvals;
	size_t hcap;
};

/* Empties s (keeps its memory). */
void tr_pair_steps_reset(struct tr_pair_steps *s);
/* Appends one step of npos positives and nneg negatives (global (u, v)
 * pairs, [2 npos] and [2 nneg], the caller's). GNN_ENOMEM; GNN_ERANGE when
 * the step has more than 2^31 endpoints. */
int tr_pair_steps_add(struct tr_pair_steps *s, const int64_t *pos, size_t npos, const int64_t *neg, size_t nneg);
void tr_pair_steps_free(struct tr_pair_steps *s);

/* The training edges of relation rel in the output in dir (m its
 * meta.json): the relation's edges left in the partitions' CSRs, as
 * docs/partitioning.md ("Edge split") defines them: partition p's stored
 * edges u -> v of rel (v owned by p), those with u < v only when rel joins
 * a type to itself (both directions are stored). Partition order, then
 * destination, then source. *pairs ([2 *n] (u, v), malloc'd) is the
 * caller's. The partitions are mapped, not read whole. */
int tr_train_edges(const char *dir, const struct gnn_meta *m, uint32_t rel, int64_t **pairs, size_t *n);

/* Node j (0 .. num_nodes of t - 1) of type t in global IDs: type t's
 * ranges partition after partition. */
int64_t tr_type_node(const struct gnn_layout *g, uint32_t t, int64_t j);

#endif
