/* import.h - reads a graph in OGB's node-property raw layout, homogeneous:
 *
 *   DIR/raw/edge.csv.gz            "src,dst" per line
 *   DIR/raw/node-feat.csv.gz       one row of feat_dim floats per node
 *   DIR/raw/node-label.csv.gz      one class per node ("nan" = unlabeled)
 *   DIR/raw/num-node-list.csv.gz   the node count
 *   DIR/raw/num-edge-list.csv.gz   the edge count (optional, checked if present)
 *   DIR/split/NAME/{train,valid,test}.csv.gz   node indices
 *
 * or heterogeneous (ogbn-mag's; recognised by raw/num-node-dict.csv.gz):
 *
 *   DIR/raw/num-node-dict.csv.gz        a header of type names, then their node counts
 *   DIR/raw/triplet-type-list.csv.gz    "src,rel,dst" per forward relation
 *   DIR/raw/relations/SRC___REL___DST/edge.csv.gz   per-type IDs "u,v"
 *   DIR/raw/relations/SRC___REL___DST/num-edge-list.csv.gz  (optional, checked)
 *   DIR/raw/node-feat/TYPE/node-feat.csv.gz   (types without it have no features)
 *   DIR/raw/nodetype-has-label.csv.gz   header of type names, then True/False each
 *   DIR/raw/node-label/TYPE/node-label.csv.gz  for the one type marked True
 *   DIR/split/NAME/nodetype-has-split.csv.gz   as nodetype-has-label
 *   DIR/split/NAME/TYPE/{train,valid,test}.csv.gz   per-type IDs of that type
 *
 * Node types are numbered in name order (as OGB's loaders sort them),
 * relations in triplet-type-list's order. By default a relation from a type
 * to itself is symmetrised in place and every other relation gets a reverse
 * relation rev_NAME (dst -> src), appended after the forward ones in their
 * order, as DGL's AddReverse and PyG's ToUndirected do.
 *
 * or OGB's binary layout (ogbn-papers100M's; recognised by raw/data.npz,
 * whose arrays ogb_bin.c lists):
 *
 *   DIR/raw/data.npz           edge_index, num_nodes_list, num_edges_list, node_feat
 *   DIR/raw/node_feat.npy      (optional: node_feat unzipped, read in place)
 *   DIR/raw/node-label.npz     node_label, NaN for an unlabelled node
 *   DIR/split/NAME/{train,valid,test}.csv.gz   as above
 *
 * Plain .csv files are read too when the .gz is absent. Every line is
 * validated; errors name the file and line (the array, for .npz). */
#ifndef GNN_PART_IMPORT_H
#define GNN_PART_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

struct pt_import_opts {
	const char *dir;
	const char *split;     /* NULL: the only folder under DIR/split */
	bool keep_directed;    /* false: symmetrise (and add rev_ relations), as DGL/PyG do */
	int64_t num_classes;   /* 0: max label + 1; else labels must be below it */
	const char *scratch;   /* a folder for copies of deflated .npz members (unlinked at once) */
};

/* Fills *g (zeroed by the caller; pt_graph_free releases it, also after an
 * error) from the dataset in o->dir, and split_name (len bytes) with the
 * name of the split folder read. */
int pt_import_ogb(const struct pt_import_opts *o, struct pt_graph *g, char *split_name, size_t len);

#endif
