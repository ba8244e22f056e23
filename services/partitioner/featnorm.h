/* featnorm.h - feature normalisation at import (gnn-partition --feat-norm,
 * docs/partitioning.md "Feature normalisation").
 *
 * Per node type with features: row (each row divided by its sum, PyG's
 * NormalizeFeatures), standard (each column to mean 0 and standard
 * deviation 1 over the type's nodes) or none; auto is row for a type whose
 * values are all finite and >= 0 (bag-of-words, counts, binary) and none
 * otherwise. The partitioner stores the normalised rows (before any f16
 * rounding), so training and inference read them alike, and meta.json
 * records the mode applied to each type and the one asked for. */
#ifndef GNN_PART_FEATNORM_H
#define GNN_PART_FEATNORM_H

#include <jansson.h>

#include "graph.h"

/* The --feat-norm choices, for the option table. */
#define PT_FEAT_NORM_CHOICES "auto|row|standard|none"

/* name ("auto", "row", "standard", "none") into *mode: GNN_EINVAL for
 * anything else. */
int pt_feat_norm_parse(const char *name, enum pt_feat_norm *mode);

/* The mode's name (a static string). */
const char *pt_feat_norm_name(enum pt_feat_norm mode);

/* Normalises the features of every type of g that has some as requested
 * asks, resolving auto per type, and sets g->norm[t] (the mode applied;
 * for rows that g->feat_row produces, the column statistics that
 * pt_graph_feature_row applies). Logs one feat_norm line per such type.
 * Returns GNN_ENOMEM, GNN_ECLOSED on a stop request, or the row
 * function's error. */
int pt_feat_norm_apply(struct pt_graph *g, enum pt_feat_norm requested);

/* Records in meta (which must already hold node_types, in g's type order)
 * each featured type's applied mode ("feat_norm" in its node_types entry)
 * and the requested one ("feat_norm_requested"). */
void pt_feat_norm_meta(const struct pt_graph *g, enum pt_feat_norm requested, json_t *meta);

#endif
