/* admit.h - the sampler's admission control: a budget of bytes for the
 * minibatches being built at once (docs/sampler.md, "Admission").
 *
 * A minibatch's feature rows dominate its memory: the graph stores'
 * answers and the reply message each hold them while it is assembled. At
 * ogbn-products' size one minibatch has ~600k input nodes, 240 MB of rows,
 * and eight built at once took a sampler to 2.6 GB and queued so many
 * store calls that they timed out. So a minibatch, once its blocks are
 * sampled and its size is known, waits here until its bytes fit the
 * budget; the rest wait in arrival order (first come, first served: a
 * large one is not overtaken for ever by small ones). One larger than the
 * whole budget runs when nothing else does. */
#ifndef SMP_ADMIT_H
#define SMP_ADMIT_H

#include <stdint.h>

#include "metrics.h"

struct smp_admit_opts {
	uint64_t budget_bytes;        /* > 0 */
	double wait_s;                /* longest wait for admission (> 0) */
	struct gnn_metrics *metrics;  /* borrowed; gnn_sampler_admission_* */
};

struct smp_admit;

/* *out is the caller's: smp_admit_free (after every acquire returned). */
int smp_admit_new(const struct smp_admit_opts *o, struct smp_admit **out);
void smp_admit_free(struct smp_admit *a);

/* Waits until bytes fit the budget, at most wait_s. GNN_OK: admitted, and
 * smp_admit_release(a, bytes) must follow. GNN_EUNAVAIL: the wait timed out
 * (counted; the caller answers "busy" and the trainer asks another
 * replica). GNN_ECLOSED: smp_admit_abort was called. Any thread. */
int smp_admit_acquire(struct smp_admit *a, uint64_t bytes);
void smp_admit_release(struct smp_admit *a, uint64_t bytes);

/* Ends every wait with GNN_ECLOSED, now and later (the process stops). */
void smp_admit_abort(struct smp_admit *a);

/* The default budget: half the memory limit of the process's cgroup when
 * it has one, capped at SMP_ADMIT_DEFAULT_MB. */
#define SMP_ADMIT_DEFAULT_MB 512
uint64_t smp_admit_default_budget(void);

#endif
