/* tls.h - mutual TLS on nng links (docs/security.md).
 *
 * A trust domain is a CA and this process's certificate and key, signed
 * by it. On a link of a domain both ends present a certificate of the
 * domain's CA and require one from the other (NNG_TLS_AUTH_MODE_REQUIRED),
 * and a dialer checks that the server's certificate names the host it
 * dialled. nng 1.5.2 cannot tell a listener who connected (no peer name),
 * so who may do what is decided by which CA signed a certificate: the
 * data plane (graph stores, samplers and their clients) is one domain.
 *
 * Every nng link of libcommon's servers and clients belongs to the
 * process's data-plane domain once gnn_tls_setup has loaded one; the
 * trainers' ring is a domain of its own (gnn_tls_domain), which only
 * trainers hold certificates of. Without one the links are plain TCP, as
 * before, and the start-up log says so. */
#ifndef GNN_TLS_H
#define GNN_TLS_H

#include <nng/nng.h>

#include "metrics.h"
#include "opt.h"

/* The three files of a domain: PEM, the key unencrypted; and the engine
 * of nng's TLS (the process's, "gnutls" or "mbedtls": the data-plane
 * options set it, other domains' paths leave it NULL). */
struct gnn_tls_paths {
	const char *ca, *cert, *key, *engine;
};

/* The engines --tls-engine takes (gnn-local passes its own on), and the default. */
#define GNN_TLS_ENGINES "gnutls|mbedtls"
#define GNN_TLS_ENGINE_DEFAULT "gnutls"

/* The option rows of the data-plane domain (--tls-ca, --tls-cert,
 * --tls-key; GNN_TLS_CA ...) into a struct gnn_tls_paths p. */
#define GNN_TLS_OPTIONS(p)                                                                                       \
	{ "tls-ca", GNN_OPT_STR, &(p).ca, NULL, 0, 0, NULL,                                                      \
	  "PEM file of the CA of the data plane: with --tls-cert and --tls-key every nng link is mutual TLS "    \
	  "(docs/security.md); none of the three: plain TCP" },                                                  \
	{ "tls-cert", GNN_OPT_STR, &(p).cert, NULL, 0, 0, NULL,                                                 \
	  "PEM file of this process's certificate, signed by --tls-ca; a server's names the hosts it is dialled by" }, \
	{ "tls-key", GNN_OPT_STR, &(p).key, NULL, 0, 0, NULL, "PEM file of --tls-cert's private key (unencrypted)" }, \
	{ "tls-engine", GNN_OPT_STR, &(p).engine, GNN_TLS_ENGINE_DEFAULT, 0, 0, GNN_TLS_ENGINES,                   \
	  "TLS library under every nng TLS link of this process (data plane and ring): gnutls (TLS 1.3, AES-GCM "   \
	  "with AES-NI; docs/security.md) or mbedtls, libnng's own (mbed TLS 2.28, ChaCha20 in C: for comparison)" }

struct gnn_tls;

/* The domain named domain from p, whose options are --PREFIX-ca, -cert,
 * -key: *out NULL when none of the three is set (plain TCP). The files are
 * read and parsed now (readable, PEM, certificates and key the engine
 * accepts), so that a bad file stops the process at start: GNN_EINVAL,
 * logged with the file and why (also for some but not all of the three).
 * The first domain with files fixes the process's engine (p->engine, or
 * gnutls when NULL; GNN_EVERSION when libnng refuses it). Logs
 * `links domain=D tls=mutual ... engine=E suites=...` or `tls=off`. *out:
 * gnn_tls_free. */
int gnn_tls_domain(const char *domain, const char *prefix, const struct gnn_tls_paths *p, struct gnn_tls **out);
void gnn_tls_free(struct gnn_tls *t);

/* Makes p the process's data-plane domain (gnn_tls_domain "data", "tls").
 * Call once at start, before any socket; gnn_tls_teardown frees it. */
int gnn_tls_setup(const struct gnn_tls_paths *p);
void gnn_tls_teardown(void);
/* The data-plane domain, or NULL for plain TCP. */
const struct gnn_tls *gnn_tls_data_plane(void);
/* t's files as PEM text (borrowed from t). */
void gnn_tls_pem(const struct gnn_tls *t, const char **ca, const char **cert, const char **key);

/* Sets gnn_tls_certificate_not_after_seconds{domain,certificate="own"|"ca"}
 * in reg for t (nothing when t is NULL): when t's certificate and its
 * CA's (the first of each file) stop being valid, seconds since the
 * epoch. The family is shared by the domains of a process. GNN_ENOMEM, or
 * the registry's errors. (gnn_tls_domain refuses a certificate that has
 * expired and logs tls_cert_expiring for one ending within 7 days.) */
int gnn_tls_metrics(const struct gnn_tls *t, const char *domain, struct gnn_metrics *reg);

/* nng_listen / nng_dial (flags as nng_dial's) on sock for url: plain when
 * t is NULL; otherwise over TLS of domain t, a tcp:// URL taken as
 * tls+tcp:// (other transports: NNG_EINVAL). The server's certificate
 * must name server_name, or url's host when NULL (a replica dialled by
 * the address its Service's name resolved to answers for that name). nng
 * error codes, as nng's. */
int gnn_tls_listen(nng_socket sock, const char *url, const struct gnn_tls *t, nng_listener *out);
int gnn_tls_dial(nng_socket sock, const char *url, const struct gnn_tls *t, const char *server_name, nng_dialer *out,
		 int flags);

#endif
