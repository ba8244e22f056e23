/* lifecycle.c - see lifecycle.h. */
#include "lifecycle.h"

#include <time.h>
#include <unistd.h>

#include "err.h"
#include "nnglinks.h"
#include "log.h"
#include "sys.h"

static int default_exit_status(int rc)
{
	return rc == GNN_EINVAL ? GNN_EXIT_USAGE : GNN_EXIT_FAILED;
}

static int serve_until_signal(void)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = 100 * 1000000L };

	while (!gnn_stop_requested())
		nanosleep(&tick, NULL);
	return GNN_ECLOSED;
}

/* Start, wait, serve: the first code that is not GNN_OK, or GNN_OK when
 * serve finished. */
static int run_hooks(const struct gnn_lifecycle *lc, struct gnn_metrics *reg, struct gnn_http **http)
{
	int rc;

	if (lc->start != NULL && (rc = lc->start(lc->ctx, reg)) != GNN_OK)
		return rc;
	/* Health before the waits: probes see a live pod that is not ready. */
	if ((rc = gnn_http_start(*lc->http_addr, (int)*lc->http_port, reg, lc->ready, lc->ctx, http)) != GNN_OK)
		return rc;
	if (lc->wait != NULL && (rc = lc->wait(lc->ctx, gnn_http_port(*http))) != GNN_OK)
		return rc;
	return lc->serve != NULL ? lc->serve(lc->ctx) : serve_until_signal();
}

/* The "stopping" line and the exit status for how run_hooks ended. */
static int conclude(const struct gnn_lifecycle *lc, int rc)
{
	int status;

	if (rc == GNN_ECLOSED || (rc != GNN_OK && gnn_stop_requested())) {
		if (lc->stop_note != NULL)
			GNN_INFO("stopping", "reason=signal note=\"%s\"", lc->stop_note);
		else
			GNN_INFO("stopping", "reason=signal");
		return 0;
	}
	if (rc == GNN_OK) {
		GNN_INFO("stopping", "reason=finished");
		return 0;
	}
	status = lc->exit_status != NULL ? lc->exit_status(lc->ctx, rc) : default_exit_status(rc);
	GNN_ERROR("stopping", "reason=failed code=%s error=\"%s\" exit=%d", gnn_errname(rc), gnn_strerror(rc),
		  status);
	return status;
}

int gnn_lifecycle_run(const struct gnn_lifecycle *lc, int argc, char **argv)
{
	struct gnn_metrics *reg = NULL;
	struct gnn_http *http = NULL;
	struct gnn_links_watch *links = NULL;
	int rc, status;

	rc = gnn_opt_parse(lc->prog, lc->summary, lc->options, argc, argv);
	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK || (lc->configure != NULL && lc->configure(lc->ctx) != GNN_OK))
		return GNN_EXIT_USAGE;
	GNN_INFO("start", "pid=%d", (int)getpid());
	gnn_opt_log(lc->options);
	if (lc->tls != NULL && gnn_tls_setup(lc->tls) != GNN_OK) {
		GNN_ERROR("stopped", "exit=%d reason=\"the TLS files (above)\"", GNN_EXIT_USAGE);
		return GNN_EXIT_USAGE;
	}
	gnn_signals_install();
	gnn_stop_watchdog(GNN_STOP_GRACE_S);

	if ((rc = gnn_metrics_new(&reg)) == GNN_OK && (rc = gnn_metrics_add_process(reg)) == GNN_OK &&
	    (rc = gnn_tls_metrics(gnn_tls_data_plane(), "data", reg)) == GNN_OK &&
	    (rc = gnn_links_watch_start(reg, &links)) == GNN_OK)
		rc = run_hooks(lc, reg, &http);
	status = conclude(lc, rc);
	gnn_exit_begin();
	if (lc->stop != NULL)
		lc->stop(lc->ctx, status);
	gnn_links_watch_stop(links);
	gnn_http_stop(http);
	gnn_metrics_free(reg);
	gnn_tls_teardown();
	/* peak_rss_mb counts mapped files too: a graph store's partition */
	if (status == 0)
		GNN_INFO("stopped", "exit=0 peak_rss_mb=%.0f", (double)gnn_peak_rss_bytes() / 1048576.0);
	else
		GNN_ERROR("stopped", "exit=%d peak_rss_mb=%.0f", status, (double)gnn_peak_rss_bytes() / 1048576.0);
	return status;
}
