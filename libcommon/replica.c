/* replica.c - see replica.h. */
#include "replica.h"

#include <limits.h>

#include "sys.h"

size_t gnn_replica_pick(struct gnn_replica *const *reps, const bool *usable, size_t k, uint64_t tried,
			atomic_uint *next)
{
	size_t start, best = 0;
	long long best_score = LLONG_MAX;
	double now;

	if (k <= 1)
		return 0;
	start = atomic_fetch_add(next, 1) % k;
	now = gnn_now();
	for (size_t j = 0; j < k; j++) {
		size_t i = (start + j) % k;
		long long score = atomic_load(&reps[i]->inflight);

		if ((usable != NULL && !usable[i]) || now < atomic_load(&reps[i]->avoid_until))
			score += 1LL << 32;
		if (i < 64 && (tried >> i & 1))
			score += 1LL << 48;
		if (score < best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

void gnn_replica_begin(struct gnn_replica *r)
{
	atomic_fetch_add(&r->inflight, 1);
}

void gnn_replica_end(struct gnn_replica *r)
{
	atomic_fetch_sub(&r->inflight, 1);
}

void gnn_replica_avoid(struct gnn_replica *r)
{
	atomic_store(&r->avoid_until, gnn_now() + GNN_REPLICA_AVOID_S);
}
