/* run.c - configuration checks, the run's paths, supervision of the
 * children and the final report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "pipeline.h"
#include "log.h"
#include "net.h"
#include "sys.h"

static const char *const binaries[] = { "gnn-partition", "gnn-graphstore", "gnn-sampler", "gnn-trainer" };

/* Parses --NAME's fanout list. */
static int parse_fanouts(const char *opt, const char *text, struct gnn_fanouts *out)
{
	char why[160];

	if (gnn_fanouts_parse(text, -1, GNN_PROTO_MAX_FANOUT, out, why, sizeof(why)) == GNN_OK)
		return GNN_OK;
	GNN_ERROR("bad_config", "option=--%s value=\"%s\" reason=\"%s\"", opt, text, why);
	return GNN_EINVAL;
}

int loc_config_check(struct loc_config *cfg)
{
	int sources = (cfg->dataset != NULL) + (cfg->synthetic != NULL) + (cfg->partition_dir != NULL);
	const struct gnn_model_cfg *mc = &cfg->mc;
	struct gnn_fanouts eval;

	if (sources != 1) {
		GNN_ERROR("bad_config", "reason=\"give exactly one of --dataset DIR, --synthetic PRESET, --partition-dir DIR (got %d)\"",
			  sources);
		return GNN_EINVAL;
	}
	if (loc_link(cfg) && cfg->baseline) {
		GNN_ERROR("bad_config", "option=--baseline reason=\"the features-only baseline is node classification's\"");
		return GNN_EINVAL;
	}
	if (cfg->split != NULL && cfg->dataset == NULL) {
		GNN_ERROR("bad_config", "option=--split value=%s reason=\"--split picks a split folder of --dataset\"",
			  cfg->split);
		return GNN_EINVAL;
	}
	if (cfg->feature_dtype != NULL && cfg->partition_dir != NULL) {
		GNN_ERROR("bad_config", "option=--feature-dtype value=%s reason=\"--partition-dir's output has its own "
			  "(gnn-partition --feature-dtype made it)\"", cfg->feature_dtype);
		return GNN_EINVAL;
	}
	if (cfg->feature_dtype == NULL)
		cfg->feature_dtype = "f32";
	/* (not given, mc holds the trainer's defaults: 3 layers, 15,10,5) */
	if (parse_fanouts("fanouts", mc->fanouts, &cfg->fanout) != GNN_OK)
		return GNN_EINVAL;
	if (loc_given(cfg, "layers") && mc->layers != cfg->fanout.n) {
		if (loc_given(cfg, "fanouts"))
			GNN_ERROR("bad_config", "option=--fanouts value=\"%s\" layers=%lld reason=\"one fanout per layer: %u "
				  "fanouts for %lld layers\"", mc->fanouts, (long long)mc->layers, cfg->fanout.n,
				  (long long)mc->layers);
		else
			GNN_ERROR("bad_config", "option=--layers value=%lld reason=\"give --fanouts with %lld values (the "
				  "trainer's default fanouts have %u)\"", (long long)mc->layers, (long long)mc->layers,
				  cfg->fanout.n);
		return GNN_EINVAL;
	}
	cfg->layers_eff = (int)cfg->fanout.n;
	/* --layers defaults to the number of --fanouts; the trainer's stays 3
	 * whatever its fanouts, so it gets the count with them. */
	if (loc_given(cfg, "fanouts") && !loc_given(cfg, "layers")) {
		char n[16];

		snprintf(n, sizeof(n), "%d", cfg->layers_eff);
		if (gnn_mcfg_set(&cfg->mc, "layers", n) != GNN_OK)
			return GNN_EINVAL;
	}
	if (mc->eval_fanouts != NULL) {
		if (parse_fanouts("eval-fanouts", mc->eval_fanouts, &eval) != GNN_OK)
			return GNN_EINVAL;
		if ((int)eval.n != cfg->layers_eff) {
			GNN_ERROR("bad_config", "option=--eval-fanouts value=\"%s\" reason=\"one fanout per layer: %u values for %d layers\"",
				  mc->eval_fanouts, eval.n, cfg->layers_eff);
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

/* PATH_MAX-bounded snprintf that logs instead of truncating silently. */
static int path_fmt(char *dst, const char *what, const char *fmt, const char *a, const char *b)
{
	if ((size_t)snprintf(dst, PATH_MAX, fmt, a, b) >= PATH_MAX) {
		GNN_ERROR("bad_config", "reason=\"%s path too long\"", what);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

int loc_run_init(struct loc_run *r, const struct loc_config *cfg)
{
	char exe[PATH_MAX], path[PATH_MAX];
	ssize_t k;
	char *slash;
	int rc;

	r->cfg = cfg;
	r->t_start = gnn_now();
	r->procs.bindir = r->bindir;
	r->procs.logdir = r->logdir;
	/* The components are the binaries next to this one (build/bin). */
	k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k <= 0) {
		GNN_ERROR("no_self", "reason=\"cannot read /proc/self/exe: %s\"", strerror(errno));
		return GNN_EIO;
	}
	exe[k] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(r->bindir, sizeof(r->bindir), "%s", exe);
	for (size_t i = 0; i < sizeof(binaries) / sizeof(binaries[0]); i++) {
		if (path_fmt(path, "binary", "%s/%s", r->bindir, binaries[i]) != GNN_OK)
			return GNN_EINVAL;
		if (access(path, X_OK) != 0) {
			GNN_ERROR("bad_config", "binary=%s reason=\"%s; gnn-local runs the components built next to it (make)\"",
				  path, strerror(errno));
			return GNN_EINVAL;
		}
	}
	if (cfg->dataset != NULL && realpath(cfg->dataset, r->dataset) == NULL) {
		GNN_ERROR("bad_config", "option=--dataset value=%s reason=\"%s\"", cfg->dataset, strerror(errno));
		return GNN_EINVAL;
	}
	if ((rc = gnn_mkdir_p(cfg->workdir)) != GNN_OK)
		return rc;
	if (realpath(cfg->workdir, r->workdir) == NULL) {
		GNN_ERROR("bad_config", "option=--workdir value=%s reason=\"%s\"", cfg->workdir, strerror(errno));
		return GNN_EINVAL;
	}
	if (path_fmt(r->logdir, "log", "%s/%s", r->workdir, "logs") != GNN_OK)
		return GNN_EINVAL;
	if (cfg->checkpoint_dir != NULL)
		rc = path_fmt(r->ckptdir, "checkpoint", "%s%s", cfg->checkpoint_dir, "");
	else
		rc = path_fmt(r->ckptdir, "checkpoint", "%s/%s", r->workdir, "checkpoints");
	if (rc != GNN_OK || path_fmt(r->ckptdir_baseline, "checkpoint", "%s%s", r->ckptdir, "-features-only") != GNN_OK)
		return GNN_EINVAL;
	if ((rc = gnn_mkdir_p(r->logdir)) != GNN_OK)
		return rc;
	if (cfg->fresh) {
		GNN_INFO("fresh", "removing=%s,%s reason=\"--fresh: train from scratch\"", r->ckptdir,
			 r->ckptdir_baseline);
		if ((rc = gnn_rm_rf(r->ckptdir)) != GNN_OK || (rc = gnn_rm_rf(r->ckptdir_baseline)) != GNN_OK)
			return rc;
	}
	GNN_INFO("workdir", "dir=%s logs=%s checkpoints=%s bin=%s", r->workdir, r->logdir, r->ckptdir, r->bindir);
	return GNN_OK;
}

void loc_run_free(struct loc_run *r)
{
	loc_procs_free(&r->procs);
	free(r->store_urls);
	free(r->sampler_urls);
	free(r->store_http);
	free(r->sampler_http);
	r->store_urls = r->sampler_urls = NULL;
	r->store_http = r->sampler_http = NULL;
	loc_https_free(r->https);
	r->https = NULL;
}

int loc_tick(struct loc_run *r, struct loc_proc **exited)
{
	const struct timespec tick = { 0, 50 * 1000000L };
	struct loc_proc *p;

	if (exited != NULL)
		*exited = NULL;
	if (gnn_stop_signal() != 0)
		return GNN_ECLOSED;
	p = loc_procs_reap(&r->procs);
	if (p == NULL) {
		nanosleep(&tick, NULL);
		return gnn_stop_signal() != 0 ? GNN_ECLOSED : GNN_OK;
	}
	if (p->stopping)
		return GNN_OK;
	/* Servers never end on their own; anything else must end with 0. */
	if (p->role == LOC_ROLE_STORE || p->role == LOC_ROLE_SAMPLER ||
	    !WIFEXITED(p->status) || WEXITSTATUS(p->status) != 0) {
		r->failed = p;
		if (p->role == LOC_ROLE_STORE)
			r->failure = "the graph store exited while the run needed it";
		else if (p->role == LOC_ROLE_SAMPLER)
			r->failure = "the sampler exited while the run needed it";
		else if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == LOC_EXIT_USAGE)
			r->failure = "it rejected its configuration";
		else
			r->failure = "it exited with an error";
		return GNN_EUNAVAIL;
	}
	if (exited != NULL)
		*exited = p;
	return GNN_OK;
}

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
	printf("components     %d graph stores, %lld samplers, %lld trainers on 127.0.0.1\n", r->parts,
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
