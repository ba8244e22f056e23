#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "import_int.h"
#include "log.h"

#define MAX_LABEL (1 << 20)  /* guards against garbage labels making huge class counts */
#define MAX_FEAT_DIM (1 << 16)

int import_csv_open(struct import_csv *c, const char *dir, const char *name)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s/%s.gz", dir, name);
	if (stat(c->path, &st) != 0)
		snprintf(c->path, sizeof(c->path), "%s/%s", dir, name);
	c->gz = gzopen(c->path, "rb");
	if (c->gz == NULL) {
		GNN_ERROR("open_failed", "file=%s.gz error=\"%s\"", c->path, strerror(errno ? errno : ENOENT));
		return errno == ENOENT ? GNN_ENOENT : GNN_EIO;
	}
	gzbuffer(c->gz, 1 << 18);
	c->cap = 1 << 16;
	c->buf = malloc(c->cap);
	if (c->buf == NULL) {
		gzclose(c->gz);
		return GNN_ENOMEM;
	}
	return GNN_OK;
}

void import_csv_close(struct import_csv *c)
{
	if (c->gz != NULL)
		gzclose(c->gz);
	free(c->buf);
	c->gz = NULL;
	c->buf = NULL;
}

int import_csv_fail(const struct import_csv *c, const char *reason)
{
	GNN_ERROR("bad_input", "file=%s line=%lld reason=\"%s\"", c->path, (long long)c->line, reason);
	return GNN_EFORMAT;
}

/* zlib reports a damaged stream as soon as it inflates ahead, so the error
 * is only consulted where the data ends: at a line without a newline. */
int import_csv_next(struct import_csv *c, char **line)
{
	size_t len = 0;
	int errnum;

	for (;;) {
		if (gzgets(c->gz, c->buf + len, (int)(c->cap - len)) == NULL)
			break;
		len += strlen(c->buf + len);
		if (len > 0 && c->buf[len - 1] == '\n')
			break;
		if (len + 1 < c->cap)
			continue;  /* stopped early at the end of the data: confirm */
		char *grown = realloc(c->buf, c->cap * 2);

		if (grown == NULL)
			return -GNN_ENOMEM;
		c->buf = grown;
		c->cap *= 2;
	}
	if (len == 0 || c->buf[len - 1] != '\n') {
		gzerror(c->gz, &errnum);
		if (errnum != Z_OK) {
			c->line++;
			import_csv_fail(c, errnum == Z_BUF_ERROR ? "truncated gzip file" : "corrupt gzip data");
			return -GNN_EFORMAT;
		}
	}
	if (len == 0)
		return 0;
	c->line++;
	while (len > 0 && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
		c->buf[--len] = '\0';
	*line = c->buf;
	return 1;
}

bool import_field_i64(char **p, int64_t *out)
{
	char *end;
	long long v;

	if (**p == '\0' || **p == ',')
		return false;
	errno = 0;
	v = strtoll(*p, &end, 10);
	if (errno != 0 || end == *p || (*end != ',' && *end != '\0'))
		return false;
	*out = v;
	*p = *end == ',' ? end + 1 : end;
	return true;
}

bool import_csv_exists(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s.gz", dir, name);
	if (stat(path, &st) == 0)
		return true;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

int import_read_count(const char *dir, const char *name, int64_t max, int64_t *out)
{
	struct import_csv c;
	char *line, *p;
	int64_t v;
	int rc;

	if ((rc = import_csv_open(&c, dir, name)) != GNN_OK)
		return rc;
	rc = import_csv_next(&c, &line);
	if (rc <= 0) {
		rc = rc < 0 ? -rc : import_csv_fail(&c, "empty file: expected one count");
		goto out;
	}
	p = line;
	if (!import_field_i64(&p, &v) || *p != '\0') {
		rc = import_csv_fail(&c, "expected one integer");
		goto out;
	}
	if (v < 0 || v > max) {
		rc = import_csv_fail(&c, "count out of range");
		goto out;
	}
	*out = v;
	rc = GNN_OK;
out:
	import_csv_close(&c);
	return rc;
}

int import_edges_reserve(struct import_edges *e, int64_t more)
{
	int64_t cap = e->m + more;
	int32_t *s, *d;
	uint16_t *r;

	if (cap <= e->cap)
		return GNN_OK;
	s = realloc(e->src, (size_t)cap * sizeof(*s));
	if (s != NULL)
		e->src = s;
	d = realloc(e->dst, (size_t)cap * sizeof(*d));
	if (d != NULL)
		e->dst = d;
	if (s == NULL || d == NULL)
		return GNN_ENOMEM;
	if (e->typed) {
		if ((r = realloc(e->rel, (size_t)cap * sizeof(*r))) == NULL)
			return GNN_ENOMEM;
		e->rel = r;
	}
	e->cap = cap;
	return GNN_OK;
}

void import_edges_free(struct import_edges *e)
{
	free(e->src);
	free(e->dst);
	free(e->rel);
	memset(e, 0, sizeof(*e));
}

/* A per-type ID outside [0, n) of type t (col: its column, 0 for a
 * one-column file). A homogeneous graph's message names neither. */
static int id_out_of_range(const struct import_csv *c, const struct graph *g, uint32_t t, int col, int64_t n)
{
	char why[256];

	if (gnn_schema_is_plain(&g->schema))
		snprintf(why, sizeof(why), "node ID out of range [0, %lld)", (long long)n);
	else if (col > 0)
		snprintf(why, sizeof(why), "node ID out of range [0, %lld) for node type %s (column %d)", (long long)n,
			 g->schema.types[t].name, col);
	else
		snprintf(why, sizeof(why), "node ID out of range [0, %lld) for node type %s", (long long)n,
			 g->schema.types[t].name);
	return import_csv_fail(c, why);
}

int import_read_edges(const char *dir, const struct graph *g, uint32_t r, int64_t hint, struct import_edges *e)
{
	const struct gnn_rel *re = &g->schema.rels[r];
	int64_t os = g->type_start[re->src], ns = g->type_start[re->src + 1] - os;
	int64_t od = g->type_start[re->dst], nd = g->type_start[re->dst + 1] - od, m0 = e->m;
	struct import_csv c;
	char *line;
	int rc;

	if ((rc = import_csv_open(&c, dir, "edge.csv")) != GNN_OK)
		return rc;
	if ((rc = import_edges_reserve(e, hint > 0 ? hint : 1 << 16)) != GNN_OK)
		goto out;
	while ((rc = import_csv_next(&c, &line)) == 1) {
		char *p = line;
		int64_t u, v;

		if (!import_field_i64(&p, &u) || !import_field_i64(&p, &v) || *p != '\0') {
			rc = import_csv_fail(&c, "expected two integer columns \"src,dst\"");
			goto out;
		}
		if (u < 0 || u >= ns || v < 0 || v >= nd) {
			rc = u < 0 || u >= ns ? id_out_of_range(&c, g, re->src, 1, ns) : id_out_of_range(&c, g, re->dst, 2, nd);
			goto out;
		}
		if (e->m == e->cap && (rc = import_edges_reserve(e, e->cap)) != GNN_OK)
			goto out;
		e->src[e->m] = (int32_t)(os + u);
		e->dst[e->m] = (int32_t)(od + v);
		if (e->typed)
			e->rel[e->m] = (uint16_t)r;
		e->m++;
	}
	if (rc < 0) {
		rc = -rc;
		goto out;
	}
	rc = GNN_OK;
	if (hint >= 0 && e->m - m0 != hint) {
		GNN_ERROR("bad_input", "file=%s reason=\"edge count %lld differs from num-edge-list.csv (%lld)\"",
			  c.path, (long long)(e->m - m0), (long long)hint);
		rc = GNN_EFORMAT;
	}
out:
	import_csv_close(&c);
	return rc;
}

/* One label (an integer, or OGB's nan for none) into *out (-1 for nan). */
static int parse_label(const struct import_csv *c, const char *p, int64_t bound, int32_t *out)
{
	char *end, why[128];
	double x;

	/* OGB stores labels as integers, or floats with nan for unlabeled nodes. */
	errno = 0;
	x = strtod(p, &end);
	if (end == p || *end != '\0' || errno == ERANGE)
		return import_csv_fail(c, "label is not a number");
	if (isnan(x)) {
		*out = -1;
		return GNN_OK;
	}
	if (x != floor(x) || x < 0 || x >= (double)bound) {
		snprintf(why, sizeof(why), "label out of range: must be an integer in [0, %lld)", (long long)bound);
		return import_csv_fail(c, why);
	}
	*out = (int32_t)x;
	return GNN_OK;
}

int import_read_labels(const char *dir, struct graph *g, int64_t num_classes)
{
	uint32_t t = g->schema.label_type;
	int64_t n = g->type_start[t + 1] - g->type_start[t], max = -1;
	int64_t bound = num_classes > 0 ? num_classes : MAX_LABEL;
	int32_t *labels = g->labels + g->type_start[t];
	struct import_csv c;
	char *line;
	int rc;

	if ((rc = import_csv_open(&c, dir, "node-label.csv")) != GNN_OK)
		return rc;
	while ((rc = import_csv_next(&c, &line)) == 1) {
		if (c.line > n) {
			rc = import_csv_fail(&c, "more labels than nodes");
			goto out;
		}
		if ((rc = parse_label(&c, line, bound, &labels[c.line - 1])) != GNN_OK)
			goto out;
		if (labels[c.line - 1] > max)
			max = labels[c.line - 1];
	}
	if (rc < 0) {
		rc = -rc;
		goto out;
	}
	if (c.line != n) {
		rc = import_csv_fail(&c, "fewer labels than nodes");
		goto out;
	}
	if (max < 0) {
		rc = import_csv_fail(&c, "no labelled node");
		goto out;
	}
	g->num_classes = (int32_t)(num_classes > 0 ? num_classes : max + 1);
	rc = GNN_OK;
out:
	import_csv_close(&c);
	return rc;
}

/* Counts comma-separated fields of a line. */
static int64_t count_fields(const char *line)
{
	int64_t n = 1;

	for (; *line != '\0'; line++)
		n += *line == ',';
	return n;
}

/* Parses one feature row of d finite floats into row. */
static int parse_feature_row(const struct import_csv *c, char *line, int64_t d, float *row)
{
	char *p = line, *end, why[128];

	for (int64_t j = 0; j < d; j++) {
		errno = 0;
		row[j] = strtof(p, &end);
		if (end == p || (*end != ',' && *end != '\0') || (j + 1 < d && *end != ',')) {
			snprintf(why, sizeof(why), "expected %lld numeric columns (column %lld)", (long long)d,
				 (long long)j + 1);
			return import_csv_fail(c, why);
		}
		if (!isfinite(row[j])) {
			snprintf(why, sizeof(why), "feature is NaN or infinite (column %lld)", (long long)j + 1);
			return import_csv_fail(c, why);
		}
		p = *end == ',' ? end + 1 : end;
	}
	if (*p != '\0' || (p > line && p[-1] == ',')) {
		snprintf(why, sizeof(why), "expected %lld columns, found more", (long long)d);
		return import_csv_fail(c, why);
	}
	return GNN_OK;
}

int import_read_features(const char *dir, struct graph *g, uint32_t t)
{
	int64_t n = g->type_start[t + 1] - g->type_start[t], d = 0;
	struct import_csv c;
	char *line;
	int rc;

	if ((rc = import_csv_open(&c, dir, "node-feat.csv")) != GNN_OK)
		return rc;
	while ((rc = import_csv_next(&c, &line)) == 1) {
		if (c.line > n) {
			rc = import_csv_fail(&c, "more feature rows than nodes");
			goto out;
		}
		if (d == 0) {
			d = count_fields(line);
			if (d > MAX_FEAT_DIM) {
				rc = import_csv_fail(&c, "too many feature columns");
				goto out;
			}
			g->schema.types[t].feat_dim = (uint32_t)d;
			g->feat[t] = malloc((size_t)n * (size_t)d * sizeof(float));
			if (g->feat[t] == NULL) {
				rc = GNN_ENOMEM;
				goto out;
			}
		}
		if ((rc = parse_feature_row(&c, line, d, g->feat[t] + (size_t)(c.line - 1) * (size_t)d)) != GNN_OK)
			goto out;
	}
	if (rc < 0) {
		rc = -rc;
		goto out;
	}
	if (c.line != n)
		rc = import_csv_fail(&c, "fewer feature rows than nodes");
	else
		rc = GNN_OK;
out:
	import_csv_close(&c);
	return rc;
}

/* Picks the split folder: DIR/split/NAME, or the only folder under
 * DIR/split when name is NULL; its path into out (len bytes). */
static int import_find_split(const char *dir, const char *name, char *out, size_t len)
{
	char path[2048];
	struct dirent *e;
	DIR *d;
	int found = 0;

	if (name != NULL) {
		struct stat st;

		snprintf(out, len, "%s/split/%s", dir, name);
		if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
			GNN_ERROR("bad_input", "dir=%s reason=\"split folder not found\"", out);
			return GNN_ENOENT;
		}
		return GNN_OK;
	}
	snprintf(path, sizeof(path), "%s/split", dir);
	d = opendir(path);
	if (d == NULL) {
		GNN_ERROR("bad_input", "dir=%s reason=\"no split folder: %s\"", path, strerror(errno));
		return GNN_ENOENT;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (found++ == 0)
			snprintf(out, len, "%s/%.255s", path, e->d_name);
	}
	closedir(d);
	if (found != 1) {
		GNN_ERROR("bad_input", "dir=%s folders=%d reason=\"%s\"", path, found,
			  found ? "several splits: choose one with --split NAME" : "no split folder inside");
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* Marks the label type's nodes listed in DIR/NAME (one per-type ID a line)
 * with kind in g->split (allocated by the caller, zeroed): each must be
 * labelled and listed once across the three split files. */
static int import_read_split(const char *dir, const char *name, uint8_t kind, struct graph *g)
{
	uint32_t t = g->schema.label_type;
	int64_t start = g->type_start[t], n = g->type_start[t + 1] - start;
	struct import_csv c;
	char *line;
	int rc;

	if ((rc = import_csv_open(&c, dir, name)) != GNN_OK)
		return rc;
	while ((rc = import_csv_next(&c, &line)) == 1) {
		char *p = line;
		int64_t v;

		if (!import_field_i64(&p, &v) || *p != '\0') {
			rc = import_csv_fail(&c, "expected one integer node index");
			goto out;
		}
		if (v < 0 || v >= n) {
			rc = id_out_of_range(&c, g, t, 0, n);
			goto out;
		}
		if (g->split[start + v] != GNN_SPLIT_NONE) {
			rc = import_csv_fail(&c, "node listed twice in the split (same or another set)");
			goto out;
		}
		if (g->labels[start + v] < 0) {
			rc = import_csv_fail(&c, "node in the split has no label (nan)");
			goto out;
		}
		g->split[start + v] = kind;
	}
	rc = rc < 0 ? -rc : GNN_OK;
out:
	import_csv_close(&c);
	return rc;
}

int import_read_splits(const char *dir, struct graph *g)
{
	int rc;

	g->split = calloc((size_t)g->num_nodes, 1);
	if (g->split == NULL)
		return GNN_ENOMEM;
	if ((rc = import_read_split(dir, "train.csv", GNN_SPLIT_TRAIN, g)) != GNN_OK ||
	    (rc = import_read_split(dir, "valid.csv", GNN_SPLIT_VALID, g)) != GNN_OK)
		return rc;
	return import_read_split(dir, "test.csv", GNN_SPLIT_TEST, g);
}

/* OGB's homogeneous layout: one edge list, one node type. */
static int import_plain(const struct import_opts *o, const char *raw, const char *split, struct graph *g)
{
	struct import_edges e = { 0 };
	int64_t n = 0, hint = -1;
	int rc;

	if ((rc = import_read_count(raw, "num-node-list.csv", INT32_MAX, &n)) != GNN_OK)
		return rc;
	if (n == 0) {
		GNN_ERROR("bad_input", "file=%s/num-node-list.csv.gz reason=\"empty graph: 0 nodes\"", raw);
		return GNN_EINVAL;
	}
	if (import_csv_exists(raw, "num-edge-list.csv") &&
	    (rc = import_read_count(raw, "num-edge-list.csv", INT32_MAX, &hint)) != GNN_OK)
		return rc;
	g->num_nodes = n;
	gnn_schema_plain(&g->schema, n, 0, 0);
	g->type_start[1] = n;
	GNN_INFO("import_start", "dir=%s nodes=%lld split=%s", o->dir, (long long)n, split);
	if ((rc = import_read_edges(raw, g, 0, hint, &e)) != GNN_OK) {
		import_edges_free(&e);
		return rc;
	}
	if (e.m == 0) {
		import_edges_free(&e);
		GNN_ERROR("bad_input", "file=%s/edge.csv.gz reason=\"empty graph: no edges\"", raw);
		return GNN_EINVAL;
	}
	hint = e.m;
	if ((rc = graph_build_csr(g, n, e.src, e.dst, NULL, e.m, !o->keep_directed)) != GNN_OK)
		return rc;
	if ((g->labels = malloc((size_t)n * sizeof(*g->labels))) == NULL)
		return GNN_ENOMEM;
	if ((rc = import_read_labels(raw, g, o->num_classes)) != GNN_OK ||
	    (rc = import_read_features(raw, g, 0)) != GNN_OK || (rc = import_read_splits(split, g)) != GNN_OK)
		return rc;
	g->feat_dim = (int32_t)g->schema.types[0].feat_dim;
	GNN_INFO("import_done", "nodes=%lld input_edges=%lld edges=%lld symmetric=%s feat_dim=%d classes=%d",
		 (long long)n, (long long)hint, (long long)g->num_edges, g->symmetric ? "true" : "false",
		 g->feat_dim, g->num_classes);
	return GNN_OK;
}

int import_ogb(const struct import_opts *o, struct graph *g, char *split_name, size_t len)
{
	char raw[4096], split[4096];
	struct stat st;
	int rc;

	snprintf(raw, sizeof(raw), "%s/raw", o->dir);
	if (stat(raw, &st) != 0 || !S_ISDIR(st.st_mode)) {
		GNN_ERROR("bad_input", "dir=%s reason=\"not an OGB dataset folder (no raw/ inside)\"", o->dir);
		return GNN_ENOENT;
	}
	if ((rc = import_find_split(o->dir, o->split, split, sizeof(split))) != GNN_OK)
		return rc;
	snprintf(split_name, len, "%s", strrchr(split, '/') + 1);
	if (import_csv_exists(raw, "num-node-dict.csv"))
		return import_hetero(o, raw, split, g);
	return import_plain(o, raw, split, g);
}
