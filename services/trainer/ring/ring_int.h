/* ring_int.h - the ring's internals, shared by its files (nothing outside
 * services/trainer/ring*.c includes this; the API is ring.h):
 *   ring_wire.h    the message header
 *   ring_plan.c    the geometry of an operation (pure)
 *   ring_engine.c  runs a plan over the two sockets: nng callbacks, sends,
 *                  receives, reductions, timeouts
 *   ring_hello.c   the handshake that forms (and re-forms) the ring
 *   ring.c         open, connect and the collectives
 *   ring_close.c   the goodbye protocol and closing the sockets
 *   ring_serve.c   a finished rank's stand-in
 *   ring_beat.c    the heartbeat: pings to the next rank, so that a silent
 *                  previous rank is told from a busy one */
#ifndef TR_RING_INT_H
#define TR_RING_INT_H

#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "ring.h"
#include "ring_plan.h"
#include "ring_wire.h"

#define MAX_WORLD 65536u
#define MAX_HOPS (2 * MAX_WORLD) /* handshake: a ring longer than this is broken */
#define SLICE_MS 100             /* how often a wait polls stop() and the clock */
#define WAIT_LOG_S 10.0          /* a waiting_for_peer line this often */
#define LOST_GRACE_S 1.0         /* a neighbour's pipe gone this long: fail early
				  * (nng redials after 100 ms: a blip is back by then) */
#define MAX_MISMATCH_LOGS 16
#define CLOSE_LOG_S 5.0          /* tr_ring_close logs its wait this often */

enum { A_SEND, A_RECV, A_ACK_SEND, A_ACK_RECV, A_COUNT };

/* What an aio's callback needs: the ring, and which of its aios it is. */
struct aio_arg {
	struct tr_ring *r;
	int which;
};

/* One neighbour link: its socket and whether its pipe is up (pipe
 * notifications, under ring->mu). */
struct side {
	struct tr_ring *r;
	const char *name;    /* "in" (from the previous rank) or "out" (to the next) */
	uint32_t peer;       /* the neighbour's rank */
	nng_socket sock;
	bool open;
	uint32_t pipe;       /* id of the connected pipe, 0 when none */
	bool lost;           /* a pipe that was up went away and none replaced it */
	double lost_at;
	double down_since;   /* out: since when no pipe is up (dialling began or pipe lost) */
};

struct tr_ring {
	uint32_t rank, world, prev, next;
	char **urls;                 /* [world], owned */
	const struct gnn_tls *tls;   /* borrowed; NULL: plain */
	char listen[256];
	int timeout_ms;
	double silence_s;            /* a waited-for previous rank silent this long is gone; 0: no heartbeat */
	bool (*stop)(void);
	uint64_t nonce, hash;
	uint64_t seq;                /* the next operation's number */
	bool connected;
	int failed;                  /* first failure's code: the ring is unusable */
	_Atomic uint64_t bytes;

	struct side in, out;
	nng_listener listener;
	nng_dialer dialer;
	/* A_SEND / A_RECV: the engine's send on out and receive on in;
	 * A_ACK_SEND / A_ACK_RECV: tr_ring_close's acknowledgement back on
	 * in and the next rank's on out (A_ACK_RECV also takes a finished
	 * next rank's answer during the handshake) */
	nng_aio *aio[A_COUNT];
	struct aio_arg aio_arg[A_COUNT];
	bool done[A_COUNT];          /* mu: completions not yet seen by the waiter */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool sync_ok;                /* mu and cv are initialised */
	bool closing;                /* mu: mutes pipe events during tr_ring_close */
	bool in_op;                  /* mu: an operation is running (log levels) */

	/* the heartbeat thread (ring_beat.c), with a lock of its own */
	pthread_t beat;
	pthread_mutex_t beat_mu;
	pthread_cond_t beat_cv;
	bool beat_sync_ok, beat_running, beat_stop;  /* beat_stop: beat_mu */

	struct gnn_counter *m_bytes, *m_errors;
	struct gnn_histogram *m_seconds;

	/* the result a finished next rank answered the handshake with */
	unsigned char peer_result[TR_RING_RESULT_MAX];
	size_t peer_result_len;
	uint32_t peer_result_from;
	bool other_run_logged;       /* a finished rank of another configuration: said once */
	struct tr_ring *next_abandoned;  /* ring_close.c's list of rings whose close hung */
};

static inline const char *url_of(const struct tr_ring *r, uint32_t rank)
{
	return r->urls != NULL && rank < r->world ? r->urls[rank] : "-";
}

static inline const char *yesno(bool b)
{
	return b ? "yes" : "no";
}

/* ring_engine.c */
void ring_aio_cb(void *arg);                                   /* an aio completed (nng thread) */
void ring_pipe_cb(nng_pipe pipe, nng_pipe_ev ev, void *arg);   /* a neighbour's pipe came or went */
void ring_redial(struct tr_ring *r);                           /* restarts the dialer of `out` */
void ring_drop_msg(nng_aio *aio);                              /* frees the message an aio holds */
/* Logs a header that is not the expected one; GNN_EPROTO. */
int ring_protocol_error(struct tr_ring *r, const struct hdr *got, const struct hdr *want);
/* Runs plan p until every message went out and came in. limit_s: the
 * longest time without a completed send or receive. */
int ring_run_plan(struct tr_ring *r, struct plan *p, double limit_s);

/* ring_beat.c: starts the thread that sends OP_PING to the next rank every
 * silence_s / 5 (no-op when world == 1 or silence_s == 0); GNN_ENOMEM or
 * GNN_EIO when it cannot. ring_beat_stop joins it (safe when not started). */
int ring_beat_start(struct tr_ring *r);
void ring_beat_stop(struct tr_ring *r);
/* true when m is a ping: m is then freed. Every receive on `in` asks this
 * first: a ping only says that the previous rank is alive. */
bool ring_take_ping(nng_msg *m);

/* ring_hello.c: forms the ring (GNN_EDONE: a finished next rank answered
 * with its result, kept in r). */
int ring_handshake(struct tr_ring *r, double wait_s);

#endif
