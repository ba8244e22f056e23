#include "fanouts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

static void range_words(int32_t min, int32_t max, char *buf, size_t cap)
{
	if (min == -1)
		snprintf(buf, cap, "-1 (all neighbours), 0 (none) or 1..%d", (int)max);
	else
		snprintf(buf, cap, "%d..%d", (int)min, (int)max);
}

/* One comma-separated list from p up to ';' or the end; *n layers into v,
 * *next past it. */
static int parse_list(const char *p, int32_t min, int32_t max, int32_t *v, uint32_t *n, const char **next,
		      const char *range, char *why, size_t why_len)
{
	*n = 0;
	for (;;) {
		char *end;
		long x;

		errno = 0;
		x = strtol(p, &end, 10);
		if (end == p || errno != 0 || (*end != ',' && *end != '\0' && *end != ';') || x < min || x > max) {
			snprintf(why, why_len, "expected comma-separated fanouts, each %s (lists of relations: REL=F0,F1;...)",
				 range);
			return GNN_EINVAL;
		}
		if (*n == GNN_PROTO_MAX_LAYERS) {
			snprintf(why, why_len, "more than %d layers", GNN_PROTO_MAX_LAYERS);
			return GNN_EINVAL;
		}
		v[(*n)++] = (int32_t)x;
		if (*end != ',') {
			*next = end;
			return GNN_OK;
		}
		p = end + 1;
	}
}

int gnn_fanouts_parse(const char *text, int32_t min, int32_t max, struct gnn_fanouts *out, char *why,
		      size_t why_len)
{
	const char *p = text;
	char range[64];

	memset(out, 0, sizeof(*out));
	range_words(min, max, range, sizeof(range));
	if (text == NULL || *text == '\0') {
		snprintf(why, why_len, "no fanout given: one per layer, input layer first, each %s", range);
		return GNN_EINVAL;
	}
	for (;;) {
		const char *eq = strchr(p, '='), *semi = strchr(p, ';');
		int32_t v[GNN_PROTO_MAX_LAYERS], *dst;
		uint32_t n;
		int rc;

		if (eq != NULL && (semi == NULL || eq < semi)) {
			size_t len = (size_t)(eq - p);

			if (len == 1 && *p == '*') {
				dst = out->v;
			} else if (len == 0 || len >= sizeof(out->named[0].rel)) {
				snprintf(why, why_len, "a relation's name must come before '=' (at most %zu bytes)",
					 sizeof(out->named[0].rel) - 1);
				return GNN_EINVAL;
			} else if (out->num_named == GNN_FANOUTS_MAX_NAMED) {
				snprintf(why, why_len, "more than %d relations named: give the others one list with '*='",
					 GNN_FANOUTS_MAX_NAMED);
				return GNN_EINVAL;
			} else {
				memcpy(out->named[out->num_named].rel, p, len);
				out->named[out->num_named].rel[len] = '\0';
				dst = out->named[out->num_named++].v;
			}
			p = eq + 1;
		} else {
			dst = out->v;
		}
		if (dst == out->v) {
			if (out->has_default) {
				snprintf(why, why_len, "two lists for every other relation ('*=' or a list without a name)");
				return GNN_EINVAL;
			}
			out->has_default = true;
		}
		if ((rc = parse_list(p, min, max, v, &n, &p, range, why, why_len)) != GNN_OK)
			return rc;
		if (out->n != 0 && n != out->n) {
			snprintf(why, why_len, "every list needs the same number of layers (%u and %u)", out->n, n);
			return GNN_EINVAL;
		}
		out->n = n;
		memcpy(dst, v, n * sizeof(*v));
		if (*p == '\0')
			return GNN_OK;
		p++;  /* past ';' */
	}
}

bool gnn_fanouts_any(const int32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] != 0)
			return true;
	return false;
}

int gnn_fanouts_for(const char *text, const struct gnn_schema *s, int32_t *out, uint32_t *layers, char *why,
		    size_t why_len)
{
	struct gnn_fanouts f;
	int rc;

	if ((rc = gnn_fanouts_parse(text, -1, GNN_PROTO_MAX_FANOUT, &f, why, why_len)) != GNN_OK ||
	    (rc = gnn_fanouts_resolve(&f, s, out, why, why_len)) != GNN_OK)
		return rc;
	*layers = f.n;
	return GNN_OK;
}

int gnn_fanouts_resolve(const struct gnn_fanouts *f, const struct gnn_schema *s, int32_t *out, char *why,
			size_t why_len)
{
	uint32_t R = s->num_rels;
	int32_t by_rel[GNN_MAX_RELS];

	for (uint32_t r = 0; r < R; r++)
		by_rel[r] = -1;
	for (uint32_t k = 0; k < f->num_named; k++) {
		int32_t r = gnn_schema_rel(s, f->named[k].rel);

		if (r < 0) {
			snprintf(why, why_len, "%s relation '%s' in the fanouts: give one of the graph's (src:rel:dst when "
				 "a name is shared)", r == -2 ? "ambiguous" : "unknown", f->named[k].rel);
			return GNN_EINVAL;
		}
		if (by_rel[r] >= 0) {
			snprintf(why, why_len, "relation '%s' has two fanout lists", f->named[k].rel);
			return GNN_EINVAL;
		}
		by_rel[r] = (int32_t)k;
	}
	for (uint32_t r = 0; r < R; r++) {
		const int32_t *v = by_rel[r] >= 0 ? f->named[by_rel[r]].v : f->v;

		if (by_rel[r] < 0 && !f->has_default) {
			char label[3 * GNN_NAME_MAX];

			gnn_schema_rel_label(s, r, label, sizeof(label));
			snprintf(why, why_len, "relation %s has no fanouts: name it, or give every other relation a list "
				 "with '*='", label);
			return GNN_EINVAL;
		}
		for (uint32_t l = 0; l < f->n; l++)
			out[(size_t)l * R + r] = v[l];
	}
	return GNN_OK;
}

/* Appends "name=" (unless NULL) and the list v to buf at *len. */
static int format_list(const char *name, const int32_t *v, uint32_t n, char *buf, size_t cap, size_t *len)
{
	int k;

	if (name != NULL) {
		k = snprintf(buf + *len, cap - *len, "%s%s=", *len ? ";" : "", name);
		if (k < 0 || (size_t)k >= cap - *len)
			return GNN_ERANGE;
		*len += (size_t)k;
	} else if (*len > 0) {
		k = snprintf(buf + *len, cap - *len, ";*=");
		if (k < 0 || (size_t)k >= cap - *len)
			return GNN_ERANGE;
		*len += (size_t)k;
	}
	for (uint32_t i = 0; i < n; i++) {
		k = snprintf(buf + *len, cap - *len, "%s%d", i ? "," : "", (int)v[i]);
		if (k < 0 || (size_t)k >= cap - *len)
			return GNN_ERANGE;
		*len += (size_t)k;
	}
	return GNN_OK;
}

int gnn_fanouts_format(const struct gnn_fanouts *f, char *buf, size_t cap)
{
	size_t len = 0;
	int rc;

	if (cap == 0)
		return GNN_ERANGE;
	buf[0] = '\0';
	for (uint32_t k = 0; k < f->num_named; k++)
		if ((rc = format_list(f->named[k].rel, f->named[k].v, f->n, buf, cap, &len)) != GNN_OK)
			return rc;
	if (f->has_default && (rc = format_list(NULL, f->v, f->n, buf, cap, &len)) != GNN_OK)
		return rc;
	return GNN_OK;
}
