/* store_backend.h - the graph stores as seen from a sampler: one client per store,
 * the partition layout learnt from their INFO answers, a background check
 * that keeps /readyz truthful, and the core's backend (core.h) that sends
 * each partition's calls to its store over nng.
 *
 * Store i of the configured list is named "graphstore-i" in logs, error
 * texts and the metrics' graphstore label; which partition it serves comes
 * from its INFO answer. */
#ifndef SMP_STORES_H
#define SMP_STORES_H

#include <stdbool.h>
#include <stddef.h>

#include "core.h"
#include "metrics.h"

struct smp_stores_opts {
	const char *const *urls;   /* [n] nng URLs (copied) */
	size_t n;
	int timeout_ms;            /* per attempt of a data call, plus: */
	double min_bytes_per_s;    /* the bytes a minibatch's calls ask of the store at this rate (0: flat) */
	int retries;               /* extra attempts after a timeout */
	int replica_timeout_ms;    /* at most, a replicated partition's first attempt on each replica
				    * (gnn_replica_timeout_ms), plus the bytes term (0: timeout_ms) */
	int check_interval_ms;     /* background INFO to every store */
	int check_timeout_ms;      /* timeout of one INFO (no retries) */
	double down_grace_s;       /* a store down this long makes smp_stores_ready false */
	double changed_exit_s;     /* when a store changed graph, the exit delay the texts announce */
	struct gnn_metrics *metrics; /* borrowed; outlives the stores */
};

struct smp_stores;

/* The exit status of a sampler that stops because a store changed graph. */
#define SMP_EXIT_GRAPH_CHANGED 3

/* Creates the clients (dialling in the background: the stores need not be
 * up) and registers the gnn_sampler_graphstore* metrics. *out is the
 * caller's: smp_stores_close. */
int smp_stores_open(const struct smp_stores_opts *o, struct smp_stores **out);

/* Waits up to wait_s seconds until every store has answered INFO, logging
 * every ~10 s which ones it still waits for, then checks the layout: one
 * graph_id and shape everywhere, each partition served by a store, or by
 * several (replicas: calls go to the one with the fewest in flight, and
 * on to another at a timeout or a lost connection), never two on one
 * partition when there are as many stores as partitions (an answer for
 * the whole graph, part_id == num_parts, is a sampler's and refused). Returns GNN_OK (the layout
 * is then fixed), GNN_ETIMEDOUT (the log names the missing stores),
 * GNN_EINVAL (inconsistent stores; the log says how) or GNN_ECLOSED when
 * stop() became true. */
int smp_stores_connect(struct smp_stores *s, double wait_s, bool (*stop)(void));

/* The layout, valid after smp_stores_connect succeeded (borrowed). */
const struct gnn_layout *smp_stores_layout(const struct smp_stores *s);

/* Starts the background check: every check_interval_ms an INFO to every
 * store; logs graphstore_unreachable / graphstore_reachable_again and
 * updates readiness and gnn_sampler_graphstores_ready. */
int smp_stores_start_check(struct smp_stores *s);

/* A store that answers INFO (the check's, or the one that verifies a
 * store's data connection after any sign of a restart, before its answers
 * are used) with another graph_id, part_id or num_parts than at connect
 * makes the layout stale for good: one ERROR graph_changed naming it and
 * both identities, then every request is refused (layout_known false,
 * GNN_EUNAVAIL: trainers ask another replica) and /readyz is 503. True
 * from then on; *since (may be NULL) is when it was noticed. The process
 * is expected to exit (SMP_EXIT_GRAPH_CHANGED) and be restarted. */
bool smp_stores_changed(struct smp_stores *s, double *since);

/* gnn_ready_fn: ready when the layout is known, no store changed graph and
 * every store answered its last check. ctx is the struct smp_stores. */
bool smp_stores_ready(void *ctx, char *why, size_t why_len);

/* Fills be with the backend sending calls to the stores (valid while s is);
 * it may be filled before smp_stores_connect: its layout_known says false,
 * naming the stores awaited, until the layout is fixed, and the change once
 * a store changed graph. A failed call makes run return GNN_EUNAVAIL (no
 * answer within the timeout and retries, the layout not known yet, or a
 * store that changed graph or cannot confirm its graph) or the store's
 * error code, with a text naming the store and its URL. */
void smp_stores_backend(struct smp_stores *s, struct smp_backend *be);

/* For a process that stops: calls to the stores in flight end at once
 * (GNN_ECLOSED), later ones too; any thread. Safe on NULL. */
void smp_stores_abort(struct smp_stores *s);
/* Stops the check and closes the clients. Safe on NULL. */
void smp_stores_close(struct smp_stores *s);

#endif
