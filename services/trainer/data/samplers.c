/* samplers.c - see samplers.h. */
#include "samplers.h"

#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

#define MAX_REPLICAS 4096
#define PROBE_TIMEOUT_MS 2000
#define PROBE_PERIOD_S 2.0
/* A replica that has never answered yet (it is still starting, or its
 * first probe lost a race with its start-up) is probed this often, so
 * that it takes its share of the requests soon after it is ready. */
#define FIRST_PROBE_PERIOD_S 0.25
#define RESOLVE_SOON_S 1.0      /* earliest re-resolve after a failure */
#define NODES_PAGE 65536
#define MAX_ORDER 64            /* replicas one call tries */

/* A replica is shared by the calls using it and the background thread:
 * refs counts the borrowers (under mu); one dropped from reps while
 * borrowed is freed by its last borrower. */
struct replica {
	char *url;                  /* resolved: tcp://10.0.0.5:7100 */
	const char *from;           /* the --samplers entry it came from */
	struct gnn_client *data;    /* minibatch and NODES calls (failover) */
	struct gnn_client *probe;   /* INFO checks: short timeout, no retries */
	atomic_bool up;
	bool ever_up;              /* answered a probe once (under the lock) */
	bool wrong_graph;           /* answered INFO for another graph: never used */
	bool dropped;               /* no longer in reps */
	unsigned refs;
	double last_probe;
};

struct tr_samplers {
	struct tr_samplers_opts o;
	char **given;               /* copies of o.urls */
	pthread_mutex_t mu;         /* guards reps, nreps, refs, dropped, graph */
	pthread_cond_t changed;     /* a replica came up, or closing */
	struct replica **reps;
	size_t nreps;
	bool have_graph;
	struct gnn_info info;       /* first INFO answer: the graph (its layout an owned copy) */
	pthread_t thread;
	bool thread_started;
	atomic_bool closing;
	atomic_bool resolve_soon;   /* a replica failed: look for others now */
	atomic_uint_fast64_t next_req;
	struct gnn_counter *m_fail;
	struct gnn_gauge *m_live;
};

/* ---- URLs ---- */

/* Splits tcp://HOST:PORT (HOST may be [v6]). GNN_EINVAL for other forms. */
static int split_tcp(const char *url, char *host, size_t hlen, char *port, size_t plen)
{
	const char *h = url + 6, *colon;
	size_t n;

	if (strncmp(url, "tcp://", 6) != 0)
		return GNN_EINVAL;
	if (*h == '[') {
		const char *end = strchr(h, ']');

		if (end == NULL || end[1] != ':')
			return GNN_EINVAL;
		n = (size_t)(end - h - 1);
		h++;
		colon = end + 1;
	} else {
		colon = strrchr(h, ':');
		if (colon == NULL)
			return GNN_EINVAL;
		n = (size_t)(colon - h);
	}
	if (n == 0 || n >= hlen || strlen(colon + 1) == 0 || strlen(colon + 1) >= plen ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return GNN_EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	snprintf(port, plen, "%s", colon + 1);
	return GNN_OK;
}

static int check_url(const char *url)
{
	char host[256], port[16];

	if (strncmp(url, "ipc://", 6) == 0 || strncmp(url, "inproc://", 9) == 0)
		return GNN_OK;
	return split_tcp(url, host, sizeof(host), port, sizeof(port));
}

/* ---- the replica set ---- */

static void replica_free(struct replica *r)
{
	gnn_client_close(r->data);
	gnn_client_close(r->probe);
	free(r->url);
	free(r);
}

static void update_live_gauge(struct tr_samplers *s)
{
	if (s->m_live != NULL)
		gnn_gauge_set(s->m_live, (double)tr_samplers_live(s));
}

/* Borrowing: a replica taken out of reps under mu stays valid until
 * put_replicas. */
static void put_replicas(struct tr_samplers *s, struct replica **v, size_t n)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < n; i++)
		if (--v[i]->refs == 0 && v[i]->dropped)
			replica_free(v[i]);
	pthread_mutex_unlock(&s->mu);
}

/* Adds a replica for url unless there is one. Called with mu held. */
static int add_replica(struct tr_samplers *s, const char *url, const char *from)
{
	struct gnn_client_opts co = { .url = url, .name = url };
	struct replica *r, **grown;
	char host[256], port[16];

	/* With TLS the replica answers for the name it was found by. */
	if (split_tcp(from, host, sizeof(host), port, sizeof(port)) == GNN_OK)
		co.server_name = host;
	for (size_t i = 0; i < s->nreps; i++)
		if (strcmp(s->reps[i]->url, url) == 0)
			return GNN_OK;
	if (s->nreps == MAX_REPLICAS)
		return GNN_ERANGE;
	if ((grown = realloc(s->reps, (s->nreps + 1) * sizeof(*grown))) == NULL)
		return GNN_ENOMEM;
	s->reps = grown;
	if ((r = calloc(1, sizeof(*r))) == NULL || (r->url = strdup(url)) == NULL) {
		free(r);
		return GNN_ENOMEM;
	}
	r->from = from;
	co.timeout_ms = s->o.timeout_ms;
	co.retries = s->o.retries;
	co.failover = true;
	if (gnn_client_open(&co, &r->data) != GNN_OK)
		goto fail;
	co.timeout_ms = PROBE_TIMEOUT_MS < s->o.timeout_ms ? PROBE_TIMEOUT_MS : s->o.timeout_ms;
	co.retries = 0;
	co.failover = false;
	if (gnn_client_open(&co, &r->probe) != GNN_OK)
		goto fail;
	r->last_probe = -1e9;
	s->reps[s->nreps++] = r;
	GNN_INFO("sampler_replica_found", "replica=%s from=%s", url, from);
	return GNN_OK;
fail:
	gnn_client_close(r->data);
	free(r->url);
	free(r);
	return GNN_EIO;
}

/* Drops the replicas of entry `from` whose URL is not in keep[nkeep]: the
 * name no longer returns their address. Called with mu held. */
static void drop_missing(struct tr_samplers *s, const char *from, char (*keep)[NI_MAXHOST + 32], size_t nkeep)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nreps; i++) {
		struct replica *r = s->reps[i];
		bool kept = r->from != from;

		for (size_t k = 0; !kept && k < nkeep; k++)
			kept = strcmp(r->url, keep[k]) == 0;
		if (kept) {
			s->reps[j++] = r;
			continue;
		}
		GNN_INFO("sampler_replica_gone", "replica=%s from=%s reason=\"the name no longer resolves to it\"",
			 r->url, from);
		r->dropped = true;
		atomic_store(&r->up, false);
		if (r->refs == 0)
			replica_free(r);
	}
	s->nreps = j;
}

/* Resolves given URL u: adds replicas for new addresses and drops those of
 * addresses it no longer returns. A name that does not exist (a headless
 * Service without ready pods) drops them all; a failed lookup (no DNS
 * answer) changes nothing. */
static void resolve_one(struct tr_samplers *s, const char *u)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	char host[256], port[16], (*urls)[NI_MAXHOST + 32] = NULL;
	size_t n = 0, cap = 0;
	int e;

	if (split_tcp(u, host, sizeof(host), port, sizeof(port)) != GNN_OK) {
		pthread_mutex_lock(&s->mu);
		add_replica(s, u, u);   /* ipc:// or inproc:// */
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if ((e = getaddrinfo(host, port, &hints, &res)) != 0) {
		GNN_DEBUG("sampler_resolve_failed", "url=%s reason=\"%s\"", u, gai_strerror(e));
		if (e != EAI_NONAME && e != EAI_NODATA)
			return;
	}
	for (struct addrinfo *a = res; a != NULL; a = a->ai_next)
		cap++;
	if (cap > 0 && (urls = calloc(cap, sizeof(*urls))) == NULL) {
		freeaddrinfo(res);
		return;
	}
	for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
		char addr[NI_MAXHOST];

		if (getnameinfo(a->ai_addr, a->ai_addrlen, addr, sizeof(addr), NULL, 0, NI_NUMERICHOST) != 0)
			continue;
		snprintf(urls[n++], sizeof(urls[0]), a->ai_family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s", addr,
			 port);
	}
	if (res != NULL)
		freeaddrinfo(res);
	pthread_mutex_lock(&s->mu);
	drop_missing(s, u, urls, n);
	for (size_t i = 0; i < n; i++)
		add_replica(s, urls[i], u);
	pthread_mutex_unlock(&s->mu);
	free(urls);
	update_live_gauge(s);
}

/* ---- health ---- */

/* Takes an INFO answer from r: learns the graph from the first one and
 * sets aside replicas of another graph. True when r may be used. */
static bool take_info(struct tr_samplers *s, struct replica *r, nng_msg *reply)
{
	struct gnn_info info;
	const void *payload;
	size_t len;
	bool ok;

	if (gnn_reply_payload(reply, GNN_MSG_INFO_RESP, &payload, &len) != GNN_OK ||
	    gnn_decode_info_resp(payload, len, &info) != GNN_OK)
		return false;
	pthread_mutex_lock(&s->mu);
	if (!s->have_graph) {
		struct gnn_layout copy;

		if (gnn_layout_dup(&info.layout, &copy) == GNN_OK) {
			s->info = info;
			s->info.layout = copy;
			s->info.owned = NULL;
			s->have_graph = true;
		}
	}
	if (s->have_graph && (info.layout.graph_id != s->info.layout.graph_id ||
			      info.layout.num_nodes != s->info.layout.num_nodes)) {
		if (!r->wrong_graph)
			GNN_ERROR("sampler_wrong_graph", "replica=%s graph_id=%016" PRIx64 " expected=%016" PRIx64
				  " reason=\"this replica serves another graph: not used\"", r->url,
				  info.layout.graph_id, s->info.layout.graph_id);
		r->wrong_graph = true;
	}
	ok = s->have_graph && !r->wrong_graph;
	pthread_mutex_unlock(&s->mu);
	gnn_proto_release(info.owned);
	return ok;
}

/* INFO to every replica in v[n] at once (each bounded by the probe
 * timeout). One that answers is up once its data connection is too (both
 * sockets dial together; allow the probe timeout for it). */
static void probe_all(struct tr_samplers *s, struct replica **v, size_t n)
{
	struct gnn_call calls[MAX_ORDER];
	struct gnn_wbuf w[MAX_ORDER];
	bool ok[MAX_ORDER] = { false };
	double deadline;

	for (size_t i = 0; i < n; i++) {
		gnn_wbuf_init(&w[i]);
		gnn_encode_info_req(&w[i], atomic_fetch_add(&s->next_req, 1));
		calls[i] = (struct gnn_call){ .client = v[i]->probe, .req = &w[i] };
		v[i]->last_probe = gnn_now();
	}
	gnn_client_call_all(calls, n);
	deadline = gnn_now() + PROBE_TIMEOUT_MS / 1000.0;
	for (size_t i = 0; i < n; i++) {
		if (calls[i].rc == GNN_OK)
			ok[i] = take_info(s, v[i], calls[i].reply);
		while (ok[i] && !gnn_client_connected(v[i]->data) && gnn_now() < deadline && !atomic_load(&s->closing)) {
			struct timespec tick = { 0, 10 * 1000000L };

			nanosleep(&tick, NULL);
		}
		if (ok[i] && gnn_client_connected(v[i]->data) && !atomic_exchange(&v[i]->up, true)) {
			GNN_INFO("sampler_up", "replica=%s", v[i]->url);
			pthread_mutex_lock(&s->mu);
			v[i]->ever_up = true;
			pthread_cond_broadcast(&s->changed);
			pthread_mutex_unlock(&s->mu);
			update_live_gauge(s);
		}
		if (calls[i].reply != NULL)
			nng_msg_free(calls[i].reply);
		gnn_wbuf_free(&w[i]);
	}
}

static void set_down(struct tr_samplers *s, struct replica *r, int rc, const char *err)
{
	if (atomic_exchange(&r->up, false)) {
		GNN_WARN("sampler_down", "replica=%s code=%s reason=\"%s\"", r->url, gnn_errname(rc), err);
		update_live_gauge(s);
	}
	atomic_store(&s->resolve_soon, true);
	if (s->m_fail != NULL)
		gnn_counter_inc(s->m_fail);
}

/* Background: DNS every resolve_interval_s (every second while nothing is
 * known; within a second after a failure), INFO probes of the replicas
 * that are not up every PROBE_PERIOD_S (FIRST_PROBE_PERIOD_S until one
 * has answered once). */
static void *background(void *arg)
{
	struct tr_samplers *s = arg;
	double last_resolve = gnn_now();

	while (!atomic_load(&s->closing)) {
		struct timespec tick = { 0, 100 * 1000000L };
		struct replica *due[MAX_ORDER];
		double since = gnn_now() - last_resolve;
		size_t known, n = 0;

		pthread_mutex_lock(&s->mu);
		known = s->nreps;
		pthread_mutex_unlock(&s->mu);
		if (since >= (known == 0 ? 1.0 : s->o.resolve_interval_s) ||
		    (since >= RESOLVE_SOON_S && atomic_exchange(&s->resolve_soon, false))) {
			for (size_t i = 0; i < s->o.n && !atomic_load(&s->closing); i++)
				resolve_one(s, s->given[i]);
			last_resolve = gnn_now();
		}
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; i < s->nreps && n < MAX_ORDER; i++) {
			struct replica *r = s->reps[i];

			if (!atomic_load(&r->up) && !r->wrong_graph &&
			    gnn_now() - r->last_probe >= (r->ever_up ? PROBE_PERIOD_S : FIRST_PROBE_PERIOD_S)) {
				r->refs++;
				due[n++] = r;
			}
		}
		pthread_mutex_unlock(&s->mu);
		if (n > 0) {
			probe_all(s, due, n);
			put_replicas(s, due, n);
		}
		nanosleep(&tick, NULL);
	}
	return NULL;
}

int tr_samplers_open(const struct tr_samplers_opts *o, struct tr_samplers **out)
{
	struct tr_samplers *s;
	static const char *const none[1];
	int rc = GNN_ENOMEM;

	if (o->n == 0) {
		GNN_ERROR("bad_config", "reason=\"--samplers is required: the sampler URLs (tcp://HOST:PORT,...)\"");
		return GNN_EINVAL;
	}
	for (size_t i = 0; i < o->n; i++)
		if (check_url(o->urls[i]) != GNN_OK) {
			GNN_ERROR("bad_config", "samplers=\"%s\" reason=\"not a tcp://HOST:PORT, ipc:// or inproc:// URL\"",
				  o->urls[i]);
			return GNN_EINVAL;
		}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return GNN_ENOMEM;
	s->o = *o;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->changed, NULL);
	if ((s->given = calloc(o->n, sizeof(char *))) == NULL)
		goto fail;
	for (size_t i = 0; i < o->n; i++)
		if ((s->given[i] = strdup(o->urls[i])) == NULL)
			goto fail;
	if (o->metrics != NULL &&
	    (gnn_metrics_counter(o->metrics, "gnn_trainer_sampler_failures_total",
				 "Sampler calls that failed and were retried on another replica", none, 0, &s->m_fail) != GNN_OK ||
	     gnn_metrics_gauge(o->metrics, "gnn_trainer_samplers_live", "Sampler replicas answering", none, 0,
			       &s->m_live) != GNN_OK))
		goto fail;
	for (size_t i = 0; i < o->n; i++)
		resolve_one(s, s->given[i]);
	if (pthread_create(&s->thread, NULL, background, s) != 0) {
		rc = GNN_EIO;
		goto fail;
	}
	s->thread_started = true;
	*out = s;
	return GNN_OK;
fail:
	tr_samplers_close(s);
	return rc;
}

static size_t live_locked(struct tr_samplers *s)
{
	size_t live = 0;

	for (size_t i = 0; i < s->nreps; i++)
		live += atomic_load(&s->reps[i]->up);
	return live;
}

size_t tr_samplers_live(struct tr_samplers *s)
{
	size_t live;

	pthread_mutex_lock(&s->mu);
	live = live_locked(s);
	pthread_mutex_unlock(&s->mu);
	return live;
}

void tr_samplers_set_slow(struct tr_samplers *s, uint64_t hint, double waited_s)
{
	struct replica *r = NULL;
	char why[160];

	pthread_mutex_lock(&s->mu);
	if (live_locked(s) >= 2)
		for (size_t i = 0; i < s->nreps && r == NULL; i++)
			if (atomic_load(&s->reps[(hint + i) % s->nreps]->up))
				r = s->reps[(hint + i) % s->nreps];
	if (r != NULL)
		r->refs++;
	pthread_mutex_unlock(&s->mu);
	if (r == NULL)
		return;
	snprintf(why, sizeof(why), "slow: a minibatch request still unanswered after %.1f s was answered by "
		 "another replica", waited_s);
	set_down(s, r, GNN_ETIMEDOUT, why);
	put_replicas(s, &r, 1);
}

int tr_samplers_connect(struct tr_samplers *s, double wait_s, struct gnn_layout *g)
{
	double t0 = gnn_now(), last_log = t0;
	int rc;

	GNN_INFO("waiting_for_samplers", "samplers=%zu timeout_s=%.0f", s->o.n, wait_s);
	while (tr_samplers_live(s) == 0) {
		struct timespec tick = { 0, 100 * 1000000L };

		if (s->o.stop != NULL && s->o.stop())
			return GNN_ECLOSED;
		if (gnn_now() - t0 > wait_s) {
			GNN_ERROR("samplers_timeout", "samplers=\"%s%s\" waited_s=%.0f reason=\"no sampler answered INFO\"",
				  s->given[0], s->o.n > 1 ? ",..." : "", gnn_now() - t0);
			return GNN_ETIMEDOUT;
		}
		if (gnn_now() - last_log >= 10) {
			size_t nreps;

			pthread_mutex_lock(&s->mu);
			nreps = s->nreps;
			pthread_mutex_unlock(&s->mu);
			GNN_INFO("waiting_for_samplers", "samplers=\"%s%s\" resolved=%zu waited_s=%.0f", s->given[0],
				 s->o.n > 1 ? ",..." : "", nreps, gnn_now() - t0);
			last_log = gnn_now();
		}
		nanosleep(&tick, NULL);
	}
	pthread_mutex_lock(&s->mu);
	rc = gnn_layout_dup(&s->info.layout, g);
	pthread_mutex_unlock(&s->mu);
	if (rc != GNN_OK)
		return rc;
	GNN_INFO("samplers_ready", "live=%zu nodes=%" PRId64 " edges=%" PRId64 " parts=%" PRIu32 " feat_dim=%" PRIu32
		 " classes=%" PRIu32 " graph_id=%016" PRIx64 " waited_s=%.1f", tr_samplers_live(s), g->num_nodes,
		 g->num_edges, g->num_parts, g->feat_dim, g->num_classes, g->graph_id, gnn_now() - t0);
	return GNN_OK;
}

/* Sends req to the live replicas, starting at hint, until one answers with
 * want_type. A replica that times out, is unreachable or drops the
 * connection is set aside and the next one tried; an ERROR reply with
 * another code is the answer (another replica would say the same).
 * GNN_EUNAVAIL when no live replica answered. */
static int try_live(struct tr_samplers *s, uint64_t hint, const struct gnn_wbuf *req, uint16_t want_type,
		    nng_msg **reply, const void **payload, size_t *len, char *why, size_t why_len)
{
	struct replica *order[MAX_ORDER];
	size_t n = 0, used = 0, i;
	int rc = GNN_EUNAVAIL;

	snprintf(why, why_len, "no sampler replica is up");
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->nreps && n < MAX_ORDER; i++) {
		struct replica *r = s->reps[(hint + i) % s->nreps];

		if (atomic_load(&r->up)) {
			r->refs++;
			order[n++] = r;
		}
	}
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < n; i++) {
		char e[256];

		*reply = NULL;
		rc = gnn_client_call(order[i]->data, req, reply, e, sizeof(e));
		if (rc == GNN_OK && (rc = gnn_reply_payload(*reply, want_type, payload, len)) == GNN_OK)
			break;
		if (*reply != NULL) {
			nng_msg_free(*reply);
			*reply = NULL;
		}
		used += (size_t)snprintf(why + used, used < why_len ? why_len - used : 0, "%s%s: %s",
					 i ? "; " : "", order[i]->url, e[0] ? e : gnn_strerror(rc));
		if (used >= why_len)
			used = why_len - 1;
		if (rc != GNN_ETIMEDOUT && rc != GNN_EUNAVAIL && rc != GNN_EIO)
			break;
		set_down(s, order[i], rc, e);
		rc = GNN_EUNAVAIL;
	}
	put_replicas(s, order, n);
	return rc;
}

/* try_live, and while no replica is live (all failed, a rollout replaced
 * them, or none is known yet), waits for one to come up or be discovered:
 * at most one call's whole budget, timeout x (retries + 1). */
static int call_any(struct tr_samplers *s, uint64_t hint, const struct gnn_wbuf *req, uint16_t want_type,
		    nng_msg **reply, const void **payload, size_t *len, char *why, size_t why_len)
{
	double t0 = gnn_now(), budget = s->o.timeout_ms / 1000.0 * (s->o.retries + 1), last_log = t0;
	int rc;

	while ((rc = try_live(s, hint, req, want_type, reply, payload, len, why, why_len)) == GNN_EUNAVAIL) {
		struct timespec until;

		if (gnn_now() - t0 >= budget || atomic_load(&s->closing) || (s->o.stop != NULL && s->o.stop()))
			break;
		atomic_store(&s->resolve_soon, true);
		if (gnn_now() - last_log >= 5) {
			GNN_WARN("waiting_for_samplers", "reason=\"no sampler replica is live\" waited_s=%.0f timeout_s=%.0f",
				 gnn_now() - t0, budget);
			last_log = gnn_now();
		}
		gnn_deadline(CLOCK_REALTIME, 200, &until);
		pthread_mutex_lock(&s->mu);
		if (live_locked(s) == 0)
			pthread_cond_timedwait(&s->changed, &s->mu, &until);
		pthread_mutex_unlock(&s->mu);
	}
	return rc;
}

int tr_samplers_nodes(struct tr_samplers *s, uint8_t split, int64_t **ids, size_t *n)
{
	int64_t cursor = 0, *v = NULL;
	size_t cnt = 0, cap = 0;
	char err[1024];
	int rc = GNN_OK;

	while (cursor != -1) {
		struct gnn_wbuf w;
		struct gnn_nodes_resp r = { 0 };
		nng_msg *reply = NULL;
		const void *payload;
		size_t len;

		gnn_wbuf_init(&w);
		rc = gnn_encode_nodes_req(&w, atomic_fetch_add(&s->next_req, 1), split, NODES_PAGE, cursor);
		if (rc == GNN_OK)
			rc = call_any(s, (uint64_t)cnt, &w, GNN_MSG_NODES_RESP, &reply, &payload, &len, err, sizeof(err));
		gnn_wbuf_free(&w);
		if (rc == GNN_OK && (rc = gnn_decode_nodes_resp(payload, len, &r)) != GNN_OK)
			snprintf(err, sizeof(err), "malformed NODES reply");
		if (rc == GNN_OK && r.next_cursor != -1 && r.next_cursor <= cursor) {
			snprintf(err, sizeof(err), "NODES cursor went back from %" PRId64 " to %" PRId64, cursor,
				 r.next_cursor);
			rc = GNN_EPROTO;
		}
		if (rc == GNN_OK && cnt + r.n > cap) {
			size_t ncap = (cnt + r.n) * 2;
			int64_t *grown = realloc(v, ncap * sizeof(*v));

			if (grown == NULL)
				rc = GNN_ENOMEM;
			else {
				v = grown;
				cap = ncap;
			}
		}
		if (rc == GNN_OK) {
			if (r.n > 0) /* a partition without such nodes answers none: v may still be NULL */
				memcpy(v + cnt, r.ids, (size_t)r.n * sizeof(*v));
			cnt += r.n;
			cursor = r.next_cursor;
		}
		gnn_proto_release(r.owned);
		if (reply != NULL)
			nng_msg_free(reply);
		if (rc != GNN_OK) {
			GNN_ERROR("nodes_failed", "split=%u code=%s reason=\"%s\"", (unsigned)split, gnn_errname(rc), err);
			free(v);
			return rc;
		}
	}
	*ids = v;
	*n = cnt;
	return GNN_OK;
}

int tr_samplers_minibatch(struct tr_samplers *s, uint64_t hint, uint64_t req_id,
			  const struct gnn_minibatch_req *req, nng_msg **reply, struct gnn_minibatch *mb,
			  char *why, size_t why_len)
{
	struct gnn_wbuf w;
	const void *payload;
	size_t len;
	int rc;

	gnn_wbuf_init(&w);
	*reply = NULL;
	if ((rc = gnn_encode_minibatch_req(&w, req_id, req)) == GNN_OK)
		rc = call_any(s, hint, &w, GNN_MSG_MINIBATCH_RESP, reply, &payload, &len, why, why_len);
	gnn_wbuf_free(&w);
	if (rc == GNN_OK && (rc = gnn_decode_minibatch_resp(payload, len, mb)) != GNN_OK)
		snprintf(why, why_len, "malformed minibatch reply (%s)", gnn_errname(rc));
	if (rc != GNN_OK && *reply != NULL) {
		nng_msg_free(*reply);
		*reply = NULL;
	}
	return rc;
}

void tr_samplers_abort(struct tr_samplers *s)
{
	atomic_store(&s->closing, true);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nreps; i++) {
		gnn_client_abort(s->reps[i]->data);
		gnn_client_abort(s->reps[i]->probe);
	}
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->mu);
}

void tr_samplers_close(struct tr_samplers *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->closing, true);
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->mu);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->nreps; i++)
		replica_free(s->reps[i]);
	free(s->reps);
	if (s->given != NULL)
		for (size_t i = 0; i < s->o.n; i++)
			free(s->given[i]);
	free(s->given);
	if (s->have_graph)
		gnn_layout_free(&s->info.layout);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
