/* net.c - gnn-local's network helpers (net.h): loopback ports chosen
 * outside the kernel's ephemeral range, the nng URL lists built from them,
 * and the blocking-with-deadline HTTP/1.0 GET (over GnuTLS with --tls)
 * that the readiness checks use. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "err.h"
#include "log.h"
#include "sys.h"

/* The kernel's ephemeral port range (the source ports of outgoing
 * connections); 32768-60999 when it cannot be read. */
static void ephemeral_range(int *lo, int *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	*lo = 32768;
	*hi = 60999;
	if (f == NULL)
		return;
	if (fscanf(f, "%d %d", lo, hi) != 2 || *lo < 1 || *hi > 65535 || *lo > *hi) {
		*lo = 32768;
		*hi = 60999;
	}
	fclose(f);
}

/* Binds fd to 127.0.0.1:port (0: any). */
static int bind_loopback(int fd, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return bind(fd, (struct sockaddr *)&a, sizeof(a));
}

/* A port outside the ephemeral range, bound to fd: a process that dials
 * one of these ports before its listener is up cannot end up connected
 * to itself (TCP's self-connect: the kernel picks the dialled port as the
 * source port, and the listener then finds its port taken). Falls back to
 * port 0 when no such port is free after many tries. */
static int bind_outside_ephemeral(int fd, int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int lo, hi, first, count;

	ephemeral_range(&lo, &hi);
	/* below the range when there is room there (and below Kubernetes'
	 * NodePorts, 30000-32767, which kube-proxy may hold), else above it */
	first = lo > 11024 ? 10000 : hi + 1;
	count = lo > 11024 ? (lo < 30000 ? lo : 30000) - 10000 : 65536 - (hi + 1);
	for (int t = 0; count > 0 && t < 200; t++) {
		int p = first + (int)((unsigned)rand() % (unsigned)count);

		if (bind_loopback(fd, p) == 0) {
			*port = p;
			return 0;
		}
	}
	if (bind_loopback(fd, 0) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	*port = ntohs(a.sin_port);
	return 0;
}

int loc_free_ports(int *ports, size_t n)
{
	int *fds = calloc(n ? n : 1, sizeof(*fds));
	int rc = GNN_OK;
	size_t i, opened = 0;

	if (fds == NULL)
		return GNN_ENOMEM;
	srand((unsigned)getpid() ^ (unsigned)(gnn_now() * 1e6));
	for (i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0) {
			GNN_ERROR("socket_failed", "error=\"%s\"", strerror(errno));
			rc = GNN_EIO;
			break;
		}
		opened++;
		if (bind_outside_ephemeral(fds[i], &ports[i]) != 0) {
			GNN_ERROR("bind_failed", "addr=127.0.0.1 error=\"%s\"", strerror(errno));
			rc = GNN_EIO;
			break;
		}
	}
	for (i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	return rc;
}

char *loc_url_list(const char *host, const int *ports, size_t n)
{
	size_t cap = n * (strlen(host) + 16) + 1, len = 0;
	char *s = malloc(cap);

	if (s == NULL)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%stcp://%s:%d", i ? "," : "", host, ports[i]);
	return s;
}

static int wait_fd(int fd, short events, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int left_ms, r;

	for (;;) {
		left_ms = (int)((deadline - gnn_now()) * 1000.0);
		if (left_ms <= 0)
			return GNN_ETIMEDOUT;
		r = poll(&pfd, 1, left_ms);
		if (r > 0)
			return GNN_OK;
		if (r == 0)
			return GNN_ETIMEDOUT;
		if (errno != EINTR)
			return GNN_EUNAVAIL;
		if (gnn_stop_signal() != 0)
			return GNN_ECLOSED;
	}
}

struct loc_https {
	gnutls_certificate_credentials_t cred;
};

int loc_https_init(const char *ca, struct loc_https **out)
{
	struct loc_https *h = calloc(1, sizeof(*h));
	int e;

	*out = NULL;
	if (h == NULL)
		return GNN_ENOMEM;
	if ((e = gnutls_certificate_allocate_credentials(&h->cred)) < 0) {
		free(h);
		return GNN_ENOMEM;
	}
	e = gnutls_certificate_set_x509_trust_file(h->cred, ca, GNUTLS_X509_FMT_PEM);
	if (e <= 0) {
		GNN_ERROR("tls_bad_file", "file=%s reason=\"%s\"", ca, e < 0 ? gnutls_strerror(e) : "no certificate in it");
		loc_https_free(h);
		return GNN_EIO;
	}
	*out = h;
	return GNN_OK;
}

void loc_https_free(struct loc_https *h)
{
	if (h == NULL)
		return;
	gnutls_certificate_free_credentials(h->cred);
	free(h);
}

/* One connection: plain (s NULL) or TLS over fd, with the exchange's deadline. */
struct conn {
	int fd;
	gnutls_session_t s;
	double deadline;
};

/* Waits for what a GnuTLS call that answered GNUTLS_E_AGAIN needs. */
static int tls_wait(const struct conn *c)
{
	return wait_fd(c->fd, gnutls_record_get_direction(c->s) ? POLLOUT : POLLIN, c->deadline);
}

/* The handshake, the server verified for LOC_TLS_HOST by its CA. */
static int tls_start(struct conn *c, const struct loc_https *h, char *why, size_t why_len)
{
	int e, rc;

	if ((e = gnutls_init(&c->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK)) < 0) {
		c->s = NULL;
		snprintf(why, why_len, "tls: %s", gnutls_strerror(e));
		return GNN_ENOMEM;
	}
	if ((e = gnutls_set_default_priority(c->s)) < 0 ||
	    (e = gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, h->cred)) < 0 ||
	    (e = gnutls_server_name_set(c->s, GNUTLS_NAME_DNS, LOC_TLS_HOST, strlen(LOC_TLS_HOST))) < 0) {
		snprintf(why, why_len, "tls: %s", gnutls_strerror(e));
		return GNN_EPROTO;
	}
	gnutls_session_set_verify_cert(c->s, LOC_TLS_HOST, 0);
	gnutls_transport_set_int(c->s, c->fd);
	for (;;) {
		e = gnutls_handshake(c->s);
		if (e == GNUTLS_E_SUCCESS)
			return GNN_OK;
		if (e == GNUTLS_E_AGAIN || e == GNUTLS_E_INTERRUPTED || !gnutls_error_is_fatal(e)) {
			if ((rc = tls_wait(c)) != GNN_OK) {
				snprintf(why, why_len, "tls handshake: %s", rc == GNN_ETIMEDOUT ? "timed out" : "failed");
				return rc;
			}
			continue;
		}
		if (e == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
			gnutls_datum_t txt = { NULL, 0 };

			if (gnutls_certificate_verification_status_print(gnutls_session_get_verify_cert_status(c->s),
									 GNUTLS_CRT_X509, &txt, 0) >= 0) {
				snprintf(why, why_len, "tls: server not verified: %s", (const char *)txt.data);
				gnutls_free(txt.data);
				return GNN_EPROTO;
			}
		}
		snprintf(why, why_len, "tls handshake: %s", gnutls_strerror(e));
		return GNN_EPROTO;
	}
}

/* Sends all of buf: GNN_OK or an error code. */
static int conn_send(const struct conn *c, const char *buf, size_t len)
{
	size_t sent = 0;
	ssize_t k;
	int rc;

	while (sent < len) {
		if (c->s != NULL) {
			k = gnutls_record_send(c->s, buf + sent, len - sent);
			if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) {
				if ((rc = tls_wait(c)) != GNN_OK)
					return rc;
				continue;
			}
		} else {
			k = send(c->fd, buf + sent, len - sent, MSG_NOSIGNAL);
			if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
				if ((rc = wait_fd(c->fd, POLLOUT, c->deadline)) != GNN_OK)
					return rc;
				continue;
			}
		}
		if (k <= 0)
			return GNN_EUNAVAIL;
		sent += (size_t)k;
	}
	return GNN_OK;
}

/* Receives until the server closes the connection (HTTP/1.0) or buf
 * (cap bytes) is full: GNN_OK with *have bytes, or an error code. */
static int conn_recv_all(const struct conn *c, char *buf, size_t cap, size_t *have)
{
	ssize_t k;
	int rc;

	*have = 0;
	while (*have < cap) {
		if (c->s != NULL) {
			k = gnutls_record_recv(c->s, buf + *have, cap - *have);
			/* the end: close_notify, or a close without it */
			if (k == 0 || k == GNUTLS_E_PREMATURE_TERMINATION)
				return GNN_OK;
			if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED || (k < 0 && !gnutls_error_is_fatal((int)k))) {
				if ((rc = tls_wait(c)) != GNN_OK)
					return rc;
				continue;
			}
		} else {
			k = recv(c->fd, buf + *have, cap - *have, 0);
			if (k == 0)
				return GNN_OK;
			if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
				if ((rc = wait_fd(c->fd, POLLIN, c->deadline)) != GNN_OK)
					return rc;
				continue;
			}
		}
		if (k < 0)
			return GNN_EUNAVAIL;
		*have += (size_t)k;
	}
	return GNN_OK;
}

/* A non-blocking socket connected to 127.0.0.1:port by c->deadline
 * into c->fd; why says what failed. */
static int conn_open(struct conn *c, int port, char *why, size_t why_len)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int err = 0, rc;
	socklen_t elen = sizeof(err);

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		snprintf(why, why_len, "socket: %s", strerror(errno));
		return GNN_EUNAVAIL;
	}
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return GNN_OK;
	if (errno != EINPROGRESS) {
		snprintf(why, why_len, "connect: %s", strerror(errno));
		return GNN_EUNAVAIL;
	}
	if ((rc = wait_fd(c->fd, POLLOUT, c->deadline)) != GNN_OK) {
		snprintf(why, why_len, "connect: %s", rc == GNN_ETIMEDOUT ? "timed out" : "failed");
		return rc;
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
		snprintf(why, why_len, "connect: %s", strerror(err ? err : errno));
		return GNN_EUNAVAIL;
	}
	return GNN_OK;
}

/* The status code and the body of a whole response (resp, NUL-terminated). */
static int parse_response(const char *resp, int *code, char *body, size_t body_len, char *why, size_t why_len)
{
	const char *hdr_end;

	if (sscanf(resp, "HTTP/1.%*1[01] %3d", code) != 1 || *code < 100 || *code > 599) {
		snprintf(why, why_len, "not an HTTP response");
		return GNN_EPROTO;
	}
	hdr_end = strstr(resp, "\r\n\r\n");
	snprintf(body, body_len, "%s", hdr_end ? hdr_end + 4 : "");
	return GNN_OK;
}

int loc_http_get(const struct loc_https *h, int port, const char *path, int timeout_ms, int *code, char *body,
		 size_t body_len, char *why, size_t why_len)
{
	struct conn c = { .fd = -1, .s = NULL, .deadline = gnn_now() + timeout_ms / 1000.0 };
	char req[512], resp[4096];
	size_t have = 0, reqlen;
	int rc;

	if (body_len == 0 || why_len == 0)
		return GNN_EINVAL;
	body[0] = why[0] = '\0';
	reqlen = (size_t)snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s:%d\r\n\r\n", path,
				  h != NULL ? LOC_TLS_HOST : "127.0.0.1", port);
	if (reqlen >= sizeof(req))
		return GNN_EINVAL;
	if ((rc = conn_open(&c, port, why, why_len)) != GNN_OK)
		goto out_conn;
	if (h != NULL && (rc = tls_start(&c, h, why, why_len)) != GNN_OK)
		goto out_conn;
	if ((rc = conn_send(&c, req, reqlen)) != GNN_OK ||
	    (rc = conn_recv_all(&c, resp, sizeof(resp) - 1, &have)) != GNN_OK) {
		snprintf(why, why_len, "%s", rc == GNN_ETIMEDOUT ? "timed out" : "connection failed");
		goto out_conn;
	}
	resp[have] = '\0';
	rc = parse_response(resp, code, body, body_len, why, why_len);
out_conn:
	if (c.s != NULL)
		gnutls_deinit(c.s);
	if (c.fd >= 0)
		close(c.fd);
	return rc;
}
