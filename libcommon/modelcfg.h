/* modelcfg.h - a model's configuration, declared once: one table of the
 * options that make a model and its training (name, type, default, range,
 * help, chart key). From it come gnn-trainer's options and --help, what
 * gnn-local passes to the trainers, the Helm chart's trainer flags
 * (charts/gnn-dist/templates/_model.tpl, generated: `gnn-trainer options
 * --format helm`), the model hash, and the "config" object that
 * checkpoints, result.json and the predictions' summary.json carry, so that
 * `gnn-trainer infer` and the graph stores rebuild the model without flags.
 *
 * A row is of one class:
 *   GNN_MCFG_MODEL  the model's shape: hashed, and what inference reads back;
 *   GNN_MCFG_TRAIN  its training recipe: every rank must agree (the trainer's
 *                   configuration hash), recorded in result.json.
 * and of one group: rows of the link group count only with --task link,
 * rows of the embed group only with --embed-dim > 0 (inactive rows are not
 * hashed, recorded or compared). */
#ifndef GNN_MODELCFG_H
#define GNN_MODELCFG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opt.h"

enum gnn_mcfg_class { GNN_MCFG_MODEL = 1, GNN_MCFG_TRAIN = 2, GNN_MCFG_ALL = 3 };
enum gnn_mcfg_group { GNN_MCFG_ANY, GNN_MCFG_LINK, GNN_MCFG_EMBED };

#define GNN_MCFG_MAX_ROWS 48
#define GNN_MCFG_TEXT_MAX 4096   /* room for the strings read from JSON */

/* The values, each row's field. Strings point into argv, the environment,
 * the table's literals or text[] (gnn_mcfg_from_json); nothing is
 * allocated, so a copy by assignment is complete only when text_used is 0
 * (gnn_mcfg_copy otherwise). */
struct gnn_model_cfg {
	/* GNN_MCFG_MODEL */
	const char *model;
	int64_t layers, hidden, num_bases, heads;
	bool degree_scale;
	const char *encoder;
	const char *task;
	int64_t emb_dim, decoder_hidden;
	const char *decoder;
	int64_t embed_dim;
	const char *embed_types, *embed_input, *embed_optimizer;
	/* GNN_MCFG_TRAIN */
	int64_t epochs, min_steps, eval_every, batch_size, eval_batch_size, val_nodes, test_nodes, seed;
	const char *fanouts, *eval_fanouts;
	double lr, weight_decay, dropout, embed_lr;
	int64_t neg_k, epoch_pairs;
	bool neg_in_batch;
	const char *exclude;
	/* given[i]: row i was set by a flag, the environment or gnn_mcfg_set,
	 * not left at its default */
	bool given[GNN_MCFG_MAX_ROWS];
	char text[GNN_MCFG_TEXT_MAX];
	size_t text_used;
};

struct gnn_mcfg_row {
	const char *name;          /* the flag, without "--" */
	enum gnn_opt_type type;
	size_t offset;             /* of its field in struct gnn_model_cfg */
	const char *def;           /* as text; NULL: unset */
	double min, max;
	const char *choices;
	const char *help;
	const char *chart;         /* its key under the chart's trainer: values ("link.embDim"); NULL: none */
	enum gnn_mcfg_class cls;
	enum gnn_mcfg_group group;
	/* A width of the model (--layers, --hidden): whoever digests the
	 * configuration mixes these with the graph's own dimensions, always;
	 * gnn_mcfg_hash leaves them out. */
	bool width;
};

/* The table: rows [0, gnn_mcfg_count()). */
size_t gnn_mcfg_count(void);
const struct gnn_mcfg_row *gnn_mcfg_row(size_t i);
/* Row index of --name, or -1. */
int gnn_mcfg_find(const char *name);

/* Every row not given gets its default (a zeroed struct: every row). */
void gnn_mcfg_defaults(struct gnn_model_cfg *mc);

/* A program's option table into out (cap rows): its own rows (own, up to
 * its zero row), then the model table's rows of the classes in cls, each
 * pointing into *mc and recording into mc->given, then the zero row.
 * with_defaults false: those rows have no default, so a value comes only
 * from a flag or the environment (gnn-local, `gnn-trainer infer`); call
 * gnn_mcfg_defaults after the parse, which leaves them unset. help_prefix
 * (may be NULL) goes before their help texts. GNN_ERANGE when cap is too
 * small. */
int gnn_mcfg_option_table(const struct gnn_opt *own, struct gnn_model_cfg *mc, unsigned cls, bool with_defaults,
			  const char *help_prefix, struct gnn_opt *out, size_t cap);

/* The row called name as one option into *out, its default included,
 * pointing into *mc (a tool that takes a few model options beside its
 * own: gnn-trainer bench). GNN_EINVAL for an unknown name. */
int gnn_mcfg_option(struct gnn_model_cfg *mc, const char *name, struct gnn_opt *out);

/* Whether row i counts in mc (its group is active). */
bool gnn_mcfg_active(const struct gnn_model_cfg *mc, size_t i);

/* Row i's value as text ("256", "0.003", "true", "gcn"; "" for an unset
 * string) into buf. */
void gnn_mcfg_format(const struct gnn_model_cfg *mc, size_t i, char *buf, size_t len);

/* Sets --name from text as a flag would (validated: GNN_EINVAL, logged,
 * naming the option) and marks it given; the text is copied into mc. */
int gnn_mcfg_set(struct gnn_model_cfg *mc, const char *name, const char *text);

/* *dst = *src with dst's strings in its own text[] (GNN_ERANGE when they
 * do not fit). */
int gnn_mcfg_copy(struct gnn_model_cfg *dst, const struct gnn_model_cfg *src);

/* A digest of the active rows of the classes in cls whose values differ
 * from their defaults, widths left out, mixed into h: an option at its
 * default adds nothing, so a new row leaves the hashes of earlier runs as
 * they were. */
uint64_t gnn_mcfg_hash(const struct gnn_model_cfg *mc, unsigned cls, uint64_t h);

/* The active rows of the classes in cls as a JSON object {name: value}
 * (new reference; NULL when out of memory). */
json_t *gnn_mcfg_to_json(const struct gnn_model_cfg *mc, unsigned cls);

/* Reads such an object into *mc: rows not in it keep their defaults (an
 * older writer's, or an inactive group's); each value is checked as a flag
 * would be. GNN_EFORMAT (logged, naming what, the file and the key) for an
 * unknown key, a value of the wrong type or out of range. */
int gnn_mcfg_from_json(const json_t *obj, const char *what, struct gnn_model_cfg *mc);

/* The hidden width mc describes: --hidden, or for 0 the model's
 * (gnn_mcfg_widths). Every reader of a configuration resolves it here. */
int64_t gnn_mcfg_hidden(const struct gnn_model_cfg *mc);
/* --hidden 0's widths: rows [0, *n), each a model's; the last row's model
 * is NULL, its width every other model's (the chart's template is made
 * from it: gnn-trainer options --format helm). */
struct gnn_mcfg_width {
	const char *model;
	int64_t hidden;
};
const struct gnn_mcfg_width *gnn_mcfg_widths(size_t *n);

/* The link-prediction decoder mc describes, params NULL (--task link:
 * kind --decoder, dim --emb-dim or else --hidden, an mlp's hidden
 * --decoder-hidden or else dim; a dot's 0). GNN_EINVAL for another task.
 * What the trainers, `gnn-trainer infer` and the graph stores serving its
 * output all derive the decoder's shape from. */
struct gnn_linkdec;
int gnn_mcfg_linkdec(const struct gnn_model_cfg *mc, struct gnn_linkdec *d);

/* The first active row of the classes in cls where a and b differ (its
 * index into *row), or false when none does. */
bool gnn_mcfg_differs(const struct gnn_model_cfg *a, const struct gnn_model_cfg *b, unsigned cls, size_t *row);

#endif
