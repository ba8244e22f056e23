/* ring_close.c - closing a ring: the goodbye that makes sure the last
 * messages arrived, and closing the sockets despite nng 1.5.2's close
 * deadlock (tr_ring_close). */
#include "ring_int.h"

#include <math.h>
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

/* Posts a header-only message of this kind on aio through sock. */
static int post_ctl(struct tr_ring *r, nng_socket sock, nng_aio *aio, enum op kind)
{
	struct hdr h = { .magic = RING_MAGIC, .kind = kind, .seq = r->seq, .from = r->rank };
	nng_msg *m;

	if (nng_msg_alloc(&m, HDR_BYTES) != 0)
		return GNN_ENOMEM;
	hdr_put(nng_msg_body(m), &h);
	nng_aio_set_msg(aio, m);
	nng_send_aio(sock, aio);
	return GNN_OK;
}

/* The kind of the message a receive got (0 when it is no ring message);
 * frees the message. */
static uint32_t ctl_kind(nng_aio *aio)
{
	nng_msg *m = nng_aio_get_msg(aio);
	struct hdr h = { 0 };

	nng_aio_set_msg(aio, NULL);
	if (m == NULL)
		return 0;
	if (nng_msg_len(m) >= HDR_BYTES)
		hdr_get(nng_msg_body(m), &h);
	nng_msg_free(m);
	return h.magic == RING_MAGIC ? h.kind : 0;
}

/* nng completes a send when the message is handed to the pipe, not when
 * the peer has it: closing right after the last operation could cut off
 * its last message. So each rank sends BYE to the next (behind all its
 * data on the same pipe) and closes once the next rank acknowledges it, or
 * is gone, or stop() is set, or timeout_ms passes; meanwhile it
 * acknowledges the previous rank's BYE. Every rank sends its BYE before it
 * waits for anything, so the ranks do not wait on each other in a cycle. */
enum aio_state { AIO_IDLE, AIO_BUSY };

/* The goodbye's state: each of its four aios (our BYE to the next rank,
 * our BYE_ACK to the previous one, the receives on `in` and on `out`) is
 * idle or busy; it ends when both neighbours are done with us. */
struct bye {
	struct tr_ring *r;
	enum aio_state bye, ack, in, out;
	bool next_done, prev_done;
	double heard;  /* the last message from the previous rank (its BYE, or a ping) */
	/* what the last wait saw (under r->mu) */
	bool sd, rd, asd, ard, in_up, in_down, out_down;
};

static void bye_wait(struct bye *b)
{
	struct tr_ring *r = b->r;
	struct timespec ts;

	gnn_deadline(CLOCK_MONOTONIC, SLICE_MS, &ts);
	pthread_mutex_lock(&r->mu);
	if (!r->done[A_SEND] && !r->done[A_RECV] && !r->done[A_ACK_SEND] && !r->done[A_ACK_RECV])
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
	b->sd = r->done[A_SEND];
	b->rd = r->done[A_RECV];
	b->asd = r->done[A_ACK_SEND];
	b->ard = r->done[A_ACK_RECV];
	memset(r->done, 0, sizeof(r->done));
	b->in_up = r->in.pipe != 0;
	b->in_down = r->in.lost && r->in.pipe == 0;
	b->out_down = r->out.lost && r->out.pipe == 0;
	pthread_mutex_unlock(&r->mu);
}

/* The previous rank's BYE came in (acknowledge it), or something else. */
static void bye_on_recv(struct bye *b)
{
	struct tr_ring *r = b->r;
	uint32_t kind = nng_aio_result(r->aio[A_RECV]) == 0 ? ctl_kind(r->aio[A_RECV]) : 0;

	b->in = AIO_IDLE;
	b->heard = gnn_now();
	if (kind == OP_PING) {
		nng_recv_aio(r->in.sock, r->aio[A_RECV]);
		b->in = AIO_BUSY;
		return;
	}
	if (kind == OP_BYE && post_ctl(r, r->in.sock, r->aio[A_ACK_SEND], OP_BYE_ACK) == GNN_OK) {
		b->ack = AIO_BUSY;
		return;
	}
	if (kind != 0)
		GNN_WARN("ring_close_unexpected", "peer=trainer-%u url=%s op=%s error=\"it sent more than this rank "
			 "received: did it run more operations?\"", r->prev, url_of(r, r->prev), op_name(kind));
	b->prev_done = true;
}

static void bye_on_events(struct bye *b)
{
	struct tr_ring *r = b->r;
	uint32_t kind;

	if (b->sd) {
		b->bye = AIO_IDLE;
		if (nng_aio_result(r->aio[A_SEND]) != 0) {
			ring_drop_msg(r->aio[A_SEND]);
			b->next_done = true;
		}
	}
	if (b->rd)
		bye_on_recv(b);
	if (b->asd) {
		b->ack = AIO_IDLE;
		if (nng_aio_result(r->aio[A_ACK_SEND]) != 0)
			ring_drop_msg(r->aio[A_ACK_SEND]);
		b->prev_done = true;
	}
	if (b->ard) {
		b->out = AIO_IDLE;
		b->next_done = true;
		kind = nng_aio_result(r->aio[A_ACK_RECV]) == 0 ? ctl_kind(r->aio[A_ACK_RECV]) : 0;
		if (kind != 0 && kind != OP_BYE_ACK)
			GNN_WARN("ring_close_unexpected", "peer=trainer-%u url=%s op=%s", r->next, url_of(r, r->next),
				 op_name(kind));
	}
	/* a neighbour that is gone needs nothing more from us */
	if (b->out_down)
		b->next_done = true;
	if (b->in_down && b->ack == AIO_IDLE)
		b->prev_done = true;
}

/* The previous rank, connected but silent (no BYE, no ping) for
 * silence_s, is gone: nothing more is owed to it, nor to the next rank
 * when it is the same one. */
static void bye_check_silent(struct bye *b)
{
	struct tr_ring *r = b->r;

	if (b->prev_done || !(r->silence_s > 0) || !b->in_up || gnn_now() - b->heard < r->silence_s)
		return;
	GNN_WARN("ring_close_peer_silent", "peer=trainer-%u url=%s silent_s=%.1f error=\"closing without its goodbye: "
		 "nothing came from it, not even its heartbeat\"", r->prev, url_of(r, r->prev), gnn_now() - b->heard);
	b->prev_done = true;
	if (r->prev == r->next)
		b->next_done = true;
}

/* Still waiting after waited seconds: true when it is time to give up
 * (stop, or the timeout); a line every CLOSE_LOG_S meanwhile. */
static bool bye_give_up(struct bye *b, double waited, double *next_log)
{
	struct tr_ring *r = b->r;

	if (r->stop != NULL && r->stop())
		return true;
	if (waited >= r->timeout_ms / 1000.0) {
		GNN_WARN("ring_close_timeout", "peer=trainer-%u url=%s waited_s=%.1f acknowledged=%s error=\"closing "
			 "without knowing that the next rank has all our data\"", r->next, url_of(r, r->next), waited,
			 yesno(b->next_done));
		return true;
	}
	if (waited >= *next_log) {
		if (!b->next_done)
			GNN_INFO("waiting_for_peer", "peer=trainer-%u url=%s op=bye waited_s=%.0f dir=recv", r->next,
				 url_of(r, r->next), waited);
		if (!b->prev_done)
			GNN_INFO("waiting_for_peer", "peer=trainer-%u url=%s op=bye waited_s=%.0f dir=recv", r->prev,
				 url_of(r, r->prev), waited);
		*next_log += CLOSE_LOG_S;
	}
	return false;
}

/* Whatever is still pending: cancel, then free what it holds (a send that
 * failed still holds its message, a receive that succeeded too). */
static void bye_cancel(struct bye *b)
{
	struct tr_ring *r = b->r;
	nng_aio *a[4] = { r->aio[A_SEND], r->aio[A_ACK_SEND], r->aio[A_RECV], r->aio[A_ACK_RECV] };
	enum aio_state st[4] = { b->bye, b->ack, b->in, b->out };

	for (int i = 0; i < 4; i++) {
		if (st[i] != AIO_BUSY)
			continue;
		nng_aio_cancel(a[i]);
		nng_aio_wait(a[i]);
		if ((i < 2) == (nng_aio_result(a[i]) != 0))
			ring_drop_msg(a[i]);
		nng_aio_set_msg(a[i], NULL);
	}
	pthread_mutex_lock(&r->mu);
	memset(r->done, 0, sizeof(r->done));
	pthread_mutex_unlock(&r->mu);
}

static void flush(struct tr_ring *r)
{
	double t0 = gnn_now(), next_log = CLOSE_LOG_S;
	struct bye b = { .r = r, .heard = t0 };

	if (post_ctl(r, r->out.sock, r->aio[A_SEND], OP_BYE) != GNN_OK)
		return;
	b.bye = AIO_BUSY;
	nng_recv_aio(r->in.sock, r->aio[A_RECV]);
	b.in = AIO_BUSY;
	nng_recv_aio(r->out.sock, r->aio[A_ACK_RECV]);
	b.out = AIO_BUSY;
	while (!b.next_done || !b.prev_done) {
		bye_wait(&b);
		bye_on_events(&b);
		bye_check_silent(&b);
		if ((b.next_done && b.prev_done) || bye_give_up(&b, gnn_now() - t0, &next_log))
			break;
	}
	bye_cancel(&b);
}

/* GNN_FAULT_RING_CLOSE_STUCK=1 (docs/reliability.md, "Injected faults"):
 * every close of this process's rings acts as nng 1.5.2's close deadlock
 * does, leaving the sockets open (the listener bound). Read once. */
static bool fault_close_stuck(void)
{
	static _Atomic int on = -1;   /* -1: not read yet */
	const char *v;
	int want = atomic_load(&on);

	if (want >= 0)
		return want;
	v = getenv("GNN_FAULT_RING_CLOSE_STUCK");
	want = v != NULL && strcmp(v, "1") == 0;
	if (v != NULL && !want)
		GNN_WARN("bad_config", "env=GNN_FAULT_RING_CLOSE_STUCK value=%s reason=\"1 or unset: ignored\"", v);
	if (want)
		GNN_WARN("fault_injected", "env=GNN_FAULT_RING_CLOSE_STUCK reason=\"every ring close leaves its sockets "
			 "open, as nng's close deadlock does\"");
	atomic_store(&on, want);
	return want;
}

/* Rings whose close hung: kept reachable, as nng may still call their
 * pipe callbacks (and a leak checker would report them otherwise). */
static pthread_mutex_t abandoned_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tr_ring *abandoned;

static void abandon(struct tr_ring *r)
{
	pthread_mutex_lock(&abandoned_mu);
	r->next_abandoned = abandoned;
	abandoned = r;
	pthread_mutex_unlock(&abandoned_mu);
}

/* Closes the ring's sockets within GNN_CLOSE_LIMIT_S (once stop() is set,
 * the process is about to exit: within what is left of its closing budget,
 * gnn_close_limit); false when nng_close hung (the sockets and everything
 * their callbacks may touch must then stay). */
static bool close_sockets(struct tr_ring *r)
{
	double limit_s = r->stop != NULL && r->stop() ? fmin(gnn_close_limit(), GNN_CLOSE_STOPPING_S)
						      : GNN_CLOSE_LIMIT_S;
	nng_socket socks[2];
	size_t n = 0;

	if (fault_close_stuck()) {
		GNN_ERROR("close_stuck", "what=ring injected=1 error=\"GNN_FAULT_RING_CLOSE_STUCK: the sockets stay "
			  "open\"");
		return false;
	}
	if (r->in.open)
		socks[n++] = r->in.sock;
	if (r->out.open)
		socks[n++] = r->out.sock;
	return gnn_close_bounded(socks, n, limit_s, "ring");
}

/* No redial from here on. nng 1.5.2's close can deadlock on a connection
 * being set up (nanomsg/nng#1543), and at a run's end the next rank
 * closes and at once listens again, with its stand-in, on the port our
 * dialer would redial within 100 ms (a TLS handshake each time). */
#define REDIAL_NEVER_MS (3600 * 1000)

static void stop_redialling(struct tr_ring *r)
{
	if (nng_dialer_id(r->dialer) <= 0)
		return;
	nng_dialer_set_ms(r->dialer, NNG_OPT_RECONNMAXT, REDIAL_NEVER_MS);
	nng_dialer_set_ms(r->dialer, NNG_OPT_RECONNMINT, REDIAL_NEVER_MS);
}

bool tr_ring_close(struct tr_ring *r)
{
	if (r == NULL)
		return true;
	stop_redialling(r);
	if (r->world > 1 && r->connected && r->failed == GNN_OK && r->aio[A_SEND] != NULL &&
	    !(r->stop != NULL && r->stop()))
		flush(r);
	if (r->sync_ok) {
		pthread_mutex_lock(&r->mu);
		r->closing = true;
		pthread_mutex_unlock(&r->mu);
	}
	/* aios first (they may hold messages), then the sockets: nng_close
	 * returns after the pipes' REM_POST callbacks ran, so none touches r
	 * after this */
	for (int i = 0; i < A_COUNT; i++)
		if (r->aio[i] != NULL) {
			nng_aio_stop(r->aio[i]);
			/* a message still on a stopped aio is ours: a send nng
			 * did not take, or a receive nobody took */
			ring_drop_msg(r->aio[i]);
		}
	ring_beat_stop(r);  /* before the sockets it sends on */
	if ((r->in.open || r->out.open) && !close_sockets(r)) {
		abandon(r);   /* r stays: nng may still call ring_pipe_cb with it */
		return false;
	}
	for (int i = 0; i < A_COUNT; i++)
		if (r->aio[i] != NULL)
			nng_aio_free(r->aio[i]);
	if (r->urls != NULL)
		for (uint32_t i = 0; i < r->world; i++)
			free(r->urls[i]);
	free(r->urls);
	if (r->sync_ok) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
	}
	free(r);
	return true;
}
