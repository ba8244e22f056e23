/* ogb.h - the readers of the files both of OGB's raw layouts hold (counts,
 * edge lists, labels, features, split lists; import.h lists the files),
 * used by the homogeneous importer (import.c) and the heterogeneous one
 * (import_hetero.c). Every reader validates every line (csv.h), and its
 * errors name the file and the line. */
#ifndef GNN_PART_OGB_H
#define GNN_PART_OGB_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

/* The largest class count taken without --classes: it guards against
 * garbage labels making huge class counts. */
#define PT_OGB_MAX_LABEL (1 << 20)

/* Reads a file holding one integer in [0, max] (num-node-list,
 * num-edge-list) into *out. */
int pt_ogb_read_count(const char *dir, const char *name, int64_t max, int64_t *out);

/* Edges read so far: src[i] -> dst[i] of relation rel[i], as node IDs of
 * the graph (type_start[t] + per-type ID). rel is NULL for a homogeneous
 * graph (every edge relation 0; typed false). The arrays go to
 * pt_graph_build_csr, which frees them; pt_ogb_edges_free frees them on an
 * error path. */
struct pt_ogb_edges {
	int32_t *src, *dst;
	uint16_t *rel;
	int64_t m, cap;
	bool typed;  /* keep rel */
};

/* Makes room for at least more edges beyond e->m. GNN_ENOMEM. */
int pt_ogb_edges_reserve(struct pt_ogb_edges *e, int64_t more);
void pt_ogb_edges_free(struct pt_ogb_edges *e);

/* Appends relation r's edges (g->schema.rels[r]: its source and
 * destination types, sized by g->type_start) from DIR/edge.csv: "u,v" per
 * line, u a per-type ID of the source type, v of the destination type.
 * hint >= 0 is num-edge-list's count, which the file must match. */
int pt_ogb_read_edges(const char *dir, const struct pt_graph *g, uint32_t r, int64_t hint, struct pt_ogb_edges *e);

/* Stores every edge's reverse (e is typed): a relation from a type to
 * itself gets it in place; any other gets a relation rev_NAME (dst -> src),
 * appended after the forward ones in their order, as DGL's AddReverse and
 * PyG's ToUndirected do. The caller checked that each rev_NAME fits
 * GNN_NAME_MAX and that g->schema has room for them. */
int pt_ogb_add_reverses(struct pt_graph *g, struct pt_ogb_edges *e);

/* The typed edges e into g's CSR: every edge's reverse added unless
 * keep_directed (pt_ogb_add_reverses), the schema checked (an error names
 * file), then pt_graph_build_csr, which takes e's arrays (e is zeroed,
 * also on error); g->symmetric set. */
int pt_ogb_build_typed(struct pt_graph *g, struct pt_ogb_edges *e, bool keep_directed, const char *file);

/* Reads the label type's labels (one a line, an integer class or "nan" for
 * none) from DIR/node-label.csv into g->labels (allocated by the caller,
 * num_nodes entries) at the type's rows, and sets g->num_classes: num_classes,
 * or the largest label + 1 when it is 0 (labels must lie below num_classes
 * when it is given). At least one node must be labelled. */
int pt_ogb_read_labels(const char *dir, struct pt_graph *g, int64_t num_classes);

/* Reads type t's feature rows from DIR/node-feat.csv (one row of floats per
 * node of the type, every row as wide as the first) into g->feat[t] and
 * g->schema.types[t].feat_dim. */
int pt_ogb_read_features(const char *dir, struct pt_graph *g, uint32_t t);

/* Reads DIR/train.csv, valid.csv and test.csv (one per-type ID of the
 * label type a line; each node labelled and listed once across the three)
 * into g->split, which it allocates. */
int pt_ogb_read_splits(const char *dir, struct pt_graph *g);

#endif
