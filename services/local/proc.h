/* proc.h - gnn-local's child processes: the sibling binaries (gnn-partition,
 * gnn-graphstore, gnn-sampler, gnn-trainer) started with fork/exec, each in
 * its own process group with stdout and stderr going to LOGDIR/<name>.log,
 * reaped by polling (waitpid WNOHANG) and stopped in order: trainers, then
 * samplers, then graph stores (SIGTERM, a bounded wait, then SIGKILL). */
#ifndef LOC_PROC_H
#define LOC_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define LOC_NAME_MAX 48

/* Stop order: a higher role stops first. */
enum loc_role { LOC_ROLE_PARTITION, LOC_ROLE_STORE, LOC_ROLE_SAMPLER, LOC_ROLE_TRAINER };

struct loc_proc {
	char name[LOC_NAME_MAX]; /* "graphstore-0": also the log file's base name */
	char log[PATH_MAX];      /* LOGDIR/<name>.log */
	enum loc_role role;
	pid_t pid;               /* also its process group */
	bool running;            /* started and not yet reaped */
	bool stopping;           /* we sent it SIGTERM: its exit is not a failure */
	int status;              /* waitpid status, valid once !running */
};

/* Every child started by one gnn-local run. bindir and logdir are borrowed. */
struct loc_procs {
	const char *bindir, *logdir;
	struct loc_proc **v; /* owned, each element too */
	size_t n, cap;
};

/* A growing, NULL-terminated argument vector; every string is owned. */
struct loc_argv {
	char **v;
	size_t n, cap;
};

/* Appends one printf-formatted argument. GNN_ENOMEM on failure. */
int loc_argv_add(struct loc_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "--flag=v" when v >= least (an option given to gnn-local);
 * otherwise nothing, so the component's own default holds. */
int loc_argv_add_opt(struct loc_argv *a, const char *flag, int64_t v, int64_t least);
/* Frees the strings and the vector; leaves *a empty and reusable. */
void loc_argv_free(struct loc_argv *a);

/* Starts bindir/argv->v[0] as a child named name (log file LOGDIR/name.log,
 * truncated) with the given role. The child gets its own process group, the
 * default signal dispositions, SIGTERM if gnn-local dies (PR_SET_PDEATHSIG),
 * and the environment without GNN_* variables other than GNN_LOG_LEVEL (its
 * configuration comes from flags only). argv is borrowed. On success *out
 * (may be NULL) points at the entry, owned by ps. Logs and returns GNN_EIO
 * when the log cannot be opened or fork fails, GNN_ENOMEM. */
int loc_proc_start(struct loc_procs *ps, const char *name, enum loc_role role, const struct loc_argv *argv,
		   struct loc_proc **out);

/* Reaps one child that exited since the last call (its running becomes
 * false, status set, an "exited" line logged); NULL when none did. */
struct loc_proc *loc_procs_reap(struct loc_procs *ps);

/* Stops every running child, role by role from trainers down to the
 * partitioner: SIGTERM to its process group, up to timeout_s for the role's
 * children to exit, then SIGKILL and reap. Logs each step. */
void loc_procs_stop(struct loc_procs *ps, double timeout_s);

/* Frees every entry (children must have been stopped). */
void loc_procs_free(struct loc_procs *ps);

/* "exit status 1" / "killed by signal 9 (Killed)" for a waitpid status. */
void loc_status_text(int status, char *buf, size_t size);

/* Prints the last `lines` lines of the file at path to out, framed by a
 * header naming the file; says so when the file is missing or empty. */
void loc_log_tail(const char *path, int lines, FILE *out);


#endif
