/* layers.c - the layer stack the models share (layers.h). */
#include "layers.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "log.h"

/* Row stride of X_l rounded up to a 64-byte line: aligned rows for the
 * aggregation, and an lda OpenBLAS packs without penalty. */
#define LD_FLOATS 16

void tr_layers_destroy(void *self)
{
	struct tr_layers *s = self;

	if (s == NULL)
		return;
	for (int l = 0; l < GNN_PROTO_MAX_LAYERS; l++) {
		free(s->x[l].p);
		free(s->h[l].p);
	}
	free(s->d[0].p);
	free(s->d[1].p);
	free(s->dx.p);
	free(s->tptr.p);
	free(s->tidx.p);
	free(s->params);
	free(s->grads);
	free(s);
}

int tr_layers_create(const struct tr_model_cfg *cfg, const struct tr_layer_spec *spec, void **out)
{
	uint32_t nmat = spec->nmat;
	struct tr_layers *s;
	size_t n = 0;

	/* Widths up to 2^20 keep every count below in size_t and int. */
	if (cfg->in_dim > (1u << 20) || cfg->hidden > (1u << 20) || cfg->num_classes > (1u << 20)) {
		GNN_ERROR("bad_config", "in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32
			  " reason=\"widths above 1048576 are not supported\"", cfg->in_dim, cfg->hidden,
			  cfg->num_classes);
		return GNN_EINVAL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return GNN_ENOMEM;
	s->cfg = *cfg;
	s->spec = spec;
	s->nmat = nmat;
	for (uint32_t l = 0; l < cfg->num_layers; l++) {
		s->in[l] = l == 0 ? cfg->in_dim : cfg->hidden;
		s->out[l] = l + 1 == cfg->num_layers ? cfg->num_classes : cfg->hidden;
		s->ldx[l] = ((size_t)nmat * s->in[l] + 1 + LD_FLOATS - 1) / LD_FLOATS * LD_FLOATS;
		s->off[l] = n;
		n += ((size_t)nmat * s->in[l] + 1) * s->out[l];
	}
	s->nparams = n;
	s->params = calloc(n, sizeof(float));
	s->grads = calloc(n, sizeof(float));
	if (s->params == NULL || s->grads == NULL) {
		tr_layers_destroy(s);
		return GNN_ENOMEM;
	}
	/* p = 0 skips the mask altogether */
	s->keep_below = tr_dropout_keep_below(cfg->dropout);
	s->keep_scale = (float)(1.0 / (1.0 - (double)cfg->dropout));
	*out = s;
	return GNN_OK;
}

void tr_layers_init(void *self, uint64_t seed)
{
	struct tr_layers *s = self;
	uint64_t key = gnn_mix64(seed ^ s->spec->init_tag);

	memset(s->params, 0, s->nparams * sizeof(float));
	for (uint32_t l = 0; l < s->cfg.num_layers; l++) {
		size_t nw = ((size_t)s->nmat * s->in[l] + 1) * s->out[l];
		double bound = 1.0 / sqrt((double)s->in[l]);

		for (size_t i = 0; i < nw; i++) {
			size_t j = s->off[l] + i;
			double u = gnn_unit64(gnn_draw64(key, j));

			s->params[j] = (float)((2.0 * u - 1.0) * bound);
		}
	}
}

size_t tr_layers_num_params(const void *self)
{
	return ((const struct tr_layers *)self)->nparams;
}

float *tr_layers_params(void *self)
{
	return ((struct tr_layers *)self)->params;
}

float *tr_layers_grads(void *self)
{
	return ((struct tr_layers *)self)->grads;
}

/* Layer l of block b from the source rows h into y (num_dst x out_l),
 * keeping X_l for the backward pass; dropout with key when asked. */
static int layer(struct tr_layers *s, uint32_t l, const struct gnn_block *b,
		 const float *h, bool dropout, uint64_t key, struct tr_kstats *ks, float *y)
{
	size_t nd = b->num_dst, in = s->in[l], out = s->out[l], ldx = s->ldx[l];
	struct tr_agg_ctx ac;
	int rc;

	if ((rc = tr_fbuf_reserve(&s->x[l], nd * ldx)) != GNN_OK)
		return rc;
	ac = (struct tr_agg_ctx){ b, h, s->x[l].p, in, ldx };
	/* ~64 KiB of gathered rows per thread at least. */
	tr_par_for(nd, 1 + 16384 / (in * (1 + b->num_edges / (nd ? nd : 1))), s->spec->agg_rows, &ac);
	tr_sgemm(ks, CblasNoTrans, CblasNoTrans, nd, out, s->nmat * in + 1, s->x[l].p, ldx, s->params + s->off[l],
		 out, y, out);
	if (l + 1 < s->cfg.num_layers)
		tr_relu_dropout(y, nd, out, dropout, key, s->keep_below, s->keep_scale);
	return GNN_OK;
}

int tr_layers_forward(void *self, const struct gnn_minibatch *mb, bool train, uint64_t dropout_seed,
		      struct tr_kstats *ks, const float **logits)
{
	struct tr_layers *s = self;
	uint32_t L = s->cfg.num_layers;
	const float *h = mb->feat[0];
	int rc;

	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		if ((rc = tr_fbuf_reserve(&s->h[l], (size_t)b->num_dst * s->out[l])) != GNN_OK ||
		    (rc = layer(s, l, b, h, train && s->cfg.dropout > 0.0f, tr_dropout_key(dropout_seed, l), ks,
				s->h[l].p)) != GNN_OK)
			return rc;
		h = s->h[l].p;
	}
	*logits = s->h[L - 1].p;
	return GNN_OK;
}

int tr_layers_infer_layer(void *self, uint32_t l, const struct gnn_block *b, const float *h, float *out,
			  struct tr_kstats *ks)
{
	return layer(self, l, b, h, false, 0, ks, out);
}

/* Layer by layer from the logits' gradient down: dY ping-pongs between
 * d[0] and d[1]. */
int tr_layers_backward(void *self, const struct gnn_minibatch *mb, const float *dlogits, struct tr_kstats *ks)
{
	struct tr_layers *s = self;
	bool dropout = s->cfg.dropout > 0.0f;
	const float *dy = dlogits;
	int nxt = 0, rc;

	for (uint32_t l = s->cfg.num_layers; l-- > 0;) {
		const struct gnn_block *b = &mb->blocks[l];
		size_t nd = b->num_dst, ns = b->num_src, in = s->in[l], out = s->out[l], win = s->nmat * in;
		struct tr_grad_ctx gc;

		/* [dW_1; ...; db] = X^T dY, straight into the gradient block. */
		if (nd == 0)
			memset(s->grads + s->off[l], 0, (win + 1) * out * sizeof(float));
		else
			tr_sgemm(ks, CblasTrans, CblasNoTrans, win + 1, out, nd, s->x[l].p, s->ldx[l], dy, out,
				 s->grads + s->off[l], out);
		if (l == 0)
			break;  /* no gradient for the input features */
		if ((rc = tr_fbuf_reserve(&s->d[nxt], ns * in)) != GNN_OK ||
		    (rc = tr_fbuf_reserve(&s->dx, nd * win)) != GNN_OK ||
		    (rc = tr_block_transpose(b, &s->tptr, &s->tidx)) != GNN_OK)
			return rc;
		/* [W_1; ...] is (nmat in) x out row-major: one product gives dX. */
		tr_sgemm(ks, CblasNoTrans, CblasTrans, nd, win, out, dy, out, s->params + s->off[l], out, s->dx.p, win);
		gc = (struct tr_grad_ctx){ b, s->tptr.p, s->tidx.p, s->dx.p, s->h[l - 1].p, s->d[nxt].p, in,
					   dropout ? s->keep_scale : 1.0f };
		tr_par_for(ns, 1 + 16384 / (in * (1 + b->num_edges / (ns ? ns : 1))), s->spec->grad_rows, &gc);
		dy = s->d[nxt].p;
		nxt = 1 - nxt;
	}
	return GNN_OK;
}
