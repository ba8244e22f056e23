/* emb_table.h - learnable node embeddings held by a graph store (EMB requests,
 * libcommon/proto.h; the trainer's side is services/trainer/data/embeddings.h).
 *
 * For each embedded type t (dim[t] > 0 in the trainers' INIT) the store
 * holds, for its partition's nodes of that type (the contiguous global IDs
 * [first, first + n) of gnn_layout_type_range), row by row in ID order:
 *
 *   ROWS       n x dim floats   the embeddings
 *   BEST_ROWS  n x dim floats   ROWS as they were at the last BEST request
 *   STATE1     n x dim floats   Adam's m, Adagrad's sum of squared gradients
 *   STATE2     n x dim floats   Adam's v (Adam only)
 *   STEPS      n uint32         Adam's per-row step count (Adam only)
 *
 * and, as scratch for the updates, one uint32 per row, and the version
 * the last update took the row to (a uint64: DELTA). Bytes per row:
 * 16 dim + 16 with Adam, 12 dim + 12 with Adagrad.
 *
 * State: (gen, version, cfg_hash), all 0 and no rows until an INIT;
 * INIT sets gen and version (= its step), PUSH advances version by one
 * per update applied, WRITE sets it. Every request but INIT and STATUS
 * needs an INIT'ed store of the request's gen (GNN_ESTALE otherwise: the
 * store restarted or another INIT replaced the state, and the trainers
 * resume from their checkpoint); PULL, DELTA and READ also need step ==
 * version.
 *
 * The update rule. Update `version` is applied when every embedded type
 * has one PUSH from every rank 0..world-1 (world is the update's first
 * push's); a push for a slot already filled, or for step version - 1 (a
 * retry of the update applied last), is acknowledged and ignored. Then,
 * per embedded type, only the rows the pushes name change (lazy):
 *
 *   g    = (sum of the gradient rows pushed for the row) / (their number)
 *          (DGL's mean over every occurrence, duplicates within one push
 *          included; the float sum runs in rank order, each push in its
 *          own order, from the first occurrence, so the result does not
 *          depend on the order in which the pushes arrived)
 *   Adam:    k = ++steps;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g g
 *            row -= (float)(lr (m / c1) / (sqrt(v / c2) + eps))
 *            with c1 = 1 - b1^k, c2 = 1 - b2^k and that step in double
 *   Adagrad: s += g g;  row -= lr g / (sqrtf(s) + eps)
 *
 * every other operation in float, in this order (the unit tests recompute
 * it bit for bit). One thread, rows in a fixed order: deterministic.
 *
 * The update's time. The last push of an update is answered first
 * (its reply's version already the next one); the update is applied
 * under the mutex right after, by gs_emb_settle on the thread that
 * answered it, or by whichever request takes the mutex before that:
 * every request (but INIT) first applies a complete update. So nothing
 * sees the state between the last push and the update, and the ranks'
 * all-reduce runs beside the update instead of after it.
 *
 * Thread-safe: one mutex serialises the requests and the update. SAVE
 * copies every array under it and has a thread write the copy into the
 * checkpoint (emb_snap.h).
 * With a log of changes (gs_emb_recover, emb_wal.h) every request that
 * changed the state is appended to it under the mutex too, before its
 * answer. */
#ifndef GS_EMB_H
#define GS_EMB_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "layout.h"
#include "metrics.h"
#include "proto.h"

struct gs_emb;

/* The metrics the store registered for the embeddings (handles owned by
 * its registry, none NULL). */
struct gs_emb_metrics {
	struct gnn_counter *rows_pulled;     /* rows answered to PULL */
	struct gnn_counter *rows_refreshed;  /* rows answered to DELTA */
	struct gnn_counter *rows_pushed;     /* gradient rows accepted by PUSH (ignored repeats not counted) */
	struct gnn_counter *bytes_in;        /* row bytes received: PUSH and WRITE data */
	struct gnn_counter *bytes_out;       /* row bytes answered: PULL, DELTA and READ */
	struct gnn_counter *bytes_saved;     /* row bytes written into checkpoint files: SAVE */
	struct gnn_counter *bytes_logged;    /* bytes appended to the log of changes (emb_wal.h) */
	struct gnn_counter *log_seconds;     /* time spent appending them */
	struct gnn_counter *update_seconds;  /* time spent applying updates */
	struct gnn_counter *updates;         /* updates applied */
	struct gnn_gauge *rows;              /* rows held, every embedded type */
	struct gnn_gauge *bytes;             /* bytes of the state (the formula above) */
};

/* An uninitialised state (gen 0, version 0, no rows) counting into m
 * (copied). *out is the caller's: gs_emb_free. GNN_ENOMEM. */
int gs_emb_new(const struct gs_emb_metrics *m, struct gs_emb **out);
/* Frees every row and the state; no request may be in progress. Safe on NULL. */
void gs_emb_free(struct gs_emb *e);

/* Answers EMB request req (decoded; its arrays are borrowed for the call)
 * to the graph store of partition part of layout l (borrowed; fixed from
 * the store's READY on). Appends the EMB_RESP (the state after the
 * request; rows for PULL and READ) to w and returns GNN_OK; or refuses
 * the request: returns its GNN_E* code with why (why_len bytes, the
 * caller's) saying what was wrong, for the caller's ERROR reply, and
 * appends nothing. A failure to append the reply returns the encoder's
 * code with why empty. Codes: GNN_ESTALE (no INIT, another gen, PULL or
 * PUSH of another version), GNN_EINVAL (a type not embedded or not in
 * the graph, a width, array or world that is not the state's),
 * GNN_ERANGE (an ID not of this partition's nodes of the type, rows
 * outside its range, a reply over the message limit), GNN_ENOMEM
 * (naming the bytes). */
int gs_emb_answer(struct gs_emb *e, const struct gnn_layout *l, uint32_t part, uint64_t req_id,
		  const struct gnn_emb_req *req, struct gnn_wbuf *w, char *why, size_t why_len);

/* After any reply (the server's after_reply, on its worker's thread):
 * applies the update whose last push was just answered, if no request
 * did; cheap otherwise (one atomic). Without the memory for the update's
 * scratch it logs a rate-limited WARN and leaves the update to the next
 * request. */
void gs_emb_settle(struct gs_emb *e);

/* Opens the log of changes of partition part in dir (emb_wal.h; made
 * when missing) and replays it: a store killed comes back with the rows,
 * optimizer state, version and pending pushes it had (INFO
 * embeddings_recovered). Called once, after the partition is loaded and
 * before any request; l borrowed as for gs_emb_answer. A log that cannot
 * be replayed is removed (WARN): the store starts without rows, as
 * without a log. GNN_OK, or gs_wal_open's code (the folder cannot be
 * made or written). */
int gs_emb_recover(struct gs_emb *e, const char *dir, const struct gnn_layout *l, uint32_t part);

#endif
