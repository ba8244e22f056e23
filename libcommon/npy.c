#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "log.h"

static const struct {
	const char *descr, *name;
	size_t size;
} types[] = {
	[GNN_NPY_BOOL] = { "|b1", "bool", 1 },    [GNN_NPY_U8] = { "|u1", "uint8", 1 },
	[GNN_NPY_I8] = { "|i1", "int8", 1 },      [GNN_NPY_U16] = { "<u2", "uint16", 2 },
	[GNN_NPY_I16] = { "<i2", "int16", 2 },    [GNN_NPY_U32] = { "<u4", "uint32", 4 },
	[GNN_NPY_I32] = { "<i4", "int32", 4 },    [GNN_NPY_U64] = { "<u8", "uint64", 8 },
	[GNN_NPY_I64] = { "<i8", "int64", 8 },    [GNN_NPY_F16] = { "<f2", "float16", 2 },
	[GNN_NPY_F32] = { "<f4", "float32", 4 },  [GNN_NPY_F64] = { "<f8", "float64", 8 },
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

const char *gnn_npy_descr(enum gnn_npy_type t)
{
	return (unsigned)t < NTYPES && types[t].descr != NULL ? types[t].descr : "?";
}

const char *gnn_npy_type_name(enum gnn_npy_type t)
{
	return (unsigned)t < NTYPES && types[t].name != NULL ? types[t].name : "?";
}

bool gnn_npy_type_float(enum gnn_npy_type t)
{
	return t == GNN_NPY_F16 || t == GNN_NPY_F32 || t == GNN_NPY_F64;
}

static int why_fail(char *why, size_t len, const char *msg)
{
	snprintf(why, len, "%s", msg);
	return GNN_EFORMAT;
}

/* The value of 'key' in the dict literal d (n bytes): *v points past the
 * colon and its spaces. */
static bool dict_value(const char *d, size_t n, const char *key, const char **v)
{
	size_t k = strlen(key);

	for (size_t i = 0; i + k + 2 <= n; i++) {
		const char *p;

		if ((d[i] != '\'' && d[i] != '"') || memcmp(d + i + 1, key, k) != 0 || d[i + 1 + k] != d[i])
			continue;
		for (p = d + i + k + 2; p < d + n && *p == ' '; p++)
			;
		if (p >= d + n || *p != ':')
			continue;
		for (p++; p < d + n && *p == ' '; p++)
			;
		*v = p;
		return true;
	}
	return false;
}

/* descr's value at v: a quoted type string. */
static int parse_descr(const char *v, const char *end, struct gnn_npy_header *h, char *why, size_t len)
{
	char q = *v, s[16];
	size_t n = 0;

	if (v >= end || (q != '\'' && q != '"'))
		return why_fail(why, len, "'descr' is not a type string (a structured array?): not supported");
	for (v++; v < end && *v != q && n + 1 < sizeof(s); v++)
		s[n++] = *v;
	s[n] = '\0';
	if (v >= end || *v != q)
		return why_fail(why, len, "'descr' is not a short type string");
	/* '<' and '|' are taken for one-byte types, '=' never (the writer's host order) */
	if ((s[0] == '<' || s[0] == '|') && (s[1] == 'b' || s[1] == 'u' || s[1] == 'i') && s[2] == '1' && !s[3])
		s[0] = '|';
	for (size_t t = 1; t < NTYPES; t++)
		if (strcmp(s, types[t].descr) == 0) {
			h->type = (enum gnn_npy_type)t;
			h->elem = types[t].size;
			return GNN_OK;
		}
	snprintf(why, len, "dtype '%s' not supported (little-endian bool, integers, float16/32/64 are)", s);
	return GNN_EFORMAT;
}

/* shape's value at v: "()", "(N,)" or "(N, M)". */
static int parse_shape(const char *v, const char *end, struct gnn_npy_header *h, char *why, size_t len)
{
	uint64_t dim[2] = { 1, 1 };
	int nd = 0;

	if (v >= end || *v != '(')
		return why_fail(why, len, "'shape' is not a tuple");
	for (v++;;) {
		while (v < end && *v == ' ')
			v++;
		if (v < end && *v == ')')
			break;
		if (nd == 2)
			return why_fail(why, len, "more than 2 dimensions: not supported");
		if (v >= end || *v < '0' || *v > '9')
			return why_fail(why, len, "'shape' holds something other than integers");
		errno = 0;
		char *e;
		unsigned long long x = strtoull(v, &e, 10);
		if (errno != 0 || x > INT64_MAX)
			return why_fail(why, len, "'shape' holds a dimension beyond int64");
		dim[nd++] = x;
		for (v = e; v < end && *v == ' '; v++)
			;
		if (v < end && *v == ',')
			v++;
		else if (v >= end || *v != ')')
			return why_fail(why, len, "'shape' is not a tuple of integers");
	}
	h->ndim = nd;
	h->rows = dim[0];
	h->cols = dim[1];
	if (h->cols != 0 && h->rows > UINT64_MAX / h->cols / h->elem)
		return why_fail(why, len, "'shape' is too large");
	h->count = h->rows * h->cols;
	return GNN_OK;
}

size_t gnn_npy_header_need(const void *buf, size_t len)
{
	const unsigned char *b = buf;

	if (len < 10 || memcmp(b, magic, 6) != 0 || b[6] < 1 || b[6] > 3 || (b[6] > 1 && len < 12))
		return 0;
	return b[6] == 1 ? 10 + ((size_t)b[8] | (size_t)b[9] << 8)
			 : 12 + ((size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24);
}

int gnn_npy_parse(const void *buf, size_t len, struct gnn_npy_header *h, char *why, size_t why_len)
{
	const unsigned char *b = buf;
	size_t hlen, pre;
	const char *d, *v;
	int rc;

	memset(h, 0, sizeof(*h));
	if (len < 6 || memcmp(b, magic, 6) != 0)
		return why_fail(why, why_len, "not a .npy array (no \\x93NUMPY magic)");
	if (len < 8 || b[6] < 1 || b[6] > 3) {
		snprintf(why, why_len, ".npy format version %u.%u not supported (1.0 to 3.0 are)", len < 8 ? 0 : b[6],
			 len < 8 ? 0 : b[7]);
		return GNN_EFORMAT;
	}
	pre = b[6] == 1 ? 10 : 12;
	if (len < pre || len < gnn_npy_header_need(b, len))
		return why_fail(why, why_len, "truncated: shorter than its header");
	hlen = gnn_npy_header_need(b, len) - pre;
	if (hlen + pre > GNN_NPY_HEADER_MAX)
		return why_fail(why, why_len, "header longer than 64 KiB");
	d = (const char *)b + pre;
	if (hlen == 0 || d[0] != '{' || memchr(d, '}', hlen) == NULL)
		return why_fail(why, why_len, "header is not a dict");
	if (!dict_value(d, hlen, "descr", &v))
		return why_fail(why, why_len, "header has no 'descr'");
	if ((rc = parse_descr(v, d + hlen, h, why, why_len)) != GNN_OK)
		return rc;
	if (!dict_value(d, hlen, "fortran_order", &v))
		return why_fail(why, why_len, "header has no 'fortran_order'");
	if (strncmp(v, "False", 5) != 0)
		return why_fail(why, why_len, "Fortran order not supported (save a C-order array: np.ascontiguousarray)");
	if (!dict_value(d, hlen, "shape", &v))
		return why_fail(why, why_len, "header has no 'shape'");
	if ((rc = parse_shape(v, d + hlen, h, why, why_len)) != GNN_OK)
		return rc;
	h->data_off = pre + hlen;
	return GNN_OK;
}

int gnn_npy_open(const char *path, struct gnn_npy *out)
{
	struct gnn_npy a = { 0 };
	char why[160];
	struct stat st;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		GNN_ERROR("open_failed", "file=%s error=\"%s\"", path, strerror(errno));
		return errno == ENOENT ? GNN_ENOENT : GNN_EIO;
	}
	if (fstat(fd, &st) != 0 || st.st_size == 0) {
		GNN_ERROR("bad_input", "file=%s reason=\"%s\"", path, st.st_size == 0 ? "empty file" : strerror(errno));
		close(fd);
		return st.st_size == 0 ? GNN_EFORMAT : GNN_EIO;
	}
	a.map_len = (size_t)st.st_size;
	a.map = mmap(NULL, a.map_len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (a.map == MAP_FAILED) {
		GNN_ERROR("bad_input", "file=%s reason=\"mmap failed: %s\"", path, strerror(errno));
		return GNN_EIO;
	}
	rc = gnn_npy_parse(a.map, a.map_len, &a.h, why, sizeof(why));
	if (rc == GNN_OK && a.map_len - a.h.data_off != a.h.count * a.h.elem) {
		snprintf(why, sizeof(why), "%s: its shape (%" PRIu64 " x %" PRIu64 " %s) needs %" PRIu64
			 " data bytes, the file has %zu", a.map_len - a.h.data_off < a.h.count * a.h.elem ?
			 "truncated" : "longer than its shape", a.h.rows, a.h.cols, gnn_npy_type_name(a.h.type),
			 a.h.count * a.h.elem, a.map_len - a.h.data_off);
		rc = GNN_EFORMAT;
	}
	if (rc != GNN_OK) {
		GNN_ERROR("bad_input", "file=%s reason=\"%s\"", path, why);
		munmap(a.map, a.map_len);
		return rc;
	}
	a.data = (const char *)a.map + a.h.data_off;
	*out = a;
	return GNN_OK;
}

void gnn_npy_close(struct gnn_npy *a)
{
	if (a->map != NULL && a->map != MAP_FAILED)
		munmap(a->map, a->map_len);
	memset(a, 0, sizeof(*a));
}

double gnn_npy_get_f64(const void *data, enum gnn_npy_type t, uint64_t i)
{
	const char *p = (const char *)data + i * types[t].size;

	switch (t) {
#define GET(T) { T x; memcpy(&x, p, sizeof(x)); return (double)x; }
	case GNN_NPY_BOOL: return *p != 0;
	case GNN_NPY_U8: GET(uint8_t)
	case GNN_NPY_I8: GET(int8_t)
	case GNN_NPY_U16: GET(uint16_t)
	case GNN_NPY_I16: GET(int16_t)
	case GNN_NPY_U32: GET(uint32_t)
	case GNN_NPY_I32: GET(int32_t)
	case GNN_NPY_U64: GET(uint64_t)
	case GNN_NPY_I64: GET(int64_t)
	case GNN_NPY_F32: GET(float)
	case GNN_NPY_F64: GET(double)
#undef GET
	case GNN_NPY_F16: {
		uint16_t x;
		float f;

		memcpy(&x, p, 2);
		gnn_f16_to_f32(&x, 1, &f);
		return f;
	}
	}
	return NAN;
}

bool gnn_npy_get_i64(const void *data, enum gnn_npy_type t, uint64_t i, int64_t *out)
{
	const char *p = (const char *)data + i * types[t].size;
	double x;

	if (t == GNN_NPY_I64) {
		memcpy(out, p, 8);
		return true;
	}
	if (t == GNN_NPY_U64) {
		uint64_t u;

		memcpy(&u, p, 8);
		*out = (int64_t)u;
		return u <= INT64_MAX;
	}
	x = gnn_npy_get_f64(data, t, i);
	if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0) || x != floor(x))
		return false;
	*out = (int64_t)x;
	return true;
}

void gnn_npy_to_f32(const void *in, enum gnn_npy_type t, size_t n, float *out)
{
	switch (t) {
	case GNN_NPY_F32:
		memcpy(out, in, n * sizeof(float));
		return;
	case GNN_NPY_F16:
		gnn_f16_to_f32(in, n, out);
		return;
	default:
		for (size_t i = 0; i < n; i++)
			out[i] = (float)gnn_npy_get_f64(in, t, i);
	}
}

enum gnn_npy_type gnn_npy_from_dtype(enum gnn_dtype dt)
{
	switch (dt) {
	case GNN_DT_U8: return GNN_NPY_U8;
	case GNN_DT_I32: return GNN_NPY_I32;
	case GNN_DT_I64: return GNN_NPY_I64;
	case GNN_DT_F32: return GNN_NPY_F32;
	case GNN_DT_F16: return GNN_NPY_F16;
	}
	return 0;
}

int gnn_npy_header_write(enum gnn_npy_type t, uint64_t rows, uint64_t cols, void *buf, size_t cap, size_t *len)
{
	char dict[160];
	size_t n, total;
	unsigned char *b = buf;

	if ((unsigned)t >= NTYPES || types[t].descr == NULL)
		return GNN_EINVAL;
	if (cols == 0)
		n = (size_t)snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRIu64
				     ",), }", types[t].descr, rows);
	else
		n = (size_t)snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRIu64
				     ", %" PRIu64 "), }", types[t].descr, rows, cols);
	total = (10 + n + 1 + 63) / 64 * 64; /* the dict, spaces, '\n': data on a 64-byte boundary */
	if (total > cap)
		return GNN_EINVAL;
	memcpy(b, magic, 6);
	b[6] = 1;
	b[7] = 0;
	b[8] = (unsigned char)((total - 10) & 0xff);
	b[9] = (unsigned char)((total - 10) >> 8);
	memcpy(b + 10, dict, n);
	memset(b + 10 + n, ' ', total - 10 - n - 1);
	b[total - 1] = '\n';
	*len = total;
	return GNN_OK;
}
