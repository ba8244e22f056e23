#include "opt.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "log.h"

static void env_name(const char *name, char *buf, size_t len)
{
	size_t i = 0, j;

	i = (size_t)snprintf(buf, len, "GNN_");
	for (j = 0; name[j] != '\0' && i + 1 < len; j++)
		buf[i++] = name[j] == '-' ? '_' : (char)toupper((unsigned char)name[j]);
	buf[i] = '\0';
}

static bool has_range(const struct gnn_opt *o)
{
	return !(o->min == 0 && o->max == 0);
}

static bool in_choices(const char *choices, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = choices; *p != '\0';) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && strncmp(p, v, n) == 0)
			return true;
		p += len + (bar ? 1 : 0);
	}
	return false;
}

/* Stores text into o->dst after checking it; origin names where it came from. */
static int set_value(const struct gnn_opt *o, const char *text, const char *origin)
{
	char *end = NULL;

	switch (o->type) {
	case GNN_OPT_INT: {
		long long v;

		errno = 0;
		v = strtoll(text, &end, 10);
		if (errno != 0 || end == text || *end != '\0') {
			GNN_ERROR("bad_option", "option=%s value=\"%s\" from=%s reason=\"not an integer\"",
				  o->name, text, origin);
			return GNN_EINVAL;
		}
		if (has_range(o) && (v < o->min || v > o->max)) {
			GNN_ERROR("bad_option", "option=%s value=%lld from=%s reason=\"out of range [%.0f, %.0f]\"",
				  o->name, v, origin, o->min, o->max);
			return GNN_ERANGE;
		}
		*(int64_t *)o->dst = v;
		return GNN_OK;
	}
	case GNN_OPT_FLOAT: {
		double v;

		errno = 0;
		v = strtod(text, &end);
		if (errno != 0 || end == text || *end != '\0' || !isfinite(v)) {
			GNN_ERROR("bad_option", "option=%s value=\"%s\" from=%s reason=\"not a finite number\"",
				  o->name, text, origin);
			return GNN_EINVAL;
		}
		if (has_range(o) && (v < o->min || v > o->max)) {
			GNN_ERROR("bad_option", "option=%s value=%g from=%s reason=\"out of range [%g, %g]\"",
				  o->name, v, origin, o->min, o->max);
			return GNN_ERANGE;
		}
		*(double *)o->dst = v;
		return GNN_OK;
	}
	case GNN_OPT_BOOL:
		if (strcmp(text, "1") == 0 || strcasecmp(text, "true") == 0 || strcasecmp(text, "yes") == 0 ||
		    strcasecmp(text, "on") == 0) {
			*(bool *)o->dst = true;
		} else if (strcmp(text, "0") == 0 || strcasecmp(text, "false") == 0 ||
			   strcasecmp(text, "no") == 0 || strcasecmp(text, "off") == 0 || *text == '\0') {
			*(bool *)o->dst = false;
		} else {
			GNN_ERROR("bad_option", "option=%s value=\"%s\" from=%s reason=\"not a boolean (true|false|1|0|on|off)\"",
				  o->name, text, origin);
			return GNN_EINVAL;
		}
		return GNN_OK;
	case GNN_OPT_STR:
		if (o->choices != NULL && !in_choices(o->choices, text)) {
			GNN_ERROR("bad_option", "option=%s value=\"%s\" from=%s reason=\"must be one of %s\"",
				  o->name, text, origin, o->choices);
			return GNN_EINVAL;
		}
		/* fall through */
	case GNN_OPT_LIST:
		if (*text == '\0') {
			GNN_ERROR("bad_option", "option=%s from=%s reason=\"empty value\"", o->name, origin);
			return GNN_EINVAL;
		}
		*(const char **)o->dst = text;
		return GNN_OK;
	}
	return GNN_EINTERNAL;
}

int gnn_opt_set(const struct gnn_opt *o, const char *text, const char *origin)
{
	int rc = set_value(o, text, origin);

	if (rc == GNN_OK && o->given != NULL)
		*o->given = true;
	return rc;
}

int gnn_opt_append(struct gnn_opt *out, size_t cap, size_t *n, const struct gnn_opt *src)
{
	for (; src->name != NULL; src++) {
		if (*n >= cap)
			return GNN_ERANGE;
		out[(*n)++] = *src;
	}
	return GNN_OK;
}

void gnn_opt_usage(const char *prog, const char *summary, const struct gnn_opt *opts)
{
	char env[128];

	printf("usage: %s [options]\n%s\n\noptions (each also read from its environment variable):\n",
	       prog, summary ? summary : "");
	for (const struct gnn_opt *o = opts; o->name != NULL; o++) {
		char arg[160] = "";

		env_name(o->name, env, sizeof(env));
		if (o->type == GNN_OPT_STR && o->choices != NULL)
			snprintf(arg, sizeof(arg), " %s", o->choices);
		else if (o->type == GNN_OPT_INT)
			snprintf(arg, sizeof(arg), " N");
		else if (o->type == GNN_OPT_FLOAT)
			snprintf(arg, sizeof(arg), " X");
		else if (o->type != GNN_OPT_BOOL)
			snprintf(arg, sizeof(arg), " VALUE");
		printf("  --%s%s  [%s]\n      %s", o->name, arg, env, o->help);
		if (o->def != NULL)
			printf(" (default %s)", o->def);
		if (has_range(o) && o->type == GNN_OPT_INT)
			printf(" (range %.0f..%.0f)", o->min, o->max);
		else if (has_range(o))
			printf(" (range %g..%g)", o->min, o->max);
		printf("\n");
	}
	printf("  --help\n      print this help and exit\n");
}

static const struct gnn_opt *find(const struct gnn_opt *opts, const char *name, size_t len)
{
	for (const struct gnn_opt *o = opts; o->name != NULL; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	return NULL;
}

int gnn_opt_parse(const char *prog, const char *summary, const struct gnn_opt *opts,
		  int argc, char **argv)
{
	char env[128], origin[160];
	int rc;

	for (const struct gnn_opt *o = opts; o->name != NULL; o++) {
		const char *v;

		if (o->type == GNN_OPT_BOOL)
			*(bool *)o->dst = false;
		else if (o->type == GNN_OPT_STR || o->type == GNN_OPT_LIST)
			*(const char **)o->dst = NULL;
		if (o->def != NULL && (rc = set_value(o, o->def, "default")) != GNN_OK)
			return GNN_EINTERNAL;
		env_name(o->name, env, sizeof(env));
		v = getenv(env);
		if (v != NULL && *v != '\0') {
			snprintf(origin, sizeof(origin), "env:%s", env);
			if ((rc = gnn_opt_set(o, v, origin)) != GNN_OK)
				return rc;
		}
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *val;
		const struct gnn_opt *o;
		size_t len;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			gnn_opt_usage(prog, summary, opts);
			return GNN_EHELP;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			GNN_ERROR("bad_argument", "argument=\"%s\" reason=\"expected --option (see --help)\"", a);
			return GNN_EINVAL;
		}
		a += 2;
		eq = strchr(a, '=');
		len = eq ? (size_t)(eq - a) : strlen(a);
		o = find(opts, a, len);
		if (o == NULL) {
			GNN_ERROR("unknown_option", "option=--%.*s reason=\"not an option of %s (see --help)\"",
				  (int)len, a, prog);
			return GNN_EINVAL;
		}
		if (eq != NULL) {
			val = eq + 1;
		} else if (o->type == GNN_OPT_BOOL) {
			val = "true";
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			GNN_ERROR("bad_option", "option=--%s reason=\"missing value\"", o->name);
			return GNN_EINVAL;
		}
		snprintf(origin, sizeof(origin), "flag");
		if ((rc = gnn_opt_set(o, val, origin)) != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

void gnn_opt_log(const struct gnn_opt *opts)
{
	char line[3072];
	size_t n = 0;

	line[0] = '\0';
	for (const struct gnn_opt *o = opts; o->name != NULL && n < sizeof(line); o++) {
		int k = 0;

		switch (o->type) {
		case GNN_OPT_INT:
			k = snprintf(line + n, sizeof(line) - n, " %s=%lld", o->name,
				     (long long)*(int64_t *)o->dst);
			break;
		case GNN_OPT_FLOAT:
			k = snprintf(line + n, sizeof(line) - n, " %s=%g", o->name, *(double *)o->dst);
			break;
		case GNN_OPT_BOOL:
			k = snprintf(line + n, sizeof(line) - n, " %s=%s", o->name,
				     *(bool *)o->dst ? "true" : "false");
			break;
		case GNN_OPT_STR:
		case GNN_OPT_LIST: {
			const char *s = *(const char **)o->dst;

			k = snprintf(line + n, sizeof(line) - n, " %s=%s", o->name, s ? s : "-");
			break;
		}
		}
		n += k > 0 ? (size_t)k : 0;
	}
	GNN_INFO("config", "%s", line[0] ? line + 1 : "");
}
