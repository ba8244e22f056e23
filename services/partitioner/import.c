#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "err.h"
#include "log.h"

#define MAX_LABEL (1 << 20)  /* guards against garbage labels making huge class counts */
#define MAX_FEAT_DIM (1 << 16)

/* A gzip (or plain) CSV file read line by line. */
struct csv {
	gzFile gz;
	char path[4096];
	int64_t line;
	char *buf;
	size_t cap;
};

/* Opens DIR/NAME.gz, else DIR/NAME without .gz. */
static int csv_open(struct csv *c, const char *dir, const char *name)
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

static void csv_close(struct csv *c)
{
	if (c->gz != NULL)
		gzclose(c->gz);
	free(c->buf);
	c->gz = NULL;
	c->buf = NULL;
}

static int csv_fail(const struct csv *c, const char *reason)
{
	GNN_ERROR("bad_input", "file=%s line=%lld reason=\"%s\"", c->path, (long long)c->line, reason);
	return GNN_EFORMAT;
}

/* Reads the next line into c->buf without its newline. Returns 1 for a line,
 * 0 at a clean end of file, or a negative GNN error (truncated/corrupt gzip).
 * zlib reports a damaged stream as soon as it inflates ahead, so the error
 * is only consulted where the data ends: at a line without a newline. */
static int csv_next(struct csv *c, char **line)
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
			csv_fail(c, errnum == Z_BUF_ERROR ? "truncated gzip file" : "corrupt gzip data");
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

/* Parses one integer field ending at ',' or end of line; advances *p past the comma. */
static bool field_i64(char **p, int64_t *out)
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

/* Reads a file holding a single integer (num-node-list / num-edge-list). */
static int read_count(const char *dir, const char *name, int64_t max, int64_t *out)
{
	struct csv c;
	char *line, *p;
	int64_t v;
	int rc;

	if ((rc = csv_open(&c, dir, name)) != GNN_OK)
		return rc;
	rc = csv_next(&c, &line);
	if (rc <= 0) {
		rc = rc < 0 ? -rc : csv_fail(&c, "empty file: expected one count");
		goto out;
	}
	p = line;
	if (!field_i64(&p, &v) || *p != '\0') {
		rc = csv_fail(&c, "expected one integer");
		goto out;
	}
	if (v < 0 || v > max) {
		rc = csv_fail(&c, "count out of range");
		goto out;
	}
	*out = v;
	rc = GNN_OK;
out:
	csv_close(&c);
	return rc;
}

static int read_edges(const char *dir, int64_t n, int64_t hint, int32_t **src_out,
		      int32_t **dst_out, int64_t *m_out)
{
	struct csv c;
	int32_t *src = NULL, *dst = NULL;
	int64_t m = 0, cap = hint > 0 ? hint : 1 << 16;
	char *line;
	int rc;

	if ((rc = csv_open(&c, dir, "edge.csv")) != GNN_OK)
		return rc;
	src = malloc((size_t)cap * sizeof(*src));
	dst = malloc((size_t)cap * sizeof(*dst));
	if (src == NULL || dst == NULL) {
		rc = GNN_ENOMEM;
		goto out_fail;
	}
	while ((rc = csv_next(&c, &line)) == 1) {
		char *p = line;
		int64_t u, v;

		if (!field_i64(&p, &u) || !field_i64(&p, &v) || *p != '\0') {
			rc = csv_fail(&c, "expected two integer columns \"src,dst\"");
			goto out_fail;
		}
		if (u < 0 || u >= n || v < 0 || v >= n) {
			char why[128];

			snprintf(why, sizeof(why), "node ID out of range [0, %lld)", (long long)n);
			rc = csv_fail(&c, why);
			goto out_fail;
		}
		if (m == cap) {
			int32_t *s2, *d2;

			cap *= 2;
			s2 = realloc(src, (size_t)cap * sizeof(*src));
			if (s2 != NULL)
				src = s2;
			d2 = realloc(dst, (size_t)cap * sizeof(*dst));
			if (d2 != NULL)
				dst = d2;
			if (s2 == NULL || d2 == NULL) {
				rc = GNN_ENOMEM;
				goto out_fail;
			}
		}
		src[m] = (int32_t)u;
		dst[m] = (int32_t)v;
		m++;
	}
	if (rc < 0) {
		rc = -rc;
		goto out_fail;
	}
	if (hint >= 0 && m != hint) {
		GNN_ERROR("bad_input", "file=%s reason=\"edge count %lld differs from num-edge-list.csv (%lld)\"",
			  c.path, (long long)m, (long long)hint);
		rc = GNN_EFORMAT;
		goto out_fail;
	}
	csv_close(&c);
	*src_out = src;
	*dst_out = dst;
	*m_out = m;
	return GNN_OK;

out_fail:
	csv_close(&c);
	free(src);
	free(dst);
	return rc;
}

static int read_labels(const char *dir, struct graph *g, int64_t num_classes)
{
	struct csv c;
	int64_t v = 0, max = -1;
	char *line;
	int rc;

	if ((rc = csv_open(&c, dir, "node-label.csv")) != GNN_OK)
		return rc;
	g->labels = malloc((size_t)g->num_nodes * sizeof(*g->labels));
	if (g->labels == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	while ((rc = csv_next(&c, &line)) == 1) {
		char *p = line, *end;
		double x;
		int64_t bound = num_classes > 0 ? num_classes : MAX_LABEL;

		if (c.line > g->num_nodes) {
			rc = csv_fail(&c, "more labels than nodes");
			goto out;
		}
		/* OGB stores labels as integers, or floats with nan for unlabeled nodes. */
		errno = 0;
		x = strtod(p, &end);
		if (end == p || *end != '\0' || errno == ERANGE) {
			rc = csv_fail(&c, "label is not a number");
			goto out;
		}
		if (isnan(x)) {
			g->labels[c.line - 1] = -1;
			continue;
		}
		if (x != floor(x) || x < 0 || x >= (double)bound) {
			char why[128];

			snprintf(why, sizeof(why), "label out of range: must be an integer in [0, %lld)",
				 (long long)bound);
			rc = csv_fail(&c, why);
			goto out;
		}
		v = (int64_t)x;
		g->labels[c.line - 1] = (int32_t)v;
		if (v > max)
			max = v;
	}
	if (rc < 0) {
		rc = -rc;
		goto out;
	}
	if (c.line != g->num_nodes) {
		rc = csv_fail(&c, "fewer labels than nodes");
		goto out;
	}
	if (max < 0) {
		rc = csv_fail(&c, "no labelled node");
		goto out;
	}
	g->num_classes = (int32_t)(num_classes > 0 ? num_classes : max + 1);
	rc = GNN_OK;
out:
	csv_close(&c);
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

static int read_features(const char *dir, struct graph *g)
{
	struct csv c;
	char *line;
	int64_t d = 0;
	int rc;

	if ((rc = csv_open(&c, dir, "node-feat.csv")) != GNN_OK)
		return rc;
	while ((rc = csv_next(&c, &line)) == 1) {
		char *p = line, *end;
		float *row;

		if (c.line > g->num_nodes) {
			rc = csv_fail(&c, "more feature rows than nodes");
			goto out;
		}
		if (d == 0) {
			d = count_fields(line);
			if (d > MAX_FEAT_DIM) {
				rc = csv_fail(&c, "too many feature columns");
				goto out;
			}
			g->feat_dim = (int32_t)d;
			g->feat[0] = malloc((size_t)g->num_nodes * (size_t)d * sizeof(float));
			if (g->feat[0] == NULL) {
				rc = GNN_ENOMEM;
				goto out;
			}
		}
		row = g->feat[0] + (size_t)(c.line - 1) * (size_t)d;
		for (int64_t j = 0; j < d; j++) {
			errno = 0;
			row[j] = strtof(p, &end);
			if (end == p || (*end != ',' && *end != '\0') || (j + 1 < d && *end != ',')) {
				char why[128];

				snprintf(why, sizeof(why), "expected %lld numeric columns (column %lld)",
					 (long long)d, (long long)j + 1);
				rc = csv_fail(&c, why);
				goto out;
			}
			if (!isfinite(row[j])) {
				char why[128];

				snprintf(why, sizeof(why), "feature is NaN or infinite (column %lld)", (long long)j + 1);
				rc = csv_fail(&c, why);
				goto out;
			}
			p = *end == ',' ? end + 1 : end;
		}
		if (*p != '\0' || (p > line && p[-1] == ',')) {
			char why[128];

			snprintf(why, sizeof(why), "expected %lld columns, found more", (long long)d);
			rc = csv_fail(&c, why);
			goto out;
		}
	}
	if (rc < 0) {
		rc = -rc;
		goto out;
	}
	if (c.line != g->num_nodes)
		rc = csv_fail(&c, "fewer feature rows than nodes");
	else
		rc = GNN_OK;
out:
	csv_close(&c);
	return rc;
}

/* Picks the split folder: the named one, or the only one under DIR/split. */
static int find_split(const char *dir, const char *name, char *out, size_t len)
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

static int read_split(const char *dir, const char *name, uint8_t kind, struct graph *g)
{
	struct csv c;
	char *line;
	int rc;

	if ((rc = csv_open(&c, dir, name)) != GNN_OK)
		return rc;
	while ((rc = csv_next(&c, &line)) == 1) {
		char *p = line;
		int64_t v;

		if (!field_i64(&p, &v) || *p != '\0') {
			rc = csv_fail(&c, "expected one integer node index");
			goto out;
		}
		if (v < 0 || v >= g->num_nodes) {
			rc = csv_fail(&c, "node ID out of range");
			goto out;
		}
		if (g->split[v] != GNN_SPLIT_NONE) {
			rc = csv_fail(&c, "node listed twice in the split (same or another set)");
			goto out;
		}
		if (g->labels[v] < 0) {
			rc = csv_fail(&c, "node in the split has no label (nan)");
			goto out;
		}
		g->split[v] = kind;
	}
	rc = rc < 0 ? -rc : GNN_OK;
out:
	csv_close(&c);
	return rc;
}

int import_ogb(const struct import_opts *o, struct graph *g, char *split_name, size_t len)
{
	char raw[4096], split[4096];
	int32_t *src = NULL, *dst = NULL;
	int64_t n = 0, hint = -1, m = 0;
	struct stat st;
	int rc;

	snprintf(raw, sizeof(raw), "%s/raw", o->dir);
	if (stat(raw, &st) != 0 || !S_ISDIR(st.st_mode)) {
		GNN_ERROR("bad_input", "dir=%s reason=\"not an OGB dataset folder (no raw/ inside)\"", o->dir);
		return GNN_ENOENT;
	}
	if ((rc = find_split(o->dir, o->split, split, sizeof(split))) != GNN_OK)
		return rc;
	snprintf(split_name, len, "%s", strrchr(split, '/') + 1);
	if ((rc = read_count(raw, "num-node-list.csv", INT32_MAX, &n)) != GNN_OK)
		return rc;
	if (n == 0) {
		GNN_ERROR("bad_input", "file=%s/num-node-list.csv.gz reason=\"empty graph: 0 nodes\"", raw);
		return GNN_EINVAL;
	}
	{
		char p[4200];

		snprintf(p, sizeof(p), "%s/num-edge-list.csv.gz", raw);
		if (stat(p, &st) == 0 && (rc = read_count(raw, "num-edge-list.csv", INT32_MAX, &hint)) != GNN_OK)
			return rc;
	}
	g->num_nodes = n;
	GNN_INFO("import_start", "dir=%s nodes=%lld split=%s", o->dir, (long long)n, split);
	if ((rc = read_edges(raw, n, hint, &src, &dst, &m)) != GNN_OK)
		return rc;
	if (m == 0) {
		free(src);
		free(dst);
		GNN_ERROR("bad_input", "file=%s/edge.csv.gz reason=\"empty graph: no edges\"", raw);
		return GNN_EINVAL;
	}
	gnn_schema_plain(&g->schema, n, 0, 0);
	g->type_start[1] = n;
	if ((rc = graph_build_csr(g, n, src, dst, NULL, m, !o->keep_directed)) != GNN_OK)
		return rc;
	if ((rc = read_labels(raw, g, o->num_classes)) != GNN_OK)
		return rc;
	if ((rc = read_features(raw, g)) != GNN_OK)
		return rc;
	g->schema.types[0].feat_dim = (uint32_t)g->feat_dim;
	g->split = calloc((size_t)n, 1);
	if (g->split == NULL)
		return GNN_ENOMEM;
	if ((rc = read_split(split, "train.csv", GNN_SPLIT_TRAIN, g)) != GNN_OK ||
	    (rc = read_split(split, "valid.csv", GNN_SPLIT_VALID, g)) != GNN_OK ||
	    (rc = read_split(split, "test.csv", GNN_SPLIT_TEST, g)) != GNN_OK)
		return rc;
	GNN_INFO("import_done", "nodes=%lld input_edges=%lld edges=%lld symmetric=%s feat_dim=%d classes=%d",
		 (long long)n, (long long)m, (long long)g->num_edges, g->symmetric ? "true" : "false",
		 g->feat_dim, g->num_classes);
	return GNN_OK;
}
