/* store_clients.h - the graph stores one trainer calls itself, for learnable
 * embeddings (embeddings.h) and for feature rows (feats.h): one client per
 * partition, named graphstore-P, with the trainer's call timeout and
 * retries (feature-row calls: a shorter attempt, tried again until that
 * whole budget is spent). When the process is asked to stop (SIGTERM), calls in flight
 * end at once instead of after their timeout chain (a frozen store would
 * otherwise hold the exit for minutes). */
#ifndef TR_STORES_H
#define TR_STORES_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "metrics.h"

struct tr_stores;

struct tr_stores_opts {
	int timeout_ms, retries;        /* a call's attempt and extra attempts (embeddings) */
	/* A feature-row call's attempt: rows_timeout_ms plus its bytes at this
	 * rate (tr_stores_rows_timeout_ms). Short, because a connection to a
	 * deleted pod can stay open without an answer ever coming. */
	int rows_timeout_ms;
	double rows_min_bytes_per_s;
	/* With replicas, a row call's first attempt on each one: at most this
	 * (gnn_replica_timeout_ms), plus the bytes term; 0: rows_timeout_ms. */
	int replica_timeout_ms;
	struct gnn_metrics *metrics;    /* borrowed, may be NULL: gnn_trainer_graphstore_failovers_total */
};

/* Dials urls[0..n) (borrowed; store p serves partition p) without
 * waiting for them. o is copied. *out: tr_stores_close. */
int tr_stores_open(char *const *urls, size_t n, const struct tr_stores_opts *o, struct tr_stores **out);
/* Ends the calls in flight, and makes later ones fail (any thread). */
void tr_stores_abort(struct tr_stores *s);
void tr_stores_close(struct tr_stores *s);

size_t tr_stores_count(const struct tr_stores *s);
/* Partition p's store (p < tr_stores_count), s's. */
struct gnn_client *tr_stores_client(const struct tr_stores *s, uint32_t p);
/* A call's timeout and retries, as opened. */
int tr_stores_timeout_ms(const struct tr_stores *s);
int tr_stores_retries(const struct tr_stores *s);
/* The attempt timeout of a feature-row call whose reply is `bytes` long:
 * base_ms (0: rows_timeout_ms) plus the bytes term, within the call timeout. */
int tr_stores_rows_timeout_ms(const struct tr_stores *s, double bytes, int base_ms);
/* replica_timeout_ms as opened (rows_timeout_ms when that was 0). */
int tr_stores_replica_timeout_ms(const struct tr_stores *s);
/* A call of store i's (feature rows, embeddings) went on to another
 * replica: counted by the store it left. */
void tr_stores_failed_over(const struct tr_stores *s, uint32_t i);

#endif
