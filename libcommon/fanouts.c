#include "fanouts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"

static void range_words(int32_t min, int32_t max, char *buf, size_t cap)
{
	if (min == -1)
		snprintf(buf, cap, "-1 (all neighbours), 0 (none) or 1..%d", (int)max);
	else
		snprintf(buf, cap, "%d..%d", (int)min, (int)max);
}

int gnn_fanouts_parse(const char *text, int32_t min, int32_t max, struct gnn_fanouts *out, char *why,
		      size_t cap)
{
	const char *p = text;
	char range[64];

	out->n = 0;
	range_words(min, max, range, sizeof(range));
	if (text == NULL || *text == '\0') {
		snprintf(why, cap, "no fanout given: one per layer, input layer first, each %s", range);
		return GNN_EINVAL;
	}
	for (;;) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno != 0 || (*end != ',' && *end != '\0') || v < min || v > max) {
			snprintf(why, cap, "expected comma-separated fanouts, each %s", range);
			return GNN_EINVAL;
		}
		if (out->n == GNN_PROTO_MAX_LAYERS) {
			snprintf(why, cap, "more than %d layers", GNN_PROTO_MAX_LAYERS);
			return GNN_EINVAL;
		}
		out->v[out->n++] = (int32_t)v;
		if (*end == '\0')
			return GNN_OK;
		p = end + 1;
	}
}

int gnn_fanouts_format(const struct gnn_fanouts *f, char *buf, size_t cap)
{
	size_t len = 0;

	if (cap == 0)
		return GNN_ERANGE;
	buf[0] = '\0';
	for (uint32_t i = 0; i < f->n; i++) {
		int k = snprintf(buf + len, cap - len, "%s%d", i ? "," : "", (int)f->v[i]);

		if (k < 0 || (size_t)k >= cap - len)
			return GNN_ERANGE;
		len += (size_t)k;
	}
	return GNN_OK;
}
