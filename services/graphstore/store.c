/* store.c - loading and describing the partition a graph store serves:
 * waiting for the partitioner's output, mapping and verifying partition p,
 * the graph identifier, readiness and the store's gauges. The request
 * handlers are in handlers.c. */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "hash.h"
#include "json.h"
#include "log.h"
#include "partq.h"
#include "sys.h"

/* How often gs_wait_data looks for meta.json and how often it says so. */
#define WAIT_POLL_MS 250
#define WAIT_LOG_EVERY_S 10.0

/* The embeddings' metrics (emb_table.h): rows and bytes through PULL, PUSH,
 * READ and WRITE, the updates, and what the state holds. */
static int register_emb_metrics(struct gnn_metrics *reg, struct gs_emb_metrics *m)
{
	static const char *const direction[] = { "direction" };
	struct gnn_counter *bytes;
	int rc;

	if ((rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_rows_pulled_total",
				      "Embedding rows returned by EMB PULL requests", NULL, 0, &m->rows_pulled)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_rows_refreshed_total",
				      "Embedding rows returned by EMB DELTA requests: the rows of a minibatch pulled "
				      "ahead that the last update changed", NULL, 0, &m->rows_refreshed)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_rows_pushed_total",
				      "Embedding gradient rows accepted by EMB PUSH requests (ignored repeats not counted)",
				      NULL, 0, &m->rows_pushed)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_bytes_total",
				      "Embedding row bytes received (in: PUSH, WRITE) and returned (out: PULL, DELTA, READ)",
				      direction, 1, &bytes)) ||
	    (rc = gnn_counter_labels(bytes, (const char *const[]){ "in" }, 1, &m->bytes_in)) ||
	    (rc = gnn_counter_labels(bytes, (const char *const[]){ "out" }, 1, &m->bytes_out)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_saved_bytes_total",
				      "Embedding row bytes this store wrote into checkpoint files itself (EMB SAVE)",
				      NULL, 0, &m->bytes_saved)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_log_bytes_total",
				      "Bytes appended to the embeddings' log of changes (--emb-wal-dir)", NULL, 0,
				      &m->bytes_logged)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_log_seconds_total",
				      "Seconds spent appending to the embeddings' log of changes, under the embeddings' lock",
				      NULL, 0, &m->log_seconds)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_update_seconds_total",
				      "Seconds spent applying sparse embedding updates", NULL, 0, &m->update_seconds)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_embedding_updates_total",
				      "Sparse embedding updates applied (one per training step once every rank pushed)",
				      NULL, 0, &m->updates)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_embedding_rows",
				    "Embedding rows held (this partition's nodes of the embedded types)", NULL, 0, &m->rows)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_embedding_state_bytes",
				    "Bytes of the embedding rows, best rows and optimizer state held", NULL, 0, &m->bytes)))
		return rc;
	return GNN_OK;
}

/* When the inference Job wrote this run's predictions (summary.json, its
 * last file), 0 while there are none: a render hook, since the store
 * itself looks at them only when a PREDICT asks. */
static void preds_time_refresh(void *ctx)
{
	const struct gs_store *s = ctx;
	char path[PATH_MAX];
	struct stat st;
	double t = 0;

	if (s->preds_dir != NULL && (size_t)snprintf(path, sizeof(path), "%s/summary.json", s->preds_dir) < sizeof(path) &&
	    stat(path, &st) == 0)
		t = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
	gnn_gauge_set(s->preds_time, t);
}

int gs_store_init(struct gs_store *s, const char *dir, const char *preds_dir, int32_t part,
		  struct gnn_metrics *reg)
{
	int rc;

	memset(s, 0, sizeof(*s));
	atomic_init(&s->state, GS_WAITING);
	s->dir = dir;
	s->preds_dir = preds_dir;
	s->part_id = part;
	if ((rc = gnn_metrics_counter(reg, "gnn_graphstore_sampled_edges_total",
				      "Neighbour IDs returned by SAMPLE requests", NULL, 0, &s->sampled_edges)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_graphstore_feature_rows_total",
				      "Feature rows returned by FEAT requests", NULL, 0, &s->feature_rows)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_ready",
				    "1 when the partition is loaded and verified and requests are served, else 0",
				    NULL, 0, &s->ready)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_partition_bytes",
				    "Bytes of the served partition's files, mapped read-only (headers included)",
				    NULL, 0, &s->partition_bytes)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_partition_nodes", "Nodes owned by the served partition",
				    NULL, 0, &s->partition_nodes)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_partition_edges",
				    "In-edges stored by the served partition", NULL, 0, &s->partition_edges)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_partition_id",
				    "Number of the served partition", NULL, 0, &s->partition_id)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_load_seconds",
				    "Seconds taken to map and verify the partition", NULL, 0, &s->load_seconds_gauge)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_graphstore_predictions_timestamp_seconds",
				    "When gnn-trainer infer wrote the predictions served (their summary.json), seconds "
				    "since the epoch; 0 while there are none", NULL, 0, &s->preds_time)) ||
	    (rc = gnn_metrics_on_render(reg, preds_time_refresh, s)) ||
	    (rc = register_emb_metrics(reg, &s->emb_metrics)))
		return rc;
	gnn_gauge_set(s->partition_id, part);
	return gs_emb_new(&s->emb_metrics, &s->emb);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int gs_wait_data(const char *dir, int64_t timeout_s)
{
	char path[4200];
	double t0 = gnn_now(), last_log, waited;

	if ((size_t)snprintf(path, sizeof(path), "%s/meta.json", dir) >= sizeof(path))
		return GNN_ERANGE;
	if (access(path, F_OK) == 0)
		return GNN_OK;
	if (timeout_s == 0) {
		GNN_ERROR("data_missing", "file=%s error=\"%s\" reason=\"no partition output there (--wait-data 0: not waiting); run gnn-partition --out %s first\"",
			  path, strerror(errno), dir);
		return GNN_ENOENT;
	}
	GNN_INFO("waiting_for_data", "file=%s timeout_s=%lld reason=\"the partitioner writes it when done\"", path,
		 (long long)timeout_s);
	last_log = t0;
	for (;;) {
		if (gnn_stop_requested())
			return GNN_ECLOSED;
		sleep_ms(WAIT_POLL_MS);
		if (access(path, F_OK) == 0) {
			GNN_INFO("data_found", "file=%s waited_s=%.1f", path, gnn_now() - t0);
			return GNN_OK;
		}
		waited = gnn_now() - t0;
		if (waited >= (double)timeout_s) {
			GNN_ERROR("data_timeout", "file=%s waited_s=%.0f reason=\"partition output did not appear; is the partitioner Job done and the volume mounted at %s?\"",
				  path, waited, dir);
			return GNN_ETIMEDOUT;
		}
		if (gnn_now() - last_log >= WAIT_LOG_EVERY_S) {
			GNN_INFO("waiting_for_data", "file=%s waited_s=%.0f timeout_s=%lld", path, waited,
				 (long long)timeout_s);
			last_log = gnn_now();
		}
	}
}

/* The node map, for LOOKUP: its rows of each of partition p's types must
 * ascend (a (partition, type) range lists its nodes in original order). */
static int open_node_map(struct gs_store *s, const struct gnn_meta *m, int32_t p)
{
	int rc;

	if ((rc = gnn_node_map_open(s->dir, m, GNN_PART_VERIFY, &s->node_map)) != GNN_OK)
		return rc;
	if ((rc = gnn_partq_node_map_check(&m->layout, &s->node_map, (uint32_t)p, s->dir)) != GNN_OK)
		gnn_arr_close(&s->node_map);
	return rc;
}

/* GNN_FAULT_LOAD_STALL_S (docs/reliability.md, "Injected faults"): a
 * partition that takes this long to load, so that a test at a small size
 * meets a restarted store's "still loading" answers as one at ogbn-mag's
 * size does. */
static void fault_load_stall(void)
{
	unsigned n = gnn_fault_seconds("GNN_FAULT_LOAD_STALL_S", "the store answers \"still loading\" this long "
				       "before it loads its partition");

	for (unsigned i = 0; i < 10 * n && !gnn_stop_requested(); i++)
		nanosleep(&(struct timespec){ 0, 100 * 1000000L }, NULL);
}

int gs_store_load(struct gs_store *s)
{
	int32_t p = s->part_id;
	struct gnn_meta meta = { 0 };
	struct gnn_part part = { 0 };
	double t0 = gnn_now();
	uint64_t bytes = 0;
	uint32_t lt;
	int rc;

	atomic_store(&s->state, GS_LOADING);
	fault_load_stall();
	if ((rc = gnn_meta_load(s->dir, &meta)) != GNN_OK)
		goto out_fail;
	if ((uint32_t)p >= meta.layout.num_parts) {
		GNN_ERROR("bad_config", "part=%d num_parts=%" PRIu32 " data=%s reason=\"no such partition: this output has partitions 0..%" PRIu32 " (check --part or the StatefulSet's replicas)\"",
			  p, meta.layout.num_parts, s->dir, meta.layout.num_parts - 1);
		rc = GNN_ERANGE;
		goto out_fail;
	}
	if ((rc = gnn_meta_graph_id(&meta, &meta.layout.graph_id)) != GNN_OK)
		goto out_fail;
	GNN_INFO("loading", "part=%d data=%s nodes=%lld verify=crc32+contents", p, s->dir,
		 (long long)(meta.offsets[p + 1] - meta.offsets[p]));
	/* GNN_PART_VERIFY reads every page once: the CRCs and the contents are
	 * checked before the first request, and the pages are then resident. */
	if ((rc = gnn_part_open(s->dir, &meta, p, GNN_PART_VERIFY, &part)) != GNN_OK)
		goto out_fail;
	if ((rc = open_node_map(s, &meta, p)) != GNN_OK) {
		gnn_part_close(&part);
		goto out_fail;
	}
	/* predictions are rows of the label type's nodes of this partition */
	lt = meta.schema->label_type;
	if ((rc = gs_preds_new(s->preds_dir, p, part.type_start[lt], part.type_start[lt + 1] - part.type_start[lt],
			       part.num_nodes, &s->preds)) != GNN_OK) {
		gnn_part_close(&part);
		gnn_arr_close(&s->node_map);
		goto out_fail;
	}
	/* a restarted store gets its embeddings back before any request */
	if (s->emb_wal_dir != NULL && (rc = gs_emb_recover(s->emb, s->emb_wal_dir, &meta.layout, (uint32_t)p)) != GNN_OK) {
		gs_preds_free(s->preds);
		s->preds = NULL;
		gnn_part_close(&part);
		gnn_arr_close(&s->node_map);
		goto out_fail;
	}
	for (size_t i = 0; i < sizeof(part.arrs) / sizeof(part.arrs[0]); i++)
		bytes += part.arrs[i].info.file_bytes;
	s->meta = meta;
	s->part = part;
	s->mapped_bytes = bytes;
	s->load_seconds = gnn_now() - t0;
	gnn_gauge_set(s->partition_bytes, (double)bytes);
	gnn_gauge_set(s->partition_nodes, (double)part.num_nodes);
	gnn_gauge_set(s->partition_edges, (double)part.num_edges);
	gnn_gauge_set(s->load_seconds_gauge, s->load_seconds);
	atomic_store_explicit(&s->state, GS_READY, memory_order_release);
	gnn_gauge_set(s->ready, 1);
	return GNN_OK;

out_fail:
	gnn_meta_free(&meta);
	atomic_store(&s->state, GS_WAITING);
	return rc;
}

void gs_store_close(struct gs_store *s)
{
	int was = atomic_exchange(&s->state, GS_STOPPING);

	if (s->ready != NULL)
		gnn_gauge_set(s->ready, 0);
	gs_emb_free(s->emb);
	s->emb = NULL;
	if (was == GS_READY) {
		gs_preds_free(s->preds);
		s->preds = NULL;
		gnn_part_close(&s->part);
		gnn_arr_close(&s->node_map);
		gnn_meta_free(&s->meta);
	}
}

bool gs_ready(void *ctx, char *why, size_t why_len)
{
	struct gs_store *s = ctx;

	switch (atomic_load(&s->state)) {
	case GS_READY:
		return true;
	case GS_WAITING:
		snprintf(why, why_len, "waiting for %s/meta.json", s->dir);
		return false;
	case GS_LOADING:
		snprintf(why, why_len, "loading partition %d", s->part_id);
		return false;
	default:
		snprintf(why, why_len, "stopping");
		return false;
	}
}
