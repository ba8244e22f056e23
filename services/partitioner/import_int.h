/* import_int.h - the pieces import.c (OGB's homogeneous layout) and
 * import_hetero.c (its heterogeneous layout) share: a gzip CSV file read
 * line by line, and the readers of the files both layouts hold (counts,
 * edge lists, labels, features, split lists). Every reader validates every
 * line, and its errors name the file and the line. Internal to the
 * partitioner: the importer and the edge split's CSV reader (edgesplit.c). */
#ifndef GNN_PART_IMPORT_INT_H
#define GNN_PART_IMPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "graph.h"
#include "import.h"

/* A gzip (or plain) CSV file read line by line. */
struct import_csv {
	gzFile gz;
	char path[4096];
	int64_t line;
	char *buf;
	size_t cap;
};

/* Opens DIR/NAME.gz, else DIR/NAME without .gz. GNN_ENOENT (logged) when
 * neither exists. import_csv_close releases it. */
int import_csv_open(struct import_csv *c, const char *dir, const char *name);
void import_csv_close(struct import_csv *c);

/* Logs reason against the file and its current line; returns GNN_EFORMAT. */
int import_csv_fail(const struct import_csv *c, const char *reason);

/* Reads the next line into *line (c's buffer, without its newline).
 * Returns 1 for a line, 0 at a clean end of file, or a negative GNN error
 * (truncated or corrupt gzip, logged). */
int import_csv_next(struct import_csv *c, char **line);

/* Parses one integer field ending at ',' or the end of the line and
 * advances *p past the comma. */
bool import_field_i64(char **p, int64_t *out);

/* Whether DIR/NAME.gz or DIR/NAME exists. */
bool import_csv_exists(const char *dir, const char *name);

/* Reads a file holding one integer in [0, max] (num-node-list,
 * num-edge-list) into *out. */
int import_read_count(const char *dir, const char *name, int64_t max, int64_t *out);

/* Edges read so far: src[i] -> dst[i] of relation rel[i], as node IDs of
 * the graph (type_start[t] + per-type ID). rel is NULL for a homogeneous
 * graph (every edge relation 0; typed false). The arrays go to
 * graph_build_csr, which frees them; import_edges_free frees them on an
 * error path. */
struct import_edges {
	int32_t *src, *dst;
	uint16_t *rel;
	int64_t m, cap;
	bool typed;  /* keep rel */
};

/* Makes room for at least more edges beyond e->m. GNN_ENOMEM. */
int import_edges_reserve(struct import_edges *e, int64_t more);
void import_edges_free(struct import_edges *e);

/* Appends relation r's edges (g->schema.rels[r]: its source and
 * destination types, sized by g->type_start) from DIR/edge.csv: "u,v" per
 * line, u a per-type ID of the source type, v of the destination type.
 * hint >= 0 is num-edge-list's count, which the file must match. */
int import_read_edges(const char *dir, const struct graph *g, uint32_t r, int64_t hint, struct import_edges *e);

/* Reads the label type's labels (one a line, an integer class or "nan" for
 * none) from DIR/node-label.csv into g->labels (allocated by the caller,
 * num_nodes entries) at the type's rows, and sets g->num_classes: num_classes,
 * or the largest label + 1 when it is 0 (labels must lie below num_classes
 * when it is given). At least one node must be labelled. */
int import_read_labels(const char *dir, struct graph *g, int64_t num_classes);

/* Reads type t's feature rows from DIR/node-feat.csv (one row of floats per
 * node of the type, every row as wide as the first) into g->feat[t] and
 * g->schema.types[t].feat_dim. */
int import_read_features(const char *dir, struct graph *g, uint32_t t);

/* Reads DIR/train.csv, valid.csv and test.csv (one per-type ID of the
 * label type a line; each node labelled and listed once across the three)
 * into g->split, which it allocates. */
int import_read_splits(const char *dir, struct graph *g);

/* OGB's heterogeneous layout (import_hetero.c): the dataset in o->dir,
 * whose raw/ folder is raw and chosen split folder split, into *g. */
int import_hetero(const struct import_opts *o, const char *raw, const char *split, struct graph *g);

#endif
