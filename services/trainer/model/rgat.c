/* rgat.c - RGAT, attention per relation summed over the relations (PyG's
 * to_hetero(GATConv) examples, GraphStorm's rgat, the MLPerf R-GAT), and
 * GAT (Velickovic et al. 2018) as its one-relation instance, behind the
 * model seam (model.h: `--model rgat`, `--model gat`: one code path, gat
 * refusing a schema of more than one relation). docs/model.md, "RGAT and
 * GAT": formulas as implemented, layout, cost, checks.
 *
 * Layer l maps its block's source rows H (num_src x in) to destination
 * rows (num_dst x out) with K heads of width F = out / K (hidden layers: K
 * = cfg heads; the last layer: K = 1, F = num_classes). For each relation
 * r and head k (Z_r[u,k]: columns k F .. k F + F - 1 of Z_r's row u):
 *
 *   Z_r    = H W_r                                  (every source row)
 *   e_uv   = LeakyReLU_0.2(<a_src[r,k], Z_r[u,k]> + <a_dst[r,k], Z_r[v,k]>)
 *   alpha  = softmax of e over v's in-edges of relation r (max subtracted)
 *   beta   = alpha, in training dropped per (edge, head) and scaled (GAT's
 *            attention dropout at cfg dropout; att_keep)
 *   Y_v    = H_v W_self + sum_r concat_k sum_u beta_uv Z_r[u,k] + b
 *
 * (a relation without in-edges at v adds 0), then ReLU and dropout after
 * every layer but the last, whose outputs are the logits. With cfg
 * degree_scale the last layer's Y_v but b is multiplied by sqrt(deg(v) +
 * 1), as layers.c does. Layer 0's rows are input.h's (the per-type
 * encoder or padded features, learned vectors of featureless types).
 *
 * Parameters, one block, layer after layer: W_self [in x out], W_1..W_R
 * [in x out each], a_src [R x out], a_dst [R x out] (head k's slice is
 * columns k F .. k F + F - 1 of relation r's row), b [out]; then the input
 * rows' slice (input.h).
 *
 * Attention multiplies first (a score needs Z_r of every neighbour), so
 * each relation computes only the rows it reads: the sources of its edges
 * and the destinations that have some, gathered into compact rows
 * (plan_rows), not every source row through every relation's W_r.
 *
 * Threads: the scores and the softmax split destination (or compact)
 * rows; the gradient into the source rows is a gather through the block
 * grouped by source (tr_block_transpose over edges), the attention
 * vectors' gradient splits (relation, head) slices: every sum has one
 * order whatever the thread count. Not thread-safe: one model per thread. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "input.h"
#include "kernels.h"
#include "layers.h"
#include "log.h"
#include "model.h"

#define RGAT_INIT_TAG 0x72676174ull   /* "rgat": gat draws the same */
#define ATT_DROP_TAG 0x61747464ull    /* "attd": the attention dropout's key from the layer's */
#define LRELU_SLOPE 0.2f
#define LINE_FLOATS 16
#define MAXL GNN_PROTO_MAX_LAYERS

struct rgat {
	struct tr_model_cfg cfg;           /* its schema pointer cleared */
	uint32_t R;
	struct tr_input inp;               /* layer 0's rows, inp.D wide */
	uint32_t in[MAXL], out[MAXL], K[MAXL], F[MAXL];
	size_t off[MAXL];                  /* layer l's first parameter */
	size_t inp_off, nparams;
	float *params, *grads;
	uint32_t keep_below;
	float keep_scale;
	const float *h0;                   /* layer 0's rows of the last forward */
	bool adrop;                        /* the last forward dropped attention, layer l's with akey[l] */
	uint64_t akey[MAXL];
	/* Kept by the forward for the backward, per layer. Relation r's rows
	 * (the sources of its edges, and the destinations that have some) are
	 * its compact rows zoff[r] .. zoff[r + 1] - 1: source row u is compact
	 * row zoff[r] + pos[r ns + u] (pos -1: none), whose source row is
	 * rows[]. Z (zc: a compact row's Z_r row, out wide), its scores (sc:
	 * K source scores then K destination scores), alpha (al: num_edges x
	 * K, the block's edge order), the outputs (h, after ReLU + dropout). */
	size_t *zoff[MAXL];                /* R + 1 each */
	struct tr_ibuf pos[MAXL], rows[MAXL];
	struct tr_fbuf zc[MAXL], sc[MAXL], al[MAXL], h[MAXL];
	struct tr_fbuf hc;                 /* a relation's source rows gathered; backward: dZ_r W_r^T */
	/* backward: dY scaled (degree_scale), the edges' score gradient, the
	 * compact rows' score gradient (as sc) and dZ, dY W_self^T, dH
	 * ping-pong */
	struct tr_fbuf g, dse, dsc, dzc, dself, d[2];
	struct tr_ibuf eq, iota, tptr, tidx;   /* each edge's (dst, relation) row; the block by source */
};

/* Floats of layer l's parameters. */
static size_t layer_size(const struct rgat *s, uint32_t l)
{
	return ((size_t)s->R + 1) * s->in[l] * s->out[l] + (2 * (size_t)s->R + 1) * s->out[l];
}

static void rgat_destroy(void *self)
{
	struct rgat *s = self;

	if (s == NULL)
		return;
	for (int l = 0; l < MAXL; l++) {
		free(s->zoff[l]);
		free(s->pos[l].p);
		free(s->rows[l].p);
		free(s->zc[l].p);
		free(s->sc[l].p);
		free(s->al[l].p);
		free(s->h[l].p);
	}
	free(s->hc.p);
	free(s->g.p);
	free(s->dse.p);
	free(s->dsc.p);
	free(s->dzc.p);
	free(s->dself.p);
	free(s->d[0].p);
	free(s->d[1].p);
	free(s->eq.p);
	free(s->iota.p);
	free(s->tptr.p);
	free(s->tidx.p);
	tr_input_free(&s->inp);
	free(s->params);
	free(s->grads);
	free(s);
}

/* What attention refuses of a configuration the seam accepted. */
static int check_cfg(const struct tr_model_cfg *cfg)
{
	uint32_t K = cfg->heads ? cfg->heads : 1;

	if (cfg->num_bases > 0) {
		GNN_ERROR("bad_config", "model=%s num_bases=%" PRIu32 " reason=\"bases decompose R-GCN's relation "
			  "weights: 1..relations with --model rgcn, else 0\"", cfg->model, cfg->num_bases);
		return GNN_EINVAL;
	}
	if (cfg->num_layers > 1 && cfg->hidden % K != 0) {
		GNN_ERROR("bad_config", "model=%s hidden=%" PRIu32 " heads=%" PRIu32 " reason=\"--hidden must be a "
			  "multiple of --heads: each head is hidden / heads wide\"", cfg->model, cfg->hidden, K);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

static int rgat_create(const struct tr_model_cfg *cfg, void **self)
{
	struct rgat *s;
	size_t n = 0;

	if (check_cfg(cfg) != GNN_OK)
		return GNN_EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return GNN_ENOMEM;
	s->cfg = *cfg;
	s->cfg.schema = NULL;
	s->R = cfg->schema->num_rels;
	tr_input_setup(&s->inp, cfg);
	for (uint32_t l = 0; l < cfg->num_layers; l++) {
		bool last = l + 1 == cfg->num_layers;

		s->in[l] = l == 0 ? s->inp.D : cfg->hidden;
		s->out[l] = last ? cfg->num_classes : cfg->hidden;
		s->K[l] = last || cfg->heads == 0 ? 1 : cfg->heads;
		s->F[l] = s->out[l] / s->K[l];
		s->off[l] = n;
		n += layer_size(s, l);
		if ((s->zoff[l] = calloc((size_t)s->R + 1, sizeof(size_t))) == NULL) {
			rgat_destroy(s);
			return GNN_ENOMEM;
		}
	}
	s->inp_off = n;
	if (tr_input_alloc(&s->inp, n, &s->params, &s->grads, &s->nparams) != GNN_OK) {
		rgat_destroy(s);
		return GNN_ENOMEM;
	}
	s->keep_below = tr_dropout_keep_below(cfg->dropout);
	s->keep_scale = (float)(1.0 / (1.0 - (double)cfg->dropout));
	*self = s;
	return GNN_OK;
}

/* GAT: the same model, on a schema of one relation. */
static int gat_create(const struct tr_model_cfg *cfg, void **self)
{
	if (cfg->schema->num_rels > 1) {
		GNN_ERROR("bad_config", "model=%s relations=%" PRIu32 " reason=\"gat reads one relation: use --model "
			  "rgat\"", cfg->model, cfg->schema->num_rels);
		return GNN_EINVAL;
	}
	return rgat_create(cfg, self);
}

/* Half-width of parameter i of layer l's initial draw: weights and b as
 * nn.Linear (1/sqrt(in)); the attention vectors Glorot's over (heads,
 * F), sqrt(6 / (K + F)), as PyG's GATConv initialises att_src/att_dst. */
static double init_bound(const struct rgat *s, uint32_t l, size_t i)
{
	size_t w = ((size_t)s->R + 1) * s->in[l] * s->out[l];

	if (i >= w && i < w + 2 * (size_t)s->R * s->out[l])
		return sqrt(6.0 / (double)(s->K[l] + s->F[l]));
	return 1.0 / sqrt((double)s->in[l]);
}

static void rgat_init(void *self, uint64_t seed)
{
	struct rgat *s = self;
	uint64_t key = gnn_mix64(seed ^ RGAT_INIT_TAG);

	for (uint32_t l = 0; l < s->cfg.num_layers; l++)
		for (size_t i = 0; i < layer_size(s, l); i++) {
			size_t j = s->off[l] + i;
			double u = gnn_unit64(gnn_draw64(key, j));

			s->params[j] = (float)((2.0 * u - 1.0) * init_bound(s, l, i));
		}
	tr_input_init(&s->inp, key, s->inp_off);
}

static size_t rgat_num_params(const void *self)
{
	return ((const struct rgat *)self)->nparams;
}

static float *rgat_params(void *self)
{
	return ((struct rgat *)self)->params;
}

static float *rgat_grads(void *self)
{
	return ((struct rgat *)self)->grads;
}

static uint32_t rgat_weight_mats(const void *self)
{
	return ((const struct rgat *)self)->R + 1;
}

static void rgat_input_row(const void *self, uint32_t t, const float *feat, float *out)
{
	tr_input_row(&((const struct rgat *)self)->inp, t, feat, out);
}

static const float *rgat_input_grad(const void *self, size_t *ld)
{
	return tr_input_grad(&((const struct rgat *)self)->inp, ld);
}


/* ---- the passes over rows (tr_par_for's) ---- */

/* What a pass over one layer's rows reads and writes. Slice j = r K + k
 * (relation r, head k) of a_src and a_dst starts at j F; head k of a Z
 * row at k F (out = K F). A compact row i has scores sc[i 2K + k] (its
 * source score of head k) and sc[i 2K + K + k] (its destination score). */
struct pass {
	const struct gnn_block *b;
	size_t R, K, F, out, in, ns;
	const size_t *zoff;
	const int32_t *pos, *rows;
	size_t r;                   /* a pass over one relation's compact rows: which */
	const float *h;             /* the layer's source rows */
	float *hc;                  /* gathered rows; backward: dZ_r W_r^T */
	const float *asrc, *adst, *bias;
	float *zc, *sc, *al;
	float *y;                   /* forward: the layer's outputs, H_dst W_self on entry */
	bool scaled;                /* degree_scale's layer */
	bool adrop;                 /* attention dropout (training): akey's mask, kept when the draw < akeep */
	uint64_t akey;
	uint32_t akeep;
	float ascale;
	const float *dy, *g;        /* backward: dY; dY scaled (degree_scale), else dY */
	float *dse, *dsc, *dzc, *da_src, *da_dst;
	int32_t *eq;
	const int32_t *tptr, *tidx;
	const float *dself;         /* dY W_self^T */
	struct tr_grad_ctx mask;    /* dH, its width, the previous layer's ReLU/dropout mask */
};

static inline float dotf(const float *restrict a, const float *restrict b, size_t n)
{
	v4f acc = { 0, 0, 0, 0 };
	size_t j = 0;
	float s;

	for (; j + 4 <= n; j += 4)
		acc += tr_vld(a + j) * tr_vld(b + j);
	s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
	for (; j < n; j++)
		s += a[j] * b[j];
	return s;
}

static inline float lrelu(float x)
{
	return x > 0.0f ? x : LRELU_SLOPE * x;
}

/* Edge e's head k through attention dropout (GAT's, on the normalised
 * coefficients, at --dropout): ascale where kept, 0 where dropped; 1
 * without. alpha keeps the softmax's value; each use multiplies by this. */
static inline float att_keep(const struct pass *c, size_t e, size_t k)
{
	if (!c->adrop)
		return 1.0f;
	return (uint32_t)gnn_draw64(c->akey, e * c->K + k) < c->akeep ? c->ascale : 0.0f;
}

/* Source row u's compact row in relation r (it has one: u is a source of
 * an edge of r, or a destination with some). */
static inline size_t crow(const struct pass *c, size_t r, size_t u)
{
	return c->zoff[r] + (size_t)c->pos[r * c->ns + u];
}

/* Relation r's compact rows' source rows: H itself when they are all of
 * H's (in order), else their gathered copy. */
static const float *rel_rows(const struct pass *c, size_t r)
{
	return c->zoff[r + 1] - c->zoff[r] == c->ns ? c->h : c->hc + c->zoff[r] * c->in;
}

/* sqrt(deg(v) + 1), deg(v) v's edges over all relations. */
static float degree_factor(const struct pass *c, size_t v)
{
	const int32_t *ip = c->b->indptr;

	return sqrtf((float)(ip[(v + 1) * c->R] - ip[v * c->R]) + 1.0f);
}

/* Relation c->r's compact rows [lo, hi) gathered from H into hc (none
 * when they are all of H's). */
static void gather_rows(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;
	const size_t z0 = c->zoff[c->r];

	if (c->zoff[c->r + 1] - z0 == c->ns)
		return;
	for (size_t i = lo; i < hi; i++)
		memcpy(c->hc + (z0 + i) * c->in, c->h + (size_t)c->rows[z0 + i] * c->in, c->in * sizeof(float));
}

/* Relation c->r's compact rows [lo, hi): their scores <a_src[r,k], Z_r[u,k]>
 * and <a_dst[r,k], Z_r[u,k]>. */
static void score_rows(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;
	const size_t K = c->K, F = c->F, r = c->r;

	for (size_t i = c->zoff[r] + lo; i < c->zoff[r] + hi; i++)
		for (size_t k = 0; k < K; k++) {
			c->sc[i * 2 * K + k] = dotf(c->asrc + (r * K + k) * F, c->zc + i * c->out + k * F, F);
			c->sc[i * 2 * K + K + k] = dotf(c->adst + (r * K + k) * F, c->zc + i * c->out + k * F, F);
		}
}

/* A pass over each relation's compact rows in turn; work: the floats a row costs. */
static void per_relation(const struct pass *c, tr_range_fn fn, size_t work)
{
	for (size_t r = 0; r < c->R; r++) {
		struct pass cr = *c;

		cr.r = r;
		tr_par_for(c->zoff[r + 1] - c->zoff[r], 1 + 16384 / (work ? work : 1), fn, &cr);
	}
}

/* Destination v's attention over its edges of relation r, head by head
 * into al, then their Z_r rows weighted by it added to yv. */
static void attend(const struct pass *c, size_t v, size_t r, float *restrict yv)
{
	const int32_t *idx = c->b->indices;
	const int32_t e0 = c->b->indptr[v * c->R + r], e1 = c->b->indptr[v * c->R + r + 1];
	const size_t K = c->K, F = c->F;

	if (e1 == e0)
		return;
	for (size_t k = 0; k < K; k++) {
		float sdv = c->sc[crow(c, r, v) * 2 * K + K + k], mx = -INFINITY, sum = 0.0f;

		for (int32_t e = e0; e < e1; e++) {
			float x = lrelu(c->sc[crow(c, r, (size_t)idx[e]) * 2 * K + k] + sdv);

			c->al[(size_t)e * K + k] = x;
			mx = x > mx ? x : mx;
		}
		for (int32_t e = e0; e < e1; e++) {
			float x = expf(c->al[(size_t)e * K + k] - mx);

			c->al[(size_t)e * K + k] = x;
			sum += x;
		}
		for (int32_t e = e0; e < e1; e++)
			c->al[(size_t)e * K + k] /= sum;
	}
	for (int32_t e = e0; e < e1; e++) {
		const float *zu = c->zc + crow(c, r, (size_t)idx[e]) * c->out;

		for (size_t k = 0; k < K; k++)
			tr_vaxpy(yv + k * F, zu + k * F, c->al[(size_t)e * K + k] * att_keep(c, (size_t)e, k), F);
	}
}

/* Y rows [lo, hi): the attention sums added to H_v W_self, the degree
 * scale, the bias. */
static void attend_rows(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;

	for (size_t v = lo; v < hi; v++) {
		float *yv = c->y + v * c->out;

		for (size_t r = 0; r < c->R; r++)
			attend(c, v, r, yv);
		if (c->scaled)
			tr_vscale(yv, degree_factor(c, v), c->out);
		tr_vadd(yv, c->bias, c->out);
	}
}

/* The geometry and layer l's parameters and kept rows, for a pass over
 * block b whose source rows are h. */
static struct pass pass_of(struct rgat *s, uint32_t l, const struct gnn_block *b, const float *h)
{
	size_t R = s->R, in = s->in[l], out = s->out[l];
	const float *p = s->params + s->off[l] + (R + 1) * in * out;

	return (struct pass){ .b = b, .R = R, .K = s->K[l], .F = s->F[l], .out = out, .in = in, .ns = b->num_src,
			      .zoff = s->zoff[l], .pos = s->pos[l].p, .rows = s->rows[l].p, .h = h, .hc = s->hc.p,
			      .zc = s->zc[l].p, .asrc = p, .adst = p + R * out, .bias = p + 2 * R * out,
			      .sc = s->sc[l].p, .al = s->al[l].p,
			      .scaled = s->cfg.degree_scale && l + 1 == s->cfg.num_layers, .adrop = s->adrop,
			      .akey = s->akey[l], .akeep = s->keep_below, .ascale = s->keep_scale };
}

/* ---- which rows each relation computes ---- */

struct rank_ctx {
	int32_t *pos;
	int32_t *rows;
	const size_t *zoff;
	size_t ns, *count;
};

/* Relations [lo, hi): each marked row's rank among its relation's (pos),
 * counted. */
static void rank_rels(void *arg, size_t lo, size_t hi)
{
	const struct rank_ctx *c = arg;

	for (size_t r = lo; r < hi; r++) {
		int32_t n = 0, *pos = c->pos + r * c->ns;

		for (size_t u = 0; u < c->ns; u++)
			if (pos[u] >= 0)
				pos[u] = n++;
		c->count[r] = (size_t)n;
	}
}

/* Relations [lo, hi): each compact row's source row. */
static void fill_rels(void *arg, size_t lo, size_t hi)
{
	const struct rank_ctx *c = arg;

	for (size_t r = lo; r < hi; r++)
		for (size_t u = 0; u < c->ns; u++)
			if (c->pos[r * c->ns + u] >= 0)
				c->rows[c->zoff[r] + (size_t)c->pos[r * c->ns + u]] = (int32_t)u;
}

/* Layer l's compact rows of block b (struct rgat): a row of relation r
 * for each source of an edge of r and each destination with edges of r,
 * in source order; R ns ints of pos. */
static int plan_rows(struct rgat *s, uint32_t l, const struct gnn_block *b)
{
	const size_t ns = b->num_src, R = s->R;
	const int32_t *ip = b->indptr, *idx = b->indices;
	struct rank_ctx c = { .ns = ns, .zoff = s->zoff[l], .count = s->zoff[l] + 1 };
	int rc;

	if ((rc = tr_ibuf_reserve(&s->pos[l], R * ns > 0 ? R * ns : 1)) != GNN_OK)
		return rc;
	c.pos = s->pos[l].p;
	memset(c.pos, 0xff, R * ns * sizeof(int32_t));   /* -1: none */
	for (size_t q = 0; q < (size_t)b->num_dst * R; q++) {
		if (ip[q + 1] == ip[q])
			continue;
		c.pos[(q % R) * ns + q / R] = 0;
		for (int32_t e = ip[q]; e < ip[q + 1]; e++)
			c.pos[(q % R) * ns + (size_t)idx[e]] = 0;
	}
	tr_par_for(R, 1 + 65536 / (ns + 1), rank_rels, &c);
	s->zoff[l][0] = 0;
	for (size_t r = 0; r < R; r++)
		s->zoff[l][r + 1] += s->zoff[l][r];
	if ((rc = tr_ibuf_reserve(&s->rows[l], s->zoff[l][R] ? s->zoff[l][R] : 1)) != GNN_OK)
		return rc;
	c.rows = s->rows[l].p;
	tr_par_for(R, 1 + 65536 / (ns + 1), fill_rels, &c);
	return GNN_OK;
}

/* ---- forward ---- */

/* n floats at least, and never 0 (a NULL workspace would reach memset). */
static int reserve(struct tr_fbuf *b, size_t n)
{
	return tr_fbuf_reserve(b, n ? n : 1);
}

/* Z_r = H_r W_r for each relation r's compact rows (H_r gathered, or H). */
static void relation_products(const struct pass *c, const float *p, struct tr_kstats *ks)
{
	size_t in = c->in, out = c->out;

	per_relation(c, gather_rows, in);
	for (size_t r = 0; r < c->R; r++)
		tr_sgemm(ks, CblasNoTrans, CblasNoTrans, c->zoff[r + 1] - c->zoff[r], out, in, rel_rows(c, r), in,
			 p + (1 + r) * in * out, out, c->zc + c->zoff[r] * out, out);
}

/* Layer l of block b from the source rows h into y (num_dst x out),
 * keeping the compact rows, Z, the scores and alpha; ReLU and dropout
 * with key (when asked) but after the last layer. */
static int layer(struct rgat *s, uint32_t l, const struct gnn_block *b, const float *h, bool dropout,
		 uint64_t key, struct tr_kstats *ks, float *y)
{
	size_t nd = b->num_dst, in = s->in[l], out = s->out[l], K = s->K[l], nz;
	struct pass c;
	int rc;

	if ((rc = plan_rows(s, l, b)) != GNN_OK)
		return rc;
	nz = s->zoff[l][s->R];
	if ((rc = reserve(&s->hc, nz * in)) != GNN_OK || (rc = reserve(&s->zc[l], nz * out)) != GNN_OK ||
	    (rc = reserve(&s->sc[l], nz * 2 * K)) != GNN_OK || (rc = reserve(&s->al[l], b->num_edges * K)) != GNN_OK)
		return rc;
	s->adrop = dropout;
	s->akey[l] = gnn_draw64(key, ATT_DROP_TAG);
	c = pass_of(s, l, b, h);
	c.y = y;
	relation_products(&c, s->params + s->off[l], ks);
	per_relation(&c, score_rows, 2 * out);
	tr_sgemm(ks, CblasNoTrans, CblasNoTrans, nd, out, in, h, in, s->params + s->off[l], out, y, out);
	tr_par_for(nd, 1 + 16384 / (out * (1 + b->num_edges / (nd ? nd : 1))), attend_rows, &c);
	if (l + 1 < s->cfg.num_layers)
		tr_relu_dropout(y, nd, out, dropout, key, s->keep_below, s->keep_scale);
	return GNN_OK;
}

static int rgat_forward(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
			struct tr_kstats *ks, const float **logits)
{
	struct rgat *s = self;
	uint32_t L = s->cfg.num_layers;
	bool drop = train && s->cfg.dropout > 0.0f;
	const float *h;
	int rc;

	if ((rc = tr_input_forward(&s->inp, mb, drop, tr_dropout_key(dropout_seed, L), ks, &h)) != GNN_OK)
		return rc;
	s->h0 = h;
	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if ((rc = reserve(&s->h[l], (size_t)b->num_dst * s->out[l])) != GNN_OK ||
		    (rc = layer(s, l, b, h, drop, tr_dropout_key(dropout_seed, l), ks, s->h[l].p)) != GNN_OK)
			return rc;
		h = s->h[l].p;
	}
	*logits = s->h[L - 1].p;
	return GNN_OK;
}

static int rgat_infer_layer(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			    struct tr_kstats *ks)
{
	return layer(self, l, b, h, false, 0, ks, out);
}

/* ---- backward ---- */

/* Destination v's edges of relation r: dalpha = <dY_v[k], Z_r[u,k]>,
 * through the softmax (de = alpha (dalpha - sum alpha dalpha)) and the
 * LeakyReLU into each edge's score gradient (dse), summed into v's
 * destination score's (dsc); each edge's row q into eq. */
static void edge_grads(const struct pass *c, size_t v, size_t r)
{
	const int32_t *idx = c->b->indices;
	const size_t q = v * c->R + r, K = c->K, F = c->F;
	const int32_t e0 = c->b->indptr[q], e1 = c->b->indptr[q + 1];

	if (e1 == e0)
		return;
	for (int32_t e = e0; e < e1; e++) {
		c->eq[e] = (int32_t)q;
		for (size_t k = 0; k < K; k++)
			c->dse[(size_t)e * K + k] = dotf(c->g + v * c->out + k * F,
							 c->zc + crow(c, r, (size_t)idx[e]) * c->out + k * F, F) *
						    att_keep(c, (size_t)e, k);
	}
	for (size_t k = 0; k < K; k++) {
		size_t iv = crow(c, r, v);
		float dot = 0.0f, acc = 0.0f, sdv = c->sc[iv * 2 * K + K + k];

		for (int32_t e = e0; e < e1; e++)
			dot += c->al[(size_t)e * K + k] * c->dse[(size_t)e * K + k];
		for (int32_t e = e0; e < e1; e++) {
			float *d = c->dse + (size_t)e * K + k, x = c->sc[crow(c, r, (size_t)idx[e]) * 2 * K + k] + sdv;

			*d = c->al[(size_t)e * K + k] * (*d - dot) * (x > 0.0f ? 1.0f : LRELU_SLOPE);
			acc += *d;
		}
		c->dsc[iv * 2 * K + K + k] = acc;
	}
}

static void edge_grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;

	for (size_t v = lo; v < hi; v++)
		for (size_t r = 0; r < c->R; r++)
			edge_grads(c, v, r);
}

/* dZ of source rows [lo, hi)'s compact rows, gathered through the block
 * grouped by source: for each edge u -> v of relation r, alpha dY_v[k]
 * into dZ_r[u,k] and the edge's score gradient into u's source score's;
 * then the scores' own terms, dsc_src a_src + dsc_dst a_dst (the
 * destination part 0 but for destinations with edges of r). */
static void source_grad_rows(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;
	const size_t K = c->K, F = c->F, out = c->out;

	for (size_t u = lo; u < hi; u++) {
		for (size_t r = 0; r < c->R; r++)
			if (c->pos[r * c->ns + u] >= 0)
				memset(c->dzc + crow(c, r, u) * out, 0, out * sizeof(float));
		for (int32_t t = c->tptr[u]; t < c->tptr[u + 1]; t++) {
			size_t e = (size_t)c->tidx[t], q = (size_t)c->eq[e], v = q / c->R, r = q % c->R, i = crow(c, r, u);

			for (size_t k = 0; k < K; k++) {
				tr_vaxpy(c->dzc + i * out + k * F, c->g + v * out + k * F, c->al[e * K + k] * att_keep(c, e, k),
					 F);
				c->dsc[i * 2 * K + k] += c->dse[e * K + k];
			}
		}
		for (size_t r = 0; r < c->R; r++) {
			size_t i;

			if (c->pos[r * c->ns + u] < 0)
				continue;
			i = crow(c, r, u);
			for (size_t k = 0; k < K; k++) {
				tr_vaxpy(c->dzc + i * out + k * F, c->asrc + (r * K + k) * F, c->dsc[i * 2 * K + k], F);
				tr_vaxpy(c->dzc + i * out + k * F, c->adst + (r * K + k) * F, c->dsc[i * 2 * K + K + k], F);
			}
		}
	}
}

/* The attention vectors' gradient, slices [lo, hi) (j = r K + k):
 * da_src[j] = sum over relation r's compact rows i of dsc_src[i][k]
 * Z[i][k], da_dst[j] the same with dsc_dst. */
static void att_grad_slices(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;
	const size_t F = c->F, K = c->K;

	for (size_t j = lo; j < hi; j++) {
		size_t r = j / K, k = j % K;

		memset(c->da_src + j * F, 0, F * sizeof(float));
		memset(c->da_dst + j * F, 0, F * sizeof(float));
		for (size_t i = c->zoff[r]; i < c->zoff[r + 1]; i++) {
			tr_vaxpy(c->da_src + j * F, c->zc + i * c->out + k * F, c->dsc[i * 2 * K + k], F);
			tr_vaxpy(c->da_dst + j * F, c->zc + i * c->out + k * F, c->dsc[i * 2 * K + K + k], F);
		}
	}
}

/* db: the column sums of dY, 16-float lines [lo, hi), rows in order. */
static void bias_grad_lines(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;
	size_t j0 = lo * LINE_FLOATS, j1 = hi * LINE_FLOATS < c->out ? hi * LINE_FLOATS : c->out;
	float *db = c->da_dst + c->R * c->out;   /* b follows a_dst */

	memset(db + j0, 0, (j1 - j0) * sizeof(float));
	for (size_t v = 0; v < c->b->num_dst; v++)
		tr_vadd(db + j0, c->dy + v * c->out + j0, j1 - j0);
}

/* dH rows [lo, hi): dY_v W_self^T for a destination row, plus dZ_r W_r^T
 * of each of the row's compact rows (relation order), masked. */
static void source_rows_done(void *arg, size_t lo, size_t hi)
{
	const struct pass *c = arg;
	const size_t in = c->in;

	for (size_t u = lo; u < hi; u++) {
		float *d = c->mask.dh + u * in;

		if (u < c->b->num_dst)
			memcpy(d, c->dself + u * in, in * sizeof(float));
		else
			memset(d, 0, in * sizeof(float));
		for (size_t r = 0; r < c->R; r++)
			if (c->pos[r * c->ns + u] >= 0)
				tr_vadd(d, c->hc + crow(c, r, u) * in, in);
		tr_grad_mask(&c->mask, u, d);
	}
}

/* The block's edges grouped by source: tr_block_transpose over the block
 * seen as one row per edge (indptr 0, 1, .., E), so that tidx holds edge
 * numbers (whose alpha and score gradient the gather reads), in edge
 * order within each source. */
static int by_source(struct rgat *s, const struct gnn_block *b)
{
	struct gnn_block eb;
	int rc;

	if ((rc = tr_ibuf_reserve(&s->iota, b->num_edges + 1)) != GNN_OK)
		return rc;
	for (size_t e = 0; e <= b->num_edges; e++)
		s->iota.p[e] = (int32_t)e;
	eb = (struct gnn_block){ .num_dst = (uint32_t)b->num_edges, .num_src = b->num_src, .num_rels = 1,
				 .num_edges = b->num_edges, .indptr = s->iota.p, .indices = b->indices };
	return tr_block_transpose(&eb, 1, &s->tptr, &s->tidx);
}

/* The backward's workspaces for layer l of block b (the compact rows'
 * score gradient zeroed), and dY scaled by the degree factor into g when
 * the layer has it (else g is dy). */
static int grad_buffers(struct rgat *s, uint32_t l, const struct gnn_block *b, const float *dy, struct pass *c)
{
	size_t nd = b->num_dst, E = b->num_edges, nz = s->zoff[l][s->R], K = s->K[l], out = s->out[l];
	int rc;

	if ((rc = reserve(&s->dse, E * K)) != GNN_OK || (rc = reserve(&s->dsc, nz * 2 * K)) != GNN_OK ||
	    (rc = reserve(&s->dzc, nz * out)) != GNN_OK || (rc = reserve(&s->hc, nz * c->in)) != GNN_OK ||
	    (rc = tr_ibuf_reserve(&s->eq, E ? E : 1)) != GNN_OK || (rc = by_source(s, b)) != GNN_OK)
		return rc;
	memset(s->dsc.p, 0, nz * 2 * K * sizeof(float));
	c->dse = s->dse.p;
	c->dsc = s->dsc.p;
	c->dzc = s->dzc.p;
	c->hc = s->hc.p;
	c->eq = s->eq.p;
	c->tptr = s->tptr.p;
	c->tidx = s->tidx.p;
	c->dy = c->g = dy;
	if (!c->scaled)
		return GNN_OK;
	if ((rc = reserve(&s->g, nd * out)) != GNN_OK)
		return rc;
	for (size_t v = 0; v < nd; v++)
		tr_vscale_to(s->g.p + v * out, dy + v * out, degree_factor(c, v), out);
	c->g = s->g.p;
	return GNN_OK;
}

/* dH = dY W_self^T on the destination rows + for each relation r, dZ_r
 * W_r^T of its compact rows (into hc), summed per source row and masked
 * by hmask and scale: into dh. */
static int source_grads(struct rgat *s, uint32_t l, struct pass *c, const float *hmask, float scale,
			struct tr_fbuf *dh, struct tr_kstats *ks)
{
	size_t ns = c->ns, nd = c->b->num_dst, in = c->in, out = c->out;
	const float *p = s->params + s->off[l];
	int rc;

	if ((rc = reserve(dh, ns * in)) != GNN_OK || (rc = reserve(&s->dself, nd * in)) != GNN_OK)
		return rc;
	for (size_t r = 0; r < c->R; r++)
		tr_sgemm(ks, CblasNoTrans, CblasTrans, c->zoff[r + 1] - c->zoff[r], in, out, c->dzc + c->zoff[r] * out,
			 out, p + (1 + r) * in * out, out, c->hc + c->zoff[r] * in, in);
	tr_sgemm(ks, CblasNoTrans, CblasTrans, nd, in, out, c->g, out, p, out, s->dself.p, in);
	c->dself = s->dself.p;
	c->mask = (struct tr_grad_ctx){ .h = hmask, .dh = dh->p, .in = in, .scale = scale };
	tr_par_for(ns, 1 + 16384 / (in * (1 + c->zoff[c->R] / (ns ? ns : 1))), source_rows_done, c);
	return GNN_OK;
}

/* Layer l's parameter gradient from its dY, and with dh the gradient of
 * its source rows (masked by hmask: the previous layer's outputs, NULL
 * for layer 0's input rows). */
static int layer_grads(struct rgat *s, uint32_t l, const struct gnn_block *b, const float *dy, const float *hmask,
		       float scale, struct tr_fbuf *dh, struct tr_kstats *ks)
{
	size_t ns = b->num_src, nd = b->num_dst, R = s->R, in = s->in[l], out = s->out[l], io = in * out;
	float *gp = s->grads + s->off[l];
	struct pass c = pass_of(s, l, b, l == 0 ? s->h0 : s->h[l - 1].p);
	int rc;

	if ((rc = grad_buffers(s, l, b, dy, &c)) != GNN_OK)
		return rc;
	c.da_src = gp + (R + 1) * io;
	c.da_dst = c.da_src + R * out;
	tr_par_for((out + LINE_FLOATS - 1) / LINE_FLOATS, 1 + 1024 / (nd + 1), bias_grad_lines, &c);
	tr_sgemm(ks, CblasTrans, CblasNoTrans, in, out, nd, c.h, in, c.g, out, gp, out);
	tr_par_for(nd, 1 + 16384 / (out * (1 + b->num_edges / (nd ? nd : 1))), edge_grad_rows, &c);
	tr_par_for(ns, 1 + 16384 / (out * (1 + b->num_edges / (ns ? ns : 1))), source_grad_rows, &c);
	tr_par_for(R * s->K[l], 1 + 16384 / (c.zoff[R] * c.F / (R ? R : 1) + 1), att_grad_slices, &c);
	per_relation(&c, gather_rows, in);
	for (size_t r = 0; r < R; r++)
		tr_sgemm(ks, CblasTrans, CblasNoTrans, in, out, c.zoff[r + 1] - c.zoff[r], rel_rows(&c, r), in,
			 c.dzc + c.zoff[r] * out, out, gp + (1 + r) * io, out);
	return dh == NULL ? GNN_OK : source_grads(s, l, &c, hmask, scale, dh, ks);
}

/* Layer by layer from the logits' gradient down (dY ping-pongs between
 * d[0] and d[1]); layer 0's rows' gradient only when the input wants it. */
static int rgat_backward(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks)
{
	struct rgat *s = self;
	float scale = s->cfg.dropout > 0.0f ? s->keep_scale : 1.0f;
	bool want0 = tr_input_wants_grad(&s->inp, mb);
	const float *dy = dlogits;
	int nxt = 0, rc;

	for (uint32_t l = s->cfg.num_layers; l-- > 0;) {
		struct tr_fbuf *dh = l > 0 || want0 ? &s->d[nxt] : NULL;

		if ((rc = layer_grads(s, l, &mb->blocks[l], dy, l > 0 ? s->h[l - 1].p : NULL, l > 0 ? scale : 1.0f, dh,
				      ks)) != GNN_OK)
			return rc;
		if (dh != NULL) {
			dy = dh->p;
			nxt = 1 - nxt;
		}
	}
	return tr_input_backward(&s->inp, mb, want0 ? dy : NULL, ks);
}

#define RGAT_OPS                                                                                       \
	.destroy = rgat_destroy, .init = rgat_init, .num_params = rgat_num_params, .params = rgat_params, \
	.grads = rgat_grads, .forward = rgat_forward, .backward = rgat_backward,                         \
	.infer_layer = rgat_infer_layer, .input_row = rgat_input_row, .input_grad = rgat_input_grad,     \
	.weight_mats = rgat_weight_mats

const struct tr_model_ops tr_model_rgat = {
	.name = "rgat",
	.summary = "RGAT: multi-head attention per relation (GAT's, LeakyReLU 0.2) summed over the relations, "
		   "plus W_self; --heads heads of --hidden / --heads in every hidden layer",
	.create = rgat_create,
	RGAT_OPS,
};

const struct tr_model_ops tr_model_gat = {
	.name = "gat",
	.summary = "GAT: rgat on a graph of one relation (multi-head attention over the neighbours, plus W_self)",
	.create = gat_create,
	RGAT_OPS,
};
