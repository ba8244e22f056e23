#include "local_backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "part.h"
#include "sample.h"

struct smp_local {
	struct gnn_layout layout;       /* from a folder: meta.layout (pointers: meta's) */
	struct gnn_part *parts;         /* [num_parts]: mapped (from a folder) or copied */
	/* Only when opened from a folder: */
	struct gnn_meta meta;
	bool own;
};

int smp_local_wrap(const struct gnn_layout *layout, const struct gnn_part *parts, struct smp_local **out)
{
	struct smp_local *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return GNN_ENOMEM;
	if (layout->num_parts == 0 || layout->num_nodes <= 0 || layout->schema == NULL) {
		free(l);
		return GNN_EINVAL;
	}
	l->layout = *layout;
	l->parts = calloc(layout->num_parts, sizeof(*l->parts));
	if (l->parts == NULL) {
		free(l);
		return GNN_ENOMEM;
	}
	memcpy(l->parts, parts, layout->num_parts * sizeof(*parts));
	*out = l;
	return GNN_OK;
}

int smp_local_open_dir(const char *dir, bool verify, struct smp_local **out)
{
	struct smp_local *l = calloc(1, sizeof(*l));
	int rc;

	if (l == NULL)
		return GNN_ENOMEM;
	l->own = true;
	if ((rc = gnn_meta_load(dir, &l->meta)) != GNN_OK) {
		free(l);
		return rc;
	}
	l->layout = l->meta.layout;
	l->parts = calloc(l->layout.num_parts, sizeof(*l->parts));
	if (l->parts == NULL) {
		rc = GNN_ENOMEM;
		goto out_fail;
	}
	for (uint32_t p = 0; p < l->layout.num_parts; p++)
		if ((rc = gnn_part_open(dir, &l->meta, (int32_t)p, verify ? GNN_PART_VERIFY : 0, &l->parts[p])) !=
		    GNN_OK)
			goto out_fail;
	*out = l;
	return GNN_OK;

out_fail:
	smp_local_close(l);
	return rc;
}

void smp_local_close(struct smp_local *l)
{
	if (l == NULL)
		return;
	if (l->own) {
		for (uint32_t p = 0; l->parts != NULL && p < l->layout.num_parts; p++)
			gnn_part_close(&l->parts[p]);
		gnn_meta_free(&l->meta);
	}
	free(l->parts);
	free(l);
}

const struct gnn_layout *smp_local_layout(const struct smp_local *l)
{
	return &l->layout;
}

const struct gnn_part *smp_local_part(const struct smp_local *l, uint32_t p)
{
	return p < l->layout.num_parts ? &l->parts[p] : NULL;
}

/* ---- the backend ---- */

static void local_describe(void *ctx, uint32_t part, char *buf, size_t size)
{
	(void)ctx;
	snprintf(buf, size, "partition %" PRIu32 " (in process)", part);
}

/* The first CSR row of id in part (rows id R .. id R + R - 1 are its
 * relations), after checking that part owns it and that its rows are sane
 * (the arrays may come from an unverified file). */
static int local_row(const struct gnn_part *pt, int64_t id, int64_t *row)
{
	int64_t R = pt->num_rels, r = (id - pt->node_start) * R;

	if (id < pt->node_start || id >= pt->node_end)
		return GNN_ERANGE;
	for (int64_t k = r; k < r + R; k++)
		if (pt->indptr[k] < 0 || pt->indptr[k + 1] < pt->indptr[k] ||
		    pt->indptr[k + 1] > pt->indptr[pt->num_nodes * R])
			return GNN_EFORMAT;
	*row = r;
	return GNN_OK;
}

/* SAMPLE: what a graph store does for one request. */
static int local_sample(const struct gnn_part *pt, struct smp_call *c, int64_t *bad)
{
	uint32_t R = pt->num_rels;
	uint64_t total = 0, maxk = 0;
	uint32_t *counts, *pos;
	int64_t *nbrs, row;
	size_t head;
	char *block;
	int rc;

	for (uint32_t i = 0; i < c->n; i++) {
		if ((rc = local_row(pt, c->ids[i], &row)) != GNN_OK) {
			*bad = c->ids[i];
			return rc;
		}
		for (uint32_t r = 0; r < R; r++) {
			uint64_t deg = (uint64_t)(pt->indptr[row + r + 1] - pt->indptr[row + r]), k;

			if (deg > UINT32_MAX) {
				*bad = c->ids[i];
				return GNN_ERANGE;
			}
			k = gnn_sample_count(deg, c->fanouts[r]);
			total += k;
			maxk = k > maxk ? k : maxk;
		}
	}
	head = ((size_t)c->n * R * 4 + 7) / 8 * 8;
	block = malloc(head + total * 8 + maxk * 4 + 8);
	if (block == NULL)
		return GNN_ENOMEM;
	counts = (uint32_t *)block;
	nbrs = (int64_t *)(block + head);
	pos = (uint32_t *)(nbrs + total);
	total = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		row = (c->ids[i] - pt->node_start) * R;
		for (uint32_t r = 0; r < R; r++) {
			uint32_t k = gnn_sample_row(c->seed, r, c->ids[i], pt->indices + pt->indptr[row + r],
						    (uint32_t)(pt->indptr[row + r + 1] - pt->indptr[row + r]), c->fanouts[r],
						    pos, nbrs + total);

			counts[(size_t)i * R + r] = k;
			total += k;
		}
	}
	c->counts = counts;
	c->nbrs = nbrs;
	c->total = total;
	c->keep = block;
	return GNN_OK;
}

static int local_feat(const struct gnn_part *pt, struct smp_call *c, int64_t *bad)
{
	uint32_t dim = c->feat_dim, d;
	size_t row = (size_t)dim * gnn_dtype_size(pt->feat_dtype);
	uint8_t *rows = malloc((size_t)c->n * row + 1);
	const void *src;

	if (rows == NULL)
		return GNN_ENOMEM;
	for (uint32_t i = 0; i < c->n; i++) {
		if (c->ids[i] < pt->node_start || c->ids[i] >= pt->node_end ||
		    (src = gnn_part_feat_row(pt, c->ids[i], &d)) == NULL || d != dim || pt->feat_dtype != c->feat_dtype) {
			*bad = c->ids[i];
			free(rows);
			return GNN_ERANGE;
		}
		memcpy(rows + (size_t)i * row, src, row);
	}
	c->rows = rows;
	c->keep = rows;
	return GNN_OK;
}

static int local_label(const struct gnn_part *pt, struct smp_call *c, int64_t *bad)
{
	int32_t *labels = malloc((size_t)c->n * sizeof(int32_t) + 1);

	if (labels == NULL)
		return GNN_ENOMEM;
	for (uint32_t i = 0; i < c->n; i++) {
		if (c->ids[i] < pt->node_start || c->ids[i] >= pt->node_end) {
			*bad = c->ids[i];
			free(labels);
			return GNN_ERANGE;
		}
		labels[i] = pt->labels[c->ids[i] - pt->node_start];
	}
	c->labels = labels;
	c->keep = labels;
	return GNN_OK;
}

/* NODES: what a graph store does (a cursor below the partition starts at
 * its first node; next_cursor -1 once the partition is exhausted). */
static int local_nodes(const struct gnn_part *pt, struct smp_call *c, int64_t *bad)
{
	int64_t v = c->cursor < pt->node_start ? pt->node_start : c->cursor, *found;
	uint64_t cap = v < pt->node_end ? (uint64_t)(pt->node_end - v) : 0;
	uint32_t n = 0;

	if (pt->split == NULL) {
		*bad = c->cursor;
		return GNN_EINVAL;
	}
	if (cap > c->limit)
		cap = c->limit;
	if ((found = malloc(cap * sizeof(*found) + 1)) == NULL)
		return GNN_ENOMEM;
	for (; v < pt->node_end && n < c->limit; v++)
		if (pt->split[v - pt->node_start] == c->split)
			found[n++] = v;
	c->found = found;
	c->num_found = n;
	c->next_cursor = n == c->limit && v < pt->node_end ? v : -1;
	c->keep = found;
	return GNN_OK;
}

static int local_run(void *ctx, struct smp_call *calls, size_t n, char *err, size_t err_len)
{
	struct smp_local *l = ctx;

	for (size_t i = 0; i < n; i++)
		calls[i].keep = NULL;
	for (size_t i = 0; i < n; i++) {
		struct smp_call *c = &calls[i];
		const struct gnn_part *pt;
		int64_t bad = -1;
		int rc;

		if (c->part >= l->layout.num_parts) {
			snprintf(err, err_len, "no partition %" PRIu32, c->part);
			return GNN_ERANGE;
		}
		pt = &l->parts[c->part];
		switch (c->op) {
		case SMP_OP_SAMPLE:
			rc = local_sample(pt, c, &bad);
			break;
		case SMP_OP_FEAT:
			rc = local_feat(pt, c, &bad);
			break;
		case SMP_OP_LABEL:
			rc = local_label(pt, c, &bad);
			break;
		case SMP_OP_NODES:
			rc = local_nodes(pt, c, &bad);
			break;
		case SMP_OP_PREDICT:
		case SMP_OP_LOOKUP:
		case SMP_OP_LINK:
			snprintf(err, err_len, "partition %" PRIu32 " (in process) has no %s: only graph stores serve "
				 "them", c->part, c->op == SMP_OP_LOOKUP ? "node map" : "predictions");
			return GNN_ENOENT;
		default:
			rc = GNN_EINVAL;
		}
		if (rc != GNN_OK && c->op == SMP_OP_NODES && rc == GNN_EINVAL) {
			snprintf(err, err_len, "partition %" PRIu32 " (in process) has no split codes", c->part);
			return rc;
		}
		if (rc != GNN_OK) {
			snprintf(err, err_len, "partition %" PRIu32 " (in process): node %" PRId64 ": %s", c->part,
				 bad, gnn_strerror(rc));
			return rc;
		}
	}
	return GNN_OK;
}

static void local_release(void *ctx, struct smp_call *calls, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		free(calls[i].keep);
		calls[i].keep = NULL;
	}
}

void smp_local_backend(struct smp_local *l, struct smp_backend *be)
{
	*be = (struct smp_backend){ .layout = &l->layout, .ctx = l, .run = local_run,
				    .release = local_release, .describe = local_describe };
}
