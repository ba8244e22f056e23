/* ring_serve.c - a finished rank's stand-in on its ring URL
 * (tr_ring_serve_result). */
#include "ring_int.h"

#include <nng/protocol/pair0/pair.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "log.h"
#include "sys.h"

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
		ring_drop_msg(s->tx);
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
	if ((rv = gnn_tls_listen(s->sock, o->listen, o->tls, NULL)) != 0)
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
		ring_drop_msg(s->tx);
	}
	if (s->rx != NULL)
		ring_drop_msg(s->rx);
	/* stuck in nng (its close deadlock): s stays, its callbacks may run */
	if (s->open && !gnn_close_bounded(&s->sock, 1, gnn_close_limit(), "result_server"))
		return;
	nng_aio_free(s->rx);
	nng_aio_free(s->tx);
	if (s->answer != NULL)
		nng_msg_free(s->answer);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
