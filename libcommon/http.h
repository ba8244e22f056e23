/* http.h - the observability HTTP endpoint every service runs.
 *
 *   GET /healthz  200 "ok\n" while the process serves requests at all
 *   GET /readyz   200 "ready\n", or 503 "not ready: <reason>\n" while the
 *                 ready callback says no
 *   GET /metrics  200, the registry in the Prometheus text format 0.0.4
 *   other paths   404; GET and HEAD only on the three above, else 405
 *
 * Served by libmicrohttpd (epoll) from a small pool of internal threads,
 * with a connection limit derived from RLIMIT_NOFILE and a short idle
 * timeout so slow or stuck clients cannot tie it up. A thread of our own
 * accepts the connections; where MHD cannot take one (its connection limit
 * reached, or the process out of descriptors: a spare descriptor is held
 * back for that), that thread answers /healthz and /readyz itself, and
 * /metrics with 503. Every response is counted in the registry as
 * gnn_http_requests_total{path="/metrics"|"/healthz"|"/readyz"|"other",code="200"}.
 *
 * When the process has a data-plane TLS domain (tls.h) the server is
 * HTTPS with its certificate: /healthz and /readyz answer anyone (the
 * kubelet's probes), /metrics only a client certificate of the domain's
 * CA (403 otherwise), and a connection the acceptor cannot hand to MHD is
 * closed unanswered. */
#ifndef GNN_HTTP_H
#define GNN_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"

#define GNN_HTTP_THREADS 2 /* worker threads of the pool */
/* Connections MHD holds at once: a quarter of RLIMIT_NOFILE's soft limit
 * (so the server alone never exhausts it), within these bounds. */
#define GNN_HTTP_MIN_CONNECTIONS 8
#define GNN_HTTP_MAX_CONNECTIONS 1024
/* A connection that sends or reads nothing for this long is closed. A
 * probe or a scrape takes milliseconds; a silent client frees its slot
 * soon. */
#define GNN_HTTP_TIMEOUT_S 3
/* The most the acceptor waits for a whole request head when it answers a
 * connection itself; a probe sends its head at once. */
#define GNN_HTTP_DIRECT_MS 300
#define GNN_HTTP_REASON_MAX 128     /* size of the ready callback's reason buffer */

struct gnn_http;

/* Says whether the service can take work. Called from the server's threads,
 * possibly several at once, so it must be thread-safe and quick. When it
 * returns false it may write a short NUL-terminated reason (no newline)
 * into why, which has why_len bytes and starts empty. */
typedef bool (*gnn_ready_fn)(void *ctx, char *why, size_t why_len);

/* Starts serving on bind_addr (an IPv4 or IPv6 literal; NULL means
 * "0.0.0.0") and port (0 picks a free one, see gnn_http_port()). reg is
 * borrowed and must outlive the server; gnn_http_requests_total is
 * registered in it, or reused when another server registered it already.
 * ready (NULL: always ready) is called with ready_ctx, also borrowed.
 * On success *out is the caller's, released with gnn_http_stop().
 * Returns GNN_EINVAL for bad arguments or an unparsable address, GNN_EIO
 * when the socket cannot be bound (port in use: the address and errno text
 * are logged) or the server fails to start, GNN_ENOMEM, or an error from
 * registering the metric. */
int gnn_http_start(const char *bind_addr, int port, struct gnn_metrics *reg, gnn_ready_fn ready,
		   void *ready_ctx, struct gnn_http **out);

/* The port the server listens on; -1 for NULL. */
int gnn_http_port(const struct gnn_http *srv);

/* Closes the listening socket and every open connection, waits for the
 * server's threads (no callback runs after it returns) and frees srv.
 * Does not wait for idle clients. Then writes the counts of rate-limited
 * log lines not yet reported (gnn_log_flush). Safe on NULL. */
void gnn_http_stop(struct gnn_http *srv);

#endif
