/* services.c - the graph stores and samplers: start them on free loopback
 * ports and wait until every one's /readyz says 200. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "pipeline.h"
#include "log.h"
#include "net.h"
#include "sys.h"

#define WAIT_LOG_PERIOD_S 10.0
#define READYZ_TIMEOUT_MS 1000

/* graphstore-i: partition i mod P of the output (store i is replica
 * i / P of it), served on ports[i] (nng) and ports[N + i] (HTTP), N the
 * number of stores. ports: [store nng | store http | sampler nng |
 * sampler http]. */
static int start_store(struct loc_run *r, size_t i, const int *ports)
{
	const struct loc_config *cfg = r->cfg;
	size_t N = (size_t)r->stores, p = i % (size_t)r->parts;
	struct loc_argv a = { 0 };
	char name[LOC_NAME_MAX];
	int rc;

	snprintf(name, sizeof(name), "graphstore-%zu", i);
	/* --wait-data 0: the partition output is complete already. */
	if ((rc = loc_argv_add(&a, "gnn-graphstore")) || (rc = loc_argv_add(&a, "--data=%s", r->partdir)) ||
	    (rc = loc_argv_add(&a, "--part=%zu", p)) ||
	    (rc = loc_argv_add(&a, "--listen=tcp://127.0.0.1:%d", ports[i])) ||
	    (rc = loc_argv_add(&a, "--http-addr=127.0.0.1")) ||
	    (rc = loc_argv_add(&a, "--http-port=%d", ports[N + i])) ||
	    (rc = loc_argv_add(&a, "--wait-data=0")) ||
	    (rc = loc_argv_add_opt(&a, "workers", cfg->store_workers, 1)) || (rc = loc_tls_args(r, &a, false)) ||
	    (cfg->store_emb_log && (rc = loc_argv_add(&a, "--emb-wal-dir=%s/emb-log/%s", r->workdir, name))))
		goto free_argv;
	rc = loc_proc_start(&r->procs, name, LOC_ROLE_STORE, &a, NULL);
free_argv:
	loc_argv_free(&a);
	return rc;
}

/* sampler-s over every graph store, on ports[2N + s] (nng) and
 * ports[2N + S + s] (HTTP); ports as start_store's. */
static int start_sampler(struct loc_run *r, size_t s, const int *ports)
{
	const struct loc_config *cfg = r->cfg;
	size_t N = (size_t)r->stores, S = (size_t)cfg->samplers;
	struct loc_argv a = { 0 };
	char name[LOC_NAME_MAX];
	int rc;

	snprintf(name, sizeof(name), "sampler-%zu", s);
	if ((rc = loc_argv_add(&a, "gnn-sampler")) || (rc = loc_argv_add(&a, "--graphstores=%s", r->store_urls)) ||
	    (rc = loc_argv_add(&a, "--listen=tcp://127.0.0.1:%d", ports[2 * N + s])) ||
	    (rc = loc_argv_add(&a, "--http-addr=127.0.0.1")) ||
	    (rc = loc_argv_add(&a, "--http-port=%d", ports[2 * N + S + s])) ||
	    (rc = loc_argv_add(&a, "--wait-stores=%lld", (long long)cfg->ready_timeout_s)) ||
	    (rc = loc_argv_add_opt(&a, "workers", cfg->sampler_workers, 1)) ||
	    (rc = loc_argv_add_opt(&a, "timeout-ms", cfg->store_timeout_ms, 1)) ||
	    (rc = loc_argv_add_opt(&a, "retries", cfg->store_retries, 0)) ||
	    (rc = loc_argv_add_opt(&a, "store-min-mb-per-s", cfg->store_min_mb_per_s, 1)) ||
	    (rc = loc_argv_add_opt(&a, "build-budget-mb", cfg->build_budget_mb, 1)) ||
	    (rc = loc_argv_add_opt(&a, "admission-wait-s", cfg->admission_wait_s, 1)) ||
	    (rc = loc_tls_args(r, &a, false)))
		goto free_argv;
	rc = loc_proc_start(&r->procs, name, LOC_ROLE_SAMPLER, &a, NULL);
free_argv:
	loc_argv_free(&a);
	return rc;
}

int loc_services_start(struct loc_run *r)
{
	const struct loc_config *cfg = r->cfg;
	size_t N = (size_t)r->parts * (size_t)cfg->graphstore_replicas, S = (size_t)cfg->samplers;
	int *ports = calloc(2 * (N + S), sizeof(*ports));
	int rc = GNN_ENOMEM;

	r->stores = (int)N;

	r->store_http = calloc(N, sizeof(*r->store_http));
	r->sampler_http = calloc(S, sizeof(*r->sampler_http));
	if (ports == NULL || r->store_http == NULL || r->sampler_http == NULL)
		goto free_ports;
	/* ports: [store nng | store http | sampler nng | sampler http] */
	if ((rc = loc_free_ports(ports, 2 * (N + S))) != GNN_OK)
		goto free_ports;
	memcpy(r->store_http, ports + N, N * sizeof(*ports));
	memcpy(r->sampler_http, ports + 2 * N + S, S * sizeof(*ports));
	r->store_urls = loc_url_list(r->dial_host, ports, N);
	r->sampler_urls = loc_url_list(r->dial_host, ports + 2 * N, S);
	if (r->store_urls == NULL || r->sampler_urls == NULL) {
		rc = GNN_ENOMEM;
		goto free_ports;
	}
	for (size_t i = 0; i < N && rc == GNN_OK; i++)
		rc = start_store(r, i, ports);
	for (size_t s = 0; s < S && rc == GNN_OK; s++)
		rc = start_sampler(r, s, ports);
	if (rc == GNN_OK)
		GNN_INFO("services_started", "graphstores=%s samplers=%s tls=%s", r->store_urls, r->sampler_urls,
			 cfg->tls ? "mutual" : "off");
free_ports:
	free(ports);
	return rc;
}

/* One server to wait for. */
struct pending {
	struct loc_proc *proc;
	int port;
	bool ready;
	char reason[192];
};

/* The body of a 503 without its newline, quotes made harmless for the
 * key="value" log format. */
static void clean_reason(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '"' || *p == '\n' || *p == '\r')
			*p = *p == '"' ? '\'' : ' ';
	for (size_t n = strlen(s); n > 0 && s[n - 1] == ' '; n--)
		s[n - 1] = '\0';
}

/* Every graph store and sampler of r into w (room for N + S), with its
 * HTTP port; returns how many. */
static size_t list_pending(const struct loc_run *r, struct pending *w)
{
	size_t N = (size_t)r->stores, S = (size_t)r->cfg->samplers, n = 0, ns = 0, nm = 0;

	for (size_t i = 0; i < r->procs.n; i++) {
		struct loc_proc *p = r->procs.v[i];

		if (p->role == LOC_ROLE_STORE && ns < N)
			w[n++] = (struct pending){ .proc = p, .port = r->store_http[ns++] };
		else if (p->role == LOC_ROLE_SAMPLER && nm < S)
			w[n++] = (struct pending){ .proc = p, .port = r->sampler_http[nm++] };
	}
	return n;
}

/* "https" and "localhost" with --tls, else "http" and "127.0.0.1": what
 * the readiness lines name. */
static void readyz_at(const struct loc_run *r, const char **scheme, const char **host)
{
	*scheme = r->https != NULL ? "https" : "http";
	*host = r->https != NULL ? LOC_TLS_HOST : "127.0.0.1";
}

/* Asks every server of w not ready yet for /readyz once, logging those
 * that now are; a refusal's reason is kept for the waiting lines. Returns
 * how many are still not ready. */
static size_t poll_ready(const struct loc_run *r, struct pending *w, size_t n, double t0)
{
	const char *scheme, *host;
	size_t left = 0;

	readyz_at(r, &scheme, &host);
	for (size_t i = 0; i < n; i++) {
		char body[128], why[128];
		int code, rc;

		if (w[i].ready)
			continue;
		rc = loc_http_get(r->https, w[i].port, "/readyz", READYZ_TIMEOUT_MS, &code, body, sizeof(body), why,
				  sizeof(why));
		if (rc == GNN_OK && code == 200) {
			w[i].ready = true;
			GNN_INFO("component_ready", "component=%s url=%s://%s:%d/readyz waited_s=%.1f", w[i].proc->name,
				 scheme, host, w[i].port, gnn_now() - t0);
			continue;
		}
		if (rc == GNN_OK)
			snprintf(w[i].reason, sizeof(w[i].reason), "%d %s", code, body);
		else
			snprintf(w[i].reason, sizeof(w[i].reason), "%s", why);
		clean_reason(w[i].reason);
		left++;
	}
	return left;
}

/* A waiting_for line per server not ready; timed_out: a not_ready error
 * instead, and the first of them is the run's failure. */
static void log_pending(struct loc_run *r, const struct pending *w, size_t n, double t0, bool timed_out)
{
	const char *scheme, *host;

	readyz_at(r, &scheme, &host);
	for (size_t i = 0; i < n; i++) {
		if (w[i].ready)
			continue;
		GNN_LOG(timed_out ? GNN_LOG_ERROR : GNN_LOG_INFO, timed_out ? "not_ready" : "waiting_for",
			"component=%s url=%s://%s:%d/readyz reason=\"%s\" waited_s=%.0f", w[i].proc->name, scheme, host,
			w[i].port, w[i].reason, gnn_now() - t0);
		if (timed_out && r->failed == NULL) {
			r->failed = w[i].proc;
			r->failure = "not ready within --ready-timeout-s";
		}
	}
}

int loc_services_wait_ready(struct loc_run *r)
{
	const struct loc_config *cfg = r->cfg;
	struct pending *w = calloc((size_t)r->stores + (size_t)cfg->samplers, sizeof(*w));
	double t0 = gnn_now(), next_log = t0 + WAIT_LOG_PERIOD_S;
	size_t n;
	int rc = GNN_OK;

	if (w == NULL)
		return GNN_ENOMEM;
	n = list_pending(r, w);
	while (poll_ready(r, w, n, t0) > 0) {
		if ((rc = loc_tick(r, NULL)) != GNN_OK)
			goto free_pending;
		if (gnn_now() >= next_log || gnn_now() - t0 > (double)cfg->ready_timeout_s) {
			bool timed_out = gnn_now() - t0 > (double)cfg->ready_timeout_s;

			log_pending(r, w, n, t0, timed_out);
			if (timed_out) {
				rc = GNN_ETIMEDOUT;
				goto free_pending;
			}
			next_log += WAIT_LOG_PERIOD_S;
		}
		/* Do not hammer servers that are still loading. */
		for (int k = 0; k < 4 && rc == GNN_OK; k++)
			rc = loc_tick(r, NULL);
		if (rc != GNN_OK)
			goto free_pending;
	}
	r->t_ready = gnn_now() - t0;
	GNN_INFO("services_ready", "graphstores=%d samplers=%lld seconds=%.1f", r->stores, (long long)cfg->samplers,
		 r->t_ready);
free_pending:
	free(w);
	return rc;
}
