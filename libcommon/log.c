#include "log.h"
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *service_name = "gnn";
static volatile int min_level = GNN_LOG_INFO;

static const char *const level_names[] = { "DEBUG", "INFO ", "WARN ", "ERROR" };

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

void gnn_log_write(enum gnn_log_level level, const char *event, const char *fmt, ...)
{
	char line[4096];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int k;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	k = snprintf(line + n, sizeof(line) - n, ".%03ldZ %s %s %s ", ts.tv_nsec / 1000000L,
		     level_names[level < 0 || level > 3 ? 3 : level], service_name, event);
	n += k > 0 ? (size_t)k : 0;
	if (n < sizeof(line)) {
		va_start(ap, fmt);
		k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
		n += k > 0 ? (size_t)k : 0;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	while (n > 0 && line[n - 1] == ' ')
		n--;
	line[n++] = '\n';
	/* One write per line so lines from threads and processes never interleave. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
