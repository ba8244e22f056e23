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
#include "ring_int.h"

#include <nng/protocol/pair0/pair.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

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
	if (r->world > 1 && (rc = ring_handshake(r, wait_s)) != GNN_OK) {
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
	struct plan p = { .kind = kind, .buf = data };
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
		ring_plan_allreduce(&p, T, n, elem, TR_RING_SEGMENT_BYTES);
		if ((rc = ring_run_plan(r, &p, r->timeout_ms / 1000.0)) != GNN_OK)
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
	struct plan p = { .kind = OP_ALLGATHER, .buf = all };
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
	if (bytes > 0 && (const unsigned char *)mine != (unsigned char *)all + (size_t)r->rank * bytes)
		memmove((unsigned char *)all + (size_t)r->rank * bytes, mine, bytes);
	if (T > 1 && bytes > 0) {
		ring_plan_allgather(&p, T, bytes, TR_RING_SEGMENT_BYTES);
		if ((rc = ring_run_plan(r, &p, r->timeout_ms / 1000.0)) != GNN_OK)
			return fail(r, rc);
	}
	observe(r, t0);
	return GNN_OK;
}

int tr_ring_broadcast(struct tr_ring *r, uint32_t root, void *data, size_t bytes)
{
	struct plan p = { .kind = OP_BROADCAST, .buf = data };
	double t0 = gnn_now();
	uint32_t T;
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
		ring_plan_broadcast(&p, T, r->rank, root, bytes, TR_RING_SEGMENT_BYTES);
		if ((rc = ring_run_plan(r, &p, r->timeout_ms / 1000.0)) != GNN_OK)
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
	    (rv = nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_POST, ring_pipe_cb, s)) != 0 ||
	    (rv = nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, ring_pipe_cb, s)) != 0)
		return rv;
	return 0;
}

static int check_opts(const struct tr_ring_opts *o)
{
	if (o->world == 0 || o->world > MAX_WORLD || o->rank >= o->world || o->timeout_ms <= 0 ||
	    !(o->silence_s >= 0 && o->silence_s <= 86400)) {
		GNN_ERROR("ring_bad_options", "rank=%u world=%u timeout_ms=%d silence_s=%g", o->rank, o->world,
			  o->timeout_ms, o->silence_s);
		return GNN_EINVAL;
	}
	if (o->world > 1) {
		bool ok = o->listen != NULL && strlen(o->listen) < sizeof(((struct tr_ring *)NULL)->listen) &&
			  o->urls != NULL;

		for (uint32_t i = 0; ok && i < o->world; i++)
			ok = o->urls[i] != NULL && o->urls[i][0] != '\0';
		if (!ok) {
			GNN_ERROR("ring_bad_options", "rank=%u world=%u error=\"a listen URL and one URL "
				  "per rank are required\"", o->rank, o->world);
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

int tr_ring_open(const struct tr_ring_opts *o, struct tr_ring **out)
{
	struct tr_ring *r;
	int rc = GNN_ENOMEM, rv;

	if (o == NULL || out == NULL || check_opts(o) != GNN_OK)
		return GNN_EINVAL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return GNN_ENOMEM;
	r->rank = o->rank;
	r->world = o->world;
	r->prev = (o->rank + o->world - 1) % o->world;
	r->next = (o->rank + 1) % o->world;
	r->timeout_ms = o->timeout_ms;
	r->silence_s = o->silence_s;
	r->stop = o->stop;
	r->tls = o->tls;
	r->in = (struct side){ .r = r, .name = "in", .peer = r->prev };
	r->out = (struct side){ .r = r, .name = "out", .peer = r->next };
	r->nonce = make_nonce(r);
	atomic_init(&r->bytes, 0);
	if (gnn_sync_init(&r->mu, &r->cv) != GNN_OK)
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
		if (nng_aio_alloc(&r->aio[i], ring_aio_cb, &r->aio_arg[i]) != 0)
			goto out_close;
	}
	rc = GNN_EIO;
	if ((rv = open_side(&r->in)) != 0 || (rv = open_side(&r->out)) != 0) {
		GNN_ERROR("ring_socket_failed", "error=\"%s\"", nng_strerror(rv));
		goto out_close;
	}
	if ((rv = gnn_tls_listen(r->in.sock, r->listen, r->tls, &r->listener)) != 0) {
		GNN_ERROR("ring_listen_failed", "url=%s error=\"%s\"", r->listen, nng_strerror(rv));
		goto out_close;
	}
	/* non-blocking: the next rank may start later; nng redials every
	 * 100 ms .. 1 s until it is there */
	if ((rv = gnn_tls_dial(r->out.sock, r->urls[r->next], r->tls, NULL, &r->dialer, NNG_FLAG_NONBLOCK)) != 0) {
		GNN_ERROR("ring_dial_failed", "peer=trainer-%u url=%s error=\"%s\"", r->next,
			  r->urls[r->next], nng_strerror(rv));
		rc = GNN_EINVAL;
		goto out_close;
	}
	r->out.down_since = gnn_now();
	if ((rc = ring_beat_start(r)) != GNN_OK)
		goto out_close;
	GNN_INFO("ring_open", "rank=%u world=%u listen=%s next=trainer-%u next_url=%s prev=trainer-%u "
		 "timeout_ms=%d silence_s=%g segment_bytes=%u", r->rank, r->world, r->listen, r->next,
		 r->urls[r->next], r->prev, r->timeout_ms, r->silence_s, (unsigned)TR_RING_SEGMENT_BYTES);
	*out = r;
	return GNN_OK;

out_close:
	tr_ring_close(r);
	return rc;
}
