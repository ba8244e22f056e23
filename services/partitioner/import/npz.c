#include "npz.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zip.h>

#include "err.h"
#include "log.h"

struct pt_npz {
	zip_t *zip;
	char path[4096];
};

/* Where an array's elements are: mapped (a .npy file, or a deflated
 * member's scratch copy), or a member read through libzip. */
enum nparr_source { NPARR_MAPPED, NPARR_STORED, NPARR_DEFLATED };

struct pt_nparr {
	struct gnn_npy_header h;
	enum nparr_source src;
	char where[4300];
	/* members */
	struct pt_npz *z;
	zip_int64_t index;
	zip_file_t *f;
	uint64_t pos;         /* the element the next zip_fread returns */
	void *row;            /* [cols elements]: one row read from a member */
	/* mapped */
	struct gnn_npy file;  /* a .npy file */
	const uint8_t *data;  /* the first element */
	void *map;            /* a scratch copy's mapping, map_len bytes */
	size_t map_len;
};

int pt_nparr_fail(const struct pt_nparr *a, const char *why)
{
	GNN_ERROR("bad_input", "file=%s reason=\"%s\"", a->where, why);
	return GNN_EFORMAT;
}

int pt_npz_open(const char *path, struct pt_npz **out)
{
	struct pt_npz *z;
	int err = 0;

	*out = NULL;
	if ((z = calloc(1, sizeof(*z))) == NULL)
		return GNN_ENOMEM;
	snprintf(z->path, sizeof(z->path), "%s", path);
	if ((z->zip = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err)) == NULL) {
		zip_error_t e;

		zip_error_init_with_code(&e, err);
		GNN_ERROR("bad_input", "file=%s reason=\"%s%s\"", path, zip_error_strerror(&e),
			  err == ZIP_ER_NOZIP || err == ZIP_ER_INCONS ? " (truncated or not an .npz archive)" : "");
		zip_error_fini(&e);
		free(z);
		return err == ZIP_ER_NOENT || err == ZIP_ER_OPEN ? GNN_ENOENT : GNN_EFORMAT;
	}
	*out = z;
	return GNN_OK;
}

void pt_npz_close(struct pt_npz *z)
{
	if (z == NULL)
		return;
	zip_discard(z->zip);
	free(z);
}

const char *pt_npz_path(const struct pt_npz *z)
{
	return z->path;
}

int64_t pt_npz_count(const struct pt_npz *z)
{
	return zip_get_num_entries(z->zip, 0);
}

const char *pt_npz_name(const struct pt_npz *z, int64_t i, char *buf, size_t len)
{
	const char *n = zip_get_name(z->zip, (zip_uint64_t)i, 0);
	size_t k = n != NULL ? strlen(n) : 0;

	if (k > 4 && strcmp(n + k - 4, ".npy") == 0)
		k -= 4;
	snprintf(buf, len, "%.*s", (int)k, n != NULL ? n : "");
	return buf;
}

bool pt_npz_has(const struct pt_npz *z, const char *name)
{
	char m[512];

	snprintf(m, sizeof(m), "%s.npy", name);
	return zip_name_locate(z->zip, m, 0) >= 0;
}

/* Reads exactly bytes from the member into buf (NULL: skips them). */
static int zread(struct pt_nparr *a, void *buf, uint64_t bytes)
{
	static char sink[1 << 16];
	char why[256];

	while (bytes > 0) {
		zip_uint64_t want = buf != NULL ? bytes : (bytes < sizeof(sink) ? bytes : sizeof(sink));
		zip_int64_t k = zip_fread(a->f, buf != NULL ? buf : sink, want);

		if (k <= 0) {
			snprintf(why, sizeof(why), "%s", k == 0 ? "member ends early (truncated)"
								: zip_error_strerror(zip_file_get_error(a->f)));
			return pt_nparr_fail(a, why);
		}
		bytes -= (uint64_t)k;
		if (buf != NULL)
			buf = (char *)buf + k;
	}
	return GNN_OK;
}

/* (Re)opens the member and reads its header; a->pos becomes 0. */
static int member_start(struct pt_nparr *a, bool parse)
{
	unsigned char head[GNN_NPY_HEADER_MAX];
	zip_stat_t st;
	size_t need, got;
	char why[200];
	int rc;

	if (a->f != NULL)
		zip_fclose(a->f);
	if ((a->f = zip_fopen_index(a->z->zip, (zip_uint64_t)a->index, 0)) == NULL) {
		snprintf(why, sizeof(why), "cannot read: %s", zip_error_strerror(zip_get_error(a->z->zip)));
		return pt_nparr_fail(a, why);
	}
	a->pos = 0;
	if (!parse) /* the header's length is known: skip it */
		return zread(a, NULL, a->h.data_off);
	if (zip_stat_index(a->z->zip, (zip_uint64_t)a->index, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
		return pt_nparr_fail(a, "cannot stat the member");
	got = st.size < GNN_NPY_PREAMBLE ? (size_t)st.size : GNN_NPY_PREAMBLE;
	if ((rc = zread(a, head, got)) != GNN_OK)
		return rc;
	need = gnn_npy_header_need(head, got);
	if (need > got && need <= sizeof(head) && need <= st.size && (rc = zread(a, head + got, need - got)) != GNN_OK)
		return rc;
	if (need > got && need <= sizeof(head) && need <= st.size)
		got = need;
	if (gnn_npy_parse(head, got, &a->h, why, sizeof(why)) != GNN_OK)
		return pt_nparr_fail(a, why);
	if (st.size - a->h.data_off != a->h.count * a->h.elem) {
		snprintf(why, sizeof(why), "its shape (%" PRIu64 " x %" PRIu64 " %s) needs %" PRIu64 " data bytes, the member has %" PRIu64,
			 a->h.rows, a->h.cols, gnn_npy_type_name(a->h.type), a->h.count * a->h.elem,
			 (uint64_t)st.size - a->h.data_off);
		return pt_nparr_fail(a, why);
	}
	a->src = st.valid & ZIP_STAT_COMP_METHOD && st.comp_method == ZIP_CM_STORE ? NPARR_STORED : NPARR_DEFLATED;
	return GNN_OK;
}

int pt_nparr_member(struct pt_npz *z, const char *name, bool quiet, struct pt_nparr **out)
{
	struct pt_nparr *a;
	char m[512];
	int rc;

	*out = NULL;
	snprintf(m, sizeof(m), "%s.npy", name);
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return GNN_ENOMEM;
	a->z = z;
	snprintf(a->where, sizeof(a->where), "%s member=%s", z->path, name);
	if ((a->index = zip_name_locate(z->zip, m, 0)) < 0) {
		if (!quiet)
			GNN_ERROR("bad_input", "file=%s reason=\"no member %s\"", z->path, m);
		free(a);
		return GNN_ENOENT;
	}
	if ((rc = member_start(a, true)) != GNN_OK) {
		pt_nparr_close(a);
		return rc;
	}
	*out = a;
	return GNN_OK;
}

int pt_nparr_file(const char *path, struct pt_nparr **out)
{
	struct pt_nparr *a;
	int rc;

	*out = NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return GNN_ENOMEM;
	snprintf(a->where, sizeof(a->where), "%s", path);
	if ((rc = gnn_npy_open(path, &a->file)) != GNN_OK) {
		free(a);
		return rc;
	}
	a->h = a->file.h;
	a->src = NPARR_MAPPED;
	a->data = a->file.data;
	*out = a;
	return GNN_OK;
}

void pt_nparr_close(struct pt_nparr *a)
{
	if (a == NULL)
		return;
	if (a->f != NULL)
		zip_fclose(a->f);
	gnn_npy_close(&a->file);
	if (a->map != NULL)
		munmap(a->map, a->map_len);
	free(a->row);
	free(a);
}

const struct gnn_npy_header *pt_nparr_header(const struct pt_nparr *a)
{
	return &a->h;
}

const char *pt_nparr_where(const struct pt_nparr *a)
{
	return a->where;
}

int pt_nparr_read(struct pt_nparr *a, uint64_t first, uint64_t n, void *out)
{
	int rc;

	if (first > a->h.count || n > a->h.count - first)
		return pt_nparr_fail(a, "read beyond the array (a bug)");
	if (a->src == NPARR_MAPPED) {
		memcpy(out, a->data + first * a->h.elem, n * a->h.elem);
		return GNN_OK;
	}
	if (first != a->pos && a->src == NPARR_STORED) {
		if (zip_fseek(a->f, (zip_int64_t)(a->h.data_off + first * a->h.elem), SEEK_SET) != 0)
			return pt_nparr_fail(a, zip_error_strerror(zip_file_get_error(a->f)));
		a->pos = first;
	}
	if (first < a->pos && (rc = member_start(a, false)) != GNN_OK)
		return rc;
	if (first > a->pos && (rc = zread(a, NULL, (first - a->pos) * a->h.elem)) != GNN_OK)
		return rc;
	if ((rc = zread(a, out, n * a->h.elem)) != GNN_OK)
		return rc;
	a->pos = first + n;
	return GNN_OK;
}

/* Streams a deflated member into an unlinked scratch file and maps it. */
static int member_to_scratch(struct pt_nparr *a, const char *scratch)
{
	uint64_t bytes = a->h.count * a->h.elem, chunk = a->h.elem << 20;
	char path[4200], why[300];
	void *buf = NULL;
	int fd, rc = GNN_OK;

	snprintf(path, sizeof(path), "%s/.member-XXXXXX", scratch);
	if ((fd = mkstemp(path)) < 0) {
		GNN_ERROR("scratch_failed", "dir=%s error=\"%s\"", scratch, strerror(errno));
		return GNN_EIO;
	}
	unlink(path); /* its space goes with the mapping */
	GNN_INFO("npz_inflate", "file=%s bytes=%" PRIu64 " dir=%s note=\"a deflated member is copied out once to be "
		 "read by row; a stored one (np.savez) or a .npy file is read in place\"", a->where, bytes, scratch);
	if ((buf = malloc(chunk)) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < a->h.count && rc == GNN_OK; i += chunk / a->h.elem) {
		uint64_t n = a->h.count - i < chunk / a->h.elem ? a->h.count - i : chunk / a->h.elem;

		if ((rc = pt_nparr_read(a, i, n, buf)) == GNN_OK && write(fd, buf, n * a->h.elem) != (ssize_t)(n * a->h.elem)) {
			snprintf(why, sizeof(why), "writing its copy in %s: %s", scratch, strerror(errno));
			(void)pt_nparr_fail(a, why);
			rc = GNN_EIO;
		}
	}
	if (rc == GNN_OK && bytes > 0) {
		a->map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
		if (a->map == MAP_FAILED) {
			a->map = NULL;
			(void)pt_nparr_fail(a, "cannot map its scratch copy");
			rc = GNN_EIO;
		}
	}
	if (rc == GNN_OK) {
		a->map_len = bytes;
		a->data = a->map;
		a->src = NPARR_MAPPED;
		zip_fclose(a->f);
		a->f = NULL;
	}
out:
	free(buf);
	close(fd);
	return rc;
}

int pt_nparr_rows(struct pt_nparr *a, const char *scratch)
{
	if (a->src == NPARR_DEFLATED)
		return member_to_scratch(a, scratch);
	if (a->src == NPARR_STORED && a->row == NULL && (a->row = malloc(a->h.cols * a->h.elem + 1)) == NULL)
		return GNN_ENOMEM;
	return GNN_OK;
}

int pt_nparr_row_f32(struct pt_nparr *a, uint64_t row, float *out)
{
	int rc;

	if (row >= a->h.rows)
		return pt_nparr_fail(a, "row beyond the array (a bug)");
	if (a->src == NPARR_MAPPED) {
		gnn_npy_to_f32(a->data + row * a->h.cols * a->h.elem, a->h.type, a->h.cols, out);
		return GNN_OK;
	}
	if (a->row == NULL)
		return pt_nparr_fail(a, "rows read before pt_nparr_rows (a bug)");
	if ((rc = pt_nparr_read(a, row * a->h.cols, a->h.cols, a->row)) != GNN_OK)
		return rc;
	gnn_npy_to_f32(a->row, a->h.type, a->h.cols, out);
	return GNN_OK;
}

/* ---- feature rows of a graph's types ------------------------------------------------------- */

/* g->feat_ctx: each type's array (NULL: the type's rows are in g->feat,
 * or it has none) and the archives they are members of. */
struct npfeat {
	struct pt_nparr *arr[GNN_MAX_TYPES];
	struct pt_npz *z[GNN_MAX_TYPES];
};

static int npfeat_row(const struct pt_graph *g, int64_t node, float *out)
{
	struct npfeat *f = g->feat_ctx;
	uint32_t t = pt_graph_node_type(g, node);
	struct pt_nparr *a = f->arr[t];
	int64_t row = node - g->type_start[t];
	int rc;

	if (a == NULL)
		return GNN_EINTERNAL;
	if ((rc = pt_nparr_row_f32(a, (uint64_t)row, out)) != GNN_OK)
		return rc;
	for (uint64_t j = 0; j < a->h.cols; j++)
		if (!isfinite(out[j])) {
			GNN_ERROR("bad_input", "file=%s row=%" PRId64 " column=%" PRIu64 " reason=\"not a finite number\"",
				  a->where, row, j);
			return GNN_EFORMAT;
		}
	return GNN_OK;
}

static void npfeat_free(void *ctx)
{
	struct npfeat *f = ctx;

	for (int t = 0; f != NULL && t < GNN_MAX_TYPES; t++) {
		pt_nparr_close(f->arr[t]);
		pt_npz_close(f->z[t]);
	}
	free(f);
}

int pt_npfeat_attach(struct pt_graph *g, uint32_t t, struct pt_nparr *a, struct pt_npz *z)
{
	struct npfeat *f = g->feat_ctx;

	if (f == NULL || g->feat_row != npfeat_row) {
		if (g->feat_ctx != NULL || (f = calloc(1, sizeof(*f))) == NULL) {
			pt_nparr_close(a);
			pt_npz_close(z);
			return g->feat_ctx != NULL ? GNN_EINTERNAL : GNN_ENOMEM;
		}
		g->feat_row = npfeat_row;
		g->feat_ctx = f;
		g->feat_free = npfeat_free;
	}
	pt_nparr_close(f->arr[t]);
	pt_npz_close(f->z[t]);
	f->arr[t] = a;
	f->z[t] = z;
	g->schema.types[t].feat_dim = (uint32_t)a->h.cols;
	return GNN_OK;
}
