/* test_metrics.c - the Prometheus registry: validation, exact rendering,
 * concurrency, process metrics and `promtool check metrics`. */
#include "err.h"
#include "log.h"
#include "metrics.h"
#include "testlib.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROMTOOL "/usr/bin/promtool"

static char *render(struct gnn_metrics *reg)
{
	char *text = NULL;
	size_t len = 0;

	if (!CHECK(gnn_metrics_render(reg, &text, &len) == GNN_OK) || !CHECK(text != NULL))
		return NULL;
	CHECK(strlen(text) == len);
	return text;
}

/* True when text holds line as a whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

static void test_render_exact(void)
{
	static const char *const kind[] = { "kind" };
	static const double bounds[] = { 0.25, 1 };
	struct gnn_metrics *reg;
	struct gnn_counter *c;
	struct gnn_gauge *g, *ga, *gb;
	struct gnn_histogram *h;
	char *text;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "gnn_batches_total", "Batches trained.", NULL, 0, &c) == GNN_OK);
	CHECK(gnn_metrics_gauge(reg, "gnn_queue_depth", "Requests waiting.", kind, 1, &g) == GNN_OK);
	CHECK(gnn_metrics_histogram(reg, "gnn_step_seconds", "Step time.", NULL, 0, bounds, 2, &h) ==
	      GNN_OK);
	CHECK(gnn_gauge_labels(g, (const char *const[]){ "sample" }, 1, &ga) == GNN_OK);
	CHECK(gnn_gauge_labels(g, (const char *const[]){ "train" }, 1, &gb) == GNN_OK);
	gnn_counter_inc(c);
	gnn_counter_add(c, 1.5);
	gnn_gauge_set(ga, 7);
	gnn_gauge_add(gb, -2.5);
	gnn_histogram_observe(h, 0.125);
	gnn_histogram_observe(h, 0.5);
	gnn_histogram_observe(h, 3);
	if ((text = render(reg)) == NULL)
		goto out;
	CHECK(strcmp(text,
		     "# HELP gnn_batches_total Batches trained.\n"
		     "# TYPE gnn_batches_total counter\n"
		     "gnn_batches_total 2.5\n"
		     "# HELP gnn_queue_depth Requests waiting.\n"
		     "# TYPE gnn_queue_depth gauge\n"
		     "gnn_queue_depth{kind=\"sample\"} 7\n"
		     "gnn_queue_depth{kind=\"train\"} -2.5\n"
		     "# HELP gnn_step_seconds Step time.\n"
		     "# TYPE gnn_step_seconds histogram\n"
		     "gnn_step_seconds_bucket{le=\"0.25\"} 1\n"
		     "gnn_step_seconds_bucket{le=\"1\"} 2\n"
		     "gnn_step_seconds_bucket{le=\"+Inf\"} 3\n"
		     "gnn_step_seconds_sum 3.625\n"
		     "gnn_step_seconds_count 3\n") == 0);
	free(text);
out:
	gnn_metrics_free(reg);
}

static void test_empty_registry(void)
{
	struct gnn_metrics *reg;
	char *text;
	size_t len = 99;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_render(reg, &text, &len) == GNN_OK);
	CHECK(len == 0 && text != NULL && text[0] == '\0');
	free(text);
	CHECK(gnn_metrics_render(NULL, &text, &len) == GNN_EINVAL);
	gnn_metrics_free(reg);
	gnn_metrics_free(NULL);
}

static void test_bad_names(void)
{
	static const char *const bad_counters[] = {
		"", "1abc_total", "a-b_total", "a b_total", "é_total", "requests", "a_total\n",
	};
	static const char *const bad_gauges[] = {
		"", "9", "x.y", "queue_total", "queue_bucket", "queue_count", "queue_sum",
	};
	static const char *const bad_labels[] = { "", "1x", "a-b", "__name", "le", "quantile", "é" };
	static const double unsorted[] = { 1, 0.5 }, repeated[] = { 1, 1 };
	static const double with_nan[] = { 1, NAN }, with_inf[] = { 1, INFINITY };
	static char sentinel_storage;
	struct gnn_counter *const sentinel = (struct gnn_counter *)(void *)&sentinel_storage;
	struct gnn_counter *c = sentinel; /* must stay untouched on failure */
	struct gnn_metrics *reg;
	struct gnn_gauge *g = NULL;
	struct gnn_histogram *h = NULL;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	for (size_t i = 0; i < sizeof(bad_counters) / sizeof(*bad_counters); i++)
		CHECK(gnn_metrics_counter(reg, bad_counters[i], "h", NULL, 0, &c) == GNN_EINVAL);
	CHECK(c == sentinel);
	for (size_t i = 0; i < sizeof(bad_gauges) / sizeof(*bad_gauges); i++)
		CHECK(gnn_metrics_gauge(reg, bad_gauges[i], "h", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_histogram(reg, "lat_count", "h", NULL, 0, NULL, 0, &h) == GNN_EINVAL);
	CHECK(gnn_metrics_histogram(reg, "lat_total", "h", NULL, 0, NULL, 0, &h) == GNN_EINVAL);
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(*bad_labels); i++) {
		const char *const l[] = { bad_labels[i] };

		CHECK(gnn_metrics_gauge(reg, "g_ok", "h", l, 1, &g) == GNN_EINVAL);
	}
	CHECK(gnn_metrics_gauge(reg, "g_ok", "h", (const char *const[]){ "a", "a" }, 2, &g) ==
	      GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "h", (const char *const[]){ "a", "b", "c", "d", "e" },
				5, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "h", (const char *const[]){ "a", NULL }, 2, &g) ==
	      GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "h", NULL, 1, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", NULL, NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "bad \xff utf8", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "overlong \xc0\xaf", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "surrogate \xed\xa0\x80", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, NULL, "h", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(NULL, "g_ok", "h", NULL, 0, &g) == GNN_EINVAL);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "h", NULL, 0, NULL) == GNN_EINVAL);
	CHECK(g == NULL);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", NULL, 0, unsorted, 2, &h) == GNN_EINVAL);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", NULL, 0, repeated, 2, &h) == GNN_EINVAL);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", NULL, 0, with_nan, 2, &h) == GNN_EINVAL);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", NULL, 0, with_inf, 2, &h) == GNN_EINVAL);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", NULL, 0, NULL, 2, &h) == GNN_EINVAL);
	CHECK(h == NULL);

	/* The good spellings of the same things are accepted. */
	CHECK(gnn_metrics_counter(reg, "ns:a_b9_total", "h \xc3\xa9", NULL, 0, &c) == GNN_OK);
	CHECK(gnn_metrics_gauge(reg, "g_ok", "h", (const char *const[]){ "_a", "b2", "c", "d" }, 4,
				&g) == GNN_OK);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", (const char *const[]){ "op" }, 1, NULL, 0,
				    &h) == GNN_OK);
	gnn_metrics_free(reg);
}

static void test_duplicates_and_find(void)
{
	struct gnn_metrics *reg;
	struct gnn_counter *c, *c2 = NULL, *found = NULL;
	struct gnn_gauge *g, *gfound = NULL;
	struct gnn_histogram *h, *hfound = NULL;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "a_total", "h", NULL, 0, &c) == GNN_OK);
	CHECK(gnn_metrics_counter(reg, "a_total", "other help", NULL, 0, &c2) == GNN_EEXIST);
	CHECK(c2 == NULL);
	CHECK(gnn_metrics_gauge(reg, "b", "h", NULL, 0, &g) == GNN_OK);
	CHECK(gnn_metrics_histogram(reg, "b", "h", NULL, 0, NULL, 0, &h) == GNN_EEXIST);
	CHECK(gnn_metrics_histogram(reg, "lat", "h", NULL, 0, NULL, 0, &h) == GNN_OK);

	CHECK(gnn_metrics_find_counter(reg, "a_total", &found) == GNN_OK && found == c);
	CHECK(gnn_metrics_find_gauge(reg, "b", &gfound) == GNN_OK && gfound == g);
	CHECK(gnn_metrics_find_histogram(reg, "lat", &hfound) == GNN_OK && hfound == h);
	found = NULL;
	CHECK(gnn_metrics_find_counter(reg, "nope_total", &found) == GNN_ENOENT && found == NULL);
	CHECK(gnn_metrics_find_counter(reg, "b", &found) == GNN_EINVAL && found == NULL);
	gnn_metrics_free(reg);
}

static void test_labels(void)
{
	static const char *const names[] = { "op", "part" };
	struct gnn_metrics *reg;
	struct gnn_counter *fam, *a, *a2, *b, *via_child, *none = NULL;
	char *text;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "ops_total", "h", names, 2, &fam) == GNN_OK);
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "sample", "0" }, 2, &a) == GNN_OK);
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "sample", "0" }, 2, &a2) == GNN_OK);
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "sample", "1" }, 2, &b) == GNN_OK);
	CHECK(a == a2 && a != b && a != fam);
	CHECK(gnn_counter_labels(b, (const char *const[]){ "sample", "0" }, 2, &via_child) ==
	      GNN_OK);
	CHECK(via_child == a);

	CHECK(gnn_counter_labels(fam, (const char *const[]){ "sample" }, 1, &none) == GNN_EINVAL);
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "sample", NULL }, 2, &none) ==
	      GNN_EINVAL);
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "sample", "\xff" }, 2, &none) ==
	      GNN_EINVAL);
	CHECK(gnn_counter_labels(fam, NULL, 2, &none) == GNN_EINVAL);
	CHECK(none == NULL);

	gnn_counter_add(a, 2);
	gnn_counter_inc(b);
	gnn_counter_inc(fam); /* a bug: logged and ignored */
	CHECK(gnn_counter_value(fam) == 0);
	if ((text = render(reg)) == NULL)
		goto out;
	CHECK(has_line(text, "ops_total{op=\"sample\",part=\"0\"} 2"));
	CHECK(has_line(text, "ops_total{op=\"sample\",part=\"1\"} 1"));
	CHECK(strstr(text, "ops_total 0") == NULL && strstr(text, "ops_total 1") == NULL);
	free(text);
out:
	gnn_metrics_free(reg);
}

static void test_escaping(void)
{
	struct gnn_metrics *reg;
	struct gnn_gauge *g, *s;
	char *text;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_gauge(reg, "esc", "Back\\slash, \"quote\"\nand newline.",
				(const char *const[]){ "v" }, 1, &g) == GNN_OK);
	CHECK(gnn_gauge_labels(g, (const char *const[]){ "a\\b\"c\nd \xc3\xa9" }, 1, &s) == GNN_OK);
	gnn_gauge_set(s, 1);
	if ((text = render(reg)) == NULL)
		goto out;
	CHECK(has_line(text, "# HELP esc Back\\\\slash, \"quote\"\\nand newline."));
	CHECK(has_line(text, "esc{v=\"a\\\\b\\\"c\\nd \xc3\xa9\"} 1"));
	free(text);
out:
	gnn_metrics_free(reg);
}

static void test_values_and_formatting(void)
{
	static const char *const k[] = { "k" };
	static const struct {
		const char *label;
		double v;
		const char *want;
	} cases[] = {
		{ "tenth", 0.1, "0.1" },           { "big", 1e21, "1e+21" },
		{ "third", 1.0 / 3, "0.33333333333333331" },
		{ "million", 1e6, "1000000" },     { "neg", -42, "-42" },
		{ "pinf", INFINITY, "+Inf" },      { "ninf", -INFINITY, "-Inf" },
		{ "nan", NAN, "NaN" },
	};
	struct gnn_metrics *reg;
	struct gnn_gauge *g, *s;
	struct gnn_counter *c;
	char *text, line[128];

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_gauge(reg, "fmt", "h", k, 1, &g) == GNN_OK);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		CHECK(gnn_gauge_labels(g, (const char *const[]){ cases[i].label }, 1, &s) == GNN_OK);
		gnn_gauge_set(s, cases[i].v);
	}
	CHECK(gnn_metrics_counter(reg, "mono_total", "h", NULL, 0, &c) == GNN_OK);
	gnn_counter_add(c, 3);
	gnn_counter_add(c, -1);  /* counters never go down */
	gnn_counter_add(c, NAN); /* and never become NaN */
	CHECK(gnn_counter_value(c) == 3);
	if ((text = render(reg)) == NULL)
		goto out;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		snprintf(line, sizeof(line), "fmt{k=\"%s\"} %s", cases[i].label, cases[i].want);
		if (!CHECK(has_line(text, line)))
			printf("  missing: %s\n", line);
	}
	CHECK(has_line(text, "mono_total 3"));
	free(text);
out:
	gnn_metrics_free(reg);
}

static void test_histogram_exact(void)
{
	/* Binary fractions, so the expected sum is exact. */
	static const double bounds[] = { 0.25, 0.5, 1, 4 };
	static const double obs[] = { 0.125, 0.25, 0.375, 0.5, 0.75, 1, 2, 8, 64 };
	struct gnn_metrics *reg;
	struct gnn_histogram *fam, *h;
	char *text;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_histogram(reg, "rpc_seconds", "h", (const char *const[]){ "peer" }, 1,
				    bounds, 4, &fam) == GNN_OK);
	CHECK(gnn_histogram_labels(fam, (const char *const[]){ "w1" }, 1, &h) == GNN_OK);
	for (size_t i = 0; i < sizeof(obs) / sizeof(*obs); i++)
		gnn_histogram_observe(h, obs[i]);
	gnn_histogram_observe(h, NAN); /* ignored */
	gnn_histogram_observe(fam, 1); /* parent handle: ignored */
	if ((text = render(reg)) == NULL)
		goto out;
	CHECK(has_line(text, "rpc_seconds_bucket{peer=\"w1\",le=\"0.25\"} 2"));
	CHECK(has_line(text, "rpc_seconds_bucket{peer=\"w1\",le=\"0.5\"} 4"));
	CHECK(has_line(text, "rpc_seconds_bucket{peer=\"w1\",le=\"1\"} 6"));
	CHECK(has_line(text, "rpc_seconds_bucket{peer=\"w1\",le=\"4\"} 7"));
	CHECK(has_line(text, "rpc_seconds_bucket{peer=\"w1\",le=\"+Inf\"} 9"));
	CHECK(has_line(text, "rpc_seconds_sum{peer=\"w1\"} 77"));
	CHECK(has_line(text, "rpc_seconds_count{peer=\"w1\"} 9"));
	free(text);
out:
	gnn_metrics_free(reg);
}

static void test_bucket_helpers(void)
{
	double b[5] = { -1, -1, -1, -1, -1 };

	CHECK(gnn_metrics_exp_buckets(0.001, 10, 4, b) == GNN_OK);
	CHECK(b[0] == 0.001 && fabs(b[3] - 1.0) < 1e-12 && b[4] == -1);
	CHECK(gnn_metrics_exp_buckets(1, 2, 5, b) == GNN_OK);
	CHECK(b[0] == 1 && b[1] == 2 && b[2] == 4 && b[3] == 8 && b[4] == 16);
	CHECK(gnn_metrics_linear_buckets(-1, 0.5, 5, b) == GNN_OK);
	CHECK(b[0] == -1 && b[1] == -0.5 && b[2] == 0 && b[3] == 0.5 && b[4] == 1);

	b[0] = 123;
	CHECK(gnn_metrics_exp_buckets(0, 2, 3, b) == GNN_EINVAL);
	CHECK(gnn_metrics_exp_buckets(1, 1, 3, b) == GNN_EINVAL);
	CHECK(gnn_metrics_exp_buckets(1, 2, 0, b) == GNN_EINVAL);
	CHECK(gnn_metrics_exp_buckets(1e300, 1e10, 3, b) == GNN_EINVAL);
	CHECK(gnn_metrics_exp_buckets(1, 2, GNN_METRICS_MAX_BUCKETS + 1, b) == GNN_EINVAL);
	CHECK(gnn_metrics_linear_buckets(0, 0, 3, b) == GNN_EINVAL);
	CHECK(gnn_metrics_linear_buckets(0, 1, 3, NULL) == GNN_EINVAL);
	CHECK(b[0] == 123);
}

static void test_series_limit(void)
{
	struct gnn_metrics *reg;
	struct gnn_counter *fam, *c = NULL;
	char v[16];
	int i;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "ids_total", "h", (const char *const[]){ "id" }, 1, &fam) ==
	      GNN_OK);
	for (i = 0; i < GNN_METRICS_MAX_SERIES; i++) {
		snprintf(v, sizeof(v), "%d", i);
		if (gnn_counter_labels(fam, (const char *const[]){ v }, 1, &c) != GNN_OK)
			break;
	}
	CHECK(i == GNN_METRICS_MAX_SERIES);
	c = NULL;
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "one-more" }, 1, &c) == GNN_ERANGE);
	CHECK(c == NULL);
	CHECK(gnn_counter_labels(fam, (const char *const[]){ "7" }, 1, &c) == GNN_OK && c != NULL);
	gnn_metrics_free(reg);
}

/* --- concurrency -------------------------------------------------------- */

#define THREADS 4
#define ITERS 100000

/* Spins until every worker runs, so updates really contend: a sleeping
 * barrier wakes threads one by one, and on a small machine each may then
 * finish before the next starts, hiding a lost-update bug. */
static void start_line(atomic_int *started)
{
	atomic_fetch_add(started, 1);
	while (atomic_load(started) < THREADS)
		;
}

struct inc_arg {
	struct gnn_counter *c;
	atomic_int *started;
};

static void *inc_worker(void *p)
{
	struct inc_arg *a = p;

	start_line(a->started);
	for (int i = 0; i < ITERS; i++)
		gnn_counter_inc(a->c);
	return NULL;
}

static void test_concurrent_counter(void)
{
	struct gnn_metrics *reg;
	struct gnn_counter *c;
	struct inc_arg arg;
	pthread_t tids[THREADS];
	atomic_int started = 0;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "hits_total", "h", NULL, 0, &c) == GNN_OK);
	arg = (struct inc_arg){ c, &started };
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&tids[i], NULL, inc_worker, &arg) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(tids[i], NULL);
	if (!CHECK(gnn_counter_value(c) == THREADS * ITERS))
		printf("  hits_total=%.0f want %d\n", gnn_counter_value(c), THREADS * ITERS);
	gnn_metrics_free(reg);
}

struct mixed_arg {
	struct gnn_counter *secs;
	struct gnn_counter *labelled; /* family: each thread looks its series up */
	struct gnn_gauge *g;
	struct gnn_histogram *h;
	struct gnn_counter *looked_up;
	atomic_int *started;
};

static void *mixed_worker(void *p)
{
	struct mixed_arg *a = p;
	int err;

	/* Takes the registry lock, so it comes before the start line. */
	err = gnn_counter_labels(a->labelled, (const char *const[]){ "shared" }, 1, &a->looked_up);
	start_line(a->started);
	for (int i = 0; err == GNN_OK && i < ITERS; i++) {
		gnn_counter_add(a->secs, 0.5);
		gnn_counter_inc(a->looked_up);
		gnn_gauge_add(a->g, 1);
		gnn_gauge_add(a->g, -1);
		gnn_histogram_observe(a->h, (double)(i % 4));
	}
	return NULL;
}

struct render_arg {
	struct gnn_metrics *reg;
	atomic_int *stop;
	int failures;
};

static void *renderer(void *p)
{
	struct render_arg *a = p;
	char *text;

	while (!atomic_load(a->stop)) {
		if (gnn_metrics_render(a->reg, &text, NULL) != GNN_OK)
			a->failures++;
		else
			free(text);
	}
	return NULL;
}

/* Every kind of update from several threads while another renders. */
static void test_concurrent_mixed(void)
{
	static const double bounds[] = { 0, 1, 2 };
	struct gnn_metrics *reg;
	struct mixed_arg args[THREADS];
	struct render_arg ra = { 0 };
	pthread_t tids[THREADS], rtid;
	atomic_int started = 0, stop = 0;
	struct gnn_counter *secs, *labelled;
	struct gnn_gauge *g;
	struct gnn_histogram *h;
	char *text;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "busy_seconds_total", "h", NULL, 0, &secs) == GNN_OK);
	CHECK(gnn_metrics_counter(reg, "by_total", "h", (const char *const[]){ "l" }, 1,
				  &labelled) == GNN_OK);
	CHECK(gnn_metrics_gauge(reg, "inflight", "h", NULL, 0, &g) == GNN_OK);
	CHECK(gnn_metrics_histogram(reg, "val", "h", NULL, 0, bounds, 3, &h) == GNN_OK);
	CHECK(gnn_metrics_add_process(reg) == GNN_OK);

	ra.reg = reg;
	ra.stop = &stop;
	CHECK(pthread_create(&rtid, NULL, renderer, &ra) == 0);
	for (int i = 0; i < THREADS; i++) {
		args[i] = (struct mixed_arg){ secs, labelled, g, h, NULL, &started };
		CHECK(pthread_create(&tids[i], NULL, mixed_worker, &args[i]) == 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(tids[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(rtid, NULL);

	CHECK(gnn_counter_value(secs) == THREADS * ITERS * 0.5);
	CHECK(gnn_gauge_value(g) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(args[i].looked_up != NULL && args[i].looked_up == args[0].looked_up);
	CHECK(ra.failures == 0);
	if ((text = render(reg)) == NULL)
		goto out;
	CHECK(has_line(text, "busy_seconds_total 200000"));
	CHECK(has_line(text, "by_total{l=\"shared\"} 400000"));
	/* i % 4 over 0..3: a quarter of the observations in each bucket. */
	CHECK(has_line(text, "val_bucket{le=\"0\"} 100000"));
	CHECK(has_line(text, "val_bucket{le=\"1\"} 200000"));
	CHECK(has_line(text, "val_bucket{le=\"2\"} 300000"));
	CHECK(has_line(text, "val_bucket{le=\"+Inf\"} 400000"));
	CHECK(has_line(text, "val_sum 600000"));
	CHECK(has_line(text, "val_count 400000"));
	free(text);
out:
	gnn_metrics_free(reg);
}

/* --- process metrics ---------------------------------------------------- */

static void test_process_metrics(void)
{
	struct gnn_metrics *reg;
	struct timespec now;
	char *text;
	double v;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_add_process(reg) == GNN_OK);
	CHECK(gnn_metrics_add_process(reg) == GNN_EEXIST);
	/* Burn a little CPU so the counter has something to show. */
	for (volatile unsigned long i = 0; i < 20000000UL; i++)
		;
	if ((text = render(reg)) == NULL)
		goto out;
	CHECK(has_line(text, "# TYPE process_cpu_seconds_total counter"));
	CHECK(has_line(text, "# TYPE process_resident_memory_bytes gauge"));
	CHECK(has_line(text, "# TYPE process_virtual_memory_bytes gauge"));
	CHECK(has_line(text, "# TYPE process_start_time_seconds gauge"));
	CHECK(has_line(text, "# TYPE process_open_fds gauge"));
	CHECK(has_line(text, "# TYPE process_max_fds gauge"));
	CHECK(t_sample_value(text, "process_cpu_seconds_total") > 0);
	v = t_sample_value(text, "process_resident_memory_bytes");
	CHECK(v > 1e5 && v < 1e12);
	CHECK(t_sample_value(text, "process_virtual_memory_bytes") >= v);
	/* stdin, stdout and stderr at least; the /proc/self/fd listing itself
	 * is not counted. */
	v = t_sample_value(text, "process_open_fds");
	CHECK(v >= 3 && v < 10000);
	CHECK(t_sample_value(text, "process_max_fds") >= v);
	clock_gettime(CLOCK_REALTIME, &now);
	v = t_sample_value(text, "process_start_time_seconds");
	if (!CHECK(v <= (double)now.tv_sec + 1 && v > (double)now.tv_sec - 600))
		printf("  start_time=%f now=%ld\n", v, (long)now.tv_sec);
	free(text);
out:
	gnn_metrics_free(reg);
}

/* A render hook sets a gauge from what it reads at that moment: each
 * render shows the value of that render, hooks run in order, and the
 * hooks are bounded. */
struct hook_ctx {
	struct gnn_gauge *g;
	double next;
	int *order, *norder;
};

static void hook_set(void *p)
{
	struct hook_ctx *h = p;

	gnn_gauge_set(h->g, h->next);
	h->order[(*h->norder)++] = (int)h->next;
}

static void test_render_hooks(void)
{
	struct gnn_metrics *reg;
	struct hook_ctx a = { 0 }, b = { 0 };
	int order[4], norder = 0;
	char *text;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_gauge(reg, "hooked_a", "A hooked gauge", NULL, 0, &a.g) == GNN_OK);
	CHECK(gnn_metrics_gauge(reg, "hooked_b", "Another", NULL, 0, &b.g) == GNN_OK);
	a = (struct hook_ctx){ a.g, 1, order, &norder };
	b = (struct hook_ctx){ b.g, 2, order, &norder };
	CHECK(gnn_metrics_on_render(NULL, hook_set, &a) == GNN_EINVAL);
	CHECK(gnn_metrics_on_render(reg, NULL, &a) == GNN_EINVAL);
	CHECK(gnn_metrics_on_render(reg, hook_set, &a) == GNN_OK);
	CHECK(gnn_metrics_on_render(reg, hook_set, &b) == GNN_OK);
	CHECK(gnn_gauge_value(a.g) == 0);   /* nothing runs before a render */
	if ((text = render(reg)) != NULL) {
		CHECK(has_line(text, "hooked_a 1") && has_line(text, "hooked_b 2"));
		free(text);
	}
	CHECK(norder == 2 && order[0] == 1 && order[1] == 2);
	a.next = 5;
	if ((text = render(reg)) != NULL) {
		CHECK(has_line(text, "hooked_a 5"));
		free(text);
	}
	norder = 0;
	for (int i = 2; i < GNN_METRICS_MAX_HOOKS; i++)
		CHECK(gnn_metrics_on_render(reg, hook_set, &b) == GNN_OK);
	CHECK(gnn_metrics_on_render(reg, hook_set, &b) == GNN_ERANGE);
	gnn_metrics_free(reg);
}

/* --- promtool ----------------------------------------------------------- */

/* Runs promtool on text; *clean is whether it exited 0 and printed nothing
 * (what it printed is echoed when echo is set). Returns false when
 * promtool could not be run at all. */
static bool promtool_check(const char *text, bool echo, bool *clean)
{
	char path[] = "/tmp/test_metrics_XXXXXX";
	char cmd[256], line[512];
	bool quiet = true;
	FILE *fp, *pp;
	int fd, status;

	if ((fd = mkstemp(path)) < 0 || (fp = fdopen(fd, "w")) == NULL)
		return false;
	fputs(text, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "%s check metrics < %s 2>&1", PROMTOOL, path);
	if ((pp = popen(cmd, "r")) == NULL) {
		unlink(path);
		return false;
	}
	while (fgets(line, sizeof(line), pp) != NULL) {
		if (echo)
			printf("  promtool: %s", line);
		quiet = false;
	}
	status = pclose(pp);
	unlink(path);
	*clean = status == 0 && quiet;
	return status != -1;
}

static void test_promtool(void)
{
	static const char *const two[] = { "op", "status" };
	double bounds[8];
	struct gnn_metrics *reg;
	struct gnn_counter *c, *cs;
	struct gnn_gauge *g, *gs;
	struct gnn_histogram *h, *hs;
	bool clean = false;
	char *text;

	if (access(PROMTOOL, X_OK) != 0) {
		SKIP(PROMTOOL " not found (Debian package prometheus)");
		return;
	}
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_add_process(reg) == GNN_OK);
	CHECK(gnn_metrics_counter(reg, "gnn_rpc_total", "RPCs by \"op\" and status\\result.\nSecond line.",
				  two, 2, &c) == GNN_OK);
	CHECK(gnn_counter_labels(c, (const char *const[]){ "sample", "ok" }, 2, &cs) == GNN_OK);
	gnn_counter_add(cs, 12.5);
	CHECK(gnn_counter_labels(c, (const char *const[]){ "we\"ird\\val\nue \xe2\x9c\x93", "err" },
				 2, &cs) == GNN_OK);
	gnn_counter_inc(cs);
	CHECK(gnn_metrics_gauge(reg, "gnn_queue_depth", "Queue depth.", two, 2, &g) == GNN_OK);
	CHECK(gnn_gauge_labels(g, (const char *const[]){ "a", "b" }, 2, &gs) == GNN_OK);
	gnn_gauge_set(gs, -INFINITY);
	CHECK(gnn_metrics_exp_buckets(0.0005, 4, 8, bounds) == GNN_OK);
	CHECK(gnn_metrics_histogram(reg, "gnn_step_seconds", "Step time.", two, 2, bounds, 8, &h) ==
	      GNN_OK);
	CHECK(gnn_histogram_labels(h, (const char *const[]){ "train", "ok" }, 2, &hs) == GNN_OK);
	for (int i = 0; i < 100; i++)
		gnn_histogram_observe(hs, i * 0.01);
	CHECK(gnn_metrics_histogram(reg, "gnn_empty_bytes", "No labels, no buckets.", NULL, 0, NULL,
				    0, &h) == GNN_OK);
	gnn_histogram_observe(h, 4096);
	if ((text = render(reg)) == NULL)
		goto out;
	if (CHECK(promtool_check(text, true, &clean)) && !CHECK(clean))
		printf("  rendered:\n%s", text);
	free(text);

	/* The check must be able to fail: a counter without _total is
	 * something promtool complains about. */
	clean = true;
	CHECK(promtool_check("# HELP x_seconds h\n# TYPE x_seconds counter\nx_seconds 1\n", false,
			     &clean));
	CHECK(!clean);
out:
	gnn_metrics_free(reg);
}

int main(void)
{
	/* The rejection tests log a warning each; keep the output to failures. */
	if (getenv("GNN_LOG_LEVEL") == NULL)
		gnn_log_set_level(GNN_LOG_ERROR);
	RUN(test_render_exact);
	RUN(test_empty_registry);
	RUN(test_bad_names);
	RUN(test_duplicates_and_find);
	RUN(test_labels);
	RUN(test_escaping);
	RUN(test_values_and_formatting);
	RUN(test_histogram_exact);
	RUN(test_bucket_helpers);
	RUN(test_series_limit);
	RUN(test_concurrent_counter);
	RUN(test_concurrent_mixed);
	RUN(test_process_metrics);
	RUN(test_render_hooks);
	RUN(test_promtool);
	return t_done();
}
