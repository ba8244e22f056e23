#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

uint32_t pt_graph_node_type(const struct pt_graph *g, int64_t v)
{
	int32_t t = gnn_owner_of(g->type_start, g->schema.num_types, v);

	return t < 0 ? 0 : (uint32_t)t;
}

/* Sorts each of the rows' lists and drops duplicates, compacting indices
 * in place; indptr[rows] becomes the count kept, which it returns. */
static int64_t sort_compact(int64_t *indptr, int32_t *indices, int64_t rows)
{
	int64_t w = 0;

	for (int64_t k = 0; k < rows; k++) {
		int64_t b = indptr[k], e = indptr[k + 1];

		indptr[k] = w;
		if (e - b > 1)
			qsort(indices + b, (size_t)(e - b), sizeof(*indices), cmp_i32);
		for (int64_t i = b; i < e; i++) {
			if (i > b && indices[i] == indices[i - 1])
				continue;
			indices[w++] = indices[i];
		}
	}
	indptr[rows] = w;
	return w;
}

/* Counting sort by (destination, relation), the first pass: indptr (rows
 * + 1 entries, zeroed) gets each row's offset into the in-neighbour
 * lists; self-loops are dropped. */
static void count_rows(int64_t *indptr, int64_t rows, int64_t R, const int32_t *src, const int32_t *dst,
		       const uint16_t *rel, int64_t m, bool symmetrize)
{
	for (int64_t i = 0; i < m; i++) {
		int64_t r = rel != NULL ? rel[i] : 0;

		if (src[i] == dst[i])
			continue;
		indptr[dst[i] * R + r + 1]++;
		if (symmetrize)
			indptr[src[i] * R + r + 1]++;
	}
	for (int64_t k = 0; k < rows; k++)
		indptr[k + 1] += indptr[k];
}

/* The second pass: every edge's source into its row of indices, at the
 * offsets count_rows gave. GNN_ENOMEM. */
static int fill_rows(const int64_t *indptr, int64_t rows, int64_t R, const int32_t *src, const int32_t *dst,
		     const uint16_t *rel, int64_t m, bool symmetrize, int32_t *indices)
{
	int64_t *fill = malloc((size_t)rows * sizeof(*fill) + 1);

	if (fill == NULL)
		return GNN_ENOMEM;
	memcpy(fill, indptr, (size_t)rows * sizeof(*fill));
	for (int64_t i = 0; i < m; i++) {
		int64_t r = rel != NULL ? rel[i] : 0;

		if (src[i] == dst[i])
			continue;
		indices[fill[dst[i] * R + r]++] = src[i];
		if (symmetrize)
			indices[fill[src[i] * R + r]++] = dst[i];
	}
	free(fill);
	return GNN_OK;
}

int pt_graph_build_csr(struct pt_graph *g, int64_t num_nodes, int32_t *src, int32_t *dst, uint16_t *rel,
		       int64_t m, bool symmetrize)
{
	int64_t R = g->schema.num_rels > 0 ? g->schema.num_rels : 1, rows = num_nodes * R;
	int64_t *indptr = NULL;
	int32_t *indices = NULL;
	int64_t total, w;
	int rc = GNN_ENOMEM;

	if (num_nodes > INT32_MAX) {
		GNN_ERROR("graph_too_large", "nodes=%lld max=%d reason=\"METIS idx_t is 32-bit\"",
			  (long long)num_nodes, INT32_MAX);
		rc = GNN_ERANGE;
		goto out_free_edges;
	}
	indptr = calloc((size_t)rows + 1, sizeof(*indptr));
	if (indptr == NULL)
		goto out_free_edges;
	count_rows(indptr, rows, R, src, dst, rel, m, symmetrize);
	total = indptr[rows];
	indices = malloc((size_t)(total ? total : 1) * sizeof(*indices));
	if (indices == NULL || fill_rows(indptr, rows, R, src, dst, rel, m, symmetrize, indices) != GNN_OK)
		goto out_free_csr;
	free(src);
	free(dst);
	free(rel);

	if ((w = sort_compact(indptr, indices, rows)) < total) {
		int32_t *shrunk = realloc(indices, (size_t)(w ? w : 1) * sizeof(*indices));

		if (shrunk != NULL)
			indices = shrunk;
	}
	for (int64_t r = 0; r < R; r++)
		g->schema.rels[r].num_edges = 0;
	for (int64_t k = 0; k < rows; k++)
		g->schema.rels[k % R].num_edges += indptr[k + 1] - indptr[k];
	g->num_nodes = num_nodes;
	g->num_edges = w;
	g->indptr = indptr;
	g->indices = indices;
	g->symmetric = symmetrize;
	return GNN_OK;

out_free_csr:
	free(indices);
	free(indptr);
out_free_edges:
	free(src);
	free(dst);
	free(rel);
	return rc;
}

void pt_graph_names(const struct gnn_schema *s, bool rels, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < (rels ? s->num_rels : s->num_types) && len < cap; k++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? "," : "",
					rels ? s->rels[k].name : s->types[k].name);
}

int pt_graph_feature_row(const struct pt_graph *g, int64_t node, float *out)
{
	uint32_t t;
	size_t dim;
	int rc;

	if (node < 0 || node >= g->num_nodes)
		return GNN_ERANGE;
	t = pt_graph_node_type(g, node);
	dim = g->schema.types[t].feat_dim;
	if (dim == 0)
		return GNN_OK;
	if (g->feat[t] != NULL) {
		memcpy(out, g->feat[t] + (size_t)(node - g->type_start[t]) * dim, dim * sizeof(float));
		return GNN_OK;
	}
	if (g->feat_row == NULL)
		return GNN_EINTERNAL;
	if ((rc = g->feat_row(g, node, out)) != GNN_OK)
		return rc;
	pt_graph_norm_row(&g->norm[t], out, dim);
	return GNN_OK;
}

void pt_graph_norm_row(const struct pt_row_norm *n, float *row, size_t dim)
{
	double sum = 0.0;

	if (n->mode == PT_FEAT_NORM_ROW) {
		for (size_t j = 0; j < dim; j++)
			sum += row[j];
		for (size_t j = 0; sum != 0.0 && j < dim; j++)
			row[j] = (float)((double)row[j] / sum);
	} else if (n->mode == PT_FEAT_NORM_STANDARD) {
		for (size_t j = 0; j < dim; j++)
			row[j] = (float)(((double)row[j] - n->shift[j]) * n->scale[j]);
	}
}

void pt_graph_free(struct pt_graph *g)
{
	free(g->indptr);
	free(g->indices);
	free(g->labels);
	free(g->split);
	for (int t = 0; t < GNN_MAX_TYPES; t++) {
		free(g->feat[t]);
		free(g->norm[t].shift);
		free(g->norm[t].scale);
	}
	if (g->feat_free != NULL)
		g->feat_free(g->feat_ctx);
	else
		free(g->feat_ctx);
	memset(g, 0, sizeof(*g));
}
