/* tls.c - see tls.h. */
#include "tls.h"

#include <errno.h>
#include <gnutls/x509.h>
#include <nng/supplemental/tls/tls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "tlsengine.h"

#define TLS_NOT_AFTER_METRIC "gnn_tls_certificate_not_after_seconds"
#define TLS_HANDSHAKES_METRIC "gnn_tls_handshakes_total"
enum { OWN, CA }; /* the certificates of a domain */

#define MAX_PEM_BYTES (1 << 20)   /* a CA bundle, a certificate chain or a key */
#define MAX_HOST 256
#define EXPIRY_WARN_S (7 * 86400) /* a certificate this close to its end is logged at start */

struct gnn_tls {
	char *ca, *cert, *key;        /* the files' PEM text */
	nng_tls_config *server;       /* shared by every listener */
	int64_t not_after[2];         /* OWN, CA: seconds since the epoch */
};

static struct gnn_tls *data_plane;
/* The engine under nng's TLS in this process: chosen by gnn_tls_setup's
 * paths, applied by the first domain with files (before any nng TLS
 * configuration exists, as nng requires), then fixed. */
static const char *engine_choice = GNN_TLS_ENGINE_DEFAULT;
static enum engine_state { ENGINE_UNSET, ENGINE_GNUTLS, ENGINE_MBEDTLS } engine_state;

/* The whole of file path as a string (*out, malloc'd); what ("ca",
 * "cert", "key") names it in a message. */
static int read_pem(const char *what, const char *path, char **out)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n;

	*out = NULL;
	if (f == NULL) {
		GNN_ERROR("tls_bad_file", "file=%s option=%s reason=\"%s\"", path, what, strerror(errno));
		return GNN_EINVAL;
	}
	if ((buf = malloc(MAX_PEM_BYTES + 1)) == NULL) {
		fclose(f);
		return GNN_ENOMEM;
	}
	n = fread(buf, 1, MAX_PEM_BYTES + 1, f);
	fclose(f);
	buf[n > MAX_PEM_BYTES ? MAX_PEM_BYTES : n] = '\0';
	if (n > MAX_PEM_BYTES || strstr(buf, "-----BEGIN ") == NULL) {
		GNN_ERROR("tls_bad_file", "file=%s option=%s reason=\"%s\"", path, what,
			  n > MAX_PEM_BYTES ? "larger than 1 MB" : "not PEM (no -----BEGIN line)");
		free(buf);
		return GNN_EINVAL;
	}
	*out = buf;
	return GNN_OK;
}

/* A configuration of mode with t's CA, certificate and key, the peer's
 * certificate required. */
static int new_config(const struct gnn_tls *t, nng_tls_mode mode, nng_tls_config **out)
{
	nng_tls_config *c;
	int rv;

	if ((rv = nng_tls_config_alloc(&c, mode)) != 0)
		return rv;
	if ((rv = nng_tls_config_auth_mode(c, NNG_TLS_AUTH_MODE_REQUIRED)) != 0 ||
	    (rv = nng_tls_config_ca_chain(c, t->ca, NULL)) != 0 ||
	    (rv = nng_tls_config_own_cert(c, t->cert, t->key, NULL)) != 0) {
		nng_tls_config_free(c);
		return rv;
	}
	*out = c;
	return 0;
}

/* The not-after time of the first certificate of pem (*out). mbed TLS has
 * parsed the files already; GnuTLS (libmicrohttpd's) reads the date. */
static int not_after(const char *pem, int64_t *out)
{
	gnutls_x509_crt_t crt;
	gnutls_datum_t d = { (unsigned char *)pem, (unsigned int)strlen(pem) };
	time_t t;
	int rc = GNN_EINVAL;

	if (gnutls_x509_crt_init(&crt) < 0)
		return GNN_ENOMEM;
	if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) >= 0 &&
	    (t = gnutls_x509_crt_get_expiration_time(crt)) != (time_t)-1) {
		*out = (int64_t)t;
		rc = GNN_OK;
	}
	gnutls_x509_crt_deinit(crt);
	return rc;
}

/* t (seconds since the epoch) as 2026-11-27T17:24:58Z in buf. */
static const char *iso_time(int64_t t, char buf[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "%lld", (long long)t);
	return buf;
}

/* Reads both certificates' ends: one already over stops the process (its
 * every handshake would fail), one within EXPIRY_WARN_S is logged. */
static int check_dates(const char *domain, const struct gnn_tls_paths *p, struct gnn_tls *t)
{
	const char *files[2] = { p->cert, p->ca }, *what[2] = { "cert", "ca" };
	int64_t now = (int64_t)time(NULL);
	char end[32];

	for (int i = 0; i < 2; i++) {
		if (not_after(i == OWN ? t->cert : t->ca, &t->not_after[i]) != GNN_OK) {
			GNN_ERROR("tls_bad_file", "domain=%s file=%s option=%s reason=\"no certificate GnuTLS can read "
				  "the end of validity of\"", domain, files[i], what[i]);
			return GNN_EINVAL;
		}
		if (t->not_after[i] <= now) {
			GNN_ERROR("tls_bad_file", "domain=%s file=%s option=%s not_after=%s reason=\"the certificate has "
				  "expired: every handshake would fail\"", domain, files[i], what[i],
				  iso_time(t->not_after[i], end));
			return GNN_EINVAL;
		}
		if (t->not_after[i] - now < EXPIRY_WARN_S)
			GNN_WARN("tls_cert_expiring", "domain=%s file=%s option=%s days_left=%.1f note=\"renew it and "
				 "restart (docs/security.md)\"", domain, files[i], what[i],
				 (double)(t->not_after[i] - now) / 86400.0);
	}
	return GNN_OK;
}

/* Reads and parses p's files into *out. */
static int load(const char *domain, const struct gnn_tls_paths *p, struct gnn_tls **out)
{
	struct gnn_tls *t = calloc(1, sizeof(*t));
	int rc, rv;

	*out = NULL;
	if (t == NULL)
		return GNN_ENOMEM;
	if ((rc = read_pem("ca", p->ca, &t->ca)) != GNN_OK || (rc = read_pem("cert", p->cert, &t->cert)) != GNN_OK ||
	    (rc = read_pem("key", p->key, &t->key)) != GNN_OK)
		goto fail;
	/* Parsing happens here: a CA, certificate or key the engine refuses
	 * is reported now rather than as failed handshakes later. */
	if ((rv = new_config(t, NNG_TLS_MODE_SERVER, &t->server)) != 0) {
		GNN_ERROR("tls_bad_file", "domain=%s ca=%s cert=%s key=%s reason=\"%s%s%s\"", domain, p->ca, p->cert,
			  p->key, nng_strerror(rv), engine_state == ENGINE_GNUTLS ? ": " : "",
			  engine_state == ENGINE_GNUTLS ? gnn_tlsengine_last_error() : "");
		rc = GNN_EINVAL;
		goto fail;
	}
	if ((rc = check_dates(domain, p, t)) != GNN_OK)
		goto fail;
	*out = t;
	return GNN_OK;
fail:
	gnn_tls_free(t);
	return rc;
}

void gnn_tls_free(struct gnn_tls *t)
{
	if (t == NULL)
		return;
	if (t->server != NULL)
		nng_tls_config_free(t->server);
	free(t->ca);
	free(t->cert);
	free(t->key);
	free(t);
}

/* Puts engine (a name --tls-engine allows) under nng's TLS, once: a
 * second, different choice is a bug of the caller (GNN_EINVAL). */
static int apply_engine(const char *engine)
{
	enum engine_state want = strcmp(engine, "mbedtls") == 0 ? ENGINE_MBEDTLS : ENGINE_GNUTLS;
	int rc;

	if (engine_state != ENGINE_UNSET) {
		if (engine_state == want)
			return GNN_OK;
		GNN_ERROR("bad_config", "reason=\"the TLS engine is already %s; a process runs one\"",
			  engine_state == ENGINE_GNUTLS ? "gnutls" : "mbedtls");
		return GNN_EINVAL;
	}
	/* mbedtls: libnng's built-in engine, which nothing replaced */
	if (want == ENGINE_GNUTLS && (rc = gnn_tlsengine_register()) != GNN_OK)
		return rc;
	engine_state = want;
	return GNN_OK;
}

/* The suites the engine offers, for the links line (buf). */
static const char *engine_suites(char *buf, size_t len)
{
	size_t n, used = 0;
	const char *const *names = gnn_tlsengine_suites(&n);

	if (engine_state != ENGINE_GNUTLS)
		return "libnng-default";
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "", names[i]);
	return buf;
}

int gnn_tls_domain(const char *domain, const char *prefix, const struct gnn_tls_paths *p, struct gnn_tls **out)
{
	int set = (p->ca != NULL) + (p->cert != NULL) + (p->key != NULL), rc;
	char ends[2][32], suites[160];

	*out = NULL;
	if (set == 0) {
		GNN_INFO("links", "domain=%s tls=off note=\"no --%s-ca, --%s-cert, --%s-key: plain TCP, unauthenticated, "
			 "open to anyone who can reach the ports (docs/security.md)\"", domain, prefix, prefix, prefix);
		return GNN_OK;
	}
	if (set != 3) {
		GNN_ERROR("bad_config", "reason=\"--%s-ca, --%s-cert and --%s-key go together (--%s-%s missing)\"", prefix,
			  prefix, prefix, prefix, p->ca == NULL ? "ca" : p->cert == NULL ? "cert" : "key");
		return GNN_EINVAL;
	}
	if ((rc = apply_engine(p->engine != NULL ? p->engine : engine_choice)) != GNN_OK ||
	    (rc = load(domain, p, out)) != GNN_OK)
		return rc;
	GNN_INFO("links", "domain=%s tls=mutual ca=%s cert=%s cert_not_after=%s ca_not_after=%s engine=%s suites=%s",
		 domain, p->ca, p->cert, iso_time((*out)->not_after[OWN], ends[OWN]),
		 iso_time((*out)->not_after[CA], ends[CA]), engine_state == ENGINE_GNUTLS ? "gnutls" : "mbedtls",
		 engine_suites(suites, sizeof(suites)));
	return GNN_OK;
}

int gnn_tls_setup(const struct gnn_tls_paths *p)
{
	if (p->engine != NULL)
		engine_choice = p->engine;
	return gnn_tls_domain("data", "tls", p, &data_plane);
}

void gnn_tls_teardown(void)
{
	gnn_tls_free(data_plane);
	data_plane = NULL;
}

const struct gnn_tls *gnn_tls_data_plane(void)
{
	return data_plane;
}

void gnn_tls_pem(const struct gnn_tls *t, const char **ca, const char **cert, const char **key)
{
	*ca = t->ca;
	*cert = t->cert;
	*key = t->key;
}

/* The series of gnn_tls_handshakes_total, one per suite the engine offers,
 * and what each held at the last render. */
struct handshake_series {
	size_t n;
	const char *const *suites;
	struct gnn_counter *c[8];
	uint64_t last[8];
};

static void render_handshakes(void *ctx)
{
	struct handshake_series *h = ctx;

	for (size_t i = 0; i < h->n; i++) {
		uint64_t now = gnn_tlsengine_handshakes(h->suites[i]);

		gnn_counter_add(h->c[i], (double)(now - h->last[i]));
		h->last[i] = now;
	}
}

/* gnn_tls_handshakes_total{engine,suite} in reg, once per registry, when
 * the engine is ours (libnng's own tells nothing of its handshakes). */
static int handshake_metrics(struct gnn_metrics *reg)
{
	static const char *const labels[] = { "engine", "suite" };
	static struct handshake_series series; /* one registry per process uses it */
	struct gnn_counter *fam;
	int rc;

	if (engine_state != ENGINE_GNUTLS || gnn_metrics_find_counter(reg, TLS_HANDSHAKES_METRIC, &fam) == GNN_OK)
		return GNN_OK;
	if (series.n > 0) /* another registry has it: a bug */
		return GNN_EINTERNAL;
	if ((rc = gnn_metrics_counter(reg, TLS_HANDSHAKES_METRIC, "TLS handshakes this process completed, by "
				      "the engine under nng and the suite negotiated (docs/security.md).", labels, 2,
				      &fam)) != GNN_OK)
		return rc;
	series.suites = gnn_tlsengine_suites(&series.n);
	if (series.n > sizeof(series.c) / sizeof(series.c[0]))
		return GNN_EINTERNAL;
	for (size_t i = 0; i < series.n; i++)
		if ((rc = gnn_counter_labels(fam, (const char *const[]){ "gnutls", series.suites[i] }, 2,
					     &series.c[i])) != GNN_OK)
			return rc;
	return gnn_metrics_on_render(reg, render_handshakes, &series);
}

int gnn_tls_metrics(const struct gnn_tls *t, const char *domain, struct gnn_metrics *reg)
{
	static const char *const labels[] = { "domain", "certificate" };
	static const char *const which[] = { "own", "ca" };
	struct gnn_gauge *fam, *g;
	int rc;

	if (t == NULL)
		return GNN_OK;
	if (gnn_metrics_find_gauge(reg, TLS_NOT_AFTER_METRIC, &fam) != GNN_OK &&
	    (rc = gnn_metrics_gauge(reg, TLS_NOT_AFTER_METRIC, "When a certificate this process presents (own) or "
				    "trusts (ca) stops being valid, seconds since the epoch.", labels, 2, &fam)) != GNN_OK)
		return rc;
	for (int i = 0; i < 2; i++) {
		if ((rc = gnn_gauge_labels(fam, (const char *const[]){ domain, which[i] }, 2, &g)) != GNN_OK)
			return rc;
		gnn_gauge_set(g, (double)t->not_after[i]);
	}
	return handshake_metrics(reg);
}

/* url as the TLS transport's (tls+tcp://...) into buf, and its host (no
 * brackets) into host. */
static int tls_url(const char *url, char *buf, size_t len, char host[MAX_HOST])
{
	const char *rest, *end;
	size_t n;

	if (strncmp(url, "tcp://", 6) == 0)
		rest = url + 6;
	else if (strncmp(url, "tls+tcp://", 10) == 0)
		rest = url + 10;
	else
		return NNG_EINVAL;
	if ((size_t)snprintf(buf, len, "tls+tcp://%s", rest) >= len)
		return NNG_EINVAL;
	if (*rest == '[')
		end = strchr(++rest, ']');
	else
		end = strrchr(rest, ':');
	if (end == NULL || (n = (size_t)(end - rest)) == 0 || n >= MAX_HOST)
		return NNG_EADDRINVAL;
	memcpy(host, rest, n);
	host[n] = '\0';
	return 0;
}

int gnn_tls_listen(nng_socket sock, const char *url, const struct gnn_tls *t, nng_listener *out)
{
	char u[1024], host[MAX_HOST];
	nng_listener l;
	int rv;

	if (t == NULL)
		return nng_listen(sock, url, out, 0);
	if ((rv = tls_url(url, u, sizeof(u), host)) != 0 || (rv = nng_listener_create(&l, sock, u)) != 0)
		return rv;
	if ((rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, t->server)) != 0 || (rv = nng_listener_start(l, 0)) != 0) {
		nng_listener_close(l);
		return rv;
	}
	if (out != NULL)
		*out = l;
	return 0;
}

int gnn_tls_dial(nng_socket sock, const char *url, const struct gnn_tls *t, const char *server_name, nng_dialer *out,
		 int flags)
{
	char u[1024], host[MAX_HOST];
	nng_tls_config *c = NULL;
	nng_dialer d;
	int rv;

	if (t == NULL)
		return nng_dial(sock, url, out, flags);
	if ((rv = tls_url(url, u, sizeof(u), host)) != 0 || (rv = nng_dialer_create(&d, sock, u)) != 0)
		return rv;
	/* The server must present a certificate for the host dialled; the
	 * dialer holds its own reference to the configuration. */
	if ((rv = new_config(t, NNG_TLS_MODE_CLIENT, &c)) != 0 ||
	    (rv = nng_tls_config_server_name(c, server_name != NULL ? server_name : host)) != 0 ||
	    (rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, c)) != 0 || (rv = nng_dialer_start(d, flags)) != 0) {
		nng_dialer_close(d);
		goto out;
	}
	if (out != NULL)
		*out = d;
out:
	if (c != NULL)
		nng_tls_config_free(c);
	return rv;
}
