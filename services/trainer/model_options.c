/* model_options.c - see model_options.h. */
#include "model_options.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "model.h"
#include "modelcfg.h"
#include "opt.h"

static const char *const type_names[] = {
	[GNN_OPT_INT] = "int", [GNN_OPT_FLOAT] = "float", [GNN_OPT_STR] = "string", [GNN_OPT_BOOL] = "bool",
	[GNN_OPT_LIST] = "list",
};
static const char *const group_names[] = {
	[GNN_MCFG_ANY] = "any", [GNN_MCFG_LINK] = "link", [GNN_MCFG_EMBED] = "embed",
};

static json_t *row_json(const struct gnn_mcfg_row *r)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "name", r->name, "type", type_names[r->type], "class",
			      r->cls == GNN_MCFG_MODEL ? "model" : "train", "group", group_names[r->group]);

	if (o == NULL)
		return NULL;
	if ((r->def != NULL && json_object_set_new(o, "default", json_string(r->def)) != 0) ||
	    (r->choices != NULL && json_object_set_new(o, "choices", json_string(r->choices)) != 0) ||
	    (r->chart != NULL && json_object_set_new(o, "chart", json_string(r->chart)) != 0) ||
	    (!(r->min == 0 && r->max == 0) &&
	     (json_object_set_new(o, "min", json_real(r->min)) != 0 ||
	      json_object_set_new(o, "max", json_real(r->max)) != 0)) ||
	    json_object_set_new(o, "help", json_string(r->help)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* {"models": [{"name", "summary"}], "options": [row...]} */
static int print_json(void)
{
	json_t *models = json_array(), *opts = json_array(), *all;
	char *text;

	for (size_t i = 0; models != NULL && tr_model_at(i) != NULL; i++)
		json_array_append_new(models, json_pack("{s:s, s:s}", "name", tr_model_at(i)->name, "summary",
							 tr_model_at(i)->summary));
	for (size_t i = 0; opts != NULL && i < gnn_mcfg_count(); i++)
		json_array_append_new(opts, row_json(gnn_mcfg_row(i)));
	all = json_pack("{s:o, s:o}", "models", models, "options", opts);
	text = all != NULL ? json_dumps(all, JSON_INDENT(2)) : NULL;
	json_decref(all);
	if (text == NULL)
		return GNN_ENOMEM;
	printf("%s\n", text);
	free(text);
	return GNN_OK;
}

/* The condition under which a group's rows are rendered. */
static const char *group_if(enum gnn_mcfg_group g)
{
	switch (g) {
	case GNN_MCFG_LINK:
		return "eq .task \"link\"";
	case GNN_MCFG_EMBED:
		return "gt (int64 .embed.dim) 0";
	case GNN_MCFG_ANY:
		break;
	}
	return NULL;
}

/* One row's flag in Helm's template language, .Values.trainer being ".".
 * A bool is a bare flag when true; an on|off string is a bool in the
 * chart; a list (or a per-relation fanout string) goes through
 * gnn-dist.fanoutText; an empty list renders nothing. */
static void print_helm_row(const struct gnn_mcfg_row *r)
{
	switch (r->type) {
	case GNN_OPT_INT:
		printf("- --%s={{ int64 .%s }}\n", r->name, r->chart);
		break;
	case GNN_OPT_FLOAT:
		printf("- --%s={{ .%s }}\n", r->name, r->chart);
		break;
	case GNN_OPT_BOOL:
		printf("{{- if .%s }}\n- --%s\n{{- end }}\n", r->chart, r->name);
		break;
	case GNN_OPT_STR:
		if (r->choices != NULL && strcmp(r->choices, "on|off") == 0)
			printf("- --%s={{ ternary \"on\" \"off\" .%s }}\n", r->name, r->chart);
		else
			printf("- --%s={{ .%s }}\n", r->name, r->chart);
		break;
	case GNN_OPT_LIST:
		printf("{{- with .%s }}\n- --%s={{ include \"gnn-dist.fanoutText\" . }}\n{{- end }}\n", r->chart,
		       r->name);
		break;
	}
}

/* A row's value differs from its default, as a Helm condition. */
static void print_helm_not_default(const struct gnn_mcfg_row *r)
{
	switch (r->type) {
	case GNN_OPT_INT:
		printf("ne (int64 .%s) %s", r->chart, r->def != NULL ? r->def : "0");
		break;
	case GNN_OPT_FLOAT:
		printf("ne (float64 .%s) (float64 %s)", r->chart, r->def != NULL ? r->def : "0");
		break;
	case GNN_OPT_BOOL:
		printf(".%s", r->chart);
		break;
	case GNN_OPT_STR:
		printf(r->def != NULL ? "ne .%s \"%s\"" : ".%s", r->chart, r->def);
		break;
	case GNN_OPT_LIST:
		if (r->def != NULL)
			printf("ne (include \"gnn-dist.fanoutText\" .%s) \"%s\"", r->chart, r->def);
		else
			printf(".%s", r->chart);
		break;
	}
}

/* A row's value as a flag's text. */
static void print_helm_value(const struct gnn_mcfg_row *r)
{
	switch (r->type) {
	case GNN_OPT_INT:
		printf("{{ int64 .%s }}", r->chart);
		break;
	case GNN_OPT_BOOL:
		printf("true");
		break;
	case GNN_OPT_FLOAT:
	case GNN_OPT_STR:
		printf("{{ .%s }}", r->chart);
		break;
	case GNN_OPT_LIST:
		printf("{{ include \"gnn-dist.fanoutText\" .%s }}", r->chart);
		break;
	}
}

/* The model rows that differ from their defaults, widths left out (the
 * run key names them always), as " name=value": what the chart's run key
 * adds, as the model hash does, so that the defaults' key is what it was
 * before the table and another model is another run. */
static void print_helm_key(void)
{
	printf("\n{{/* The model options that differ from their defaults, \" name=value\" each\n"
	       "(widths left out: gnn-dist.runKey names them), as the model hash mixes them. */}}\n"
	       "{{- define \"gnn-dist.modelKey\" -}}\n"
	       "{{- with .Values.trainer }}\n");
	for (size_t i = 0; i < gnn_mcfg_count(); i++) {
		const struct gnn_mcfg_row *r = gnn_mcfg_row(i);
		const char *cond = group_if(r->group);

		if (r->chart == NULL || r->width || r->cls != GNN_MCFG_MODEL)
			continue;
		printf("{{- if ");
		if (cond != NULL)
			printf("and (%s) (", cond);
		print_helm_not_default(r);
		printf("%s }} %s=", cond != NULL ? ")" : "", r->name);
		print_helm_value(r);
		printf("{{ end }}\n");
	}
	printf("{{- end }}\n{{- end -}}\n");
}

/* trainer.hidden as gnn-trainer resolves it (gnn_mcfg_hidden): the run
 * key names the width trained, so --hidden 0 and the model's width given
 * are one run, and the defaults' key is what it was before --hidden 0. */
static void print_helm_hidden(void)
{
	size_t n;
	const struct gnn_mcfg_width *w = gnn_mcfg_widths(&n);

	printf("\n{{/* trainer.hidden, or for 0 the model's width, as gnn-trainer resolves\n"
	       "--hidden=0 (gnn-dist.runKey names the width trained). */}}\n"
	       "{{- define \"gnn-dist.hidden\" -}}\n"
	       "{{- if ne (int64 .hidden) 0 }}{{ int64 .hidden }}\n");
	for (size_t i = 0; i + 1 < n; i++)
		printf("{{- else if eq .model \"%s\" }}%" PRId64 "\n", w[i].model, w[i].hidden);
	printf("{{- else }}%" PRId64 "\n{{- end }}\n{{- end -}}\n", w[n - 1].hidden);
}

static void print_helm(void)
{
	const char *open = NULL;   /* the condition of the block open, if any */

	printf("{{/* Generated by `gnn-trainer options --format helm` from the model table\n"
	       "(libcommon/modelcfg.c): do not edit. tests/e2e/chart.sh fails when this file\n"
	       "is not that command's output. */}}\n\n"
	       "{{/* gnn-trainer's model and training flags from .Values.trainer (a row\n"
	       "without a chart key, --layers, is the template's own). */}}\n"
	       "{{- define \"gnn-dist.modelFlags\" -}}\n"
	       "{{- with .Values.trainer }}\n");
	for (size_t i = 0; i < gnn_mcfg_count(); i++) {
		const struct gnn_mcfg_row *r = gnn_mcfg_row(i);
		const char *cond = group_if(r->group);

		if (r->chart == NULL)
			continue;
		if (open != NULL && cond != open)
			printf("{{- end }}\n");
		if (cond != NULL && cond != open)
			printf("{{- if %s }}\n", cond);
		open = cond;
		print_helm_row(r);
	}
	if (open != NULL)
		printf("{{- end }}\n");
	printf("{{- end }}\n{{- end -}}\n");
}

int tr_options_main(int argc, char **argv)
{
	const char *format = NULL;
	const struct gnn_opt options[] = {
		{ "format", GNN_OPT_STR, &format, "json", 0, 0, "json|helm",
		  "json: every model option (name, type, default, range, chart key, help) and the registered "
		  "models; helm: the chart's trainer flags (charts/gnn-dist/templates/_model.tpl)" },
		{ NULL },
	};
	int rc = gnn_opt_parse("gnn-trainer options", "The model table: the options that make a model and its "
			       "training (libcommon/modelcfg.c).", options, argc, argv);

	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK)
		return 2;
	if (strcmp(format, "helm") == 0) {
		print_helm();
		print_helm_key();
		print_helm_hidden();
		return 0;
	}
	return print_json() == GNN_OK ? 0 : 1;
}
