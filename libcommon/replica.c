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
		if (tried >> i & 1)
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

/* slow_s loses this fraction at each answer: a burst of slow answers
 * weighs for a few hundred answers, not for good. */
#define SLOW_DECAY (1.0 / 64)

void gnn_replica_observe(struct gnn_replica *r, double answer_s)
{
	if (answer_s > 0) {
		double old = atomic_load(&r->slow_s), now = old * (1 - SLOW_DECAY);

		/* (a lost race loses one sample of a statistic) */
		atomic_compare_exchange_strong(&r->slow_s, &old, answer_s > now ? answer_s : now);
	}
}

void gnn_replica_end(struct gnn_replica *r, double answer_s)
{
	atomic_fetch_sub(&r->inflight, 1);
	gnn_replica_observe(r, answer_s);
}

int gnn_replica_timeout_ms(struct gnn_replica *const *reps, size_t k, int cap_ms)
{
	double slow = 0, ms;

	for (size_t i = 0; i < k; i++)
		if (atomic_load(&reps[i]->slow_s) > slow)
			slow = atomic_load(&reps[i]->slow_s);
	if (!(slow > 0))
		return cap_ms;
	ms = GNN_REPLICA_SLOW_FACTOR * slow * 1000.0;
	if (ms < GNN_REPLICA_MIN_TIMEOUT_MS)
		ms = GNN_REPLICA_MIN_TIMEOUT_MS;
	return ms < cap_ms ? (int)ms : cap_ms;
}

void gnn_replica_avoid(struct gnn_replica *r)
{
	atomic_store(&r->avoid_until, gnn_now() + GNN_REPLICA_AVOID_S);
}
