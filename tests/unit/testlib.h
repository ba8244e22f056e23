/* testlib.h - the smallest useful unit-test harness.
 *
 * Each test binary calls RUN(fn) per test; CHECK records a failure (file,
 * line, expression) and evaluates to whether it held, so a test may stop
 * with `if (!CHECK(p != NULL)) return;`. Output is one line per test,
 * "PASS name", "FAIL name: why" or "SKIP name: why", read by tests/run.sh.
 * t_done() returns the process exit status. TEST_ONLY=name (in the
 * environment) runs only that test, to chase one test's failure. */
#ifndef GNN_TESTLIB_H
#define GNN_TESTLIB_H

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int t_failed_checks;
static int t_failed_tests;
static const char *t_skip_reason;

static inline bool t_check(bool ok, const char *expr, const char *file, int line)
{
	if (!ok) {
		fprintf(stdout, "  check failed: %s (%s:%d)\n", expr, file, line);
		t_failed_checks++;
	}
	return ok;
}

#define CHECK(c) t_check((c), #c, __FILE__, __LINE__)
#define SKIP(reason) (t_skip_reason = (reason))

static inline void t_run(const char *name, void (*fn)(void))
{
	int before = t_failed_checks;
	const char *only = getenv("TEST_ONLY");

	if (only != NULL && only[0] != '\0' && strcmp(only, name) != 0)
		return;
	t_skip_reason = NULL;
	fflush(stdout);
	fn();
	if (t_failed_checks != before) {
		printf("FAIL %s: %d check(s) failed\n", name, t_failed_checks - before);
		t_failed_tests++;
	} else if (t_skip_reason != NULL) {
		printf("SKIP %s: %s\n", name, t_skip_reason);
	} else {
		printf("PASS %s\n", name);
	}
	fflush(stdout);
}

#define RUN(fn) t_run(#fn, fn)

/* The value of the Prometheus sample whose name-and-labels part is exactly
 * key (e.g. `requests_total{code="200"}`) in a scrape; NAN when absent. */
static inline double t_sample_value(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = text; (p = strstr(p, key)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

/* A TCP port free on 127.0.0.1 now, outside the kernel's ephemeral range
 * (and Kubernetes' NodePorts): a peer restarted on its port while others
 * keep dialling it cannot lose the port to a dial that connected to
 * itself (the kernel picking the dialled port as the source port). -1
 * when none is found. */
static inline int t_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int lo = 32768, hi = 60999, first, count;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768, hi = 60999;
		fclose(f);
	}
	first = lo > 11024 ? 10000 : hi + 1;
	count = lo > 11024 ? (lo < 30000 ? lo : 30000) - 10000 : 65535 - hi;
	for (int t = 0; count > 0 && t < 500; t++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), port = first + rand() % count, ok;

		if (fd < 0)
			return -1;
		a.sin_port = htons((uint16_t)port);
		ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (ok)
			return port;
	}
	return -1;
}

static inline int t_done(void)
{
	return t_failed_tests ? 1 : 0;
}

#endif
