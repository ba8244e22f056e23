#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int graph_build_csr(struct graph *g, int64_t num_nodes, int32_t *src, int32_t *dst,
		    int64_t m, bool symmetrize)
{
	int64_t *indptr = NULL, *fill = NULL;
	int32_t *indices = NULL;
	int64_t total = 0, w = 0;
	int rc = GNN_ENOMEM;

	if (num_nodes > INT32_MAX) {
		GNN_ERROR("graph_too_large", "nodes=%lld max=%d reason=\"METIS idx_t is 32-bit\"",
			  (long long)num_nodes, INT32_MAX);
		rc = GNN_ERANGE;
		goto out_free_edges;
	}
	indptr = calloc((size_t)num_nodes + 1, sizeof(*indptr));
	if (indptr == NULL)
		goto out_free_edges;

	/* Counting sort by destination: in-neighbour lists. */
	for (int64_t i = 0; i < m; i++) {
		if (src[i] == dst[i])
			continue;
		indptr[dst[i] + 1]++;
		if (symmetrize)
			indptr[src[i] + 1]++;
	}
	for (int64_t v = 0; v < num_nodes; v++)
		indptr[v + 1] += indptr[v];
	total = indptr[num_nodes];
	indices = malloc((size_t)(total ? total : 1) * sizeof(*indices));
	fill = malloc((size_t)num_nodes * sizeof(*fill) + 1);
	if (indices == NULL || fill == NULL)
		goto out_free_all;
	memcpy(fill, indptr, (size_t)num_nodes * sizeof(*fill));
	for (int64_t i = 0; i < m; i++) {
		if (src[i] == dst[i])
			continue;
		indices[fill[dst[i]]++] = src[i];
		if (symmetrize)
			indices[fill[src[i]]++] = dst[i];
	}
	free(fill);
	fill = NULL;
	free(src);
	free(dst);
	src = dst = NULL;

	/* Sort each row and drop duplicates, compacting in place. */
	for (int64_t v = 0; v < num_nodes; v++) {
		int64_t b = indptr[v], e = indptr[v + 1];

		indptr[v] = w;
		if (e - b > 1)
			qsort(indices + b, (size_t)(e - b), sizeof(*indices), cmp_i32);
		for (int64_t i = b; i < e; i++) {
			if (i > b && indices[i] == indices[i - 1])
				continue;
			indices[w++] = indices[i];
		}
	}
	indptr[num_nodes] = w;
	if (w < total) {
		int32_t *shrunk = realloc(indices, (size_t)(w ? w : 1) * sizeof(*indices));

		if (shrunk != NULL)
			indices = shrunk;
	}
	g->num_nodes = num_nodes;
	g->num_edges = w;
	g->indptr = indptr;
	g->indices = indices;
	g->symmetric = symmetrize;
	return GNN_OK;

out_free_all:
	free(fill);
	free(indices);
	free(indptr);
out_free_edges:
	free(src);
	free(dst);
	return rc;
}

int graph_feature_row(const struct graph *g, int64_t node, float *out)
{
	if (node < 0 || node >= g->num_nodes)
		return GNN_ERANGE;
	if (g->feat != NULL) {
		memcpy(out, g->feat + (size_t)node * (size_t)g->feat_dim,
		       (size_t)g->feat_dim * sizeof(float));
		return GNN_OK;
	}
	if (g->feat_row == NULL)
		return GNN_EINTERNAL;
	return g->feat_row(g, node, out);
}

void graph_free(struct graph *g)
{
	free(g->indptr);
	free(g->indices);
	free(g->labels);
	free(g->split);
	free(g->feat);
	free(g->feat_ctx);
	memset(g, 0, sizeof(*g));
}
