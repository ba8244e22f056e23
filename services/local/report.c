/* report.c - what gnn-local prints at the end: on success the result
 * block on stdout (the graph, the components, each training pass's
 * figures, the inference's, the times and folders), on failure the
 * failing component's status and the tail of its log on stderr. It reads
 * the steps' results (struct loc_result and loc_infer_result, through
 * their own loc_format_result and loc_link_keys) and starts nothing. */
#include <inttypes.h>
#include <stdio.h>

#include "arr.h"
#include "err.h"
#include "log.h"
#include "pipeline.h"
#include "sys.h"

void loc_report_failure(const struct loc_run *r)
{
	char text[96];

	if (r->failed == NULL)
		return;
	if (r->failed->running || r->failed->stopping)
		snprintf(text, sizeof(text), "still running when gnn-local gave up; stopped");
	else
		loc_status_text(r->failed->status, text, sizeof(text));
	GNN_ERROR("component_failed", "component=%s status=\"%s\" reason=\"%s\" log=%s", r->failed->name, text,
		  r->failure ? r->failure : "failed", r->failed->log);
	fprintf(stderr, "gnn-local: %s: %s (%s); its log ends with:\n", r->failed->name,
		r->failure ? r->failure : "failed", text);
	loc_log_tail(r->failed->log, 20, stderr);
}

static void print_result(const struct loc_config *cfg, const char *label, const struct loc_result *res)
{
	char line[512];

	loc_format_result(cfg, res, line, sizeof(line));
	printf("%-14s %s\n", label, line);
}

void loc_report_result(const struct loc_run *r)
{
	const struct loc_config *cfg = r->cfg;
	double now = gnn_now();

	printf("\n== gnn-local result ==\n");
	if (cfg->synthetic != NULL)
		printf("graph          synthetic '%s', %d partitions in %s\n", cfg->synthetic, r->parts, r->partdir);
	else
		printf("graph          %s, %d partitions in %s\n", cfg->dataset ? r->dataset : "(given)", r->parts,
		       r->partdir);
	printf("components     %d graph stores, %lld samplers, %lld trainers on 127.0.0.1\n", r->stores,
	       (long long)cfg->samplers, (long long)cfg->trainers);
	if (cfg->tls)
		printf("tls            mutual on every link and HTTPS; throwaway certificates (valid %d days) in %s\n",
		       LOC_CERT_DAYS, r->tlsdir);
	print_result(cfg, cfg->mc.model, &r->main);
	if (r->baseline.done)
		print_result(cfg, "features_only", &r->baseline);
	printf("params_crc     %08x on all %lld ranks\n", (unsigned)r->main.res.params_crc, (long long)cfg->trainers);
	if (r->baseline.done)
		printf("test_acc %s=%.4f features_only=%.4f\n", cfg->mc.model, r->main.res.test_acc,
		       r->baseline.res.test_acc);
	else if (r->main.res.task[0] != '\0')
		printf("test_auc %s=%.4f\n", cfg->mc.model, r->main.res.test_acc);
	else
		printf("test_acc %s=%.4f\n", cfg->mc.model, r->main.res.test_acc);
	loc_report_infer(r);
	printf("time           %.1f s in all: partition %.1f s, start-up %.1f s, training %.1f s",
	       now - r->t_start, r->t_partition, r->t_ready, r->main.seconds);
	if (r->infer.done)
		printf(", inference %.1f s", r->infer.seconds);
	if (r->baseline.done)
		printf(", features-only training %.1f s", r->baseline.seconds);
	printf("\nlogs           %s\ncheckpoints    %s\n", r->logdir, r->ckptdir);
	fflush(stdout);
}

/* The first n nodes of partition 0: original ID, class, probability. */
static void print_examples(const struct loc_run *r, int n)
{
	struct gnn_arr pred, prob, orig;
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/part-0/pred.arr", r->preddir);
	if (gnn_arr_open(path, GNN_DT_I32, 0, &pred) != GNN_OK)
		return;
	snprintf(path, sizeof(path), "%s/part-0/topk-prob.arr", r->preddir);
	if (gnn_arr_open(path, GNN_DT_F32, 0, &prob) == GNN_OK) {
		snprintf(path, sizeof(path), "%s/part-0/orig-id.arr", r->preddir);
		if (gnn_arr_open(path, GNN_DT_I64, 0, &orig) == GNN_OK) {
			printf("example        ");
			for (uint64_t i = 0; i < (uint64_t)n && i < pred.info.rows; i++)
				printf("%s%s %" PRId64 " -> class %d (p=%.2f)", i ? ", " : "", r->infer.label_type,
				       ((const int64_t *)orig.data)[i], ((const int32_t *)pred.data)[i],
				       (double)((const float *)prob.data)[i * prob.info.cols]);
			printf("  (original IDs)\n");
			gnn_arr_close(&orig);
		}
		gnn_arr_close(&prob);
	}
	gnn_arr_close(&pred);
}

void loc_report_infer(const struct loc_run *r)
{
	if (!r->infer.done)
		return;
	if (r->infer.is_link) {   /* a link model: no classes to show */
		for (int set = 0; set < 2; set++) {
			printf("link %-9s", set == 0 ? "test" : "valid");
			for (int k = 0; k < 6; k++)
				printf(" %s=%.4f", loc_link_keys[k], r->infer.link[set][k]);
			printf("%s\n", set == 0 ? "  (every node's embedding, full neighbourhood)" : "");
		}
		printf("predictions    %s (part-*/emb.arr, summary.json)\n", r->preddir);
		return;
	}
	printf("inference      test_acc=%.4f valid_acc=%.4f train_acc=%.4f nodes=%" PRId64, r->infer.test_acc,
	       r->infer.valid_acc, r->infer.train_acc, r->infer.nodes);
	if (r->infer.predicted != r->infer.nodes)
		printf(" predicted=%" PRId64 " (every %s node", r->infer.predicted, r->infer.label_type);
	else
		printf(" (every node");
	printf(", full neighbourhood; the trainer's sampled test_acc=%.4f on %llu test nodes)\n", r->main.res.test_acc,
	       (unsigned long long)r->main.res.test_nodes);
	printf("predictions    %s\n", r->preddir);
	print_examples(r, 3);
}
