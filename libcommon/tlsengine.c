/* tlsengine.c - see tlsengine.h. */
#include "tlsengine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <nng/nng.h>
#include <nng/supplemental/tls/engine.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "log.h"

/* A send takes this much of the caller's buffer at a time: about 16
 * records, so one completion of the caller's operation per 256 KiB rather
 * than per 16 KiB. */
#define SEND_CHUNK (256u << 10)
/* A receive returns once it has this much even if the caller's buffer
 * is larger (bounded holding; the SP transports read exact lengths). */
#define RECV_HOLD (4u << 20)
#define ERR_LEN 256
/* Records without data GnuTLS may take in a row in one receive (key
 * updates, empty records) before the peer is taken for a flood. */
#define MAX_EMPTY_RECORDS 1024

/* A connection's life: the handshake, then records both ways; FAILED
 * keeps the error that ended it, CLOSED follows a close (close_notify
 * sent as far as nng's buffer takes it). */
enum conn_state { CONN_HANDSHAKE, CONN_OPEN, CONN_FAILED, CONN_CLOSED };

struct nng_tls_engine_config {
	nng_tls_mode mode;
	nng_tls_auth_mode auth;
	gnutls_certificate_credentials_t cred;
	char *server_name; /* client: the name the server's certificate must carry */
};

/* Ciphertext GnuTLS wrote that nng's 16 KiB buffer has not taken yet. */
struct outq {
	uint8_t *buf;
	size_t off, len, cap;
};

struct nng_tls_engine_conn {
	void *tls; /* nng's connection: nng_tls_engine_send/recv */
	gnutls_session_t s;
	enum conn_state state;
	int err;          /* CONN_FAILED: the nng error */
	int io_err;       /* an nng error of the lower layer, seen by pull or flush */
	bool starved;     /* the last pull found nng's buffer empty: a TCP receive is pending */
	bool client, verified;
	const char *name;        /* client: the server's expected name (the config's) */
	unsigned verify_status;  /* client: GnuTLS's verdict on the server's certificate */
	struct outq out;
	size_t sent_held; /* plaintext of the caller's last bytes whose records wait in out */
	size_t recv_got;  /* plaintext already written into the caller's receive buffer */
};

static gnutls_priority_t priority;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_rc;
static _Thread_local char last_err[ERR_LEN];

/* The suites offered, most preferred first (register_once orders them),
 * and the handshakes that negotiated each. */
enum { AES128, AES256, CHACHA, NSUITES13, TLS12 = NSUITES13, NSUITES };
static const char *const suite_names[NSUITES] = { "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
						  "TLS_CHACHA20_POLY1305_SHA256", "TLS1.2" };
static const char *order[NSUITES];
static _Atomic uint64_t handshakes[NSUITES];
static atomic_bool logged[NSUITES];

const char *gnn_tlsengine_last_error(void)
{
	return last_err;
}

const char *const *gnn_tlsengine_suites(size_t *n)
{
	*n = order[0] != NULL ? NSUITES : 0;
	return order;
}

uint64_t gnn_tlsengine_handshakes(const char *suite)
{
	for (int i = 0; i < NSUITES; i++)
		if (strcmp(suite, suite_names[i]) == 0)
			return atomic_load(&handshakes[i]);
	return 0;
}

/* Records gnutls's error rv for gnn_tlsengine_last_error (what: the call)
 * and returns the nng error for it. */
static int config_err(const char *what, int rv)
{
	snprintf(last_err, sizeof(last_err), "%s: %s", what, gnutls_strerror(rv));
	return rv == GNUTLS_E_MEMORY_ERROR ? NNG_ENOMEM : NNG_EINVAL;
}

/* ---- configuration ------------------------------------------------------------------------- */

static int config_init(nng_tls_engine_config *cfg, nng_tls_mode mode)
{
	int rv;

	cfg->mode = mode;
	/* nng's defaults: a client verifies the server, a server asks nothing */
	cfg->auth = mode == NNG_TLS_MODE_CLIENT ? NNG_TLS_AUTH_MODE_REQUIRED : NNG_TLS_AUTH_MODE_NONE;
	if ((rv = gnutls_certificate_allocate_credentials(&cfg->cred)) < 0)
		return config_err("gnutls_certificate_allocate_credentials", rv);
	return 0;
}

static void config_fini(nng_tls_engine_config *cfg)
{
	if (cfg->cred != NULL)
		gnutls_certificate_free_credentials(cfg->cred);
	free(cfg->server_name);
}

static int config_server(nng_tls_engine_config *cfg, const char *name)
{
	char *dup = NULL;

	if (name != NULL && (dup = strdup(name)) == NULL)
		return NNG_ENOMEM;
	free(cfg->server_name);
	cfg->server_name = dup;
	return 0;
}

static int config_auth(nng_tls_engine_config *cfg, nng_tls_auth_mode mode)
{
	/* OPTIONAL (verify a certificate only if one comes) is not used here. */
	if (mode != NNG_TLS_AUTH_MODE_NONE && mode != NNG_TLS_AUTH_MODE_REQUIRED)
		return NNG_ENOTSUP;
	cfg->auth = mode;
	return 0;
}

static int config_ca_chain(nng_tls_engine_config *cfg, const char *certs, const char *crl)
{
	gnutls_datum_t d = { (unsigned char *)certs, (unsigned int)strlen(certs) };
	int rv;

	if ((rv = gnutls_certificate_set_x509_trust_mem(cfg->cred, &d, GNUTLS_X509_FMT_PEM)) < 0)
		return config_err("the CA certificates", rv);
	if (rv == 0) {
		snprintf(last_err, sizeof(last_err), "the CA file holds no certificate");
		return NNG_EINVAL;
	}
	if (crl != NULL) {
		d = (gnutls_datum_t){ (unsigned char *)crl, (unsigned int)strlen(crl) };
		if ((rv = gnutls_certificate_set_x509_crl_mem(cfg->cred, &d, GNUTLS_X509_FMT_PEM)) < 0)
			return config_err("the revocation list", rv);
	}
	return 0;
}

static int config_own_cert(nng_tls_engine_config *cfg, const char *cert, const char *key, const char *pass)
{
	gnutls_datum_t c = { (unsigned char *)cert, (unsigned int)strlen(cert) };
	gnutls_datum_t k = { (unsigned char *)key, (unsigned int)strlen(key) };
	int rv;

	/* GnuTLS also checks that the key is the certificate's. */
	if ((rv = gnutls_certificate_set_x509_key_mem2(cfg->cred, &c, &k, GNUTLS_X509_FMT_PEM, pass, 0)) < 0)
		return config_err("the certificate and its key", rv);
	return 0;
}

static int config_version(nng_tls_engine_config *cfg, nng_tls_version lo, nng_tls_version hi)
{
	/* The range is the engine's (1.3, and 1.2 for peers without it);
	 * nothing here narrows it (gnn_tls_* never asks to). */
	(void)cfg;
	if (lo > hi || hi < NNG_TLS_1_2 || lo > NNG_TLS_1_3)
		return NNG_ENOTSUP;
	return 0;
}

/* ---- the wire below: nng's 16 KiB buffers ---------------------------------------------------- */

/* GnuTLS's push: records go to c->out, never refused (flush moves them). */
static ssize_t push(gnutls_transport_ptr_t p, const void *data, size_t len)
{
	struct nng_tls_engine_conn *c = p;
	struct outq *q = &c->out;

	if (q->off > 0 && q->off + q->len + len > q->cap) {
		memmove(q->buf, q->buf + q->off, q->len);
		q->off = 0;
	}
	if (q->len + len > q->cap) {
		size_t cap = q->cap > 0 ? q->cap : 32u << 10;
		uint8_t *b;

		while (cap < q->len + len)
			cap *= 2;
		if ((b = realloc(q->buf, cap)) == NULL) {
			c->io_err = NNG_ENOMEM;
			gnutls_transport_set_errno(c->s, ENOMEM);
			return -1;
		}
		q->buf = b;
		q->cap = cap;
	}
	memcpy(q->buf + q->off + q->len, data, len);
	q->len += len;
	return (ssize_t)len;
}

/* GnuTLS's pull: what nng's receive buffer holds; EAGAIN when empty (nng
 * then reads the socket and calls this connection again). */
static ssize_t pull(gnutls_transport_ptr_t p, void *data, size_t len)
{
	struct nng_tls_engine_conn *c = p;
	size_t n = len;
	int rv = nng_tls_engine_recv(c->tls, data, &n);

	c->starved = rv == NNG_EAGAIN;
	if (rv == 0)
		return (ssize_t)n;
	if (rv != NNG_EAGAIN)
		c->io_err = rv;
	gnutls_transport_set_errno(c->s, rv == NNG_EAGAIN ? EAGAIN : EIO);
	return -1;
}

/* Non-blocking only: GnuTLS waits on nothing; pull says EAGAIN. */
static int pull_timeout(gnutls_transport_ptr_t p, unsigned int ms)
{
	(void)p;
	(void)ms;
	return 1;
}

/* Moves c->out into nng's send buffer as far as it takes: 0 (maybe some
 * left), or nng's error. */
static int flush(struct nng_tls_engine_conn *c)
{
	struct outq *q = &c->out;

	while (q->len > 0) {
		size_t n = q->len;
		int rv = nng_tls_engine_send(c->tls, q->buf + q->off, &n);

		if (rv == NNG_EAGAIN)
			return 0;
		if (rv != 0)
			return c->io_err = rv;
		q->off += n;
		q->len -= n;
	}
	q->off = 0;
	return 0;
}

/* ---- connections ---------------------------------------------------------------------------- */

/* Whether host is "LABEL.REST" for a DNS SAN "*.REST" of the server's own
 * certificate: a wildcard of one whole left-most label, the rule of mbed
 * TLS under libnng before. GnuTLS wants two labels after the wildcard,
 * which would refuse the chart's certificates (`*.graphstore`, dialled
 * as graphstore-0.graphstore). */
static bool wildcard_match(gnutls_session_t s, const char *host)
{
	const gnutls_datum_t *chain;
	unsigned n = 0;
	gnutls_x509_crt_t crt;
	const char *rest = strchr(host, '.');
	struct in6_addr a;
	bool ok = false;

	if (rest == NULL || rest == host || rest[1] == '\0' || inet_pton(AF_INET, host, &a) == 1 ||
	    (chain = gnutls_certificate_get_peers(s, &n)) == NULL || n == 0 || gnutls_x509_crt_init(&crt) < 0)
		return false;
	if (gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) >= 0) {
		for (unsigned i = 0; !ok; i++) {
			char san[256];
			size_t len = sizeof(san) - 1;
			int type = gnutls_x509_crt_get_subject_alt_name(crt, i, san, &len, NULL);

			if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
				break;
			if (type != GNUTLS_SAN_DNSNAME || len < 3 || len >= sizeof(san))
				continue;
			san[len] = '\0';
			ok = san[0] == '*' && san[1] == '.' && strchr(san + 2, '*') == NULL &&
			     strcasecmp(san + 2, rest + 1) == 0;
		}
	}
	gnutls_x509_crt_deinit(crt);
	return ok;
}

/* A client's check of the server's certificate: GnuTLS's (chain, dates,
 * the server-auth purpose, the name, IP SANs included), with the name
 * also matching a one-label wildcard (wildcard_match). */
static int verify_server(gnutls_session_t s)
{
	struct nng_tls_engine_conn *c = gnutls_session_get_ptr(s);
	gnutls_typed_vdata_st data[2] = {
		{ .type = GNUTLS_DT_KEY_PURPOSE_OID, .data = (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER },
		{ .type = GNUTLS_DT_DNS_HOSTNAME, .data = (unsigned char *)c->name },
	};

	if (gnutls_certificate_verify_peers(s, data, c->name != NULL ? 2 : 1, &c->verify_status) < 0)
		c->verify_status = GNUTLS_CERT_INVALID;
	if (c->verify_status == (GNUTLS_CERT_INVALID | GNUTLS_CERT_UNEXPECTED_OWNER) && wildcard_match(s, c->name))
		c->verify_status = 0;
	return c->verify_status == 0 ? 0 : GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
}

static int conn_init(nng_tls_engine_conn *c, void *tls, nng_tls_engine_config *cfg)
{
	unsigned flags = GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL | GNUTLS_NO_TICKETS;
	int rv;

	c->tls = tls;
	c->client = cfg->mode == NNG_TLS_MODE_CLIENT;
	c->state = CONN_HANDSHAKE;
	c->verify_status = GNUTLS_CERT_INVALID; /* until verify_server says otherwise */
	if ((rv = gnutls_init(&c->s, (c->client ? GNUTLS_CLIENT : GNUTLS_SERVER) | flags)) < 0) {
		c->s = NULL;
		return rv == GNUTLS_E_MEMORY_ERROR ? NNG_ENOMEM : NNG_ECRYPTO;
	}
	if ((rv = gnutls_priority_set(c->s, priority)) < 0 ||
	    (rv = gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, cfg->cred)) < 0)
		goto fail;
	gnutls_transport_set_ptr(c->s, c);
	gnutls_transport_set_push_function(c->s, push);
	gnutls_transport_set_pull_function(c->s, pull);
	gnutls_transport_set_pull_timeout_function(c->s, pull_timeout);
	gnutls_handshake_set_timeout(c->s, 0); /* nng times the SP handshake */
	if (c->client) {
		const char *name = cfg->server_name;
		struct in6_addr a6;

		/* SNI carries names only (RFC 6066); verification also matches
		 * an IP address against the certificate's IP SANs. */
		if (name != NULL && strchr(name, ':') == NULL && inet_pton(AF_INET, name, &a6) != 1 &&
		    (rv = gnutls_server_name_set(c->s, GNUTLS_NAME_DNS, name, strlen(name))) < 0)
			goto fail;
		c->name = name;
		gnutls_session_set_ptr(c->s, c);
		if (cfg->auth == NNG_TLS_AUTH_MODE_REQUIRED)
			gnutls_session_set_verify_function(c->s, verify_server);
	} else if (cfg->auth == NNG_TLS_AUTH_MODE_REQUIRED) {
		gnutls_certificate_server_set_request(c->s, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(c->s, NULL, 0);
	}
	return 0;
fail:
	gnutls_deinit(c->s);
	c->s = NULL;
	return rv == GNUTLS_E_MEMORY_ERROR ? NNG_ENOMEM : NNG_ECRYPTO;
}

static void conn_fini(nng_tls_engine_conn *c)
{
	if (c->s != NULL)
		gnutls_deinit(c->s);
	free(c->out.buf);
}

static void conn_close(nng_tls_engine_conn *c)
{
	if (c->state == CONN_OPEN) {
		/* close_notify, as far as nng's buffer takes it; nobody waits */
		(void)gnutls_bye(c->s, GNUTLS_SHUT_WR);
		(void)flush(c);
	}
	if (c->state != CONN_FAILED)
		c->state = CONN_CLOSED;
}

/* The nng error for GnuTLS's rv on c: a refused peer is EPEERAUTH (nng
 * counts it as `auth`), a lower-layer failure is that layer's error. */
static int nng_err(struct nng_tls_engine_conn *c, int rv)
{
	switch (rv) {
	case GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR:
	case GNUTLS_E_CERTIFICATE_ERROR:
	case GNUTLS_E_CERTIFICATE_REQUIRED:
	case GNUTLS_E_NO_CERTIFICATE_FOUND:
	case GNUTLS_E_FATAL_ALERT_RECEIVED:
	case GNUTLS_E_INSUFFICIENT_CREDENTIALS:
	case GNUTLS_E_NO_CIPHER_SUITES:
	case GNUTLS_E_UNKNOWN_CIPHER_SUITE:
	case GNUTLS_E_NO_COMMON_KEY_SHARE:
	case GNUTLS_E_UNSUPPORTED_VERSION_PACKET:
		return NNG_EPEERAUTH;
	case GNUTLS_E_MEMORY_ERROR:
		return NNG_ENOMEM;
	case GNUTLS_E_PREMATURE_TERMINATION:
	case GNUTLS_E_PULL_ERROR:
	case GNUTLS_E_PUSH_ERROR:
		return c->io_err != 0 ? c->io_err : NNG_ECLOSED;
	default:
		return NNG_ECRYPTO;
	}
}

static int fail(struct nng_tls_engine_conn *c, int err)
{
	c->state = CONN_FAILED;
	c->err = err;
	return err;
}

/* Ends c for GnuTLS's error rv: the alert that says why goes out first
 * (GnuTLS sends none by itself), so that the peer, mbed TLS or this
 * engine, fails with EPEERAUTH and counts it as `auth` rather than as a
 * hang-up. Returns the nng error. */
static int abort_conn(struct nng_tls_engine_conn *c, int rv)
{
	int err = nng_err(c, rv);

	if (rv != GNUTLS_E_FATAL_ALERT_RECEIVED && rv != GNUTLS_E_PREMATURE_TERMINATION &&
	    rv != GNUTLS_E_PULL_ERROR && rv != GNUTLS_E_PUSH_ERROR && gnutls_alert_send_appropriate(c->s, rv) == 0)
		(void)flush(c);
	return fail(c, err);
}

/* Counts a handshake by its suite (TLS 1.2's together), and logs the
 * first of each. */
static void count_suite(struct nng_tls_engine_conn *c)
{
	const char *suite = gnutls_ciphersuite_get(c->s);
	bool tls13 = gnutls_protocol_get_version(c->s) == GNUTLS_TLS1_3;
	int i = TLS12;

	if (tls13) {
		for (i = 0; i < NSUITES13 && (suite == NULL || strcmp(suite, suite_names[i]) != 0); i++)
			;
		if (i == NSUITES13) /* a suite this engine does not offer */
			return;
	}
	atomic_fetch_add(&handshakes[i], 1);
	if (!atomic_exchange(&logged[i], true))
		GNN_INFO("tls_negotiated", "engine=gnutls side=%s version=%s suite=%s note=\"the first handshake of "
			 "this kind; gnn_tls_handshakes_total counts them all%s\"", c->client ? "dial" : "listen",
			 gnutls_protocol_get_name(gnutls_protocol_get_version(c->s)), suite != NULL ? suite : "?",
			 tls13 ? "" : "; TLS 1.2: a peer without TLS 1.3 (libnng's own engine)");
}

/* Logs why a handshake failed (nng 1.5.2 only counts it), rate-limited. */
static void log_refusal(struct nng_tls_engine_conn *c, int rv)
{
	gnutls_datum_t why = { NULL, 0 };
	unsigned status = c->client ? c->verify_status : gnutls_session_get_verify_cert_status(c->s);

	if (rv == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR && status != 0 &&
	    gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0) < 0)
		why.data = NULL;
	if (rv == GNUTLS_E_FATAL_ALERT_RECEIVED)
		GNN_WARN_LIMITED("tls_handshake_failed", "side=%s reason=\"%s: %s (the peer refused this "
				 "process)\"", c->client ? "dial" : "listen", gnutls_strerror(rv),
				 gnutls_alert_get_name(gnutls_alert_get(c->s)));
	else
		GNN_WARN_LIMITED("tls_handshake_failed", "side=%s reason=\"%s%s%s\"",
				 c->client ? "dial" : "listen", gnutls_strerror(rv), why.data != NULL ? ": " : "",
				 why.data != NULL ? (const char *)why.data : "");
	gnutls_free(why.data);
}

/* Whether GnuTLS's rv asks to be called again although the wire may hold
 * more: GnuTLS also says AGAIN after a record it took without data for
 * the caller (a TLS 1.3 key update, which it sends by itself after 2^24
 * records; an empty record; a short read). The bytes behind that record
 * may already sit in nng's buffer, where no TCP callback will announce
 * them: waiting then stalls the link for good (seen on a cluster, every
 * call to a graph store timing out). Only a pull that found nng's buffer
 * empty (c->starved: a TCP receive is pending) means wait. */
static bool call_again(struct nng_tls_engine_conn *c, int rv)
{
	return (rv == GNUTLS_E_AGAIN || rv == GNUTLS_E_INTERRUPTED) && !c->starved;
}

/* Drives the handshake: 0 once it is done and its last flight is in nng's
 * buffer, NNG_EAGAIN while it waits for the wire, else the error. */
static int conn_handshake(nng_tls_engine_conn *c)
{
	int rv, err;

	switch (c->state) {
	case CONN_FAILED:
		return c->err;
	case CONN_CLOSED:
		return NNG_ECLOSED;
	case CONN_OPEN:
		if ((err = flush(c)) != 0)
			return fail(c, err);
		return c->out.len > 0 ? NNG_EAGAIN : 0;
	case CONN_HANDSHAKE:
		break;
	}
	for (int n = 0; n == 0 || call_again(c, rv); n++) {
		if (n == MAX_EMPTY_RECORDS) {
			rv = GNUTLS_E_TOO_MANY_HANDSHAKE_PACKETS;
			break;
		}
		c->starved = false;
		rv = gnutls_handshake(c->s);
	}
	if ((err = flush(c)) != 0)
		return fail(c, err);
	if (rv == GNUTLS_E_AGAIN || rv == GNUTLS_E_INTERRUPTED)
		return NNG_EAGAIN;
	if (rv < 0) {
		if ((err = nng_err(c, rv)) == NNG_EPEERAUTH || err == NNG_ECRYPTO)
			log_refusal(c, rv);
		return abort_conn(c, rv);
	}
	c->state = CONN_OPEN;
	c->verified = gnutls_certificate_get_peers(c->s, &(unsigned){ 0 }) != NULL &&
		      (c->client ? c->verify_status : gnutls_session_get_verify_cert_status(c->s)) == 0;
	count_suite(c);
	return c->out.len > 0 ? NNG_EAGAIN : 0;
}

/* Encrypts up to SEND_CHUNK of buf; see tlsengine.h for why so much. The
 * records of the caller's last bytes must all be in nng's buffer before
 * the send completes (nobody would call again to move them): until then
 * NNG_EAGAIN, and the same call again finishes it. */
static int conn_send(nng_tls_engine_conn *c, const uint8_t *buf, size_t *szp)
{
	size_t want = *szp, n = 0;
	int rv;

	if ((rv = conn_handshake(c)) != 0 && !(rv == NNG_EAGAIN && c->state == CONN_OPEN))
		return rv;
	if (c->sent_held > 0) {
		if (c->out.len > 0)
			return NNG_EAGAIN;
		*szp = c->sent_held;
		c->sent_held = 0;
		return 0;
	}
	if (c->out.len >= SEND_CHUNK)
		return NNG_EAGAIN;
	if (want > SEND_CHUNK)
		want = SEND_CHUNK;
	while (n < want) {
		ssize_t k = gnutls_record_send(c->s, buf + n, want - n);

		if (k < 0)
			return abort_conn(c, (int)k);
		n += (size_t)k;
	}
	if ((rv = flush(c)) != 0)
		return fail(c, rv);
	if (n < *szp || c->out.len == 0) { /* more of this buffer follows, or all is in nng's */
		*szp = n;
		return 0;
	}
	c->sent_held = n;
	return NNG_EAGAIN;
}

/* Decrypts into buf until it is full (or RECV_HOLD): nng's SP transports
 * ask for exact lengths, so one completion per message part rather than
 * per 16 KiB record. */
static int conn_recv(nng_tls_engine_conn *c, uint8_t *buf, size_t *szp)
{
	size_t want = *szp, got = c->recv_got;
	int rv, empty = 0;

	if ((rv = conn_handshake(c)) != 0 && !(rv == NNG_EAGAIN && c->state == CONN_OPEN))
		return rv;
	if (want > RECV_HOLD)
		want = RECV_HOLD;
	while (got < want) {
		ssize_t k;

		c->starved = false;
		k = gnutls_record_recv(c->s, buf + got, want - got);
		if (k > 0) {
			got += (size_t)k;
			empty = 0;
			continue;
		}
		if (call_again(c, (int)k) && ++empty <= MAX_EMPTY_RECORDS)
			continue;
		if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) {
			if (c->starved)
				break;
			k = GNUTLS_E_TOO_MANY_EMPTY_PACKETS;
		}
		rv = k == 0 ? fail(c, NNG_ECLOSED) : abort_conn(c, (int)k);
		if (got == 0)
			return rv;
		c->recv_got = 0; /* hand over what came; the next call gets the error */
		*szp = got;
		return 0;
	}
	(void)flush(c); /* a post-handshake answer (key update) */
	if (got < want) {
		c->recv_got = got;
		return NNG_EAGAIN;
	}
	c->recv_got = 0;
	*szp = got;
	return 0;
}

static bool conn_verified(nng_tls_engine_conn *c)
{
	return c->state == CONN_OPEN && c->verified;
}

/* ---- the engine ----------------------------------------------------------------------------- */

static nng_tls_engine_config_ops config_ops = {
	.size = sizeof(nng_tls_engine_config),
	.init = config_init,
	.fini = config_fini,
	.server = config_server,
	.auth = config_auth,
	.ca_chain = config_ca_chain,
	.own_cert = config_own_cert,
	.version = config_version,
};

static nng_tls_engine_conn_ops conn_ops = {
	.size = sizeof(nng_tls_engine_conn),
	.init = conn_init,
	.fini = conn_fini,
	.close = conn_close,
	.handshake = conn_handshake,
	.recv = conn_recv,
	.send = conn_send,
	.verified = conn_verified,
};

static char description[96];

static nng_tls_engine engine = {
	.version = NNG_TLS_ENGINE_V1,
	.config_ops = &config_ops,
	.conn_ops = &conn_ops,
	.name = "gnutls",
	.description = description,
	.fips_mode = false,
};

static void register_once(void)
{
	/* AES-GCM is fast only with AES-NI and carry-less multiply. */
	bool aesni = __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
	/* TLS 1.2 (ECDHE, AEAD) only for a peer without 1.3: libnng's own
	 * engine, during a rolling upgrade or with --tls-engine mbedtls. */
	const char *prio = aesni ? "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
				   "+CHACHA20-POLY1305:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"
				 : "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+CHACHA20-POLY1305:+AES-128-GCM:"
				   "+AES-256-GCM:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE";
	const char *where = NULL;
	int rv;

	for (int i = 0; i < NSUITES13; i++)
		order[i] = suite_names[aesni ? i : (i + CHACHA) % NSUITES13];
	order[TLS12] = suite_names[TLS12];
	snprintf(description, sizeof(description), "GnuTLS %s, TLS 1.3", gnutls_check_version(NULL));
	if ((rv = gnutls_priority_init(&priority, prio, &where)) < 0) {
		GNN_ERROR("tls_engine", "engine=gnutls reason=\"priority string refused at '%s': %s\"",
			  where != NULL ? where : "", gnutls_strerror(rv));
		once_rc = GNN_EINTERNAL;
		return;
	}
	(void)nng_tls_engine_name(); /* nng must be initialised before an engine registers */
	if ((rv = nng_tls_engine_register(&engine)) != 0) {
		GNN_ERROR("tls_engine", "engine=gnutls nng=%s reason=\"libnng refuses a TLS engine of ABI V1 (%s): "
			  "this build needs libnng 1.5.2 (1.5 to 1.8 take it); --tls-engine mbedtls runs on nng's "
			  "own\"", nng_version(), nng_strerror(rv));
		once_rc = GNN_EVERSION;
		return;
	}
	once_rc = GNN_OK;
}

int gnn_tlsengine_register(void)
{
	pthread_once(&once, register_once);
	return once_rc;
}
