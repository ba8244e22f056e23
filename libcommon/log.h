/* log.h - one line per event on stderr:
 *
 *   2026-11-22T10:04:05.123Z INFO  gnn-partition partition_done parts=4 edge_cut=1234
 *
 * timestamp (UTC), level, service name, event word, then key=value pairs.
 * Thread-safe: each line is formatted into a buffer and written with one
 * write(2). The level comes from GNN_LOG_LEVEL (debug|info|warn|error). */
#ifndef GNN_LOG_H
#define GNN_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

enum gnn_log_level { GNN_LOG_DEBUG, GNN_LOG_INFO, GNN_LOG_WARN, GNN_LOG_ERROR };

/* Sets the service name printed on every line (the string must outlive the
 * process, e.g. a literal) and reads GNN_LOG_LEVEL. Returns GNN_EINVAL for an
 * unknown level name (the level then stays info). */
int gnn_log_init(const char *service);

void gnn_log_set_level(enum gnn_log_level level);
bool gnn_log_enabled(enum gnn_log_level level);

/* Writes one line: event is a single word; fmt (printf-style) holds the
 * key=value pairs and may be "" for none. Lines longer than 4 KiB are cut. */
void gnn_log_write(enum gnn_log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define GNN_LOG(level, event, ...)                                  \
	do {                                                            \
		if (gnn_log_enabled(level))                                 \
			gnn_log_write(level, event, __VA_ARGS__);               \
	} while (0)
#define GNN_DEBUG(event, ...) GNN_LOG(GNN_LOG_DEBUG, event, __VA_ARGS__)
#define GNN_INFO(event, ...) GNN_LOG(GNN_LOG_INFO, event, __VA_ARGS__)
#define GNN_WARN(event, ...) GNN_LOG(GNN_LOG_WARN, event, __VA_ARGS__)
#define GNN_ERROR(event, ...) GNN_LOG(GNN_LOG_ERROR, event, __VA_ARGS__)

/* Rate-limited lines, for events a client or the system can repeat at will
 * (an accept failing at the descriptor limit, a peer's error per request):
 *
 *   GNN_WARN_LIMITED("http_server", "msg=\"%s\"", msg);
 *
 * Each call site has its own limit (the key is the site, so its event):
 * at most GNN_LOG_LIMIT_LINES lines per GNN_LOG_LIMIT_S seconds. Further
 * lines are counted, not written. The first line of the next interval
 * carries ` suppressed=N over_s=S` (lines dropped over the S seconds since
 * the interval began); when none comes, the count is written as its own
 * line (`EVENT suppressed=N over_s=S`) by the next log line of any site
 * after the interval, or by gnn_log_flush(). No allocation; a short mutex
 * per site. */
#define GNN_LOG_LIMIT_LINES 5
#define GNN_LOG_LIMIT_S 10

/* One call site's state; static, zero-initialised by GNN_LOG_LIMIT_INIT. */
struct gnn_log_limit {
	pthread_mutex_t mu;
	atomic_bool linked;        /* on the list gnn_log_flush() walks */
	struct gnn_log_limit *next;
	enum gnn_log_level level;  /* of the site's first line, for the summary */
	const char *event;
	long long window_ms;       /* start of the interval (CLOCK_MONOTONIC); 0: none yet */
	unsigned long long written, suppressed;
};
#define GNN_LOG_LIMIT_INIT { .mu = PTHREAD_MUTEX_INITIALIZER }

void gnn_log_write_limited(struct gnn_log_limit *lim, enum gnn_log_level level, const char *event,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Writes the count of every site that suppressed lines since its last
 * report, whether or not its interval has ended (at a clean stop). */
void gnn_log_flush(void);

/* Changes the limit for every site: lines per interval_ms (tests use short
 * intervals). lines 0 turns limiting off. Returns GNN_EINVAL for
 * interval_ms 0. */
int gnn_log_set_limit(unsigned int lines, unsigned int interval_ms);

#define GNN_LOG_LIMITED(level, event, ...)                                          \
	do {                                                                        \
		static struct gnn_log_limit gnn_log_limit_ = GNN_LOG_LIMIT_INIT;    \
		if (gnn_log_enabled(level))                                         \
			gnn_log_write_limited(&gnn_log_limit_, level, event, __VA_ARGS__); \
	} while (0)
#define GNN_WARN_LIMITED(event, ...) GNN_LOG_LIMITED(GNN_LOG_WARN, event, __VA_ARGS__)
#define GNN_ERROR_LIMITED(event, ...) GNN_LOG_LIMITED(GNN_LOG_ERROR, event, __VA_ARGS__)

#endif
