/* import_hetero.h - OGB's heterogeneous raw layout (ogbn-mag's; import.h
 * lists its files), which the importer (import.c) hands a dataset to when
 * it finds raw/num-node-dict.csv.gz. */
#ifndef GNN_PART_IMPORT_HETERO_H
#define GNN_PART_IMPORT_HETERO_H

#include "graph.h"
#include "import.h"

/* The dataset in o->dir, whose raw/ folder is raw and chosen split folder
 * split, into *g (zeroed by the caller; pt_graph_free releases it, also after
 * an error). */
int pt_import_hetero(const struct pt_import_opts *o, const char *raw, const char *split, struct pt_graph *g);

#endif
