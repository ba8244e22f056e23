/* ring_engine.c - runs one operation's plan over the two sockets.
 *
 * One send and one receive are in flight at a time (nng aios with
 * callbacks); the calling thread reduces or copies each received message
 * while nng moves the next one, and sleeps on a condition variable in 100
 * ms slices in between, which is where it polls stop(), logs what it waits
 * for every 10 s, and gives up after the no-progress limit. We keep the aios
 * posted across slices instead of using nng's per-operation timeouts,
 * because a receive cancelled by a timeout may lose a message that was
 * being delivered. */
#include "ring_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

/* ---- nng callbacks (nng threads) ---- */

/* An aio completed: flag it and wake the waiting thread. */
void ring_aio_cb(void *arg)
{
	struct aio_arg *a = arg;
	struct tr_ring *r = a->r;

	pthread_mutex_lock(&r->mu);
	r->done[a->which] = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Tracks the neighbour's pipe so that a vanished peer fails the operation
 * after LOST_GRACE_S instead of the full timeout. pair0 rejects a second
 * pipe (REM_POST without ADD_POST): only the current pipe's id counts. */
void ring_pipe_cb(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	struct side *s = arg;
	struct tr_ring *r = s->r;
	uint32_t id = (uint32_t)nng_pipe_id(pipe);

	pthread_mutex_lock(&r->mu);
	if (ev == NNG_PIPE_EV_ADD_POST) {
		s->pipe = id;
		s->lost = false;
		if (!r->closing)
			GNN_INFO("ring_peer_connected", "peer=trainer-%u url=%s side=%s", s->peer,
				 url_of(r, s->peer), s->name);
	} else if (ev == NNG_PIPE_EV_REM_POST && s->pipe == id) {
		s->pipe = 0;
		s->lost = true;
		s->lost_at = s->down_since = gnn_now();
		/* between operations this is often the peer's normal exit */
		if (!r->closing)
			GNN_LOG(r->in_op ? GNN_LOG_WARN : GNN_LOG_INFO, "ring_peer_disconnected",
				"peer=trainer-%u url=%s side=%s in_operation=%s", s->peer, url_of(r, s->peer),
				s->name, r->in_op ? "yes" : "no");
	}
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* ---- the engine ---- */

/* Restarts the dialer of `out` (GNN_REDIAL_AFTER_S). */
void ring_redial(struct tr_ring *r)
{
	if (gnn_redial(r->out.sock, r->urls[r->next], r->tls, NULL, &r->dialer) != GNN_OK)
		GNN_WARN("ring_redial_failed", "peer=trainer-%u url=%s", r->next, r->urls[r->next]);
	pthread_mutex_lock(&r->mu);
	r->out.down_since = gnn_now();
	pthread_mutex_unlock(&r->mu);
}

static int post_send(struct tr_ring *r, struct plan *p, size_t k, size_t *len)
{
	struct hdr h = { .magic = RING_MAGIC, .kind = p->kind, .seq = p->seq, .from = r->rank };
	const unsigned char *src;
	unsigned char *body;
	size_t off = 0;
	bool add;
	nng_msg *m;

	ring_plan_geom(p, r->rank, k, &h, &off, &add);
	src = p->buf + off;
	if (p->fwd != NULL && (m = p->fwd[k]) != NULL) {
		/* a received message goes on with a new header: no copy */
		p->fwd[k] = NULL;
		if (nng_msg_len(m) != HDR_BYTES + h.len) {
			nng_msg_free(m);
			GNN_ERROR("ring_bug", "op=%s seq=%llu msg=%zu error=\"forwarded message "
				  "of the wrong size\"", op_name(p->kind), (unsigned long long)p->seq, k);
			return GNN_EINTERNAL;
		}
		hdr_put(nng_msg_body(m), &h);
		goto send;
	}
	if (nng_msg_alloc(&m, HDR_BYTES + h.len) != 0) {
		GNN_ERROR("ring_alloc_failed", "op=%s seq=%llu bytes=%llu", op_name(p->kind),
			  (unsigned long long)p->seq, (unsigned long long)(HDR_BYTES + h.len));
		return GNN_ENOMEM;
	}
	body = nng_msg_body(m);
	hdr_put(body, &h);
	if (h.len > 0)
		memcpy(body + HDR_BYTES, src, h.len);
send:
	*len = HDR_BYTES + h.len;
	nng_aio_set_msg(r->aio[A_SEND], m);
	nng_send_aio(r->out.sock, r->aio[A_SEND]);
	return GNN_OK;
}

/* m[i] := m[i] + d[i] where m is a message payload (nng promises no
 * alignment for it: memcpy loads, which compile to plain unaligned ones). */
static void add_f32(unsigned char *restrict m, const float *restrict d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float a;

		memcpy(&a, m + i * sizeof(a), sizeof(a));
		a += d[i];
		memcpy(m + i * sizeof(a), &a, sizeof(a));
	}
}

static void add_f64(unsigned char *restrict m, const double *restrict d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double a;

		memcpy(&a, m + i * sizeof(a), sizeof(a));
		a += d[i];
		memcpy(m + i * sizeof(a), &a, sizeof(a));
	}
}

/* Why a message that is not the expected one probably came: the hint
 * appended to the error line. */
static const char *mismatch_hint(const struct hdr *got, const struct hdr *want)
{
	if (got->kind == OP_BYE)
		return "it closed its ring: did it stop early?";
	if (got->seq < want->seq || (got->kind == OP_HELLO && want->kind != OP_HELLO))
		return "did it restart?";
	if (got->seq > want->seq || (want->kind == OP_HELLO && got->kind != OP_HELLO))
		return "did this rank restart, or skip an operation?";
	if (got->kind != want->kind)
		return "do all ranks call the same operations in the same order?";
	if (got->total != want->total || got->len != want->len)
		return "do all ranks call it with the same size?";
	return "do all ranks run the same build with the same world size?";
}

int ring_protocol_error(struct tr_ring *r, const struct hdr *got, const struct hdr *want)
{
	char claims[48] = "";

	if (got->from != r->prev)
		snprintf(claims, sizeof(claims), " (claiming rank %u)", got->from);
	GNN_ERROR("ring_protocol_error",
		  "peer=trainer-%u url=%s error=\"peer trainer-%u (%s)%s sent op=%s seq=%llu step=%u "
		  "chunk=%u off=%llu len=%llu total=%llu while this rank expected op=%s seq=%llu step=%u "
		  "chunk=%u off=%llu len=%llu total=%llu: %s\"",
		  r->prev, url_of(r, r->prev), r->prev, url_of(r, r->prev), claims, op_name(got->kind),
		  (unsigned long long)got->seq, got->step, got->chunk, (unsigned long long)got->off,
		  (unsigned long long)got->len, (unsigned long long)got->total, op_name(want->kind),
		  (unsigned long long)want->seq, want->step, want->chunk, (unsigned long long)want->off,
		  (unsigned long long)want->len, (unsigned long long)want->total, mismatch_hint(got, want));
	return GNN_EPROTO;
}

/* Checks received message k and puts its payload in place: reduce-scatter
 * adds our data into the message (partial sums need not stay here), the
 * last reduce-scatter step and every copy step store it in the buffer.
 * Then the message either waits in p->fwd for the send that forwards it
 * (*kept) or is the caller's to free. */
static int take(struct tr_ring *r, struct plan *p, size_t k, nng_msg *m, bool *kept)
{
	unsigned char *body = nng_msg_body(m), *payload;
	size_t mlen = nng_msg_len(m), off = 0;
	struct hdr h, want = { .magic = RING_MAGIC, .kind = p->kind, .seq = p->seq, .from = r->prev };
	bool add = false;

	if (mlen < HDR_BYTES || get32(body) != RING_MAGIC) {
		GNN_ERROR("ring_protocol_error",
			  "peer=trainer-%u url=%s error=\"peer trainer-%u (%s) sent a message that is not "
			  "a ring message (%zu bytes, first word 0x%08x) while this rank expected op=%s "
			  "seq=%llu\"", r->prev, url_of(r, r->prev), r->prev, url_of(r, r->prev), mlen,
			  mlen >= 4 ? get32(body) : 0, op_name(p->kind), (unsigned long long)p->seq);
		return GNN_EPROTO;
	}
	*kept = false;
	hdr_get(body, &h);
	payload = body + HDR_BYTES;
	if (h.len != mlen - HDR_BYTES) {
		GNN_ERROR("ring_protocol_error",
			  "peer=trainer-%u url=%s error=\"peer trainer-%u (%s) sent op=%s seq=%llu with "
			  "len=%llu in its header but %zu payload bytes\"", r->prev, url_of(r, r->prev),
			  r->prev, url_of(r, r->prev), op_name(h.kind), (unsigned long long)h.seq,
			  (unsigned long long)h.len, mlen - HDR_BYTES);
		return GNN_EPROTO;
	}
	ring_plan_geom(p, r->prev, k, &want, &off, &add);
	if (h.kind != want.kind || h.seq != want.seq || h.from != want.from || h.step != want.step ||
	    h.chunk != want.chunk || h.off != want.off || h.len != want.len || h.total != want.total)
		return ring_protocol_error(r, &h, &want);
	if (add && p->elem == sizeof(float))
		add_f32(payload, (const float *)(const void *)(p->buf + off), h.len / sizeof(float));
	else if (add)
		add_f64(payload, (const double *)(const void *)(p->buf + off), h.len / sizeof(double));
	/* a partial sum that goes on to the next rank need not be stored */
	if (h.len > 0 && (!add || k / p->J == r->world - 2))
		memcpy(p->buf + off, payload, h.len);
	if ((k = ring_plan_forward(p, k)) != SIZE_MAX) {
		p->fwd[k] = m;
		*kept = true;
	}
	return GNN_OK;
}

/* Frees the message an aio holds (a received one, or a send that failed). */
void ring_drop_msg(nng_aio *aio)
{
	nng_msg *m = nng_aio_get_msg(aio);

	if (m != NULL)
		nng_msg_free(m);
	nng_aio_set_msg(aio, NULL);
}

static void count_bytes(struct tr_ring *r, size_t bytes)
{
	atomic_fetch_add(&r->bytes, bytes);
	if (r->m_bytes != NULL)
		gnn_counter_add(r->m_bytes, (double)bytes);
}

/* ---- the engine: one plan's state machine ----
 *
 * Each direction is IDLE (nothing posted) or BUSY (one aio posted); the run
 * is RUNNING until every message went out and came in (DONE) or something
 * failed (FAILED, with rc). Each round posts what it can, waits one slice
 * for a completion or a pipe event, handles the completions, then checks
 * stop(), lost neighbours and the no-progress limit. */
enum dir_state { DIR_IDLE, DIR_BUSY };
enum run_state { RUN_RUNNING, RUN_DONE, RUN_FAILED };

struct engine {
	struct tr_ring *r;
	struct plan *p;
	enum run_state state;
	int rc;
	enum dir_state send, recv;
	size_t posted_send, done_send, posted_recv, done_recv, send_len;
	double limit_s, grace, last, next_log;  /* last: the last completion */
	double heard;                /* the last message from the previous rank, ping or data */
	/* what the last wait saw (under r->mu) */
	bool sdone, rdone, in_up, out_up, in_lost, out_lost;
	double in_lost_at, out_lost_at;
};

static void eng_fail(struct engine *e, int rc)
{
	e->state = RUN_FAILED;
	e->rc = rc;
}

/* A message went out or came in: the no-progress clock restarts. */
static void eng_progress(struct engine *e)
{
	e->last = gnn_now();
	e->next_log = WAIT_LOG_S;
}

static void eng_post_recv(struct engine *e)
{
	if (e->recv == DIR_IDLE && e->posted_recv < e->p->nrecv) {
		nng_recv_aio(e->r->in.sock, e->r->aio[A_RECV]);
		e->recv = DIR_BUSY;
		e->posted_recv++;
	}
}

/* Posts what can go now; DONE when everything went out and came in. */
static void eng_post(struct engine *e)
{
	int rc;

	eng_post_recv(e);
	if (e->send == DIR_IDLE && e->posted_send < e->p->nsend &&
	    e->done_recv >= ring_plan_needs(e->p, e->posted_send)) {
		if ((rc = post_send(e->r, e->p, e->posted_send, &e->send_len)) != GNN_OK) {
			eng_fail(e, rc);
			return;
		}
		e->send = DIR_BUSY;
		e->posted_send++;
	}
	if (e->done_send >= e->p->nsend && e->done_recv >= e->p->nrecv)
		e->state = RUN_DONE;
}

/* One wait: a completion, a pipe event, a timeout or a spurious wake-up;
 * copies what it saw into e. */
static void eng_wait(struct engine *e)
{
	struct tr_ring *r = e->r;
	struct timespec ts;

	gnn_deadline(CLOCK_MONOTONIC, SLICE_MS, &ts);
	pthread_mutex_lock(&r->mu);
	if (!r->done[A_SEND] && !r->done[A_RECV])
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	e->sdone = r->done[A_SEND];
	e->rdone = r->done[A_RECV];
	r->done[A_SEND] = r->done[A_RECV] = false;
	e->in_up = r->in.pipe != 0;
	e->out_up = r->out.pipe != 0;
	e->in_lost = r->in.lost;
	e->out_lost = r->out.lost;
	e->in_lost_at = r->in.lost_at;
	e->out_lost_at = r->out.lost_at;
	pthread_mutex_unlock(&r->mu);
}

static void eng_on_recv(struct engine *e)
{
	struct tr_ring *r = e->r;
	int rv = nng_aio_result(r->aio[A_RECV]), rc;
	nng_msg *m;
	bool kept;

	e->recv = DIR_IDLE;
	if (rv != 0) {
		GNN_ERROR("ring_io_error", "peer=trainer-%u url=%s op=%s seq=%llu dir=recv error=\"%s\"", r->prev,
			  url_of(r, r->prev), op_name(e->p->kind), (unsigned long long)e->p->seq, nng_strerror(rv));
		eng_fail(e, GNN_EIO);
		return;
	}
	m = nng_aio_get_msg(r->aio[A_RECV]);
	nng_aio_set_msg(r->aio[A_RECV], NULL);
	e->heard = gnn_now();
	if (ring_take_ping(m)) {
		e->posted_recv--;  /* the receive is posted again for the data */
		eng_post_recv(e);
		return;
	}
	count_bytes(r, nng_msg_len(m));
	/* the next receive goes first so nng reads on while we reduce */
	eng_post_recv(e);
	rc = take(r, e->p, e->done_recv, m, &kept);
	if (!kept)
		nng_msg_free(m);
	if (rc != GNN_OK) {
		eng_fail(e, rc);
		return;
	}
	e->done_recv++;
	eng_progress(e);
}

static void eng_on_send(struct engine *e)
{
	struct tr_ring *r = e->r;
	int rv = nng_aio_result(r->aio[A_SEND]);

	e->send = DIR_IDLE;
	if (rv != 0) {
		ring_drop_msg(r->aio[A_SEND]);
		GNN_ERROR("ring_io_error", "peer=trainer-%u url=%s op=%s seq=%llu dir=send error=\"%s\"", r->next,
			  url_of(r, r->next), op_name(e->p->kind), (unsigned long long)e->p->seq, nng_strerror(rv));
		eng_fail(e, GNN_EIO);
		return;
	}
	count_bytes(r, e->send_len);
	e->done_send++;
	eng_progress(e);
}

/* A neighbour whose connection went away and has not come back within
 * the grace: fail now rather than after the whole timeout. */
static void eng_check_lost(struct engine *e, double now)
{
	struct tr_ring *r = e->r;
	bool in = e->in_lost && !e->in_up && now - e->in_lost_at >= e->grace;
	bool out = e->out_lost && !e->out_up && now - e->out_lost_at >= e->grace;
	uint32_t peer = in ? r->prev : r->next;

	if (!in && !out)
		return;
	GNN_ERROR("peer_lost", "peer=trainer-%u url=%s side=%s op=%s seq=%llu down_s=%.1f received=%zu/%zu "
		  "sent=%zu/%zu error=\"the connection to peer trainer-%u (%s) closed and has not come back: did "
		  "it exit?\"", peer, url_of(r, peer), in ? "in" : "out", op_name(e->p->kind),
		  (unsigned long long)e->p->seq, now - (in ? e->in_lost_at : e->out_lost_at), e->done_recv,
		  e->p->nrecv, e->done_send, e->p->nsend, peer, url_of(r, peer));
	eng_fail(e, GNN_EUNAVAIL);
}

/* Waiting for the previous rank, whose connection is up but has carried
 * nothing, not even its heartbeat, for silence_s: its host vanished, it is
 * cut off without a reset, or it is frozen. Fail now rather than after the
 * whole timeout (the peer, if alive, finds our ring closed). */
static void eng_check_silent(struct engine *e, double now)
{
	struct tr_ring *r = e->r;

	if (!(r->silence_s > 0) || e->recv != DIR_BUSY || !e->in_up || now - e->heard < r->silence_s)
		return;
	GNN_ERROR("peer_silent", "peer=trainer-%u url=%s op=%s seq=%llu silent_s=%.1f received=%zu/%zu sent=%zu/%zu "
		  "error=\"nothing came from peer trainer-%u (%s), not even its heartbeat, while its connection "
		  "stayed open: its host vanished, it is cut off, or it is frozen\"", r->prev, url_of(r, r->prev),
		  op_name(e->p->kind), (unsigned long long)e->p->seq, now - e->heard, e->done_recv, e->p->nrecv,
		  e->done_send, e->p->nsend, r->prev, url_of(r, r->prev));
	eng_fail(e, GNN_EUNAVAIL);
}

/* No completion for a while: a waiting line every WAIT_LOG_S, and after
 * limit_s a timeout blaming the side that is not even connected, else the
 * receive. */
static void eng_check_slow(struct engine *e, double waited)
{
	struct tr_ring *r = e->r;
	const struct plan *p = e->p;

	if (waited >= e->limit_s) {
		bool in = e->recv == DIR_BUSY && !e->in_up     ? true
			  : e->send == DIR_BUSY && !e->out_up ? false
							      : e->recv == DIR_BUSY;
		uint32_t peer = in ? r->prev : r->next;

		GNN_ERROR("peer_timeout", "peer=trainer-%u url=%s op=%s seq=%llu waited_s=%.1f connected=%s "
			  "received=%zu/%zu sent=%zu/%zu", peer, url_of(r, peer), op_name(p->kind),
			  (unsigned long long)p->seq, waited, yesno(in ? e->in_up : e->out_up), e->done_recv,
			  p->nrecv, e->done_send, p->nsend);
		eng_fail(e, GNN_ETIMEDOUT);
		return;
	}
	if (waited < e->next_log)
		return;
	if (e->recv == DIR_BUSY)
		GNN_WARN("waiting_for_peer", "peer=trainer-%u url=%s op=%s seq=%llu waited_s=%.0f dir=recv "
			 "connected=%s", r->prev, url_of(r, r->prev), op_name(p->kind), (unsigned long long)p->seq,
			 waited, yesno(e->in_up));
	if (e->send == DIR_BUSY)
		GNN_WARN("waiting_for_peer", "peer=trainer-%u url=%s op=%s seq=%llu waited_s=%.0f dir=send "
			 "connected=%s", r->next, url_of(r, r->next), op_name(p->kind), (unsigned long long)p->seq,
			 waited, yesno(e->out_up));
	e->next_log += WAIT_LOG_S;
}

/* Cancels what is still posted after a failure (a cancelled aio may still
 * complete: free whatever it holds) and frees the messages a failure left
 * unsent. */
static void eng_finish(struct engine *e)
{
	struct tr_ring *r = e->r;

	if (e->recv == DIR_BUSY) {
		nng_aio_cancel(r->aio[A_RECV]);
		nng_aio_wait(r->aio[A_RECV]);
		if (nng_aio_result(r->aio[A_RECV]) == 0)
			ring_drop_msg(r->aio[A_RECV]);
	}
	if (e->send == DIR_BUSY) {
		nng_aio_cancel(r->aio[A_SEND]);
		nng_aio_wait(r->aio[A_SEND]);
		if (nng_aio_result(r->aio[A_SEND]) != 0)
			ring_drop_msg(r->aio[A_SEND]);
		nng_aio_set_msg(r->aio[A_SEND], NULL);
	}
	pthread_mutex_lock(&r->mu);
	if (e->state == RUN_FAILED)
		r->done[A_SEND] = r->done[A_RECV] = false;
	r->in_op = false;
	pthread_mutex_unlock(&r->mu);
	if (e->p->fwd != NULL) {
		for (size_t k = 0; k < e->p->nsend; k++)
			if (e->p->fwd[k] != NULL)
				nng_msg_free(e->p->fwd[k]);
		free(e->p->fwd);
		e->p->fwd = NULL;
	}
}

int ring_run_plan(struct tr_ring *r, struct plan *p, double limit_s)
{
	struct engine e = { .r = r, .p = p, .state = RUN_RUNNING, .limit_s = limit_s,
			    .grace = limit_s < LOST_GRACE_S ? limit_s : LOST_GRACE_S };

	if (p->nsend > 0 && (p->fwd = calloc(p->nsend, sizeof(*p->fwd))) == NULL)
		return GNN_ENOMEM;
	pthread_mutex_lock(&r->mu);
	r->in_op = true;
	pthread_mutex_unlock(&r->mu);
	eng_progress(&e);
	e.heard = e.last;
	for (;;) {
		eng_post(&e);
		if (e.state != RUN_RUNNING)
			break;
		eng_wait(&e);
		if (e.rdone)
			eng_on_recv(&e);
		if (e.sdone && e.state == RUN_RUNNING)
			eng_on_send(&e);
		if (e.state != RUN_RUNNING)
			break;
		if (r->stop != NULL && r->stop()) {
			GNN_WARN("ring_stopped", "op=%s seq=%llu", op_name(p->kind), (unsigned long long)p->seq);
			eng_fail(&e, GNN_ECLOSED);
			break;
		}
		if (e.rdone || e.sdone)
			continue;
		eng_check_lost(&e, gnn_now());
		if (e.state == RUN_RUNNING)
			eng_check_silent(&e, gnn_now());
		if (e.state == RUN_RUNNING)
			eng_check_slow(&e, gnn_now() - e.last);
		if (e.state != RUN_RUNNING)
			break;
	}
	eng_finish(&e);
	return e.state == RUN_DONE ? GNN_OK : e.rc;
}
