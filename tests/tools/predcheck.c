/* predcheck - verifies a `gnn-trainer infer` output against its partition
 * output, independently of the inference code: for every partition
 * OUT/part-<p>/ it checks that
 *   - pred, topk-class, topk-prob and orig-id have one row per node of
 *     the label type in the partition (every node with one type), emb,
 *     when present, one per node of every type; every array's checksum;
 *   - only nodes of the label type carry labels and splits;
 *   - pred is a class and equals the first top-k class; the top-k classes
 *     are distinct, their probabilities in (0, 1], non-increasing, summing
 *     to at most 1;
 *   - orig-id is node-map.arr's row for each node;
 *   - stats.json's per-split counts are the ones pred and the labels give;
 * and that summary.json adds them up. Prints key=value figures, one a
 * line (nodes=, test_acc=, ...) and "predcheck: ok", or "predcheck: FAIL ..."
 * lines and exits 1. Usage: predcheck DATA OUT */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arr.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "part.h"

static int failures;

#define FAIL(...)                                        \
	do {                                             \
		printf("predcheck: FAIL " __VA_ARGS__);  \
		printf("\n");                            \
		failures++;                              \
	} while (0)

static const char *const splits[4] = { "none", "train", "valid", "test" };

struct counts {
	uint64_t labelled[4], correct[4];
};

static bool open_arr(const char *dir, const char *name, enum gnn_dtype dt, uint64_t rows, struct gnn_arr *a)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s.arr", dir, name);
	if (gnn_arr_open(path, dt, GNN_ARR_VERIFY, a) != GNN_OK) {
		FAIL("%s does not load", path);
		return false;
	}
	if (a->info.rows != rows) {
		FAIL("%s has %" PRIu64 " rows, the partition %" PRIu64 " nodes", path, a->info.rows, rows);
		gnn_arr_close(a);
		return false;
	}
	return true;
}

/* The top-k rows of node i. */
static void check_row(int32_t p, int64_t i, const int32_t *cls, const float *prob, uint64_t k, int32_t pred,
		      uint32_t C)
{
	double sum = 0;

	if (pred < 0 || (uint32_t)pred >= C || pred != cls[0])
		FAIL("part %d node %" PRId64 ": pred %d is not a class or not the first top-k class %d", p, i, pred,
		     cls[0]);
	for (uint64_t j = 0; j < k; j++) {
		sum += prob[j];
		if (!(prob[j] > 0 && prob[j] <= 1) || (j > 0 && prob[j] > prob[j - 1]))
			FAIL("part %d node %" PRId64 ": top-k probability %" PRIu64 " = %g out of order or range", p, i,
			     j, (double)prob[j]);
		for (uint64_t t = 0; t < j; t++)
			if (cls[t] == cls[j])
				FAIL("part %d node %" PRId64 ": class %d twice in the top k", p, i, cls[j]);
	}
	if (sum > 1.0 + 1e-4)
		FAIL("part %d node %" PRId64 ": top-k probabilities sum to %g", p, i, sum);
}

/* stats.json's counts against the recomputed ones. */
static void check_stats(const char *dir, const struct counts *c)
{
	char path[4300];
	json_t *st = NULL, *sp;

	snprintf(path, sizeof(path), "%s/stats.json", dir);
	if (gnn_json_load_format(path, 1, 1, &st) != GNN_OK) {
		FAIL("%s does not load", path);
		return;
	}
	sp = json_object_get(st, "splits");
	for (int s = 1; s < 4; s++) {
		json_t *o = json_object_get(sp, splits[s]);

		if ((uint64_t)json_integer_value(json_object_get(o, "labelled")) != c->labelled[s] ||
		    (uint64_t)json_integer_value(json_object_get(o, "correct")) != c->correct[s])
			FAIL("%s: %s counts differ from the predictions' (%" PRIu64 " of %" PRIu64 ")", path, splits[s],
			     c->correct[s], c->labelled[s]);
	}
	json_decref(st);
}

static void check_part(const char *data, const char *out, const struct gnn_meta *m, const struct gnn_arr *map,
		       int32_t p, struct counts *total)
{
	struct gnn_part part;
	struct gnn_arr pred, cls, prob, orig, emb;
	struct counts c = { 0 };
	char path[4300];
	uint32_t lt = m->layout.schema->label_type;
	char dir[4200];
	uint64_t k, n;
	int64_t first;

	snprintf(dir, sizeof(dir), "%s/part-%d", out, p);
	if (gnn_part_open(data, m, p, 0, &part) != GNN_OK) {
		FAIL("partition %d does not open", p);
		return;
	}
	/* rows are the partition's nodes of the label type (every node with one type) */
	first = part.type_start[lt] - part.node_start;
	n = (uint64_t)(part.type_start[lt + 1] - part.type_start[lt]);
	for (int64_t i = 0; i < part.num_nodes; i++)
		if ((i < first || i >= first + (int64_t)n) && (part.labels[i] != -1 || part.split[i] != 0))
			FAIL("part %d node %" PRId64 ": labelled, but not of the label type", p, i);
	if (!open_arr(dir, "pred", GNN_DT_I32, n, &pred))
		goto out_part;
	if (!open_arr(dir, "topk-class", GNN_DT_I32, n, &cls))
		goto out_pred;
	if (!open_arr(dir, "topk-prob", GNN_DT_F32, n, &prob))
		goto out_cls;
	if (!open_arr(dir, "orig-id", GNN_DT_I64, n, &orig))
		goto out_prob;
	k = cls.info.cols;
	if (prob.info.cols != k || k < 1)
		FAIL("%s: top-k widths %" PRIu64 " and %" PRIu64, dir, k, prob.info.cols);
	for (uint64_t i = 0; i < n && failures < 20; i++) {
		int64_t v = first + (int64_t)i;
		int32_t y = part.labels[v], pr = ((const int32_t *)pred.data)[i];

		check_row(p, v, (const int32_t *)cls.data + i * k, (const float *)prob.data + i * k,
			  prob.info.cols == k ? k : 0, pr, (uint32_t)m->layout.num_classes);
		if (((const int64_t *)orig.data)[i] != ((const int64_t *)map->data)[part.node_start + v])
			FAIL("part %d node %" PRId64 ": orig-id is not node-map's", p, v);
		if (y >= 0) {
			c.labelled[part.split[v]]++;
			c.correct[part.split[v]] += pr == y;
		}
	}
	check_stats(dir, &c);
	snprintf(path, sizeof(path), "%s/emb.arr", dir);
	if (access(path, F_OK) == 0 && open_arr(dir, "emb", GNN_DT_F32, (uint64_t)part.num_nodes, &emb))
		gnn_arr_close(&emb);
	for (int s = 0; s < 4; s++) {
		total->labelled[s] += c.labelled[s];
		total->correct[s] += c.correct[s];
	}
	gnn_arr_close(&orig);
out_prob:
	gnn_arr_close(&prob);
out_cls:
	gnn_arr_close(&cls);
out_pred:
	gnn_arr_close(&pred);
out_part:
	gnn_part_close(&part);
}

static double acc(const struct counts *c, int s)
{
	return c->labelled[s] ? (double)c->correct[s] / (double)c->labelled[s] : 0.0;
}

static void check_summary(const char *out, const struct counts *c)
{
	char path[4200];
	json_t *sum = NULL;

	snprintf(path, sizeof(path), "%s/summary.json", out);
	if (gnn_json_load_format(path, 1, 1, &sum) != GNN_OK) {
		FAIL("%s does not load", path);
		return;
	}
	for (int s = 1; s < 4; s++) {
		json_t *a = json_object_get(json_object_get(sum, "accuracy"), splits[s]);

		if (!json_is_number(a) || fabs(json_number_value(a) - acc(c, s)) > 1e-9)
			FAIL("%s: %s accuracy %g, the predictions give %g", path, splits[s], json_number_value(a),
			     acc(c, s));
	}
	printf("sampled_test_acc=%.4f\n",
	       json_number_value(json_object_get(json_object_get(sum, "trainer"), "sampled_test_acc")));
	json_decref(sum);
}

int main(int argc, char **argv)
{
	struct gnn_meta m = { 0 };
	struct gnn_arr map;
	struct counts total = { 0 };
	char path[4200];

	gnn_log_init("predcheck");
	if (argc != 3) {
		fprintf(stderr, "usage: predcheck DATA OUT\n");
		return 2;
	}
	if (gnn_meta_load(argv[1], &m) != GNN_OK)
		return 1;
	snprintf(path, sizeof(path), "%s/node-map.arr", argv[1]);
	if (gnn_arr_open(path, GNN_DT_I64, 0, &map) != GNN_OK)
		return 1;
	for (uint32_t p = 0; p < m.layout.num_parts; p++)
		check_part(argv[1], argv[2], &m, &map, (int32_t)p, &total);
	check_summary(argv[2], &total);
	printf("nodes=%" PRId64 "\ntrain_acc=%.4f\nvalid_acc=%.4f\ntest_acc=%.4f\ntest_labelled=%" PRIu64 "\n",
	       m.layout.num_nodes, acc(&total, 1), acc(&total, 2), acc(&total, 3), total.labelled[3]);
	gnn_arr_close(&map);
	gnn_meta_free(&m);
	if (failures > 0)
		return 1;
	printf("predcheck: ok\n");
	return 0;
}
