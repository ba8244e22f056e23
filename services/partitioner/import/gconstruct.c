#include "gconstruct.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csv.h"
#include "err.h"
#include "hash.h"
#include "log.h"
#include "npz.h"
#include "ogb.h"
#include "sys.h"

#define MAX_FILES 4096

/* ---- node IDs: the user's strings, a type's node i is ids[i] ------------------------------------ */

struct idtab {
	char *arena;        /* the IDs, NUL-terminated, one after another */
	size_t len, cap;
	int64_t *off;       /* [n]: node i's ID at arena + off[i] */
	int64_t n, ncap;
	int32_t *slot;      /* open addressing: node index + 1, 0 empty */
	uint64_t nslots;
};

static uint64_t id_hash(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
	return gnn_mix64(h);
}

static int idtab_grow(struct idtab *t)
{
	uint64_t ns = t->nslots ? t->nslots * 2 : 1024;
	int32_t *slot = calloc(ns, sizeof(*slot));

	if (slot == NULL)
		return GNN_ENOMEM;
	for (int64_t i = 0; i < t->n; i++) {
		const char *s = t->arena + t->off[i];
		uint64_t k = id_hash(s, strlen(s)) & (ns - 1);

		while (slot[k] != 0)
			k = (k + 1) & (ns - 1);
		slot[k] = (int32_t)(i + 1);
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return GNN_OK;
}

/* The index of ID s (n bytes) into *idx: found (*added false), or added
 * when add is set, else -1. */
static int idtab_get(struct idtab *t, const char *s, size_t n, bool add, int64_t *idx, bool *added)
{
	uint64_t k;

	*added = false;
	if ((t->n + 1) * 2 > (int64_t)t->nslots && idtab_grow(t) != GNN_OK)
		return GNN_ENOMEM;
	for (k = id_hash(s, n) & (t->nslots - 1); t->slot[k] != 0; k = (k + 1) & (t->nslots - 1)) {
		const char *o = t->arena + t->off[t->slot[k] - 1];

		if (strncmp(o, s, n) == 0 && o[n] == '\0') {
			*idx = t->slot[k] - 1;
			return GNN_OK;
		}
	}
	*idx = -1;
	if (!add)
		return GNN_OK;
	if (t->n >= INT32_MAX)
		return GNN_ERANGE;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 1 << 16;
		char *a;

		while (cap < t->len + n + 1)
			cap *= 2;
		if ((a = realloc(t->arena, cap)) == NULL)
			return GNN_ENOMEM;
		t->arena = a;
		t->cap = cap;
	}
	if (t->n == t->ncap) {
		int64_t c = t->ncap ? t->ncap * 2 : 1024, *o = realloc(t->off, (size_t)c * sizeof(*o));

		if (o == NULL)
			return GNN_ENOMEM;
		t->off = o;
		t->ncap = c;
	}
	memcpy(t->arena + t->len, s, n);
	t->arena[t->len + n] = '\0';
	t->off[t->n] = (int64_t)t->len;
	t->len += n + 1;
	t->slot[k] = (int32_t)(t->n + 1);
	*idx = t->n++;
	*added = true;
	return GNN_OK;
}

static void idtab_free(struct idtab *t)
{
	free(t->arena);
	free(t->off);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* ---- the description ----------------------------------------------------------------------------- */

/* One nodes[] entry. */
struct node_desc {
	const json_t *j;
	char where[48];          /* "nodes[3]" */
	uint32_t type;
	char sep;
	const char *id_col;
	json_t *feat_cols;       /* strings, in order: the row's columns (owned) */
	const char *npy;         /* feature_npy, else NULL */
	const char *label_col;   /* NULL: no labels */
	double pct[3];
	const char *split_file[3]; /* custom_split_filenames, else NULL */
};

/* One edges[] entry. */
struct edge_desc {
	const json_t *j;
	char where[48];
	char sep;
	const char *src_col, *dst_col;
};

struct gc {
	const char *path;
	char dir[4096];          /* the file's folder */
	json_t *root;
	struct node_desc node[GNN_MAX_TYPES];
	int nnodes;
	struct edge_desc edge[GNN_MAX_RELS];
	int nedges;
	struct idtab ids[GNN_MAX_TYPES];
	bool listed[GNN_MAX_TYPES]; /* the type has node files: edges must name its nodes */
	int label_node;          /* node[] entry with the labels, -1 none */
	int32_t *labels;         /* [the label type's nodes], growing while its files are read */
	int64_t labels_cap;
	int64_t feat_cap[GNN_MAX_TYPES]; /* rows g->feat[t] has room for */
};

static int bad_key(const struct gc *c, const char *where, const char *key, const char *why)
{
	GNN_ERROR("bad_config", "file=%s key=%s%s%s reason=\"%s\"", c->path, where, *where && *key ? "." : "", key, why);
	return GNN_EINVAL;
}

/* Refuses any key of obj outside allowed, with the reasons of known ones. */
static int keys_known(const struct gc *c, const json_t *obj, const char *where, const char *const *allowed)
{
	static const struct {
		const char *key, *why;
	} known[] = {
		{ "transform", "feature transforms are not supported: give the values, and --feat-norm for a normalisation" },
		{ "out_dtype", "not supported: features are stored as --feature-dtype says" },
		{ "mask_field_names", "not supported: split membership is the split, not mask columns" },
		{ "label_stats_type", "not supported" },
	};
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		bool ok = false;

		for (const char *const *a = allowed; *a != NULL && !ok; a++)
			ok = strcmp(*a, key) == 0;
		if (ok)
			continue;
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (strcmp(known[k].key, key) == 0)
				return bad_key(c, where, key, known[k].why);
		if (strncmp(where, "edges[", 6) == 0 && (strcmp(key, "features") == 0 || strcmp(key, "labels") == 0))
			return bad_key(c, where, key, strcmp(key, "features") == 0 ? "edge features are not supported"
				       : "edge labels are not supported: link prediction holds edges out with --edge-split");
		return bad_key(c, where, key, "unknown key (docs/formats.md lists the ones taken)");
	}
	return GNN_OK;
}

static int get_str(const struct gc *c, const json_t *obj, const char *where, const char *key, bool need,
		   const char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL)
		return need ? bad_key(c, where, key, "missing") : GNN_OK;
	if (!json_is_string(v) || json_string_length(v) == 0)
		return bad_key(c, where, key, "expected a non-empty string");
	*out = json_string_value(v);
	return GNN_OK;
}

/* format: {"name": "csv", "separator": ","}; absent: CSV with commas. */
static int get_format(const struct gc *c, const json_t *obj, const char *where, char *sep)
{
	static const char *const allowed[] = { "name", "separator", NULL };
	const json_t *f = json_object_get(obj, "format");
	char w[80];
	const char *name, *s;
	int rc;

	*sep = ',';
	if (f == NULL)
		return GNN_OK;
	snprintf(w, sizeof(w), "%s.format", where);
	if (!json_is_object(f))
		return bad_key(c, where, "format", "expected an object {\"name\": \"csv\", \"separator\": \",\"}");
	if ((rc = keys_known(c, f, w, allowed)) != GNN_OK || (rc = get_str(c, f, w, "name", true, &name)) != GNN_OK ||
	    (rc = get_str(c, f, w, "separator", false, &s)) != GNN_OK)
		return rc;
	if (strcmp(name, "parquet") == 0 || strcmp(name, "hdf5") == 0)
		return bad_key(c, w, "name", strcmp(name, "parquet") == 0
			       ? "parquet is not read: write the table as CSV (pandas: df.to_csv(path, index=False); gzip is read too) with format.name csv"
			       : "hdf5 is not read: write the table as CSV, and large feature matrices as .npy (feature_npy)");
	if (strcmp(name, "csv") != 0)
		return bad_key(c, w, "name", "expected csv (CSV or TSV, gzip too)");
	if (s != NULL && (strlen(s) != 1 || s[0] == '"' || s[0] == '\n'))
		return bad_key(c, w, "separator", "expected one character (\",\", \"\\t\", \";\", ...)");
	if (s != NULL)
		*sep = s[0];
	return GNN_OK;
}

/* A path of the description: relative to its folder. */
static void resolve(const struct gc *c, const char *p, char *out, size_t len)
{
	if (p[0] == '/')
		snprintf(out, len, "%s", p);
	else
		snprintf(out, len, "%s/%s", c->dir, p);
}

/* The entry's files, each a path or a glob pattern, expanded and sorted
 * per pattern, into *g (globfree). */
static int get_files(const struct gc *c, const json_t *obj, const char *where, glob_t *gl)
{
	const json_t *f = json_object_get(obj, "files");
	char path[4200], w[80];
	size_t i, n;
	int flags = 0;

	memset(gl, 0, sizeof(*gl));
	if (f == NULL)
		return bad_key(c, where, "files", "missing");
	n = json_is_array(f) ? json_array_size(f) : 1;
	if ((!json_is_array(f) && !json_is_string(f)) || n == 0)
		return bad_key(c, where, "files", "expected a path or a list of paths");
	for (i = 0; i < n; i++) {
		const json_t *v = json_is_array(f) ? json_array_get(f, i) : f;
		size_t before = gl->gl_pathc;

		snprintf(w, sizeof(w), "%s.files[%zu]", where, i);
		if (!json_is_string(v))
			return bad_key(c, w, "", "expected a path");
		resolve(c, json_string_value(v), path, sizeof(path));
		if (glob(path, flags, NULL, gl) != 0 || gl->gl_pathc == before) {
			GNN_ERROR("bad_config", "file=%s key=%s path=%s reason=\"no such file\"", c->path, w, path);
			return GNN_ENOENT;
		}
		flags |= GLOB_APPEND;
	}
	if (gl->gl_pathc > MAX_FILES)
		return bad_key(c, where, "files", "more than 4096 files");
	return GNN_OK;
}

/* ---- reading tables ------------------------------------------------------------------------------ */

/* Cuts line at sep into at most max fields (CSV quoting: "a,b" and ""
 * inside quotes). Returns the count, or -1 for a broken quote. */
static int split_row(char *line, char sep, char **f, int max)
{
	int n = 0;
	char *p = line;

	for (;;) {
		char *w = p;

		if (n == max)
			return n + 1;
		f[n++] = p;
		if (*p == '"') {
			char *r = p + 1;

			f[n - 1] = w;
			for (;;) {
				if (*r == '\0')
					return -1;
				if (*r == '"' && r[1] == '"') {
					*w++ = '"';
					r += 2;
				} else if (*r == '"') {
					r++;
					break;
				} else
					*w++ = *r++;
			}
			if (*r != sep && *r != '\0')
				return -1;
			*w = '\0';
			if (*r == '\0')
				return n;
			p = r + 1;
			continue;
		}
		while (*p != sep && *p != '\0')
			p++;
		if (*p == '\0')
			return n;
		*p++ = '\0';
	}
}

/* One open table: its header's columns, and a row's fields. */
struct table {
	struct pt_csv csv;
	char sep;
	char **hdr;    /* [ncols], owned copies */
	int ncols;
	char **f;      /* [ncols + 1] */
};

static void table_close(struct table *t)
{
	for (int i = 0; i < t->ncols; i++)
		free(t->hdr[i]);
	free(t->hdr);
	free(t->f);
	pt_csv_close(&t->csv);
	memset(t, 0, sizeof(*t));
}

static int table_open(struct table *t, const char *path, char sep)
{
	char *line;
	int rc, n;

	memset(t, 0, sizeof(*t));
	if ((rc = pt_csv_open_path(&t->csv, path)) != GNN_OK)
		return rc;
	t->sep = sep;
	if ((rc = pt_csv_next(&t->csv, &line)) != 1) {
		rc = rc < 0 ? -rc : pt_csv_fail(&t->csv, "empty file: expected a header row of column names");
		goto fail;
	}
	n = 1;
	for (const char *p = line; *p; p++)
		n += *p == sep;
	if ((t->hdr = calloc((size_t)n, sizeof(*t->hdr))) == NULL || (t->f = calloc((size_t)n + 1, sizeof(*t->f))) == NULL) {
		rc = GNN_ENOMEM;
		goto fail;
	}
	if ((n = split_row(line, sep, t->f, n)) < 0) {
		rc = pt_csv_fail(&t->csv, "broken quoting in the header");
		goto fail;
	}
	for (t->ncols = 0; t->ncols < n; t->ncols++)
		if ((t->hdr[t->ncols] = strdup(t->f[t->ncols])) == NULL) {
			rc = GNN_ENOMEM;
			goto fail;
		}
	return GNN_OK;
fail:
	table_close(t);
	return rc;
}

/* The index of column name, or a logged error naming the key. */
static int table_col(struct table *t, const char *name, const char *key, int *col)
{
	char why[512];

	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->hdr[i], name) == 0) {
			*col = i;
			return GNN_OK;
		}
	snprintf(why, sizeof(why), "no column '%.200s' (%s) in the header", name, key);
	return pt_csv_fail(&t->csv, why);
}

/* The next row's fields into t->f: 1, 0 at the end, or an error (< 0). */
static int table_row(struct table *t)
{
	char *line, why[96];
	int rc = pt_csv_next(&t->csv, &line), n;

	if (rc != 1)
		return rc;
	if ((n = split_row(line, t->sep, t->f, t->ncols)) != t->ncols) {
		snprintf(why, sizeof(why), n < 0 ? "broken quoting" : "expected %d fields like the header, got %d%s",
			 t->ncols, n > t->ncols ? t->ncols : n, n > t->ncols ? " or more" : "");
		return -pt_csv_fail(&t->csv, why);
	}
	return 1;
}

/* ---- the description's entries ------------------------------------------------------------------- */

/* features[]: columns (feature_col: a name or a list) or one .npy
 * (feature_npy), not both. */
static int parse_features(struct gc *c, struct node_desc *d)
{
	static const char *const allowed[] = { "feature_col", "feature_name", "feature_npy", NULL };
	const json_t *fs = json_object_get(d->j, "features"), *cols;
	json_t *all;
	char w[96];
	int rc;

	if (fs == NULL)
		return GNN_OK;
	if (!json_is_array(fs))
		return bad_key(c, d->where, "features", "expected a list");
	if ((all = json_array()) == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < json_array_size(fs); i++) {
		const json_t *f = json_array_get(fs, i);
		const char *npy, *name;

		snprintf(w, sizeof(w), "%s.features[%zu]", d->where, i);
		if (!json_is_object(f)) {
			rc = bad_key(c, w, "", "expected an object");
			goto out;
		}
		if ((rc = keys_known(c, f, w, allowed)) != GNN_OK || (rc = get_str(c, f, w, "feature_name", false, &name)) != GNN_OK ||
		    (rc = get_str(c, f, w, "feature_npy", false, &npy)) != GNN_OK)
			goto out;
		cols = json_object_get(f, "feature_col");
		if ((npy != NULL) == (cols != NULL)) {
			rc = bad_key(c, w, "feature_col", "give feature_col (columns of the node files) or feature_npy (a .npy file), one of them");
			goto out;
		}
		if (npy != NULL) {
			if (json_array_size(fs) != 1) {
				rc = bad_key(c, w, "feature_npy", "a type's features come from one .npy or from columns, not both");
				goto out;
			}
			d->npy = npy;
			continue;
		}
		if (json_is_string(cols))
			rc = json_array_append(all, (json_t *)cols);
		else if (json_is_array(cols) && json_array_size(cols) > 0) {
			for (size_t k = 0; k < json_array_size(cols) && rc == GNN_OK; k++)
				if (!json_is_string(json_array_get(cols, k)))
					rc = bad_key(c, w, "feature_col", "expected column names");
				else
					rc = json_array_append(all, json_array_get(cols, k)) == 0 ? GNN_OK : GNN_ENOMEM;
		} else
			rc = bad_key(c, w, "feature_col", "expected a column name or a list of them");
		if (rc != GNN_OK)
			goto out;
	}
	if (json_array_size(all) > 65536) {
		rc = bad_key(c, d->where, "features", "more than 65536 feature columns");
		goto out;
	}
	if (json_array_size(all) > 0) {
		d->feat_cols = all; /* gc_free releases it */
		all = NULL;
	}
	rc = GNN_OK;
out:
	json_decref(all);
	return rc;
}

/* labels[]: one classification label column, split by split_pct or by
 * custom_split_filenames (default split_pct [0.8, 0.1, 0.1], as GraphStorm). */
static int parse_labels(struct gc *c, struct node_desc *d, int idx)
{
	static const char *const allowed[] = { "label_col", "task_type", "split_pct", "custom_split_filenames", NULL };
	static const char *const sets[3] = { "train", "valid", "test" };
	const json_t *ls = json_object_get(d->j, "labels"), *l, *pct, *cs;
	const char *task;
	char w[96];
	int rc;

	if (ls == NULL)
		return GNN_OK;
	if (!json_is_array(ls) || json_array_size(ls) != 1)
		return bad_key(c, d->where, "labels", "expected a list of one label (one label column per graph)");
	if (c->label_node >= 0)
		return bad_key(c, d->where, "labels", "a second labelled node type: gnn-dist trains on one label type");
	l = json_array_get(ls, 0);
	snprintf(w, sizeof(w), "%s.labels[0]", d->where);
	if (!json_is_object(l))
		return bad_key(c, w, "", "expected an object");
	if ((rc = keys_known(c, l, w, allowed)) != GNN_OK || (rc = get_str(c, l, w, "label_col", true, &d->label_col)) != GNN_OK ||
	    (rc = get_str(c, l, w, "task_type", false, &task)) != GNN_OK)
		return rc;
	if (task != NULL && strcmp(task, "classification") != 0)
		return bad_key(c, w, "task_type", "only classification is supported (node classification; link prediction: --edge-split)");
	pct = json_object_get(l, "split_pct");
	cs = json_object_get(l, "custom_split_filenames");
	if (pct != NULL && cs != NULL)
		return bad_key(c, w, "split_pct", "give split_pct or custom_split_filenames, not both");
	d->pct[0] = 0.8, d->pct[1] = 0.1, d->pct[2] = 0.1;
	if (pct != NULL) {
		double sum = 0;

		if (!json_is_array(pct) || json_array_size(pct) != 3)
			return bad_key(c, w, "split_pct", "expected [train, valid, test] fractions");
		for (int k = 0; k < 3; k++) {
			const json_t *v = json_array_get(pct, (size_t)k);

			if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
				return bad_key(c, w, "split_pct", "expected fractions in [0, 1]");
			d->pct[k] = json_number_value(v);
			sum += d->pct[k];
		}
		if (sum > 1 + 1e-9 || d->pct[0] == 0)
			return bad_key(c, w, "split_pct", "the fractions must sum to at most 1, with some training nodes");
	}
	if (cs != NULL) {
		static const char *const cs_allowed[] = { "train", "valid", "test", NULL };
		char w2[160];

		snprintf(w2, sizeof(w2), "%s.custom_split_filenames", w);
		if (!json_is_object(cs))
			return bad_key(c, w, "custom_split_filenames", "expected {\"train\": FILE, \"valid\": FILE, \"test\": FILE}");
		if ((rc = keys_known(c, cs, w2, cs_allowed)) != GNN_OK)
			return rc;
		for (int k = 0; k < 3; k++)
			if ((rc = get_str(c, cs, w2, sets[k], k == 0, &d->split_file[k])) != GNN_OK)
				return rc;
	}
	c->label_node = idx;
	return GNN_OK;
}

static int add_type(struct gnn_schema *s, const char *name, const struct gc *c, const char *where)
{
	if (gnn_schema_type(s, name) >= 0)
		return GNN_OK;
	if (!gnn_name_ok(name))
		return bad_key(c, where, "", "not a valid type name (1..63 letters, digits, '_', '-', '.')");
	if (s->num_types == GNN_MAX_TYPES)
		return bad_key(c, where, "", "more than 64 node types");
	snprintf(s->types[s->num_types++].name, GNN_NAME_MAX, "%s", name);
	return GNN_OK;
}

/* Sorts the schema's types by name (as OGB's loaders number them). */
static void sort_types(struct gnn_schema *s)
{
	for (uint32_t i = 1; i < s->num_types; i++)
		for (uint32_t k = i; k > 0 && strcmp(s->types[k - 1].name, s->types[k].name) > 0; k--) {
			struct gnn_ntype t = s->types[k];

			s->types[k] = s->types[k - 1];
			s->types[k - 1] = t;
		}
}

static int parse_nodes(struct gc *c, struct pt_graph *g)
{
	static const char *const allowed[] = { "node_type", "files", "format", "node_id_col", "features", "labels", NULL };
	const json_t *ns = json_object_get(c->root, "nodes");
	const char *type;
	int rc;

	if (ns == NULL)
		return GNN_OK;
	if (!json_is_array(ns) || json_array_size(ns) > GNN_MAX_TYPES)
		return bad_key(c, "", "nodes", "expected a list of at most 64 node entries");
	for (size_t i = 0; i < json_array_size(ns); i++) {
		struct node_desc *d = &c->node[c->nnodes];

		d->j = json_array_get(ns, i);
		snprintf(d->where, sizeof(d->where), "nodes[%zu]", i);
		if (!json_is_object(d->j))
			return bad_key(c, d->where, "", "expected an object");
		if ((rc = keys_known(c, d->j, d->where, allowed)) != GNN_OK ||
		    (rc = get_str(c, d->j, d->where, "node_type", true, &type)) != GNN_OK ||
		    (rc = get_str(c, d->j, d->where, "node_id_col", true, &d->id_col)) != GNN_OK ||
		    (rc = get_format(c, d->j, d->where, &d->sep)) != GNN_OK || (rc = add_type(&g->schema, type, c, d->where)) != GNN_OK)
			return rc;
		for (int k = 0; k < c->nnodes; k++)
			if (strcmp(json_string_value(json_object_get(c->node[k].j, "node_type")), type) == 0)
				return bad_key(c, d->where, "node_type", "this node type has another entry: one entry per type");
		if ((rc = parse_features(c, d)) != GNN_OK || (rc = parse_labels(c, d, c->nnodes)) != GNN_OK)
			return rc;
		c->nnodes++;
	}
	return GNN_OK;
}

static int parse_edges(struct gc *c, struct pt_graph *g, bool keep_directed)
{
	static const char *const allowed[] = { "relation", "files", "format", "source_id_col", "dest_id_col", NULL };
	const json_t *es = json_object_get(c->root, "edges");
	uint32_t reverses = 0;
	int rc;

	if (!json_is_array(es) || json_array_size(es) == 0 || json_array_size(es) > GNN_MAX_RELS)
		return bad_key(c, "", "edges", "expected a list of 1 to 256 edge entries");
	for (size_t i = 0; i < json_array_size(es); i++) {
		struct edge_desc *d = &c->edge[c->nedges++];
		const json_t *rel;

		d->j = json_array_get(es, i);
		snprintf(d->where, sizeof(d->where), "edges[%zu]", i);
		if (!json_is_object(d->j))
			return bad_key(c, d->where, "", "expected an object");
		if ((rc = keys_known(c, d->j, d->where, allowed)) != GNN_OK ||
		    (rc = get_str(c, d->j, d->where, "source_id_col", true, &d->src_col)) != GNN_OK ||
		    (rc = get_str(c, d->j, d->where, "dest_id_col", true, &d->dst_col)) != GNN_OK ||
		    (rc = get_format(c, d->j, d->where, &d->sep)) != GNN_OK)
			return rc;
		rel = json_object_get(d->j, "relation");
		if (!json_is_array(rel) || json_array_size(rel) != 3 || !json_is_string(json_array_get(rel, 0)) ||
		    !json_is_string(json_array_get(rel, 1)) || !json_is_string(json_array_get(rel, 2)))
			return bad_key(c, d->where, "relation", "expected [source type, relation name, destination type]");
		const char *name = json_string_value(json_array_get(rel, 1));
		if (!gnn_name_ok(name) || (!keep_directed && strlen(name) + 4 >= GNN_NAME_MAX))
			return bad_key(c, d->where, "relation", "not a valid relation name (1..59 letters, digits, '_', '-', '.': rev_NAME must fit 63)");
		if ((rc = add_type(&g->schema, json_string_value(json_array_get(rel, 0)), c, d->where)) != GNN_OK ||
		    (rc = add_type(&g->schema, json_string_value(json_array_get(rel, 2)), c, d->where)) != GNN_OK)
			return rc;
		reverses += !keep_directed && strcmp(json_string_value(json_array_get(rel, 0)), json_string_value(json_array_get(rel, 2))) != 0;
	}
	if (c->nedges + reverses > GNN_MAX_RELS)
		return bad_key(c, "", "edges", "more than 256 relations, reverse relations included");
	return GNN_OK;
}

/* The schema's relations, in the file's order (types are sorted by now). */
static int set_relations(struct gc *c, struct pt_graph *g)
{
	struct gnn_schema *s = &g->schema;

	for (int i = 0; i < c->nedges; i++) {
		const json_t *rel = json_object_get(c->edge[i].j, "relation");
		struct gnn_rel *r = &s->rels[s->num_rels];

		snprintf(r->name, GNN_NAME_MAX, "%s", json_string_value(json_array_get(rel, 1)));
		r->src = (uint32_t)gnn_schema_type(s, json_string_value(json_array_get(rel, 0)));
		r->dst = (uint32_t)gnn_schema_type(s, json_string_value(json_array_get(rel, 2)));
		for (uint32_t q = 0; q < s->num_rels; q++)
			if (strcmp(s->rels[q].name, r->name) == 0 && s->rels[q].src == r->src && s->rels[q].dst == r->dst)
				return bad_key(c, c->edge[i].where, "relation", "this relation has another entry");
		s->num_rels++;
	}
	return GNN_OK;
}

/* ---- reading the tables -------------------------------------------------------------------------- */

/* A float field (a feature) or a label (an integer class; "" or nan: none). */
static int parse_feature(struct table *t, const char *s, const char *col, float *out)
{
	char *end, why[300];

	errno = 0;
	*out = strtof(s, &end);
	if (end == s || *end != '\0' || !isfinite(*out)) {
		snprintf(why, sizeof(why), "column %.200s: '%.40s' is not a finite number", col, s);
		return pt_csv_fail(&t->csv, why);
	}
	return GNN_OK;
}

static int parse_class(struct table *t, const char *s, int64_t bound, int32_t *out)
{
	char *end, why[160];
	double x;

	if (*s == '\0' || strcasecmp(s, "nan") == 0) {
		*out = -1;
		return GNN_OK;
	}
	errno = 0;
	x = strtod(s, &end);
	if (end == s || *end != '\0' || x != floor(x) || x < 0 || x >= (double)bound) {
		snprintf(why, sizeof(why), "label '%.40s' out of range: an integer class in [0, %" PRId64 "), or empty for none", s, bound);
		return pt_csv_fail(&t->csv, why);
	}
	*out = (int32_t)x;
	return GNN_OK;
}

/* Room for one more row of dim floats in g->feat[ty]. */
static int feat_room(struct gc *c, struct pt_graph *g, uint32_t ty, int64_t rows, size_t dim)
{
	if (rows < c->feat_cap[ty])
		return GNN_OK;
	int64_t cap = c->feat_cap[ty] ? c->feat_cap[ty] * 2 : 4096;
	float *f = realloc(g->feat[ty], (size_t)cap * dim * sizeof(float));

	if (f == NULL)
		return GNN_ENOMEM;
	g->feat[ty] = f;
	c->feat_cap[ty] = cap;
	return GNN_OK;
}

static int label_room(struct gc *c, int64_t rows)
{
	if (rows < c->labels_cap)
		return GNN_OK;
	int64_t cap = c->labels_cap ? c->labels_cap * 2 : 4096;
	int32_t *l = realloc(c->labels, (size_t)cap * sizeof(*l));

	if (l == NULL)
		return GNN_ENOMEM;
	c->labels = l;
	c->labels_cap = cap;
	return GNN_OK;
}

/* One node file of entry d: IDs, feature columns, labels. */
static int read_node_file(struct gc *c, struct node_desc *d, const char *path, int64_t num_classes, struct pt_graph *g)
{
	size_t dim = d->feat_cols != NULL ? json_array_size(d->feat_cols) : 0;
	int64_t bound = num_classes > 0 ? num_classes : PT_OGB_MAX_LABEL;
	struct idtab *ids = &c->ids[d->type];
	int idc = 0, lc = -1, *fc = NULL, rc;
	struct table t;
	char why[300];

	if ((rc = table_open(&t, path, d->sep)) != GNN_OK)
		return rc;
	if ((rc = table_col(&t, d->id_col, "node_id_col", &idc)) != GNN_OK ||
	    (d->label_col != NULL && (rc = table_col(&t, d->label_col, "label_col", &lc)) != GNN_OK))
		goto out;
	if (dim > 0 && (fc = malloc(dim * sizeof(*fc))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < dim; k++)
		if ((rc = table_col(&t, json_string_value(json_array_get(d->feat_cols, k)), "feature_col", &fc[k])) != GNN_OK)
			goto out;
	while ((rc = table_row(&t)) == 1) {
		int64_t i;
		bool added;

		if (t.f[idc][0] == '\0') {
			rc = pt_csv_fail(&t.csv, "empty node ID");
			goto out;
		}
		if ((rc = idtab_get(ids, t.f[idc], strlen(t.f[idc]), true, &i, &added)) != GNN_OK)
			goto out;
		if (!added) {
			snprintf(why, sizeof(why), "duplicate node ID '%.100s' (node type %s)", t.f[idc], g->schema.types[d->type].name);
			rc = pt_csv_fail(&t.csv, why);
			goto out;
		}
		if (dim > 0 && (rc = feat_room(c, g, d->type, i, dim)) != GNN_OK)
			goto out;
		for (size_t k = 0; k < dim; k++)
			if ((rc = parse_feature(&t, t.f[fc[k]], t.hdr[fc[k]], g->feat[d->type] + (size_t)i * dim + k)) != GNN_OK)
				goto out;
		if (lc >= 0 && ((rc = label_room(c, i)) != GNN_OK || (rc = parse_class(&t, t.f[lc], bound, &c->labels[i])) != GNN_OK))
			goto out;
	}
	rc = rc < 0 ? -rc : GNN_OK;
out:
	free(fc);
	table_close(&t);
	return rc;
}

static int read_nodes(struct gc *c, int64_t num_classes, struct pt_graph *g)
{
	for (int i = 0; i < c->nnodes; i++) {
		struct node_desc *d = &c->node[i];
		glob_t gl;
		int rc = get_files(c, d->j, d->where, &gl);

		for (size_t k = 0; rc == GNN_OK && k < gl.gl_pathc; k++)
			rc = read_node_file(c, d, gl.gl_pathv[k], num_classes, g);
		globfree(&gl);
		if (rc != GNN_OK)
			return rc;
		if (c->ids[d->type].n == 0)
			return bad_key(c, d->where, "files", "no node in the files (a header row only)");
		c->listed[d->type] = true;
	}
	return GNN_OK;
}

/* An endpoint's per-type ID: a listed type's node must exist; another
 * type's nodes come with its edges. */
static int endpoint(struct gc *c, struct table *t, uint32_t ty, const char *id, const char *side, const struct pt_graph *g,
		    int32_t *out)
{
	char why[300];
	int64_t i;
	bool added;
	int rc;

	if (*id == '\0')
		return pt_csv_fail(&t->csv, "empty node ID");
	if ((rc = idtab_get(&c->ids[ty], id, strlen(id), !c->listed[ty], &i, &added)) != GNN_OK)
		return rc;
	if (i < 0) {
		snprintf(why, sizeof(why), "%s node '%.100s' does not exist (not in node type %s's files)", side, id,
			 g->schema.types[ty].name);
		return pt_csv_fail(&t->csv, why);
	}
	*out = (int32_t)i;
	return GNN_OK;
}

/* Every edge file, as per-type IDs (made global by globalise). */
static int read_edges(struct gc *c, struct pt_graph *g, struct pt_ogb_edges *e)
{
	for (int r = 0; r < c->nedges; r++) {
		struct edge_desc *d = &c->edge[r];
		const struct gnn_rel *rel = &g->schema.rels[r];
		glob_t gl;
		int rc = get_files(c, d->j, d->where, &gl);

		for (size_t k = 0; rc == GNN_OK && k < gl.gl_pathc; k++) {
			struct table t;
			int sc = 0, dc = 0;

			if ((rc = table_open(&t, gl.gl_pathv[k], d->sep)) != GNN_OK)
				break;
			if ((rc = table_col(&t, d->src_col, "source_id_col", &sc)) == GNN_OK &&
			    (rc = table_col(&t, d->dst_col, "dest_id_col", &dc)) == GNN_OK) {
				while ((rc = table_row(&t)) == 1) {
					if (e->m == e->cap && (rc = pt_ogb_edges_reserve(e, e->m > 4096 ? e->m : 4096)) != GNN_OK)
						break;
					if ((rc = endpoint(c, &t, rel->src, t.f[sc], "source", g, &e->src[e->m])) != GNN_OK ||
					    (rc = endpoint(c, &t, rel->dst, t.f[dc], "destination", g, &e->dst[e->m])) != GNN_OK)
						break;
					e->rel[e->m++] = (uint16_t)r;
				}
				rc = rc < 0 ? -rc : rc;
			}
			table_close(&t);
		}
		globfree(&gl);
		if (rc != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

/* Types' node counts and offsets; the edges' IDs made global. */
static int globalise(struct gc *c, struct pt_graph *g, struct pt_ogb_edges *e)
{
	struct gnn_schema *s = &g->schema;

	for (uint32_t t = 0; t < s->num_types; t++) {
		s->types[t].num_nodes = c->ids[t].n;
		g->type_start[t + 1] = g->type_start[t] + c->ids[t].n;
		if (c->ids[t].n == 0)
			return bad_key(c, "", "nodes", "a node type without nodes (no node file rows, no edges)");
	}
	if (g->type_start[s->num_types] > INT32_MAX) {
		GNN_ERROR("bad_input", "file=%s nodes=%" PRId64 " reason=\"more than 2^31-1 nodes in all: METIS 5.1's idx_t is 32-bit\"",
			  c->path, g->type_start[s->num_types]);
		return GNN_ERANGE;
	}
	g->num_nodes = g->type_start[s->num_types];
	for (int64_t i = 0; i < e->m; i++) {
		e->src[i] += (int32_t)g->type_start[s->rels[e->rel[i]].src];
		e->dst[i] += (int32_t)g->type_start[s->rels[e->rel[i]].dst];
	}
	return GNN_OK;
}

/* ---- labels, split, features, IDs ---------------------------------------------------------------- */

static int set_labels(struct gc *c, int64_t num_classes, struct pt_graph *g)
{
	uint32_t t = c->node[c->label_node].type;
	int64_t n = c->ids[t].n, max = -1;

	g->schema.label_type = t;
	if ((g->labels = malloc((size_t)g->num_nodes * sizeof(*g->labels))) == NULL)
		return GNN_ENOMEM;
	for (int64_t i = 0; i < g->num_nodes; i++)
		g->labels[i] = -1;
	for (int64_t i = 0; i < n; i++) {
		g->labels[g->type_start[t] + i] = c->labels[i];
		if (c->labels[i] > max)
			max = c->labels[i];
	}
	if (max < 0)
		return bad_key(c, c->node[c->label_node].where, "labels", "no labelled node in the label column");
	g->num_classes = (int32_t)(num_classes > 0 ? num_classes : max + 1);
	return GNN_OK;
}

/* split_pct: the labelled nodes shuffled with the seed, then dealt
 * train, valid, test in those fractions (rounded down). */
static int split_by_pct(const struct node_desc *d, uint64_t seed, struct pt_graph *g)
{
	int64_t n = g->type_start[d->type + 1] - g->type_start[d->type], m = 0, cut[3];
	int64_t *idx = malloc((size_t)n * sizeof(*idx));

	if (idx == NULL)
		return GNN_ENOMEM;
	for (int64_t i = 0; i < n; i++)
		if (g->labels[g->type_start[d->type] + i] >= 0)
			idx[m++] = g->type_start[d->type] + i;
	for (int64_t i = m - 1; i > 0; i--) {
		int64_t k = (int64_t)(gnn_draw64(seed ^ 0x73706c6974ull, (uint64_t)i) % (uint64_t)(i + 1)), x = idx[i];

		idx[i] = idx[k];
		idx[k] = x;
	}
	cut[0] = (int64_t)(d->pct[0] * (double)m);
	cut[1] = cut[0] + (int64_t)(d->pct[1] * (double)m);
	cut[2] = cut[1] + (int64_t)(d->pct[2] * (double)m);
	for (int64_t i = 0; i < cut[2] && i < m; i++)
		g->split[idx[i]] = i < cut[0] ? GNN_SPLIT_TRAIN : i < cut[1] ? GNN_SPLIT_VALID : GNN_SPLIT_TEST;
	free(idx);
	return GNN_OK;
}

/* custom_split_filenames: one node ID a line (the user's IDs). */
static int split_by_files(struct gc *c, const struct node_desc *d, struct pt_graph *g)
{
	static const uint8_t code[3] = { GNN_SPLIT_TRAIN, GNN_SPLIT_VALID, GNN_SPLIT_TEST };
	char path[4200], *line, why[300];
	int rc = GNN_OK;

	for (int k = 0; k < 3 && rc == GNN_OK; k++) {
		struct pt_csv f;

		if (d->split_file[k] == NULL)
			continue;
		resolve(c, d->split_file[k], path, sizeof(path));
		if ((rc = pt_csv_open_path(&f, path)) != GNN_OK)
			return rc;
		while ((rc = pt_csv_next(&f, &line)) == 1) {
			int64_t i;
			bool added;

			if (*line == '\0')
				continue;
			if ((rc = idtab_get(&c->ids[d->type], line, strlen(line), false, &i, &added)) != GNN_OK)
				break;
			if (i < 0) {
				snprintf(why, sizeof(why), "node '%.100s' is not a %s node", line, g->schema.types[d->type].name);
				rc = pt_csv_fail(&f, why);
				break;
			}
			i += g->type_start[d->type];
			if (g->labels[i] < 0) {
				rc = pt_csv_fail(&f, "node in the split has no label");
				break;
			}
			if (g->split[i] != GNN_SPLIT_NONE) {
				rc = pt_csv_fail(&f, "node listed twice in the split (same or another set)");
				break;
			}
			g->split[i] = code[k];
		}
		rc = rc < 0 ? -rc : rc == 1 ? GNN_OK : rc;
		pt_csv_close(&f);
	}
	return rc;
}

/* feature_npy: row i is the type's node i (its files' order). */
static int attach_npy(struct gc *c, const struct node_desc *d, const char *scratch, struct pt_graph *g)
{
	int64_t n = c->ids[d->type].n;
	struct pt_nparr *a;
	char path[4200], why[256];
	int rc;

	resolve(c, d->npy, path, sizeof(path));
	if ((rc = pt_nparr_file(path, &a)) != GNN_OK)
		return rc;
	const struct gnn_npy_header *h = pt_nparr_header(a);
	if (!gnn_npy_type_float(h->type) || h->ndim != 2 || h->rows != (uint64_t)n || h->cols == 0 || h->cols > 65536) {
		snprintf(why, sizeof(why), "expected (%" PRId64 ", D) floats, one row per %s node in its files' order, got %s (%" PRIu64 ", %" PRIu64 ")",
			 n, g->schema.types[d->type].name, gnn_npy_type_name(h->type), h->rows, h->cols);
		rc = pt_nparr_fail(a, why);
		pt_nparr_close(a);
		return rc;
	}
	if ((rc = pt_nparr_rows(a, scratch)) != GNN_OK) {
		pt_nparr_close(a);
		return rc;
	}
	return pt_npfeat_attach(g, d->type, a, NULL);
}

static int set_features(struct gc *c, const char *scratch, struct pt_graph *g)
{
	int rc;

	for (int i = 0; i < c->nnodes; i++) {
		const struct node_desc *d = &c->node[i];

		if (d->npy != NULL && (rc = attach_npy(c, d, scratch, g)) != GNN_OK)
			return rc;
		if (d->feat_cols != NULL)
			g->schema.types[d->type].feat_dim = (uint32_t)json_array_size(d->feat_cols);
	}
	g->feat_dim = (int32_t)gnn_schema_max_feat_dim(&g->schema);
	return GNN_OK;
}

/* OUT/node-ids/TYPE.txt: line i is the user's ID of the type's node i. */
static int write_ids(const struct gc *c, const char *scratch, const struct pt_graph *g)
{
	char path[4300];
	int rc = GNN_OK;

	snprintf(path, sizeof(path), "%s/node-ids", scratch);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		GNN_ERROR("output_unwritable", "dir=%s error=\"%s\"", path, strerror(errno));
		return GNN_EIO;
	}
	for (uint32_t t = 0; t < g->schema.num_types && rc == GNN_OK; t++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/node-ids/%s.txt", scratch, g->schema.types[t].name);
		if ((f = fopen(path, "w")) == NULL) {
			GNN_ERROR("output_unwritable", "file=%s error=\"%s\"", path, strerror(errno));
			return GNN_EIO;
		}
		for (int64_t i = 0; i < c->ids[t].n; i++)
			fprintf(f, "%s\n", c->ids[t].arena + c->ids[t].off[i]);
		if (ferror(f) | fclose(f)) {
			GNN_ERROR("output_unwritable", "file=%s error=\"write failed\"", path);
			rc = GNN_EIO;
		}
	}
	return rc;
}

/* ---- the import ---------------------------------------------------------------------------------- */

static int load_description(struct gc *c, bool keep_directed, struct pt_graph *g)
{
	static const char *const allowed[] = { "version", "nodes", "edges", NULL };
	json_error_t je;
	const char *slash = strrchr(c->path, '/');
	const char *version;
	int rc;

	if (slash == NULL)
		snprintf(c->dir, sizeof(c->dir), ".");
	else
		snprintf(c->dir, sizeof(c->dir), "%.*s", slash == c->path ? 1 : (int)(slash - c->path), c->path);
	if ((c->root = json_load_file(c->path, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		GNN_ERROR("bad_config", "file=%s line=%d column=%d reason=\"%s\"", c->path, je.line, je.column, je.text);
		return je.line < 0 ? GNN_ENOENT : GNN_EFORMAT;
	}
	if (!json_is_object(c->root))
		return bad_key(c, "", "(top)", "expected a JSON object with nodes and edges");
	if ((rc = keys_known(c, c->root, "", allowed)) != GNN_OK || (rc = get_str(c, c->root, "", "version", false, &version)) != GNN_OK ||
	    (rc = parse_nodes(c, g)) != GNN_OK || (rc = parse_edges(c, g, keep_directed)) != GNN_OK)
		return rc;
	if (c->label_node < 0)
		return bad_key(c, "", "nodes", "no node type has labels: node classification needs one labelled type");
	sort_types(&g->schema);
	for (int i = 0; i < c->nnodes; i++)
		c->node[i].type = (uint32_t)gnn_schema_type(&g->schema, json_string_value(json_object_get(c->node[i].j, "node_type")));
	return set_relations(c, g);
}

static void gc_free(struct gc *c)
{
	for (int i = 0; i < GNN_MAX_TYPES; i++) /* an entry that failed half-way too */
		json_decref(c->node[i].feat_cols);
	for (int t = 0; t < GNN_MAX_TYPES; t++)
		idtab_free(&c->ids[t]);
	free(c->labels);
	json_decref(c->root);
}

int pt_import_gconstruct(const struct pt_import_opts *o, const char *path, uint64_t seed, struct pt_graph *g)
{
	struct gc c = { .path = path, .label_node = -1 };
	struct pt_ogb_edges e = { .typed = true };
	char types[1024], rels[2048];
	const struct node_desc *ld;
	int64_t input;
	int rc;

	memset(&g->schema, 0, sizeof(g->schema));
	if ((rc = load_description(&c, o->keep_directed, g)) != GNN_OK)
		goto out;
	GNN_INFO("import_start", "config=%s layout=gconstruct types=%u relations=%u", path, g->schema.num_types,
		 g->schema.num_rels);
	if ((rc = read_nodes(&c, o->num_classes, g)) != GNN_OK || (rc = read_edges(&c, g, &e)) != GNN_OK ||
	    (rc = globalise(&c, g, &e)) != GNN_OK)
		goto out;
	input = e.m;
	if ((rc = pt_ogb_build_typed(g, &e, o->keep_directed, path)) != GNN_OK)
		goto out;
	ld = &c.node[c.label_node];
	if ((rc = set_labels(&c, o->num_classes, g)) != GNN_OK)
		goto out;
	if ((g->split = calloc((size_t)g->num_nodes, 1)) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	if ((rc = ld->split_file[0] != NULL ? split_by_files(&c, ld, g) : split_by_pct(ld, seed, g)) != GNN_OK ||
	    (rc = set_features(&c, o->scratch, g)) != GNN_OK || (o->scratch != NULL && (rc = write_ids(&c, o->scratch, g)) != GNN_OK))
		goto out;
	pt_graph_names(&g->schema, false, types, sizeof(types));
	pt_graph_names(&g->schema, true, rels, sizeof(rels));
	GNN_INFO("import_done", "nodes=%" PRId64 " types=%s relations=%s label_type=%s input_edges=%" PRId64 " edges=%" PRId64 " symmetric=%s feat_dim=%d classes=%d split=%s",
		 g->num_nodes, types, rels, g->schema.types[g->schema.label_type].name, input, g->num_edges,
		 g->symmetric ? "true" : "false", g->feat_dim, g->num_classes, ld->split_file[0] != NULL ? "files" : "split_pct");
out:
	pt_ogb_edges_free(&e);
	gc_free(&c);
	return rc;
}
