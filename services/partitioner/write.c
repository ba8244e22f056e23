#include "write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arr.h"
#include "err.h"
#include "log.h"
#include "sys.h"

#define CHUNK_ELEMS (1 << 16)

struct part_counts {
	int64_t nodes, edges, remote_edges, split[4];
};

/* dir + "/" + name into out; GNN_ERANGE when it does not fit. */
static int join(char *out, size_t len, const char *dir, const char *name)
{
	int k = snprintf(out, len, "%s/%s", dir, name);

	if (k < 0 || (size_t)k >= len) {
		GNN_ERROR("path_too_long", "dir=%s name=%s", dir, name);
		return GNN_ERANGE;
	}
	return GNN_OK;
}

static json_t *file_json(const char *name, const struct gnn_arr_info *info)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "file", name, "dtype",
			 gnn_dtype_name(info->dtype), "rows", (json_int_t)info->rows, "cols",
			 (json_int_t)info->cols, "bytes", (json_int_t)info->file_bytes, "crc32",
			 (json_int_t)info->data_crc32);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Streams the CSR of partition p: offsets in memory (n_p + 1), neighbour
 * IDs through a chunk buffer. */
static int write_csr(const struct graph *g, const struct partition *pt, int32_t p, const char *pdir,
		     json_t *files, struct part_counts *pc)
{
	int64_t start = pt->offsets[p], end = pt->offsets[p + 1], n = end - start, fill = 0;
	int64_t *indptr = malloc(((size_t)n + 1) * sizeof(*indptr));
	int64_t *chunk = malloc(CHUNK_ELEMS * sizeof(*chunk));
	struct gnn_arr_writer *w = NULL;
	struct gnn_arr_info info;
	char path[4096];
	int rc = GNN_ENOMEM;

	if (indptr == NULL || chunk == NULL)
		goto out;
	if ((rc = join(path, sizeof(path), pdir, "indices.arr")) != GNN_OK ||
	    (rc = gnn_arr_writer_open(path, GNN_DT_I64, 1, &w)) != GNN_OK)
		goto out;
	indptr[0] = 0;
	for (int64_t i = 0; i < n; i++) {
		int64_t v = pt->orig_id[start + i], b = g->indptr[v], e = g->indptr[v + 1];

		/* Flush first if this row does not fit; rows longer than a chunk go alone. */
		if (fill + (e - b) > CHUNK_ELEMS && fill > 0) {
			if ((rc = gnn_arr_writer_append(w, chunk, (uint64_t)fill)) != GNN_OK)
				goto out;
			fill = 0;
		}
		if (e - b > CHUNK_ELEMS) {
			int64_t *row = malloc((size_t)(e - b) * sizeof(*row));

			if (row == NULL) {
				rc = GNN_ENOMEM;
				goto out;
			}
			for (int64_t k = b; k < e; k++)
				row[k - b] = pt->new_id[g->indices[k]];
			qsort(row, (size_t)(e - b), sizeof(*row), cmp_i64);
			rc = gnn_arr_writer_append(w, row, (uint64_t)(e - b));
			free(row);
			if (rc != GNN_OK)
				goto out;
		} else {
			for (int64_t k = b; k < e; k++)
				chunk[fill + k - b] = pt->new_id[g->indices[k]];
			qsort(chunk + fill, (size_t)(e - b), sizeof(*chunk), cmp_i64);
			fill += e - b;
		}
		for (int64_t k = b; k < e; k++)
			pc->remote_edges += pt->part[g->indices[k]] != p;
		indptr[i + 1] = indptr[i] + (e - b);
	}
	if (fill > 0 && (rc = gnn_arr_writer_append(w, chunk, (uint64_t)fill)) != GNN_OK)
		goto out;
	rc = gnn_arr_writer_finish(w, &info);
	w = NULL;
	if (rc != GNN_OK)
		goto out;
	json_object_set_new(files, "indices", file_json("indices.arr", &info));
	pc->edges = indptr[n];
	if ((rc = join(path, sizeof(path), pdir, "indptr.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_I64, (uint64_t)n + 1, 1, indptr, &info)) != GNN_OK)
		goto out;
	json_object_set_new(files, "indptr", file_json("indptr.arr", &info));
out:
	gnn_arr_writer_abort(w);
	free(indptr);
	free(chunk);
	return rc;
}

static int write_features(const struct graph *g, const struct partition *pt, int32_t p,
			  const char *pdir, json_t *files)
{
	int64_t start = pt->offsets[p], end = pt->offsets[p + 1];
	int64_t rows_per_chunk = CHUNK_ELEMS / g->feat_dim > 0 ? CHUNK_ELEMS / g->feat_dim : 1;
	float *buf = malloc((size_t)rows_per_chunk * (size_t)g->feat_dim * sizeof(*buf));
	struct gnn_arr_writer *w = NULL;
	struct gnn_arr_info info;
	char path[4096];
	int rc = GNN_ENOMEM;

	if (buf == NULL)
		goto out;
	if ((rc = join(path, sizeof(path), pdir, "feat.arr")) != GNN_OK ||
	    (rc = gnn_arr_writer_open(path, GNN_DT_F32, (uint64_t)g->feat_dim, &w)) != GNN_OK)
		goto out;
	for (int64_t i = start; i < end; i += rows_per_chunk) {
		int64_t rows = end - i < rows_per_chunk ? end - i : rows_per_chunk;

		for (int64_t r = 0; r < rows; r++) {
			rc = graph_feature_row(g, pt->orig_id[i + r], buf + (size_t)r * (size_t)g->feat_dim);
			if (rc != GNN_OK)
				goto out;
		}
		if ((rc = gnn_arr_writer_append(w, buf, (uint64_t)rows)) != GNN_OK)
			goto out;
		if (gnn_stop_requested()) {
			rc = GNN_ECLOSED;
			goto out;
		}
	}
	rc = gnn_arr_writer_finish(w, &info);
	w = NULL;
	if (rc == GNN_OK)
		json_object_set_new(files, "feat", file_json("feat.arr", &info));
out:
	gnn_arr_writer_abort(w);
	free(buf);
	return rc;
}

static int write_node_data(const struct graph *g, const struct partition *pt, int32_t p,
			   const char *pdir, json_t *files, struct part_counts *pc)
{
	int64_t start = pt->offsets[p], n = pt->offsets[p + 1] - start;
	int32_t *labels = malloc((size_t)(n ? n : 1) * sizeof(*labels));
	uint8_t *split = malloc((size_t)(n ? n : 1));
	struct gnn_arr_info info;
	char path[4096];
	int rc = GNN_ENOMEM;

	if (labels == NULL || split == NULL)
		goto out;
	for (int64_t i = 0; i < n; i++) {
		int64_t v = pt->orig_id[start + i];

		labels[i] = g->labels[v];
		split[i] = g->split[v];
		pc->split[g->split[v] & 3]++;
	}
	if ((rc = join(path, sizeof(path), pdir, "label.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_I32, (uint64_t)n, 1, labels, &info)) != GNN_OK)
		goto out;
	json_object_set_new(files, "label", file_json("label.arr", &info));
	if ((rc = join(path, sizeof(path), pdir, "split.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_U8, (uint64_t)n, 1, split, &info)) != GNN_OK)
		goto out;
	json_object_set_new(files, "split", file_json("split.arr", &info));
out:
	free(labels);
	free(split);
	return rc;
}

/* Adds {"nodes", "edges", "train"}: max / mean over partitions, 1.0 = perfect. */
static void add_balance(json_t *meta, const struct part_counts *pc, int32_t parts)
{
	double max[3] = { 0 }, sum[3] = { 0 }, r[3];

	for (int32_t p = 0; p < parts; p++) {
		double x[3] = { (double)pc[p].nodes, (double)pc[p].edges,
				(double)pc[p].split[GNN_SPLIT_TRAIN] };

		for (int k = 0; k < 3; k++) {
			sum[k] += x[k];
			max[k] = x[k] > max[k] ? x[k] : max[k];
		}
	}
	for (int k = 0; k < 3; k++)
		r[k] = sum[k] > 0 ? max[k] / (sum[k] / parts) : 1.0;
	json_object_set_new(meta, "balance",
			    json_pack("{s:f, s:f, s:f}", "nodes", r[0], "edges", r[1], "train", r[2]));
}

int write_partitions(const struct graph *g, const struct partition *pt, const char *dir, json_t *meta)
{
	struct part_counts *pc = calloc((size_t)pt->num_parts, sizeof(*pc));
	json_t *parts = json_array();
	struct gnn_arr_info info;
	char path[4096], pdir[4096];
	int rc = GNN_ENOMEM;

	if (pc == NULL || parts == NULL)
		goto out;
	if ((rc = join(path, sizeof(path), dir, "node-map.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_I64, (uint64_t)g->num_nodes, 1, pt->orig_id, &info)) != GNN_OK)
		goto out;
	json_object_set_new(meta, "node_map", file_json("node-map.arr", &info));
	for (int32_t p = 0; p < pt->num_parts; p++) {
		json_t *files = json_object(), *po;
		char name[32];
		double t0 = gnn_now();

		snprintf(name, sizeof(name), "part-%d", p);
		if (files == NULL) {
			rc = GNN_ENOMEM;
			goto out;
		}
		if ((rc = join(pdir, sizeof(pdir), dir, name)) != GNN_OK || mkdir(pdir, 0755) != 0) {
			json_decref(files);
			GNN_ERROR("mkdir_failed", "dir=%s", pdir);
			rc = GNN_EIO;
			goto out;
		}
		pc[p].nodes = pt->offsets[p + 1] - pt->offsets[p];
		if ((rc = write_csr(g, pt, p, pdir, files, &pc[p])) != GNN_OK ||
		    (rc = write_features(g, pt, p, pdir, files)) != GNN_OK ||
		    (rc = write_node_data(g, pt, p, pdir, files, &pc[p])) != GNN_OK) {
			json_decref(files);
			goto out;
		}
		po = json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "id", p, "dir",
			       name, "node_start", (json_int_t)pt->offsets[p], "node_end",
			       (json_int_t)pt->offsets[p + 1], "num_nodes", (json_int_t)pc[p].nodes,
			       "num_edges", (json_int_t)pc[p].edges, "num_remote_edges",
			       (json_int_t)pc[p].remote_edges, "num_train",
			       (json_int_t)pc[p].split[GNN_SPLIT_TRAIN], "num_valid",
			       (json_int_t)pc[p].split[GNN_SPLIT_VALID], "num_test",
			       (json_int_t)pc[p].split[GNN_SPLIT_TEST], "files", files);
		if (po == NULL || json_array_append_new(parts, po) != 0) {
			rc = GNN_ENOMEM;
			goto out;
		}
		GNN_INFO("part_written", "part=%d nodes=%lld edges=%lld remote_edges=%lld train=%lld valid=%lld test=%lld seconds=%.2f",
			 p, (long long)pc[p].nodes, (long long)pc[p].edges, (long long)pc[p].remote_edges,
			 (long long)pc[p].split[GNN_SPLIT_TRAIN], (long long)pc[p].split[GNN_SPLIT_VALID],
			 (long long)pc[p].split[GNN_SPLIT_TEST], gnn_now() - t0);
	}
	json_object_set(meta, "parts", parts);
	add_balance(meta, pc, pt->num_parts);
	rc = GNN_OK;
out:
	json_decref(parts);
	free(pc);
	return rc;
}
