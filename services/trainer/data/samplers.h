/* samplers.h - the sampler replicas as one trainer sees them.
 *
 * Every --samplers URL's host is resolved to all its addresses, each one a
 * replica ("tcp://sampler:7100" names every pod behind a headless Service).
 * A background thread resolves the names again every resolve_interval_s,
 * and at once (at most once a second) when a replica fails: addresses that
 * appear become replicas, replicas whose address the name no longer
 * returns are dropped (a deleted or unready pod). A replica is used only
 * once it has answered INFO; one whose call fails is set aside and probed
 * again (all such probes at once, each bounded), so a dead replica costs
 * one failed call, not one per minibatch. A replica whose connection drops
 * while it builds a minibatch (its pod was deleted or crashed) fails that
 * call at once, and the request goes to the next live replica: no timeout
 * is waited out. When no replica is live a call waits, bounded by the
 * call's timeout and retries, for one to come back or be discovered.
 *
 * The samplers also answer INFO (the graph's layout) and NODES (a split's
 * node list), so a trainer needs nothing but sampler and peer URLs. */
#ifndef TR_SAMPLERS_H
#define TR_SAMPLERS_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "part.h"
#include "proto.h"

struct tr_samplers_opts {
	const char *const *urls;    /* [n] as given (copied) */
	size_t n;
	int timeout_ms, retries;    /* one call */
	double resolve_interval_s;  /* DNS again this often */
	struct gnn_metrics *metrics; /* borrowed, may be NULL */
	bool (*stop)(void);         /* polled while waiting */
};


struct tr_samplers;

/* Resolves the URLs (a name that does not resolve yet is retried later)
 * and starts the background thread. GNN_EINVAL (logged) for a URL that is
 * not tcp://HOST:PORT, ipc:// or inproc://. *out: tr_samplers_close. */
int tr_samplers_open(const struct tr_samplers_opts *o, struct tr_samplers **out);

/* Waits up to wait_s for a replica to answer INFO (logging every ~10 s
 * which URLs it waits for), and fills g with a copy of the graph's layout
 * as the samplers report it (the caller's: gnn_layout_free). GNN_ETIMEDOUT,
 * GNN_ECLOSED (stop), GNN_EINVAL when replicas disagree about the graph. */
int tr_samplers_connect(struct tr_samplers *s, double wait_s, struct gnn_layout *g);

/* Every node of split (GNN_SPLIT_*), in ID order, through NODES calls.
 * *ids is malloc'd, the caller's. */
int tr_samplers_nodes(struct tr_samplers *s, uint8_t split, int64_t **ids, size_t *n);

/* One minibatch: sends req to a live replica (hint picks which, so
 * concurrent callers spread out), fails over to the others. req and what
 * it points to (seeds, fanouts, with GNN_MB_EXCLUDE the pairs: proto.h)
 * are borrowed for the call only. On GNN_OK
 * *reply is the caller's (nng_msg_free after use) and mb points into it;
 * release mb with gnn_proto_release(mb->owned). On failure why says which
 * replicas failed and why. Thread-safe. */
int tr_samplers_minibatch(struct tr_samplers *s, uint64_t hint, uint64_t req_id,
			  const struct gnn_minibatch_req *req, nng_msg **reply, struct gnn_minibatch *mb,
			  char *why, size_t why_len);

/* Replicas that answered their last call or check. */
size_t tr_samplers_live(struct tr_samplers *s);

/* Sets aside the replica a call with this hint goes to first, when
 * another is live: a copy of its request (a hedge) sent elsewhere answered
 * while it still had not (`sampler_down ... reason="slow: ..."`). It is
 * probed and comes back like a failed one. */
void tr_samplers_set_slow(struct tr_samplers *s, uint64_t hint, double waited_s);

/* For a process that stops: calls in flight end at once with GNN_ECLOSED,
 * later ones too (any thread). tr_samplers_close still frees s. */
void tr_samplers_abort(struct tr_samplers *s);
void tr_samplers_close(struct tr_samplers *s);

#endif
