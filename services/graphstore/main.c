/* gnn-graphstore: serves one partition of a gnn-partition output to the
 * samplers: neighbour sampling, feature rows, labels, split codes and the
 * owned-node lists (docs/graphstore.md).
 *
 * On Kubernetes it runs as StatefulSet pod graphstore-<p> and serves
 * partition p; the partitioner Job may still be writing the output when the
 * pod starts, so it waits (bounded) for DATA/meta.json. /healthz answers
 * from the first moment, /readyz once the partition is mapped and verified.
 * SIGTERM or SIGINT stops it cleanly with exit status 0. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "opt.h"
#include "peers.h"
#include "server.h"
#include "store.h"
#include "sys.h"

#define EXIT_FAILED 1 /* could not serve: data missing or corrupt, port taken */
#define EXIT_USAGE 2  /* bad options */

struct config {
	const char *data, *listen, *http_addr;
	int64_t part, http_port, workers, wait_data;
};

static struct config cfg;

static const struct gnn_opt options[] = {
	{ "data", GNN_OPT_STR, &cfg.data, NULL, 0, 0, NULL,
	  "partition output folder (gnn-partition --out): meta.json and part-<p>/" },
	{ "part", GNN_OPT_INT, &cfg.part, NULL, 0, GNN_PROTO_MAX_PARTS - 1, NULL,
	  "partition to serve (default: the host name's ordinal, graphstore-3 serves 3)" },
	{ "listen", GNN_OPT_STR, &cfg.listen, "tcp://0.0.0.0:7000", 0, 0, NULL,
	  "nng URL the requests arrive on (port 0: any free port, logged)" },
	{ "http-addr", GNN_OPT_STR, &cfg.http_addr, "0.0.0.0", 0, 0, NULL,
	  "address of /healthz, /readyz and /metrics (an IPv4 or IPv6 literal)" },
	{ "http-port", GNN_OPT_INT, &cfg.http_port, "9100", 0, 65535, NULL,
	  "port of /healthz, /readyz and /metrics (0: any free port, logged)" },
	{ "workers", GNN_OPT_INT, &cfg.workers, "0", 0, 1024, NULL,
	  "request worker threads (0: one per CPU the process may use: its affinity and cgroup CPU limit)" },
	{ "wait-data", GNN_OPT_INT, &cfg.wait_data, "600", 0, 86400, NULL,
	  "seconds to wait for DATA/meta.json to appear (0: do not wait)" },
	{ NULL },
};

/* Fills the defaults that depend on the machine: the partition from the
 * host name and the worker count from the CPUs. */
static int resolve_config(void)
{
	if (cfg.data == NULL) {
		GNN_ERROR("bad_config", "reason=\"--data DIR (GNN_DATA) is required: the partition output folder\"");
		return GNN_EINVAL;
	}
	if (cfg.part < 0 && gnn_own_ordinal("part", &cfg.part) != GNN_OK)
		return GNN_EINVAL;
	if (cfg.workers == 0)
		cfg.workers = gnn_cpu_count();
	return GNN_OK;
}

/* Until SIGTERM/SIGINT: everything else happens on the server's threads. */
static void serve_until_stopped(void)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = 100 * 1000000L };

	while (!gnn_stop_requested())
		nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
	struct gnn_metrics *reg = NULL;
	struct gnn_http *http = NULL;
	struct gnn_server *server = NULL;
	struct gnn_server_opts so;
	static struct gs_store store;
	uint64_t rss_before, rss_growth;
	int rc, status = EXIT_FAILED;

	gnn_log_init("gnn-graphstore");
	cfg.part = -1;
	rc = gnn_opt_parse("gnn-graphstore", "Serve one graph partition to gnn-dist's samplers.", options,
			   argc, argv);
	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK || resolve_config() != GNN_OK)
		return EXIT_USAGE;
	GNN_INFO("start", "part=%lld pid=%d", (long long)cfg.part, (int)getpid());
	gnn_opt_log(options);
	gnn_signals_install();
	gnn_stop_watchdog(GNN_STOP_GRACE_S);

	if (gnn_metrics_new(&reg) != GNN_OK || gnn_metrics_add_process(reg) != GNN_OK ||
	    gs_store_init(&store, cfg.data, (int32_t)cfg.part, reg) != GNN_OK)
		goto out;
	/* Health first, so probes see a live but unready pod while it loads. */
	if (gnn_http_start(cfg.http_addr, (int)cfg.http_port, reg, gs_ready, &store, &http) != GNN_OK)
		goto out;
	/* The RPC port too: a taken port fails now, and early callers get
	 * "unavailable: loading" errors instead of silence. */
	so = (struct gnn_server_opts){ .name = "graphstore", .listen = cfg.listen, .workers = (int)cfg.workers,
				       .metrics = reg, .handler = gs_handle, .ctx = &store };
	if (gnn_server_start(&so, &server) != GNN_OK)
		goto out;

	rc = gs_wait_data(cfg.data, cfg.wait_data);
	if (rc == GNN_ECLOSED)
		goto out_stopping;
	if (rc != GNN_OK)
		goto out;
	rss_before = gnn_rss_bytes();
	if ((rc = gs_store_load(&store)) != GNN_OK) {
		GNN_ERROR("load_failed", "part=%lld data=%s reason=\"%s\"", (long long)cfg.part, cfg.data,
			  gnn_strerror(rc));
		if (rc == GNN_ERANGE)
			status = EXIT_USAGE;
		goto out;
	}
	rss_growth = gnn_rss_bytes() > rss_before ? gnn_rss_bytes() - rss_before : 0;
	/* The partition is served from the mapping itself: resident memory
	 * grows by about the files' size (page cache), never by a copy. */
	GNN_INFO("loaded", "part=%d nodes=%lld node_range=[%lld,%lld) edges=%lld feat_dim=%d graph_id=%016llx partition_bytes=%llu rss_bytes=%llu rss_growth_bytes=%llu growth_over_partition=%.2f seconds=%.2f",
		 store.part.id, (long long)store.part.num_nodes, (long long)store.part.node_start,
		 (long long)store.part.node_end, (long long)store.part.num_edges, store.part.feat_dim,
		 (unsigned long long)store.graph_id, (unsigned long long)store.mapped_bytes,
		 (unsigned long long)gnn_rss_bytes(), (unsigned long long)rss_growth,
		 (double)rss_growth / (double)store.mapped_bytes, store.load_seconds);
	GNN_INFO("ready", "part=%d url=%s port=%d http_port=%d workers=%lld", store.part.id, cfg.listen,
		 gnn_server_port(server), gnn_http_port(http), (long long)cfg.workers);

	serve_until_stopped();

out_stopping:
	GNN_INFO("stopping", "reason=signal part=%lld", (long long)cfg.part);
	status = 0;
out:
	/* Order matters: no request may run while the partition is unmapped. */
	gnn_server_stop(server);
	gs_store_close(&store);
	gnn_http_stop(http);
	gnn_metrics_free(reg);
	if (status == 0)
		GNN_INFO("stopped", "part=%lld", (long long)cfg.part);
	else
		GNN_ERROR("exit", "status=%d part=%lld reason=\"could not serve; see the error above\"", status,
			  (long long)cfg.part);
	return status;
}
