/* data.c - where the partitions come from: a given --partition-dir, a
 * reusable WORKDIR/partition, or a fresh gnn-partition run. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "pipeline.h"
#include "log.h"
#include "part.h"
#include "sys.h"

/* Whether the partition output in dir was made from what this run asks
 * for: the same number of parts, feature dtype and normalisation, and the
 * same dataset folder (absolute path) or synthetic preset. why (why_len
 * bytes) explains a mismatch. */
static bool matches(const struct loc_run *r, const struct gnn_meta *m, char *why, size_t why_len)
{
	const json_t *src = json_object_get(m->json, "source");
	/* outputs from before --feat-norm hold their rows as imported */
	const char *norm = json_string_value(json_object_get(m->json, "feat_norm_requested"));
	const char *kind = json_string_value(json_object_get(src, "kind"));
	const char *path = json_string_value(json_object_get(src, "path"));
	const char *preset = json_string_value(json_object_get(src, "preset"));
	const char *split = json_string_value(json_object_get(src, "split"));

	if ((json_object_get(m->json, "edge_split") != NULL) != (loc_link(r->cfg))) {
		snprintf(why, why_len, "it has %s edge split", loc_link(r->cfg) ? "no" : "an");
		return false;
	}
	if ((int)m->layout.num_parts != r->parts) {
		snprintf(why, why_len, "it has %d parts, %d asked for", (int)m->layout.num_parts, r->parts);
		return false;
	}
	if (strcmp(gnn_dtype_name(m->layout.feat_dtype), r->cfg->feature_dtype) != 0) {
		snprintf(why, why_len, "its features are %s, %s asked for", gnn_dtype_name(m->layout.feat_dtype),
			 r->cfg->feature_dtype);
		return false;
	}
	if (strcmp(norm != NULL ? norm : "none", r->cfg->feat_norm) != 0) {
		snprintf(why, why_len, "its features were normalised with --feat-norm %s, %s asked for",
			 norm != NULL ? norm : "none", r->cfg->feat_norm);
		return false;
	}
	if (r->cfg->synthetic != NULL) {
		if (kind == NULL || strcmp(kind, "synthetic") != 0 || preset == NULL ||
		    strcmp(preset, r->cfg->synthetic) != 0) {
			snprintf(why, why_len, "it was not made from synthetic preset %s", r->cfg->synthetic);
			return false;
		}
		if (r->cfg->no_features != (m->layout.feat_dim == 0)) {
			snprintf(why, why_len, "it was made %s features", r->cfg->no_features ? "with" : "without");
			return false;
		}
		return true;
	}
	if (kind == NULL || strcmp(kind, "ogb") != 0 || path == NULL || strcmp(path, r->dataset) != 0) {
		snprintf(why, why_len, "it was not made from %s", r->dataset);
		return false;
	}
	if (r->cfg->split != NULL && (split == NULL || strcmp(split, r->cfg->split) != 0)) {
		snprintf(why, why_len, "it was made from split %s, not %s", split ? split : "?", r->cfg->split);
		return false;
	}
	return true;
}

/* Runs gnn-partition into r->partdir and waits for it (bounded). */
static int run_partitioner(struct loc_run *r)
{
	const struct loc_config *cfg = r->cfg;
	struct loc_argv a = { 0 };
	struct loc_proc *p = NULL, *done;
	double t0 = gnn_now(), deadline = t0 + (double)cfg->timeout_s;
	int rc;

	if ((rc = loc_argv_add(&a, "gnn-partition")) != GNN_OK)
		goto free_argv;
	if (cfg->synthetic != NULL && (rc = loc_argv_add(&a, "--synthetic=%s", cfg->synthetic)) == GNN_OK &&
	    cfg->no_features)
		rc = loc_argv_add(&a, "--no-features");
	else if (cfg->synthetic == NULL)
		rc = loc_argv_add(&a, "--input=%s", r->dataset);
	if (rc == GNN_OK && cfg->split != NULL)
		rc = loc_argv_add(&a, "--split=%s", cfg->split);
	/* --force: WORKDIR/partition is gnn-local's own, and a stale one must go. */
	if (rc != GNN_OK || (rc = loc_argv_add(&a, "--parts=%d", r->parts)) != GNN_OK ||
	    (rc = loc_argv_add(&a, "--feature-dtype=%s", cfg->feature_dtype)) != GNN_OK ||
	    (rc = loc_argv_add(&a, "--feat-norm=%s", cfg->feat_norm)) != GNN_OK ||
	    (rc = loc_argv_add(&a, "--out=%s", r->partdir)) != GNN_OK || (rc = loc_argv_add(&a, "--force")) != GNN_OK ||
	    (loc_link(cfg) && (rc = loc_argv_add(&a, "--edge-split=0.85,0.05,0.10")) != GNN_OK))
		goto free_argv;
	if ((rc = loc_proc_start(&r->procs, "partition", LOC_ROLE_PARTITION, &a, &p)) != GNN_OK)
		goto free_argv;
	GNN_INFO("partitioning", "source=%s parts=%d out=%s log=%s", cfg->synthetic ? cfg->synthetic : r->dataset,
		 r->parts, r->partdir, p->log);
	while (p->running) {
		if ((rc = loc_tick(r, &done)) != GNN_OK)
			goto free_argv;
		if (p->running && gnn_now() > deadline) {
			r->failed = p;
			r->failure = "partitioning ran past --timeout-s";
			rc = GNN_ETIMEDOUT;
			goto free_argv;
		}
	}
	GNN_INFO("partitioned", "dir=%s parts=%d seconds=%.1f", r->partdir, r->parts, gnn_now() - t0);
free_argv:
	loc_argv_free(&a);
	return rc;
}

/* --partition-dir: served as it is, once its meta.json loads and agrees
 * with --parts and --task. Sets r->partdir and r->parts. */
static int partition_given(struct loc_run *r)
{
	const struct loc_config *cfg = r->cfg;
	struct gnn_meta m = { 0 };
	int rc = GNN_EINVAL;

	if (realpath(cfg->partition_dir, r->partdir) == NULL) {
		GNN_ERROR("bad_config", "option=--partition-dir value=%s reason=\"%s\"", cfg->partition_dir,
			  strerror(errno));
		return GNN_EINVAL;
	}
	if (gnn_meta_load(r->partdir, &m) != GNN_OK) {
		GNN_ERROR("bad_config", "option=--partition-dir value=%s reason=\"not a complete gnn-partition output (meta.json, see above)\"",
			  r->partdir);
		return GNN_EINVAL;
	}
	if (cfg->parts > 0 && cfg->parts != (int)m.layout.num_parts) {
		GNN_ERROR("bad_config", "option=--parts value=%lld reason=\"%s has %d partitions\"",
			  (long long)cfg->parts, r->partdir, (int)m.layout.num_parts);
		goto free_meta;
	}
	if (loc_link(cfg) && json_object_get(m.json, "edge_split") == NULL) {
		GNN_ERROR("bad_config", "option=--partition-dir value=%s reason=\"--task link needs an edge split: "
			  "partition with gnn-partition --edge-split 0.85,0.05,0.10 (docs/partitioning.md)\"",
			  r->partdir);
		goto free_meta;
	}
	r->parts = (int)m.layout.num_parts;
	GNN_INFO("partition_given", "dir=%s parts=%d", r->partdir, r->parts);
	rc = GNN_OK;
free_meta:
	gnn_meta_free(&m);
	return rc;
}

/* Whether r->partdir holds an output this run can reuse (logged either
 * way: partition_reused, or partition_stale and why). gnn-partition
 * renames its output into place only when complete, so a meta.json that
 * loads means a whole output. */
static bool partition_reusable(const struct loc_run *r)
{
	struct gnn_meta m = { 0 };
	char meta[PATH_MAX + 16], why[PATH_MAX + 64];

	snprintf(meta, sizeof(meta), "%s/meta.json", r->partdir);
	if (access(meta, F_OK) != 0)
		return false;
	if (gnn_meta_load(r->partdir, &m) == GNN_OK && matches(r, &m, why, sizeof(why))) {
		gnn_meta_free(&m);
		GNN_INFO("partition_reused", "dir=%s parts=%d reason=\"meta.json matches the parts and the source\"",
			 r->partdir, r->parts);
		return true;
	}
	if (m.json == NULL)
		snprintf(why, sizeof(why), "its meta.json does not load");
	gnn_meta_free(&m);
	GNN_INFO("partition_stale", "dir=%s reason=\"%s\" action=repartition", r->partdir, why);
	return false;
}

/* The new output in r->partdir has the parts asked for. */
static int check_partitioned(const struct loc_run *r)
{
	struct gnn_meta m = { 0 };
	int rc;

	if ((rc = gnn_meta_load(r->partdir, &m)) != GNN_OK)
		return rc;
	if ((int)m.layout.num_parts != r->parts) {
		GNN_ERROR("bad_partition", "dir=%s parts=%d expected=%d", r->partdir, (int)m.layout.num_parts,
			  r->parts);
		rc = GNN_EFORMAT;
	}
	gnn_meta_free(&m);
	return rc;
}

int loc_partition_prepare(struct loc_run *r)
{
	double t0 = gnn_now();
	int rc;

	if (r->cfg->partition_dir != NULL)
		return partition_given(r);
	r->parts = (int)r->cfg->parts;
	if ((size_t)snprintf(r->partdir, sizeof(r->partdir), "%.*s/partition", PATH_MAX - 16, r->workdir) >=
	    sizeof(r->partdir)) {
		GNN_ERROR("bad_config", "option=--workdir reason=\"path too long\"");
		return GNN_EINVAL;
	}
	if (partition_reusable(r)) {
		r->t_partition = gnn_now() - t0;
		return GNN_OK;
	}
	if ((rc = run_partitioner(r)) != GNN_OK || (rc = check_partitioned(r)) != GNN_OK)
		return rc;
	r->t_partition = gnn_now() - t0;
	return GNN_OK;
}
