/* emb_snap.c - see emb_snap.h. */
#include "emb_snap.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "arr.h"
#include "err.h"
#include "log.h"
#include "sys.h"

enum snap_state { SNAP_IDLE, SNAP_WRITING, SNAP_RESERVING };

struct gs_snap {
	enum snap_state state;        /* not IDLE: a thread to join (it may have ended) */
	atomic_bool stop;             /* a newer snapshot or the store's end */
	pthread_t thread;
	struct gs_snap_job job;       /* the writer's, its regions' data in copy */
	uint8_t *copy;                /* kept for the next snapshot (emb_snap.h says why) */
	size_t copy_bytes, reserve_bytes;
	uint32_t reserve_part;
	double t0, copy_s;
	struct gnn_counter *saved;
	unsigned stall_s;             /* a fault for tests: the writer waits this long first */
	struct gnn_emb_snap rec;
	uint8_t buf[GNN_EMB_SNAP_BYTES];
};

/* GNN_FAULT_SNAPSHOT_STALL_S (docs/reliability.md, "Injected faults"):
 * the chaos suite's slow disk, so that a store can be killed while it
 * still writes. */
static void fault_stall(struct gs_snap *s)
{
	s->stall_s = gnn_fault_seconds("GNN_FAULT_SNAPSHOT_STALL_S",
				       "every embeddings snapshot waits this long before it writes");
}

int gs_snap_new(struct gnn_counter *saved, struct gs_snap **out)
{
	struct gs_snap *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return GNN_ENOMEM;
	s->saved = saved;
	s->job.rec_fd = -1;
	fault_stall(s);
	*out = s;
	return GNN_OK;
}

static void close_job(struct gs_snap_job *job)
{
	for (size_t i = 0; i < job->n; i++)
		if (job->r[i].fd >= 0)
			close(job->r[i].fd);
	job->n = 0;
	if (job->rec_fd >= 0)
		close(job->rec_fd);   /* (releases the record's lock) */
	job->rec_fd = -1;
}

static void stall(struct gs_snap *s)
{
	for (unsigned i = 0; i < s->stall_s * 10 && !atomic_load(&s->stop); i++)
		nanosleep(&(struct timespec){ 0, 100000000L }, NULL);
}

/* The regions written, in 64 MiB pieces so that a stop is heard; the
 * record written once all are (or one failed). */
static int write_all(struct gs_snap *s, uint64_t *bytes)
{
	const size_t piece = (size_t)64 << 20;
	size_t len;

	*bytes = 0;
	s->rec = (struct gnn_emb_snap){ .gen = s->job.gen, .version = s->job.version, .part = s->job.part };
	for (size_t i = 0; i < s->job.n; i++) {
		const struct gs_snap_region *r = &s->job.r[i];
		struct gnn_emb_snap_entry *e = &s->rec.e[s->rec.n++];
		uint64_t per = piece / r->row_bytes > 0 ? piece / r->row_bytes : 1;

		*e = r->rec;
		e->crc = 0;
		for (uint64_t done = 0; done < r->rec.rows && e->err == 0; done += per) {
			uint64_t k = r->rec.rows - done < per ? r->rec.rows - done : per;
			uint32_t crc;

			if (atomic_load(&s->stop))
				return GNN_ECLOSED;
			e->err = gnn_arr_shared_write(r->fd, r->rec.row + done, k, r->row_bytes,
						      (const uint8_t *)r->data + done * r->row_bytes, &crc);
			e->crc = (uint32_t)crc32_combine(e->crc, crc, (z_off_t)(k * r->row_bytes));
			*bytes += k * r->row_bytes;
		}
		if (e->err != 0)
			break;
	}
	len = gnn_emb_snap_encode(&s->rec, s->buf);
	return pwrite(s->job.rec_fd, s->buf, len, 0) == (ssize_t)len ? GNN_OK : GNN_EIO;
}

static void *writer(void *arg)
{
	struct gs_snap *s = arg;
	uint64_t bytes = 0;
	int rc;

	stall(s);
	rc = write_all(s, &bytes);
	if (rc == GNN_OK && s->rec.n > 0 && s->rec.e[s->rec.n - 1].err != 0)
		GNN_WARN("embeddings_snapshot_failed", "part=%" PRIu32 " version=%" PRIu64 " error=\"%s\" "
			 "reason=\"the checkpoint's file cannot take the rows: the trainer logs the checkpoint as "
			 "failed\"", s->job.part, s->job.version, strerror(s->rec.e[s->rec.n - 1].err));
	else if (rc == GNN_OK)
		GNN_INFO("embeddings_snapshot_written", "part=%" PRIu32 " version=%" PRIu64 " bytes=%" PRIu64
			 " copy_s=%.2f seconds=%.2f", s->job.part, s->job.version, bytes, s->copy_s, gnn_now() - s->t0);
	else if (rc == GNN_ECLOSED)
		GNN_INFO("embeddings_snapshot_stopped", "part=%" PRIu32 " version=%" PRIu64 " reason=\"a newer "
			 "snapshot or the store's end: its checkpoint was given up\"", s->job.part, s->job.version);
	else
		GNN_WARN("embeddings_snapshot_failed", "part=%" PRIu32 " version=%" PRIu64 " error=\"the record: %s\"",
			 s->job.part, s->job.version, strerror(errno));
	gnn_counter_add(s->saved, (double)bytes);
	close_job(&s->job);
	return NULL;
}

/* Stops the writer or the reserve in flight, if any, and joins the
 * thread: IDLE after. */
static void stop(struct gs_snap *s)
{
	if (s->state == SNAP_IDLE)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	atomic_store(&s->stop, false);
	s->state = SNAP_IDLE;
}

/* s->copy of bytes: the one there when its size is that, else a new one. */
static bool ensure_copy(struct gs_snap *s, size_t bytes)
{
	if (bytes != s->copy_bytes) {
		gnn_big_free(s->copy, s->copy_bytes);
		s->copy = NULL;
		s->copy_bytes = 0;
	}
	if (bytes > 0 && s->copy == NULL && (s->copy = gnn_big_alloc(bytes)) == NULL)
		return false;
	s->copy_bytes = bytes;
	return true;
}

static void *reserve(void *arg)
{
	struct gs_snap *s = arg;
	double t0 = gnn_now();

	if (!ensure_copy(s, s->reserve_bytes))
		return NULL;   /* (the snapshot tries again, and says it) */
	/* faulted in now, not under a lock (a start or INIT that stops this
	 * leaves the rest to the copy) */
	for (size_t i = 0; i < s->copy_bytes && !atomic_load(&s->stop); i += 4096)
		s->copy[i] = 0;
	GNN_INFO("embeddings_snapshot_reserved", "part=%" PRIu32 " bytes=%zu seconds=%.2f whole=%s reason=\"the "
		 "copy a checkpoint's snapshot takes, mapped ahead\"", s->reserve_part, s->copy_bytes, gnn_now() - t0,
		 atomic_load(&s->stop) ? "no" : "yes");
	return NULL;
}

void gs_snap_reserve(struct gs_snap *s, uint32_t part, size_t bytes)
{
	stop(s);
	if (bytes == s->copy_bytes)
		return;
	s->reserve_bytes = bytes;
	s->reserve_part = part;
	if (pthread_create(&s->thread, NULL, reserve, s) == 0)
		s->state = SNAP_RESERVING;
}

/* job's regions into one buffer (the last snapshot's when the size is
 * the same); their data pointers moved to it. */
static int copy_regions(struct gs_snap *s, struct gs_snap_job *job)
{
	size_t bytes = 0, at = 0;

	for (size_t i = 0; i < job->n; i++)
		bytes += (size_t)job->r[i].rec.rows * job->r[i].row_bytes;
	if (!ensure_copy(s, bytes)) {
		GNN_ERROR("embeddings_snapshot_failed", "part=%" PRIu32 " bytes=%zu reason=\"no memory for the copy of "
			  "the rows to write\"", job->part, bytes);
		return GNN_ENOMEM;
	}
	for (size_t i = 0; i < job->n; i++) {
		size_t b = (size_t)job->r[i].rec.rows * job->r[i].row_bytes;

		if (b > 0)
			memcpy(s->copy + at, job->r[i].data, b);
		job->r[i].data = s->copy + at;
		at += b;
	}
	return GNN_OK;
}

int gs_snap_start(struct gs_snap *s, struct gs_snap_job *job)
{
	int rc;

	stop(s);
	s->job = *job;
	job->n = 0;            /* the fds are s->job's now */
	job->rec_fd = -1;
	s->t0 = gnn_now();
	/* held until the writer closes the record: the trainer tells a writer
	 * at work from one gone with its store (without it, it waits for the
	 * record until its deadline) */
	if (flock(s->job.rec_fd, LOCK_EX | LOCK_NB) != 0)
		GNN_WARN_LIMITED("embeddings_snapshot_unlocked", "part=%" PRIu32 " error=\"flock: %s\" "
				"reason=\"the checkpoint's file system takes no lock: a store that stops while it "
				"writes costs the trainer its wait for the record\"", s->job.part, strerror(errno));
	if ((rc = copy_regions(s, &s->job)) != GNN_OK)
		goto fail;
	s->copy_s = gnn_now() - s->t0;
	if (pthread_create(&s->thread, NULL, writer, s) != 0) {
		GNN_ERROR("embeddings_snapshot_failed", "part=%" PRIu32 " error=\"no thread to write\"", s->job.part);
		rc = GNN_EIO;
		goto fail;
	}
	s->state = SNAP_WRITING;
	return GNN_OK;
fail:
	close_job(&s->job);
	return rc;
}

void gs_snap_free(struct gs_snap *s)
{
	if (s == NULL)
		return;
	stop(s);
	gnn_big_free(s->copy, s->copy_bytes);
	free(s);
}
