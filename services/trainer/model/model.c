/* model.c - the model seam (model.h): the registry, and what every model
 * shares: configuration and minibatch checks, the training step around a
 * model's forward and backward, the loss alone, prediction. */
#include "model.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "err.h"
#include "kernels.h"
#include "log.h"

/* ---- the registry: one line per model ---- */

extern const struct tr_model_ops tr_model_graphsage;   /* sage.c */
extern const struct tr_model_ops tr_model_gcn;         /* gcn.c */
extern const struct tr_model_ops tr_model_rgcn;        /* rgcn.c */
extern const struct tr_model_ops tr_model_rgat;        /* rgat.c */
extern const struct tr_model_ops tr_model_gat;         /* rgat.c: rgat on one relation */

static const struct tr_model_ops *const models[] = {
	&tr_model_graphsage,
	&tr_model_gcn,
	&tr_model_rgcn,
	&tr_model_rgat,
	&tr_model_gat,
};

#define NMODELS (sizeof(models) / sizeof(models[0]))

const struct tr_model_ops *tr_model_find(const char *name)
{
	for (size_t i = 0; i < NMODELS; i++)
		if (strcmp(models[i]->name, name) == 0)
			return models[i];
	return NULL;
}

const struct tr_model_ops *tr_model_at(size_t i)
{
	return i < NMODELS ? models[i] : NULL;
}

const char *tr_model_names(void)
{
	static char names[256];

	if (names[0] == '\0')
		for (size_t i = 0, used = 0; i < NMODELS && used < sizeof(names); i++)
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? "|" : "", models[i]->name);
	return names;
}

struct tr_model {
	const struct tr_model_ops *ops;
	struct tr_model_cfg cfg;
	void *self;
	struct tr_fbuf dlogits;
	struct tr_kstats ks;       /* of the current call */
	/* The schema as the checks read it (cfg.schema is borrowed). */
	uint32_t num_types, num_rels, D;
	uint32_t feat_dims[GNN_MAX_TYPES];
};

/* The configuration's ranges and its schema's (sc: cfg's, or the plain
 * one): GNN_EINVAL, logged, when outside. */
static int check_cfg(const struct tr_model_cfg *cfg, const struct gnn_schema *sc)
{
	if (cfg->num_layers < 1 || cfg->num_layers > GNN_PROTO_MAX_LAYERS || cfg->hidden < 1 ||
	    cfg->num_classes < 2 || !(cfg->dropout >= 0.0f && cfg->dropout < 1.0f) ||
	    (cfg->in_dim < 1 && cfg->schema == NULL)) {
		GNN_ERROR("bad_config", "layers=%" PRIu32 " in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " dropout=%g reason=\"model needs 1..%d layers, in_dim and hidden >= 1, classes >= 2, "
			  "dropout in [0, 1)\"",
			  cfg->num_layers, cfg->in_dim, cfg->hidden, cfg->num_classes, (double)cfg->dropout,
			  GNN_PROTO_MAX_LAYERS);
		return GNN_EINVAL;
	}
	if (sc->num_types < 1 || sc->num_types > GNN_PROTO_MAX_TYPES || sc->num_rels < 1 ||
	    sc->num_rels > GNN_PROTO_MAX_RELS) {
		GNN_ERROR("bad_config", "types=%" PRIu32 " relations=%" PRIu32 " reason=\"the schema needs 1..%d "
			  "types and 1..%d relations\"", sc->num_types, sc->num_rels, GNN_PROTO_MAX_TYPES,
			  GNN_PROTO_MAX_RELS);
		return GNN_EINVAL;
	}
	/* Widths up to 2^20 keep every count of the models in size_t and int. */
	if (cfg->in_dim > (1u << 20) || cfg->hidden > (1u << 20) || cfg->num_classes > (1u << 20)) {
		GNN_ERROR("bad_config", "in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " reason=\"widths above 1048576 are not supported\"", cfg->in_dim, cfg->hidden,
			  cfg->num_classes);
		return GNN_EINVAL;
	}
	if (gnn_schema_max_feat_dim(sc) != cfg->in_dim) {
		GNN_ERROR("bad_config", "in_dim=%" PRIu32 " widest=%" PRIu32 " reason=\"in_dim must be the schema's "
			  "widest feature width\"", cfg->in_dim, gnn_schema_max_feat_dim(sc));
		return GNN_EINVAL;
	}
	return GNN_OK;
}

int tr_model_new(const struct tr_model_cfg *cfg, struct tr_model **out)
{
	const char *name = cfg->model != NULL ? cfg->model : "graphsage";
	const struct tr_model_ops *ops = tr_model_find(name);
	const struct gnn_schema *sc = cfg->schema;
	struct gnn_schema *plain = NULL;  /* the schema when cfg has none, while the model is created */
	struct tr_model_cfg c = *cfg;
	struct tr_model *m;
	int rc;

	if (ops == NULL) {
		GNN_ERROR("bad_config", "model=%s reason=\"unknown model: one of %s\"", name, tr_model_names());
		return GNN_EINVAL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL || (sc == NULL && (plain = malloc(sizeof(*plain))) == NULL)) {
		rc = GNN_ENOMEM;
		goto fail;
	}
	if (sc == NULL) {
		gnn_schema_plain(plain, 0, 0, cfg->in_dim);
		sc = plain;
	}
	if ((rc = check_cfg(cfg, sc)) != GNN_OK)
		goto fail;
	m->ops = ops;
	m->cfg = *cfg;
	m->cfg.model = ops->name;
	m->cfg.schema = NULL;  /* borrowed for tr_model_new only (model.h) */
	m->num_types = sc->num_types;
	m->num_rels = sc->num_rels;
	m->D = tr_input_width(cfg, sc->num_types);
	for (uint32_t t = 0; t < sc->num_types; t++)
		m->feat_dims[t] = sc->types[t].feat_dim;
	c.model = ops->name;
	c.schema = sc;
	if ((rc = ops->create(&c, &m->self)) != GNN_OK)
		goto fail;
	free(plain);
	*out = m;
	return GNN_OK;
fail:
	free(plain);
	free(m);
	return rc;
}

void tr_model_free(struct tr_model *m)
{
	if (m == NULL)
		return;
	m->ops->destroy(m->self);
	free(m->dlogits.p);
	free(m);
}

void tr_model_init(struct tr_model *m, uint64_t seed)
{
	m->ops->init(m->self, seed);
}

const struct tr_model_cfg *tr_model_config(const struct tr_model *m)
{
	return &m->cfg;
}

size_t tr_model_num_params(const struct tr_model *m)
{
	return m->ops->num_params(m->self);
}

uint32_t tr_model_weight_mats(const struct tr_model *m)
{
	return m->ops->weight_mats != NULL ? m->ops->weight_mats(m->self) : 1;
}

float *tr_model_params(struct tr_model *m)
{
	return m->ops->params(m->self);
}

float *tr_model_grads(struct tr_model *m)
{
	return m->ops->grads(m->self);
}

void tr_model_layer_dims(const struct tr_model *m, uint32_t l, uint32_t *in, uint32_t *out)
{
	*in = l == 0 ? m->D : m->cfg.hidden;
	*out = l + 1 == m->cfg.num_layers ? m->cfg.num_classes : m->cfg.hidden;
}

const float *tr_model_input_grad(const struct tr_model *m, size_t *ld)
{
	return m->ops->input_grad(m->self, ld);
}

enum tr_encoder tr_encoder_named(const char *v)
{
	if (strcmp(v, "on") == 0)
		return TR_ENC_ON;
	return strcmp(v, "off") == 0 ? TR_ENC_OFF : TR_ENC_AUTO;
}

bool tr_model_input_projects(const struct tr_model *m)
{
	return tr_encoder_projects(m->cfg.encoder, m->num_types, m->cfg.in_dim, m->cfg.hidden);
}

int tr_model_input_row(const struct tr_model *m, uint32_t t, const float *feat, float *out)
{
	if (t >= m->num_types || (feat == NULL) != (m->feat_dims[t] == 0))
		return GNN_EINVAL;
	m->ops->input_row(m->self, t, feat, out);
	return GNN_OK;
}

int tr_model_infer_layer(struct tr_model *m, uint32_t l, const struct gnn_block *b, const float *h, float *out)
{
	if (l >= m->cfg.num_layers)
		return GNN_EINVAL;
	m->ks = (struct tr_kstats){ 0 };
	return m->ops->infer_layer(m->self, l, b, h, out, &m->ks);
}

/* ---- validation ---- */

struct errbuf {
	char *s;
	size_t len, used;
	int count;
};

__attribute__((format(printf, 2, 3))) static void err_add(struct errbuf *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	e->count++;
	if (e->s == NULL || e->len == 0 || e->used + 1 >= e->len)
		return;
	if (e->used > 0) {
		n = snprintf(e->s + e->used, e->len - e->used, "; ");
		e->used += n > 0 ? (size_t)n : 0;
		if (e->used >= e->len) {
			e->used = e->len - 1;
			return;
		}
	}
	va_start(ap, fmt);
	n = vsnprintf(e->s + e->used, e->len - e->used, fmt, ap);
	va_end(ap);
	e->used += n > 0 ? (size_t)n : 0;
	if (e->used >= e->len)
		e->used = e->len - 1;
}

/* The input's types against the schema's, O(types): one message per
 * type (with one type, the words of the homogeneous model). */
static void check_types(const struct tr_model *m, const struct gnn_minibatch *mb, struct errbuf *e)
{
	uint64_t rows = 0;

	if (mb->num_types != m->num_types) {
		err_add(e, "minibatch has %" PRIu32 " node types, the model %" PRIu32, mb->num_types, m->num_types);
		return;
	}
	if (mb->num_types > 1 && mb->src_types == NULL)
		err_add(e, "minibatch has no input node types");
	for (uint32_t t = 0; t < mb->num_types; t++) {
		bool plain = mb->num_types == 1;

		rows += mb->type_rows[t];
		if (mb->feat_dims[t] != m->feat_dims[t] && plain)
			err_add(e, "feature width %" PRIu32 " differs from the model's in_dim %" PRIu32, mb->feat_dims[t],
				m->feat_dims[t]);
		else if (mb->feat_dims[t] != m->feat_dims[t])
			err_add(e, "type %" PRIu32 " has feature width %" PRIu32 ", the schema %" PRIu32, t,
				mb->feat_dims[t], m->feat_dims[t]);
		else if (mb->feat[t] != NULL && mb->feat_dtype != GNN_DT_F32)
			err_add(e, "type %" PRIu32 "'s feature rows are %s, the model reads f32", t,
				gnn_dtype_name(mb->feat_dtype));
		else if (mb->feat_dims[t] == 0 || mb->type_rows[t] == 0 || mb->feat[t] != NULL)
			continue;
		else if (plain)
			err_add(e, "minibatch has no feature rows");
		else
			err_add(e, "minibatch has no feature rows of type %" PRIu32, t);
	}
	if (rows != mb->blocks[0].num_src)
		err_add(e, "type_rows count %" PRIu64 " input nodes, block 0 has %" PRIu32, rows, mb->blocks[0].num_src);
}

/* The structure the model reads: the O(layers + types) part (train_step
 * and the others run it every call, as it guards their buffer sizes). */
static void check_shape(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels,
			struct errbuf *e)
{
	uint32_t L = m->cfg.num_layers, R = m->num_rels;

	if (mb->num_layers != L) {
		err_add(e, "minibatch has %" PRIu32 " layers, the model %" PRIu32, mb->num_layers, L);
		return;
	}
	if (mb->num_rels != R) {
		err_add(e, "minibatch has %" PRIu32 " relations, the model %" PRIu32, mb->num_rels, R);
		return;
	}
	check_types(m, mb, e);
	if (need_labels && mb->labels == NULL)
		err_add(e, "minibatch has no labels");
	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if (b->num_src > INT32_MAX)
			err_add(e, "block %" PRIu32 ": %" PRIu32 " src nodes exceed 2^31-1", l, b->num_src);
		if (b->num_dst > b->num_src)
			err_add(e, "block %" PRIu32 ": num_dst %" PRIu32 " > num_src %" PRIu32, l, b->num_dst,
				b->num_src);
		if (b->num_edges > INT32_MAX)
			err_add(e, "block %" PRIu32 ": %" PRIu64 " edges exceed 2^31-1", l, b->num_edges);
		if (b->num_rels != R)
			err_add(e, "block %" PRIu32 " has %" PRIu32 " relations, the minibatch %" PRIu32, l, b->num_rels,
				R);
		if ((uint64_t)b->num_dst * R > INT32_MAX)
			err_add(e, "block %" PRIu32 ": %" PRIu32 " dst nodes x %" PRIu32 " relations exceed 2^31-1", l,
				b->num_dst, R);
		if (b->indptr == NULL || (b->num_edges > 0 && b->indices == NULL))
			err_add(e, "block %" PRIu32 ": missing indptr or indices", l);
		if (l + 1 < L && b->num_dst != mb->blocks[l + 1].num_src)
			err_add(e, "block %" PRIu32 " has %" PRIu32 " dst nodes but block %" PRIu32 " has %" PRIu32
				" src nodes", l, b->num_dst, l + 1, mb->blocks[l + 1].num_src);
	}
	if (mb->blocks[L - 1].num_dst != mb->num_seeds)
		err_add(e, "last block has %" PRIu32 " dst nodes for %" PRIu32 " seeds", mb->blocks[L - 1].num_dst,
			mb->num_seeds);
}

static int check_labels(const struct tr_model *m, const struct gnn_minibatch *mb, struct errbuf *e)
{
	for (uint32_t i = 0; i < mb->num_seeds; i++) {
		int32_t y = mb->labels[i];

		if (y < -1 || y >= (int32_t)m->cfg.num_classes) {
			err_add(e, "seed %" PRIu32 " has label %" PRId32 ", outside [-1, %" PRIu32 ")", i, y,
				m->cfg.num_classes);
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

/* Each input node's type below num_types, and as many of each as
 * type_rows says (the input rows are ranked by them): O(num_src). */
static void check_src_types(const struct gnn_minibatch *mb, struct errbuf *e)
{
	uint32_t seen[GNN_MAX_TYPES] = { 0 };

	if (mb->num_types == 1)
		return;  /* every input node is of type 0: type_rows counts them (check_types) */
	for (uint32_t i = 0; i < mb->blocks[0].num_src; i++) {
		if (mb->src_types[i] >= mb->num_types) {
			err_add(e, "input node %" PRIu32 " has type %u, outside [0, %" PRIu32 ")", i,
				(unsigned)mb->src_types[i], mb->num_types);
			return;
		}
		seen[mb->src_types[i]]++;
	}
	for (uint32_t t = 0; t < mb->num_types; t++)
		if (seen[t] != mb->type_rows[t]) {
			err_add(e, "type %" PRIu32 " has %" PRIu32 " input nodes, type_rows says %" PRIu32, t, seen[t],
				mb->type_rows[t]);
			return;
		}
}

int tr_model_check(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels, char *why,
		   size_t why_len)
{
	struct errbuf e = { why, why_len, 0, 0 };

	if (why != NULL && why_len > 0)
		why[0] = '\0';
	check_shape(m, mb, need_labels, &e);
	if (e.count > 0)
		return GNN_EINVAL;
	/* The CSR itself, so a malformed block is refused here rather than
	 * read out of bounds later (O(edges): ~1 ms for a products-size
	 * minibatch, against ~100 ms of compute). */
	for (uint32_t l = 0; l < mb->num_layers; l++) {
		const struct gnn_block *b = &mb->blocks[l];
		size_t rows = (size_t)b->num_dst * mb->num_rels;

		if (b->indptr[0] != 0 || (uint64_t)b->indptr[rows] != b->num_edges) {
			err_add(&e, "block %" PRIu32 ": indptr runs from %" PRId32 " to %" PRId32 ", not 0 to %" PRIu64,
				l, b->indptr[0], b->indptr[rows], b->num_edges);
			continue;
		}
		for (size_t q = 0; q < rows; q++)
			if (b->indptr[q + 1] < b->indptr[q]) {
				err_add(&e, "block %" PRIu32 ": indptr decreases at dst %zu relation %zu", l,
					q / mb->num_rels, q % mb->num_rels);
				break;
			}
		for (uint64_t k = 0; k < b->num_edges; k++)
			if (b->indices[k] < 0 || (uint32_t)b->indices[k] >= b->num_src) {
				err_add(&e, "block %" PRIu32 ": edge %" PRIu64 " has source %" PRId32 ", outside [0, %" PRIu32
					")", l, k, b->indices[k], b->num_src);
				break;
			}
	}
	check_src_types(mb, &e);
	if (need_labels)
		check_labels(m, mb, &e);
	return e.count > 0 ? GNN_EINVAL : GNN_OK;
}

/* The O(layers) checks every entry point repeats (tr_model_check does the
 * O(edges) ones): they guard the sizes the buffers are made from. */
static int entry_check(const struct tr_model *m, const struct gnn_minibatch *mb, bool need_labels,
		       const char *what)
{
	char err[256];
	struct errbuf e = { err, sizeof(err), 0, 0 };

	err[0] = '\0';
	check_shape(m, mb, need_labels, &e);
	if (e.count == 0 && need_labels)
		check_labels(m, mb, &e);
	if (e.count > 0) {
		GNN_ERROR("bad_minibatch", "call=%s reason=\"%s\"", what, err);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* ---- training step, loss, prediction ---- */

int tr_model_train_step(struct tr_model *m, const struct gnn_minibatch *mb, uint64_t dropout_seed,
			struct tr_step_stats *st)
{
	size_t n = mb->num_seeds, C = m->cfg.num_classes;
	const float *logits;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = entry_check(m, mb, true, "train_step")) != GNN_OK)
		return rc;
	m->ks = (struct tr_kstats){ 0 };
	if ((rc = m->ops->forward(m->self, mb, true, dropout_seed, &m->ks, &logits)) != GNN_OK ||
	    (rc = tr_fbuf_reserve(&m->dlogits, n * C)) != GNN_OK)
		goto out;
	tr_softmax_xent(logits, mb->labels, n, C, m->dlogits.p, st);
	if (st->labelled == 0) {
		/* Nothing to learn from: a zero gradient, as documented. */
		memset(tr_model_grads(m), 0, tr_model_num_params(m) * sizeof(float));
		goto out;
	}
	rc = m->ops->backward(m->self, mb, m->dlogits.p, &m->ks);
out:
	st->flops = m->ks.flops;
	st->matmul_s = m->ks.matmul_s;
	return rc;
}

int tr_model_loss(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		  double *loss)
{
	struct tr_step_stats st;
	const float *logits;
	int rc;

	if ((rc = entry_check(m, mb, true, "loss")) != GNN_OK)
		return rc;
	if ((rc = m->ops->forward(m->self, mb, train, dropout_seed, &m->ks, &logits)) != GNN_OK)
		return rc;
	tr_softmax_xent(logits, mb->labels, mb->num_seeds, m->cfg.num_classes, NULL, &st);
	*loss = st.loss;
	return GNN_OK;
}

int tr_model_forward(struct tr_model *m, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		     const float **out)
{
	int rc;

	if ((rc = entry_check(m, mb, false, "forward")) != GNN_OK)
		return rc;
	m->ks = (struct tr_kstats){ 0 };
	return m->ops->forward(m->self, mb, train, dropout_seed, &m->ks, out);
}

int tr_model_backward(struct tr_model *m, const struct gnn_minibatch *mb, const float *dout)
{
	return m->ops->backward(m->self, mb, dout, &m->ks);
}

int tr_model_predict(struct tr_model *m, const struct gnn_minibatch *mb, int32_t *pred)
{
	size_t C = m->cfg.num_classes;
	const float *z;
	int rc;

	if ((rc = entry_check(m, mb, false, "predict")) != GNN_OK)
		return rc;
	if ((rc = m->ops->forward(m->self, mb, false, 0, &m->ks, &z)) != GNN_OK)
		return rc;
	for (size_t i = 0; i < mb->num_seeds; i++, z += C) {
		size_t arg = 0;

		for (size_t j = 1; j < C; j++)
			if (z[j] > z[arg])
				arg = j;
		pred[i] = (int32_t)arg;
	}
	return GNN_OK;
}
