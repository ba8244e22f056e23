/* ring_hello.c - the handshake that forms the ring (ring_handshake). */
#include "ring_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

/* ---- the handshake ----
 *
 * Every rank sends its record (rank, world, config hash, nonce: this ring's
 * incarnation) to the next rank, and forwards every record it receives
 * that is not its own; a record stops at its origin. A rank is done when
 * its own record (this nonce) has come back, it holds a record of every
 * other rank, and it has sent everything it had to forward. Records are
 * taken by what they say, not by their position in the stream, so that
 * ranks that restart or rejoin at different times converge instead of
 * tripping over each other's earlier attempts (issue: handshake livelock):
 *   - its record is sent again whenever the link to the next rank
 *     connects anew (that rank may be a new incarnation that lost it);
 *   - its own records of an earlier attempt (another nonce) are dropped;
 *   - a newer record of a rank replaces the older one.
 * Links are FIFO and a done rank has forwarded everything before its first
 * collective message, so the next rank finds all it needs first. */

struct rec {
	uint32_t rank, world;
	uint64_t hash, nonce;
};

struct hop_rec {
	struct rec x;
	uint32_t hops;       /* times forwarded before this send */
};

enum hs_state {
	HS_COLLECTING,       /* records or our own record's return still missing */
	HS_DRAINING,         /* complete; forwards still being sent */
	HS_DONE,
};

struct hello {
	enum hs_state state;
	struct rec *latest;  /* [world]: the newest record of each rank */
	uint32_t *hops;      /* [world]: how far latest[s] had come */
	bool *have;          /* [world] */
	uint32_t nhave;      /* other ranks whose record is here */
	bool own_back;
	uint32_t own_pipe;   /* the `out` pipe our record last went to */
	struct hop_rec *q;   /* to send, FIFO: q[qhead .. qhead+qlen) */
	size_t qhead, qlen, qcap;
	bool send_busy, recv_busy;
	bool fin_busy, fin_off;  /* the receive on `out` for a finished rank's answer */
};

static int hello_push(struct hello *hs, const struct rec *x, uint32_t hops)
{
	if (hs->qhead + hs->qlen == hs->qcap) {
		if (hs->qhead > 0) {
			memmove(hs->q, hs->q + hs->qhead, hs->qlen * sizeof(*hs->q));
			hs->qhead = 0;
		} else {
			size_t cap = hs->qcap ? 2 * hs->qcap : 16;
			struct hop_rec *n = realloc(hs->q, cap * sizeof(*n));

			if (n == NULL)
				return GNN_ENOMEM;
			hs->q = n;
			hs->qcap = cap;
		}
	}
	hs->q[hs->qhead + hs->qlen++] = (struct hop_rec){ .x = *x, .hops = hops };
	return GNN_OK;
}

static int hello_post_send(struct tr_ring *r, struct hello *hs)
{
	const struct hop_rec *e = &hs->q[hs->qhead];
	struct hdr h = { .magic = RING_MAGIC, .kind = OP_HELLO, .seq = 0, .from = r->rank, .step = e->hops,
			 .chunk = e->x.rank, .len = REC_BYTES, .total = REC_BYTES };
	unsigned char *body;
	nng_msg *m;

	if (nng_msg_alloc(&m, HDR_BYTES + REC_BYTES) != 0)
		return GNN_ENOMEM;
	body = nng_msg_body(m);
	hdr_put(body, &h);
	put32(body + HDR_BYTES, e->x.rank);
	put32(body + HDR_BYTES + 4, e->x.world);
	put64(body + HDR_BYTES + 8, e->x.hash);
	put64(body + HDR_BYTES + 16, e->x.nonce);
	hs->qhead++;
	hs->qlen--;
	nng_aio_set_msg(r->aio[A_SEND], m);
	nng_send_aio(r->out.sock, r->aio[A_SEND]);
	hs->send_busy = true;
	return GNN_OK;
}

/* Takes one received handshake message (owned by the caller). */
static int hello_take(struct tr_ring *r, struct hello *hs, nng_msg *m)
{
	const unsigned char *body = nng_msg_body(m);
	size_t len = nng_msg_len(m);
	struct hdr h;
	struct rec x;

	if (len != HDR_BYTES + REC_BYTES || get32(body) != RING_MAGIC) {
		GNN_ERROR("ring_protocol_error", "peer=trainer-%u url=%s error=\"peer trainer-%u sent %zu bytes "
			  "that are not a handshake message (first word 0x%08x)\"", r->prev, url_of(r, r->prev),
			  r->prev, len, len >= 4 ? get32(body) : 0);
		return GNN_EPROTO;
	}
	hdr_get(body, &h);
	if (h.kind != OP_HELLO || h.seq != 0)
		return ring_protocol_error(r, &h, &(struct hdr){ .magic = RING_MAGIC, .kind = OP_HELLO, .from = r->prev,
							    .len = REC_BYTES, .total = REC_BYTES });
	x = (struct rec){ .rank = get32(body + HDR_BYTES), .world = get32(body + HDR_BYTES + 4),
			  .hash = get64(body + HDR_BYTES + 8), .nonce = get64(body + HDR_BYTES + 16) };
	if (x.world != r->world || x.rank >= r->world) {
		GNN_ERROR("ring_mismatch", "what=world rank=%u theirs=%u ours=%u this_rank=%u error=\"trainer-%u "
			  "has another world size: every rank must run with the same --world-size\"", x.rank, x.world,
			  r->world, r->rank, x.rank);
		return GNN_EINVAL;
	}
	if (x.rank == r->rank) {
		if (x.nonce == r->nonce)
			hs->own_back = true;  /* the ring is closed */
		else
			GNN_DEBUG("ring_stale_record", "reason=\"our record from an earlier attempt: dropped\"");
		return GNN_OK;
	}
	if (!hs->have[x.rank])
		hs->nhave++;
	else if (hs->latest[x.rank].nonce != x.nonce)
		GNN_INFO("ring_peer_restarted", "peer=trainer-%u reason=\"a newer record of it replaces the older\"",
			 x.rank);
	hs->have[x.rank] = true;
	hs->latest[x.rank] = x;
	hs->hops[x.rank] = h.step;
	if (h.step + 1 >= MAX_HOPS)
		return GNN_OK;  /* went round more than once: its origin is gone */
	return hello_push(hs, &x, h.step + 1);
}

/* Every other rank's record against ours: world, hash, and the ring's
 * wiring (a record from rank s reaches rank s + hops + 1). */
static int check_records(struct tr_ring *r, const struct hello *hs)
{
	uint32_t T = r->world, logged = 0;
	bool bad = false;

	for (uint32_t s = 0; s < T; s++) {
		const struct rec *x = &hs->latest[s];
		char what[160];

		if (s == r->rank)
			continue;
		what[0] = '\0';
		if (x->hash != r->hash)
			snprintf(what, sizeof(what), "what=config_hash rank=%u theirs=0x%016llx ours=0x%016llx", s,
				 (unsigned long long)x->hash, (unsigned long long)r->hash);
		else if ((s + (uint64_t)hs->hops[s] + 1) % T != r->rank)
			snprintf(what, sizeof(what), "what=order rank=%u hops=%u expected_hops=%u", s, hs->hops[s],
				 (r->rank + T - s - 1) % T);
		if (what[0] != '\0') {
			bad = true;
			if (logged++ < MAX_MISMATCH_LOGS)
				GNN_ERROR("ring_mismatch", "%s this_rank=%u error=\"trainer-%u does not agree with this "
					  "rank: every rank must run the same configuration, and --peers list them in "
					  "rank order\"", what, r->rank, s);
		}
	}
	return bad ? GNN_EINVAL : GNN_OK;
}

/* What the handshake waits for, as one log line: the neighbour that is
 * not connected (the next rank first), else the first missing rank. */
static void hello_log_wait(struct tr_ring *r, const struct hello *hs, enum gnn_log_level lvl, const char *event,
			   double waited, bool in_up, bool out_up)
{
	char missing[256];
	size_t used = 0;
	uint32_t peer = !out_up ? r->next : !in_up ? r->prev : r->next;

	missing[0] = '\0';
	for (uint32_t s = 0; s < r->world && used + 16 < sizeof(missing); s++)
		if (s != r->rank && !hs->have[s]) {
			if (used == 0 && in_up && out_up)
				peer = s;
			used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%strainer-%u", used ? "," : "", s);
		}
	GNN_LOG(lvl, event, "peer=trainer-%u url=%s op=hello seq=0 waited_s=%.0f connected=%s missing=%s "
		"own_record_back=%s", peer, url_of(r, peer), waited, yesno(peer == r->next ? out_up : in_up),
		used ? missing : "-", yesno(hs->own_back));
}

/* A message on `out` during the handshake: only a finished next rank's
 * stand-in (tr_ring_serve_result) sends anything back on that link. True
 * when it is the result of a run with our configuration (kept in r). */
static bool take_finished(struct tr_ring *r, nng_msg *m)
{
	const unsigned char *body = nng_msg_body(m);
	size_t len = nng_msg_len(m);
	uint64_t hash;
	struct hdr h;

	if (len < HDR_BYTES + 8 || get32(body) != RING_MAGIC)
		return false;
	hdr_get(body, &h);
	if (h.kind != OP_FINISHED || h.len != len - HDR_BYTES || h.len - 8 > TR_RING_RESULT_MAX)
		return false;
	hash = get64(body + HDR_BYTES);
	if (hash != r->hash) {
		/* e.g. a rolling update with new settings reached this rank first */
		if (!r->other_run_logged)
			GNN_WARN("ring_peer_finished_other_run", "peer=trainer-%u url=%s theirs=0x%016llx "
				 "ours=0x%016llx reason=\"it serves the result of a run with other settings: "
				 "waiting for it to be replaced\"", r->next, url_of(r, r->next),
				 (unsigned long long)hash, (unsigned long long)r->hash);
		r->other_run_logged = true;
		return false;
	}
	r->peer_result_len = (size_t)h.len - 8;
	r->peer_result_from = h.from;
	memcpy(r->peer_result, body + HDR_BYTES + 8, r->peer_result_len);
	return true;
}

/* The receive on `out` for a finished next rank's answer: GNN_EDONE when
 * it came. */
static int hello_finished(struct tr_ring *r, struct hello *hs, bool done)
{
	if (done) {
		nng_msg *m;
		bool ours;

		hs->fin_busy = false;
		if (nng_aio_result(r->aio[A_ACK_RECV]) != 0) {
			hs->fin_off = true;  /* the socket closed: nothing more comes */
			return GNN_OK;
		}
		m = nng_aio_get_msg(r->aio[A_ACK_RECV]);
		nng_aio_set_msg(r->aio[A_ACK_RECV], NULL);
		ours = take_finished(r, m);
		nng_msg_free(m);
		if (ours)
			return GNN_EDONE;
	}
	if (!hs->fin_busy && !hs->fin_off) {
		nng_recv_aio(r->out.sock, r->aio[A_ACK_RECV]);
		hs->fin_busy = true;
	}
	return GNN_OK;
}

/* One step of the handshake's state machine after the aio flags and the
 * pipes were read. */
static int hello_step(struct tr_ring *r, struct hello *hs, bool sdone, bool rdone, uint32_t out_pipe)
{
	int rv, rc;

	if (sdone) {
		hs->send_busy = false;
		if ((rv = nng_aio_result(r->aio[A_SEND])) != 0) {
			ring_drop_msg(r->aio[A_SEND]);
			GNN_ERROR("ring_io_error", "peer=trainer-%u url=%s op=hello dir=send error=\"%s\"", r->next,
				  url_of(r, r->next), nng_strerror(rv));
			return GNN_EIO;
		}
	}
	if (rdone) {
		nng_msg *m;

		hs->recv_busy = false;
		if ((rv = nng_aio_result(r->aio[A_RECV])) != 0) {
			GNN_ERROR("ring_io_error", "peer=trainer-%u url=%s op=hello dir=recv error=\"%s\"", r->prev,
				  url_of(r, r->prev), nng_strerror(rv));
			return GNN_EIO;
		}
		m = nng_aio_get_msg(r->aio[A_RECV]);
		nng_aio_set_msg(r->aio[A_RECV], NULL);
		if (!ring_take_ping(m)) {
			rc = hello_take(r, hs, m);
			nng_msg_free(m);
			if (rc != GNN_OK)
				return rc;
		}
	}
	/* a new link to the next rank: it may never have seen our record */
	if (out_pipe != 0 && out_pipe != hs->own_pipe) {
		hs->own_pipe = out_pipe;
		if ((rc = hello_push(hs, &(struct rec){ r->rank, r->world, r->hash, r->nonce }, 0)) != GNN_OK)
			return rc;
	}
	if (hs->own_back && hs->nhave == r->world - 1)
		hs->state = hs->qlen == 0 && !hs->send_busy ? HS_DONE : HS_DRAINING;
	if (hs->state == HS_DONE)
		return GNN_OK;
	if (!hs->send_busy && hs->qlen > 0 && (rc = hello_post_send(r, hs)) != GNN_OK)
		return rc;
	/* one receive at a time, none once complete: a done rank must leave
	 * the next message (a collective's) in the socket */
	if (!hs->recv_busy && hs->state == HS_COLLECTING) {
		nng_recv_aio(r->in.sock, r->aio[A_RECV]);
		hs->recv_busy = true;
	}
	return GNN_OK;
}

/* Stops what the handshake still has posted (after a failure the ring is
 * unusable; after success nothing more comes back on `out` until close)
 * and frees its state. */
static void hello_end(struct tr_ring *r, struct hello *hs)
{
	if (hs->recv_busy) {
		nng_aio_cancel(r->aio[A_RECV]);
		nng_aio_wait(r->aio[A_RECV]);
		if (nng_aio_result(r->aio[A_RECV]) == 0)
			ring_drop_msg(r->aio[A_RECV]);
	}
	if (hs->send_busy) {
		nng_aio_cancel(r->aio[A_SEND]);
		nng_aio_wait(r->aio[A_SEND]);
		if (nng_aio_result(r->aio[A_SEND]) != 0)
			ring_drop_msg(r->aio[A_SEND]);
	}
	if (hs->fin_busy) {
		nng_aio_cancel(r->aio[A_ACK_RECV]);
		nng_aio_wait(r->aio[A_ACK_RECV]);
		if (nng_aio_result(r->aio[A_ACK_RECV]) == 0)
			ring_drop_msg(r->aio[A_ACK_RECV]);
	}
	pthread_mutex_lock(&r->mu);
	r->done[A_SEND] = r->done[A_RECV] = r->done[A_ACK_RECV] = false;
	pthread_mutex_unlock(&r->mu);
	free(hs->latest);
	free(hs->hops);
	free(hs->have);
	free(hs->q);
}

int ring_handshake(struct tr_ring *r, double wait_s)
{
	struct hello hs = { .state = HS_COLLECTING };
	double t0 = gnn_now(), next_log = WAIT_LOG_S;
	int rc = GNN_ENOMEM;

	if ((hs.latest = calloc(r->world, sizeof(*hs.latest))) == NULL ||
	    (hs.hops = calloc(r->world, sizeof(*hs.hops))) == NULL || (hs.have = calloc(r->world, 1)) == NULL)
		goto out;
	for (;;) {
		struct timespec ts;
		bool sdone, rdone, fdone, in_up, out_up;
		uint32_t out_pipe;
		double waited, down_since;

		pthread_mutex_lock(&r->mu);
		down_since = r->out.down_since;
		sdone = r->done[A_SEND];
		rdone = r->done[A_RECV];
		fdone = r->done[A_ACK_RECV];
		r->done[A_SEND] = r->done[A_RECV] = r->done[A_ACK_RECV] = false;
		out_pipe = r->out.pipe;
		in_up = r->in.pipe != 0;
		out_up = out_pipe != 0;
		pthread_mutex_unlock(&r->mu);
		if ((rc = hello_finished(r, &hs, fdone)) != GNN_OK ||
		    (rc = hello_step(r, &hs, sdone, rdone, out_pipe)) != GNN_OK || hs.state == HS_DONE)
			break;
		if (r->stop != NULL && r->stop()) {
			GNN_WARN("ring_stopped", "op=hello");
			rc = GNN_ECLOSED;
			break;
		}
		waited = gnn_now() - t0;
		if (waited >= wait_s) {
			hello_log_wait(r, &hs, GNN_LOG_ERROR, "peer_timeout", waited, in_up, out_up);
			rc = GNN_ETIMEDOUT;
			break;
		}
		if (waited >= next_log) {
			hello_log_wait(r, &hs, GNN_LOG_INFO, "waiting_for_peer", waited, in_up, out_up);
			next_log += WAIT_LOG_S;
		}
		if (!out_up && gnn_now() - down_since >= GNN_REDIAL_AFTER_S)
			ring_redial(r);
		gnn_deadline(CLOCK_MONOTONIC, SLICE_MS, &ts);
		pthread_mutex_lock(&r->mu);
		if (!r->done[A_SEND] && !r->done[A_RECV] && !r->done[A_ACK_RECV] && r->out.pipe == out_pipe)
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		pthread_mutex_unlock(&r->mu);
	}
	if (rc == GNN_OK)
		rc = check_records(r, &hs);
out:
	hello_end(r, &hs);
	return rc;
}
