/* The model table (libcommon/modelcfg.h): its options as flags, what was
 * given, the JSON record that result.json and checkpoints carry (read back
 * exactly, refused when damaged), the hash (an option at its default adds
 * nothing; widths and inactive groups are left out) and the comparison
 * that names the option that differs. */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "linkpred.h"
#include "log.h"
#include "modelcfg.h"
#include "testlib.h"

/* Parses argv over the table (with or without defaults) into *mc. */
static int parse(struct gnn_model_cfg *mc, bool with_defaults, int argc, char **argv)
{
	static const struct gnn_opt none[] = { { NULL } };
	struct gnn_opt opts[GNN_MCFG_MAX_ROWS + 1];
	int rc;

	memset(mc, 0, sizeof(*mc));
	if ((rc = gnn_mcfg_option_table(none, mc, GNN_MCFG_ALL, with_defaults, NULL, opts, GNN_MCFG_MAX_ROWS + 1)) !=
	    GNN_OK)
		return rc;
	rc = gnn_opt_parse("test", NULL, opts, argc, argv);
	gnn_mcfg_defaults(mc);
	return rc;
}

static void test_table_defaults_valid(void)
{
	struct gnn_model_cfg mc = { 0 };

	gnn_mcfg_defaults(&mc);
	CHECK(gnn_mcfg_count() > 20 && gnn_mcfg_count() <= GNN_MCFG_MAX_ROWS);
	CHECK(strcmp(mc.model, "graphsage") == 0 && mc.layers == 3 && mc.hidden == 0 && mc.lr == 0.003);
	CHECK(strcmp(mc.fanouts, "15,10,5") == 0 && mc.eval_fanouts == NULL && strcmp(mc.exclude, "on") == 0);
	for (size_t i = 0; i < gnn_mcfg_count(); i++) {
		const struct gnn_mcfg_row *r = gnn_mcfg_row(i);

		CHECK(!mc.given[i]);
		CHECK(gnn_mcfg_find(r->name) == (int)i);
		/* every row but --layers (the chart derives it from the fanouts) has a chart key */
		CHECK((r->chart == NULL) == (strcmp(r->name, "layers") == 0));
	}
	CHECK(gnn_mcfg_find("no-such-option") == -1);
}

static void test_given_tracked(void)
{
	char *argv[] = { "test", "--hidden", "64", "--degree-scale=off", "--task=link", "--lr=0.01", NULL };
	struct gnn_model_cfg mc;

	CHECK(parse(&mc, false, 6, argv) == GNN_OK);
	CHECK(mc.hidden == 64 && !mc.degree_scale && strcmp(mc.task, "link") == 0 && mc.lr == 0.01);
	CHECK(mc.given[gnn_mcfg_find("hidden")] && mc.given[gnn_mcfg_find("degree-scale")]);
	CHECK(!mc.given[gnn_mcfg_find("model")] && strcmp(mc.model, "graphsage") == 0);   /* the default, not given */
	CHECK(gnn_mcfg_set(&mc, "model", "gcn") == GNN_OK && mc.given[gnn_mcfg_find("model")]);
	CHECK(gnn_mcfg_set(&mc, "hidden", "-1") == GNN_ERANGE);      /* the flag's range */
	CHECK(gnn_mcfg_set(&mc, "decoder", "bilinear") == GNN_EINVAL);
	CHECK(gnn_mcfg_set(&mc, "nope", "1") == GNN_EINVAL);
}

/* --hidden 0 is the model's width: 64 for the typed models, 256 for the
 * others; a width given is kept; the link decoder's dim follows. */
static void test_hidden_per_model(void)
{
	struct gnn_model_cfg mc = { 0 };
	struct gnn_linkdec d;

	gnn_mcfg_defaults(&mc);
	CHECK(gnn_mcfg_hidden(&mc) == 256);
	CHECK(gnn_mcfg_set(&mc, "model", "rgcn") == GNN_OK && gnn_mcfg_hidden(&mc) == 64);
	CHECK(gnn_mcfg_set(&mc, "model", "rgat") == GNN_OK && gnn_mcfg_hidden(&mc) == 64);
	CHECK(gnn_mcfg_set(&mc, "model", "gat") == GNN_OK && gnn_mcfg_hidden(&mc) == 256);
	CHECK(gnn_mcfg_set(&mc, "model", "rgcn") == GNN_OK && gnn_mcfg_set(&mc, "task", "link") == GNN_OK &&
	      gnn_mcfg_linkdec(&mc, &d) == GNN_OK && d.dim == 64);
	CHECK(gnn_mcfg_set(&mc, "hidden", "32") == GNN_OK && gnn_mcfg_hidden(&mc) == 32);
}

static void test_json_round_trip(void)
{
	char *argv[] = { "test", "--model=rgcn", "--num-bases=4", "--lr=0.0123456789", "--embed-dim=16",
			 "--embed-types=author,field", "--task=link", "--decoder=mlp", "--exclude=off", NULL };
	struct gnn_model_cfg mc, back, copy;
	json_t *j;
	size_t row;

	CHECK(parse(&mc, true, 9, argv) == GNN_OK);
	j = gnn_mcfg_to_json(&mc, GNN_MCFG_ALL);
	if (!CHECK(j != NULL))
		return;
	CHECK(gnn_mcfg_from_json(j, "test", &back) == GNN_OK);
	CHECK(!gnn_mcfg_differs(&mc, &back, GNN_MCFG_ALL, &row));
	CHECK(back.lr == 0.0123456789 && strcmp(back.embed_types, "author,field") == 0);
	CHECK(gnn_mcfg_copy(&copy, &back) == GNN_OK && !gnn_mcfg_differs(&copy, &mc, GNN_MCFG_ALL, &row));
	CHECK(copy.embed_types != back.embed_types);   /* its own text */
	/* the model class alone holds the shape, not the recipe */
	json_decref(j);
	j = gnn_mcfg_to_json(&mc, GNN_MCFG_MODEL);
	CHECK(json_object_get(j, "hidden") != NULL && json_object_get(j, "lr") == NULL);
	json_decref(j);
	/* an inactive group's rows are not recorded */
	gnn_mcfg_defaults(&back);
	CHECK(gnn_mcfg_set(&back, "task", "node") == GNN_OK);
	j = gnn_mcfg_to_json(&back, GNN_MCFG_ALL);
	CHECK(json_object_get(j, "decoder") == NULL && json_object_get(j, "task") != NULL);
	json_decref(j);
}

static void test_json_refusals(void)
{
	static const char *const bad[] = {
		"{\"hidden\": \"64\"}", "{\"hidden\": -1}", "{\"model\": 3}", "{\"unknown\": 1}", "{\"lr\": true}",
		"{\"decoder\": \"bilinear\"}", "[]",
	};
	struct gnn_model_cfg mc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i], 0, NULL);

		CHECK(j != NULL && gnn_mcfg_from_json(j, "test", &mc) == GNN_EFORMAT);
		json_decref(j);
	}
}

static void test_hash_and_differs(void)
{
	struct gnn_model_cfg a = { 0 }, b = { 0 };
	size_t row;
	uint64_t h0;

	gnn_mcfg_defaults(&a);
	gnn_mcfg_defaults(&b);
	h0 = gnn_mcfg_hash(&a, GNN_MCFG_MODEL, 7);
	CHECK(h0 == 7);   /* the defaults add nothing */
	CHECK(gnn_mcfg_set(&b, "hidden", "64") == GNN_OK && gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 7) == 7);  /* a width */
	CHECK(gnn_mcfg_differs(&a, &b, GNN_MCFG_MODEL, &row) && strcmp(gnn_mcfg_row(row)->name, "hidden") == 0);
	CHECK(gnn_mcfg_set(&b, "decoder", "mlp") == GNN_OK && gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 7) == 7);  /* task node */
	CHECK(gnn_mcfg_set(&b, "lr", "0.1") == GNN_OK && gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 7) == 7);  /* training's */
	CHECK(gnn_mcfg_hash(&b, GNN_MCFG_TRAIN, 7) != 7);
	CHECK(gnn_mcfg_set(&b, "model", "gcn") == GNN_OK && gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 7) != 7);
	CHECK(gnn_mcfg_set(&b, "model", "graphsage") == GNN_OK && gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 7) == 7);
	CHECK(gnn_mcfg_set(&b, "task", "link") == GNN_OK);
	CHECK(gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 7) != gnn_mcfg_hash(&b, GNN_MCFG_MODEL, 8));
}

/* One row as an option (gnn-trainer bench's --encoder, --heads): the
 * table's name, default and choices, writing into the model config; an
 * unknown name refused. */
static void test_one_option(void)
{
	struct gnn_model_cfg mc = { 0 };
	struct gnn_opt o;

	CHECK(gnn_mcfg_option(&mc, "encoder", &o) == GNN_OK && strcmp(o.name, "encoder") == 0 &&
	      strcmp(o.def, "auto") == 0 && strcmp(o.choices, "auto|on|off") == 0);
	CHECK(gnn_opt_set(&o, "off", "test") == GNN_OK && strcmp(mc.encoder, "off") == 0);
	CHECK(gnn_opt_set(&o, "sideways", "test") != GNN_OK);
	CHECK(gnn_mcfg_option(&mc, "heads", &o) == GNN_OK && strcmp(o.def, "4") == 0);
	CHECK(gnn_mcfg_option(&mc, "no-such-row", &o) == GNN_EINVAL);
}

int main(void)
{
	gnn_log_init("test_modelcfg");
	gnn_log_set_level(GNN_LOG_ERROR + 1);
	RUN(test_table_defaults_valid);
	RUN(test_given_tracked);
	RUN(test_hidden_per_model);
	RUN(test_json_round_trip);
	RUN(test_json_refusals);
	RUN(test_hash_and_differs);
	RUN(test_one_option);
	return t_done();
}
