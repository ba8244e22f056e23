/* config.c - see config.h. */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "linkpred.h"
#include "log.h"

/* --NAME's fanouts (fanouts.h) into *f (for each relation: they are
 * resolved on the graph's relations by tr_config_resolve): GNN_EINVAL,
 * logged, when the text is not a fanout list. check_layers: n of them,
 * one per layer. */
static int parse_fanouts(const char *name, const char *text, struct gnn_fanouts *f)
{
	char why[256];

	if (gnn_fanouts_parse(text, -1, GNN_PROTO_MAX_FANOUT, f, why, sizeof(why)) == GNN_OK)
		return GNN_OK;
	GNN_ERROR("bad_config", "%s=\"%s\" reason=\"%s\"", name, text, why);
	return GNN_EINVAL;
}

static int check_layers(const char *name, const char *text, uint32_t n, const struct gnn_fanouts *f)
{
	if (f->n == n)
		return GNN_OK;
	GNN_ERROR("bad_config", "%s=\"%s\" layers=%" PRIu32 " reason=\"give one fanout per layer: %u given\"", name,
		  text, n, f->n);
	return GNN_EINVAL;
}

/* --task link's fields. */
static void link_from_model(struct tr_config *c, const struct gnn_model_cfg *mc)
{
	struct gnn_linkdec d;

	c->link = gnn_mcfg_linkdec(mc, &d) == GNN_OK;
	if (!c->link)
		return;
	c->emb_dim = d.dim;
	c->decoder = d.kind == GNN_LINK_MLP ? TR_DEC_MLP : TR_DEC_DOT;
	c->decoder_hidden = d.hidden;
	c->neg_k = (uint32_t)mc->neg_k;
	c->epoch_pairs = (uint64_t)mc->epoch_pairs;
	c->neg_in_batch = mc->neg_in_batch;
	c->exclude = strcmp(mc->exclude, "on") == 0;
}

int tr_config_from_model(struct tr_config *c, const struct gnn_model_cfg *mc)
{
	int layers = gnn_mcfg_find("layers"), fanouts = gnn_mcfg_find("fanouts");

	if (gnn_mcfg_copy(&c->mcfg, mc) != GNN_OK)
		return GNN_ERANGE;
	mc = &c->mcfg;   /* its strings are c's own now */
	if (parse_fanouts("fanouts", mc->fanouts, &c->fanouts_text) != GNN_OK)
		return GNN_EINVAL;
	/* --fanouts without --layers: one layer per fanout (the default 3 is
	 * the default fanouts'), recorded as if given */
	if (mc->given[fanouts] && !mc->given[layers]) {
		c->mcfg.layers = c->fanouts_text.n;
		c->mcfg.given[layers] = true;
	}
	c->model = mc->model;
	c->layers = (uint32_t)mc->layers;
	/* --hidden 0: the model's width, recorded as such */
	c->mcfg.hidden = gnn_mcfg_hidden(mc);
	c->hidden = (uint32_t)mc->hidden;
	c->num_bases = (uint32_t)mc->num_bases;
	c->degree_scale = mc->degree_scale;
	c->epochs = (uint32_t)mc->epochs;
	c->min_steps = (uint32_t)mc->min_steps;
	c->eval_every = (uint32_t)mc->eval_every;
	c->batch = (uint32_t)mc->batch_size;
	c->eval_batch = (uint32_t)mc->eval_batch_size;
	c->val_nodes = (uint32_t)mc->val_nodes;
	c->test_nodes = (uint32_t)mc->test_nodes;
	c->lr = (float)mc->lr;
	c->weight_decay = (float)mc->weight_decay;
	c->dropout = (float)mc->dropout;
	c->seed = (uint64_t)mc->seed;
	c->embed_lr = (float)mc->embed_lr;
	link_from_model(c, mc);
	if (mc->eval_fanouts == NULL)
		c->eval_fanouts_text = c->fanouts_text;
	else if (parse_fanouts("eval-fanouts", mc->eval_fanouts, &c->eval_fanouts_text) != GNN_OK)
		return GNN_EINVAL;
	if (check_layers("fanouts", mc->fanouts, c->layers, &c->fanouts_text) != GNN_OK ||
	    check_layers("eval-fanouts", mc->eval_fanouts ? mc->eval_fanouts : mc->fanouts, c->layers,
			 &c->eval_fanouts_text) != GNN_OK)
		return GNN_EINVAL;
	return GNN_OK;
}

void tr_config_model(const struct tr_config *c, const struct gnn_layout *g, const struct tr_emb *emb,
		     struct gnn_schema *mschema, struct tr_model_cfg *mc)
{
	*mc = (struct tr_model_cfg){ .num_layers = c->layers, .in_dim = g->feat_dim, .hidden = c->hidden,
				     .num_classes = c->link ? c->emb_dim : g->num_classes, .dropout = c->dropout,
				     .model = c->model, .schema = g->schema, .num_bases = c->num_bases,
				     .degree_scale = c->degree_scale, .heads = (uint32_t)c->mcfg.heads,
				     .encoder = tr_encoder_named(c->mcfg.encoder) };
	if (emb == NULL)
		return;
	tr_emb_model_schema(emb, mschema);
	mc->schema = mschema;
	mc->in_dim = gnn_schema_max_feat_dim(mschema);
	for (uint32_t t = 0; t < mschema->num_types; t++)
		if (tr_emb_dim(emb, t) > 0 && tr_emb_dim(emb, t) == mschema->types[t].feat_dim)
			mc->embed_only |= (uint64_t)1 << t;   /* no features beside the rows */
}

struct tr_decoder tr_config_decoder(const struct tr_config *c)
{
	return (struct tr_decoder){ .kind = c->decoder, .dim = c->emb_dim, .hidden = c->decoder_hidden };
}

void tr_emb_opts_from_model(struct tr_emb_opts *eo, const struct gnn_model_cfg *mc)
{
	eo->dim = (uint32_t)mc->embed_dim;
	eo->types = mc->embed_types;
	eo->replace = strcmp(mc->embed_input, "replace") == 0;
	eo->optimizer = strcmp(mc->embed_optimizer, "adagrad") == 0 ? GNN_EMB_ADAGRAD : GNN_EMB_ADAM;
	eo->lr = (float)mc->embed_lr;
	eo->seed = (uint64_t)mc->seed;
}

int tr_config_resolve(struct tr_config *c, const struct gnn_layout *g)
{
	const struct gnn_fanouts *f[2] = { &c->fanouts_text, &c->eval_fanouts_text };
	int32_t *out[2] = { c->fanouts, c->eval_fanouts };
	const char *names[2] = { "fanouts", "eval-fanouts" };
	char why[256], text[512];

	c->num_rels = g->schema->num_rels;
	for (int i = 0; i < 2; i++)
		if (gnn_fanouts_resolve(f[i], g->schema, out[i], why, sizeof(why)) != GNN_OK) {
			gnn_fanouts_format(f[i], text, sizeof(text));
			GNN_ERROR("bad_config", "%s=\"%s\" reason=\"%s\"", names[i], text, why);
			return GNN_EINVAL;
		}
	return GNN_OK;
}

uint64_t tr_model_hash(const struct tr_config *c, const struct gnn_layout *g)
{
	uint64_t h = gnn_draw64(0x6d6f64656cull, c->layers);

	h = gnn_draw64(h, g->feat_dim);
	h = gnn_draw64(h, c->hidden);
	h = gnn_draw64(h, g->num_classes);
	/* the schema is a typed graph's only (a homogeneous model's hash stays
	 * what it was, so its checkpoints still resume) */
	if (!gnn_schema_is_plain(g->schema))
		h = gnn_draw64(h, gnn_schema_hash(g->schema));
	/* The other model options that differ from their defaults (the widths
	 * are in already, beside the graph's): the default graphsage's hash is
	 * what it was before the table, and a new option changes no earlier
	 * run's. */
	h = gnn_mcfg_hash(&c->mcfg, GNN_MCFG_MODEL, h);
	/* the embedded types as resolved on the graph (the default: every
	 * type without features) */
	if (c->embed_hash != 0)
		h = gnn_draw64(h ^ 0x656d6265646473ull, c->embed_hash);
	return gnn_draw64(h, g->graph_id);
}

static uint64_t mix_float(uint64_t h, float f)
{
	uint32_t bits;

	memcpy(&bits, &f, sizeof(bits));
	return gnn_draw64(h, bits);
}

uint64_t tr_config_hash(const struct tr_config *c, const struct gnn_layout *g)
{
	uint64_t h = tr_model_hash(c, g);

	h = gnn_draw64(h, c->world);
	h = gnn_draw64(h, c->epochs);
	h = gnn_draw64(h, c->batch);
	h = gnn_draw64(h, c->eval_batch);
	h = gnn_draw64(gnn_draw64(h, c->val_nodes), c->test_nodes);
	h = gnn_draw64(h, c->seed);
	h = mix_float(h, c->lr);
	h = mix_float(h, c->weight_decay);
	h = mix_float(h, c->dropout);
	if (c->embed_hash != 0)
		h = mix_float(h, c->embed_lr);
	h = gnn_draw64(h, c->checkpoint_dir != NULL);
	h = gnn_draw64(h, (uint64_t)(c->checkpoint_interval_s * 1000)); /* when the ranks stop to checkpoint */
	for (uint32_t k = 0; k < c->layers * c->num_rels; k++)
		h = gnn_draw64(gnn_draw64(h, (uint32_t)c->fanouts[k]), (uint32_t)c->eval_fanouts[k]);
	if (c->link)
		h = gnn_draw64(gnn_draw64(gnn_draw64(h, c->neg_k), c->neg_in_batch), c->exclude);
	if (c->link && c->epoch_pairs > 0)   /* the steps of an epoch; none: the hash as before */
		h = gnn_draw64(h ^ 0x6570ull, c->epoch_pairs);
	return h;
}

