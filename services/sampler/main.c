/* gnn-sampler: turns a list of seed nodes into a ready minibatch (sampled
 * blocks, input features, labels) by asking the graph stores that own the
 * nodes (docs/sampler.md). Stateless: run as many replicas as the trainers
 * need.
 *
 *   options -> dial the graph stores -> /healthz,/readyz,/metrics ->
 *   listen on --listen with --workers threads (requests get ERROR eunavail
 *   "waiting for graph stores: ..." for now) -> wait for every store's
 *   INFO (the layout) -> serve MINIBATCH_REQ, INFO_REQ and NODES_REQ, a
 *   background INFO check keeping /readyz honest -> SIGTERM: stop
 *   serving, close, exit 0. A graph store found serving another graph:
 *   refuse every request, /readyz 503, and after --graph-changed-exit-s
 *   exit 3 (SMP_EXIT_GRAPH_CHANGED) so that a restart loads the new graph.
 *
 * `gnn-sampler bench ...` runs the in-process benchmark instead (sampling_bench.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "sampling_bench.h"
#include "err.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "opt.h"
#include "peers.h"
#include "proto.h"
#include "server.h"
#include "service.h"
#include "store_backend.h"
#include "sys.h"

struct config {
	const char *graphstores, *pattern, *listen, *http_addr;
	int64_t count, http_port, workers, timeout_ms, retries, replica_timeout_ms, wait_stores, check_interval_ms,
		check_timeout_ms, ids_per_call, store_down_grace_s, graph_changed_exit_s, build_budget_mb,
		admission_wait_s, store_min_mb_per_s;
	struct gnn_tls_paths tls;
};

static struct config cfg;

static const struct gnn_opt options[] = {
	{ "graphstores", GNN_OPT_LIST, &cfg.graphstores, NULL, 0, 0, NULL,
	  "graph store URLs, comma-separated, one per partition (store i is named graphstore-i)" },
	{ "graphstore-pattern", GNN_OPT_STR, &cfg.pattern, NULL, 0, 0, NULL,
	  "instead of --graphstores: a URL with one %d, e.g. tcp://graphstore-%d.graphstore:7000, "
	  "expanded for 0..COUNT-1" },
	{ "graphstore-count", GNN_OPT_INT, &cfg.count, "0", 0, 65536, NULL,
	  "number of graph stores for --graphstore-pattern" },
	{ "listen", GNN_OPT_STR, &cfg.listen, "tcp://0.0.0.0:7100", 0, 0, NULL,
	  "nng URL to serve minibatch, info and nodes requests on" },
	{ "http-port", GNN_OPT_INT, &cfg.http_port, "9101", 0, 65535, NULL,
	  "port of /healthz, /readyz, /metrics (0: any free port)" },
	{ "http-addr", GNN_OPT_STR, &cfg.http_addr, "0.0.0.0", 0, 0, NULL, "address the HTTP server binds" },
	{ "workers", GNN_OPT_INT, &cfg.workers, "0", 0, 1024, NULL,
	  "minibatches built at once, one per worker thread (0: 2 per CPU the process may use: its affinity and "
	  "cgroup CPU limit)" },
	{ "timeout-ms", GNN_OPT_INT, &cfg.timeout_ms, "5000", 1, 600000, NULL,
	  "timeout of one attempt of a graph store call" },
	{ "retries", GNN_OPT_INT, &cfg.retries, "2", 0, 100, NULL,
	  "extra attempts of a graph store call that timed out" },
	{ "replica-timeout-ms", GNN_OPT_INT, &cfg.replica_timeout_ms, "500", 1, 600000, NULL,
	  "with several graph stores for a partition (replicas), a call's first attempt on each waits 8 times "
	  "their recent slowest answer, at least 100 ms and at most this long (plus the bytes term of "
	  "--store-min-mb-per-s), then the call goes to another replica; once every replica had it, attempts "
	  "wait --timeout-ms" },
	{ "wait-stores", GNN_OPT_INT, &cfg.wait_stores, "600", 0, 86400, NULL,
	  "seconds to wait at start-up until every graph store answers" },
	{ "check-interval-ms", GNN_OPT_INT, &cfg.check_interval_ms, "1000", 100, 600000, NULL,
	  "period of the background INFO check behind /readyz" },
	{ "store-down-grace-s", GNN_OPT_INT, &cfg.store_down_grace_s, "30", 0, 86400, NULL,
	  "a graph store that stops answering makes /readyz fail only after this long (a restarting store "
	  "must not take every sampler out of its Service; calls wait for it meanwhile)" },
	{ "graph-changed-exit-s", GNN_OPT_INT, &cfg.graph_changed_exit_s, "5", 0, 3600, NULL,
	  "a graph store that now serves another graph makes the sampler refuse every request (ERROR eunavail) "
	  "and report not ready, then exit with status 3 after this long, so that its restart loads the new graph" },
	{ "check-timeout-ms", GNN_OPT_INT, &cfg.check_timeout_ms, "1000", 1, 600000, NULL,
	  "timeout of one INFO check (no retries)" },
	{ "build-budget-mb", GNN_OPT_INT, &cfg.build_budget_mb, "0", 0, 1 << 20, NULL,
	  "megabytes of minibatches built at once (their feature rows twice, and the reply until sent); the "
	  "rest wait in arrival order (0: half the container's memory limit, at most 512)" },
	{ "admission-wait-s", GNN_OPT_INT, &cfg.admission_wait_s, "20", 1, 86400, NULL,
	  "longest wait of a minibatch for room in the build budget, then it is answered busy (eunavail) and the "
	  "trainer asks another replica: keep it below the trainers' --timeout-ms" },
	{ "store-min-mb-per-s", GNN_OPT_INT, &cfg.store_min_mb_per_s, "20", 1, 1 << 20, NULL,
	  "a graph store call's deadline is --timeout-ms plus the bytes this minibatch asks of that store at this "
	  "rate: large minibatches get longer" },
	{ "ids-per-call", GNN_OPT_INT, &cfg.ids_per_call, "8192", 1, 524288, NULL,
	  "a partition's share of a layer goes out in calls of at most this many node IDs" },
	GNN_TLS_OPTIONS(cfg.tls),
	{ NULL },
};

/* What the hooks share. */
struct sampler {
	char **urls;
	size_t nurls;
	struct smp_stores *stores;
	struct smp_service *service;
	struct smp_admit *admit;
	struct smp_backend be;
	struct gnn_server *server;
};

static int configure(void *ctx)
{
	struct sampler *sm = ctx;

	if (cfg.workers == 0)
		cfg.workers = 2 * gnn_cpu_count();
	if (cfg.build_budget_mb == 0)
		cfg.build_budget_mb = (int64_t)(smp_admit_default_budget() >> 20);
	return gnn_peers_parse("graphstore", cfg.graphstores, cfg.pattern, cfg.count, GNN_PROTO_MAX_PARTS, &sm->urls,
			       &sm->nurls);
}

/* Listening before the stores answer lets a trainer that is already asking
 * get "waiting for graph stores: ..." (the backend's layout_known) instead
 * of a timeout, and a busy --listen port fail at once. */
static int start(void *ctx, struct gnn_metrics *reg)
{
	struct sampler *sm = ctx;
	struct smp_stores_opts so = {
		.urls = (const char *const *)sm->urls, .n = sm->nurls, .timeout_ms = (int)cfg.timeout_ms,
		.retries = (int)cfg.retries, .replica_timeout_ms = (int)cfg.replica_timeout_ms,
		.check_interval_ms = (int)cfg.check_interval_ms,
		.check_timeout_ms = (int)cfg.check_timeout_ms, .down_grace_s = (double)cfg.store_down_grace_s,
		.changed_exit_s = (double)cfg.graph_changed_exit_s,
		.min_bytes_per_s = (double)cfg.store_min_mb_per_s * 1048576.0, .metrics = reg };
	struct smp_admit_opts ao = { .budget_bytes = (uint64_t)cfg.build_budget_mb << 20,
				     .wait_s = (double)cfg.admission_wait_s, .metrics = reg };
	struct smp_service_opts sv = { .backend = &sm->be, .metrics = reg,
				       .max_ids_per_call = (uint32_t)cfg.ids_per_call };
	struct gnn_server_opts srv = { .name = "sampler", .listen = cfg.listen, .workers = (int)cfg.workers,
				       .metrics = reg, .handler = smp_service_handle,
				       .after_reply = smp_service_after_reply,
				       /* Requests carry IDs only: a minibatch is what it sends. */
				       .max_request_bytes = GNN_PROTO_MAX_REQ_BYTES };
	int rc;

	if ((rc = smp_admit_new(&ao, &sm->admit)) != GNN_OK)
		return rc;
	sv.admit = sm->admit;
	if ((rc = smp_stores_open(&so, &sm->stores)) != GNN_OK)
		return rc;
	smp_stores_backend(sm->stores, &sm->be);
	if ((rc = smp_service_new(&sv, &sm->service)) != GNN_OK)
		return rc;
	srv.ctx = sm->service;
	return gnn_server_start(&srv, &sm->server);
}

static bool ready(void *ctx, char *why, size_t why_len)
{
	return smp_stores_ready(((struct sampler *)ctx)->stores, why, why_len);
}

/* Until every store answered INFO (the layout), then the background check. */
static int wait_stores(void *ctx, int http_port)
{
	struct sampler *sm = ctx;
	int rc = smp_stores_connect(sm->stores, (double)cfg.wait_stores, gnn_stop_requested);

	if (rc != GNN_OK || (rc = smp_stores_start_check(sm->stores)) != GNN_OK)
		return rc;
	GNN_INFO("ready", "listen=%s port=%d http_port=%d stores=%zu workers=%" PRId64 " build_budget_mb=%" PRId64,
		 cfg.listen, gnn_server_port(sm->server), http_port, sm->nurls, cfg.workers, cfg.build_budget_mb);
	return GNN_OK;
}

/* A store that changed graph leaves this process a stale layout and nothing
 * to serve: requests are refused meanwhile (the trainers ask other
 * replicas, /readyz takes it out of the Service), then it exits with
 * SMP_EXIT_GRAPH_CHANGED and its restart learns the new graph at start-up. */
static int serve(void *ctx)
{
	struct sampler *sm = ctx;
	const struct timespec tick = { 0, 100 * 1000000L };
	double since;

	while (!gnn_stop_requested()) {
		if (smp_stores_changed(sm->stores, &since) && gnn_now() - since >= (double)cfg.graph_changed_exit_s) {
			GNN_ERROR("graph_changed_exit", "refused_for_s=%.1f reason=\"a graph store changed graph; a "
				  "restart loads the new one\"", gnn_now() - since);
			return GNN_EVERSION;
		}
		nanosleep(&tick, NULL);
	}
	return GNN_ECLOSED;
}

/* Stores that do not fit together (GNN_EINVAL) are not a bad flag of this
 * process: exit 1, like any failure to serve. */
static int exit_status(void *ctx, int rc)
{
	(void)ctx;
	return rc == GNN_EVERSION ? SMP_EXIT_GRAPH_CHANGED : GNN_EXIT_FAILED;
}

/* Requests in progress finish first; those waiting on a store end at once
 * instead of at their timeouts. */
static void stop(void *ctx, int status)
{
	struct sampler *sm = ctx;

	if (gnn_stop_requested() || status == SMP_EXIT_GRAPH_CHANGED) {
		smp_stores_abort(sm->stores);
		if (sm->admit != NULL)
			smp_admit_abort(sm->admit);
	}
	gnn_server_stop(sm->server);
	smp_stores_close(sm->stores);
	smp_service_free(sm->service);
	smp_admit_free(sm->admit);
	gnn_peers_free(sm->urls, sm->nurls);
}

int main(int argc, char **argv)
{
	static struct sampler sm;
	const struct gnn_lifecycle lc = {
		.prog = "gnn-sampler",
		.summary = "Build GraphSAGE minibatches from the graph stores (`gnn-sampler bench --help`: the "
			   "in-process benchmark).",
		.options = options, .tls = &cfg.tls, .http_addr = &cfg.http_addr, .http_port = &cfg.http_port, .ready = ready,
		.ctx = &sm, .configure = configure, .start = start, .wait = wait_stores, .serve = serve,
		.stop = stop, .exit_status = exit_status,
	};

	gnn_log_init("gnn-sampler");
	gnn_keep_heap();
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
		return smp_bench_main(argc - 1, argv + 1);
	return gnn_lifecycle_run(&lc, argc, argv);
}
