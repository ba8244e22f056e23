/* pairs.c - see pairs.h. */
#include "pairs.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "log.h"

void tr_pair_steps_reset(struct tr_pair_steps *s)
{
	s->steps = 0;
}

/* Grows *p (elem bytes each) to hold need elements. */
static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return GNN_OK;
	while (c < need)
		c *= 2;
	if ((q = realloc(*p, c * elem)) == NULL)
		return GNN_ENOMEM;
	*p = q;
	*cap = c;
	return GNN_OK;
}

/* The local index of gid in the step being built (added to the seeds
 * when new). The table holds at most half its slots. */
static uint32_t local_index(struct tr_pair_steps *s, size_t first, int64_t gid)
{
	size_t mask = s->hcap - 1, i = (size_t)gnn_mix64((uint64_t)gid) & mask;

	while (s->hkeys[i] != -1) {
		if (s->hkeys[i] == gid)
			return s->hvals[i];
		i = (i + 1) & mask;
	}
	s->hkeys[i] = gid;
	s->hvals[i] = (uint32_t)(s->step_off[s->steps + 1] - first);
	s->seeds[s->step_off[s->steps + 1]++] = gid;
	return s->hvals[i];
}

int tr_pair_steps_add(struct tr_pair_steps *s, const int64_t *pos, size_t npos, const int64_t *neg, size_t nneg)
{
	size_t n = npos + nneg, k = s->steps, first, hc = 16;
	int rc;

	if (2 * n > INT32_MAX)
		return GNN_ERANGE;
	if ((rc = grow((void **)&s->step_off, &s->cap_steps, k + 2, sizeof(size_t))) != GNN_OK)
		return rc;
	/* the three offset arrays share cap_steps: grown together */
	{
		size_t c = s->cap_steps;
		size_t *a = realloc(s->excl_off, c * sizeof(size_t)), *b;

		if (a == NULL)
			return GNN_ENOMEM;
		s->excl_off = a;
		if ((b = realloc(s->pair_off, c * sizeof(size_t))) == NULL)
			return GNN_ENOMEM;
		s->pair_off = b;
	}
	if (k == 0)
		s->step_off[0] = s->excl_off[0] = s->pair_off[0] = 0;
	first = s->step_off[k];
	if ((rc = grow((void **)&s->seeds, &s->cap_seeds, first + 2 * n, sizeof(int64_t))) != GNN_OK ||
	    (rc = grow((void **)&s->excl, &s->cap_excl, 2 * (s->excl_off[k] + npos), sizeof(int64_t))) != GNN_OK ||
	    (rc = grow((void **)&s->pairs, &s->cap_pairs, 2 * (s->pair_off[k] + n), sizeof(uint32_t))) != GNN_OK)
		return rc;
	while (hc < 4 * n)
		hc *= 2;
	if (hc > s->hcap) {
		int64_t *hk = realloc(s->hkeys, hc * sizeof(int64_t));
		uint32_t *hv;

		if (hk == NULL)
			return GNN_ENOMEM;
		s->hkeys = hk;
		if ((hv = realloc(s->hvals, hc * sizeof(uint32_t))) == NULL)
			return GNN_ENOMEM;
		s->hvals = hv;
		s->hcap = hc;
	}
	memset(s->hkeys, 0xff, s->hcap * sizeof(int64_t));   /* -1: empty */
	s->step_off[k + 1] = first;
	for (size_t i = 0; i < n; i++) {
		const int64_t *p = i < npos ? pos + 2 * i : neg + 2 * (i - npos);
		uint32_t *dst = s->pairs + 2 * (s->pair_off[k] + i);

		dst[0] = local_index(s, first, p[0]);
		dst[1] = local_index(s, first, p[1]);
	}
	memcpy(s->excl + 2 * s->excl_off[k], pos, 2 * npos * sizeof(int64_t));
	s->excl_off[k + 1] = s->excl_off[k] + npos;
	s->pair_off[k + 1] = s->pair_off[k] + n;
	s->steps = k + 1;
	return GNN_OK;
}

void tr_pair_steps_free(struct tr_pair_steps *s)
{
	free(s->seeds);
	free(s->excl);
	free(s->step_off);
	free(s->excl_off);
	free(s->pair_off);
	free(s->pairs);
	free(s->hkeys);
	free(s->hvals);
	memset(s, 0, sizeof(*s));
}

int tr_train_edges(const char *dir, const struct gnn_meta *m, uint32_t rel, int64_t **pairs, size_t *n)
{
	const struct gnn_layout *g = &m->layout;
	bool same = g->schema->rels[rel].src == g->schema->rels[rel].dst;
	int64_t *out = NULL;
	size_t cnt = 0, cap = 0;
	int rc = GNN_OK;

	for (uint32_t p = 0; p < g->num_parts && rc == GNN_OK; p++) {
		struct gnn_part pt;
		int64_t R;

		if ((rc = gnn_part_open(dir, m, (int32_t)p, 0, &pt)) != GNN_OK)
			break;
		R = pt.num_rels;
		for (int64_t v = 0; v < pt.num_nodes && rc == GNN_OK; v++) {
			int64_t gv = pt.node_start + v;

			for (int64_t e = pt.indptr[v * R + rel]; e < pt.indptr[v * R + rel + 1]; e++) {
				int64_t u = pt.indices[e];

				if (same && u >= gv)
					continue;
				if ((rc = grow((void **)&out, &cap, 2 * (cnt + 1), sizeof(int64_t))) != GNN_OK)
					break;
				out[2 * cnt] = u;
				out[2 * cnt + 1] = gv;
				cnt++;
			}
		}
		gnn_part_close(&pt);
	}
	if (rc != GNN_OK) {
		free(out);
		return rc;
	}
	*pairs = out;
	*n = cnt;
	return GNN_OK;
}

int64_t tr_type_node(const struct gnn_layout *g, uint32_t t, int64_t j)
{
	uint32_t T = g->schema->num_types;

	for (uint32_t p = 0; p < g->num_parts; p++) {
		const int64_t *to = g->type_offsets + (size_t)p * T + t;
		int64_t len = to[1] - to[0];

		if (j < len)
			return to[0] + j;
		j -= len;
	}
	return -1;
}
