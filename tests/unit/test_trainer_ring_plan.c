/* test_trainer_ring_plan.c - the ring's operation geometry (ring_plan.h)
 * without sockets: every rank's plan is run in memory, messages handed from
 * rank to rank as the engine would (a receive checks its header against the
 * plan, adds or copies its payload, keeps it to forward when the plan says
 * so; a send needs its receives first), and the buffers must end as the
 * collective promises, for several world sizes, sizes and segment sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_plan.h"
#include "testlib.h"

#define MAXT 6
#define MAXMSG 4096

struct msg {
	struct hdr h;
	unsigned char payload[256];
};

struct rank_sim {
	struct plan p;
	size_t sent, recvd;
	unsigned char *fwd[MAXMSG];       /* payloads waiting to be forwarded */
	struct msg *inbox;                /* from the previous rank, FIFO */
	size_t in_head, in_tail;
};

static bool step_send(struct rank_sim *s, struct rank_sim *next, uint32_t rank)
{
	struct msg m = { 0 };
	size_t off;
	bool add;

	if (s->sent >= s->p.nsend || s->recvd < ring_plan_needs(&s->p, s->sent))
		return false;
	ring_plan_geom(&s->p, rank, s->sent, &m.h, &off, &add);
	if (m.h.len > sizeof(m.payload))
		return false;
	memcpy(m.payload, s->fwd[s->sent] != NULL ? s->fwd[s->sent] : s->p.buf + off, m.h.len);
	free(s->fwd[s->sent]);
	s->fwd[s->sent] = NULL;
	next->inbox[next->in_tail++] = m;
	s->sent++;
	return true;
}

/* Takes one message; false when none is there, *bad on a mismatch. */
static bool step_recv(struct rank_sim *s, uint32_t prev, bool *bad)
{
	struct msg *m;
	struct hdr want = { 0 };
	size_t off, k = s->recvd, f;
	bool add;

	if (s->recvd >= s->p.nrecv || s->in_head == s->in_tail)
		return false;
	m = &s->inbox[s->in_head++];
	ring_plan_geom(&s->p, prev, k, &want, &off, &add);
	if (want.step != m->h.step || want.chunk != m->h.chunk || want.off != m->h.off || want.len != m->h.len ||
	    want.total != m->h.total)
		*bad = true;
	for (size_t i = 0; add && i < m->h.len / sizeof(float); i++) {
		float a, b;

		memcpy(&a, m->payload + 4 * i, 4);
		memcpy(&b, s->p.buf + off + 4 * i, 4);
		a += b;
		memcpy(m->payload + 4 * i, &a, 4);
	}
	if (!add || k / s->p.J == s->p.world - 2)
		memcpy(s->p.buf + off, m->payload, m->h.len);
	if ((f = ring_plan_forward(&s->p, k)) != SIZE_MAX) {
		s->fwd[f] = malloc(m->h.len + 1);
		memcpy(s->fwd[f], m->payload, m->h.len);
	}
	s->recvd++;
	return true;
}

/* Runs every rank's plan to the end; false on a header mismatch or a
 * deadlock (no rank can move while some still have messages to go). */
static bool simulate(struct rank_sim *sims, uint32_t T)
{
	bool moved = true, bad = false;

	while (moved && !bad) {
		moved = false;
		for (uint32_t r = 0; r < T; r++) {
			moved |= step_recv(&sims[r], (r + T - 1) % T, &bad);
			moved |= step_send(&sims[r], &sims[(r + 1) % T], r);
		}
	}
	for (uint32_t r = 0; r < T; r++)
		if (sims[r].sent != sims[r].p.nsend || sims[r].recvd != sims[r].p.nrecv)
			bad = true;
	return !bad;
}

static void setup(struct rank_sim *sims, uint32_t T, enum op kind, unsigned char **bufs)
{
	for (uint32_t r = 0; r < T; r++) {
		memset(&sims[r], 0, sizeof(sims[r]));
		sims[r].p.kind = kind;
		sims[r].p.buf = bufs[r];
		sims[r].inbox = calloc(MAXMSG, sizeof(struct msg));
	}
}

static void teardown(struct rank_sim *sims, uint32_t T)
{
	for (uint32_t r = 0; r < T; r++) {
		for (size_t k = 0; k < MAXMSG; k++)
			free(sims[r].fwd[k]);
		free(sims[r].inbox);
	}
}

static void test_allreduce_sums(void)
{
	static const size_t ns[] = { 1, 2, 5, 17, 64 }, segs[] = { 4, 8, 64 };
	struct rank_sim sims[MAXT];
	float data[MAXT][64];
	unsigned char *bufs[MAXT];

	for (uint32_t T = 2; T <= MAXT; T++)
		for (size_t a = 0; a < 5; a++)
			for (size_t b = 0; b < 3; b++) {
				size_t n = ns[a];
				bool ok = true;

				for (uint32_t r = 0; r < T; r++) {
					for (size_t i = 0; i < n; i++)
						data[r][i] = (float)(r * 100 + i);  /* exact sums */
					bufs[r] = (unsigned char *)data[r];
				}
				setup(sims, T, OP_ALLREDUCE, bufs);
				for (uint32_t r = 0; r < T; r++)
					ring_plan_allreduce(&sims[r].p, T, n, sizeof(float), segs[b]);
				ok = simulate(sims, T);
				for (uint32_t r = 0; ok && r < T; r++)
					for (size_t i = 0; i < n; i++)
						ok &= data[r][i] == (float)(100 * T * (T - 1) / 2 + T * i);
				if (!CHECK(ok))
					printf("  world %u, %zu floats, %zu-byte segments\n", T, n, segs[b]);
				teardown(sims, T);
			}
}

static void test_allgather_and_broadcast(void)
{
	struct rank_sim sims[MAXT];
	unsigned char data[MAXT][MAXT * 40], *bufs[MAXT];

	for (uint32_t T = 2; T <= MAXT; T++)
		for (size_t bytes = 1; bytes <= 40; bytes += 13) {
			bool ok;

			memset(data, 0, sizeof(data));
			for (uint32_t r = 0; r < T; r++) {
				memset(data[r] + r * bytes, (int)(r + 1), bytes);
				bufs[r] = data[r];
			}
			setup(sims, T, OP_ALLGATHER, bufs);
			for (uint32_t r = 0; r < T; r++)
				ring_plan_allgather(&sims[r].p, T, bytes, 8);
			ok = simulate(sims, T);
			for (uint32_t r = 0; ok && r < T; r++)
				for (uint32_t q = 0; q < T; q++)
					for (size_t i = 0; i < bytes; i++)
						ok &= data[r][q * bytes + i] == q + 1;
			if (!CHECK(ok))
				printf("  allgather: world %u, %zu bytes\n", T, bytes);
			teardown(sims, T);

			for (uint32_t root = 0; root < T; root++) {
				memset(data, 0, sizeof(data));
				memset(data[root], 0x5a, bytes);
				setup(sims, T, OP_BROADCAST, bufs);
				for (uint32_t r = 0; r < T; r++)
					ring_plan_broadcast(&sims[r].p, T, r, root, bytes, 8);
				ok = simulate(sims, T);
				for (uint32_t r = 0; ok && r < T; r++)
					for (size_t i = 0; i < bytes; i++)
						ok &= data[r][i] == 0x5a;
				if (!CHECK(ok))
					printf("  broadcast: world %u, root %u, %zu bytes\n", T, root, bytes);
				teardown(sims, T);
			}
		}
}

int main(void)
{
	RUN(test_allreduce_sums);
	RUN(test_allgather_and_broadcast);
	return t_done();
}
