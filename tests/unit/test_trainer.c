/* test_trainer.c - the trainer's checkpoints, result file and derived seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "err.h"
#include "loader.h"
#include "log.h"
#include "sys.h"
#include "testlib.h"

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
	CHECK(tr_ckpt_load_latest(dir, &got, &found) == GNN_OK && !found);
	for (uint32_t e = 1; e <= 4; e++) {
		c.epoch = e;
		p[0] = (float)e;
		CHECK(tr_ckpt_save(dir, &c, where, sizeof(where)) == GNN_OK);
	}
	CHECK(strstr(where, "epoch-000004") != NULL);
	CHECK(access(path("ck/epoch-000001"), F_OK) != 0);   /* only the two newest stay */
	CHECK(access(path("ck/epoch-000002"), F_OK) != 0);
	CHECK(access(path("ck/epoch-000003"), F_OK) == 0);
	if (!CHECK(tr_ckpt_load_latest(dir, &got, &found) == GNN_OK && found))
		return;
	CHECK(got.epoch == 4 && got.adam_t == 44 && got.model_hash == c.model_hash && got.seed == c.seed);
	CHECK(got.best_val_acc == 0.625 && got.best_epoch == 2 && got.num_params == N);
	CHECK(got.params[0] == 4.0f && memcmp(got.params + 1, p + 1, (N - 1) * sizeof(float)) == 0);
	CHECK(memcmp(got.adam_m, m, sizeof(m)) == 0 && memcmp(got.adam_v, v, sizeof(v)) == 0 &&
	      memcmp(got.best, b, sizeof(b)) == 0);
	tr_ckpt_free(&got);
}

static void test_ckpt_corrupt_refused(void)
{
	enum { N = 64 };
	static float p[N];
	struct tr_ckpt c = { .epoch = 1, .num_params = N, .params = p, .adam_m = p, .adam_v = p, .best = p }, got;
	const char *dir = path("bad");
	bool found;
	FILE *f;

	CHECK(tr_ckpt_save(dir, &c, NULL, 0) == GNN_OK);
	/* Flip a byte of the data: the CRC must catch it. */
	if (!CHECK((f = fopen(path("bad/epoch-000001/adam_v.arr"), "r+b")) != NULL))
		return;
	fseek(f, -3, SEEK_END);
	fputc(0x5a, f);
	fclose(f);
	CHECK(tr_ckpt_load_latest(dir, &got, &found) != GNN_OK && !found);
	/* A half-written temporary folder is not a checkpoint. */
	CHECK(gnn_mkdir_p(path("tmpd/.tmp-epoch-000009-1")) == GNN_OK);
	CHECK(tr_ckpt_load_latest(path("tmpd"), &got, &found) == GNN_OK && !found);
	/* A state.json that lies about the size. */
	CHECK(tr_ckpt_save(path("lie"), &c, NULL, 0) == GNN_OK);
	if (!CHECK((f = fopen(path("lie/epoch-000001/state.json"), "w")) != NULL))
		return;
	fputs("{\"format\":1,\"epoch\":1,\"adam_t\":0,\"model_hash\":\"0\",\"seed\":\"0\",\"best_val_acc\":0,"
	      "\"best_epoch\":0,\"num_params\":65}", f);
	fclose(f);
	CHECK(tr_ckpt_load_latest(path("lie"), &got, &found) == GNN_EFORMAT);
}

static void test_result_roundtrip(void)
{
	struct tr_result r = { .epochs = 10, .model_hash = 0x0123456789abcdefull, .test_acc = 0.8125,
			       .best_val_acc = 0.79, .best_epoch = 7, .params_crc = 0xdeadbeef, .train_s = 12.5 }, got;
	bool found = true;
	FILE *f;

	CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && !found);
	CHECK(tr_result_save(tmpdir, &r) == GNN_OK);
	if (!CHECK(tr_result_load(tmpdir, &got, &found) == GNN_OK && found))
		return;
	CHECK(got.epochs == 10 && got.model_hash == r.model_hash && got.test_acc == 0.8125 &&
	      got.best_val_acc == 0.79 && got.best_epoch == 7 && got.params_crc == 0xdeadbeef && got.train_s == 12.5);
	if (!CHECK((f = fopen(path("result.json"), "w")) != NULL))
		return;
	fputs("{\"epochs\": 3}", f);
	fclose(f);
	CHECK(tr_result_load(tmpdir, &got, &found) != GNN_OK && !found);
}

static void test_mix(void)
{
	CHECK(tr_mix(1, 2) == tr_mix(1, 2));
	CHECK(tr_mix(1, 2) != tr_mix(2, 1));
	CHECK(tr_mix(0, 0) != 0);
}

int main(void)
{
	gnn_log_init("test_trainer");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_ckpt_roundtrip_and_prune);
	RUN(test_ckpt_corrupt_refused);
	RUN(test_result_roundtrip);
	RUN(test_mix);
	gnn_rm_rf(tmpdir);
	return t_done();
}
