#include "client.h"

#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "sys.h"


struct gnn_client {
	nng_socket sock;
	nng_dialer dialer;
	char *url, *name, *server_name;   /* server_name: NULL for the URL's host */
	int timeout_ms, retries;
	bool failover;
	atomic_bool aborted;       /* gnn_client_abort: the socket is closed */
	atomic_uint pipe;          /* ID of the connection that is up, 0: none (pipe_cb) */
	atomic_uint connections;   /* connections that came up (pipe_cb) */
	atomic_bool close_stuck;   /* gnn_client_abort's close hung in nng: c must stay */
	_Atomic double down_since; /* when the last connection went (or the dialling began) */
	_Atomic double last_reply; /* when a reply last came, or the connection came up */
	pthread_mutex_t redial_mu; /* one restart at a time */
};

/* Follows the connection, so that a failover call knows at once whether
 * there is one. The one dialer has at most one pipe at a time; a pipe that
 * failed before ADD_POST gets a REM_POST too, hence the ID check. */
static void pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct gnn_client *c = arg;
	unsigned id = (unsigned)nng_pipe_id(p);

	if (ev == NNG_PIPE_EV_ADD_POST) {
		atomic_store(&c->last_reply, gnn_now());
		atomic_fetch_add(&c->connections, 1);
		atomic_store(&c->pipe, id);
	} else if (atomic_compare_exchange_strong(&c->pipe, &id, 0u))
		atomic_store(&c->down_since, gnn_now());
}

int gnn_redial(nng_socket sock, const char *url, const struct gnn_tls *tls, const char *server_name, nng_dialer *d)
{
	int rv;

	nng_dialer_close(*d);
	rv = gnn_tls_dial(sock, url, tls, server_name, d, NNG_FLAG_NONBLOCK);
	return rv == 0 ? GNN_OK : GNN_EIO;
}

/* Restarts the dialer when no connection has been up for GNN_REDIAL_AFTER_S. */
static void redial_if_stuck(struct gnn_client *c)
{
	if (gnn_client_connected(c) || gnn_now() - atomic_load(&c->down_since) < GNN_REDIAL_AFTER_S ||
	    pthread_mutex_trylock(&c->redial_mu) != 0)
		return;
	if (!atomic_load(&c->aborted) && !gnn_client_connected(c) &&
	    gnn_now() - atomic_load(&c->down_since) >= GNN_REDIAL_AFTER_S) {
		if (gnn_redial(c->sock, c->url, gnn_tls_data_plane(), c->server_name, &c->dialer) != GNN_OK)
			GNN_WARN_LIMITED("redial_failed", "peer=%s url=%s", c->name, c->url);
		else
			GNN_DEBUG("redial", "peer=%s url=%s reason=\"no connection for %.0f s\"", c->name, c->url,
				  gnn_now() - atomic_load(&c->down_since));
		atomic_store(&c->down_since, gnn_now());
	}
	pthread_mutex_unlock(&c->redial_mu);
}

int gnn_client_open(const struct gnn_client_opts *o, struct gnn_client **out)
{
	struct gnn_client *c;
	int rv;

	if (o->url == NULL || o->timeout_ms <= 0 || o->retries < 0)
		return GNN_EINVAL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return GNN_ENOMEM;
	c->url = strdup(o->url);
	c->name = strdup(o->name ? o->name : o->url);
	c->server_name = o->server_name != NULL ? strdup(o->server_name) : NULL;
	c->timeout_ms = o->timeout_ms;
	c->retries = o->retries;
	c->failover = o->failover;
	atomic_store(&c->down_since, gnn_now());
	pthread_mutex_init(&c->redial_mu, NULL);
	if (c->url == NULL || c->name == NULL || (o->server_name != NULL && c->server_name == NULL)) {
		rv = NNG_ENOMEM;
		goto out_free;
	}
	if ((rv = nng_req0_open(&c->sock)) != 0)
		goto out_free;
	/* Retries are ours (bounded, logged), not REQ's silent resends. */
	nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, GNN_PROTO_WIRE_BYTES(GNN_PROTO_MAX_MSG_BYTES));
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 100);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 2000);
	if ((rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, pipe_cb, c)) != 0 ||
	    (rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, pipe_cb, c)) != 0) {
		nng_close(c->sock);
		goto out_free;
	}
	/* Non-blocking: the peer may come up later; nng keeps redialling. */
	if ((rv = gnn_tls_dial(c->sock, c->url, gnn_tls_data_plane(), c->server_name, &c->dialer, NNG_FLAG_NONBLOCK)) != 0) {
		nng_close(c->sock);
		goto out_free;
	}
	*out = c;
	return GNN_OK;

out_free:
	GNN_ERROR("client_failed", "peer=%s url=%s error=\"%s\"", o->name ? o->name : "-", o->url,
		  nng_strerror(rv));
	pthread_mutex_destroy(&c->redial_mu);
	free(c->url);
	free(c->name);
	free(c->server_name);
	free(c);
	return rv == NNG_ENOMEM ? GNN_ENOMEM : GNN_EINVAL;
}

void gnn_client_close(struct gnn_client *c)
{
	if (c == NULL)
		return;
	/* stuck in nng: c stays, its pipe callback may still run */
	if (!atomic_load(&c->aborted) && !gnn_close_bounded(&c->sock, 1, gnn_close_limit(), c->name))
		return;
	if (atomic_load(&c->close_stuck))
		return;
	pthread_mutex_destroy(&c->redial_mu);
	free(c->url);
	free(c->name);
	free(c->server_name);
	free(c);
}

unsigned gnn_client_connections(const struct gnn_client *c)
{
	return atomic_load(&c->connections);
}

const char *gnn_client_name(const struct gnn_client *c)
{
	return c->name;
}

void gnn_client_abort(struct gnn_client *c)
{
	bool was = false;

	/* the redial lock keeps a concurrent redial off the closing socket */
	pthread_mutex_lock(&c->redial_mu);
	if (atomic_compare_exchange_strong(&c->aborted, &was, true) &&
	    !gnn_close_bounded(&c->sock, 1, gnn_close_limit(), c->name))
		atomic_store(&c->close_stuck, true);
	pthread_mutex_unlock(&c->redial_mu);
}

bool gnn_client_connected(const struct gnn_client *c)
{
	return atomic_load(&c->pipe) != 0;
}

int gnn_reply_payload(nng_msg *reply, uint16_t want_type, const void **payload, size_t *len)
{
	struct gnn_hdr h;
	int rc = gnn_proto_decode_hdr(nng_msg_body(reply), nng_msg_len(reply), &h, payload);

	if (rc != GNN_OK)
		return rc;
	if (h.type != want_type)
		return GNN_EPROTO;
	*len = h.len;
	return GNN_OK;
}

/* Checks a received reply against the request: header valid, same request
 * ID; an ERROR reply becomes its status code and text. Frees the reply
 * unless it is returned in call->reply. */
static void take_reply(struct gnn_call *call, nng_msg *reply, uint64_t req_id)
{
	struct gnn_hdr h;
	const void *payload;
	int rc = gnn_proto_decode_hdr(nng_msg_body(reply), nng_msg_len(reply), &h, &payload);

	if (rc == GNN_OK && h.req_id != req_id)
		rc = GNN_EPROTO;
	if (rc != GNN_OK) {
		snprintf(call->err, sizeof(call->err), "malformed reply from %s (%s)",
			 call->client->name, gnn_errname(rc));
	} else if (h.type == GNN_MSG_ERROR) {
		struct gnn_error_msg e = { 0 };

		if (gnn_decode_error(&h, payload, &e) != GNN_OK) {
			rc = GNN_EPROTO;
			snprintf(call->err, sizeof(call->err), "%s: malformed error reply", call->client->name);
		} else {
			rc = e.status > GNN_OK && e.status < GNN_ERR_COUNT ? (int)e.status : GNN_EPROTO;
			snprintf(call->err, sizeof(call->err), "%s: %.*s", call->client->name, (int)e.text_len,
				 e.text);
		}
	} else {
		call->reply = reply;
		call->rc = GNN_OK;
		return;
	}
	call->rc = rc;
	nng_msg_free(reply);
}

struct pending {
	nng_ctx ctx;
	nng_aio *aio;
	uint64_t req_id;
	bool active;   /* still needs an attempt */
	bool sending;  /* this attempt's send waits for a connection */
	bool sent;     /* this attempt's request went out: wait for the reply */
	bool unanswered; /* this attempt's reply did not come within its timeout */
	unsigned pipe; /* the connection it went out on (0: not known) */
	double sent_at, send_deadline;
	double done_at; /* when its aio last completed (aio_done; read after nng_aio_wait) */
};

/* The aio's callback: the time of its completion, as the calls are waited
 * for in order (an answer's time is its own, not its wait's). */
static void aio_done(void *arg)
{
	((struct pending *)arg)->done_at = gnn_now();
}

/* A send waits for a connection in slices of this length, so that a dialer
 * stuck on a vanished address is restarted within the attempt. */
#define SEND_SLICE_MS 1000

static void post_send(struct pending *p)
{
	int ms = (int)((p->send_deadline - gnn_now()) * 1000);

	nng_aio_set_timeout(p->aio, ms < 1 ? 1 : ms > SEND_SLICE_MS ? SEND_SLICE_MS : ms);
	nng_ctx_send(p->ctx, p->aio);
}

/* A request went unanswered on connection `pipe` for the whole timeout
 * and no other reply came on it since the request went out: the
 * connection may be dead without a FIN or RST (a partition, a host gone).
 * TCP would send on it again only at its backed-off retransmission times,
 * up to a minute after the network heals (docs/reliability.md, "Network
 * faults"), so it is closed: the next attempt dials a new one (within
 * GNN_REDIAL_AFTER_S while none comes up). A connection that answers
 * other calls (a busy peer) or has been replaced meanwhile is left alone:
 * closing it would fail every call in flight on it. */
static void drop_silent_connection(struct gnn_client *c, unsigned pipe, double sent_at, int timeout_ms)
{
	nng_pipe np = NNG_PIPE_INITIALIZER;

	if (pipe == 0 || atomic_load(&c->pipe) != pipe || atomic_load(&c->last_reply) >= sent_at)
		return;
	np.id = pipe;
	if (nng_pipe_close(np) == 0)
		GNN_WARN_LIMITED("connection_dropped", "peer=%s url=%s reason=\"no answer within %d ms: dialling a new connection\"",
				 c->name, c->url, timeout_ms);
}

/* The client was aborted (the process stops): the call ends at once. */
static void abandoned(struct gnn_call *call, struct pending *p)
{
	call->rc = GNN_ECLOSED;
	snprintf(call->err, sizeof(call->err), "%s (%s): call abandoned (stopping)", call->client->name,
		 call->client->url);
	p->active = false;
}

/* A failover call ends: the caller sends it elsewhere. */
static void unavailable(struct gnn_call *call, struct pending *p, const char *what)
{
	call->rc = GNN_EUNAVAIL;
	snprintf(call->err, sizeof(call->err), "%s (%s) %s", call->client->name, call->client->url, what);
	p->active = false;
}

/* Ends an attempt that failed because the client was aborted, or, for a
 * failover client, because its connection is gone (conn_lost): true when
 * it did. */
static bool ended_early(struct gnn_call *call, struct pending *p, int rv, bool conn_lost, const char *what)
{
	if (rv != 0 && atomic_load(&call->client->aborted))
		abandoned(call, p);
	else if (conn_lost && (call->client->failover || call->failover))
		unavailable(call, p, what);
	else
		return false;
	return true;
}

static int call_timeout_ms(const struct gnn_call *call)
{
	return call->timeout_ms > 0 ? call->timeout_ms : call->client->timeout_ms;
}

static int call_retries(const struct gnn_call *call)
{
	return call->failover ? 0 : call->client->retries;
}

/* Starts the send of every active call, each bounded by its client's
 * timeout; a call that cannot be sent ends here. */
static void start_sends(struct gnn_call *calls, struct pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		nng_msg *m;

		p[i].sent = false;
		if (!p[i].active)
			continue;
		calls[i].attempts++;
		if (atomic_load(&calls[i].client->aborted)) {
			abandoned(&calls[i], &p[i]);
			continue;
		}
		redial_if_stuck(calls[i].client);
		if ((calls[i].client->failover || calls[i].failover) && !gnn_client_connected(calls[i].client)) {
			unavailable(&calls[i], &p[i], "is not connected");
			continue;
		}
		if (nng_msg_alloc(&m, 0) != 0 || nng_msg_append(m, calls[i].req->buf, calls[i].req->len) != 0) {
			calls[i].rc = GNN_ENOMEM;
			p[i].active = false;
			continue;
		}
		p[i].send_deadline = gnn_now() + call_timeout_ms(&calls[i]) / 1000.0;
		p[i].sending = true;
		nng_aio_set_msg(p[i].aio, m);
		post_send(&p[i]);
	}
}

/* One send's outcome: a slice that timed out while time is left is posted
 * again (true: still sending); a request that went out starts its receive. */
static bool send_done(struct gnn_call *call, struct pending *p)
{
	int rv;

	nng_aio_wait(p->aio);
	rv = nng_aio_result(p->aio);
	if (ended_early(call, p, rv, rv == NNG_ETIMEDOUT && !gnn_client_connected(call->client), "is not connected")) {
		nng_msg_free(nng_aio_get_msg(p->aio));   /* a failed send leaves it ours */
		p->sending = false;
		return false;
	}
	if (rv == NNG_ETIMEDOUT && gnn_now() < p->send_deadline) {
		redial_if_stuck(call->client);
		post_send(p);  /* the message is still the aio's */
		return true;
	}
	p->sending = false;
	if (rv != 0) {
		nng_msg_free(nng_aio_get_msg(p->aio));
		call->rc = GNN_ETIMEDOUT;
		snprintf(call->err, sizeof(call->err), "%s (%s) did not accept the request: %s", call->client->name,
			 call->client->url, nng_strerror(rv));
		return false;
	}
	p->sent = true;
	p->pipe = atomic_load(&call->client->pipe);
	p->sent_at = gnn_now();
	nng_aio_set_timeout(p->aio, call_timeout_ms(call));
	nng_ctx_recv(p->ctx, p->aio);
	return false;
}

/* One sent request's reply, or why none came. */
static void reply_done(struct gnn_call *call, struct pending *p)
{
	int rv;

	nng_aio_wait(p->aio);
	rv = nng_aio_result(p->aio);
	if (ended_early(call, p, rv, rv == NNG_ECONNRESET, "closed the connection before answering"))
		return;
	if (rv != 0) {
		p->unanswered = rv == NNG_ETIMEDOUT;
		call->rc = GNN_ETIMEDOUT;
		snprintf(call->err, sizeof(call->err), "%s (%s) did not answer: %s", call->client->name,
			 call->client->url, nng_strerror(rv));
		return;
	}
	atomic_store(&call->client->last_reply, gnn_now());
	call->answer_s = p->done_at - p->sent_at;
	take_reply(call, nng_aio_get_msg(p->aio), p->req_id);
	p->active = false;  /* answered: an error reply is final, not retried */
}

/* One attempt for every active call: all sends start, then all receives,
 * each bounded by its client's timeout. */
static void attempt(struct gnn_call *calls, struct pending *p, size_t n)
{
	start_sends(calls, p, n);
	for (bool waiting = true; waiting;) {
		waiting = false;
		for (size_t i = 0; i < n; i++)
			if (p[i].sending && send_done(&calls[i], &p[i]))
				waiting = true;
	}
	for (size_t i = 0; i < n; i++)
		if (p[i].sent)
			reply_done(&calls[i], &p[i]);
	/* After every reply of this attempt is in: one that came after a
	 * request went out shows its connection alive. */
	for (size_t i = 0; i < n; i++) {
		if (p[i].unanswered)
			drop_silent_connection(calls[i].client, p[i].pipe, p[i].sent_at, call_timeout_ms(&calls[i]));
		p[i].unanswered = false;
	}
}

int gnn_client_call_all(struct gnn_call *calls, size_t n)
{
	struct pending *p = calloc(n ? n : 1, sizeof(*p));
	int first = GNN_OK, max_retries = 0;

	if (p == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		calls[i].reply = NULL;
		calls[i].rc = GNN_ENOMEM;
		calls[i].attempts = 0;
		calls[i].answer_s = 0;
		calls[i].err[0] = '\0';
		if (calls[i].req->len < GNN_PROTO_HDR_BYTES || calls[i].req->failed) {
			calls[i].rc = GNN_EINVAL;
			continue;
		}
		memcpy(&p[i].req_id, calls[i].req->buf + 8, 8);
		if (nng_ctx_open(&p[i].ctx, calls[i].client->sock) != 0 ||
		    nng_aio_alloc(&p[i].aio, aio_done, &p[i]) != 0) {
			if (atomic_load(&calls[i].client->aborted))
				abandoned(&calls[i], &p[i]);
			continue;
		}
		p[i].active = true;
		if (call_retries(&calls[i]) > max_retries)
			max_retries = call_retries(&calls[i]);
	}
	for (int round = 0; round <= max_retries; round++) {
		attempt(calls, p, n);
		for (size_t i = 0; i < n; i++)  /* a call that timed out tries again */
			if (p[i].active && round >= call_retries(&calls[i]))
				p[i].active = false;
	}
	for (size_t i = 0; i < n; i++) {
		if (p[i].aio != NULL) {
			nng_aio_free(p[i].aio);
			nng_ctx_close(p[i].ctx);
		}
		if (calls[i].rc == GNN_ETIMEDOUT)
			GNN_WARN_LIMITED("call_failed", "peer=%s url=%s op=%s attempts=%d reason=\"%s\"",
				 calls[i].client->name, calls[i].client->url,
				 gnn_msg_name(calls[i].req->buf[6]), calls[i].attempts, calls[i].err);
		if (calls[i].rc != GNN_OK && first == GNN_OK)
			first = calls[i].rc;
	}
	free(p);
	return first;
}

int gnn_client_call(struct gnn_client *c, const struct gnn_wbuf *req, nng_msg **reply,
		    char *why, size_t why_len)
{
	struct gnn_call call = { .client = c, .req = req };
	int rc = gnn_client_call_all(&call, 1);

	if (why != NULL && why_len > 0)
		snprintf(why, why_len, "%s", call.err);
	if (rc == GNN_OK)
		*reply = call.reply;
	return rc;
}

/* ---- closing within a bound ---- */

struct closer {
	nng_socket *socks;
	size_t n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, abandoned;
};

static void closer_free(struct closer *c)
{
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c->socks);
	free(c);
}

static void *closer_main(void *arg)
{
	struct closer *c = arg;
	bool abandoned;

	for (size_t i = 0; i < c->n; i++)
		nng_close(c->socks[i]);
	pthread_mutex_lock(&c->mu);
	c->done = true;
	abandoned = c->abandoned;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (abandoned)
		closer_free(c);
	return NULL;
}

static struct closer *closer_new(const nng_socket *socks, size_t n)
{
	struct closer *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->socks = malloc((n ? n : 1) * sizeof(*socks))) == NULL)
		goto fail;
	memcpy(c->socks, socks, n * sizeof(*socks));
	c->n = n;
	if (gnn_sync_init(&c->mu, &c->cv) != GNN_OK)
		goto fail;
	return c;
fail:
	if (c != NULL)
		free(c->socks);
	free(c);
	return NULL;
}

double gnn_close_limit(void)
{
	static _Atomic double deadline;   /* 0: no close on the way out yet */
	double now, d, want;

	if (!gnn_exiting())
		return GNN_CLOSE_LIMIT_S;
	now = gnn_now();
	d = atomic_load(&deadline);
	if (d == 0) {
		want = now + GNN_CLOSE_STOPPING_S;
		if (atomic_compare_exchange_strong(&deadline, &d, want))
			d = want;
	}
	return d - now > GNN_CLOSE_MIN_S ? d - now : GNN_CLOSE_MIN_S;
}

bool gnn_close_bounded(const nng_socket *socks, size_t n, double limit_s, const char *what)
{
	struct closer *c = closer_new(socks, n);
	struct timespec ts;
	pthread_t th;
	bool done;

	if (c == NULL || pthread_create(&th, NULL, closer_main, c) != 0) {
		/* no thread to spare: close here, unguarded */
		if (c != NULL)
			closer_free(c);
		for (size_t i = 0; i < n; i++)
			nng_close(socks[i]);
		return true;
	}
	gnn_deadline(CLOCK_MONOTONIC, (long)(limit_s * 1000), &ts);
	pthread_mutex_lock(&c->mu);
	while (!c->done)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) != 0)
			break;
	done = c->done;
	c->abandoned = !done;
	pthread_mutex_unlock(&c->mu);
	if (done) {
		pthread_join(th, NULL);
		closer_free(c);
		return true;
	}
	pthread_detach(th);
	GNN_ERROR("close_stuck", "what=%s sockets=%zu waited_s=%.1f error=\"nng_close did not return (nng 1.5.2 "
		  "can deadlock closing a socket while a connection is set up or torn down, nanomsg/nng#1543): "
		  "leaving the sockets and their memory behind\"", what, n, limit_s);
	return false;
}
