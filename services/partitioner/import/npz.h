/* npz.h - NumPy arrays as the partitioner's input: .npy files (mapped,
 * libcommon/npy.h) and the members of .npz archives (np.savez stores
 * them, np.savez_compressed deflates them), read through libzip.
 *
 * An array is read front to back in chunks (edge lists, labels) or by row
 * (features). A .npy file is mapped. A stored member is read in place
 * (zip_fseek). A deflated member cannot seek: asked for rows, it is
 * streamed once into a scratch file that is mapped and unlinked at once,
 * so its disk space goes with the mapping. Neither path holds the array
 * in memory whole. Not thread-safe (the partitioner reads on one thread).
 * Errors are logged and name the file and the member. */
#ifndef GNN_PART_NPZ_H
#define GNN_PART_NPZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "npy.h"

struct pt_npz;    /* an open .npz archive */
struct pt_nparr;  /* one array: a .npy file or an archive's member */

/* Opens the archive at path (GNN_ENOENT, GNN_EFORMAT: not a zip archive
 * or a damaged one, logged). pt_npz_close frees it, after its arrays. */
int pt_npz_open(const char *path, struct pt_npz **out);
void pt_npz_close(struct pt_npz *z);
const char *pt_npz_path(const struct pt_npz *z);

/* The number of members, and member i's array name (its file name without
 * ".npy") into buf (len bytes). */
int64_t pt_npz_count(const struct pt_npz *z);
const char *pt_npz_name(const struct pt_npz *z, int64_t i, char *buf, size_t len);
bool pt_npz_has(const struct pt_npz *z, const char *name);

/* Opens member NAME.npy of z and parses its header. GNN_ENOENT when there
 * is none (logged unless quiet), GNN_EFORMAT for a bad header or a size
 * that does not match its shape. *out is the caller's: pt_nparr_close. */
int pt_nparr_member(struct pt_npz *z, const char *name, bool quiet, struct pt_nparr **out);
/* Maps the .npy file at path (gnn_npy_open). */
int pt_nparr_file(const char *path, struct pt_nparr **out);
void pt_nparr_close(struct pt_nparr *a);

const struct gnn_npy_header *pt_nparr_header(const struct pt_nparr *a);
/* "FILE" or "FILE member NAME", for messages. */
const char *pt_nparr_where(const struct pt_nparr *a);
/* Logs why against a's file and member; returns GNN_EFORMAT. */
int pt_nparr_fail(const struct pt_nparr *a, const char *why);

/* Reads n elements from element first on (raw, in the array's type) into
 * out. Reading on from where the last read ended is cheapest; a deflated
 * member restarts from its beginning to go back. GNN_EFORMAT for a
 * truncated or corrupt member (logged). */
int pt_nparr_read(struct pt_nparr *a, uint64_t first, uint64_t n, void *out);

/* Prepares a 2-D array (or 1-D: rows of one) for pt_nparr_row_f32: a
 * deflated member is streamed into a scratch file in folder scratch. */
int pt_nparr_rows(struct pt_nparr *a, const char *scratch);
/* Row row (cols elements) as floats into out. */
int pt_nparr_row_f32(struct pt_nparr *a, uint64_t row, float *out);

/* Makes a's rows type t's feature rows (row i: the type's node i) through
 * g->feat_row, reading them as the partitions are written; sets the type's
 * feat_dim. Takes a, and z when not NULL (the archive a is a member of),
 * also on error: pt_graph_free releases them. a must be 2-D floats with
 * the type's node count of rows, prepared by pt_nparr_rows. */
int pt_npfeat_attach(struct pt_graph *g, uint32_t t, struct pt_nparr *a, struct pt_npz *z);

#endif
