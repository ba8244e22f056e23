/* OGB's binary node-property layout (ogbn-papers100M's papers100M-bin),
 * as OGB's read_binary_graph_raw and its node-label reader see it:
 *
 *   DIR/raw/data.npz         edge_index (2, E) integers; num_nodes_list (1,)
 *                            and num_edges_list (1,); node_feat (N, D) floats
 *                            (optional); other node_* and edge_* arrays
 *                            are ignored, with an INFO line
 *   DIR/raw/node_feat.npy    node_feat unzipped (optional; read in place of
 *                            the member)
 *   DIR/raw/node-label.npz   node_label (N, 1) or (N,): a class, or NaN for
 *                            an unlabelled node
 *   DIR/split/NAME/{train,valid,test}.csv.gz   as in the CSV layout
 *
 * Edges and labels are streamed in chunks; feature rows are read by row
 * when the partitions are written (npz.h), never held whole. */
#include "import_bin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "log.h"
#include "npz.h"
#include "ogb.h"

#define CHUNK (1u << 20) /* elements per streamed read */

static bool is_int(enum gnn_npy_type t)
{
	return t != GNN_NPY_BOOL && !gnn_npy_type_float(t);
}

/* A one-element count array (num_nodes_list, num_edges_list) into *out. */
static int read_count(struct pt_npz *z, const char *name, int64_t max, int64_t *out)
{
	struct pt_nparr *a;
	char why[160];
	int64_t v = 0;
	int64_t raw[1];
	int rc;

	if ((rc = pt_nparr_member(z, name, false, &a)) != GNN_OK)
		return rc;
	const struct gnn_npy_header *h = pt_nparr_header(a);
	if (!is_int(h->type))
		rc = pt_nparr_fail(a, "not an integer array");
	else if (h->count != 1) {
		snprintf(why, sizeof(why), "%" PRIu64 " graphs: gnn-dist reads one graph (a node-property dataset)",
			 h->count);
		rc = pt_nparr_fail(a, why);
	} else if ((rc = pt_nparr_read(a, 0, 1, raw)) == GNN_OK &&
		   (!gnn_npy_get_i64(raw, h->type, 0, &v) || v < 0 || v > max)) {
		snprintf(why, sizeof(why), "count out of range [0, %" PRId64 "]%s", max,
			 max == INT32_MAX ? " (METIS 5.1's 32-bit IDs)" : "");
		rc = pt_nparr_fail(a, why);
	}
	pt_nparr_close(a);
	*out = v;
	return rc;
}

/* Row `row` of edge_index (E elements from row * E) into ids, as node
 * IDs checked against n. */
static int read_id_row(struct pt_nparr *a, uint64_t row, int64_t n, int32_t *ids, void *buf)
{
	const struct gnn_npy_header *h = pt_nparr_header(a);
	uint64_t e = h->cols;
	char why[200];
	int rc;

	for (uint64_t i = 0; i < e; i += CHUNK) {
		uint64_t k = e - i < CHUNK ? e - i : CHUNK;

		if ((rc = pt_nparr_read(a, row * e + i, k, buf)) != GNN_OK)
			return rc;
		for (uint64_t j = 0; j < k; j++) {
			int64_t v;

			if (!gnn_npy_get_i64(buf, h->type, j, &v) || v < 0 || v >= n) {
				snprintf(why, sizeof(why), "edge %" PRIu64 ": %s node %" PRId64 " does not exist (%" PRId64 " nodes)",
					 i + j, row == 0 ? "source" : "destination", v, n);
				return pt_nparr_fail(a, why);
			}
			ids[i + j] = (int32_t)v;
		}
	}
	return GNN_OK;
}

/* edge_index into e: (2, E) integers, row 0 the sources. */
static int read_edges(struct pt_npz *z, int64_t n, int64_t hint, struct pt_ogb_edges *e)
{
	struct pt_nparr *a;
	void *buf = NULL;
	char why[160];
	int rc;

	if ((rc = pt_nparr_member(z, "edge_index", false, &a)) != GNN_OK)
		return rc;
	const struct gnn_npy_header *h = pt_nparr_header(a);
	if (!is_int(h->type) || h->ndim != 2 || h->rows != 2) {
		snprintf(why, sizeof(why), "expected a (2, E) integer array, got %s with %d dimension(s) of %" PRIu64,
			 gnn_npy_type_name(h->type), h->ndim, h->rows);
		rc = pt_nparr_fail(a, why);
		goto out;
	}
	if (h->cols > INT32_MAX) {
		rc = pt_nparr_fail(a, "more than 2147483647 edges");
		goto out;
	}
	if (hint >= 0 && (uint64_t)hint != h->cols) {
		snprintf(why, sizeof(why), "%" PRIu64 " edges, num_edges_list says %" PRId64, h->cols, hint);
		rc = pt_nparr_fail(a, why);
		goto out;
	}
	if ((rc = pt_ogb_edges_reserve(e, (int64_t)h->cols)) != GNN_OK || (buf = malloc((size_t)CHUNK * h->elem)) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	if ((rc = read_id_row(a, 0, n, e->src, buf)) == GNN_OK && (rc = read_id_row(a, 1, n, e->dst, buf)) == GNN_OK)
		e->m = (int64_t)h->cols;
out:
	free(buf);
	pt_nparr_close(a);
	return rc;
}

/* node-label.npz's node_label into g->labels: NaN is unlabelled. */
static int read_labels(const char *raw, struct pt_graph *g, int64_t num_classes)
{
	int64_t n = g->num_nodes, bound = num_classes > 0 ? num_classes : PT_OGB_MAX_LABEL, max = -1;
	struct pt_nparr *a = NULL;
	struct pt_npz *z;
	char path[4200], why[200];
	void *buf = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/node-label.npz", raw);
	if ((rc = pt_npz_open(path, &z)) != GNN_OK)
		return rc;
	if ((rc = pt_nparr_member(z, "node_label", false, &a)) != GNN_OK)
		goto out;
	const struct gnn_npy_header *h = pt_nparr_header(a);
	if (h->type == GNN_NPY_BOOL || h->rows != (uint64_t)n || h->cols != 1) {
		snprintf(why, sizeof(why), "expected (%" PRId64 ", 1) or (%" PRId64 ",) numbers, got %s (%" PRIu64 ", %" PRIu64 ")",
			 n, n, gnn_npy_type_name(h->type), h->rows, h->cols);
		rc = pt_nparr_fail(a, why);
		goto out;
	}
	if ((buf = malloc((size_t)CHUNK * h->elem)) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < (uint64_t)n && rc == GNN_OK; i += CHUNK) {
		uint64_t k = (uint64_t)n - i < CHUNK ? (uint64_t)n - i : CHUNK;

		if ((rc = pt_nparr_read(a, i, k, buf)) != GNN_OK)
			break;
		for (uint64_t j = 0; j < k && rc == GNN_OK; j++) {
			double x = gnn_npy_get_f64(buf, h->type, j);

			if (isnan(x)) {
				g->labels[i + j] = -1;
				continue;
			}
			if (x != floor(x) || x < 0 || x >= (double)bound) {
				snprintf(why, sizeof(why), "node %" PRIu64 ": label %g out of range: an integer in [0, %" PRId64 ") or NaN",
					 i + j, x, bound);
				rc = pt_nparr_fail(a, why);
				break;
			}
			g->labels[i + j] = (int32_t)x;
			if (x > (double)max)
				max = (int64_t)x;
		}
	}
	if (rc == GNN_OK && max < 0)
		rc = pt_nparr_fail(a, "no labelled node");
	if (rc == GNN_OK)
		g->num_classes = (int32_t)(num_classes > 0 ? num_classes : max + 1);
out:
	free(buf);
	pt_nparr_close(a);
	pt_npz_close(z);
	return rc;
}

/* node_feat: raw/node_feat.npy when present, else data.npz's member
 * (then the rows' source keeps *zp open: it takes it); none at all leaves
 * the graph featureless. */
static int open_features(struct pt_npz **zp, const char *raw, const struct pt_import_opts *o, struct pt_graph *g)
{
	struct pt_npz *z = *zp;
	struct pt_nparr *a = NULL;
	char path[4200], why[200];
	struct stat st;
	bool member;
	int rc;

	snprintf(path, sizeof(path), "%s/node_feat.npy", raw);
	member = stat(path, &st) != 0;
	if (!member)
		rc = pt_nparr_file(path, &a);
	else if ((rc = pt_nparr_member(z, "node_feat", true, &a)) == GNN_ENOENT) {
		GNN_INFO("no_features", "file=%s note=\"no node_feat: the nodes have no input features\"", pt_npz_path(z));
		return GNN_OK;
	}
	if (rc != GNN_OK)
		return rc;
	const struct gnn_npy_header *h = pt_nparr_header(a);
	if (!gnn_npy_type_float(h->type) || h->ndim != 2 || h->rows != (uint64_t)g->num_nodes || h->cols == 0 ||
	    h->cols > 65536) {
		snprintf(why, sizeof(why), "expected (%" PRId64 ", D) floats with 1 <= D <= 65536, got %s (%" PRIu64 ", %" PRIu64 ")",
			 g->num_nodes, gnn_npy_type_name(h->type), h->rows, h->cols);
		rc = pt_nparr_fail(a, why);
		pt_nparr_close(a);
		return rc;
	}
	if ((rc = pt_nparr_rows(a, o->scratch)) != GNN_OK) {
		pt_nparr_close(a);
		return rc;
	}
	if (member) /* the rows' source keeps the archive open (attach takes it) */
		*zp = NULL;
	if ((rc = pt_npfeat_attach(g, 0, a, member ? z : NULL)) != GNN_OK)
		return rc;
	g->feat_dim = (int32_t)h->cols;
	GNN_INFO("features", "file=%s dtype=%s rows=%" PRIu64 " dim=%" PRIu64 " read=by_row", pt_nparr_where(a),
		 gnn_npy_type_name(h->type), h->rows, h->cols);
	return GNN_OK;
}

/* Says which of data.npz's members are not read. */
static void log_ignored(const struct pt_npz *z)
{
	static const char *const used[] = { "edge_index", "num_nodes_list", "num_edges_list", "node_feat" };
	char name[256];

	for (int64_t i = 0; i < pt_npz_count(z); i++) {
		bool known = false;

		pt_npz_name(z, i, name, sizeof(name));
		for (size_t k = 0; k < sizeof(used) / sizeof(used[0]); k++)
			known |= strcmp(name, used[k]) == 0;
		if (!known)
			GNN_INFO("npz_member_ignored", "file=%s member=%s note=\"%s\"", pt_npz_path(z), name,
				 strncmp(name, "edge_", 5) == 0 ? "edge features are not read" : "not read");
	}
}

int pt_import_ogb_binary(const struct pt_import_opts *o, const char *raw, const char *split, struct pt_graph *g)
{
	struct pt_ogb_edges e = { 0 };
	struct pt_npz *z = NULL;
	int64_t n = 0, hint = -1;
	char path[4200];
	int rc;

	snprintf(path, sizeof(path), "%s/data.npz", raw);
	if ((rc = pt_npz_open(path, &z)) != GNN_OK)
		return rc;
	log_ignored(z);
	if ((rc = read_count(z, "num_nodes_list", INT32_MAX, &n)) != GNN_OK)
		goto out;
	if (n == 0) {
		GNN_ERROR("bad_input", "file=%s member=num_nodes_list reason=\"empty graph: 0 nodes\"", path);
		rc = GNN_EINVAL;
		goto out;
	}
	if (pt_npz_has(z, "num_edges_list") && (rc = read_count(z, "num_edges_list", INT32_MAX, &hint)) != GNN_OK)
		goto out;
	g->num_nodes = n;
	gnn_schema_plain(&g->schema, n, 0, 0);
	g->type_start[1] = n;
	GNN_INFO("import_start", "dir=%s layout=binary nodes=%" PRId64 " split=%s", o->dir, n, split);
	if ((rc = read_edges(z, n, hint, &e)) != GNN_OK)
		goto out;
	if (e.m == 0) {
		GNN_ERROR("bad_input", "file=%s member=edge_index reason=\"empty graph: no edges\"", path);
		rc = GNN_EINVAL;
		goto out;
	}
	hint = e.m;
	rc = pt_graph_build_csr(g, n, e.src, e.dst, NULL, e.m, !o->keep_directed);
	e = (struct pt_ogb_edges){ 0 }; /* build_csr took them */
	if (rc != GNN_OK)
		goto out;
	if ((g->labels = malloc((size_t)n * sizeof(*g->labels))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	if ((rc = read_labels(raw, g, o->num_classes)) != GNN_OK || (rc = open_features(&z, raw, o, g)) != GNN_OK ||
	    (rc = pt_ogb_read_splits(split, g)) != GNN_OK)
		goto out;
	GNN_INFO("import_done", "nodes=%" PRId64 " input_edges=%" PRId64 " edges=%" PRId64 " symmetric=%s feat_dim=%d classes=%d",
		 n, hint, g->num_edges, g->symmetric ? "true" : "false", g->feat_dim, g->num_classes);
out:
	pt_ogb_edges_free(&e);
	pt_npz_close(z);
	return rc;
}
