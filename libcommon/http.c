#include "http.h"
#include "err.h"
#include "log.h"
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CT_TEXT "text/plain; charset=utf-8"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define LISTEN_BACKLOG 1024 /* a burst of connections waits here, not in SYN retries */
#define BACKOFF_MS 100 /* after an accept failure nothing could answer */

/* The path label takes only these values, so a scanner probing random URLs
 * cannot grow the metric without bound. */
enum path { PATH_HEALTHZ, PATH_READYZ, PATH_METRICS, PATH_OTHER, PATH_COUNT };

static const char *const path_names[PATH_COUNT] = { "/healthz", "/readyz", "/metrics", "other" };

/* MHD serves the connections; our own thread accepts them (MHD has no
 * listening socket) so that it can answer a probe itself where MHD cannot
 * take the connection: at MHD's connection limit, and with the process out
 * of descriptors, where MHD 0.9.75 would retry accept() in a busy loop and
 * log two lines per try. */
struct gnn_http {
	struct MHD_Daemon *daemon;
	struct gnn_metrics *reg;
	struct gnn_counter *requests; /* gnn_http_requests_total{path,code} */
	gnn_ready_fn ready;
	void *ready_ctx;
	int port;
	int listen_fd;
	int wake_fd;  /* eventfd: gnn_http_stop wakes the acceptor */
	int spare_fd; /* a descriptor held back for the fd limit; -1 while lost */
	unsigned int conn_limit;
	/* Connections handed to MHD and not closed yet. The limit is ours,
	 * kept here, and MHD's own is set out of reach: MHD 0.9.75 leaves a
	 * mutex locked (and its worker thread deadlocked) when a handed-over
	 * connection finds the worker at its limit (daemon.c,
	 * new_connection_process_), which a burst of connections queued
	 * before the worker counts them can cause. */
	atomic_uint conns;
	pthread_t acceptor;
	char addr[INET6_ADDRSTRLEN];
	bool tls;     /* HTTPS: the data plane's certificate; /metrics needs a client's */
};

static enum path classify(const char *url)
{
	for (int i = 0; i < PATH_OTHER; i++)
		if (strcmp(url, path_names[i]) == 0)
			return i;
	return PATH_OTHER;
}

static void count_request(struct gnn_http *srv, enum path path, unsigned int code)
{
	struct gnn_counter *c;
	char code_str[12];

	snprintf(code_str, sizeof(code_str), "%u", code);
	/* Can only fail for want of memory; the response matters more than
	 * counting it. */
	if (gnn_counter_labels(srv->requests, (const char *const[]){ path_names[path], code_str }, 2,
			       &c) == GNN_OK)
		gnn_counter_inc(c);
}

/* Queues body as the response. With MHD_RESPMEM_MUST_FREE the body is
 * malloc'd and owned by this function from the call on. */
static enum MHD_Result reply(struct gnn_http *srv, struct MHD_Connection *conn, enum path path,
			     unsigned int code, const char *ctype, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, body, mode);
	if (resp == NULL) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO; /* MHD closes the connection */
	}
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) != MHD_YES ||
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES ||
	    (code == MHD_HTTP_METHOD_NOT_ALLOWED &&
	     MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		count_request(srv, path, code);
	return ret;
}

static enum MHD_Result reply_static(struct gnn_http *srv, struct MHD_Connection *conn,
				    enum path path, unsigned int code, const char *body)
{
	return reply(srv, conn, path, code, CT_TEXT, (char *)body, strlen(body),
		     MHD_RESPMEM_PERSISTENT);
}

/* Asks the ready callback; writes /readyz's body (at least
 * GNN_HTTP_REASON_MAX + 16 bytes) and returns its status code. */
static unsigned int readyz_answer(struct gnn_http *srv, char *body, size_t size)
{
	char why[GNN_HTTP_REASON_MAX] = "";

	if (srv->ready == NULL || srv->ready(srv->ready_ctx, why, sizeof(why))) {
		snprintf(body, size, "ready\n");
		return MHD_HTTP_OK;
	}
	/* Trust the callback with nothing: terminate the reason and keep it
	 * to one line. */
	why[sizeof(why) - 1] = '\0';
	why[strcspn(why, "\r\n")] = '\0';
	if (why[0] != '\0')
		snprintf(body, size, "not ready: %s\n", why);
	else
		snprintf(body, size, "not ready\n");
	return MHD_HTTP_SERVICE_UNAVAILABLE;
}

static enum MHD_Result serve_readyz(struct gnn_http *srv, struct MHD_Connection *conn)
{
	char body[GNN_HTTP_REASON_MAX + 16];
	unsigned int code = readyz_answer(srv, body, sizeof(body));

	return reply(srv, conn, PATH_READYZ, code, CT_TEXT, body, strlen(body),
		     MHD_RESPMEM_MUST_COPY);
}

/* With TLS: whether the client presented a certificate that the trusted
 * CA signed and that is valid now. MHD only asks for one (GnuTLS's
 * GNUTLS_CERT_REQUEST); the check is ours. */
static bool client_verified(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	unsigned int status = 1;

	return ci != NULL && ci->tls_session != NULL &&
	       gnutls_certificate_verify_peers2((gnutls_session_t)ci->tls_session, &status) == GNUTLS_E_SUCCESS &&
	       status == 0;
}

static enum MHD_Result serve_metrics(struct gnn_http *srv, struct MHD_Connection *conn)
{
	char *text;
	size_t len;
	int err;

	if (srv->tls && !client_verified(conn)) {
		GNN_WARN_LIMITED("http_client_refused", "path=/metrics reason=\"no client certificate of the data "
				 "plane's CA\"");
		return reply_static(srv, conn, PATH_METRICS, MHD_HTTP_FORBIDDEN,
				    "a client certificate of the CA is required (docs/security.md)\n");
	}
	if ((err = gnn_metrics_render(srv->reg, &text, &len)) != GNN_OK) {
		GNN_ERROR_LIMITED("http_metrics_render_failed", "err=\"%s\"", gnn_strerror(err));
		return reply_static(srv, conn, PATH_METRICS, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "internal error\n");
	}
	return reply(srv, conn, PATH_METRICS, MHD_HTTP_OK, CT_METRICS, text, len,
		     MHD_RESPMEM_MUST_FREE);
}

/* Called once the headers are in. Every answer is ready at once, so the
 * response is queued on this first call; MHD then skips any request body. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct gnn_http *srv = cls;
	enum path path = classify(url);

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (path == PATH_OTHER)
		return reply_static(srv, conn, path, MHD_HTTP_NOT_FOUND, "not found\n");
	/* HEAD is answered like GET; MHD leaves the body out. */
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_static(srv, conn, path, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "method not allowed\n");
	switch (path) {
	case PATH_HEALTHZ:
		return reply_static(srv, conn, path, MHD_HTTP_OK, "ok\n");
	case PATH_READYZ:
		return serve_readyz(srv, conn);
	case PATH_METRICS:
		return serve_metrics(srv, conn);
	default:
		return MHD_NO;
	}
}

/* MHD's own diagnostics (client errors, start-up failures) go to our log
 * as one line each instead of to stderr, rate-limited: clients can make
 * MHD say things as often as they like. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct gnn_http *srv = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (n = strlen(msg); n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '); n--)
		msg[n - 1] = '\0';
	for (char *p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '"')
			*p = '\'';
	GNN_WARN_LIMITED("http_server", "addr=%s msg=\"%s\"", srv->addr, msg);
}

/* Ends the count of a connection the acceptor handed to MHD. (Only
 * CLOSED: STARTED comes after MHD's queue of handed-over connections, too
 * late for the acceptor's limit.) */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct gnn_http *srv = cls;

	(void)conn;
	(void)socket_context;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		atomic_fetch_sub(&srv->conns, 1);
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads a request head into req (NUL-terminated) until its blank line, for
 * at most GNN_HTTP_DIRECT_MS. Returns the length, or 0 when it did not
 * come whole in time (a slow or silent client: no answer). */
static size_t read_head(int s, char *req, size_t size)
{
	long long deadline = mono_ms() + GNN_HTTP_DIRECT_MS, left;
	size_t len = 0;
	ssize_t k;

	req[0] = '\0';
	while (strstr(req, "\r\n\r\n") == NULL) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		left = deadline - mono_ms();
		if (len + 1 >= size || left <= 0 || poll(&p, 1, (int)left) <= 0)
			return 0;
		k = recv(s, req + len, size - 1 - len, 0);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			continue;
		if (k <= 0)
			return 0;
		len += (size_t)k;
		req[len] = '\0';
	}
	return len;
}

/* Answers one request on s without MHD, where MHD cannot take the
 * connection (its connection limit reached, or no descriptor left for
 * anything else). The probes get their usual answers; /metrics gets 503,
 * which costs nothing and leaves the scrape for a later, normal
 * connection. Runs on the acceptor thread, for at most GNN_HTTP_DIRECT_MS,
 * and needs no descriptor but s. */
static void serve_direct(struct gnn_http *srv, int s)
{
	char req[2048], body[GNN_HTTP_REASON_MAX + 16], resp[512], *url, *end;
	const char *status = "Service Unavailable";
	unsigned int code = MHD_HTTP_SERVICE_UNAVAILABLE;
	enum path path;
	bool get, head;
	int n;

	/* HTTPS: a plain answer would be noise to the client; it is closed
	 * and tries again. */
	if (srv->tls)
		return;
	if (read_head(s, req, sizeof(req)) == 0 || (url = strchr(req, ' ')) == NULL)
		return;
	*url++ = '\0';
	if ((end = strpbrk(url, " \r\n")) == NULL)
		return;
	*end = '\0';
	url[strcspn(url, "?")] = '\0';
	path = classify(url);
	get = strcmp(req, MHD_HTTP_METHOD_GET) == 0;
	head = strcmp(req, MHD_HTTP_METHOD_HEAD) == 0;
	snprintf(body, sizeof(body), "busy, try again\n");
	if (path == PATH_OTHER) {
		code = MHD_HTTP_NOT_FOUND;
		status = "Not Found";
		snprintf(body, sizeof(body), "not found\n");
	} else if (!get && !head) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		status = "Method Not Allowed";
		snprintf(body, sizeof(body), "method not allowed\n");
	} else if (path == PATH_HEALTHZ) {
		code = MHD_HTTP_OK;
		snprintf(body, sizeof(body), "ok\n");
	} else if (path == PATH_READYZ) {
		code = readyz_answer(srv, body, sizeof(body));
	}
	if (code == MHD_HTTP_OK)
		status = "OK";
	n = snprintf(resp, sizeof(resp),
		     "HTTP/1.1 %u %s\r\nContent-Type: " CT_TEXT "\r\nCache-Control: no-store\r\n"
		     "%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     code, status, code == MHD_HTTP_METHOD_NOT_ALLOWED ? "Allow: GET, HEAD\r\n" : "",
		     strlen(body), head ? "" : body);
	/* A few hundred bytes fit in any socket buffer: no waiting on the
	 * client. */
	if (n > 0 && send(s, resp, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n)
		count_request(srv, path, code);
	shutdown(s, SHUT_WR);
}

static bool out_of_descriptors(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/* Accepts one connection and hands it to MHD, or answers it directly.
 * Returns GNN_EIO when accept() failed in a way that calls for a pause
 * (no descriptor, and the spare one is gone). */
static int accept_one(struct gnn_http *srv)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int s, err;

	s = accept4(srv->listen_fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (s >= 0) {
		if (atomic_load(&srv->conns) >= srv->conn_limit) {
			GNN_WARN_LIMITED("http_connection_limit",
					 "addr=%s port=%d limit=%u action=answered_directly", srv->addr,
					 srv->port, srv->conn_limit);
			serve_direct(srv, s);
			close(s);
			return GNN_OK;
		}
		/* Counted from here, not from MHD's STARTED: see conns. On
		 * failure MHD has closed s and said why through mhd_log. */
		atomic_fetch_add(&srv->conns, 1);
		if (MHD_add_connection(srv->daemon, s, (struct sockaddr *)&sa, salen) != MHD_YES)
			atomic_fetch_sub(&srv->conns, 1);
		return GNN_OK;
	}
	err = errno;
	if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED || err == EPROTO)
		return GNN_OK;
	if (out_of_descriptors(err) && srv->spare_fd >= 0) {
		/* The classic trick: free the spare, take the connection in its
		 * slot, answer, and turn the socket back into the spare with
		 * dup3 instead of closing it, so that the slot is never free
		 * for another thread (nng retries its accept every 10 ms) to
		 * take. Only the moment between close and accept4 is open. */
		close(srv->spare_fd);
		srv->spare_fd = -1;
		s = accept4(srv->listen_fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (s >= 0) {
			GNN_WARN_LIMITED("http_fd_limit",
					 "addr=%s port=%d err=\"%s\" action=answered_with_spare_descriptor",
					 srv->addr, srv->port, strerror(err));
			serve_direct(srv, s);
			if (dup3(srv->listen_fd, s, O_CLOEXEC) >= 0)
				srv->spare_fd = s;
			else
				close(s);
			return GNN_OK;
		}
		err = errno;
		if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED)
			return GNN_OK;
	}
	GNN_WARN_LIMITED("http_accept_failed", "addr=%s port=%d err=\"%s\" spare=%s retry_ms=%d",
			 srv->addr, srv->port, strerror(err), srv->spare_fd >= 0 ? "yes" : "lost",
			 BACKOFF_MS);
	return GNN_EIO;
}

/* The acceptor thread: accepts until gnn_http_stop writes wake_fd, pausing
 * BACKOFF_MS after a failure it could not answer around (instead of
 * spinning on a listening socket that stays readable). */
static void *acceptor_main(void *arg)
{
	struct gnn_http *srv = arg;
	bool pause = false;

	for (;;) {
		struct pollfd p[2] = { { .fd = srv->wake_fd, .events = POLLIN },
				       { .fd = srv->listen_fd, .events = POLLIN } };

		/* Regained as soon as any descriptor is free. It is a
		 * duplicate of the listening socket only to hold a slot. */
		if (srv->spare_fd < 0)
			srv->spare_fd = fcntl(srv->listen_fd, F_DUPFD_CLOEXEC, 0);
		if (poll(p, pause ? 1 : 2, pause ? BACKOFF_MS : -1) < 0 && errno != EINTR) {
			GNN_WARN_LIMITED("http_poll_failed", "addr=%s port=%d err=\"%s\"", srv->addr,
					 srv->port, strerror(errno));
			usleep(BACKOFF_MS * 1000);
			continue;
		}
		if (p[0].revents != 0)
			return NULL;
		if (pause) {
			pause = false;
			continue;
		}
		if (p[1].revents != 0)
			pause = accept_one(srv) != GNN_OK;
	}
}

/* A quarter of the descriptor limit, within [GNN_HTTP_MIN_CONNECTIONS,
 * GNN_HTTP_MAX_CONNECTIONS]: the server alone can never run the process
 * out of descriptors, and the rest stay with the service's own work. */
static unsigned int connection_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur / 4 >= GNN_HTTP_MAX_CONNECTIONS)
		return GNN_HTTP_MAX_CONNECTIONS;
	if (rl.rlim_cur / 4 <= GNN_HTTP_MIN_CONNECTIONS)
		return GNN_HTTP_MIN_CONNECTIONS;
	return (unsigned int)(rl.rlim_cur / 4);
}

/* Registers gnn_http_requests_total, or takes the one another server on
 * this registry registered, and creates the series a healthy service will
 * report so they show 0 from the first scrape. */
static int setup_requests_metric(struct gnn_http *srv)
{
	static const char *const labels[] = { "path", "code" };
	static const char *const name = "gnn_http_requests_total";
	struct gnn_counter *c;
	int err;

	err = gnn_metrics_counter(srv->reg, name, "HTTP requests answered by the observability server.",
				  labels, 2, &srv->requests);
	if (err == GNN_EEXIST)
		err = gnn_metrics_find_counter(srv->reg, name, &srv->requests);
	for (int i = 0; err == GNN_OK && i < PATH_OTHER; i++)
		err = gnn_counter_labels(srv->requests, (const char *const[]){ path_names[i], "200" }, 2,
					 &c);
	return err;
}

/* Binds and listens ourselves rather than through MHD so that a failure is
 * reported with its errno. */
static int open_listener(const struct gnn_http *srv, const struct sockaddr *sa, socklen_t salen,
			 int port, int *out)
{
	int fd, one = 1;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		GNN_ERROR("http_socket_failed", "addr=%s port=%d err=\"%s\"", srv->addr, port,
			  strerror(errno));
		return GNN_EIO;
	}
	/* Lets a restarted service bind while old connections sit in
	 * TIME_WAIT; Linux still refuses a port someone listens on. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, sa, salen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
		GNN_ERROR("http_bind_failed", "addr=%s port=%d err=\"%s\"", srv->addr, port,
			  strerror(errno));
		close(fd);
		return GNN_EIO;
	}
	*out = fd;
	return GNN_OK;
}

/* MHD's TLS options for domain t (NULL: none): its certificate and key,
 * and its CA as the clients' trust store (which makes GnuTLS ask for a
 * client certificate). */
static void tls_options(const struct gnn_tls *t, struct MHD_OptionItem opts[4])
{
	const char *ca, *cert, *key;
	int n = 0;

	if (t != NULL) {
		gnn_tls_pem(t, &ca, &cert, &key);
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert };
		opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)ca };
	}
	opts[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
}

union sockaddr_any {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* host (an IPv4 or IPv6 literal) and port as a socket address. */
static int bind_address(const char *host, int port, union sockaddr_any *addr, socklen_t *addrlen)
{
	memset(addr, 0, sizeof(*addr));
	if (inet_pton(AF_INET, host, &addr->in.sin_addr) == 1) {
		addr->in.sin_family = AF_INET;
		addr->in.sin_port = htons((unsigned short)port);
		*addrlen = sizeof(addr->in);
	} else if (inet_pton(AF_INET6, host, &addr->in6.sin6_addr) == 1) {
		addr->in6.sin6_family = AF_INET6;
		addr->in6.sin6_port = htons((unsigned short)port);
		*addrlen = sizeof(addr->in6);
	} else {
		GNN_ERROR("http_bad_addr", "addr=%.64s need=ipv4_or_ipv6_literal", host);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

static void close_fds(struct gnn_http *srv)
{
	if (srv->wake_fd >= 0)
		close(srv->wake_fd);
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	close(srv->listen_fd);
}

/* The acceptor's descriptors: the listening socket on addr (srv->port
 * the one bound: port 0 picks one), the spare held back for the fd limit
 * and the eventfd that stops it. On failure none is left open. */
static int open_fds(struct gnn_http *srv, union sockaddr_any *addr, socklen_t addrlen, int port)
{
	int err;

	if ((err = open_listener(srv, &addr->sa, addrlen, port, &srv->listen_fd)) != GNN_OK)
		return err;
	if (getsockname(srv->listen_fd, &addr->sa, &addrlen) != 0) {
		close(srv->listen_fd);
		return GNN_EIO;
	}
	srv->port = ntohs(addr->sa.sa_family == AF_INET ? addr->in.sin_port : addr->in6.sin6_port);
	srv->spare_fd = fcntl(srv->listen_fd, F_DUPFD_CLOEXEC, 0);
	srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->spare_fd < 0 || srv->wake_fd < 0) {
		GNN_ERROR("http_start_failed", "addr=%s port=%d err=\"%s\"", srv->addr, port, strerror(errno));
		close_fds(srv);
		return GNN_EIO;
	}
	return GNN_OK;
}

/* MHD, serving the connections the acceptor hands it, then the acceptor. */
static int start_serving(struct gnn_http *srv, int port)
{
	struct MHD_OptionItem tls_opts[4];
	int err;

	srv->conn_limit = connection_limit();
	atomic_init(&srv->conns, 0);
	srv->tls = gnn_tls_data_plane() != NULL;
	tls_options(gnn_tls_data_plane(), tls_opts);
	/* epoll: no FD_SETSIZE ceiling on descriptor numbers. ITC: the pool
	 * threads learn at once of a connection handed over by the acceptor.
	 * The logger goes first so that start-up errors reach it too. */
	srv->daemon = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC |
					       MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG | (srv->tls ? MHD_USE_TLS : 0),
				       0, NULL, NULL, handle, srv,
				       MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
				       MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
				       MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)GNN_HTTP_THREADS,
				       /* Each worker may take all of ours, and one more. */
				       MHD_OPTION_CONNECTION_LIMIT,
				       (srv->conn_limit + 1) * (unsigned int)GNN_HTTP_THREADS,
				       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)GNN_HTTP_TIMEOUT_S,
				       MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
	if (srv->daemon == NULL) {
		GNN_ERROR("http_start_failed", "addr=%s port=%d", srv->addr, port);
		return GNN_EIO;
	}
	if ((err = pthread_create(&srv->acceptor, NULL, acceptor_main, srv)) != 0) {
		GNN_ERROR("http_start_failed", "addr=%s port=%d err=\"%s\"", srv->addr, port, strerror(err));
		MHD_stop_daemon(srv->daemon);
		return GNN_EIO;
	}
	return GNN_OK;
}

int gnn_http_start(const char *bind_addr, int port, struct gnn_metrics *reg, gnn_ready_fn ready,
		   void *ready_ctx, struct gnn_http **out)
{
	const char *host = bind_addr != NULL ? bind_addr : "0.0.0.0";
	union sockaddr_any addr;
	struct gnn_http *srv;
	socklen_t addrlen;
	int err;

	if (reg == NULL || out == NULL || port < 0 || port > 65535)
		return GNN_EINVAL;
	if ((err = bind_address(host, port, &addr, &addrlen)) != GNN_OK)
		return err;
	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return GNN_ENOMEM;
	srv->listen_fd = srv->wake_fd = srv->spare_fd = -1;
	srv->reg = reg;
	srv->ready = ready;
	srv->ready_ctx = ready_ctx;
	snprintf(srv->addr, sizeof(srv->addr), "%s", host);
	if ((err = setup_requests_metric(srv)) != GNN_OK) {
		GNN_ERROR("http_metric_failed", "name=gnn_http_requests_total err=\"%s\"", gnn_strerror(err));
		goto out_free;
	}
	if ((err = open_fds(srv, &addr, addrlen, port)) != GNN_OK)
		goto out_free;
	if ((err = start_serving(srv, port)) != GNN_OK)
		goto out_fds;
	GNN_INFO("http_listening", "addr=%s port=%d max_connections=%u timeout_s=%d tls=%s", srv->addr,
		 srv->port, srv->conn_limit, GNN_HTTP_TIMEOUT_S, srv->tls ? "on" : "off");
	*out = srv;
	return GNN_OK;

out_fds:
	close_fds(srv);
out_free:
	free(srv);
	return err;
}

int gnn_http_port(const struct gnn_http *srv)
{
	return srv != NULL ? srv->port : -1;
}

void gnn_http_stop(struct gnn_http *srv)
{
	if (srv == NULL)
		return;
	/* The acceptor first, so that nothing hands MHD a connection while it
	 * stops. An eventfd write cannot fail short of a counter overflow. */
	if (write(srv->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t)) != sizeof(uint64_t))
		GNN_ERROR("http_wake_failed", "addr=%s port=%d err=\"%s\"", srv->addr, srv->port,
			  strerror(errno));
	pthread_join(srv->acceptor, NULL);
	MHD_stop_daemon(srv->daemon);
	close(srv->listen_fd);
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	close(srv->wake_fd);
	GNN_INFO("http_stopped", "addr=%s port=%d", srv->addr, srv->port);
	/* Services stop this server last: report what the rate limits held
	 * back (log.h) while the log is still read. */
	gnn_log_flush();
	free(srv);
}
