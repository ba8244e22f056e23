#include "local_backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "err.h"
#include "log.h"
#include "part.h"
#include "partq.h"

struct smp_local {
	struct gnn_layout layout;       /* from a folder: meta.layout (pointers: meta's) */
	struct gnn_part *parts;         /* [num_parts]: mapped (from a folder) or copied */
	/* Only when opened from a folder: */
	struct gnn_meta meta;
	struct gnn_arr node_map;        /* LOOKUP's, when meta.json names one (data NULL: none) */
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

/* The output's node map, mapped for LOOKUP when meta.json names one, and
 * checked as a graph store checks its own (partq.h). */
static int open_node_map(const char *dir, bool verify, struct smp_local *l)
{
	int rc;

	if (json_object_get(l->meta.json, "node_map") == NULL)
		return GNN_OK;
	if ((rc = gnn_node_map_open(dir, &l->meta, verify ? GNN_PART_VERIFY : 0, &l->node_map)) != GNN_OK)
		return rc;
	for (uint32_t p = 0; p < l->layout.num_parts && rc == GNN_OK; p++)
		rc = gnn_partq_node_map_check(&l->layout, &l->node_map, p, dir);
	return rc;
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
	if ((rc = open_node_map(dir, verify, l)) != GNN_OK)
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
		gnn_arr_close(&l->node_map);
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

/* SAMPLE, FEAT, LABEL, NODES and LOOKUP: what a graph store does for one
 * request (partq.h), answered into memory c->keep owns. */
static int local_sample(const struct gnn_part *pt, struct smp_call *c, char *why, size_t why_len)
{
	struct gnn_partq_sample s;
	int rc;

	if ((rc = gnn_partq_sample_size(pt, c->ids, c->n, c->fanouts, &s, why, why_len)) != GNN_OK ||
	    (rc = gnn_partq_sample(pt, c->seed, c->ids, c->n, c->fanouts, &s)) != GNN_OK) {
		gnn_partq_sample_free(&s);
		return rc;
	}
	c->counts = s.counts;
	c->nbrs = s.nbrs;
	c->total = s.total;
	c->keep = s.mem;
	return GNN_OK;
}

static int local_feat(const struct gnn_part *pt, struct smp_call *c, char *why, size_t why_len)
{
	void *rows;
	int rc;

	if (pt->feat_dtype != c->feat_dtype) {
		snprintf(why, why_len, "rows of %s asked for, the partition's are %s", gnn_dtype_name(c->feat_dtype),
			 gnn_dtype_name(pt->feat_dtype));
		return GNN_ERANGE;
	}
	if ((rows = malloc((size_t)c->n * c->feat_dim * gnn_dtype_size(pt->feat_dtype) + 1)) == NULL)
		return GNN_ENOMEM;
	if ((rc = gnn_partq_feat_rows(pt, c->ids, c->n, c->feat_dim, rows, why, why_len)) != GNN_OK) {
		free(rows);
		return rc;
	}
	c->rows = rows;
	c->keep = rows;
	return GNN_OK;
}

static int local_label(const struct gnn_part *pt, struct smp_call *c, char *why, size_t why_len)
{
	int32_t *labels = malloc((size_t)c->n * sizeof(int32_t) + 1);
	int rc;

	if (labels == NULL)
		return GNN_ENOMEM;
	if ((rc = gnn_partq_labels(pt, c->ids, c->n, labels, why, why_len)) != GNN_OK) {
		free(labels);
		return rc;
	}
	c->labels = labels;
	c->keep = labels;
	return GNN_OK;
}

static int local_nodes(const struct gnn_part *pt, struct smp_call *c)
{
	int64_t *found;
	int rc;

	if ((rc = gnn_partq_nodes(pt, c->split, c->cursor, c->limit, &found, &c->num_found, &c->next_cursor)) != GNN_OK)
		return rc;
	c->found = found;
	c->keep = found;
	return GNN_OK;
}

static int local_lookup(const struct smp_local *l, struct smp_call *c, char *why, size_t why_len)
{
	int64_t *found = malloc((size_t)c->n * sizeof(*found) + 1);
	int rc;

	if (found == NULL)
		return GNN_ENOMEM;
	if ((rc = gnn_partq_lookup(&l->layout, &l->node_map, c->part, c->node_type, c->ids, c->n, found, why,
				   why_len)) != GNN_OK) {
		free(found);
		return rc;
	}
	c->found = found;
	c->keep = found;
	return GNN_OK;
}

/* A call this partition cannot answer, for want of what: rc. */
static int lacks(char *why, size_t why_len, uint32_t part, int rc, const char *what)
{
	snprintf(why, why_len, "partition %" PRIu32 " (in process) has %s", part, what);
	return rc;
}

/* One call of a partition in this process, answered; on failure why
 * names the partition and what failed. */
static int local_call(const struct smp_local *l, struct smp_call *c, char *why, size_t why_len)
{
	const struct gnn_part *pt = &l->parts[c->part];
	char detail[256] = "";
	int rc;

	switch (c->type) {
	case GNN_MSG_SAMPLE_REQ:
		rc = local_sample(pt, c, detail, sizeof(detail));
		break;
	case GNN_MSG_FEAT_REQ:
		rc = local_feat(pt, c, detail, sizeof(detail));
		break;
	case GNN_MSG_LABEL_REQ:
		rc = local_label(pt, c, detail, sizeof(detail));
		break;
	case GNN_MSG_NODES_REQ:
		if (pt->split == NULL)
			return lacks(why, why_len, c->part, GNN_EINVAL, "no split codes");
		rc = local_nodes(pt, c);
		break;
	case GNN_MSG_LOOKUP_REQ:
		if (l->node_map.data == NULL)
			return lacks(why, why_len, c->part, GNN_ENOENT, "no node map: only graph stores serve them");
		rc = local_lookup(l, c, detail, sizeof(detail));
		break;
	case GNN_MSG_PREDICT_REQ:
	case GNN_MSG_LINK_REQ:
		return lacks(why, why_len, c->part, GNN_ENOENT, "no predictions: only graph stores serve them");
	default:
		rc = GNN_EINVAL;
	}
	if (rc != GNN_OK)
		snprintf(why, why_len, "partition %" PRIu32 " (in process): %s", c->part,
			 detail[0] != '\0' ? detail : gnn_strerror(rc));
	return rc;
}

static int local_run(void *ctx, struct smp_call *calls, size_t n, char *why, size_t why_len)
{
	struct smp_local *l = ctx;
	int rc = GNN_OK;

	for (size_t i = 0; i < n; i++)
		calls[i].keep = NULL;
	for (size_t i = 0; i < n && rc == GNN_OK; i++) {
		if (calls[i].part >= l->layout.num_parts) {
			snprintf(why, why_len, "no partition %" PRIu32, calls[i].part);
			return GNN_ERANGE;
		}
		rc = local_call(l, &calls[i], why, why_len);
	}
	return rc;
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
