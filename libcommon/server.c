#include "server.h"

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

/* Replies are built straight into the nng message that is sent (no copy
 * of megabytes of rows per answer): the buffer grows inside it. */
static uint8_t *grow_msg(void *ctx, size_t cap)
{
	nng_msg **m = ctx;

	return nng_msg_realloc(*m, cap) == 0 ? nng_msg_body(*m) : NULL;
}

struct worker {
	struct gnn_server *s;
	nng_ctx ctx;
	nng_aio *aio;
	pthread_t thread;
	bool ctx_open, started;
};

/* Metric series per message type, created up front so every op appears in
 * /metrics from the start. */
struct op_metrics {
	struct gnn_counter *requests;
	struct gnn_histogram *seconds;
	struct gnn_counter *bytes_in, *bytes_out;
};

struct gnn_server {
	char name[32];
	nng_socket sock;
	nng_listener listener;
	int nworkers;
	struct worker *workers;
	gnn_handler_fn handler;
	void (*after_reply)(void *ctx);
	void *ctx;
	struct op_metrics ops[GNN_MSG_TYPE_COUNT];
	struct gnn_counter *errors;      /* {op, code} */
	struct gnn_counter *bad;         /* {reason} */
	struct gnn_counter *abandoned;   /* replies given up on (reply_timeout_ms) */
	struct gnn_gauge *in_flight;
	int reply_timeout_ms;
};

/* Registration that shares the family when another server of the same name
 * in this process (a restart, a test) registered it first. */
static int counter(struct gnn_metrics *reg, const char *name, const char *help,
		   const char *const *labels, size_t n, struct gnn_counter **out)
{
	int rc = gnn_metrics_find_counter(reg, name, out);

	return rc == GNN_ENOENT ? gnn_metrics_counter(reg, name, help, labels, n, out) : rc;
}

static int gauge(struct gnn_metrics *reg, const char *name, const char *help, struct gnn_gauge **out)
{
	int rc = gnn_metrics_find_gauge(reg, name, out);

	return rc == GNN_ENOENT ? gnn_metrics_gauge(reg, name, help, NULL, 0, out) : rc;
}

static int histogram(struct gnn_metrics *reg, const char *name, const char *help,
		     const char *const *labels, const double *bounds, size_t nb, struct gnn_histogram **out)
{
	int rc = gnn_metrics_find_histogram(reg, name, out);

	return rc == GNN_ENOENT ? gnn_metrics_histogram(reg, name, help, labels, 1, bounds, nb, out) : rc;
}

static int register_metrics(struct gnn_server *s, struct gnn_metrics *reg)
{
	static const char *const op_label[] = { "op" };
	static const char *const err_labels[] = { "op", "code" };
	static const char *const bad_label[] = { "reason" };
	struct gnn_counter *req, *in, *out;
	struct gnn_histogram *sec;
	double bounds[16];
	char name[128];
	int rc;

	gnn_metrics_exp_buckets(50e-6, 2.5, 14, bounds);  /* 50 us .. ~7 min */
#define NAME(suffix) (snprintf(name, sizeof(name), "gnn_%s_%s", s->name, suffix), name)
	if ((rc = counter(reg, NAME("requests_total"), "Requests received, by message type", op_label, 1, &req)) ||
	    (rc = histogram(reg, NAME("request_seconds"), "Time to handle a request, by message type",
			    op_label, bounds, 14, &sec)) ||
	    (rc = counter(reg, NAME("request_errors_total"), "Error replies, by message type and error code",
			  err_labels, 2, &s->errors)) ||
	    (rc = counter(reg, NAME("bad_messages_total"), "Messages whose header could not be decoded, by reason",
			  bad_label, 1, &s->bad)) ||
	    (rc = counter(reg, NAME("received_bytes_total"), "Request bytes received, by message type", op_label, 1,
			  &in)) ||
	    (rc = counter(reg, NAME("sent_bytes_total"), "Reply bytes sent, by request message type", op_label, 1,
			  &out)) ||
	    (rc = counter(reg, NAME("replies_abandoned_total"), "Replies the connection did not take within the "
			  "reply timeout: dropped, and that connection closed", NULL, 0, &s->abandoned)) ||
	    (rc = gauge(reg, NAME("requests_in_flight"), "Requests being handled now", &s->in_flight)))
		return rc;
#undef NAME
	for (uint16_t t = 1; t < GNN_MSG_TYPE_COUNT; t++) {
		const char *op = gnn_msg_name(t);

		if ((rc = gnn_counter_labels(req, &op, 1, &s->ops[t].requests)) ||
		    (rc = gnn_histogram_labels(sec, &op, 1, &s->ops[t].seconds)) ||
		    (rc = gnn_counter_labels(in, &op, 1, &s->ops[t].bytes_in)) ||
		    (rc = gnn_counter_labels(out, &op, 1, &s->ops[t].bytes_out)))
			return rc;
	}
	return GNN_OK;
}

static void count_labelled(struct gnn_counter *fam, const char *a, const char *b)
{
	const char *values[2] = { a, b };
	struct gnn_counter *c;

	if (gnn_counter_labels(fam, values, b ? 2 : 1, &c) == GNN_OK)
		gnn_counter_inc(c);
}

/* Builds the reply to one request message into out; returns the request's
 * message type (GNN_MSG_ERROR for one whose header is undecodable: its
 * bytes are counted under `error`). */
static uint16_t handle(struct gnn_server *s, const void *body, size_t len, struct gnn_wbuf *out)
{
	struct gnn_hdr h;
	const void *payload;
	double t0 = gnn_now();
	int rc = gnn_proto_decode_hdr(body, len, &h, &payload);
	uint64_t req_id = 0;

	if (rc != GNN_OK) {
		/* Echo the request ID when there is one, so a client can match it. */
		if (len >= 16)
			memcpy(&req_id, (const uint8_t *)body + 8, 8);
		count_labelled(s->bad, gnn_errname(rc), NULL);
		GNN_DEBUG("bad_message", "server=%s bytes=%zu reason=%s", s->name, len, gnn_errname(rc));
		gnn_encode_error(out, req_id, (uint32_t)rc, "undecodable message header");
		return GNN_MSG_ERROR;
	}
	gnn_counter_inc(s->ops[h.type].requests);
	gnn_gauge_add(s->in_flight, 1);
	rc = s->handler(s->ctx, &h, payload, h.len, out);
	gnn_gauge_add(s->in_flight, -1);
	if (rc != GNN_OK || out->failed) {
		out->len = 0;
		out->failed = false;
		gnn_encode_error(out, h.req_id, (uint32_t)(rc != GNN_OK ? rc : GNN_ENOMEM), gnn_strerror(rc));
	}
	if (out->len >= GNN_PROTO_HDR_BYTES && out->buf[6] == GNN_MSG_ERROR) {
		uint32_t code;

		memcpy(&code, out->buf + 20, 4);
		count_labelled(s->errors, gnn_msg_name(h.type), gnn_errname((int)code));
	}
	gnn_histogram_observe(s->ops[h.type].seconds, gnn_now() - t0);
	return h.type;
}

/* A reply the connection did not take within reply_timeout_ms: nng
 * queues a context's reply behind the previous one on the same
 * connection, so a client that stopped reading (gone without a reset, or
 * wedged) would hold this worker forever, and with every worker held the
 * server answers no one (seen on a cluster: both of a graph store's
 * workers stuck for minutes). The reply is dropped and the connection
 * closed, which fails whatever else is queued on it; the client's call
 * has timed out long before. */
static void abandon_reply(struct gnn_server *s, nng_pipe pipe, uint16_t op)
{
	gnn_counter_inc(s->abandoned);
	GNN_WARN("reply_abandoned", "server=%s op=%s waited_ms=%d pipe=%u reason=\"the connection took no reply "
		 "within the limit: closing it\"", s->name, gnn_msg_name(op), s->reply_timeout_ms,
		 (unsigned)nng_pipe_id(pipe));
	if (nng_pipe_id(pipe) > 0)
		nng_pipe_close(pipe);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct gnn_server *s = w->s;
	struct gnn_wbuf out;

	for (;;) {
		nng_msg *msg, *rep;
		nng_pipe pipe;
		uint16_t op;
		int rv;

		nng_aio_set_timeout(w->aio, NNG_DURATION_INFINITE);
		nng_ctx_recv(w->ctx, w->aio);
		nng_aio_wait(w->aio);
		rv = nng_aio_result(w->aio);
		if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
			break;
		if (rv != 0)
			continue;
		msg = nng_aio_get_msg(w->aio);
		pipe = nng_msg_get_pipe(msg);
		if (nng_msg_alloc(&rep, 0) != 0) {
			nng_msg_free(msg);
			if (s->after_reply != NULL)
				s->after_reply(s->ctx);
			continue;
		}
		gnn_wbuf_init_with(&out, grow_msg, &rep);
		op = handle(s, nng_msg_body(msg), nng_msg_len(msg), &out);
		gnn_counter_add(s->ops[op].bytes_in, (double)nng_msg_len(msg));
		nng_msg_free(msg);
		if (out.failed || nng_msg_realloc(rep, out.len) != 0) {
			nng_msg_free(rep);
			if (s->after_reply != NULL)
				s->after_reply(s->ctx);
			continue;
		}
		gnn_counter_add(s->ops[op].bytes_out, (double)out.len);
		nng_aio_set_msg(w->aio, rep);
		nng_aio_set_timeout(w->aio, s->reply_timeout_ms);
		nng_ctx_send(w->ctx, w->aio);
		nng_aio_wait(w->aio);
		rv = nng_aio_result(w->aio);
		if (rv != 0)
			nng_msg_free(rep);  /* the client went away: nothing to do */
		if (rv == NNG_ETIMEDOUT)
			abandon_reply(s, pipe, op);
		if (s->after_reply != NULL)
			s->after_reply(s->ctx);
		if (rv == NNG_ECLOSED)
			break;
	}
	return NULL;
}

int gnn_server_start(const struct gnn_server_opts *o, struct gnn_server **out)
{
	struct gnn_server *s;
	int rv, rc = GNN_EIO;

	if (o->workers < 1 || o->handler == NULL || o->metrics == NULL || o->listen == NULL)
		return GNN_EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return GNN_ENOMEM;
	snprintf(s->name, sizeof(s->name), "%s", o->name);
	s->handler = o->handler;
	s->after_reply = o->after_reply;
	s->ctx = o->ctx;
	s->reply_timeout_ms = o->reply_timeout_ms > 0 ? o->reply_timeout_ms : GNN_SERVER_REPLY_TIMEOUT_MS;
	if ((rc = register_metrics(s, o->metrics)) != GNN_OK) {
		free(s);
		return rc;
	}
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		GNN_ERROR("server_failed", "server=%s error=\"%s\"", s->name, nng_strerror(rv));
		free(s);
		return GNN_EIO;
	}
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, GNN_PROTO_WIRE_BYTES(o->max_request_bytes ? o->max_request_bytes
										      : GNN_PROTO_MAX_MSG_BYTES));
	if ((rv = gnn_tls_listen(s->sock, o->listen, gnn_tls_data_plane(), &s->listener)) != 0) {
		GNN_ERROR("listen_failed", "server=%s url=%s error=\"%s\"", s->name, o->listen, nng_strerror(rv));
		nng_close(s->sock);
		free(s);
		return GNN_EIO;
	}
	s->workers = calloc((size_t)o->workers, sizeof(*s->workers));
	if (s->workers == NULL) {
		rc = GNN_ENOMEM;
		goto out_stop;
	}
	s->nworkers = o->workers;
	for (int i = 0; i < o->workers; i++) {
		struct worker *w = &s->workers[i];

		w->s = s;
		if (nng_ctx_open(&w->ctx, s->sock) != 0) {
			rc = GNN_ENOMEM;
			goto out_stop;
		}
		w->ctx_open = true;
		if (nng_aio_alloc(&w->aio, NULL, NULL) != 0 ||
		    pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			rc = GNN_ENOMEM;
			goto out_stop;
		}
		w->started = true;
	}
	GNN_INFO("server_listening", "server=%s url=%s port=%d workers=%d", s->name, o->listen,
		 gnn_server_port(s), o->workers);
	*out = s;
	return GNN_OK;

out_stop:
	gnn_server_stop(s);
	return rc;
}

int gnn_server_port(const struct gnn_server *s)
{
	int port;

	if (s == NULL || nng_listener_get_int(s->listener, NNG_OPT_TCP_BOUND_PORT, &port) != 0)
		return -1;
	return port;
}

/* What crossed the network to and from this server, per message type:
 * benchmarks add these up (every message has a server at one end). */
static void log_traffic(const struct gnn_server *s)
{
	char line[2048];
	size_t at = 0;
	double in = 0, out = 0;

	line[0] = '\0';
	for (uint16_t t = 1; t < GNN_MSG_TYPE_COUNT; t++) {
		double n = gnn_counter_value(s->ops[t].requests), i = gnn_counter_value(s->ops[t].bytes_in),
		       o = gnn_counter_value(s->ops[t].bytes_out);
		int k;

		in += i;
		out += o;
		if (n == 0 && i == 0)
			continue;
		k = snprintf(line + at, sizeof(line) - at, " %s_requests=%.0f %s_received_bytes=%.0f %s_sent_bytes=%.0f",
			     gnn_msg_name(t), n, gnn_msg_name(t), i, gnn_msg_name(t), o);
		if (k < 0 || (size_t)k >= sizeof(line) - at)
			break;
		at += (size_t)k;
	}
	GNN_INFO("traffic", "server=%s received_bytes=%.0f sent_bytes=%.0f%s", s->name, in, out, line);
}

void gnn_server_stop(struct gnn_server *s)
{
	if (s == NULL)
		return;
	/* Contexts first: a pending receive completes with NNG_ECLOSED and a
	 * worker still in its handler gets NNG_ECLOSED from its send. Closing
	 * the socket while a worker may still call into it panics nng 1.5. */
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].ctx_open)
			nng_ctx_close(s->workers[i].ctx);
	for (int i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];

		if (w->started)
			pthread_join(w->thread, NULL);
		if (w->aio != NULL)
			nng_aio_free(w->aio);
	}
	/* stuck in nng (its close deadlock): s stays, nng may still use it */
	if (!gnn_close_bounded(&s->sock, 1, gnn_close_limit(), s->name))
		return;
	free(s->workers);
	log_traffic(s);
	GNN_INFO("server_stopped", "server=%s", s->name);
	free(s);
}
