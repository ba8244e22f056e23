/* infer_step.c - gnn-local's inference step (pipeline.h, docs/inference.md):
 * one `gnn-trainer infer` worker per trainer, each taking the partitions
 * p with p mod T == its index, then the summary.json they leave, read
 * into r->infer for the result block (report.c). */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "log.h"
#include "pipeline.h"
#include "proc.h"
#include "sys.h"

static int start_workers(struct loc_run *r, struct loc_proc **w)
{
	const struct loc_config *cfg = r->cfg;
	size_t T = (size_t)cfg->trainers;
	struct loc_argv a = { 0 };
	char name[LOC_NAME_MAX];
	int rc = GNN_OK;

	for (size_t i = 0; i < T && rc == GNN_OK; i++) {
		snprintf(name, sizeof(name), "infer-%zu", i);
		/* no model flag: result.json records the run's configuration */
		if ((rc = loc_argv_add(&a, "gnn-trainer")) || (rc = loc_argv_add(&a, "infer")) ||
		    (rc = loc_argv_add(&a, "--data=%s", r->partdir)) ||
		    (rc = loc_argv_add(&a, "--checkpoint-dir=%s", r->ckptdir)) ||
		    (rc = loc_argv_add(&a, "--out=%s", r->preddir)) || (rc = loc_argv_add(&a, "--workers=%zu", T)) ||
		    (rc = loc_argv_add(&a, "--worker=%zu", i)) ||
		    (rc = loc_argv_add(&a, "--wait-s=%lld", (long long)cfg->timeout_s)) ||
		    (cfg->threads >= 0 && (rc = loc_argv_add(&a, "--threads=%lld", (long long)cfg->threads))))
			break;
		rc = loc_proc_start(&r->procs, name, LOC_ROLE_TRAINER, &a, &w[i]);
		loc_argv_free(&a);
	}
	loc_argv_free(&a);
	return rc;
}

const char *const loc_link_keys[6] = { "auc", "ap", "mrr", "hits@1", "hits@3", "hits@10" };

static int read_summary(struct loc_run *r)
{
	char path[PATH_MAX + 16];
	json_t *s = NULL, *acc;
	int rc;

	snprintf(path, sizeof(path), "%s/summary.json", r->preddir);
	if ((rc = gnn_json_load_format(path, 1, 1, &s)) != GNN_OK)
		return rc;
	acc = json_object_get(s, "accuracy");
	r->infer.test_acc = json_number_value(json_object_get(acc, "test"));
	r->infer.valid_acc = json_number_value(json_object_get(acc, "valid"));
	r->infer.train_acc = json_number_value(json_object_get(acc, "train"));
	r->infer.nodes = json_integer_value(json_object_get(s, "nodes"));
	r->infer.predicted = json_integer_value(json_object_get(s, "predicted"));
	snprintf(r->infer.label_type, sizeof(r->infer.label_type), "%s",
		 json_string_value(json_object_get(s, "label_type")) ? json_string_value(json_object_get(s, "label_type"))
								     : "node");
	r->infer.is_link = json_is_object(json_object_get(s, "link"));
	for (int set = 0; set < 2 && r->infer.is_link; set++)
		for (int k = 0; k < 6; k++)
			r->infer.link[set][k] = json_number_value(json_object_get(
				json_object_get(json_object_get(s, "link"), set == 0 ? "test" : "valid"), loc_link_keys[k]));
	json_decref(s);
	r->infer.done = true;
	return GNN_OK;
}

int loc_infer(struct loc_run *r)
{
	const struct loc_config *cfg = r->cfg;
	struct loc_proc **w = calloc((size_t)cfg->trainers, sizeof(*w)), *ex;
	double t0 = gnn_now();
	size_t done = 0;
	int rc = GNN_ENOMEM;

	if (w == NULL || snprintf(r->preddir, sizeof(r->preddir), "%s/predictions", r->workdir) >= PATH_MAX)
		goto free_workers;
	if ((rc = start_workers(r, w)) != GNN_OK)
		goto free_workers;
	while (done < (size_t)cfg->trainers) {
		if ((rc = loc_tick(r, &ex)) != GNN_OK)
			goto free_workers;
		done += ex != NULL && ex->role == LOC_ROLE_TRAINER;
		if (gnn_now() - t0 > (double)cfg->timeout_s) {
			GNN_ERROR("timeout", "what=inference seconds=%lld finished=%zu", (long long)cfg->timeout_s, done);
			r->failed = w[0];
			r->failure = "inference ran past --timeout-s";
			rc = GNN_ETIMEDOUT;
			goto free_workers;
		}
	}
	r->infer.seconds = gnn_now() - t0;
	if ((rc = read_summary(r)) != GNN_OK) {
		r->failed = w[0];
		r->failure = "the inference workers exited without a summary.json that loads";
		goto free_workers;
	}
	GNN_INFO("inferred", "test_acc=%.4f nodes=%" PRId64 " out=%s seconds=%.1f", r->infer.test_acc, r->infer.nodes,
		 r->preddir, r->infer.seconds);
free_workers:
	free(w);
	return rc;
}
