#include "write.h"

#include <math.h>
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

int pt_write_join(char *out, size_t len, const char *dir, const char *name)
{
	int k = snprintf(out, len, "%s/%s", dir, name);

	if (k < 0 || (size_t)k >= len) {
		GNN_ERROR("path_too_long", "dir=%s name=%s", dir, name);
		return GNN_ERANGE;
	}
	return GNN_OK;
}

json_t *pt_write_file_entry(const char *name, const struct gnn_arr_info *info)
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

/* Neighbour IDs on their way to indices.arr, through a chunk buffer. */
struct csr_out {
	struct gnn_arr_writer *w;
	int64_t *chunk;
	int64_t fill;
};

/* Appends the stored entries [b, e) of one row as new IDs, sorted. */
static int csr_append_row(struct csr_out *o, const struct pt_graph *g, const struct pt_partition *pt, int64_t b,
			  int64_t e)
{
	int64_t *row;
	int rc;

	/* Flush first if this row does not fit; rows longer than a chunk go alone. */
	if (o->fill + (e - b) > CHUNK_ELEMS && o->fill > 0) {
		if ((rc = gnn_arr_writer_append(o->w, o->chunk, (uint64_t)o->fill)) != GNN_OK)
			return rc;
		o->fill = 0;
	}
	row = e - b > CHUNK_ELEMS ? malloc((size_t)(e - b) * sizeof(*row)) : o->chunk + o->fill;
	if (row == NULL)
		return GNN_ENOMEM;
	for (int64_t k = b; k < e; k++)
		row[k - b] = pt->new_id[g->indices[k]];
	qsort(row, (size_t)(e - b), sizeof(*row), cmp_i64);
	if (e - b <= CHUNK_ELEMS) {
		o->fill += e - b;
		return GNN_OK;
	}
	rc = gnn_arr_writer_append(o->w, row, (uint64_t)(e - b));
	free(row);
	return rc;
}

/* Streams the CSR of partition p: offsets in memory (n_p R + 1: row
 * i R + r is local node i's in-neighbours under relation r), neighbour IDs
 * through a chunk buffer. */
static int write_csr(const struct pt_graph *g, const struct pt_partition *pt, int32_t p, const char *pdir,
		     json_t *files, struct part_counts *pc)
{
	int64_t start = pt->offsets[p], n = pt->offsets[p + 1] - start, R = g->schema.num_rels;
	int64_t *indptr = malloc(((size_t)(n * R) + 1) * sizeof(*indptr));
	struct csr_out o = { .chunk = malloc(CHUNK_ELEMS * sizeof(*o.chunk)) };
	struct gnn_arr_info info;
	char path[4096];
	int rc = GNN_ENOMEM;

	if (indptr == NULL || o.chunk == NULL)
		goto out;
	if ((rc = pt_write_join(path, sizeof(path), pdir, "indices.arr")) != GNN_OK ||
	    (rc = gnn_arr_writer_open(path, GNN_DT_I64, 1, &o.w)) != GNN_OK)
		goto out;
	indptr[0] = 0;
	for (int64_t i = 0; i < n; i++) {
		int64_t v = pt->orig_id[start + i];

		for (int64_t r = 0; r < R; r++) {
			int64_t b = g->indptr[v * R + r], e = g->indptr[v * R + r + 1];

			if ((rc = csr_append_row(&o, g, pt, b, e)) != GNN_OK)
				goto out;
			indptr[i * R + r + 1] = indptr[i * R + r] + (e - b);
		}
		for (int64_t k = graph_row_begin(g, v); k < graph_row_end(g, v); k++)
			pc->remote_edges += pt->part[g->indices[k]] != p;
	}
	if (o.fill > 0 && (rc = gnn_arr_writer_append(o.w, o.chunk, (uint64_t)o.fill)) != GNN_OK)
		goto out;
	rc = gnn_arr_writer_finish(o.w, &info);
	o.w = NULL;
	if (rc != GNN_OK)
		goto out;
	json_object_set_new(files, "indices", pt_write_file_entry("indices.arr", &info));
	pc->edges = indptr[n * R];
	if ((rc = pt_write_join(path, sizeof(path), pdir, "indptr.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_I64, (uint64_t)(n * R) + 1, 1, indptr, &info)) != GNN_OK)
		goto out;
	json_object_set_new(files, "indptr", pt_write_file_entry("indptr.arr", &info));
out:
	gnn_arr_writer_abort(o.w);
	free(indptr);
	free(o.chunk);
	return rc;
}

/* rows x dim floats of type t's nodes orig[0 .. rows) into halves; a
 * finite value beyond f16's range (65,504) would turn into infinity and
 * poison training: GNN_ERANGE, naming it. */
static int to_half(const struct pt_graph *g, uint32_t t, const int64_t *orig, const float *buf, int64_t rows,
		   int64_t dim, uint16_t *half)
{
	size_t n = (size_t)rows * (size_t)dim;

	gnn_f32_to_f16(buf, n, half);
	for (size_t k = 0; k < n; k++)
		if ((half[k] & 0x7c00) == 0x7c00 && isfinite(buf[k])) {
			GNN_ERROR("feature_out_of_range", "type=%s node=%lld column=%lld value=%g reason=\"beyond f16's "
				  "range (65504): partition with --feature-dtype f32, or scale the features\"",
				  g->schema.types[t].name, (long long)orig[k / (size_t)dim], (long long)(k % (size_t)dim),
				  (double)buf[k]);
			return GNN_ERANGE;
		}
	return GNN_OK;
}

/* Type t's feature rows of partition p into feat-<type>.arr as dt (f16:
 * each chunk rounded into half), its entry (JSON null for a type without
 * features) into *entry. */
static int write_type_features(const struct pt_graph *g, const struct pt_partition *pt, int32_t p, uint32_t t,
			       enum gnn_dtype dt, const char *pdir, json_t **entry)
{
	const int64_t *to = pt->type_offsets + (size_t)p * pt->num_types;
	int64_t start = to[t], end = to[t + 1], dim = g->schema.types[t].feat_dim;
	int64_t rows_per_chunk = dim > 0 && CHUNK_ELEMS / dim > 0 ? CHUNK_ELEMS / dim : 1;
	struct gnn_arr_writer *w = NULL;
	struct gnn_arr_info info;
	char path[4096], name[GNN_NAME_MAX + 16];
	float *buf = NULL;
	uint16_t *half = NULL;
	int rc = GNN_ENOMEM;

	*entry = NULL;
	if (dim == 0) {
		*entry = json_null();
		return GNN_OK;
	}
	snprintf(name, sizeof(name), "feat-%s.arr", g->schema.types[t].name);
	if ((buf = malloc((size_t)rows_per_chunk * (size_t)dim * sizeof(*buf))) == NULL ||
	    (dt == GNN_DT_F16 && (half = malloc((size_t)rows_per_chunk * (size_t)dim * sizeof(*half))) == NULL))
		goto out;
	if ((rc = pt_write_join(path, sizeof(path), pdir, name)) != GNN_OK ||
	    (rc = gnn_arr_writer_open(path, dt, (uint64_t)dim, &w)) != GNN_OK)
		goto out;
	for (int64_t i = start; i < end; i += rows_per_chunk) {
		int64_t rows = end - i < rows_per_chunk ? end - i : rows_per_chunk;

		for (int64_t r = 0; r < rows; r++) {
			rc = pt_graph_feature_row(g, pt->orig_id[i + r], buf + (size_t)r * (size_t)dim);
			if (rc != GNN_OK)
				goto out;
		}
		if (half != NULL && (rc = to_half(g, t, pt->orig_id + i, buf, rows, dim, half)) != GNN_OK)
			goto out;
		if ((rc = gnn_arr_writer_append(w, half != NULL ? (void *)half : buf, (uint64_t)rows)) != GNN_OK)
			goto out;
		if (gnn_stop_requested()) {
			rc = GNN_ECLOSED;
			goto out;
		}
	}
	rc = gnn_arr_writer_finish(w, &info);
	w = NULL;
	if (rc == GNN_OK)
		*entry = pt_write_file_entry(name, &info);
out:
	gnn_arr_writer_abort(w);
	free(buf);
	free(half);
	return rc;
}

/* files.feat: one entry per node type, in type order. */
static int write_features(const struct pt_graph *g, const struct pt_partition *pt, int32_t p, enum gnn_dtype dt,
			  const char *pdir, json_t *files)
{
	json_t *feat = json_array(), *entry;
	int rc = GNN_OK;

	for (uint32_t t = 0; feat != NULL && rc == GNN_OK && t < pt->num_types; t++)
		if ((rc = write_type_features(g, pt, p, t, dt, pdir, &entry)) == GNN_OK &&
		    json_array_append_new(feat, entry) != 0)
			rc = GNN_ENOMEM;
	if (feat == NULL)
		rc = GNN_ENOMEM;
	if (rc == GNN_OK)
		json_object_set(files, "feat", feat);
	json_decref(feat);
	return rc;
}

static int write_node_data(const struct pt_graph *g, const struct pt_partition *pt, int32_t p,
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
	if ((rc = pt_write_join(path, sizeof(path), pdir, "label.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_I32, (uint64_t)n, 1, labels, &info)) != GNN_OK)
		goto out;
	json_object_set_new(files, "label", pt_write_file_entry("label.arr", &info));
	if ((rc = pt_write_join(path, sizeof(path), pdir, "split.arr")) != GNN_OK ||
	    (rc = gnn_arr_write(path, GNN_DT_U8, (uint64_t)n, 1, split, &info)) != GNN_OK)
		goto out;
	json_object_set_new(files, "split", pt_write_file_entry("split.arr", &info));
out:
	free(labels);
	free(split);
	return rc;
}

/* max / mean of x[p] over the partitions (1.0 = perfect, also for none). */
static double max_over_mean(const double *x, int32_t parts)
{
	double max = 0, sum = 0;

	for (int32_t p = 0; p < parts; p++) {
		sum += x[p];
		max = x[p] > max ? x[p] : max;
	}
	return sum > 0 ? max / (sum / parts) : 1.0;
}

/* Adds {"nodes", "edges", "train", "types": {TYPE: ...}}: max / mean over
 * partitions, 1.0 = perfect. */
static int add_balance(json_t *meta, const struct pt_graph *g, const struct pt_partition *pt,
		       const struct part_counts *pc)
{
	int32_t parts = pt->num_parts;
	uint32_t T = pt->num_types;
	double *x = malloc((size_t)parts * sizeof(*x)), r[3];
	json_t *types = json_object();

	if (x == NULL || types == NULL) {
		free(x);
		json_decref(types);
		return GNN_ENOMEM;
	}
	for (int k = 0; k < 3; k++) {
		for (int32_t p = 0; p < parts; p++)
			x[p] = (double)(k == 0 ? pc[p].nodes : k == 1 ? pc[p].edges : pc[p].split[GNN_SPLIT_TRAIN]);
		r[k] = max_over_mean(x, parts);
	}
	for (uint32_t t = 0; t < T; t++) {
		for (int32_t p = 0; p < parts; p++)
			x[p] = (double)(pt->type_offsets[(size_t)p * T + t + 1] - pt->type_offsets[(size_t)p * T + t]);
		json_object_set_new(types, g->schema.types[t].name, json_real(max_over_mean(x, parts)));
	}
	free(x);
	json_object_set_new(meta, "balance", json_pack("{s:f, s:f, s:f, s:o}", "nodes", r[0], "edges", r[1],
						       "train", r[2], "types", types));
	return GNN_OK;
}

/* node-map.arr: each new ID's original per-type ID (its ID among its
 * type's nodes in the input), streamed through a chunk buffer. */
static int write_node_map(const struct pt_graph *g, const struct pt_partition *pt, const char *dir, json_t *meta)
{
	int64_t *chunk = malloc(CHUNK_ELEMS * sizeof(*chunk)), n = g->num_nodes;
	struct gnn_arr_writer *w = NULL;
	struct gnn_arr_info info;
	char path[4096];
	int rc = GNN_ENOMEM;

	if (chunk == NULL)
		goto out;
	if ((rc = pt_write_join(path, sizeof(path), dir, "node-map.arr")) != GNN_OK ||
	    (rc = gnn_arr_writer_open(path, GNN_DT_I64, 1, &w)) != GNN_OK)
		goto out;
	for (int64_t i = 0; i < n; i += CHUNK_ELEMS) {
		int64_t rows = n - i < CHUNK_ELEMS ? n - i : CHUNK_ELEMS;

		for (int64_t k = 0; k < rows; k++) {
			int64_t v = pt->orig_id[i + k];

			chunk[k] = v - g->type_start[pt_graph_node_type(g, v)];
		}
		if ((rc = gnn_arr_writer_append(w, chunk, (uint64_t)rows)) != GNN_OK)
			goto out;
	}
	rc = gnn_arr_writer_finish(w, &info);
	w = NULL;
	if (rc == GNN_OK)
		json_object_set_new(meta, "node_map", pt_write_file_entry("node-map.arr", &info));
out:
	gnn_arr_writer_abort(w);
	free(chunk);
	return rc;
}

/* parts[p]: its ranges (type_offsets: the T + 1 boundaries of its types),
 * counts (type_nodes: per type) and files. */
static json_t *part_json(const struct pt_graph *g, const struct pt_partition *pt, int32_t p, const char *name,
			 const struct part_counts *pc, json_t *files)
{
	const int64_t *to = pt->type_offsets + (size_t)p * pt->num_types;
	json_t *offs = json_array(), *counts = json_object();

	for (uint32_t t = 0; t <= pt->num_types; t++)
		json_array_append_new(offs, json_integer(to[t]));
	for (uint32_t t = 0; t < pt->num_types; t++)
		json_object_set_new(counts, g->schema.types[t].name, json_integer(to[t + 1] - to[t]));
	return json_pack("{s:i, s:s, s:I, s:I, s:o, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:o}", "id", p, "dir", name,
			 "node_start", (json_int_t)pt->offsets[p], "node_end", (json_int_t)pt->offsets[p + 1],
			 "type_offsets", offs, "num_nodes", (json_int_t)pc->nodes, "type_nodes", counts, "num_edges",
			 (json_int_t)pc->edges, "num_remote_edges", (json_int_t)pc->remote_edges, "num_train",
			 (json_int_t)pc->split[GNN_SPLIT_TRAIN], "num_valid", (json_int_t)pc->split[GNN_SPLIT_VALID],
			 "num_test", (json_int_t)pc->split[GNN_SPLIT_TEST], "files", files);
}

int pt_write_partitions(const struct pt_graph *g, const struct pt_partition *pt, enum gnn_dtype feat_dtype,
			const char *dir, json_t *meta)
{
	struct part_counts *pc = calloc((size_t)pt->num_parts, sizeof(*pc));
	json_t *parts = json_array();
	char pdir[4096];
	int rc = GNN_ENOMEM;

	if (pc == NULL || parts == NULL)
		goto out;
	if ((rc = write_node_map(g, pt, dir, meta)) != GNN_OK)
		goto out;
	for (int32_t p = 0; p < pt->num_parts; p++) {
		json_t *files = json_object(), *po;
		char name[32];
		double t0 = gnn_now();

		snprintf(name, sizeof(name), "part-%d", p);
		if (files == NULL) {
			rc = GNN_ENOMEM;
			goto out;
		}
		if ((rc = pt_write_join(pdir, sizeof(pdir), dir, name)) != GNN_OK || mkdir(pdir, 0755) != 0) {
			json_decref(files);
			GNN_ERROR("mkdir_failed", "dir=%s", pdir);
			rc = GNN_EIO;
			goto out;
		}
		pc[p].nodes = pt->offsets[p + 1] - pt->offsets[p];
		if ((rc = write_csr(g, pt, p, pdir, files, &pc[p])) != GNN_OK ||
		    (rc = write_features(g, pt, p, feat_dtype, pdir, files)) != GNN_OK ||
		    (rc = write_node_data(g, pt, p, pdir, files, &pc[p])) != GNN_OK) {
			json_decref(files);
			goto out;
		}
		po = part_json(g, pt, p, name, &pc[p], files);
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
	rc = add_balance(meta, g, pt, pc);
out:
	json_decref(parts);
	free(pc);
	return rc;
}
