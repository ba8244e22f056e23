/* dtype.h - the element types of gnn-dist's arrays (array files, feature
 * rows on the wire) and the conversion of feature rows between them.
 * Feature rows are f32 or f16 (IEEE 754 binary16: half the bytes on disk,
 * through the network and in caches); models read f32. */
#ifndef GNN_DTYPE_H
#define GNN_DTYPE_H

#include <stddef.h>
#include <stdint.h>

/* F16 is IEEE 754 binary16 ("half"), the feature rows' compact form. */
enum gnn_dtype { GNN_DT_U8 = 1, GNN_DT_I32 = 2, GNN_DT_I64 = 3, GNN_DT_F32 = 4, GNN_DT_F16 = 5 };

/* Bytes per element of dt, 0 for an unknown dtype. */
size_t gnn_dtype_size(enum gnn_dtype dt);
const char *gnn_dtype_name(enum gnn_dtype dt);
/* The dtype called name ("f32", ...), 0 for none. */
enum gnn_dtype gnn_dtype_parse(const char *name);

/* A feature row's dtype: F32 or F16. */
static inline int gnn_feat_dtype_ok(uint32_t dt) { return dt == GNN_DT_F32 || dt == GNN_DT_F16; }

/* n halves into floats (exact: every half is a float). */
void gnn_f16_to_f32(const uint16_t *in, size_t n, float *out);
/* n floats into halves, rounded to nearest even; beyond the half range to
 * infinity, NaN stays NaN. */
void gnn_f32_to_f16(const float *in, size_t n, uint16_t *out);
/* n elements of feature dtype dt (F32 or F16) at in into floats at out
 * (which may not overlap in). */
void gnn_feat_to_f32(const void *in, enum gnn_dtype dt, size_t n, float *out);

#endif
