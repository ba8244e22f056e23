/* nnglinks.c - see nnglinks.h. */
#include "nnglinks.h"

#include <nng/nng.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "sys.h"

#define POLL_MS 1000

/* nng's counter names; AUTH and PROTO are peers turned away (logged). */
enum { AUTH, PROTO, TIMEOUT, REFUSED, OOM, REJECT, OTHER, NREASONS };
static const char *const reasons[NREASONS] = { "auth", "proto", "timeout", "refused", "oom", "reject", "other" };

/* A listener or dialer seen in nng's statistics (ids are per kind). */
struct endpoint {
	uint64_t id;
	bool dialer, seen;
	uint64_t last[NREASONS];
};

struct gnn_links_watch {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	struct gnn_counter *errors;
	struct gnn_gauge *limit;
	struct endpoint *eps;
	size_t n, cap;
};

static struct endpoint *endpoint_of(struct gnn_links_watch *w, uint64_t id, bool dialer)
{
	struct endpoint *e;

	for (size_t i = 0; i < w->n; i++)
		if (w->eps[i].id == id && w->eps[i].dialer == dialer)
			return &w->eps[i];
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct endpoint *eps = realloc(w->eps, cap * sizeof(*eps));

		if (eps == NULL)
			return NULL;
		w->eps = eps;
		w->cap = cap;
	}
	e = &w->eps[w->n++];
	*e = (struct endpoint){ .id = id, .dialer = dialer };
	return e;
}

/* Counts what endpoint x's counters grew by since the last poll. A new
 * endpoint counts from 0 (a dialer remade for the same URL starts over). */
static void count(struct gnn_links_watch *w, nng_stat *x, bool dialer)
{
	nng_stat *id = nng_stat_find(x, "id"), *url = nng_stat_find(x, "url"), *st;
	const char *side = dialer ? "dial" : "listen", *u;
	uint64_t grew[NREASONS] = { 0 };
	struct gnn_counter *c;
	struct gnn_gauge *g;
	struct endpoint *e;

	if (id == NULL || url == NULL || (e = endpoint_of(w, nng_stat_value(id), dialer)) == NULL)
		return;
	u = nng_stat_string(url);
	e->seen = true;
	if (!dialer && (st = nng_stat_find(x, "rcv_max")) != NULL &&
	    gnn_gauge_labels(w->limit, (const char *const[]){ u }, 1, &g) == GNN_OK)
		gnn_gauge_set(g, (double)nng_stat_value(st));
	for (size_t r = 0; r < NREASONS; r++) {
		if ((st = nng_stat_find(x, reasons[r])) == NULL || nng_stat_value(st) <= e->last[r])
			continue;
		grew[r] = nng_stat_value(st) - e->last[r];
		e->last[r] = nng_stat_value(st);
		if (gnn_counter_labels(w->errors, (const char *const[]){ side, u, reasons[r] }, 3, &c) == GNN_OK)
			gnn_counter_add(c, (double)grew[r]);
	}
	if (grew[AUTH] + grew[PROTO] > 0)
		GNN_WARN_LIMITED("links_refused", "side=%s url=%s auth=%llu proto=%llu note=\"%s\"", side, u,
				 (unsigned long long)grew[AUTH], (unsigned long long)grew[PROTO],
				 dialer ? "the server refused this process's certificate, or its own is not of this "
					  "domain's CA or does not name the host dialled"
					: "peers failed the handshake: no certificate of this CA, plain TCP to a TLS "
					  "port, or they distrust this one's; nng 1.5.2 does not report their address");
}

static void poll_once(struct gnn_links_watch *w)
{
	nng_stat *root;
	size_t kept = 0;

	if (nng_stats_get(&root) != 0)
		return;
	for (size_t i = 0; i < w->n; i++)
		w->eps[i].seen = false;
	for (nng_stat *x = nng_stat_child(root); x != NULL; x = nng_stat_next(x)) {
		const char *name = nng_stat_name(x);

		if (strcmp(name, "listener") == 0 || strcmp(name, "dialer") == 0)
			count(w, x, name[0] == 'd');
	}
	nng_stats_free(root);
	/* Closed endpoints go: their ids are not reused while open ones are. */
	for (size_t i = 0; i < w->n; i++)
		if (w->eps[i].seen)
			w->eps[kept++] = w->eps[i];
	w->n = kept;
}

static void *watch_main(void *arg)
{
	struct gnn_links_watch *w = arg;
	struct timespec until;

	pthread_mutex_lock(&w->mu);
	while (!w->stopping) {
		pthread_mutex_unlock(&w->mu);
		poll_once(w);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += POLL_MS / 1000;
		pthread_mutex_lock(&w->mu);
		while (!w->stopping && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&w->mu);
	poll_once(w);
	return NULL;
}

int gnn_links_watch_start(struct gnn_metrics *reg, struct gnn_links_watch **out)
{
	static const char *const err_labels[] = { "side", "url", "reason" }, *const limit_labels[] = { "url" };
	struct gnn_links_watch *w;
	int rc;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return GNN_ENOMEM;
	if ((rc = gnn_metrics_counter(reg, "gnn_links_errors_total", "Connections nng closed or refused on this "
				      "process's listeners and dialers, by nng's reason (docs/security.md).",
				      err_labels, 3, &w->errors)) != GNN_OK ||
	    (rc = gnn_metrics_gauge(reg, "gnn_links_receive_limit_bytes", "Largest message a listener accepts; a "
				    "larger one closes its connection.", limit_labels, 1, &w->limit)) != GNN_OK) {
		free(w);
		return rc;
	}
	if (gnn_sync_init(&w->mu, &w->cv) != GNN_OK) {
		free(w);
		return GNN_ENOMEM;
	}
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
		return GNN_EIO;
	}
	*out = w;
	return GNN_OK;
}

void gnn_links_watch_stop(struct gnn_links_watch *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->eps);
	free(w);
}
