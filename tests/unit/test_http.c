/* test_http.c - the observability HTTP server, driven by a small socket
 * client: status codes, bodies, headers, request metrics, promtool on
 * /metrics, stopping with idle clients attached, port conflicts, and
 * staying up: slow clients, the idle timeout, the connection limit, the
 * descriptor limit, descriptors above FD_SETSIZE. */
#include "err.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define PROMTOOL "/usr/bin/promtool"
#define IO_TIMEOUT_S 5 /* no single client read may hang the test longer */

/* The read and write timeout connect_fd sets; probes shorten it. */
static long io_timeout_ms = IO_TIMEOUT_S * 1000;

/* --- a tiny HTTP/1.1 client ------------------------------------------- */

struct resp {
	int status;
	char head[4096]; /* status line and headers, NUL-terminated */
	char *body;      /* malloc'd, NUL-terminated */
	size_t body_len;
};

static void resp_free(struct resp *r)
{
	free(r->body);
	r->body = NULL;
}

/* Connects fd (a TCP socket of addr's family) to addr:port, with the
 * read and write timeouts set; false on failure (fd is left open). */
static bool connect_fd(int fd, const char *addr, int port)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	struct timeval tv = { .tv_sec = io_timeout_ms / 1000, .tv_usec = io_timeout_ms % 1000 * 1000 };
	socklen_t len;

	memset(&sa, 0, sizeof(sa));
	if (inet_pton(AF_INET, addr, &sa.in.sin_addr) == 1) {
		sa.in.sin_family = AF_INET;
		sa.in.sin_port = htons((unsigned short)port);
		len = sizeof(sa.in);
	} else if (inet_pton(AF_INET6, addr, &sa.in6.sin6_addr) == 1) {
		sa.in6.sin6_family = AF_INET6;
		sa.in6.sin6_port = htons((unsigned short)port);
		len = sizeof(sa.in6);
	} else {
		return false;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return connect(fd, &sa.sa, len) == 0;
}

/* A TCP socket for addr's family. */
static int socket_for(const char *addr)
{
	struct in6_addr a6;

	return socket(inet_pton(AF_INET6, addr, &a6) == 1 ? AF_INET6 : AF_INET,
		      SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static int connect_to(const char *addr, int port)
{
	int fd = socket_for(addr);

	if (fd >= 0 && !connect_fd(fd, addr, port)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

		if (k <= 0)
			return false;
		s += k;
		n -= (size_t)k;
	}
	return true;
}

/* On fd, a fresh socket of addr's family (closed in any case): sends raw
 * (a whole request asking for Connection: close), reads to EOF and splits
 * the answer. */
static bool http_raw_on(int fd, const char *addr, int port, const char *raw, struct resp *r)
{
	size_t cap = 1 << 16, len = 0;
	char *buf, *sep;
	ssize_t k;

	memset(r, 0, sizeof(*r));
	if (!connect_fd(fd, addr, port) || !send_all(fd, raw) || (buf = malloc(cap)) == NULL) {
		close(fd);
		return false;
	}
	while ((k = recv(fd, buf + len, cap - len - 1, 0)) > 0) {
		len += (size_t)k;
		if (len + 1 == cap) {
			char *p = realloc(buf, cap *= 2);

			if (p == NULL)
				break;
			buf = p;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (k < 0 || (sep = strstr(buf, "\r\n\r\n")) == NULL || (size_t)(sep - buf) >= sizeof(r->head) ||
	    sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
		free(buf);
		return false;
	}
	memcpy(r->head, buf, (size_t)(sep - buf));
	r->head[sep - buf] = '\0';
	r->body_len = len - (size_t)(sep + 4 - buf);
	memmove(buf, sep + 4, r->body_len + 1);
	r->body = buf;
	return true;
}

static bool http_raw(const char *addr, int port, const char *raw, struct resp *r)
{
	int fd = socket_for(addr);

	memset(r, 0, sizeof(*r));
	return fd >= 0 && http_raw_on(fd, addr, port, raw, r);
}

static bool http_req(int port, const char *method, const char *path, struct resp *r)
{
	char raw[512];

	snprintf(raw, sizeof(raw),
		 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", method, path,
		 strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");
	return http_raw("127.0.0.1", port, raw, r);
}

/* Whether the response has header name with exactly this value. */
static bool header_is(const struct resp *r, const char *name, const char *value)
{
	size_t n = strlen(name);

	for (const char *p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
		const char *v = p + 2 + n + 1;

		if (strncasecmp(p + 2, name, n) != 0 || p[2 + n] != ':')
			continue;
		while (*v == ' ')
			v++;
		return strncmp(v, value, strlen(value)) == 0 &&
		       (v[strlen(value)] == '\0' || v[strlen(value)] == '\r');
	}
	return false;
}

/* One request, checked for status and (when body is not NULL) exact body. */
static bool expect(int port, const char *method, const char *path, int status, const char *body)
{
	struct resp r;
	bool ok;

	if (!CHECK(http_req(port, method, path, &r))) {
		printf("  %s %s: no answer\n", method, path);
		return false;
	}
	ok = r.status == status && (body == NULL || strcmp(r.body, body) == 0);
	if (!CHECK(ok))
		printf("  %s %s: got %d \"%s\", want %d \"%s\"\n", method, path, r.status, r.body,
		       status, body ? body : "*");
	resp_free(&r);
	return ok;
}

static double requests(const char *text, const char *path, int code)
{
	char key[128];

	snprintf(key, sizeof(key), "gnn_http_requests_total{path=\"%s\",code=\"%d\"}", path, code);
	return t_sample_value(text, key);
}

static double elapsed_s(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* --- ready callback ----------------------------------------------------- */

struct readiness {
	atomic_bool ready;
	const char *reason; /* written into the buffer when not ready; NULL: none */
	atomic_int calls;
};

static bool ready_cb(void *ctx, char *reason, size_t reason_size)
{
	struct readiness *rd = ctx;

	atomic_fetch_add(&rd->calls, 1);
	if (atomic_load(&rd->ready))
		return true;
	if (rd->reason != NULL)
		snprintf(reason, reason_size, "%s", rd->reason);
	return false;
}

/* --- tests -------------------------------------------------------------- */

static void test_endpoints(void)
{
	struct readiness rd = { .reason = "loading partition" };
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct resp r;
	int port;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	atomic_init(&rd.ready, true);
	atomic_init(&rd.calls, 0);
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, ready_cb, &rd, &srv) == GNN_OK))
		goto out_reg;
	port = gnn_http_port(srv);
	CHECK(port > 0 && port < 65536);

	if (CHECK(http_req(port, "GET", "/healthz", &r))) {
		CHECK(r.status == 200 && strcmp(r.body, "ok\n") == 0);
		CHECK(header_is(&r, "Content-Type", "text/plain; charset=utf-8"));
		resp_free(&r);
	}
	expect(port, "GET", "/healthz?probe=1", 200, "ok\n");
	if (CHECK(http_req(port, "HEAD", "/healthz", &r))) {
		CHECK(r.status == 200 && r.body_len == 0);
		resp_free(&r);
	}

	expect(port, "GET", "/readyz", 200, "ready\n");
	atomic_store(&rd.ready, false);
	expect(port, "GET", "/readyz", 503, "not ready: loading partition\n");
	rd.reason = "two\nlines";
	expect(port, "GET", "/readyz", 503, "not ready: two\n");
	rd.reason = NULL;
	expect(port, "GET", "/readyz", 503, "not ready\n");
	CHECK(atomic_load(&rd.calls) == 4);
	/* Readiness does not touch liveness. */
	expect(port, "GET", "/healthz", 200, "ok\n");

	expect(port, "GET", "/nope", 404, NULL);
	expect(port, "GET", "/", 404, NULL);
	expect(port, "GET", "/metrics/", 404, NULL);
	if (CHECK(http_req(port, "POST", "/metrics", &r))) {
		CHECK(r.status == 405);
		CHECK(header_is(&r, "Allow", "GET, HEAD"));
		resp_free(&r);
	}
	expect(port, "DELETE", "/healthz", 405, NULL);
	expect(port, "PUT", "/readyz", 405, NULL);

	if (CHECK(http_req(port, "GET", "/metrics", &r))) {
		CHECK(r.status == 200);
		CHECK(header_is(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8"));
		CHECK(requests(r.body, "/healthz", 200) == 4);
		CHECK(requests(r.body, "/readyz", 200) == 1);
		CHECK(requests(r.body, "/readyz", 503) == 3);
		CHECK(requests(r.body, "other", 404) == 3);
		CHECK(requests(r.body, "/metrics", 405) == 1);
		CHECK(requests(r.body, "/healthz", 405) == 1);
		CHECK(requests(r.body, "/readyz", 405) == 1);
		/* Pre-created at 0; this scrape is counted after it is rendered. */
		CHECK(requests(r.body, "/metrics", 200) == 0);
		/* Unknown paths never become label values. */
		CHECK(strstr(r.body, "/nope") == NULL);
		resp_free(&r);
	}
	if (CHECK(http_req(port, "GET", "/metrics", &r))) {
		CHECK(requests(r.body, "/metrics", 200) == 1);
		resp_free(&r);
	}
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

static void test_null_ready_means_ready(void)
{
	struct gnn_metrics *reg;
	struct gnn_http *srv;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	if (CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK)) {
		expect(gnn_http_port(srv), "GET", "/readyz", 200, "ready\n");
		gnn_http_stop(srv);
	}
	gnn_metrics_free(reg);
}

static void test_metrics_pass_promtool(void)
{
	struct gnn_metrics *reg;
	struct gnn_counter *c;
	struct gnn_http *srv;
	char path[] = "/tmp/test_http_XXXXXX", cmd[256], line[512];
	bool quiet = true;
	struct resp r;
	FILE *fp, *pp;
	int fd;

	if (access(PROMTOOL, X_OK) != 0) {
		SKIP(PROMTOOL " not found (Debian package prometheus)");
		return;
	}
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_add_process(reg) == GNN_OK);
	CHECK(gnn_metrics_counter(reg, "gnn_samples_total", "Samples drawn.", NULL, 0, &c) == GNN_OK);
	gnn_counter_add(c, 42);
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK))
		goto out_reg;
	expect(gnn_http_port(srv), "GET", "/nope", 404, NULL);
	if (!CHECK(http_req(gnn_http_port(srv), "GET", "/metrics", &r)))
		goto out_srv;
	CHECK(r.status == 200);
	CHECK(t_sample_value(r.body, "gnn_samples_total") == 42);
	CHECK(t_sample_value(r.body, "process_open_fds") >= 3);
	if (CHECK((fd = mkstemp(path)) >= 0) && CHECK((fp = fdopen(fd, "w")) != NULL)) {
		fwrite(r.body, 1, r.body_len, fp);
		fclose(fp);
		snprintf(cmd, sizeof(cmd), "%s check metrics < %s 2>&1", PROMTOOL, path);
		if (CHECK((pp = popen(cmd, "r")) != NULL)) {
			while (fgets(line, sizeof(line), pp) != NULL) {
				printf("  promtool: %s", line);
				quiet = false;
			}
			CHECK(pclose(pp) == 0);
			CHECK(quiet);
		}
		unlink(path);
	}
	resp_free(&r);
out_srv:
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

/* Reads until the server closes; true when it did (EOF or reset) rather
 * than the read timing out. */
static bool closed_by_peer(int fd)
{
	char buf[4096];
	ssize_t k;

	while ((k = recv(fd, buf, sizeof(buf), 0)) > 0)
		;
	return k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

static void test_stop_with_idle_clients(void)
{
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct timespec t0;
	int idle, partial, keepalive, port;
	double took;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK))
		goto out_reg;
	port = gnn_http_port(srv);
	idle = connect_to("127.0.0.1", port);          /* says nothing */
	partial = connect_to("127.0.0.1", port);       /* half a request line */
	keepalive = connect_to("127.0.0.1", port);     /* one answered request, kept open */
	CHECK(idle >= 0 && partial >= 0 && keepalive >= 0);
	CHECK(send_all(partial, "GET /heal"));
	CHECK(send_all(keepalive, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
	usleep(200 * 1000); /* let the server accept them and answer the third */

	clock_gettime(CLOCK_MONOTONIC, &t0);
	gnn_http_stop(srv);
	took = elapsed_s(&t0);
	if (!CHECK(took < 2.0))
		printf("  gnn_http_stop took %.2f s\n", took);
	CHECK(closed_by_peer(idle));
	CHECK(closed_by_peer(partial));
	CHECK(closed_by_peer(keepalive));
	close(idle);
	close(partial);
	close(keepalive);
	/* The port is free again once stopped. */
	CHECK(gnn_http_start("127.0.0.1", port, reg, NULL, NULL, &srv) == GNN_OK);
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

static void test_port_in_use(void)
{
	static char sentinel_storage;
	struct gnn_http *const sentinel = (struct gnn_http *)(void *)&sentinel_storage;
	struct gnn_metrics *reg, *reg2;
	struct gnn_http *a, *b = sentinel, *c;
	struct resp r;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	if (!CHECK(gnn_metrics_new(&reg2) == GNN_OK))
		goto out_reg;
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &a) == GNN_OK))
		goto out_reg2;
	CHECK(gnn_http_start("127.0.0.1", gnn_http_port(a), reg2, NULL, NULL, &b) == GNN_EIO);
	CHECK(gnn_http_start("0.0.0.0", gnn_http_port(a), reg2, NULL, NULL, &b) == GNN_EIO);
	CHECK(b == sentinel);
	/* The first server is unharmed. */
	expect(gnn_http_port(a), "GET", "/healthz", 200, "ok\n");

	/* A second server on the same registry shares the request counter. */
	if (CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &c) == GNN_OK)) {
		CHECK(gnn_http_port(c) != gnn_http_port(a));
		expect(gnn_http_port(c), "GET", "/healthz", 200, "ok\n");
		if (CHECK(http_req(gnn_http_port(a), "GET", "/metrics", &r))) {
			CHECK(requests(r.body, "/healthz", 200) == 2);
			resp_free(&r);
		}
		gnn_http_stop(c);
	}
	gnn_http_stop(a);
out_reg2:
	gnn_metrics_free(reg2);
out_reg:
	gnn_metrics_free(reg);
}

static void test_bad_args(void)
{
	struct gnn_metrics *reg;
	struct gnn_http *srv = NULL;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_http_start("localhost", 0, reg, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(gnn_http_start("300.1.1.1", 0, reg, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(gnn_http_start("", 0, reg, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(gnn_http_start("127.0.0.1", -1, reg, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(gnn_http_start("127.0.0.1", 65536, reg, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(gnn_http_start("127.0.0.1", 0, NULL, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, NULL) == GNN_EINVAL);
	CHECK(srv == NULL);
	CHECK(gnn_http_port(NULL) == -1);
	gnn_http_stop(NULL);
	gnn_metrics_free(reg);
}

static void test_taken_metric_name(void)
{
	struct gnn_metrics *reg;
	struct gnn_counter *c;
	struct gnn_http *srv = NULL;

	/* Someone else owns the name with other labels: refuse to start
	 * rather than count into the wrong thing. */
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_counter(reg, "gnn_http_requests_total", "h", NULL, 0, &c) == GNN_OK);
	CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_EINVAL);
	CHECK(srv == NULL);
	gnn_metrics_free(reg);
}

#define CLIENTS 8
#define ROUNDS 25

struct client_arg {
	int port;
	int failures;
};

static void *client(void *p)
{
	struct client_arg *a = p;
	struct resp r;

	for (int i = 0; i < ROUNDS; i++) {
		if (!http_req(a->port, "GET", "/healthz", &r) || r.status != 200)
			a->failures++;
		resp_free(&r);
		if (!http_req(a->port, "GET", "/metrics", &r) || r.status != 200)
			a->failures++;
		resp_free(&r);
	}
	return NULL;
}

static void test_concurrent_clients(void)
{
	struct client_arg args[CLIENTS];
	pthread_t tids[CLIENTS];
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct resp r;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	CHECK(gnn_metrics_add_process(reg) == GNN_OK);
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK))
		goto out_reg;
	for (int i = 0; i < CLIENTS; i++) {
		args[i] = (struct client_arg){ gnn_http_port(srv), 0 };
		CHECK(pthread_create(&tids[i], NULL, client, &args[i]) == 0);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(tids[i], NULL);
		CHECK(args[i].failures == 0);
	}
	if (CHECK(http_req(gnn_http_port(srv), "GET", "/metrics", &r))) {
		CHECK(requests(r.body, "/healthz", 200) == CLIENTS * ROUNDS);
		CHECK(requests(r.body, "/metrics", 200) == CLIENTS * ROUNDS);
		resp_free(&r);
	}
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

static void test_ipv6_loopback(void)
{
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct resp r;
	int fd;

	/* Containers often run without IPv6. */
	if ((fd = socket(AF_INET6, SOCK_STREAM, 0)) < 0) {
		SKIP("no IPv6 sockets here");
		return;
	}
	close(fd);
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	if (gnn_http_start("::1", 0, reg, NULL, NULL, &srv) != GNN_OK) {
		SKIP("cannot bind ::1");
		goto out_reg;
	}
	if (CHECK(http_raw("::1", gnn_http_port(srv),
			   "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &r))) {
		CHECK(r.status == 200 && strcmp(r.body, "ok\n") == 0);
		resp_free(&r);
	}
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

/* --- staying up ------------------------------------------------------------ */

/* One GET on a fresh connection, on fd (a socket made beforehand) or, for
 * -1, a new one; true when it answered want within 1 s (a liveness probe's
 * timeout). */
static bool probe_1s(int fd, int port, const char *path, int want)
{
	char raw[256];
	struct timespec t0;
	struct resp r;
	double took;
	bool ok;

	snprintf(raw, sizeof(raw), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
		 path);
	io_timeout_ms = 1500; /* a server that does not answer fails this quickly */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok = fd >= 0 ? http_raw_on(fd, "127.0.0.1", port, raw, &r) : http_raw("127.0.0.1", port, raw, &r);
	took = elapsed_s(&t0);
	io_timeout_ms = IO_TIMEOUT_S * 1000;
	if (!ok || r.status != want || took >= 1.0) {
		printf("  GET %s: %s %d after %.3f s, want %d within 1 s\n", path,
		       ok ? "status" : "no answer", r.status, took, want);
		ok = false;
	}
	resp_free(&r);
	return ok;
}

/* Sets RLIMIT_NOFILE's soft limit to soft (at most the hard one); the old
 * limits go to *old for restore_nofile. */
static bool set_nofile(rlim_t soft, struct rlimit *old)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, old) != 0 || (old->rlim_max != RLIM_INFINITY && soft > old->rlim_max))
		return false;
	rl = *old;
	rl.rlim_cur = soft;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

static void restore_nofile(const struct rlimit *old)
{
	CHECK(setrlimit(RLIMIT_NOFILE, old) == 0);
}

#define SLOW_CLIENTS 200

/* 200 slow clients (half silent, half stuck in the middle of a request):
 * the probes still answer at once. Before the server's connections were
 * sized from RLIMIT_NOFILE, 64 such clients silenced it. */
static void test_slow_clients(void)
{
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct rlimit old;
	int fds[SLOW_CLIENTS], n, port;

	/* 200 clients, 200 server sides, and a limit that leaves room. */
	if (!set_nofile(1024, &old)) {
		SKIP("cannot set RLIMIT_NOFILE to 1024");
		return;
	}
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		goto out_limit;
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK))
		goto out_reg;
	port = gnn_http_port(srv);
	for (n = 0; n < SLOW_CLIENTS; n++) {
		if ((fds[n] = connect_to("127.0.0.1", port)) < 0)
			break;
		if (n % 2 == 1 && !send_all(fds[n], "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a"))
			break;
	}
	CHECK(n == SLOW_CLIENTS);
	usleep(200 * 1000); /* all accepted */
	for (int i = 0; i < 5; i++) {
		CHECK(probe_1s(-1, port, "/healthz", 200));
		CHECK(probe_1s(-1, port, "/readyz", 200));
	}
	CHECK(probe_1s(-1, port, "/metrics", 200));
	while (n-- > 0)
		close(fds[n]);
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
out_limit:
	restore_nofile(&old);
}

/* A connection that says nothing, or stops in the middle of its request,
 * is closed after GNN_HTTP_TIMEOUT_S. */
static void test_idle_timeout(void)
{
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct timespec t0;
	int idle, partial;
	double took;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		return;
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK))
		goto out_reg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	idle = connect_to("127.0.0.1", gnn_http_port(srv));
	partial = connect_to("127.0.0.1", gnn_http_port(srv));
	if (CHECK(idle >= 0 && partial >= 0)) {
		CHECK(send_all(partial, "GET /heal"));
		CHECK(closed_by_peer(idle));
		took = elapsed_s(&t0);
		if (!CHECK(took > GNN_HTTP_TIMEOUT_S - 0.5 && took < GNN_HTTP_TIMEOUT_S + 1.5))
			printf("  idle connection closed after %.2f s, timeout %d s\n", took,
			       GNN_HTTP_TIMEOUT_S);
		CHECK(closed_by_peer(partial));
		CHECK(elapsed_s(&t0) < GNN_HTTP_TIMEOUT_S + 1.5);
	}
	if (idle >= 0)
		close(idle);
	if (partial >= 0)
		close(partial);
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

/* RLIMIT_NOFILE 64 gives MHD 16 connections. With those taken the
 * acceptor answers the probes itself, /metrics with 503; once they close
 * MHD serves again (its connection count came back down). */
static void test_connection_limit(void)
{
	enum { LIMIT = 16 };
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct rlimit old;
	int fds[LIMIT], n, port;
	bool started;

	if (!set_nofile(64, &old)) {
		SKIP("cannot set RLIMIT_NOFILE to 64");
		return;
	}
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK)) {
		restore_nofile(&old);
		return;
	}
	started = CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK);
	restore_nofile(&old); /* the server sized itself at start */
	if (!started)
		goto out_reg;
	port = gnn_http_port(srv);
	for (n = 0; n < LIMIT && (fds[n] = connect_to("127.0.0.1", port)) >= 0; n++)
		;
	CHECK(n == LIMIT);
	usleep(200 * 1000);
	CHECK(probe_1s(-1, port, "/healthz", 200));
	CHECK(probe_1s(-1, port, "/readyz", 200));
	CHECK(probe_1s(-1, port, "/metrics", 503));
	CHECK(probe_1s(-1, port, "/nope", 404));
	while (n-- > 0)
		close(fds[n]);
	usleep(300 * 1000);
	for (n = 0; n < LIMIT - 1 && (fds[n] = connect_to("127.0.0.1", port)) >= 0; n++)
		;
	usleep(200 * 1000);
	CHECK(probe_1s(-1, port, "/metrics", 200));
	while (n-- > 0)
		close(fds[n]);
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
}

/* Takes every descriptor that frees up, as a service's nng listener does
 * with connections queued at its port (it retries every 10 ms). */
struct grabber {
	atomic_bool stop;
	atomic_int failures; /* open() failing: the process is at its limit */
	int fds[256];
	int n;
};

static void *grab(void *p)
{
	struct grabber *g = p;

	while (!atomic_load(&g->stop)) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			atomic_fetch_add(&g->failures, 1);
		else if (g->n < (int)(sizeof(g->fds) / sizeof(g->fds[0])))
			g->fds[g->n++] = fd;
		else
			close(fd);
		/* nng's rate: it retries a failed accept every 10 ms. At 2 ms
		 * the grabber, on a busy machine under ASan, now and then took
		 * the spare's slot in the moment between its close and the
		 * acceptor's accept4 (libcommon/http.c), and the probe waited. */
		usleep(10 * 1000);
	}
	return NULL;
}

/* The process at its descriptor limit, every freed one taken at once by
 * another thread: the probes still answer within 1 s (the spare descriptor
 * answers them, and is never given up), and the server serves normally
 * once descriptors are free again. */
static void test_fd_limit(void)
{
	enum { PROBES = 10 };
	struct grabber g = { .n = 0 };
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct rlimit old;
	int socks[PROBES], port, before;
	pthread_t tid;

	atomic_init(&g.stop, false);
	atomic_init(&g.failures, 0);
	if (!set_nofile(64, &old)) {
		SKIP("cannot set RLIMIT_NOFILE to 64");
		return;
	}
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		goto out_limit;
	if (!CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK))
		goto out_reg;
	port = gnn_http_port(srv);
	/* The probes' own sockets, made while descriptors are left. */
	for (int i = 0; i < PROBES; i++)
		CHECK((socks[i] = socket_for("127.0.0.1")) >= 0);
	if (!CHECK(pthread_create(&tid, NULL, grab, &g) == 0))
		goto out_srv;
	for (int i = 0; i < 200 && atomic_load(&g.failures) == 0; i++)
		usleep(10 * 1000);
	CHECK(atomic_load(&g.failures) > 0);
	for (int i = 0; i < PROBES; i++) {
		before = atomic_load(&g.failures);
		if (socks[i] >= 0)
			CHECK(probe_1s(socks[i], port, i % 2 == 0 ? "/healthz" : "/readyz", 200));
		socks[i] = -1;
		/* Still at the limit: the grabber took the probe's descriptor
		 * (it may wait for a CPU on a busy machine). */
		for (int k = 0; k < 100 && atomic_load(&g.failures) <= before; k++)
			usleep(10 * 1000);
		CHECK(atomic_load(&g.failures) > before);
	}
	atomic_store(&g.stop, true);
	pthread_join(tid, NULL);
	while (g.n > 0)
		close(g.fds[--g.n]);
	CHECK(probe_1s(-1, port, "/metrics", 200));
out_srv:
	for (int i = 0; i < PROBES; i++)
		if (socks[i] >= 0)
			close(socks[i]);
	gnn_http_stop(srv);
out_reg:
	gnn_metrics_free(reg);
out_limit:
	restore_nofile(&old);
}

/* Descriptors above FD_SETSIZE (1024), which select() cannot watch: the
 * server (epoll) takes connections there. */
static void test_high_fds(void)
{
	enum { ABOVE = 1100 };
	struct gnn_metrics *reg;
	struct gnn_http *srv;
	struct rlimit old;
	int *held, n = 0, fd;

	if (!set_nofile(2048, &old)) {
		SKIP("cannot set RLIMIT_NOFILE to 2048");
		return;
	}
	if (!CHECK((held = malloc(ABOVE * sizeof(*held))) != NULL))
		goto out_limit;
	/* Fills the table up to ABOVE, so everything new lands above it. */
	while (n < ABOVE && (fd = fcntl(0, F_DUPFD_CLOEXEC, 0)) >= 0) {
		held[n++] = fd;
		if (fd >= ABOVE)
			break;
	}
	CHECK(n > 0 && held[n - 1] >= ABOVE);
	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK))
		goto out_held;
	if (CHECK(gnn_http_start("127.0.0.1", 0, reg, NULL, NULL, &srv) == GNN_OK)) {
		CHECK(probe_1s(-1, gnn_http_port(srv), "/healthz", 200));
		CHECK(probe_1s(-1, gnn_http_port(srv), "/metrics", 200));
		gnn_http_stop(srv);
	}
	gnn_metrics_free(reg);
out_held:
	while (n > 0)
		close(held[--n]);
	free(held);
out_limit:
	restore_nofile(&old);
}

int main(void)
{
	/* A hang anywhere (a stop that waits for a client) fails the binary
	 * instead of blocking the test run. */
	alarm(90);
	if (getenv("GNN_LOG_LEVEL") == NULL)
		gnn_log_set_level(GNN_LOG_ERROR);
	RUN(test_endpoints);
	RUN(test_null_ready_means_ready);
	RUN(test_metrics_pass_promtool);
	RUN(test_stop_with_idle_clients);
	RUN(test_port_in_use);
	RUN(test_bad_args);
	RUN(test_taken_metric_name);
	RUN(test_concurrent_clients);
	RUN(test_ipv6_loopback);
	RUN(test_slow_clients);
	RUN(test_idle_timeout);
	RUN(test_connection_limit);
	RUN(test_fd_limit);
	RUN(test_high_fds);
	return t_done();
}
