#include "store_backend.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "dtype.h"
#include "client.h"
#include "err.h"
#include "multicall.h"
#include "replica.h"
#include "http.h"
#include "log.h"
#include "storeid.h"
#include "sys.h"

/* A store's state as the last INFO saw it. */
enum { ST_WAITING, ST_UP, ST_DOWN, ST_CHANGED };

struct store {
	char name[32];                /* "graphstore-<i>" */
	char *url;
	struct gnn_client *data;      /* minibatch calls: timeout and retries */
	struct gnn_client *check;     /* INFO probes: short timeout, no retry */
	atomic_int state;
	_Atomic double down_since;    /* written by the check thread */
	struct gnn_info info;         /* from its first INFO (its layout an owned copy, gnn_layout_dup) */
	bool answered;
	uint32_t replica;             /* its rank among its partition's stores (check_layout) */
	struct gnn_replica rep;       /* its calls in flight, and whether to avoid it (replica.h) */
	struct gnn_counter *requests, *errors, *retries, *failovers;
	struct gnn_gauge *up;
	/* Another connection to the store, never used for calls: its closing
	 * is how a restart of the store's process shows at once, even when no
	 * call is in flight (the INFO check only looks every interval). */
	nng_socket watch;
	nng_dialer watch_dialer;
	bool watch_open;
	atomic_uint watch_pipe;       /* 0: not connected */
	_Atomic double watch_down_since;
	/* Answers from the store are used only while verified == suspect:
	 * every sign that its process may have been replaced (the watch
	 * connection closed, a call found no connection or was retried, the
	 * check found it down) bumps suspect, and an INFO through the data
	 * client showing the same graph sets verified to it. */
	atomic_uint suspect, verified;
};

struct smp_stores {
	struct store *st;
	size_t n;
	int check_interval_ms, check_timeout_ms, timeout_ms, retries, replica_timeout_ms;
	double min_bytes_per_s;
	double down_grace_s;
	struct gnn_layout layout;
	/* Partition p's stores (its replicas): rep[rep_first[p] .. rep_first[p+1]) */
	uint32_t *rep_first, *rep;
	atomic_uint next_pick;        /* rotates the choice among equally good replicas */
	atomic_bool connected;
	atomic_uint_fast64_t next_req_id;
	double changed_exit_s;        /* for the texts only: main exits */
	/* Latched when a store is found serving another graph: every request
	 * is refused from then on. changing: the one thread that writes the
	 * texts and changed_at, then sets changed. */
	atomic_bool changing, changed;
	double changed_at;
	char changed_text[512];       /* error replies */
	char changed_ready[GNN_HTTP_REASON_MAX]; /* /readyz */
	struct gnn_gauge *ready_gauge;
	pthread_t thread;
	bool thread_started, stopping;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* publish_up's count and set, one thread at a time: a count taken
	 * before another thread's store came up, set after that thread's
	 * own, left the gauge one short until the next check round */
	pthread_mutex_t publish;
};

/* Follows the watch connection; each one that closes is a sign that the
 * store's process went away (a pipe that failed before ADD_POST gets a
 * REM_POST too: one sign more, which costs one INFO). */
static void watch_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct store *st = arg;
	unsigned id = (unsigned)nng_pipe_id(p);

	if (ev == NNG_PIPE_EV_ADD_POST) {
		atomic_store(&st->watch_pipe, id);
		return;
	}
	if (atomic_compare_exchange_strong(&st->watch_pipe, &id, 0u))
		atomic_store(&st->watch_down_since, gnn_now());
	atomic_fetch_add(&st->suspect, 1);
}

static int watch_open(struct store *st)
{
	if (nng_req0_open(&st->watch) != 0)
		return GNN_ENOMEM;
	st->watch_open = true;
	nng_socket_set_ms(st->watch, NNG_OPT_RECONNMINT, 100);
	nng_socket_set_ms(st->watch, NNG_OPT_RECONNMAXT, 2000);
	atomic_store(&st->watch_down_since, gnn_now());
	if (nng_pipe_notify(st->watch, NNG_PIPE_EV_ADD_POST, watch_cb, st) != 0 ||
	    nng_pipe_notify(st->watch, NNG_PIPE_EV_REM_POST, watch_cb, st) != 0 ||
	    gnn_tls_dial(st->watch, st->url, gnn_tls_data_plane(), NULL, &st->watch_dialer, NNG_FLAG_NONBLOCK) != 0)
		return GNN_EINVAL;
	return GNN_OK;
}

/* A watch connection stuck dialling a vanished address (a deleted pod's
 * IP) would miss the next restart: dial the name again, as the clients do. */
static void watch_redial_if_stuck(struct store *st)
{
	if (atomic_load(&st->watch_pipe) != 0 ||
	    gnn_now() - atomic_load(&st->watch_down_since) < GNN_REDIAL_AFTER_S)
		return;
	if (gnn_redial(st->watch, st->url, gnn_tls_data_plane(), NULL, &st->watch_dialer) != GNN_OK)
		GNN_WARN("redial_failed", "peer=%s url=%s what=watch", st->name, st->url);
	atomic_store(&st->watch_down_since, gnn_now());
}

static int register_metrics(struct smp_stores *s, struct gnn_metrics *reg)
{
	static const char *const label[] = { "graphstore" };
	struct gnn_counter *req, *err, *retry, *fail;
	struct gnn_gauge *up;
	int rc;

	if ((rc = gnn_metrics_counter(reg, "gnn_sampler_graphstore_requests_total",
				      "Calls to a graph store (SAMPLE, FEAT, LABEL, NODES), by store", label, 1, &req)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_sampler_graphstore_errors_total",
				      "Calls to a graph store that failed after their retries or got an error reply",
				      label, 1, &err)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_sampler_graphstore_retries_total",
				      "Extra attempts of calls to a graph store after a timeout", label, 1, &retry)) ||
	    (rc = gnn_metrics_counter(reg, "gnn_sampler_graphstore_failovers_total",
				      "Calls sent on to another replica of the store's partition after this store "
				      "timed out or lost its connection", label, 1, &fail)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_sampler_graphstore_up",
				    "1 while the store answers (its last INFO check, or a verified data answer "
				    "since), by store", label, 1, &up)) ||
	    (rc = gnn_metrics_gauge(reg, "gnn_sampler_graphstores_ready",
				    "Graph stores up: they answered their last INFO check, or a verified data answer since", NULL, 0, &s->ready_gauge)))
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		const char *name = s->st[i].name;

		if ((rc = gnn_counter_labels(req, &name, 1, &s->st[i].requests)) ||
		    (rc = gnn_counter_labels(err, &name, 1, &s->st[i].errors)) ||
		    (rc = gnn_counter_labels(retry, &name, 1, &s->st[i].retries)) ||
		    (rc = gnn_counter_labels(fail, &name, 1, &s->st[i].failovers)) ||
		    (rc = gnn_gauge_labels(up, &name, 1, &s->st[i].up)))
			return rc;
	}
	return GNN_OK;
}

/* Store i of o's list: its clients (dialling in the background) and its
 * watch connection. */
static int store_open(struct store *st, size_t i, const struct smp_stores_opts *o)
{
	struct gnn_client_opts data = { .name = st->name, .timeout_ms = o->timeout_ms, .retries = o->retries };
	struct gnn_client_opts check = { .name = st->name, .timeout_ms = o->check_timeout_ms, .retries = 0 };
	int rc;

	snprintf(st->name, sizeof(st->name), "graphstore-%zu", i);
	atomic_init(&st->state, ST_WAITING);
	/* The data connection is not the one the first INFO came over: its
	 * first answers are verified too. */
	atomic_init(&st->suspect, 1);
	atomic_init(&st->verified, 0);
	atomic_init(&st->watch_pipe, 0);
	if ((st->url = strdup(o->urls[i])) == NULL)
		return GNN_ENOMEM;
	data.url = check.url = st->url;
	if ((rc = gnn_client_open(&data, &st->data)) != GNN_OK ||
	    (rc = gnn_client_open(&check, &st->check)) != GNN_OK) {
		GNN_ERROR("bad_config", "store=%s url=%s reason=\"cannot dial this URL\"", st->name, st->url);
		return rc;
	}
	return watch_open(st);
}

int smp_stores_open(const struct smp_stores_opts *o, struct smp_stores **out)
{
	struct smp_stores *s;
	int rc = GNN_ENOMEM;

	if (o->n == 0 || o->n > GNN_PROTO_MAX_PARTS || o->timeout_ms <= 0 || o->retries < 0 ||
	    o->check_interval_ms <= 0 || o->check_timeout_ms <= 0 || o->metrics == NULL)
		return GNN_EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return GNN_ENOMEM;
	s->st = calloc(o->n, sizeof(*s->st));
	if (s->st == NULL) {
		free(s);
		return GNN_ENOMEM;
	}
	s->n = o->n;
	s->check_interval_ms = o->check_interval_ms;
	s->check_timeout_ms = o->check_timeout_ms;
	s->timeout_ms = o->timeout_ms;
	s->retries = o->retries;
	s->replica_timeout_ms = o->replica_timeout_ms > 0 ? o->replica_timeout_ms : o->timeout_ms;
	s->min_bytes_per_s = o->min_bytes_per_s;
	s->down_grace_s = o->down_grace_s;
	s->changed_exit_s = o->changed_exit_s;
	atomic_init(&s->connected, false);
	atomic_init(&s->changing, false);
	atomic_init(&s->changed, false);
	atomic_init(&s->next_req_id, 1);
	if (gnn_sync_init(&s->mu, &s->cv) != GNN_OK) {
		free(s->st);
		free(s);
		return GNN_ENOMEM;
	}
	if (pthread_mutex_init(&s->publish, NULL) != 0) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s->st);
		free(s);
		return GNN_ENOMEM;
	}
	for (size_t i = 0; i < o->n; i++)
		if ((rc = store_open(&s->st[i], i, o)) != GNN_OK)
			goto out_fail;
	if ((rc = register_metrics(s, o->metrics)) != GNN_OK)
		goto out_fail;
	*out = s;
	return GNN_OK;

out_fail:
	smp_stores_close(s);
	return rc;
}

void smp_stores_abort(struct smp_stores *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		gnn_client_abort(s->st[i].data);
		gnn_client_abort(s->st[i].check);
	}
}

void smp_stores_close(struct smp_stores *s)
{
	if (s == NULL)
		return;
	if (s->thread_started) {
		pthread_mutex_lock(&s->mu);
		s->stopping = true;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	for (size_t i = 0; i < s->n; i++) {
		gnn_client_close(s->st[i].data);
		gnn_client_close(s->st[i].check);
		/* stuck in nng: the stores stay, watch_cb may still use them */
		if (s->st[i].watch_open && !gnn_close_bounded(&s->st[i].watch, 1, gnn_close_limit(), s->st[i].name))
			return;
		free(s->st[i].url);
		if (s->st[i].answered)
			gnn_layout_free(&s->st[i].info.layout);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->publish);
	free(s->st);
	free(s->rep_first);
	free(s->rep);
	free(s);
}

const struct gnn_layout *smp_stores_layout(const struct smp_stores *s)
{
	return &s->layout;
}

/* ---- INFO probes ---- */

/* One INFO answer; with own, info.layout is a copy it owns (gnn_layout_dup). */
struct probe {
	int rc;
	char err[256];
	struct gnn_info info;
	bool own;
};

/* One INFO probe's answers: res[store[k]] is call k's. */
struct probe_run {
	struct probe *res;
	const size_t *store;
};

/* An INFO answer into its probe, the layout copied (gnn_multicall_answer_fn). */
static int take_info(void *ctx, size_t k, struct gnn_call *c)
{
	const struct probe_run *pr = ctx;
	struct probe *r = &pr->res[pr->store[k]];
	struct gnn_layout copy;
	const void *payload;
	size_t len;

	if (c->req->failed)
		return GNN_ENOMEM;  /* never sent: r says so already */
	r->rc = c->rc;
	snprintf(r->err, sizeof(r->err), "%s", c->err);
	if (r->rc != GNN_OK)
		return r->rc;
	if ((r->rc = gnn_reply_payload(c->reply, GNN_MSG_INFO_RESP, &payload, &len)) != GNN_OK ||
	    (r->rc = gnn_decode_info_resp(payload, len, &r->info)) != GNN_OK) {
		snprintf(r->err, sizeof(r->err), "malformed INFO answer (%s)", gnn_errname(r->rc));
		return r->rc;
	}
	if ((r->rc = gnn_layout_dup(&r->info.layout, &copy)) == GNN_OK) {
		r->info.layout = copy;
		r->own = true;
	}
	gnn_proto_release(r->info.owned);
	r->info.owned = NULL;
	return r->rc;
}

static bool replicated(const struct smp_stores *s, const struct store *st);
static int replica_timeout_ms(struct smp_stores *s, uint32_t part);

/* The connection an INFO probe goes over. */
enum probe_via {
	VIA_CHECK,      /* the check client: the check's timeout, no retry */
	VIA_DATA,       /* the data client, as its calls (a replica: one short attempt) */
	VIA_DATA_ONCE,  /* the data client, one attempt of the check's timeout */
};

/* Sends INFO to every store with want[i] set, in parallel, over via, and
 * decodes the answers into res[i]. */
static void probe_stores(struct smp_stores *s, const bool *want, enum probe_via via, struct probe *res)
{
	size_t *store = calloc(s->n, sizeof(*store));
	struct gnn_multicall f;
	struct gnn_wbuf *req;

	for (size_t i = 0; i < s->n; i++) {
		res[i].rc = GNN_ENOMEM;
		snprintf(res[i].err, sizeof(res[i].err), "out of memory");
		res[i].own = false;
	}
	gnn_multicall_init(&f);
	for (size_t i = 0; store != NULL && i < s->n; i++) {
		struct gnn_call *c;

		if (!want[i])
			continue;
		if (gnn_multicall_add(&f, via == VIA_CHECK ? s->st[i].check : s->st[i].data, 0, &req) != GNN_OK)
			break;
		store[f.n - 1] = i;
		c = &f.call[f.n - 1];
		if (via == VIA_DATA_ONCE) {
			c->failover = true;
			c->timeout_ms = s->check_timeout_ms;
		} else if (via == VIA_DATA && replicated(s, &s->st[i])) {
			c->failover = true;
			c->timeout_ms = replica_timeout_ms(s, s->st[i].info.part_id);
		}
		gnn_encode_info_req(req, atomic_fetch_add(&s->next_req_id, 1));
	}
	gnn_multicall_run(&f, take_info, &(struct probe_run){ .res = res, .store = store });
	gnn_multicall_free(&f);
	free(store);
}

static void probes_free(struct probe *res, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (res[i].own)
			gnn_layout_free(&res[i].info.layout);
}

/* Names of the stores in state st (or not in it, with negate), for logs:
 * "graphstore-1(tcp://...),graphstore-3(...)". */
static void list_stores(const struct smp_stores *s, int st, bool negate, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n && used + 1 < size; i++) {
		bool in = atomic_load(&s->st[i].state) == st;

		if (in != negate) {
			int k = snprintf(buf + used, size - used, "%s%s(%s)", used ? "," : "", s->st[i].name,
					 s->st[i].url);
			used += k > 0 ? (size_t)k : 0;
		}
	}
	if (used >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);
}

/* Which field of a store's layout il differs from the first store's rl
 * (NULL: none): they must describe the same graph. */
static const char *layout_differs(const struct gnn_layout *il, const struct gnn_layout *rl)
{
	if (il->graph_id != rl->graph_id)
		return "graph_id";
	if (il->num_parts != rl->num_parts)
		return "num_parts";
	if (il->num_nodes != rl->num_nodes || il->num_edges != rl->num_edges)
		return "num_nodes/num_edges";
	if (il->feat_dim != rl->feat_dim || il->feat_dtype != rl->feat_dtype || il->num_classes != rl->num_classes)
		return "feat_dim/feat_dtype/num_classes";
	if (memcmp(il->offsets, rl->offsets, ((size_t)rl->num_parts + 1) * 8) != 0)
		return "node_offsets";
	if (gnn_schema_hash(il->schema) != gnn_schema_hash(rl->schema) ||
	    il->schema->num_types != rl->schema->num_types ||
	    memcmp(il->type_offsets, rl->type_offsets, ((size_t)rl->num_parts * rl->schema->num_types + 1) * 8) != 0)
		return "schema";
	return NULL;
}

/* Every store's answer describes the same graph (a sampler's answer for
 * the whole graph is refused). */
static int check_answers(const struct smp_stores *s)
{
	const struct gnn_layout *rl = &s->st[0].info.layout;

	for (size_t i = 0; i < s->n; i++) {
		const struct store *st = &s->st[i];
		const struct gnn_info *in = &st->info;
		const struct gnn_layout *il = &in->layout;
		const char *field = layout_differs(il, rl);

		/* part_id == num_parts is how a sampler answers INFO. */
		if (in->part_id >= il->num_parts) {
			GNN_ERROR("graphstores_mismatch", "store=%s url=%s part=%" PRIu32 " num_parts=%" PRIu32
				  " reason=\"%s answers for the whole graph, not for one partition: it is a sampler, "
				  "not a graph store\"", st->name, st->url, in->part_id, il->num_parts, st->name);
			return GNN_EINVAL;
		}
		if (field != NULL) {
			GNN_ERROR("graphstores_mismatch", "store=%s url=%s field=%s graph_id=%016" PRIx64
				  " expected_graph_id=%016" PRIx64 " reason=\"%s serves another graph than %s (%s "
				  "differs): every store must serve a partition of the same gnn-partition output\"",
				  st->name, st->url, field, il->graph_id, rl->graph_id, st->name, s->st[0].name, field);
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

/* Fills s->rep_first and s->rep from the answers: partition p's stores in
 * list order. Every partition needs one; with exactly one store per
 * partition configured, two on the same one is a mistake (the old rule),
 * with more they are replicas. */
static int group_replicas(struct smp_stores *s)
{
	uint32_t P = s->st[0].info.layout.num_parts;
	uint32_t *fill = calloc(P + 1, sizeof(*fill));

	s->rep_first = calloc(P + 1, sizeof(*s->rep_first));
	s->rep = malloc(s->n * sizeof(*s->rep));
	if (fill == NULL || s->rep_first == NULL || s->rep == NULL) {
		free(fill);
		return GNN_ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++)
		s->rep_first[s->st[i].info.part_id + 1]++;
	for (uint32_t p = 0; p < P; p++) {
		uint32_t k = s->rep_first[p + 1];

		if (k == 0 || k > GNN_MAX_REPLICAS || (k > 1 && s->n == P)) {
			const struct store *a = NULL, *b = NULL;

			for (size_t i = 0; i < s->n; i++) {
				if (s->st[i].info.part_id != p)
					continue;
				if (a == NULL)
					a = &s->st[i];
				else if (b == NULL)
					b = &s->st[i];
			}
			if (k > 1 && s->n == P)
				GNN_ERROR("graphstores_mismatch", "store=%s url=%s other=%s other_url=%s part=%" PRIu32
					  " reason=\"two graph stores serve partition %" PRIu32 " and none another: give "
					  "each partition a store (replicas: the same number of stores for each)\"",
					  b->name, b->url, a->name, a->url, p, p);
			else if (k == 0)
				GNN_ERROR("graphstores_mismatch", "configured=%zu num_parts=%" PRIu32 " part=%" PRIu32
					  " reason=\"no graph store serves partition %" PRIu32 " of %" PRIu32 ": give at "
					  "least one URL per partition\"", s->n, P, p, p, P);
			else
				GNN_ERROR("graphstores_mismatch", "part=%" PRIu32 " stores=%" PRIu32 " reason=\"at most "
					  "%d graph stores may serve one partition\"", p, k, GNN_MAX_REPLICAS);
			free(fill);
			return GNN_EINVAL;
		}
		s->rep_first[p + 1] += s->rep_first[p];
	}
	for (size_t i = 0; i < s->n; i++) {
		uint32_t p = s->st[i].info.part_id;

		s->st[i].replica = fill[p];
		s->rep[s->rep_first[p] + fill[p]++] = (uint32_t)i;
	}
	free(fill);
	return GNN_OK;
}

/* Every store's answer describes the same graph, and together they serve
 * each partition, once or as replicas (whose calls fail over: stores_run). */
static int check_layout(struct smp_stores *s)
{
	int rc;

	if ((rc = check_answers(s)) != GNN_OK || (rc = group_replicas(s)) != GNN_OK)
		return rc;
	if (s->n > s->st[0].info.layout.num_parts)
		GNN_INFO("graphstore_replicas", "stores=%zu num_parts=%" PRIu32 " note=\"calls go to the replica "
			 "with the fewest in flight; a timeout or a lost connection sends them to another at "
			 "once\"", s->n, s->st[0].info.layout.num_parts);
	s->layout = s->st[0].info.layout;
	return GNN_OK;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static size_t count_state(const struct smp_stores *s, int state)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++)
		k += atomic_load(&s->st[i].state) == state;
	return k;
}

/* The stores' states into /metrics: how many are up, and each one. */
static void publish_up(struct smp_stores *s)
{
	pthread_mutex_lock(&s->publish);
	for (size_t i = 0; i < s->n; i++)
		gnn_gauge_set(s->st[i].up, atomic_load(&s->st[i].state) == ST_UP);
	gnn_gauge_set(s->ready_gauge, (double)count_state(s, ST_UP));
	pthread_mutex_unlock(&s->publish);
}

/* One INFO round to the stores that have not answered yet (want, res:
 * scratch of s->n): each first answer fixes its store's identity (state
 * UP, logged). Returns how many stores are still missing. */
static size_t connect_round(struct smp_stores *s, bool *want, struct probe *res)
{
	size_t left = 0;

	for (size_t i = 0; i < s->n; i++)
		want[i] = !s->st[i].answered;
	probe_stores(s, want, VIA_CHECK, res);
	for (size_t i = 0; i < s->n; i++) {
		struct store *st = &s->st[i];

		if (!want[i] || res[i].rc != GNN_OK) {
			left += !st->answered;
			continue;
		}
		st->info = res[i].info;
		res[i].own = false;
		st->answered = true;
		atomic_store(&st->state, ST_UP);
		GNN_INFO("graphstore_found", "store=%s url=%s part=%" PRIu32 " num_parts=%" PRIu32
			 " graph_id=%016" PRIx64 " nodes=%" PRId64 " feat_dim=%" PRIu32, st->name, st->url,
			 st->info.part_id, st->info.layout.num_parts, st->info.layout.graph_id,
			 st->info.layout.num_nodes, st->info.layout.feat_dim);
	}
	probes_free(res, s->n);
	publish_up(s);
	return left;
}

/* The watch and data connections dial alongside the check ones: being
 * ready means a restart of any store from now on is seen, and that a
 * replica's calls do not find it unconnected (a data client that dialled
 * before its store listened retries after a backoff of up to 2 s). A
 * store still unconnected after LINKS_WAIT_S is served all the same (the
 * other signals and the check remain; calls wait for its connection). */
#define LINKS_WAIT_S 2.5

static void await_links(const struct smp_stores *s)
{
	for (double w0 = gnn_now(); gnn_now() - w0 < LINKS_WAIT_S; sleep_ms(10)) {
		size_t up = 0;

		for (size_t i = 0; i < s->n; i++)
			up += atomic_load(&s->st[i].watch_pipe) != 0 && gnn_client_connected(s->st[i].data);
		if (up == s->n)
			break;
	}
}

/* Waits until every store answered INFO (about a round a second, stop
 * polled meanwhile), logging which ones it waits for every ~10 s. */
static int await_stores(struct smp_stores *s, double wait_s, bool (*stop)(void), double t0)
{
	struct probe *res = calloc(s->n, sizeof(*res));
	bool *want = calloc(s->n, sizeof(*want));
	double last_log = t0, round;
	char missing[1024];
	int rc = GNN_ENOMEM;

	while (res != NULL && want != NULL) {
		round = gnn_now();
		if (connect_round(s, want, res) == 0) {
			rc = GNN_OK;
			break;
		}
		list_stores(s, ST_UP, true, missing, sizeof(missing));
		if (stop != NULL && stop()) {
			rc = GNN_ECLOSED;
			break;
		}
		if (gnn_now() - t0 >= wait_s) {
			GNN_ERROR("graphstores_unreachable", "missing=%s waited_s=%.0f reason=\"these graph stores did "
				  "not answer INFO within --wait-stores\"", missing, gnn_now() - t0);
			rc = GNN_ETIMEDOUT;
			break;
		}
		if (gnn_now() - last_log >= 10) {
			GNN_INFO("waiting_for_graphstores", "missing=%s waited_s=%.0f", missing, gnn_now() - t0);
			last_log = gnn_now();
		}
		while (gnn_now() - round < 1.0 && !(stop != NULL && stop()))
			sleep_ms(50);
	}
	free(res);
	free(want);
	return rc;
}

int smp_stores_connect(struct smp_stores *s, double wait_s, bool (*stop)(void))
{
	double t0 = gnn_now();
	int rc;

	GNN_INFO("waiting_for_graphstores", "stores=%zu timeout_s=%.0f", s->n, wait_s);
	if ((rc = await_stores(s, wait_s, stop, t0)) != GNN_OK || (rc = check_layout(s)) != GNN_OK)
		return rc;
	await_links(s);
	atomic_store(&s->connected, true);
	GNN_INFO("graphstores_ready", "stores=%zu nodes=%" PRId64 " feat_dim=%" PRIu32 " feat_dtype=%s classes=%" PRIu32
		 " waited_s=%.1f", s->n, s->layout.num_nodes, s->layout.feat_dim, gnn_dtype_name(s->layout.feat_dtype),
		 s->layout.num_classes, gnn_now() - t0);
	return GNN_OK;
}

/* ---- a store that changed graph ---- */

/* The error text of requests refused because st now answers in. */
static void changed_text(const struct smp_stores *s, const struct store *st, const struct gnn_info *in, char *why,
			 size_t why_len)
{
	/* Short: a client keeps about 250 bytes of an error text. */
	snprintf(why, why_len, "graph store %s (%s) now serves graph_id %016" PRIx64 " partition %" PRIu32 " of %" PRIu32
		 ", not graph_id %016" PRIx64 " partition %" PRIu32 " of %" PRIu32 ": this sampler refuses requests "
		 "and exits in %.0f s to restart on the new graph", st->name, st->url, in->layout.graph_id,
		 in->part_id, in->layout.num_parts, st->info.layout.graph_id, st->info.part_id,
		 st->info.layout.num_parts, s->changed_exit_s);
}

/* Latches the change (first caller only: one ERROR line). Any thread. */
static void mark_changed(struct smp_stores *s, struct store *st, const struct gnn_info *in)
{
	bool was = false;

	atomic_store(&st->state, ST_CHANGED);
	if (!atomic_compare_exchange_strong(&s->changing, &was, true))
		return;
	changed_text(s, st, in, s->changed_text, sizeof(s->changed_text));
	snprintf(s->changed_ready, sizeof(s->changed_ready), "graph changed: %s serves graph_id %016" PRIx64
		 ", not %016" PRIx64 "; exiting", st->name, in->layout.graph_id, st->info.layout.graph_id);
	s->changed_at = gnn_now();
	GNN_ERROR("graph_changed", "store=%s url=%s old_graph_id=%016" PRIx64 " old_part=%" PRIu32
		  " old_num_parts=%" PRIu32 " new_graph_id=%016" PRIx64 " new_part=%" PRIu32 " new_num_parts=%" PRIu32
		  " exit_status=%d exit_in_s=%.0f reason=\"%s serves another graph or partition than when this sampler "
		  "started; refusing every request, /readyz 503, exiting so that a restart loads the new graph\"",
		  st->name, st->url, st->info.layout.graph_id, st->info.part_id, st->info.layout.num_parts,
		  in->layout.graph_id, in->part_id, in->layout.num_parts, SMP_EXIT_GRAPH_CHANGED, s->changed_exit_s,
		  st->name);
	atomic_store(&s->changed, true);
}

bool smp_stores_changed(struct smp_stores *s, double *since)
{
	if (!atomic_load(&s->changed))
		return false;
	if (since != NULL)
		*since = s->changed_at;
	return true;
}

/* ---- the background check ---- */

/* Store st answers again, as the check found or a data answer verified
 * (verify_stores): from state from to up, logged once by whoever moves it
 * first (the check thread and the request threads race for it). */
static void back_up(struct smp_stores *s, struct store *st, int from)
{
	if (!atomic_compare_exchange_strong(&st->state, &from, ST_UP))
		return;
	GNN_INFO("graphstore_reachable_again", "store=%s url=%s down_s=%.1f", st->name, st->url,
		 from == ST_DOWN ? gnn_now() - st->down_since : 0.0);
	publish_up(s);
}

/* A store up by now whose check failed is asked again, once, over its
 * data connection; its answer stands for the check's (res, want: scratch
 * of s->n). The check's own connection redials a restarted store with a
 * backoff of up to 2 s, by when its data connection may have answered
 * (verify_stores): a check that failed on the missing connection, or one
 * sent before the store came back, would set the store down again, until
 * a later check found the connection up. */
static void confirm_failures(struct smp_stores *s, bool *want, struct probe *res)
{
	struct probe *again;
	bool any = false;

	for (size_t i = 0; i < s->n; i++) {
		want[i] = res[i].rc != GNN_OK && atomic_load(&s->st[i].state) == ST_UP;
		any |= want[i];
	}
	if (!any || (again = calloc(s->n, sizeof(*again))) == NULL)
		return;
	probe_stores(s, want, VIA_DATA_ONCE, again);
	for (size_t i = 0; i < s->n; i++)
		if (want[i] && again[i].rc == GNN_OK) {
			res[i] = again[i];  /* res[i] failed: owned nothing */
			again[i].own = false;
		}
	probes_free(again, s->n);
	free(again);
}

static void check_once(struct smp_stores *s)
{
	struct probe *res = calloc(s->n, sizeof(*res));
	bool *want = calloc(s->n, sizeof(*want));

	if (res == NULL || want == NULL)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		want[i] = true;
		watch_redial_if_stuck(&s->st[i]);
	}
	probe_stores(s, want, VIA_CHECK, res);
	confirm_failures(s, want, res);
	for (size_t i = 0; i < s->n; i++) {
		struct store *st = &s->st[i];
		const struct gnn_info *in = &res[i].info;
		int old = atomic_load(&st->state), now;

		if (res[i].rc != GNN_OK)
			now = ST_DOWN;
		else if (!gnn_storeid_serves(in, st->info.part_id, &st->info.layout))
			now = ST_CHANGED;
		else
			now = ST_UP;
		/* Not answering may mean a restart: verify its next answers. */
		if (now == ST_DOWN)
			atomic_fetch_add(&st->suspect, 1);
		if (now == old)
			continue;
		if (now == ST_CHANGED) {
			mark_changed(s, st, in);
			continue;
		}
		if (now == ST_UP) {
			back_up(s, st, old);
			continue;
		}
		st->down_since = gnn_now();
		/* (a verified data answer may have moved it meanwhile: then it stays) */
		if (atomic_compare_exchange_strong(&st->state, &old, ST_DOWN))
			GNN_WARN("graphstore_unreachable", "store=%s url=%s reason=\"%s\"", st->name, st->url,
				 res[i].err);
	}
	probes_free(res, s->n);
	publish_up(s);
out:
	free(res);
	free(want);
}

static void *check_main(void *arg)
{
	struct smp_stores *s = arg;

	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		struct timespec ts;

		gnn_deadline(CLOCK_MONOTONIC, s->check_interval_ms, &ts);
		while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &ts) == 0)
			;
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->mu);
		check_once(s);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int smp_stores_start_check(struct smp_stores *s)
{
	if (pthread_create(&s->thread, NULL, check_main, s) != 0)
		return GNN_ENOMEM;
	s->thread_started = true;
	return GNN_OK;
}

/* The backend's layout_known: the layout is fixed once connect succeeded,
 * and stale for good once a store changed graph. */
static bool stores_layout_known(void *ctx, char *why, size_t why_len)
{
	struct smp_stores *s = ctx;
	char list[256];

	if (atomic_load(&s->changed)) {
		snprintf(why, why_len, "%s", s->changed_text);
		return false;
	}
	if (atomic_load(&s->connected))
		return true;
	list_stores(s, ST_UP, true, list, sizeof(list));
	snprintf(why, why_len, "waiting for graph stores: %s", list[0] ? list : "layout check");
	return false;
}

/* A store counts against readiness when it serves another graph, or has
 * not answered for down_grace_s: replacing a store's pod takes seconds,
 * calls to it wait meanwhile (timeout x retries), and a sampler that left
 * its Service would be dropped by every trainer. */
static bool store_missing(const struct smp_stores *s, const struct store *st)
{
	int state = atomic_load(&st->state);

	return state == ST_CHANGED ||
	       (state == ST_DOWN && gnn_now() - atomic_load(&st->down_since) >= s->down_grace_s);
}

bool smp_stores_ready(void *ctx, char *why, size_t why_len)
{
	struct smp_stores *s = ctx;
	char list[256];
	bool missing = false;

	if (atomic_load(&s->changed)) {
		snprintf(why, why_len, "%s", s->changed_ready);
		return false;
	}
	if (!stores_layout_known(s, why, why_len))
		return false;
	/* a partition is missing when all its replicas are */
	for (uint32_t p = 0; p < s->layout.num_parts && !missing; p++) {
		missing = true;
		for (uint32_t k = s->rep_first[p]; k < s->rep_first[p + 1]; k++)
			missing &= store_missing(s, &s->st[s->rep[k]]);
	}
	if (!missing)
		return true;
	list_stores(s, ST_UP, true, list, sizeof(list));
	snprintf(why, why_len, "graph stores unreachable or changed: %s", list);
	return false;
}

/* ---- the backend ---- */

/* What a call's answer points into. */
struct held {
	nng_msg *msg;
	void *owned;
};

static void stores_describe(void *ctx, uint32_t part, char *buf, size_t size)
{
	const struct smp_stores *s = ctx;
	const struct store *st;
	uint32_t k;

	if (s->rep_first == NULL || part >= s->layout.num_parts) {
		snprintf(buf, size, "partition %" PRIu32, part);
		return;
	}
	st = &s->st[s->rep[s->rep_first[part]]];
	k = s->rep_first[part + 1] - s->rep_first[part];
	if (k == 1)
		snprintf(buf, size, "%s (%s)", st->name, st->url);
	else
		snprintf(buf, size, "%s (%s) and %" PRIu32 " other replicas", st->name, st->url, k - 1);
}

/* The client's error text without the store name it starts with (the
 * sampler's text names the store once, with its URL). */
static const char *client_detail(const struct store *st, const char *err)
{
	size_t n = strlen(st->name), u = strlen(st->url);

	if (strncmp(err, st->name, n) != 0)
		return err;
	err += n;
	if (strncmp(err, " (", 2) == 0 && strncmp(err + 2, st->url, u) == 0 && err[2 + u] == ')')
		err += 3 + u;
	if (*err == ':')
		err++;
	while (*err == ' ')
		err++;
	return err;
}

/* ---- the forwarded RPCs ---- */

static int enc_sample(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c)
{
	return gnn_encode_sample_req(w, req_id, c->seed, s->layout.schema->num_rels, c->fanouts, c->ids, c->n);
}

/* FEAT, LABEL and PREDICT: an ID list. */
static int enc_ids(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c)
{
	(void)s;
	return gnn_encode_ids_req(w, c->type, req_id, c->ids, c->n);
}

static int enc_nodes(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c)
{
	(void)s;
	return gnn_encode_nodes_req(w, req_id, c->split, c->limit, c->cursor);
}

static int enc_lookup(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c)
{
	(void)s;
	return gnn_encode_lookup_req(w, req_id, c->node_type, c->ids, c->n);
}

static int enc_link(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c)
{
	(void)s;
	return gnn_encode_link_req(w, req_id, &c->link);
}

static int dec_sample(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len,
		      void **owned)
{
	struct gnn_sample_resp r;
	int rc;

	if ((rc = gnn_decode_sample_resp(payload, len, &r)) != GNN_OK)
		return rc;
	*owned = r.owned;
	c->counts = r.counts;
	c->nbrs = r.nbrs;
	c->total = r.total;
	return r.n == c->n && r.num_rels == s->layout.schema->num_rels ? GNN_OK : GNN_EPROTO;
}

static int dec_feat(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len, void **owned)
{
	struct gnn_feat_resp r;
	int rc;

	(void)s;
	if ((rc = gnn_decode_feat_resp(payload, len, &r)) != GNN_OK)
		return rc;
	*owned = r.owned;
	c->rows = r.rows;
	return r.n == c->n && r.dim == c->feat_dim && r.dtype == c->feat_dtype ? GNN_OK : GNN_EPROTO;
}

static int dec_label(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len, void **owned)
{
	struct gnn_label_resp r;
	int rc;

	(void)s;
	if ((rc = gnn_decode_label_resp(payload, len, &r)) != GNN_OK)
		return rc;
	*owned = r.owned;
	c->labels = r.labels;
	return r.n == c->n ? GNN_OK : GNN_EPROTO;
}

static int dec_nodes(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len, void **owned)
{
	struct gnn_nodes_resp r;
	int rc;

	(void)s;
	if ((rc = gnn_decode_nodes_resp(payload, len, &r)) != GNN_OK)
		return rc;
	*owned = r.owned;
	c->found = r.ids;
	c->num_found = r.n;
	c->next_cursor = r.next_cursor;
	return r.n <= c->limit ? GNN_OK : GNN_EPROTO;
}

static int dec_predict(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len,
		       void **owned)
{
	int rc;

	(void)s;
	if ((rc = gnn_decode_predict_resp(payload, len, &c->predict)) != GNN_OK)
		return rc;
	*owned = c->predict.owned;
	return c->predict.n == c->n ? GNN_OK : GNN_EPROTO;
}

static int dec_lookup(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len,
		      void **owned)
{
	struct gnn_ids r;
	int rc;

	(void)s;
	if ((rc = gnn_decode_ids_req(payload, len, &r)) != GNN_OK)
		return rc;
	*owned = r.owned;
	c->found = r.ids;
	return r.n == c->n ? GNN_OK : GNN_EPROTO;
}

static int dec_link(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len, void **owned)
{
	struct gnn_link_resp *r = &c->link_resp;
	int rc;

	if ((rc = gnn_decode_link_resp(payload, len, r)) != GNN_OK)
		return rc;
	*owned = r->owned;
	if (r->op != c->link.op || (c->link.op == GNN_LINK_TOPK ? r->n > c->link.k : r->n != c->link.n) ||
	    (c->link.op == GNN_LINK_ROWS && r->flags != c->link.flags) ||
	    (c->link.op == GNN_LINK_TOPK && c->link.dim != 0 && r->dim != c->link.dim))
		return GNN_EPROTO;
	/* a store's top-k holds its own nodes, best first */
	for (uint32_t i = 0; c->link.op == GNN_LINK_TOPK && i < r->n; i++)
		if (gnn_layout_owner(&s->layout, r->nodes[i]) != (int32_t)c->part ||
		    isnan(r->scores[i]) || (i > 0 && r->scores[i] > r->scores[i - 1]))
			return GNN_EPROTO;
	return GNN_OK;
}

/* The RPCs a sampler forwards to the stores, by their request's type
 * (struct smp_call's): how a call goes out (encode), which answer comes
 * back (resp) and how it is read (decode: the call's answer fields, sizes
 * checked against the call; *owned what they need released). Forwarding
 * another RPC is a row here and an answer in local_backend.c. */
static const struct fwd {
	uint16_t resp;
	int (*encode)(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c);
	int (*decode)(const struct smp_stores *s, struct smp_call *c, const void *payload, size_t len, void **owned);
} fwd[GNN_MSG_TYPE_COUNT] = {
	[GNN_MSG_SAMPLE_REQ] = { GNN_MSG_SAMPLE_RESP, enc_sample, dec_sample },
	[GNN_MSG_FEAT_REQ] = { GNN_MSG_FEAT_RESP, enc_ids, dec_feat },
	[GNN_MSG_LABEL_REQ] = { GNN_MSG_LABEL_RESP, enc_ids, dec_label },
	[GNN_MSG_NODES_REQ] = { GNN_MSG_NODES_RESP, enc_nodes, dec_nodes },
	[GNN_MSG_PREDICT_REQ] = { GNN_MSG_PREDICT_RESP, enc_ids, dec_predict },
	[GNN_MSG_LOOKUP_REQ] = { GNN_MSG_LOOKUP_RESP, enc_lookup, dec_lookup },
	[GNN_MSG_LINK_REQ] = { GNN_MSG_LINK_RESP, enc_link, dec_link },
};

static int encode_call(const struct smp_stores *s, struct gnn_wbuf *w, uint64_t req_id, const struct smp_call *c)
{
	if (c->type >= GNN_MSG_TYPE_COUNT || fwd[c->type].encode == NULL)
		return GNN_EINVAL;
	return fwd[c->type].encode(s, w, req_id, c);
}

/* Decodes the answer to c held in h and checks its sizes against c. */
static int decode_answer(const struct smp_stores *s, struct smp_call *c, struct held *h)
{
	const void *payload;
	size_t len;
	int rc;

	if ((rc = gnn_reply_payload(h->msg, fwd[c->type].resp, &payload, &len)) != GNN_OK)
		return rc;
	return fwd[c->type].decode(s, c, payload, len, &h->owned);
}

/* Before answers of the stores in used[] are trusted: each one with a
 * sign of a restart since it was last verified gets an INFO through its
 * data client (the connection its answers came over), in parallel. The
 * same graph clears the sign; another latches the change. GNN_EUNAVAIL,
 * with err naming the store, when a store changed, or did not answer and
 * has no other replica; lost[i]: store i did not answer and has (its
 * answers go to another replica). */
static int verify_stores(struct smp_stores *s, bool *used, bool *lost, char *why, size_t why_len)
{
	unsigned *gen;
	struct probe *res;
	bool any = false;
	int rc = GNN_OK;

	for (size_t i = 0; i < s->n && !any; i++)
		any = used[i] && atomic_load(&s->st[i].verified) != atomic_load(&s->st[i].suspect);
	if (!any)
		return GNN_OK;  /* the usual case: nothing to ask */
	any = false;
	gen = calloc(s->n, sizeof(*gen));
	res = calloc(s->n, sizeof(*res));
	if (gen == NULL || res == NULL) {
		snprintf(why, why_len, "out of memory");
		rc = GNN_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->n; i++) {
		gen[i] = atomic_load(&s->st[i].suspect);
		used[i] = used[i] && atomic_load(&s->st[i].verified) != gen[i];
		any |= used[i];
	}
	if (!any)
		goto out;
	probe_stores(s, used, VIA_DATA, res);
	for (size_t i = 0; i < s->n; i++) {
		struct store *st = &s->st[i];

		if (!used[i])
			continue;
		if (res[i].rc != GNN_OK && replicated(s, st)) {
			lost[i] = true;
		} else if (res[i].rc != GNN_OK) {
			if (rc == GNN_OK)
				snprintf(why, why_len, "graph store %s (%s) unavailable: no INFO confirms which graph it "
					 "serves after a sign of a restart: %s", st->name, st->url,
					 client_detail(st, res[i].err));
			rc = GNN_EUNAVAIL;
		} else if (!gnn_storeid_serves(&res[i].info, st->info.part_id, &st->info.layout)) {
			mark_changed(s, st, &res[i].info);
			if (rc == GNN_OK)
				changed_text(s, st, &res[i].info, why, why_len);
			rc = GNN_EUNAVAIL;
		} else {
			GNN_DEBUG("graphstore_verified", "store=%s url=%s graph_id=%016" PRIx64, st->name, st->url,
				  st->info.layout.graph_id);
			atomic_store(&st->verified, gen[i]);
			/* the same INFO the check would wait for: up now */
			back_up(s, st, ST_DOWN);
		}
	}
	probes_free(res, s->n);
out:
	free(gen);
	free(res);
	return rc;
}

/* The answer bytes a call asks for, about: what its store must read and
 * send, which is what takes it time. */
static double answer_bytes(const struct smp_stores *s, const struct smp_call *c)
{
	double mean_degree = s->layout.num_nodes > 0 ? (double)s->layout.num_edges / (double)s->layout.num_nodes : 0;

	switch (c->type) {
	case GNN_MSG_SAMPLE_REQ: {
		const struct gnn_schema *sc = s->layout.schema;
		double per_node = 0;

		/* a node has neighbours under about R_dst of the R relations */
		for (uint32_t r = 0; r < sc->num_rels; r++)
			per_node += 4 + 8 * (c->fanouts[r] > 0 ? (double)c->fanouts[r] :
					     c->fanouts[r] < 0 ? mean_degree : 0) / sc->num_types;
		return (double)c->n * per_node;
	}
	case GNN_MSG_FEAT_REQ:
		return (double)c->n * c->feat_dim * gnn_dtype_size(c->feat_dtype);
	case GNN_MSG_LABEL_REQ:
		return (double)c->n * sizeof(int32_t);
	case GNN_MSG_NODES_REQ:
		return (double)c->limit * sizeof(int64_t);
	default:
		return 0;
	}
}

/* The pause between rounds of a call over replicas none of which is
 * connected. */
#define NONE_UP_PAUSE_MS 100

/* Whether st's partition has other stores. */
static bool replicated(const struct smp_stores *s, const struct store *st)
{
	uint32_t p = st->info.part_id;

	return p < s->layout.num_parts && s->rep_first[p + 1] - s->rep_first[p] > 1;
}

/* Partition part's store for a call (gnn_replica_pick): those down or
 * unconnected come after the others, those this call tried (bits of
 * tried, by replica rank) last. One store: that one. */
static uint32_t pick_store(struct smp_stores *s, uint32_t part, uint64_t tried)
{
	uint32_t lo = s->rep_first[part], k = s->rep_first[part + 1] - lo;
	struct gnn_replica *reps[GNN_MAX_REPLICAS];
	bool usable[GNN_MAX_REPLICAS];

	if (k == 1)
		return s->rep[lo];
	for (uint32_t j = 0; j < k; j++) {
		struct store *st = &s->st[s->rep[lo + j]];

		reps[j] = &st->rep;
		usable[j] = atomic_load(&st->state) == ST_UP && gnn_client_connected(st->data);
	}
	return s->rep[lo + gnn_replica_pick(reps, usable, k, tried, &s->next_pick)];
}

/* One run of the backend: its calls, the stores they go to, and the
 * first failure as the backend reports it. */
struct run {
	struct smp_stores *s;
	struct smp_call *calls;
	struct gnn_multicall *f;
	uint32_t *store;          /* [n]: the store each call goes to now */
	uint64_t *tried;          /* [n]: the replicas each call went to (bits by rank) */
	int *sent;                /* [n]: times each call was sent */
	double *extra_ms;         /* [n]: each call's deadline beyond the flat one (set_deadlines) */
	bool *used;               /* [s->n]: the stores whose answers the run keeps */
	bool *lost;               /* [s->n]: ... that verify_stores found gone (redo_lost) */
	bool moved;               /* a call failed over: run again */
	bool none_up;             /* ... to a partition none of whose stores is connected */
	double t0;                /* when the run began */
	int rc;
	char *why;
	size_t why_len;
};

/* A replicated partition's first attempt on each replica: a few times its
 * stores' recent slowest answer, at most --replica-timeout-ms. */
static int replica_timeout_ms(struct smp_stores *s, uint32_t part)
{
	uint32_t lo = s->rep_first[part], k = s->rep_first[part + 1] - lo;
	struct gnn_replica *reps[GNN_MAX_REPLICAS];

	for (uint32_t j = 0; j < k; j++)
		reps[j] = &s->st[s->rep[lo + j]].rep;
	return gnn_replica_timeout_ms(reps, k, s->replica_timeout_ms);
}

/* Call i's attempt timeout, for its next send: a replicated partition's
 * first send to each replica waits replica_timeout_ms (a frozen or
 * vanished replica costs that, not --timeout-ms), later ones the flat
 * timeout; both plus the call's bytes term. */
static void deadline(const struct run *r, size_t i)
{
	const struct smp_stores *s = r->s;
	uint32_t part = r->calls[i].part, k = s->rep_first[part + 1] - s->rep_first[part];
	double ms = (k > 1 && r->sent[i] <= (int)k ? replica_timeout_ms(r->s, part) : s->timeout_ms) + r->extra_ms[i];

	r->f->call[i].timeout_ms = ms < 3600000 ? (int)ms : 3600000;
}

/* Deadlines that grow with the work: a store answers the calls of one
 * batch (a layer's sampling, or all the input features of a minibatch,
 * tens of calls each) in some order, so the last answer comes after all
 * of them. Each call to a store therefore gets its flat timeout plus the
 * bytes the whole batch asks of that store at --store-min-mb-per-s. */
static void set_deadlines(const struct run *r, size_t n)
{
	const struct smp_stores *s = r->s;
	double *bytes = s->min_bytes_per_s > 0 ? calloc(s->n, sizeof(*bytes)) : NULL;

	for (size_t i = 0; bytes != NULL && i < n; i++)
		bytes[r->store[i]] += answer_bytes(s, &r->calls[i]);
	for (size_t i = 0; i < n; i++) {
		r->extra_ms[i] = bytes != NULL ? 1000.0 * bytes[r->store[i]] / s->min_bytes_per_s : 0;
		deadline(r, i);
	}
	free(bytes);
}

/* Call i goes to store st (its client, counted in flight). */
static void send_to(struct run *r, size_t i, uint32_t st)
{
	struct store *to = &r->s->st[st];

	r->store[i] = st;
	r->tried[i] |= 1ull << to->replica;
	r->sent[i]++;
	r->f->call[i].client = to->data;
	/* a replicated partition's call ends at a lost connection or a
	 * timeout, for fail_over to send it to another replica */
	r->f->call[i].failover = r->s->rep_first[r->calls[i].part + 1] - r->s->rep_first[r->calls[i].part] > 1;
}

/* Adds every call to f, encoded for its partition's store. */
static int add_calls(struct run *r, size_t n)
{
	struct smp_stores *s = r->s;

	for (size_t i = 0; i < n; i++) {
		const struct smp_call *c = &r->calls[i];
		struct gnn_wbuf *req;
		uint32_t st = c->part < s->layout.num_parts ? pick_store(s, c->part, 0) : 0;

		if (c->part >= s->layout.num_parts || gnn_multicall_add(r->f, s->st[st].data, 0, &req) != GNN_OK ||
		    encode_call(s, req, atomic_fetch_add(&s->next_req_id, 1), c) != GNN_OK) {
			snprintf(r->why, r->why_len, "cannot encode a %s request for partition %" PRIu32,
				 gnn_msg_name(c->type), c->part);
			return GNN_ENOMEM;
		}
		send_to(r, i, st);
	}
	return GNN_OK;
}

/* Keeps c's reply (c->keep, until stores_release: the answer points into
 * it) and decodes it; crc is the call's code so far. */
static int keep_answer(const struct smp_stores *s, struct smp_call *c, struct gnn_call *gc, int crc)
{
	struct held *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return GNN_ENOMEM;  /* the batch frees the reply */
	h->msg = gc->reply;
	gc->reply = NULL;
	c->keep = h;
	if (crc == GNN_OK && (crc = decode_answer(s, c, h)) != GNN_OK)
		snprintf(gc->err, sizeof(gc->err), "malformed %s answer (%s)", gnn_msg_name(c->type),
			 gnn_errname(crc));
	return crc;
}

/* The backend's code and text for call c to st that failed with crc: no
 * answer in time (after the retries), or a call abandoned because this
 * sampler stops, means unavailable (the trainer asks another replica); an
 * error answer keeps the store's code. */
static int call_failed(const struct store *st, const struct smp_call *c, const struct gnn_call *gc, int crc,
		       char *why, size_t why_len)
{
	if (crc == GNN_ECLOSED)
		snprintf(why, why_len, "this sampler is stopping: the %s call to graph store %s was abandoned",
			 gnn_msg_name(c->type), st->name);
	else if (crc == GNN_ETIMEDOUT || crc == GNN_EUNAVAIL)
		snprintf(why, why_len, "graph store %s (%s) unavailable: %s call failed after %d attempts: %s",
			 st->name, st->url, gnn_msg_name(c->type), gc->attempts, client_detail(st, gc->err));
	else
		snprintf(why, why_len, "graph store %s (%s): %s call failed: %s", st->name, st->url,
			 gnn_msg_name(c->type), client_detail(st, gc->err));
	return crc == GNN_ETIMEDOUT || crc == GNN_ECLOSED ? GNN_EUNAVAIL : crc;
}

/* Whether no store of partition part is connected. */
static bool none_connected(const struct smp_stores *s, uint32_t part)
{
	for (uint32_t k = s->rep_first[part]; k < s->rep_first[part + 1]; k++)
		if (gnn_client_connected(s->st[s->rep[k]].data))
			return false;
	return true;
}

/* Whether call i, failed with crc at store st, goes on to another replica
 * of its partition (then sent there: r->moved). A replica gets the call
 * again only once all have had it, within (--retries + 1) rounds; while
 * none of them is connected (all restarting), a call goes round them
 * (stores_run pauses between rounds) for as long as one store would be
 * waited for: --timeout-ms x (--retries + 1). */
static bool fail_over(struct run *r, size_t i, struct store *st, int crc)
{
	struct smp_stores *s = r->s;
	uint32_t part = r->calls[i].part, k = s->rep_first[part + 1] - s->rep_first[part], to;
	bool none_up;

	if (k < 2 || (crc != GNN_ETIMEDOUT && crc != GNN_EUNAVAIL))
		return false;
	none_up = none_connected(s, part);
	if (r->sent[i] >= (s->retries + 1) * (int)k &&
	    (!none_up || gnn_now() - r->t0 > s->timeout_ms * (s->retries + 1) / 1000.0))
		return false;
	r->none_up |= none_up;
	if (__builtin_popcountll(r->tried[i]) >= (int)k)
		r->tried[i] = 0;  /* the next round */
	gnn_replica_avoid(&st->rep);
	gnn_counter_inc(st->failovers);
	to = pick_store(s, part, r->tried[i] | 1ull << st->replica);
	GNN_LOG_LIMITED(GNN_LOG_INFO, "graphstore_failover", "store=%s to=%s op=%s part=%" PRIu32 " reason=\"%s\"",
			st->name, s->st[to].name, gnn_msg_name(r->calls[i].type), part, gnn_errname(crc));
	send_to(r, i, to);
	deadline(r, i);
	r->moved = true;
	return true;
}

/* Call i's result (gnn_multicall_answer_fn): counted for its store, its
 * answer kept and decoded, the run's first failure reported, or the call
 * sent on to another replica. */
static int take_call(void *ctx, size_t i, struct gnn_call *gc)
{
	struct run *r = ctx;
	struct smp_call *c = &r->calls[i];
	struct store *st = &r->s->st[r->store[i]];
	int crc = gc->rc;

	gnn_replica_end(&st->rep, gc->rc == GNN_OK ? gc->answer_s : 0);
	gnn_counter_inc(st->requests);
	if (gc->attempts > 1)
		gnn_counter_add(st->retries, gc->attempts - 1);
	/* A retried or failed call may have lost the store's process. */
	if (gc->attempts > 1 || crc != GNN_OK)
		atomic_fetch_add(&st->suspect, 1);
	if (gc->reply != NULL)
		crc = keep_answer(r->s, c, gc, crc);
	if (crc == GNN_OK) {
		r->used[r->store[i]] = true;
		return GNN_OK;
	}
	gnn_counter_inc(st->errors);
	if (fail_over(r, i, st, crc))
		return crc;
	if (r->rc == GNN_OK)  /* the first failure is the one reported */
		r->rc = call_failed(st, c, gc, crc, r->why, r->why_len);
	return crc;
}

/* Sends the run's calls not answered yet, and those that failed over,
 * until every one is answered or one failed for good (r->rc). */
static void run_rounds(struct run *r, size_t n)
{
	struct smp_stores *s = r->s;

	do {
		if (r->none_up)  /* every store of a partition restarting: not a busy loop */
			sleep_ms(NONE_UP_PAUSE_MS);
		r->moved = r->none_up = false;
		for (size_t i = 0; i < n; i++) {
			struct store *st = &s->st[r->store[i]];

			if (r->f->done[i])
				continue;
			/* No connection now: the one the answers come over may
			 * reach a new process. */
			if (!gnn_client_connected(st->data))
				atomic_fetch_add(&st->suspect, 1);
			gnn_replica_begin(&st->rep);  /* take_call ends it */
		}
		gnn_multicall_run(r->f, take_call, r);
	} while (r->moved && r->rc == GNN_OK);
}

/* A call's kept answer, freed. */
static void release_call(struct smp_call *c)
{
	struct held *h = c->keep;

	if (h == NULL)
		return;
	gnn_proto_release(h->owned);
	nng_msg_free(h->msg);
	free(h);
	c->keep = NULL;
}

/* The calls answered by a store that verify_stores found gone (lost[])
 * go to another replica, their answers dropped (the store may have
 * restarted with another graph since): true when some were sent again. */
static bool redo_lost(struct run *r, size_t n)
{
	const bool *lost = r->lost;
	bool again = false;

	for (size_t i = 0; i < n; i++) {
		struct store *st = &r->s->st[r->store[i]];

		if (!lost[r->store[i]])
			continue;
		r->used[r->store[i]] = false;
		release_call(&r->calls[i]);
		r->f->done[i] = false;
		if (!fail_over(r, i, st, GNN_EUNAVAIL)) {
			snprintf(r->why, r->why_len, "graph store %s (%s) unavailable: no INFO confirms which graph it "
				 "serves after a sign of a restart, and no other replica took its calls", st->name,
				 st->url);
			r->rc = GNN_EUNAVAIL;
			return false;
		}
		again = true;
	}
	return again;
}

static int stores_run(void *ctx, struct smp_call *calls, size_t n, char *why, size_t why_len)
{
	struct smp_stores *s = ctx;
	struct gnn_multicall f;
	struct run r = { .s = s, .calls = calls, .f = &f, .store = calloc(n, sizeof(*r.store)),
			 .tried = calloc(n, sizeof(*r.tried)), .sent = calloc(n, sizeof(*r.sent)),
			 .extra_ms = calloc(n, sizeof(*r.extra_ms)),
			 .used = calloc(s->n, sizeof(bool)), .lost = calloc(s->n, sizeof(bool)), .why = why,
			 .why_len = why_len };

	gnn_multicall_init(&f);
	for (size_t i = 0; i < n; i++)
		calls[i].keep = NULL;
	/* Callers ask layout_known first; this only keeps a slip harmless. */
	if (!stores_layout_known(s, why, why_len)) {
		r.rc = GNN_EUNAVAIL;
		goto out;
	}
	if (r.used == NULL || r.lost == NULL || (n > 0 && (r.store == NULL || r.tried == NULL || r.sent == NULL || r.extra_ms == NULL))) {
		snprintf(why, why_len, "out of memory");
		r.rc = GNN_ENOMEM;
		goto out;
	}
	if ((r.rc = add_calls(&r, n)) != GNN_OK)
		goto out;
	set_deadlines(&r, n);
	r.t0 = gnn_now();
	do {
		run_rounds(&r, n);
		/* Answers are trusted only from a store known to serve this
		 * graph, and none once a store changed (the minibatch would
		 * mix graphs); a replica gone since it answered has its calls
		 * done again by another. */
		if (r.rc == GNN_OK) {
			memset(r.lost, 0, s->n * sizeof(bool));
			r.rc = verify_stores(s, r.used, r.lost, why, why_len);
		}
	} while (r.rc == GNN_OK && redo_lost(&r, n));
	if (r.rc == GNN_OK && !stores_layout_known(s, why, why_len))
		r.rc = GNN_EUNAVAIL;
out:
	gnn_multicall_free(&f);
	free(r.store);
	free(r.tried);
	free(r.sent);
	free(r.extra_ms);
	free(r.used);
	free(r.lost);
	return r.rc;
}

static void stores_release(void *ctx, struct smp_call *calls, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++)
		release_call(&calls[i]);
}

void smp_stores_backend(struct smp_stores *s, struct smp_backend *be)
{
	*be = (struct smp_backend){ .layout = &s->layout, .ctx = s, .run = stores_run,
				    .release = stores_release, .describe = stores_describe,
				    .layout_known = stores_layout_known };
}
