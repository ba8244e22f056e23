/* emb_snap.h - a graph store's snapshot of its embeddings, written into
 * a checkpoint beside serving (EMB SAVE, docs/graphstore.md).
 *
 * gs_snap_start copies every region into one buffer while the caller
 * holds the table's lock, so the snapshot is one version's; then a thread of the
 * store writes the copy into the files (gnn_arr_shared_write) and the
 * record of what it wrote (embfile.h's emb-part-PPPP.snap), which the
 * trainer's commit waits for, while the store goes on with the next
 * updates. The snapshot holds a lock (flock) on the record's file from
 * the start until its end, so that the trainer can tell a writer at work
 * from one gone with its store. One snapshot at a time: a newer one stops
 * the one in flight (its checkpoint was given up).
 *
 * The buffer is kept for the next snapshot: a copy into it took
 * 0.11-0.31 s for 1.2 GB on the 2-core test machine, while mapping it
 * anew took 3.8-5.7 s there (the kernel finding huge pages in a memory
 * full of the checkpoints' page cache), which the ranks would wait for;
 * so it is even mapped ahead, once the tables are set up
 * (gs_snap_reserve). The store's memory is twice its tables' then, as it
 * is at every snapshot's peak anyway. (A fork's copy-on-write snapshot,
 * tried first, copied pages one by one under the stores' random
 * updates: 1.5 million page faults a store in an epoch, which took
 * twice as long; docs/embeddings.md.)
 *
 * State: IDLE -> WRITING (start; the writer runs, then ends) or RESERVING
 * (reserve; the buffer is mapped) -> IDLE (the next start or reserve, or
 * free, stops that thread and joins it). */
#ifndef GS_EMB_SNAP_H
#define GS_EMB_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "embfile.h"
#include "metrics.h"

/* One block of rows to write: rows [rec.row, rec.row + rec.rows) of the
 * file open as fd, from data (rec.rows x row_bytes). */
struct gs_snap_region {
	int fd;
	const void *data;
	size_t row_bytes;
	struct gnn_emb_snap_entry rec;   /* type, array, row, rows (crc and err the writer's) */
};

/* A snapshot's work (the caller's, filled before gs_snap_start). */
struct gs_snap_job {
	struct gs_snap_region r[GNN_EMB_SNAP_MAX];
	size_t n;
	int rec_fd;                      /* the record's file */
	uint64_t gen, version;
	uint32_t part;
};

struct gs_snap;

/* A snapshotter counting the bytes it wrote into saved (owned by the
 * caller's registry). *out is the caller's: gs_snap_free. GNN_ENOMEM. */
int gs_snap_new(struct gnn_counter *saved, struct gs_snap **out);
/* Maps and touches the copy's bytes on a thread of its own, so that the
 * first snapshot need not (an INIT calls it; a start waits for it). */
void gs_snap_reserve(struct gs_snap *s, uint32_t part, size_t bytes);
/* Stops a snapshot in flight, copies job's regions (the caller holds
 * what keeps them still: the table's lock) and starts the writer, which
 * owns job's fds from here on (closed in any case). GNN_OK, GNN_ENOMEM
 * (the copy's bytes), GNN_EIO (the lock or the thread: logged). */
int gs_snap_start(struct gs_snap *s, struct gs_snap_job *job);
/* Stops a snapshot in flight (its checkpoint fails) and frees s. Safe on NULL. */
void gs_snap_free(struct gs_snap *s);

#endif
