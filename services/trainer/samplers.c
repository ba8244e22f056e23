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
#define NODES_PAGE 65536

struct replica {
	char *url;                  /* resolved: tcp://10.0.0.5:7100 */
	const char *from;           /* the --samplers entry it came from */
	struct gnn_client *data;    /* minibatch and NODES calls */
	struct gnn_client *probe;   /* INFO checks: short timeout, no retries */
	atomic_bool up;
	bool wrong_graph;           /* answered INFO for another graph: never used */
	double last_probe;
};

struct tr_samplers {
	struct tr_samplers_opts o;
	char **given;               /* copies of o.urls */
	pthread_mutex_t mu;         /* guards reps, nreps, graph */
	struct replica **reps;
	size_t nreps;
	bool have_graph;
	struct gnn_info info;       /* first INFO answer: the graph */
	int64_t *offsets;
	pthread_t thread;
	bool thread_started;
	atomic_bool closing;
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

/* Adds a replica for url unless there is one. Called with mu held. */
static int add_replica(struct tr_samplers *s, const char *url, const char *from)
{
	struct gnn_client_opts co = { .url = url, .name = url };
	struct replica *r, **grown;

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
	if (gnn_client_open(&co, &r->data) != GNN_OK)
		goto fail;
	co.timeout_ms = PROBE_TIMEOUT_MS < s->o.timeout_ms ? PROBE_TIMEOUT_MS : s->o.timeout_ms;
	co.retries = 0;
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

/* Resolves every given URL and adds replicas for new addresses. */
static void resolve_all(struct tr_samplers *s)
{
	for (size_t i = 0; i < s->o.n; i++) {
		const char *u = s->given[i];
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
		char host[256], port[16], addr[NI_MAXHOST], url[NI_MAXHOST + 32];
		int e;

		if (split_tcp(u, host, sizeof(host), port, sizeof(port)) != GNN_OK) {
			pthread_mutex_lock(&s->mu);
			add_replica(s, u, u);   /* ipc:// or inproc:// */
			pthread_mutex_unlock(&s->mu);
			continue;
		}
		if ((e = getaddrinfo(host, port, &hints, &res)) != 0) {
			GNN_DEBUG("sampler_resolve_failed", "url=%s reason=\"%s\"", u, gai_strerror(e));
			continue;
		}
		for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
			if (getnameinfo(a->ai_addr, a->ai_addrlen, addr, sizeof(addr), NULL, 0, NI_NUMERICHOST) != 0)
				continue;
			snprintf(url, sizeof(url), a->ai_family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s", addr, port);
			pthread_mutex_lock(&s->mu);
			add_replica(s, url, u);
			pthread_mutex_unlock(&s->mu);
		}
		freeaddrinfo(res);
	}
}

/* ---- health ---- */

static void update_live_gauge(struct tr_samplers *s)
{
	if (s->m_live != NULL)
		gnn_gauge_set(s->m_live, (double)tr_samplers_live(s));
}

/* INFO to one replica: learns the graph from the first answer and sets
 * aside replicas of another graph. */
static void probe(struct tr_samplers *s, struct replica *r)
{
	struct gnn_wbuf w;
	struct gnn_info info;
	nng_msg *reply = NULL;
	const void *payload;
	size_t len;
	char err[256];
	bool ok = false;

	gnn_wbuf_init(&w);
	r->last_probe = gnn_now();
	if (gnn_encode_info_req(&w, atomic_fetch_add(&s->next_req, 1)) != GNN_OK ||
	    gnn_client_call(r->probe, &w, &reply, err, sizeof(err)) != GNN_OK ||
	    gnn_reply_payload(reply, GNN_MSG_INFO_RESP, &payload, &len) != GNN_OK ||
	    gnn_decode_info_resp(payload, len, &info) != GNN_OK)
		goto out;
	pthread_mutex_lock(&s->mu);
	if (!s->have_graph) {
		size_t nb = ((size_t)info.num_parts + 1) * sizeof(int64_t);

		if ((s->offsets = malloc(nb)) != NULL) {
			memcpy(s->offsets, info.offsets, nb);
			s->info = info;
			s->info.offsets = s->offsets;
			s->info.owned = NULL;
			s->have_graph = true;
		}
	}
	if (s->have_graph && (info.graph_id != s->info.graph_id || info.num_nodes != s->info.num_nodes)) {
		if (!r->wrong_graph)
			GNN_ERROR("sampler_wrong_graph", "replica=%s graph_id=%016" PRIx64 " expected=%016" PRIx64
				  " reason=\"this replica serves another graph: not used\"", r->url, info.graph_id,
				  s->info.graph_id);
		r->wrong_graph = true;
	}
	ok = s->have_graph && !r->wrong_graph;
	pthread_mutex_unlock(&s->mu);
	gnn_proto_release(info.owned);
out:
	if (ok && !atomic_exchange(&r->up, true)) {
		GNN_INFO("sampler_up", "replica=%s", r->url);
		update_live_gauge(s);
	}
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&w);
}

static void set_down(struct tr_samplers *s, struct replica *r, int rc, const char *err)
{
	if (atomic_exchange(&r->up, false)) {
		GNN_WARN("sampler_down", "replica=%s code=%s reason=\"%s\"", r->url, gnn_errname(rc), err);
		update_live_gauge(s);
	}
	if (s->m_fail != NULL)
		gnn_counter_inc(s->m_fail);
}

/* Background: DNS every resolve_interval_s, INFO probes of replicas that are
 * not up every PROBE_PERIOD_S. */
static void *background(void *arg)
{
	struct tr_samplers *s = arg;
	double last_resolve = gnn_now();

	while (!atomic_load(&s->closing)) {
		struct timespec tick = { 0, 100 * 1000000L };
		size_t n;

		size_t known;

		pthread_mutex_lock(&s->mu);
		known = s->nreps;
		pthread_mutex_unlock(&s->mu);
		/* Until a name resolves (a headless Service lists only ready
		 * samplers) look again every second, then at the set interval. */
		if (gnn_now() - last_resolve >= (known == 0 ? 1.0 : s->o.resolve_interval_s)) {
			resolve_all(s);
			last_resolve = gnn_now();
		}
		pthread_mutex_lock(&s->mu);
		n = s->nreps;
		pthread_mutex_unlock(&s->mu);
		for (size_t i = 0; i < n && !atomic_load(&s->closing); i++) {
			struct replica *r;

			pthread_mutex_lock(&s->mu);
			r = s->reps[i];
			pthread_mutex_unlock(&s->mu);
			if (!atomic_load(&r->up) && !r->wrong_graph && gnn_now() - r->last_probe >= PROBE_PERIOD_S)
				probe(s, r);
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
	resolve_all(s);
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

size_t tr_samplers_live(struct tr_samplers *s)
{
	size_t live = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nreps; i++)
		live += atomic_load(&s->reps[i]->up);
	pthread_mutex_unlock(&s->mu);
	return live;
}

int tr_samplers_connect(struct tr_samplers *s, double wait_s, struct tr_graph *g)
{
	double t0 = gnn_now(), last_log = t0;

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
	*g = (struct tr_graph){ .num_nodes = s->info.num_nodes, .num_edges = s->info.num_edges,
				.num_parts = s->info.num_parts, .feat_dim = s->info.feat_dim,
				.num_classes = s->info.num_classes, .graph_id = s->info.graph_id,
				.offsets = s->offsets };
	pthread_mutex_unlock(&s->mu);
	GNN_INFO("samplers_ready", "live=%zu nodes=%" PRId64 " edges=%" PRId64 " parts=%" PRIu32 " feat_dim=%" PRIu32
		 " classes=%" PRIu32 " graph_id=%016" PRIx64 " waited_s=%.1f", tr_samplers_live(s), g->num_nodes,
		 g->num_edges, g->num_parts, g->feat_dim, g->num_classes, g->graph_id, gnn_now() - t0);
	return GNN_OK;
}

/* Sends req to live replicas starting at hint until one answers with
 * want_type. A replica that times out or is unreachable is set aside; an
 * ERROR reply with another code is the answer (another replica would say
 * the same). */
static int call_any(struct tr_samplers *s, uint64_t hint, const struct gnn_wbuf *req, uint16_t want_type,
		    nng_msg **reply, const void **payload, size_t *len, char *err, size_t err_len)
{
	struct replica *order[64];
	size_t n = 0, used = 0;
	int rc = GNN_EUNAVAIL;

	snprintf(err, err_len, "no sampler replica is up");
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nreps && n < 64; i++) {
		struct replica *r = s->reps[(hint + i) % s->nreps];

		if (atomic_load(&r->up))
			order[n++] = r;
	}
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		char e[256];

		*reply = NULL;
		rc = gnn_client_call(order[i]->data, req, reply, e, sizeof(e));
		if (rc == GNN_OK && (rc = gnn_reply_payload(*reply, want_type, payload, len)) == GNN_OK)
			return GNN_OK;
		if (*reply != NULL) {
			nng_msg_free(*reply);
			*reply = NULL;
		}
		used += (size_t)snprintf(err + used, used < err_len ? err_len - used : 0, "%s%s: %s",
					 i ? "; " : "", order[i]->url, e[0] ? e : gnn_strerror(rc));
		if (used >= err_len)
			used = err_len - 1;
		if (rc != GNN_ETIMEDOUT && rc != GNN_EUNAVAIL && rc != GNN_EIO)
			return rc;
		set_down(s, order[i], rc, e);
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
			  char *err, size_t err_len)
{
	struct gnn_wbuf w;
	const void *payload;
	size_t len;
	int rc;

	gnn_wbuf_init(&w);
	*reply = NULL;
	if ((rc = gnn_encode_minibatch_req(&w, req_id, req)) == GNN_OK)
		rc = call_any(s, hint, &w, GNN_MSG_MINIBATCH_RESP, reply, &payload, &len, err, err_len);
	gnn_wbuf_free(&w);
	if (rc == GNN_OK && (rc = gnn_decode_minibatch_resp(payload, len, mb)) != GNN_OK)
		snprintf(err, err_len, "malformed minibatch reply (%s)", gnn_errname(rc));
	if (rc != GNN_OK && *reply != NULL) {
		nng_msg_free(*reply);
		*reply = NULL;
	}
	return rc;
}

void tr_samplers_close(struct tr_samplers *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->closing, true);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->nreps; i++) {
		gnn_client_close(s->reps[i]->data);
		gnn_client_close(s->reps[i]->probe);
		free(s->reps[i]->url);
		free(s->reps[i]);
	}
	free(s->reps);
	if (s->given != NULL)
		for (size_t i = 0; i < s->o.n; i++)
			free(s->given[i]);
	free(s->given);
	free(s->offsets);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
