/* client.h - calling a gnn-dist service: one nng REQ socket per peer,
 * dialled in the background (nng reconnects by itself when the peer comes
 * back), with a timeout on every call and a bounded number of retries, so a
 * caller never hangs on a dead peer.
 *
 * Errors say which peer: a call that times out after its retries logs
 * "call_failed peer=NAME url=URL op=OP attempts=N" and returns
 * GNN_ETIMEDOUT; an ERROR reply from the peer returns its status code and
 * its text (gnn_client_last_error).
 *
 * A lost connection (the peer closed it or its process died while a call
 * waited for the reply) ends that attempt at once instead of at the
 * timeout; without `failover` the call then tries again (a restarted peer
 * answers once nng has redialled it), with `failover` it returns
 * GNN_EUNAVAIL: the caller has other peers to send the request to. */
#ifndef GNN_CLIENT_H
#define GNN_CLIENT_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto.h"
#include "tls.h"

struct gnn_client;

struct gnn_client_opts {
	const char *url;           /* "tcp://graphstore-0.graphstore:7000" */
	const char *name;          /* for logs and errors: "graphstore-0" */
	int timeout_ms;            /* per attempt */
	int retries;               /* extra attempts after a timeout (0 = one attempt) */
	bool failover;             /* GNN_EUNAVAIL at once, no retry, when the connection
				    * drops during a call or none is up when it starts */
	const char *server_name;   /* with TLS, the name the peer's certificate must have
				    * (NULL: the URL's host; tls.h) */
};

/* Creates the socket and starts dialling (non-blocking: the peer need not be
 * up yet). *out is freed by gnn_client_close. */
int gnn_client_open(const struct gnn_client_opts *o, struct gnn_client **out);
void gnn_client_close(struct gnn_client *c);
const char *gnn_client_name(const struct gnn_client *c);
/* Ends the client's calls in flight at once and makes later ones fail
 * (GNN_ECLOSED, not logged per call): for a process that stops and must
 * not wait out its peers' timeouts. Any thread; gnn_client_close still
 * frees c. */
void gnn_client_abort(struct gnn_client *c);
/* A connection attempt to an address that vanished (a deleted pod's IP)
 * hangs in TCP's SYN retries for a minute or more, and nng's next attempt,
 * which would resolve the name again and find the new address, waits for
 * it. So a dialer with no connection for this long is restarted: the
 * clients here do it within a call, the trainers' ring in its handshake. */
#define GNN_REDIAL_AFTER_S 3.0
/* Closes dialer *d of sock and dials url again (non-blocking) into *d,
 * over TLS of domain tls (NULL: plain) to a server named server_name
 * (gnn_tls_dial). GNN_EIO when the new dial could not start (the URL no
 * longer parses). */
int gnn_redial(nng_socket sock, const char *url, const struct gnn_tls *tls, const char *server_name, nng_dialer *d);

/* nng 1.5.2 can deadlock in nng_close while a connection is being set up
 * or torn down (nanomsg/nng#1543, fixed in 1.8): seen when a whole release
 * stops at once, every peer closing beside us. So sockets are closed on a
 * thread of their own, waited for at most limit_s: false (logged as
 * ERROR close_stuck naming what) when nng_close did not return. The
 * sockets, and whatever their callbacks may touch, must then stay
 * allocated: the caller leaks them (it is stopping, or must restart). */
bool gnn_close_bounded(const nng_socket *socks, size_t n, double limit_s, const char *what);
/* How long to wait for one close. A process on its way out (gnn_exiting)
 * gives all its closes together GNN_CLOSE_STOPPING_S, counted from the
 * first: each gets what is left, at least GNN_CLOSE_MIN_S. A budget per
 * close would not do: the sampler closes seven sockets or more one after
 * the other, and two stuck ones would outlast the stop watchdog's
 * GNN_STOP_GRACE_S (exit 143, unlogged stop). Otherwise GNN_CLOSE_LIMIT_S. */
#define GNN_CLOSE_STOPPING_S 2.5
#define GNN_CLOSE_MIN_S 0.1
#define GNN_CLOSE_LIMIT_S 5.0
double gnn_close_limit(void);

/* True while a connection to the peer is up (nng pipe events; any thread). */
bool gnn_client_connected(const struct gnn_client *c);
/* How many connections to the peer have come up so far: a change means
 * the answers may come from another process (a restart), which a caller
 * that trusts the peer's data checks again (INFO) before using them. */
unsigned gnn_client_connections(const struct gnn_client *c);

/* One call in a batch: the request message (built with the proto.h
 * encoders; borrowed), and on return rc and, when rc is GNN_OK, reply: the
 * reply message (owned by the caller: nng_msg_free) whose header has been
 * checked to match the request ID. An ERROR reply gives rc = its status and
 * err the text (NUL-terminated, cut to fit). */
struct gnn_call {
	struct gnn_client *client;
	const struct gnn_wbuf *req;
	int timeout_ms;            /* per attempt; 0: the client's */
	bool failover;             /* this call alone, as a failover client's, and one attempt: the
				    * caller has other peers (a graph store's replicas) */
	nng_msg *reply;
	int rc;
	int attempts;
	double answer_s;           /* answered: seconds from its request out to the reply */
	char err[256];
};

/* Runs all n calls concurrently (one aio each) and returns when every one
 * has a reply or has failed after its retries; returns GNN_OK when all
 * succeeded, else the first failing call's rc (each call has its own). */
int gnn_client_call_all(struct gnn_call *calls, size_t n);

/* One call, the same semantics; why (why_len bytes, the caller's; may be
 * NULL) gets the call's err text, empty on success. */
int gnn_client_call(struct gnn_client *c, const struct gnn_wbuf *req, nng_msg **reply,
		    char *why, size_t why_len);

/* Decodes a successful reply's header and checks its type: *payload and
 * *len describe the payload inside reply (borrowed from it). */
int gnn_reply_payload(nng_msg *reply, uint16_t want_type, const void **payload, size_t *len);

#endif
