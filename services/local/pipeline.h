/* pipeline.h - gnn-local's map: the whole system (partitioner, graph
 * stores, samplers, trainers) as processes on 127.0.0.1, wired the way the
 * Helm chart wires the pods (docs/local.md). First the types every file
 * shares (the configuration, one run's state, the steps' results), then
 * one section per file, in the order main.c runs them:
 *
 *   options.c     the options' checks and derived defaults
 *   run.c         the run's paths, and loc_tick: the supervision step
 *                 that every waiting step calls
 *   certs.c       --tls: the throwaway certificates and their flags
 *   data.c        the partition output: given, reused or made
 *   services.c    graph stores and samplers: started, then ready
 *   train_step.c  the trainers: started, followed, their result read
 *   infer_step.c  gnn-trainer infer workers and their summary.json
 *   report.c      the result block, or the failing component's log
 *
 * A file calls only the ones above it (main.c calls them all). proc.h
 * (child processes) and net.h (ports, URL lists, the HTTP client) are the
 * building blocks under them all and know nothing of a run. */
#ifndef LOC_PIPELINE_H
#define LOC_PIPELINE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fanouts.h"
#include "modelcfg.h"
#include "net.h"
#include "proc.h"
#include "result.h"

#define LOC_EXIT_FAILED 1 /* a component failed, a wait timed out */
#define LOC_EXIT_USAGE 2  /* bad configuration (ours, or a component's exit status 2) */

/* --tls: how long the throwaway certificates are valid (the URLs dial
 * LOC_TLS_HOST, net.h). */
#define LOC_CERT_DAYS 30 /* beyond the services' 7-day tls_cert_expiring warning */

/* Options (main.c's table). */
struct loc_config {
	const char *dataset, *split, *synthetic, *partition_dir, *workdir, *checkpoint_dir, *feature_dtype;
	const char *feat_norm;  /* gnn-partition --feat-norm */
	int64_t parts, samplers, trainers, graphstore_replicas;
	/* The model table's options (modelcfg.h): those given, or set by the
	 * link defaults, are passed to the trainers (mc.given); the others
	 * hold the trainer's defaults, so reading any of them is safe. */
	struct gnn_model_cfg mc;
	int64_t prefetch, threads;   /* gnn-trainer's (-1: not given) */
	const char *features_from, *cache_ratio, *tls_engine;
	int64_t cache_presample;
	bool baseline, fresh, no_infer, no_features, tls, store_emb_log;
	int64_t timeout_s, ready_timeout_s, stop_timeout_s, store_workers, sampler_workers;
	int64_t store_timeout_ms, store_retries, store_min_mb_per_s, build_budget_mb, admission_wait_s;
	int64_t sampler_timeout_ms, sampler_retries, peer_timeout_s;

	/* Derived by loc_config_check (parts too, when not given). */
	int layers_eff;                  /* layers the trainers will build */
	struct gnn_fanouts fanout;       /* parsed --fanouts (the trainer's default when not given) */
};

/* One training pass: the GraphSAGE run or the features-only baseline. */
struct loc_result {
	bool done;
	struct gnn_result res;   /* rank 0's result.json */
	double seconds;
};

/* The inference step's outcome: OUT/summary.json's figures. */
struct loc_infer_result {
	bool done;
	double test_acc, valid_acc, train_acc, seconds;
	int64_t nodes, predicted;   /* the graph's, and the label type's (summary.json) */
	char label_type[64];
	/* --task link: summary.json's link metrics, test then valid, in
	 * loc_link_keys' order */
	bool is_link;
	double link[2][6];
};

/* One trust domain's files (PEM; the key unencrypted, mode 0600). */
struct loc_tls_files {
	char ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
};

struct loc_run {
	const struct loc_config *cfg;
	char bindir[PATH_MAX];    /* where gnn-local lives: the sibling binaries */
	char workdir[PATH_MAX];   /* absolute */
	char logdir[PATH_MAX];    /* WORKDIR/logs */
	char partdir[PATH_MAX];   /* the partition output in use */
	char dataset[PATH_MAX];   /* absolute --dataset, "" for --synthetic */
	char ckptdir[PATH_MAX], ckptdir_baseline[PATH_MAX];
	int parts;
	int stores;                      /* graph stores: parts x --graphstore-replicas */
	struct loc_procs procs;
	char *store_urls, *sampler_urls; /* comma-separated nng URLs (owned) */
	int *sampler_http, *store_http;  /* HTTP ports (owned), [samplers] and [stores] */
	struct loc_proc *failed;         /* the component whose failure ended the run */
	const char *failure;             /* what went wrong, for the report */
	double t_start, t_partition, t_ready;
	struct loc_result main, baseline;
	char preddir[PATH_MAX];          /* WORKDIR/predictions */
	struct loc_infer_result infer;
	/* --tls (loc_tls_prepare) */
	const char *dial_host;           /* what the URLs dial: LOC_TLS_HOST with --tls, else 127.0.0.1 */
	char tlsdir[PATH_MAX];           /* WORKDIR/tls */
	struct loc_tls_files tls_data, tls_ring;
	struct loc_https *https;         /* the HTTPS client of the readiness checks; NULL: plain HTTP */
};

/* Whether model option --name was given (or set by the link defaults). */
static inline bool loc_given(const struct loc_config *cfg, const char *name)
{
	int i = gnn_mcfg_find(name);

	return i >= 0 && cfg->mc.given[i];
}

/* Whether the run is link prediction (--task link). */
static inline bool loc_link(const struct loc_config *cfg)
{
	return strcmp(cfg->mc.task, "link") == 0;
}

/* ---- options.c: what the option table's ranges cannot say ---------------- */

/* --task link's defaults for the model options not given, each set as if
 * given (so passed to the trainers). GNN_EINVAL (logged) should one not
 * parse. */
int loc_link_defaults(struct loc_config *cfg);
/* Checks the options that the table's ranges cannot (one data source,
 * fanouts against layers, ...) and fills the derived fields: layers_eff
 * and fanout, --layers from the number of --fanouts, --parts 2 unless
 * --partition-dir. Logs a bad_config line naming the option and returns
 * GNN_EINVAL. */
int loc_config_check(struct loc_config *cfg);

/* ---- run.c: the run's frame and its supervision ---------------------------- */

/* Fills the paths (creating WORKDIR/logs) and checks that the sibling
 * binaries exist. cfg is borrowed for the run's life. GNN_EINVAL (logged)
 * for a missing binary or dataset. */
int loc_run_init(struct loc_run *r, const struct loc_config *cfg);
/* Frees what r owns (its children must have been stopped). */
void loc_run_free(struct loc_run *r);
/* One supervision step: reaps children that exited. A graph store or
 * sampler that exits, or any child that exits non-zero without having been
 * told to stop, sets r->failed and returns GNN_EUNAVAIL; a stop signal
 * returns GNN_ECLOSED. *exited (may be NULL) is a child that exited cleanly
 * this step (owned by r->procs), else NULL. Sleeps about 50 ms when nothing
 * happened. */
int loc_tick(struct loc_run *r, struct loc_proc **exited);

/* ---- certs.c: --tls --------------------------------------------------------- */

/* With --tls: makes the throwaway CAs and certificates of the data plane
 * and of the trainers' ring in WORKDIR/tls and the HTTPS client for the
 * readiness checks (r->https, r's); logs a `tls` line naming the files.
 * Sets r->dial_host either way. GNN_EINVAL (logged) when localhost does
 * not resolve to 127.0.0.1 first; GNN_EIO, GNN_EINTERNAL (logged). */
int loc_tls_prepare(struct loc_run *r);
/* With --tls, appends --tls-ca/--tls-cert/--tls-key (the data plane) and,
 * with ring, --ring-tls-ca/-cert/-key to a; nothing without. */
int loc_tls_args(const struct loc_run *r, struct loc_argv *a, bool ring);

/* ---- data.c: the partition output ------------------------------------------ */

/* Uses --partition-dir, reuses WORKDIR/partition when its meta.json matches
 * (same --parts and the same dataset path or synthetic preset), or runs
 * gnn-partition into it. Sets r->partdir and r->parts. */
int loc_partition_prepare(struct loc_run *r);

/* ---- services.c: graph stores and samplers --------------------------------- */

/* Picks free ports and starts the P graph stores and S samplers; their
 * URL lists and HTTP ports go into r (r's). */
int loc_services_start(struct loc_run *r);
/* Polls every graph store's and sampler's /readyz until all answer 200,
 * within --ready-timeout-s, logging waiting_for lines every 10 s. */
int loc_services_wait_ready(struct loc_run *r);

/* ---- train_step.c: the trainers --------------------------------------------- */

/* Starts T trainers (the features-only MLP with fanouts 0,..,0 when
 * baseline), follows trainer-0's progress, waits for all within
 * --timeout-s and reads rank 0's result.json into the run's result. A
 * trainer without a result, or ranks whose params_crc differ, fail. */
int loc_train(struct loc_run *r, bool baseline);
/* One pass's result as "test_acc=... params_crc=..." into buf (buf_len
 * bytes, the caller's): the `trained` log line's, and the result block's. */
void loc_format_result(const struct loc_config *cfg, const struct loc_result *res, char *buf, size_t buf_len);

/* ---- infer_step.c: the inference -------------------------------------------- */

/* After training: T workers of `gnn-trainer infer` over the partition
 * output and the run's checkpoints into WORKDIR/predictions (within
 * --timeout-s), then their summary.json into r->infer. */
int loc_infer(struct loc_run *r);
/* summary.json's link metrics, in the order of loc_infer_result.link. */
extern const char *const loc_link_keys[6];

/* ---- report.c: what the person at the terminal reads at the end ------------ */

/* After success: the result block on stdout. */
void loc_report_result(const struct loc_run *r);
/* The result block's inference lines: accuracies and a few predictions
 * (nothing when the inference did not run). */
void loc_report_infer(const struct loc_run *r);
/* After a failure: the failing component's status and log tail to stderr. */
void loc_report_failure(const struct loc_run *r);

#endif
