/* npy.h - NumPy's .npy array format (versions 1.0, 2.0 and 3.0): the
 * header's parser, a memory-mapped reader and the header's writer.
 *
 * A .npy file is "\x93NUMPY", a major and minor version byte, the header's
 * length (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), then an ASCII
 * (3.0: UTF-8) Python dict literal such as
 *
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2708, 1433), }
 *
 * padded with spaces and a newline so the data starts on a 64-byte
 * boundary, then the elements, C order. This module takes arrays of 0, 1
 * or 2 dimensions of little-endian (or one-byte) numbers; Fortran order,
 * big-endian, structured and object arrays are refused by name. It serves
 * the partitioner's readers (OGB's binary layout, .npy features) and the
 * inference's .npy outputs (arr.c). See docs/formats.md. */
#ifndef GNN_NPY_H
#define GNN_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* The element types taken, by NumPy's descr: '|b1', '|u1', '|i1', '<u2',
 * '<i2', '<u4', '<i4', '<u8', '<i8', '<f2', '<f4', '<f8'. */
enum gnn_npy_type {
	GNN_NPY_BOOL = 1, GNN_NPY_U8, GNN_NPY_I8, GNN_NPY_U16, GNN_NPY_I16, GNN_NPY_U32, GNN_NPY_I32,
	GNN_NPY_U64, GNN_NPY_I64, GNN_NPY_F16, GNN_NPY_F32, GNN_NPY_F64
};

/* The longest header this module reads or writes: version 1.0's limit. */
#define GNN_NPY_HEADER_MAX (65535 + 10)
/* The bytes gnn_npy_parse needs to learn a header's length. */
#define GNN_NPY_PREAMBLE 12

struct gnn_npy_header {
	enum gnn_npy_type type;
	size_t elem;        /* bytes per element */
	int ndim;           /* 0, 1 or 2 */
	uint64_t rows;      /* shape[0] (1 for a 0-d array) */
	uint64_t cols;      /* shape[1] (1 for fewer than 2 dimensions) */
	uint64_t count;     /* rows * cols */
	size_t data_off;    /* the header's bytes: the data starts here */
};

/* The full length of the header whose first bytes are at buf (len of
 * them, at least GNN_NPY_PREAMBLE or the whole file when shorter), for a
 * reader that streams: 0 when they are not a .npy preamble. */
size_t gnn_npy_header_need(const void *buf, size_t len);

/* Parses the header at buf (len bytes, the whole header at least).
 * Returns GNN_OK, or GNN_EFORMAT with why (why_len bytes) saying what is
 * wrong. Logs nothing: callers name the file or member. */
int gnn_npy_parse(const void *buf, size_t len, struct gnn_npy_header *h, char *why, size_t why_len);

/* The type's descr ("<f4") and a short name ("float32"). */
const char *gnn_npy_descr(enum gnn_npy_type t);
const char *gnn_npy_type_name(enum gnn_npy_type t);
bool gnn_npy_type_float(enum gnn_npy_type t);

/* A read-only mapped .npy file; data is valid until gnn_npy_close. */
struct gnn_npy {
	struct gnn_npy_header h;
	const void *data;
	void *map;
	size_t map_len;
};

/* Maps path and parses its header; the file must hold exactly the data
 * the shape says. Logs what is wrong, naming the file; returns GNN_ENOENT,
 * GNN_EIO or GNN_EFORMAT. gnn_npy_close releases it (safe on a zeroed one). */
int gnn_npy_open(const char *path, struct gnn_npy *out);
void gnn_npy_close(struct gnn_npy *a);

/* n elements of type t at in into floats at out (f64 rounded, integers
 * converted; in and out must not overlap). */
void gnn_npy_to_f32(const void *in, enum gnn_npy_type t, size_t n, float *out);
/* Element i of type t at data as a double (integers converted). */
double gnn_npy_get_f64(const void *data, enum gnn_npy_type t, uint64_t i);
/* Element i as an integer: false when it is not one (a float with a
 * fraction, NaN, infinite or beyond int64; a u64 beyond INT64_MAX). */
bool gnn_npy_get_i64(const void *data, enum gnn_npy_type t, uint64_t i, int64_t *out);

/* The .npy type of an array file dtype (gnn_dtype), 0 for none. */
enum gnn_npy_type gnn_npy_from_dtype(enum gnn_dtype dt);

/* Writes a version 1.0 header for a C-order array of type t, rows x cols
 * (cols 0: one dimension of rows) into buf (cap bytes), padded so the
 * data starts at a multiple of 64; its length into *len. GNN_EINVAL when
 * cap is too small. */
int gnn_npy_header_write(enum gnn_npy_type t, uint64_t rows, uint64_t cols, void *buf, size_t cap, size_t *len);

#endif
