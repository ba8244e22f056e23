/* decoder.c - see decoder.h. The score itself is libcommon's
 * (linkpred.h), the one the graph stores and samplers serve with. */
#include "decoder.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "linkpred.h"
#include "proto.h"

int tr_decoder_parse(const char *name, enum tr_decoder_kind *kind)
{
	if (name != NULL && strcmp(name, "dot") == 0)
		*kind = TR_DEC_DOT;
	else if (name != NULL && strcmp(name, "mlp") == 0)
		*kind = TR_DEC_MLP;
	else
		return GNN_EINVAL;
	return GNN_OK;
}

const char *tr_decoder_name(enum tr_decoder_kind kind)
{
	return kind == TR_DEC_MLP ? "mlp" : "dot";
}

/* dec with parameters p as libcommon's decoder (its kinds are the wire's). */
static struct gnn_linkdec linkdec(const struct tr_decoder *dec, const float *p)
{
	return (struct gnn_linkdec){ .kind = dec->kind == TR_DEC_MLP ? GNN_LINK_MLP : GNN_LINK_DOT, .dim = dec->dim,
				     .hidden = dec->hidden, .params = p };
}

size_t tr_decoder_num_params(const struct tr_decoder *dec)
{
	struct gnn_linkdec d = linkdec(dec, NULL);

	return (size_t)gnn_link_params_count(d.kind, d.dim, d.hidden);
}

void tr_decoder_init(const struct tr_decoder *dec, float *p, uint64_t seed)
{
	size_t h = dec->hidden, d = dec->dim;
	uint64_t key = gnn_draw64(seed ^ 0x6465636f646572ull, 0);
	double a1 = 1.0 / sqrt((double)d), a2 = 1.0 / sqrt((double)h);

	if (dec->kind != TR_DEC_MLP)
		return;
	memset(p, 0, tr_decoder_num_params(dec) * sizeof(float));
	for (size_t i = 0; i < h * d; i++)
		p[i] = (float)((2 * gnn_unit64(gnn_draw64(key, i)) - 1) * a1);
	for (size_t i = 0; i < h; i++)   /* w2 */
		p[h * d + h + i] = (float)((2 * gnn_unit64(gnn_draw64(key, h * d + i)) - 1) * a2);
}

float tr_decoder_score(const struct tr_decoder *dec, const float *p, const float *hu, const float *hv)
{
	struct gnn_linkdec d = linkdec(dec, p);

	return gnn_linkdec_score(&d, hu, hv);
}

void tr_decoder_backward(const struct tr_decoder *dec, const float *p, const float *hu, const float *hv,
			 float dscore, float *gp, float *ghu, float *ghv, float *work)
{
	struct gnn_linkdec ld = linkdec(dec, p);
	size_t h = dec->hidden, d = dec->dim;
	float *z = work;

	if (dec->kind != TR_DEC_MLP) {
		for (size_t i = 0; i < d; i++) {
			ghu[i] += dscore * hv[i];
			ghv[i] += dscore * hu[i];
		}
		return;
	}
	gnn_linkdec_hidden(&ld, hu, hv, z);   /* the forward's z, bit for bit */
	gp[h * d + 2 * h] += dscore;
	for (size_t j = 0; j < h; j++) {
		const float *w = p + j * d;
		float *gw = gp + j * d, dz;

		gp[h * d + h + j] += dscore * (z[j] > 0 ? z[j] : 0);
		if (!(z[j] > 0))
			continue;
		dz = dscore * p[h * d + h + j];
		gp[h * d + j] += dz;
		for (size_t i = 0; i < d; i++) {
			float x = hu[i] * hv[i], dxi = dz * w[i];

			gw[i] += dz * x;
			ghu[i] += dxi * hv[i];
			ghv[i] += dxi * hu[i];
		}
	}
}

/* log(1 + e^x) without overflow. */
static double softplus(double x)
{
	return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

int tr_link_loss(const struct tr_decoder *dec, const float *p, const float *emb, size_t ld,
		 const uint32_t *pairs, size_t n, size_t npos, double *loss, float *scores, float *demb, float *gp)
{
	float *work = NULL;
	double sum = 0, wpos = 1, norm = (double)n;

	if (n == 0) {
		*loss = 0;
		return GNN_OK;
	}
	/* The positives weigh as much as the negatives together (GAE's
	 * pos_weight): with K negatives per positive, each positive counts K
	 * times. One negative per positive: the plain mean. */
	if (npos > 0 && npos < n) {
		wpos = (double)(n - npos) / (double)npos;
		norm = 2.0 * (double)(n - npos);
	}
	if (dec->kind == TR_DEC_MLP && (work = malloc(2 * (size_t)dec->hidden * sizeof(float))) == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const float *hu = emb + (size_t)pairs[2 * i] * ld, *hv = emb + (size_t)pairs[2 * i + 1] * ld;
		float s = tr_decoder_score(dec, p, hu, hv), y = i < npos ? 1.0f : 0.0f;
		double w = i < npos ? wpos : 1.0;

		/* BCE with logits: softplus(s) - y s; its derivative sigmoid(s) - y */
		sum += w * (softplus(s) - y * s);
		if (scores != NULL)
			scores[i] = s;
		if (demb != NULL) {
			float ds = (float)(w * (1.0 / (1.0 + exp(-(double)s)) - y) / norm);

			tr_decoder_backward(dec, p, hu, hv, ds, gp, demb + (size_t)pairs[2 * i] * ld,
					    demb + (size_t)pairs[2 * i + 1] * ld, work);
		}
	}
	free(work);
	*loss = sum / norm;
	return GNN_OK;
}

struct scored {
	float s;
	int pos;
};

/* Descending by score. */
static int cmp_scored(const void *a, const void *b)
{
	float x = ((const struct scored *)a)->s, y = ((const struct scored *)b)->s;

	return (x < y) - (x > y);
}

int tr_auc_ap(const float *pos, size_t np, const float *neg, size_t nn, double *auc, double *ap)
{
	size_t n = np + nn, i = 0;
	struct scored *v;
	double tp = 0, fp = 0, area = 0, prec_sum = 0;

	if (np == 0 || nn == 0)
		return GNN_EINVAL;
	if ((v = malloc(n * sizeof(*v))) == NULL)
		return GNN_ENOMEM;
	for (size_t k = 0; k < np; k++)
		v[k] = (struct scored){ pos[k], 1 };
	for (size_t k = 0; k < nn; k++)
		v[np + k] = (struct scored){ neg[k], 0 };
	qsort(v, n, sizeof(*v), cmp_scored);
	/* one threshold per distinct score, from the highest: the ROC curve's
	 * trapezoids (a tie group is a diagonal step: one half) and the
	 * precision at each threshold weighted by the recall it adds */
	while (i < n) {
		double dtp = 0, dfp = 0;
		size_t j = i;

		for (; j < n && v[j].s == v[i].s; j++) {
			dtp += v[j].pos;
			dfp += !v[j].pos;
		}
		area += dfp * (tp + dtp / 2);
		tp += dtp;
		fp += dfp;
		prec_sum += dtp * tp / (tp + fp);
		i = j;
	}
	free(v);
	*auc = area / ((double)np * (double)nn);
	*ap = prec_sum / (double)np;
	return GNN_OK;
}

void tr_rank_add(struct tr_rank_sums *s, float pos, const float *neg, size_t k)
{
	double opt = 0, pes = 0, rank;

	for (size_t i = 0; i < k; i++) {
		opt += neg[i] > pos;
		pes += neg[i] >= pos;
	}
	rank = 1 + (opt + pes) / 2;
	s->n += 1;
	s->mrr += 1 / rank;
	s->hits1 += rank <= 1;
	s->hits3 += rank <= 3;
	s->hits10 += rank <= 10;
}
