/* store_clients.c - see store_clients.h. */
#include "store_clients.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "err.h"
#include "sys.h"

struct tr_stores {
	struct gnn_client **c;   /* [n] */
	struct gnn_counter **failovers;  /* [n]; NULL without metrics */
	size_t n;
	struct tr_stores_opts o;
	pthread_t watcher;
	bool watching;
	atomic_bool closing;
};

static void *watch_stop(void *arg)
{
	struct tr_stores *s = arg;

	while (!atomic_load(&s->closing)) {
		if (gnn_stop_requested()) {
			tr_stores_abort(s);
			break;
		}
		nanosleep(&(struct timespec){ 0, 100 * 1000000L }, NULL);
	}
	return NULL;
}

/* gnn_trainer_graphstore_failovers_total{graphstore="graphstore-i"}, one
 * series per store (the names the logs use). */
static int register_failovers(struct tr_stores *s)
{
	static const char *const label[] = { "graphstore" };
	struct gnn_counter *fam;
	int rc;

	if (s->o.metrics == NULL)
		return GNN_OK;
	if ((s->failovers = calloc(s->n > 0 ? s->n : 1, sizeof(*s->failovers))) == NULL)
		return GNN_ENOMEM;
	if ((rc = gnn_metrics_counter(s->o.metrics, "gnn_trainer_graphstore_failovers_total",
				      "Feature-row and embedding calls moved from a graph store to another replica of "
				      "its partition, by the store moved from", label, 1, &fam)) != GNN_OK)
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		char name[32];
		const char *v = name;

		snprintf(name, sizeof(name), "graphstore-%zu", i);
		if ((rc = gnn_counter_labels(fam, &v, 1, &s->failovers[i])) != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

int tr_stores_open(char *const *urls, size_t n, const struct tr_stores_opts *o, struct tr_stores **out)
{
	struct tr_stores *s;
	int rc = GNN_ENOMEM;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL || (s->c = calloc(n > 0 ? n : 1, sizeof(*s->c))) == NULL)
		goto fail;
	s->n = n;
	s->o = *o;
	if ((rc = register_failovers(s)) != GNN_OK)
		goto fail;
	for (size_t p = 0; p < n; p++) {
		char name[32];
		struct gnn_client_opts co = { .url = urls[p], .name = name, .timeout_ms = o->timeout_ms,
					      .retries = o->retries };

		snprintf(name, sizeof(name), "graphstore-%zu", p);
		if ((rc = gnn_client_open(&co, &s->c[p])) != GNN_OK)
			goto fail;
	}
	if (pthread_create(&s->watcher, NULL, watch_stop, s) != 0) {
		rc = GNN_ENOMEM;
		goto fail;
	}
	s->watching = true;
	*out = s;
	return GNN_OK;
fail:
	tr_stores_close(s);
	return rc;
}

void tr_stores_abort(struct tr_stores *s)
{
	for (size_t p = 0; s != NULL && s->c != NULL && p < s->n; p++)
		if (s->c[p] != NULL)
			gnn_client_abort(s->c[p]);
}

void tr_stores_close(struct tr_stores *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->closing, true);
	if (s->watching)
		pthread_join(s->watcher, NULL);
	for (size_t p = 0; s->c != NULL && p < s->n; p++)
		gnn_client_close(s->c[p]);
	free(s->c);
	free(s->failovers);
	free(s);
}

size_t tr_stores_count(const struct tr_stores *s)
{
	return s->n;
}

struct gnn_client *tr_stores_client(const struct tr_stores *s, uint32_t p)
{
	return s->c[p];
}

int tr_stores_timeout_ms(const struct tr_stores *s)
{
	return s->o.timeout_ms;
}

int tr_stores_retries(const struct tr_stores *s)
{
	return s->o.retries;
}

int tr_stores_rows_timeout_ms(const struct tr_stores *s, double bytes, int base_ms)
{
	double ms = (base_ms > 0 ? base_ms : s->o.rows_timeout_ms) + bytes / s->o.rows_min_bytes_per_s * 1000.0;

	return ms < s->o.timeout_ms ? (int)ms : s->o.timeout_ms;
}

void tr_stores_failed_over(const struct tr_stores *s, uint32_t i)
{
	if (s->failovers != NULL && i < s->n)
		gnn_counter_inc(s->failovers[i]);
}

int tr_stores_replica_timeout_ms(const struct tr_stores *s)
{
	return s->o.replica_timeout_ms > 0 ? s->o.replica_timeout_ms : s->o.rows_timeout_ms;
}
