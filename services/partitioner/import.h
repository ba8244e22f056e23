/* import.h - reads a graph in OGB's node-property raw layout:
 *
 *   DIR/raw/edge.csv.gz            "src,dst" per line
 *   DIR/raw/node-feat.csv.gz       one row of feat_dim floats per node
 *   DIR/raw/node-label.csv.gz      one class per node ("nan" = unlabeled)
 *   DIR/raw/num-node-list.csv.gz   the node count
 *   DIR/raw/num-edge-list.csv.gz   the edge count (optional, checked if present)
 *   DIR/split/NAME/{train,valid,test}.csv.gz   node indices
 *
 * Plain .csv files are read too when the .gz is absent. Every line is
 * validated; errors name the file and line. */
#ifndef GNN_PART_IMPORT_H
#define GNN_PART_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

struct import_opts {
	const char *dir;
	const char *split;     /* NULL: the only folder under DIR/split */
	bool keep_directed;    /* false: symmetrise, as DGL/PyG do for ogbn-products */
	int64_t num_classes;   /* 0: max label + 1; else labels must be below it */
};

/* Fills *g (zeroed by the caller; graph_free releases it, also after an
 * error) from the dataset in o->dir, and split_name (len bytes) with the
 * name of the split folder read. */
int import_ogb(const struct import_opts *o, struct graph *g, char *split_name, size_t len);

#endif
