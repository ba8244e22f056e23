#include "buf.h"

#include <stdlib.h>
#include <string.h>

void gnn_wbuf_init(struct gnn_wbuf *w)
{
	memset(w, 0, sizeof(*w));
}

void gnn_wbuf_init_with(struct gnn_wbuf *w, uint8_t *(*grow)(void *ctx, size_t cap), void *ctx)
{
	gnn_wbuf_init(w);
	w->grow = grow;
	w->ctx = ctx;
}

void gnn_wbuf_free(struct gnn_wbuf *w)
{
	if (w->grow == NULL)
		free(w->buf);
	gnn_wbuf_init(w);
}

bool gnn_wbuf_reserve(struct gnn_wbuf *w, size_t n)
{
	size_t cap = w->cap ? w->cap : 256;
	uint8_t *b;

	if (w->failed)
		return false;
	if (n <= w->cap - w->len)
		return true;
	if (n > SIZE_MAX / 2 - w->len) {
		w->failed = true;
		return false;
	}
	while (cap < w->len + n)
		cap *= 2;
	if ((b = w->grow != NULL ? w->grow(w->ctx, cap) : realloc(w->buf, cap)) == NULL) {
		w->failed = true;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

void gnn_wbuf_put(struct gnn_wbuf *w, const void *p, size_t n)
{
	if (n == 0 || !gnn_wbuf_reserve(w, n))
		return;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}
