/* ring.c - the trainers' ring collectives over nng (ring.h; the algorithm,
 * the message format and the failure behaviour are in docs/allreduce.md).
 *
 * Sockets. Each rank has two pair0 sockets: `in` listens and is dialled by
 * the previous rank, `out` dials the next rank. pair0 because a ring link is
 * exactly one peer to one peer: a pair0 socket refuses a second pipe while
 * one is connected, so a stray or duplicate process cannot interleave its
 * messages with the real neighbour's (PULL would fair-queue them), and its
 * messages arrive in order on the one pipe. Two sockets because a pair0
 * socket has one pipe, and rank r talks to two different neighbours.
 *
 * Engine. Every operation is a plan: a list of messages this rank sends to
 * the next and a list it receives from the previous one, where send k may
 * need some receives processed first (its data is what they reduced). One
 * send and one receive are in flight at a time (nng aios with callbacks); the
 * calling thread reduces or copies each received message while nng moves the
 * next one, and sleeps on a condition variable in 100 ms slices in between,
 * which is where it polls o->stop, logs what it waits for every 10 s, and
 * gives up after the no-progress limit. We keep the aios posted across slices
 * instead of using nng's per-operation timeouts, because a receive cancelled
 * by a timeout may lose a message that was being delivered. */
#include "ring.h"

#include <nng/nng.h>
#include <nng/protocol/pair0/pair.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

#define RING_MAGIC 0x31524e47u /* "GNR1" as little-endian bytes */
#define HDR_BYTES 56           /* keeps payloads 8-aligned within the message */
#define REC_BYTES 24           /* handshake record: rank, world, hash, nonce */
/* Segment size: large chunks travel as several messages so that the next
 * rank can forward segment j while segment j+1 is on the wire, and no
 * message is huge. Smaller segments cost more per byte (a wake-up per
 * message): on loopback 64 KiB took 2-2.5 times as long, 256 KiB 25-35%
 * longer, 1 and 4 MiB were alike (docs/allreduce.md). Every rank must use the same
 * value (headers check it). */
#ifndef TR_RING_SEGMENT_BYTES
#define TR_RING_SEGMENT_BYTES (1u << 20)
#endif
/* Larger than any message we send, so that a peer built with a larger
 * segment size gets a header mismatch naming it rather than a dropped pipe. */
#define MAX_MSG_BYTES ((size_t)64 << 20)
#define MAX_WORLD 65536u
#define MAX_HOPS (2 * MAX_WORLD) /* handshake: a ring longer than this is broken */
#define SLICE_MS 100             /* how often a wait polls stop() and the clock */
#define WAIT_LOG_S 10.0          /* a waiting_for_peer line this often */
#define LOST_GRACE_S 1.0         /* a neighbour's pipe gone this long: fail early
				  * (nng redials after 100 ms: a blip is back by then) */
#define MAX_MISMATCH_LOGS 16
#define CLOSE_LOG_S 5.0          /* tr_ring_close logs its wait this often */
#define CLOSE_STUCK_S 5          /* nng_close longer than this: give up on it */
#define CLOSE_STOPPING_S 2       /* ... when stopping: within the stop watchdog's
				  * GNN_STOP_GRACE_S, so the exit is ours and logged */

enum op {
	OP_HELLO = 1, OP_ALLREDUCE, OP_ALLREDUCE_F64, OP_ALLGATHER, OP_BROADCAST,
	OP_BYE, OP_BYE_ACK, /* tr_ring_close's flush */
	OP_FINISHED,        /* a finished rank's answer to a hello (tr_ring_serve_result) */
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"?", "hello", "allreduce", "allreduce_f64", "allgather", "broadcast", "bye", "bye_ack", "finished",
};

static const char *op_name(uint32_t kind)
{
	return kind > 0 && kind < OP_COUNT ? op_names[kind] : "unknown";
}

/* The message header, little-endian on the wire (HDR_BYTES):
 *  0 magic u32 | 4 kind u32 | 8 seq u64 | 16 from u32 | 20 step u32 |
 * 24 chunk u32 | 28 zero u32 | 32 off u64 | 40 len u64 | 48 total u64 */
struct hdr {
	uint32_t magic, kind;
	uint64_t seq;        /* operation number: 0 = handshake, then 1, 2, ... */
	uint32_t from;       /* the sender's rank */
	uint32_t step;       /* ring step (handshake: hop) */
	uint32_t chunk;      /* chunk / block index (handshake: originating rank) */
	uint64_t off, len;   /* payload: byte offset within the chunk, byte length */
	uint64_t total;      /* the operation's size in bytes (same on every rank) */
};

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void hdr_put(unsigned char *p, const struct hdr *h)
{
	put32(p, h->magic);
	put32(p + 4, h->kind);
	put64(p + 8, h->seq);
	put32(p + 16, h->from);
	put32(p + 20, h->step);
	put32(p + 24, h->chunk);
	put32(p + 28, 0);
	put64(p + 32, h->off);
	put64(p + 40, h->len);
	put64(p + 48, h->total);
}

static void hdr_get(const unsigned char *p, struct hdr *h)
{
	h->magic = get32(p);
	h->kind = get32(p + 4);
	h->seq = get64(p + 8);
	h->from = get32(p + 16);
	h->step = get32(p + 20);
	h->chunk = get32(p + 24);
	h->off = get64(p + 32);
	h->len = get64(p + 40);
	h->total = get64(p + 48);
}

struct tr_ring;

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
	char listen[256];
	int timeout_ms;
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

	struct gnn_counter *m_bytes, *m_errors;
	struct gnn_histogram *m_seconds;

	/* the result a finished next rank answered the handshake with */
	unsigned char peer_result[TR_RING_RESULT_MAX];
	size_t peer_result_len;
	uint32_t peer_result_from;
	bool other_run_logged;       /* a finished rank of another configuration: said once */
};

static int sync_init(pthread_mutex_t *mu, pthread_cond_t *cv);

/* ---- names ---- */

static const char *url_of(const struct tr_ring *r, uint32_t rank)
{
	return r->urls != NULL && rank < r->world ? r->urls[rank] : "-";
}

/* ---- the plan of one operation ---- */

struct rec {
	uint32_t rank, world;
	uint64_t hash, nonce;
};

struct plan {
	enum op kind;
	uint64_t seq;
	size_t nsend, nrecv;
	size_t first_dep;    /* send k >= first_dep needs k - first_dep + 1 receives done */
	unsigned char *buf;  /* the caller's data (all[] for allgather) */
	size_t elem;         /* 4 or 8 for the reductions, 1 otherwise */
	size_t n;            /* elements (reductions) or bytes per rank / in total */
	size_t J;            /* messages (segments) per chunk and step */
	size_t seg;          /* segment size in elements */
	uint32_t root;       /* broadcast */
	nng_msg **fwd;       /* [nsend]: received messages waiting to be forwarded */
};

static size_t needs(const struct plan *p, size_t k)
{
	return k >= p->first_dep ? k - p->first_dep + 1 : 0;
}

static size_t ceil_div(size_t a, size_t b)
{
	return a / b + (a % b != 0);
}

/* Where message k of sender `from` goes: header fields, the byte offset of
 * its payload in the buffer, and whether the receiver adds (reduce-scatter)
 * or copies it. The sender and the receiver compute the same thing, so the
 * receiver checks every field against it. */
static void geom(const struct tr_ring *r, const struct plan *p, uint32_t from, size_t k,
		 struct hdr *h, size_t *buf_off, bool *add)
{
	uint32_t T = r->world;
	size_t s = k / p->J, j = k % p->J, c, c0, clen, e0, elen;

	*add = false;
	switch (p->kind) {
	case OP_ALLREDUCE:
	case OP_ALLREDUCE_F64:
		/* reduce-scatter steps 0..T-2 send chunk from-s, all-gather steps
		 * T-1..2T-3 send chunk from+1-t, t = s-(T-1) */
		if (s < T - 1) {
			c = (from + 2 * (size_t)T - s) % T;
			*add = true;
		} else {
			c = (from + 1 + (size_t)T - (s - (T - 1))) % T;
		}
		/* chunk c: n/T elements, the first n%T chunks one more */
		c0 = c * (p->n / T) + (c < p->n % T ? c : p->n % T);
		clen = p->n / T + (c < p->n % T);
		e0 = j * p->seg < clen ? j * p->seg : clen;
		elen = clen - e0 < p->seg ? clen - e0 : p->seg;
		h->off = e0 * p->elem;
		h->len = elen * p->elem;
		*buf_off = (c0 + e0) * p->elem;
		break;
	case OP_ALLGATHER:
		c = (from + (size_t)T - s) % T;
		e0 = j * p->seg < p->n ? j * p->seg : p->n;
		elen = p->n - e0 < p->seg ? p->n - e0 : p->seg;
		h->off = e0;
		h->len = elen;
		*buf_off = c * p->n + e0;
		break;
	default: /* OP_BROADCAST: one chunk; step = the sender's distance from root */
		c = 0;
		s = (from + (size_t)T - p->root) % T;
		e0 = k * p->seg < p->n ? k * p->seg : p->n;
		elen = p->n - e0 < p->seg ? p->n - e0 : p->seg;
		h->off = e0;
		h->len = elen;
		*buf_off = e0;
		break;
	}
	h->step = (uint32_t)s;
	h->chunk = (uint32_t)c;
	h->total = p->kind == OP_ALLREDUCE || p->kind == OP_ALLREDUCE_F64 ? p->n * p->elem : p->n;
}

/* ---- nng callbacks (nng threads) ---- */

/* An aio completed: flag it and wake the waiting thread. */
static void aio_cb(void *arg)
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
static void pipe_cb(nng_pipe pipe, nng_pipe_ev ev, void *arg)
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
static void redial(struct tr_ring *r)
{
	if (gnn_redial(r->out.sock, r->urls[r->next], &r->dialer) != GNN_OK)
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

	geom(r, p, r->rank, k, &h, &off, &add);
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

static int protocol_error(struct tr_ring *r, const struct hdr *got, const struct hdr *want)
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

/* The send that forwards received message k, or SIZE_MAX when it is not
 * forwarded (the last step, the end of a broadcast). */
static size_t forward_index(const struct tr_ring *r, const struct plan *p, size_t k)
{
	size_t s = k / p->J;

	switch (p->kind) {
	case OP_ALLREDUCE:
	case OP_ALLREDUCE_F64:
		return s + 1 < 2 * (size_t)(r->world - 1) ? k + p->J : SIZE_MAX;
	case OP_ALLGATHER:
		return s + 1 < r->world - 1 ? k + p->J : SIZE_MAX;
	case OP_BROADCAST:
		return p->nsend > 0 ? k : SIZE_MAX;
	default:
		return SIZE_MAX;
	}
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
	geom(r, p, r->prev, k, &want, &off, &add);
	if (h.kind != want.kind || h.seq != want.seq || h.from != want.from || h.step != want.step ||
	    h.chunk != want.chunk || h.off != want.off || h.len != want.len || h.total != want.total)
		return protocol_error(r, &h, &want);
	if (add && p->elem == sizeof(float))
		add_f32(payload, (const float *)(const void *)(p->buf + off), h.len / sizeof(float));
	else if (add)
		add_f64(payload, (const double *)(const void *)(p->buf + off), h.len / sizeof(double));
	/* a partial sum that goes on to the next rank need not be stored */
	if (h.len > 0 && (!add || k / p->J == r->world - 2))
		memcpy(p->buf + off, payload, h.len);
	if ((k = forward_index(r, p, k)) != SIZE_MAX) {
		p->fwd[k] = m;
		*kept = true;
	}
	return GNN_OK;
}

/* Frees the message an aio holds (a received one, or a send that failed). */
static void drop_msg(nng_aio *aio)
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

static const char *yesno(bool b)
{
	return b ? "yes" : "no";
}

/* A message went out or came in: the no-progress clock restarts. */
static void progress(double *last, double *next_log)
{
	*last = gnn_now();
	*next_log = WAIT_LOG_S;
}

/* Runs plan p until every message went out and came in. limit_s: the
 * longest time without a completed send or receive. */
static int run_plan(struct tr_ring *r, struct plan *p, double limit_s)
{
	size_t posted_send = 0, done_send = 0, posted_recv = 0, done_recv = 0, send_len = 0;
	bool send_busy = false, recv_busy = false;
	double last = gnn_now(), next_log = WAIT_LOG_S;
	double grace = limit_s < LOST_GRACE_S ? limit_s : LOST_GRACE_S;
	int rc = GNN_OK;

	if (p->nsend > 0 && (p->fwd = calloc(p->nsend, sizeof(*p->fwd))) == NULL)
		return GNN_ENOMEM;
	pthread_mutex_lock(&r->mu);
	r->in_op = true;
	pthread_mutex_unlock(&r->mu);
	for (;;) {
		bool sdone, rdone, in_up, out_up, in_lost, out_lost;
		double now, waited, in_lost_at, out_lost_at;
		struct timespec ts;

		if (!recv_busy && posted_recv < p->nrecv) {
			nng_recv_aio(r->in.sock, r->aio[A_RECV]);
			recv_busy = true;
			posted_recv++;
		}
		if (!send_busy && posted_send < p->nsend && done_recv >= needs(p, posted_send)) {
			if ((rc = post_send(r, p, posted_send, &send_len)) != GNN_OK)
				break;
			send_busy = true;
			posted_send++;
		}
		if (done_send >= p->nsend && done_recv >= p->nrecv)
			break;

		gnn_deadline(CLOCK_MONOTONIC, SLICE_MS, &ts);
		pthread_mutex_lock(&r->mu);
		/* one wait: a pipe event, a timeout or a spurious wake-up all just
		 * go round the loop again */
		if (!r->done[A_SEND] && !r->done[A_RECV])
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		sdone = r->done[A_SEND];
		rdone = r->done[A_RECV];
		r->done[A_SEND] = r->done[A_RECV] = false;
		in_up = r->in.pipe != 0;
		out_up = r->out.pipe != 0;
		in_lost = r->in.lost;
		out_lost = r->out.lost;
		in_lost_at = r->in.lost_at;
		out_lost_at = r->out.lost_at;
		pthread_mutex_unlock(&r->mu);

		if (rdone) {
			int rv = nng_aio_result(r->aio[A_RECV]);
			nng_msg *m;
			bool kept;

			recv_busy = false;
			if (rv != 0) {
				GNN_ERROR("ring_io_error", "peer=trainer-%u url=%s op=%s seq=%llu dir=recv "
					  "error=\"%s\"", r->prev, url_of(r, r->prev), op_name(p->kind),
					  (unsigned long long)p->seq, nng_strerror(rv));
				rc = GNN_EIO;
				break;
			}
			m = nng_aio_get_msg(r->aio[A_RECV]);
			nng_aio_set_msg(r->aio[A_RECV], NULL);
			count_bytes(r, nng_msg_len(m));
			/* the next receive goes first so nng reads on while we reduce */
			if (posted_recv < p->nrecv) {
				nng_recv_aio(r->in.sock, r->aio[A_RECV]);
				recv_busy = true;
				posted_recv++;
			}
			rc = take(r, p, done_recv, m, &kept);
			if (!kept)
				nng_msg_free(m);
			if (rc != GNN_OK)
				break;
			done_recv++;
			progress(&last, &next_log);
		}
		if (sdone) {
			int rv = nng_aio_result(r->aio[A_SEND]);

			send_busy = false;
			if (rv != 0) {
				drop_msg(r->aio[A_SEND]);
				GNN_ERROR("ring_io_error", "peer=trainer-%u url=%s op=%s seq=%llu dir=send "
					  "error=\"%s\"", r->next, url_of(r, r->next), op_name(p->kind),
					  (unsigned long long)p->seq, nng_strerror(rv));
				rc = GNN_EIO;
				break;
			}
			count_bytes(r, send_len);
			done_send++;
			progress(&last, &next_log);
		}
		if (r->stop != NULL && r->stop()) {
			GNN_WARN("ring_stopped", "op=%s seq=%llu", op_name(p->kind), (unsigned long long)p->seq);
			rc = GNN_ECLOSED;
			break;
		}
		if (rdone || sdone)
			continue;

		now = gnn_now();
		waited = now - last;
		/* a neighbour whose connection went away and has not come back */
		if ((in_lost && !in_up && now - in_lost_at >= grace) || (out_lost && !out_up && now - out_lost_at >= grace)) {
			bool in = in_lost && !in_up && now - in_lost_at >= grace;
			uint32_t peer = in ? r->prev : r->next;

			GNN_ERROR("peer_lost", "peer=trainer-%u url=%s side=%s op=%s seq=%llu down_s=%.1f "
				  "received=%zu/%zu sent=%zu/%zu error=\"the connection to peer trainer-%u "
				  "(%s) closed and has not come back: did it exit?\"", peer, url_of(r, peer),
				  in ? "in" : "out", op_name(p->kind), (unsigned long long)p->seq,
				  now - (in ? in_lost_at : out_lost_at), done_recv, p->nrecv, done_send,
				  p->nsend, peer, url_of(r, peer));
			rc = GNN_EUNAVAIL;
			break;
		}
		if (waited >= limit_s) {
			/* blame the side that is not even connected, else the receive */
			char progress_text[96];
			bool in;
			uint32_t peer;

			if (recv_busy && !in_up)
				in = true;
			else if (send_busy && !out_up)
				in = false;
			else
				in = recv_busy;
			peer = in ? r->prev : r->next;
			snprintf(progress_text, sizeof(progress_text), "received=%zu/%zu sent=%zu/%zu", done_recv,
				 p->nrecv, done_send, p->nsend);
			GNN_ERROR("peer_timeout", "peer=trainer-%u url=%s op=%s seq=%llu waited_s=%.1f "
				  "connected=%s %s", peer, url_of(r, peer), op_name(p->kind),
				  (unsigned long long)p->seq, waited, yesno(in ? in_up : out_up), progress_text);
			rc = GNN_ETIMEDOUT;
			break;
		}
		if (waited >= next_log) {
			enum gnn_log_level lvl = GNN_LOG_WARN;

			if (recv_busy)
				GNN_LOG(lvl, "waiting_for_peer", "peer=trainer-%u url=%s op=%s seq=%llu "
					"waited_s=%.0f dir=recv connected=%s", r->prev, url_of(r, r->prev),
					op_name(p->kind), (unsigned long long)p->seq, waited, yesno(in_up));
			if (send_busy)
				GNN_LOG(lvl, "waiting_for_peer", "peer=trainer-%u url=%s op=%s seq=%llu "
					"waited_s=%.0f dir=send connected=%s", r->next, url_of(r, r->next),
					op_name(p->kind), (unsigned long long)p->seq, waited, yesno(out_up));
			next_log += WAIT_LOG_S;
		}
	}

	if (rc != GNN_OK) {
		/* a cancelled aio may still complete: free whatever it holds */
		if (recv_busy) {
			nng_aio_cancel(r->aio[A_RECV]);
			nng_aio_wait(r->aio[A_RECV]);
			if (nng_aio_result(r->aio[A_RECV]) == 0)
				drop_msg(r->aio[A_RECV]);
		}
		if (send_busy) {
			nng_aio_cancel(r->aio[A_SEND]);
			nng_aio_wait(r->aio[A_SEND]);
			if (nng_aio_result(r->aio[A_SEND]) != 0)
				drop_msg(r->aio[A_SEND]);
			nng_aio_set_msg(r->aio[A_SEND], NULL);
		}
		pthread_mutex_lock(&r->mu);
		r->done[A_SEND] = r->done[A_RECV] = false;
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_lock(&r->mu);
	r->in_op = false;
	pthread_mutex_unlock(&r->mu);
	if (p->fwd != NULL) {
		/* messages a failure left unsent */
		for (size_t k = 0; k < p->nsend; k++)
			if (p->fwd[k] != NULL)
				nng_msg_free(p->fwd[k]);
		free(p->fwd);
		p->fwd = NULL;
	}
	return rc;
}

/* ---- operations ---- */

/* Marks the ring unusable after a failure inside an operation. */
static int fail(struct tr_ring *r, int rc)
{
	if (r->failed == GNN_OK)
		r->failed = rc;
	if (r->m_errors != NULL)
		gnn_counter_inc(r->m_errors);
	return rc;
}

static int op_begin(struct tr_ring *r, enum op kind)
{
	if (r->failed != GNN_OK) {
		GNN_ERROR("ring_unusable", "op=%s error=\"an earlier operation failed (%s): close the "
			  "ring\"", op_name(kind), gnn_errname(r->failed));
		return r->failed;
	}
	if (!r->connected && r->world > 1) {
		GNN_ERROR("ring_not_connected", "op=%s error=\"tr_ring_connect has not succeeded\"",
			  op_name(kind));
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* A successful collective's duration. */
static void observe(struct tr_ring *r, double t0)
{
	if (r->m_seconds != NULL)
		gnn_histogram_observe(r->m_seconds, gnn_now() - t0);
}

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
		return protocol_error(r, &h, &(struct hdr){ .magic = RING_MAGIC, .kind = OP_HELLO, .from = r->prev,
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
			drop_msg(r->aio[A_SEND]);
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
		rc = hello_take(r, hs, m);
		nng_msg_free(m);
		if (rc != GNN_OK)
			return rc;
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

static int handshake(struct tr_ring *r, double wait_s)
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
			redial(r);
		gnn_deadline(CLOCK_MONOTONIC, SLICE_MS, &ts);
		pthread_mutex_lock(&r->mu);
		if (!r->done[A_SEND] && !r->done[A_RECV] && !r->done[A_ACK_RECV] && r->out.pipe == out_pipe)
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		pthread_mutex_unlock(&r->mu);
	}
	if (rc == GNN_OK)
		rc = check_records(r, &hs);
out:
	/* a failed handshake leaves the ring unusable: stop its aios */
	if (hs.recv_busy) {
		nng_aio_cancel(r->aio[A_RECV]);
		nng_aio_wait(r->aio[A_RECV]);
		if (nng_aio_result(r->aio[A_RECV]) == 0)
			drop_msg(r->aio[A_RECV]);
	}
	if (hs.send_busy) {
		nng_aio_cancel(r->aio[A_SEND]);
		nng_aio_wait(r->aio[A_SEND]);
		if (nng_aio_result(r->aio[A_SEND]) != 0)
			drop_msg(r->aio[A_SEND]);
	}
	/* whatever the outcome: nothing else comes back on `out` until close */
	if (hs.fin_busy) {
		nng_aio_cancel(r->aio[A_ACK_RECV]);
		nng_aio_wait(r->aio[A_ACK_RECV]);
		if (nng_aio_result(r->aio[A_ACK_RECV]) == 0)
			drop_msg(r->aio[A_ACK_RECV]);
	}
	pthread_mutex_lock(&r->mu);
	r->done[A_SEND] = r->done[A_RECV] = r->done[A_ACK_RECV] = false;
	pthread_mutex_unlock(&r->mu);
	free(hs.latest);
	free(hs.hops);
	free(hs.have);
	free(hs.q);
	return rc;
}

int tr_ring_connect(struct tr_ring *r, uint64_t config_hash, double wait_s)
{
	double t0 = gnn_now();
	int rc;

	if (r == NULL || !(wait_s > 0))
		return GNN_EINVAL;
	if (r->failed != GNN_OK)
		return op_begin(r, OP_HELLO);
	if (r->connected) {
		GNN_ERROR("ring_already_connected", "rank=%u", r->rank);
		return GNN_EINVAL;
	}
	r->hash = config_hash;
	if (r->world > 1 && (rc = handshake(r, wait_s)) != GNN_OK) {
		if (rc == GNN_EDONE) {
			GNN_INFO("ring_peer_finished", "peer=trainer-%u url=%s waited_s=%.2f reason=\"the run is "
				 "finished: the peer answered with its result\"", r->peer_result_from,
				 url_of(r, r->peer_result_from), gnn_now() - t0);
			r->failed = GNN_EDONE;  /* no collective runs on this ring */
			return rc;
		}
		if (rc == GNN_EINVAL)
			GNN_ERROR("ring_connect_failed", "rank=%u world=%u error=\"the trainers do not agree on their "
				  "configuration (ring_mismatch above)\"", r->rank, r->world);
		return fail(r, rc);
	}
	r->connected = true;
	r->seq = 1;
	GNN_INFO("ring_connected", "rank=%u world=%u config_hash=0x%016llx waited_s=%.2f", r->rank,
		 r->world, (unsigned long long)config_hash, gnn_now() - t0);
	return GNN_OK;
}

static int allreduce(struct tr_ring *r, void *data, size_t n, size_t elem, enum op kind)
{
	struct plan p = { .kind = kind, .buf = data, .elem = elem, .n = n };
	double t0 = gnn_now();
	uint32_t T;
	int rc;

	if (r == NULL || (n > 0 && data == NULL))
		return GNN_EINVAL;
	if (n > SIZE_MAX / elem / 4)
		return GNN_ERANGE;
	if ((rc = op_begin(r, kind)) != GNN_OK)
		return rc;
	T = r->world;
	if (T > 1)
		p.seq = r->seq++;
	if (T > 1 && n > 0) {
		p.seg = TR_RING_SEGMENT_BYTES / elem;
		p.J = ceil_div(ceil_div(n, T), p.seg);
		p.nsend = p.nrecv = 2 * (size_t)(T - 1) * p.J;
		p.first_dep = p.J;
		if ((rc = run_plan(r, &p, r->timeout_ms / 1000.0)) != GNN_OK)
			return fail(r, rc);
	}
	observe(r, t0);
	return GNN_OK;
}

int tr_ring_allreduce(struct tr_ring *r, float *data, size_t n)
{
	return allreduce(r, data, n, sizeof(float), OP_ALLREDUCE);
}

int tr_ring_allreduce_f64(struct tr_ring *r, double *data, size_t n)
{
	return allreduce(r, data, n, sizeof(double), OP_ALLREDUCE_F64);
}

int tr_ring_allgather(struct tr_ring *r, const void *mine, size_t bytes, void *all)
{
	struct plan p = { .kind = OP_ALLGATHER, .buf = all, .elem = 1, .n = bytes,
			  .seg = TR_RING_SEGMENT_BYTES };
	double t0 = gnn_now();
	uint32_t T;
	int rc;

	if (r == NULL || (bytes > 0 && (mine == NULL || all == NULL)))
		return GNN_EINVAL;
	if (bytes > SIZE_MAX / 4 / r->world)
		return GNN_ERANGE;
	if ((rc = op_begin(r, OP_ALLGATHER)) != GNN_OK)
		return rc;
	T = r->world;
	if (T > 1)
		p.seq = r->seq++;
	if (bytes > 0 && (const unsigned char *)mine != p.buf + (size_t)r->rank * bytes)
		memmove(p.buf + (size_t)r->rank * bytes, mine, bytes);
	if (T > 1 && bytes > 0) {
		p.J = ceil_div(bytes, p.seg);
		p.nsend = p.nrecv = (size_t)(T - 1) * p.J;
		p.first_dep = p.J;
		if ((rc = run_plan(r, &p, r->timeout_ms / 1000.0)) != GNN_OK)
			return fail(r, rc);
	}
	observe(r, t0);
	return GNN_OK;
}

int tr_ring_broadcast(struct tr_ring *r, uint32_t root, void *data, size_t bytes)
{
	struct plan p = { .kind = OP_BROADCAST, .buf = data, .elem = 1, .n = bytes, .root = root,
			  .seg = TR_RING_SEGMENT_BYTES };
	double t0 = gnn_now();
	uint32_t T, pos;
	int rc;

	if (r == NULL || (bytes > 0 && data == NULL) || root >= r->world)
		return GNN_EINVAL;
	if (bytes > SIZE_MAX / 4)
		return GNN_ERANGE;
	if ((rc = op_begin(r, OP_BROADCAST)) != GNN_OK)
		return rc;
	T = r->world;
	if (T > 1)
		p.seq = r->seq++;
	if (T > 1 && bytes > 0) {
		/* a pipelined pass root -> root+1 -> ... -> root-1 */
		pos = (r->rank + T - root) % T;
		p.J = ceil_div(bytes, p.seg);
		p.nsend = pos == T - 1 ? 0 : p.J;
		p.nrecv = pos == 0 ? 0 : p.J;
		p.first_dep = pos == 0 ? SIZE_MAX : 0;
		if ((rc = run_plan(r, &p, r->timeout_ms / 1000.0)) != GNN_OK)
			return fail(r, rc);
	}
	observe(r, t0);
	return GNN_OK;
}

int tr_ring_failure(const struct tr_ring *r)
{
	return r->failed;
}

uint64_t tr_ring_bytes(const struct tr_ring *r)
{
	return r != NULL ? atomic_load(&((struct tr_ring *)r)->bytes) : 0;
}

/* ---- open / close ---- */

int tr_ring_peer_result(const struct tr_ring *r, void *buf, size_t cap, size_t *len, uint32_t *from)
{
	if (r == NULL || r->failed != GNN_EDONE || cap < r->peer_result_len)
		return GNN_EINVAL;
	memcpy(buf, r->peer_result, r->peer_result_len);
	*len = r->peer_result_len;
	*from = r->peer_result_from;
	return GNN_OK;
}

static int counter(struct gnn_metrics *reg, const char *name, const char *help,
		   struct gnn_counter **out)
{
	int rc = gnn_metrics_find_counter(reg, name, out);

	return rc == GNN_ENOENT ? gnn_metrics_counter(reg, name, help, NULL, 0, out) : rc;
}

static int register_metrics(struct tr_ring *r, struct gnn_metrics *reg)
{
	double bounds[20];
	int rc;

	if (reg == NULL)
		return GNN_OK;
	if ((rc = counter(reg, "gnn_trainer_allreduce_bytes_total",
			  "Bytes this trainer sent plus received in ring collectives (all-reduce, "
			  "all-gather, broadcast; headers included).",
			  &r->m_bytes)) != GNN_OK ||
	    (rc = counter(reg, "gnn_trainer_ring_errors_total",
			  "Ring collective operations (handshake included) that failed: timeout, lost "
			  "peer, protocol or configuration mismatch, stop.", &r->m_errors)) != GNN_OK)
		return rc;
	rc = gnn_metrics_find_histogram(reg, "gnn_trainer_allreduce_seconds", &r->m_seconds);
	if (rc == GNN_ENOENT) {
		/* 100 us .. 52 s */
		gnn_metrics_exp_buckets(1e-4, 2.0, 20, bounds);
		rc = gnn_metrics_histogram(reg, "gnn_trainer_allreduce_seconds",
					   "Duration of one successful ring collective (all-reduce, all-gather, "
					   "broadcast).", NULL, 0, bounds, 20,
					   &r->m_seconds);
	}
	return rc;
}

static uint64_t make_nonce(const struct tr_ring *r)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
		    (uint64_t)(uintptr_t)r;
	}
	return v;
}

static int open_side(struct side *s)
{
	int rv;

	if ((rv = nng_pair0_open(&s->sock)) != 0)
		return rv;
	s->open = true;
	if ((rv = nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, MAX_MSG_BYTES + HDR_BYTES)) != 0 ||
	    (rv = nng_socket_set_ms(s->sock, NNG_OPT_RECONNMINT, 100)) != 0 ||
	    (rv = nng_socket_set_ms(s->sock, NNG_OPT_RECONNMAXT, 1000)) != 0 ||
	    (rv = nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_POST, pipe_cb, s)) != 0 ||
	    (rv = nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, pipe_cb, s)) != 0)
		return rv;
	return 0;
}

int tr_ring_open(const struct tr_ring_opts *o, struct tr_ring **out)
{
	struct tr_ring *r;
	int rc = GNN_ENOMEM, rv;

	if (o == NULL || out == NULL || o->world == 0 || o->world > MAX_WORLD || o->rank >= o->world ||
	    o->timeout_ms <= 0) {
		GNN_ERROR("ring_bad_options", "rank=%u world=%u timeout_ms=%d", o ? o->rank : 0,
			  o ? o->world : 0, o ? o->timeout_ms : 0);
		return GNN_EINVAL;
	}
	if (o->world > 1) {
		bool ok = o->listen != NULL && strlen(o->listen) < sizeof(r->listen) && o->urls != NULL;

		for (uint32_t i = 0; ok && i < o->world; i++)
			ok = o->urls[i] != NULL && o->urls[i][0] != '\0';
		if (!ok) {
			GNN_ERROR("ring_bad_options", "rank=%u world=%u error=\"a listen URL and one URL "
				  "per rank are required\"", o->rank, o->world);
			return GNN_EINVAL;
		}
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return GNN_ENOMEM;
	r->rank = o->rank;
	r->world = o->world;
	r->prev = (o->rank + o->world - 1) % o->world;
	r->next = (o->rank + 1) % o->world;
	r->timeout_ms = o->timeout_ms;
	r->stop = o->stop;
	r->in = (struct side){ .r = r, .name = "in", .peer = r->prev };
	r->out = (struct side){ .r = r, .name = "out", .peer = r->next };
	r->nonce = make_nonce(r);
	atomic_init(&r->bytes, 0);
	if (sync_init(&r->mu, &r->cv) != 0)
		goto out_close;
	r->sync_ok = true;
	if ((rc = register_metrics(r, o->metrics)) != GNN_OK)
		goto out_close;
	if (o->world == 1) {
		GNN_INFO("ring_open", "rank=0 world=1 sockets=none");
		*out = r;
		return GNN_OK;
	}

	rc = GNN_ENOMEM;
	snprintf(r->listen, sizeof(r->listen), "%s", o->listen);
	if ((r->urls = calloc(o->world, sizeof(*r->urls))) == NULL)
		goto out_close;
	for (uint32_t i = 0; i < o->world; i++)
		if ((r->urls[i] = strdup(o->urls[i])) == NULL)
			goto out_close;
	for (int i = 0; i < A_COUNT; i++) {
		r->aio_arg[i] = (struct aio_arg){ .r = r, .which = i };
		if (nng_aio_alloc(&r->aio[i], aio_cb, &r->aio_arg[i]) != 0)
			goto out_close;
	}
	rc = GNN_EIO;
	if ((rv = open_side(&r->in)) != 0 || (rv = open_side(&r->out)) != 0) {
		GNN_ERROR("ring_socket_failed", "error=\"%s\"", nng_strerror(rv));
		goto out_close;
	}
	if ((rv = nng_listen(r->in.sock, r->listen, &r->listener, 0)) != 0) {
		GNN_ERROR("ring_listen_failed", "url=%s error=\"%s\"", r->listen, nng_strerror(rv));
		goto out_close;
	}
	/* non-blocking: the next rank may start later; nng redials every
	 * 100 ms .. 1 s until it is there */
	if ((rv = nng_dial(r->out.sock, r->urls[r->next], &r->dialer, NNG_FLAG_NONBLOCK)) != 0) {
		GNN_ERROR("ring_dial_failed", "peer=trainer-%u url=%s error=\"%s\"", r->next,
			  r->urls[r->next], nng_strerror(rv));
		rc = GNN_EINVAL;
		goto out_close;
	}
	r->out.down_since = gnn_now();
	GNN_INFO("ring_open", "rank=%u world=%u listen=%s next=trainer-%u next_url=%s prev=trainer-%u "
		 "timeout_ms=%d segment_bytes=%u", r->rank, r->world, r->listen, r->next, r->urls[r->next],
		 r->prev, r->timeout_ms, (unsigned)TR_RING_SEGMENT_BYTES);
	*out = r;
	return GNN_OK;

out_close:
	tr_ring_close(r);
	return rc;
}

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
static void flush(struct tr_ring *r)
{
	bool bye_busy, in_busy, ack_busy = false, out_busy, next_done = false, prev_done = false;
	double t0 = gnn_now(), next_log = CLOSE_LOG_S, limit = r->timeout_ms / 1000.0;
	uint32_t kind;

	if (post_ctl(r, r->out.sock, r->aio[A_SEND], OP_BYE) != GNN_OK)
		return;
	bye_busy = true;
	nng_recv_aio(r->in.sock, r->aio[A_RECV]);
	in_busy = true;
	nng_recv_aio(r->out.sock, r->aio[A_ACK_RECV]);
	out_busy = true;
	while (!next_done || !prev_done) {
		bool sd, rd, asd, ard, in_down, out_down;
		double waited;
		struct timespec ts;

		gnn_deadline(CLOCK_MONOTONIC, SLICE_MS, &ts);
		pthread_mutex_lock(&r->mu);
		if (!r->done[A_SEND] && !r->done[A_RECV] && !r->done[A_ACK_SEND] && !r->done[A_ACK_RECV])
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		sd = r->done[A_SEND];
		rd = r->done[A_RECV];
		asd = r->done[A_ACK_SEND];
		ard = r->done[A_ACK_RECV];
		memset(r->done, 0, sizeof(r->done));
		in_down = r->in.lost && r->in.pipe == 0;
		out_down = r->out.lost && r->out.pipe == 0;
		pthread_mutex_unlock(&r->mu);

		if (sd) {
			bye_busy = false;
			if (nng_aio_result(r->aio[A_SEND]) != 0) {
				drop_msg(r->aio[A_SEND]);
				next_done = true;
			}
		}
		if (rd) {
			in_busy = false;
			kind = nng_aio_result(r->aio[A_RECV]) == 0 ? ctl_kind(r->aio[A_RECV]) : 0;
			if (kind == OP_BYE && post_ctl(r, r->in.sock, r->aio[A_ACK_SEND], OP_BYE_ACK) == GNN_OK) {
				ack_busy = true;
			} else {
				if (kind != 0)
					GNN_WARN("ring_close_unexpected", "peer=trainer-%u url=%s op=%s error=\"it "
						 "sent more than this rank received: did it run more operations?\"",
						 r->prev, url_of(r, r->prev), op_name(kind));
				prev_done = true;
			}
		}
		if (asd) {
			ack_busy = false;
			if (nng_aio_result(r->aio[A_ACK_SEND]) != 0)
				drop_msg(r->aio[A_ACK_SEND]);
			prev_done = true;
		}
		if (ard) {
			out_busy = false;
			next_done = true;
			kind = nng_aio_result(r->aio[A_ACK_RECV]) == 0 ? ctl_kind(r->aio[A_ACK_RECV]) : 0;
			if (kind != 0 && kind != OP_BYE_ACK)
				GNN_WARN("ring_close_unexpected", "peer=trainer-%u url=%s op=%s", r->next,
					 url_of(r, r->next), op_name(kind));
		}
		/* a neighbour that is gone needs nothing more from us */
		if (out_down)
			next_done = true;
		if (in_down && !ack_busy)
			prev_done = true;
		if (next_done && prev_done)
			break;
		waited = gnn_now() - t0;
		if (r->stop != NULL && r->stop())
			break;
		if (waited >= limit) {
			GNN_WARN("ring_close_timeout", "peer=trainer-%u url=%s waited_s=%.1f acknowledged=%s "
				 "error=\"closing without knowing that the next rank has all our data\"",
				 r->next, url_of(r, r->next), waited, yesno(next_done));
			break;
		}
		if (waited >= next_log) {
			if (!next_done)
				GNN_INFO("waiting_for_peer", "peer=trainer-%u url=%s op=bye waited_s=%.0f "
					 "dir=recv", r->next, url_of(r, r->next), waited);
			if (!prev_done)
				GNN_INFO("waiting_for_peer", "peer=trainer-%u url=%s op=bye waited_s=%.0f "
					 "dir=recv", r->prev, url_of(r, r->prev), waited);
			next_log += CLOSE_LOG_S;
		}
	}
	/* whatever is still pending: cancel, then free what it holds (a send
	 * that failed still holds its message, a receive that succeeded too) */
	{
		nng_aio *a[4] = { r->aio[A_SEND], r->aio[A_ACK_SEND], r->aio[A_RECV], r->aio[A_ACK_RECV] };
		bool busy[4] = { bye_busy, ack_busy, in_busy, out_busy };

		for (int i = 0; i < 4; i++) {
			if (!busy[i])
				continue;
			nng_aio_cancel(a[i]);
			nng_aio_wait(a[i]);
			if ((i < 2) == (nng_aio_result(a[i]) != 0))
				drop_msg(a[i]);
			nng_aio_set_msg(a[i], NULL);
		}
	}
	pthread_mutex_lock(&r->mu);
	memset(r->done, 0, sizeof(r->done));
	pthread_mutex_unlock(&r->mu);
}

/* A mutex and a condition variable on the monotonic clock; 0 or -1. */
static int sync_init(pthread_mutex_t *mu, pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rv;

	if (pthread_mutex_init(mu, NULL) != 0)
		return -1;
	if (pthread_condattr_init(&ca) != 0) {
		pthread_mutex_destroy(mu);
		return -1;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rv = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rv != 0) {
		pthread_mutex_destroy(mu);
		return -1;
	}
	return 0;
}

/* nng_close on a thread of its own, so that tr_ring_close returns even if
 * it never does: nng 1.5.2 can deadlock closing a socket while a message
 * is arriving on it (nanomsg/nng#1543, fixed in 1.8; seen here when a
 * neighbour's BYE reaches a rank that closes after a failure). */
struct closer {
	nng_socket in, out;
	bool in_open, out_open;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, abandoned;
};

static void closer_free(struct closer *c)
{
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void *closer_main(void *arg)
{
	struct closer *c = arg;
	bool abandoned;

	if (c->in_open)
		nng_close(c->in);
	if (c->out_open)
		nng_close(c->out);
	pthread_mutex_lock(&c->mu);
	c->done = true;
	abandoned = c->abandoned;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (abandoned)
		closer_free(c);
	return NULL;
}

/* Closes both sockets within CLOSE_STUCK_S (CLOSE_STOPPING_S once stop()
 * is set: the process is about to exit); false when nng_close hung (the
 * sockets and everything their callbacks may touch must then stay). */
static bool close_sockets(struct tr_ring *r)
{
	int limit_s = r->stop != NULL && r->stop() ? CLOSE_STOPPING_S : CLOSE_STUCK_S;
	struct closer *c = calloc(1, sizeof(*c));
	pthread_t th;
	struct timespec ts;
	bool done;

	if (c != NULL) {
		c->in = r->in.sock;
		c->out = r->out.sock;
		c->in_open = r->in.open;
		c->out_open = r->out.open;
		if (sync_init(&c->mu, &c->cv) != 0) {
			free(c);
			c = NULL;
		}
	}
	if (c == NULL || pthread_create(&th, NULL, closer_main, c) != 0) {
		/* no thread to spare: close here, unguarded */
		if (c != NULL)
			closer_free(c);
		if (r->in.open)
			nng_close(r->in.sock);
		if (r->out.open)
			nng_close(r->out.sock);
		return true;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += limit_s;
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
	GNN_ERROR("ring_close_stuck", "rank=%u waited_s=%d error=\"nng_close did not return (nng 1.5.2 "
		  "can deadlock closing a socket while a message arrives, nanomsg/nng#1543): leaving "
		  "the ring's sockets and memory behind\"", r->rank, limit_s);
	return false;
}

bool tr_ring_close(struct tr_ring *r)
{
	if (r == NULL)
		return true;
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
			drop_msg(r->aio[i]);
		}
	if ((r->in.open || r->out.open) && !close_sockets(r))
		return false; /* r stays: nng may still call pipe_cb with it */
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

/* ---- a finished rank's stand-in ---- */

/* Listens on the rank's ring URL and answers every handshake message with
 * OP_FINISHED: the configuration hash and the result. One receive or one
 * send is posted at a time; the callbacks are the state machine. */
enum srv_state { SRV_RECEIVING, SRV_ANSWERING, SRV_CLOSING };

struct tr_ring_server {
	uint32_t rank;
	nng_socket sock;
	bool open;
	nng_aio *rx, *tx;
	pthread_mutex_t mu;
	enum srv_state state;        /* mu */
	uint32_t answered_pipe;      /* mu: the last pipe answered, to log each peer once */
	nng_msg *answer;             /* template, copied for each answer */
};

static void srv_post_recv(struct tr_ring_server *s)
{
	s->state = SRV_RECEIVING;
	nng_recv_aio(s->sock, s->rx);
}

static void srv_rx_cb(void *arg)
{
	struct tr_ring_server *s = arg;
	nng_msg *m, *a = NULL;
	struct hdr h = { 0 };
	uint32_t pipe;
	int rv = 0;

	pthread_mutex_lock(&s->mu);
	if (s->state == SRV_CLOSING || (rv = nng_aio_result(s->rx)) != 0) {
		/* closing, or the socket is gone: nothing to answer any more */
		if (s->state != SRV_CLOSING)
			GNN_WARN("result_serve_stopped", "rank=%u error=\"%s\"", s->rank, nng_strerror(rv));
		pthread_mutex_unlock(&s->mu);
		return;
	}
	m = nng_aio_get_msg(s->rx);
	nng_aio_set_msg(s->rx, NULL);
	if (nng_msg_len(m) >= HDR_BYTES)
		hdr_get(nng_msg_body(m), &h);
	pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(m));
	nng_msg_free(m);
	if (h.magic != RING_MAGIC || h.kind != OP_HELLO || nng_msg_dup(&a, s->answer) != 0) {
		srv_post_recv(s);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (pipe != s->answered_pipe)
		GNN_INFO("result_served", "peer=trainer-%u rank=%u reason=\"a restarted rank asked to join the "
			 "finished run: it gets the result\"", h.from, s->rank);
	s->answered_pipe = pipe;
	s->state = SRV_ANSWERING;
	nng_aio_set_msg(s->tx, a);
	nng_send_aio(s->sock, s->tx);
	pthread_mutex_unlock(&s->mu);
}

static void srv_tx_cb(void *arg)
{
	struct tr_ring_server *s = arg;

	pthread_mutex_lock(&s->mu);
	if (nng_aio_result(s->tx) != 0)
		drop_msg(s->tx);
	if (s->state != SRV_CLOSING)
		srv_post_recv(s);
	pthread_mutex_unlock(&s->mu);
}

int tr_ring_serve_result(const struct tr_ring_opts *o, uint64_t config_hash, const void *result, size_t len,
			 struct tr_ring_server **out)
{
	struct tr_ring_server *s;
	unsigned char *body;
	struct hdr h = { .magic = RING_MAGIC, .kind = OP_FINISHED, .from = o->rank, .len = 8 + len,
			 .total = 8 + len };
	int rv, rc = GNN_ENOMEM;

	*out = NULL;
	if (o->world < 2 || o->listen == NULL || len > TR_RING_RESULT_MAX)
		return GNN_EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return GNN_ENOMEM;
	s->rank = o->rank;
	if (pthread_mutex_init(&s->mu, NULL) != 0) {
		free(s);
		return GNN_ENOMEM;
	}
	if (nng_msg_alloc(&s->answer, HDR_BYTES + 8 + len) != 0 || nng_aio_alloc(&s->rx, srv_rx_cb, s) != 0 ||
	    nng_aio_alloc(&s->tx, srv_tx_cb, s) != 0)
		goto fail;
	body = nng_msg_body(s->answer);
	hdr_put(body, &h);
	put64(body + HDR_BYTES, config_hash);
	memcpy(body + HDR_BYTES + 8, result, len);
	rc = GNN_EIO;
	if ((rv = nng_pair0_open(&s->sock)) != 0)
		goto nng_fail;
	s->open = true;
	if ((rv = nng_listen(s->sock, o->listen, NULL, 0)) != 0)
		goto nng_fail;
	pthread_mutex_lock(&s->mu);
	srv_post_recv(s);
	pthread_mutex_unlock(&s->mu);
	GNN_INFO("result_serving", "rank=%u listen=%s reason=\"a rank that restarts gets this run's result "
		 "instead of waiting for a ring\"", o->rank, o->listen);
	*out = s;
	return GNN_OK;
nng_fail:
	GNN_ERROR("result_serve_failed", "listen=%s error=\"%s\"", o->listen, nng_strerror(rv));
fail:
	tr_ring_serve_close(s);
	return rc;
}

void tr_ring_serve_close(struct tr_ring_server *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->state = SRV_CLOSING;
	pthread_mutex_unlock(&s->mu);
	if (s->rx != NULL)
		nng_aio_stop(s->rx);
	if (s->tx != NULL) {
		nng_aio_stop(s->tx);
		drop_msg(s->tx);
	}
	if (s->rx != NULL)
		drop_msg(s->rx);
	if (s->open)
		nng_close(s->sock);
	nng_aio_free(s->rx);
	nng_aio_free(s->tx);
	if (s->answer != NULL)
		nng_msg_free(s->answer);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
