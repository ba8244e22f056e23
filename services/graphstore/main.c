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
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "opt.h"
#include "peers.h"
#include "server.h"
#include "store.h"
#include "sys.h"

struct config {
	const char *data, *listen, *http_addr, *predictions, *emb_wal_dir;
	int64_t part, http_port, workers, wait_data;
	struct gnn_tls_paths tls;
};

static struct config cfg = { .part = -1 };

static const struct gnn_opt options[] = {
	{ "data", GNN_OPT_STR, &cfg.data, NULL, 0, 0, NULL,
	  "partition output folder (gnn-partition --out): meta.json and part-<p>/" },
	{ "part", GNN_OPT_INT, &cfg.part, NULL, 0, GNN_PROTO_MAX_PARTS - 1, NULL,
	  "partition to serve (default: the host name's ordinal, graphstore-3 serves 3)" },
	{ "predictions", GNN_OPT_STR, &cfg.predictions, NULL, 0, 0, NULL,
	  "gnn-trainer infer's output, served to PREDICT requests and picked up when it changes "
	  "(default: DATA/predictions)" },
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
	{ "emb-wal-dir", GNN_OPT_STR, &cfg.emb_wal_dir, NULL, 0, 0, NULL,
	  "folder of the learnable embeddings' log of changes: a restarted store replays it and comes back "
	  "with its rows, so no trainer goes back to a checkpoint (docs/embeddings.md; needs the checkpoints "
	  "on a file system the store writes, and room for about two checkpoint intervals of pushes)" },
	GNN_TLS_OPTIONS(cfg.tls),
	{ NULL },
};

/* What the hooks share. */
struct graphstore {
	struct gs_store store;
	struct gnn_server *server;
};

/* Fills the defaults that depend on the machine: the partition from the
 * host name and the worker count from the CPUs. */
static int configure(void *ctx)
{
	(void)ctx;
	if (cfg.data == NULL) {
		GNN_ERROR("bad_config", "reason=\"--data DIR (GNN_DATA) is required: the partition output folder\"");
		return GNN_EINVAL;
	}
	if (cfg.predictions == NULL) {
		static char dflt[4096];

		snprintf(dflt, sizeof(dflt), "%s/predictions", cfg.data);
		cfg.predictions = dflt;
	}
	if (cfg.part < 0 && gnn_own_ordinal("part", &cfg.part) != GNN_OK)
		return GNN_EINVAL;
	if (cfg.workers == 0)
		cfg.workers = gnn_cpu_count();
	return GNN_OK;
}

/* The RPC port before the data: a taken port fails now, and early callers
 * get "unavailable: loading" errors instead of silence. */
static int start(void *ctx, struct gnn_metrics *reg)
{
	struct graphstore *gs = ctx;
	struct gnn_server_opts so = { .name = "graphstore", .listen = cfg.listen, .workers = (int)cfg.workers,
				      .metrics = reg, .handler = gs_handle, .after_reply = gs_after_reply,
				      .ctx = &gs->store };
	int rc = gs_store_init(&gs->store, cfg.data, cfg.predictions, (int32_t)cfg.part, reg);

	gs->store.emb_wal_dir = cfg.emb_wal_dir;

	return rc != GNN_OK ? rc : gnn_server_start(&so, &gs->server);
}

static bool ready(void *ctx, char *why, size_t why_len)
{
	return gs_ready(&((struct graphstore *)ctx)->store, why, why_len);
}

/* Until the partitioner's output is there, then maps and verifies it. */
static int wait_and_load(void *ctx, int http_port)
{
	struct graphstore *gs = ctx;
	struct gs_store *st = &gs->store;
	uint64_t rss_before, rss_growth;
	int rc;

	if ((rc = gs_wait_data(cfg.data, cfg.wait_data)) != GNN_OK)
		return rc;
	rss_before = gnn_rss_bytes();
	if ((rc = gs_store_load(st)) != GNN_OK) {
		GNN_ERROR("load_failed", "part=%lld data=%s reason=\"%s\"", (long long)cfg.part, cfg.data,
			  gnn_strerror(rc));
		return rc;
	}
	rss_growth = gnn_rss_bytes() > rss_before ? gnn_rss_bytes() - rss_before : 0;
	/* The partition is served from the mapping itself: resident memory
	 * grows by about the files' size (page cache), never by a copy. */
	GNN_INFO("loaded", "part=%d nodes=%lld node_range=[%lld,%lld) edges=%lld types=%u relations=%u feat_dim=%u feat_dtype=%s graph_id=%016llx partition_bytes=%llu rss_bytes=%llu rss_growth_bytes=%llu growth_over_partition=%.2f seconds=%.2f",
		 st->part.id, (long long)st->part.num_nodes, (long long)st->part.node_start,
		 (long long)st->part.node_end, (long long)st->part.num_edges, st->part.num_types, st->part.num_rels,
		 st->meta.layout.feat_dim, gnn_dtype_name(st->meta.layout.feat_dtype),
		 (unsigned long long)st->meta.layout.graph_id, (unsigned long long)st->mapped_bytes,
		 (unsigned long long)gnn_rss_bytes(), (unsigned long long)rss_growth,
		 (double)rss_growth / (double)st->mapped_bytes, st->load_seconds);
	GNN_INFO("ready", "part=%d url=%s port=%d http_port=%d workers=%lld", st->part.id, cfg.listen,
		 gnn_server_port(gs->server), http_port, (long long)cfg.workers);
	return GNN_OK;
}

/* Order matters: no request may run while the partition is unmapped. */
static void stop(void *ctx, int status)
{
	struct graphstore *gs = ctx;

	(void)status;
	gnn_server_stop(gs->server);
	gs_store_close(&gs->store);
}

/* A partition the output does not have (--part too large) is a
 * configuration error like a bad flag. */
static int exit_status(void *ctx, int rc)
{
	(void)ctx;
	return rc == GNN_EINVAL || rc == GNN_ERANGE ? GNN_EXIT_USAGE : GNN_EXIT_FAILED;
}

int main(int argc, char **argv)
{
	static struct graphstore gs;
	const struct gnn_lifecycle lc = {
		.prog = "gnn-graphstore", .summary = "Serve one graph partition to gnn-dist's samplers.",
		.options = options, .tls = &cfg.tls, .http_addr = &cfg.http_addr, .http_port = &cfg.http_port, .ready = ready,
		.ctx = &gs, .configure = configure, .start = start, .wait = wait_and_load, .stop = stop,
		.exit_status = exit_status,
	};

	gnn_log_init("gnn-graphstore");
	/* FEAT answers are megabytes each, built and freed per request. */
	gnn_keep_heap();
	return gnn_lifecycle_run(&lc, argc, argv);
}
