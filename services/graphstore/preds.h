/* preds.h - the predictions of the partition a graph store serves, as
 * `gnn-trainer infer` writes them (DIR/summary.json and DIR/part-<p>/,
 * docs/inference.md), for PREDICT requests.
 *
 * Loaded when a request first needs them, and again whenever summary.json
 * is replaced (another run of the inference): the store picks up new
 * predictions without a restart. The arrays are mapped read-only; a
 * reader-writer lock keeps a reload from unmapping them under a request.
 * Thread-safe: requests run on the server's workers. */
#ifndef GS_PREDS_H
#define GS_PREDS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct gs_preds;

/* Prepares (loads nothing yet) the predictions of partition part, whose
 * rows are global nodes [node_start, node_start + num_nodes), under dir
 * (borrowed). *out is the caller's: gs_preds_free. GNN_ENOMEM. */
int gs_preds_new(const char *dir, int32_t part, int64_t node_start, int64_t num_nodes, struct gs_preds **out);
void gs_preds_free(struct gs_preds *p);

/* Encodes the PREDICT_RESP for ids (n of them, every one owned: the
 * caller checked) into w. When there are no predictions, or they do not
 * load (missing, truncated, of another run than summary.json's), returns
 * GNN_ENOENT or GNN_EFORMAT with why (why_size bytes) saying what is
 * missing, and writes nothing. */
int gs_preds_answer(struct gs_preds *p, uint64_t req_id, const int64_t *ids, uint32_t n, struct gnn_wbuf *w,
		    char *why, size_t why_size);

#endif
