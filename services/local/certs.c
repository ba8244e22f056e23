/* certs.c - gnn-local --tls: throwaway certificates in WORKDIR/tls, made
 * with GnuTLS's API at every start (no openssl needed), and the flags that
 * hand them to the components (docs/security.md, "Certificates for a local
 * run").
 *
 * Two trust domains, as on a cluster: the data plane (graph stores,
 * samplers, trainers, HTTPS of every component) and the trainers' ring.
 * Each has a CA of its own, ECDSA P-256, valid LOC_CERT_DAYS days, whose
 * private key never leaves this process (nothing can sign another
 * certificate of the run), and one certificate for every process of the
 * domain: subjectAltName DNS:localhost (what gnn-local dials with TLS: libnng's
 * own engine, --tls-engine mbedtls, matches no IP address), extendedKeyUsage serverAuth
 * and clientAuth (each end of a link presents one). Keys are written 0600,
 * in a folder 0700. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "err.h"
#include "log.h"
#include "net.h"
#include "pipeline.h"

/* A key and its certificate, kept in memory while the run's are made. */
struct keycert {
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
};

static void keycert_free(struct keycert *k)
{
	if (k->crt != NULL)
		gnutls_x509_crt_deinit(k->crt);
	if (k->key != NULL)
		gnutls_x509_privkey_deinit(k->key);
	k->crt = NULL;
	k->key = NULL;
}

static int gtls_fail(const char *what, int err)
{
	GNN_ERROR("tls_certificate_failed", "step=%s error=\"%s\"", what, gnutls_strerror(err));
	return GNN_EINTERNAL;
}

/* A fresh key and a certificate for it, named cn: a CA (self-signed) when
 * ca is NULL, else a leaf for DNS:localhost signed by ca. */
static int make(const char *cn, const struct keycert *ca, struct keycert *out)
{
	unsigned char serial[16], kid[64];
	size_t kid_len = sizeof(kid);
	time_t now = time(NULL);
	int e;

	if ((e = gnutls_x509_privkey_init(&out->key)) < 0)
		return gtls_fail("privkey_init", e);
	if ((e = gnutls_x509_privkey_generate(out->key, GNUTLS_PK_ECDSA,
					      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0)
		return gtls_fail("privkey_generate", e);
	if ((e = gnutls_x509_crt_init(&out->crt)) < 0)
		return gtls_fail("crt_init", e);
	if ((e = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
		return gtls_fail("rnd", e);
	serial[0] &= 0x7f; /* a positive serial number */
	serial[0] |= 0x01;
	if ((e = gnutls_x509_crt_set_version(out->crt, 3)) < 0 ||
	    (e = gnutls_x509_crt_set_serial(out->crt, serial, sizeof(serial))) < 0 ||
	    (e = gnutls_x509_crt_set_activation_time(out->crt, now - 3600)) < 0 ||
	    (e = gnutls_x509_crt_set_expiration_time(out->crt, now + (time_t)LOC_CERT_DAYS * 86400)) < 0 ||
	    (e = gnutls_x509_crt_set_dn_by_oid(out->crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn))) < 0 ||
	    (e = gnutls_x509_crt_set_key(out->crt, out->key)) < 0 ||
	    (e = gnutls_x509_crt_set_basic_constraints(out->crt, ca == NULL, -1)) < 0)
		return gtls_fail("crt_set", e);
	if (ca == NULL)
		e = gnutls_x509_crt_set_key_usage(out->crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
	else if ((e = gnutls_x509_crt_set_key_usage(out->crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) >= 0 &&
		 (e = gnutls_x509_crt_set_subject_alt_name(out->crt, GNUTLS_SAN_DNSNAME, LOC_TLS_HOST,
							   (unsigned)strlen(LOC_TLS_HOST), GNUTLS_FSAN_SET)) >= 0 &&
		 (e = gnutls_x509_crt_set_key_purpose_oid(out->crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) >= 0)
		e = gnutls_x509_crt_set_key_purpose_oid(out->crt, GNUTLS_KP_TLS_WWW_CLIENT, 0);
	if (e < 0)
		return gtls_fail("crt_set_extensions", e);
	if ((e = gnutls_x509_crt_get_key_id(out->crt, 0, kid, &kid_len)) < 0 ||
	    (e = gnutls_x509_crt_set_subject_key_id(out->crt, kid, kid_len)) < 0)
		return gtls_fail("crt_key_id", e);
	kid_len = sizeof(kid);
	if (ca != NULL && ((e = gnutls_x509_crt_get_subject_key_id(ca->crt, kid, &kid_len, NULL)) < 0 ||
			   (e = gnutls_x509_crt_set_authority_key_id(out->crt, kid, kid_len)) < 0))
		return gtls_fail("crt_authority_key_id", e);
	if (ca == NULL)
		e = gnutls_x509_crt_sign2(out->crt, out->crt, out->key, GNUTLS_DIG_SHA256, 0);
	else
		e = gnutls_x509_crt_sign2(out->crt, ca->crt, ca->key, GNUTLS_DIG_SHA256, 0);
	if (e < 0)
		return gtls_fail("crt_sign", e);
	return GNN_OK;
}

/* Writes d to path with mode (also when the file existed with another). */
static int write_pem(const char *path, const gnutls_datum_t *d, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	size_t done = 0;
	ssize_t k;
	int rc = GNN_EIO;

	if (fd < 0) {
		GNN_ERROR("write_failed", "path=%s error=\"%s\"", path, strerror(errno));
		return GNN_EIO;
	}
	if (fchmod(fd, mode) != 0)
		goto fail;
	while (done < d->size) {
		k = write(fd, d->data + done, d->size - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			goto fail;
		done += (size_t)k;
	}
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	return GNN_OK;
fail:
	GNN_ERROR("write_failed", "path=%s error=\"%s\"", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

static int write_crt(const char *path, gnutls_x509_crt_t crt)
{
	gnutls_datum_t d = { NULL, 0 };
	int e = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), rc;

	if (e < 0)
		return gtls_fail("crt_export", e);
	rc = write_pem(path, &d, 0644);
	gnutls_free(d.data);
	return rc;
}

/* The key as unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY", as openssl
 * writes it), mode 0600. */
static int write_key(const char *path, gnutls_x509_privkey_t key)
{
	gnutls_datum_t d = { NULL, 0 };
	int e = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d), rc;

	if (e < 0)
		return gtls_fail("privkey_export", e);
	rc = write_pem(path, &d, 0600);
	gnutls_free(d.data);
	return rc;
}

static int set_path(char *dst, const char *dir, const char *name)
{
	if ((size_t)snprintf(dst, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX) {
		GNN_ERROR("bad_config", "option=--workdir reason=\"TLS file path too long\"");
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* One domain: a CA named ca_cn and one certificate named cn, into
 * DIR/PREFIXca.crt, PREFIXcert.crt, PREFIXcert.key. */
static int make_domain(const char *dir, const char *prefix, const char *ca_cn, const char *cn,
		       struct loc_tls_files *f)
{
	struct keycert ca = { 0 }, leaf = { 0 };
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "%sca.crt", prefix);
	if ((rc = set_path(f->ca, dir, name)) != GNN_OK)
		goto free_keys;
	snprintf(name, sizeof(name), "%scert.crt", prefix);
	if ((rc = set_path(f->cert, dir, name)) != GNN_OK)
		goto free_keys;
	snprintf(name, sizeof(name), "%scert.key", prefix);
	if ((rc = set_path(f->key, dir, name)) != GNN_OK)
		goto free_keys;
	if ((rc = make(ca_cn, NULL, &ca)) != GNN_OK || (rc = make(cn, &ca, &leaf)) != GNN_OK)
		goto free_keys;
	/* the key first: a certificate is never on disk without its key */
	if ((rc = write_key(f->key, leaf.key)) != GNN_OK || (rc = write_crt(f->cert, leaf.crt)) != GNN_OK ||
	    (rc = write_crt(f->ca, ca.crt)) != GNN_OK)
		goto free_keys;
free_keys:
	keycert_free(&leaf);
	keycert_free(&ca);
	return rc;
}

/* With TLS every URL gnn-local builds dials LOC_TLS_HOST while the
 * listeners bind 127.0.0.1: nng dials the first address the resolver
 * gives (getaddrinfo, AI_ADDRCONFIG), which must then be 127.0.0.1. */
static int check_localhost(void)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	char addr[INET6_ADDRSTRLEN] = "?";
	int e = getaddrinfo(LOC_TLS_HOST, NULL, &hints, &res), rc = GNN_OK;

	if (e != 0) {
		GNN_ERROR("bad_config", "option=--tls host=%s reason=\"cannot resolve %s: %s; with --tls the "
			  "components dial it, the name in their certificates\"", LOC_TLS_HOST, LOC_TLS_HOST,
			  gai_strerror(e));
		return GNN_EINVAL;
	}
	if (res->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr, addr, sizeof(addr));
	else if (res->ai_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)(void *)res->ai_addr)->sin6_addr, addr, sizeof(addr));
	if (res->ai_family != AF_INET ||
	    ((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr.s_addr != htonl(INADDR_LOOPBACK)) {
		GNN_ERROR("bad_config", "option=--tls host=%s resolves_to=%s reason=\"with --tls the components "
			  "dial %s (the name in their certificates) and listen on 127.0.0.1; make %s resolve to "
			  "127.0.0.1 first (/etc/hosts)\"", LOC_TLS_HOST, addr, LOC_TLS_HOST, LOC_TLS_HOST);
		rc = GNN_EINVAL;
	}
	freeaddrinfo(res);
	return rc;
}

int loc_tls_prepare(struct loc_run *r)
{
	int rc;

	r->dial_host = "127.0.0.1";
	if (!r->cfg->tls)
		return GNN_OK;
	if ((rc = check_localhost()) != GNN_OK)
		return rc;
	if ((size_t)snprintf(r->tlsdir, sizeof(r->tlsdir), "%s/tls", r->workdir) >= sizeof(r->tlsdir)) {
		GNN_ERROR("bad_config", "option=--workdir reason=\"TLS folder path too long\"");
		return GNN_EINVAL;
	}
	if (mkdir(r->tlsdir, 0700) != 0 && errno != EEXIST) {
		GNN_ERROR("mkdir_failed", "path=%s error=\"%s\"", r->tlsdir, strerror(errno));
		return GNN_EIO;
	}
	if (chmod(r->tlsdir, 0700) != 0) {
		GNN_ERROR("chmod_failed", "path=%s error=\"%s\"", r->tlsdir, strerror(errno));
		return GNN_EIO;
	}
	if ((rc = make_domain(r->tlsdir, "data-", "gnn-local data plane CA", "gnn-local", &r->tls_data)) != GNN_OK ||
	    (rc = make_domain(r->tlsdir, "ring-", "gnn-local ring CA", "gnn-local trainer", &r->tls_ring)) != GNN_OK)
		return rc;
	if ((rc = loc_https_init(r->tls_data.ca, &r->https)) != GNN_OK)
		return rc;
	r->dial_host = LOC_TLS_HOST;
	GNN_INFO("tls", "mode=mutual dir=%s ca=%s cert=%s key=%s ring_ca=%s ring_cert=%s ring_key=%s valid_days=%d "
		 "san=DNS:%s dial_host=%s", r->tlsdir, r->tls_data.ca, r->tls_data.cert, r->tls_data.key,
		 r->tls_ring.ca, r->tls_ring.cert, r->tls_ring.key, LOC_CERT_DAYS, LOC_TLS_HOST, LOC_TLS_HOST);
	return GNN_OK;
}

int loc_tls_args(const struct loc_run *r, struct loc_argv *a, bool ring)
{
	int rc = GNN_OK;

	if (!r->cfg->tls)
		return GNN_OK;
	if ((rc = loc_argv_add(a, "--tls-ca=%s", r->tls_data.ca)) || (rc = loc_argv_add(a, "--tls-cert=%s", r->tls_data.cert)) ||
	    (rc = loc_argv_add(a, "--tls-key=%s", r->tls_data.key)) ||
	    (rc = loc_argv_add(a, "--tls-engine=%s", r->cfg->tls_engine)))
		return rc;
	if (ring && ((rc = loc_argv_add(a, "--ring-tls-ca=%s", r->tls_ring.ca)) ||
		     (rc = loc_argv_add(a, "--ring-tls-cert=%s", r->tls_ring.cert)) ||
		     (rc = loc_argv_add(a, "--ring-tls-key=%s", r->tls_ring.key))))
		return rc;
	return GNN_OK;
}
