#include "part.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "json.h"
#include "log.h"

int gnn_meta_load(const char *dir, struct gnn_meta *out)
{
	char path[4096];
	struct gnn_meta m = { 0 };
	struct gnn_layout *l = &m.layout;
	json_t *parts, *p;
	const char *format;
	int64_t v, version;
	size_t i;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/meta.json", dir) >= sizeof(path))
		return GNN_ERANGE;
	if ((rc = gnn_json_load(path, &m.json)) != GNN_OK)
		return rc;
	if ((rc = gnn_json_get_str(m.json, path, "format", &format)) != GNN_OK)
		goto out_fail;
	if (strcmp(format, GNN_PART_FORMAT) != 0) {
		GNN_ERROR("bad_metadata", "in=%s format=\"%s\" reason=\"not a gnn-dist partition output\"", path, format);
		rc = GNN_EFORMAT;
		goto out_fail;
	}
	if ((rc = gnn_json_get_int(m.json, path, "format_version", 1, INT32_MAX, &version)) != GNN_OK)
		goto out_fail;
	if (version != GNN_PART_FORMAT_VERSION) {
		GNN_ERROR("bad_metadata", "in=%s format_version=%lld supported=%d", path, (long long)version,
			  GNN_PART_FORMAT_VERSION);
		rc = GNN_EVERSION;
		goto out_fail;
	}
	if ((rc = gnn_json_get_int(m.json, path, "num_nodes", 1, INT64_MAX / 16, &l->num_nodes)) ||
	    (rc = gnn_json_get_int(m.json, path, "num_edges", 0, INT64_MAX / 16, &l->num_edges)))
		goto out_fail;
	if ((rc = gnn_json_get_int(m.json, path, "feat_dim", 1, 1 << 16, &v)))
		goto out_fail;
	l->feat_dim = (uint32_t)v;
	if ((rc = gnn_json_get_int(m.json, path, "num_classes", 1, 1 << 20, &v)))
		goto out_fail;
	l->num_classes = (uint32_t)v;
	if ((rc = gnn_json_get_int(m.json, path, "num_parts", 1, 1 << 16, &v)))
		goto out_fail;
	l->num_parts = (uint32_t)v;
	m.symmetric = json_is_true(json_object_get(m.json, "symmetric"));
	if ((rc = gnn_json_get_array(m.json, path, "parts", &parts)))
		goto out_fail;
	if (json_array_size(parts) != l->num_parts) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"parts has %zu entries, num_parts is %" PRIu32 "\"", path,
			  json_array_size(parts), l->num_parts);
		rc = GNN_EFORMAT;
		goto out_fail;
	}
	m.offsets = malloc(((size_t)l->num_parts + 1) * sizeof(*m.offsets));
	if (m.offsets == NULL) {
		rc = GNN_ENOMEM;
		goto out_fail;
	}
	l->offsets = m.offsets;
	m.offsets[0] = 0;
	json_array_foreach(parts, i, p) {
		int64_t start, end;

		if ((rc = gnn_json_get_int(p, path, "node_start", 0, l->num_nodes, &start)) ||
		    (rc = gnn_json_get_int(p, path, "node_end", 0, l->num_nodes, &end)))
			goto out_fail;
		if (start != m.offsets[i] || end <= start) {
			GNN_ERROR("bad_metadata", "in=%s part=%zu node_start=%lld node_end=%lld reason=\"ranges must be contiguous and non-empty\"",
				  path, i, (long long)start, (long long)end);
			rc = GNN_EFORMAT;
			goto out_fail;
		}
		m.offsets[i + 1] = end;
	}
	if (m.offsets[l->num_parts] != l->num_nodes) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"partition ranges end at %lld, num_nodes is %lld\"", path,
			  (long long)m.offsets[l->num_parts], (long long)l->num_nodes);
		rc = GNN_EFORMAT;
		goto out_fail;
	}
	*out = m;
	return GNN_OK;

out_fail:
	gnn_meta_free(&m);
	return rc;
}

void gnn_meta_free(struct gnn_meta *m)
{
	free(m->offsets);
	json_decref(m->json);
	memset(m, 0, sizeof(*m));
}

int32_t gnn_owner_of(const int64_t *offsets, uint32_t num_parts, int64_t gid)
{
	uint32_t lo = 0, hi = num_parts;

	if (num_parts == 0 || gid < offsets[0] || gid >= offsets[num_parts])
		return -1;
	while (hi - lo > 1) {  /* invariant: offsets[lo] <= gid < offsets[hi] */
		uint32_t mid = lo + (hi - lo) / 2;

		if (offsets[mid] <= gid)
			lo = mid;
		else
			hi = mid;
	}
	return (int32_t)lo;
}

int32_t gnn_layout_owner(const struct gnn_layout *l, int64_t gid)
{
	return gid < 0 || gid >= l->num_nodes ? -1 : gnn_owner_of(l->offsets, l->num_parts, gid);
}

/* Maps one file of the partition and checks it against its meta.json entry. */
static int open_file(const char *pdir, const json_t *files, const char *key, enum gnn_dtype dt,
		     uint64_t rows, uint64_t cols, unsigned flags, struct gnn_arr *a)
{
	json_t *f = json_object_get(files, key);
	const char *name;
	char path[4400];
	int64_t crc;
	int rc;

	if ((rc = gnn_json_get_str(f, pdir, "file", &name)) ||
	    (rc = gnn_json_get_int(f, pdir, "crc32", 0, UINT32_MAX, &crc)))
		return rc;
	if (strchr(name, '/') != NULL) {
		GNN_ERROR("bad_metadata", "in=%s file=\"%s\" reason=\"file names may not contain /\"", pdir, name);
		return GNN_EFORMAT;
	}
	snprintf(path, sizeof(path), "%s/%s", pdir, name);
	if ((rc = gnn_arr_open(path, dt, (flags & GNN_PART_VERIFY) ? GNN_ARR_VERIFY : 0, a)) != GNN_OK)
		return rc;
	if (a->info.rows != rows || a->info.cols != cols || a->info.data_crc32 != (uint32_t)crc) {
		GNN_ERROR("bad_partition", "file=%s rows=%llu cols=%llu expected_rows=%llu expected_cols=%llu reason=\"file does not match meta.json\"",
			  path, (unsigned long long)a->info.rows, (unsigned long long)a->info.cols,
			  (unsigned long long)rows, (unsigned long long)cols);
		gnn_arr_close(a);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

static int verify_contents(const struct gnn_meta *m, const struct gnn_part *pt, const char *pdir)
{
	const char *why = NULL;
	int64_t i = 0;

	if (pt->indptr[0] != 0 || pt->indptr[pt->num_nodes] != pt->num_edges)
		why = "indptr must run from 0 to num_edges";
	for (i = 0; why == NULL && i < pt->num_nodes; i++)
		if (pt->indptr[i + 1] < pt->indptr[i])
			why = "indptr decreases";
	for (i = 0; why == NULL && i < pt->num_edges; i++)
		if (pt->indices[i] < 0 || pt->indices[i] >= m->layout.num_nodes)
			why = "neighbour ID out of range";
	for (i = 0; why == NULL && i < pt->num_nodes; i++)
		if (pt->labels[i] < -1 || pt->labels[i] >= (int64_t)m->layout.num_classes)
			why = "label out of range";
	for (i = 0; why == NULL && i < pt->num_nodes; i++)
		if (pt->split[i] > 3)
			why = "unknown split code";
	if (why == NULL)
		return GNN_OK;
	GNN_ERROR("bad_partition", "dir=%s index=%lld reason=\"%s\"", pdir, (long long)i - 1, why);
	return GNN_EFORMAT;
}

int gnn_part_open(const char *dir, const struct gnn_meta *m, int32_t p, unsigned flags,
		  struct gnn_part *out)
{
	struct gnn_part pt = { .id = p };
	json_t *po, *files;
	const char *sub;
	char pdir[4096];
	int64_t n;
	int rc;

	if (p < 0 || (uint32_t)p >= m->layout.num_parts) {
		GNN_ERROR("bad_partition", "part=%d num_parts=%" PRIu32 " reason=\"no such partition\"", p,
			  m->layout.num_parts);
		return GNN_ERANGE;
	}
	po = json_array_get(json_object_get(m->json, "parts"), (size_t)p);
	if ((rc = gnn_json_get_str(po, "meta.json parts[]", "dir", &sub)))
		return rc;
	if (strchr(sub, '/') != NULL || strcmp(sub, "..") == 0) {
		GNN_ERROR("bad_metadata", "part=%d dir=\"%s\" reason=\"must be a plain folder name\"", p, sub);
		return GNN_EFORMAT;
	}
	if ((size_t)snprintf(pdir, sizeof(pdir), "%s/%s", dir, sub) >= sizeof(pdir))
		return GNN_ERANGE;
	if ((rc = gnn_json_get_int(po, pdir, "num_edges", 0, m->layout.num_edges, &pt.num_edges)))
		return rc;
	files = json_object_get(po, "files");
	pt.node_start = m->offsets[p];
	pt.node_end = m->offsets[p + 1];
	pt.num_nodes = n = pt.node_end - pt.node_start;
	pt.feat_dim = (int32_t)m->layout.feat_dim;
	if ((rc = open_file(pdir, files, "indptr", GNN_DT_I64, (uint64_t)n + 1, 1, flags, &pt.arrs[0])) ||
	    (rc = open_file(pdir, files, "indices", GNN_DT_I64, (uint64_t)pt.num_edges, 1, flags, &pt.arrs[1])) ||
	    (rc = open_file(pdir, files, "feat", GNN_DT_F32, (uint64_t)n, (uint64_t)m->layout.feat_dim, flags,
			    &pt.arrs[2])) ||
	    (rc = open_file(pdir, files, "label", GNN_DT_I32, (uint64_t)n, 1, flags, &pt.arrs[3])) ||
	    (rc = open_file(pdir, files, "split", GNN_DT_U8, (uint64_t)n, 1, flags, &pt.arrs[4])))
		goto out_fail;
	pt.indptr = pt.arrs[0].data;
	pt.indices = pt.arrs[1].data;
	pt.feat = pt.arrs[2].data;
	pt.labels = pt.arrs[3].data;
	pt.split = pt.arrs[4].data;
	if ((flags & GNN_PART_VERIFY) && (rc = verify_contents(m, &pt, pdir)) != GNN_OK)
		goto out_fail;
	*out = pt;
	return GNN_OK;

out_fail:
	gnn_part_close(&pt);
	return rc;
}

void gnn_part_close(struct gnn_part *part)
{
	for (int i = 0; i < 5; i++)
		gnn_arr_close(&part->arrs[i]);
	memset(part, 0, sizeof(*part));
}

static uint64_t fold(uint64_t h, uint64_t v)
{
	return gnn_mix64(h ^ gnn_mix64(v + GNN_GOLDEN64));
}

int gnn_meta_graph_id(const struct gnn_meta *m, uint64_t *out)
{
	static const char *const files[] = { "indptr", "indices", "feat", "label", "split" };
	const struct gnn_layout *l = &m->layout;
	json_t *parts = json_object_get(m->json, "parts");
	uint64_t h = 0x676e6e2d64697374ull; /* "gnn-dist" */
	int64_t crc;
	int rc;

	if ((rc = gnn_json_get_int(json_object_get(m->json, "node_map"), "meta.json node_map", "crc32", 0,
				   UINT32_MAX, &crc)) != GNN_OK)
		return GNN_EFORMAT;
	h = fold(h, (uint64_t)crc);
	h = fold(h, (uint64_t)l->num_nodes);
	h = fold(h, (uint64_t)l->num_edges);
	h = fold(h, l->num_parts);
	h = fold(h, l->feat_dim);
	h = fold(h, l->num_classes);
	for (uint32_t p = 0; p <= l->num_parts; p++)
		h = fold(h, (uint64_t)l->offsets[p]);
	/* The file checksums make two outputs with equal sizes but different
	 * contents (another seed, another method) different graphs. */
	for (uint32_t p = 0; p < l->num_parts; p++) {
		json_t *f = json_object_get(json_array_get(parts, (size_t)p), "files");

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			if ((rc = gnn_json_get_int(json_object_get(f, files[i]), "meta.json parts[].files", "crc32",
						   0, UINT32_MAX, &crc)) != GNN_OK)
				return GNN_EFORMAT;
			h = fold(h, (uint64_t)crc);
		}
	}
	*out = h;
	return GNN_OK;
}
