/* partq.c - see partq.h. */
#include "partq.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "err.h"
#include "log.h"
#include "sample.h"

/* Node v (ids[i]) is not pt's. */
static int not_owned(const struct gnn_part *pt, int64_t v, uint32_t i, char *why, size_t why_len)
{
	snprintf(why, why_len, "node %" PRId64 " (ids[%" PRIu32 "]) is not in partition %" PRId32 " [%" PRId64
		 ", %" PRId64 ")", v, i, pt->id, pt->node_start, pt->node_end);
	return GNN_ERANGE;
}

/* Node v (ids[i]) has a CSR row whose offsets are out of order or past
 * the end (the arrays may come from an unverified file). */
static int corrupt(const struct gnn_part *pt, int64_t v, uint32_t i, char *why, size_t why_len)
{
	snprintf(why, why_len, "node %" PRId64 " (ids[%" PRIu32 "]): partition %" PRId32 "'s CSR rows of it are "
		 "corrupt", v, i, pt->id);
	return GNN_EFORMAT;
}

int gnn_partq_sample_size(const struct gnn_part *pt, const int64_t *ids, uint32_t n, const int32_t *fanouts,
			  struct gnn_partq_sample *s, char *why, size_t why_len)
{
	const uint32_t R = pt->num_rels;
	const int64_t *indptr = pt->indptr, end = indptr[pt->num_nodes * R];
	uint64_t total = 0;
	uint32_t maxk = 0;

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < n; i++) {
		const int64_t v = ids[i], *row;

		if (v < pt->node_start || v >= pt->node_end)
			return not_owned(pt, v, i, why, why_len);
		row = indptr + (v - pt->node_start) * R;
		for (uint32_t r = 0; r < R; r++) {
			int64_t lo = row[r], hi = row[r + 1];
			uint64_t k;

			if (lo < 0 || hi < lo || hi > end)
				return corrupt(pt, v, i, why, why_len);
			if (hi - lo > (int64_t)UINT32_MAX) {
				snprintf(why, why_len, "node %lld has %lld in-neighbours under relation %u, more than "
					 "sampling supports (2^32 - 1)", (long long)v, (long long)(hi - lo), r);
				return GNN_ERANGE;
			}
			k = gnn_sample_count((uint64_t)(hi - lo), fanouts[r]);
			total += k;
			maxk = k > maxk ? (uint32_t)k : maxk;
		}
	}
	s->total = total;
	s->maxk = maxk;
	return GNN_OK;
}

int gnn_partq_sample(const struct gnn_part *pt, uint64_t seed, const int64_t *ids, uint32_t n,
		     const int32_t *fanouts, struct gnn_partq_sample *s)
{
	const uint32_t R = pt->num_rels;
	/* counts, then (8-aligned) nbrs, then gnn_sample_row's scratch */
	const size_t head = ((size_t)n * R * 4 + 7) / 8 * 8;
	char *mem = malloc(head + s->total * 8 + (size_t)s->maxk * 4 + 8);
	uint32_t *counts = (uint32_t *)(void *)mem, *pos;
	int64_t *nbrs = (int64_t *)(void *)(mem + head), *at = nbrs;

	if (mem == NULL)
		return GNN_ENOMEM;
	pos = (uint32_t *)(nbrs + s->total);
	for (uint32_t i = 0; i < n; i++) {
		const int64_t *row = pt->indptr + (ids[i] - pt->node_start) * R;

		for (uint32_t r = 0; r < R; r++) {
			uint32_t k = gnn_sample_row(seed, r, ids[i], pt->indices + row[r], (uint32_t)(row[r + 1] - row[r]),
						    fanouts[r], pos, at);

			counts[(size_t)i * R + r] = k;
			at += k;
		}
	}
	s->mem = mem;
	s->counts = counts;
	s->nbrs = nbrs;
	return GNN_OK;
}

void gnn_partq_sample_free(struct gnn_partq_sample *s)
{
	free(s->mem);
	memset(s, 0, sizeof(*s));
}

int gnn_partq_feat_rows(const struct gnn_part *pt, const int64_t *ids, uint32_t n, uint32_t dim, void *dst,
			char *why, size_t why_len)
{
	const size_t row = (size_t)dim * gnn_dtype_size(pt->feat_dtype);
	const int64_t start = pt->node_start, end = pt->node_end;
	uint8_t *out = dst;

	for (uint32_t i = 0; i < n; i++, out += row) {
		const void *src;
		uint32_t d;

		if (ids[i] < start || ids[i] >= end)
			return not_owned(pt, ids[i], i, why, why_len);
		if ((src = gnn_part_feat_row(pt, ids[i], &d)) == NULL || d != dim) {
			snprintf(why, why_len, "node %" PRId64 " (ids[%" PRIu32 "]) has %" PRIu32 " features, not %"
				 PRIu32, ids[i], i, src == NULL ? 0 : d, dim);
			return GNN_ERANGE;
		}
		memcpy(out, src, row);
	}
	return GNN_OK;
}

int gnn_partq_labels(const struct gnn_part *pt, const int64_t *ids, uint32_t n, int32_t *dst, char *why,
		     size_t why_len)
{
	for (uint32_t i = 0; i < n; i++) {
		if (ids[i] < pt->node_start || ids[i] >= pt->node_end)
			return not_owned(pt, ids[i], i, why, why_len);
		dst[i] = pt->labels[ids[i] - pt->node_start];
	}
	return GNN_OK;
}

int gnn_partq_nodes(const struct gnn_part *pt, uint8_t split, int64_t cursor, uint32_t limit, int64_t **found,
		    uint32_t *n, int64_t *next)
{
	int64_t v = cursor < pt->node_start ? pt->node_start : cursor;
	/* never more room than nodes left, whatever limit the client asks */
	uint64_t cap = v < pt->node_end ? (uint64_t)(pt->node_end - v) : 0;
	uint32_t k = 0;

	*found = NULL;
	if (pt->split == NULL)
		return GNN_EINVAL;
	if (cap > limit)
		cap = limit;
	if ((*found = malloc(cap * sizeof(**found) + 1)) == NULL)
		return GNN_ENOMEM;
	for (; v < pt->node_end && k < limit; v++)
		if (pt->split[v - pt->node_start] == split)
			(*found)[k++] = v;
	*n = k;
	/* stopped at the limit with nodes left to look at: continue there */
	*next = k == limit && v < pt->node_end ? v : -1;
	return GNN_OK;
}

int gnn_partq_lookup(const struct gnn_layout *l, const struct gnn_arr *map, uint32_t p, uint32_t t,
		     const int64_t *orig, uint32_t n, int64_t *out, char *why, size_t why_len)
{
	if (t >= l->schema->num_types) {
		snprintf(why, why_len, "no node type %u: the graph has %u", t, l->schema->num_types);
		return GNN_EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		out[i] = gnn_node_map_find(l, map, p, t, orig[i]);
	return GNN_OK;
}

int gnn_partq_node_map_check(const struct gnn_layout *l, const struct gnn_arr *map, uint32_t p, const char *dir)
{
	const int64_t *ids = map->data;

	for (uint32_t t = 0; t < l->schema->num_types; t++) {
		int64_t b, e;

		gnn_layout_type_range(l, p, t, &b, &e);
		for (int64_t v = b + 1; v < e; v++)
			if (ids[v] <= ids[v - 1]) {
				GNN_ERROR("bad_partition", "dir=%s node=%lld reason=\"node-map.arr: the original IDs of a "
					  "(partition, type) range must ascend\"", dir, (long long)v);
				return GNN_EFORMAT;
			}
	}
	return GNN_OK;
}
