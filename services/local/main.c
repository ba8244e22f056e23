/* gnn-local: the whole gnn-dist system on 127.0.0.1 as separate processes,
 * wired the way the Helm chart wires the pods (docs/local.md):
 *
 *   options -> [--tls: certificates in WORKDIR/tls] -> partition (or reuse
 *   a partition output) -> P graph stores and S samplers on free ports ->
 *   wait for their /readyz (HTTPS with --tls) -> T trainers ->
 *   wait for them (any child dying early ends the run) -> inference over
 *   every node [not with --no-infer] -> [--baseline: the trainers again
 *   without neighbours] -> stop everything -> result block.
 *
 * This file is the table of contents: the option table and main's steps;
 * pipeline.h is the map of the files that do them.
 *
 * Exit status: 0 on success; 1 when a component failed or a wait timed out
 * (its log tail is printed); 2 for a bad configuration (ours, or a
 * component's exit status 2); 128+N when stopped by signal N (130 for
 * Ctrl-C, 143 for SIGTERM), after stopping every child. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "pipeline.h"
#include "log.h"
#include "opt.h"
#include "sys.h"
#include "tls.h"

static struct loc_config cfg;

/* gnn-local's own options; the model table's join them (options below). */
static const struct gnn_opt own_options[] = {
	{ "dataset", GNN_OPT_STR, &cfg.dataset, NULL, 0, 0, NULL,
	  "graph in OGB's node-property layout (raw/, split/), homogeneous or heterogeneous (ogbn-mag's), "
	  "partitioned with gnn-partition --input" },
	{ "split", GNN_OPT_STR, &cfg.split, NULL, 0, 0, NULL,
	  "--dataset's split folder (gnn-partition --split; default: the only one)" },
	{ "synthetic", GNN_OPT_STR, &cfg.synthetic, NULL, 0, 0, "tiny|small|medium|products|mag-tiny|mag-small|mag",
	  "instead: the built-in synthetic graph of this preset (mag*: ogbn-mag's schema, docs/synthetic.md)" },
	{ "no-features", GNN_OPT_BOOL, &cfg.no_features, NULL, 0, 0, NULL,
	  "with --synthetic: nodes without features (gnn-partition --no-features; learn them with --embed-dim)" },
	{ "feature-dtype", GNN_OPT_STR, &cfg.feature_dtype, NULL, 0, 0, "f32|f16",
	  "feature rows stored and sent as (gnn-partition --feature-dtype; default f32; not with --partition-dir)" },
	{ "feat-norm", GNN_OPT_STR, &cfg.feat_norm, NULL, 0, 0, "auto|row|standard|none",
	  "feature normalisation stored with the rows (gnn-partition --feat-norm; default none; auto: row for "
	  "nonnegative features, else none; not with --partition-dir)" },
	{ "partition-dir", GNN_OPT_STR, &cfg.partition_dir, NULL, 0, 0, NULL,
	  "instead: an existing gnn-partition output to serve (not partitioned again)" },
	{ "parts", GNN_OPT_INT, &cfg.parts, NULL, 1, 1024, NULL,
	  "partitions = graph stores (default 2; with --partition-dir, its count)" },
	{ "graphstore-replicas", GNN_OPT_INT, &cfg.graphstore_replicas, "1", 1, 64, NULL,
	  "graph stores per partition: the samplers and the trainers' feature rows spread their calls over a "
	  "partition's and go on to another when one fails; learnable embeddings live on every one, and a "
	  "restarted one catches up from another (docs/reliability.md, \"Graph store replicas\")" },
	{ "samplers", GNN_OPT_INT, &cfg.samplers, "1", 1, 256, NULL, "sampler processes" },
	{ "trainers", GNN_OPT_INT, &cfg.trainers, "1", 1, 256, NULL, "trainer processes (ranks)" },
	{ "workdir", GNN_OPT_STR, &cfg.workdir, "gnn-local-work", 0, 0, NULL,
	  "folder for partition/, logs/ and checkpoints/ (created)" },
	{ "checkpoint-dir", GNN_OPT_STR, &cfg.checkpoint_dir, NULL, 0, 0, NULL,
	  "trainers' checkpoints (default WORKDIR/checkpoints; the baseline's get the suffix -features-only)" },
	{ "fresh", GNN_OPT_BOOL, &cfg.fresh, NULL, 0, 0, NULL,
	  "remove the checkpoints first: train from scratch instead of resuming or reporting a finished run" },
	{ "no-infer", GNN_OPT_BOOL, &cfg.no_infer, NULL, 0, 0, NULL,
	  "skip the inference after training (gnn-trainer infer: predictions for every node in WORKDIR/predictions)" },
	{ "baseline", GNN_OPT_BOOL, &cfg.baseline, NULL, 0, 0, NULL,
	  "then train the same model without neighbours (fanouts 0,..,0: features only) and print both test accuracies" },
	{ "features-from", GNN_OPT_STR, &cfg.features_from, NULL, 0, 0, "sampler|stores",
	  "gnn-trainer --features-from: the feature rows from the samplers, or from the graph stores directly" },
	{ "cache-ratio", GNN_OPT_STR, &cfg.cache_ratio, NULL, 0, 0, NULL,
	  "gnn-trainer --cache-ratio: the hot-feature cache (0.2 of the nodes, or 512MB)" },
	{ "cache-presample", GNN_OPT_INT, &cfg.cache_presample, NULL, 1, 65535, NULL, "gnn-trainer --cache-presample" },
	{ "prefetch", GNN_OPT_INT, &cfg.prefetch, NULL, 1, 64, NULL, "gnn-trainer --prefetch" },
	{ "threads", GNN_OPT_INT, &cfg.threads, NULL, 0, 1024, NULL,
	  "gnn-trainer --threads (not given: the CPUs divided among the trainers)" },
	{ "store-workers", GNN_OPT_INT, &cfg.store_workers, "0", 0, 1024, NULL,
	  "gnn-graphstore --workers (0: its default)" },
	{ "store-emb-log", GNN_OPT_BOOL, &cfg.store_emb_log, NULL, 0, 0, NULL,
	  "gnn-graphstore --emb-wal-dir WORKDIR/emb-log/graphstore-<i>: each store logs its embeddings' changes "
	  "(gnn-local restarts no store, so this only shows the log's cost; docs/embeddings.md)" },
	{ "sampler-workers", GNN_OPT_INT, &cfg.sampler_workers, "0", 0, 1024, NULL,
	  "gnn-sampler --workers (0: its default)" },
	{ "store-timeout-ms", GNN_OPT_INT, &cfg.store_timeout_ms, "0", 0, 600000, NULL,
	  "gnn-sampler --timeout-ms: a graph store call's base deadline (0: its default)" },
	{ "store-retries", GNN_OPT_INT, &cfg.store_retries, "-1", -1, 100, NULL,
	  "gnn-sampler --retries (-1: its default)" },
	{ "store-min-mb-per-s", GNN_OPT_INT, &cfg.store_min_mb_per_s, "0", 0, 1 << 20, NULL,
	  "gnn-sampler --store-min-mb-per-s: a store call's deadline grows by its bytes at this rate (0: its default)" },
	{ "build-budget-mb", GNN_OPT_INT, &cfg.build_budget_mb, "0", 0, 1 << 20, NULL,
	  "gnn-sampler --build-budget-mb: minibatch bytes each sampler builds at once (0: its default)" },
	{ "admission-wait-s", GNN_OPT_INT, &cfg.admission_wait_s, "0", 0, 86400, NULL,
	  "gnn-sampler --admission-wait-s: longest wait for room in the build budget (0: its default)" },
	{ "sampler-timeout-ms", GNN_OPT_INT, &cfg.sampler_timeout_ms, "0", 0, 3600000, NULL,
	  "gnn-trainer --timeout-ms: one sampler call attempt (0: its default)" },
	{ "sampler-retries", GNN_OPT_INT, &cfg.sampler_retries, "-1", -1, 100, NULL,
	  "gnn-trainer --retries (-1: its default)" },
	{ "peer-timeout-s", GNN_OPT_INT, &cfg.peer_timeout_s, "0", 0, 86400, NULL,
	  "gnn-trainer --peer-timeout-s: longest wait for a peer in an all-reduce (0: its default)" },
	{ "ready-timeout-s", GNN_OPT_INT, &cfg.ready_timeout_s, "600", 1, 86400, NULL,
	  "longest wait for the graph stores and samplers to be ready (also the trainers' --wait-s)" },
	{ "timeout-s", GNN_OPT_INT, &cfg.timeout_s, "86400", 1, 31536000, NULL,
	  "longest partitioning, and longest training run" },
	{ "tls", GNN_OPT_BOOL, &cfg.tls, NULL, 0, 0, NULL,
	  "mutual TLS on every link: throwaway CAs and certificates (valid 30 days) made in WORKDIR/tls, one for the "
	  "data plane, one for the trainers' ring; the services dial localhost and serve HTTPS (docs/security.md)" },
	{ "tls-engine", GNN_OPT_STR, &cfg.tls_engine, GNN_TLS_ENGINE_DEFAULT, 0, 0, GNN_TLS_ENGINES,
	  "with --tls: every component's --tls-engine (gnutls, the default; mbedtls, libnng's own, for comparison)" },
	{ "stop-timeout-s", GNN_OPT_INT, &cfg.stop_timeout_s, "10", 1, 3600, NULL,
	  "on stopping, seconds between SIGTERM and SIGKILL per kind of component" },
	{ NULL },
};

/* own_options, then the model table's rows (no defaults: only what is
 * given goes to the trainers), then the end row (gnn_mcfg_option_table). */
static struct gnn_opt options[sizeof(own_options) / sizeof(own_options[0]) + GNN_MCFG_MAX_ROWS];

/* Options not given that gnn-local reads stay at -1. */
static void unset_options(void)
{
	cfg.parts = cfg.prefetch = cfg.threads = cfg.cache_presample = -1;
}

static int exit_status(const struct loc_run *r, int rc)
{
	if (gnn_stop_signal() != 0)
		return 128 + gnn_stop_signal();
	if (rc == GNN_OK)
		return 0;
	if (rc == GNN_EINVAL)
		return LOC_EXIT_USAGE;
	/* A component that rejects its configuration (exit 2) is a bad
	 * configuration of the whole run. */
	if (r->failed != NULL && !r->failed->running && WIFEXITED(r->failed->status) &&
	    WEXITSTATUS(r->failed->status) == LOC_EXIT_USAGE)
		return LOC_EXIT_USAGE;
	return LOC_EXIT_FAILED;
}

/* The flags and the environment, then what they imply (options.c).
 * GNN_EHELP when --help was printed; an error is logged. */
static int configure(int argc, char **argv)
{
	int rc;

	unset_options();
	rc = gnn_mcfg_option_table(own_options, &cfg.mc, GNN_MCFG_ALL, false, "gnn-trainer's, passed on when given: ",
				   options, sizeof(options) / sizeof(options[0]));
	if (rc == GNN_OK)
		rc = gnn_opt_parse("gnn-local",
			   "Run gnn-dist on this machine: partitioner, graph stores, samplers and trainers as "
			   "processes on 127.0.0.1 (docs/local.md).\nThe gnn-trainer options (the model's, "
			   "--prefetch, --threads, --features-from, --cache-*) are passed to every trainer when given; "
			   "otherwise the trainer's defaults apply.",
			   options, argc, argv);
	if (rc == GNN_EHELP)
		return rc;
	gnn_mcfg_defaults(&cfg.mc);
	if (rc == GNN_OK)
		rc = loc_link_defaults(&cfg);
	if (rc == GNN_OK)
		rc = loc_config_check(&cfg);
	return rc;
}

/* The steps in order (pipeline.h); the first that fails ends the run. */
static int run_steps(struct loc_run *r)
{
	int rc = loc_run_init(r, &cfg);

	if (rc == GNN_OK)
		rc = loc_tls_prepare(r);
	if (rc == GNN_OK)
		rc = loc_partition_prepare(r);
	if (rc == GNN_OK)
		rc = loc_services_start(r);
	if (rc == GNN_OK)
		rc = loc_services_wait_ready(r);
	if (rc == GNN_OK)
		rc = loc_train(r, false);
	if (rc == GNN_OK && !cfg.no_infer)
		rc = loc_infer(r);
	if (rc == GNN_OK && cfg.baseline)
		rc = loc_train(r, true);
	return rc;
}

/* After the steps, whatever their outcome: stops every child, prints the
 * result block or the failure, logs the exit line; returns the exit
 * status. */
static int finish(struct loc_run *r, int rc)
{
	int status;
	const char *why;

	if (gnn_stop_signal() != 0)
		GNN_WARN("interrupted", "signal=%d reason=\"stopping every component\"", gnn_stop_signal());
	loc_procs_stop(&r->procs, (double)cfg.stop_timeout_s);
	status = exit_status(r, rc);
	if (status == 0)
		loc_report_result(r);
	else if (gnn_stop_signal() == 0)
		loc_report_failure(r);
	if (status == 0)
		why = "done";
	else if (gnn_stop_signal() != 0)
		why = "stopped by signal";
	else
		why = r->failure != NULL ? r->failure : gnn_strerror(rc);
	GNN_LOG(status == 0 ? GNN_LOG_INFO : GNN_LOG_ERROR, "exit", "status=%d reason=\"%s\"", status, why);
	return status;
}

int main(int argc, char **argv)
{
	static struct loc_run run;
	int rc, status;

	gnn_log_init("gnn-local");
	rc = configure(argc, argv);
	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK)
		return LOC_EXIT_USAGE;
	GNN_INFO("start", "pid=%d", (int)getpid());
	gnn_opt_log(options);
	gnn_signals_install();

	rc = run_steps(&run);
	status = finish(&run, rc);
	loc_run_free(&run);
	return status;
}
