/* Unit tests of libcommon: err, opt, arr, json, part (meta.json), sys,
 * log's rate limits. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nng/nng.h>
#include <zlib.h>

#include "arr.h"
#include "npy.h"
#include "buf.h"
#include "ckptname.h"
#include "embfile.h"
#include "err.h"
#include "fanouts.h"
#include "hash.h"
#include "json.h"
#include "log.h"
#include "opt.h"
#include "part.h"
#include "peers.h"
#include "proto.h"
#include "replica.h"
#include "sys.h"
#include "testlib.h"

static char tmpdir[] = "/tmp/gnn-unit.XXXXXX";

static const char *tmp_path(const char *name)
{
	static char buf[8][256];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

/* A buffer growing inside an nng message, as the servers build replies:
 * a FEAT_RESP gathered in place, read back from the message. */
static uint8_t *grow_in_msg(void *ctx, size_t cap)
{
	nng_msg **m = ctx;

	return nng_msg_realloc(*m, cap) == 0 ? nng_msg_body(*m) : NULL;
}

static void test_wbuf_in_msg(void)
{
	nng_msg *m;
	struct gnn_wbuf w;
	struct gnn_hdr h;
	struct gnn_feat_resp r;
	const void *pl;
	float *rows;
	const float *got;

	if (!CHECK(nng_msg_alloc(&m, 0) == 0))
		return;
	gnn_wbuf_init_with(&w, grow_in_msg, &m);
	/* 3 rows of 7,000 floats: grown several times past the first 256 bytes */
	CHECK(gnn_encode_feat_resp_in_place(&w, 9, GNN_DT_F32, 3, 7000, (void **)&rows) == GNN_OK && rows != NULL);
	for (size_t i = 0; rows != NULL && i < 3 * 7000; i++)
		rows[i] = (float)i;
	CHECK(!w.failed && w.buf == nng_msg_body(m));
	CHECK(nng_msg_realloc(m, w.len) == 0 && nng_msg_len(m) == 28 + 16 + 3 * 7000 * 4);
	CHECK(gnn_proto_decode_hdr(nng_msg_body(m), nng_msg_len(m), &h, &pl) == GNN_OK && h.req_id == 9 &&
	      h.type == GNN_MSG_FEAT_RESP);
	if (CHECK(gnn_decode_feat_resp(pl, h.len, &r) == GNN_OK))
		CHECK(r.n == 3 && r.dim == 7000 && r.dtype == GNN_DT_F32 && (got = r.rows)[0] == 0.0f &&
		      got[3 * 7000 - 1] == 20999.0f);
	gnn_proto_release(r.owned);
	gnn_wbuf_free(&w);   /* forgets: the message is still ours */
	CHECK(w.buf == NULL && w.len == 0);
	nng_msg_free(m);
}

static void test_strerror(void)
{
	CHECK(strcmp(gnn_strerror(GNN_OK), "success") == 0);
	CHECK(strcmp(gnn_strerror(GNN_ECHECKSUM), "checksum mismatch") == 0);
	CHECK(strcmp(gnn_strerror(-1), "unknown error") == 0);
	CHECK(strcmp(gnn_strerror(GNN_ERR_COUNT), "unknown error") == 0);
	for (int e = 0; e < GNN_ERR_COUNT; e++)
		CHECK(strcmp(gnn_strerror(e), "unknown error") != 0);
}

/* ---- opt ---- */
static int64_t o_parts;
static double o_lr;
static const char *o_method, *o_list;
static bool o_force;
static const struct gnn_opt opts[] = {
	{ "parts", GNN_OPT_INT, &o_parts, "2", 1, 64, NULL, "partitions" },
	{ "learning-rate", GNN_OPT_FLOAT, &o_lr, "0.01", 1e-6, 1, NULL, "step size" },
	{ "method", GNN_OPT_STR, &o_method, "metis", 0, 0, "metis|random", "method" },
	{ "peers", GNN_OPT_LIST, &o_list, NULL, 0, 0, NULL, "peers" },
	{ "force", GNN_OPT_BOOL, &o_force, NULL, 0, 0, NULL, "force" },
	{ NULL },
};

static int parse(int argc, char **argv)
{
	return gnn_opt_parse("t", "test", opts, argc, argv);
}

static void test_opt_defaults_flags_env(void)
{
	char *a0[] = { "t" };
	char *a1[] = { "t", "--parts", "5", "--learning-rate=0.5", "--method", "random", "--force",
		       "--peers", "a,b" };
	char *a2[] = { "t", "--parts", "7" };

	unsetenv("GNN_PARTS");
	CHECK(parse(1, a0) == GNN_OK);
	CHECK(o_parts == 2 && o_lr == 0.01 && strcmp(o_method, "metis") == 0 && !o_force && o_list == NULL);
	CHECK(parse(9, a1) == GNN_OK);
	CHECK(o_parts == 5 && o_lr == 0.5 && strcmp(o_method, "random") == 0 && o_force &&
	      strcmp(o_list, "a,b") == 0);
	/* Environment beats the default, the flag beats the environment. */
	setenv("GNN_PARTS", "9", 1);
	setenv("GNN_LEARNING_RATE", "0.25", 1);
	setenv("GNN_FORCE", "yes", 1);
	CHECK(parse(1, a0) == GNN_OK);
	CHECK(o_parts == 9 && o_lr == 0.25 && o_force);
	CHECK(parse(3, a2) == GNN_OK);
	CHECK(o_parts == 7);
	unsetenv("GNN_PARTS");
	unsetenv("GNN_LEARNING_RATE");
	unsetenv("GNN_FORCE");
}

static void test_opt_rejects(void)
{
	char *unknown[] = { "t", "--nope" };
	char *positional[] = { "t", "extra" };
	char *range[] = { "t", "--parts", "65" };
	char *notint[] = { "t", "--parts", "3x" };
	char *nan[] = { "t", "--learning-rate", "nan" };
	char *choice[] = { "t", "--method", "kmeans" };
	char *missing[] = { "t", "--parts" };
	char *empty[] = { "t", "--peers=" };

	gnn_log_set_level(GNN_LOG_ERROR + 1);  /* quiet: these log errors on purpose */
	CHECK(parse(2, unknown) == GNN_EINVAL);
	CHECK(parse(2, positional) == GNN_EINVAL);
	CHECK(parse(3, range) == GNN_ERANGE);
	CHECK(parse(3, notint) == GNN_EINVAL);
	CHECK(parse(3, nan) == GNN_EINVAL);
	CHECK(parse(3, choice) == GNN_EINVAL);
	CHECK(parse(2, missing) == GNN_EINVAL);
	CHECK(parse(2, empty) == GNN_EINVAL);
	setenv("GNN_PARTS", "0", 1);
	CHECK(parse(1, unknown) == GNN_ERANGE);
	setenv("GNN_PARTS", "two", 1);
	CHECK(parse(1, unknown) == GNN_EINVAL);
	unsetenv("GNN_PARTS");
	gnn_log_set_level(GNN_LOG_INFO);
}

static void test_opt_help(void)
{
	char *help[] = { "t", "--parts", "3", "--help" };
	int saved = dup(STDOUT_FILENO), fd = open(tmp_path("help.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char text[2048] = "";
	FILE *f;
	int rc;

	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	rc = parse(4, help);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	CHECK(rc == GNN_EHELP);
	f = fopen(tmp_path("help.txt"), "r");
	if (!CHECK(f != NULL))
		return;
	text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
	fclose(f);
	CHECK(strstr(text, "--parts N  [GNN_PARTS]") != NULL);
	CHECK(strstr(text, "--learning-rate X  [GNN_LEARNING_RATE]") != NULL);
	CHECK(strstr(text, "(default metis)") != NULL);
	CHECK(strstr(text, "metis|random") != NULL);
}

/* ---- arr ---- */
static void test_arr_roundtrip(void)
{
	float data[3 * 4];
	struct gnn_arr_info info;
	struct gnn_arr a;

	for (int i = 0; i < 12; i++)
		data[i] = (float)i * 0.5f;
	CHECK(gnn_arr_write(tmp_path("a.arr"), GNN_DT_F32, 3, 4, data, &info) == GNN_OK);
	CHECK(info.rows == 3 && info.cols == 4 && info.file_bytes == 64 + 48);
	CHECK(access(tmp_path("a.arr.tmp"), F_OK) != 0);  /* renamed into place */
	if (!CHECK(gnn_arr_open(tmp_path("a.arr"), GNN_DT_F32, GNN_ARR_VERIFY, &a) == GNN_OK))
		return;
	CHECK(a.info.rows == 3 && a.info.cols == 4 && a.info.data_crc32 == info.data_crc32);
	CHECK(memcmp(a.data, data, sizeof(data)) == 0);
	CHECK((uintptr_t)a.data % 64 == 0);  /* mmap-able: data page-offset 64 */
	gnn_arr_close(&a);
	/* Empty arrays are valid. */
	CHECK(gnn_arr_write(tmp_path("e.arr"), GNN_DT_I64, 0, 1, NULL, NULL) == GNN_OK);
	CHECK(gnn_arr_open(tmp_path("e.arr"), GNN_DT_I64, GNN_ARR_VERIFY, &a) == GNN_OK && a.info.rows == 0);
	gnn_arr_close(&a);
}

/* Half precision: every half survives half -> float -> half; floats
 * round to nearest, ties to even; out of range, infinity; NaN stays NaN. */
static void test_f16(void)
{
	static const struct { float in; uint16_t want; } cases[] = {
		{ 0.0f, 0x0000 }, { -0.0f, 0x8000 }, { 1.0f, 0x3c00 }, { -2.0f, 0xc000 },
		{ 65504.0f, 0x7bff },                        /* the largest half */
		{ 65520.0f, 0x7c00 },                        /* halfway to 65536: rounds to infinity */
		{ 1e6f, 0x7c00 }, { -1e6f, 0xfc00 },
		{ 1.0f + 0x1p-11f, 0x3c00 },                 /* a tie: to the even mantissa */
		{ 1.0f + 3 * 0x1p-11f, 0x3c02 },             /* a tie: up to the even one */
		{ 1.0f + 0x1p-11f + 0x1p-20f, 0x3c01 },      /* just over a tie */
		{ 0x1p-24f, 0x0001 }, { 0x1p-25f, 0x0000 },  /* the smallest subnormal; half of it ties to 0 */
		{ 0x1.8p-24f, 0x0002 },                      /* 1.5 subnormal steps: to even */
		{ 0x1p-14f, 0x0400 },                        /* the smallest normal */
		{ 0.1f, 0x2e66 }, { 3.14159265f, 0x4248 },
	};
	uint16_t h[65536], back[65536];
	float *f = malloc(65536 * sizeof(float));
	size_t bad = 0;

	if (!CHECK(f != NULL))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gnn_f32_to_f16(&cases[i].in, 1, h);
		if (!CHECK(h[0] == cases[i].want))
			fprintf(stderr, "  %a -> %04x, want %04x\n", (double)cases[i].in, h[0], cases[i].want);
	}
	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	gnn_f16_to_f32(h, 65536, f);
	gnn_f32_to_f16(f, 65536, back);
	/* one at a time (the bit arithmetic) gives the bulk's bits (F16C where the CPU has it) */
	for (uint32_t i = 0; i < 65536; i++) {
		float one;

		gnn_f16_to_f32(&h[i], 1, &one);
		bad += memcmp(&one, &f[i], 4) != 0;
	}
	for (uint32_t i = 0; i < 65536; i++) {
		bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) != 0;

		bad += nan ? !(f[i] != f[i] && (back[i] & 0x7c00) == 0x7c00 && (back[i] & 0x3ff) != 0) : back[i] != i;
	}
	CHECK(bad == 0);
	CHECK(f[0x3c00] == 1.0f && f[0x0001] == 0x1p-24f && f[0x7bff] == 65504.0f && f[0xfc00] == -INFINITY);
	float in = NAN;
	gnn_f32_to_f16(&in, 1, h);
	CHECK((h[0] & 0x7c00) == 0x7c00 && (h[0] & 0x3ff) != 0);
	CHECK(gnn_dtype_parse("f16") == GNN_DT_F16 && gnn_dtype_size(GNN_DT_F16) == 2 && gnn_dtype_parse("f8") == 0);
	free(f);
}

/* Copies a.arr to b.arr with one byte changed (or the file cut to len). */
static void damage(long offset, int xor, long len)
{
	FILE *in = fopen(tmp_path("a.arr"), "rb"), *out = fopen(tmp_path("b.arr"), "wb");
	int c;

	for (long i = 0; (c = fgetc(in)) != EOF && (len < 0 || i < len); i++)
		fputc(i == offset ? c ^ xor : c, out);
	fclose(in);
	fclose(out);
}

static void test_arr_rejects(void)
{
	struct gnn_arr a;
	uint32_t v2 = 2;

	gnn_log_set_level(GNN_LOG_ERROR + 1);
	CHECK(gnn_arr_open(tmp_path("missing.arr"), 0, 0, &a) == GNN_ENOENT);
	CHECK(gnn_arr_open(tmp_path("a.arr"), GNN_DT_I32, 0, &a) == GNN_EFORMAT);  /* wrong dtype */
	damage(0, 0x20, -1);  /* magic */
	CHECK(gnn_arr_open(tmp_path("b.arr"), 0, 0, &a) == GNN_EFORMAT);
	damage(20, 0x01, -1);  /* rows: header CRC catches it */
	CHECK(gnn_arr_open(tmp_path("b.arr"), 0, 0, &a) == GNN_ECHECKSUM);
	damage(70, 0x01, -1);  /* data: only a verifying open reads it */
	CHECK(gnn_arr_open(tmp_path("b.arr"), 0, 0, &a) == GNN_OK);
	gnn_arr_close(&a);
	CHECK(gnn_arr_open(tmp_path("b.arr"), 0, GNN_ARR_VERIFY, &a) == GNN_ECHECKSUM);
	damage(-1, 0, 100);  /* truncated */
	CHECK(gnn_arr_open(tmp_path("b.arr"), 0, 0, &a) == GNN_EFORMAT);
	damage(-1, 0, 10);  /* shorter than a header */
	CHECK(gnn_arr_open(tmp_path("b.arr"), 0, 0, &a) == GNN_EFORMAT);
	/* A future version with a valid header CRC is refused as a version. */
	{
		FILE *f;
		unsigned char h[64];
		uint32_t crc;

		damage(-1, 0, -1);
		f = fopen(tmp_path("b.arr"), "r+b");
		CHECK(fread(h, 1, 64, f) == 64);
		memcpy(h + 8, &v2, 4);
		crc = (uint32_t)crc32(0, h, 44);  /* as arr.c computes it */
		memcpy(h + 44, &crc, 4);
		fseek(f, 0, SEEK_SET);
		fwrite(h, 1, 64, f);
		fclose(f);
		CHECK(gnn_arr_open(tmp_path("b.arr"), 0, 0, &a) == GNN_EVERSION);
	}
	gnn_log_set_level(GNN_LOG_INFO);
}

static void test_arr_writer_abort(void)
{
	struct gnn_arr_writer *w;
	int64_t x[4] = { 1, 2, 3, 4 };

	CHECK(gnn_arr_writer_open(tmp_path("w.arr"), GNN_DT_I64, 2, &w) == GNN_OK);
	CHECK(gnn_arr_writer_append(w, x, 2) == GNN_OK);
	CHECK(access(tmp_path("w.arr.tmp"), F_OK) == 0);
	gnn_arr_writer_abort(w);
	CHECK(access(tmp_path("w.arr.tmp"), F_OK) != 0 && access(tmp_path("w.arr"), F_OK) != 0);
	gnn_log_set_level(GNN_LOG_ERROR + 1);
	CHECK(gnn_arr_writer_open(tmp_path("nodir/w.arr"), GNN_DT_I64, 2, &w) == GNN_EIO);
	gnn_log_set_level(GNN_LOG_INFO);
}

/* ---- npy ---- */
/* A header NumPy 1.24 wrote (np.save of a (3, 2) float32 array), our
 * writer's round trip, and the refusals. */
static void test_npy(void)
{
	static const char numpy_hdr[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, "
					"'shape': (3, 2), }                                            "
					"              \n";
	unsigned char buf[256];
	struct gnn_npy_header h;
	char why[160];
	size_t len;
	float x[6] = { 1, 2, 3, 4, 5, 6 }, y[6];
	struct gnn_npy a;
	FILE *f;

	CHECK(sizeof(numpy_hdr) - 1 == 128);
	CHECK(gnn_npy_header_need(numpy_hdr, 12) == 128);
	CHECK(gnn_npy_parse(numpy_hdr, 128, &h, why, sizeof(why)) == GNN_OK);
	CHECK(h.type == GNN_NPY_F32 && h.ndim == 2 && h.rows == 3 && h.cols == 2 && h.data_off == 128);
	CHECK(gnn_npy_parse(numpy_hdr, 100, &h, why, sizeof(why)) == GNN_EFORMAT && strstr(why, "truncated"));

	CHECK(gnn_npy_header_write(GNN_NPY_I64, 7, 0, buf, sizeof(buf), &len) == GNN_OK && len % 64 == 0);
	CHECK(gnn_npy_parse(buf, len, &h, why, sizeof(why)) == GNN_OK);
	CHECK(h.type == GNN_NPY_I64 && h.ndim == 1 && h.rows == 7 && h.cols == 1 && h.count == 7);

	CHECK(gnn_npy_header_write(GNN_NPY_F32, 3, 2, buf, sizeof(buf), &len) == GNN_OK);
	if (!CHECK((f = fopen(tmp_path("a.npy"), "wb")) != NULL))
		return;
	fwrite(buf, 1, len, f);
	fwrite(x, sizeof(float), 6, f);
	fclose(f);
	if (!CHECK(gnn_npy_open(tmp_path("a.npy"), &a) == GNN_OK))
		return;
	gnn_npy_to_f32(a.data, a.h.type, 6, y);
	CHECK(memcmp(x, y, sizeof(x)) == 0 && gnn_npy_get_f64(a.data, a.h.type, 5) == 6.0);
	gnn_npy_close(&a);

	gnn_log_set_level(GNN_LOG_ERROR + 1);
	if (CHECK((f = fopen(tmp_path("a.npy"), "wb")) != NULL)) {  /* one float short */
		fwrite(buf, 1, len, f);
		fwrite(x, sizeof(float), 5, f);
		fclose(f);
		CHECK(gnn_npy_open(tmp_path("a.npy"), &a) == GNN_EFORMAT);
	}
	gnn_log_set_level(GNN_LOG_INFO);
	static const char *const bad[] = {
		"{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
		"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 1), }",
		"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (3,), }",
		"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
		"{'fortran_order': False, 'shape': (3,), }",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(bad[i]);

		memcpy(buf, "\x93NUMPY\x01\x00", 8);
		buf[8] = (unsigned char)n;
		buf[9] = 0;
		memcpy(buf + 10, bad[i], n);
		CHECK(gnn_npy_parse(buf, 10 + n, &h, why, sizeof(why)) == GNN_EFORMAT);
	}
	int64_t v;
	double d[3] = { 2.0, 2.5, NAN };
	CHECK(gnn_npy_get_i64(d, GNN_NPY_F64, 0, &v) && v == 2);
	CHECK(!gnn_npy_get_i64(d, GNN_NPY_F64, 1, &v) && !gnn_npy_get_i64(d, GNN_NPY_F64, 2, &v));
}

/* ---- json ---- */
static void test_json(void)
{
	json_t *j = json_pack("{s:i, s:s, s:[i]}", "n", 5, "s", "x", "a", 1), *k = NULL, *arr;
	const char *s;
	int64_t n;
	FILE *f;

	CHECK(gnn_json_save_atomic(tmp_path("j.json"), j) == GNN_OK);
	CHECK(access(tmp_path("j.json.tmp"), F_OK) != 0);
	CHECK(gnn_json_load(tmp_path("j.json"), &k) == GNN_OK);
	CHECK(json_equal(j, k));
	CHECK(gnn_json_get_int(k, "t", "n", 0, 10, &n) == GNN_OK && n == 5);
	CHECK(gnn_json_get_str(k, "t", "s", &s) == GNN_OK && strcmp(s, "x") == 0);
	CHECK(gnn_json_get_array(k, "t", "a", &arr) == GNN_OK && json_array_size(arr) == 1);
	gnn_log_set_level(GNN_LOG_ERROR + 1);
	CHECK(gnn_json_get_int(k, "t", "n", 6, 10, &n) == GNN_ERANGE);
	CHECK(gnn_json_get_int(k, "t", "s", 0, 10, &n) == GNN_EFORMAT);
	CHECK(gnn_json_get_int(k, "t", "zz", 0, 10, &n) == GNN_EFORMAT);
	CHECK(gnn_json_get_str(k, "t", "n", &s) == GNN_EFORMAT);
	CHECK(gnn_json_load(tmp_path("none.json"), &k) == GNN_ENOENT);
	f = fopen(tmp_path("bad.json"), "w");
	fputs("{\"a\": 1,\n \"a\": 2}", f);  /* duplicate key */
	fclose(f);
	CHECK(gnn_json_load(tmp_path("bad.json"), &k) == GNN_EFORMAT);
	CHECK(gnn_json_save_atomic(tmp_path("nodir/x.json"), j) == GNN_EIO);
	gnn_log_set_level(GNN_LOG_INFO);
	json_decref(j);
	json_decref(k);
}

/* Checksummed JSON: reals survive the canonical re-dump, any changed
 * value or a missing checksum is refused. */
static void test_json_checked(void)
{
	json_t *j = json_pack("{s:f, s:f, s:i, s:s}", "acc", 0.1, "tiny", 1e-300, "epoch", 60, "id", "a\u00e9"), *k = NULL;
	FILE *f;
	char text[512];
	size_t n;

	CHECK(gnn_json_save_checked(tmp_path("c.json"), j) == GNN_OK);
	if (CHECK(gnn_json_load_checked(tmp_path("c.json"), &k) == GNN_OK))
		CHECK(json_equal(j, k));   /* and the crc32 key is gone */
	json_decref(k);
	k = NULL;
	f = fopen(tmp_path("c.json"), "r");
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	gnn_log_set_level(GNN_LOG_ERROR + 1);
	if (CHECK(strstr(text, "\"epoch\": 60") != NULL)) {
		strstr(text, "\"epoch\": 60")[10] = '7';
		f = fopen(tmp_path("c.json"), "w");
		fputs(text, f);
		fclose(f);
		CHECK(gnn_json_load(tmp_path("c.json"), &k) == GNN_OK);   /* parses... */
		json_decref(k);
		k = NULL;
		CHECK(gnn_json_load_checked(tmp_path("c.json"), &k) == GNN_EFORMAT && k == NULL);   /* ...refused */
	}
	CHECK(gnn_json_save_atomic(tmp_path("c.json"), j) == GNN_OK);
	CHECK(gnn_json_load_checked(tmp_path("c.json"), &k) == GNN_EFORMAT);
	gnn_log_set_level(GNN_LOG_INFO);
	json_decref(j);
}

/* ---- part: meta.json validation and owner lookup ---- */
static int write_meta(const char *text)
{
	FILE *f;

	gnn_mkdir_p(tmp_path("p"));
	f = fopen(tmp_path("p/meta.json"), "w");
	if (f == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	return 0;
}

#define META_HEAD "{\"format\": \"gnn-dist-partitions\", \"format_version\": 1, \"num_nodes\": 10, " \
		  "\"num_edges\": 4, \"feat_dim\": 3, \"num_classes\": 2, \"symmetric\": true, "

static void test_meta(void)
{
	struct gnn_meta m;
	int32_t want[] = { -1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, -1 };

	write_meta(META_HEAD "\"num_parts\": 3, \"parts\": [{\"node_start\": 0, \"node_end\": 3}, "
			     "{\"node_start\": 3, \"node_end\": 9}, {\"node_start\": 9, \"node_end\": 10}]}");
	if (!CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_OK))
		return;
	CHECK(m.layout.num_parts == 3 && m.offsets[0] == 0 && m.offsets[1] == 3 && m.offsets[3] == 10);
	/* the layout borrows the meta's offsets; meta.json holds no graph_id */
	CHECK(m.layout.offsets == m.offsets && m.layout.num_nodes == 10 && m.layout.graph_id == 0);
	for (int64_t g = -1; g <= 10; g++)
		CHECK(gnn_layout_owner(&m.layout, g) == want[g + 1]);
	gnn_meta_free(&m);

	gnn_log_set_level(GNN_LOG_ERROR + 1);
	write_meta(META_HEAD "\"num_parts\": 2, \"parts\": [{\"node_start\": 0, \"node_end\": 4}, "
			     "{\"node_start\": 5, \"node_end\": 10}]}");  /* gap */
	CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_EFORMAT);
	write_meta(META_HEAD "\"num_parts\": 2, \"parts\": [{\"node_start\": 0, \"node_end\": 4}]}");
	CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_EFORMAT);  /* count mismatch */
	write_meta(META_HEAD "\"num_parts\": 1, \"parts\": [{\"node_start\": 0, \"node_end\": 9}]}");
	CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_EFORMAT);  /* does not cover */
	write_meta("{\"format\": \"gnn-dist-partitions\", \"format_version\": 3}");
	CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_EVERSION);
	write_meta("{\"format\": \"something-else\"}");
	CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_EFORMAT);
	write_meta("[1, 2");
	CHECK(gnn_meta_load(tmp_path("p"), &m) == GNN_EFORMAT);
	gnn_log_set_level(GNN_LOG_INFO);
}

/* A snapshot record round-trips; a torn one (being written), a flipped
 * byte or another file fails to decode; a shared array's rows written at
 * their file row give the CRC-32 of their bytes. */
static void test_emb_snap_record(void)
{
	struct gnn_emb_snap s = { .gen = 0x1122334455667788ull, .version = 99, .part = 3, .n = 2 }, got;
	static uint8_t buf[GNN_EMB_SNAP_BYTES];
	const float rows[6] = { 1, 2, 3, 4, 5, 6 };
	struct gnn_arr arr = { 0 };
	char path[600], name[700];
	uint32_t crc = 0;
	size_t len;
	int fd;

	s.e[0] = (struct gnn_emb_snap_entry){ .type = 1, .array = GNN_EMB_STATE2, .row = 40, .rows = 7, .crc = 0xdeadbeef };
	s.e[1] = (struct gnn_emb_snap_entry){ .type = 2, .array = GNN_EMB_STEPS, .row = 0, .rows = 5, .err = 28 };
	len = gnn_emb_snap_encode(&s, buf);
	CHECK(len == 36 + 2 * 32);
	CHECK(gnn_emb_snap_decode(buf, len, &got) == GNN_OK && got.gen == s.gen && got.version == 99 && got.part == 3 &&
	      got.n == 2 && memcmp(&got.e[0], &s.e[0], sizeof(s.e[0])) == 0 && got.e[1].err == 28 && got.e[1].rows == 5);
	CHECK(gnn_emb_snap_decode(buf, len - 1, &got) == GNN_EFORMAT);   /* torn */
	CHECK(gnn_emb_snap_decode(buf, 0, &got) == GNN_EFORMAT);         /* not yet written */
	buf[50] ^= 1;
	CHECK(gnn_emb_snap_decode(buf, len, &got) == GNN_EFORMAT);       /* damaged */
	CHECK(gnn_emb_file(name, sizeof(name), "/ck/.tmp-epoch-1", "author", GNN_EMB_STATE1) == GNN_OK &&
	      strcmp(name, "/ck/.tmp-epoch-1/emb-author-state1.arr") == 0);
	CHECK(gnn_emb_snap_file(name, sizeof(name), "/ck", 7) == GNN_OK && strcmp(name, "/ck/emb-part-0007.snap") == 0);
	CHECK(gnn_emb_file(name, 10, "/ck", "author", GNN_EMB_ROWS) == GNN_ERANGE);
	/* rows 1..2 of a 4 x 3 array, by a writer of those rows */
	snprintf(path, sizeof(path), "%s/shared.arr", tmpdir);
	snprintf(name, sizeof(name), "%s.tmp", path);
	if (!CHECK(gnn_arr_shared_create(path, GNN_DT_F32, 4, 3) == GNN_OK) || !CHECK((fd = open(name, O_WRONLY)) >= 0))
		return;
	CHECK(gnn_arr_shared_write(fd, 1, 2, 12, rows, &crc) == 0 && crc == (uint32_t)crc32(0, (const void *)rows, 24));
	close(fd);
	crc = (uint32_t)crc32_combine(crc32_combine(crc32(0, (const uint8_t[12]){ 0 }, 12), crc, 24),
				      crc32(0, (const uint8_t[12]){ 0 }, 12), 12);
	if (CHECK(gnn_arr_shared_seal(path, GNN_DT_F32, 4, 3, crc) == GNN_OK) &&
	    CHECK(gnn_arr_open(path, GNN_DT_F32, GNN_ARR_VERIFY, &arr) == GNN_OK))
		CHECK(memcmp((const float *)arr.data + 3, rows, 24) == 0);
	gnn_arr_close(&arr);
}

static void test_sys(void)
{
	CHECK(gnn_mkdir_p(tmp_path("d1/d2/d3")) == GNN_OK);
	CHECK(gnn_mkdir_p(tmp_path("d1/d2/d3")) == GNN_OK);  /* idempotent */
	CHECK(gnn_arr_write(tmp_path("d1/d2/d3/x.arr"), GNN_DT_U8, 1, 1, "x", NULL) == GNN_OK);
	CHECK(gnn_rm_rf(tmp_path("d1")) == GNN_OK);
	CHECK(access(tmp_path("d1"), F_OK) != 0);
	CHECK(gnn_rm_rf(tmp_path("d1")) == GNN_OK);  /* missing is fine */
	CHECK(gnn_peak_rss_bytes() > 0 && gnn_rss_bytes() > 0);
	CHECK(!gnn_stop_requested());
	CHECK(gnn_signals_install() == GNN_OK);
	raise(SIGTERM);
	CHECK(gnn_stop_requested());
}

static void test_peers(void)
{
	char **u = NULL;
	size_t n = 0;

	if (CHECK(gnn_peers_parse("peer", " tcp://a:1 ,tcp://b:2", NULL, 0, 8, &u, &n) == GNN_OK) && CHECK(n == 2))
		CHECK(strcmp(u[0], "tcp://a:1") == 0 && strcmp(u[1], "tcp://b:2") == 0);
	gnn_peers_free(u, n);
	if (CHECK(gnn_peers_parse("peer", NULL, "tcp://t-%d.t:7%d", 3, 8, &u, &n) == GNN_EINVAL))
		CHECK(u == NULL && n == 0);
	if (CHECK(gnn_peers_parse("peer", NULL, "tcp://t-%d.t:7200", 3, 8, &u, &n) == GNN_OK) && CHECK(n == 3))
		CHECK(strcmp(u[2], "tcp://t-2.t:7200") == 0);
	gnn_peers_free(u, n);
	CHECK(gnn_peers_parse("peer", "a,,b", NULL, 0, 8, &u, &n) == GNN_EINVAL);
	CHECK(gnn_peers_parse("peer", "a,b,c", NULL, 0, 2, &u, &n) == GNN_EINVAL);
	CHECK(gnn_peers_parse("peer", NULL, "x%d", 0, 8, &u, &n) == GNN_EINVAL);
	CHECK(gnn_peers_parse("peer", NULL, NULL, 0, 8, &u, &n) == GNN_EINVAL);
	CHECK(gnn_peers_parse("peer", "a", "b%d", 1, 8, &u, &n) == GNN_EINVAL);
}

/* --- log rate limits ------------------------------------------------------- */

/* One call site each, as the limit is per site. */
static void flood_site(int i)
{
	GNN_WARN_LIMITED("test_flood", "i=%d", i);
}

static void quiet_site(int i)
{
	GNN_WARN_LIMITED("test_quiet", "i=%d", i);
}

static void *thread_site(void *arg)
{
	for (int i = 0; i < 2000; i++)
		GNN_ERROR_LIMITED("test_threads", "t=%d i=%d", *(int *)arg, i);
	return NULL;
}

/* Sends stderr (the log) to a file while on; returns the saved stderr. */
static int capture_stderr(const char *path)
{
	int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (saved < 0 || fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		if (fd >= 0)
			close(fd);
		if (saved >= 0)
			close(saved);
		return -1;
	}
	close(fd);
	return saved;
}

/* Lines of path that contain all of a and b; sums the N of "suppressed=N"
 * on them into *supp (when not NULL). */
static int count_lines(const char *path, const char *a, const char *b, unsigned long long *supp)
{
	char line[4200];
	const char *p;
	FILE *f = fopen(path, "r");
	int n = 0;

	if (supp != NULL)
		*supp = 0;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, a) == NULL || (b != NULL && strstr(line, b) == NULL))
			continue;
		n++;
		if (supp != NULL && (p = strstr(line, "suppressed=")) != NULL)
			*supp += strtoull(p + strlen("suppressed="), NULL, 10);
	}
	fclose(f);
	return n;
}

static void test_fanouts(void)
{
	struct gnn_fanouts f;
	char why[160], text[GNN_PROTO_MAX_LAYERS * 12];

	CHECK(gnn_fanouts_parse("15,10,-1", -1, GNN_PROTO_MAX_FANOUT, &f, why, sizeof(why)) == GNN_OK && f.n == 3 &&
	      f.v[0] == 15 && f.v[1] == 10 && f.v[2] == -1);
	CHECK(gnn_fanouts_format(&f, text, sizeof(text)) == GNN_OK && strcmp(text, "15,10,-1") == 0);
	CHECK(gnn_fanouts_format(&f, text, 5) == GNN_ERANGE);
	CHECK(gnn_fanouts_parse("0", -1, GNN_PROTO_MAX_FANOUT, &f, why, sizeof(why)) == GNN_OK && f.n == 1 && f.v[0] == 0);
	CHECK(gnn_fanouts_parse("1,2,3,4,5,6,7,8", -1, 4096, &f, why, sizeof(why)) == GNN_OK && f.n == 8);
	CHECK(gnn_fanouts_parse("1,2,3,4,5,6,7,8,9", -1, 4096, &f, why, sizeof(why)) == GNN_EINVAL &&
	      strstr(why, "more than 8 layers") != NULL);
	const char *bad[] = { NULL, "", ",", "3,", ",3", "-2", "4097", "1,,2", "a", "2x", "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (!CHECK(gnn_fanouts_parse(bad[i], -1, 4096, &f, why, sizeof(why)) == GNN_EINVAL && why[0] != '\0'))
			printf("# accepted or no reason: \"%s\"\n", bad[i] ? bad[i] : "(null)");
	}
	CHECK(gnn_fanouts_parse("-1", 0, 1000, &f, why, sizeof(why)) == GNN_EINVAL && strstr(why, "0..1000") != NULL);
}

/* Routing node IDs to partitions: every boundary, empty partitions, and
 * IDs outside the graph. */
static void test_owner_of(void)
{
	const int64_t off[] = { 0, 10, 10, 25, 26 };  /* partition 1 is empty */

	CHECK(gnn_owner_of(off, 4, 0) == 0 && gnn_owner_of(off, 4, 9) == 0);
	CHECK(gnn_owner_of(off, 4, 10) == 2 && gnn_owner_of(off, 4, 24) == 2);
	CHECK(gnn_owner_of(off, 4, 25) == 3);
	CHECK(gnn_owner_of(off, 4, 26) == -1 && gnn_owner_of(off, 4, -1) == -1 && gnn_owner_of(off, 0, 0) == -1);
}

/* The hash the whole system's determinism rests on: splitmix64's published
 * outputs (seed 1234567, Vigna's reference implementation). */
static void test_hash(void)
{
	uint64_t s = 1234567;

	CHECK(gnn_splitmix64(&s) == 6457827717110365317ull);
	CHECK(gnn_splitmix64(&s) == 3203168211198807973ull);
	CHECK(gnn_draw64(1234567, 2) == 9817491932198370423ull);
	CHECK(gnn_unit64(UINT64_MAX) < 1.0 && gnn_unit64(0) == 0.0);
}

/* A partition's replicas: the fewest in flight first, the avoided and the
 * tried after the others; the first attempt's timeout follows the slowest
 * recent answer, within its floor and cap. */
static void test_replica(void)
{
	struct gnn_replica a = { 0 }, b = { 0 }, c = { 0 };
	struct gnn_replica *reps[] = { &a, &b, &c };
	bool usable[] = { true, true, true };
	atomic_uint next = 0;

	CHECK(gnn_replica_timeout_ms(reps, 3, 500) == 500);  /* no answer yet: the cap */
	gnn_replica_begin(&a);
	gnn_replica_begin(&c);
	CHECK(gnn_replica_pick(reps, usable, 3, 0, &next) == 1);
	CHECK(gnn_replica_pick(reps, usable, 3, 1u << 1, &next) != 1);   /* b tried */
	usable[1] = false;
	CHECK(gnn_replica_pick(reps, usable, 3, 0, &next) != 1);
	usable[1] = true;
	gnn_replica_avoid(&b);
	CHECK(gnn_replica_pick(reps, usable, 3, 0, &next) != 1);
	CHECK(gnn_replica_pick(reps, usable, 3, 1u << 0 | 1u << 2, &next) == 1);  /* all else tried */
	gnn_replica_end(&a, 0.002);
	CHECK(gnn_replica_timeout_ms(reps, 3, 500) == GNN_REPLICA_MIN_TIMEOUT_MS);
	gnn_replica_end(&c, 0.040);
	CHECK(gnn_replica_timeout_ms(reps, 3, 500) == 8 * 40);
	CHECK(gnn_replica_timeout_ms(reps, 3, 200) == 200);
	for (int i = 0; i < 2000; i++) {  /* the slow answer fades */
		gnn_replica_begin(&c);
		gnn_replica_end(&c, 0.001);
	}
	CHECK(gnn_replica_timeout_ms(reps, 3, 500) == GNN_REPLICA_MIN_TIMEOUT_MS);
	CHECK(atomic_load(&a.inflight) == 0 && atomic_load(&c.inflight) == 0);
}

static void test_log_limit(void)
{
	const char *path = tmp_path("log.txt");
	unsigned long long supp;
	int saved, ids[4], written;
	pthread_t tids[4];

	CHECK(gnn_log_set_limit(5, 0) == GNN_EINVAL);
	CHECK(gnn_log_set_limit(5, 300) == GNN_OK);
	if (!CHECK((saved = capture_stderr(path)) >= 0))
		goto out;

	/* 100 lines in a burst: 5 written; the next interval's first line
	 * says how many were not. */
	for (int i = 0; i < 100; i++)
		flood_site(i);
	CHECK(count_lines(path, "WARN  test_common test_flood i=", NULL, NULL) == 5);
	usleep(350 * 1000);
	flood_site(100);
	CHECK(count_lines(path, "test_flood i=100 suppressed=95 over_s=0.", NULL, NULL) == 1);

	/* A burst and then nothing from that site: the count comes with the
	 * next line of any other site once the interval has ended. */
	for (int i = 0; i < 10; i++)
		quiet_site(i);
	usleep(350 * 1000);
	GNN_INFO("test_other", "x=1");
	CHECK(count_lines(path, "WARN  test_common test_quiet suppressed=5 over_s=0.", NULL, NULL) == 1);

	/* Four threads on one site: every line is written or counted. */
	for (int t = 0; t < 4; t++) {
		ids[t] = t;
		CHECK(pthread_create(&tids[t], NULL, thread_site, &ids[t]) == 0);
	}
	for (int t = 0; t < 4; t++)
		pthread_join(tids[t], NULL);
	gnn_log_flush();
	written = count_lines(path, "ERROR test_common test_threads t=", NULL, NULL);
	count_lines(path, "test_threads", "suppressed=", &supp);
	CHECK(written >= 5 && written + (long long)supp == 4 * 2000);
	if (written + (long long)supp != 4 * 2000)
		printf("  written %d + suppressed %llu != 8000\n", written, supp);

	/* Limits off: everything written. */
	CHECK(gnn_log_set_limit(0, 300) == GNN_OK);
	usleep(350 * 1000);
	for (int i = 5000; i < 5020; i++)
		flood_site(i);
	CHECK(count_lines(path, "test_flood i=50", NULL, NULL) == 20);

	dup2(saved, STDERR_FILENO);
	close(saved);
out:
	gnn_log_set_limit(GNN_LOG_LIMIT_LINES, GNN_LOG_LIMIT_S * 1000);
}

/* Runs gnn-partition (GNN_BUILD's) with args into out; false (SKIP set)
 * when it is not built. */
static bool partition(const char *args, const char *out)
{
	const char *build = getenv("GNN_BUILD"), *root = getenv("GNN_ROOT");
	char bin[512], cmd[2048];

	snprintf(bin, sizeof(bin), "%s/bin/gnn-partition", build ? build : "build");
	if (access(bin, X_OK) != 0) {
		SKIP("gnn-partition is not built (set GNN_BUILD)");
		return false;
	}
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s --parts 2 --out '%s' >/dev/null 2>&1", root ? root : ".", bin,
		 args, out);
	return CHECK(system(cmd) == 0);
}

/* gnn_edge_split_open over real outputs: counts and relations as
 * meta.json says, IDs of the relation's types; a missing or corrupt file
 * and an output without a split are refused. */
static void test_edge_split_reader(void)
{
	struct gnn_meta m = { 0 };
	struct gnn_edge_split es;
	char path[300];
	FILE *f;

	if (!partition("--synthetic tiny --edge-split 0.85,0.05,0.10 --eval-negatives 20", tmp_path("es")) ||
	    !CHECK(gnn_meta_load(tmp_path("es"), &m) == GNN_OK))
		return;
	if (CHECK(gnn_edge_split_open(tmp_path("es"), &m, GNN_PART_VERIFY, &es) == GNN_OK)) {
		CHECK(es.rel == 0 && es.rev_rel == -1 && es.eval_negatives == 20 && es.num_pairs == 10000 &&
		      es.num_train == 8500 && es.num[GNN_ES_VALID] == 500 && es.num[GNN_ES_TEST] == 1000);
		CHECK(es.pos[GNN_ES_TEST][0] >= 0 && es.pos[GNN_ES_TEST][1999] < 2000 &&
		      es.neg_dst[GNN_ES_VALID][500 * 20 - 1] < 2000);
		gnn_edge_split_close(&es);
	}
	/* A flipped data byte: its CRC-32 no longer matches (VERIFY). */
	snprintf(path, sizeof(path), "%s/edge-split/valid-neg.arr", tmp_path("es"));
	if (CHECK((f = fopen(path, "r+b")) != NULL)) {
		fseek(f, 64 + 8, SEEK_SET);
		fputc(0x55, f);
		fclose(f);
	}
	CHECK(gnn_edge_split_open(tmp_path("es"), &m, GNN_PART_VERIFY, &es) == GNN_ECHECKSUM);
	remove(path);
	CHECK(gnn_edge_split_open(tmp_path("es"), &m, 0, &es) == GNN_ENOENT);
	gnn_meta_free(&m);
	/* A typed graph: writes and its reverse rev_writes. */
	if (partition("--input tests/data/hetero-tiny --edge-split 0.8,0.1,0.1 --edge-relation writes "
		      "--eval-negatives 5", tmp_path("ht")) &&
	    CHECK(gnn_meta_load(tmp_path("ht"), &m) == GNN_OK)) {
		if (CHECK(gnn_edge_split_open(tmp_path("ht"), &m, GNN_PART_VERIFY, &es) == GNN_OK)) {
			const struct gnn_schema *s = m.layout.schema;

			CHECK(strcmp(s->rels[es.rel].name, "writes") == 0 && es.rev_rel >= 0 &&
			      strcmp(s->rels[es.rev_rel].name, "rev_writes") == 0 && es.num[GNN_ES_VALID] == 80);
			CHECK(gnn_layout_type(&m.layout, es.pos[GNN_ES_VALID][0]) == (int32_t)s->rels[es.rel].src &&
			      gnn_layout_type(&m.layout, es.pos[GNN_ES_VALID][1]) == (int32_t)s->rels[es.rel].dst);
			gnn_edge_split_close(&es);
		}
		gnn_meta_free(&m);
	}
	/* No split at all. */
	if (partition("--synthetic tiny", tmp_path("plain")) && CHECK(gnn_meta_load(tmp_path("plain"), &m) == GNN_OK)) {
		CHECK(gnn_edge_split_open(tmp_path("plain"), &m, 0, &es) == GNN_ENOENT);
		gnn_meta_free(&m);
	}
}

/* Checkpoint folder names (ckptname.h): the trainer's temporary folder
 * maps to the committed name it is renamed to; nothing else maps. */
static void test_ckpt_names(void)
{
	char tmp[128], out[128];

	gnn_ckpt_name(3, 0, out, sizeof(out));
	CHECK(strcmp(out, "epoch-000003") == 0);
	gnn_ckpt_name(3, 17, out, sizeof(out));
	CHECK(strcmp(out, "epoch-000003-step-000017") == 0);
	CHECK(gnn_ckpt_tmp_path("/ck/run", 3, 17, 42, tmp, sizeof(tmp)) == GNN_OK &&
	      strcmp(tmp, "/ck/run/.tmp-epoch-000003-000017-42") == 0);
	CHECK(gnn_ckpt_committed_path(tmp, out, sizeof(out)) == GNN_OK &&
	      strcmp(out, "/ck/run/epoch-000003-step-000017") == 0);
	CHECK(gnn_ckpt_tmp_path("/ck/run", 4, 0, 42, tmp, sizeof(tmp)) == GNN_OK &&
	      gnn_ckpt_committed_path(tmp, out, sizeof(out)) == GNN_OK && strcmp(out, "/ck/run/epoch-000004") == 0);
	CHECK(gnn_ckpt_committed_path(tmp, out, 10) == GNN_ERANGE);
	CHECK(gnn_ckpt_tmp_path("/ck/run", 4, 0, 42, tmp, 12) == GNN_ERANGE);
	const char *bad[] = { "/ck/run/epoch-000004", "/ck/run/.tmp-epoch-000004-000000-42x", "tmp-epoch-1-2-3",
			      "/ck/.tmp-epoch-x-1-2" };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		CHECK(gnn_ckpt_committed_path(bad[k], out, sizeof(out)) == GNN_EINVAL);
}

int main(void)
{
	gnn_log_init("test_common");
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	RUN(test_strerror);
	RUN(test_wbuf_in_msg);
	RUN(test_f16);
	RUN(test_fanouts);
	RUN(test_hash);
	RUN(test_owner_of);
	RUN(test_opt_defaults_flags_env);
	RUN(test_opt_rejects);
	RUN(test_opt_help);
	RUN(test_arr_roundtrip);
	RUN(test_arr_rejects);
	RUN(test_arr_writer_abort);
	RUN(test_emb_snap_record);
	RUN(test_npy);
	RUN(test_json);
	RUN(test_json_checked);
	RUN(test_meta);
	RUN(test_edge_split_reader);
	RUN(test_sys);
	RUN(test_peers);
	RUN(test_log_limit);
	RUN(test_replica);
	RUN(test_ckpt_names);
	gnn_rm_rf(tmpdir);
	return t_done();
}
