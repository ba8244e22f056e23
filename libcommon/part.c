#include "part.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "json.h"
#include "log.h"

/* ---- meta.json ---- */

/* One entry of node_types[] or relations[] into the schema. */
static int meta_type(const json_t *o, const char *path, struct gnn_ntype *ty)
{
	const char *name;
	int64_t n, d;
	int rc;

	if ((rc = gnn_json_get_str(o, path, "name", &name)) ||
	    (rc = gnn_json_get_int(o, path, "num_nodes", 0, INT64_MAX / 16, &n)) ||
	    (rc = gnn_json_get_int(o, path, "feat_dim", 0, 1 << 16, &d)))
		return rc;
	if (!gnn_name_ok(name)) {
		GNN_ERROR("bad_metadata", "in=%s node_type=\"%s\" reason=\"not a valid type name\"", path, name);
		return GNN_EFORMAT;
	}
	snprintf(ty->name, GNN_NAME_MAX, "%s", name);
	ty->num_nodes = n;
	ty->feat_dim = (uint32_t)d;
	return GNN_OK;
}

static int meta_rel(const json_t *o, const char *path, struct gnn_schema *s, struct gnn_rel *re)
{
	const char *name, *src, *dst;
	int64_t m;
	int rc;

	if ((rc = gnn_json_get_str(o, path, "name", &name)) || (rc = gnn_json_get_str(o, path, "src", &src)) ||
	    (rc = gnn_json_get_str(o, path, "dst", &dst)) ||
	    (rc = gnn_json_get_int(o, path, "num_edges", 0, INT64_MAX / 16, &m)))
		return rc;
	if (!gnn_name_ok(name) || gnn_schema_type(s, src) < 0 || gnn_schema_type(s, dst) < 0) {
		GNN_ERROR("bad_metadata", "in=%s relation=\"%s:%s:%s\" reason=\"bad relation name or unknown node type\"",
			  path, src, name, dst);
		return GNN_EFORMAT;
	}
	snprintf(re->name, GNN_NAME_MAX, "%s", name);
	re->src = (uint32_t)gnn_schema_type(s, src);
	re->dst = (uint32_t)gnn_schema_type(s, dst);
	re->num_edges = m;
	return GNN_OK;
}

/* The schema of a version 2 file (node_types, relations, label_type), or
 * the plain one of a version 1 file. */
json_t *gnn_schema_json(const struct gnn_schema *s)
{
	json_t *types = json_array(), *rels = json_array();

	for (uint32_t t = 0; types != NULL && t < s->num_types; t++)
		json_array_append_new(types, json_pack("{s:s, s:I, s:i}", "name", s->types[t].name, "num_nodes",
						       (json_int_t)s->types[t].num_nodes, "feat_dim",
						       (int)s->types[t].feat_dim));
	for (uint32_t r = 0; rels != NULL && r < s->num_rels; r++)
		json_array_append_new(rels, json_pack("{s:s, s:s, s:s, s:I}", "name", s->rels[r].name, "src",
						      s->types[s->rels[r].src].name, "dst", s->types[s->rels[r].dst].name,
						      "num_edges", (json_int_t)s->rels[r].num_edges));
	return json_pack("{s:o, s:o, s:s}", "node_types", types, "relations", rels, "label_type",
			 s->types[s->label_type].name);
}

static int meta_schema(struct gnn_meta *m, const char *path, int64_t feat_dim)
{
	struct gnn_schema *s = m->schema;
	json_t *types, *rels, *o;
	const char *label;
	char why[256];
	size_t i;
	int rc;

	if (m->version == 1) {
		gnn_schema_plain(s, m->layout.num_nodes, m->layout.num_edges, (uint32_t)feat_dim);
		return GNN_OK;
	}
	if ((rc = gnn_json_get_array(m->json, path, "node_types", &types)) ||
	    (rc = gnn_json_get_array(m->json, path, "relations", &rels)) ||
	    (rc = gnn_json_get_str(m->json, path, "label_type", &label)))
		return rc;
	if (json_array_size(types) < 1 || json_array_size(types) > GNN_MAX_TYPES || json_array_size(rels) < 1 ||
	    json_array_size(rels) > GNN_MAX_RELS) {
		GNN_ERROR("bad_metadata", "in=%s node_types=%zu relations=%zu reason=\"1..%d types and 1..%d relations\"",
			  path, json_array_size(types), json_array_size(rels), GNN_MAX_TYPES, GNN_MAX_RELS);
		return GNN_EFORMAT;
	}
	s->num_types = (uint32_t)json_array_size(types);
	s->num_rels = (uint32_t)json_array_size(rels);
	json_array_foreach(types, i, o)
		if ((rc = meta_type(o, path, &s->types[i])) != GNN_OK)
			return rc;
	json_array_foreach(rels, i, o)
		if ((rc = meta_rel(o, path, s, &s->rels[i])) != GNN_OK)
			return rc;
	if (gnn_schema_type(s, label) < 0) {
		GNN_ERROR("bad_metadata", "in=%s label_type=\"%s\" reason=\"not one of node_types\"", path, label);
		return GNN_EFORMAT;
	}
	s->label_type = (uint32_t)gnn_schema_type(s, label);
	if (gnn_schema_check(s, why, sizeof(why)) != GNN_OK) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"%s\"", path, why);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

/* parts[p]'s node range into offsets and its type ranges into
 * type_offsets (version 1: the node range itself). */
static int meta_part_ranges(struct gnn_meta *m, const char *path, json_t *p, size_t i)
{
	uint32_t T = m->schema->num_types;
	int64_t *to = m->type_offsets + i * T;
	int64_t start, end;
	json_t *arr;
	int rc;

	if ((rc = gnn_json_get_int(p, path, "node_start", 0, m->layout.num_nodes, &start)) ||
	    (rc = gnn_json_get_int(p, path, "node_end", 0, m->layout.num_nodes, &end)))
		return rc;
	if (start != m->offsets[i] || end <= start) {
		GNN_ERROR("bad_metadata", "in=%s part=%zu node_start=%lld node_end=%lld reason=\"ranges must be contiguous and non-empty\"",
			  path, i, (long long)start, (long long)end);
		return GNN_EFORMAT;
	}
	m->offsets[i + 1] = end;
	if (m->version == 1) {
		to[0] = start;
		to[1] = end;
		return GNN_OK;
	}
	if ((rc = gnn_json_get_array(p, path, "type_offsets", &arr)) != GNN_OK)
		return rc;
	if (json_array_size(arr) != (size_t)T + 1) {
		GNN_ERROR("bad_metadata", "in=%s part=%zu type_offsets=%zu reason=\"expected one per node type plus one\"",
			  path, i, json_array_size(arr));
		return GNN_EFORMAT;
	}
	for (uint32_t t = 0; t <= T; t++) {
		json_t *v = json_array_get(arr, t);

		if (!json_is_integer(v)) {
			GNN_ERROR("bad_metadata", "in=%s part=%zu reason=\"type_offsets holds a non-integer\"", path, i);
			return GNN_EFORMAT;
		}
		to[t] = json_integer_value(v);
	}
	if (to[0] != start || to[T] != end) {
		GNN_ERROR("bad_metadata", "in=%s part=%zu reason=\"type_offsets must run from node_start to node_end\"",
			  path, i);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

/* meta.json's format and format_version into m->version. */
static int meta_format(struct gnn_meta *m, const char *path)
{
	const char *format;
	int64_t version;
	int rc;

	if ((rc = gnn_json_get_str(m->json, path, "format", &format)) != GNN_OK)
		return rc;
	if (strcmp(format, GNN_PART_FORMAT) != 0) {
		GNN_ERROR("bad_metadata", "in=%s format=\"%s\" reason=\"not a gnn-dist partition output\"", path, format);
		return GNN_EFORMAT;
	}
	if ((rc = gnn_json_get_int(m->json, path, "format_version", 1, INT32_MAX, &version)) != GNN_OK)
		return rc;
	if (version > GNN_PART_FORMAT_VERSION) {
		GNN_ERROR("bad_metadata", "in=%s format_version=%lld supported=1..%d reason=\"written by a newer gnn-partition: re-partition with this version\"",
			  path, (long long)version, GNN_PART_FORMAT_VERSION);
		return GNN_EVERSION;
	}
	m->version = (int)version;
	return GNN_OK;
}

/* The parts array's node and type ranges into m->offsets and
 * m->type_offsets (allocated here), then the layout's check. */
static int meta_ranges(struct gnn_meta *m, const char *path)
{
	struct gnn_layout *l = &m->layout;
	uint32_t T = m->schema->num_types;
	json_t *parts, *p;
	char why[256];
	size_t i;
	int rc;

	if ((rc = gnn_json_get_array(m->json, path, "parts", &parts)))
		return rc;
	if (json_array_size(parts) != l->num_parts) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"parts has %zu entries, num_parts is %" PRIu32 "\"", path,
			  json_array_size(parts), l->num_parts);
		return GNN_EFORMAT;
	}
	m->offsets = malloc(((size_t)l->num_parts + 1) * sizeof(*m->offsets));
	m->type_offsets = malloc(((size_t)l->num_parts * T + 1) * sizeof(*m->type_offsets));
	if (m->offsets == NULL || m->type_offsets == NULL)
		return GNN_ENOMEM;
	l->offsets = m->offsets;
	l->type_offsets = m->type_offsets;
	m->offsets[0] = 0;
	json_array_foreach(parts, i, p)
		if ((rc = meta_part_ranges(m, path, p, i)) != GNN_OK)
			return rc;
	m->type_offsets[(size_t)l->num_parts * T] = l->num_nodes;
	if (gnn_layout_check(l, why, sizeof(why)) != GNN_OK) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"%s\"", path, why);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

/* meta.json's feature_dtype ("f32" when absent: files before it) into the layout. */
static int meta_feat_dtype(struct gnn_meta *m, const char *path)
{
	const json_t *v = json_object_get(m->json, "feature_dtype");
	enum gnn_dtype dt = v == NULL ? GNN_DT_F32 : gnn_dtype_parse(json_is_string(v) ? json_string_value(v) : "");

	if (!gnn_feat_dtype_ok(dt)) {
		GNN_ERROR("bad_metadata", "in=%s key=feature_dtype reason=\"must be f32 or f16\"", path);
		return GNN_EFORMAT;
	}
	m->layout.feat_dtype = dt;
	return GNN_OK;
}

int gnn_meta_load(const char *dir, struct gnn_meta *out)
{
	char path[4096];
	struct gnn_meta m = { 0 };
	struct gnn_layout *l = &m.layout;
	int64_t v, feat_dim;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/meta.json", dir) >= sizeof(path))
		return GNN_ERANGE;
	if ((rc = gnn_json_load(path, &m.json)) != GNN_OK)
		return rc;
	if ((rc = meta_format(&m, path)) != GNN_OK)
		goto out_fail;
	if ((rc = gnn_json_get_int(m.json, path, "num_nodes", 1, INT64_MAX / 16, &l->num_nodes)) ||
	    (rc = gnn_json_get_int(m.json, path, "num_edges", 0, INT64_MAX / 16, &l->num_edges)))
		goto out_fail;
	if ((rc = gnn_json_get_int(m.json, path, "feat_dim", m.version == 1 ? 1 : 0, 1 << 16, &feat_dim)))
		goto out_fail;
	if ((rc = gnn_json_get_int(m.json, path, "num_classes", 1, 1 << 20, &v)))
		goto out_fail;
	l->num_classes = (uint32_t)v;
	if ((rc = gnn_json_get_int(m.json, path, "num_parts", 1, 1 << 16, &v)))
		goto out_fail;
	l->num_parts = (uint32_t)v;
	m.symmetric = json_is_true(json_object_get(m.json, "symmetric"));
	if ((m.schema = calloc(1, sizeof(*m.schema))) == NULL) {
		rc = GNN_ENOMEM;
		goto out_fail;
	}
	l->schema = m.schema;
	if ((rc = meta_schema(&m, path, feat_dim)) != GNN_OK)
		goto out_fail;
	l->feat_dim = (uint32_t)feat_dim;
	if ((rc = meta_feat_dtype(&m, path)) != GNN_OK || (rc = meta_ranges(&m, path)) != GNN_OK)
		goto out_fail;
	*out = m;
	return GNN_OK;

out_fail:
	gnn_meta_free(&m);
	return rc;
}

void gnn_meta_free(struct gnn_meta *m)
{
	free(m->offsets);
	free(m->type_offsets);
	free(m->schema);
	json_decref(m->json);
	memset(m, 0, sizeof(*m));
}

/* Maps one file of the partition (its meta.json entry f) and checks it. */
static int open_file(const char *pdir, const json_t *f, enum gnn_dtype dt, uint64_t rows, uint64_t cols,
		     unsigned flags, struct gnn_arr *a)
{
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

/* The type of the partition's local row v. */
static uint32_t type_at(const struct gnn_part *pt, int64_t v)
{
	return (uint32_t)gnn_owner_of(pt->type_start, pt->num_types, pt->node_start + v);
}

static int verify_contents(const struct gnn_meta *m, const struct gnn_part *pt, const char *pdir)
{
	const struct gnn_layout *l = &m->layout;
	const struct gnn_schema *s = l->schema;
	uint32_t R = pt->num_rels, t = 0;
	const char *why = NULL;
	int64_t i = 0, rows = pt->num_nodes * (int64_t)R;

	if (pt->indptr[0] != 0 || pt->indptr[rows] != pt->num_edges)
		why = "indptr must run from 0 to num_edges";
	for (i = 0; why == NULL && i < rows; i++)
		if (pt->indptr[i + 1] < pt->indptr[i])
			why = "indptr decreases";
	for (int64_t v = 0; why == NULL && v < pt->num_nodes; v++) {
		t = type_at(pt, v);
		for (uint32_t r = 0; why == NULL && r < R; r++) {
			int64_t b = pt->indptr[v * R + r], e = pt->indptr[v * R + r + 1];

			if (e > b && s->rels[r].dst != t) {
				why = "in-edges of a relation whose destination is another node type";
				i = b + 1;  /* reported as index i - 1, as the loops below leave it */
				break;
			}
			for (i = b; why == NULL && i < e; i++) {
				int64_t u = pt->indices[i];

				if (u < 0 || u >= l->num_nodes)
					why = "neighbour ID out of range";
				else if (s->num_types > 1 && gnn_layout_type(l, u) != (int32_t)s->rels[r].src)
					why = "neighbour of another node type than its relation's source";
				else if (i > b && u <= pt->indices[i - 1])
					why = "neighbours not ascending within a row";
			}
		}
	}
	for (i = 0; why == NULL && i < pt->num_nodes; i++) {
		t = type_at(pt, i);
		if (pt->labels[i] < -1 || pt->labels[i] >= (int64_t)l->num_classes)
			why = "label out of range";
		else if (t != s->label_type && (pt->labels[i] != -1 || pt->split[i] != GNN_SPLIT_NONE))
			why = "label or split on a node of a type without labels";
		else if (pt->split[i] > 3)
			why = "unknown split code";
	}
	if (why == NULL)
		return GNN_OK;
	GNN_ERROR("bad_partition", "dir=%s index=%lld reason=\"%s\"", pdir, (long long)i - 1, why);
	return GNN_EFORMAT;
}

/* The feature files' entries: files.feat, one per type (version 2: an
 * array, null for a type without features; version 1: one object). */
static int feat_entry(const struct gnn_meta *m, const json_t *files, const char *pdir, uint32_t t, const json_t **f)
{
	const json_t *feat = json_object_get(files, "feat");

	*f = m->version == 1 ? feat : json_array_get(feat, t);
	if (m->version > 1 && json_array_size(feat) != m->schema->num_types) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"files.feat must list one entry (or null) per node type\"", pdir);
		return GNN_EFORMAT;
	}
	if ((m->schema->types[t].feat_dim == 0) != (*f == NULL || json_is_null(*f))) {
		GNN_ERROR("bad_metadata", "in=%s type=%s feat_dim=%u reason=\"a feature file exactly for the types with features\"",
			  pdir, m->schema->types[t].name, m->schema->types[t].feat_dim);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

int gnn_part_open(const char *dir, const struct gnn_meta *m, int32_t p, unsigned flags,
		  struct gnn_part *out)
{
	const struct gnn_schema *s = m->schema;
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
	pt.num_types = s->num_types;
	pt.num_rels = s->num_rels;
	pt.type_start = m->type_offsets + (size_t)p * s->num_types;
	pt.feat_dtype = m->layout.feat_dtype;
	if ((rc = open_file(pdir, json_object_get(files, "indptr"), GNN_DT_I64, (uint64_t)n * s->num_rels + 1, 1,
			    flags, &pt.arrs[0])) ||
	    (rc = open_file(pdir, json_object_get(files, "indices"), GNN_DT_I64, (uint64_t)pt.num_edges, 1, flags,
			    &pt.arrs[1])) ||
	    (rc = open_file(pdir, json_object_get(files, "label"), GNN_DT_I32, (uint64_t)n, 1, flags, &pt.arrs[2])) ||
	    (rc = open_file(pdir, json_object_get(files, "split"), GNN_DT_U8, (uint64_t)n, 1, flags, &pt.arrs[3])))
		goto out_fail;
	for (uint32_t t = 0; t < s->num_types; t++) {
		uint64_t rows = (uint64_t)(pt.type_start[t + 1] - pt.type_start[t]);
		const json_t *f;

		if ((rc = feat_entry(m, files, pdir, t, &f)) != GNN_OK)
			goto out_fail;
		pt.feat_dim[t] = s->types[t].feat_dim;
		if (pt.feat_dim[t] == 0)
			continue;
		if ((rc = open_file(pdir, f, pt.feat_dtype, rows, pt.feat_dim[t], flags, &pt.arrs[4 + t])) != GNN_OK)
			goto out_fail;
		pt.feat[t] = pt.arrs[4 + t].data;
	}
	pt.indptr = pt.arrs[0].data;
	pt.indices = pt.arrs[1].data;
	pt.labels = pt.arrs[2].data;
	pt.split = pt.arrs[3].data;
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
	for (size_t i = 0; i < sizeof(part->arrs) / sizeof(part->arrs[0]); i++)
		gnn_arr_close(&part->arrs[i]);
	memset(part, 0, sizeof(*part));
}

int gnn_node_map_open(const char *dir, const struct gnn_meta *m, unsigned flags, struct gnn_arr *out)
{
	char pdir[4096];

	snprintf(pdir, sizeof(pdir), "%s", dir);
	return open_file(pdir, json_object_get(m->json, "node_map"), GNN_DT_I64, (uint64_t)m->layout.num_nodes, 1,
			 flags, out);
}

int64_t gnn_node_map_find(const struct gnn_layout *l, const struct gnn_arr *map, uint32_t p, uint32_t t,
			  int64_t orig)
{
	const int64_t *ids = map->data;
	int64_t lo, hi, end;

	gnn_layout_type_range(l, p, t, &lo, &end);
	hi = end;
	while (lo < hi) {  /* the first ID whose original ID is >= orig */
		int64_t mid = lo + (hi - lo) / 2;

		if (ids[mid] < orig)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < end && ids[lo] == orig ? lo : -1;
}

const void *gnn_part_feat_row(const struct gnn_part *pt, int64_t gid, uint32_t *dim)
{
	int32_t t = pt->num_types > 1 ? gnn_owner_of(pt->type_start, pt->num_types, gid) : 0;

	if (t < 0)  /* not pt's node (a caller's bug): its first type, as a plain graph */
		t = 0;
	*dim = pt->feat_dim[t];
	if (pt->feat[t] == NULL)
		return NULL;
	return (const char *)pt->feat[t] +
	       (size_t)(gid - pt->type_start[t]) * pt->feat_dim[t] * gnn_dtype_size(pt->feat_dtype);
}

/* ---- the edge split ---- */

/* meta.json's edge_split relation and reverse, checked against the schema. */
static int split_relations(const struct gnn_meta *m, const json_t *es, const char *path, struct gnn_edge_split *out)
{
	const struct gnn_schema *s = m->layout.schema;
	const char *name;
	const json_t *rev = json_object_get(es, "reverse_relation");
	int32_t r;
	int rc;

	if ((rc = gnn_json_get_str(es, path, "relation", &name)) != GNN_OK)
		return rc;
	if ((r = gnn_schema_rel(s, name)) < 0) {
		GNN_ERROR("bad_metadata", "in=%s relation=%s reason=\"the edge split's relation is not the graph's\"", path,
			  name);
		return GNN_EFORMAT;
	}
	out->rel = (uint32_t)r;
	out->rev_rel = gnn_schema_reverse(s, out->rel);
	if (json_is_string(rev) ? out->rev_rel < 0 || gnn_schema_rel(s, json_string_value(rev)) != out->rev_rel
				: !json_is_null(rev) || out->rev_rel >= 0) {
		GNN_ERROR("bad_metadata", "in=%s relation=%s reason=\"reverse_relation is not the relation's reverse in the "
			  "schema\"", path, name);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

/* Every ID of column c of a (rows x cols) array in the graph and of type
 * want (-1: any type). */
static int split_ids_ok(const struct gnn_meta *m, const struct gnn_arr *a, uint64_t c, int32_t want)
{
	const int64_t *ids = a->data;

	for (uint64_t i = 0; i < a->info.rows; i++) {
		int64_t v = ids[i * a->info.cols + c];

		if (v < 0 || v >= m->layout.num_nodes || (want >= 0 && gnn_layout_type(&m->layout, v) != want)) {
			GNN_ERROR("bad_edge_split", "row=%llu col=%llu id=%lld reason=\"ID outside the graph or not of "
				  "the relation's type\"", (unsigned long long)i, (unsigned long long)c, (long long)v);
			return GNN_EFORMAT;
		}
	}
	return GNN_OK;
}

/* The three files of set s (name "valid" or "test"). */
static int split_files(const struct gnn_meta *m, const json_t *files, const char *sdir, int s, unsigned flags,
		       struct gnn_edge_split *out)
{
	static const char *const kinds[3] = { "pos", "neg", "neg_dst" };
	const struct gnn_rel *re = &m->layout.schema->rels[out->rel];
	char key[32];
	int rc;

	for (int k = 0; k < 3; k++) {
		struct gnn_arr *a = &out->arrs[3 * s + k];

		snprintf(key, sizeof(key), "%s_%s", s == GNN_ES_VALID ? "valid" : "test", kinds[k]);
		if (json_object_get(files, key) == NULL) {
			GNN_ERROR("bad_metadata", "in=%s key=%s reason=\"edge_split.files lacks it\"", sdir, key);
			return GNN_EFORMAT;
		}
		if ((rc = open_file(sdir, json_object_get(files, key), GNN_DT_I64, (uint64_t)out->num[s],
				    k == 2 ? out->eval_negatives : 2, flags, a)) != GNN_OK)
			return rc;
		if ((flags & GNN_PART_VERIFY) &&
		    ((rc = split_ids_ok(m, a, 0, k == 2 ? (int32_t)re->dst : (int32_t)re->src)) != GNN_OK ||
		     (k < 2 && (rc = split_ids_ok(m, a, 1, (int32_t)re->dst)) != GNN_OK)))
			return rc;
	}
	out->pos[s] = out->arrs[3 * s].data;
	out->neg[s] = out->arrs[3 * s + 1].data;
	out->neg_dst[s] = out->arrs[3 * s + 2].data;
	return GNN_OK;
}

int gnn_edge_split_open(const char *dir, const struct gnn_meta *m, unsigned flags, struct gnn_edge_split *out)
{
	struct gnn_edge_split v = { 0 };
	const json_t *es = json_object_get(m->json, "edge_split");
	char path[4400], sdir[4400];
	const char *sub;
	int64_t k;
	int rc;

	snprintf(path, sizeof(path), "%s/meta.json edge_split", dir);
	if (es == NULL) {
		GNN_ERROR("no_edge_split", "dir=%s reason=\"meta.json has no edge_split: partition with --edge-split\"", dir);
		return GNN_ENOENT;
	}
	if ((rc = split_relations(m, es, path, &v)) ||
	    (rc = gnn_json_get_int(es, path, "eval_negatives", 1, 1 << 20, &k)) ||
	    (rc = gnn_json_get_int(es, path, "num_pairs", 0, INT64_MAX / 16, &v.num_pairs)) ||
	    (rc = gnn_json_get_int(es, path, "num_train", 0, v.num_pairs, &v.num_train)) ||
	    (rc = gnn_json_get_int(es, path, "num_valid", 0, v.num_pairs, &v.num[GNN_ES_VALID])) ||
	    (rc = gnn_json_get_int(es, path, "num_test", 0, v.num_pairs, &v.num[GNN_ES_TEST])) ||
	    (rc = gnn_json_get_int(es, path, "removed_edges", 0, INT64_MAX / 16, &v.removed_edges)) ||
	    (rc = gnn_json_get_str(es, path, "dir", &sub)))
		return rc;
	v.eval_negatives = (uint32_t)k;
	if (strchr(sub, '/') != NULL || v.num_train + v.num[GNN_ES_VALID] + v.num[GNN_ES_TEST] != v.num_pairs) {
		GNN_ERROR("bad_metadata", "in=%s reason=\"dir holds a / or the counts do not add up to num_pairs\"", path);
		return GNN_EFORMAT;
	}
	snprintf(sdir, sizeof(sdir), "%s/%s", dir, sub);
	for (int s = 0; s < GNN_ES_SETS; s++)
		if ((rc = split_files(m, json_object_get(es, "files"), sdir, s, flags, &v)) != GNN_OK) {
			gnn_edge_split_close(&v);
			return rc;
		}
	*out = v;
	return GNN_OK;
}

void gnn_edge_split_close(struct gnn_edge_split *es)
{
	for (int i = 0; i < 3 * GNN_ES_SETS; i++)
		gnn_arr_close(&es->arrs[i]);
	memset(es, 0, sizeof(*es));
}

/* The CRC-32 of one file entry into the hash (none for a type without features). */
static int fold_crc(uint64_t *h, const json_t *e)
{
	int64_t crc;

	if (e == NULL || json_is_null(e))
		return GNN_OK;
	if (gnn_json_get_int(e, "meta.json parts[].files", "crc32", 0, UINT32_MAX, &crc) != GNN_OK)
		return GNN_EFORMAT;
	*h = gnn_fold64(*h, (uint64_t)crc);
	return GNN_OK;
}

int gnn_meta_graph_id(const struct gnn_meta *m, uint64_t *out)
{
	const struct gnn_layout *l = &m->layout;
	const struct gnn_schema *s = l->schema;
	json_t *parts = json_object_get(m->json, "parts");
	uint64_t h = 0x676e6e2d64697374ull; /* "gnn-dist" */
	int64_t crc;
	int rc;

	if ((rc = gnn_json_get_int(json_object_get(m->json, "node_map"), "meta.json node_map", "crc32", 0,
				   UINT32_MAX, &crc)) != GNN_OK)
		return GNN_EFORMAT;
	h = gnn_fold64(h, (uint64_t)crc);
	h = gnn_fold64(h, (uint64_t)l->num_nodes);
	h = gnn_fold64(h, (uint64_t)l->num_edges);
	h = gnn_fold64(h, l->num_parts);
	h = gnn_fold64(h, l->feat_dim);
	h = gnn_fold64(h, l->num_classes);
	for (uint32_t p = 0; p <= l->num_parts; p++)
		h = gnn_fold64(h, (uint64_t)l->offsets[p]);
	/* A homogeneous output keeps the identity it had before schemas (its
	 * checkpoints still resume); a typed one adds its schema and ranges. */
	if (!gnn_schema_is_plain(s)) {
		h = gnn_fold64(h, gnn_schema_hash(s));
		for (size_t k = 0; k <= (size_t)l->num_parts * s->num_types; k++)
			h = gnn_fold64(h, (uint64_t)l->type_offsets[k]);
	}
	/* The file checksums make two outputs with equal sizes but different
	 * contents (another seed, another method) different graphs. */
	for (uint32_t p = 0; p < l->num_parts; p++) {
		json_t *f = json_object_get(json_array_get(parts, (size_t)p), "files");
		const json_t *e;

		if (fold_crc(&h, json_object_get(f, "indptr")) || fold_crc(&h, json_object_get(f, "indices")))
			return GNN_EFORMAT;
		for (uint32_t t = 0; t < s->num_types; t++)
			if (feat_entry(m, f, "meta.json", t, &e) != GNN_OK || fold_crc(&h, e) != GNN_OK)
				return GNN_EFORMAT;
		if (fold_crc(&h, json_object_get(f, "label")) || fold_crc(&h, json_object_get(f, "split")))
			return GNN_EFORMAT;
	}
	*out = h;
	return GNN_OK;
}
