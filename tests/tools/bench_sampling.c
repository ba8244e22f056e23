/* bench_sampling - the distributed half of the sampling benchmark
 * (tests/bench_sampling.sh): asks a running gnn-sampler for --minibatches
 * minibatches, --inflight of them at a time, and prints the rates:
 *
 *   bench_distributed minibatches=N inflight=K seconds=S minibatches_per_s=.. edges_per_s=..
 *       feature_bytes_per_s=.. mean_edges=.. mean_input_nodes=.. latency_ms_p50=.. latency_ms_max=..
 *   bench_gather rows=R seconds=S bytes_per_s=..
 *
 * The second line is the reference for feature throughput: one thread
 * gathering the same input rows (blocks[0]'s sources of the minibatches
 * received) from the partition files mapped in memory, into one buffer.
 * Minibatch i has the seeds `gnn-sampler bench` draws for its minibatch i
 * (gnn_sample_distinct in libcommon/sample.h) and sampling seed seed + i, so both
 * halves build the same minibatches. */
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "fanouts.h"
#include "log.h"
#include "opt.h"
#include "part.h"
#include "proto.h"
#include "sample.h"
#include "sys.h"
#include "tls.h"

static struct {
	const char *sampler, *parts, *fanouts;
	int64_t batch, minibatches, warmup, inflight, seed, timeout_ms;
	struct gnn_tls_paths tls;
} cfg;

static const struct gnn_opt options[] = {
	{ "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL, "sampler URL (required)" },
	{ "parts", GNN_OPT_STR, &cfg.parts, NULL, 0, 0, NULL, "the partition folder the stores serve (required)" },
	{ "batch", GNN_OPT_INT, &cfg.batch, "1024", 1, 1 << 22, NULL, "seed nodes per minibatch" },
	{ "fanouts", GNN_OPT_LIST, &cfg.fanouts, "15,10,5", 0, 0, NULL, "fanouts, input layer first" },
	{ "minibatches", GNN_OPT_INT, &cfg.minibatches, "60", 1, 1e6, NULL, "timed minibatches" },
	{ "warmup", GNN_OPT_INT, &cfg.warmup, "4", 0, 1e6, NULL, "untimed minibatches first" },
	{ "inflight", GNN_OPT_INT, &cfg.inflight, "4", 1, 256, NULL, "requests in flight at once" },
	{ "seed", GNN_OPT_INT, &cfg.seed, "1", 0, INT64_MAX, NULL, "as gnn-sampler bench --seed" },
	{ "timeout-ms", GNN_OPT_INT, &cfg.timeout_ms, "120000", 1, 1e7, NULL, "timeout of one request" },
	GNN_TLS_OPTIONS(cfg.tls),
	{ NULL },
};

struct shared {
	struct gnn_client *client;
	struct gnn_minibatch_req proto;
	int64_t num_nodes;
	atomic_uint_fast64_t next;
	uint64_t end;
	int64_t **inputs;      /* [minibatches]: blocks[0]'s sources (timed phase) */
	uint32_t *ninputs;
	double *latency;
	bool timed;
	atomic_int failed;
};

struct worker {
	pthread_t thread;
	struct shared *sh;
	uint64_t edges, feat_bytes, input_nodes, done;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	int64_t *seeds = malloc((size_t)cfg.batch * sizeof(*seeds));
	struct gnn_minibatch_req rq = sh->proto;
	struct gnn_wbuf req;
	char err[256];

	gnn_wbuf_init(&req);
	for (;;) {
		uint64_t i = atomic_fetch_add(&sh->next, 1);
		struct gnn_minibatch mb;
		const void *payload;
		nng_msg *reply;
		size_t len;
		double t0;
		int rc;

		if (i >= sh->end || atomic_load(&sh->failed))
			break;
		if ((rc = gnn_sample_distinct((uint64_t)cfg.seed, i, sh->num_nodes, (uint32_t)cfg.batch,
					      seeds)) != GNN_OK) {
			printf("bench_sampling: FAIL minibatch=%" PRIu64 " code=%s reason=\"seed draw\"\n", i,
			       gnn_errname(rc));
			atomic_store(&sh->failed, true);
			break;
		}
		rq.seeds = seeds;
		rq.seed = (uint64_t)cfg.seed + i;
		req.len = 0;
		gnn_encode_minibatch_req(&req, i + 1, &rq);
		t0 = gnn_now();
		if ((rc = gnn_client_call(sh->client, &req, &reply, err, sizeof(err))) != GNN_OK) {
			printf("bench_sampling: FAIL minibatch=%" PRIu64 " code=%s reason=\"%s\"\n", i, gnn_errname(rc), err);
			atomic_store(&sh->failed, 1);
			break;
		}
		if (gnn_reply_payload(reply, GNN_MSG_MINIBATCH_RESP, &payload, &len) != GNN_OK ||
		    gnn_decode_minibatch_resp(payload, len, &mb) != GNN_OK) {
			printf("bench_sampling: FAIL minibatch=%" PRIu64 " reason=\"reply does not decode\"\n", i);
			atomic_store(&sh->failed, 1);
			nng_msg_free(reply);
			break;
		}
		for (uint32_t l = 0; l < mb.num_layers; l++)
			w->edges += mb.blocks[l].num_edges;
		for (uint32_t t = 0; t < mb.num_types; t++)
			w->feat_bytes += (uint64_t)mb.type_rows[t] * mb.feat_dims[t] * 4;
		w->input_nodes += mb.blocks[0].num_src;
		w->done++;
		if (sh->timed) {
			sh->latency[i] = gnn_now() - t0;
			sh->ninputs[i] = mb.blocks[0].num_src;
			sh->inputs[i] = malloc((size_t)mb.blocks[0].num_src * 8 + 8);
			memcpy(sh->inputs[i], mb.blocks[0].src_ids, (size_t)mb.blocks[0].num_src * 8);
		}
		gnn_proto_release(mb.owned);
		nng_msg_free(reply);
	}
	gnn_wbuf_free(&req);
	free(seeds);
	return NULL;
}

static int run_phase(struct shared *sh, uint64_t first, uint64_t end, bool timed, struct worker *sum)
{
	int K = (int)cfg.inflight;
	struct worker *w = calloc((size_t)K, sizeof(*w));

	atomic_store(&sh->next, first);
	sh->end = end;
	sh->timed = timed;
	memset(sum, 0, sizeof(*sum));
	for (int k = 0; k < K; k++) {
		w[k].sh = sh;
		pthread_create(&w[k].thread, NULL, worker_main, &w[k]);
	}
	for (int k = 0; k < K; k++) {
		pthread_join(w[k].thread, NULL);
		sum->edges += w[k].edges;
		sum->feat_bytes += w[k].feat_bytes;
		sum->input_nodes += w[k].input_nodes;
		sum->done += w[k].done;
	}
	free(w);
	return atomic_load(&sh->failed) ? GNN_EIO : GNN_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The reference: one thread gathering the same rows from the mapped files. */
static void gather_reference(const struct shared *sh, uint64_t n)
{
	struct gnn_meta meta;
	struct gnn_part *parts;
	size_t row, max_rows = 0;
	uint64_t rows = 0;
	double t0, secs;
	float *buf;

	if (gnn_meta_load(cfg.parts, &meta) != GNN_OK)
		return;
	parts = calloc((size_t)meta.layout.num_parts, sizeof(*parts));
	for (int32_t p = 0; p < (int32_t)meta.layout.num_parts; p++)
		if (gnn_part_open(cfg.parts, &meta, p, 0, &parts[p]) != GNN_OK)
			return;
	row = (size_t)meta.layout.feat_dim * sizeof(float);
	for (uint64_t i = 0; i < n; i++)
		if (sh->ninputs[i] > max_rows)
			max_rows = sh->ninputs[i];
	buf = malloc(max_rows * row + 1);
	/* Touch the files once so the timed pass reads memory, as the stores do. */
	for (int pass = 0; pass < 2; pass++) {
		t0 = gnn_now();
		rows = 0;
		for (uint64_t i = 0; i < n; i++) {
			for (uint32_t k = 0; k < sh->ninputs[i]; k++) {
				int64_t v = sh->inputs[i][k];
				const struct gnn_part *pt = &parts[gnn_layout_owner(&meta.layout, v)];

				memcpy((char *)buf + k * row, (const char *)pt->feat + (size_t)(v - pt->node_start) * row, row);
			}
			rows += sh->ninputs[i];
		}
	}
	secs = gnn_now() - t0;
	printf("bench_gather rows=%" PRIu64 " seconds=%.3f rows_per_s=%.0f bytes_per_s=%.0f\n", rows, secs,
	       (double)rows / secs, (double)rows * (double)row / secs);
	free(buf);
	for (int32_t p = 0; p < (int32_t)meta.layout.num_parts; p++)
		gnn_part_close(&parts[p]);
	free(parts);
	gnn_meta_free(&meta);
}

int main(int argc, char **argv)
{
	struct shared sh = { .proto = { .flags = GNN_MB_FEATURES | GNN_MB_LABELS } };
	struct gnn_client_opts co;
	struct gnn_meta meta;
	struct worker sum;
	uint64_t N;
	double t0, secs, *lat;
	static int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	char why[256];
	int rc;

	gnn_log_init("bench_sampling");
	/* As gnn-sampler does (keep_heap in services/sampler/main.c): each
	 * reply is a fresh 36 MB message, which glibc would otherwise map and
	 * the kernel zero page by page; a trainer should do the same. */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if ((rc = gnn_opt_parse("bench_sampling", "Measure a running gnn-sampler's minibatch rate.", options, argc,
				argv)) != GNN_OK)
		return rc == GNN_EHELP ? 0 : 2;
	if (cfg.sampler == NULL || cfg.parts == NULL || gnn_meta_load(cfg.parts, &meta) != GNN_OK) {
		printf("bench_sampling: --sampler URL and a readable --parts DIR are required\n");
		return 2;
	}
	sh.num_nodes = meta.layout.num_nodes;
	if (gnn_fanouts_for(cfg.fanouts, meta.layout.schema, fanouts, &sh.proto.num_layers, why, sizeof(why)) !=
	    GNN_OK) {
		printf("bench_sampling: --fanouts %s: %s\n", cfg.fanouts, why);
		return 2;
	}
	sh.proto.num_rels = meta.layout.schema->num_rels;
	sh.proto.fanouts = fanouts;
	gnn_meta_free(&meta);
	sh.proto.num_seeds = (uint32_t)cfg.batch;
	co = (struct gnn_client_opts){ .url = cfg.sampler, .name = "sampler", .timeout_ms = (int)cfg.timeout_ms };
	if (gnn_tls_setup(&cfg.tls) != GNN_OK || gnn_client_open(&co, &sh.client) != GNN_OK) {
		gnn_tls_teardown();
		return 2;
	}
	N = (uint64_t)cfg.minibatches;
	sh.inputs = calloc(N, sizeof(*sh.inputs));
	sh.ninputs = calloc(N, sizeof(*sh.ninputs));
	sh.latency = calloc(N, sizeof(*sh.latency));
	atomic_init(&sh.failed, 0);
	if ((rc = run_phase(&sh, N, N + (uint64_t)cfg.warmup, false, &sum)) != GNN_OK)
		goto out;
	t0 = gnn_now();
	if ((rc = run_phase(&sh, 0, N, true, &sum)) != GNN_OK)
		goto out;
	secs = gnn_now() - t0;
	lat = malloc(N * sizeof(*lat));
	memcpy(lat, sh.latency, N * sizeof(*lat));
	qsort(lat, N, sizeof(*lat), cmp_double);
	printf("bench_distributed minibatches=%" PRIu64 " inflight=%" PRId64 " batch=%" PRId64 " fanouts=%s seconds=%.3f "
	       "minibatches_per_s=%.2f edges_per_s=%.0f feature_bytes_per_s=%.0f mean_edges=%.0f "
	       "mean_input_nodes=%.0f latency_ms_p50=%.1f latency_ms_max=%.1f\n",
	       sum.done, cfg.inflight, cfg.batch, cfg.fanouts, secs, (double)sum.done / secs,
	       (double)sum.edges / secs, (double)sum.feat_bytes / secs, (double)sum.edges / (double)sum.done,
	       (double)sum.input_nodes / (double)sum.done, 1000 * lat[N / 2], 1000 * lat[N - 1]);
	fflush(stdout);
	free(lat);
	gather_reference(&sh, N);
out:
	for (uint64_t i = 0; i < N; i++)
		free(sh.inputs[i]);
	free(sh.inputs);
	free(sh.ninputs);
	free(sh.latency);
	gnn_client_close(sh.client);
	gnn_tls_teardown();
	return rc == GNN_OK ? 0 : 1;
}
