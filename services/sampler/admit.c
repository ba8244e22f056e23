#include "admit.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "sys.h"

struct waiter {
	struct waiter *next;
};

struct smp_admit {
	uint64_t budget, used;
	double wait_s;
	struct waiter *first, *last;  /* FIFO: the first waiter goes first */
	uint32_t admitted;            /* minibatches holding bytes */
	bool aborted;
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* CLOCK_MONOTONIC */
	struct gnn_gauge *g_used, *g_queued, *g_budget;
	struct gnn_counter *c_queued, *c_wait_s, *c_timeouts;
};

int smp_admit_new(const struct smp_admit_opts *o, struct smp_admit **out)
{
	struct smp_admit *a;
	int rc;

	if (o->budget_bytes == 0 || !(o->wait_s > 0) || o->metrics == NULL)
		return GNN_EINVAL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return GNN_ENOMEM;
	a->budget = o->budget_bytes;
	a->wait_s = o->wait_s;
	if ((rc = gnn_metrics_gauge(o->metrics, "gnn_sampler_admission_budget_bytes",
				    "Bytes of minibatches this sampler builds at once (--build-budget-mb)", NULL, 0,
				    &a->g_budget)) ||
	    (rc = gnn_metrics_gauge(o->metrics, "gnn_sampler_admission_used_bytes",
				    "Bytes of the minibatches being built now (their feature rows, held twice, and "
				    "message)", NULL, 0, &a->g_used)) ||
	    (rc = gnn_metrics_gauge(o->metrics, "gnn_sampler_admission_queued",
				    "Minibatches sampled and waiting for room in the budget", NULL, 0, &a->g_queued)) ||
	    (rc = gnn_metrics_counter(o->metrics, "gnn_sampler_admission_queued_total",
				      "Minibatches that had to wait for room in the budget", NULL, 0, &a->c_queued)) ||
	    (rc = gnn_metrics_counter(o->metrics, "gnn_sampler_admission_wait_seconds_total",
				      "Time minibatches waited for room in the budget", NULL, 0, &a->c_wait_s)) ||
	    (rc = gnn_metrics_counter(o->metrics, "gnn_sampler_admission_timeouts_total",
				      "Minibatches refused (busy) after waiting --admission-wait-s", NULL, 0,
				      &a->c_timeouts))) {
		free(a);
		return rc;
	}
	gnn_gauge_set(a->g_budget, (double)a->budget);
	if (gnn_sync_init(&a->mu, &a->cv) != GNN_OK) {
		free(a);
		return GNN_ENOMEM;
	}
	*out = a;
	return GNN_OK;
}

void smp_admit_free(struct smp_admit *a)
{
	if (a == NULL)
		return;
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

/* Under mu: w leaves the queue (wherever it is: one that gave up). */
static void unlink_waiter(struct smp_admit *a, struct waiter *w)
{
	struct waiter **p = &a->first, *prev = NULL;

	while (*p != NULL && *p != w) {
		prev = *p;
		p = &(*p)->next;
	}
	if (*p == NULL)
		return;
	*p = w->next;
	if (a->last == w)
		a->last = prev;
}

/* Under mu: whether w may go now: first in line, and its bytes fit (or
 * nothing else is being built: one over the whole budget runs alone). */
static bool admissible(const struct smp_admit *a, const struct waiter *w, uint64_t bytes)
{
	return a->first == w && (a->admitted == 0 || a->used + bytes <= a->budget);
}

/* Under mu: waits in line until admissible, aborted or the deadline. */
static int wait_turn(struct smp_admit *a, struct waiter *w, uint64_t bytes, double deadline)
{
	while (!a->aborted && !admissible(a, w, bytes)) {
		struct timespec ts;
		double left = deadline - gnn_now();

		if (left <= 0)
			return GNN_EUNAVAIL;
		gnn_deadline(CLOCK_MONOTONIC, left > 0.2 ? 200 : (long)(left * 1000) + 1, &ts);
		pthread_cond_timedwait(&a->cv, &a->mu, &ts);
	}
	return a->aborted ? GNN_ECLOSED : GNN_OK;
}

int smp_admit_acquire(struct smp_admit *a, uint64_t bytes)
{
	struct waiter w = { NULL };
	double t0 = gnn_now();
	bool queued;
	int rc;

	pthread_mutex_lock(&a->mu);
	if (a->last != NULL)
		a->last->next = &w;
	else
		a->first = &w;
	a->last = &w;
	queued = !admissible(a, &w, bytes);
	if (queued) {
		gnn_counter_inc(a->c_queued);
		gnn_gauge_add(a->g_queued, 1);
		GNN_DEBUG("admission_wait", "bytes=%" PRIu64 " used=%" PRIu64 " budget=%" PRIu64, bytes, a->used,
			  a->budget);
	}
	rc = wait_turn(a, &w, bytes, t0 + a->wait_s);
	unlink_waiter(a, &w);
	if (rc == GNN_OK) {
		a->used += bytes;
		a->admitted++;
		gnn_gauge_set(a->g_used, (double)a->used);
	}
	if (queued) {
		gnn_gauge_add(a->g_queued, -1);
		gnn_counter_add(a->c_wait_s, gnn_now() - t0);
	}
	pthread_cond_broadcast(&a->cv);   /* the next in line may fit too */
	pthread_mutex_unlock(&a->mu);
	if (rc == GNN_EUNAVAIL) {
		gnn_counter_inc(a->c_timeouts);
		GNN_WARN_LIMITED("admission_timeout", "bytes=%" PRIu64 " budget=%" PRIu64 " waited_s=%.1f reason=\"the "
				 "minibatches ahead did not finish in time (--admission-wait-s): answered busy\"",
				 bytes, a->budget, gnn_now() - t0);
	}
	return rc;
}

void smp_admit_release(struct smp_admit *a, uint64_t bytes)
{
	pthread_mutex_lock(&a->mu);
	a->used = a->used >= bytes ? a->used - bytes : 0;
	a->admitted--;
	gnn_gauge_set(a->g_used, (double)a->used);
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

void smp_admit_abort(struct smp_admit *a)
{
	pthread_mutex_lock(&a->mu);
	a->aborted = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

uint64_t smp_admit_default_budget(void)
{
	uint64_t cap = (uint64_t)SMP_ADMIT_DEFAULT_MB << 20, limit = gnn_memory_limit_bytes();

	return limit > 0 && limit / 2 < cap ? limit / 2 : cap;
}
