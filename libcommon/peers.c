/* peers.c - see peers.h. */
#include "peers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "log.h"

void gnn_peers_free(char **urls, size_t n)
{
	if (urls == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
}

static int expand_pattern(const char *what, const char *pattern, int64_t count, size_t max_n,
			  char **v)
{
	const char *at = strstr(pattern, "%d");
	size_t len = strlen(pattern);

	if (at == NULL || strstr(at + 2, "%d") != NULL || count <= 0 || (uint64_t)count > max_n) {
		GNN_ERROR("bad_config", "%s-pattern=\"%s\" count=%" PRId64 " reason=\"the pattern needs exactly "
			  "one %%d and a count from 1 to %zu\"", what, pattern, count, max_n);
		return GNN_EINVAL;
	}
	for (int64_t i = 0; i < count; i++) {
		if ((v[i] = malloc(len + 24)) == NULL)
			return GNN_ENOMEM;
		snprintf(v[i], len + 24, "%.*s%" PRId64 "%s", (int)(at - pattern), pattern, i, at + 2);
	}
	return GNN_OK;
}

static int split_list(const char *what, const char *list, size_t k, char **v)
{
	const char *p = list;

	for (size_t used = 0; used < k; used++) {
		const char *end = strchr(p, ','), *stop = end ? end : p + strlen(p);

		while (p < stop && (*p == ' ' || *p == '\t'))
			p++;
		while (stop > p && (stop[-1] == ' ' || stop[-1] == '\t'))
			stop--;
		if (stop == p) {
			GNN_ERROR("bad_config", "%ss=\"%s\" reason=\"empty URL in the list\"", what, list);
			return GNN_EINVAL;
		}
		if ((v[used] = strndup(p, (size_t)(stop - p))) == NULL)
			return GNN_ENOMEM;
		p = end ? end + 1 : p;
	}
	return GNN_OK;
}

int gnn_peers_parse(const char *what, const char *list, const char *pattern, int64_t count,
		    size_t max_n, char ***urls, size_t *n)
{
	size_t k = 1;
	char **v;
	int rc;

	*urls = NULL;
	*n = 0;
	if ((list == NULL) == (pattern == NULL)) {
		GNN_ERROR("bad_config", "reason=\"give --%ss URL,... or --%s-pattern (exactly one of them)\"",
			  what, what);
		return GNN_EINVAL;
	}
	if (list != NULL) {
		for (const char *c = list; *c; c++)
			k += *c == ',';
		if (k > max_n) {
			GNN_ERROR("bad_config", "%ss=%zu reason=\"at most %zu URLs\"", what, k, max_n);
			return GNN_EINVAL;
		}
	} else {
		k = count > 0 && (uint64_t)count <= max_n ? (size_t)count : 1;
	}
	if ((v = calloc(k, sizeof(*v))) == NULL)
		return GNN_ENOMEM;
	rc = list != NULL ? split_list(what, list, k, v) : expand_pattern(what, pattern, count, max_n, v);
	if (rc != GNN_OK) {
		gnn_peers_free(v, k);
		return rc;
	}
	*urls = v;
	*n = k;
	return GNN_OK;
}

int gnn_host_ordinal(const char *host, int64_t *out)
{
	const char *dash = host ? strrchr(host, '-') : NULL;
	int64_t v = 0;

	if (dash == NULL || dash[1] == '\0')
		return GNN_EINVAL;
	for (const char *c = dash + 1; *c != '\0'; c++) {
		if (*c < '0' || *c > '9')
			return GNN_EINVAL;
		v = v * 10 + (*c - '0');
		if (v > 65535)
			return GNN_EINVAL;
	}
	*out = v;
	return GNN_OK;
}

int gnn_own_ordinal(const char *flag, int64_t *out)
{
	char host[256] = "";
	const char *src = "HOSTNAME";
	const char *env = getenv("HOSTNAME");

	if (env != NULL && *env != '\0') {
		snprintf(host, sizeof(host), "%s", env);
	} else if (gethostname(host, sizeof(host) - 1) == 0) {
		src = "gethostname";
	} else {
		GNN_ERROR("bad_config", "reason=\"--%s not given and the host name is unknown (%s); pass --%s\"",
			  flag, strerror(errno), flag);
		return GNN_EINVAL;
	}
	if (gnn_host_ordinal(host, out) != GNN_OK) {
		GNN_ERROR("bad_config", "host=\"%s\" from=%s reason=\"--%s not given and the host name does not "
			  "end in -<number> as StatefulSet pods do (trainer-0, graphstore-1, ...); pass --%s\"",
			  host, src, flag, flag);
		return GNN_EINVAL;
	}
	GNN_INFO("ordinal_from_host", "host=%s %s=%" PRId64, host, flag, *out);
	return GNN_OK;
}
