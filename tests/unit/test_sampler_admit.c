/* The sampler's admission control (services/sampler/admit.h): a budget of
 * bytes, first come first served, one over the whole budget alone, a
 * bounded wait, abort; and its metrics. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "admit.h"
#include "err.h"
#include "log.h"
#include "metrics.h"
#include "sys.h"
#include "testlib.h"

static struct gnn_metrics *reg;
static struct smp_admit *adm;

static void open_admit(uint64_t budget, double wait_s)
{
	gnn_metrics_free(reg);
	smp_admit_free(adm);
	reg = NULL;
	adm = NULL;
	if (gnn_metrics_new(&reg) == GNN_OK)
		smp_admit_new(&(struct smp_admit_opts){ .budget_bytes = budget, .wait_s = wait_s, .metrics = reg },
			      &adm);
}

static double metric(const char *name)
{
	char *text = NULL;
	double v = NAN;

	if (gnn_metrics_render(reg, &text, NULL) == GNN_OK)
		v = t_sample_value(text, name);
	free(text);
	return v;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A waiter on its own thread: acquires bytes, notes when (order), holds
 * until told to release. */
struct waiter {
	pthread_t th;
	uint64_t bytes;
	int rc;
	atomic_int order;       /* 0: not admitted (yet) */
	atomic_bool release;
};

static atomic_int admitted_count;   /* order of admission, for waiter.order */

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = smp_admit_acquire(adm, w->bytes);
	if (w->rc != GNN_OK)
		return NULL;
	atomic_store(&w->order, atomic_fetch_add(&admitted_count, 1) + 1);
	while (!atomic_load(&w->release))
		sleep_ms(5);
	smp_admit_release(adm, w->bytes);
	return NULL;
}

static void start_waiter(struct waiter *w, uint64_t bytes)
{
	*w = (struct waiter){ .bytes = bytes };
	atomic_init(&w->order, 0);
	atomic_init(&w->release, false);
	pthread_create(&w->th, NULL, waiter_main, w);
}

static void finish_waiter(struct waiter *w)
{
	atomic_store(&w->release, true);
	pthread_join(w->th, NULL);
}

static bool wait_admitted(struct waiter *w, double s)
{
	double until = gnn_now() + s;

	while (atomic_load(&w->order) == 0 && gnn_now() < until)
		sleep_ms(5);
	return atomic_load(&w->order) != 0;
}

static void test_admit_within_budget(void)
{
	open_admit(100, 5);
	if (!CHECK(adm != NULL))
		return;
	CHECK(smp_admit_acquire(adm, 40) == GNN_OK);
	CHECK(smp_admit_acquire(adm, 60) == GNN_OK);
	CHECK(metric("gnn_sampler_admission_used_bytes") == 100);
	CHECK(metric("gnn_sampler_admission_budget_bytes") == 100);
	CHECK(metric("gnn_sampler_admission_queued_total") == 0);
	smp_admit_release(adm, 40);
	smp_admit_release(adm, 60);
	CHECK(metric("gnn_sampler_admission_used_bytes") == 0);
}

/* Held 80 of 100: a 90 waits; a 20 that would fit waits behind it (first
 * come, first served). Once the 80 goes, the 90 goes, and the 20 waits
 * for room again. */
static void test_admit_fifo(void)
{
	struct waiter a, b;

	open_admit(100, 10);
	if (!CHECK(adm != NULL) || !CHECK(smp_admit_acquire(adm, 80) == GNN_OK))
		return;
	start_waiter(&a, 90);
	sleep_ms(100);
	start_waiter(&b, 20);
	sleep_ms(200);
	CHECK(atomic_load(&a.order) == 0);
	CHECK(atomic_load(&b.order) == 0);   /* fits, but a came first */
	CHECK(metric("gnn_sampler_admission_queued") == 2);
	smp_admit_release(adm, 80);
	CHECK(wait_admitted(&a, 5));
	sleep_ms(100);
	CHECK(atomic_load(&b.order) == 0);   /* 90 + 20 do not fit */
	CHECK(metric("gnn_sampler_admission_used_bytes") == 90);
	finish_waiter(&a);
	CHECK(wait_admitted(&b, 5));
	CHECK(metric("gnn_sampler_admission_queued") == 0);
	CHECK(metric("gnn_sampler_admission_queued_total") == 2);
	CHECK(metric("gnn_sampler_admission_wait_seconds_total") > 0.2);
	finish_waiter(&b);
	CHECK(metric("gnn_sampler_admission_used_bytes") == 0);
}

/* One larger than the whole budget runs when nothing else does, and alone. */
static void test_admit_oversized(void)
{
	struct waiter a;

	open_admit(100, 10);
	if (!CHECK(adm != NULL) || !CHECK(smp_admit_acquire(adm, 500) == GNN_OK))
		return;
	start_waiter(&a, 10);
	sleep_ms(150);
	CHECK(atomic_load(&a.order) == 0);
	smp_admit_release(adm, 500);
	CHECK(wait_admitted(&a, 5));
	finish_waiter(&a);
}

/* A wait that times out answers GNN_EUNAVAIL, is counted, and leaves the
 * line: those behind it are not blocked by its place. */
static void test_admit_timeout(void)
{
	struct waiter a, b;
	double t0;

	open_admit(100, 0.3);
	if (!CHECK(adm != NULL) || !CHECK(smp_admit_acquire(adm, 100) == GNN_OK))
		return;
	t0 = gnn_now();
	start_waiter(&a, 50);
	pthread_join(a.th, NULL);
	CHECK(a.rc == GNN_EUNAVAIL);
	CHECK(gnn_now() - t0 >= 0.25);
	CHECK(metric("gnn_sampler_admission_timeouts_total") == 1);
	CHECK(metric("gnn_sampler_admission_queued") == 0);
	start_waiter(&b, 50);
	sleep_ms(50);
	smp_admit_release(adm, 100);
	CHECK(wait_admitted(&b, 5));
	finish_waiter(&b);
}

static void test_admit_abort(void)
{
	struct waiter a;

	open_admit(100, 30);
	if (!CHECK(adm != NULL) || !CHECK(smp_admit_acquire(adm, 100) == GNN_OK))
		return;
	start_waiter(&a, 50);
	sleep_ms(100);
	smp_admit_abort(adm);
	pthread_join(a.th, NULL);
	CHECK(a.rc == GNN_ECLOSED);
	CHECK(smp_admit_acquire(adm, 1) == GNN_ECLOSED);
	smp_admit_release(adm, 100);
}

static void test_admit_bad_options(void)
{
	struct smp_admit *a = NULL;
	struct gnn_metrics *m = NULL;

	if (!CHECK(gnn_metrics_new(&m) == GNN_OK))
		return;
	CHECK(smp_admit_new(&(struct smp_admit_opts){ .budget_bytes = 0, .wait_s = 1, .metrics = m }, &a) == GNN_EINVAL);
	CHECK(smp_admit_new(&(struct smp_admit_opts){ .budget_bytes = 1, .wait_s = 0, .metrics = m }, &a) == GNN_EINVAL);
	CHECK(smp_admit_new(&(struct smp_admit_opts){ .budget_bytes = 1, .wait_s = 1 }, &a) == GNN_EINVAL);
	CHECK(a == NULL);
	CHECK(smp_admit_default_budget() > 0 && smp_admit_default_budget() <= (uint64_t)SMP_ADMIT_DEFAULT_MB << 20);
	gnn_metrics_free(m);
}

int main(void)
{
	gnn_log_init("test_sampler_admit");
	gnn_log_set_level(GNN_LOG_ERROR);
	RUN(test_admit_within_budget);
	RUN(test_admit_fifo);
	RUN(test_admit_oversized);
	RUN(test_admit_timeout);
	RUN(test_admit_abort);
	RUN(test_admit_bad_options);
	smp_admit_free(adm);
	gnn_metrics_free(reg);
	return t_done();
}
