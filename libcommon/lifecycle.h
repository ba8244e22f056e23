/* lifecycle.h - the skeleton every serving gnn-dist process shares (the
 * graph store, the sampler, the trainer), so that each main.c is its option
 * table and its hooks:
 *
 *   parse the options (--help: exit 0; bad: exit 2) -> configure hook
 *   (machine-dependent defaults, combinations; non-OK: exit 2) -> "start"
 *   and "config" lines -> the data plane's TLS files (tls.h; bad: exit 2)
 *   -> SIGTERM/SIGINT handlers, the stop watchdog ->
 *   metrics registry with the process metrics, the certificates' ends
 *   (tls.h) and the links' errors (links.h: a watcher thread) -> start
 *   hook (allocate, listen: nothing that waits) -> /healthz, /readyz,
 *   /metrics -> wait hook (data, peers: bounded waits) -> serve hook
 *   (until it returns or a signal) -> "stopping" -> stop hook (release
 *   what start made, in the order the service needs) -> the links'
 *   watcher and HTTP down -> "stopped exit=N".
 *
 * Exit status: 0 when serve returned GNN_OK or a signal stopped the
 * process (any hook returning GNN_ECLOSED, or any failure once a stop was
 * requested); otherwise the exit_status hook's answer for the code, by
 * default 2 for GNN_EINVAL (a configuration the service cannot run) and 1
 * for everything else. Log events (docs/observability.md): `start`,
 * `config`, `stopping reason=signal|finished|failed`, `stopped exit=N`
 * (ERROR when N is not 0). */
#ifndef GNN_LIFECYCLE_H
#define GNN_LIFECYCLE_H

#include <stdint.h>

#include "http.h"
#include "metrics.h"
#include "opt.h"
#include "tls.h"

#define GNN_EXIT_FAILED 1 /* the service could not start or failed */
#define GNN_EXIT_USAGE 2  /* bad options or configuration */

/* Every pointer is borrowed for the whole run. Hooks get ctx; NULL hooks
 * are skipped (no serve hook: serve until a signal). Hooks return GNN
 * codes and log their own failures' details. */
struct gnn_lifecycle {
	const char *prog;               /* "gnn-graphstore": logs and --help */
	const char *summary;            /* --help's first line */
	const struct gnn_opt *options;  /* the option table (opt.h) */
	/* The data plane's TLS files among the options' values (tls.h,
	 * GNN_TLS_OPTIONS), set up after configure; NULL: plain links. */
	const struct gnn_tls_paths *tls;
	const char *const *http_addr;   /* the options' values the HTTP server binds */
	const int64_t *http_port;
	gnn_ready_fn ready;             /* /readyz, called with ctx; NULL: always ready */
	const char *stop_note;          /* appended to "stopping reason=signal" as note="..."; may be NULL */
	void *ctx;

	int (*configure)(void *ctx);
	int (*start)(void *ctx, struct gnn_metrics *reg);
	int (*wait)(void *ctx, int http_port); /* http_port: for the service's "ready" line */
	int (*serve)(void *ctx);
	/* Called once, whatever stage was reached (with status 0 on a clean
	 * stop); releases what start and the other hooks made, safe on what
	 * they never made. */
	void (*stop)(void *ctx, int status);
	/* Maps a failure code to the exit status; NULL: the default above. */
	int (*exit_status)(void *ctx, int rc);
};

/* Runs the whole life of the process; returns its exit status. Call it
 * once, from main, after gnn_log_init. */
int gnn_lifecycle_run(const struct gnn_lifecycle *lc, int argc, char **argv);

#endif
