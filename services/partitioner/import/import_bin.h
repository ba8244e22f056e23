/* import_bin.h - OGB's binary node-property layout (ogbn-papers100M's;
 * ogb_bin.c lists its files), which the importer (import.c) hands a
 * dataset to when it finds raw/data.npz. */
#ifndef GNN_PART_IMPORT_BIN_H
#define GNN_PART_IMPORT_BIN_H

#include "graph.h"
#include "import.h"

/* The dataset in o->dir, whose raw/ folder is raw and chosen split folder
 * split, into *g (zeroed by the caller; pt_graph_free releases it, also
 * after an error). Feature rows stay in their files (g->feat_row). */
int pt_import_ogb_binary(const struct pt_import_opts *o, const char *raw, const char *split, struct pt_graph *g);

#endif
