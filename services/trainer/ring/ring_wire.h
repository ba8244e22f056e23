/* ring_wire.h - the ring's message header on the wire (docs/allreduce.md):
 * every ring message is HDR_BYTES of header, little-endian, then its
 * payload. Internal to the ring_*.c files. */
#ifndef TR_RING_WIRE_H
#define TR_RING_WIRE_H

#include <stdint.h>

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

enum op {
	OP_HELLO = 1, OP_ALLREDUCE, OP_ALLREDUCE_F64, OP_ALLGATHER, OP_BROADCAST,
	OP_BYE, OP_BYE_ACK, /* tr_ring_close's flush */
	OP_FINISHED,        /* a finished rank's answer to a hello (tr_ring_serve_result) */
	OP_PING,            /* the heartbeat to the next rank (ring_beat.c): header only, skipped
			     * by every receive */
	OP_COUNT
};

static inline const char *op_name(uint32_t kind)
{
	static const char *const names[OP_COUNT] = {
		"?", "hello", "allreduce", "allreduce_f64", "allgather", "broadcast", "bye", "bye_ack", "finished", "ping",
	};

	return kind > 0 && kind < OP_COUNT ? names[kind] : "unknown";
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

static inline void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void hdr_put(unsigned char *p, const struct hdr *h)
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

static inline void hdr_get(const unsigned char *p, struct hdr *h)
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

#endif
