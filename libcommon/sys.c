#include "sys.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"

static volatile sig_atomic_t stop_flag;
static sem_t stop_sem;                  /* posted by the handler when a watchdog waits */
static volatile sig_atomic_t watchdog_on;
static atomic_bool exit_begun;          /* gnn_exit_begin */
static double watchdog_grace_s;

double gnn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double gnn_thread_cpu_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void gnn_deadline(clockid_t clock, long ms, struct timespec *ts)
{
	clock_gettime(clock, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int gnn_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rv;

	if (pthread_mutex_init(mu, NULL) != 0)
		return GNN_ENOMEM;
	if (pthread_condattr_init(&ca) != 0) {
		pthread_mutex_destroy(mu);
		return GNN_ENOMEM;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rv = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rv != 0) {
		pthread_mutex_destroy(mu);
		return GNN_ENOMEM;
	}
	return GNN_OK;
}

uint64_t gnn_peak_rss_bytes(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_maxrss * 1024u;
}

uint64_t gnn_rss_bytes(void)
{
	unsigned long long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The cgroup's CPU limit as quota/period, 0 when there is none. cgroup v2
 * has "max 100000" or "50000 100000" in cpu.max; v1 has -1 or the quota in
 * cpu.cfs_quota_us. Only the process's own cgroup is read (what a
 * container mounts at /sys/fs/cgroup), not its parents. */
static double cgroup_cpu_limit(void)
{
	long long quota = -1, period = 0;
	char word[32];
	FILE *f;

	if ((f = fopen("/sys/fs/cgroup/cpu.max", "r")) != NULL) {
		if (fscanf(f, "%31s %lld", word, &period) == 2 && strcmp(word, "max") != 0)
			quota = strtoll(word, NULL, 10);
		fclose(f);
	} else if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r")) != NULL) {
		if (fscanf(f, "%lld", &quota) != 1)
			quota = -1;
		fclose(f);
		if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r")) != NULL) {
			if (fscanf(f, "%lld", &period) != 1)
				period = 0;
			fclose(f);
		}
	}
	return quota > 0 && period > 0 ? (double)quota / (double)period : 0;
}

unsigned gnn_cpu_count(void)
{
	cpu_set_t set;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = online > 0 ? (unsigned)online : 1;
	double limit = cgroup_cpu_limit();

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		n = (unsigned)CPU_COUNT(&set);
	if (limit > 0 && limit < n) {
		unsigned up = (unsigned)limit;

		n = up < limit ? up + 1 : up;
	}
	return n > 0 ? n : 1;
}

uint64_t gnn_memory_limit_bytes(void)
{
	static const char *const files[] = { "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes" };
	unsigned long long v = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		FILE *f = fopen(files[i], "r");
		int got;

		if (f == NULL)
			continue;
		got = fscanf(f, "%llu", &v);   /* "max" (v2, none) does not scan */
		fclose(f);
		/* v1 says "none" with a huge page-rounded number */
		return got == 1 && v < (1ull << 60) ? (uint64_t)v : 0;
	}
	return 0;
}

void gnn_remove_stale(const char *dir, const char *prefix, const char *suffix, const char *why)
{
	size_t np = strlen(prefix), ns = strlen(suffix);
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || len < np + ns ||
		    strncmp(e->d_name, prefix, np) != 0 || strcmp(e->d_name + len - ns, suffix) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (gnn_rm_rf(path) == GNN_OK)
			GNN_INFO("stale_removed", "path=%s reason=\"%s\"", path, why);
	}
	closedir(d);
}

int gnn_mkdir_p(const char *dir)
{
	char *p, *copy = strdup(dir);
	int rc = GNN_OK;

	if (copy == NULL)
		return GNN_ENOMEM;
	for (p = copy + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
			GNN_ERROR("mkdir_failed", "dir=%s error=\"%s\"", copy, strerror(errno));
			rc = GNN_EIO;
			break;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	return rc;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) != 0 && errno != ENOENT) {
		GNN_ERROR("remove_failed", "path=%s error=\"%s\"", path, strerror(errno));
		return -1;
	}
	return 0;
}

int gnn_rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? GNN_OK : GNN_EIO;
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) == 0 ? GNN_OK : GNN_EIO;
}

int gnn_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = GNN_OK;

	if (fd < 0)
		return GNN_EIO;
	if (fsync(fd) != 0)
		rc = GNN_EIO;
	close(fd);
	return rc;
}

int gnn_pread_all(int fd, void *buf, size_t n, off_t off)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = pread(fd, (char *)buf + got, n - got, off + (off_t)got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return GNN_EIO;
		got += (size_t)k;
	}
	return GNN_OK;
}

int gnn_pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	for (size_t put = 0; put < n;) {
		ssize_t k = pwrite(fd, (const char *)buf + put, n - put, off + (off_t)put);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return GNN_EIO;
		}
		put += (size_t)k;
	}
	return GNN_OK;
}

static void on_signal(int sig)
{
	stop_flag = sig;
	if (watchdog_on)
		sem_post(&stop_sem);    /* async-signal-safe */
}

int gnn_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return GNN_EIO;
	signal(SIGPIPE, SIG_IGN);
	return GNN_OK;
}

bool gnn_stop_requested(void)
{
	return stop_flag != 0;
}

unsigned gnn_fault_seconds(const char *env, const char *what)
{
	const char *v = getenv(env);
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0')
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (*end != '\0' || errno != 0 || n > 3600 || v[0] == '-') {
		GNN_WARN("bad_config", "env=%s value=%s reason=\"0 to 3600 seconds: ignored\"", env, v);
		return 0;
	}
	GNN_WARN("fault_injected", "env=%s seconds=%lu reason=\"%s (a test's fault)\"", env, n, what);
	return (unsigned)n;
}

void gnn_exit_begin(void)
{
	atomic_store(&exit_begun, true);
}

bool gnn_exiting(void)
{
	return stop_flag != 0 || atomic_load(&exit_begun);
}

int gnn_stop_signal(void)
{
	return (int)stop_flag;
}

/* Waits for the first stop signal, then for the grace period; a process
 * still running then is ended here. */
static void *watchdog(void *arg)
{
	struct timespec until;
	double t0;

	(void)arg;
	while (sem_wait(&stop_sem) != 0)
		;
	t0 = gnn_now();
	gnn_deadline(CLOCK_MONOTONIC, (long)(watchdog_grace_s * 1000), &until);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0)
		;
	GNN_ERROR("stop_forced", "signal=%d waited_s=%.1f reason=\"still busy after the stop signal (see the lines "
		  "before for what it waited on): exiting without finishing\"", (int)stop_flag, gnn_now() - t0);
	_exit(128 + (int)stop_flag);
}

int gnn_stop_watchdog(double grace_s)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc = GNN_EIO;

	if (watchdog_on || grace_s <= 0 || sem_init(&stop_sem, 0, 0) != 0)
		return GNN_EINVAL;
	watchdog_grace_s = grace_s;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, watchdog, NULL) == 0) {
		watchdog_on = 1;
		if (stop_flag)              /* a signal before the watchdog was on */
			sem_post(&stop_sem);
		rc = GNN_OK;
	}
	pthread_attr_destroy(&attr);
	return rc;
}

/* Faulting a table in 4 KiB at a time is most of the cost of filling it
 * on a virtual machine: 1.2 GB (a graph store's share of ogbn-mag's
 * embeddings) took 4.7-6.0 s here against 0.6-1.3 s with 2 MiB pages
 * (memset of a fresh mapping with and without MADV_HUGEPAGE, beside a
 * training run). Where the kernel has THP off or "never", this is a plain
 * mapping. */
void *gnn_big_alloc(size_t bytes)
{
	void *p;

	if (bytes == 0)
		return NULL;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, bytes, MADV_HUGEPAGE);  /* advice: refused or not, the memory is there */
#endif
	return p;
}

void gnn_big_free(void *p, size_t bytes)
{
	if (p != NULL)
		munmap(p, bytes);
}

/* Every minibatch allocates and frees buffers of megabytes: the stores'
 * answers, the blocks, the reply and nng's copy of it (36 MB each on
 * `small` with batch 1024, fanouts 15,10,5). With glibc's defaults each is
 * mapped, zeroed by the kernel page by page and unmapped again; over
 * 10,000 page faults per minibatch, a third of the sampler's CPU. So: no
 * mmap for large blocks, one arena (a freed per-thread heap would be
 * unmapped whole; the trainer's loader threads and nng's threads allocate
 * too), and free memory goes back to the system only above 1 GB of free
 * heap top. Measured with tests/bench_sampling.sh: 63 -> 36 ms of sampler
 * CPU per minibatch and no page faults once warm; the price is that the
 * resident size stays at its peak. */
void gnn_keep_heap(void)
{
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
}
