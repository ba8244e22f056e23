/* net.h - what gnn-local needs from the network: free loopback ports for
 * the components it starts, the URL lists that wire them together, and a
 * tiny HTTP/1.0 client (HTTPS with --tls) for their /readyz. A building
 * block: it knows nothing of a run (pipeline.h). */
#ifndef LOC_NET_H
#define LOC_NET_H

#include <stddef.h>

/* --tls: the host every nng URL gnn-local builds dials and the name the
 * HTTPS checks verify (the name in the certificates: mbed TLS 2.28
 * matches no IP address). */
#define LOC_TLS_HOST "localhost"

/* Fills ports[0..n-1] with distinct TCP ports free on 127.0.0.1 now and
 * outside the kernel's ephemeral range (a component that dials another
 * before it listens must not connect to itself): binds n sockets at once,
 * so no port is handed out twice, then closes them. Another process may
 * still take one before the component binds it; the component then fails
 * and says so in its log. Returns GNN_EIO (logged) when a socket cannot be
 * bound. */
int loc_free_ports(int *ports, size_t n);

/* An HTTPS client configuration (GnuTLS): servers are trusted when their
 * certificate is of the CA in PEM file ca and names localhost. No client
 * certificate is presented: /healthz and /readyz need none (only /metrics,
 * which gnn-local does not read). GNN_EIO (logged) when ca does not load,
 * GNN_ENOMEM. *out: loc_https_free (NULL is fine). */
struct loc_https;
int loc_https_init(const char *ca, struct loc_https **out);
void loc_https_free(struct loc_https *h);

/* GET http://127.0.0.1:port/path over HTTP/1.0 with a whole-exchange
 * timeout; with h, https://localhost:port/path (connected to 127.0.0.1,
 * the server's certificate verified by h, for the name localhost). On
 * GNN_OK *code holds the status code and body (body_len bytes,
 * NUL-terminated, cut when longer) the response body. Returns GNN_EUNAVAIL
 * when the connection is refused or fails, GNN_ETIMEDOUT, GNN_EPROTO for a
 * response that is not HTTP or a TLS handshake that fails (the server not
 * verified, or no TLS there); then why (why_len bytes) holds a short
 * reason. Every buffer is the caller's. Logs nothing: the caller decides
 * whether a failure is worth a line. */
int loc_http_get(const struct loc_https *h, int port, const char *path, int timeout_ms, int *code, char *body,
		 size_t body_len, char *why, size_t why_len);

/* "tcp://HOST:P0,tcp://HOST:P1,..." for ports[0..n-1]: HOST is 127.0.0.1,
 * or LOC_TLS_HOST with --tls. Malloc'd, the caller's to free; NULL when
 * out of memory. */
char *loc_url_list(const char *host, const int *ports, size_t n);

#endif
