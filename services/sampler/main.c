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
 * `gnn-sampler bench ...` runs the in-process benchmark instead (bench.h). */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "err.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "opt.h"
#include "peers.h"
#include "proto.h"
#include "server.h"
#include "service.h"
#include "stores.h"
#include "sys.h"

#define EXIT_USAGE 2

struct config {
	const char *graphstores, *pattern, *listen, *http_addr;
	int64_t count, http_port, workers, timeout_ms, retries, wait_stores, check_interval_ms,
		check_timeout_ms, ids_per_call, store_down_grace_s, graph_changed_exit_s;
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
	{ "ids-per-call", GNN_OPT_INT, &cfg.ids_per_call, "8192", 1, 524288, NULL,
	  "a partition's share of a layer goes out in calls of at most this many node IDs" },
	{ NULL },
};

/* Every minibatch allocates and frees buffers of megabytes: the stores'
 * answers, the blocks, the reply and nng's copy of it (36 MB each on
 * `small` with batch 1024, fanouts 15,10,5). With glibc's defaults each is
 * mapped, zeroed by the kernel page by page and unmapped again (the server
 * also frees worker reply buffers over 8 MB after each reply); over 10,000
 * page faults per minibatch, a third of the sampler's CPU. So: no mmap for
 * large blocks, one arena (a freed per-thread heap would be unmapped
 * whole), and free memory goes back to the system only above 1 GB of free
 * heap top. Measured with tests/bench_sampling.sh: 63 -> 36 ms of sampler
 * CPU per minibatch and no page faults once warm; the price is that the
 * resident size stays at its peak (about 3 minibatches per worker). */
static void keep_heap(void)
{
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

static int default_workers(void)
{
	return (int)(2 * gnn_cpu_count());
}

int main(int argc, char **argv)
{
	struct gnn_metrics *reg = NULL;
	struct gnn_http *http = NULL;
	struct gnn_server *server = NULL;
	struct smp_stores *stores = NULL;
	struct smp_service *service = NULL;
	struct smp_backend be;
	struct smp_stores_opts so;
	struct smp_service_opts sv;
	struct gnn_server_opts srv;
	char **urls = NULL;
	size_t nurls = 0;
	int rc, status = 1;

	gnn_log_init("gnn-sampler");
	keep_heap();
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
		return smp_bench_main(argc - 1, argv + 1);
	rc = gnn_opt_parse("gnn-sampler",
			   "Build GraphSAGE minibatches from the graph stores (`gnn-sampler bench --help`: "
			   "the in-process benchmark).",
			   options, argc, argv);
	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK || gnn_peers_parse("graphstore", cfg.graphstores, cfg.pattern, cfg.count,
					    GNN_PROTO_MAX_PARTS, &urls, &nurls) != GNN_OK)
		return EXIT_USAGE;
	if (cfg.workers == 0)
		cfg.workers = default_workers();
	gnn_opt_log(options);
	gnn_signals_install();
	gnn_stop_watchdog(GNN_STOP_GRACE_S);

	/* Observability first, so /healthz answers while we wait for stores. */
	if (gnn_metrics_new(&reg) != GNN_OK || gnn_metrics_add_process(reg) != GNN_OK)
		goto out;
	so = (struct smp_stores_opts){ .urls = (const char *const *)urls, .n = nurls,
				      .timeout_ms = (int)cfg.timeout_ms, .retries = (int)cfg.retries,
				      .check_interval_ms = (int)cfg.check_interval_ms,
				      .check_timeout_ms = (int)cfg.check_timeout_ms,
				      .down_grace_s = (double)cfg.store_down_grace_s,
				      .changed_exit_s = (double)cfg.graph_changed_exit_s, .metrics = reg };
	if ((rc = smp_stores_open(&so, &stores)) != GNN_OK)
		goto out;
	if ((rc = gnn_http_start(cfg.http_addr, (int)cfg.http_port, reg, smp_stores_ready, stores, &http)) != GNN_OK)
		goto out;

	/* Listening before the stores answer lets a trainer that is already
	 * asking get "waiting for graph stores: ..." (the backend's
	 * layout_known) instead of a timeout, and a busy --listen port fail
	 * at once. */
	smp_stores_backend(stores, &be);
	sv = (struct smp_service_opts){ .backend = &be, .metrics = reg,
				       .max_ids_per_call = (uint32_t)cfg.ids_per_call };
	srv = (struct gnn_server_opts){ .name = "sampler", .listen = cfg.listen, .workers = (int)cfg.workers,
				       .metrics = reg, .handler = smp_service_handle };
	if ((rc = smp_service_new(&sv, &service)) != GNN_OK)
		goto out;
	srv.ctx = service;
	if ((rc = gnn_server_start(&srv, &server)) != GNN_OK)
		goto out;

	rc = smp_stores_connect(stores, (double)cfg.wait_stores, gnn_stop_requested);
	if (rc == GNN_ECLOSED) {
		status = 0;
		goto out;
	}
	if (rc != GNN_OK || (rc = smp_stores_start_check(stores)) != GNN_OK)
		goto out;
	GNN_INFO("ready", "listen=%s port=%d http_port=%d stores=%zu workers=%" PRId64, cfg.listen,
		 gnn_server_port(server), gnn_http_port(http), nurls, cfg.workers);

	/* A store that changed graph leaves this process a stale layout and
	 * nothing to serve: requests are refused meanwhile (the trainers ask
	 * other replicas, /readyz takes it out of the Service), then it exits
	 * non-zero and its restart learns the new graph at start-up. */
	while (!gnn_stop_requested()) {
		struct timespec ts = { 0, 100 * 1000000L };
		double since;

		if (smp_stores_changed(stores, &since) && gnn_now() - since >= (double)cfg.graph_changed_exit_s) {
			GNN_ERROR("stopping", "reason=graph_changed refused_for_s=%.1f exit=%d", gnn_now() - since,
				  SMP_EXIT_GRAPH_CHANGED);
			status = SMP_EXIT_GRAPH_CHANGED;
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	GNN_INFO("stopping", "reason=signal");
	status = 0;
out:
	if (status == 1)
		GNN_ERROR("failed", "reason=\"%s\"", gnn_strerror(rc));
	/* Requests in progress finish first; those waiting on a store end
	 * at once instead of at their timeouts. */
	if (gnn_stop_requested() || status == SMP_EXIT_GRAPH_CHANGED)
		smp_stores_abort(stores);
	gnn_server_stop(server);
	smp_stores_close(stores);
	gnn_http_stop(http);
	smp_service_free(service);
	gnn_metrics_free(reg);
	gnn_peers_free(urls, nurls);
	if (status == 0)
		GNN_INFO("stopped", "exit=0");
	else if (status == SMP_EXIT_GRAPH_CHANGED)
		GNN_ERROR("stopped", "exit=%d reason=\"a graph store changed graph; a restart loads the new one\"",
			  status);
	return status;
}
