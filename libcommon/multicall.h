/* multicall.h - one batch of calls to several servers at once, and their
 * answers: the fan-out with which a sampler's store backend, a trainer's
 * feature rows and its embeddings ask the graph stores (fanouts.h is
 * something else: the sampling fanouts).
 *
 *   gnn_multicall_init(&f);
 *   gnn_multicall_add(&f, client, timeout_ms, &req)  once per call; encode into req
 *   gnn_multicall_run(&f, answer, ctx)               sends every call not done yet, at
 *                                                    once, and hands each result to answer
 *   gnn_multicall_run(&f, answer, ctx)               again: a retry of those refused,
 *                                                    the same request bytes
 *   gnn_multicall_clear(&f)                          the next batch, in the same memory
 *   gnn_multicall_free(&f)
 *
 * Not thread-safe: one batch per thread (the calls themselves run
 * concurrently, gnn_client_call_all). */
#ifndef GNN_MULTICALL_H
#define GNN_MULTICALL_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "client.h"

struct gnn_multicall {
	size_t n;                 /* calls in the batch */
	struct gnn_call *call;    /* [n]: client, req and timeout_ms as added (client,
				   * timeout_ms and failover may change before a run: a
				   * call sent on to another replica); rc, reply, attempts
				   * and err as the call's last run left them */
	struct gnn_wbuf *req;     /* [n]: the requests */
	bool *done;               /* [n]: answered and accepted: not sent again */
	size_t cap, inited;       /* room, and request buffers initialised (kept across batches) */
};

void gnn_multicall_init(struct gnn_multicall *f);

/* Appends a call to client c (borrowed: it must outlive the batch) with
 * an attempt timeout of timeout_ms (0: the client's): *req is its request
 * buffer, empty, for the caller to encode into (valid until the next
 * add). GNN_ENOMEM. */
int gnn_multicall_add(struct gnn_multicall *f, struct gnn_client *c, int timeout_ms, struct gnn_wbuf **req);

/* What a run does with call i's result c: c->rc, c->attempts and c->err
 * are the client's, and when c->rc is GNN_OK c->reply is the answer (its
 * header checked against the request). Returns GNN_OK to accept it (the
 * call is done), else an error code (the call stays to run again). It
 * may take c->reply (and set it NULL); a reply left there is freed by the
 * call's next run, gnn_multicall_clear or gnn_multicall_free. */
typedef int (*gnn_multicall_answer_fn)(void *ctx, size_t i, struct gnn_call *c);

/* Sends every call not done yet at once (gnn_client_call_all: each with
 * its client's retries) and hands each one's result to answer (NULL: a
 * reply is accepted as it is) in call order. Returns GNN_OK when every
 * call of the batch is done, else the first error code of this run, in
 * call order; GNN_ENOMEM when nothing could be sent. */
int gnn_multicall_run(struct gnn_multicall *f, gnn_multicall_answer_fn answer, void *ctx);

/* Frees the replies left and empties the batch, keeping the memory (the
 * request buffers too) for the next one. */
void gnn_multicall_clear(struct gnn_multicall *f);
/* Frees everything. Safe on an initialised, never used batch. */
void gnn_multicall_free(struct gnn_multicall *f);

#endif
