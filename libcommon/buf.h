/* buf.h - the growable byte buffer: wire messages are built in it
 * (proto.h's encoders), and text (the metrics page). buf is malloc'd and
 * owned by the struct; whoever holds it frees it with gnn_wbuf_free, or
 * takes buf over and then must not free the struct's copy. Not
 * thread-safe. */
#ifndef GNN_BUF_H
#define GNN_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gnn_wbuf {
	uint8_t *buf;
	size_t len, cap;
	bool failed;      /* an allocation failed: the contents are unusable */
	/* NULL: buf is malloc'd. Else the storage is someone else's (the
	 * server's reply, an nng message, sent without a copy): grow(ctx, cap)
	 * makes room for cap bytes, keeping the contents, and returns where
	 * they are now (NULL: out of memory). gnn_wbuf_free then only forgets. */
	uint8_t *(*grow)(void *ctx, size_t cap);
	void *ctx;
};

void gnn_wbuf_init(struct gnn_wbuf *w);
/* An empty buffer whose storage grow(ctx, cap) provides. */
void gnn_wbuf_init_with(struct gnn_wbuf *w, uint8_t *(*grow)(void *ctx, size_t cap), void *ctx);
void gnn_wbuf_free(struct gnn_wbuf *w);

/* Makes room for n more bytes (the capacity doubles, from 256); false,
 * with w->failed set for good, when memory runs out or w failed before. */
bool gnn_wbuf_reserve(struct gnn_wbuf *w, size_t n);

/* Appends n bytes of p (nothing once w failed). */
void gnn_wbuf_put(struct gnn_wbuf *w, const void *p, size_t n);

#endif
