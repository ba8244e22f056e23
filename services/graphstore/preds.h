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
#include "linkpred.h"

struct gs_preds;

/* Prepares (loads nothing yet) the predictions of partition part, whose
 * rows are global nodes [node_start, node_start + num_nodes) (the label
 * type's), and a link output's embeddings, whose rows are every node of
 * the partition, part_nodes of them, under dir (borrowed). *out is the
 * caller's: gs_preds_free. GNN_ENOMEM. */
int gs_preds_new(const char *dir, int32_t part, int64_t node_start, int64_t num_nodes, int64_t part_nodes,
		 struct gs_preds **out);
void gs_preds_free(struct gs_preds *p);

/* Encodes the PREDICT_RESP for ids (n of them, every one owned: the
 * caller checked) into w. When there are no predictions, or they do not
 * load (missing, truncated, of another run than summary.json's), returns
 * GNN_ENOENT or GNN_EFORMAT with why (why_len bytes) saying what is
 * missing, and writes nothing. */
int gs_preds_answer(struct gs_preds *p, uint64_t req_id, const int64_t *ids, uint32_t n, struct gnn_wbuf *w,
		    char *why, size_t why_len);

/* A link-prediction model's output (summary.json "task": "link",
 * docs/inference.md), as loaded: valid until gs_preds_release. */
struct gs_link_view {
	uint32_t params_crc;
	struct gnn_linkdec dec;   /* params point into the mapped decoder.arr */
	const float *rows;        /* [part_nodes x dec.dim]: row i is the partition's node i, all finite */
};

/* Read-locks the current output (loading it when summary.json changed)
 * and fills *v; gs_preds_release must follow a GNN_OK. Otherwise returns,
 * with why saying what: GNN_ENOENT (no output, or a node-classification
 * one: "not a link-prediction model's output"), GNN_EFORMAT (it does not
 * load: a missing or short emb.arr, a bad decoder, a NaN) or
 * GNN_EUNAVAIL. PREDICT on a link output answers GNN_ENOENT. */
int gs_preds_link_acquire(struct gs_preds *p, struct gs_link_view *v, char *why, size_t why_len);
void gs_preds_release(struct gs_preds *p);

#endif
