#include "arr.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"
#include "log.h"
#include "npy.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "gnn-dist files are little-endian");

struct gnn_arr_writer {
	FILE *f;
	char *path;
	char *tmp;
	FILE *npy;        /* the .npy companion (gnn_arr_writer_also_npy), or NULL */
	char *npy_path;
	char *npy_tmp;
	enum gnn_dtype dtype;
	uint64_t cols, rows;
	uint32_t crc;
	bool no_sync;     /* gnn_arr_writer_no_sync: finish does not fsync */
};

/* zlib's crc32 takes a uInt length: feed it in chunks. */
static uint32_t crc_update(uint32_t crc, const void *data, uint64_t len)
{
	const unsigned char *p = data;

	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static void header_encode(unsigned char h[GNN_ARR_HEADER_BYTES], const struct gnn_arr_info *in)
{
	uint32_t version = GNN_ARR_VERSION, dt = in->dtype, hcrc;
	uint64_t bytes = in->rows * in->cols * gnn_dtype_size(in->dtype);

	memset(h, 0, GNN_ARR_HEADER_BYTES);
	memcpy(h, GNN_ARR_MAGIC, 8);
	memcpy(h + 8, &version, 4);
	memcpy(h + 12, &dt, 4);
	memcpy(h + 16, &in->rows, 8);
	memcpy(h + 24, &in->cols, 8);
	memcpy(h + 32, &bytes, 8);
	memcpy(h + 40, &in->data_crc32, 4);
	hcrc = crc_update(0, h, 44);
	memcpy(h + 44, &hcrc, 4);
}

int gnn_arr_writer_open(const char *path, enum gnn_dtype dt, uint64_t cols,
			struct gnn_arr_writer **out)
{
	static const unsigned char zero[GNN_ARR_HEADER_BYTES];
	struct gnn_arr_writer *w;

	if (gnn_dtype_size(dt) == 0 || cols == 0)
		return GNN_EINVAL;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return GNN_ENOMEM;
	w->path = strdup(path);
	if (w->path == NULL || asprintf(&w->tmp, "%s.tmp", path) < 0) {
		w->tmp = NULL;
		goto out_nomem;
	}
	w->f = fopen(w->tmp, "wb");
	if (w->f == NULL) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->tmp, strerror(errno));
		free(w->tmp);
		free(w->path);
		free(w);
		return GNN_EIO;
	}
	setvbuf(w->f, NULL, _IOFBF, 1 << 20);
	w->dtype = dt;
	w->cols = cols;
	w->crc = (uint32_t)crc32(0, Z_NULL, 0);
	/* Placeholder header; the real one is written by finish. */
	if (fwrite(zero, 1, sizeof(zero), w->f) != sizeof(zero)) {
		gnn_arr_writer_abort(w);
		return GNN_EIO;
	}
	*out = w;
	return GNN_OK;

out_nomem:
	free(w->path);
	free(w);
	return GNN_ENOMEM;
}

int gnn_arr_writer_also_npy(struct gnn_arr_writer *w, const char *npy_path)
{
	static const unsigned char zero[GNN_ARR_NPY_HEADER_BYTES];
	int rc;

	/* the header's room is reserved before the first row */
	if (w->npy_path != NULL || w->rows != 0 || gnn_npy_from_dtype(w->dtype) == 0)
		return GNN_EINVAL;
	w->npy_path = strdup(npy_path);
	if (w->npy_path == NULL || asprintf(&w->npy_tmp, "%s.tmp", npy_path) < 0) {
		w->npy_tmp = NULL;
		rc = GNN_ENOMEM;
		goto out_free;
	}
	w->npy = fopen(w->npy_tmp, "wb");
	if (w->npy == NULL) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->npy_tmp, strerror(errno));
		rc = GNN_EIO;
		goto out_free;
	}
	setvbuf(w->npy, NULL, _IOFBF, 1 << 20);
	/* Placeholder header (not a valid .npy while unfinished); finish writes the real one. */
	if (fwrite(zero, 1, sizeof(zero), w->npy) != sizeof(zero)) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->npy_tmp, strerror(errno));
		rc = GNN_EIO;
		goto out_close;
	}
	return GNN_OK;

out_close:
	fclose(w->npy);
	w->npy = NULL;
	unlink(w->npy_tmp);
out_free:
	free(w->npy_tmp);
	free(w->npy_path);
	w->npy_tmp = w->npy_path = NULL;
	return rc;
}

int gnn_arr_writer_append(struct gnn_arr_writer *w, const void *data, uint64_t rows)
{
	uint64_t bytes = rows * w->cols * gnn_dtype_size(w->dtype);

	if (bytes == 0)
		return GNN_OK;
	if (fwrite(data, 1, bytes, w->f) != bytes) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->tmp, strerror(errno));
		return GNN_EIO;
	}
	if (w->npy != NULL && fwrite(data, 1, bytes, w->npy) != bytes) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->npy_tmp, strerror(errno));
		return GNN_EIO;
	}
	w->crc = crc_update(w->crc, data, bytes);
	w->rows += rows;
	return GNN_OK;
}

/* The .npy header of w's rows in exactly GNN_ARR_NPY_HEADER_BYTES: the data
 * was written after that many bytes. A shorter header gets more spaces
 * before its '\n' (NumPy takes any padding that ends the header on a
 * multiple of 64); a longer one cannot happen (two 20-digit dimensions
 * make 108 bytes). */
static int npy_header(const struct gnn_arr_writer *w, unsigned char h[GNN_ARR_NPY_HEADER_BYTES])
{
	const size_t n = GNN_ARR_NPY_HEADER_BYTES;
	size_t len;
	int rc;

	if ((rc = gnn_npy_header_write(gnn_npy_from_dtype(w->dtype), w->rows, w->cols == 1 ? 0 : w->cols, h, n,
				       &len)) != GNN_OK)
		return rc;
	memset(h + len - 1, ' ', n - len);
	h[n - 1] = '\n';
	h[8] = (unsigned char)((n - 10) & 0xff);
	h[9] = (unsigned char)((n - 10) >> 8);
	return GNN_OK;
}

/* The .npy companion's header written, flushed, fsynced and closed. */
static int npy_finish(struct gnn_arr_writer *w)
{
	unsigned char h[GNN_ARR_NPY_HEADER_BYTES];
	FILE *f = w->npy;

	if (npy_header(w, h) != GNN_OK) {
		GNN_ERROR("write_failed", "file=%s reason=\"the shape's .npy header exceeds %d bytes\"", w->npy_tmp,
			  GNN_ARR_NPY_HEADER_BYTES);
		return GNN_EINVAL;
	}
	w->npy = NULL;
	if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof(h), f) != sizeof(h) ||
	    fflush(f) != 0 || fsync(fileno(f)) != 0) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->npy_tmp, strerror(errno));
		fclose(f);
		return GNN_EIO;
	}
	if (fclose(f) != 0) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", w->npy_tmp, strerror(errno));
		return GNN_EIO;
	}
	return GNN_OK;
}

void gnn_arr_writer_no_sync(struct gnn_arr_writer *w)
{
	w->no_sync = true;
}

int gnn_arr_writer_finish(struct gnn_arr_writer *w, struct gnn_arr_info *info)
{
	unsigned char h[GNN_ARR_HEADER_BYTES];
	struct gnn_arr_info in = {
		.dtype = w->dtype, .rows = w->rows, .cols = w->cols, .data_crc32 = w->crc,
	};
	const char *failed = w->tmp;
	bool npy_renamed = false;
	int rc = GNN_EIO;

	if (w->npy != NULL && (rc = npy_finish(w)) != GNN_OK) {
		gnn_arr_writer_abort(w);
		return rc;
	}
	rc = GNN_EIO;
	in.file_bytes = GNN_ARR_HEADER_BYTES + w->rows * w->cols * gnn_dtype_size(w->dtype);
	header_encode(h, &in);
	if (fflush(w->f) != 0 || fseek(w->f, 0, SEEK_SET) != 0 ||
	    fwrite(h, 1, sizeof(h), w->f) != sizeof(h) || fflush(w->f) != 0 ||
	    (!w->no_sync && fsync(fileno(w->f)) != 0))
		goto out_error;
	if (fclose(w->f) != 0) {
		w->f = NULL;
		goto out_error;
	}
	w->f = NULL;
	/* Both whole: the .npy first, so a .arr (what the graph stores read) never
	 * appears without it. */
	if (w->npy_path != NULL) {
		failed = w->npy_tmp;
		if (rename(w->npy_tmp, w->npy_path) != 0)
			goto out_error;
		npy_renamed = true;
		failed = w->tmp;
	}
	if (rename(w->tmp, w->path) != 0)
		goto out_error;
	if (info != NULL)
		*info = in;
	free(w->npy_tmp);
	free(w->npy_path);
	free(w->tmp);
	free(w->path);
	free(w);
	return GNN_OK;

out_error:
	GNN_ERROR("write_failed", "file=%s error=\"%s\"", failed, strerror(errno));
	if (npy_renamed)   /* and no .npy without its .arr either */
		unlink(w->npy_path);
	gnn_arr_writer_abort(w);
	return rc;
}

void gnn_arr_writer_abort(struct gnn_arr_writer *w)
{
	if (w == NULL)
		return;
	if (w->f != NULL)
		fclose(w->f);
	if (w->tmp != NULL)
		unlink(w->tmp);
	if (w->npy != NULL)
		fclose(w->npy);
	if (w->npy_tmp != NULL)
		unlink(w->npy_tmp);
	free(w->npy_tmp);
	free(w->npy_path);
	free(w->tmp);
	free(w->path);
	free(w);
}

int gnn_arr_shared_tmp(const char *path, char *tmp, size_t cap)
{
	if (snprintf(tmp, cap, "%s.tmp", path) >= (int)cap) {
		GNN_ERROR("write_failed", "file=%s reason=\"path too long\"", path);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

int gnn_arr_shared_create(const char *path, enum gnn_dtype dt, uint64_t rows, uint64_t cols)
{
	static const unsigned char zero[GNN_ARR_HEADER_BYTES];
	uint64_t size = GNN_ARR_HEADER_BYTES + rows * cols * gnn_dtype_size(dt);
	char tmp[PATH_MAX];
	int fd, rc;

	if (gnn_dtype_size(dt) == 0 || cols == 0)
		return GNN_EINVAL;
	if ((rc = gnn_arr_shared_tmp(path, tmp, sizeof(tmp))) != GNN_OK)
		return rc;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    pwrite(fd, zero, sizeof(zero), 0) != (ssize_t)sizeof(zero) || ftruncate(fd, (off_t)size) != 0) {
		GNN_ERROR("write_failed", "file=%s error=\"%s\"", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return GNN_EIO;
	}
	close(fd);
	return GNN_OK;
}

int gnn_arr_shared_write(int fd, uint64_t row, uint64_t rows, size_t row_bytes, const void *data, uint32_t *crc)
{
	const unsigned char *p = data;
	uint64_t bytes = rows * row_bytes;
	off_t off = (off_t)(GNN_ARR_HEADER_BYTES + row * row_bytes);
	uLong sum = crc32(0L, Z_NULL, 0);

	while (bytes > 0) {
		/* (crc32 takes a uInt) */
		size_t chunk = bytes < ((uint64_t)1 << 26) ? (size_t)bytes : ((size_t)1 << 26);
		ssize_t k = pwrite(fd, p, chunk, off);

		if (k <= 0)
			return k < 0 ? errno : EIO;
		sum = crc32(sum, p, (uInt)k);
		p += k;
		off += k;
		bytes -= (uint64_t)k;
	}
	*crc = (uint32_t)sum;
	return 0;
}

int gnn_arr_shared_seal(const char *path, enum gnn_dtype dt, uint64_t rows, uint64_t cols, uint32_t data_crc32)
{
	struct gnn_arr_info in = { .dtype = dt, .rows = rows, .cols = cols, .data_crc32 = data_crc32 };
	unsigned char h[GNN_ARR_HEADER_BYTES];
	char tmp[PATH_MAX];
	int fd, rc;

	if ((rc = gnn_arr_shared_tmp(path, tmp, sizeof(tmp))) != GNN_OK)
		return rc;
	header_encode(h, &in);
	if ((fd = open(tmp, O_WRONLY | O_CLOEXEC)) < 0)
		goto fail;
	if (pwrite(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		close(fd);
		goto fail;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0)
		goto fail;
	return GNN_OK;
fail:
	GNN_ERROR("write_failed", "file=%s error=\"%s\"", tmp, strerror(errno));
	unlink(tmp);
	return GNN_EIO;
}

void gnn_arr_shared_abort(const char *path)
{
	char tmp[PATH_MAX];

	if (gnn_arr_shared_tmp(path, tmp, sizeof(tmp)) == GNN_OK)
		unlink(tmp);
}

int gnn_arr_write(const char *path, enum gnn_dtype dt, uint64_t rows, uint64_t cols,
		  const void *data, struct gnn_arr_info *info)
{
	struct gnn_arr_writer *w;
	int rc;

	if ((rc = gnn_arr_writer_open(path, dt, cols, &w)) != GNN_OK)
		return rc;
	if ((rc = gnn_arr_writer_append(w, data, rows)) != GNN_OK) {
		gnn_arr_writer_abort(w);
		return rc;
	}
	return gnn_arr_writer_finish(w, info);
}

static int bad(const char *path, const char *why, int rc)
{
	GNN_ERROR("bad_array_file", "file=%s reason=\"%s\"", path, why);
	return rc;
}

/* Maps path read-only into a->map, a->map_len (at least a header's
 * bytes). Errors are logged. */
static int map_file(const char *path, struct gnn_arr *a)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		GNN_ERROR("open_failed", "file=%s error=\"%s\"", path, strerror(errno));
		return errno == ENOENT ? GNN_ENOENT : GNN_EIO;
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		return bad(path, "cannot stat", GNN_EIO);
	}
	if (st.st_size < GNN_ARR_HEADER_BYTES) {
		close(fd);
		return bad(path, "shorter than the 64-byte header", GNN_EFORMAT);
	}
	a->map_len = (size_t)st.st_size;
	a->map = mmap(NULL, a->map_len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (a->map == MAP_FAILED)
		return bad(path, "mmap failed", GNN_EIO);
	return GNN_OK;
}

/* Checks the header of the mapped file (a->map, a->map_len bytes) against
 * itself, the file's size and the dtype wanted (0: any) and fills a->info
 * and a->data. Errors are logged. */
static int read_header(const char *path, enum gnn_dtype want, struct gnn_arr *a)
{
	const unsigned char *h = a->map;
	uint32_t version, dt, hcrc;
	uint64_t bytes, esize;

	if (memcmp(h, GNN_ARR_MAGIC, 8) != 0)
		return bad(path, "not a gnn-dist array (bad magic)", GNN_EFORMAT);
	memcpy(&version, h + 8, 4);
	memcpy(&dt, h + 12, 4);
	memcpy(&a->info.rows, h + 16, 8);
	memcpy(&a->info.cols, h + 24, 8);
	memcpy(&bytes, h + 32, 8);
	memcpy(&a->info.data_crc32, h + 40, 4);
	memcpy(&hcrc, h + 44, 4);
	if (crc_update(0, h, 44) != hcrc)
		return bad(path, "header checksum mismatch", GNN_ECHECKSUM);
	if (version != GNN_ARR_VERSION) {
		GNN_ERROR("bad_array_file", "file=%s reason=\"unsupported version\" version=%u supported=%d",
			  path, version, GNN_ARR_VERSION);
		return GNN_EVERSION;
	}
	if ((esize = gnn_dtype_size((enum gnn_dtype)dt)) == 0)
		return bad(path, "unknown dtype", GNN_EFORMAT);
	if (want != 0 && dt != (uint32_t)want) {
		GNN_ERROR("bad_array_file", "file=%s reason=\"wrong dtype\" dtype=%s expected=%s", path,
			  gnn_dtype_name((enum gnn_dtype)dt), gnn_dtype_name(want));
		return GNN_EFORMAT;
	}
	if (a->info.cols == 0 || (a->info.rows != 0 && a->info.cols > UINT64_MAX / esize / a->info.rows) ||
	    a->info.rows * a->info.cols * esize != bytes || bytes != (uint64_t)a->map_len - GNN_ARR_HEADER_BYTES)
		return bad(path, "sizes in the header do not match the file (truncated?)", GNN_EFORMAT);
	a->info.dtype = (enum gnn_dtype)dt;
	a->info.file_bytes = (uint64_t)a->map_len;
	a->data = (unsigned char *)a->map + GNN_ARR_HEADER_BYTES;
	return GNN_OK;
}

int gnn_arr_open(const char *path, enum gnn_dtype want, unsigned flags, struct gnn_arr *out)
{
	struct gnn_arr a = { 0 };
	int rc;

	if ((rc = map_file(path, &a)) != GNN_OK)
		return rc;
	if ((rc = read_header(path, want, &a)) != GNN_OK)
		goto out_unmap;
	if ((flags & GNN_ARR_VERIFY) &&
	    crc_update((uint32_t)crc32(0, Z_NULL, 0), a.data, a.map_len - GNN_ARR_HEADER_BYTES) != a.info.data_crc32) {
		rc = bad(path, "data checksum mismatch (file corrupted)", GNN_ECHECKSUM);
		goto out_unmap;
	}
	*out = a;
	return GNN_OK;

out_unmap:
	munmap(a.map, a.map_len);
	return rc;
}

void gnn_arr_close(struct gnn_arr *a)
{
	if (a->map != NULL && a->map != MAP_FAILED)
		munmap(a->map, a->map_len);
	memset(a, 0, sizeof(*a));
}
