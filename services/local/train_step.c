/* train_step.c - the trainers: start T ranks wired into a ring over the
 * samplers, follow rank 0's progress, wait for all, read the run's
 * result.json into r->main or r->baseline. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "pipeline.h"
#include "log.h"
#include "net.h"
#include "sys.h"

#define FOLLOW_BUF 8192

/* Re-logs rank 0's progress lines as they are written, so the person at
 * the terminal sees training advance without opening the log. */
struct follow {
	int fd;
	char buf[FOLLOW_BUF];
	size_t len;
};

static const char *const followed[] = { "epoch", "checkpoint_saved", "resumed", "already_finished", "stopping" };

/* Splits "TIMESTAMP LEVEL SERVICE EVENT key=value..." into the event word
 * and the key=value rest; false for lines of another shape. */
static bool split_line(const char *line, char *event, size_t event_size, const char **rest)
{
	int off = 0;
	char fmt[32];

	snprintf(fmt, sizeof(fmt), "%%*s %%*s %%*s %%%zus %%n", event_size - 1);
	if (sscanf(line, fmt, event, &off) != 1 || off == 0)
		return false;
	*rest = line + off;
	return true;
}

static void follow_line(const char *line, const char *who)
{
	char event[64];
	const char *rest;

	if (!split_line(line, event, sizeof(event), &rest))
		return;
	for (size_t i = 0; i < sizeof(followed) / sizeof(followed[0]); i++)
		if (strcmp(event, followed[i]) == 0)
			GNN_INFO(event, "component=%s %s", who, rest);
}

static void follow_poll(struct follow *f, const char *who)
{
	ssize_t k;

	if (f->fd < 0)
		return;
	while ((k = read(f->fd, f->buf + f->len, sizeof(f->buf) - 1 - f->len)) > 0) {
		char *start = f->buf, *nl;

		f->len += (size_t)k;
		f->buf[f->len] = '\0';
		while ((nl = strchr(start, '\n')) != NULL) {
			*nl = '\0';
			follow_line(start, who);
			start = nl + 1;
		}
		f->len -= (size_t)(start - f->buf);
		memmove(f->buf, start, f->len);
		if (f->len == sizeof(f->buf) - 1)
			f->len = 0; /* an absurdly long line: drop it */
	}
}

/* --flag=text, or with zeros n layers of 0 (every relation: no neighbours). */
static int add_fanouts(struct loc_argv *a, const char *flag, const char *text, int n, bool zeros)
{
	struct gnn_fanouts z = { .n = (uint32_t)n, .has_default = true };
	char list[GNN_PROTO_MAX_LAYERS * 12];
	int rc = zeros ? gnn_fanouts_format(&z, list, sizeof(list)) : GNN_OK;

	return rc != GNN_OK ? rc : loc_argv_add(a, "--%s=%s", flag, zeros ? list : text);
}

/* Whether the features-only baseline leaves model row i out: the link
 * task's and the embeddings' rows, and the fanouts and layers it sets
 * itself. */
static bool baseline_skips(size_t i)
{
	const struct gnn_mcfg_row *row = gnn_mcfg_row(i);
	static const char *const own[] = { "task", "embed-dim", "fanouts", "eval-fanouts", "layers" };

	if (row->group != GNN_MCFG_ANY)
		return true;
	for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
		if (strcmp(row->name, own[k]) == 0)
			return true;
	return false;
}

/* The model table's options given to gnn-local (or set by its link
 * defaults), passed on as they are, and the trainer's own options given;
 * the baseline replaces the fanouts with zeros (no neighbours: an MLP on
 * the node's own features with the same layers). */
static int model_args(const struct loc_config *cfg, struct loc_argv *a, bool baseline)
{
	char value[512];
	int rc = GNN_OK;

	for (size_t i = 0; rc == GNN_OK && i < gnn_mcfg_count(); i++) {
		if (!cfg->mc.given[i] || (baseline && baseline_skips(i)))
			continue;
		gnn_mcfg_format(&cfg->mc, i, value, sizeof(value));
		rc = loc_argv_add(a, "--%s=%s", gnn_mcfg_row(i)->name, value);
	}
	if (rc == GNN_OK)
		rc = loc_argv_add_opt(a, "prefetch", cfg->prefetch, 0);
	if (rc == GNN_OK)
		rc = loc_argv_add_opt(a, "cache-presample", cfg->cache_presample, 0);
	if (rc == GNN_OK && cfg->features_from != NULL)
		rc = loc_argv_add(a, "--features-from=%s", cfg->features_from);
	if (rc == GNN_OK && cfg->cache_ratio != NULL)
		rc = loc_argv_add(a, "--cache-ratio=%s", cfg->cache_ratio);
	if (rc == GNN_OK && baseline)
		rc = loc_argv_add(a, "--layers=%d", cfg->layers_eff);
	if (rc == GNN_OK && baseline)
		rc = add_fanouts(a, "fanouts", NULL, cfg->layers_eff, true);
	if (rc == GNN_OK && baseline)
		rc = add_fanouts(a, "eval-fanouts", NULL, cfg->layers_eff, true);
	return rc;
}

/* OpenBLAS threads per trainer: given, or the CPUs shared among the ranks
 * (T trainers each using every CPU would oversubscribe the machine). */
static long trainer_threads(const struct loc_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cfg->threads >= 0)
		return (long)cfg->threads;
	if (cpus < 1)
		cpus = 1;
	return cpus / cfg->trainers > 0 ? cpus / cfg->trainers : 1;
}

static int start_trainers(struct loc_run *r, bool baseline, struct loc_proc **tr)
{
	const struct loc_config *cfg = r->cfg;
	size_t T = (size_t)cfg->trainers;
	int *ports = calloc(2 * T, sizeof(*ports));
	char *peers = NULL, name[LOC_NAME_MAX];
	struct loc_argv a = { 0 };
	int rc = GNN_ENOMEM;

	if (ports == NULL)
		goto free_args;
	/* ports: [ring | http] */
	if ((rc = loc_free_ports(ports, 2 * T)) != GNN_OK)
		goto free_args;
	/* Each rank dials the next by these (localhost with --tls: the name
	 * in the ring's certificate); it listens on 127.0.0.1. */
	if ((peers = loc_url_list(r->dial_host, ports, T)) == NULL) {
		rc = GNN_ENOMEM;
		goto free_args;
	}
	for (size_t i = 0; i < T; i++) {
		snprintf(name, sizeof(name), "%strainer-%zu", baseline ? "baseline-" : "", i);
		if ((rc = loc_argv_add(&a, "gnn-trainer")) || (rc = loc_argv_add(&a, "--rank=%zu", i)) ||
		    (rc = loc_argv_add(&a, "--world-size=%zu", T)) || (rc = loc_argv_add(&a, "--peers=%s", peers)) ||
		    (rc = loc_argv_add(&a, "--samplers=%s", r->sampler_urls)) ||
		    ((cfg->mc.embed_dim > 0 || cfg->features_from != NULL) &&
		     (rc = loc_argv_add(&a, "--graphstores=%s", r->store_urls))) ||
		    (rc = loc_argv_add(&a, "--listen=tcp://127.0.0.1:%d", ports[i])) ||
		    (loc_link(cfg) && (rc = loc_argv_add(&a, "--data=%s", r->partdir))) ||
		    (rc = loc_argv_add(&a, "--http-addr=127.0.0.1")) ||
		    (rc = loc_argv_add(&a, "--http-port=%d", ports[T + i])) ||
		    (rc = loc_argv_add(&a, "--checkpoint-dir=%s", baseline ? r->ckptdir_baseline : r->ckptdir)) ||
		    (rc = loc_argv_add(&a, "--wait-s=%lld", (long long)cfg->ready_timeout_s)) ||
		    (rc = loc_argv_add(&a, "--threads=%ld", trainer_threads(cfg))) ||
		    (rc = loc_argv_add_opt(&a, "timeout-ms", cfg->sampler_timeout_ms, 1)) ||
		    (rc = loc_argv_add_opt(&a, "retries", cfg->sampler_retries, 0)) ||
		    (rc = loc_argv_add_opt(&a, "peer-timeout-s", cfg->peer_timeout_s, 1)) ||
		    (rc = model_args(cfg, &a, baseline)) || (rc = loc_tls_args(r, &a, T > 1)) ||
		    (rc = loc_proc_start(&r->procs, name, LOC_ROLE_TRAINER, &a, &tr[i])))
			goto free_args;
		loc_argv_free(&a);
	}
	GNN_INFO("trainers_started", "run=%s trainers=%zu peers=%s checkpoint_dir=%s",
		 baseline ? "features_only" : cfg->mc.model, T, peers, baseline ? r->ckptdir_baseline : r->ckptdir);
free_args:
	loc_argv_free(&a);
	free(peers);
	free(ports);
	return rc;
}

/* The run's result.json, which rank 0 writes once every rank agreed on
 * the parameters (they check it: a rank that differs fails the run). */
static int read_result(struct loc_run *r, bool baseline, struct loc_proc *rank0, struct loc_result *res)
{
	const char *dir = baseline ? r->ckptdir_baseline : r->ckptdir;
	bool found = false;
	int rc = gnn_result_read(dir, &res->res, &found);

	if (rc == GNN_OK && !found)
		rc = GNN_ENOENT;
	if (rc != GNN_OK) {
		r->failed = rank0;
		r->failure = rc == GNN_ENOENT ? "the trainers exited without writing result.json"
					      : "its result.json does not load (see the line before)";
	}
	return rc;
}

void loc_format_result(const struct loc_config *cfg, const struct loc_result *res, char *buf, size_t buf_len)
{
	const struct gnn_result *g = &res->res;

	if (g->task[0] != '\0') {   /* a link model: its figures are AUCs (result.h) */
		snprintf(buf, buf_len, "task=%s decoder=%s test_auc=%.4f test_ap=%.4f test_pairs=%llu best_val_auc=%.4f "
			 "best_epoch=%d epochs=%u world_size=%lld train_s=%.1f params_crc=%08x", g->task, g->decoder,
			 g->test_acc, g->test_ap, (unsigned long long)g->test_nodes, g->best_val_acc, (int)g->best_epoch,
			 (unsigned)g->epochs, (long long)cfg->trainers, g->train_s, (unsigned)g->params_crc);
		return;
	}
	snprintf(buf, buf_len, "test_acc=%.4f test_nodes=%llu best_val_acc=%.4f best_epoch=%d epochs=%u world_size=%lld "
		 "train_s=%.1f params_crc=%08x", g->test_acc, (unsigned long long)g->test_nodes, g->best_val_acc,
		 (int)g->best_epoch, (unsigned)g->epochs, (long long)cfg->trainers, g->train_s, (unsigned)g->params_crc);
}

int loc_train(struct loc_run *r, bool baseline)
{
	const struct loc_config *cfg = r->cfg;
	struct loc_result *res = baseline ? &r->baseline : &r->main;
	struct loc_proc **tr = calloc((size_t)cfg->trainers, sizeof(*tr)), *ex;
	struct follow f = { .fd = -1 };
	char line[512];
	double t0 = gnn_now(), deadline = t0 + (double)cfg->timeout_s;
	size_t done = 0;
	int rc = GNN_ENOMEM;

	if (tr == NULL)
		goto close_follow;
	if ((rc = start_trainers(r, baseline, tr)) != GNN_OK)
		goto close_follow;
	f.fd = open(tr[0]->log, O_RDONLY | O_CLOEXEC);
	while (done < (size_t)cfg->trainers) {
		rc = loc_tick(r, &ex);
		follow_poll(&f, tr[0]->name);
		if (rc != GNN_OK)
			goto close_follow;
		if (ex != NULL && ex->role == LOC_ROLE_TRAINER)
			done++;
		if (gnn_now() > deadline) {
			GNN_ERROR("timeout", "what=training seconds=%lld finished=%zu trainers=%lld",
				  (long long)cfg->timeout_s, done, (long long)cfg->trainers);
			for (size_t i = 0; i < (size_t)cfg->trainers && r->failed == NULL; i++)
				if (tr[i]->running)
					r->failed = tr[i];
			r->failure = "training ran past --timeout-s";
			rc = GNN_ETIMEDOUT;
			goto close_follow;
		}
	}
	follow_poll(&f, tr[0]->name);
	res->seconds = gnn_now() - t0;
	if ((rc = read_result(r, baseline, tr[0], res)) != GNN_OK)
		goto close_follow;
	res->done = true;
	loc_format_result(cfg, res, line, sizeof(line));
	GNN_INFO("trained", "run=%s seconds=%.1f %s", baseline ? "features_only" : r->cfg->mc.model, res->seconds, line);
close_follow:
	if (f.fd >= 0)
		close(f.fd);
	free(tr);
	return rc;
}
