/* gnn-local: the whole gnn-dist system on 127.0.0.1 as separate processes,
 * wired the way the Helm chart wires the pods (docs/local.md):
 *
 *   options -> [--tls: certificates in WORKDIR/tls] -> partition (or reuse
 *   a partition output) -> P graph stores and S samplers on free ports ->
 *   wait for their /readyz (HTTPS with --tls) -> T trainers ->
 *   wait for them (any child dying early ends the run) -> [--baseline: the
 *   trainers again without neighbours] -> stop everything -> result block.
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

static struct loc_config cfg;
static const char *degree_scale;   /* on|off, or NULL: the link defaults' choice */

static const struct gnn_opt options[] = {
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
	{ "partition-dir", GNN_OPT_STR, &cfg.partition_dir, NULL, 0, 0, NULL,
	  "instead: an existing gnn-partition output to serve (not partitioned again)" },
	{ "parts", GNN_OPT_INT, &cfg.parts, NULL, 1, 1024, NULL,
	  "partitions = graph stores (default 2; with --partition-dir, its count)" },
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
	{ "epochs", GNN_OPT_INT, &cfg.epochs, NULL, 1, 100000, NULL, "gnn-trainer --epochs (not given: its default)" },
	{ "batch-size", GNN_OPT_INT, &cfg.batch_size, NULL, 1, 1 << 22, NULL, "gnn-trainer --batch-size" },
	{ "layers", GNN_OPT_INT, &cfg.layers, NULL, 1, GNN_PROTO_MAX_LAYERS, NULL,
	  "gnn-trainer --layers (not given: the number of --fanouts)" },
	{ "model", GNN_OPT_STR, &cfg.model, NULL, 0, 0, NULL,
	  "gnn-trainer --model (graphsage, gcn or rgcn; the result lines are labelled with it; default graphsage, "
	  "gcn with --task link)" },
	{ "num-bases", GNN_OPT_INT, &cfg.num_bases, NULL, 0, 1024, NULL,
	  "gnn-trainer --num-bases (rgcn's basis decomposition)" },
	{ "embed-dim", GNN_OPT_INT, &cfg.embed_dim, NULL, 0, 65536, NULL,
	  "gnn-trainer --embed-dim: learnable embeddings held by the graph stores (not the baseline's)" },
	{ "embed-types", GNN_OPT_LIST, &cfg.embed_types, NULL, 0, 0, NULL, "gnn-trainer --embed-types" },
	{ "embed-input", GNN_OPT_STR, &cfg.embed_input, NULL, 0, 0, "concat|replace", "gnn-trainer --embed-input" },
	{ "embed-optimizer", GNN_OPT_STR, &cfg.embed_optimizer, NULL, 0, 0, "adam|adagrad",
	  "gnn-trainer --embed-optimizer" },
	{ "embed-lr", GNN_OPT_FLOAT, &cfg.embed_lr, NULL, 1e-9, 100, NULL, "gnn-trainer --embed-lr" },
	{ "features-from", GNN_OPT_STR, &cfg.features_from, NULL, 0, 0, "sampler|stores",
	  "gnn-trainer --features-from: the feature rows from the samplers, or from the graph stores directly" },
	{ "cache-ratio", GNN_OPT_STR, &cfg.cache_ratio, NULL, 0, 0, NULL,
	  "gnn-trainer --cache-ratio: the hot-feature cache (0.2 of the nodes, or 512MB)" },
	{ "cache-presample", GNN_OPT_INT, &cfg.cache_presample, NULL, 1, 65535, NULL, "gnn-trainer --cache-presample" },
	{ "task", GNN_OPT_STR, &cfg.task, "node", 0, 0, "node|link",
	  "node classification, or link prediction: the partitioner splits the edges 0.85,0.05,0.10 (GAE's "
	  "protocol) and the link defaults apply (docs/local.md)" },
	{ "emb-dim", GNN_OPT_INT, &cfg.emb_dim, NULL, 0, 65536, NULL, "gnn-trainer --emb-dim (link)" },
	{ "decoder", GNN_OPT_STR, &cfg.decoder, NULL, 0, 0, "dot|mlp", "gnn-trainer --decoder (link)" },
	{ "decoder-hidden", GNN_OPT_INT, &cfg.decoder_hidden, NULL, 0, 65536, NULL, "gnn-trainer --decoder-hidden (link)" },
	{ "neg-k", GNN_OPT_INT, &cfg.neg_k, NULL, 1, 1024, NULL, "gnn-trainer --neg-k (link)" },
	{ "epoch-pairs", GNN_OPT_INT, &cfg.epoch_pairs, "0", 0, INT64_MAX, NULL, "gnn-trainer --epoch-pairs (link)" },
	{ "neg-in-batch", GNN_OPT_BOOL, &cfg.neg_in_batch, NULL, 0, 0, NULL, "gnn-trainer --neg-in-batch (link)" },
	{ "exclude", GNN_OPT_STR, &cfg.exclude, NULL, 0, 0, "on|off", "gnn-trainer --exclude (link)" },
	{ "degree-scale", GNN_OPT_STR, &degree_scale, NULL, 0, 0, "on|off",
	  "gnn-trainer --degree-scale and the inference's (link default: on over whole neighbourhoods)" },
	{ "fanouts", GNN_OPT_LIST, &cfg.fanouts, NULL, 0, 0, NULL,
	  "gnn-trainer --fanouts, per layer, input layer first; -1 all neighbours, 0 none" },
	{ "eval-fanouts", GNN_OPT_LIST, &cfg.eval_fanouts, NULL, 0, 0, NULL, "gnn-trainer --eval-fanouts" },
	{ "eval-batch-size", GNN_OPT_INT, &cfg.eval_batch_size, NULL, 1, 1 << 22, NULL,
	  "gnn-trainer --eval-batch-size" },
	{ "val-nodes", GNN_OPT_INT, &cfg.val_nodes, NULL, 0, UINT32_MAX, NULL,
	  "gnn-trainer --val-nodes (validation sample; 0: every validation node)" },
	{ "test-nodes", GNN_OPT_INT, &cfg.test_nodes, NULL, 0, UINT32_MAX, NULL,
	  "gnn-trainer --test-nodes (the sampled test estimate; the inference covers every node)" },
	{ "hidden", GNN_OPT_INT, &cfg.hidden, NULL, 1, 1 << 16, NULL, "gnn-trainer --hidden" },
	{ "lr", GNN_OPT_FLOAT, &cfg.lr, NULL, 1e-9, 10, NULL, "gnn-trainer --lr" },
	{ "weight-decay", GNN_OPT_FLOAT, &cfg.weight_decay, NULL, 0, 1, NULL, "gnn-trainer --weight-decay" },
	{ "dropout", GNN_OPT_FLOAT, &cfg.dropout, NULL, 0, 0.95, NULL, "gnn-trainer --dropout" },
	{ "seed", GNN_OPT_INT, &cfg.seed, NULL, 0, 9223372036854775807.0, NULL, "gnn-trainer --seed" },
	{ "prefetch", GNN_OPT_INT, &cfg.prefetch, NULL, 1, 64, NULL, "gnn-trainer --prefetch" },
	{ "threads", GNN_OPT_INT, &cfg.threads, NULL, 0, 1024, NULL,
	  "gnn-trainer --threads (not given: the CPUs divided among the trainers)" },
	{ "store-workers", GNN_OPT_INT, &cfg.store_workers, "0", 0, 1024, NULL,
	  "gnn-graphstore --workers (0: its default)" },
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
	{ "stop-timeout-s", GNN_OPT_INT, &cfg.stop_timeout_s, "10", 1, 3600, NULL,
	  "on stopping, seconds between SIGTERM and SIGKILL per kind of component" },
	{ NULL },
};

/* Model options not given stay at -1 (NULL for lists): not passed on. */
static void unset_model_options(void)
{
	cfg.parts = cfg.epochs = cfg.batch_size = cfg.layers = cfg.eval_batch_size = cfg.hidden = -1;
	cfg.val_nodes = cfg.test_nodes = -1;
	cfg.seed = cfg.prefetch = cfg.threads = cfg.num_bases = cfg.embed_dim = cfg.cache_presample = -1;
	cfg.embed_lr = -1;
	cfg.lr = cfg.weight_decay = cfg.dropout = -1;
	cfg.emb_dim = cfg.decoder_hidden = cfg.neg_k = -1;
}

/* --task link's defaults for what was not given, tuned on Cora (GAE's
 * protocol; docs/training.md "Link prediction" has the runs): two GCN
 * layers over whole neighbourhoods with the degree scale, 64-wide
 * embeddings, small batches (more steps: batch 512 stayed at test AUC
 * 0.90, 256 gave 0.913), 5 negatives per positive (test AP 0.926 over
 * seeds 1-3, 0.914 with 1). */
#define LINK_EPOCHS 20
#define LINK_BATCH 256
#define LINK_NEG_K 5
static void link_defaults(void)
{
	bool link = cfg.task != NULL && strcmp(cfg.task, "link") == 0;

	if (cfg.model == NULL)
		cfg.model = link ? "gcn" : "graphsage";
	cfg.degree_scale = degree_scale != NULL && strcmp(degree_scale, "on") == 0;
	if (!link)
		return;
	if (cfg.fanouts == NULL && cfg.layers < 0) {   /* Cora is small: whole neighbourhoods */
		cfg.fanouts = "-1,-1";
		if (degree_scale == NULL)   /* its degrees are then the graph's (docs/training.md) */
			cfg.degree_scale = true;
	}
	if (cfg.epochs < 0)
		cfg.epochs = LINK_EPOCHS;
	if (cfg.lr < 0)
		cfg.lr = 0.005;
	if (cfg.batch_size < 0)
		cfg.batch_size = LINK_BATCH;
	if (cfg.hidden < 0)
		cfg.hidden = 128;
	if (cfg.emb_dim < 0)
		cfg.emb_dim = 64;
	if (cfg.neg_k < 0)
		cfg.neg_k = LINK_NEG_K;
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

int main(int argc, char **argv)
{
	static struct loc_run run;
	const char *why;
	int rc, status;

	gnn_log_init("gnn-local");
	unset_model_options();
	rc = gnn_opt_parse("gnn-local",
			   "Run gnn-dist on this machine: partitioner, graph stores, samplers and trainers as "
			   "processes on 127.0.0.1 (docs/local.md).\nThe gnn-trainer options (--epochs to "
			   "--threads) are passed to every trainer when given; otherwise the trainer's defaults apply.",
			   options, argc, argv);
	if (rc == GNN_EHELP)
		return 0;
	if (rc == GNN_OK)
		link_defaults();
	if (rc != GNN_OK || loc_config_check(&cfg) != GNN_OK)
		return LOC_EXIT_USAGE;
	if (cfg.parts < 0 && cfg.partition_dir == NULL)
		cfg.parts = 2;
	GNN_INFO("start", "pid=%d", (int)getpid());
	gnn_opt_log(options);
	gnn_signals_install();

	rc = loc_run_init(&run, &cfg);
	if (rc == GNN_OK)
		rc = loc_tls_prepare(&run);
	if (rc == GNN_OK)
		rc = loc_partition_prepare(&run);
	if (rc == GNN_OK)
		rc = loc_services_start(&run);
	if (rc == GNN_OK)
		rc = loc_services_wait_ready(&run);
	if (rc == GNN_OK)
		rc = loc_train(&run, false);
	if (rc == GNN_OK && !cfg.no_infer)
		rc = loc_infer(&run);
	if (rc == GNN_OK && cfg.baseline)
		rc = loc_train(&run, true);

	if (gnn_stop_signal() != 0)
		GNN_WARN("interrupted", "signal=%d reason=\"stopping every component\"", gnn_stop_signal());
	loc_procs_stop(&run.procs, (double)cfg.stop_timeout_s);
	status = exit_status(&run, rc);
	if (status == 0)
		loc_report_result(&run);
	else if (gnn_stop_signal() == 0)
		loc_report_failure(&run);
	if (status == 0)
		why = "done";
	else if (gnn_stop_signal() != 0)
		why = "stopped by signal";
	else
		why = run.failure != NULL ? run.failure : gnn_strerror(rc);
	GNN_LOG(status == 0 ? GNN_LOG_INFO : GNN_LOG_ERROR, "exit", "status=%d reason=\"%s\"", status, why);
	loc_run_free(&run);
	return status;
}
