/* log.h - one line per event on stderr:
 *
 *   2026-11-22T10:04:05.123Z INFO  gnn-partition partition_done parts=4 edge_cut=1234
 *
 * timestamp (UTC), level, service name, event word, then key=value pairs.
 * Thread-safe: each line is formatted into a buffer and written with one
 * write(2). The level comes from GNN_LOG_LEVEL (debug|info|warn|error). */
#ifndef GNN_LOG_H
#define GNN_LOG_H

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

#endif
