#include "featnorm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "sys.h"

static const char *const names[] = {
	[PT_FEAT_NORM_NONE] = "none",
	[PT_FEAT_NORM_ROW] = "row",
	[PT_FEAT_NORM_STANDARD] = "standard",
	[PT_FEAT_NORM_AUTO] = "auto",
};

int pt_feat_norm_parse(const char *name, enum pt_feat_norm *mode)
{
	for (size_t m = 0; name != NULL && m < sizeof(names) / sizeof(names[0]); m++)
		if (strcmp(name, names[m]) == 0) {
			*mode = (enum pt_feat_norm)m;
			return GNN_OK;
		}
	return GNN_EINVAL;
}

const char *pt_feat_norm_name(enum pt_feat_norm mode)
{
	return (size_t)mode < sizeof(names) / sizeof(names[0]) ? names[mode] : "?";
}

/* Type t's rows as stored (before any normalisation), one at a time:
 * in memory a pointer into g->feat[t], else g->feat_row's output in buf. */
struct rows {
	const struct pt_graph *g;
	uint32_t t;
	size_t dim;
	int64_t n;   /* the type's nodes */
	float *buf;  /* [dim], for rows that g->feat_row produces */
};

/* Row i (a per-type index) into *row. Every 65536 rows a stop request
 * ends the pass: a generated type can be products-sized. */
static int row_at(const struct rows *r, int64_t i, const float **row)
{
	int rc;

	if ((i & 0xffff) == 0 && gnn_stop_requested())
		return GNN_ECLOSED;
	if (r->g->feat[r->t] != NULL) {
		*row = r->g->feat[r->t] + (size_t)i * r->dim;
		return GNN_OK;
	}
	if ((rc = r->g->feat_row(r->g, r->g->type_start[r->t] + i, r->buf)) != GNN_OK)
		return rc;
	*row = r->buf;
	return GNN_OK;
}

/* auto: ROW when every value is finite and >= 0, else NONE (decided at
 * the first other value, so a signed type costs one row or so). */
static int resolve_auto(const struct rows *r, enum pt_feat_norm *mode)
{
	const float *row;
	int rc;

	*mode = PT_FEAT_NORM_ROW;
	for (int64_t i = 0; i < r->n; i++) {
		if ((rc = row_at(r, i, &row)) != GNN_OK)
			return rc;
		for (size_t j = 0; j < r->dim; j++)
			if (!(row[j] >= 0.0f) || !isfinite(row[j])) {
				*mode = PT_FEAT_NORM_NONE;
				return GNN_OK;
			}
	}
	return GNN_OK;
}

/* STANDARD's statistics into n (allocated): shift the column means, scale
 * 1/sd (population sd, in double), 0 for a constant column. The double sum
 * of a column of equal floats is exact (under 2^29 rows), so its mean is
 * that value and its sd exactly 0. */
static int column_stats(const struct rows *r, struct pt_row_norm *n)
{
	const float *row;
	int rc;

	n->shift = calloc(r->dim, sizeof(*n->shift));
	n->scale = calloc(r->dim, sizeof(*n->scale));
	if (n->shift == NULL || n->scale == NULL)
		return GNN_ENOMEM;
	for (int64_t i = 0; i < r->n; i++) {
		if ((rc = row_at(r, i, &row)) != GNN_OK)
			return rc;
		for (size_t j = 0; j < r->dim; j++)
			n->shift[j] += row[j];
	}
	for (size_t j = 0; r->n > 0 && j < r->dim; j++)
		n->shift[j] /= (double)r->n;
	/* the second pass sums squared deviations: no cancellation */
	for (int64_t i = 0; i < r->n; i++) {
		if ((rc = row_at(r, i, &row)) != GNN_OK)
			return rc;
		for (size_t j = 0; j < r->dim; j++)
			n->scale[j] += ((double)row[j] - n->shift[j]) * ((double)row[j] - n->shift[j]);
	}
	for (size_t j = 0; j < r->dim; j++)
		n->scale[j] = n->scale[j] > 0.0 ? 1.0 / sqrt(n->scale[j] / (double)r->n) : 0.0;
	return GNN_OK;
}

/* Type t's rows in memory, normalised in place; the statistics, needed no
 * longer, go. Rows from g->feat_row keep them for pt_graph_feature_row. */
static void normalise_in_memory(struct pt_graph *g, uint32_t t, size_t dim)
{
	struct pt_row_norm *n = &g->norm[t];
	int64_t rows = g->type_start[t + 1] - g->type_start[t];

	if (g->feat[t] == NULL)
		return;
	for (int64_t i = 0; i < rows; i++)
		pt_graph_norm_row(n, g->feat[t] + (size_t)i * dim, dim);
	free(n->shift);
	free(n->scale);
	n->shift = n->scale = NULL;
}

/* One type with features: the mode resolved, its statistics, its rows. */
static int normalise_type(struct pt_graph *g, uint32_t t, enum pt_feat_norm requested)
{
	struct rows r = { .g = g, .t = t, .dim = g->schema.types[t].feat_dim,
			  .n = g->type_start[t + 1] - g->type_start[t] };
	enum pt_feat_norm mode = requested;
	int rc = GNN_OK;

	if (g->feat[t] == NULL) {
		if (g->feat_row == NULL)
			return GNN_EINTERNAL;
		if ((r.buf = malloc(r.dim * sizeof(*r.buf))) == NULL)
			return GNN_ENOMEM;
	}
	if (requested == PT_FEAT_NORM_AUTO)
		rc = resolve_auto(&r, &mode);
	if (rc == GNN_OK && mode == PT_FEAT_NORM_STANDARD)
		rc = column_stats(&r, &g->norm[t]);
	free(r.buf);
	if (rc != GNN_OK)
		return rc;
	g->norm[t].mode = mode;
	normalise_in_memory(g, t, r.dim);
	GNN_INFO("feat_norm", "type=%s mode=%s requested=%s", g->schema.types[t].name, pt_feat_norm_name(mode),
		 pt_feat_norm_name(requested));
	return GNN_OK;
}

int pt_feat_norm_apply(struct pt_graph *g, enum pt_feat_norm requested)
{
	int rc;

	for (uint32_t t = 0; t < g->schema.num_types; t++)
		if (g->schema.types[t].feat_dim > 0 && (rc = normalise_type(g, t, requested)) != GNN_OK)
			return rc;
	return GNN_OK;
}

void pt_feat_norm_meta(const struct pt_graph *g, enum pt_feat_norm requested, json_t *meta)
{
	json_t *types = json_object_get(meta, "node_types");

	for (uint32_t t = 0; t < g->schema.num_types; t++)
		if (g->schema.types[t].feat_dim > 0)
			json_object_set_new(json_array_get(types, t), "feat_norm",
					    json_string(pt_feat_norm_name(g->norm[t].mode)));
	json_object_set_new(meta, "feat_norm_requested", json_string(pt_feat_norm_name(requested)));
}
