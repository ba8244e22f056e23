/* write.h - writes a partitioned graph in gnn-dist's partition layout,
 * format 2 (docs/formats.md). With R relations and, in partition p, n_p
 * nodes of which n_pt of type t:
 *
 *   DIR/node-map.arr               i64 [num_nodes]: new ID -> original per-type ID
 *   DIR/part-<p>/indptr.arr        i64 [n_p R + 1]: row i R + r: local node i's in-neighbours
 *                                  under relation r
 *   DIR/part-<p>/indices.arr       i64 [m_p]: in-neighbours as new global IDs, ascending per row
 *   DIR/part-<p>/feat-<type>.arr   f32 or f16 [n_pt x the type's feat_dim], for each type with features
 *   DIR/part-<p>/label.arr         i32 [n_p] (-1 = unlabeled, and on every other type than the label type)
 *   DIR/part-<p>/split.arr         u8  [n_p]: 0 none, 1 train, 2 valid, 3 test
 *
 * A homogeneous graph is the one-type ("node"), one-relation case.
 * meta.json itself is written by the caller, last. */
#ifndef GNN_PART_WRITE_H
#define GNN_PART_WRITE_H

#include <jansson.h>

#include "arr.h"
#include "dtype.h"
#include "graph.h"
#include "partition.h"

/* Writes the arrays into dir (which exists and is empty), feature rows as
 * feat_dtype (F32 or F16), and adds to meta (borrowed) the keys
 * "node_map", "parts" and "balance". */
/* dir + "/" + name into out (len bytes); GNN_ERANGE, logged, when it
 * does not fit. */
int pt_write_join(char *out, size_t len, const char *dir, const char *name);

/* A meta.json file entry {"file", "dtype", "rows", "cols", "bytes",
 * "crc32"} for the array written as name; a new reference (the caller's),
 * NULL when out of memory. */
json_t *pt_write_file_entry(const char *name, const struct gnn_arr_info *info);

int pt_write_partitions(const struct pt_graph *g, const struct pt_partition *pt, enum gnn_dtype feat_dtype,
			const char *dir, json_t *meta);

#endif
