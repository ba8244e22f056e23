/* embfile.c - see embfile.h. */
#include "embfile.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "err.h"

#define SNAP_MAGIC 0x50414e53424d4547ull   /* "GEMBSNAP" */

static const char *const file_arrays[GNN_EMB_ARRAYS] = {
	[GNN_EMB_ROWS] = "rows", [GNN_EMB_STATE1] = "state1", [GNN_EMB_STATE2] = "state2",
	[GNN_EMB_STEPS] = "steps", [GNN_EMB_BEST_ROWS] = "best",
};

int gnn_emb_file(char *buf, size_t cap, const char *dir, const char *type_name, uint32_t array)
{
	int n;

	if (array >= GNN_EMB_ARRAYS)
		return GNN_EINVAL;
	n = snprintf(buf, cap, "%s/emb-%s-%s.arr", dir, type_name, file_arrays[array]);
	return n < 0 || (size_t)n >= cap ? GNN_ERANGE : GNN_OK;
}

int gnn_emb_snap_file(char *buf, size_t cap, const char *dir, uint32_t part)
{
	int n = snprintf(buf, cap, "%s/emb-part-%04u.snap", dir, part);

	return n < 0 || (size_t)n >= cap ? GNN_ERANGE : GNN_OK;
}

uint64_t gnn_emb_file_row(const struct gnn_layout *l, uint32_t p, uint32_t t)
{
	uint64_t row = 0;

	for (uint32_t q = 0; q < p; q++) {
		int64_t lo, hi;

		gnn_layout_type_range(l, q, t, &lo, &hi);
		row += (uint64_t)(hi - lo);
	}
	return row;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	return put32(put32(p, (uint32_t)v), (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

size_t gnn_emb_snap_encode(const struct gnn_emb_snap *s, uint8_t *buf)
{
	uint32_t n = s->n < GNN_EMB_SNAP_MAX ? s->n : GNN_EMB_SNAP_MAX;
	uint8_t *p = put32(put32(put64(put64(put64(buf, SNAP_MAGIC), s->gen), s->version), s->part), n);

	for (uint32_t i = 0; i < n; i++) {
		const struct gnn_emb_snap_entry *e = &s->e[i];

		p = put32(put32(put64(put64(put32(put32(p, e->type), e->array), e->row), e->rows), e->crc),
			  (uint32_t)e->err);
	}
	p = put32(p, (uint32_t)crc32(0L, buf, (uInt)(p - buf)));
	return (size_t)(p - buf);
}

int gnn_emb_snap_decode(const uint8_t *buf, size_t len, struct gnn_emb_snap *out)
{
	uint32_t n;

	if (len < 36 || get64(buf) != SNAP_MAGIC)
		return GNN_EFORMAT;
	n = get32(buf + 28);
	if (n > GNN_EMB_SNAP_MAX || len != 36 + (size_t)n * 32 ||
	    get32(buf + len - 4) != (uint32_t)crc32(0L, buf, (uInt)(len - 4)))
		return GNN_EFORMAT;
	memset(out, 0, sizeof(*out));
	out->gen = get64(buf + 8);
	out->version = get64(buf + 16);
	out->part = get32(buf + 24);
	out->n = n;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = buf + 32 + (size_t)i * 32;
		struct gnn_emb_snap_entry *e = &out->e[i];

		e->type = get32(p);
		e->array = get32(p + 4);
		e->row = get64(p + 8);
		e->rows = get64(p + 16);
		e->crc = get32(p + 24);
		e->err = (int32_t)get32(p + 28);
	}
	return GNN_OK;
}
