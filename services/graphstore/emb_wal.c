/* emb_wal.c - see emb_wal.h. */
#include "emb_wal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"
#include "ckptname.h"
#include "err.h"
#include "log.h"
#include "sys.h"

#define FILE_MAGIC "GNNEWAL2"
#define FILE_HDR_BYTES 32   /* magic, partition, reserved: the first record 32-aligned */
/* A record's header: payload length, flags, the segment's number (8
 * bytes), the payload's CRC-32, the CRC-32 of those 20 bytes, 8 zero
 * bytes. Records start at multiples of 32, so a header never spans two
 * pages (below, append). */
#define REC_HDR_BYTES 32
#define REC_ALIGN 32
#define FLAG_HEADER 1u
#define FLAG_CKPT 2u        /* on a segment's first record: its start is a checkpoint (a SAVE follows) */
/* a record is one EMB request message: within the protocol's limit */
#define REC_MAX_BYTES GNN_PROTO_MAX_MSG_BYTES

struct seg {
	uint64_t seq;
	char *base;   /* the SAVE folder its start is (malloc'd); NULL: a generation's INIT */
	bool bad;     /* its start cannot be read: not a start */
};

struct gs_wal {
	char dir[PATH_MAX];
	uint32_t part;
	bool on;
	int fd;                /* the last segment (segs[n - 1]), for appending; -1 before the first INIT */
	off_t off;             /* where fd's next record goes */
	uint64_t next_seq;     /* the next segment's number: never reused while a file may hold its records */
	bool spare;            /* a dropped segment's file waits to be reused (spare_path) */
	struct seg *segs;      /* [n], ascending seq */
	size_t n, cap;
	struct gnn_wbuf buf;   /* the encoded record */
	struct gnn_counter *bytes, *seconds;
	/* fd's segment so far, for its log line at its end */
	uint64_t seg_bytes;
	double seg_s;
	bool seg_reused;
};

static void seg_path(const struct gs_wal *w, uint64_t seq, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/emb-wal-%04" PRIu32 "-%010" PRIu64 ".log", w->dir, w->part, seq);
}

/* Not a segment's name (scan skips it): the file the next segment reuses. */
static void spare_path(const struct gs_wal *w, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/emb-wal-spare-%04" PRIu32 ".log", w->dir, w->part);
}

static void remove_file(const char *path)
{
	if (unlink(path) != 0 && errno != ENOENT)
		GNN_WARN("embeddings_wal_unlink_failed", "file=%s error=\"%s\"", path, strerror(errno));
}

/* Segment i goes: its file becomes the spare when reuse and there is
 * none, else it is removed. */
static void drop_seg(struct gs_wal *w, size_t i, bool reuse)
{
	char path[PATH_MAX + 64], spare[PATH_MAX + 64];

	seg_path(w, w->segs[i].seq, path, sizeof(path));
	spare_path(w, spare, sizeof(spare));
	if (reuse && !w->spare && rename(path, spare) == 0)
		w->spare = true;
	else
		remove_file(path);
	free(w->segs[i].base);
	memmove(&w->segs[i], &w->segs[i + 1], (w->n - i - 1) * sizeof(*w->segs));
	w->n--;
}

/* Every segment and the spare removed, none open for appending. */
static void drop_all(struct gs_wal *w)
{
	char spare[PATH_MAX + 64];

	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	while (w->n > 0)
		drop_seg(w, w->n - 1, false);
	spare_path(w, spare, sizeof(spare));
	remove_file(spare);
	w->spare = false;
}

void gs_wal_off(struct gs_wal *w, const char *why)
{
	if (!w->on)
		return;
	GNN_WARN("embeddings_wal_off", "part=%" PRIu32 " dir=%s reason=\"%s; a restart of this store sends the "
		 "trainers back to their checkpoint\"", w->part, w->dir, why);
	w->on = false;
	drop_all(w);
}

bool gs_wal_on(const struct gs_wal *w)
{
	return w != NULL && w->on;
}

/* Whether segment s's start can be had: a generation's INIT, or a
 * checkpoint that was committed (renamed from its .tmp name). */
static bool start_available(const struct seg *s, char *committed, size_t cap)
{
	struct stat st;

	if (s->bad)
		return false;
	if (s->base == NULL)
		return true;
	return gnn_ckpt_committed_path(s->base, committed, cap) == GNN_OK && stat(committed, &st) == 0 &&
	       S_ISDIR(st.st_mode);
}

/* ---- reading ---- */

static off_t next_record(off_t off, uint32_t len)
{
	return (off + REC_HDR_BYTES + (off_t)len + REC_ALIGN - 1) & ~(off_t)(REC_ALIGN - 1);
}

/* Record at *off of segment seq's fd (size bytes) into *msg (grown as
 * needed), *off then at the next one: GNN_OK; GNN_ENOENT at the
 * segment's end, where no whole header of this segment is (the file's
 * end, an older segment's record in a reused file, or the place of a
 * record the store died writing: its header goes last); GNN_ECHECKSUM
 * for a record whose header is whole but whose payload is damaged or
 * missing. */
static int read_record(int fd, off_t size, uint64_t seq, off_t *off, uint8_t **msg, size_t *cap, uint32_t *len,
		       uint32_t *flags)
{
	uint8_t h[REC_HDR_BYTES];
	uint64_t hseq;
	uint32_t crc, hcrc;

	if (size - *off < REC_HDR_BYTES)
		return GNN_ENOENT;
	if (gnn_pread_all(fd, h, sizeof(h), *off) != GNN_OK)
		return GNN_EIO;
	memcpy(len, h, 4);
	memcpy(flags, h + 4, 4);
	memcpy(&hseq, h + 8, 8);
	memcpy(&crc, h + 16, 4);
	memcpy(&hcrc, h + 20, 4);
	if (hcrc != (uint32_t)crc32(0, h, 20) || hseq != seq)
		return GNN_ENOENT;
	if (*len < 28 || *len > REC_MAX_BYTES || (*flags & ~(FLAG_HEADER | FLAG_CKPT)) != 0 ||
	    size - *off - REC_HDR_BYTES < (off_t)*len)
		return GNN_ECHECKSUM;
	if (*len > *cap) {
		uint8_t *p = realloc(*msg, *len);

		if (p == NULL)
			return GNN_ENOMEM;
		*msg = p;
		*cap = *len;
	}
	if (gnn_pread_all(fd, *msg, *len, *off + REC_HDR_BYTES) != GNN_OK)
		return GNN_EIO;
	if (crc32(0, *msg, *len) != crc)
		return GNN_ECHECKSUM;
	*off = next_record(*off, *len);
	return GNN_OK;
}

static off_t file_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_size : 0;
}

static int decode(const uint8_t *msg, uint32_t len, struct gnn_emb_req *q)
{
	struct gnn_hdr h;
	const void *payload;
	int rc;

	if ((rc = gnn_proto_decode_hdr(msg, len, &h, &payload)) != GNN_OK)
		return rc;
	if (h.type != GNN_MSG_EMB_REQ)
		return GNN_EPROTO;
	return gnn_decode_emb_req(payload, h.len, q);
}

static int open_segment(const struct gs_wal *w, uint64_t seq, int flags, int *fd)
{
	char path[PATH_MAX + 64], magic[FILE_HDR_BYTES];
	uint32_t part;

	seg_path(w, seq, path, sizeof(path));
	if ((*fd = open(path, flags | O_CLOEXEC)) < 0)
		return GNN_EIO;
	if (gnn_pread_all(*fd, magic, sizeof(magic), 0) != GNN_OK || memcmp(magic, FILE_MAGIC, 8) != 0 ||
	    (memcpy(&part, magic + 8, 4), part != w->part)) {
		close(*fd);
		*fd = -1;
		return GNN_EPROTO;
	}
	return GNN_OK;
}

/* The next record as a request (its owned part the caller's to release):
 * read_record's codes, GNN_ECHECKSUM for one that does not decode. */
static int next_request(int fd, off_t size, uint64_t seq, off_t *off, uint8_t **msg, size_t *cap, uint32_t *flags,
			struct gnn_emb_req *q)
{
	uint32_t len;
	int rc;

	if ((rc = read_record(fd, size, seq, off, msg, cap, &len, flags)) != GNN_OK)
		return rc;
	return decode(*msg, len, q) == GNN_OK ? GNN_OK : GNN_ECHECKSUM;
}

/* Segment seq's start into s: a generation's INIT or JOIN (base NULL), or
 * (FLAG_CKPT on the first record) the folder of the SAVE that follows;
 * bad when neither can be read (its changes still follow an earlier
 * start). GNN_OK, or open_segment's code. */
static int read_start(struct gs_wal *w, uint64_t seq, struct seg *s)
{
	uint8_t *msg = NULL;
	size_t cap = 0;
	uint32_t flags;
	off_t off = FILE_HDR_BYTES, size;
	struct gnn_emb_req q;
	bool ckpt = false;
	int fd, rc;

	*s = (struct seg){ .seq = seq, .bad = true };
	if ((rc = open_segment(w, seq, O_RDONLY, &fd)) != GNN_OK)
		return rc;
	size = file_size(fd);
	if (next_request(fd, size, seq, &off, &msg, &cap, &flags, &q) == GNN_OK) {
		ckpt = (flags & FLAG_CKPT) != 0;
		s->bad = ckpt || !(flags & FLAG_HEADER) || (q.op != GNN_EMB_INIT && q.op != GNN_EMB_JOIN);
		gnn_proto_release(q.owned);
	}
	if (ckpt && next_request(fd, size, seq, &off, &msg, &cap, &flags, &q) == GNN_OK) {
		if (q.op == GNN_EMB_SAVE && (flags & FLAG_HEADER))
			s->bad = (s->base = strndup(q.data, q.n)) == NULL;
		gnn_proto_release(q.owned);
	}
	free(msg);
	close(fd);
	return GNN_OK;
}

static bool file_too_short(const struct gs_wal *w, uint64_t seq)
{
	char path[PATH_MAX + 64];
	struct stat st;

	seg_path(w, seq, path, sizeof(path));
	if (stat(path, &st) != 0 || st.st_size >= FILE_HDR_BYTES)
		return false;
	GNN_WARN("embeddings_wal_tail_dropped", "file=%s bytes=%lld reason=\"a segment cut short in its file header: "
		 "the store died making it\"", path, (long long)st.st_size);
	unlink(path);
	return true;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int add_seg(struct gs_wal *w, const struct seg *s)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		struct seg *p = realloc(w->segs, cap * sizeof(*p));

		if (p == NULL)
			return GNN_ENOMEM;
		w->segs = p;
		w->cap = cap;
	}
	w->segs[w->n++] = *s;
	return GNN_OK;
}

/* Every segment of this partition in the folder, with its start. */
static int scan(struct gs_wal *w)
{
	char prefix[32];
	DIR *d = opendir(w->dir);
	struct dirent *de;
	int rc = GNN_OK;

	if (d == NULL)
		return GNN_EIO;
	snprintf(prefix, sizeof(prefix), "emb-wal-%04" PRIu32 "-", w->part);
	while (rc == GNN_OK && (de = readdir(d)) != NULL) {
		uint64_t seq;
		int used = 0;
		struct seg s;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
		    sscanf(de->d_name + strlen(prefix), "%10" SCNu64 ".log%n", &seq, &used) != 1 ||
		    de->d_name[strlen(prefix) + (size_t)used] != '\0')
			continue;
		/* a store that died making a segment left less than its file
		 * header, and nothing after it: not a segment */
		if (file_too_short(w, seq))
			continue;
		/* one that is not a segment of this partition goes; the replay
		 * then finds the gap, if it needed it */
		if (read_start(w, seq, &s) != GNN_OK) {
			char path[PATH_MAX + 64];

			seg_path(w, seq, path, sizeof(path));
			GNN_WARN("embeddings_wal_damaged", "file=%s reason=\"not a segment of partition %" PRIu32 "'s log: "
				 "removed\"", path, w->part);
			unlink(path);
		} else if ((rc = add_seg(w, &s)) != GNN_OK) {
			free(s.base);
		}
	}
	closedir(d);
	if (w->n > 1)
		qsort(w->segs, w->n, sizeof(*w->segs), cmp_seq);
	w->next_seq = w->n > 0 ? w->segs[w->n - 1].seq + 1 : 1;
	return rc;
}

int gs_wal_open(const char *dir, uint32_t part, struct gnn_counter *bytes, struct gnn_counter *seconds,
		struct gs_wal **out)
{
	char spare[PATH_MAX + 64];
	struct gs_wal *w;
	int rc;

	if (strlen(dir) >= PATH_MAX - 64) {
		GNN_ERROR("bad_config", "emb_wal_dir=%s reason=\"the folder's name is too long\"", dir);
		return GNN_ERANGE;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return GNN_ENOMEM;
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->part = part;
	w->bytes = bytes;
	w->seconds = seconds;
	w->fd = -1;
	w->on = true;
	w->next_seq = 1;
	gnn_wbuf_init(&w->buf);
	if (gnn_mkdir_p(dir) != GNN_OK || access(dir, W_OK) != 0) {
		GNN_ERROR("bad_config", "emb_wal_dir=%s error=\"%s\" reason=\"the embeddings' log folder cannot be made "
			  "or written\"", dir, strerror(errno));
		gs_wal_free(w);
		return GNN_EIO;
	}
	/* a log that cannot be read is no log: the store starts without its
	 * rows, as without one, and logs afresh from the next INIT */
	if ((rc = scan(w)) != GNN_OK) {
		GNN_WARN("embeddings_wal_unreadable", "dir=%s code=%s reason=\"its segments cannot be read: removed, the "
			 "store starts without rows\"", dir, gnn_errname(rc));
		drop_all(w);
	}
	spare_path(w, spare, sizeof(spare));
	/* a spare may hold records of any number when no segment is left
	 * to number the next ones after */
	if (w->n > 0)
		w->spare = access(spare, F_OK) == 0;
	else
		remove_file(spare);
	*out = w;
	return GNN_OK;
}

void gs_wal_free(struct gs_wal *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->n; i++)
		free(w->segs[i].base);
	free(w->segs);
	gnn_wbuf_free(&w->buf);
	free(w);
}

/* ---- writing ---- */

static int append(struct gs_wal *w, const struct gnn_emb_req *q, uint32_t flags)
{
	uint8_t h[REC_HDR_BYTES] = { 0 };
	uint32_t len, crc, hcrc;
	double t0 = gnn_now(), dt;

	if (!w->on || w->fd < 0)
		return GNN_OK;
	w->buf.len = 0;
	if (gnn_encode_emb_req(&w->buf, 0, q) != GNN_OK) {
		gs_wal_off(w, "no memory to encode a record");
		return GNN_EIO;
	}
	len = (uint32_t)w->buf.len;
	crc = (uint32_t)crc32(0, w->buf.buf, len);
	memcpy(h, &len, 4);
	memcpy(h + 4, &flags, 4);
	memcpy(h + 8, &w->segs[w->n - 1].seq, 8);
	memcpy(h + 16, &crc, 4);
	hcrc = (uint32_t)crc32(0, h, 20);
	memcpy(h + 20, &hcrc, 4);
	/* the payload first, its header last: a header in the file says its
	 * record is whole, also when the store was killed in the write (its
	 * header, within one page, is copied whole or not at all) */
	if (gnn_pwrite_all(w->fd, w->buf.buf, len, w->off + REC_HDR_BYTES) != GNN_OK ||
	    gnn_pwrite_all(w->fd, h, sizeof(h), w->off) != GNN_OK) {
		char why[160];

		snprintf(why, sizeof(why), "a write failed: %s", strerror(errno));
		gs_wal_off(w, why);
		return GNN_EIO;
	}
	w->off = next_record(w->off, len);
	w->seg_bytes += REC_HDR_BYTES + len;
	dt = gnn_now() - t0;
	w->seg_s += dt;
	if (w->bytes != NULL)
		gnn_counter_add(w->bytes, (double)(REC_HDR_BYTES + len));
	if (w->seconds != NULL)
		gnn_counter_add(w->seconds, dt);
	return GNN_OK;
}

int gs_wal_append(struct gs_wal *w, const struct gnn_emb_req *q, bool header)
{
	return append(w, q, header ? FLAG_HEADER : 0);
}

/* Removes the segments before the newest one whose start can be had,
 * the first kept as the spare. Called before a SAVE's segment is made,
 * so that it is that segment's file. */
static void prune(struct gs_wal *w)
{
	char committed[PATH_MAX];

	for (size_t j = w->n; j-- > 0;)
		if (start_available(&w->segs[j], committed, sizeof(committed))) {
			while (j-- > 0)
				drop_seg(w, 0, true);
			return;
		}
}

/* The file of segment seq, its header written, open for writing: the
 * spare when there is one. Writing over a file's pages in the page cache
 * took a fraction of the time that growing a new file took (docs/
 * embeddings.md), and the log's files keep their size. Its records are
 * of older segments, so they read as this one's end. -1 on an error,
 * errno set. */
static int make_segment(struct gs_wal *w, uint64_t seq, bool *reused)
{
	char path[PATH_MAX + 64], spare[PATH_MAX + 64];
	uint8_t hdr[FILE_HDR_BYTES] = { 0 };
	int fd = -1;

	seg_path(w, seq, path, sizeof(path));
	spare_path(w, spare, sizeof(spare));
	if (w->spare && rename(spare, path) == 0)
		fd = open(path, O_WRONLY | O_CLOEXEC);
	*reused = fd >= 0;
	w->spare = false;
	if (fd < 0)
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	memcpy(hdr, FILE_MAGIC, 8);
	memcpy(hdr + 8, &w->part, 4);
	if (fd >= 0 && gnn_pwrite_all(fd, hdr, sizeof(hdr), 0) != GNN_OK) {
		close(fd);
		return -1;
	}
	return fd;
}

int gs_wal_begin(struct gs_wal *w, const struct gnn_emb_req *init, const struct gnn_emb_req *save)
{
	struct seg s = { 0 };
	bool reused;
	int fd, rc;

	if (!w->on)
		return GNN_OK;
	if (save == NULL)
		drop_all(w);
	else if ((s.base = strndup(save->data, save->n)) == NULL) {
		gs_wal_off(w, "no memory for a segment");
		return GNN_EIO;
	} else {
		prune(w);
	}
	if (w->fd >= 0) {
		GNN_INFO("embeddings_wal_segment", "part=%" PRIu32 " seq=%" PRIu64 " bytes=%" PRIu64 " write_s=%.2f "
			 "reused=%s", w->part, w->segs[w->n - 1].seq, w->seg_bytes, w->seg_s,
			 w->seg_reused ? "true" : "false");
		close(w->fd);
		w->fd = -1;
	}
	s.seq = w->next_seq++;
	if ((fd = make_segment(w, s.seq, &reused)) < 0 || add_seg(w, &s) != GNN_OK) {
		const char *err = fd < 0 ? strerror(errno) : "no memory";
		char why[PATH_MAX + 192], path[PATH_MAX + 64];

		seg_path(w, s.seq, path, sizeof(path));
		snprintf(why, sizeof(why), "segment %s cannot be made: %s", path, err);
		if (fd >= 0)
			close(fd);
		free(s.base);
		gs_wal_off(w, why);
		return GNN_EIO;
	}
	w->fd = fd;
	w->off = FILE_HDR_BYTES;
	w->seg_bytes = 0;
	w->seg_s = 0;
	w->seg_reused = reused;
	if ((rc = append(w, init, FLAG_HEADER | (save != NULL ? FLAG_CKPT : 0))) != GNN_OK ||
	    (save != NULL && (rc = append(w, save, FLAG_HEADER)) != GNN_OK))
		return rc;
	return GNN_OK;
}

/* ---- replay ---- */

/* Segment i's records through fn: its header too when first. *end:
 * where the record after the last whole one goes. read_record's code for
 * a damaged record (at *end), or fn's. */
static int replay_seg(struct gs_wal *w, size_t i, bool first, const char *committed, gs_wal_apply_fn fn, void *ctx,
		      uint64_t *records, off_t *end)
{
	uint8_t *msg = NULL;
	size_t cap = 0;
	uint32_t flags;
	off_t off = FILE_HDR_BYTES, size;
	int fd, rc;

	*end = off;
	if ((rc = open_segment(w, w->segs[i].seq, O_RDONLY, &fd)) != GNN_OK)
		return rc;
	size = file_size(fd);
	for (;;) {
		struct gnn_emb_req q;

		if ((rc = next_request(fd, size, w->segs[i].seq, &off, &msg, &cap, &flags, &q)) != GNN_OK)
			break;
		if (first || !(flags & FLAG_HEADER)) {
			bool load = (flags & FLAG_HEADER) && q.op == GNN_EMB_SAVE;

			rc = fn(ctx, &q, load ? committed : NULL);
			(*records)++;
		}
		gnn_proto_release(q.owned);
		if (rc != GNN_OK)
			break;
		*end = off;
	}
	free(msg);
	close(fd);
	return rc == GNN_ENOENT ? GNN_OK : rc;
}

int gs_wal_replay(struct gs_wal *w, gs_wal_apply_fn fn, void *ctx, uint64_t *records, bool *found)
{
	char committed[PATH_MAX];
	size_t j = w->n;
	off_t end = 0;
	int rc = GNN_OK;

	*records = 0;
	*found = false;
	if (!w->on || w->n == 0)
		return GNN_OK;
	while (j-- > 0)
		if (start_available(&w->segs[j], committed, sizeof(committed)))
			break;
	if (j == SIZE_MAX) {
		gs_wal_off(w, "no segment starts at a generation's INIT or a committed checkpoint");
		return GNN_OK;
	}
	*found = true;
	for (size_t i = j + 1; i < w->n; i++)
		if (w->segs[i].seq != w->segs[i - 1].seq + 1) {
			GNN_WARN("embeddings_wal_replay_failed", "part=%" PRIu32 " dir=%s reason=\"segment %" PRIu64 " is "
				 "missing\"", w->part, w->dir, w->segs[i - 1].seq + 1);
			return GNN_ECHECKSUM;
		}
	/* a record the store died writing, before its answer, has no header:
	 * its segment's end */
	for (size_t i = j; i < w->n && rc == GNN_OK; i++)
		rc = replay_seg(w, i, i == j, committed, fn, ctx, records, &end);
	if (rc != GNN_OK) {
		GNN_WARN("embeddings_wal_replay_failed", "part=%" PRIu32 " dir=%s code=%s records=%" PRIu64, w->part,
			 w->dir, gnn_errname(rc), *records);
		return rc;
	}
	/* the changes that follow go on the last segment */
	if ((rc = open_segment(w, w->segs[w->n - 1].seq, O_RDWR, &w->fd)) != GNN_OK) {
		gs_wal_off(w, "its last segment cannot be opened for appending");
		return GNN_OK;
	}
	w->off = end;
	return GNN_OK;
}
