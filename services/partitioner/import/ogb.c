/* ogb.c - readers of the files both of OGB's raw layouts hold (ogb.h). */
#include "ogb.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "err.h"
#include "log.h"

#define MAX_FEAT_DIM (1 << 16)

int pt_ogb_read_count(const char *dir, const char *name, int64_t max, int64_t *out)
{
	struct pt_csv c;
	char *line, *p;
	int64_t v;
	int rc;

	if ((rc = pt_csv_open(&c, dir, name)) != GNN_OK)
		return rc;
	rc = pt_csv_next(&c, &line);
	if (rc <= 0) {
		rc = rc < 0 ? -rc : pt_csv_fail(&c, "empty file: expected one count");
		goto out;
	}
	p = line;
	if (!pt_csv_field_i64(&p, &v) || *p != '\0') {
		rc = pt_csv_fail(&c, "expected one integer");
		goto out;
	}
	if (v < 0 || v > max) {
		rc = pt_csv_fail(&c, "count out of range");
		goto out;
	}
	*out = v;
	rc = GNN_OK;
out:
	pt_csv_close(&c);
	return rc;
}

int pt_ogb_edges_reserve(struct pt_ogb_edges *e, int64_t more)
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

void pt_ogb_edges_free(struct pt_ogb_edges *e)
{
	free(e->src);
	free(e->dst);
	free(e->rel);
	memset(e, 0, sizeof(*e));
}

/* A per-type ID outside [0, n) of type t (col: its column, 0 for a
 * one-column file). A homogeneous graph's message names neither. */
static int id_out_of_range(const struct pt_csv *c, const struct pt_graph *g, uint32_t t, int col, int64_t n)
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
	return pt_csv_fail(c, why);
}

int pt_ogb_read_edges(const char *dir, const struct pt_graph *g, uint32_t r, int64_t hint, struct pt_ogb_edges *e)
{
	const struct gnn_rel *re = &g->schema.rels[r];
	int64_t os = g->type_start[re->src], ns = g->type_start[re->src + 1] - os;
	int64_t od = g->type_start[re->dst], nd = g->type_start[re->dst + 1] - od, m0 = e->m;
	struct pt_csv c;
	char *line;
	int rc;

	if ((rc = pt_csv_open(&c, dir, "edge.csv")) != GNN_OK)
		return rc;
	if ((rc = pt_ogb_edges_reserve(e, hint > 0 ? hint : 1 << 16)) != GNN_OK)
		goto out;
	while ((rc = pt_csv_next(&c, &line)) == 1) {
		char *p = line;
		int64_t u, v;

		if (!pt_csv_field_i64(&p, &u) || !pt_csv_field_i64(&p, &v) || *p != '\0') {
			rc = pt_csv_fail(&c, "expected two integer columns \"src,dst\"");
			goto out;
		}
		if (u < 0 || u >= ns || v < 0 || v >= nd) {
			rc = u < 0 || u >= ns ? id_out_of_range(&c, g, re->src, 1, ns) : id_out_of_range(&c, g, re->dst, 2, nd);
			goto out;
		}
		if (e->m == e->cap && (rc = pt_ogb_edges_reserve(e, e->cap)) != GNN_OK)
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
	pt_csv_close(&c);
	return rc;
}

/* One label (an integer, or OGB's nan for none) into *out (-1 for nan). */
static int parse_label(const struct pt_csv *c, const char *p, int64_t bound, int32_t *out)
{
	char *end, why[128];
	double x;

	/* OGB stores labels as integers, or floats with nan for unlabeled nodes. */
	errno = 0;
	x = strtod(p, &end);
	if (end == p || *end != '\0' || errno == ERANGE)
		return pt_csv_fail(c, "label is not a number");
	if (isnan(x)) {
		*out = -1;
		return GNN_OK;
	}
	if (x != floor(x) || x < 0 || x >= (double)bound) {
		snprintf(why, sizeof(why), "label out of range: must be an integer in [0, %lld)", (long long)bound);
		return pt_csv_fail(c, why);
	}
	*out = (int32_t)x;
	return GNN_OK;
}

int pt_ogb_read_labels(const char *dir, struct pt_graph *g, int64_t num_classes)
{
	uint32_t t = g->schema.label_type;
	int64_t n = g->type_start[t + 1] - g->type_start[t], max = -1;
	int64_t bound = num_classes > 0 ? num_classes : PT_OGB_MAX_LABEL;
	int32_t *labels = g->labels + g->type_start[t];
	struct pt_csv c;
	char *line;
	int rc;

	if ((rc = pt_csv_open(&c, dir, "node-label.csv")) != GNN_OK)
		return rc;
	while ((rc = pt_csv_next(&c, &line)) == 1) {
		if (c.line > n) {
			rc = pt_csv_fail(&c, "more labels than nodes");
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
		rc = pt_csv_fail(&c, "fewer labels than nodes");
		goto out;
	}
	if (max < 0) {
		rc = pt_csv_fail(&c, "no labelled node");
		goto out;
	}
	g->num_classes = (int32_t)(num_classes > 0 ? num_classes : max + 1);
	rc = GNN_OK;
out:
	pt_csv_close(&c);
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
static int parse_feature_row(const struct pt_csv *c, char *line, int64_t d, float *row)
{
	char *p = line, *end, why[128];

	for (int64_t j = 0; j < d; j++) {
		errno = 0;
		row[j] = strtof(p, &end);
		if (end == p || (*end != ',' && *end != '\0') || (j + 1 < d && *end != ',')) {
			snprintf(why, sizeof(why), "expected %lld numeric columns (column %lld)", (long long)d,
				 (long long)j + 1);
			return pt_csv_fail(c, why);
		}
		if (!isfinite(row[j])) {
			snprintf(why, sizeof(why), "feature is NaN or infinite (column %lld)", (long long)j + 1);
			return pt_csv_fail(c, why);
		}
		p = *end == ',' ? end + 1 : end;
	}
	if (*p != '\0' || (p > line && p[-1] == ',')) {
		snprintf(why, sizeof(why), "expected %lld columns, found more", (long long)d);
		return pt_csv_fail(c, why);
	}
	return GNN_OK;
}

int pt_ogb_read_features(const char *dir, struct pt_graph *g, uint32_t t)
{
	int64_t n = g->type_start[t + 1] - g->type_start[t], d = 0;
	struct pt_csv c;
	char *line;
	int rc;

	if ((rc = pt_csv_open(&c, dir, "node-feat.csv")) != GNN_OK)
		return rc;
	while ((rc = pt_csv_next(&c, &line)) == 1) {
		if (c.line > n) {
			rc = pt_csv_fail(&c, "more feature rows than nodes");
			goto out;
		}
		if (d == 0) {
			d = count_fields(line);
			if (d > MAX_FEAT_DIM) {
				rc = pt_csv_fail(&c, "too many feature columns");
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
		rc = pt_csv_fail(&c, "fewer feature rows than nodes");
	else
		rc = GNN_OK;
out:
	pt_csv_close(&c);
	return rc;
}

/* Marks the label type's nodes listed in DIR/NAME (one per-type ID a line)
 * with kind in g->split (allocated by the caller, zeroed): each must be
 * labelled and listed once across the three split files. */
static int read_split_list(const char *dir, const char *name, uint8_t kind, struct pt_graph *g)
{
	uint32_t t = g->schema.label_type;
	int64_t start = g->type_start[t], n = g->type_start[t + 1] - start;
	struct pt_csv c;
	char *line;
	int rc;

	if ((rc = pt_csv_open(&c, dir, name)) != GNN_OK)
		return rc;
	while ((rc = pt_csv_next(&c, &line)) == 1) {
		char *p = line;
		int64_t v;

		if (!pt_csv_field_i64(&p, &v) || *p != '\0') {
			rc = pt_csv_fail(&c, "expected one integer node index");
			goto out;
		}
		if (v < 0 || v >= n) {
			rc = id_out_of_range(&c, g, t, 0, n);
			goto out;
		}
		if (g->split[start + v] != GNN_SPLIT_NONE) {
			rc = pt_csv_fail(&c, "node listed twice in the split (same or another set)");
			goto out;
		}
		if (g->labels[start + v] < 0) {
			rc = pt_csv_fail(&c, "node in the split has no label (nan)");
			goto out;
		}
		g->split[start + v] = kind;
	}
	rc = rc < 0 ? -rc : GNN_OK;
out:
	pt_csv_close(&c);
	return rc;
}

int pt_ogb_read_splits(const char *dir, struct pt_graph *g)
{
	int rc;

	g->split = calloc((size_t)g->num_nodes, 1);
	if (g->split == NULL)
		return GNN_ENOMEM;
	if ((rc = read_split_list(dir, "train.csv", GNN_SPLIT_TRAIN, g)) != GNN_OK ||
	    (rc = read_split_list(dir, "valid.csv", GNN_SPLIT_VALID, g)) != GNN_OK)
		return rc;
	return read_split_list(dir, "test.csv", GNN_SPLIT_TEST, g);
}

int pt_ogb_add_reverses(struct pt_graph *g, struct pt_ogb_edges *e)
{
	struct gnn_schema *s = &g->schema;
	uint32_t forward = s->num_rels;
	uint16_t rev[GNN_MAX_RELS];
	int64_t m = e->m;
	int rc;

	for (uint32_t r = 0; r < forward; r++) {
		struct gnn_rel *fw = &s->rels[r], *bw = &s->rels[s->num_rels];

		if (fw->src == fw->dst) {
			rev[r] = (uint16_t)r;
			continue;
		}
		/* the caller checked that rev_NAME fits and that there is room */
		memcpy(bw->name, "rev_", 4);
		memcpy(bw->name + 4, fw->name, strlen(fw->name) + 1);
		bw->src = fw->dst;
		bw->dst = fw->src;
		rev[r] = (uint16_t)s->num_rels++;
	}
	if ((rc = pt_ogb_edges_reserve(e, m)) != GNN_OK)
		return rc;
	for (int64_t i = 0; i < m; i++) {
		e->src[m + i] = e->dst[i];
		e->dst[m + i] = e->src[i];
		e->rel[m + i] = rev[e->rel[i]];
	}
	e->m = 2 * m;
	return GNN_OK;
}

int pt_ogb_build_typed(struct pt_graph *g, struct pt_ogb_edges *e, bool keep_directed, const char *file)
{
	char why[256];
	int rc;

	if (!keep_directed && (rc = pt_ogb_add_reverses(g, e)) != GNN_OK)
		goto fail;
	if (gnn_schema_check(&g->schema, why, sizeof(why)) != GNN_OK) {
		GNN_ERROR("bad_input", "file=%s reason=\"%s\"", file, why);
		rc = GNN_EFORMAT;
		goto fail;
	}
	rc = pt_graph_build_csr(g, g->num_nodes, e->src, e->dst, e->rel, e->m, false);
	memset(e, 0, sizeof(*e)); /* pt_graph_build_csr freed the arrays */
	g->symmetric = !keep_directed; /* each edge's reverse is in its relation or rev_ */
	return rc;
fail:
	pt_ogb_edges_free(e);
	return rc;
}
