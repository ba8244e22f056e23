/* stores.h - the graph stores one trainer calls itself, for learnable
 * embeddings (emb.h) and for feature rows (feats.h): one client per
 * partition, named graphstore-P, with the trainer's call timeout and
 * retries. When the process is asked to stop (SIGTERM), calls in flight
 * end at once instead of after their timeout chain (a frozen store would
 * otherwise hold the exit for minutes). */
#ifndef TR_STORES_H
#define TR_STORES_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"

struct tr_stores;

/* Dials urls[0..n) (borrowed; store p serves partition p) without
 * waiting for them. *out: tr_stores_close. */
int tr_stores_open(char *const *urls, size_t n, int timeout_ms, int retries, struct tr_stores **out);
/* Ends the calls in flight, and makes later ones fail (any thread). */
void tr_stores_abort(struct tr_stores *s);
void tr_stores_close(struct tr_stores *s);

size_t tr_stores_count(const struct tr_stores *s);
/* Partition p's store (p < tr_stores_count), s's. */
struct gnn_client *tr_stores_client(const struct tr_stores *s, uint32_t p);
/* A call's timeout and retries, as opened. */
int tr_stores_timeout_ms(const struct tr_stores *s);
int tr_stores_retries(const struct tr_stores *s);

#endif
