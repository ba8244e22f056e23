/* ring.h - the trainers' collective operations over nng (docs/training.md):
 * every rank r listens on its own URL and dials rank (r+1) mod T, forming
 * a ring; an all-reduce is a reduce-scatter then an all-gather around it
 * (2 (T-1)/T of the data sent and received per rank: bandwidth-optimal).
 *
 * Every operation is collective: all ranks call the same operations in the
 * same order. Each message carries the operation's sequence number, kind
 * and chunk, so a rank that is somewhere else (a peer restarted, a bug)
 * gives an error naming the peer instead of mixing data.
 *
 * Every wait is bounded: a send or receive that makes no progress for
 * timeout_ms fails with GNN_ETIMEDOUT, and while it waits the ring logs
 * every ~10 s what it waits for ("waiting_for_peer peer=trainer-1 url=...
 * op=allreduce seq=12 waited_s=10"). A failure logs the peer's name and
 * URL and returns the error; the ring is then unusable (close it).
 *
 * Errors of the operations below (besides GNN_EINVAL / GNN_ERANGE for bad
 * arguments, which leave the ring usable):
 *   GNN_ETIMEDOUT  no progress for timeout_ms (`peer_timeout peer=...`)
 *   GNN_EUNAVAIL   a neighbour's connection closed and did not come back
 *                  within min(1 s, timeout_ms): it died (`peer_lost peer=...`);
 *                  or the previous rank's stayed open but silent, not even
 *                  a heartbeat, for silence_s (`peer_silent peer=...`)
 *   GNN_EPROTO     a neighbour sent something else than this rank expects:
 *                  another operation, sequence number or size, or it
 *                  restarted or closed (`ring_protocol_error`, naming it)
 *   GNN_ECLOSED    stop() returned true while waiting (`ring_stopped`)
 *   GNN_EIO / GNN_ENOMEM  nng or memory failures
 * After one of these every later call returns the same code at once.
 * docs/allreduce.md has the algorithm, the message format and numbers. */
#ifndef TR_RING_H
#define TR_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "tls.h"

struct tr_ring_opts {
	uint32_t rank, world;       /* 0 <= rank < world */
	const char *listen;         /* this rank's nng URL: "tcp://0.0.0.0:7200" */
	const char *const *urls;    /* [world] every rank's URL as the others dial it
				     * (urls[rank] is not dialled; only (rank+1) mod world's is) */
	int timeout_ms;             /* longest wait without progress in an operation */
	/* The heartbeat: every rank pings the next one every silence_s / 5,
	 * and a rank waiting in an operation (or in the goodbye of
	 * tr_ring_close) for a previous rank that sent nothing at all, ping or
	 * data, for silence_s takes it for gone: GNN_EUNAVAIL, `peer_silent`.
	 * So a peer whose host vanished or was cut off without a reset is found
	 * in silence_s, not timeout_ms. 0: no heartbeat (a rank of an older
	 * build sees a ping as a protocol error). */
	double silence_s;
	struct gnn_metrics *metrics; /* borrowed, outlives the ring; may be NULL.
				      * Registers gnn_trainer_allreduce_bytes_total (sent + received),
				      * gnn_trainer_allreduce_seconds (histogram), gnn_trainer_ring_errors_total,
				      * or shares them if registered already; the first two count every
				      * collective (all-reduce, all-gather, broadcast), not the handshake */
	bool (*stop)(void);         /* polled while waiting: true aborts with GNN_ECLOSED; may be NULL */
	/* The ring's trust domain (tls.h): only trainers hold its
	 * certificates, so no data-plane peer can join. Borrowed, outlives the
	 * ring; NULL: plain TCP. */
	const struct gnn_tls *tls;
};

struct tr_ring;

/* Listens and starts dialling the next rank (non-blocking: peers need not
 * be up yet). GNN_EIO (logged) when the URL cannot be listened on,
 * GNN_EINVAL (logged) for bad options or a next rank's URL nng rejects.
 * world == 1 opens no socket and every operation is a local copy.
 * *out is the caller's: tr_ring_close. */
int tr_ring_open(const struct tr_ring_opts *o, struct tr_ring **out);

/* The start-up handshake: waits up to wait_s seconds until the ring is
 * closed (a token travels once around it), logging every ~10 s which
 * neighbour it still waits for, then checks that every rank reported the
 * same world size and the same config_hash (a digest of everything that
 * must agree: model shape, batch size, seeds, graph ID) and that the ranks
 * are distinct. GNN_OK, GNN_ETIMEDOUT (names the missing peer),
 * GNN_EINVAL (mismatch, logged with both values and the rank, on every rank
 * that sees it: a config_hash mismatch on every rank) or GNN_ECLOSED (stop
 * requested); GNN_EPROTO when a neighbour is already in later operations.
 * Operations on a ring of world > 1 before this succeeded: GNN_EINVAL. */
int tr_ring_connect(struct tr_ring *r, uint64_t config_hash, double wait_s);

/* data[n] := the element-wise sum of every rank's data[n]. Every rank ends
 * with bitwise identical values (each sum is computed once, on one rank, in
 * a fixed order, then copied around), so parameters updated from it stay
 * identical across ranks. n must be the same on every rank (every message
 * carries it: the neighbour of a rank with another n fails with GNN_EPROTO,
 * the rest of the ring then with a timeout). n == 0 and world == 1 are
 * no-ops. */
int tr_ring_allreduce(struct tr_ring *r, float *data, size_t n);

/* The same for doubles (evaluation counts, losses). */
int tr_ring_allreduce_f64(struct tr_ring *r, double *data, size_t n);

/* all[world * bytes] := every rank's mine[bytes], in rank order. */
int tr_ring_allgather(struct tr_ring *r, const void *mine, size_t bytes, void *all);

/* data[bytes] := root's data[bytes] on every rank. */
int tr_ring_broadcast(struct tr_ring *r, uint32_t root, void *data, size_t bytes);

/* tr_ring_connect returns GNN_EDONE when the next rank answered the
 * handshake with the result of a finished run of the same config_hash (it
 * serves it with tr_ring_serve_result) instead of joining: the run is
 * over. This copies that result (at most TR_RING_RESULT_MAX bytes, opaque
 * here) to buf[cap], its length to *len and the answering rank to *from.
 * GNN_EINVAL when the ring did not end that way or cap is too small. */
#define TR_RING_RESULT_MAX 256
int tr_ring_peer_result(const struct tr_ring *r, void *buf, size_t cap, size_t *len, uint32_t *from);

/* After the run, instead of a ring: listens on o->listen (world > 1) and
 * answers every rank that starts a handshake with config_hash and
 * result[len] (len <= TR_RING_RESULT_MAX, copied), so that a rank that
 * restarts after the run finished learns its result instead of waiting
 * for a ring that never forms. Logs each rank it answers (result_served).
 * GNN_EIO (logged) when the URL cannot be listened on. *out is the
 * caller's: tr_ring_serve_close (safe on NULL). */
struct tr_ring_server;
int tr_ring_serve_result(const struct tr_ring_opts *o, uint64_t config_hash, const void *result, size_t len,
			 struct tr_ring_server **out);
void tr_ring_serve_close(struct tr_ring_server *s);

/* GNN_OK while the ring is usable; after a failed operation the code that
 * made it unusable (every later call returns it; close the ring). */
int tr_ring_failure(const struct tr_ring *r);

/* Bytes this rank sent and received in collective operations so far
 * (headers included, the handshake not). Safe from any thread. */
uint64_t tr_ring_bytes(const struct tr_ring *r);

/* Closes the sockets and frees r. Safe on NULL. A connected, healthy ring
 * first makes sure its last messages arrived: nng reports a send done when
 * it has the message, not when the peer does, so the ring sends a goodbye
 * to the next rank and waits (up to timeout_ms, less if stop() is set or
 * that rank is gone) for its acknowledgement, while acknowledging the
 * previous rank's. So every rank should close its ring at the end, at about
 * the same time; a ring that failed closes at once. If nng_close itself
 * hangs (an nng 1.5.2 bug) it gives up after 5 s (once stop() is set, what
 * is left of the 2.5 s closing budget, within the stop watchdog's grace),
 * logs `close_stuck` and leaves the sockets and r allocated (reachable).
 * GNN_FAULT_RING_CLOSE_STUCK=1 in the environment makes every close act so
 * (a test's fault). */
/* false when nng could not close the sockets (its close deadlock): the
 * listener stays bound, so this process cannot form a ring again. */
bool tr_ring_close(struct tr_ring *r);

#endif
