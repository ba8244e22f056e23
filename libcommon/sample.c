#include "sample.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"


/* Uniform integer in [0, n) without modulo bias (Lemire's method). */
static uint32_t below(uint64_t *s, uint32_t n)
{
	uint64_t m = (uint64_t)(uint32_t)gnn_splitmix64(s) * n;
	uint32_t low = (uint32_t)m;

	if (low < n) {
		uint32_t t = (uint32_t)-n % n;

		while (low < t) {
			m = (uint64_t)(uint32_t)gnn_splitmix64(s) * n;
			low = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

static void insert_sorted(uint32_t *out, uint32_t n, uint32_t v)
{
	uint32_t i = n;

	while (i > 0 && out[i - 1] > v) {
		out[i] = out[i - 1];
		i--;
	}
	out[i] = v;
}

uint32_t gnn_sample_choose(uint64_t seed, int64_t node, uint32_t deg, int32_t k, uint32_t *out)
{
	uint64_t s = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)node);

	if (k < 0 || deg <= (uint32_t)k) {
		for (uint32_t i = 0; i < deg; i++)
			out[i] = i;
		return deg;
	}
	gnn_splitmix64(&s);
	/* Floyd's algorithm: k draws, each a new element, no extra memory;
	 * membership is a binary search in the sorted output. */
	for (uint32_t j = deg - (uint32_t)k, n = 0; j < deg; j++, n++) {
		uint32_t t = below(&s, j + 1), lo = 0, hi = n;
		bool seen = false;

		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (out[mid] == t) {
				seen = true;
				break;
			}
			if (out[mid] < t)
				lo = mid + 1;
			else
				hi = mid;
		}
		insert_sorted(out, n, seen ? j : t);
	}
	return (uint32_t)k;
}

uint64_t gnn_sample_layer_seed(uint64_t seed, uint32_t layer)
{
	uint64_t s = seed ^ ((uint64_t)layer << 56 | 0x5851F42D4C957F2Dull);

	return gnn_splitmix64(&s);
}

uint64_t gnn_sample_rel_seed(uint64_t layer_seed, uint32_t rel)
{
	return rel == 0 ? layer_seed : gnn_draw64(layer_seed ^ 0x72656c6174696f6eull, rel);
}

uint64_t gnn_sample_count(uint64_t deg, int32_t f)
{
	return f == 0 ? 0 : f < 0 || deg <= (uint64_t)f ? deg : (uint64_t)f;
}

uint32_t gnn_sample_row(uint64_t layer_seed, uint32_t rel, int64_t node, const int64_t *list, uint32_t deg,
			int32_t f, uint32_t *pos, int64_t *out)
{
	uint32_t k;

	if (f == 0)
		return 0;
	if (f < 0 || deg <= (uint32_t)f) {
		/* gnn_sample_choose would pick every position in order: copy */
		memcpy(out, list, (size_t)deg * sizeof(*out));
		return deg;
	}
	k = gnn_sample_choose(gnn_sample_rel_seed(layer_seed, rel), node, deg, f, pos);
	for (uint32_t j = 0; j < k; j++)
		out[j] = list[pos[j]];
	return k;
}

int gnn_sample_distinct(uint64_t seed, uint64_t i, int64_t num_nodes, uint32_t n, int64_t *out)
{
	uint64_t s = seed * GNN_GOLDEN64 ^ (i + 1) * 0xD1B54A32D192ED03ull, cap = 16;
	int64_t *set;

	if (num_nodes <= 0 || n == 0 || (int64_t)n > num_nodes)
		return GNN_EINVAL;
	while (cap < 2 * (uint64_t)n)
		cap <<= 1;
	if ((set = malloc(cap * sizeof(*set))) == NULL)
		return GNN_ENOMEM;
	memset(set, 0xff, cap * sizeof(*set));
	for (uint32_t k = 0; k < n;) {
		int64_t v = (int64_t)(gnn_splitmix64(&s) % (uint64_t)num_nodes);
		uint64_t h = ((uint64_t)v * GNN_GOLDEN64) & (cap - 1);

		while (set[h] >= 0 && set[h] != v)  /* open addressing */
			h = (h + 1) & (cap - 1);
		if (set[h] == v)
			continue;  /* drawn before: draw again */
		set[h] = v;
		out[k++] = v;
	}
	free(set);
	return GNN_OK;
}
