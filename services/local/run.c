/* run.c - one run's frame: where its binaries, work folder, logs and
 * checkpoints are (loc_run_init), freeing it, and loc_tick, the
 * supervision step that every step waiting on children calls: it reaps
 * them and decides whether an exit ends the run. */
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
