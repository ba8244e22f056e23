/* proc.c - gnn-local's children (proc.h): argument vectors, fork/exec
 * with a log file and a process group each, an exec failure reported back
 * through a pipe, polling reaps, the ordered stop (SIGTERM, a bounded
 * wait, SIGKILL), exit-status texts and log tails for the report. A
 * building block: it knows nothing of a run (pipeline.h). */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "sys.h"

extern char **environ;

int loc_argv_add(struct loc_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int k;

	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 32;
		char **v = realloc(a->v, cap * sizeof(*v));

		if (v == NULL)
			return GNN_ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	va_start(ap, fmt);
	k = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (k < 0)
		return GNN_ENOMEM;
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return GNN_OK;
}

int loc_argv_add_opt(struct loc_argv *a, const char *flag, int64_t v, int64_t least)
{
	return v >= least ? loc_argv_add(a, "--%s=%lld", flag, (long long)v) : GNN_OK;
}

void loc_argv_free(struct loc_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = a->cap = 0;
}

/* The children's environment: gnn-local's own variables (GNN_PARTS,
 * GNN_EPOCHS, ...) share names with the components' options and must not
 * configure them behind the flags' back; only the log level passes. */
static char **child_environ(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = calloc(n + 1, sizeof(*env));
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "GNN_", 4) != 0 || strncmp(environ[i], "GNN_LOG_LEVEL=", 14) == 0)
			env[k++] = environ[i];
	env[k] = NULL;
	return env;
}

/* Runs in the child between fork and exec: only async-signal-safe calls. */
static void exec_child(const char *path, char *const argv[], char *const envp[], int log_fd, int err_pipe,
		       pid_t parent)
{
	struct sigaction sa;
	sigset_t none;
	int e;

	setpgid(0, 0);
	/* Children must not outlive a gnn-local that was SIGKILLed. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)
		goto fail;
	execve(path, argv, envp);
fail:
	e = errno;
	if (write(err_pipe, &e, sizeof(e)) < 0) {
		/* nothing more to do: the parent sees the exit status */
	}
	_exit(127);
}

/* Room for one more entry in ps->v. */
static int procs_grow(struct loc_procs *ps)
{
	size_t cap = ps->cap ? 2 * ps->cap : 16;
	struct loc_proc **v;

	if (ps->n < ps->cap)
		return GNN_OK;
	v = realloc(ps->v, cap * sizeof(*v));
	if (v == NULL)
		return GNN_ENOMEM;
	ps->v = v;
	ps->cap = cap;
	return GNN_OK;
}

/* p's name and log file, and the binary's path into path (PATH_MAX bytes).
 * GNN_ERANGE (logged) when one does not fit. */
static int proc_names(struct loc_proc *p, const struct loc_procs *ps, const char *name, const char *binary,
		      char *path)
{
	if ((size_t)snprintf(p->name, sizeof(p->name), "%s", name) >= sizeof(p->name) ||
	    (size_t)snprintf(p->log, sizeof(p->log), "%s/%s.log", ps->logdir, name) >= sizeof(p->log) ||
	    (size_t)snprintf(path, PATH_MAX, "%s/%s", ps->bindir, binary) >= PATH_MAX) {
		GNN_ERROR("path_too_long", "component=%s", name);
		return GNN_ERANGE;
	}
	return GNN_OK;
}

/* Forks p (its log truncated, its pid set) and waits until path is exec'd
 * or has failed to be: then *exec_errno is exec's errno, else 0. GNN_EIO
 * (logged) when the log, the pipe or the fork fails: then no child. */
static int spawn(struct loc_proc *p, const char *path, char *const argv[], char *const env[], int *exec_errno)
{
	int log_fd, pipefd[2], rc = GNN_EIO;
	pid_t pid, self = getpid();
	ssize_t got;

	*exec_errno = 0;
	log_fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (log_fd < 0) {
		GNN_ERROR("open_failed", "file=%s error=\"%s\"", p->log, strerror(errno));
		return GNN_EIO;
	}
	/* exec failures come back through a close-on-exec pipe, so a missing
	 * binary is an error here rather than a child that "exited 127". */
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		GNN_ERROR("pipe_failed", "error=\"%s\"", strerror(errno));
		goto close_log;
	}
	pid = fork();
	if (pid < 0) {
		GNN_ERROR("fork_failed", "component=%s error=\"%s\"", p->name, strerror(errno));
		goto close_pipe;
	}
	if (pid == 0)
		exec_child(path, argv, env, log_fd, pipefd[1], self);
	setpgid(pid, pid); /* also here: no window where it shares our group */
	close(pipefd[1]);
	pipefd[1] = -1;
	do
		got = read(pipefd[0], exec_errno, sizeof(*exec_errno));
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof(*exec_errno))
		*exec_errno = 0;
	p->pid = pid;
	rc = GNN_OK;
close_pipe:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
close_log:
	close(log_fd);
	return rc;
}

int loc_proc_start(struct loc_procs *ps, const char *name, enum loc_role role, const struct loc_argv *argv,
		   struct loc_proc **out)
{
	struct loc_proc *p = NULL;
	char path[PATH_MAX];
	char **env = NULL;
	int exec_errno, rc;

	if ((rc = procs_grow(ps)) != GNN_OK)
		return rc;
	p = calloc(1, sizeof(*p));
	env = child_environ();
	if (p == NULL || env == NULL) {
		rc = GNN_ENOMEM;
		goto free_entry;
	}
	if ((rc = proc_names(p, ps, name, argv->v[0], path)) != GNN_OK)
		goto free_entry;
	p->role = role;
	if ((rc = spawn(p, path, argv->v, env, &exec_errno)) != GNN_OK)
		goto free_entry;
	p->running = true;
	ps->v[ps->n++] = p;
	if (exec_errno != 0) {
		GNN_ERROR("exec_failed", "component=%s path=%s error=\"%s\"", name, path, strerror(exec_errno));
		while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR)
			;
		p->running = false;
		p = NULL; /* owned by ps now */
		rc = GNN_EIO;
		goto free_entry;
	}
	GNN_INFO("started", "component=%s pid=%d log=%s", name, (int)p->pid, p->log);
	if (out != NULL)
		*out = p;
	p = NULL;
free_entry:
	free(env);
	free(p);
	return rc;
}

void loc_status_text(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, size, "wait status 0x%x", (unsigned)status);
}

static bool reap_one(struct loc_proc *p, int flags)
{
	char text[96];
	pid_t r;

	if (!p->running)
		return false;
	do
		r = waitpid(p->pid, &p->status, flags);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return false;
	if (r < 0) {
		/* Not our child any more (cannot happen unless reaped elsewhere):
		 * treat it as gone rather than waiting forever. */
		GNN_WARN("wait_failed", "component=%s pid=%d error=\"%s\"", p->name, (int)p->pid, strerror(errno));
		p->status = 0xff00; /* exit status 255 */
	}
	p->running = false;
	loc_status_text(p->status, text, sizeof(text));
	if (p->stopping || (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0))
		GNN_INFO("exited", "component=%s pid=%d status=\"%s\"", p->name, (int)p->pid, text);
	else
		GNN_WARN("exited", "component=%s pid=%d status=\"%s\" log=%s", p->name, (int)p->pid, text, p->log);
	return true;
}

struct loc_proc *loc_procs_reap(struct loc_procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		if (reap_one(ps->v[i], WNOHANG))
			return ps->v[i];
	return NULL;
}

static size_t running_with_role(const struct loc_procs *ps, enum loc_role role)
{
	size_t n = 0;

	for (size_t i = 0; i < ps->n; i++)
		n += ps->v[i]->running && ps->v[i]->role == role;
	return n;
}

void loc_procs_stop(struct loc_procs *ps, double timeout_s)
{
	static const char *const role_names[] = { "partition", "graphstores", "samplers", "trainers" };
	const struct timespec tick = { 0, 20 * 1000000L };

	for (int role = LOC_ROLE_TRAINER; role >= LOC_ROLE_PARTITION; role--) {
		double deadline = gnn_now() + timeout_s;
		size_t left = running_with_role(ps, (enum loc_role)role);

		if (left == 0)
			continue;
		GNN_INFO("stopping", "components=%s count=%zu signal=SIGTERM wait_s=%.0f", role_names[role], left,
			 timeout_s);
		for (size_t i = 0; i < ps->n; i++) {
			struct loc_proc *p = ps->v[i];

			if (p->running && p->role == (enum loc_role)role) {
				p->stopping = true;
				kill(-p->pid, SIGTERM);
			}
		}
		while ((left = running_with_role(ps, (enum loc_role)role)) > 0 && gnn_now() < deadline) {
			for (size_t i = 0; i < ps->n; i++)
				if (ps->v[i]->role == (enum loc_role)role)
					reap_one(ps->v[i], WNOHANG);
			nanosleep(&tick, NULL);
		}
		for (size_t i = 0; left > 0 && i < ps->n; i++) {
			struct loc_proc *p = ps->v[i];

			if (p->running && p->role == (enum loc_role)role) {
				GNN_WARN("killing", "component=%s pid=%d reason=\"still running %.0f s after SIGTERM\"",
					 p->name, (int)p->pid, timeout_s);
				kill(-p->pid, SIGKILL);
				reap_one(p, 0);
			}
		}
	}
}

void loc_procs_free(struct loc_procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i]);
	free(ps->v);
	ps->v = NULL;
	ps->n = ps->cap = 0;
}

void loc_log_tail(const char *path, int lines, FILE *out)
{
	enum { MAX_TAIL = 64 * 1024 };
	char *buf = NULL;
	struct stat st;
	off_t from;
	ssize_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int seen = 0;
	char *start;

	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(out, "--- %s: cannot be read (%s) ---\n", path, strerror(errno));
		goto close_file;
	}
	if (st.st_size == 0) {
		fprintf(out, "--- %s is empty ---\n", path);
		goto close_file;
	}
	from = st.st_size > MAX_TAIL ? st.st_size - MAX_TAIL : 0;
	buf = malloc(MAX_TAIL + 1);
	if (buf == NULL || (got = pread(fd, buf, MAX_TAIL, from)) <= 0) {
		fprintf(out, "--- %s: cannot be read ---\n", path);
		goto close_file;
	}
	buf[got] = '\0';
	/* Walk back over `lines` newlines (a final newline ends the last line). */
	start = buf + got;
	if (start > buf && start[-1] == '\n')
		start--;
	while (start > buf && seen < lines) {
		start--;
		if (*start == '\n')
			seen++;
	}
	if (*start == '\n')
		start++;
	fprintf(out, "--- last %d lines of %s ---\n%s%s--- end of %s ---\n", lines, path, start,
		buf[got - 1] == '\n' ? "" : "\n", path);
close_file:
	fflush(out);
	free(buf);
	if (fd >= 0)
		close(fd);
}
