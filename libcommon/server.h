/* server.h - the request/reply server every gnn-dist service runs: one nng
 * REP socket, a fixed pool of worker threads each with its own REP context,
 * so requests are served concurrently and throughput grows with cores.
 *
 * The server decodes and checks each request's header (gnn_proto_decode_hdr)
 * and hands good ones to the service's handler. A message that fails the
 * check gets an ERROR reply (GNN_EPROTO, GNN_EVERSION or GNN_ERANGE, naming
 * the problem) and is counted; the service stays up. Metrics, registered in
 * the given registry with the service name as prefix NAME:
 *   gnn_NAME_requests_total{op}              requests by message type
 *   gnn_NAME_request_seconds{op}             latency histogram
 *   gnn_NAME_request_errors_total{op,code}   error replies
 *   gnn_NAME_bad_messages_total{reason}      undecodable messages
 *   gnn_NAME_received_bytes_total{op}, gnn_NAME_sent_bytes_total{op}
 *                                            request and reply bytes by request type
 *   gnn_NAME_replies_abandoned_total         replies a connection did not take
 *                                            within reply_timeout_ms (that
 *                                            connection is closed)
 *   gnn_NAME_requests_in_flight              gauge
 * At stop it logs `traffic` with each type's requests and bytes. */
#ifndef GNN_SERVER_H
#define GNN_SERVER_H

#include <stddef.h>

#include "metrics.h"
#include "proto.h"

/* Handles one request: h and payload (len bytes) are borrowed for the call.
 * It appends exactly one message to out, the reply or an error
 * (gnn_encode_error with req_id h->req_id), and returns GNN_OK; if it
 * returns an error code instead, out is discarded and the server replies
 * with a generic ERROR of that code. Called concurrently from all workers. */
typedef int (*gnn_handler_fn)(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len,
			      struct gnn_wbuf *out);

struct gnn_server_opts {
	const char *name;          /* metric prefix and log name: "graphstore", "sampler" */
	const char *listen;        /* nng URL, e.g. "tcp://0.0.0.0:7000" */
	int workers;               /* worker threads (>= 1) */
	struct gnn_metrics *metrics; /* registry (borrowed; outlives the server) */
	gnn_handler_fn handler;
	void *ctx;                 /* passed to handler */
	/* Optional: called with ctx on the worker's thread after each reply
	 * was sent (or could not be), before the worker takes the next
	 * request: what the handler kept for the reply may go now. */
	void (*after_reply)(void *ctx);
	/* Largest request payload accepted (docs/protocol.md, "Limits"): a
	 * larger message closes its connection unread. 0: GNN_PROTO_MAX_MSG_BYTES. */
	uint64_t max_request_bytes;
	/* Longest wait for a connection to take a reply (nng queues it behind
	 * the previous reply on that connection, so this bounds how long that
	 * one may take to go out): the reply is then dropped, the connection
	 * closed and `reply_abandoned` logged, so a client that stopped
	 * reading (its pod's network gone without a reset) cannot hold a
	 * worker. 0: GNN_SERVER_REPLY_TIMEOUT_MS. */
	int reply_timeout_ms;
};

/* 10 s: a previous reply of 100 MB still goes out within it on an
 * 80 Mbit/s link (a products minibatch's FEAT answers come to 114 MB,
 * split among the stores: docs/scale.md); and a connection that takes
 * nothing costs a worker no more than that. */
#define GNN_SERVER_REPLY_TIMEOUT_MS 10000

struct gnn_server;

/* Listens and starts the workers. Logs and returns GNN_EIO if the URL
 * cannot be listened on (bad URL, port in use). *out is freed by
 * gnn_server_stop. */
int gnn_server_start(const struct gnn_server_opts *o, struct gnn_server **out);

/* The TCP port actually bound (useful with port 0), or -1. */
int gnn_server_port(const struct gnn_server *s);

/* Closes the socket, waits for the workers (requests in progress finish)
 * and frees s. Safe on NULL. */
void gnn_server_stop(struct gnn_server *s);

#endif
