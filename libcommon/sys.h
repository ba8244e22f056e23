/* sys.h - small process and filesystem facilities every service needs:
 * monotonic time, memory use, directory creation/removal with fsync, and
 * SIGTERM/SIGINT handling (handlers only set a flag; loops poll it). */
#ifndef GNN_SYS_H
#define GNN_SYS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Seconds on a monotonic clock (for durations). */
double gnn_now(void);
/* CPU seconds the calling thread has used: set against gnn_now, what a
 * busy machine's other processes took from it. */
double gnn_thread_cpu_s(void);

/* *ts := the time on clock (CLOCK_REALTIME for a default condition
 * variable, CLOCK_MONOTONIC for one set up with it) ms milliseconds from
 * now: the deadline of a pthread_cond_timedwait slice. */
void gnn_deadline(clockid_t clock, long ms, struct timespec *ts);

/* A mutex and a condition variable on CLOCK_MONOTONIC (wait on it with
 * gnn_deadline(CLOCK_MONOTONIC, ...): a wall-clock step cannot stretch a
 * timeout). GNN_OK, or GNN_ENOMEM with nothing left to destroy. */
int gnn_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv);

/* Peak resident set size of this process (getrusage), in bytes. */
uint64_t gnn_peak_rss_bytes(void);
/* Current resident set size (/proc/self/statm), in bytes; 0 if unknown. */
uint64_t gnn_rss_bytes(void);

/* CPUs this process may use: its CPU affinity, lowered to the CPU limit of
 * its cgroup rounded up (a container's `resources.limits.cpu`: cgroup v2
 * cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us), at least 1. A
 * container sees every CPU of its node; this is what it may keep busy. */
unsigned gnn_cpu_count(void);

/* The memory limit of this process's cgroup (a container's
 * `resources.limits.memory`: cgroup v2 memory.max, v1
 * memory.limit_in_bytes), 0 when it has none. */
uint64_t gnn_memory_limit_bytes(void);

/* Creates dir and its missing parents (mode 0755). */
int gnn_mkdir_p(const char *dir);
/* Removes path recursively (a file or a directory tree); missing is OK. */
int gnn_rm_rf(const char *path);
/* Removes (recursively) every entry of dir whose name starts with prefix
 * and ends with suffix (either may be ""): the temporary files and folders
 * of writers that died mid-write. Logs INFO stale_removed with why per
 * entry; a missing dir is nothing to do. Call it only where no live
 * process writes such entries. */
void gnn_remove_stale(const char *dir, const char *prefix, const char *suffix, const char *why);
/* fsyncs a directory so a rename inside it is durable. */
int gnn_fsync_dir(const char *dir);
/* Reads exactly n bytes of fd at off into buf (retrying short reads and
 * EINTR). GNN_EIO on an error or the file's end before n bytes. */
int gnn_pread_all(int fd, void *buf, size_t n, off_t off);
/* Writes exactly n bytes of buf to fd at off (retrying short writes and
 * EINTR). GNN_EIO on an error, errno set. */
int gnn_pwrite_all(int fd, const void *buf, size_t n, off_t off);

/* Installs SIGTERM/SIGINT handlers that set the stop flag, and ignores
 * SIGPIPE (peers closing sockets must not kill a service). */
int gnn_signals_install(void);
/* True once SIGTERM or SIGINT arrived. */
bool gnn_stop_requested(void);
/* Marks the process as on its way out for another reason than a signal (a
 * failure, a planned exit such as the sampler's graph-changed one): the
 * bounded waits on the way out shrink as after a signal (gnn_close_limit). */
void gnn_exit_begin(void);
/* True once a stop signal arrived or gnn_exit_begin was called. */
bool gnn_exiting(void);
/* For a process that allocates and frees buffers of megabytes all the
 * time (minibatches, feature rows, nng's messages): glibc keeps them in
 * one heap instead of mapping and faulting them in anew (sys.c says why
 * and what it cost). Call before any thread starts. */
void gnn_keep_heap(void);
/* Zeroed memory for a large table that lives long and is read and
 * written at random rows (the graph stores' embeddings): its own mapping,
 * with transparent huge pages asked for (MADV_HUGEPAGE; sys.c says why).
 * NULL for 0 bytes or when it cannot be mapped. The caller owns it and
 * gives it back with gnn_big_free(p, the same bytes); NULL is fine. */
void *gnn_big_alloc(size_t bytes);
void gnn_big_free(void *p, size_t bytes);
/* The signal that arrived (the last one), 0 when none. */
int gnn_stop_signal(void);
/* A bound on shutdown: grace_s seconds after the first stop signal a
 * process that has not exited logs ERROR stop_forced and ends at once
 * (_exit(128 + signal)), whatever it waits on. For services, whose orderly
 * stop cancels what they wait for and ends well within it; not for
 * gnn-local, which waits for its children. Call once, after
 * gnn_signals_install. */
int gnn_stop_watchdog(double grace_s);
/* A test's fault from the environment (docs/reliability.md, "Injected
 * faults"): the seconds (0 to 3600) that variable env asks for, 0 when it
 * is unset or bad (a WARN bad_config says so). A value given is logged
 * (WARN fault_injected, with `what`, which says what the delay does). */
unsigned gnn_fault_seconds(const char *env, const char *what);
/* The services' grace: they end within 5 s of SIGTERM (docs/reliability.md). */
#define GNN_STOP_GRACE_S 4.0

#endif
