/* ring_plan.h - the geometry of one ring operation, pure arithmetic (no
 * sockets): which messages a rank sends and receives, which part of the
 * buffer each carries, whether the receiver adds or copies it, and which
 * received message is forwarded as which send. Every rank computes the
 * same plan, so a receiver checks each header against it. Internal to the
 * ring_*.c files; unit-tested on its own (test_trainer_ring). */
#ifndef TR_RING_PLAN_H
#define TR_RING_PLAN_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring_wire.h"

struct plan {
	enum op kind;
	uint32_t world;      /* ranks in the ring */
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

static inline size_t ring_ceil_div(size_t a, size_t b)
{
	return a / b + (a % b != 0);
}

/* The plans of the collectives for rank of world, over n elements of elem
 * bytes (allreduce), bytes per rank (allgather) or bytes from root
 * (broadcast), in segments of seg_bytes: fills p's counts; buf, seq and fwd
 * are the caller's. */
void ring_plan_allreduce(struct plan *p, uint32_t world, size_t n, size_t elem, size_t seg_bytes);
void ring_plan_allgather(struct plan *p, uint32_t world, size_t bytes, size_t seg_bytes);
void ring_plan_broadcast(struct plan *p, uint32_t world, uint32_t rank, uint32_t root, size_t bytes,
			 size_t seg_bytes);

/* How many receives send k needs done first. */
size_t ring_plan_needs(const struct plan *p, size_t k);

/* Where message k of sender `from` goes: header fields (step, chunk, off,
 * len, total), the byte offset of its payload in the buffer, and whether
 * the receiver adds (reduce-scatter) or copies it. */
void ring_plan_geom(const struct plan *p, uint32_t from, size_t k, struct hdr *h, size_t *buf_off, bool *add);

/* The send that forwards received message k, or SIZE_MAX when it is not
 * forwarded (the last step, the end of a broadcast). */
size_t ring_plan_forward(const struct plan *p, size_t k);

#endif
