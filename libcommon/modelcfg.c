/* modelcfg.c - see modelcfg.h. */
#include "modelcfg.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "linkpred.h"
#include "log.h"
#include "proto.h"

#define F(field) offsetof(struct gnn_model_cfg, field)
#define M GNN_MCFG_MODEL
#define T GNN_MCFG_TRAIN
#define ANY GNN_MCFG_ANY
#define LINK GNN_MCFG_LINK
#define EMBED GNN_MCFG_EMBED

/* The order is --help's and the JSON objects'. Append rows where they
 * belong: nothing depends on a row's index but within one process. */
static const struct gnn_mcfg_row rows[] = {
	{ "model", GNN_OPT_STR, F(model), "graphsage", 0, 0, NULL,
	  "the model: one of those `gnn-trainer --help` lists (docs/model.md)", "model", M, ANY },
	{ "layers", GNN_OPT_INT, F(layers), "3", 1, GNN_PROTO_MAX_LAYERS, NULL, "model layers (= number of fanouts)",
	  NULL, M, ANY, true },
	{ "hidden", GNN_OPT_INT, F(hidden), "0", 0, 65536, NULL,
	  "width of the hidden layers (0: the model's, 64 for rgcn and rgat, 256 for the others)", "hidden", M,
	  ANY, true },
	{ "num-bases", GNN_OPT_INT, F(num_bases), "0", 0, 1024, NULL,
	  "rgcn: basis matrices per layer shared by the relations' weights (0: a full weight per relation)",
	  "numBases", M, ANY },
	{ "encoder", GNN_OPT_STR, F(encoder), "auto", 0, 0, "auto|on|off",
	  "layer 0's input rows: on: a Linear per node type to --hidden; off: the features zero-padded to the "
	  "widest type's; auto: on for a graph of several node types with features wider than --hidden "
	  "(docs/model.md, \"Input rows\")", "encoder",
	  M, ANY },
	{ "heads", GNN_OPT_INT, F(heads), "4", 1, 64, NULL,
	  "rgat, gat: attention heads of every hidden layer (--hidden a multiple of it; the last layer has one)",
	  "heads", M, ANY },
	{ "degree-scale", GNN_OPT_BOOL, F(degree_scale), NULL, 0, 0, NULL,
	  "the last layer's aggregate times sqrt(in-degree + 1), so embeddings carry the node's degree as GAE's "
	  "GCN does: for link prediction over whole neighbourhoods (docs/training.md)", "degreeScale", M, ANY },
	{ "task", GNN_OPT_STR, F(task), "node", 0, 0, "node|link",
	  "node: node classification; link: link prediction on the edge split of --data (docs/training.md)", "task",
	  M, ANY },
	{ "emb-dim", GNN_OPT_INT, F(emb_dim), "0", 0, 65536, NULL,
	  "--task link: width of the node embeddings, the last layer's output (0: --hidden)", "link.embDim", M, LINK },
	{ "decoder", GNN_OPT_STR, F(decoder), "dot", 0, 0, "dot|mlp",
	  "--task link: the pair's score: dot (h_u . h_v) or mlp (w2 . relu(W1 (h_u * h_v) + b1) + b2)",
	  "link.decoder", M, LINK },
	{ "decoder-hidden", GNN_OPT_INT, F(decoder_hidden), "0", 0, 65536, NULL,
	  "--decoder mlp: width of its hidden layer (0: the embedding width)", "link.decoderHidden", M, LINK },
	{ "embed-dim", GNN_OPT_INT, F(embed_dim), "0", 0, GNN_PROTO_MAX_FEAT_DIM, NULL,
	  "learnable embeddings of this width for the node types of --embed-types, held by the graph stores "
	  "(0: none; docs/embeddings.md)", "embed.dim", M, ANY },
	{ "embed-types", GNN_OPT_LIST, F(embed_types), NULL, 0, 0, NULL,
	  "the node types with embeddings, comma-separated (default: every type without features)", "embed.types",
	  M, EMBED },
	{ "embed-input", GNN_OPT_STR, F(embed_input), "concat", 0, 0, "concat|replace",
	  "a type with features and an embedding reads both (concat: features then embedding) or only the "
	  "embedding (replace)", "embed.input", M, EMBED },
	{ "embed-optimizer", GNN_OPT_STR, F(embed_optimizer), "adam", 0, 0, "adam|adagrad",
	  "the embeddings' sparse optimizer: Adam with per-row step counts, or Adagrad", "embed.optimizer", M,
	  EMBED },
	{ "epochs", GNN_OPT_INT, F(epochs), "0", 0, 100000, NULL,
	  "epochs to train (0: 10, or as many as --min-steps optimizer steps take when that is more)", "epochs", T,
	  ANY },
	{ "min-steps", GNN_OPT_INT, F(min_steps), "300", 0, 100000000, NULL,
	  "--epochs 0: the optimizer steps a trainer makes at least, in whole epochs (a small training set's "
	  "epoch is one step)", "minSteps", T, ANY },
	{ "eval-every", GNN_OPT_INT, F(eval_every), "0", 0, 100000, NULL,
	  "validate every this many epochs and after the last (0: as seldom as keeps validation no costlier than "
	  "the training it selects from)", "evalEvery", T, ANY },
	{ "batch-size", GNN_OPT_INT, F(batch_size), "1024", 1, GNN_PROTO_MAX_IDS, NULL,
	  "training seeds per step per trainer", "batchSize", T, ANY },
	{ "fanouts", GNN_OPT_LIST, F(fanouts), "15,10,5", 0, 0, NULL,
	  "neighbours sampled per node and layer under each relation, input layer first; 0: none (features only), "
	  "-1: all; per relation: writes=15,10;*=5,5 (docs/training.md, Fanouts)", "fanouts", T, ANY },
	{ "eval-fanouts", GNN_OPT_LIST, F(eval_fanouts), NULL, 0, 0, NULL,
	  "fanouts for validation and test (default: --fanouts); -1 = full neighbourhood", "evalFanouts", T, ANY },
	{ "eval-batch-size", GNN_OPT_INT, F(eval_batch_size), "1024", 1, GNN_PROTO_MAX_IDS, NULL,
	  "seeds per evaluation minibatch", "evalBatchSize", T, ANY },
	{ "val-nodes", GNN_OPT_INT, F(val_nodes), "10000", 0, UINT32_MAX, NULL,
	  "validate on this many validation nodes, one seeded sample for every epoch (0: all of them)", "valNodes",
	  T, ANY },
	{ "test-nodes", GNN_OPT_INT, F(test_nodes), "10000", 0, UINT32_MAX, NULL,
	  "the sampled test accuracy at the end over this many test nodes, a seeded sample (0: all of them); "
	  "the whole split's comes from `gnn-trainer infer` (docs/inference.md)", "testNodes", T, ANY },
	{ "lr", GNN_OPT_FLOAT, F(lr), "0.003", 1e-9, 10, NULL, "Adam learning rate", "lr", T, ANY },
	{ "weight-decay", GNN_OPT_FLOAT, F(weight_decay), "0", 0, 1, NULL, "L2 penalty (as torch.optim.Adam)",
	  "weightDecay", T, ANY },
	{ "dropout", GNN_OPT_FLOAT, F(dropout), "0.5", 0, 0.95, NULL, "dropout after every hidden layer", "dropout",
	  T, ANY },
	{ "seed", GNN_OPT_INT, F(seed), "1", 0, (double)INT64_MAX, NULL,
	  "seed of the initial parameters, shuffles, sampling, dropout", "seed", T, ANY },
	{ "embed-lr", GNN_OPT_FLOAT, F(embed_lr), "0.01", 1e-9, 100, NULL, "the embeddings' learning rate",
	  "embed.lr", T, EMBED },
	{ "neg-k", GNN_OPT_INT, F(neg_k), "1", 1, 1024, NULL, "--task link: negatives per positive edge",
	  "link.negK", T, LINK },
	{ "epoch-pairs", GNN_OPT_INT, F(epoch_pairs), "0", 0, (double)INT64_MAX, NULL,
	  "--task link: training edges an epoch visits over all trainers, another seeded sample each epoch "
	  "(0: every one; for graphs whose full epoch takes hours)", "link.epochPairs", T, LINK },
	{ "neg-in-batch", GNN_OPT_BOOL, F(neg_in_batch), NULL, 0, 0, NULL,
	  "--task link: negatives from the destinations of the step's other positives instead of uniform ones",
	  "link.negInBatch", T, LINK },
	{ "exclude", GNN_OPT_STR, F(exclude), "on", 0, 0, "on|off",
	  "--task link: remove each step's positive edges and their reverses from its sampled neighbourhoods "
	  "(off leaks the scored edge into the model's input: logged as a warning)", "link.exclude", T, LINK },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))
_Static_assert(NROWS <= GNN_MCFG_MAX_ROWS, "raise GNN_MCFG_MAX_ROWS");

size_t gnn_mcfg_count(void)
{
	return NROWS;
}

const struct gnn_mcfg_row *gnn_mcfg_row(size_t i)
{
	return i < NROWS ? &rows[i] : NULL;
}

int gnn_mcfg_find(const char *name)
{
	for (size_t i = 0; i < NROWS; i++)
		if (strcmp(rows[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void *field(struct gnn_model_cfg *mc, size_t i)
{
	return (char *)mc + rows[i].offset;
}

static const void *cfield(const struct gnn_model_cfg *mc, size_t i)
{
	return (const char *)mc + rows[i].offset;
}

/* An option row over row i of mc. */
static struct gnn_opt opt_row(struct gnn_model_cfg *mc, size_t i, bool with_default, const char *help)
{
	return (struct gnn_opt){ .name = rows[i].name, .type = rows[i].type, .dst = field(mc, i),
				 .def = with_default ? rows[i].def : NULL, .min = rows[i].min, .max = rows[i].max,
				 .choices = rows[i].choices, .help = help, .given = &mc->given[i] };
}

/* Row i's default into mc (a default the table holds is valid). */
static void set_default(struct gnn_model_cfg *mc, size_t i)
{
	struct gnn_opt o = opt_row(mc, i, true, rows[i].help);

	o.given = NULL;
	switch (rows[i].type) {
	case GNN_OPT_BOOL:
		*(bool *)o.dst = false;
		break;
	case GNN_OPT_STR:
	case GNN_OPT_LIST:
		*(const char **)o.dst = NULL;
		break;
	case GNN_OPT_INT:
		*(int64_t *)o.dst = 0;
		break;
	case GNN_OPT_FLOAT:
		*(double *)o.dst = 0;
		break;
	}
	if (rows[i].def != NULL)
		(void)gnn_opt_set(&o, rows[i].def, "default");
}

void gnn_mcfg_defaults(struct gnn_model_cfg *mc)
{
	for (size_t i = 0; i < NROWS; i++)
		if (!mc->given[i])
			set_default(mc, i);
}

int gnn_mcfg_option_table(const struct gnn_opt *own, struct gnn_model_cfg *mc, unsigned cls, bool with_defaults,
			  const char *help_prefix, struct gnn_opt *out, size_t cap)
{
	static char helps[NROWS][640];
	size_t n = 0;
	int rc;

	if (cap == 0 || (rc = gnn_opt_append(out, cap - 1, &n, own)) != GNN_OK)
		return GNN_ERANGE;
	for (size_t i = 0; i < NROWS; i++) {
		const char *help = rows[i].help;

		if (!(rows[i].cls & cls))
			continue;
		if (n >= cap - 1)
			return GNN_ERANGE;
		if (help_prefix != NULL) {
			snprintf(helps[i], sizeof(helps[i]), "%s%s", help_prefix, rows[i].help);
			help = helps[i];
		}
		out[n++] = opt_row(mc, i, with_defaults, help);
	}
	out[n] = (struct gnn_opt){ 0 };
	return GNN_OK;
}

int gnn_mcfg_option(struct gnn_model_cfg *mc, const char *name, struct gnn_opt *out)
{
	int i = gnn_mcfg_find(name);

	if (i < 0)
		return GNN_EINVAL;
	*out = opt_row(mc, (size_t)i, true, rows[i].help);
	return GNN_OK;
}

bool gnn_mcfg_active(const struct gnn_model_cfg *mc, size_t i)
{
	switch (rows[i].group) {
	case GNN_MCFG_LINK:
		return mc->task != NULL && strcmp(mc->task, "link") == 0;
	case GNN_MCFG_EMBED:
		return mc->embed_dim > 0;
	case GNN_MCFG_ANY:
		break;
	}
	return true;
}

void gnn_mcfg_format(const struct gnn_model_cfg *mc, size_t i, char *buf, size_t len)
{
	const void *p = cfield(mc, i);

	switch (rows[i].type) {
	case GNN_OPT_INT:
		snprintf(buf, len, "%" PRId64, *(const int64_t *)p);
		break;
	case GNN_OPT_FLOAT:
		snprintf(buf, len, "%.17g", *(const double *)p);
		break;
	case GNN_OPT_BOOL:
		snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false");
		break;
	case GNN_OPT_STR:
	case GNN_OPT_LIST:
		snprintf(buf, len, "%s", *(const char *const *)p != NULL ? *(const char *const *)p : "");
		break;
	}
}

/* A copy of text in mc->text, or NULL when it is full. */
static const char *keep(struct gnn_model_cfg *mc, const char *text)
{
	size_t n = strlen(text) + 1;
	char *p;

	if (n > sizeof(mc->text) - mc->text_used)
		return NULL;
	p = mc->text + mc->text_used;
	memcpy(p, text, n);
	mc->text_used += n;
	return p;
}

int gnn_mcfg_set(struct gnn_model_cfg *mc, const char *name, const char *text)
{
	int i = gnn_mcfg_find(name);
	const char *copy;
	struct gnn_opt o;

	if (i < 0) {
		GNN_ERROR("bad_option", "option=%s reason=\"not a model option\"", name);
		return GNN_EINVAL;
	}
	if ((copy = keep(mc, text)) == NULL) {
		GNN_ERROR("bad_option", "option=%s reason=\"the model options' text is over %d bytes\"", name,
			  GNN_MCFG_TEXT_MAX);
		return GNN_ERANGE;
	}
	o = opt_row(mc, (size_t)i, false, rows[i].help);
	return gnn_opt_set(&o, copy, "setting");
}

int gnn_mcfg_copy(struct gnn_model_cfg *dst, const struct gnn_model_cfg *src)
{
	*dst = *src;
	dst->text_used = 0;
	for (size_t i = 0; i < NROWS; i++) {
		const char **p = field(dst, i);

		if ((rows[i].type != GNN_OPT_STR && rows[i].type != GNN_OPT_LIST) || *p == NULL)
			continue;
		if ((*p = keep(dst, *p)) == NULL)
			return GNN_ERANGE;
	}
	return GNN_OK;
}

static bool at_default(const struct gnn_model_cfg *mc, size_t i)
{
	char v[512], d[512];
	struct gnn_model_cfg def;

	memset(&def, 0, sizeof(def));
	set_default(&def, i);
	gnn_mcfg_format(mc, i, v, sizeof(v));
	gnn_mcfg_format(&def, i, d, sizeof(d));
	return strcmp(v, d) == 0;
}

uint64_t gnn_mcfg_hash(const struct gnn_model_cfg *mc, unsigned cls, uint64_t h)
{
	char v[512];

	for (size_t i = 0; i < NROWS; i++) {
		if (!(rows[i].cls & cls) || rows[i].width || !gnn_mcfg_active(mc, i) || at_default(mc, i))
			continue;
		for (const char *s = rows[i].name; *s != '\0'; s++)
			h = gnn_draw64(h, (unsigned char)*s);
		gnn_mcfg_format(mc, i, v, sizeof(v));
		h = gnn_draw64(h, '=');
		for (const char *s = v; *s != '\0'; s++)
			h = gnn_draw64(h, (unsigned char)*s);
	}
	return h;
}

json_t *gnn_mcfg_to_json(const struct gnn_model_cfg *mc, unsigned cls)
{
	json_t *o = json_object();

	for (size_t i = 0; o != NULL && i < NROWS; i++) {
		const void *p = cfield(mc, i);
		json_t *v = NULL;

		if (!(rows[i].cls & cls) || !gnn_mcfg_active(mc, i))
			continue;
		switch (rows[i].type) {
		case GNN_OPT_INT:
			v = json_integer((json_int_t) * (const int64_t *)p);
			break;
		case GNN_OPT_FLOAT:
			v = json_real(*(const double *)p);
			break;
		case GNN_OPT_BOOL:
			v = json_boolean(*(const bool *)p);
			break;
		case GNN_OPT_STR:
		case GNN_OPT_LIST:
			if (*(const char *const *)p == NULL)
				continue;   /* unset: absent, which reads back as unset */
			v = json_string(*(const char *const *)p);
			break;
		}
		if (v == NULL || json_object_set_new(o, rows[i].name, v) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* A JSON value as the text a flag would give, into buf. */
static int json_text(const json_t *v, enum gnn_opt_type type, char *buf, size_t len)
{
	switch (type) {
	case GNN_OPT_INT:
		if (!json_is_integer(v))
			return GNN_EFORMAT;
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return GNN_OK;
	case GNN_OPT_FLOAT:
		if (!json_is_number(v))
			return GNN_EFORMAT;
		snprintf(buf, len, "%.17g", json_number_value(v));
		return GNN_OK;
	case GNN_OPT_BOOL:
		if (!json_is_boolean(v))
			return GNN_EFORMAT;
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
		return GNN_OK;
	case GNN_OPT_STR:
	case GNN_OPT_LIST:
		if (!json_is_string(v) || (size_t)snprintf(buf, len, "%s", json_string_value(v)) >= len)
			return GNN_EFORMAT;
		return GNN_OK;
	}
	return GNN_EINTERNAL;
}

int gnn_mcfg_from_json(const json_t *obj, const char *what, struct gnn_model_cfg *mc)
{
	const char *key;
	json_t *v;
	char text[1024];

	memset(mc, 0, sizeof(*mc));
	gnn_mcfg_defaults(mc);
	if (!json_is_object(obj)) {
		GNN_ERROR("bad_config_record", "file=%s reason=\"its \\\"config\\\" is not an object\"", what);
		return GNN_EFORMAT;
	}
	json_object_foreach((json_t *)obj, key, v) {
		int i = gnn_mcfg_find(key);

		if (i < 0 || json_text(v, rows[i].type, text, sizeof(text)) != GNN_OK) {
			GNN_ERROR("bad_config_record", "file=%s key=%s reason=\"%s\"", what, key,
				  i < 0 ? "not a model option of this version" : "a value of the wrong type");
			return GNN_EFORMAT;
		}
		if (gnn_mcfg_set(mc, key, text) != GNN_OK) {
			GNN_ERROR("bad_config_record", "file=%s key=%s reason=\"the value is refused (logged above)\"",
				  what, key);
			return GNN_EFORMAT;
		}
	}
	return GNN_OK;
}

/* --hidden 0's width per model, the last row every other model's. The
 * typed models' was measured better than 256 on ACM's few labels (R-GCN
 * 0.884 -> 0.901, RGAT level; docs/training.md, "Small typed graphs"), and
 * is the width of PyG's and OGB's R-GCN examples on ogbn-mag; GraphSAGE's,
 * GCN's and GAT's is ogbn-products' (64 is worse on Cora). */
static const struct gnn_mcfg_width widths[] = { { "rgcn", 64 }, { "rgat", 64 }, { NULL, 256 } };

const struct gnn_mcfg_width *gnn_mcfg_widths(size_t *n)
{
	*n = sizeof(widths) / sizeof(widths[0]);
	return widths;
}

int64_t gnn_mcfg_hidden(const struct gnn_model_cfg *mc)
{
	size_t i = 0;

	if (mc->hidden > 0)
		return mc->hidden;
	while (widths[i].model != NULL && (mc->model == NULL || strcmp(widths[i].model, mc->model) != 0))
		i++;
	return widths[i].hidden;
}

int gnn_mcfg_linkdec(const struct gnn_model_cfg *mc, struct gnn_linkdec *d)
{
	bool mlp;

	if (mc->task == NULL || strcmp(mc->task, "link") != 0)
		return GNN_EINVAL;
	mlp = mc->decoder != NULL && strcmp(mc->decoder, "mlp") == 0;
	*d = (struct gnn_linkdec){ .kind = mlp ? GNN_LINK_MLP : GNN_LINK_DOT,
				   .dim = (uint32_t)(mc->emb_dim > 0 ? mc->emb_dim : gnn_mcfg_hidden(mc)) };
	if (mlp)
		d->hidden = mc->decoder_hidden > 0 ? (uint32_t)mc->decoder_hidden : d->dim;
	return GNN_OK;
}

bool gnn_mcfg_differs(const struct gnn_model_cfg *a, const struct gnn_model_cfg *b, unsigned cls, size_t *row)
{
	char va[512], vb[512];

	for (size_t i = 0; i < NROWS; i++) {
		bool on_a = gnn_mcfg_active(a, i), on_b = gnn_mcfg_active(b, i);

		if (!(rows[i].cls & cls) || (!on_a && !on_b))
			continue;
		gnn_mcfg_format(a, i, va, sizeof(va));
		gnn_mcfg_format(b, i, vb, sizeof(vb));
		if (on_a != on_b || strcmp(va, vb) != 0) {
			*row = i;
			return true;
		}
	}
	return false;
}
