/* Unit tests of libcommon/lifecycle: the hooks run in order, stop runs
 * once whatever stage failed, and each ending gets its exit status. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "lifecycle.h"
#include "log.h"
#include "testlib.h"

static struct {
	const char *http_addr;
	int64_t http_port;
} cfg;

static const struct gnn_opt options[] = {
	{ "http-addr", GNN_OPT_STR, &cfg.http_addr, "127.0.0.1", 0, 0, NULL, "address" },
	{ "http-port", GNN_OPT_INT, &cfg.http_port, "0", 0, 65535, NULL, "port" },
	{ NULL },
};

/* What the hooks return, and what they saw. */
struct script {
	int configure_rc, start_rc, wait_rc, serve_rc;
	char trace[256];
	int http_port, stop_status;
};

static void note(struct script *s, const char *what)
{
	size_t n = strlen(s->trace);

	snprintf(s->trace + n, sizeof(s->trace) - n, "%s%s", n ? " " : "", what);
}

static int h_configure(void *ctx)
{
	note(ctx, "configure");
	return ((struct script *)ctx)->configure_rc;
}

static int h_start(void *ctx, struct gnn_metrics *reg)
{
	note(ctx, reg != NULL ? "start" : "start(no registry)");
	return ((struct script *)ctx)->start_rc;
}

static int h_wait(void *ctx, int http_port)
{
	((struct script *)ctx)->http_port = http_port;
	note(ctx, "wait");
	return ((struct script *)ctx)->wait_rc;
}

static int h_serve(void *ctx)
{
	note(ctx, "serve");
	return ((struct script *)ctx)->serve_rc;
}

static void h_stop(void *ctx, int status)
{
	((struct script *)ctx)->stop_status = status;
	note(ctx, "stop");
}

static int h_exit_status(void *ctx, int rc)
{
	(void)ctx;
	return rc == GNN_EPROTO ? 7 : GNN_EXIT_FAILED;
}

/* Runs a lifecycle with s's answers and the given arguments. */
static int run(struct script *s, bool map_status, int argc, char **argv)
{
	const struct gnn_lifecycle lc = {
		.prog = "test_lifecycle", .summary = "test", .options = options, .http_addr = &cfg.http_addr,
		.http_port = &cfg.http_port, .ctx = s, .configure = h_configure, .start = h_start, .wait = h_wait,
		.serve = h_serve, .stop = h_stop, .exit_status = map_status ? h_exit_status : NULL,
	};

	s->trace[0] = '\0';
	s->stop_status = -1;
	return gnn_lifecycle_run(&lc, argc, argv);
}

static char *no_args[] = { "test_lifecycle", NULL };

static void test_lifecycle_order_and_finish(void)
{
	struct script s = { 0 };

	CHECK(run(&s, false, 1, no_args) == 0);
	CHECK(strcmp(s.trace, "configure start wait serve stop") == 0);
	CHECK(s.http_port > 0);   /* HTTP was up before wait */
	CHECK(s.stop_status == 0);
}

static void test_lifecycle_failures(void)
{
	struct script s = { .start_rc = GNN_EIO };

	/* a failed start: no wait, no serve, but stop */
	CHECK(run(&s, false, 1, no_args) == GNN_EXIT_FAILED);
	CHECK(strcmp(s.trace, "configure start stop") == 0 && s.stop_status == GNN_EXIT_FAILED);
	/* a configuration the service cannot run: 2 */
	s = (struct script){ .serve_rc = GNN_EINVAL };
	CHECK(run(&s, false, 1, no_args) == GNN_EXIT_USAGE);
	/* the service's own mapping */
	s = (struct script){ .wait_rc = GNN_EPROTO };
	CHECK(run(&s, true, 1, no_args) == 7);
	CHECK(strcmp(s.trace, "configure start wait stop") == 0 && s.stop_status == 7);
	/* stopped by a signal while waiting: 0 */
	s = (struct script){ .wait_rc = GNN_ECLOSED };
	CHECK(run(&s, false, 1, no_args) == 0);
	CHECK(strcmp(s.trace, "configure start wait stop") == 0);
}

static void test_lifecycle_options(void)
{
	struct script s = { .configure_rc = GNN_EINVAL };
	char *help[] = { "test_lifecycle", "--help", NULL };
	char *bad[] = { "test_lifecycle", "--http-port", "70000", NULL };
	int saved, devnull;

	/* configure refuses: 2, and nothing was started, so nothing stops */
	CHECK(run(&s, false, 1, no_args) == GNN_EXIT_USAGE);
	CHECK(strcmp(s.trace, "configure") == 0);
	s = (struct script){ 0 };
	CHECK(run(&s, false, 3, bad) == GNN_EXIT_USAGE);
	CHECK(s.trace[0] == '\0');
	/* --help: exit 0 without running anything (the text to /dev/null) */
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	devnull = open("/dev/null", O_WRONLY);
	if (!CHECK(saved >= 0 && devnull >= 0 && dup2(devnull, STDOUT_FILENO) >= 0))
		return;
	s.configure_rc = run(&s, false, 2, help);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(devnull);
	CHECK(s.configure_rc == 0 && s.trace[0] == '\0');
}

int main(void)
{
	gnn_log_init("test_lifecycle");
	RUN(test_lifecycle_order_and_finish);
	RUN(test_lifecycle_failures);
	RUN(test_lifecycle_options);
	return t_done();
}
