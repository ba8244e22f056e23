#include "sampling_bench.h"

#include <inttypes.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "err.h"
#include "fanouts.h"
#include "local_backend.h"
#include "log.h"
#include "opt.h"
#include "sample.h"
#include "sys.h"

int smp_parse_fanouts(const char *text, const struct gnn_schema *sc, int32_t **fanouts, uint32_t *num_layers)
{
	uint32_t R = sc->num_rels, L;
	char why[256];
	int32_t *v = malloc((size_t)GNN_PROTO_MAX_LAYERS * R * sizeof(*v));

	if (v == NULL)
		return GNN_ENOMEM;
	if (gnn_fanouts_for(text, sc, v, &L, why, sizeof(why)) != GNN_OK) {
		GNN_ERROR("bad_option", "option=fanouts value=\"%s\" reason=\"%s\"", text, why);
		free(v);
		return GNN_EINVAL;
	}
	/* a layer of 0s would measure no sampling at all */
	for (uint32_t l = 0; l < L; l++)
		if (!gnn_fanouts_any(v + (size_t)l * R, R)) {
			GNN_ERROR("bad_option", "option=fanouts value=\"%s\" reason=\"layer %u samples nothing (every "
				  "fanout 0): give -1 (all) or 1..%d\"", text, l, GNN_PROTO_MAX_FANOUT);
			free(v);
			return GNN_EINVAL;
		}
	*fanouts = v;
	*num_layers = L;
	return GNN_OK;
}

static struct {
	const char *parts, *fanouts;
	int64_t batch, minibatches, warmup, threads, seed, ids_per_call;
} bcfg;

static const struct gnn_opt bench_options[] = {
	{ "parts", GNN_OPT_STR, &bcfg.parts, NULL, 0, 0, NULL, "gnn-partition output folder (required)" },
	{ "batch", GNN_OPT_INT, &bcfg.batch, "1024", 1, 524288, NULL, "seed nodes per minibatch" },
	{ "fanouts", GNN_OPT_LIST, &bcfg.fanouts, "15,10,5", 0, 0, NULL,
	  "fanout per layer, input layer first (-1: all neighbours)" },
	{ "minibatches", GNN_OPT_INT, &bcfg.minibatches, "30", 1, 100000, NULL, "timed minibatches" },
	{ "warmup", GNN_OPT_INT, &bcfg.warmup, "3", 0, 10000, NULL, "untimed minibatches first (page cache)" },
	{ "threads", GNN_OPT_INT, &bcfg.threads, "1", 1, 1024, NULL, "minibatches built at once" },
	{ "seed", GNN_OPT_INT, &bcfg.seed, "1", 0, 999999, NULL, "seed of the seed-node draws and sampling" },
	{ "ids-per-call", GNN_OPT_INT, &bcfg.ids_per_call, "8192", 1, 524288, NULL,
	  "IDs per partition call (as the service's --ids-per-call)" },
	{ NULL },
};

struct worker {
	pthread_t thread;
	const struct smp_backend *be;
	struct gnn_minibatch_req req;   /* fanouts and flags; seeds per minibatch */
	atomic_uint_fast64_t *next;
	uint64_t first, end;            /* minibatch numbers to build: [first, end) */
	uint64_t edges, feat_bytes, input_nodes, done;
	int rc;
	char err[512];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct smp_build_opts bo = { .max_ids_per_call = (uint32_t)bcfg.ids_per_call };
	int64_t *seeds = malloc((size_t)bcfg.batch * sizeof(*seeds));
	struct gnn_wbuf msg;

	gnn_wbuf_init(&msg);
	if (seeds == NULL) {
		w->rc = GNN_ENOMEM;
		return NULL;
	}
	for (;;) {
		uint64_t i = atomic_fetch_add(w->next, 1);
		struct smp_minibatch_stats st;

		if (i >= w->end)
			break;
		if ((w->rc = gnn_sample_distinct((uint64_t)bcfg.seed, i, w->be->layout->num_nodes,
					     (uint32_t)bcfg.batch, seeds)) != GNN_OK)
			break;
		w->req.seeds = seeds;
		w->req.seed = (uint64_t)bcfg.seed + i;
		/* What the service does: the minibatch as a reply message, into a
		 * buffer reused from one minibatch to the next (as each server
		 * worker reuses its reply buffer). */
		msg.len = 0;
		if ((w->rc = smp_build_message(w->be, &bo, i + 1, &w->req, &msg, &st, w->err, sizeof(w->err))) != GNN_OK)
			break;
		w->edges += st.sampled_edges;
		w->feat_bytes += st.feature_bytes;
		w->input_nodes += st.input_nodes;
		w->done++;
	}
	gnn_wbuf_free(&msg);
	free(seeds);
	return NULL;
}

/* Builds minibatches [first, end) on bcfg.threads threads; sums into *sum. */
static int run_phase(const struct smp_backend *be, const struct gnn_minibatch_req *proto, uint64_t first,
		     uint64_t end, struct worker *sum)
{
	int T = (int)bcfg.threads, rc = GNN_OK;
	struct worker *w = calloc((size_t)T, sizeof(*w));
	atomic_uint_fast64_t next;

	if (w == NULL)
		return GNN_ENOMEM;
	atomic_init(&next, first);
	memset(sum, 0, sizeof(*sum));
	for (int t = 0; t < T; t++) {
		w[t] = (struct worker){ .be = be, .req = *proto, .next = &next, .first = first, .end = end };
		if (pthread_create(&w[t].thread, NULL, worker_main, &w[t]) != 0) {
			T = t;
			rc = GNN_ENOMEM;
			break;
		}
	}
	for (int t = 0; t < T; t++) {
		pthread_join(w[t].thread, NULL);
		sum->edges += w[t].edges;
		sum->feat_bytes += w[t].feat_bytes;
		sum->input_nodes += w[t].input_nodes;
		sum->done += w[t].done;
		if (w[t].rc != GNN_OK && rc == GNN_OK) {
			rc = w[t].rc;
			GNN_ERROR("bench_failed", "reason=\"%s\"", w[t].err[0] ? w[t].err : gnn_strerror(rc));
		}
	}
	free(w);
	return rc;
}

/* The options; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv)
{
	int rc = gnn_opt_parse("gnn-sampler bench",
			       "Benchmark the minibatch core in process, over partitions mapped from --parts "
			       "(the reference of tests/bench_sampling.sh).",
			       bench_options, argc, argv);

	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK)
		return 2;
	if (bcfg.parts == NULL) {
		GNN_ERROR("bad_config", "reason=\"--parts DIR is required\"");
		return 2;
	}
	return -1;
}

/* The result line tests/bench_sampling.sh reads. */
static void report(const struct worker *sum, double secs)
{
	printf("bench_local minibatches=%" PRIu64 " threads=%" PRId64 " batch=%" PRId64 " fanouts=%s seconds=%.3f "
	       "minibatches_per_s=%.2f edges_per_s=%.0f feature_bytes_per_s=%.0f mean_edges=%.0f "
	       "mean_input_nodes=%.0f\n",
	       sum->done, bcfg.threads, bcfg.batch, bcfg.fanouts, secs, (double)sum->done / secs,
	       (double)sum->edges / secs, (double)sum->feat_bytes / secs, (double)sum->edges / (double)sum->done,
	       (double)sum->input_nodes / (double)sum->done);
	fflush(stdout);
}

int smp_bench_main(int argc, char **argv)
{
	struct gnn_minibatch_req proto = { .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
	struct smp_local *local = NULL;
	int32_t *fanouts = NULL;
	struct smp_backend be;
	struct worker sum;
	double t0;
	int rc;

	if ((rc = parse_args(argc, argv)) >= 0)
		return rc;
	proto.num_seeds = (uint32_t)bcfg.batch;
	gnn_opt_log(bench_options);
	if ((rc = smp_local_open_dir(bcfg.parts, false, &local)) != GNN_OK) {
		GNN_ERROR("bench_failed", "parts=%s reason=\"cannot open the partitions: %s\"", bcfg.parts,
			  gnn_strerror(rc));
		return 1;
	}
	smp_local_backend(local, &be);
	proto.num_rels = be.layout->schema->num_rels;
	if (smp_parse_fanouts(bcfg.fanouts, be.layout->schema, &fanouts, &proto.num_layers) != GNN_OK) {
		smp_local_close(local);
		return 2;
	}
	proto.fanouts = fanouts;
	if ((int64_t)bcfg.batch > be.layout->num_nodes) {
		GNN_ERROR("bad_config", "batch=%" PRId64 " nodes=%" PRId64 " reason=\"batch larger than the graph\"",
			  bcfg.batch, be.layout->num_nodes);
		free(fanouts);
		smp_local_close(local);
		return 2;
	}
	/* Warm-up minibatches come after the timed ones in numbering, so the
	 * timed ones are minibatches 0..N-1, as in the distributed run. */
	if ((rc = run_phase(&be, &proto, (uint64_t)bcfg.minibatches,
			    (uint64_t)(bcfg.minibatches + bcfg.warmup), &sum)) != GNN_OK)
		goto out;
	t0 = gnn_now();
	if ((rc = run_phase(&be, &proto, 0, (uint64_t)bcfg.minibatches, &sum)) != GNN_OK)
		goto out;
	report(&sum, gnn_now() - t0);
out:
	free(fanouts);
	smp_local_close(local);
	return rc == GNN_OK ? 0 : 1;
}
