/* emb_wal.h - a graph store's log of the changes to its embeddings
 * (--emb-wal-dir), so that a store killed and started again comes back
 * with the rows, optimizer state and pending pushes it had, and no
 * trainer goes back to a checkpoint (docs/embeddings.md, "A graph store's
 * restart").
 *
 * The log is a sequence of segments, DIR/emb-wal-PPPP-SSSSSSSSSS.log (P
 * the partition, S a sequence number). Each is a file header and records;
 * a record is an EMB request message as the store accepted it (libcommon/
 * proto.h), appended under the embeddings' lock before the request is
 * answered: what a trainer was told is in the page cache when the store
 * dies (no fsync: a lost machine loses the log, and the trainers resume
 * from their checkpoint as without one). A record's header carries its
 * segment's number and goes into the file after its payload; the first
 * place without a whole header of the segment is the segment's end. So a
 * removed segment's file is kept (DIR/emb-wal-spare-PPPP.log) and the
 * next segment written over it: its older records read as the end.
 *
 * A segment's first records (flagged "header") say where its state
 * starts:
 *   - an INIT (a new generation): the state is the INIT's, then the
 *     records that follow;
 *   - an INIT (the configuration, generation and version), a SAVE (the
 *     checkpoint folder the store's snapshot of that version went into)
 *     and the pushes pending at the snapshot: the state is the committed
 *     checkpoint's rows, when that checkpoint was committed.
 * A SAVE starts a new segment; the segments before the newest one whose
 * start can be had are removed first, the first of them kept as the
 * spare that the new segment is written over. So the log holds about two
 * checkpoint intervals of pushes, in files of about three.
 *
 * Replay picks the newest segment whose start can be had and hands its
 * header and every later change, in order, to the caller. A record the
 * store died writing (so never answered) has no header yet and ends the
 * replay; a record with its header but a damaged payload fails it.
 *
 * Not thread-safe: the caller serialises (the embeddings' lock). */
#ifndef GS_EMB_WAL_H
#define GS_EMB_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "proto.h"

struct gs_wal;

/* Partition part's log in dir, made when missing, counting the bytes it
 * appends into bytes and the seconds that took into seconds (borrowed;
 * NULL: none). *out is the caller's: gs_wal_free. GNN_EIO or GNN_ERANGE,
 * logged. */
int gs_wal_open(const char *dir, uint32_t part, struct gnn_counter *bytes, struct gnn_counter *seconds,
		struct gs_wal **out);
/* Closes the log, leaving its files. Safe on NULL. */
void gs_wal_free(struct gs_wal *w);

/* Whether the log is on (not turned off by gs_wal_off or a failed write). */
bool gs_wal_on(const struct gs_wal *w);
/* Removes every segment and logs no more (WARN embeddings_wal_off with
 * why): a restart then finds no log, as without one. */
void gs_wal_off(struct gs_wal *w, const char *why);

/* Starts a new segment (removing every segment when init is an INIT of
 * a new generation, save NULL) whose header is init, then save when not
 * NULL. With save, the segments before the newest one whose start is a
 * generation's INIT or a committed checkpoint (libcommon/ckptname.h) are
 * removed first, and the new segment written over the first one's file.
 * GNN_EIO (the log is then off). */
int gs_wal_begin(struct gs_wal *w, const struct gnn_emb_req *init, const struct gnn_emb_req *save);
/* Appends q (borrowed), as a header record or a change. GNN_EIO (the log
 * is then off). */
int gs_wal_append(struct gs_wal *w, const struct gnn_emb_req *q, bool header);

/* One record to apply: q (decoded, borrowed for the call), or, for the
 * SAVE that starts a segment, the committed checkpoint folder to read the
 * rows from (committed; q is that SAVE). Returns GNN_OK or a code that
 * ends the replay. */
typedef int (*gs_wal_apply_fn)(void *ctx, const struct gnn_emb_req *q, const char *committed);

/* Replays the log through fn (above); *records: how many were applied;
 * *found: whether there was anything to replay. GNN_OK (also with no log),
 * fn's code, or GNN_ECHECKSUM for a damaged log (logged). */
int gs_wal_replay(struct gs_wal *w, gs_wal_apply_fn fn, void *ctx, uint64_t *records, bool *found);

#endif
