#include "import.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csv.h"
#include "err.h"
#include "import_bin.h"
#include "import_hetero.h"
#include "log.h"
#include "ogb.h"

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

/* OGB's homogeneous layout: one edge list, one node type. */
static int import_plain(const struct pt_import_opts *o, const char *raw, const char *split, struct pt_graph *g)
{
	struct pt_ogb_edges e = { 0 };
	int64_t n = 0, hint = -1;
	int rc;

	if ((rc = pt_ogb_read_count(raw, "num-node-list.csv", INT32_MAX, &n)) != GNN_OK)
		return rc;
	if (n == 0) {
		GNN_ERROR("bad_input", "file=%s/num-node-list.csv.gz reason=\"empty graph: 0 nodes\"", raw);
		return GNN_EINVAL;
	}
	if (pt_csv_exists(raw, "num-edge-list.csv") &&
	    (rc = pt_ogb_read_count(raw, "num-edge-list.csv", INT32_MAX, &hint)) != GNN_OK)
		return rc;
	g->num_nodes = n;
	gnn_schema_plain(&g->schema, n, 0, 0);
	g->type_start[1] = n;
	GNN_INFO("import_start", "dir=%s nodes=%lld split=%s", o->dir, (long long)n, split);
	if ((rc = pt_ogb_read_edges(raw, g, 0, hint, &e)) != GNN_OK) {
		pt_ogb_edges_free(&e);
		return rc;
	}
	if (e.m == 0) {
		pt_ogb_edges_free(&e);
		GNN_ERROR("bad_input", "file=%s/edge.csv.gz reason=\"empty graph: no edges\"", raw);
		return GNN_EINVAL;
	}
	hint = e.m;
	if ((rc = pt_graph_build_csr(g, n, e.src, e.dst, NULL, e.m, !o->keep_directed)) != GNN_OK)
		return rc;
	if ((g->labels = malloc((size_t)n * sizeof(*g->labels))) == NULL)
		return GNN_ENOMEM;
	if ((rc = pt_ogb_read_labels(raw, g, o->num_classes)) != GNN_OK ||
	    (rc = pt_ogb_read_features(raw, g, 0)) != GNN_OK || (rc = pt_ogb_read_splits(split, g)) != GNN_OK)
		return rc;
	g->feat_dim = (int32_t)g->schema.types[0].feat_dim;
	GNN_INFO("import_done", "nodes=%lld input_edges=%lld edges=%lld symmetric=%s feat_dim=%d classes=%d",
		 (long long)n, (long long)hint, (long long)g->num_edges, g->symmetric ? "true" : "false",
		 g->feat_dim, g->num_classes);
	return GNN_OK;
}

int pt_import_ogb(const struct pt_import_opts *o, struct pt_graph *g, char *split_name, size_t len)
{
	char raw[4096], split[4096], bin[4200];
	const char *layout;
	struct stat st;
	int rc;

	snprintf(raw, sizeof(raw), "%s/raw", o->dir);
	if (stat(raw, &st) != 0 || !S_ISDIR(st.st_mode)) {
		GNN_ERROR("bad_input", "dir=%s reason=\"not an OGB dataset folder (no raw/ inside)\"", o->dir);
		return GNN_ENOENT;
	}
	snprintf(bin, sizeof(bin), "%s/data.npz", raw);
	layout = stat(bin, &st) == 0 ? "binary" : pt_csv_exists(raw, "num-node-dict.csv") ? "hetero"
		 : pt_csv_exists(raw, "num-node-list.csv") ? "csv" : NULL;
	if (layout == NULL) {
		GNN_ERROR("bad_input", "dir=%s reason=\"no OGB layout recognised: looked for raw/data.npz (binary), "
			  "raw/num-node-list.csv[.gz] (CSV) and raw/num-node-dict.csv[.gz] (heterogeneous CSV)\"", o->dir);
		return GNN_ENOENT;
	}
	if ((rc = import_find_split(o->dir, o->split, split, sizeof(split))) != GNN_OK)
		return rc;
	snprintf(split_name, len, "%s", strrchr(split, '/') + 1);
	if (strcmp(layout, "binary") == 0)
		return pt_import_ogb_binary(o, raw, split, g);
	if (strcmp(layout, "hetero") == 0)
		return pt_import_hetero(o, raw, split, g);
	return import_plain(o, raw, split, g);
}
