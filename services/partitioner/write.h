/* write.h - writes a partitioned graph in gnn-dist's partition layout
 * (docs/formats.md):
 *
 *   DIR/node-map.arr            i64 [num_nodes]: new ID -> original ID
 *   DIR/part-<p>/indptr.arr     i64 [n_p + 1]: in-neighbour CSR offsets (local rows)
 *   DIR/part-<p>/indices.arr    i64 [m_p]: in-neighbours as new global IDs, sorted per row
 *   DIR/part-<p>/feat.arr       f32 [n_p x feat_dim]
 *   DIR/part-<p>/label.arr      i32 [n_p] (-1 = unlabeled)
 *   DIR/part-<p>/split.arr      u8  [n_p]: 0 none, 1 train, 2 valid, 3 test
 *
 * meta.json itself is written by the caller, last. */
#ifndef GNN_PART_WRITE_H
#define GNN_PART_WRITE_H

#include <jansson.h>

#include "graph.h"
#include "partition.h"

/* Writes the arrays into dir (which exists and is empty) and adds to meta
 * (borrowed) the keys "node_map", "parts" and "balance". */
int write_partitions(const struct graph *g, const struct partition *pt, const char *dir, json_t *meta);

#endif
