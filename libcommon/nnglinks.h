/* nnglinks.h - what nng refused on this process's links, counted and logged.
 *
 * nng 1.5.2 keeps error counters per listener and per dialer
 * (nng_stats_get) but tells no one. A watcher thread reads them every
 * second and turns their increases into
 *
 *   gnn_links_errors_total{side="listen"|"dial",url,reason}
 *   gnn_links_receive_limit_bytes{url}      (each listener's size limit)
 *
 * and, for the reasons that mean a peer was refused, one rate-limited
 * WARN `links_refused` line per endpoint and second with the count. The
 * reasons are nng's: `auth` a TLS handshake that failed (no certificate,
 * another CA's, a dialer that distrusts this one, plain TCP to a TLS port;
 * nng does not say which), `proto` an SP handshake of the wrong protocol,
 * `timeout` a handshake that did not finish, `refused` (dialers) a
 * connection refused, `oom`, `reject`, and `other`: any other closing,
 * including a peer's clean close and a message over the receive limit
 * (nng 1.5.2 counts NNG_EMSGSIZE there and does not tell them apart). A
 * refused peer's address is not known: nng 1.5.2 makes no pipe for a
 * failed handshake. */
#ifndef GNN_NNGLINKS_H
#define GNN_NNGLINKS_H

#include "metrics.h"

struct gnn_links_watch;

/* Registers the two families in reg and starts the watcher; *out is the
 * caller's, stopped and freed with gnn_links_watch_stop. GNN_ENOMEM,
 * GNN_EIO (no thread), or the registry's errors. */
int gnn_links_watch_start(struct gnn_metrics *reg, struct gnn_links_watch **out);
/* Reads the counters a last time, stops the thread, frees w (NULL: no-op). */
void gnn_links_watch_stop(struct gnn_links_watch *w);

#endif
