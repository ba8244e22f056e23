/* groups.c - the layer stack's rows grouped by destination type (layers.h,
 * struct tr_groups): the layout, and the products over it. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "err.h"
#include "layers.h"
#include "log.h"

#define LD_FLOATS 16

/* One group, the plain layout: rows in block order, [W_1; ...; b] whole. */
static void one_group(const struct tr_layers *s, uint32_t l, size_t nd, struct tr_groups *g)
{
	g->n = 1;
	g->start[0] = 0;
	g->start[1] = nd;
	g->k[0] = (size_t)s->nmat * s->in[l] + 1;
	g->ldx[0] = s->ldx[l];
	g->xoff[0] = g->dxoff[0] = g->woff[0] = 0;
	g->xsize = nd * g->ldx[0];
	g->dxsize = nd * (g->k[0] - 1);
	g->wsize = 0;
}

/* dst v's type, from its edges: the type its relations with edges end
 * at (0 without edges: any group gives it H_v W_self + b). GNN_EINVAL
 * when they end at two types. */
static int row_type(const struct tr_layers *s, const struct gnn_block *b, size_t v, int32_t *t)
{
	const int32_t *ip = b->indptr + v * s->R;

	*t = -1;
	for (uint32_t r = 0; r < s->R; r++) {
		if (ip[r + 1] == ip[r])
			continue;
		if (*t >= 0 && (uint32_t)*t != s->rel_dst[r]) {
			GNN_ERROR("bad_minibatch", "dst=%zu relation=%" PRIu32 " reason=\"a destination with edges of "
				  "relations that end at two node types\"", v, r);
			return GNN_EINVAL;
		}
		*t = (int32_t)s->rel_dst[r];
	}
	if (*t < 0)
		*t = 0;
	return GNN_OK;
}

/* The groups' sizes and places from their row counts. */
static void place(const struct tr_layers *s, uint32_t l, const size_t *cnt, struct tr_groups *g)
{
	size_t x = 0, dx = 0, w = 0, in = s->in[l], out = s->out[l];

	g->n = s->inp.T;
	g->start[0] = 0;
	for (uint32_t t = 0; t < g->n; t++) {
		g->start[t + 1] = g->start[t] + cnt[t];
		g->k[t] = (1 + (size_t)s->nrel[t]) * in + 1;
		g->ldx[t] = (g->k[t] + LD_FLOATS - 1) / LD_FLOATS * LD_FLOATS;
		g->xoff[t] = x;
		g->dxoff[t] = dx;
		g->woff[t] = w;
		x += cnt[t] * g->ldx[t];
		dx += cnt[t] * (g->k[t] - 1);
		w += g->k[t] * out;
	}
	g->xsize = x;
	g->dxsize = dx;
	g->wsize = w;
}

int tr_groups_build(const struct tr_layers *s, uint32_t l, const struct gnn_block *b, struct tr_groups *g)
{
	size_t nd = b->num_dst, cnt[GNN_MAX_TYPES] = { 0 }, seen[GNN_MAX_TYPES] = { 0 };
	int rc;

	if (!s->grouped) {
		one_group(s, l, nd, g);
		return GNN_OK;
	}
	if ((rc = tr_ibuf_reserve(&g->grp, nd ? nd : 1)) != GNN_OK || (rc = tr_ibuf_reserve(&g->pos, nd ? nd : 1)) != GNN_OK)
		return rc;
	for (size_t v = 0; v < nd; v++) {
		if ((rc = row_type(s, b, v, &g->grp.p[v])) != GNN_OK)
			return rc;
		cnt[g->grp.p[v]]++;
	}
	place(s, l, cnt, g);
	for (size_t v = 0; v < nd; v++) {
		uint32_t t = (uint32_t)g->grp.p[v];

		g->pos.p[v] = (int32_t)(g->start[t] + seen[t]++);
	}
	return tr_fbuf_reserve(&g->wt, g->wsize ? g->wsize : 1);
}

/* Group t's weights [W_self; W_r of its relations, in order; b] from the
 * layer's whole [W_self; W_1..W_R; b] (w). */
static void gather_weights(const struct tr_layers *s, uint32_t l, const float *w, struct tr_groups *g, uint32_t t)
{
	size_t io = (size_t)s->in[l] * s->out[l], out = s->out[l];
	float *dst = g->wt.p + g->woff[t];

	memcpy(dst, w, io * sizeof(float));
	dst += io;
	for (uint32_t r = 0; r < s->R; r++)
		if (s->rel_dst[r] == t) {
			memcpy(dst, w + (1 + (size_t)r) * io, io * sizeof(float));
			dst += io;
		}
	memcpy(dst, w + (1 + (size_t)s->R) * io, out * sizeof(float));
}

int tr_groups_product(struct tr_layers *s, uint32_t l, size_t nd, const float *w, struct tr_kstats *ks, float *y)
{
	struct tr_groups *g = &s->grp[l];
	size_t out = s->out[l];
	int rc;

	if (g->n == 1) {
		tr_sgemm(ks, CblasNoTrans, CblasNoTrans, nd, out, g->k[0], s->x[l].p, g->ldx[0], w, out, y, out);
		return GNN_OK;
	}
	if ((rc = tr_fbuf_reserve(&s->yp, (nd ? nd : 1) * out)) != GNN_OK)
		return rc;
	for (uint32_t t = 0; t < g->n; t++) {
		size_t n = g->start[t + 1] - g->start[t];

		if (n == 0)
			continue;
		gather_weights(s, l, w, g, t);
		tr_sgemm(ks, CblasNoTrans, CblasNoTrans, n, out, g->k[t], s->x[l].p + g->xoff[t], g->ldx[t],
			 g->wt.p + g->woff[t], out, s->yp.p + g->start[t] * out, out);
	}
	for (size_t v = 0; v < nd; v++)
		memcpy(y + v * out, s->yp.p + (size_t)g->pos.p[v] * out, out * sizeof(float));
	return GNN_OK;
}

/* Group t's [dW; db] (gt: its k x out) added into the layer's whole
 * gradient gw ([dW_self; dW_1..dW_R; db]). */
static void add_group_grads(const struct tr_layers *s, uint32_t l, uint32_t t, const float *gt, float *gw)
{
	size_t io = (size_t)s->in[l] * s->out[l], out = s->out[l];

	tr_vadd(gw, gt, io);
	gt += io;
	for (uint32_t r = 0; r < s->R; r++)
		if (s->rel_dst[r] == t) {
			tr_vadd(gw + (1 + (size_t)r) * io, gt, io);
			gt += io;
		}
	tr_vadd(gw + (1 + (size_t)s->R) * io, gt, out);
}

int tr_groups_weight_grads(struct tr_layers *s, uint32_t l, size_t nd, const float *dy, float *gw,
			   struct tr_kstats *ks)
{
	struct tr_groups *g = &s->grp[l];
	size_t out = s->out[l], rows = (size_t)s->nmat * s->in[l] + 1;
	int rc;

	if (g->n == 1) {
		if (nd == 0)
			memset(gw, 0, rows * out * sizeof(float));
		else
			tr_sgemm(ks, CblasTrans, CblasNoTrans, rows, out, nd, s->x[l].p, g->ldx[0], dy, out, gw, out);
		return GNN_OK;
	}
	if ((rc = tr_fbuf_reserve(&s->dyp, (nd ? nd : 1) * out)) != GNN_OK ||
	    (rc = tr_fbuf_reserve(&s->gt, rows * out)) != GNN_OK)
		return rc;
	for (size_t v = 0; v < nd; v++)
		memcpy(s->dyp.p + (size_t)g->pos.p[v] * out, dy + v * out, out * sizeof(float));
	memset(gw, 0, rows * out * sizeof(float));
	for (uint32_t t = 0; t < g->n; t++) {
		size_t n = g->start[t + 1] - g->start[t];

		if (n == 0)
			continue;
		tr_sgemm(ks, CblasTrans, CblasNoTrans, g->k[t], out, n, s->x[l].p + g->xoff[t], g->ldx[t],
			 s->dyp.p + g->start[t] * out, out, s->gt.p, out);
		add_group_grads(s, l, t, s->gt.p, gw);
	}
	return GNN_OK;
}

int tr_groups_dx(struct tr_layers *s, uint32_t l, size_t nd, const float *dy, const float *w, struct tr_kstats *ks)
{
	struct tr_groups *g = &s->grp[l];
	size_t out = s->out[l];
	int rc;

	if ((rc = tr_fbuf_reserve(&s->dx, g->dxsize ? g->dxsize : 1)) != GNN_OK)
		return rc;
	if (g->n == 1) {
		tr_sgemm(ks, CblasNoTrans, CblasTrans, nd, g->k[0] - 1, out, dy, out, w, out, s->dx.p, g->k[0] - 1);
		return GNN_OK;
	}
	/* (dyp: tr_groups_weight_grads's, the same layer's, just before) */
	for (uint32_t t = 0; t < g->n; t++) {
		size_t n = g->start[t + 1] - g->start[t];

		if (n > 0)
			tr_sgemm(ks, CblasNoTrans, CblasTrans, n, g->k[t] - 1, out, s->dyp.p + g->start[t] * out, out,
				 g->wt.p + g->woff[t], out, s->dx.p + g->dxoff[t], g->k[t] - 1);
	}
	return GNN_OK;
}

void tr_groups_degree_scale(const struct tr_groups *g, const struct gnn_block *b, size_t R, float *m, bool dx)
{
	for (size_t v = 0; v < b->num_dst; v++) {
		uint32_t k;
		float *row;

		tr_groups_row(g, v, &k);
		row = dx ? (float *)tr_groups_dxrow(g, m, v) : tr_groups_xrow(g, m, v);
		tr_vscale(row, sqrtf((float)(b->indptr[(v + 1) * R] - b->indptr[v * R]) + 1.0f), g->k[k] - 1);
	}
}
