#include "log.h"
#include "err.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *service_name = "gnn";
static volatile int min_level = GNN_LOG_INFO;

static const char *const level_names[] = { "DEBUG", "INFO ", "WARN ", "ERROR" };

/* Rate limits (log.h): every call site that wrote a limited line, linked
 * once under limits_mu; pending counts suppressed lines not yet reported,
 * so that ordinary lines look at the list only while there are some. Lock
 * order: limits_mu, then a site's mu. */
static pthread_mutex_t limits_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gnn_log_limit *limits;
static atomic_ullong limits_pending;
static atomic_uint limit_lines = GNN_LOG_LIMIT_LINES;
static atomic_uint limit_ms = GNN_LOG_LIMIT_S * 1000;
static atomic_llong limits_checked_ms; /* when a line last looked for ended intervals */

int gnn_log_init(const char *service)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	const char *env = getenv("GNN_LOG_LEVEL");

	if (service != NULL)
		service_name = service;
	if (env == NULL || *env == '\0')
		return GNN_OK;
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(env, names[i]) == 0) {
			min_level = i;
			return GNN_OK;
		}
	}
	gnn_log_write(GNN_LOG_WARN, "bad_log_level", "GNN_LOG_LEVEL=%s allowed=debug|info|warn|error", env);
	return GNN_EINVAL;
}

void gnn_log_set_level(enum gnn_log_level level)
{
	min_level = level;
}

bool gnn_log_enabled(enum gnn_log_level level)
{
	return (int)level >= min_level;
}

/* Formats and writes one line; suffix (may be "") goes after the caller's
 * pairs and survives the cut at 4 KiB. */
static void vwrite_line(enum gnn_log_level level, const char *event, const char *suffix,
			const char *fmt, va_list ap)
{
	char line[4096];
	size_t n, room, slen = strlen(suffix);
	struct timespec ts;
	struct tm tm;
	int k;

	if (slen > 256)
		slen = 256;
	room = sizeof(line) - slen - 2; /* the suffix and the newline always fit */
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, room, "%Y-%m-%dT%H:%M:%S", &tm);
	k = snprintf(line + n, room - n, ".%03ldZ %s %s %s ", ts.tv_nsec / 1000000L,
		     level_names[level < 0 || level > 3 ? 3 : level], service_name, event);
	n += k > 0 ? (size_t)k : 0;
	if (n < room) {
		k = vsnprintf(line + n, room - n, fmt, ap);
		n += k > 0 ? (size_t)k : 0;
	}
	if (n > room - 1)
		n = room - 1;
	while (n > 0 && line[n - 1] == ' ')
		n--;
	memcpy(line + n, suffix, slen);
	n += slen;
	line[n++] = '\n';
	/* One write per line so lines from threads and processes never interleave. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

static void write_line(enum gnn_log_level level, const char *event, const char *suffix,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void write_line(enum gnn_log_level level, const char *event, const char *suffix,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwrite_line(level, event, suffix, fmt, ap);
	va_end(ap);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* 0 means "no interval yet"; the clock is never there in practice. */
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1;
}

/* Writes the counts of the sites that suppressed lines: all of them, or
 * only those whose interval has ended. */
static void report_suppressed(bool all)
{
	long long now = now_ms(), ms = atomic_load(&limit_ms);
	unsigned long long dropped;
	long long over;

	pthread_mutex_lock(&limits_mu);
	for (struct gnn_log_limit *l = limits; l != NULL; l = l->next) {
		pthread_mutex_lock(&l->mu);
		dropped = 0;
		over = now - l->window_ms;
		if (l->suppressed > 0 && (all || over >= ms)) {
			dropped = l->suppressed;
			l->suppressed = 0;
			atomic_fetch_sub(&limits_pending, dropped);
		}
		pthread_mutex_unlock(&l->mu);
		if (dropped > 0)
			write_line(l->level, l->event, "", "suppressed=%llu over_s=%.1f", dropped,
				   (double)over / 1000.0);
	}
	pthread_mutex_unlock(&limits_mu);
}

/* While lines are suppressed, looks (at most every 100 ms, one thread at a
 * time, so a flood does not queue on limits_mu) for intervals that ended
 * without a next line to carry their count. */
static void maybe_report(void)
{
	long long now, last;

	if (atomic_load_explicit(&limits_pending, memory_order_relaxed) == 0)
		return;
	now = now_ms();
	last = atomic_load(&limits_checked_ms);
	if (now - last >= 100 && atomic_compare_exchange_strong(&limits_checked_ms, &last, now))
		report_suppressed(false);
}

void gnn_log_flush(void)
{
	if (atomic_load(&limits_pending) > 0)
		report_suppressed(true);
}

int gnn_log_set_limit(unsigned int lines, unsigned int interval_ms)
{
	if (interval_ms == 0)
		return GNN_EINVAL;
	atomic_store(&limit_lines, lines);
	atomic_store(&limit_ms, interval_ms);
	return GNN_OK;
}

void gnn_log_write_limited(struct gnn_log_limit *lim, enum gnn_log_level level, const char *event,
			   const char *fmt, ...)
{
	long long now = now_ms(), ms = atomic_load(&limit_ms), over = 0;
	unsigned int max = atomic_load(&limit_lines);
	unsigned long long dropped = 0;
	char suffix[64] = "";
	bool keep;
	va_list ap;

	if (!atomic_load_explicit(&lim->linked, memory_order_acquire)) {
		pthread_mutex_lock(&limits_mu);
		if (!atomic_load_explicit(&lim->linked, memory_order_relaxed)) {
			lim->level = level;
			lim->event = event;
			lim->next = limits;
			limits = lim;
			atomic_store_explicit(&lim->linked, true, memory_order_release);
		}
		pthread_mutex_unlock(&limits_mu);
	}
	pthread_mutex_lock(&lim->mu);
	if (lim->window_ms == 0 || now - lim->window_ms >= ms) {
		/* A new interval: what the last one dropped rides on this line. */
		dropped = lim->suppressed;
		over = now - lim->window_ms;
		lim->window_ms = now;
		lim->written = 0;
		lim->suppressed = 0;
		atomic_fetch_sub(&limits_pending, dropped);
	}
	keep = max == 0 || lim->written < max;
	if (keep) {
		lim->written++;
	} else {
		lim->suppressed++;
		atomic_fetch_add(&limits_pending, 1);
	}
	pthread_mutex_unlock(&lim->mu);
	/* After this site's own count is taken, so that it rides on this
	 * line rather than on a line of its own. */
	maybe_report();
	if (!keep)
		return;
	if (dropped > 0)
		snprintf(suffix, sizeof(suffix), " suppressed=%llu over_s=%.1f", dropped,
			 (double)over / 1000.0);
	va_start(ap, fmt);
	vwrite_line(level, event, suffix, fmt, ap);
	va_end(ap);
}

void gnn_log_write(enum gnn_log_level level, const char *event, const char *fmt, ...)
{
	va_list ap;

	maybe_report();
	va_start(ap, fmt);
	vwrite_line(level, event, "", fmt, ap);
	va_end(ap);
}
