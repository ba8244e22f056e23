/* input.c - layer 0's input rows (input.h). */
#include "input.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "log.h"

/* Type vectors' gradient columns go in 16-float lines: threads share no
 * cache line and each sum has one fixed order. */
#define LINE_FLOATS 16

void tr_input_setup(struct tr_input *in, const struct tr_model_cfg *cfg)
{
	const struct gnn_schema *sc = cfg->schema;
	size_t n = 0;

	memset(in, 0, sizeof(*in));
	in->T = sc->num_types;
	in->project = tr_encoder_projects(cfg->encoder, in->T, cfg->in_dim, cfg->hidden);
	in->D = tr_input_width(cfg, in->T);
	for (uint32_t t = 0; t < in->T; t++) {
		in->feat_dim[t] = sc->types[t].feat_dim;
		in->vec[t] = in->feat_dim[t] == 0 ? (int32_t)in->nvec++ : -1;
		if (in->project && in->feat_dim[t] == in->D && (cfg->embed_only >> t & 1))
			in->direct |= (uint64_t)1 << t;
		else if (in->project && in->feat_dim[t] > 0) {
			in->woff[t] = n;
			n += ((size_t)in->feat_dim[t] + 1) * in->D;
		}
	}
	in->vec_off = n;
	in->nparams = n + (size_t)in->nvec * in->D;
	in->input_grad = cfg->input_grad;
	in->keep_below = tr_dropout_keep_below(cfg->dropout);
	in->keep_scale = (float)(1.0 / (1.0 - (double)cfg->dropout));
}

void tr_input_bind(struct tr_input *in, float *params, float *grads)
{
	in->params = params;
	in->grads = grads;
}

int tr_input_alloc(struct tr_input *in, size_t n, float **params, float **grads, size_t *nparams)
{
	*nparams = n + in->nparams;
	*params = calloc(*nparams, sizeof(float));
	*grads = calloc(*nparams, sizeof(float));
	if (*params == NULL || *grads == NULL) {
		free(*params);
		free(*grads);
		*params = *grads = NULL;
		return GNN_ENOMEM;
	}
	tr_input_bind(in, *params + n, *grads + n);
	return GNN_OK;
}

/* Whether type t's rows enter as they are (project mode). */
static bool is_direct(const struct tr_input *in, uint32_t t)
{
	return in->direct >> t & 1;
}

/* Whether type t has W_t and b_t. */
static bool is_projected(const struct tr_input *in, uint32_t t)
{
	return in->project && in->vec[t] < 0 && !is_direct(in, t);
}

/* Parameters [i0, i0 + n) of the slice from U(-bound, bound). */
static void draw(struct tr_input *in, uint64_t key, size_t first, size_t i0, size_t n, double bound)
{
	for (size_t i = i0; i < i0 + n; i++)
		in->params[i] = (float)((2.0 * gnn_unit64(gnn_draw64(key, first + i)) - 1.0) * bound);
}

void tr_input_init(struct tr_input *in, uint64_t key, size_t first)
{
	for (uint32_t t = 0; t < in->T; t++)
		if (is_projected(in, t))
			draw(in, key, first, in->woff[t], ((size_t)in->feat_dim[t] + 1) * in->D,
			     1.0 / sqrt((double)in->feat_dim[t]));
	draw(in, key, first, in->vec_off, in->nparams - in->vec_off, 1.0);
}

void tr_input_free(struct tr_input *in)
{
	free(in->rank.p);
	free(in->h0.p);
	free(in->e.p);
	free(in->de.p);
	free(in->dm.p);
	free(in->dx.p);
	free(in->dt.p);
	memset(in, 0, sizeof(*in));
}

/* ---- one row ---- */

void tr_input_row(const struct tr_input *in, uint32_t t, const float *feat, float *out)
{
	const float *w;
	uint32_t f = in->feat_dim[t];

	if (in->vec[t] >= 0) {
		memcpy(out, in->params + in->vec_off + (size_t)in->vec[t] * in->D, in->D * sizeof(float));
		return;
	}
	if (!in->project || is_direct(in, t)) {
		memmove(out, feat, f * sizeof(float));   /* feat may be out (infer's widened row) */
		memset(out + f, 0, (in->D - f) * sizeof(float));
		return;
	}
	w = in->params + in->woff[t];
	memcpy(out, w + (size_t)f * in->D, in->D * sizeof(float));
	cblas_sgemv(CblasRowMajor, CblasTrans, (int)f, (int)in->D, 1.0f, w, (int)in->D, feat, 1, 1.0f, out, 1);
}

/* ---- forward ---- */

/* What the passes over layer 0's input nodes read and write. */
struct rows_ctx {
	const struct tr_input *in;
	const struct gnn_minibatch *mb;
	const float *src;   /* forward: the projected rows (e); backward: dH0, or the vector rows' masked (dm) */
	float *out;         /* forward: the rows; backward: the per-type gradient rows (de) or the vectors' */
	bool drop;          /* dropout with in->key: each row as it is written, while it is in cache */
};

static uint32_t type_of(const struct tr_input *in, const struct gnn_minibatch *mb, size_t i)
{
	return in->T > 1 ? mb->src_types[i] : 0;
}

static void rows_part(void *arg, size_t lo, size_t hi)
{
	const struct rows_ctx *c = arg;
	const struct tr_input *in = c->in;
	const size_t D = in->D;

	for (size_t i = lo; i < hi; i++) {
		uint32_t t = type_of(in, c->mb, i);
		size_t r = (size_t)in->rank.p[i];

		if (in->vec[t] >= 0)
			tr_input_row(in, t, NULL, c->out + i * D);
		else if (is_projected(in, t))
			memcpy(c->out + i * D, c->src + (in->toff[t] + r) * D, D * sizeof(float));
		else
			tr_input_row(in, t, (const float *)c->mb->feat[t] + r * in->feat_dim[t], c->out + i * D);
		if (c->drop)
			tr_dropout_row(c->out + i * D, D, in->key, i, in->keep_below, in->keep_scale);
	}
}

/* Each input node's row among its type's features, and (project) each
 * type's first row in e. GNN_EINVAL when the types disagree with
 * type_rows. */
static int rank_rows(struct tr_input *in, const struct gnn_minibatch *mb)
{
	size_t ns = mb->blocks[0].num_src;
	uint32_t seen[GNN_MAX_TYPES] = { 0 };
	int rc;

	if ((rc = tr_ibuf_reserve(&in->rank, ns ? ns : 1)) != GNN_OK)
		return rc;
	for (size_t i = 0; i < ns; i++) {
		uint32_t t = type_of(in, mb, i);

		if (t >= in->T || seen[t] >= mb->type_rows[t])
			return GNN_EINVAL;
		in->rank.p[i] = (int32_t)seen[t]++;
	}
	in->toff[0] = 0;
	for (uint32_t t = 0; t < in->T; t++)
		in->toff[t + 1] = in->toff[t] + (in->vec[t] < 0 ? mb->type_rows[t] : 0);
	return GNN_OK;
}

/* project: e's rows of type t = F_t W_t + b_t, one product per type. */
static int project_types(struct tr_input *in, const struct gnn_minibatch *mb, struct tr_kstats *ks)
{
	const size_t D = in->D;
	int rc;

	if ((rc = tr_fbuf_reserve(&in->e, (in->toff[in->T] ? in->toff[in->T] : 1) * D)) != GNN_OK)
		return rc;
	for (uint32_t t = 0; t < in->T; t++) {
		size_t n = in->toff[t + 1] - in->toff[t], f = in->feat_dim[t];
		const float *w = in->params + in->woff[t];
		float *e = in->e.p + in->toff[t] * D;

		if (n == 0 || !is_projected(in, t))
			continue;
		tr_sgemm(ks, CblasNoTrans, CblasNoTrans, n, D, f, mb->feat[t], f, w, D, e, D);
		for (size_t r = 0; r < n; r++)
			tr_vadd(e + r * D, w + f * D, D);
	}
	return GNN_OK;
}

int tr_input_forward(struct tr_input *in, const struct gnn_minibatch *mb, bool train, uint64_t key,
		     struct tr_kstats *ks, const float **h0)
{
	size_t ns = mb->blocks[0].num_src;
	struct rows_ctx c = { .in = in, .mb = mb };
	int rc;

	in->dropped = false;
	if (!in->project && in->T == 1 && in->feat_dim[0] == in->D) {
		*h0 = mb->feat[0];   /* no copy: ~600k rows at products scale */
		return GNN_OK;
	}
	if ((rc = rank_rows(in, mb)) != GNN_OK || (rc = tr_fbuf_reserve(&in->h0, (ns ? ns : 1) * in->D)) != GNN_OK)
		return rc;
	if (in->project && (rc = project_types(in, mb, ks)) != GNN_OK)
		return rc;
	c.src = in->e.p;
	c.out = in->h0.p;
	c.drop = in->dropped = in->project && train && in->keep_below < UINT32_MAX;
	in->key = key;
	tr_par_for(ns, 1 + 16384 / in->D, rows_part, &c);
	*h0 = in->h0.p;
	return GNN_OK;
}

/* ---- backward ---- */

bool tr_input_wants_grad(const struct tr_input *in, const struct gnn_minibatch *mb)
{
	if (in->input_grad)
		return true;
	for (uint32_t t = 0; t < in->T; t++)
		if (mb->type_rows[t] > 0 && (in->vec[t] >= 0 || in->project))
			return true;
	return false;
}

/* Each type vector's gradient: its rows of src (dH0, or dm when masked)
 * summed, columns [lo, hi) in lines. */
static void vec_grad_cols(void *arg, size_t lo, size_t hi)
{
	const struct rows_ctx *c = arg;
	const struct tr_input *in = c->in;
	size_t j0 = lo * LINE_FLOATS, j1 = hi * LINE_FLOATS < in->D ? hi * LINE_FLOATS : in->D;

	for (size_t i = 0; i < c->mb->blocks[0].num_src; i++) {
		int32_t k = in->vec[type_of(in, c->mb, i)];

		if (k >= 0)
			tr_vadd(c->out + (size_t)k * in->D + j0, c->src + i * in->D + j0, j1 - j0);
	}
}

/* project: dH0's rows of the types with features into de, by type, and
 * (drop) those of the vector types into dm at their place; each through
 * the forward's dropout mask (drop). */
static void group_rows(void *arg, size_t lo, size_t hi)
{
	const struct rows_ctx *c = arg;
	const struct tr_input *in = c->in;
	const size_t D = in->D;

	for (size_t i = lo; i < hi; i++) {
		uint32_t t = type_of(in, c->mb, i);
		float *row;

		if (in->vec[t] < 0)
			row = c->out + (in->toff[t] + (size_t)in->rank.p[i]) * D;
		else if (c->drop)
			row = in->dm.p + i * D;
		else
			continue;
		memcpy(row, c->src + i * D, D * sizeof(float));
		if (c->drop)
			tr_dropout_row(row, D, in->key, i, in->keep_below, in->keep_scale);
	}
}

/* project: dW_t = F_t^T dE_t and db_t = the column sums of dE_t. */
static void project_grads(struct tr_input *in, const struct gnn_minibatch *mb, struct tr_kstats *ks)
{
	const size_t D = in->D;

	for (uint32_t t = 0; t < in->T; t++) {
		size_t n = in->toff[t + 1] - in->toff[t], f = in->feat_dim[t];
		float *g = in->grads + in->woff[t];
		const float *de = in->de.p + in->toff[t] * D;

		if (!is_projected(in, t))
			continue;
		if (n == 0) {
			memset(g, 0, (f + 1) * D * sizeof(float));
			continue;
		}
		tr_sgemm(ks, CblasTrans, CblasNoTrans, f, D, n, mb->feat[t], f, de, D, g, D);
		memset(g + f * D, 0, D * sizeof(float));
		for (size_t r = 0; r < n; r++)
			tr_vadd(g + f * D, de + r * D, D);
	}
}

/* With input_grad in project mode: each input node's raw gradient, dE_t
 * W_t^T (a direct type's: dE_t), row i of dx (the widest wanted type's
 * width), for the types input_grad names; the other rows are left as
 * they are. */
static int raw_grads(struct tr_input *in, const struct gnn_minibatch *mb, struct tr_kstats *ks)
{
	size_t ns = mb->blocks[0].num_src, D = in->D, ld = 1;
	int rc = GNN_OK;

	for (uint32_t t = 0; t < in->T; t++)
		if (in->input_grad >> t & 1)
			ld = in->feat_dim[t] > ld ? in->feat_dim[t] : ld;
	if ((rc = tr_fbuf_reserve(&in->dx, (ns ? ns : 1) * ld)) != GNN_OK)
		return rc;
	for (uint32_t t = 0; t < in->T && rc == GNN_OK; t++) {
		size_t n = in->toff[t + 1] - in->toff[t], f = in->feat_dim[t];
		const float *g = in->de.p + in->toff[t] * D;

		if (!(in->input_grad >> t & 1) || in->vec[t] >= 0 || n == 0)
			continue;
		if (is_projected(in, t)) {
			if ((rc = tr_fbuf_reserve(&in->dt, n * f)) != GNN_OK)
				continue;
			tr_sgemm(ks, CblasNoTrans, CblasTrans, n, f, D, g, D, in->params + in->woff[t], D, in->dt.p, f);
			g = in->dt.p;
		}
		for (size_t i = 0; i < ns; i++)
			if (type_of(in, mb, i) == t)
				memcpy(in->dx.p + i * ld, g + (size_t)in->rank.p[i] * f, f * sizeof(float));
	}
	in->dh0 = in->dx.p;
	in->dh0_ld = ld;
	return rc;
}

int tr_input_backward(struct tr_input *in, const struct gnn_minibatch *mb, const float *dh0,
		      struct tr_kstats *ks)
{
	size_t ns = mb->blocks[0].num_src;
	struct rows_ctx c = { .in = in, .mb = mb, .out = in->grads + in->vec_off };
	int rc;

	in->dh0 = NULL;
	memset(in->grads, 0, in->nparams * sizeof(float));
	if (dh0 == NULL)
		return GNN_OK;
	if (!in->project) {   /* no dropout here: dH0 is the rows' gradient */
		c.src = dh0;
		if (in->nvec > 0)
			tr_par_for((in->D + LINE_FLOATS - 1) / LINE_FLOATS, 1, vec_grad_cols, &c);
		in->dh0 = dh0;
		in->dh0_ld = in->D;
		return GNN_OK;
	}
	if ((rc = tr_fbuf_reserve(&in->de, (in->toff[in->T] ? in->toff[in->T] : 1) * in->D)) != GNN_OK ||
	    (in->dropped && in->nvec > 0 && (rc = tr_fbuf_reserve(&in->dm, (ns ? ns : 1) * in->D)) != GNN_OK))
		return rc;
	c.src = dh0;
	c.out = in->de.p;
	c.drop = in->dropped;
	tr_par_for(ns, 1 + 16384 / in->D, group_rows, &c);
	if (in->nvec > 0) {
		c.src = in->dropped ? in->dm.p : dh0;
		c.out = in->grads + in->vec_off;
		tr_par_for((in->D + LINE_FLOATS - 1) / LINE_FLOATS, 1, vec_grad_cols, &c);
	}
	project_grads(in, mb, ks);
	return in->input_grad ? raw_grads(in, mb, ks) : GNN_OK;
}

const float *tr_input_grad(const struct tr_input *in, size_t *ld)
{
	*ld = in->dh0_ld;
	return in->dh0;
}
