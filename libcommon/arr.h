/* arr.h - gnn-dist's binary array file: a 64-byte header then raw
 * little-endian elements, row-major, so a file maps straight into memory.
 *
 *   off  size  field
 *     0     8  magic "GNNARRAY"
 *     8     4  version (1)
 *    12     4  dtype (enum gnn_dtype)
 *    16     8  rows
 *    24     8  cols (elements per row; 1 for a vector)
 *    32     8  data_bytes = rows * cols * element size
 *    40     4  data_crc32 (zlib CRC-32 of the data bytes)
 *    44     4  header_crc32 (CRC-32 of bytes 0..43)
 *    48    16  reserved, zero
 *    64     -  data
 *
 * Writers write to "<path>.tmp" and rename on success, so a reader never
 * sees a half-written array. The streaming writer can also write the same
 * rows as a NumPy .npy file beside it (gnn_arr_writer_also_npy), for
 * np.load(..., mmap_mode='r'). See docs/formats.md. */
#ifndef GNN_ARR_H
#define GNN_ARR_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#define GNN_ARR_MAGIC "GNNARRAY"
#define GNN_ARR_VERSION 1
#define GNN_ARR_HEADER_BYTES 64

struct gnn_arr_info {
	enum gnn_dtype dtype;
	uint64_t rows, cols;
	uint64_t file_bytes;  /* header included */
	uint32_t data_crc32;
};

struct gnn_arr_writer;

/* Opens "<path>.tmp" for writing an array of rows of cols elements. *out is
 * owned by the caller until gnn_arr_writer_finish or _abort frees it. */
int gnn_arr_writer_open(const char *path, enum gnn_dtype dt, uint64_t cols,
			struct gnn_arr_writer **out);
/* The .npy header's bytes that gnn_arr_writer_also_npy reserves: version
 * 1.0's header of any 1-D or 2-D shape of 64-bit dimensions fits. */
#define GNN_ARR_NPY_HEADER_BYTES 128

/* Also writes the rows to npy_path as a C-order .npy array of the same
 * dtype and values: shape (rows,) when cols is 1, (rows, cols) otherwise.
 * Call it right after gnn_arr_writer_open, before any append. It goes to
 * "<npy_path>.tmp" with a placeholder header of GNN_ARR_NPY_HEADER_BYTES,
 * rewritten by finish, which renames it only when both files are whole;
 * abort removes both temporaries. GNN_EINVAL after an append or twice,
 * GNN_EIO (logged) when the file cannot be created; w stays usable (for
 * the .arr alone) on error. */
int gnn_arr_writer_also_npy(struct gnn_arr_writer *w, const char *npy_path);
/* finish then renames without fsync: the file is whole to every reader
 * but not yet durable, for a caller that fsyncs a whole folder of them
 * later, off its critical path (the trainer's checkpoints). The .arr only. */
void gnn_arr_writer_no_sync(struct gnn_arr_writer *w);
/* Appends rows full rows from data (rows * cols elements). */
int gnn_arr_writer_append(struct gnn_arr_writer *w, const void *data, uint64_t rows);
/* Writes the header, flushes, fsyncs and renames to path (the .npy first,
 * when there is one). Frees w, also on error (then the temporary files are
 * removed, and a .npy already renamed too). info (the .arr's) may be NULL. */
int gnn_arr_writer_finish(struct gnn_arr_writer *w, struct gnn_arr_info *info);
/* Removes the temporary file and frees w. Safe on NULL. */
void gnn_arr_writer_abort(struct gnn_arr_writer *w);

/* An array that several processes fill at once, each its own rows in
 * place (the graph stores' checkpoint shards): create makes "<path>.tmp"
 * of the final size with a zero header; a writer pwrites row r at
 * GNN_ARR_HEADER_BYTES + r * cols * element size and reports its rows'
 * CRC-32; seal writes the header with the data's CRC-32 (the writers',
 * combined in row order by crc32_combine) and renames to path, without
 * fsync (gnn_arr_writer_no_sync's contract). abort removes "<path>.tmp".
 * Errors logged: GNN_EIO, GNN_EINVAL. */
int gnn_arr_shared_create(const char *path, enum gnn_dtype dt, uint64_t rows, uint64_t cols);
/* "<path>.tmp", the file the writers open, into tmp (cap bytes).
 * GNN_EINVAL (logged) when it does not fit. */
int gnn_arr_shared_tmp(const char *path, char *tmp, size_t cap);
/* A writer's rows [row, row + rows) of row_bytes each, from data, into
 * the created file open as fd; their CRC-32 into *crc. Returns 0 or the
 * errno of the failed write (EIO for one that wrote nothing), which the
 * writer reports to whoever seals the file. Logs nothing. */
int gnn_arr_shared_write(int fd, uint64_t row, uint64_t rows, size_t row_bytes, const void *data, uint32_t *crc);
int gnn_arr_shared_seal(const char *path, enum gnn_dtype dt, uint64_t rows, uint64_t cols, uint32_t data_crc32);
void gnn_arr_shared_abort(const char *path);

/* Writes a whole array from memory (open + append + finish). */
int gnn_arr_write(const char *path, enum gnn_dtype dt, uint64_t rows, uint64_t cols,
		  const void *data, struct gnn_arr_info *info);

/* A read-only mapped array. data is valid until gnn_arr_close. */
struct gnn_arr {
	const void *data;
	struct gnn_arr_info info;
	void *map;
	size_t map_len;
};

enum { GNN_ARR_VERIFY = 1 };  /* also check the data CRC (reads every page) */

/* Maps path and validates the header against the file: magic, version,
 * dtype (must equal want unless want is 0), header CRC, sizes; with
 * GNN_ARR_VERIFY the data CRC too. Logs what is wrong and returns
 * GNN_EFORMAT, GNN_EVERSION, GNN_ECHECKSUM, GNN_ENOENT or GNN_EIO. */
int gnn_arr_open(const char *path, enum gnn_dtype want, unsigned flags, struct gnn_arr *out);
void gnn_arr_close(struct gnn_arr *a);

#endif
