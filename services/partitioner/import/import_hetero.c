/* import_hetero.c - OGB's heterogeneous raw layout (ogbn-mag's), import.h
 * lists its files. The per-file readers are ogb.c's; this file reads
 * the schema (node types, relations, which type is labelled and split) and
 * checks that the folders agree with it. */
#include "import_hetero.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csv.h"
#include "err.h"
#include "log.h"
#include "ogb.h"

/* A two-line file (num-node-dict, nodetype-has-label, nodetype-has-split):
 * a header of node type names, then one value per type. It stays open
 * after reading so that the caller's errors can name its value line. */
struct type_row {
	struct pt_csv c;
	int n;                                   /* columns */
	char names[GNN_MAX_TYPES][GNN_NAME_MAX];
	char *line;                              /* the value line (owned), cut at its commas */
	char *values[GNN_MAX_TYPES];
};

/* Cuts line at its commas: the first max fields into f. Returns how many
 * fields the line has (possibly more than max). */
static int split_fields(char *line, char **f, int max)
{
	int n = 0;

	for (char *p = line;; n++) {
		char *comma = strchr(p, ',');

		if (n < max)
			f[n] = p;
		if (comma == NULL)
			return n + 1;
		*comma = '\0';
		p = comma + 1;
	}
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The header line: valid, distinct type names, each one of g's types
 * unless g is NULL (num-node-dict, which defines them). */
static int type_row_header(struct type_row *tr, char *line, const struct pt_graph *g)
{
	char *f[GNN_MAX_TYPES], why[256];

	tr->n = split_fields(line, f, GNN_MAX_TYPES);
	if (tr->n > GNN_MAX_TYPES) {
		snprintf(why, sizeof(why), "more than %d node types", GNN_MAX_TYPES);
		return pt_csv_fail(&tr->c, why);
	}
	for (int k = 0; k < tr->n; k++) {
		if (!gnn_name_ok(f[k])) {
			snprintf(why, sizeof(why), "column %d is not a node type name (1..%d letters, digits, '_', '-', '.')",
				 k + 1, GNN_NAME_MAX - 1);
			return pt_csv_fail(&tr->c, why);
		}
		if (g != NULL && gnn_schema_type(&g->schema, f[k]) < 0) {
			snprintf(why, sizeof(why), "node type %s is not in num-node-dict.csv", f[k]);
			return pt_csv_fail(&tr->c, why);
		}
		for (int q = 0; q < k; q++)
			if (strcmp(tr->names[q], f[k]) == 0) {
				snprintf(why, sizeof(why), "node type %s appears twice", f[k]);
				return pt_csv_fail(&tr->c, why);
			}
		snprintf(tr->names[k], GNN_NAME_MAX, "%s", f[k]);
	}
	return GNN_OK;
}

/* Reads DIR/NAME into tr (zeroed here; type_row_close releases it, also
 * after an error). */
static int type_row_read(struct type_row *tr, const char *dir, const char *name, const struct pt_graph *g)
{
	char *line, why[128];
	int rc;

	memset(tr, 0, sizeof(*tr));
	if ((rc = pt_csv_open(&tr->c, dir, name)) != GNN_OK)
		return rc;
	if ((rc = pt_csv_next(&tr->c, &line)) <= 0)
		return rc < 0 ? -rc : pt_csv_fail(&tr->c, "empty file: expected a header of node types");
	if ((rc = type_row_header(tr, line, g)) != GNN_OK)
		return rc;
	if ((rc = pt_csv_next(&tr->c, &line)) <= 0)
		return rc < 0 ? -rc : pt_csv_fail(&tr->c, "expected a second line: one value per node type");
	if ((tr->line = strdup(line)) == NULL)
		return GNN_ENOMEM;
	if (split_fields(tr->line, tr->values, GNN_MAX_TYPES) != tr->n) {
		snprintf(why, sizeof(why), "expected %d values, one per node type of line 1", tr->n);
		return pt_csv_fail(&tr->c, why);
	}
	if ((rc = pt_csv_next(&tr->c, &line)) != 0)
		return rc < 0 ? -rc : pt_csv_fail(&tr->c, "expected two lines: node types, then one value each");
	tr->c.line = 2;  /* the caller's errors are about the values */
	return GNN_OK;
}

static void type_row_close(struct type_row *tr)
{
	pt_csv_close(&tr->c);
	free(tr->line);
	tr->line = NULL;
}

/* num-node-dict.csv: the node types, numbered in name order. */
static int read_types(const char *raw, struct pt_graph *g)
{
	struct gnn_schema *s = &g->schema;
	struct type_row tr;
	int64_t count[GNN_MAX_TYPES], total = 0;
	char why[256];
	int rc;

	if ((rc = type_row_read(&tr, raw, "num-node-dict.csv", NULL)) != GNN_OK)
		goto out;
	for (int k = 0; k < tr.n; k++) {
		char *p = tr.values[k];

		if (!pt_csv_field_i64(&p, &count[k]) || *p != '\0' || count[k] < 1 || count[k] > INT32_MAX) {
			snprintf(why, sizeof(why), "node type %s: expected a node count in [1, %d]", tr.names[k], INT32_MAX);
			rc = pt_csv_fail(&tr.c, why);
			goto out;
		}
		total += count[k];
	}
	if (total > INT32_MAX) {
		rc = pt_csv_fail(&tr.c, "more than 2^31-1 nodes in all: METIS 5.1's idx_t is 32-bit");
		goto out;
	}
	memset(s, 0, sizeof(*s));
	s->num_types = (uint32_t)tr.n;
	for (int k = 0; k < tr.n; k++) {  /* insertion into name order */
		int t = k;

		for (; t > 0 && strcmp(s->types[t - 1].name, tr.names[k]) > 0; t--)
			s->types[t] = s->types[t - 1];
		snprintf(s->types[t].name, GNN_NAME_MAX, "%s", tr.names[k]);
		s->types[t].num_nodes = count[k];
	}
	for (uint32_t t = 0; t < s->num_types; t++)
		g->type_start[t + 1] = g->type_start[t] + s->types[t].num_nodes;
	g->num_nodes = total;
	rc = GNN_OK;
out:
	type_row_close(&tr);
	return rc;
}

/* "SRC___REL___DST": relation r's folder under raw/relations. */
static void rel_folder(const struct pt_graph *g, uint32_t r, char *buf, size_t cap)
{
	const struct gnn_schema *s = &g->schema;

	snprintf(buf, cap, "%s___%s___%s", s->types[s->rels[r].src].name, s->rels[r].name, s->types[s->rels[r].dst].name);
}

/* One line of triplet-type-list.csv, "src,rel,dst", into g->schema.rels[R]
 * (reverses: how many rev_ relations the lines so far need). */
static int parse_triplet(const struct pt_csv *c, char *line, const char *raw, bool keep_directed,
			 uint32_t reverses, struct pt_graph *g)
{
	struct gnn_schema *s = &g->schema;
	struct gnn_rel *re = &s->rels[s->num_rels];
	char *f[3], why[512], dir[4400], folder[3 * GNN_NAME_MAX + 8];
	int32_t src, dst;

	if (split_fields(line, f, 3) != 3)
		return pt_csv_fail(c, "expected three columns \"src_type,relation,dst_type\"");
	if (!gnn_name_ok(f[0]) || !gnn_name_ok(f[1]) || !gnn_name_ok(f[2]))
		return pt_csv_fail(c, "not a valid type or relation name (1..63 letters, digits, '_', '-', '.')");
	src = gnn_schema_type(s, f[0]);
	dst = gnn_schema_type(s, f[2]);
	if (src < 0 || dst < 0) {
		snprintf(why, sizeof(why), "relation names an unknown node type %s (not in num-node-dict.csv)",
			 src < 0 ? f[0] : f[2]);
		return pt_csv_fail(c, why);
	}
	if (s->num_rels + 1 + reverses + (!keep_directed && src != dst) > GNN_MAX_RELS) {
		snprintf(why, sizeof(why), "more than %d relations, reverse relations included", GNN_MAX_RELS);
		return pt_csv_fail(c, why);
	}
	if (!keep_directed && src != dst && strlen(f[1]) + 4 >= GNN_NAME_MAX)
		return pt_csv_fail(c, "relation name too long for its reverse rev_NAME (63 bytes at most)");
	for (uint32_t q = 0; q < s->num_rels; q++)
		if (strcmp(s->rels[q].name, f[1]) == 0 && s->rels[q].src == (uint32_t)src && s->rels[q].dst == (uint32_t)dst)
			return pt_csv_fail(c, "relation listed twice");
	snprintf(re->name, GNN_NAME_MAX, "%s", f[1]);
	re->src = (uint32_t)src;
	re->dst = (uint32_t)dst;
	rel_folder(g, s->num_rels, folder, sizeof(folder));
	snprintf(dir, sizeof(dir), "%s/relations/%s", raw, folder);
	if (!is_dir(dir)) {
		snprintf(why, sizeof(why), "no folder relations/%s for this relation", folder);
		return pt_csv_fail(c, why);
	}
	s->num_rels++;
	return GNN_OK;
}

/* Why folder name, which is none of the relations', is wrong. */
static const char *stray_folder_reason(const struct pt_graph *g, const char *name)
{
	const char *a = strstr(name, "___"), *b = a;
	char src[GNN_NAME_MAX];

	while (b != NULL && strstr(b + 3, "___") != NULL)
		b = strstr(b + 3, "___");
	if (a == NULL || a == b)
		return "not a relation folder SRC___REL___DST";
	snprintf(src, sizeof(src), "%.*s", (int)(a - name) < GNN_NAME_MAX ? (int)(a - name) : 0, name);
	if (gnn_schema_type(&g->schema, src) < 0 || gnn_schema_type(&g->schema, b + 3) < 0)
		return "relation folder names an unknown node type (not in num-node-dict.csv)";
	return "relation folder without a line in triplet-type-list.csv";
}

/* Every folder under raw/relations must be one of the relations read. */
static int check_relation_folders(const char *raw, const struct pt_graph *g)
{
	char dir[4200], folder[3 * GNN_NAME_MAX + 8];
	struct dirent *ent;
	DIR *d;
	int rc = GNN_OK;

	snprintf(dir, sizeof(dir), "%s/relations", raw);
	if ((d = opendir(dir)) == NULL) {
		GNN_ERROR("bad_input", "dir=%s reason=\"cannot list the relation folders: %s\"", dir, strerror(errno));
		return GNN_EIO;
	}
	while (rc == GNN_OK && (ent = readdir(d)) != NULL) {
		bool known = ent->d_name[0] == '.';

		for (uint32_t r = 0; r < g->schema.num_rels && !known; r++) {
			rel_folder(g, r, folder, sizeof(folder));
			known = strcmp(folder, ent->d_name) == 0;
		}
		if (known)
			continue;
		GNN_ERROR("bad_input", "dir=%s/%s reason=\"%s\"", dir, ent->d_name, stray_folder_reason(g, ent->d_name));
		rc = GNN_EFORMAT;
	}
	closedir(d);
	return rc;
}

/* triplet-type-list.csv: the forward relations, in its order. */
static int read_triplets(const char *raw, bool keep_directed, struct pt_graph *g)
{
	struct pt_csv c;
	uint32_t reverses = 0;
	char *line;
	int rc;

	if ((rc = pt_csv_open(&c, raw, "triplet-type-list.csv")) != GNN_OK)
		return rc;
	while ((rc = pt_csv_next(&c, &line)) == 1) {
		if ((rc = parse_triplet(&c, line, raw, keep_directed, reverses, g)) != GNN_OK)
			goto out;
		reverses += !keep_directed && g->schema.rels[g->schema.num_rels - 1].src !=
						      g->schema.rels[g->schema.num_rels - 1].dst;
	}
	if (rc < 0) {
		rc = -rc;
		goto out;
	}
	if (g->schema.num_rels == 0) {
		rc = pt_csv_fail(&c, "no relation");
		goto out;
	}
	rc = check_relation_folders(raw, g);
out:
	pt_csv_close(&c);
	return rc;
}

/* Every forward relation's edge list into e. */
static int read_relations(const char *raw, const struct pt_graph *g, struct pt_ogb_edges *e)
{
	char dir[4400], folder[3 * GNN_NAME_MAX + 8];
	int rc;

	for (uint32_t r = 0; r < g->schema.num_rels; r++) {
		int64_t hint = -1;

		rel_folder(g, r, folder, sizeof(folder));
		snprintf(dir, sizeof(dir), "%s/relations/%s", raw, folder);
		if (pt_csv_exists(dir, "num-edge-list.csv") &&
		    (rc = pt_ogb_read_count(dir, "num-edge-list.csv", INT32_MAX, &hint)) != GNN_OK)
			return rc;
		if ((rc = pt_ogb_read_edges(dir, g, r, hint, e)) != GNN_OK)
			return rc;
	}
	if (e->m == 0) {
		GNN_ERROR("bad_input", "dir=%s/relations reason=\"empty graph: no edges\"", raw);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* Every subfolder of dir must be named after a node type (dir may be
 * absent: no type has such data). */
static int check_type_folders(const char *dir, const struct pt_graph *g)
{
	char path[4400];
	struct dirent *ent;
	DIR *d = opendir(dir);
	int rc = GNN_OK;

	if (d == NULL)
		return GNN_OK;
	while (rc == GNN_OK && (ent = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
		if (ent->d_name[0] == '.' || !is_dir(path) || gnn_schema_type(&g->schema, ent->d_name) >= 0)
			continue;
		GNN_ERROR("bad_input", "dir=%s reason=\"folder named after no node type of num-node-dict.csv\"", path);
		rc = GNN_EFORMAT;
	}
	closedir(d);
	return rc;
}

/* nodetype-has-label / nodetype-has-split (name in dir) into has[t]: True
 * or False per listed type, false for a type it does not list. Type t's
 * data folder is datadir/TYPE: a type marked False must not have one (a
 * True type's missing files fail when read), and every folder there must
 * be a type's. tr stays open for the caller's errors (type_row_close). */
static int read_flags(struct type_row *tr, const char *dir, const char *name, const char *datadir,
		      const struct pt_graph *g, bool *has)
{
	char why[4700], path[4400];
	int rc;

	if ((rc = type_row_read(tr, dir, name, g)) != GNN_OK)
		return rc;
	memset(has, 0, GNN_MAX_TYPES * sizeof(*has));
	for (int k = 0; k < tr->n; k++) {
		bool yes = strcmp(tr->values[k], "True") == 0;

		if (!yes && strcmp(tr->values[k], "False") != 0) {
			snprintf(why, sizeof(why), "node type %s: expected True or False", tr->names[k]);
			return pt_csv_fail(&tr->c, why);
		}
		has[gnn_schema_type(&g->schema, tr->names[k])] = yes;
	}
	for (uint32_t t = 0; t < g->schema.num_types; t++) {
		snprintf(path, sizeof(path), "%s/%s", datadir, g->schema.types[t].name);
		if (!has[t] && is_dir(path)) {
			snprintf(why, sizeof(why), "node type %s is marked False (or not listed), but %s holds its data",
				 g->schema.types[t].name, path);
			return pt_csv_fail(&tr->c, why);
		}
	}
	return check_type_folders(datadir, g);
}

/* nodetype-has-label.csv and the one labelled type's labels. */
static int read_labels(const char *raw, struct pt_graph *g, int64_t num_classes)
{
	char dir[4200], why[256];
	bool has[GNN_MAX_TYPES];
	struct type_row tr;
	int labelled = 0, rc;

	snprintf(dir, sizeof(dir), "%s/node-label", raw);
	if ((rc = read_flags(&tr, raw, "nodetype-has-label.csv", dir, g, has)) != GNN_OK)
		goto out;
	for (uint32_t t = 0; t < g->schema.num_types; t++)
		if (has[t]) {
			labelled++;
			g->schema.label_type = t;
		}
	if (labelled != 1) {
		snprintf(why, sizeof(why), "%s node types are marked True: exactly one labelled type is supported",
			 labelled ? "several" : "no");
		rc = pt_csv_fail(&tr.c, why);
		goto out;
	}
	if ((g->labels = malloc((size_t)g->num_nodes * sizeof(*g->labels))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (int64_t v = 0; v < g->num_nodes; v++)
		g->labels[v] = -1;
	snprintf(dir, sizeof(dir), "%s/node-label/%s", raw, g->schema.types[g->schema.label_type].name);
	rc = pt_ogb_read_labels(dir, g, num_classes);
out:
	type_row_close(&tr);
	return rc;
}

/* node-feat/TYPE/node-feat.csv of every type that has the folder. */
static int read_features(const char *raw, struct pt_graph *g)
{
	char dir[4200];
	int rc;

	snprintf(dir, sizeof(dir), "%s/node-feat", raw);
	if ((rc = check_type_folders(dir, g)) != GNN_OK)
		return rc;
	for (uint32_t t = 0; t < g->schema.num_types; t++) {
		snprintf(dir, sizeof(dir), "%s/node-feat/%s", raw, g->schema.types[t].name);
		if (is_dir(dir) && (rc = pt_ogb_read_features(dir, g, t)) != GNN_OK)
			return rc;
	}
	g->feat_dim = (int32_t)gnn_schema_max_feat_dim(&g->schema);
	return GNN_OK;
}

/* nodetype-has-split.csv and the labelled type's split lists. */
static int read_split(const char *split, struct pt_graph *g)
{
	const char *label = g->schema.types[g->schema.label_type].name;
	char dir[4200], why[512];
	bool has[GNN_MAX_TYPES];
	struct type_row tr;
	int rc;

	if ((rc = read_flags(&tr, split, "nodetype-has-split.csv", split, g, has)) != GNN_OK)
		goto out;
	for (uint32_t t = 0; t < g->schema.num_types; t++)
		if (has[t] && t != g->schema.label_type) {
			snprintf(why, sizeof(why), "node type %s has a split but no labels (nodetype-has-label.csv marks %s True)",
				 g->schema.types[t].name, label);
			rc = pt_csv_fail(&tr.c, why);
			goto out;
		}
	if (!has[g->schema.label_type]) {
		snprintf(why, sizeof(why), "the labelled node type %s is marked False: training needs its split", label);
		rc = pt_csv_fail(&tr.c, why);
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s/%s", split, label);
	rc = pt_ogb_read_splits(dir, g);
out:
	type_row_close(&tr);
	return rc;
}

int pt_import_hetero(const struct pt_import_opts *o, const char *raw, const char *split, struct pt_graph *g)
{
	struct pt_ogb_edges e = { .typed = true };
	char file[4200], types[1024], rels[2048];
	int64_t input;
	int rc;

	if ((rc = read_types(raw, g)) != GNN_OK || (rc = read_triplets(raw, o->keep_directed, g)) != GNN_OK)
		return rc;
	GNN_INFO("import_start", "dir=%s nodes=%lld types=%u relations=%u split=%s", o->dir, (long long)g->num_nodes,
		 g->schema.num_types, g->schema.num_rels, split);
	if ((rc = read_relations(raw, g, &e)) != GNN_OK)
		goto out_edges;
	input = e.m;
	snprintf(file, sizeof(file), "%s/triplet-type-list.csv.gz", raw);
	if ((rc = pt_ogb_build_typed(g, &e, o->keep_directed, file)) != GNN_OK)
		return rc;
	if ((rc = read_labels(raw, g, o->num_classes)) != GNN_OK || (rc = read_features(raw, g)) != GNN_OK ||
	    (rc = read_split(split, g)) != GNN_OK)
		return rc;
	pt_graph_names(&g->schema, false, types, sizeof(types));
	pt_graph_names(&g->schema, true, rels, sizeof(rels));
	GNN_INFO("import_done", "nodes=%lld types=%s relations=%s label_type=%s input_edges=%lld edges=%lld symmetric=%s feat_dim=%d classes=%d",
		 (long long)g->num_nodes, types, rels, g->schema.types[g->schema.label_type].name, (long long)input,
		 (long long)g->num_edges, g->symmetric ? "true" : "false", g->feat_dim, g->num_classes);
	return GNN_OK;

out_edges:
	pt_ogb_edges_free(&e);
	return rc;
}
