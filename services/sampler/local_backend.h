/* local_backend.h - the in-process backend of the minibatch core (core.h):
 * every partition's arrays in this process, answering SAMPLE, FEAT, LABEL
 * and NODES calls (and LOOKUP, from a folder with a node map) with the
 * very queries a graph store answers with (libcommon/partq.h), without the
 * network. The unit tests and the benchmark's in-process reference
 * (`gnn-sampler bench`) use it. */
#ifndef SMP_LOCAL_H
#define SMP_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "part.h"

struct smp_local;

/* Maps every partition of a gnn-partition output folder (part.h), and its
 * node map when meta.json names one (for LOOKUP); with verify, checks CRCs
 * and contents first (reads everything). The layout's
 * graph_id is 0 (the graph stores' ID is theirs to compute). *out is the
 * caller's: smp_local_close. */
int smp_local_open_dir(const char *dir, bool verify, struct smp_local **out);

/* Wraps arrays already in memory (tests): layout->num_parts partitions,
 * parts[p] (part.h's struct, filled by the caller: node range, type
 * starts, num_rels, indptr, indices, feat, labels and split; split may be
 * NULL, and NODES calls then fail with GNN_EINVAL) owning
 * [layout->offsets[p], layout->offsets[p+1]). The layout struct and parts[]
 * are copied; what their pointers point to is borrowed and must outlive
 * the returned object (smp_local_close). */
int smp_local_wrap(const struct gnn_layout *layout, const struct gnn_part *parts, struct smp_local **out);

/* The layout and partitions (borrowed from l). */
const struct gnn_layout *smp_local_layout(const struct smp_local *l);
const struct gnn_part *smp_local_part(const struct smp_local *l, uint32_t p);

/* Fills be with l's backend (l stays the owner; be is valid while l is). */
void smp_local_backend(struct smp_local *l, struct smp_backend *be);

void smp_local_close(struct smp_local *l);

#endif
