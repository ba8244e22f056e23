/* opt.h - one table of options per program gives the command-line flags, the
 * GNN_* environment variables (how Kubernetes passes configuration), --help,
 * range validation and the start-up log line of the effective configuration.
 *
 * Precedence: default < environment < command line. Option "parts" is the
 * flag --parts VALUE (or --parts=VALUE) and the variable GNN_PARTS. */
#ifndef GNN_OPT_H
#define GNN_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gnn_opt_type {
	GNN_OPT_INT,    /* dst is int64_t*, range [min, max] */
	GNN_OPT_FLOAT,  /* dst is double*, range [min, max], finite */
	GNN_OPT_STR,    /* dst is const char**; with choices "a|b|c" only those */
	GNN_OPT_BOOL,   /* dst is bool*; "--name" sets true; env/"--name=" take 1/0/true/false/yes/no/on/off */
	GNN_OPT_LIST,   /* dst is const char**: comma-separated list, checked later by the program */
};

struct gnn_opt {
	const char *name;
	enum gnn_opt_type type;
	void *dst;
	const char *def;      /* default as text; NULL = unset (strings stay NULL) */
	double min, max;      /* numeric range, inclusive; ignored when min == max == 0 */
	const char *choices;  /* GNN_OPT_STR only: "metis|random", or NULL */
	const char *help;
	bool *given;          /* NULL, or set true when the environment or a flag gave the value */
};

/* Parses defaults, then the environment, then argv[1..argc-1] into the
 * table's dst pointers (string results point into argv, the environment or
 * the table's literals; nothing is allocated). opts ends with a zeroed row.
 * Positional arguments are not accepted. On --help prints the usage to stdout
 * and returns GNN_EHELP; on a bad flag or value logs which and why and
 * returns GNN_EINVAL. summary is printed under the usage line. */
int gnn_opt_parse(const char *prog, const char *summary, const struct gnn_opt *opts,
		  int argc, char **argv);

/* Stores text into o->dst after the checks a flag's value gets (type,
 * range, choices); origin names where it came from in the error line.
 * Marks o->given. GNN_EINVAL or GNN_ERANGE, logged. */
int gnn_opt_set(const struct gnn_opt *o, const char *text, const char *origin);

/* Copies the rows of src (up to its zero row) to out[*n..], n rows used of
 * cap. GNN_ERANGE when they do not fit. */
int gnn_opt_append(struct gnn_opt *out, size_t cap, size_t *n, const struct gnn_opt *src);

/* Logs one "config" line with every option's effective value. */
void gnn_opt_log(const struct gnn_opt *opts);

/* Prints --help text (also used by gnn_opt_parse). */
void gnn_opt_usage(const char *prog, const char *summary, const struct gnn_opt *opts);

#endif
