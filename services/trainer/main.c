/* gnn-trainer: one rank of synchronous data-parallel training of a GNN
 * (the models of model/model.c; docs/training.md).
 *
 *   options -> /healthz,/readyz,/metrics -> samplers (INFO: the graph) ->
 *   ring of trainers (handshake: same configuration everywhere) ->
 *   resume or start -> epochs of steps (minibatch from a sampler, forward,
 *   backward, all-reduce, Adam), validation, checkpoint -> test accuracy of
 *   the best-validation model -> summary -> exit, or keep serving metrics.
 *
 * `gnn-trainer bench ...` runs the step benchmark instead (step_bench.h),
 * `gnn-trainer infer ...` the inference over every node (inference.h),
 * `gnn-trainer options ...` prints the model table (model_options.h). */
#include <cblas.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "step_bench.h"
#include "err.h"
#include "inference.h"
#include "lifecycle.h"
#include "embeddings.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "modelcfg.h"
#include "model_options.h"
#include "opt.h"
#include "peers.h"
#include "ring.h"
#include "samplers.h"
#include "sys.h"
#include "training.h"

struct options {
	const char *peers, *peer_pattern, *listen, *samplers, *http_addr, *checkpoint_dir, *on_finish, *graphstores,
		*graphstore_pattern, *features_from, *cache_ratio, *data, *embed_prefetch;
	int64_t cache_presample;
	int64_t rank, world, http_port, prefetch, threads, timeout_ms, retries, peer_timeout_s, wait_s,
		resolve_interval_s, store_timeout_ms, store_min_mb_per_s, replica_timeout_ms;
	double log_interval_s, checkpoint_interval_s, peer_silence_s;
	struct gnn_tls_paths tls;
	struct gnn_tls_paths ring_tls;
};

static struct options opt;
static struct gnn_model_cfg mc;   /* the model table's options (modelcfg.h) */

/* The trainer's own options; the model table's join them (options below). */
static const struct gnn_opt own_options[] = {
	{ "rank", GNN_OPT_INT, &opt.rank, "-1", -1, 65535, NULL,
	  "this trainer's rank (-1: the host name's ordinal, trainer-2 is rank 2; 0 when --world-size is 1)" },
	{ "world-size", GNN_OPT_INT, &opt.world, "1", 1, 65536, NULL, "number of trainers" },
	{ "peers", GNN_OPT_LIST, &opt.peers, NULL, 0, 0, NULL,
	  "every trainer's ring URL in rank order, comma-separated (as the others dial it)" },
	{ "peer-pattern", GNN_OPT_STR, &opt.peer_pattern, NULL, 0, 0, NULL,
	  "instead of --peers: a URL with one %d expanded for 0..world-size-1, e.g. tcp://trainer-%d.trainer:7200" },
	{ "listen", GNN_OPT_STR, &opt.listen, "tcp://0.0.0.0:7200", 0, 0, NULL, "nng URL this rank's ring socket listens on" },
	{ "samplers", GNN_OPT_LIST, &opt.samplers, NULL, 0, 0, NULL,
	  "sampler URLs; each host is resolved to all its addresses, one replica each (tcp://sampler:7100 finds "
	  "every pod of a headless Service)" },
	{ "resolve-interval-s", GNN_OPT_INT, &opt.resolve_interval_s, "30", 1, 86400, NULL,
	  "resolve the sampler names again this often (new replicas join)" },
	{ "http-addr", GNN_OPT_STR, &opt.http_addr, "0.0.0.0", 0, 0, NULL, "address of /healthz, /readyz, /metrics" },
	{ "http-port", GNN_OPT_INT, &opt.http_port, "9102", 0, 65535, NULL, "their port (0: any free port, logged)" },
	{ "prefetch", GNN_OPT_INT, &opt.prefetch, "4", 1, 64, NULL, "minibatch requests in flight" },
	{ "checkpoint-dir", GNN_OPT_STR, &opt.checkpoint_dir, NULL, 0, 0, NULL,
	  "rank 0 checkpoints here every epoch and writes result.json; all ranks resume from it" },
	{ "checkpoint-interval-s", GNN_OPT_FLOAT, &opt.checkpoint_interval_s, "60", 0, 86400, NULL,
	  "also checkpoint within an epoch when this long has passed since the last one (0: only after each "
	  "epoch): a restart loses at most about this much work" },
	{ "threads", GNN_OPT_INT, &opt.threads, "0", 0, 1024, NULL,
	  "OpenBLAS threads (0: one per CPU the process may use: its affinity and cgroup CPU limit)" },
	{ "timeout-ms", GNN_OPT_INT, &opt.timeout_ms, "30000", 1, 3600000, NULL, "timeout of one sampler or graph store call attempt" },
	{ "retries", GNN_OPT_INT, &opt.retries, "2", 0, 100, NULL, "extra attempts of a sampler or graph store call that timed out" },
	{ "store-timeout-ms", GNN_OPT_INT, &opt.store_timeout_ms, "5000", 1, 600000, NULL,
	  "with --features-from stores: one attempt of a feature-row call to a graph store, plus its rows' bytes at "
	  "--store-min-mb-per-s; a connection silent this long (a deleted pod's, whose close never came) is "
	  "dropped and the call tried again, for --timeout-ms x (--retries + 1) in all" },
	{ "store-min-mb-per-s", GNN_OPT_INT, &opt.store_min_mb_per_s, "20", 1, 1048576, NULL,
	  "the rate in --store-timeout-ms: a call for more rows may take longer" },
	{ "replica-timeout-ms", GNN_OPT_INT, &opt.replica_timeout_ms, "500", 1, 600000, NULL,
	  "with several graph stores for a partition (replicas), a feature-row or embedding call's first "
	  "attempt on each waits 8 times their recent slowest answer, at least 100 ms and at most this long "
	  "(plus the bytes term), then the call goes to another replica" },
	{ "peer-timeout-s", GNN_OPT_INT, &opt.peer_timeout_s, "300", 1, 86400, NULL,
	  "longest wait for a peer inside an all-reduce" },
	{ "peer-silence-s", GNN_OPT_FLOAT, &opt.peer_silence_s, "10", 0, 3600, NULL,
	  "the ring's heartbeat: a previous rank that sends nothing, not even its ping (every fifth of this), "
	  "for this long while this rank waits for it is taken for gone and the ring forms again (0: no "
	  "heartbeat; docs/allreduce.md)" },
	{ "wait-s", GNN_OPT_INT, &opt.wait_s, "600", 0, 86400, NULL, "start-up: seconds to wait for samplers and for peers" },
	{ "log-interval-s", GNN_OPT_FLOAT, &opt.log_interval_s, "5", 0.1, 86400, NULL, "period of the progress lines" },
	{ "features-from", GNN_OPT_STR, &opt.features_from, "sampler", 0, 0, "sampler|stores",
	  "where the minibatches' feature rows come from: the samplers' answers, or the graph stores directly "
	  "and the hot-feature cache (docs/scale.md, \"Feature movement\")" },
	{ "cache-ratio", GNN_OPT_STR, &opt.cache_ratio, "0", 0, 0, NULL,
	  "with --features-from stores: the hot-feature cache, a fraction of the nodes with features (0.2) or a "
	  "size (512MB, 2GB); 0: none" },
	{ "cache-presample", GNN_OPT_INT, &opt.cache_presample, "16", 1, 65535, NULL,
	  "minibatches of the training seeds sampled at start to rank the nodes for the cache" },
	{ "graphstores", GNN_OPT_LIST, &opt.graphstores, NULL, 0, 0, NULL,
	  "with --embed-dim or --features-from stores: graph store URLs, one per partition in partition order, or R "
	  "per partition (replicas: store i serves partition i mod P): feature rows from any replica, embeddings "
	  "from the first" },
	{ "graphstore-pattern", GNN_OPT_STR, &opt.graphstore_pattern, NULL, 0, 0, NULL,
	  "instead of --graphstores: a URL with one %d, e.g. tcp://graphstore-%d.graphstore:7000, expanded for "
	  "every partition" },
	{ "embed-prefetch", GNN_OPT_STR, &opt.embed_prefetch, "off", 0, 0, "on|off",
	  "with --embed-dim: pull the next minibatch's embedding rows on a thread while the step computes, then "
	  "only those the step's update changed (the same rows; docs/embeddings.md: for a trainer with cores to "
	  "spare; on 2 shared cores it made the epoch slower); off: every step pulls its rows when it starts" },
	{ "data", GNN_OPT_STR, &opt.data, NULL, 0, 0, NULL,
	  "--task link: the partition output the samplers serve (gnn-partition --edge-split): its held-out pairs "
	  "and training edges are read from here" },
	{ "on-finish", GNN_OPT_STR, &opt.on_finish, "exit", 0, 0, "exit|serve",
	  "after the summary: exit 0, or keep serving /metrics and /readyz until SIGTERM (StatefulSet pods)" },
	GNN_TLS_OPTIONS(opt.tls),
	{ "ring-tls-ca", GNN_OPT_STR, &opt.ring_tls.ca, NULL, 0, 0, NULL,
	  "PEM file of the trainers' ring's own CA: with --ring-tls-cert and --ring-tls-key the ring is mutual TLS "
	  "that only holders of its certificates can join, not the data plane's (docs/security.md)" },
	{ "ring-tls-cert", GNN_OPT_STR, &opt.ring_tls.cert, NULL, 0, 0, NULL,
	  "PEM file of this trainer's ring certificate, naming the host the previous rank dials (--peers)" },
	{ "ring-tls-key", GNN_OPT_STR, &opt.ring_tls.key, NULL, 0, 0, NULL, "PEM file of --ring-tls-cert's key" },
	{ NULL },
};

/* own_options, then the model table's rows, then the end row. */
static struct gnn_opt options[sizeof(own_options) / sizeof(own_options[0]) + GNN_MCFG_MAX_ROWS];

enum state { ST_SAMPLERS, ST_PEERS, ST_TRAINING, ST_FINISHED };
static atomic_int state;

/* /readyz: ready once the samplers answer: the rank then trains, or waits
 * for its peers to form the ring. Not later: a StatefulSet rolling update
 * replaces one trainer at a time and waits for each to be ready, and the
 * ring forms only once every rank runs the new settings. */
static bool ready(void *ctx, char *why, size_t why_len)
{
	(void)ctx;
	if (atomic_load(&state) >= ST_PEERS)
		return true;
	snprintf(why, why_len, "waiting for samplers");
	return false;
}

static double cache_ratio;     /* --cache-ratio as a fraction, */
static uint64_t cache_bytes;   /* or as a size */

/* --cache-ratio: a fraction in [0, 1], or a size with KB, MB or GB. */
static int parse_cache(const char *text, double *ratio, uint64_t *bytes)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "KB", 1024.0 }, { "MB", 1048576.0 }, { "GB", 1073741824.0 },
	};
	char *end;
	double v = strtod(text, &end);

	*ratio = 0;
	*bytes = 0;
	if (end != text && *end == '\0' && v >= 0 && v <= 1) {
		*ratio = v;
		return GNN_OK;
	}
	for (size_t i = 0; end != text && v > 0 && i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].suffix) == 0 && v * units[i].scale < 1e18) {
			*bytes = (uint64_t)(v * units[i].scale);
			return GNN_OK;
		}
	GNN_ERROR("bad_config", "cache_ratio=\"%s\" reason=\"give a fraction of the nodes from 0 to 1 (0.2) or a "
		  "size (512MB, 2GB)\"", text);
	return GNN_EINVAL;
}

/* Checks what the table cannot and fills the training configuration. */
static int resolve_config(struct tr_config *c)
{
	if (opt.samplers == NULL) {
		GNN_ERROR("bad_config", "reason=\"--samplers URL,... (GNN_SAMPLERS) is required\"");
		return GNN_EINVAL;
	}
	if (tr_model_find(mc.model) == NULL) {
		GNN_ERROR("bad_config", "model=%s reason=\"unknown model: one of %s\"", mc.model, tr_model_names());
		return GNN_EINVAL;
	}
	if (opt.rank < 0 && opt.world == 1)
		opt.rank = 0;
	if (opt.rank < 0 && gnn_own_ordinal("rank", &opt.rank) != GNN_OK)
		return GNN_EINVAL;
	if (opt.rank >= opt.world) {
		GNN_ERROR("bad_config", "rank=%" PRId64 " world_size=%" PRId64 " reason=\"the rank must be below "
			  "--world-size\"", opt.rank, opt.world);
		return GNN_EINVAL;
	}
	if (strcmp(mc.task, "link") == 0 && opt.data == NULL) {
		GNN_ERROR("bad_config", "task=link reason=\"--task link needs --data DIR, the partition output with "
			  "the edge split (gnn-partition --edge-split)\"");
		return GNN_EINVAL;
	}
	*c = (struct tr_config){ .rank = (uint32_t)opt.rank, .world = (uint32_t)opt.world,
				 .prefetch = (uint32_t)opt.prefetch, .checkpoint_dir = opt.checkpoint_dir,
				 .checkpoint_interval_s = opt.checkpoint_interval_s,
				 .log_interval_s = opt.log_interval_s, .cache_presample = (uint32_t)opt.cache_presample,
				 .data = opt.data };
	if (tr_config_from_model(c, &mc) != GNN_OK)
		return GNN_EINVAL;
	mc.layers = c->layers;   /* the config line shows --layers as taken from --fanouts */
	if ((mc.embed_dim > 0 || strcmp(opt.features_from, "stores") == 0) && opt.graphstores == NULL &&
	    opt.graphstore_pattern == NULL) {
		GNN_ERROR("bad_config", "reason=\"--embed-dim and --features-from stores need the graph stores: "
			  "--graphstores or --graphstore-pattern\"");
		return GNN_EINVAL;
	}
	if (parse_cache(opt.cache_ratio, &cache_ratio, &cache_bytes) != GNN_OK)
		return GNN_EINVAL;
	if ((cache_ratio > 0 || cache_bytes > 0) && strcmp(opt.features_from, "stores") != 0) {
		GNN_ERROR("bad_config", "cache_ratio=%s reason=\"the feature cache needs --features-from stores\"",
			  opt.cache_ratio);
		return GNN_EINVAL;
	}
	if (opt.threads == 0)
		opt.threads = gnn_cpu_count();
	return GNN_OK;
}

static void log_summary(const struct tr_config *c, const struct gnn_result *res)
{
	GNN_INFO("summary", "test_acc=%.4f test_nodes=%" PRIu64 " best_val_acc=%.4f best_epoch=%" PRId32 " epochs=%"
		 PRIu32 " rank=%" PRIu32 " world_size=%" PRIu32 " train_s=%.1f params_crc=%08" PRIx32, res->test_acc,
		 res->test_nodes, res->best_val_acc, res->best_epoch, res->epochs, c->rank, c->world, res->train_s,
		 res->params_crc);
}

/* Sleeps up to s seconds, less when a stop is requested. */
static void nap(double s)
{
	const struct timespec tick = { 0, 100 * 1000000L };
	double until = gnn_now() + s;

	while (gnn_now() < until && !gnn_stop_requested())
		nanosleep(&tick, NULL);
}

struct ring_metrics {
	struct gnn_gauge *up;
	struct gnn_counter *rejoins;
};

static int register_ring_metrics(struct gnn_metrics *reg, struct ring_metrics *m)
{
	int rc = gnn_metrics_gauge(reg, "gnn_trainer_ring_up", "1 while the ring of all trainers is formed",
				   NULL, 0, &m->up);

	if (rc == GNN_OK)
		rc = gnn_metrics_counter(reg, "gnn_trainer_ring_rejoins_total",
					 "Times the ring failed and was formed again (a peer restarted or was replaced)",
					 NULL, 0, &m->rejoins);
	return rc;
}

/* The result as a finished rank serves it to a rank that restarts later
 * (tr_ring_serve_result): native doubles, like every other ring payload. */
enum { RES_EPOCHS, RES_TEST, RES_BESTVAL, RES_BESTEPOCH, RES_CRC, RES_TRAIN_S, RES_TEST_NODES, RES_COUNT };

static void result_pack(const struct gnn_result *res, double v[RES_COUNT])
{
	v[RES_EPOCHS] = res->epochs;
	v[RES_TEST] = res->test_acc;
	v[RES_BESTVAL] = res->best_val_acc;
	v[RES_BESTEPOCH] = res->best_epoch;
	v[RES_CRC] = res->params_crc;
	v[RES_TRAIN_S] = res->train_s;
	v[RES_TEST_NODES] = (double)res->test_nodes;
}

/* The result a finished peer answered the handshake with (GNN_EDONE). */
static int take_peer_result(const struct tr_config *c, const struct tr_env *env, struct gnn_result *res)
{
	double v[RES_COUNT];
	size_t len;
	uint32_t from;

	if (tr_ring_peer_result(env->ring, v, sizeof(v), &len, &from) != GNN_OK || len != sizeof(v) ||
	    !(v[RES_EPOCHS] >= 1 && v[RES_EPOCHS] <= (c->epochs > 0 ? c->epochs : UINT32_MAX)) ||
	    !(v[RES_CRC] >= 0 && v[RES_CRC] <= UINT32_MAX) ||
	    !(v[RES_BESTEPOCH] >= 0 && v[RES_BESTEPOCH] <= v[RES_EPOCHS])) {
		GNN_ERROR("ring_protocol_error", "error=\"a finished peer's result is not one this trainer reads "
			  "(another version?)\"");
		return GNN_EPROTO;
	}
	*res = (struct gnn_result){ .epochs = (uint32_t)v[RES_EPOCHS], .model_hash = tr_model_hash(c, env->graph),
				   .test_acc = v[RES_TEST], .best_val_acc = v[RES_BESTVAL],
				   .best_epoch = (int32_t)v[RES_BESTEPOCH], .params_crc = (uint32_t)v[RES_CRC],
				   .train_s = v[RES_TRAIN_S],
				   .test_nodes = v[RES_TEST_NODES] >= 0 ? (uint64_t)v[RES_TEST_NODES] : 0 };
	GNN_INFO("already_finished", "epochs=%" PRIu32 " source=trainer-%" PRIu32 " reason=\"the peers finished "
		 "this run: their result, not retrained\"", res->epochs, from);
	return tr_publish_result(env->metrics, res);
}

/* Forms the ring of trainers and trains. When the ring fails (a peer died
 * or restarted, or a rolling update replaces the ranks one by one and the
 * old and new ones disagree on the configuration), closes it, forms it
 * again and resumes from the last checkpoint in this process: no exit, so
 * no container restart back-off, and the replaced peer is waited for like
 * at start-up. Gives up (GNN_ETIMEDOUT) when the ring has not been up for
 * wait_s; a failure outside the ring (the samplers) is returned at once.
 * *ring_stuck: the run finished, but its ring's sockets could not be
 * closed (nng's close deadlock), so this rank's ring port may stay taken. */
static int train_in_ring(const struct tr_config *c, const struct tr_ring_opts *ro, struct tr_env *env,
			 struct ring_metrics *m, struct gnn_result *res, bool *finished_before, bool *ring_stuck)
{
	double up_at = gnn_now(), backoff = 0.5, logged_at = -1e9;
	uint64_t hash = tr_config_hash(c, env->graph);
	int rc;

	for (uint32_t attempt = 1;; attempt++) {
		double left = (double)opt.wait_s - (gnn_now() - up_at);
		int ring_rc;

		if (!(left > 0)) {
			GNN_ERROR("peers_timeout", "waited_s=%.0f reason=\"the ring of %u trainers did not form again\"",
				  gnn_now() - up_at, c->world);
			return GNN_ETIMEDOUT;
		}
		if ((rc = tr_ring_open(ro, &env->ring)) != GNN_OK)
			return rc;
		if ((rc = tr_ring_connect(env->ring, hash, left)) == GNN_OK) {
			gnn_gauge_set(m->up, 1);
			atomic_store(&state, ST_TRAINING);
			rc = tr_train(c, env, res, finished_before);
			up_at = gnn_now();
			backoff = 0.5;
		} else if (rc == GNN_EDONE && (rc = take_peer_result(c, env, res)) == GNN_OK) {
			*finished_before = true;
		}
		/* a graph store lost the embeddings: every rank resumes from the
		 * checkpoint, which a ring failure makes them do */
		ring_rc = rc == GNN_ESTALE ? GNN_ESTALE : tr_ring_failure(env->ring);
		gnn_gauge_set(m->up, 0);
		if (!tr_ring_close(env->ring)) {
			env->ring = NULL;
			if (gnn_stop_requested())
				return GNN_ECLOSED; /* exiting anyway: the sockets go with the process */
			if (rc == GNN_OK) {
				/* the result is here: report it, no ring is needed again */
				*ring_stuck = true;
				GNN_WARN("ring_close_stuck_finished", "reason=\"the finished ring's sockets could not be "
					 "closed (close_stuck above): the result stands\"");
				return GNN_OK;
			}
			GNN_ERROR("ring_unusable", "reason=\"the old ring's sockets could not be closed: exiting so that "
				  "a restarted process forms the ring again\"");
			return GNN_EIO;
		}
		env->ring = NULL;
		if (rc == GNN_OK || rc == GNN_ECLOSED || ring_rc == GNN_OK || gnn_stop_requested())
			return rc;
		atomic_store(&state, ST_PEERS);
		gnn_counter_inc(m->rejoins);
		/* a rolling update keeps the ranks apart for a while: one line per 10 s */
		if (gnn_now() - logged_at >= 10) {
			GNN_WARN("ring_rejoin", "attempt=%" PRIu32 " code=%s after_s=%.1f reason=\"the ring failed (a peer "
				 "restarted, was replaced or runs other settings): forming it again, then resuming from "
				 "the last checkpoint\"", attempt, gnn_errname(ring_rc), backoff);
			logged_at = gnn_now();
		}
		/* short: the peers are restarting, and a handshake costs nothing */
		nap(backoff);
		backoff = backoff * 2 < 2 ? backoff * 2 : 2;
	}
}

/* --on-finish serve: /metrics and /readyz stay up, and the ring URL
 * answers a rank that restarts with the result (it would otherwise wait
 * for a ring that never forms again). GNN_EIO when the ring's close hung
 * (ring_stuck) and its port cannot be served: a peer that restarts would
 * find the dead ring's socket there, so this process exits for a restart
 * that serves the result on a free port. */
static int serve_until_stopped(const struct tr_ring_opts *ro, uint64_t hash, const struct gnn_result *res,
			       bool ring_stuck)
{
	const struct timespec tick = { 0, 100 * 1000000L };
	struct tr_ring_server *srv = NULL;
	double v[RES_COUNT];

	GNN_INFO("serving_result", "reason=\"--on-finish serve: /metrics and /readyz stay up until SIGTERM\"");
	result_pack(res, v);
	if (ro->world > 1 && tr_ring_serve_result(ro, hash, v, sizeof(v), &srv) != GNN_OK) {
		if (ring_stuck) {
			GNN_ERROR("result_not_served", "reason=\"the stuck ring holds this rank's port: exiting so that "
				  "a restart serves the result\"");
			return GNN_EIO;
		}
		GNN_WARN("result_not_served", "reason=\"a rank that restarts now waits for --wait-s and fails\"");
	}
	while (!gnn_stop_requested())
		nanosleep(&tick, NULL);
	tr_ring_serve_close(srv);
	return GNN_OK;
}

/* What the hooks share. */
struct trainer {
	struct tr_config c;
	char **peer_urls, **sampler_urls, **store_urls;
	size_t npeers, nsamplers, nstores;
	struct tr_stores *stores;
	struct tr_emb *emb;
	struct tr_feats *feats;
	struct tr_samplers *samplers;
	struct gnn_layout graph;
	struct ring_metrics rm;
	struct gnn_metrics *reg;
	struct gnn_tls *ring_tls;   /* --ring-tls-*; NULL: plain */
};

static int configure(void *ctx)
{
	struct trainer *t = ctx;

	if (resolve_config(&t->c) != GNN_OK ||
	    gnn_peers_parse("sampler", opt.samplers, NULL, 0, 4096, &t->sampler_urls, &t->nsamplers) != GNN_OK)
		return GNN_EINVAL;
	if ((opt.world > 1 || opt.peers != NULL || opt.peer_pattern != NULL) &&
	    gnn_peers_parse("peer", opt.peers, opt.peer_pattern, opt.world, 65536, &t->peer_urls, &t->npeers) != GNN_OK)
		return GNN_EINVAL;
	if (t->peer_urls != NULL && t->npeers != (size_t)opt.world) {
		GNN_ERROR("bad_config", "peers=%zu world_size=%" PRId64 " reason=\"give one peer URL per trainer\"",
			  t->npeers, opt.world);
		return GNN_EINVAL;
	}
	openblas_set_num_threads((int)opt.threads);
	return GNN_OK;
}

static int start(void *ctx, struct gnn_metrics *reg)
{
	struct trainer *t = ctx;
	struct tr_samplers_opts so = {
		.urls = (const char *const *)t->sampler_urls, .n = t->nsamplers, .timeout_ms = (int)opt.timeout_ms,
		.retries = (int)opt.retries, .resolve_interval_s = (double)opt.resolve_interval_s, .metrics = reg,
		.stop = gnn_stop_requested };
	int rc = register_ring_metrics(reg, &t->rm);

	t->reg = reg;
	if (rc == GNN_OK && t->c.world > 1 && (rc = gnn_tls_domain("ring", "ring-tls", &opt.ring_tls, &t->ring_tls)) == GNN_OK)
		rc = gnn_tls_metrics(t->ring_tls, "ring", reg);
	return rc != GNN_OK ? rc : tr_samplers_open(&so, &t->samplers);
}

/* With --embed-dim, once the graph is known: the graph stores that hold
 * the embeddings, one per partition. */
static int open_embeddings(struct trainer *t)
{
	struct tr_emb_opts eo = { .stores = t->stores, .wait_s = (double)opt.wait_s, .metrics = t->reg,
				  .prefetch = strcmp(opt.embed_prefetch, "on") == 0 };
	char desc[512];
	int rc;

	if (mc.embed_dim == 0)
		return GNN_OK;
	tr_emb_opts_from_model(&eo, &mc);
	if ((rc = tr_emb_open(&eo, &t->graph, &t->emb)) != GNN_OK)
		return rc;
	t->c.embed_hash = tr_emb_hash(t->emb);
	tr_emb_describe(t->emb, desc, sizeof(desc));
	GNN_INFO("embeddings", "types=%s input=%s optimizer=%s lr=%g stores=%zu", desc, mc.embed_input,
		 mc.embed_optimizer, mc.embed_lr, t->nstores);
	return GNN_OK;
}

/* With --features-from stores: the stores the rows come from, and the
 * cache's settings. */
static int open_features(struct trainer *t)
{
	struct tr_feats_opts fo = { .stores = t->stores, .cache_ratio = cache_ratio, .cache_bytes = cache_bytes,
				    .presample = (uint32_t)opt.cache_presample, .metrics = t->reg };
	int rc;

	if (strcmp(opt.features_from, "stores") != 0)
		return GNN_OK;
	if ((rc = tr_feats_open(&fo, &t->graph, &t->feats)) != GNN_OK)
		return rc;
	GNN_INFO("features_from", "source=stores stores=%zu cache=%s presample=%" PRId64, t->nstores, opt.cache_ratio,
		 opt.cache_presample);
	return GNN_OK;
}

/* Until a sampler answers INFO: the graph's layout, then what else the
 * graph decides (the fanouts' relations, the stores' URLs). */
static int wait_samplers(void *ctx, int http_port)
{
	struct trainer *t = ctx;
	int rc = tr_samplers_connect(t->samplers, (double)opt.wait_s, &t->graph);

	(void)http_port;
	if (rc == GNN_OK && (rc = tr_config_resolve(&t->c, &t->graph)) == GNN_OK &&
	    (opt.graphstores != NULL || opt.graphstore_pattern != NULL) &&
	    (rc = gnn_peers_parse("graphstore", opt.graphstores, opt.graphstore_pattern, t->graph.num_parts, 65536,
				  &t->store_urls, &t->nstores)) == GNN_OK)
		rc = tr_stores_open(t->store_urls, t->nstores,
				    &(struct tr_stores_opts){ .timeout_ms = (int)opt.timeout_ms, .retries = (int)opt.retries,
							      .rows_timeout_ms = (int)opt.store_timeout_ms,
							      .rows_min_bytes_per_s = (double)opt.store_min_mb_per_s * 1e6,
							      .replica_timeout_ms = (int)opt.replica_timeout_ms,
							      .metrics = t->reg },
				    &t->stores);
	if (rc == GNN_OK && (rc = open_embeddings(t)) == GNN_OK && (rc = open_features(t)) == GNN_OK)
		atomic_store(&state, ST_PEERS);
	return rc;
}

/* Trains (or learns the peers' result), then exits or serves it. */
static int serve(void *ctx)
{
	struct trainer *t = ctx;
	struct tr_ring_opts ro = { .rank = t->c.rank, .world = t->c.world, .listen = opt.listen,
				   .urls = (const char *const *)t->peer_urls,
				   .timeout_ms = (int)(opt.peer_timeout_s * 1000), .silence_s = opt.peer_silence_s,
				   .metrics = t->reg, .stop = gnn_stop_requested, .tls = t->ring_tls };
	struct tr_env env = { .samplers = t->samplers, .emb = t->emb, .feats = t->feats, .graph = &t->graph, .metrics = t->reg,
			      .stop = gnn_stop_requested };
	bool finished_before = false, ring_stuck = false;
	struct gnn_result res;
	uint64_t hash = tr_config_hash(&t->c, &t->graph);
	int rc;

	if ((rc = train_in_ring(&t->c, &ro, &env, &t->rm, &res, &finished_before, &ring_stuck)) != GNN_OK)
		return rc;
	/* Nothing to sample any more: stop resolving and probing replicas. */
	tr_samplers_close(t->samplers);
	t->samplers = NULL;
	atomic_store(&state, ST_FINISHED);
	log_summary(&t->c, &res);
	return strcmp(opt.on_finish, "serve") == 0 ? serve_until_stopped(&ro, hash, &res, ring_stuck) : GNN_OK;
}

static void stop(void *ctx, int status)
{
	struct trainer *t = ctx;

	(void)status;
	tr_samplers_close(t->samplers);
	tr_emb_close(t->emb);
	tr_feats_close(t->feats);
	tr_stores_close(t->stores);
	gnn_peers_free(t->store_urls, t->nstores);
	if (t->graph.schema != NULL)
		gnn_layout_free(&t->graph);
	gnn_peers_free(t->peer_urls, t->npeers);
	gnn_peers_free(t->sampler_urls, t->nsamplers);
	gnn_tls_free(t->ring_tls);
}

int main(int argc, char **argv)
{
	static struct trainer t;
	static char summary[512];
	const struct gnn_lifecycle lc = {
		.prog = "gnn-trainer",
		.summary = summary,
		.options = options, .tls = &opt.tls, .http_addr = &opt.http_addr, .http_port = &opt.http_port, .ready = ready,
		.stop_note = "training resumes from the last checkpoint", .ctx = &t, .configure = configure,
		.start = start, .wait = wait_samplers, .serve = serve, .stop = stop,
	};

	gnn_log_init("gnn-trainer");
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
		return tr_bench_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "options") == 0)
		return tr_options_main(argc - 1, argv + 1);
	/* OpenBLAS's idle threads spin ~0.1 s after every product and hold the
	 * cores the model's own loops need (docs/model.md: 50 -> 34 ms per step
	 * outside the products at 2 threads). It reads the setting only when
	 * loaded, so set it and start again; if exec fails, run as is. The
	 * benchmark above measures the environment as given. */
	if (getenv("OPENBLAS_THREAD_TIMEOUT") == NULL && setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) == 0)
		execv("/proc/self/exe", argv);
	/* Minibatches and their feature rows are tens of MB each. */
	gnn_keep_heap();
	if (argc > 1 && strcmp(argv[1], "infer") == 0)
		return tr_infer_main(argc - 1, argv + 1);
	snprintf(summary, sizeof(summary), "Train a GNN (--model %s), one rank of synchronous data parallelism.\n"
		 "Also: `gnn-trainer infer` (predictions for every node), `gnn-trainer bench` (the step benchmark), "
		 "`gnn-trainer options` (the model options, as JSON or the chart's flags); each takes --help.",
		 tr_model_names());
	if (gnn_mcfg_option_table(own_options, &mc, GNN_MCFG_ALL, true, NULL, options,
				  sizeof(options) / sizeof(options[0])) != GNN_OK)
		return 1;
	return gnn_lifecycle_run(&lc, argc, argv);
}
