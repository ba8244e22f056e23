/* replica.h - which of a partition's graph stores (its replicas) a call
 * goes to: the one with the fewest calls in flight; those not usable now
 * (down, unconnected) or failed over from lately after the others; those
 * the call went to already last. Shared by the sampler's store backend
 * and the trainer's feature rows (docs/reliability.md, "Graph store
 * replicas"). */
#ifndef GNN_REPLICA_H
#define GNN_REPLICA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A partition has at most this many stores (a call keeps a bit for each
 * one it tried). */
#define GNN_MAX_REPLICAS 64
/* How long a store a call failed over from comes after the others: its
 * connection may look up while its host is gone. */
#define GNN_REPLICA_AVOID_S 2.0
/* A call's first attempt on each replica of a partition waits this many
 * times the replicas' recent slowest answer (gnn_replica_timeout_ms), and
 * at least GNN_REPLICA_MIN_TIMEOUT_MS: a frozen or vanished replica then
 * costs about that, not a fixed timeout, wherever the answers are fast. */
#define GNN_REPLICA_SLOW_FACTOR 8
#define GNN_REPLICA_MIN_TIMEOUT_MS 100

/* One store's standing, shared by the calls of every thread. */
struct gnn_replica {
	atomic_int inflight;        /* calls sent to it and not answered yet */
	_Atomic double avoid_until; /* gnn_replica_avoid: the others first until then */
	_Atomic double slow_s;      /* its answers' times, a maximum that decays a little at each
				     * answer (0: none yet) */
};

/* The position (0..k-1, k <= GNN_MAX_REPLICAS) in reps of the replica a
 * call goes to: the fewest in flight among those usable (usable[j]; NULL:
 * all), not avoided and not in tried (bits of positions); ties, and the
 * choice among equals, go round with *next. k == 1: 0. All borrowed. */
size_t gnn_replica_pick(struct gnn_replica *const *reps, const bool *usable, size_t k, uint64_t tried,
			atomic_uint *next);

/* A call to r is sent (begin) or answered or given up (end; answer_s:
 * the seconds from its request out to its answer, 0 when none came). */
void gnn_replica_begin(struct gnn_replica *r);
void gnn_replica_end(struct gnn_replica *r, double answer_s);
/* An answer of answer_s seconds from r (0: none), for
 * gnn_replica_timeout_ms, without counting calls in flight. */
void gnn_replica_observe(struct gnn_replica *r, double answer_s);

/* The attempt timeout of a call's first try on each of the k replicas in
 * reps (borrowed): GNN_REPLICA_SLOW_FACTOR x their largest slow_s, within
 * [GNN_REPLICA_MIN_TIMEOUT_MS, cap_ms]; cap_ms while none has answered. */
int gnn_replica_timeout_ms(struct gnn_replica *const *reps, size_t k, int cap_ms);

/* A call to r failed over to another replica: r comes after the others
 * for GNN_REPLICA_AVOID_S. */
void gnn_replica_avoid(struct gnn_replica *r);

#endif
