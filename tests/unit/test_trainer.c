/* test_trainer.c - the trainer's checkpoints, result file, derived seeds,
 * row-buffer pool, and the .npy twins of the inference's arrays. */
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arr.h"
#include "checkpoint.h"
#include "err.h"
#include "hash.h"
#include "layout.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "npy.h"
#include "rowpool.h"
#include "sys.h"
#include "testlib.h"
#include "training.h"

static char tmpdir[] = "/tmp/gnn-unit-trainer.XXXXXX";

static const char *path(const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

static void fill(float *v, size_t n, float base)
{
	for (size_t i = 0; i < n; i++)
		v[i] = base + (float)i * 0.25f;
}

/* The model hash guards checkpoints (a run refuses another model's): a
 * homogeneous graph's is what it was before schemas (so its checkpoints
 * resume), and a typed graph's changes with the schema and --num-bases. */
static void model_config(struct tr_config *c, const char *model, const char *num_bases)
{
	struct gnn_model_cfg mc = { 0 };

	gnn_mcfg_defaults(&mc);
	CHECK(gnn_mcfg_set(&mc, "layers", "2") == GNN_OK && gnn_mcfg_set(&mc, "fanouts", "5,5") == GNN_OK &&
	      gnn_mcfg_set(&mc, "hidden", "64") == GNN_OK && gnn_mcfg_set(&mc, "model", model) == GNN_OK &&
	      gnn_mcfg_set(&mc, "num-bases", num_bases) == GNN_OK);
	*c = (struct tr_config){ 0 };
	CHECK(tr_config_from_model(c, &mc) == GNN_OK);
}

/* --fanouts alone sets the layers, recorded as if given; both given must
 * agree. */
static void test_layers_from_fanouts(void)
{
	static struct tr_config c;
	struct gnn_model_cfg mc = { 0 };

	gnn_mcfg_defaults(&mc);
	CHECK(gnn_mcfg_set(&mc, "fanouts", "10,5") == GNN_OK);
	CHECK(tr_config_from_model(&c, &mc) == GNN_OK && c.layers == 2 && c.mcfg.layers == 2 &&
	      c.mcfg.given[gnn_mcfg_find("layers")] && c.eval_fanouts_text.n == 2);
	CHECK(gnn_mcfg_set(&mc, "layers", "3") == GNN_OK && tr_config_from_model(&c, &mc) == GNN_EINVAL);
	mc = (struct gnn_model_cfg){ 0 };
	gnn_mcfg_defaults(&mc);
	CHECK(tr_config_from_model(&c, &mc) == GNN_OK && c.layers == 3);   /* the defaults: 15,10,5 */
}

static void test_model_hash(void)
{
	static struct gnn_schema plain, typed, renamed;
	static struct tr_config c, other;
	struct gnn_layout g = { .feat_dim = 100, .num_classes = 47, .feat_dtype = GNN_DT_F32, .graph_id = 0x1234abcdull, .schema = &plain };
	uint64_t before = gnn_draw64(0x6d6f64656cull, 2), h;

	model_config(&c, "graphsage", "0");
	before = gnn_draw64(gnn_draw64(gnn_draw64(before, 100), 64), 47);
	gnn_schema_plain(&plain, 1000, 5000, 100);
	CHECK(tr_model_hash(&c, &g) == gnn_draw64(before, 0x1234abcdull));

	gnn_schema_plain(&typed, 1000, 5000, 100);
	typed.num_types = 2;
	typed.types[1] = typed.types[0];
	snprintf(typed.types[1].name, sizeof(typed.types[1].name), "author");
	typed.types[1].feat_dim = 0;
	renamed = typed;
	snprintf(renamed.rels[0].name, sizeof(renamed.rels[0].name), "cites");
	model_config(&c, "rgcn", "0");
	g.schema = &typed;
	h = tr_model_hash(&c, &g);
	g.schema = &renamed;
	CHECK(tr_model_hash(&c, &g) != h);
	model_config(&other, "rgcn", "2");
	CHECK(tr_model_hash(&c, &g) != tr_model_hash(&other, &g));
	/* the model, and any model option off its default, is in the hash */
	model_config(&other, "gcn", "0");
	CHECK(tr_model_hash(&c, &g) != tr_model_hash(&other, &g));
}

/* tr_ckpt_save and its commit (a thread), waited for. */
static int save_ck(const char *dir, const struct tr_ckpt *c, char *where, size_t len)
{
	int rc = tr_ckpt_save(dir, c, NULL, where, len);

	return rc != GNN_OK ? rc : tr_ckpt_flush();
}

static void test_ckpt_roundtrip_and_prune(void)
{
	enum { N = 1000 };
	static float p[N], m[N], v[N], b[N];
	struct tr_ckpt c = { .adam_t = 44, .model_hash = 0xfeedbeefcafe1234ull, .seed = 18446744073709551615ull,
			     .best_val_acc = 0.625, .best_epoch = 2, .num_params = N, .params = p, .adam_m = m,
			     .adam_v = v, .best = b }, got;
	const char *dir = path("ck");
	char where[1024];
	bool found = true;

	fill(p, N, 1);
	fill(m, N, 2);
	fill(v, N, 3);
	fill(b, N, 4);
	CHECK(tr_ckpt_load_latest(dir, NULL, &got, &found) == GNN_OK && !found);
	for (uint32_t e = 1; e <= 4; e++) {
		c.epoch = e;
		p[0] = (float)e;
		CHECK(save_ck(dir, &c, where, sizeof(where)) == GNN_OK);
	}
	CHECK(strstr(where, "epoch-000004") != NULL);
	CHECK(access(path("ck/epoch-000001"), F_OK) != 0);   /* only the two newest stay */
	CHECK(access(path("ck/epoch-000002"), F_OK) != 0);
	CHECK(access(path("ck/epoch-000003"), F_OK) == 0);
	if (!CHECK(tr_ckpt_load_latest(dir, NULL, &got, &found) == GNN_OK && found))
		return;
	CHECK(got.epoch == 4 && got.adam_t == 44 && got.model_hash == c.model_hash && got.seed == c.seed);
	CHECK(got.best_val_acc == 0.625 && got.best_epoch == 2 && got.num_params == N);
	CHECK(got.params[0] == 4.0f && memcmp(got.params + 1, p + 1, (N - 1) * sizeof(float)) == 0);
	CHECK(memcmp(got.adam_m, m, sizeof(m)) == 0 && memcmp(got.adam_v, v, sizeof(v)) == 0 &&
	      memcmp(got.best, b, sizeof(b)) == 0);
	tr_ckpt_free(&got);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d != NULL && (de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d != NULL)
		closedir(d);
	return n;
}

/* An extra whose finish (the commit's thread) waits until released,
 * like the wait for the graph stores' snapshot records. */
static atomic_int finish_release;   /* 0: waiting, 1: finish succeeds, 2: it fails */
static atomic_int finish_calls;

static int extra_save(void *ctx, const char *dir)
{
	(void)ctx;
	(void)dir;
	return GNN_OK;
}

static int extra_finish(void *ctx, const char *dir)
{
	(void)ctx;
	(void)dir;
	atomic_fetch_add(&finish_calls, 1);
	for (int i = 0; i < 60000 && atomic_load(&finish_release) == 0; i++)
		usleep(1000);
	return atomic_load(&finish_release) == 1 ? GNN_OK : GNN_EIO;
}

/* The commit waits for the extra's finish before the rename: while it
 * waits the checkpoint is absent, the caller goes on; a failed finish
 * leaves no checkpoint and no folder behind, counted. */
static void test_ckpt_finish(void)
{
	enum { N = 16 };
	static float p[N];
	struct tr_ckpt_extra x = { .save = extra_save, .finish = extra_finish };
	struct tr_ckpt c = { .epoch = 1, .num_params = N, .params = p, .adam_m = p, .adam_v = p, .best = p,
			     .extra = &x };
	struct gnn_counter *failures = NULL;
	struct gnn_metrics *reg = NULL;

	if (!CHECK(gnn_metrics_new(&reg) == GNN_OK) ||
	    !CHECK(gnn_metrics_counter(reg, "f_total", "failures", NULL, 0, &failures) == GNN_OK))
		goto out;
	atomic_store(&finish_release, 0);
	CHECK(tr_ckpt_save(path("fin"), &c, failures, NULL, 0) == GNN_OK);
	/* (the commit's thread may start late on a busy machine) */
	for (int i = 0; i < 5000 && atomic_load(&finish_calls) == 0; i++)
		usleep(1000);
	CHECK(atomic_load(&finish_calls) == 1 && access(path("fin/epoch-000001"), F_OK) != 0);
	atomic_store(&finish_release, 1);
	CHECK(tr_ckpt_flush() == GNN_OK && access(path("fin/epoch-000001/state.json"), F_OK) == 0);
	c.epoch = 2;
	atomic_store(&finish_release, 2);
	CHECK(tr_ckpt_save(path("fin"), &c, failures, NULL, 0) == GNN_OK);
	CHECK(tr_ckpt_flush() == GNN_EIO && access(path("fin/epoch-000002"), F_OK) != 0);
	CHECK(gnn_counter_value(failures) == 1 && atomic_load(&finish_calls) == 2);
	CHECK(entries(path("fin")) == 1);   /* epoch 1 only: no temporary folder left */
	CHECK(tr_ckpt_flush() == GNN_OK);   /* nothing pending */
out:
	gnn_metrics_free(reg);
}

/* Overwrites the byte at offset (from the end when negative) of a file. */
static bool poke(const char *file, long offset, int byte)
{
	FILE *f = fopen(file, "r+b");
	bool ok;

	if (f == NULL)
		return false;
	ok = fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET) == 0 && fputc(byte, f) != EOF;
	return fclose(f) == 0 && ok;
}

/* Replaces the first `from` in a text file with `to` (same length). */
static bool replace_text(const char *file, const char *from, const char *to)
{
	char buf[4096], *at;
	size_t n;
	FILE *f = fopen(file, "r+b");

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	if ((at = strstr(buf, from)) == NULL || strlen(from) != strlen(to)) {
		fclose(f);
		return false;
	}
	memcpy(at, to, strlen(to));
	rewind(f);
	fwrite(buf, 1, n, f);
	return fclose(f) == 0;
}

static void save_epochs(const char *dir, struct tr_ckpt *c, uint32_t from, uint32_t to)
{
	for (c->epoch = from; c->epoch <= to; c->epoch++)
		CHECK(save_ck(dir, c, NULL, 0) == GNN_OK);
}

static void test_ckpt_damaged_falls_back(void)
{
	enum { N = 64 };
	static float p[N];
	struct tr_ckpt c = { .num_params = N, .params = p, .adam_m = p, .adam_v = p, .best = p }, got;
	bool found;

	/* A flipped data byte: the array's CRC catches it, epoch 1 is used. */
	save_epochs(path("bad"), &c, 1, 2);
	CHECK(poke(path("bad/epoch-000002/adam_v.arr"), -3, 0x5a));
	CHECK(tr_ckpt_load_latest(path("bad"), NULL, &got, &found) == GNN_OK && found && got.epoch == 1);
	tr_ckpt_free(&got);
	CHECK(access(path("bad/epoch-000002"), F_OK) != 0 && access(path("bad/corrupt-epoch-000002"), F_OK) == 0);
	/* The next save prunes normally: the damaged one no longer counts. */
	save_epochs(path("bad"), &c, 2, 3);
	CHECK(access(path("bad/epoch-000001"), F_OK) != 0 && access(path("bad/epoch-000003"), F_OK) == 0);

	/* A bit flip that still parses ("epoch": 4 -> 5): the checksum. */
	save_epochs(path("flip"), &c, 3, 4);
	CHECK(replace_text(path("flip/epoch-000004/state.json"), "\"epoch\": 4", "\"epoch\": 5"));
	CHECK(tr_ckpt_load_latest(path("flip"), NULL, &got, &found) == GNN_OK && found && got.epoch == 3);
	tr_ckpt_free(&got);

	/* Format 1 (no checksum) still loads, but its epoch must be the folder's. */
	CHECK(gnn_mkdir_p(path("old")) == GNN_OK);
	save_epochs(path("old"), &c, 6, 7);
	for (int e = 6; e <= 7; e++) {
		char file[512];
		FILE *f;

		snprintf(file, sizeof(file), "%s/old/epoch-%06d/state.json", tmpdir, e);
		if (!CHECK((f = fopen(file, "w")) != NULL))
			return;
		fprintf(f, "{\"format\":1,\"epoch\":%d,\"adam_t\":0,\"model_hash\":\"0\",\"seed\":\"0\",\"best_val_acc\":0,"
			"\"best_epoch\":0,\"num_params\":%d}", e == 7 ? 9 : 6, N);
		fclose(f);
	}
	CHECK(tr_ckpt_load_latest(path("old"), NULL, &got, &found) == GNN_OK && found && got.epoch == 6);
	tr_ckpt_free(&got);

	/* Nothing intact: no checkpoint (a fresh start), not an error. A
	 * state.json that lies about the size counts as damaged. */
	save_epochs(path("lie"), &c, 1, 1);
	CHECK(replace_text(path("lie/epoch-000001/state.json"), "\"num_params\": 64", "\"num_params\": 65"));
	CHECK(tr_ckpt_load_latest(path("lie"), NULL, &got, &found) == GNN_OK && !found);

	/* Half-written folders and files of a dead writer are removed. */
	CHECK(gnn_mkdir_p(path("tmpd/.tmp-epoch-000009-1")) == GNN_OK);
	CHECK(fclose(fopen(path("tmpd/result.json.tmp"), "w")) == 0);
	CHECK(tr_ckpt_load_latest(path("tmpd"), NULL, &got, &found) == GNN_OK && !found);
	CHECK(access(path("tmpd/.tmp-epoch-000009-1"), F_OK) != 0 && access(path("tmpd/result.json.tmp"), F_OK) != 0);
}

/* Checkpoints within an epoch: ordered after their epoch's start and before
 * the next epoch's end, the partial sums kept exactly, the position in
 * state.json checked against the folder's name. */
static void test_ckpt_mid_epoch(void)
{
	enum { N = 16 };
	static float p[N];
	struct tr_ckpt c = { .num_params = N, .params = p, .adam_m = p, .adam_v = p, .best = p, .world = 2,
			     .batch = 64, .partial = { 1234.5678901234567, 321, 0.1 } }, got;
	bool found;

	c.epoch = 3;
	CHECK(save_ck(path("mid"), &c, NULL, 0) == GNN_OK);
	c.step = 12;
	CHECK(save_ck(path("mid"), &c, NULL, 0) == GNN_OK);
	CHECK(access(path("mid/epoch-000003-step-000012"), F_OK) == 0);
	CHECK(tr_ckpt_load_latest(path("mid"), NULL, &got, &found) == GNN_OK && found && got.epoch == 3 &&
	      got.step == 12 && got.world == 2 && got.batch == 64 && got.partial[0] == c.partial[0] &&
	      got.partial[1] == 321 && got.partial[2] == 0.1);
	tr_ckpt_free(&got);
	/* epoch 4's end is newer than epoch 3 + 12 steps; two are kept */
	c.epoch = 4;
	c.step = 0;
	CHECK(save_ck(path("mid"), &c, NULL, 0) == GNN_OK);
	CHECK(tr_ckpt_load_latest(path("mid"), NULL, &got, &found) == GNN_OK && found && got.epoch == 4 && got.step == 0);
	tr_ckpt_free(&got);
	CHECK(access(path("mid/epoch-000003"), F_OK) != 0 && access(path("mid/epoch-000003-step-000012"), F_OK) == 0);
	/* a step that is not the folder's: damaged, the one before is used */
	c.step = 2;
	CHECK(save_ck(path("mid"), &c, NULL, 0) == GNN_OK);
	CHECK(replace_text(path("mid/epoch-000004-step-000002/state.json"), "\"step\": 2", "\"step\": 3"));
	CHECK(tr_ckpt_load_latest(path("mid"), NULL, &got, &found) == GNN_OK && found && got.epoch == 4 && got.step == 0);
	tr_ckpt_free(&got);
	/* names that only look like checkpoints are not taken */
	CHECK(gnn_mkdir_p(path("mid/epoch-000009-step-000000")) == GNN_OK);
	CHECK(gnn_mkdir_p(path("mid/epoch-000009-step-0000011")) == GNN_OK);
	CHECK(tr_ckpt_load_latest(path("mid"), NULL, &got, &found) == GNN_OK && found && got.epoch == 4 && got.step == 0);
	tr_ckpt_free(&got);
}

static void test_result_roundtrip(void)
{
	struct gnn_result r = { .epochs = 10, .model_hash = 0x0123456789abcdefull, .test_acc = 0.8125,
			       .best_val_acc = 0.79, .best_epoch = 7, .params_crc = 0xdeadbeef, .train_s = 12.5 }, got;
	bool found = true;
	FILE *f;

	CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && !found);
	CHECK(gnn_result_save(tmpdir, &r) == GNN_OK);
	if (!CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && found))
		return;
	CHECK(got.epochs == 10 && got.model_hash == r.model_hash && got.test_acc == 0.8125 &&
	      got.best_val_acc == 0.79 && got.best_epoch == 7 && got.params_crc == 0xdeadbeef && got.train_s == 12.5);
	CHECK(got.task[0] == '\0' && got.decoder[0] == '\0');   /* a node result has no task key */
	CHECK(!got.has_config);   /* one written without its configuration still loads */
	/* the run's configuration, what `gnn-trainer infer` rebuilds the model from */
	r.has_config = true;
	gnn_mcfg_defaults(&r.config);
	CHECK(gnn_mcfg_set(&r.config, "model", "gcn") == GNN_OK && gnn_mcfg_set(&r.config, "hidden", "32") == GNN_OK);
	CHECK(gnn_result_save(tmpdir, &r) == GNN_OK);
	if (CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && found && got.has_config)) {
		size_t row;

		CHECK(!gnn_mcfg_differs(&got.config, &r.config, GNN_MCFG_ALL, &row));
		CHECK(strcmp(got.config.model, "gcn") == 0 && got.config.hidden == 32);
	}
	r.has_config = false;
	/* a link result: task and decoder recorded, the AUCs under their names too */
	snprintf(r.task, sizeof(r.task), "link");
	snprintf(r.decoder, sizeof(r.decoder), "mlp");
	r.test_ap = 0.75;
	CHECK(gnn_result_save(tmpdir, &r) == GNN_OK);
	CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && found && strcmp(got.task, "link") == 0 &&
	      strcmp(got.decoder, "mlp") == 0 && got.test_ap == 0.75 && got.test_acc == 0.8125);
	/* the test AUC is also written under its own name (found: replaced by itself) */
	CHECK(replace_text(path("result.json"), "\"test_auc\": 0.8125", "\"test_auc\": 0.8125"));
	r.task[0] = r.decoder[0] = '\0';
	CHECK(gnn_result_save(tmpdir, &r) == GNN_OK);
	/* A changed value is caught by the checksum; the file is moved aside
	 * and the run's result is computed again (not found, no error). */
	CHECK(replace_text(path("result.json"), "\"epochs\": 10", "\"epochs\": 11"));
	CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && !found);
	CHECK(access(path("result.json"), F_OK) != 0 && access(path("corrupt-result.json"), F_OK) == 0);
	if (!CHECK((f = fopen(path("result.json"), "w")) != NULL))
		return;
	fputs("{\"epochs\": 3}", f);
	fclose(f);
	CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && !found);
}

/* Buffers given back serve later requests that fit, the smallest that
 * fits first; one too small for a request is dropped, not kept beside the
 * new one; the rows are aligned for AVX. */
static void test_rowpool(void)
{
	struct tr_rowpool *p = NULL;
	float *a, *b, *c, *d;

	if (!CHECK(tr_rowpool_new(&p) == GNN_OK))
		return;
	CHECK(tr_rowpool_get(p, 0) == NULL && tr_rowpool_get(p, SIZE_MAX / 2) == NULL);
	a = tr_rowpool_get(p, 1000);
	b = tr_rowpool_get(p, 4000);
	if (CHECK(a != NULL && b != NULL && ((uintptr_t)a & 63) == 0 && ((uintptr_t)b & 63) == 0)) {
		a[999] = 1.0f;
		b[3999] = 2.0f;
	}
	CHECK(tr_rowpool_made(p) == 2);
	tr_rowpool_put(p, b);
	tr_rowpool_put(p, a);
	/* 1100 fits in a's 1000 + 1/8; then 3000 takes b, not a new buffer */
	c = tr_rowpool_get(p, 1100);
	d = tr_rowpool_get(p, 3000);
	CHECK(c == a && d == b && tr_rowpool_made(p) == 2);
	tr_rowpool_put(p, d);
	/* none free fits 10000: b is dropped for a new one */
	d = tr_rowpool_get(p, 10000);
	CHECK(d != NULL && tr_rowpool_made(p) == 3);
	if (d != NULL)
		d[9999] = 3.0f;
	tr_rowpool_put(p, d);
	d = tr_rowpool_get(p, 100);
	CHECK(d != NULL && tr_rowpool_made(p) == 3);
	tr_rowpool_put(p, c);
	tr_rowpool_put(p, d);
	tr_rowpool_put(p, NULL);
	tr_rowpool_free(p);
}

/* gnn_arr_writer_also_npy (what `gnn-trainer infer --npy` writes): the .npy
 * holds the .arr's rows under a 128-byte header, 1-D for one column; an
 * empty array too; abort leaves neither file nor temporary; it is refused
 * after an append. */
static void test_arr_npy_companion(void)
{
	static const int32_t cls[6] = { 3, 1, 2, 0, 5, 4 };
	static const int64_t ids[3] = { 7, -1, 1234567890123LL };
	struct gnn_arr_writer *w = NULL;
	struct gnn_npy n;
	struct gnn_arr a;

	/* two columns, appended in two batches */
	if (!CHECK(gnn_arr_writer_open(path("k.arr"), GNN_DT_I32, 2, &w) == GNN_OK))
		return;
	CHECK(gnn_arr_writer_also_npy(w, path("k.npy")) == GNN_OK);
	CHECK(gnn_arr_writer_also_npy(w, path("k2.npy")) == GNN_EINVAL);   /* one companion */
	CHECK(access(path("k.npy.tmp"), F_OK) == 0 && access(path("k.npy"), F_OK) != 0);
	CHECK(gnn_arr_writer_append(w, cls, 1) == GNN_OK && gnn_arr_writer_append(w, cls + 2, 2) == GNN_OK);
	CHECK(gnn_arr_writer_finish(w, NULL) == GNN_OK);
	CHECK(access(path("k.npy.tmp"), F_OK) != 0 && access(path("k.arr.tmp"), F_OK) != 0);
	if (CHECK(gnn_npy_open(path("k.npy"), &n) == GNN_OK)) {
		CHECK(n.h.type == GNN_NPY_I32 && n.h.ndim == 2 && n.h.rows == 3 && n.h.cols == 2 && n.h.data_off == 128);
		CHECK(memcmp(n.data, cls, sizeof(cls)) == 0);
		gnn_npy_close(&n);
	}
	if (CHECK(gnn_arr_open(path("k.arr"), GNN_DT_I32, GNN_ARR_VERIFY, &a) == GNN_OK)) {
		CHECK(a.info.rows == 3 && memcmp(a.data, cls, sizeof(cls)) == 0);
		gnn_arr_close(&a);
	}

	/* one column: one dimension */
	if (!CHECK(gnn_arr_writer_open(path("id.arr"), GNN_DT_I64, 1, &w) == GNN_OK))
		return;
	CHECK(gnn_arr_writer_also_npy(w, path("id.npy")) == GNN_OK);
	CHECK(gnn_arr_writer_append(w, ids, 3) == GNN_OK && gnn_arr_writer_finish(w, NULL) == GNN_OK);
	if (CHECK(gnn_npy_open(path("id.npy"), &n) == GNN_OK)) {
		CHECK(n.h.type == GNN_NPY_I64 && n.h.ndim == 1 && n.h.rows == 3 && memcmp(n.data, ids, sizeof(ids)) == 0);
		gnn_npy_close(&n);
	}

	/* no rows: shape (0, 4), still 128 header bytes */
	if (!CHECK(gnn_arr_writer_open(path("e.arr"), GNN_DT_F32, 4, &w) == GNN_OK))
		return;
	CHECK(gnn_arr_writer_also_npy(w, path("e.npy")) == GNN_OK && gnn_arr_writer_finish(w, NULL) == GNN_OK);
	if (CHECK(gnn_npy_open(path("e.npy"), &n) == GNN_OK)) {
		CHECK(n.h.ndim == 2 && n.h.rows == 0 && n.h.cols == 4 && n.h.data_off == 128 && n.map_len == 128);
		gnn_npy_close(&n);
	}

	/* abort: nothing left, not even a temporary */
	if (!CHECK(gnn_arr_writer_open(path("x.arr"), GNN_DT_F32, 2, &w) == GNN_OK))
		return;
	CHECK(gnn_arr_writer_also_npy(w, path("x.npy")) == GNN_OK);
	CHECK(gnn_arr_writer_append(w, (const float[]){ 1, 2 }, 1) == GNN_OK);
	gnn_arr_writer_abort(w);
	CHECK(access(path("x.arr"), F_OK) != 0 && access(path("x.arr.tmp"), F_OK) != 0 &&
	      access(path("x.npy"), F_OK) != 0 && access(path("x.npy.tmp"), F_OK) != 0);

	/* after a row the header's room is gone: refused, the .arr goes on alone */
	if (!CHECK(gnn_arr_writer_open(path("y.arr"), GNN_DT_F32, 1, &w) == GNN_OK))
		return;
	CHECK(gnn_arr_writer_append(w, (const float[]){ 1 }, 1) == GNN_OK);
	CHECK(gnn_arr_writer_also_npy(w, path("y.npy")) == GNN_EINVAL);
	CHECK(gnn_arr_writer_finish(w, NULL) == GNN_OK && access(path("y.arr"), F_OK) == 0 &&
	      access(path("y.npy"), F_OK) != 0 && access(path("y.npy.tmp"), F_OK) != 0);
}

int main(void)
{
	gnn_log_init("test_trainer");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_layers_from_fanouts);
	RUN(test_model_hash);
	RUN(test_ckpt_roundtrip_and_prune);
	RUN(test_ckpt_finish);
	RUN(test_ckpt_damaged_falls_back);
	RUN(test_ckpt_mid_epoch);
	RUN(test_result_roundtrip);
	RUN(test_rowpool);
	RUN(test_arr_npy_companion);
	gnn_rm_rf(tmpdir);
	return t_done();
}
