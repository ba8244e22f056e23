/* part.h - reads gnn-partition's output (docs/formats.md): meta.json and
 * one partition's mapped arrays. Shared by the graph store (which serves a
 * partition), tools and tests; the partitioner writes the same layout. */
#ifndef GNN_PART_H
#define GNN_PART_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "arr.h"

#define GNN_PART_FORMAT "gnn-dist-partitions"
#define GNN_PART_FORMAT_VERSION 1

/* Split membership codes stored in split.arr. */
enum { GNN_SPLIT_NONE = 0, GNN_SPLIT_TRAIN = 1, GNN_SPLIT_VALID = 2, GNN_SPLIT_TEST = 3 };

/* A partitioned graph's layout as every component sees it: its sizes, the
 * node range each partition owns, and which partition output it is. The
 * graph store reads it from meta.json, a sampler learns it from the graph
 * stores (INFO) and a trainer from the samplers. offsets is borrowed from
 * whoever filled it in. */
struct gnn_layout {
	int64_t num_nodes, num_edges;   /* whole graph; directed edges */
	uint32_t num_parts, feat_dim, num_classes;
	uint64_t graph_id;              /* the partition output's (0: unknown, e.g. in process) */
	const int64_t *offsets;         /* [num_parts + 1]: part p owns [offsets[p], offsets[p+1]) */
};

/* meta.json as loaded. */
struct gnn_meta {
	struct gnn_layout layout;   /* offsets points at this meta's own offsets; graph_id is
				     * 0: meta.json does not hold it, and only the graph store
				     * computes one (gnn_meta_graph_id) */
	bool symmetric;
	int64_t *offsets;           /* [num_parts + 1] (owned); the array layout.offsets borrows */
	json_t *json;               /* the whole document (owned), for the remaining fields */
};

/* Loads and validates DIR/meta.json: format and version, counts and ranges,
 * offsets strictly increasing from 0 to num_nodes and matching each part's
 * node_start/node_end. *out owns its memory: gnn_meta_free. */
int gnn_meta_load(const char *dir, struct gnn_meta *out);
void gnn_meta_free(struct gnn_meta *m);

/* A 64-bit identifier of a partition output, the same in every graph store
 * of one output (their INFO replies carry it, and trainers mix it into
 * their model hash): a hash of meta.json's node-map CRC-32, the graph's
 * sizes, the partition offsets and every partition file's CRC-32. Returns
 * GNN_EFORMAT (logged) when meta.json lacks those fields. */
int gnn_meta_graph_id(const struct gnn_meta *m, uint64_t *out);

/* gnn_owner_of over a layout: the partition owning node gid, or -1. */
int32_t gnn_layout_owner(const struct gnn_layout *l, int64_t gid);

/* The partition owning global node gid, given the node ranges offsets
 * [num_parts + 1] (partition p owns [offsets[p], offsets[p+1]), from 0 to
 * num_nodes = offsets[num_parts]): a binary search; -1 when gid lies
 * outside [0, num_nodes). Every component that routes node IDs to graph
 * stores uses this one. */
int32_t gnn_owner_of(const int64_t *offsets, uint32_t num_parts, int64_t gid);

struct gnn_part {
	int32_t id;
	int64_t node_start, node_end, num_nodes, num_edges;
	int32_t feat_dim;
	const int64_t *indptr;   /* [num_nodes + 1], local rows */
	const int64_t *indices;  /* [num_edges], global IDs */
	const float *feat;       /* [num_nodes * feat_dim] */
	const int32_t *labels;   /* [num_nodes], -1 = unlabeled */
	const uint8_t *split;    /* [num_nodes], 0 none 1 train 2 valid 3 test */
	struct gnn_arr arrs[5];
};

enum { GNN_PART_VERIFY = 1 };  /* check CRCs and every value (reads it all) */

/* Maps partition p of the output in dir. Always checks each file's header
 * against meta.json (dtype, shape); with GNN_PART_VERIFY also the data
 * CRCs and the contents: offsets monotone from 0 to num_edges, neighbour IDs
 * in range, labels in [-1, num_classes), split codes <= 3. */
int gnn_part_open(const char *dir, const struct gnn_meta *m, int32_t p, unsigned flags,
		  struct gnn_part *out);
void gnn_part_close(struct gnn_part *part);

#endif
