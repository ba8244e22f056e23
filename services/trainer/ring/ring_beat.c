/* ring_beat.c - the ring's heartbeat (docs/allreduce.md, "Heartbeats").
 *
 * A rank waiting for its previous rank cannot tell a peer that is busy (it
 * computes, or waits for its own sampler) from one whose host vanished or
 * was partitioned away: neither sends anything, and TCP says nothing for
 * minutes. So every rank sends a header-only OP_PING to the next rank every
 * silence_s / 5 from a thread of its own, whatever its training thread
 * does; receives on `in` skip pings, and a rank that hears nothing at all
 * from the previous one for silence_s while it waits for it takes it for
 * gone (ring_engine.c, `peer_silent`). Pings go one way, with the data: the
 * rank after a silent one finds it, and the ring's failure reaches the
 * others as closed connections (LOST_GRACE_S per hop).
 *
 * Sends are non-blocking: a ping that cannot go at once (no pipe, or the
 * link is full of data, which says as much) is dropped. */
#include "ring_int.h"

#include <time.h>

#include "err.h"
#include "log.h"
#include "sys.h"

#define BEATS_PER_SILENCE 5

static void send_ping(struct tr_ring *r)
{
	struct hdr h = { .magic = RING_MAGIC, .kind = OP_PING, .from = r->rank };
	nng_msg *m;

	if (nng_msg_alloc(&m, HDR_BYTES) != 0)
		return;
	hdr_put(nng_msg_body(m), &h);
	if (nng_sendmsg(r->out.sock, m, NNG_FLAG_NONBLOCK) != 0)
		nng_msg_free(m);
}

static void *beat_main(void *arg)
{
	struct tr_ring *r = arg;
	int period_ms = (int)(r->silence_s * 1000 / BEATS_PER_SILENCE);
	struct timespec ts;

	if (period_ms < 1)
		period_ms = 1;
	pthread_mutex_lock(&r->beat_mu);
	while (!r->beat_stop) {
		pthread_mutex_unlock(&r->beat_mu);
		send_ping(r);
		gnn_deadline(CLOCK_MONOTONIC, period_ms, &ts);
		pthread_mutex_lock(&r->beat_mu);
		while (!r->beat_stop && pthread_cond_timedwait(&r->beat_cv, &r->beat_mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&r->beat_mu);
	return NULL;
}

int ring_beat_start(struct tr_ring *r)
{
	int rv;

	if (r->world < 2 || !(r->silence_s > 0))
		return GNN_OK;
	if (gnn_sync_init(&r->beat_mu, &r->beat_cv) != GNN_OK)
		return GNN_ENOMEM;
	r->beat_sync_ok = true;
	if ((rv = pthread_create(&r->beat, NULL, beat_main, r)) != 0) {
		GNN_ERROR("ring_heartbeat_failed", "error=\"cannot start the heartbeat thread (%d)\"", rv);
		return GNN_EIO;
	}
	r->beat_running = true;
	return GNN_OK;
}

void ring_beat_stop(struct tr_ring *r)
{
	if (r->beat_running) {
		pthread_mutex_lock(&r->beat_mu);
		r->beat_stop = true;
		pthread_cond_signal(&r->beat_cv);
		pthread_mutex_unlock(&r->beat_mu);
		pthread_join(r->beat, NULL);
		r->beat_running = false;
	}
	if (r->beat_sync_ok) {
		pthread_cond_destroy(&r->beat_cv);
		pthread_mutex_destroy(&r->beat_mu);
		r->beat_sync_ok = false;
	}
}

bool ring_take_ping(nng_msg *m)
{
	struct hdr h;

	if (nng_msg_len(m) != HDR_BYTES)
		return false;
	hdr_get(nng_msg_body(m), &h);
	if (h.magic != RING_MAGIC || h.kind != OP_PING)
		return false;
	nng_msg_free(m);
	return true;
}
