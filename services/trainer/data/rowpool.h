/* rowpool.h - feature-row buffers kept across minibatches. A minibatch's
 * f32 rows are tens to hundreds of MB (products: 600,000 rows of 100
 * floats); taken from and given back to malloc each time, such buffers
 * often land on memory not touched before, in a heap fragmented by
 * messages of every size, which grows the trainer's peak (by up to two
 * fifths at products' size: docs/scale.md, "Row buffers kept across
 * minibatches"). The pool keeps them: a buffer given back serves the next
 * minibatch that fits. It never holds more buffers than were out at once:
 * when none fits, the largest free one is dropped before a new one is
 * made. Thread-safe. */
#ifndef TR_ROWPOOL_H
#define TR_ROWPOOL_H

#include <stddef.h>
#include <stdint.h>

struct tr_rowpool;

int tr_rowpool_new(struct tr_rowpool **out);
/* Frees the pool's buffers; every buffer taken must have been given back. */
void tr_rowpool_free(struct tr_rowpool *p);
/* A buffer of at least n floats (n > 0; contents undefined), the caller's
 * until tr_rowpool_put; NULL when out of memory. */
float *tr_rowpool_get(struct tr_rowpool *p, size_t n);
/* Gives buf (from tr_rowpool_get on p, or NULL) back. */
void tr_rowpool_put(struct tr_rowpool *p, float *buf);

/* Buffers made so far (a pool that works stops making them once warm). */
uint64_t tr_rowpool_made(struct tr_rowpool *p);

#endif
