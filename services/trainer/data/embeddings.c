/* embeddings.c - see embeddings.h. */
#include "embeddings.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "arr.h"
#include "client.h"
#include "embfile.h"
#include "err.h"
#include "multicall.h"
#include "hash.h"
#include "log.h"
#include "replica.h"
#include "sys.h"

/* Rows per READ or WRITE call: about 8 MiB of them. */
#define CHUNK_BYTES (8u << 20)

enum { OP_PULL, OP_PUSH, OP_PREFETCH, OP_REFRESH, OP_COUNT };

/* A store's embeddings as rank 0 sees them (replicas, docs/embeddings.md):
 * in step with the others, out (refused or missed an update: a JOIN no
 * sooner than retry_at), or joining (rows to copy at join_version). */
enum { REP_IN, REP_OUT, REP_JOINING };

/* A store that refused a JOIN, or whose copy failed, is tried again this
 * much later. */
#define JOIN_RETRY_S 0.25

struct emb_store {
	int state;
	double retry_at;
	uint64_t join_version;
	struct gnn_replica pick;     /* a pull or read: which replica (avoid after a failure) */
	atomic_uint next;            /* store p's (p < P): rotates partition p's pulls over its replicas */
};

/* One minibatch's embedded types: per type, its input nodes in source
 * order (src: their index among the sources; ids), their order grouped by
 * partition (perm, with part p's at [pstart[p], pstart[p + 1])), which
 * pull and push both use, and the input rows the model reads. */
struct emb_mb {
	struct {
		uint32_t n;
		int32_t *src, *perm;
		int64_t *ids, *pid;         /* pid: ids in perm order */
		uint32_t *pstart;           /* [P + 1] */
		float *rows;                /* n x width */
		size_t cap, rows_cap;
	} m[GNN_MAX_TYPES];
	uint32_t *at;                       /* [P]: index_type's scratch */
};

/* The next minibatch's rows, pulled on a thread while the step before
 * computes (tr_emb_prefetch): idle; pulling (the thread runs); pulled
 * (joined: rc says how it went). */
enum { PF_IDLE, PF_PULLING, PF_PULLED };

struct tr_emb {
	struct tr_emb_opts o;
	const struct gnn_layout *g;
	uint32_t T, P, K;                   /* types, partitions, embedded types */
	uint32_t R;                         /* stores per partition: store p + r P, each a replica */
	struct emb_store *st;               /* [P x R] */
	bool rank0;                         /* set up the stores (tr_emb_setup) and heals replicas */
	uint32_t *cs;                       /* [batch calls]: each call's store */
	size_t cs_cap;
	atomic_uint_fast64_t req_id;
	uint32_t dim[GNN_MAX_TYPES];        /* a type's embedding width, 0: none */
	uint32_t width[GNN_MAX_TYPES];      /* its input rows' width, as the model sees it */
	uint32_t col[GNN_MAX_TYPES];        /* the embedding's first column in them */
	struct emb_mb mbs[2];
	struct emb_mb *cur;                 /* the minibatch last attached (pushed from) */
	struct emb_mb *next;                /* the prefetch's */
	struct gnn_multicall batch;         /* one operation's calls to the stores (memory kept) */
	struct {
		int state;                  /* PF_* */
		pthread_t thread;
		const struct gnn_minibatch *mb;
		uint64_t gen, version;      /* the rows', as pulled */
		int rc;
		struct gnn_multicall batch; /* the thread's calls */
	} pf;
	struct gnn_arr best[GNN_MAX_TYPES]; /* tr_emb_map_best's */
	int64_t *first;                     /* [P * T]: gnn_emb_file_row(p, t), for tr_emb_best_row */
	struct gnn_counter *rows[OP_COUNT], *bytes[OP_COUNT], *seconds[OP_COUNT];
	uint64_t gen, version;               /* where this rank expects the stores: set up, then one
					      * version per step pushed */
	bool stream_saves;                   /* a store could not reach the checkpoint folder: the
					      * rows come through this rank (copy_array) */
	/* The stores' snapshot that tr_emb_save asked for and tr_emb_finish
	 * waits for (the commit's thread: the training thread leaves it alone
	 * until the next save, which waits for that commit) */
	struct {
		enum { SNAP_NONE, SNAP_ASKED } state;
		char dir[PATH_MAX];
		uint64_t gen, version;
		double wait_s;              /* how long the records may take */
	} snap;
};

/* ---- set-up ---- */

static int pick_types(struct tr_emb *e)
{
	const struct gnn_schema *s = e->g->schema;
	char buf[1024], *save = NULL, *tok;

	if (e->o.types == NULL) {
		for (uint32_t t = 0; t < e->T; t++)
			e->dim[t] = s->types[t].feat_dim == 0 ? e->o.dim : 0;
		return GNN_OK;
	}
	if (snprintf(buf, sizeof(buf), "%s", e->o.types) >= (int)sizeof(buf))
		return GNN_EINVAL;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		int32_t t = gnn_schema_type(s, tok);

		if (t < 0 || e->dim[t] != 0) {
			GNN_ERROR("bad_config", "option=embed-types type=%s reason=\"%s\"", tok,
				  t < 0 ? "the graph has no such node type" : "named twice");
			return GNN_EINVAL;
		}
		e->dim[t] = e->o.dim;
	}
	return GNN_OK;
}

static int register_metrics(struct tr_emb *e)
{
	static const char *const op_label[] = { "op" };
	static const char *const ops[OP_COUNT] = { "pull", "push", "prefetch", "refresh" };
	struct gnn_counter *fam[3];
	const char *names[3] = { "gnn_trainer_embedding_rows_total", "gnn_trainer_embedding_bytes_total",
				 "gnn_trainer_embedding_seconds_total" };
	const char *help[3] = {
		"Embedding rows pulled from (op=pull: the step waits; op=prefetch: the next minibatch's, beside "
		"the step; op=refresh: those of them the step's update changed) and gradient rows pushed to "
		"(op=push) the graph stores",
		"Bytes of those rows", "Seconds spent pulling rows and pushing gradients (op=push includes the "
		"graph stores' sparse update of the last rank to push; op=prefetch is beside the step)" };
	int rc;

	if (e->o.metrics == NULL)
		return GNN_OK;   /* offline: nothing is pulled or pushed */
	for (int i = 0; i < 3; i++) {
		if ((rc = gnn_metrics_find_counter(e->o.metrics, names[i], &fam[i])) == GNN_ENOENT)
			rc = gnn_metrics_counter(e->o.metrics, names[i], help[i], op_label, 1, &fam[i]);
		if (rc != GNN_OK)
			return rc;
	}
	for (int op = 0; op < OP_COUNT; op++)
		if ((rc = gnn_counter_labels(fam[0], &ops[op], 1, &e->rows[op])) != GNN_OK ||
		    (rc = gnn_counter_labels(fam[1], &ops[op], 1, &e->bytes[op])) != GNN_OK ||
		    (rc = gnn_counter_labels(fam[2], &ops[op], 1, &e->seconds[op])) != GNN_OK)
			return rc;
	return GNN_OK;
}

/* One store per partition, or replicas listed partition by partition
 * (store i serves i mod P): every replica holds the embeddings and takes
 * every update (docs/embeddings.md, "Replicas"). */
static int check_stores(struct tr_emb *e)
{
	size_t n = e->o.stores != NULL ? tr_stores_count(e->o.stores) : 0;

	e->R = 1;
	if (e->o.stores == NULL || n == e->P)
		return GNN_OK;   /* offline, or one per partition */
	if (n > e->P && n % e->P == 0 && n / e->P <= GNN_MAX_REPLICAS) {
		e->R = (uint32_t)(n / e->P);
		GNN_INFO("graphstore_replicas", "what=embeddings stores=%zu num_parts=%" PRIu32 " note=\"every "
			 "replica applies every update; a restarted one catches up from another\"", n, e->P);
		return GNN_OK;
	}
	GNN_ERROR("bad_config", "option=graphstores urls=%zu partitions=%" PRIu32 " reason=\"learnable "
		  "embeddings need one graph store URL per partition, or the same number for each (replicas, "
		  "partition by partition) (--graphstores or --graphstore-pattern)\"", n, e->P);
	return GNN_EINVAL;
}

int tr_emb_open(const struct tr_emb_opts *o, const struct gnn_layout *g, struct tr_emb **out)
{
	struct tr_emb *e;
	int rc;

	*out = NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return GNN_ENOMEM;
	e->o = *o;
	e->g = g;
	e->T = g->schema->num_types;
	e->P = g->num_parts;
	if ((rc = pick_types(e)) != GNN_OK)
		goto fail;
	for (uint32_t t = 0; t < e->T; t++) {
		uint32_t f = g->schema->types[t].feat_dim;

		e->width[t] = e->dim[t] == 0 ? f : o->replace ? e->dim[t] : f + e->dim[t];
		e->col[t] = o->replace ? 0 : f;
		e->K += e->dim[t] > 0;
	}
	if (e->K == 0) {
		GNN_ERROR("bad_config", "option=embed-types reason=\"every node type has features: name the types "
			  "to embed with --embed-types\"");
		rc = GNN_EINVAL;
		goto fail;
	}
	rc = GNN_ENOMEM;
	gnn_multicall_init(&e->batch);
	gnn_multicall_init(&e->pf.batch);
	e->cur = &e->mbs[0];
	e->next = &e->mbs[1];
	for (int k = 0; k < 2; k++) {
		if ((e->mbs[k].at = calloc(e->P, sizeof(uint32_t))) == NULL)
			goto fail;
		for (uint32_t t = 0; t < e->T; t++)
			if (e->dim[t] > 0 && (e->mbs[k].m[t].pstart = calloc(e->P + 1, sizeof(uint32_t))) == NULL)
				goto fail;
	}
	if ((rc = register_metrics(e)) != GNN_OK || (rc = check_stores(e)) != GNN_OK)
		goto fail;
	if ((e->st = calloc((size_t)e->P * e->R, sizeof(*e->st))) == NULL) {
		rc = GNN_ENOMEM;
		goto fail;
	}
	e->req_id = gnn_draw64((uint64_t)time(NULL), (uint64_t)getpid()) & 0xffffffffull;
	*out = e;
	return GNN_OK;
fail:
	tr_emb_close(e);
	return rc;
}

void tr_emb_close(struct tr_emb *e)
{
	if (e == NULL)
		return;
	tr_emb_prefetch_drop(e);
	gnn_multicall_free(&e->batch);
	gnn_multicall_free(&e->pf.batch);
	free(e->st);
	free(e->cs);
	for (int k = 0; k < 2; k++) {
		free(e->mbs[k].at);
		for (uint32_t t = 0; t < e->T; t++) {
			free(e->mbs[k].m[t].src);
			free(e->mbs[k].m[t].perm);
			free(e->mbs[k].m[t].ids);
			free(e->mbs[k].m[t].pid);
			free(e->mbs[k].m[t].pstart);
			free(e->mbs[k].m[t].rows);
		}
	}
	for (uint32_t t = 0; t < e->T; t++)
		if (e->best[t].map != NULL)
			gnn_arr_close(&e->best[t]);
	free(e->first);
	free(e);
}

void tr_emb_model_schema(const struct tr_emb *e, struct gnn_schema *out)
{
	*out = *e->g->schema;
	for (uint32_t t = 0; t < e->T; t++)
		out->types[t].feat_dim = e->width[t];
}

uint64_t tr_emb_hash(const struct tr_emb *e)
{
	uint64_t h = gnn_fold64(0x656d62ull, e->o.optimizer);

	h = gnn_fold64(h, e->o.replace);
	for (uint32_t t = 0; t < e->T; t++)
		h = gnn_fold64(h, e->dim[t]);
	return h;
}

void tr_emb_describe(const struct tr_emb *e, char *buf, size_t cap)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t t = 0; t < e->T && at < cap; t++)
		if (e->dim[t] > 0)
			at += (size_t)snprintf(buf + at, cap - at, "%s%s:%" PRIu32, at > 0 ? "," : "",
					       e->g->schema->types[t].name, e->dim[t]);
}

/* ---- calls ---- */

/* Where one operation's answers go, and whether its first failure was
 * logged. quiet: failures are the caller's to judge (replicas). */
struct emb_run {
	struct tr_emb *e;
	const char *what;
	struct gnn_emb_resp *resp;   /* [calls] or NULL: replies only checked */
	bool logged, quiet;
};

/* A failed call, logged naming its store (GNN_ESTALE as a WARN: the
 * trainers then resume, nothing is lost). */
static void log_failure(const char *what, const struct gnn_call *c, int crc)
{
	if (crc == GNN_ECLOSED || (crc == GNN_ENOENT && strcmp(what, "save") == 0))
		;   /* stopping: not worth a line per call; a SAVE elsewhere: tr_emb_save says it */
	else if (crc == GNN_ESTALE)
		GNN_WARN("embeddings_stale", "op=%s store=%s reason=\"%s\"", what, gnn_client_name(c->client),
			 c->err[0] ? c->err : "stale reply");
	else
		GNN_ERROR("embeddings_call_failed", "op=%s store=%s code=%s reason=\"%s\"", what,
			  gnn_client_name(c->client), gnn_errname(crc), c->err[0] ? c->err : gnn_strerror(crc));
}

/* Call i's answer, decoded into resp[i] (gnn_multicall_answer_fn); the first
 * failure logged unless quiet. */
static int take_emb(void *ctx, size_t i, struct gnn_call *c)
{
	struct emb_run *r = ctx;
	const void *pl;
	size_t len;
	int crc = c->rc;

	if (crc == GNN_OK && (crc = gnn_reply_payload(c->reply, GNN_MSG_EMB_RESP, &pl, &len)) == GNN_OK &&
	    r->resp != NULL)
		crc = gnn_decode_emb_resp(pl, len, &r->resp[i]);
	if (r->e->R > 1)
		gnn_replica_observe(&r->e->st[r->e->cs[i]].pick, crc == GNN_OK ? c->answer_s : 0);
	if (crc != GNN_OK && !r->logged && !r->quiet) {
		r->logged = true;
		log_failure(r->what, c, crc);
	}
	c->rc = crc;
	return crc;
}

/* Runs the calls of e->batch and decodes reply i into resp[i] (may be
 * NULL: replies only checked). Returns the first failure, logged with one
 * store per partition; with replicas the caller judges (judge_all). The
 * replies stay until free_replies. */
static int run_calls(struct tr_emb *e, const char *what, struct gnn_emb_resp *resp)
{
	return gnn_multicall_run(&e->batch, take_emb, &(struct emb_run){ .e = e, .what = what, .resp = resp,
									   .quiet = e->R > 1 });
}

/* Empties e->batch, with the decoded answers in resp (may be NULL). */
static void free_replies(struct tr_emb *e, struct gnn_emb_resp *resp)
{
	for (size_t i = 0; resp != NULL && i < e->batch.n; i++)
		gnn_proto_release(resp[i].owned);
	gnn_multicall_clear(&e->batch);
}

/* The attempt timeout of a call of `bytes` to a replica of partition p:
 * a few times the replicas' recent slowest answer (gnn_replica_timeout_ms,
 * at most the trainer's --replica-timeout-ms), plus the bytes term. */
static int replica_timeout_ms(struct tr_emb *e, uint32_t p, double bytes)
{
	struct gnn_replica *reps[GNN_MAX_REPLICAS];

	for (uint32_t r = 0; r < e->R; r++)
		reps[r] = &e->st[p + r * e->P].pick;
	return tr_stores_rows_timeout_ms(e->o.stores, bytes,
					 gnn_replica_timeout_ms(reps, e->R, tr_stores_replica_timeout_ms(e->o.stores)));
}

/* The next call of e->batch: req to store s (of partition s mod P). With
 * replicas, one attempt that fails at once when s is not connected, and
 * timeout_ms 0 means replica_timeout_ms. */
static int put_call(struct tr_emb *e, uint32_t s, const struct gnn_emb_req *req, int timeout_ms)
{
	struct gnn_wbuf *w;
	size_t i = e->batch.n;
	int rc;

	if (i == e->cs_cap) {
		size_t cap = e->cs_cap ? 2 * e->cs_cap : 64;
		uint32_t *cs = realloc(e->cs, cap * sizeof(*cs));

		if (cs == NULL)
			return GNN_ENOMEM;
		e->cs = cs;
		e->cs_cap = cap;
	}
	if (e->R > 1 && timeout_ms == 0)
		timeout_ms = replica_timeout_ms(e, s % e->P, (double)req->n * (req->dim ? req->dim : 64) * 4);
	if ((rc = gnn_multicall_add(&e->batch, tr_stores_client(e->o.stores, s), timeout_ms, &w)) != GNN_OK)
		return rc;
	e->cs[i] = s;
	e->batch.call[i].failover = e->R > 1;
	return gnn_encode_emb_req(w, ++e->req_id, req);
}

/* ---- replicas ---- */

static const char *store_name(const struct tr_emb *e, uint32_t s)
{
	return gnn_client_name(tr_stores_client(e->o.stores, s));
}

/* Rank 0: store s leaves the set in step (it refused or missed an update). */
static void set_out(struct tr_emb *e, uint32_t s, const char *why)
{
	if (e->st[s].state != REP_OUT)
		GNN_WARN("embeddings_replica_out", "store=%s reason=\"%s\" note=\"the others of its partition serve; "
			 "it catches up from one of them\"", store_name(e, s), why);
	e->st[s].state = REP_OUT;
	e->st[s].retry_at = gnn_now() + JOIN_RETRY_S;
}

/* Partition p's store for a pull or read (gnn_replica_pick): those failed
 * lately and, on rank 0, those not in step come last; tried: bits by
 * replica rank. */
static uint32_t pick_store(struct tr_emb *e, uint32_t p, uint64_t tried)
{
	struct gnn_replica *reps[GNN_MAX_REPLICAS];
	bool usable[GNN_MAX_REPLICAS];

	if (e->R == 1)
		return p;
	for (uint32_t r = 0; r < e->R; r++) {
		reps[r] = &e->st[p + r * e->P].pick;
		usable[r] = e->st[p + r * e->P].state == REP_IN;
	}
	return p + (uint32_t)gnn_replica_pick(reps, usable, e->R, tried, &e->st[p].next) * e->P;
}

/* A failure that says nothing of a replica's state: it may answer later. */
static bool unreachable(int rc)
{
	return rc == GNN_EUNAVAIL || rc == GNN_ETIMEDOUT;
}

/* While every store of a partition is unreachable (restarting: a store
 * still loading its partition, or replaying its log, answers EUNAVAIL),
 * calls go round them every NONE_UP_MS for as long as one store is waited
 * for: --timeout-ms x (--retries + 1); then the call fails (a restarted
 * store's GNN_ESTALE, a refusal, sends the ranks back to the checkpoint
 * at once). */
#define NONE_UP_MS 100

static double none_up_deadline(const struct tr_emb *e)
{
	return gnn_now() + tr_stores_timeout_ms(e->o.stores) * (tr_stores_retries(e->o.stores) + 1) / 1000.0;
}

static void pause_round(void)
{
	nanosleep(&(struct timespec){ 0, NONE_UP_MS * 1000000L }, NULL);
}

static bool partition_down(const struct tr_emb *e);

/* Whether e->batch's failed calls should go again after pause_round: a
 * partition has no store that took them all, none refused, and the wait
 * is within its deadline. The first time, says what it waits for. */
static bool wait_round(struct tr_emb *e, const char *what, double deadline, bool *said)
{
	if (!partition_down(e) || gnn_now() >= deadline)
		return false;
	for (size_t i = 0; !*said && i < e->batch.n; i++)
		if (!e->batch.done[i]) {
			*said = true;
			GNN_INFO("embeddings_waiting", "op=%s store=%s timeout_s=%.0f reason=\"%s\"", what,
				 store_name(e, e->cs[i]), deadline - gnn_now(),
				 e->batch.call[i].err[0] ? e->batch.call[i].err : gnn_strerror(e->batch.call[i].rc));
		}
	pause_round();
	return true;
}

/* The first call of e->batch not done, logged (once per run). */
static void log_first_failure(struct tr_emb *e, struct emb_run *run)
{
	for (size_t i = 0; !run->logged && i < e->batch.n; i++)
		if (!e->batch.done[i]) {
			run->logged = true;
			log_failure(run->what, &e->batch.call[i], e->batch.call[i].rc);
		}
}

/* Runs e->batch, each call on one replica: one that fails goes on to
 * another replica of its partition, each once a round, and round after
 * round while they are all unreachable (none_up_deadline). The first call
 * that failed on all, logged, is the result. */
static int run_failover(struct tr_emb *e, const char *what, struct gnn_emb_resp *resp)
{
	struct emb_run run = { .e = e, .what = what, .resp = resp, .quiet = true };
	double deadline = none_up_deadline(e);
	uint64_t *tried = NULL;
	bool said = false;
	int rc;

	if (e->R > 1 && (tried = calloc(e->batch.n + 1, sizeof(*tried))) == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; tried != NULL && i < e->batch.n; i++)
		tried[i] = 1ull << (e->cs[i] / e->P);
	for (;;) {
		bool moved = false, round = false;

		if ((rc = gnn_multicall_run(&e->batch, take_emb, &run)) == GNN_OK || rc == GNN_ENOMEM ||
		    rc == GNN_ECLOSED)
			break;
		if (tried == NULL) {   /* one store a partition: wait while it restarts */
			if (wait_round(e, what, deadline, &said))
				continue;
			log_first_failure(e, &run);
			break;
		}
		for (size_t i = 0; i < e->batch.n; i++) {
			uint32_t s = e->cs[i], p = s % e->P;

			if (e->batch.done[i])
				continue;
			gnn_replica_avoid(&e->st[s].pick);
			if (__builtin_popcountll(tried[i]) >= (int)e->R && unreachable(e->batch.call[i].rc) &&
			    gnn_now() < deadline) {
				tried[i] = 0;   /* the next round */
				round = true;
			}
			if (__builtin_popcountll(tried[i]) >= (int)e->R) {
				if (!run.logged) {
					run.logged = true;
					log_failure(what, &e->batch.call[i], e->batch.call[i].rc);
				}
				continue;
			}
			GNN_LOG_LIMITED(GNN_LOG_INFO, "graphstore_failover", "what=embeddings op=%s store=%s reason=\"%s\"",
					what, store_name(e, s), gnn_errname(e->batch.call[i].rc));
			tr_stores_failed_over(e->o.stores, s);
			e->cs[i] = s = pick_store(e, p, tried[i]);
			tried[i] |= 1ull << (s / e->P);
			e->batch.call[i].client = tr_stores_client(e->o.stores, s);
			moved = true;
		}
		if (!moved)
			break;
		if (round)
			pause_round();
	}
	free(tried);
	return rc;
}

/* Partition p's failed call to report: a refusal (GNN_ESTALE: a store
 * restarted, and the ranks resume from the checkpoint) before a silence
 * (which ends the trainer); SIZE_MAX: none failed. */
static size_t failed_call(const struct tr_emb *e, uint32_t p)
{
	size_t k = SIZE_MAX;

	for (size_t i = 0; i < e->batch.n; i++)
		if (e->cs[i] % e->P == p && !e->batch.done[i] && (k == SIZE_MAX || e->batch.call[i].rc == GNN_ESTALE))
			k = i;
	return k;
}

/* After e->batch ran on every store of each partition (a push, BEST,
 * INIT, a restore's WRITE): GNN_OK when every partition has a store all
 * of whose calls succeeded; rank 0 takes the others out of step. Else the
 * first failure, logged. */
static int judge_all(struct tr_emb *e, const char *what, int rc)
{
	bool *failed;
	int first = GNN_OK;

	if (rc == GNN_OK || rc == GNN_ENOMEM || rc == GNN_ECLOSED)
		return rc;
	if ((failed = calloc((size_t)e->P * e->R, sizeof(*failed))) == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < e->batch.n; i++)
		failed[e->cs[i]] |= !e->batch.done[i];
	for (uint32_t p = 0; p < e->P && first == GNN_OK; p++) {
		bool any = false;
		size_t k;

		for (uint32_t r = 0; r < e->R; r++)
			any |= !failed[p + r * e->P] && e->st[p + r * e->P].state != REP_OUT;
		if (!any && (k = failed_call(e, p)) != SIZE_MAX) {
			first = e->batch.call[k].rc;
			log_failure(what, &e->batch.call[k], first);
		}
	}
	for (size_t i = 0; e->rank0 && first == GNN_OK && i < e->batch.n; i++)
		if (!e->batch.done[i] && e->st[e->cs[i]].state == REP_IN)
			set_out(e, e->cs[i], e->batch.call[i].err[0] ? e->batch.call[i].err
								  : gnn_strerror(e->batch.call[i].rc));
	free(failed);
	return first;
}

/* Whether a partition has calls in e->batch, none of its stores took all
 * of them, and every failure was unreachable (not a refusal). */
static bool partition_down(const struct tr_emb *e)
{
	for (uint32_t p = 0; p < e->P; p++) {
		bool calls = false, refused = false, whole = false;

		for (uint32_t r = 0; r < e->R; r++) {
			uint32_t s = p + r * e->P;
			bool mine = false, all = true;

			for (size_t i = 0; i < e->batch.n; i++)
				if (e->cs[i] == s) {
					mine = true;
					all &= e->batch.done[i];
					refused |= !e->batch.done[i] && !unreachable(e->batch.call[i].rc);
				}
			calls |= mine;
			whole |= mine && all;
		}
		if (calls && !whole && !refused)
			return true;
	}
	return false;
}

/* Runs e->batch, sent to every store in step of each partition (a push,
 * BEST, INIT, a restore's WRITE), then judge_all; again, the calls that
 * failed, every NONE_UP_MS while a partition has none of its stores
 * reachable (none_up_deadline). */
static int run_all(struct tr_emb *e, const char *what, struct gnn_emb_resp *resp)
{
	struct emb_run run = { .e = e, .what = what, .resp = resp, .quiet = true };
	double deadline = none_up_deadline(e);
	bool said = false;
	int rc;

	while ((rc = gnn_multicall_run(&e->batch, take_emb, &run)) != GNN_OK && rc != GNN_ENOMEM &&
	       rc != GNN_ECLOSED && wait_round(e, what, deadline, &said))
		;
	return judge_all(e, what, rc);
}

/* The same request to every store in step (every store with replicas:
 * those out refuse it), one call each. */
static int call_every_store(struct tr_emb *e, const struct gnn_emb_req *req, const char *what, int timeout_ms,
			    struct gnn_emb_resp *resp)
{
	int rc = GNN_OK;

	for (uint32_t s = 0; s < e->P * e->R && rc == GNN_OK; s++)
		if (e->st[s].state != REP_OUT || req->op == GNN_EMB_BEST)
			rc = put_call(e, s, req, timeout_ms);
	if (rc == GNN_OK)
		rc = run_all(e, what, resp);
	free_replies(e, resp);
	return rc;
}

/* ---- start and resume ---- */

/* Every partition has a store that answers STATUS, within wait_s (a store
 * still loading its partition answers EUNAVAIL); with replicas, those
 * that did not answer once the others did for JOIN_WAIT_S are out (they
 * catch up later). */
#define JOIN_WAIT_S 5.0

static int wait_stores(struct tr_emb *e)
{
	double t0 = gnn_now(), logged = -1e9, covered = 0;
	struct gnn_emb_req st = { .op = GNN_EMB_STATUS };
	uint32_t n = e->P * e->R;

	for (;;) {
		int rc = GNN_OK;
		uint32_t parts = 0, up = 0;

		for (uint32_t s = 0; s < n && rc == GNN_OK; s++)
			rc = put_call(e, s, &st, 2000);
		if (rc == GNN_OK)
			rc = gnn_multicall_run(&e->batch, NULL, NULL);
		for (uint32_t p = 0; p < e->P && rc != GNN_ENOMEM; p++) {
			bool any = false;

			for (uint32_t r = 0; r < e->R; r++) {
				uint32_t s = p + r * e->P;

				e->st[s].state = e->batch.n == n && e->batch.done[s] ? REP_IN : REP_OUT;
				e->st[s].retry_at = 0;
				any |= e->st[s].state == REP_IN;
				up += e->st[s].state == REP_IN;
			}
			parts += any;
		}
		free_replies(e, NULL);
		if (rc == GNN_ENOMEM || rc == GNN_ECLOSED || gnn_stop_requested())
			return rc == GNN_ENOMEM ? rc : GNN_ECLOSED;
		if (parts == e->P && covered == 0)
			covered = gnn_now();
		if (up == n || (parts == e->P && gnn_now() - covered >= JOIN_WAIT_S))
			return GNN_OK;
		if (gnn_now() - t0 >= e->o.wait_s) {
			GNN_ERROR("graphstores_timeout", "waited_s=%.0f reason=\"the graph stores holding the "
				  "embeddings did not all answer\"", gnn_now() - t0);
			return GNN_ETIMEDOUT;
		}
		if (gnn_now() - logged >= 10) {
			GNN_INFO("waiting_for_graphstores", "what=embeddings stores=%" PRIu32 " up=%" PRIu32 " code=%s",
				 n, up, gnn_errname(rc));
			logged = gnn_now();
		}
		nanosleep(&(struct timespec){ 0, 250 * 1000000L }, NULL);
	}
}

static bool has_array(const struct tr_emb *e, uint32_t a)
{
	return e->o.optimizer == GNN_EMB_ADAM || (a != GNN_EMB_STATE2 && a != GNN_EMB_STEPS);
}

static uint32_t array_cols(const struct tr_emb *e, uint32_t t, uint32_t a)
{
	return a == GNN_EMB_STEPS ? 1 : e->dim[t];
}

static void shard_path(const struct tr_emb *e, const char *dir, uint32_t t, uint32_t a, char *buf, size_t cap)
{
	if (gnn_emb_file(buf, cap, dir, e->g->schema->types[t].name, a) != GNN_OK)
		buf[0] = '\0';   /* (cap is PATH_MAX-sized: a longer dir fails to open) */
}

/* rq (a WRITE) to every store of partition p in step. */
static int write_replicas(struct tr_emb *e, uint32_t p, const struct gnn_emb_req *rq)
{
	int rc = GNN_OK;

	for (uint32_t r = 0; r < e->R && rc == GNN_OK; r++)
		if (e->st[p + r * e->P].state == REP_IN)
			rc = put_call(e, p + r * e->P, rq, 0);
	return rc == GNN_OK ? run_all(e, "write", NULL) : rc;
}

/* One array of type t between the stores and its checkpoint file in dir,
 * partition after partition (the file's rows in global ID order), a chunk
 * per call: READ into a new file (save), or WRITE from it (the stores at
 * (gen, step) afterwards). */
static int copy_array(struct tr_emb *e, uint32_t t, uint32_t a, const char *dir, bool save, uint64_t gen,
		      uint64_t step)
{
	uint32_t cols = array_cols(e, t, a), chunk = CHUNK_BYTES / (cols * 4);
	enum gnn_dtype dt = a == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32;
	struct gnn_arr_writer *w = NULL;
	struct gnn_arr arr = { 0 };
	char path[4200];
	uint64_t row = 0;
	int rc;

	shard_path(e, dir, t, a, path, sizeof(path));
	if ((rc = save ? gnn_arr_writer_open(path, dt, cols, &w) : gnn_arr_open(path, dt, 0, &arr)) != GNN_OK)
		return rc;
	if (save)   /* the checkpoint's commit syncs the folder, off the ranks' path (checkpoint.h) */
		gnn_arr_writer_no_sync(w);
	for (uint32_t p = 0; p < e->P && rc == GNN_OK; p++) {
		int64_t lo, hi;

		gnn_layout_type_range(e->g, p, t, &lo, &hi);
		for (int64_t v = lo, n; v < hi && rc == GNN_OK; v += n, row += (uint64_t)n) {
			n = hi - v < (int64_t)chunk ? hi - v : (int64_t)chunk;
			struct gnn_emb_req rq = { .op = save ? GNN_EMB_READ : GNN_EMB_WRITE, .node_type = t, .array = a,
						  .gen = gen, .step = step, .first = v, .n = (uint32_t)n, .dim = save ? 0 : cols,
						  .data = save ? NULL : (const uint8_t *)arr.data + row * cols * 4 };
			struct gnn_emb_resp resp = { 0 };

			if (!save && row + (uint64_t)n > arr.info.rows)
				rc = GNN_EFORMAT;   /* tr_emb_check_ckpt checked the shape: the file changed */
			else if (save && (rc = put_call(e, pick_store(e, p, 0), &rq, 0)) == GNN_OK &&
				 (rc = run_failover(e, "read", &resp)) == GNN_OK)
				rc = resp.n != (uint32_t)n || resp.dim != cols ? GNN_EPROTO
									       : gnn_arr_writer_append(w, resp.data, (uint64_t)n);
			else if (!save)
				rc = write_replicas(e, p, &rq);
			free_replies(e, save ? &resp : NULL);
		}
	}
	if (!save) {
		gnn_arr_close(&arr);
		return rc;
	}
	if (rc != GNN_OK) {
		gnn_arr_writer_abort(w);
		return rc;
	}
	return gnn_arr_writer_finish(w, NULL);
}

/* The files a snapshot fills, removed (after a refusal). */
static void remove_snap_files(struct tr_emb *e, const char *dir)
{
	char path[PATH_MAX + 64];

	for (uint32_t p = 0; p < e->P; p++)
		if (gnn_emb_snap_file(path, sizeof(path), dir, p) == GNN_OK)
			unlink(path);
	for (uint32_t t = 0; t < e->T; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS; a++)
			if (has_array(e, a)) {
				shard_path(e, dir, t, a, path, sizeof(path));
				gnn_arr_shared_abort(path);
			}
}

/* Disks write at least this fast: how long a snapshot may take. */
#define SNAP_MIN_BYTES_PER_S (16.0 * (1 << 20))

/* Every array written by the stores themselves into folder dir (EMB
 * SAVE): each partition's store at once, from a copy, while
 * training goes on (no row crosses the network or this rank). This
 * creates the files and asks; tr_emb_finish waits for the stores'
 * records. GNN_ENOENT when a store cannot open the files (the folder is
 * not on its file system): the caller streams the arrays instead. */
static int save_direct(struct tr_emb *e, const char *dir)
{
	struct gnn_emb_req rq = { .op = GNN_EMB_SAVE, .gen = e->gen, .step = e->version, .n = (uint32_t)strlen(dir),
				  .data = dir };
	char path[PATH_MAX + 64];
	double bytes = 0;
	int rc = GNN_OK;

	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS && rc == GNN_OK; a++) {
			uint64_t rows = (uint64_t)e->g->schema->types[t].num_nodes;

			if (!has_array(e, a))
				continue;
			shard_path(e, dir, t, a, path, sizeof(path));
			bytes += (double)rows * array_cols(e, t, a) * 4;
			rc = gnn_arr_shared_create(path, a == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32, rows,
						   array_cols(e, t, a));
		}
	for (uint32_t p = 0; p < e->P && rc == GNN_OK; p++) {
		int fd = -1;

		if (gnn_emb_snap_file(path, sizeof(path), dir, p) != GNN_OK ||
		    (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
			GNN_ERROR("checkpoint_failed", "file=%s error=\"%s\"", path, strerror(errno));
			rc = GNN_EIO;
		}
		if (fd >= 0)
			close(fd);
	}
	for (uint32_t p = 0; p < e->P && rc == GNN_OK; p++)
		rc = put_call(e, pick_store(e, p, 0), &rq, 0);
	if (rc == GNN_OK)
		rc = run_failover(e, "save", NULL);
	free_replies(e, NULL);
	if (rc != GNN_OK) {
		remove_snap_files(e, dir);
		return rc;
	}
	snprintf(e->snap.dir, sizeof(e->snap.dir), "%s", dir);
	e->snap.gen = e->gen;
	e->snap.version = e->version;
	/* the biggest partition may hold most rows: all of them, at the least rate */
	e->snap.wait_s = tr_stores_timeout_ms(e->o.stores) * 4 / 1000.0 + bytes / SNAP_MIN_BYTES_PER_S;
	e->snap.state = SNAP_ASKED;
	return GNN_OK;
}

void tr_emb_expect(struct tr_emb *e, uint64_t gen)
{
	e->gen = gen;
	e->version = 0;
}

/* What INIT and JOIN set the stores up with. */
static struct gnn_emb_cfg init_cfg(const struct tr_emb *e)
{
	struct gnn_emb_cfg cfg = { .num_types = e->T, .optimizer = e->o.optimizer, .lr = e->o.lr, .beta1 = 0.9f,
				   .beta2 = 0.999f, .eps = e->o.optimizer == GNN_EMB_ADAM ? 1e-8f : 1e-10f,
				   .seed = e->o.seed, .hash = tr_emb_hash(e) };

	memcpy(cfg.dim, e->dim, sizeof(e->dim[0]) * e->T);
	return cfg;
}

int tr_emb_setup(struct tr_emb *e, uint64_t gen, const char *ckpt_dir)
{
	struct gnn_emb_req init = { .op = GNN_EMB_INIT, .gen = gen, .cfg = init_cfg(e) };
	double t0 = gnn_now();
	char desc[512];
	int rc;

	e->rank0 = true;
	if ((rc = wait_stores(e)) != GNN_OK)
		return rc;
	/* INIT fills every row from the seed: generous for a big shard */
	if ((rc = call_every_store(e, &init, "init", tr_stores_timeout_ms(e->o.stores) * 4, NULL)) != GNN_OK)
		return rc;
	for (uint32_t t = 0; ckpt_dir != NULL && t < e->T && rc == GNN_OK; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS && rc == GNN_OK; a++)
			if (has_array(e, a))
				rc = copy_array(e, t, a, ckpt_dir, false, gen, 0);
	if (rc != GNN_OK)
		return rc;
	tr_emb_expect(e, gen);
	tr_emb_describe(e, desc, sizeof(desc));
	GNN_INFO("embeddings_ready", "gen=%016" PRIx64 " version=%" PRIu64 " types=%s from=%s seconds=%.2f", gen,
		 e->version, desc, ckpt_dir != NULL ? ckpt_dir : "seed", gnn_now() - t0);
	return GNN_OK;
}

int tr_emb_check_ckpt(void *ctx, const char *cdir)
{
	struct tr_emb *e = ctx;

	for (uint32_t t = 0; t < e->T; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS; a++) {
			char path[4200];
			struct gnn_arr arr;
			int rc;

			if (!has_array(e, a))
				continue;
			shard_path(e, cdir, t, a, path, sizeof(path));
			if ((rc = gnn_arr_open(path, a == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32, GNN_ARR_VERIFY,
					       &arr)) != GNN_OK)
				return rc;
			if (arr.info.rows != (uint64_t)e->g->schema->types[t].num_nodes ||
			    arr.info.cols != array_cols(e, t, a)) {
				GNN_ERROR("bad_checkpoint", "file=%s rows=%" PRIu64 " cols=%" PRIu64 " expected_rows=%" PRId64
					  " expected_cols=%" PRIu32 " reason=\"the embedding shard does not fit the graph "
					  "and the --embed options\"", path, arr.info.rows, arr.info.cols,
					  e->g->schema->types[t].num_nodes, array_cols(e, t, a));
				gnn_arr_close(&arr);
				return GNN_EFORMAT;
			}
			gnn_arr_close(&arr);
		}
	return GNN_OK;
}

/* ---- checkpoints ---- */

int tr_emb_save(void *ctx, const char *dir)
{
	struct tr_emb *e = ctx;
	char abs[PATH_MAX];
	int rc = GNN_OK;

	/* the stores open the files by this rank's absolute path */
	if (!e->stream_saves && realpath(dir, abs) == NULL) {
		GNN_ERROR("checkpoint_failed", "path=%s error=\"realpath: %s\"", dir, strerror(errno));
		return GNN_EIO;
	}
	e->snap.state = SNAP_NONE;
	if (!e->stream_saves && (rc = save_direct(e, abs)) != GNN_ENOENT)
		return rc;
	if (!e->stream_saves)
		GNN_INFO("embeddings_save_streamed", "reason=\"a graph store cannot open the checkpoint folder %s (not "
			 "on its file system): the rows come through this trainer, which takes longer\"", abs);
	e->stream_saves = true;
	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS && rc == GNN_OK; a++)
			if (has_array(e, a))
				rc = copy_array(e, t, a, dir, true, e->gen, e->version);
	return rc;
}

/* Partition p's record from its file: GNN_OK, GNN_ENOENT (not whole:
 * not yet written, or being written), or an error (logged). Each
 * array's CRC into crc[t * GNN_EMB_ARRAYS + a]. */
static int parse_record(struct tr_emb *e, uint32_t p, int fd, const char *path, uint32_t *crc)
{
	uint8_t buf[GNN_EMB_SNAP_BYTES + 1];
	struct gnn_emb_snap r;
	uint32_t want = 0;
	ssize_t len = pread(fd, buf, sizeof(buf), 0);

	if (len <= 0 || gnn_emb_snap_decode(buf, (size_t)len, &r) != GNN_OK)
		return GNN_ENOENT;
	if (r.gen != e->snap.gen || r.version != e->snap.version || r.part != p) {
		GNN_ERROR("checkpoint_failed", "file=%s gen=%016" PRIx64 " version=%" PRIu64 " part=%" PRIu32
			  " reason=\"the record is of another snapshot than version %" PRIu64 "'s\"", path, r.gen,
			  r.version, r.part, e->snap.version);
		return GNN_EFORMAT;
	}
	for (uint32_t i = 0; i < r.n; i++) {
		const struct gnn_emb_snap_entry *x = &r.e[i];
		int64_t lo, hi;

		if (x->err != 0) {
			GNN_ERROR("checkpoint_failed", "part=%" PRIu32 " type=%" PRIu32 " array=%" PRIu32 " error=\"%s\" "
				  "reason=\"the graph store could not write its rows into the checkpoint\"", p, x->type,
				  x->array, strerror(x->err));
			return GNN_EIO;
		}
		if (x->type >= e->T || e->dim[x->type] == 0 || x->array >= GNN_EMB_ARRAYS || !has_array(e, x->array))
			break;
		gnn_layout_type_range(e->g, p, x->type, &lo, &hi);
		if (x->row != gnn_emb_file_row(e->g, p, x->type) || x->rows != (uint64_t)(hi - lo))
			break;
		crc[x->type * GNN_EMB_ARRAYS + x->array] = x->crc;
		want++;
	}
	for (uint32_t t = 0; t < e->T; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS; a++) {
			int64_t lo, hi;

			gnn_layout_type_range(e->g, p, t, &lo, &hi);
			want -= has_array(e, a) && hi > lo;
		}
	if (want != 0) {
		GNN_ERROR("checkpoint_failed", "file=%s entries=%" PRIu32 " reason=\"the record does not name this "
			  "partition's arrays and rows\"", path, r.n);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

/* Partition p's record, once whole (then the file is removed: no part
 * of the checkpoint): GNN_OK, GNN_ENOENT (not yet), or an error. The
 * store's writer holds a lock on the file until it exits (emb_snap.h):
 * a record that is not whole in a file nobody locks will never be. */
static int read_record(struct tr_emb *e, uint32_t p, uint32_t *crc)
{
	char path[PATH_MAX + 64];
	int fd, rc;

	if (gnn_emb_snap_file(path, sizeof(path), e->snap.dir, p) != GNN_OK ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		GNN_ERROR("checkpoint_failed", "file=%s error=\"%s\"", path, strerror(errno));
		return GNN_EIO;
	}
	if ((rc = parse_record(e, p, fd, path, crc)) == GNN_ENOENT && flock(fd, LOCK_SH | LOCK_NB) == 0 &&
	    (rc = parse_record(e, p, fd, path, crc)) == GNN_ENOENT) {   /* (again: it may have just finished) */
		GNN_ERROR("checkpoint_failed", "part=%" PRIu32 " file=%s reason=\"the graph store's writer of its rows "
			  "is gone before it finished (the store stopped or restarted)\"", p, path);
		rc = GNN_EUNAVAIL;
	}
	close(fd);
	if (rc == GNN_OK)
		unlink(path);
	return rc;
}

/* Every array's CRC over the partitions, in file row order, into its
 * header: the file is whole. crc is [P][T * GNN_EMB_ARRAYS]. */
static int seal_arrays(struct tr_emb *e, const uint32_t *crc)
{
	char path[PATH_MAX + 64];
	int rc = GNN_OK;

	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS && rc == GNN_OK; a++) {
			uint32_t cols = array_cols(e, t, a);
			uLong sum = crc32(0L, Z_NULL, 0);

			if (!has_array(e, a))
				continue;
			for (uint32_t p = 0; p < e->P; p++) {
				int64_t lo, hi;

				gnn_layout_type_range(e->g, p, t, &lo, &hi);
				if (hi > lo)
					sum = crc32_combine(sum, crc[(size_t)p * e->T * GNN_EMB_ARRAYS + t * GNN_EMB_ARRAYS + a],
							    (z_off_t)((uint64_t)(hi - lo) * cols * 4));
			}
			shard_path(e, e->snap.dir, t, a, path, sizeof(path));
			rc = gnn_arr_shared_seal(path, a == GNN_EMB_STEPS ? GNN_DT_I32 : GNN_DT_F32,
						 (uint64_t)e->g->schema->types[t].num_nodes, cols, (uint32_t)sum);
		}
	return rc;
}

/* How often the commit looks for the records, and logs that it waits. */
#define SNAP_POLL_MS 20
#define SNAP_LOG_S 10.0

int tr_emb_finish(void *ctx, const char *dir)
{
	struct tr_emb *e = ctx;
	double t0 = gnn_now(), logged = t0, give_up = t0 + e->snap.wait_s;
	uint32_t left = e->P, *crc = NULL;
	bool *done = NULL;
	int rc = GNN_OK;

	(void)dir;   /* e->snap.dir: the same folder, absolute */
	if (e->snap.state != SNAP_ASKED)
		return GNN_OK;
	e->snap.state = SNAP_NONE;
	if ((done = calloc(e->P, sizeof(*done))) == NULL ||
	    (crc = calloc((size_t)e->P * e->T * GNN_EMB_ARRAYS, sizeof(*crc))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	while (left > 0) {
		for (uint32_t p = 0; p < e->P && rc == GNN_OK; p++)
			if (!done[p] && (rc = read_record(e, p, crc + (size_t)p * e->T * GNN_EMB_ARRAYS)) == GNN_OK) {
				done[p] = true;
				left--;
			} else if (rc == GNN_ENOENT) {
				rc = GNN_OK;
			}
		if (rc != GNN_OK || left == 0)
			break;
		if (gnn_now() >= give_up) {
			GNN_ERROR("checkpoint_failed", "path=%s parts_left=%" PRIu32 " seconds=%.1f reason=\"graph stores "
				  "did not write their rows in time (a disk too slow, or a writer stuck)\"", e->snap.dir,
				  left, gnn_now() - t0);
			rc = GNN_ETIMEDOUT;
			break;
		}
		if (gnn_now() - logged >= SNAP_LOG_S) {
			logged = gnn_now();
			GNN_INFO("checkpoint_waiting", "path=%s parts_left=%" PRIu32 " seconds=%.1f reason=\"graph stores "
				 "are writing their embedding rows\"", e->snap.dir, left, logged - t0);
		}
		nanosleep(&(struct timespec){ 0, SNAP_POLL_MS * 1000000L }, NULL);
	}
	if (rc == GNN_OK)
		rc = seal_arrays(e, crc);
out:
	free(done);
	free(crc);
	return rc;
}

/* ---- replicas catching up ---- */

/* Rank 0, before its push of version v: each store out of step (and
 * due) whose partition has one in step gets a JOIN at v + 1. Every other
 * rank pushes v + 1 only after the all-reduce that follows this rank's
 * push of v, so the joining store receives all of update v + 1; it
 * serves nothing until finish_joins wrote the rows of v + 1 into it. */
static void start_joins(struct tr_emb *e)
{
	struct gnn_emb_req join = { .op = GNN_EMB_JOIN, .gen = e->gen, .step = e->version + 1, .cfg = init_cfg(e) };
	double now = gnn_now();
	int rc = GNN_OK;

	for (uint32_t s = 0; s < e->P * e->R && rc == GNN_OK; s++)
		if (e->st[s].state == REP_OUT && now >= e->st[s].retry_at &&
		    e->st[pick_store(e, s % e->P, 1ull << (s / e->P))].state == REP_IN)
			rc = put_call(e, s, &join, tr_stores_timeout_ms(e->o.stores) * 4);
	if (rc == GNN_OK && e->batch.n > 0)
		run_calls(e, "join", NULL);
	for (size_t i = 0; i < e->batch.n; i++) {
		struct emb_store *x = &e->st[e->cs[i]];

		if (!e->batch.done[i]) {
			x->retry_at = now + JOIN_RETRY_S;
			GNN_LOG_LIMITED(GNN_LOG_INFO, "embeddings_join_failed", "store=%s reason=\"%s\"",
					store_name(e, e->cs[i]), e->batch.call[i].err[0] ? e->batch.call[i].err
										    : gnn_strerror(e->batch.call[i].rc));
			continue;
		}
		x->state = REP_JOINING;
		x->join_version = join.step;
		GNN_INFO("embeddings_replica_joining", "store=%s version=%" PRIu64, store_name(e, e->cs[i]), join.step);
	}
	free_replies(e, NULL);
}

/* Rows [v, v + n) of array a of type t: READ from a store in step of
 * partition p, then WRITE into store x at the version rank 0 expects. */
static int copy_chunk(struct tr_emb *e, uint32_t p, uint32_t x, uint32_t t, uint32_t a, int64_t v, uint32_t n)
{
	struct gnn_emb_req rq = { .op = GNN_EMB_READ, .node_type = t, .array = a, .gen = e->gen, .step = e->version,
				  .first = v, .n = n };
	struct gnn_emb_resp resp = { 0 };
	int rc;

	if ((rc = put_call(e, pick_store(e, p, 1ull << (x / e->P)), &rq, 0)) == GNN_OK &&
	    (rc = run_failover(e, "read", &resp)) == GNN_OK) {
		struct gnn_emb_req wq = { .op = GNN_EMB_WRITE, .node_type = t, .array = a, .gen = e->gen,
					  .step = e->version, .first = v, .n = n, .dim = array_cols(e, t, a),
					  .data = resp.data };

		/* (the WRITE is encoded, the rows copied, when it is put) */
		if (resp.n != n || resp.dim != wq.dim)
			rc = GNN_EPROTO;
		else if ((rc = put_call(e, x, &wq, 0)) == GNN_OK)
			rc = run_calls(e, "write", NULL);
	}
	gnn_proto_release(resp.owned);
	free_replies(e, NULL);
	return rc;
}

/* Store x's rows and state, every array of every embedded type, copied
 * from the others of its partition, then READY. */
static int copy_store(struct tr_emb *e, uint32_t x, double *rows)
{
	uint32_t p = x % e->P;
	int rc = GNN_OK;

	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++)
		for (uint32_t a = 0; e->dim[t] > 0 && a < GNN_EMB_ARRAYS && rc == GNN_OK; a++) {
			uint32_t chunk = CHUNK_BYTES / (array_cols(e, t, a) * 4);
			int64_t lo, hi;

			if (!has_array(e, a))
				continue;
			gnn_layout_type_range(e->g, p, t, &lo, &hi);
			for (int64_t v = lo, n; v < hi && rc == GNN_OK; v += n) {
				n = hi - v < (int64_t)chunk ? hi - v : (int64_t)chunk;
				rc = copy_chunk(e, p, x, t, a, v, (uint32_t)n);
			}
			*rows += (double)(hi - lo);
		}
	if (rc == GNN_OK) {
		struct gnn_emb_req ready = { .op = GNN_EMB_READY, .gen = e->gen };

		if ((rc = put_call(e, x, &ready, 0)) == GNN_OK)
			rc = run_calls(e, "ready", NULL);
		free_replies(e, NULL);
	}
	return rc;
}

/* Rank 0, at the version its JOINs named (the all-reduce after its push
 * returned: every store in step is there, and stays until its next
 * push): each joining store gets its rows, and is in step again. */
static void finish_joins(struct tr_emb *e)
{
	for (uint32_t x = 0; x < e->P * e->R; x++) {
		double t0 = gnn_now(), rows = 0;
		int rc;

		if (e->st[x].state != REP_JOINING)
			continue;
		if (e->st[x].join_version != e->version) {
			set_out(e, x, "its JOIN was for another version");
			continue;
		}
		if ((rc = copy_store(e, x, &rows)) != GNN_OK) {
			set_out(e, x, gnn_strerror(rc));
			continue;
		}
		e->st[x].state = REP_IN;
		GNN_INFO("embeddings_replica_in", "store=%s version=%" PRIu64 " rows=%.0f seconds=%.2f reason=\"caught "
			 "up from a replica: in step again\"", store_name(e, x), e->version, rows, gnn_now() - t0);
	}
}

/* ---- steps ---- */

/* Grows *p to n items of size bytes (keeping nothing). */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;

	if (n <= *cap)
		return GNN_OK;
	n = n < 1024 ? 1024 : n + n / 2;
	if ((q = realloc(*p, n * size)) == NULL)
		return GNN_ENOMEM;
	*p = q;
	*cap = n;
	return GNN_OK;
}

/* Type t's input nodes of mb into b, and their order grouped by partition. */
static int index_type(struct tr_emb *e, struct emb_mb *b, const struct gnn_minibatch *mb, uint32_t t)
{
	const struct gnn_block *b0 = &mb->blocks[0];
	uint32_t n = mb->type_rows[t], k = 0, *ps = b->m[t].pstart;
	size_t cap = n < 1024 ? 1024 : n + n / 2;

	/* the four index arrays share one capacity */
	if (n > b->m[t].cap) {
		void *src = realloc(b->m[t].src, cap * sizeof(int32_t)), *perm, *ids, *pid;

		if (src != NULL)
			b->m[t].src = src;
		perm = src == NULL ? NULL : realloc(b->m[t].perm, cap * sizeof(int32_t));
		if (perm != NULL)
			b->m[t].perm = perm;
		ids = perm == NULL ? NULL : realloc(b->m[t].ids, cap * sizeof(int64_t));
		if (ids != NULL)
			b->m[t].ids = ids;
		pid = ids == NULL ? NULL : realloc(b->m[t].pid, cap * sizeof(int64_t));
		if (pid == NULL)
			return GNN_ENOMEM;
		b->m[t].pid = pid;
		b->m[t].cap = cap;
	}
	b->m[t].n = n;
	memset(ps, 0, (e->P + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < b0->num_src && k < n; i++)
		if ((e->T > 1 ? mb->src_types[i] : 0) == t) {
			int32_t p = gnn_layout_owner(e->g, b0->src_ids[i]);

			if (p < 0)
				return GNN_EPROTO;
			b->m[t].src[k] = (int32_t)i;
			b->m[t].ids[k++] = b0->src_ids[i];
			ps[p + 1]++;
		}
	memset(b->at, 0, e->P * sizeof(uint32_t));
	for (uint32_t p = 0; p < e->P; p++)
		ps[p + 1] += ps[p];
	for (uint32_t j = 0; j < n; j++) {
		uint32_t p = (uint32_t)gnn_layout_owner(e->g, b->m[t].ids[j]), q = ps[p] + b->at[p]++;

		b->m[t].perm[q] = (int32_t)j;
		b->m[t].pid[q] = b->m[t].ids[j];
	}
	return GNN_OK;
}

/* The sampler's rows of embedded type t must be the type's features:
 * tr_model_check sees the assembled ones only (logged unless quiet). */
static int check_features(const struct tr_emb *e, const struct gnn_minibatch *mb, uint32_t t, bool quiet)
{
	if (mb->feat_dims[t] == e->g->schema->types[t].feat_dim)
		return GNN_OK;
	if (!quiet)
		GNN_ERROR("bad_minibatch", "type=%s feat_dim=%" PRIu32 " expected=%" PRIu32 " reason=\"the sampler's "
			  "feature rows are not the type's\"", e->g->schema->types[t].name, mb->feat_dims[t],
			  e->g->schema->types[t].feat_dim);
	return GNN_EPROTO;
}

/* Type t's input rows of mb into b, as the model reads them: its features
 * (when the embedding is concatenated to them), then the embedding rows
 * pulled, rs[*i] on (one answer per partition holding some, *i advanced).
 * mb itself is left as it is (bind_type). *rows and *bytes count what was
 * pulled. */
static int fill_type(struct tr_emb *e, struct emb_mb *b, const struct gnn_minibatch *mb, uint32_t t,
		     const struct gnn_emb_resp *rs, uint32_t *i, double *rows, double *bytes)
{
	uint32_t n = b->m[t].n, w = e->width[t], f = w - e->dim[t];
	const float *feat = mb->feat[t];
	int rc;

	if ((rc = grow((void **)&b->m[t].rows, &b->m[t].rows_cap, (size_t)n * w + 1, sizeof(float))) != GNN_OK)
		return rc;
	for (uint32_t k = 0; feat != NULL && !e->o.replace && k < n; k++)
		memcpy(b->m[t].rows + (size_t)k * w, feat + (size_t)k * f, f * sizeof(float));
	for (uint32_t p = 0; p < e->P; p++) {
		uint32_t lo = b->m[t].pstart[p], hi = b->m[t].pstart[p + 1];
		const float *src;

		if (hi == lo)
			continue;
		if (rs[*i].n != hi - lo || rs[*i].dim != e->dim[t])
			return GNN_EPROTO;
		src = rs[(*i)++].data;
		for (uint32_t q = lo; q < hi; q++)
			memcpy(b->m[t].rows + (size_t)b->m[t].perm[q] * w + e->col[t],
			       src + (size_t)(q - lo) * e->dim[t], e->dim[t] * sizeof(float));
	}
	*rows += n;
	*bytes += (double)n * e->dim[t] * 4;
	return GNN_OK;
}

/* mb's embedded types read b's rows. */
static void bind_rows(const struct tr_emb *e, const struct emb_mb *b, struct gnn_minibatch *mb)
{
	for (uint32_t t = 0; t < e->T; t++)
		if (e->dim[t] > 0) {
			mb->feat[t] = b->m[t].rows;
			mb->feat_dims[t] = e->width[t];
			mb->feat_dtype = GNN_DT_F32;
		}
}

/* b indexed for mb, and one PULL of array at (gen, version) per store
 * and type holding some: into e->batch (put_call: the training thread's,
 * with failover) or, with mc, into mc, to each partition's one store (the
 * prefetch's; quiet). */
static int put_pulls(struct tr_emb *e, struct emb_mb *b, const struct gnn_minibatch *mb, uint32_t array,
		     uint64_t gen, uint64_t version, struct gnn_multicall *mc)
{
	int rc = GNN_OK;

	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++) {
		if (e->dim[t] == 0)
			continue;
		if ((rc = check_features(e, mb, t, mc != NULL)) != GNN_OK || (rc = index_type(e, b, mb, t)) != GNN_OK)
			break;
		for (uint32_t p = 0; p < e->P && rc == GNN_OK; p++) {
			uint32_t lo = b->m[t].pstart[p], hi = b->m[t].pstart[p + 1];
			struct gnn_emb_req rq = { .op = GNN_EMB_PULL, .node_type = t, .array = array, .gen = gen,
						  .step = version, .n = hi - lo, .ids = b->m[t].pid + lo };
			struct gnn_wbuf *w;

			if (hi == lo)
				continue;
			if (mc == NULL) {
				rc = put_call(e, pick_store(e, p, 0), &rq, 0);
				continue;
			}
			/* one short attempt, over at once when the connection goes:
			 * a failed prefetch costs only the full pull, while the step
			 * that joins it would wait out --timeout-ms x attempts */
			if ((rc = gnn_multicall_add(mc, tr_stores_client(e->o.stores, p),
						    tr_stores_rows_timeout_ms(e->o.stores, (double)rq.n * e->dim[t] * 4, 0),
						    &w)) != GNN_OK)
				break;
			mc->call[mc->n - 1].failover = true;
			rc = gnn_encode_emb_req(w, ++e->req_id, &rq);
		}
	}
	return rc;
}

/* Every embedded type's rows of mb into b from the answers rs (fill_type). */
static int fill_rows(struct tr_emb *e, struct emb_mb *b, const struct gnn_minibatch *mb,
		     const struct gnn_emb_resp *rs, double *rows, double *bytes)
{
	int rc = GNN_OK;

	for (uint32_t t = 0, i = 0; t < e->T && rc == GNN_OK; t++)
		if (e->dim[t] > 0)
			rc = fill_type(e, b, mb, t, rs, &i, rows, bytes);
	return rc;
}

/* mb's rows of array at the version e expects into b, from the stores,
 * through failover (the step waits). */
static int pull_rows(struct tr_emb *e, struct emb_mb *b, const struct gnn_minibatch *mb, uint32_t array,
		     double *rows, double *bytes)
{
	struct gnn_emb_resp *rs;
	int rc;

	if ((rs = calloc((size_t)e->T * e->P, sizeof(*rs))) == NULL)
		return GNN_ENOMEM;
	if ((rc = put_pulls(e, b, mb, array, e->gen, e->version, NULL)) == GNN_OK)
		rc = run_failover(e, "pull", rs);
	if (rc == GNN_OK)
		rc = fill_rows(e, b, mb, rs, rows, bytes);
	free_replies(e, rs);
	free(rs);
	return rc;
}

/* ---- the next minibatch's rows, beside the step ---- */

/* The prefetch thread: e->pf.mb's rows at e->pf.version into e->next,
 * one PULL per store and type, on its own calls (one store per
 * partition, one short attempt each: no failover; a failure is left to
 * the full pull that follows it, which logs it). */
static void *prefetch_main(void *arg)
{
	struct tr_emb *e = arg;
	const struct gnn_minibatch *mb = e->pf.mb;
	struct gnn_multicall *mc = &e->pf.batch;
	struct emb_mb *b = e->next;
	struct gnn_emb_resp *rs;
	double t0 = gnn_now(), rows = 0, bytes = 0;
	int rc;

	if ((rs = calloc((size_t)e->T * e->P, sizeof(*rs))) == NULL) {
		e->pf.rc = GNN_ENOMEM;
		return NULL;
	}
	if ((rc = put_pulls(e, b, mb, GNN_EMB_ROWS, e->pf.gen, e->pf.version, mc)) == GNN_OK)
		rc = gnn_multicall_run(mc, take_emb, &(struct emb_run){ .e = e, .what = "prefetch", .resp = rs,
									.quiet = true });
	if (rc == GNN_OK)
		rc = fill_rows(e, b, mb, rs, &rows, &bytes);
	for (size_t i = 0; i < mc->n; i++)
		gnn_proto_release(rs[i].owned);
	gnn_multicall_clear(mc);
	free(rs);
	if (rc == GNN_OK) {
		gnn_counter_add(e->rows[OP_PREFETCH], rows);
		gnn_counter_add(e->bytes[OP_PREFETCH], bytes);
	}
	gnn_counter_add(e->seconds[OP_PREFETCH], gnn_now() - t0);
	e->pf.rc = rc;
	return NULL;
}

int tr_emb_prefetch(struct tr_emb *e, const struct gnn_minibatch *mb)
{
	tr_emb_prefetch_drop(e);
	/* with replicas a pull may go on to another store, which the
	 * training thread's failover state decides: not from here */
	if (!e->o.prefetch || e->R > 1 || e->o.stores == NULL)
		return GNN_OK;
	e->pf.mb = mb;
	e->pf.gen = e->gen;
	e->pf.version = e->version;
	e->pf.rc = GNN_OK;
	if (pthread_create(&e->pf.thread, NULL, prefetch_main, e) != 0)
		return GNN_ENOMEM;
	e->pf.state = PF_PULLING;
	return GNN_OK;
}

/* Waits for the prefetch thread, if one runs: its rows stay. */
static void prefetch_join(struct tr_emb *e)
{
	if (e->pf.state != PF_PULLING)
		return;
	pthread_join(e->pf.thread, NULL);
	e->pf.state = PF_PULLED;
}

void tr_emb_prefetch_drop(struct tr_emb *e)
{
	prefetch_join(e);
	e->pf.state = PF_IDLE;
	e->pf.mb = NULL;
}

/* The prefetched rows of e->cur brought from e->pf.version to e->version:
 * one DELTA per store and type holding some, and the rows it answers
 * written over theirs. */
static int refresh_rows(struct tr_emb *e, double *rows, double *bytes)
{
	struct emb_mb *b = e->cur;
	struct gnn_emb_resp *rs;
	int rc = GNN_OK;

	if (e->version == e->pf.version)
		return GNN_OK;
	if ((rs = calloc((size_t)e->T * e->P, sizeof(*rs))) == NULL)
		return GNN_ENOMEM;
	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++)
		for (uint32_t p = 0; e->dim[t] > 0 && p < e->P && rc == GNN_OK; p++) {
			uint32_t lo = b->m[t].pstart[p], hi = b->m[t].pstart[p + 1];
			struct gnn_emb_req rq = { .op = GNN_EMB_DELTA, .node_type = t, .gen = e->gen, .step = e->version,
						  .first = (int64_t)e->pf.version, .n = hi - lo,
						  .ids = b->m[t].pid + lo };

			if (hi > lo)
				rc = put_call(e, p, &rq, 0);
		}
	if (rc == GNN_OK)
		rc = run_failover(e, "refresh", rs);
	for (uint32_t t = 0, i = 0; t < e->T && rc == GNN_OK; t++)
		for (uint32_t p = 0; e->dim[t] > 0 && p < e->P && rc == GNN_OK; p++) {
			uint32_t lo = b->m[t].pstart[p], hi = b->m[t].pstart[p + 1], d = e->dim[t], w = e->width[t];
			const struct gnn_emb_resp *r = &rs[i];
			const uint32_t *src = r->data;

			if (hi == lo)
				continue;
			i++;
			if (r->n > hi - lo || (r->n > 0 && r->dim != d + 1)) {
				rc = GNN_EPROTO;
				break;
			}
			for (uint32_t k = 0; k < r->n; k++, src += d + 1) {
				if (src[0] >= hi - lo) {
					rc = GNN_EPROTO;
					break;
				}
				memcpy(b->m[t].rows + (size_t)b->m[t].perm[lo + src[0]] * w + e->col[t], src + 1,
				       d * sizeof(float));
			}
			*rows += r->n;
			*bytes += (double)r->n * (d + 1) * 4;
		}
	free_replies(e, rs);
	free(rs);
	return rc;
}

/* The prefetched rows are mb's, of this generation, of the rows (not the
 * best rows) and of no later version than the stores'. */
static bool prefetched(struct tr_emb *e, const struct gnn_minibatch *mb, uint32_t array)
{
	bool ok;

	prefetch_join(e);
	ok = e->pf.state == PF_PULLED && e->pf.mb == mb && e->pf.rc == GNN_OK && array == GNN_EMB_ROWS &&
	     e->pf.gen == e->gen && e->pf.version <= e->version;
	if (e->pf.state == PF_PULLED && e->pf.mb == mb && e->pf.rc != GNN_OK && e->pf.rc != GNN_ECLOSED)
		GNN_INFO("embeddings_prefetch_failed", "code=%s note=\"the rows are pulled again\"",
			 gnn_errname(e->pf.rc));
	return ok;
}

int tr_emb_attach(struct tr_emb *e, struct gnn_minibatch *mb, uint32_t array)
{
	double t0 = gnn_now(), bytes = 0, rows = 0;
	int rc, op = OP_PULL;

	if (e->rank0 && e->R > 1)
		finish_joins(e);
	if (prefetched(e, mb, array)) {
		struct emb_mb *b = e->cur;

		e->cur = e->next;
		e->next = b;
		op = OP_REFRESH;
		rc = refresh_rows(e, &rows, &bytes);
	} else {
		rc = pull_rows(e, e->cur, mb, array, &rows, &bytes);
	}
	tr_emb_prefetch_drop(e);
	if (rc == GNN_OK)
		bind_rows(e, e->cur, mb);
	gnn_counter_add(e->rows[op], rows);
	gnn_counter_add(e->bytes[op], bytes);
	gnn_counter_add(e->seconds[op], gnn_now() - t0);
	return rc;
}

int tr_emb_push(struct tr_emb *e, const float *dh, size_t ld, uint32_t rank, uint32_t world)
{
	const struct emb_mb *b = e->cur;
	double t0 = gnn_now(), rows = 0;
	float *g = NULL;
	size_t gcap = 0;
	int rc = GNN_OK;

	/* the update must not overtake the next minibatch's pull: that is
	 * of this version */
	prefetch_join(e);
	e->rank0 = rank == 0;
	if (e->rank0 && e->R > 1)
		start_joins(e);

	for (uint32_t t = 0; t < e->T && rc == GNN_OK; t++) {
		uint32_t d = e->dim[t];

		if (d == 0)
			continue;
		if ((rc = grow((void **)&g, &gcap, (size_t)b->m[t].n * d + 1, sizeof(float))) != GNN_OK)
			break;
		/* the gradient rows in pull order (grouped by partition) */
		for (uint32_t q = 0; q < b->m[t].n; q++)
			memcpy(g + (size_t)q * d, dh + (size_t)b->m[t].src[b->m[t].perm[q]] * ld + e->col[t],
			       d * sizeof(float));
		for (uint32_t s = 0; s < e->P * e->R && rc == GNN_OK; s++) {
			uint32_t p = s % e->P, lo = b->m[t].pstart[p], hi = b->m[t].pstart[p + 1];
			struct gnn_emb_req rq = { .op = GNN_EMB_PUSH, .node_type = t, .rank = rank, .world = world,
						  .gen = e->gen, .step = e->version, .n = hi - lo, .dim = d,
						  .ids = b->m[t].pid + lo, .data = g + (size_t)lo * d };

			rc = put_call(e, s, &rq, 0);
		}
		rows += b->m[t].n;
		gnn_counter_add(e->bytes[OP_PUSH], (double)b->m[t].n * d * 4);
	}
	free(g);
	if (rc == GNN_OK)
		rc = run_all(e, "push", NULL);
	free_replies(e, NULL);
	e->version++;
	gnn_counter_add(e->rows[OP_PUSH], rows);
	gnn_counter_add(e->seconds[OP_PUSH], gnn_now() - t0);
	return rc;
}

int tr_emb_best(struct tr_emb *e)
{
	struct gnn_emb_req rq = { .op = GNN_EMB_BEST, .gen = e->gen };

	return call_every_store(e, &rq, "best", 0, NULL);
}

/* ---- offline: inference ---- */

uint32_t tr_emb_dim(const struct tr_emb *e, uint32_t t)
{
	return t < e->T ? e->dim[t] : 0;
}

int tr_emb_map_best(struct tr_emb *e, const char *cdir)
{
	int rc;

	if ((rc = tr_emb_check_ckpt(e, cdir)) != GNN_OK)
		return rc;
	if ((e->first = calloc((size_t)e->P * e->T, sizeof(int64_t))) == NULL)
		return GNN_ENOMEM;
	for (uint32_t t = 0; t < e->T; t++) {
		char path[4200];

		if (e->dim[t] == 0)
			continue;
		for (uint32_t p = 0; p < e->P; p++)
			e->first[(size_t)p * e->T + t] = (int64_t)gnn_emb_file_row(e->g, p, t);
		shard_path(e, cdir, t, GNN_EMB_BEST_ROWS, path, sizeof(path));
		if ((rc = gnn_arr_open(path, GNN_DT_F32, 0, &e->best[t])) != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

const float *tr_emb_best_row(const struct tr_emb *e, uint32_t t, int64_t gid)
{
	uint32_t p = (uint32_t)gnn_layout_owner(e->g, gid);
	int64_t lo, hi;

	gnn_layout_type_range(e->g, p, t, &lo, &hi);
	return (const float *)e->best[t].data + (size_t)(e->first[(size_t)p * e->T + t] + gid - lo) * e->dim[t];
}

void tr_emb_input_row(const struct tr_emb *e, uint32_t t, int64_t gid, const float *feat, float *out)
{
	if (feat != NULL && !e->o.replace)
		memmove(out, feat, (e->width[t] - e->dim[t]) * sizeof(float));
	memcpy(out + e->col[t], tr_emb_best_row(e, t, gid), e->dim[t] * sizeof(float));
}
