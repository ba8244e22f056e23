#include "http.h"
#include "err.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CT_TEXT "text/plain; charset=utf-8"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

/* The path label takes only these values, so a scanner probing random URLs
 * cannot grow the metric without bound. */
enum path { PATH_HEALTHZ, PATH_READYZ, PATH_METRICS, PATH_OTHER, PATH_COUNT };

static const char *const path_names[PATH_COUNT] = { "/healthz", "/readyz", "/metrics", "other" };

struct gnn_http {
	struct MHD_Daemon *daemon;
	struct gnn_metrics *reg;
	struct gnn_counter *requests; /* gnn_http_requests_total{path,code} */
	gnn_ready_fn ready;
	void *ready_ctx;
	int port;
	char addr[INET6_ADDRSTRLEN];
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

static enum MHD_Result serve_readyz(struct gnn_http *srv, struct MHD_Connection *conn)
{
	char reason[GNN_HTTP_REASON_MAX] = "";
	char body[GNN_HTTP_REASON_MAX + 16];

	if (srv->ready == NULL || srv->ready(srv->ready_ctx, reason, sizeof(reason)))
		return reply_static(srv, conn, PATH_READYZ, MHD_HTTP_OK, "ready\n");
	/* Trust the callback with nothing: terminate the reason and keep it
	 * to one line. */
	reason[sizeof(reason) - 1] = '\0';
	reason[strcspn(reason, "\r\n")] = '\0';
	if (reason[0] != '\0')
		snprintf(body, sizeof(body), "not ready: %s\n", reason);
	else
		snprintf(body, sizeof(body), "not ready\n");
	return reply(srv, conn, PATH_READYZ, MHD_HTTP_SERVICE_UNAVAILABLE, CT_TEXT, body,
		     strlen(body), MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result serve_metrics(struct gnn_http *srv, struct MHD_Connection *conn)
{
	char *text;
	size_t len;
	int err;

	if ((err = gnn_metrics_render(srv->reg, &text, &len)) != GNN_OK) {
		GNN_ERROR("http_metrics_render_failed", "err=\"%s\"", gnn_strerror(err));
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
 * as one line each instead of to stderr. */
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
	GNN_WARN("http_server", "addr=%s msg=\"%s\"", srv->addr, msg);
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
	    bind(fd, sa, salen) != 0 || listen(fd, GNN_HTTP_MAX_CONNECTIONS) != 0) {
		GNN_ERROR("http_bind_failed", "addr=%s port=%d err=\"%s\"", srv->addr, port,
			  strerror(errno));
		close(fd);
		return GNN_EIO;
	}
	*out = fd;
	return GNN_OK;
}

int gnn_http_start(const char *bind_addr, int port, struct gnn_metrics *reg, gnn_ready_fn ready,
		   void *ready_ctx, struct gnn_http **out)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} addr;
	const union MHD_DaemonInfo *info;
	const char *host = bind_addr != NULL ? bind_addr : "0.0.0.0";
	struct gnn_http *srv;
	socklen_t addrlen;
	int fd, err;

	if (reg == NULL || out == NULL || port < 0 || port > 65535)
		return GNN_EINVAL;
	memset(&addr, 0, sizeof(addr));
	if (inet_pton(AF_INET, host, &addr.in.sin_addr) == 1) {
		addr.in.sin_family = AF_INET;
		addr.in.sin_port = htons((unsigned short)port);
		addrlen = sizeof(addr.in);
	} else if (inet_pton(AF_INET6, host, &addr.in6.sin6_addr) == 1) {
		addr.in6.sin6_family = AF_INET6;
		addr.in6.sin6_port = htons((unsigned short)port);
		addrlen = sizeof(addr.in6);
	} else {
		GNN_ERROR("http_bad_addr", "addr=%.64s need=ipv4_or_ipv6_literal", host);
		return GNN_EINVAL;
	}

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return GNN_ENOMEM;
	srv->reg = reg;
	srv->ready = ready;
	srv->ready_ctx = ready_ctx;
	snprintf(srv->addr, sizeof(srv->addr), "%s", host);
	if ((err = setup_requests_metric(srv)) != GNN_OK) {
		GNN_ERROR("http_metric_failed", "name=gnn_http_requests_total err=\"%s\"",
			  gnn_strerror(err));
		goto out_free;
	}
	if ((err = open_listener(srv, &addr.sa, addrlen, port, &fd)) != GNN_OK)
		goto out_free;

	/* The logger goes first so that start-up errors reach it too. */
	srv->daemon = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				       NULL, handle, srv,
				       MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
				       MHD_OPTION_LISTEN_SOCKET, fd,
				       MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)GNN_HTTP_THREADS,
				       MHD_OPTION_CONNECTION_LIMIT, (unsigned int)GNN_HTTP_MAX_CONNECTIONS,
				       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)GNN_HTTP_TIMEOUT_S,
				       MHD_OPTION_END);
	if (srv->daemon == NULL) {
		/* No close(fd): MHD 0.9.75 closes a listen socket handed to it on
		 * every failure after option parsing, and these options are
		 * fixed and valid. Closing it again could hit another thread's
		 * new descriptor. */
		GNN_ERROR("http_start_failed", "addr=%s port=%d", srv->addr, port);
		err = GNN_EIO;
		goto out_free;
	}
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info != NULL ? info->port : port;
	GNN_INFO("http_listening", "addr=%s port=%d", srv->addr, srv->port);
	*out = srv;
	return GNN_OK;

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
	MHD_stop_daemon(srv->daemon);
	GNN_INFO("http_stopped", "addr=%s port=%d", srv->addr, srv->port);
	free(srv);
}
