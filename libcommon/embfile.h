/* embfile.h - learnable embeddings' files in a checkpoint folder
 * (docs/embeddings.md, "Checkpoints"), written by the trainer and the
 * graph stores alike:
 *
 * - emb-TYPE-ARRAY.arr: one GNNARRAY per embedded type and array (arr.h),
 *   every node of the type in global ID order, so partition p's rows start
 *   at the sum of the partitions before it (gnn_emb_file_row);
 * - emb-part-PPPP.snap, while a checkpoint is written: partition P's
 *   graph store's record of what it wrote (a snapshot, EMB SAVE): per
 *   array its rows and their CRC-32, or the error that stopped it.
 *   Fixed-size fields, little-endian, then a CRC-32 of the record: a
 *   record read while it is being written fails its CRC. */
#ifndef GNN_EMBFILE_H
#define GNN_EMBFILE_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "proto.h"

/* dir/emb-TYPE-ARRAY.arr into buf. GNN_ERANGE when it does not fit. */
int gnn_emb_file(char *buf, size_t cap, const char *dir, const char *type_name, uint32_t array);
/* dir/emb-part-PPPP.snap into buf. GNN_ERANGE when it does not fit. */
int gnn_emb_snap_file(char *buf, size_t cap, const char *dir, uint32_t part);
/* The file row of partition p's first node of type t. */
uint64_t gnn_emb_file_row(const struct gnn_layout *l, uint32_t p, uint32_t t);

#define GNN_EMB_SNAP_MAX (GNN_MAX_TYPES * GNN_EMB_ARRAYS)

struct gnn_emb_snap_entry {
	uint32_t type, array;
	uint64_t row, rows;      /* the file rows written: [row, row + rows) */
	uint32_t crc;            /* their bytes' CRC-32 */
	int32_t err;             /* 0, or the errno that stopped the write (no entries follow) */
};

struct gnn_emb_snap {
	uint64_t gen, version;   /* the embeddings written (proto.h's EMB fields) */
	uint32_t part, n;        /* n entries used */
	struct gnn_emb_snap_entry e[GNN_EMB_SNAP_MAX];
};

#define GNN_EMB_SNAP_BYTES (32 + GNN_EMB_SNAP_MAX * 32 + 4)

/* s encoded into buf (GNN_EMB_SNAP_BYTES at least); the bytes used. */
size_t gnn_emb_snap_encode(const struct gnn_emb_snap *s, uint8_t *buf);
/* A record from len bytes of buf: GNN_OK, or GNN_EFORMAT (incomplete,
 * damaged, or not one: the caller may read it again later). */
int gnn_emb_snap_decode(const uint8_t *buf, size_t len, struct gnn_emb_snap *out);

#endif
