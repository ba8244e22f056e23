/* Unit tests of the RPC layer (server.h, client.h) over real nng sockets on
 * 127.0.0.1: calls, error replies, garbage, timeouts against a dead or slow
 * peer, parallel calls, and recovery when the server comes back. */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "sys.h"
#include "testlib.h"

/* INFO_REQ: answers a 1-partition layout; SAMPLE_REQ: sleeps fanout ms then
 * answers with no neighbours; FEAT_REQ: returns GNN_ERANGE from the handler;
 * LABEL_REQ: an explicit ERROR reply with a text. */
static int handler(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len,
		   struct gnn_wbuf *out)
{
	int64_t offsets[2] = { 0, 10 };
	static struct gnn_schema schema;
	struct gnn_info info = { .layout = { .num_parts = 1, .num_nodes = 10, .num_edges = 5, .feat_dim = 4,
					     .num_classes = 2, .feat_dtype = GNN_DT_F32, .graph_id = 77, .offsets = offsets, .schema = &schema,
					     .type_offsets = offsets } };
	struct gnn_sample_req rq;
	uint32_t zero[64] = { 0 };
	int rc;

	(void)ctx;
	gnn_schema_plain(&schema, 10, 5, 4);
	switch (h->type) {
	case GNN_MSG_INFO_REQ:
		return gnn_encode_info_resp(out, h->req_id, &info);
	case GNN_MSG_SAMPLE_REQ:
		if ((rc = gnn_decode_sample_req(payload, len, &rq)) != GNN_OK)
			return rc;
		usleep((useconds_t)rq.fanouts[0] * 1000);
		rc = gnn_encode_sample_resp(out, h->req_id, zero, rq.n < 64 ? rq.n : 64, 1, NULL, 0);
		gnn_proto_release(rq.owned);
		return rc;
	case GNN_MSG_FEAT_REQ:
		return GNN_ERANGE;
	default:
		return gnn_encode_error(out, h->req_id, GNN_ENOENT, "no such thing here");
	}
}

static struct gnn_metrics *reg;

static int start(const char *url, struct gnn_server **s)
{
	struct gnn_server_opts o = { .name = "t", .listen = url, .workers = 4, .metrics = reg,
				     .handler = handler };

	return gnn_server_start(&o, s);
}

static int open_client(int port, int timeout_ms, int retries, struct gnn_client **c)
{
	char url[64];
	struct gnn_client_opts o = { .url = url, .name = "peer-x", .timeout_ms = timeout_ms, .retries = retries };

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	return gnn_client_open(&o, c);
}

static double metric(const char *key)
{
	char *text;
	size_t len;
	double v;

	if (gnn_metrics_render(reg, &text, &len) != GNN_OK)
		return NAN;
	v = t_sample_value(text, key);
	free(text);
	return v;
}

static void test_calls_and_errors(void)
{
	struct gnn_server *s;
	struct gnn_client *c;
	struct gnn_wbuf w;
	struct gnn_info info;
	const void *payload;
	size_t len;
	nng_msg *reply = NULL;
	char err[256];
	int64_t ids[1] = { 1 };

	if (!CHECK(start("tcp://127.0.0.1:0", &s) == GNN_OK))
		return;
	CHECK(open_client(gnn_server_port(s), 2000, 0, &c) == GNN_OK);
	gnn_wbuf_init(&w);
	gnn_encode_info_req(&w, 41);
	if (CHECK(gnn_client_call(c, &w, &reply, err, sizeof(err)) == GNN_OK)) {
		CHECK(gnn_reply_payload(reply, GNN_MSG_INFO_RESP, &payload, &len) == GNN_OK);
		CHECK(gnn_decode_info_resp(payload, len, &info) == GNN_OK && info.layout.graph_id == 77);
		/* nng strips a 4-byte ID in front: the 28-byte header realigns the payload */
		CHECK(((uintptr_t)payload & 7) == 0 && info.owned == (const void *)info.layout.schema);
		gnn_proto_release(info.owned);
		CHECK(gnn_reply_payload(reply, GNN_MSG_SAMPLE_RESP, &payload, &len) == GNN_EPROTO);
		nng_msg_free(reply);
	}
	w.len = 0;
	gnn_encode_ids_req(&w, GNN_MSG_FEAT_REQ, 42, ids, 1);
	CHECK(gnn_client_call(c, &w, &reply, err, sizeof(err)) == GNN_ERANGE);
	CHECK(strstr(err, "peer-x") != NULL);
	w.len = 0;
	gnn_encode_ids_req(&w, GNN_MSG_LABEL_REQ, 43, ids, 1);
	CHECK(gnn_client_call(c, &w, &reply, err, sizeof(err)) == GNN_ENOENT);
	CHECK(strstr(err, "no such thing here") != NULL);
	CHECK(metric("gnn_t_requests_total{op=\"info\"}") == 1);
	CHECK(metric("gnn_t_request_errors_total{op=\"features\",code=\"erange\"}") == 1);
	CHECK(metric("gnn_t_request_errors_total{op=\"labels\",code=\"enoent\"}") == 1);
	gnn_wbuf_free(&w);
	gnn_client_close(c);
	gnn_server_stop(s);
}

/* Raw bytes through a plain REQ socket: the server answers an ERROR. */
static void test_garbage(void)
{
	struct gnn_server *s;
	nng_socket sock;
	char url[64], junk[40] = "definitely not a gnn-dist message";
	void *buf;
	size_t len;
	uint32_t status;
	uint16_t type;

	if (!CHECK(start("tcp://127.0.0.1:0", &s) == GNN_OK))
		return;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", gnn_server_port(s));
	CHECK(nng_req0_open(&sock) == 0 && nng_dial(sock, url, NULL, 0) == 0);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 2000);
	for (int i = 0; i < 3; i++) {
		CHECK(nng_send(sock, junk, (size_t)(i == 2 ? 3 : 40), 0) == 0);
		if (CHECK(nng_recv(sock, &buf, &len, NNG_FLAG_ALLOC) == 0)) {
			memcpy(&type, (char *)buf + 6, 2);
			memcpy(&status, (char *)buf + 20, 4);
			CHECK(len >= GNN_PROTO_HDR_BYTES && type == GNN_MSG_ERROR && status == GNN_EPROTO);
			nng_free(buf, len);
		}
	}
	CHECK(metric("gnn_t_bad_messages_total{reason=\"eproto\"}") >= 3);
	nng_close(sock);
	gnn_server_stop(s);
}

static void test_timeouts_and_recovery(void)
{
	struct gnn_server *s;
	struct gnn_client *c;
	struct gnn_wbuf w;
	nng_msg *reply;
	char err[256], url[64];
	double t0, dt;
	int port;

	/* Find a free port, then leave it closed: the peer is down. */
	if (!CHECK(start("tcp://127.0.0.1:0", &s) == GNN_OK))
		return;
	port = gnn_server_port(s);
	gnn_server_stop(s);
	CHECK(open_client(port, 300, 2, &c) == GNN_OK);
	gnn_wbuf_init(&w);
	gnn_encode_info_req(&w, 1);
	t0 = gnn_now();
	CHECK(gnn_client_call(c, &w, &reply, err, sizeof(err)) == GNN_ETIMEDOUT);
	dt = gnn_now() - t0;
	printf("  dead peer: failed after %.2f s (3 attempts x 300 ms)\n", dt);
	CHECK(dt >= 0.85 && dt < 3.0);
	CHECK(strstr(err, "peer-x") != NULL && strstr(err, "tcp://127.0.0.1:") != NULL);

	/* The peer comes back on the same port: the same client works again as
	 * soon as nng's redial (backoff 100 ms doubling to 2 s) reaches it. */
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	if (!CHECK(start(url, &s) == GNN_OK))
		goto out;
	t0 = gnn_now();
	while (gnn_client_call(c, &w, &reply, err, sizeof(err)) != GNN_OK && gnn_now() - t0 < 6.0)
		;
	dt = gnn_now() - t0;
	printf("  peer back: answered after %.2f s\n", dt);
	if (CHECK(dt < 6.0))
		nng_msg_free(reply);

	/* A slow reply (handler sleeps 500 ms) times out at 300 ms per attempt. */
	{
		int64_t ids[1] = { 0 };

		w.len = 0;
		gnn_encode_sample_req(&w, 2, 1, 1, (const int32_t[]){ 500 }, ids, 1);
		t0 = gnn_now();
		CHECK(gnn_client_call(c, &w, &reply, err, sizeof(err)) == GNN_ETIMEDOUT);
		dt = gnn_now() - t0;
		CHECK(dt >= 0.85 && dt < 3.0);
	}
	gnn_server_stop(s);
out:
	gnn_wbuf_free(&w);
	gnn_client_close(c);
}

/* Reads from fd until EOF, for at most limit_s: true at EOF. */
static bool eof_within(int fd, double limit_s)
{
	double end = gnn_now() + limit_s;
	char buf[4096];

	while (gnn_now() < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if ((n = read(fd, buf, sizeof(buf))) <= 0)
			return n == 0;
	}
	return false;
}

/* Whether c's connection comes up within 10 s. */
static bool connected_soon(const struct gnn_client *c)
{
	for (int i = 0; i < 500 && !gnn_client_connected(c); i++)
		usleep(20 * 1000);
	return gnn_client_connected(c);
}

/* A server whose connection goes silent without FIN or RST (a partition,
 * a host gone; here: a peer that completed nng's handshake and never
 * answers). The client closes that connection once a request went
 * unanswered for its whole timeout and dials a new one, instead of
 * waiting on it for TCP's backed-off retransmissions (tests/net's
 * graphstore_partitioned_30s measures what that costs). */
static void test_silent_connection(void)
{
	static const unsigned char rep0_hdr[8] = { 0, 'S', 'P', 0, 0x00, 0x31, 0, 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct gnn_client *c = NULL;
	struct gnn_wbuf w;
	nng_msg *reply;
	char err[256], hdr[8];
	int lfd, fd = -1, fd2 = -1;
	struct pollfd pfd;

	gnn_wbuf_init(&w);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (!CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 4) == 0 &&
		   getsockname(lfd, (struct sockaddr *)&a, &alen) == 0))
		goto out;
	if (!CHECK(open_client(ntohs(a.sin_port), 300, 0, &c) == GNN_OK))
		goto out;
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	if (!CHECK(poll(&pfd, 1, 3000) == 1 && (fd = accept(lfd, NULL, NULL)) >= 0))
		goto out;
	if (!CHECK(write(fd, rep0_hdr, sizeof(rep0_hdr)) == 8 && read(fd, hdr, sizeof(hdr)) == 8))
		goto out;
	if (!CHECK(connected_soon(c)))
		goto out;
	gnn_encode_info_req(&w, 1);
	CHECK(gnn_client_call(c, &w, &reply, err, sizeof(err)) == GNN_ETIMEDOUT);
	CHECK(strstr(err, "did not answer") != NULL);
	/* The silent connection is closed by the client, and it dials again. */
	CHECK(eof_within(fd, 2.0));
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 3000) == 1 && (fd2 = accept(lfd, NULL, NULL)) >= 0);
out:
	if (fd2 >= 0)
		close(fd2);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	if (c != NULL)
		gnn_client_close(c);
	gnn_wbuf_free(&w);
}

/* A busy peer is not a silent one: a call that times out while another
 * call's reply came on the same connection leaves the connection up (a
 * close would fail every call in flight on it, and retrying them all
 * would load the busy peer more). */
static void test_busy_connection_kept(void)
{
	struct gnn_server *s;
	struct gnn_client *c;
	struct gnn_wbuf w[2];
	struct gnn_call calls[2];
	int64_t ids[1] = { 0 };
	unsigned before;

	if (!CHECK(start("tcp://127.0.0.1:0", &s) == GNN_OK))
		return;
	CHECK(open_client(gnn_server_port(s), 1000, 0, &c) == GNN_OK);
	for (int i = 0; i < 2; i++) {
		gnn_wbuf_init(&w[i]);
		/* the first sleeps 2 s (past the timeout), the second 50 ms
		 * (well within it, on a busy machine too) */
		gnn_encode_sample_req(&w[i], (uint64_t)i + 20, 1, 1, (const int32_t[]){ i ? 50 : 2000 }, ids, 1);
		calls[i] = (struct gnn_call){ .client = c, .req = &w[i] };
	}
	CHECK(connected_soon(c));
	before = gnn_client_connections(c);
	CHECK(gnn_client_call_all(calls, 2) == GNN_ETIMEDOUT);
	CHECK(calls[0].rc == GNN_ETIMEDOUT && calls[1].rc == GNN_OK);
	nng_msg_free(calls[1].reply);
	usleep(500 * 1000);  /* a redial would come within 100 ms */
	CHECK(gnn_client_connections(c) == before && gnn_client_connected(c));
	for (int i = 0; i < 2; i++)
		gnn_wbuf_free(&w[i]);
	gnn_client_close(c);
	gnn_server_stop(s);
}

/* Every request gets a 32 MB reply: more than loopback's socket buffers. */
static int big_handler(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len, struct gnn_wbuf *out)
{
	enum { N = 8u << 20 };
	static uint32_t counts[N];

	(void)ctx;
	(void)payload;
	(void)len;
	return gnn_encode_sample_resp(out, h->req_id, counts, N, 1, NULL, 0);
}

/* A client that sends requests and never reads (gone without a reset, or
 * wedged): the server's one worker waits for the connection to take its
 * second reply, queued behind the first that fills the socket buffers.
 * Within the reply timeout (1 s here) the worker gives up, closes that
 * connection and serves a well-behaved client; without the timeout it
 * waited forever and the server answered no one. */
static void test_stuck_reply(void)
{
	static const unsigned char req0_hdr[8] = { 0, 'S', 'P', 0, 0x00, 0x30, 0, 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct gnn_server_opts o = { .name = "stuck", .listen = "tcp://127.0.0.1:0", .workers = 1, .metrics = reg,
				     .handler = big_handler, .reply_timeout_ms = 1000 };
	struct gnn_server *s = NULL;
	struct gnn_client *c = NULL;
	struct gnn_wbuf w;
	nng_msg *reply = NULL;
	char err[256], hdr[8];
	double t0;
	int fd = -1, rc;

	gnn_wbuf_init(&w);
	if (!CHECK(gnn_server_start(&o, &s) == GNN_OK))
		goto out;
	a.sin_port = htons((uint16_t)gnn_server_port(s));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (!CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		   write(fd, req0_hdr, sizeof(req0_hdr)) == 8 && read(fd, hdr, sizeof(hdr)) == 8))
		goto out;
	gnn_encode_info_req(&w, 1);
	for (uint32_t i = 0; i < 3; i++) {  /* SP framing: u64 length, u32 request ID, the message */
		unsigned char frame[12];
		uint64_t n = w.len + 4;
		uint32_t id = 0x80000001u + i;

		for (int k = 0; k < 8; k++)
			frame[k] = (unsigned char)(n >> (56 - 8 * k));
		for (int k = 0; k < 4; k++)
			frame[8 + k] = (unsigned char)(id >> (24 - 8 * k));
		CHECK(write(fd, frame, sizeof(frame)) == (ssize_t)sizeof(frame) &&
		      write(fd, w.buf, w.len) == (ssize_t)w.len);
	}
	usleep(300 * 1000);  /* the worker takes the first two */
	if (!CHECK(open_client(gnn_server_port(s), 5000, 0, &c) == GNN_OK) || !CHECK(connected_soon(c)))
		goto out;
	t0 = gnn_now();
	rc = gnn_client_call(c, &w, &reply, err, sizeof(err));
	CHECK(rc == GNN_OK);
	CHECK(gnn_now() - t0 < 4.5);
	CHECK(metric("gnn_stuck_replies_abandoned_total") >= 1);
out:
	if (reply != NULL)
		nng_msg_free(reply);
	if (c != NULL)
		gnn_client_close(c);
	if (fd >= 0)
		close(fd);
	if (s != NULL)
		gnn_server_stop(s);
	gnn_wbuf_free(&w);
}

static void test_parallel(void)
{
	struct gnn_server *s;
	struct gnn_client *c;
	struct gnn_wbuf w[4];
	struct gnn_call calls[4];
	int64_t ids[1] = { 0 };
	double t0, dt;

	if (!CHECK(start("tcp://127.0.0.1:0", &s) == GNN_OK))
		return;
	CHECK(open_client(gnn_server_port(s), 3000, 0, &c) == GNN_OK);
	for (int i = 0; i < 4; i++) {
		gnn_wbuf_init(&w[i]);
		gnn_encode_sample_req(&w[i], (uint64_t)i + 10, 1, 1, (const int32_t[]){ 300 }, ids, 1);  /* each sleeps 300 ms */
		calls[i] = (struct gnn_call){ .client = c, .req = &w[i] };
	}
	t0 = gnn_now();
	CHECK(gnn_client_call_all(calls, 4) == GNN_OK);
	dt = gnn_now() - t0;
	printf("  4 calls of 300 ms each on 4 workers: %.2f s\n", dt);
	CHECK(dt < 0.9);  /* sequential would take 1.2 s */
	for (int i = 0; i < 4; i++) {
		CHECK(calls[i].rc == GNN_OK && calls[i].attempts == 1);
		nng_msg_free(calls[i].reply);
		gnn_wbuf_free(&w[i]);
	}
	gnn_client_close(c);
	gnn_server_stop(s);
}

/* A peer that takes the request and then goes away (its process died, its
 * pod was deleted): a failover client learns it at once (GNN_EUNAVAIL,
 * "closed the connection") instead of waiting out its 10 s timeout and
 * retries, and one with no connection at all fails at once too. */
struct dying_peer {
	nng_socket sock;
	double closed_at;
};

static void *take_and_close(void *arg)
{
	struct dying_peer *p = arg;
	nng_msg *m;

	if (nng_recvmsg(p->sock, &m, 0) == 0)
		nng_msg_free(m);
	usleep(200 * 1000);
	p->closed_at = gnn_now();
	nng_close(p->sock);
	return NULL;
}

static void test_failover(void)
{
	struct gnn_client_opts o = { .name = "replica", .timeout_ms = 10000, .retries = 2, .failover = true };
	struct dying_peer peer;
	struct gnn_client *c = NULL;
	struct gnn_wbuf w;
	nng_listener l;
	nng_msg *reply = NULL;
	pthread_t th;
	char url[64], err[256];
	double t0;
	int port, rc;

	if (!CHECK(nng_rep0_open(&peer.sock) == 0) ||
	    !CHECK(nng_listen(peer.sock, "tcp://127.0.0.1:0", &l, 0) == 0) ||
	    !CHECK(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0))
		return;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	o.url = url;
	CHECK(gnn_client_open(&o, &c) == GNN_OK);
	CHECK(connected_soon(c));
	gnn_wbuf_init(&w);
	gnn_encode_info_req(&w, 7);
	pthread_create(&th, NULL, take_and_close, &peer);
	rc = gnn_client_call(c, &w, &reply, err, sizeof(err));
	printf("  connection closed during the call: %s %.3f s after the close (%s)\n", gnn_errname(rc),
	       gnn_now() - peer.closed_at, err);
	CHECK(rc == GNN_EUNAVAIL && strstr(err, "closed the connection") != NULL);
	CHECK(gnn_now() - peer.closed_at < 5.0);   /* the timeout chain is 30 s */
	pthread_join(th, NULL);
	/* now nothing listens: no connection, so no wait either (once the
	 * client has seen the connection go: nng reports that just after the
	 * failed receive) */
	for (int i = 0; i < 100 && gnn_client_connected(c); i++)
		usleep(20 * 1000);
	t0 = gnn_now();
	rc = gnn_client_call(c, &w, &reply, err, sizeof(err));
	CHECK(rc == GNN_EUNAVAIL && strstr(err, "is not connected") != NULL);
	CHECK(gnn_now() - t0 < 5.0);
	gnn_wbuf_free(&w);
	gnn_client_close(c);
}

/* gnn_client_abort from another thread ends a call that waits for a
 * peer that never answers (a stopping process must not wait it out). */
struct aborter {
	struct gnn_client *c;
	double at;
};

static void *abort_soon(void *arg)
{
	struct aborter *a = arg;

	usleep(300 * 1000);
	a->at = gnn_now();
	gnn_client_abort(a->c);
	return NULL;
}

static void test_abort(void)
{
	struct gnn_client_opts o = { .name = "silent", .timeout_ms = 10000, .retries = 2 };
	struct aborter a = { 0 };
	nng_socket silent;
	nng_listener l;
	nng_msg *reply = NULL;
	struct gnn_wbuf w;
	pthread_t th;
	char url[64], err[256];
	int port, rc;

	if (!CHECK(nng_rep0_open(&silent) == 0) || !CHECK(nng_listen(silent, "tcp://127.0.0.1:0", &l, 0) == 0) ||
	    !CHECK(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0))
		return;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	o.url = url;
	if (!CHECK(gnn_client_open(&o, &a.c) == GNN_OK))
		return;
	gnn_wbuf_init(&w);
	gnn_encode_info_req(&w, 9);
	pthread_create(&th, NULL, abort_soon, &a);
	rc = gnn_client_call(a.c, &w, &reply, err, sizeof(err));
	printf("  aborted call: %s %.3f s after the abort (%s)\n", gnn_errname(rc), gnn_now() - a.at, err);
	CHECK(rc == GNN_ECLOSED && strstr(err, "abandoned") != NULL);
	CHECK(gnn_now() - a.at < 5.0);   /* the timeout chain is 30 s */
	pthread_join(th, NULL);
	/* later calls fail at once */
	CHECK(gnn_client_call(a.c, &w, &reply, err, sizeof(err)) == GNN_ECLOSED);
	gnn_wbuf_free(&w);
	gnn_client_close(a.c);
	nng_close(silent);
}

static void test_bad_urls(void)
{
	struct gnn_server *s;
	struct gnn_client *c;
	struct gnn_client_opts o = { .url = "nonsense://x", .name = "x", .timeout_ms = 10 };

	gnn_log_set_level(GNN_LOG_ERROR + 1);
	CHECK(start("tcp://999.1.1.1:1", &s) == GNN_EIO);
	CHECK(gnn_client_open(&o, &c) == GNN_EINVAL);
	gnn_log_set_level(GNN_LOG_WARN);
}

/* On the way out every close shares one budget: seven stuck closes in a
 * row must not outlast the stop watchdog. Marks this process as exiting:
 * the last test. */
static void test_close_budget(void)
{
	double first, total = 0;

	CHECK(gnn_close_limit() == GNN_CLOSE_LIMIT_S);
	gnn_exit_begin();
	first = gnn_close_limit();
	CHECK(first <= GNN_CLOSE_STOPPING_S && first > GNN_CLOSE_STOPPING_S - 0.5);
	/* each "stuck" close waits out its whole limit */
	for (int i = 0; i < 7; i++) {
		double l = gnn_close_limit();
		struct timespec ts = { .tv_sec = (time_t)l, .tv_nsec = (long)((l - (double)(time_t)l) * 1e9) };

		total += l;
		nanosleep(&ts, NULL);
	}
	printf("  seven stuck closes: %.2f s of waits (budget %.1f s)\n", total, GNN_CLOSE_STOPPING_S);
	CHECK(total < GNN_CLOSE_STOPPING_S + 7 * GNN_CLOSE_MIN_S + 0.01);
	CHECK(gnn_close_limit() == GNN_CLOSE_MIN_S);
	CHECK(gnn_exiting());
}

int main(void)
{
	gnn_log_init("test_rpc");
	gnn_log_set_level(GNN_LOG_WARN);
	if (gnn_metrics_new(&reg) != GNN_OK)
		return 1;
	RUN(test_calls_and_errors);
	RUN(test_garbage);
	RUN(test_timeouts_and_recovery);
	RUN(test_silent_connection);
	RUN(test_busy_connection_kept);
	RUN(test_stuck_reply);
	RUN(test_parallel);
	RUN(test_failover);
	RUN(test_abort);
	RUN(test_bad_urls);
	RUN(test_close_budget);
	gnn_metrics_free(reg);
	return t_done();
}
