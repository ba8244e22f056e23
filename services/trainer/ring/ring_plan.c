/* ring_plan.c - the geometry of the ring collectives (ring_plan.h;
 * docs/allreduce.md draws it). */
#include "ring_plan.h"

void ring_plan_allreduce(struct plan *p, uint32_t world, size_t n, size_t elem, size_t seg_bytes)
{
	p->world = world;
	p->elem = elem;
	p->n = n;
	p->seg = seg_bytes / elem;
	p->J = ring_ceil_div(ring_ceil_div(n, world), p->seg);
	p->nsend = p->nrecv = 2 * (size_t)(world - 1) * p->J;
	p->first_dep = p->J;
}

void ring_plan_allgather(struct plan *p, uint32_t world, size_t bytes, size_t seg_bytes)
{
	p->world = world;
	p->elem = 1;
	p->n = bytes;
	p->seg = seg_bytes;
	p->J = ring_ceil_div(bytes, p->seg);
	p->nsend = p->nrecv = (size_t)(world - 1) * p->J;
	p->first_dep = p->J;
}

/* A pipelined pass root -> root+1 -> ... -> root-1. */
void ring_plan_broadcast(struct plan *p, uint32_t world, uint32_t rank, uint32_t root, size_t bytes,
			 size_t seg_bytes)
{
	uint32_t pos = (rank + world - root) % world;

	p->world = world;
	p->elem = 1;
	p->n = bytes;
	p->root = root;
	p->seg = seg_bytes;
	p->J = ring_ceil_div(bytes, p->seg);
	p->nsend = pos == world - 1 ? 0 : p->J;
	p->nrecv = pos == 0 ? 0 : p->J;
	p->first_dep = pos == 0 ? SIZE_MAX : 0;
}

size_t ring_plan_needs(const struct plan *p, size_t k)
{
	return k >= p->first_dep ? k - p->first_dep + 1 : 0;
}

void ring_plan_geom(const struct plan *p, uint32_t from, size_t k, struct hdr *h, size_t *buf_off, bool *add)
{
	uint32_t T = p->world;
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

size_t ring_plan_forward(const struct plan *p, size_t k)
{
	size_t s = k / p->J;

	switch (p->kind) {
	case OP_ALLREDUCE:
	case OP_ALLREDUCE_F64:
		return s + 1 < 2 * (size_t)(p->world - 1) ? k + p->J : SIZE_MAX;
	case OP_ALLGATHER:
		return s + 1 < p->world - 1 ? k + p->J : SIZE_MAX;
	case OP_BROADCAST:
		return p->nsend > 0 ? k : SIZE_MAX;
	default:
		return SIZE_MAX;
	}
}
