#include "core.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fanouts.h"
#include "hash.h"
#include "linkpred.h"
#include "part.h"
#include "sample.h"

/* ---- node ID -> local index ----
 * Open addressing with linear probing, sized to at least twice the keys it
 * will ever hold (never a global array over all nodes: a minibatch touches
 * a small part of a large graph). */

struct slot {
	int64_t key;   /* -1: empty */
	int64_t val;
};

struct idmap {
	struct slot *slots;
	uint64_t mask;
	unsigned shift;
};

static int idmap_init(struct idmap *m, uint64_t max_keys)
{
	uint64_t cap = 16;
	unsigned bits = 4;

	while (cap < 2 * max_keys) {
		cap <<= 1;
		bits++;
	}
	m->slots = malloc(cap * sizeof(*m->slots));
	if (m->slots == NULL)
		return GNN_ENOMEM;
	memset(m->slots, 0xff, cap * sizeof(*m->slots));
	m->mask = cap - 1;
	m->shift = 64 - bits;
	return GNN_OK;
}

static void idmap_free(struct idmap *m)
{
	free(m->slots);
	m->slots = NULL;
}

/* The value stored under key; if there is none, stores val and returns it.
 * key >= 0; the map is never full (see idmap_init). */
static inline int64_t idmap_get_or_put(struct idmap *m, int64_t key, int64_t val)
{
	/* Fibonacci hashing spreads the consecutive IDs of a partition. */
	for (uint64_t i = ((uint64_t)key * GNN_GOLDEN64) >> m->shift;; i = (i + 1) & m->mask) {
		struct slot *s = &m->slots[i];

		if (s->key == key)
			return s->val;
		if (s->key < 0) {
			s->key = key;
			s->val = val;
			return val;
		}
	}
}

/* The value stored under key, or -1. */
static inline int64_t idmap_get(const struct idmap *m, int64_t key)
{
	for (uint64_t i = ((uint64_t)key * GNN_GOLDEN64) >> m->shift;; i = (i + 1) & m->mask) {
		const struct slot *s = &m->slots[i];

		if (s->key == key)
			return s->val;
		if (s->key < 0)
			return -1;
	}
}

/* ---- grouping by owner ---- */

/* A list of node IDs reordered by owning partition: part p's IDs are
 * ids[start[p] .. start[p+1]), in list order, and pos[k] is the list
 * index of ids[k]. */
struct groups {
	uint32_t *start;   /* [num_parts + 1] */
	int64_t *ids;      /* [n] */
	uint32_t *pos;     /* [n] */
};

static void groups_free(struct groups *g)
{
	free(g->start);
	free(g->ids);
	free(g->pos);
	memset(g, 0, sizeof(*g));
}

/* Counting sort by owner. Every ID must lie in the graph (the request was
 * checked; later frontiers come from checked answers). */
static int group_by_owner(const struct gnn_layout *l, const int64_t *ids, uint32_t n, struct groups *g)
{
	uint32_t P = l->num_parts, *owner = malloc((n ? n : 1) * sizeof(*owner));
	uint32_t *next = malloc(P * sizeof(*next));
	int rc = GNN_ENOMEM;

	g->start = calloc((size_t)P + 1, sizeof(*g->start));
	g->ids = malloc((n ? n : 1) * sizeof(*g->ids));
	g->pos = malloc((n ? n : 1) * sizeof(*g->pos));
	if (owner == NULL || next == NULL || g->start == NULL || g->ids == NULL || g->pos == NULL)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		int32_t p = gnn_layout_owner(l, ids[i]);

		if (p < 0) {
			rc = GNN_EINTERNAL;
			goto out;
		}
		owner[i] = (uint32_t)p;
		g->start[p + 1]++;
	}
	for (uint32_t p = 0; p < P; p++) {
		g->start[p + 1] += g->start[p];
		next[p] = g->start[p];
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = next[owner[i]]++;

		g->ids[k] = ids[i];
		g->pos[k] = i;
	}
	rc = GNN_OK;
out:
	free(owner);
	free(next);
	if (rc != GNN_OK)
		groups_free(g);
	return rc;
}

/* ---- one build ---- */

struct job {
	const struct smp_backend *be;
	struct smp_admit *admit;
	uint64_t admitted;            /* bytes held in admit */
	const struct gnn_layout *l;
	uint32_t R;                   /* relations */
	uint32_t max_ids;
	char *why;
	size_t why_len;
	struct smp_call *calls;
	size_t ncalls, cap;
	/* GNN_MB_EXCLUDE: the pairs' endpoints (node -> endpoint index) and
	 * the pairs as unordered keys of two endpoint indices (exclude_init). */
	bool excl;
	uint32_t excl_rel;
	int32_t excl_rev;             /* excl_rel's reverse, or -1 */
	struct idmap excl_nodes, excl_pairs;
	int64_t excl_stride;          /* key = min index * stride + max index */
	uint64_t excluded;            /* edges dropped so far */
};

static int fail(struct job *j, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct job *j, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->why, j->why_len, fmt, ap);
	va_end(ap);
	return rc;
}

/* Appends calls like tmpl (its type and parameters) covering every
 * partition's share of g, each at most max IDs. */
static int add_calls(struct job *j, const struct groups *g, const struct smp_call *tmpl, uint32_t max)
{
	for (uint32_t p = 0; p < j->l->num_parts; p++) {
		for (uint32_t k = g->start[p]; k < g->start[p + 1]; k += max) {
			uint32_t n = g->start[p + 1] - k;

			if (j->ncalls == j->cap) {
				size_t cap = j->cap ? 2 * j->cap : 16;
				struct smp_call *c = realloc(j->calls, cap * sizeof(*c));

				if (c == NULL)
					return fail(j, GNN_ENOMEM, "out of memory");
				j->calls = c;
				j->cap = cap;
			}
			j->calls[j->ncalls] = *tmpl;
			j->calls[j->ncalls].part = p;
			j->calls[j->ncalls].n = n < max ? n : max;
			j->calls[j->ncalls].ids = g->ids + k;
			j->calls[j->ncalls++].first = k;
		}
	}
	return GNN_OK;
}

static int run_calls(struct job *j)
{
	if (j->ncalls == 0)
		return GNN_OK;
	j->why[0] = '\0';
	return j->be->run(j->be->ctx, j->calls, j->ncalls, j->why, j->why_len);
}

static void release_calls(struct job *j)
{
	if (j->ncalls > 0)
		j->be->release(j->be->ctx, j->calls, j->ncalls);
	j->ncalls = 0;
}

static void describe(struct job *j, uint32_t part, char *buf, size_t size)
{
	j->be->describe(j->be->ctx, part, buf, size);
}

/* Copies the LABEL answers into labels (list order of g), checking them. */
static int take_labels(struct job *j, const struct groups *g, int32_t *labels)
{
	char who[256];

	for (size_t c = 0; c < j->ncalls; c++) {
		const struct smp_call *call = &j->calls[c];

		if (call->type != GNN_MSG_LABEL_REQ)
			continue;
		for (uint32_t k = 0; k < call->n; k++) {
			int32_t y = call->labels[k];

			if (y < -1 || (int64_t)y >= (int64_t)j->l->num_classes) {
				describe(j, call->part, who, sizeof(who));
				return fail(j, GNN_EPROTO, "%s: label %" PRId32 " of node %" PRId64
					    " outside [-1, %" PRIu32 ")", who, y, call->ids[k], j->l->num_classes);
			}
			labels[g->pos[call->first + k]] = y;
		}
	}
	return GNN_OK;
}

/* Each (destination, relation) row's sampled neighbours from the SAMPLE
 * answers, in destination order: deg[i R + r] of them at nbrs[i R + r]
 * (borrowed from the calls); *total is their sum. */
static int collect_answers(struct job *j, const struct groups *g, const int32_t *fanouts, uint32_t *deg,
			   const int64_t **nbrs, uint64_t *total)
{
	uint32_t R = j->R;
	char who[256];

	*total = 0;
	for (size_t c = 0; c < j->ncalls; c++) {
		const struct smp_call *call = &j->calls[c];
		uint64_t off = 0;

		if (call->type != GNN_MSG_SAMPLE_REQ)
			continue;
		for (uint32_t k = 0; k < call->n; k++) {
			size_t i = g->pos[call->first + k];

			for (uint32_t r = 0; r < R; r++) {
				uint32_t cnt = call->counts[(size_t)k * R + r];

				if ((fanouts[r] >= 0 && cnt > (uint32_t)fanouts[r])) {
					describe(j, call->part, who, sizeof(who));
					return fail(j, GNN_EPROTO, "%s: %" PRIu32 " neighbours of node %" PRId64
						    " under relation %" PRIu32 " for fanout %" PRId32, who, cnt,
						    call->ids[k], r, fanouts[r]);
				}
				deg[i * R + r] = cnt;
				nbrs[i * R + r] = call->nbrs + off;
				off += cnt;
			}
		}
		*total += off;
	}
	return GNN_OK;
}

/* Whether u may be a neighbour under relation r: in the graph, and (typed
 * graphs) of the relation's source type. */
static bool neighbour_ok(const struct job *j, uint32_t r, int64_t u)
{
	const struct gnn_schema *s = j->l->schema;

	if (u < 0 || u >= j->l->num_nodes)
		return false;
	return s->num_types == 1 || gnn_layout_type(j->l, u) == (int32_t)s->rels[r].src;
}

/* Block l from the collected answers: the sources are dst followed by
 * every new neighbour in first-seen order; an in-CSR over (dst,
 * relation) rows in local source indices. Stored in m (which owns it from
 * then on). */
static int build_block(struct job *j, uint32_t l, const int64_t *dst, uint32_t num_dst, const uint32_t *deg,
		       const int64_t *const *nbrs, uint64_t total, struct smp_minibatch *m)
{
	/* Every source is a distinct node of the graph: at most num_nodes. */
	uint64_t cap = (uint64_t)num_dst + total < (uint64_t)j->l->num_nodes ? (uint64_t)num_dst + total
									      : (uint64_t)j->l->num_nodes;
	size_t R = j->R, rows = (size_t)num_dst * R;
	int64_t *src = malloc(cap * sizeof(*src));
	int32_t *indptr = malloc((rows + 1) * sizeof(*indptr));
	int32_t *indices = malloc((total ? total : 1) * sizeof(*indices));
	struct idmap map = { 0 };
	uint64_t n_src = num_dst;
	char who[256];
	int rc = GNN_OK;

	if (src == NULL || indptr == NULL || indices == NULL || idmap_init(&map, cap) != GNN_OK) {
		rc = fail(j, GNN_ENOMEM, "out of memory for layer %" PRIu32 " (%" PRIu64 " edges)", l, total);
		goto out;
	}
	memcpy(src, dst, (size_t)num_dst * sizeof(*src));
	for (uint32_t i = 0; i < num_dst; i++)
		idmap_get_or_put(&map, dst[i], i);
	indptr[0] = 0;
	for (size_t row = 0, e = 0; row < rows; row++) {
		for (uint32_t k = 0; k < deg[row]; k++, e++) {
			int64_t u = nbrs[row][k], idx;

			if (!neighbour_ok(j, (uint32_t)(row % R), u)) {
				describe(j, (uint32_t)gnn_layout_owner(j->l, dst[row / R]), who, sizeof(who));
				rc = fail(j, GNN_EPROTO, "%s: neighbour %" PRId64 " of node %" PRId64 " under relation %zu "
					  "outside [0, %" PRId64 ") or not of the relation's source type", who, u,
					  dst[row / R], row % R, j->l->num_nodes);
				goto out;
			}
			idx = idmap_get_or_put(&map, u, (int64_t)n_src);
			if ((uint64_t)idx == n_src)
				src[n_src++] = u;
			indices[e] = (int32_t)idx;
		}
		indptr[row + 1] = indptr[row] + (int32_t)deg[row];
	}
	m->src_ids[l] = src;
	m->indptr[l] = indptr;
	m->indices[l] = indices;
	m->mb.blocks[l] = (struct gnn_block){ .num_dst = num_dst, .num_src = (uint32_t)n_src, .num_rels = (uint32_t)R,
					      .num_edges = total, .src_ids = src, .indptr = indptr, .indices = indices };
	src = NULL;
	indptr = indices = NULL;
out:
	idmap_free(&map);
	free(src);
	free(indptr);
	free(indices);
	return rc;
}

/* ---- exclusion (GNN_MB_EXCLUDE) ----
 * A filter over the stores' answers rather than a SAMPLE_REQ field: the
 * stores and their protocol stay as they are, and a pair is excluded
 * wherever its endpoints' rows went. A node can then have fewer than
 * fanout neighbours, as with DGL's exclude='reverse_id'. */

/* The request's pairs into j's maps. */
static int exclude_init(struct job *j, const struct gnn_minibatch_req *req)
{
	int64_t next = 0;

	if (!(req->flags & GNN_MB_EXCLUDE))
		return GNN_OK;
	j->excl = true;
	j->excl_rel = req->excl_rel;
	j->excl_rev = gnn_schema_reverse(j->l->schema, req->excl_rel);
	j->excl_stride = 2 * (int64_t)req->num_excl + 1;
	if (idmap_init(&j->excl_nodes, 2 * (uint64_t)req->num_excl) != GNN_OK ||
	    idmap_init(&j->excl_pairs, req->num_excl) != GNN_OK)
		return fail(j, GNN_ENOMEM, "out of memory for %" PRIu32 " excluded pairs", req->num_excl);
	for (uint32_t k = 0; k < req->num_excl; k++) {
		int64_t a = idmap_get_or_put(&j->excl_nodes, req->excl[2 * k], next), b;

		next += a == next;
		b = idmap_get_or_put(&j->excl_nodes, req->excl[2 * k + 1], next);
		next += b == next;
		idmap_get_or_put(&j->excl_pairs, a < b ? a * j->excl_stride + b : b * j->excl_stride + a, 1);
	}
	return GNN_OK;
}

static void exclude_free(struct job *j)
{
	idmap_free(&j->excl_nodes);
	idmap_free(&j->excl_pairs);
}

/* Whether the edge between endpoint index a and node u is excluded. */
static bool excluded(const struct job *j, int64_t a, int64_t u)
{
	int64_t b = idmap_get(&j->excl_nodes, u);

	return b >= 0 && idmap_get(&j->excl_pairs, a < b ? a * j->excl_stride + b : b * j->excl_stride + a) >= 0;
}

/* Whether row (destination dst, relation r) may hold excluded edges:
 * *a gets dst's endpoint index. */
static bool exclude_row(const struct job *j, int64_t dst, uint32_t r, int64_t *a)
{
	if (!j->excl || (r != j->excl_rel && (int32_t)r != j->excl_rev))
		return false;
	return (*a = idmap_get(&j->excl_nodes, dst)) >= 0;
}

/* Drops the excluded edges from the collected rows: the kept neighbours
 * of the rows concerned go, in order, to *kept (the caller's to free;
 * NULL when no row is concerned), where nbrs then points. */
static int exclude_edges(struct job *j, const int64_t *dst, uint32_t num_dst, uint32_t *deg, const int64_t **nbrs,
			 uint64_t *total, int64_t **kept)
{
	size_t R = j->R, rows = (size_t)num_dst * R;
	uint64_t room = 0, at = 0, dropped = 0;
	int64_t a;

	*kept = NULL;
	for (size_t row = 0; row < rows; row++)
		if (exclude_row(j, dst[row / R], (uint32_t)(row % R), &a))
			room += deg[row];
	if (room == 0)
		return GNN_OK;
	if ((*kept = malloc(room * sizeof(**kept))) == NULL)
		return fail(j, GNN_ENOMEM, "out of memory");
	for (size_t row = 0; row < rows; row++) {
		uint64_t first = at;

		if (!exclude_row(j, dst[row / R], (uint32_t)(row % R), &a))
			continue;
		for (uint32_t k = 0; k < deg[row]; k++)
			if (!excluded(j, a, nbrs[row][k]))
				(*kept)[at++] = nbrs[row][k];
		dropped += deg[row] - (at - first);
		deg[row] = (uint32_t)(at - first);
		nbrs[row] = *kept + first;
	}
	*total -= dropped;
	j->excluded += dropped;
	return GNN_OK;
}

/* Samples block l: its destinations are dst[0 .. num_dst), unique; its
 * sources are dst followed by every new neighbour in first-seen order
 * (walking the destinations in order, each one's relations in order and
 * its neighbours in the order its owner returned them). fanouts are the
 * layer's, one per relation. With labels (the seeds' block) the seeds'
 * LABEL calls go out in the same batch. A layer whose fanouts are all 0
 * makes no SAMPLE calls: its sources are the destinations and it has no
 * edges. */
static int sample_block(struct job *j, uint32_t l, uint64_t seed, const int32_t *fanouts, const int64_t *dst,
			uint32_t num_dst, int32_t *labels, struct smp_minibatch *m)
{
	size_t rows = (size_t)num_dst * j->R;
	struct smp_call sample = { .type = GNN_MSG_SAMPLE_REQ, .seed = seed, .fanouts = fanouts };
	struct smp_call label = { .type = GNN_MSG_LABEL_REQ };
	struct groups g = { 0 };
	uint32_t *deg = calloc(rows ? rows : 1, sizeof(*deg));
	const int64_t **nbrs = malloc((rows ? rows : 1) * sizeof(*nbrs));
	int64_t *kept = NULL;
	uint64_t total = 0;
	bool any = gnn_fanouts_any(fanouts, j->R);
	int rc;

	if (deg == NULL || nbrs == NULL) {
		rc = fail(j, GNN_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = group_by_owner(j->l, dst, num_dst, &g)) != GNN_OK) {
		rc = fail(j, rc, "grouping layer %" PRIu32 " by owner failed (%s)", l, gnn_strerror(rc));
		goto out;
	}
	if ((any && (rc = add_calls(j, &g, &sample, j->max_ids)) != GNN_OK) ||
	    (labels != NULL && (rc = add_calls(j, &g, &label, j->max_ids)) != GNN_OK) ||
	    (rc = run_calls(j)) != GNN_OK || (rc = collect_answers(j, &g, fanouts, deg, nbrs, &total)) != GNN_OK ||
	    (labels != NULL && (rc = take_labels(j, &g, labels)) != GNN_OK) ||
	    (rc = exclude_edges(j, dst, num_dst, deg, nbrs, &total, &kept)) != GNN_OK)
		goto out;
	if (total > INT32_MAX) {
		rc = fail(j, GNN_ERANGE, "layer %" PRIu32 " sampled %" PRIu64 " edges, over the 2^31-1 a block "
			  "holds: use smaller fanouts or batches", l, total);
		goto out;
	}
	rc = build_block(j, l, dst, num_dst, deg, nbrs, total, m);
out:
	release_calls(j);
	groups_free(&g);
	free(deg);
	free(nbrs);
	free(kept);
	return rc;
}

/* The feature rows of ids[0 .. n), all of type t, into feat (row i for
 * ids[i]; the layout's dtype, as the stores send them): FEAT calls of
 * about GNN_FEAT_CALL_BYTES each. */
static int gather_type(struct job *j, uint32_t t, const int64_t *ids, uint32_t n, void *feat)
{
	uint32_t dim = j->l->schema->types[t].feat_dim;
	size_t row = (size_t)dim * gnn_dtype_size(j->l->feat_dtype);
	uint64_t per_call = GNN_FEAT_CALL_BYTES / row;
	struct smp_call tmpl = { .type = GNN_MSG_FEAT_REQ, .feat_dim = dim, .feat_dtype = j->l->feat_dtype };
	struct groups g = { 0 };
	int rc;

	if ((rc = group_by_owner(j->l, ids, n, &g)) != GNN_OK) {
		rc = fail(j, rc, "grouping the input nodes by owner failed (%s)", gnn_strerror(rc));
		goto out;
	}
	/* Feature answers stay near GNN_FEAT_CALL_BYTES whatever the width. */
	per_call = per_call < 1 ? 1 : per_call < j->max_ids ? per_call : j->max_ids;
	if ((rc = add_calls(j, &g, &tmpl, (uint32_t)per_call)) != GNN_OK || (rc = run_calls(j)) != GNN_OK)
		goto out;
	for (size_t c = 0; c < j->ncalls; c++) {
		const struct smp_call *call = &j->calls[c];

		for (uint32_t k = 0; k < call->n; k++)
			memcpy((char *)feat + g.pos[call->first + k] * row, (const char *)call->rows + k * row, row);
	}
out:
	release_calls(j);
	groups_free(&g);
	return rc;
}

/* The feature rows of mb's input nodes (blocks[0]'s sources), type by
 * type, into rows[t] (type t's sources in source order). */
static int gather_features(struct job *j, const struct gnn_minibatch *mb, void *const *rows)
{
	const struct gnn_block *b0 = &mb->blocks[0];
	uint32_t T = mb->num_types, start[GNN_PROTO_MAX_TYPES + 1] = { 0 };
	int64_t *ids;
	int rc = GNN_OK;

	if (T == 1)
		return mb->feat_dims[0] > 0 ? gather_type(j, 0, b0->src_ids, b0->num_src, rows[0]) : GNN_OK;
	if ((ids = malloc((size_t)b0->num_src * sizeof(*ids) + 1)) == NULL)
		return fail(j, GNN_ENOMEM, "out of memory");
	for (uint32_t t = 0; t < T; t++)
		start[t + 1] = start[t] + mb->type_rows[t];
	for (uint32_t i = 0; i < b0->num_src; i++)
		ids[start[mb->src_types[i]]++] = b0->src_ids[i];
	for (uint32_t t = 0, at = 0; t < T && rc == GNN_OK; at += mb->type_rows[t], t++)
		if (mb->feat_dims[t] > 0 && mb->type_rows[t] > 0)
			rc = gather_type(j, t, ids + at, mb->type_rows[t], rows[t]);
	free(ids);
	return rc;
}

/* The exclusion list: a relation of the graph, pairs of its types. */
static int check_excl(const struct gnn_layout *l, const struct gnn_minibatch_req *req, char *why, size_t why_len)
{
	const struct gnn_schema *s = l->schema;
	char label[3 * GNN_NAME_MAX];

	if (req->excl_rel >= s->num_rels) {
		snprintf(why, why_len, "exclusion relation %" PRIu32 " outside the graph's %" PRIu32 " relations",
			 req->excl_rel, s->num_rels);
		return GNN_EINVAL;
	}
	gnn_schema_rel_label(s, req->excl_rel, label, sizeof(label));
	for (uint32_t k = 0; k < req->num_excl; k++) {
		int64_t u = req->excl[2 * k], v = req->excl[2 * k + 1];

		if (u < 0 || u >= l->num_nodes || v < 0 || v >= l->num_nodes) {
			snprintf(why, why_len, "excluded pair %" PRIu32 " is (%" PRId64 ", %" PRId64 "), outside [0, %"
				 PRId64 ")", k, u, v, l->num_nodes);
			return GNN_EINVAL;
		}
		if (gnn_layout_type(l, u) != (int32_t)s->rels[req->excl_rel].src ||
		    gnn_layout_type(l, v) != (int32_t)s->rels[req->excl_rel].dst) {
			snprintf(why, why_len, "excluded pair %" PRIu32 " (%" PRId64 ", %" PRId64 ") is not of relation "
				 "%s's source and destination types", k, u, v, label);
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

int smp_check_request(const struct gnn_layout *l, const struct gnn_minibatch_req *req, char *why,
		      size_t why_len)
{
	struct idmap map;

	if (req->num_rels != l->schema->num_rels) {
		snprintf(why, why_len, "fanouts for %" PRIu32 " relations; the graph has %" PRIu32 " (fanouts[l R + r])",
			 req->num_rels, l->schema->num_rels);
		return GNN_EINVAL;
	}
	for (uint32_t i = 0; i < req->num_seeds; i++) {
		if (req->seeds[i] < 0 || req->seeds[i] >= l->num_nodes) {
			snprintf(why, why_len, "seed %" PRIu32 " is node %" PRId64 ", outside [0, %" PRId64 ")",
				 i, req->seeds[i], l->num_nodes);
			return GNN_EINVAL;
		}
	}
	if ((req->flags & GNN_MB_EXCLUDE) && check_excl(l, req, why, why_len) != GNN_OK)
		return GNN_EINVAL;
	if (idmap_init(&map, req->num_seeds) != GNN_OK) {
		snprintf(why, why_len, "out of memory");
		return GNN_ENOMEM;
	}
	for (uint32_t i = 0; i < req->num_seeds; i++) {
		int64_t first = idmap_get_or_put(&map, req->seeds[i], i);

		if (first != i) {
			snprintf(why, why_len, "seed node %" PRId64 " appears twice (seeds %" PRId64 " and %" PRIu32
				 "): seeds must be distinct", req->seeds[i], first, i);
			idmap_free(&map);
			return GNN_EINVAL;
		}
	}
	idmap_free(&map);
	return GNN_OK;
}

static void job_init(struct job *j, const struct smp_backend *be, const struct smp_build_opts *o, char *why,
		     size_t why_len)
{
	*j = (struct job){ .be = be, .l = be->layout, .R = be->layout->schema->num_rels, .why = why,
			   .why_len = why_len, .admit = o != NULL ? o->admit : NULL };
	j->max_ids = o != NULL && o->max_ids_per_call > 0 ? o->max_ids_per_call : SMP_DEFAULT_IDS_PER_CALL;
	if (j->max_ids > GNN_PROTO_MAX_IDS)
		j->max_ids = GNN_PROTO_MAX_IDS;
	why[0] = '\0';
}

/* The types of the input nodes (blocks[0]'s sources) into m, and how many
 * of each. */
static int input_types(struct job *j, struct smp_minibatch *m)
{
	const struct gnn_block *b0 = &m->mb.blocks[0];

	if ((m->src_types = calloc((size_t)b0->num_src + 1, 1)) == NULL)
		return fail(j, GNN_ENOMEM, "out of memory");
	if (m->mb.num_types > 1)
		for (uint32_t i = 0; i < b0->num_src; i++)
			m->src_types[i] = (uint8_t)gnn_layout_type(j->l, b0->src_ids[i]);
	m->mb.src_types = m->src_types;
	gnn_minibatch_count_types(&m->mb);
	return GNN_OK;
}

/* The blocks (from the seeds down to the input layer), the input nodes'
 * types and, if asked for, the seeds' labels, into m; m->wire_bytes counts
 * the payload so far (head, blocks, input types, plus the labels' share).
 * Features are the caller's. */
static int build_blocks(struct job *j, const struct gnn_minibatch_req *req, struct smp_minibatch *m)
{
	const struct gnn_schema *sc = j->l->schema;
	const int64_t *dst = req->seeds;
	uint32_t L = req->num_layers, num_dst = req->num_seeds;
	uint64_t wire = gnn_minibatch_resp_head_bytes(sc->num_types),
		 label_bytes = gnn_minibatch_resp_section_bytes((uint64_t)req->num_seeds * 4);
	int rc;

	if (L == 0 || L > GNN_PROTO_MAX_LAYERS || req->num_seeds == 0 || req->num_rels != j->R)
		return fail(j, GNN_EINVAL, "a minibatch needs 1..%d layers, at least one seed and fanouts for each of "
			    "the graph's %" PRIu32 " relations", GNN_PROTO_MAX_LAYERS, j->R);
	if ((req->flags & GNN_MB_EXCLUDE) && req->excl_rel >= j->R)
		return fail(j, GNN_EINVAL, "exclusion relation %" PRIu32 " outside the graph's %" PRIu32 " relations",
			    req->excl_rel, j->R);
	if ((rc = exclude_init(j, req)) != GNN_OK)
		return rc;
	m->mb.num_layers = L;
	/* The reply's flags are its sections': exclusion shapes the blocks only. */
	m->mb.flags = req->flags & (GNN_MB_FEATURES | GNN_MB_LABELS);
	m->mb.num_types = sc->num_types;
	m->mb.num_rels = j->R;
	for (uint32_t t = 0; t < sc->num_types; t++)
		m->mb.feat_dims[t] = sc->types[t].feat_dim;
	m->mb.num_seeds = req->num_seeds;
	m->mb.feat_dtype = (req->flags & GNN_MB_FEATURES) ? j->l->feat_dtype : 0;
	if ((req->flags & GNN_MB_LABELS) &&
	    (m->labels = malloc((size_t)req->num_seeds * sizeof(*m->labels))) == NULL)
		return fail(j, GNN_ENOMEM, "out of memory");
	if (!(req->flags & GNN_MB_LABELS))
		label_bytes = 0;
	for (uint32_t l = L; l-- > 0;) {
		const struct gnn_block *b = &m->mb.blocks[l];

		rc = sample_block(j, l, gnn_sample_layer_seed(req->seed, l), req->fanouts + (size_t)l * j->R, dst,
				  num_dst, l == L - 1 ? m->labels : NULL, m);
		if (rc != GNN_OK)
			return rc;
		m->sampled_edges += b->num_edges;
		m->excluded_edges = j->excluded;
		wire += gnn_minibatch_resp_block_bytes(b->num_dst, b->num_src, b->num_edges, j->R);
		if (wire + label_bytes > GNN_PROTO_MAX_MSG_BYTES)
			return fail(j, GNN_ERANGE, "minibatch over the %u-byte message limit after layer %" PRIu32
				    ": use smaller fanouts or batches", GNN_PROTO_MAX_MSG_BYTES, l);
		dst = b->src_ids;
		num_dst = b->num_src;
	}
	if ((rc = input_types(j, m)) != GNN_OK)
		return rc;
	m->mb.labels = m->labels;
	m->wire_bytes = wire + gnn_minibatch_resp_section_bytes(m->mb.blocks[0].num_src) + label_bytes;
	return GNN_OK;
}

/* Checks that the input rows fit the message; sets m->feature_bytes. */
static int check_feature_bytes(struct job *j, struct smp_minibatch *m)
{
	uint64_t bytes = 0;

	for (uint32_t t = 0; t < m->mb.num_types; t++)
		bytes += gnn_minibatch_resp_section_bytes((uint64_t)m->mb.type_rows[t] * m->mb.feat_dims[t] *
							  gnn_dtype_size(m->mb.feat_dtype));
	if (m->wire_bytes + bytes > GNN_PROTO_MAX_MSG_BYTES)
		return fail(j, GNN_ERANGE, "%" PRIu32 " input nodes' features (%" PRIu64 " bytes) exceed the %u-byte "
			    "message limit: use smaller fanouts or batches", m->mb.blocks[0].num_src, bytes,
			    GNN_PROTO_MAX_MSG_BYTES);
	m->feature_bytes = bytes;
	return GNN_OK;
}

/* Waits for room for the features' bytes (m->feature_bytes, set): the
 * rows are held twice while they are gathered (the stores' answers and
 * the minibatch or message) besides the rest of the message. */
static int admit_features(struct job *j, const struct smp_minibatch *m)
{
	uint64_t bytes = m->wire_bytes + 2 * m->feature_bytes;
	int rc;

	if (j->admit == NULL)
		return GNN_OK;
	if ((rc = smp_admit_acquire(j->admit, bytes)) == GNN_EUNAVAIL)
		return fail(j, rc, "sampler busy: %" PRIu64 " MB of minibatch found no room in its build budget in "
			    "time (--build-budget-mb, --admission-wait-s)", bytes >> 20);
	if (rc != GNN_OK)
		return fail(j, rc, "this sampler is stopping");
	j->admitted = bytes;
	return GNN_OK;
}

static void job_end(struct job *j)
{
	if (j->admitted > 0)
		smp_admit_release(j->admit, j->admitted);
	j->admitted = 0;
	free(j->calls);
	j->calls = NULL;
	exclude_free(j);
}

/* The feature arrays of smp_build's minibatch, one per type with rows. */
static int alloc_features(struct job *j, struct smp_minibatch *m)
{
	for (uint32_t t = 0; t < m->mb.num_types; t++) {
		size_t bytes = (size_t)m->mb.type_rows[t] * m->mb.feat_dims[t] * gnn_dtype_size(m->mb.feat_dtype);

		if (bytes == 0)
			continue;
		if ((m->feat[t] = malloc(bytes)) == NULL)
			return fail(j, GNN_ENOMEM, "out of memory for %" PRIu64 " feature bytes", m->feature_bytes);
		m->mb.feat[t] = m->feat[t];
	}
	return GNN_OK;
}

int smp_build(const struct smp_backend *be, const struct smp_build_opts *o,
	      const struct gnn_minibatch_req *req, struct smp_minibatch *out, char *why, size_t why_len)
{
	struct smp_minibatch m = { 0 };
	struct job j;
	int rc;

	job_init(&j, be, o, why, why_len);
	if ((rc = build_blocks(&j, req, &m)) != GNN_OK)
		goto out_fail;
	if (req->flags & GNN_MB_FEATURES) {
		if ((rc = check_feature_bytes(&j, &m)) != GNN_OK || (rc = admit_features(&j, &m)) != GNN_OK ||
		    (rc = alloc_features(&j, &m)) != GNN_OK || (rc = gather_features(&j, &m.mb, m.feat)) != GNN_OK)
			goto out_fail;
		m.wire_bytes += m.feature_bytes;
	}
	job_end(&j);
	*out = m;
	return GNN_OK;

out_fail:
	job_end(&j);
	smp_minibatch_free(&m);
	return rc;
}

int smp_build_message(const struct smp_backend *be, const struct smp_build_opts *o, uint64_t req_id,
		      const struct gnn_minibatch_req *req, struct gnn_wbuf *w, struct smp_minibatch_stats *st,
		      char *why, size_t why_len)
{
	struct smp_minibatch m = { 0 };
	struct gnn_mb_writer mw;
	void *rows[GNN_PROTO_MAX_TYPES];
	size_t start = w->len;
	struct job j;
	int rc;

	job_init(&j, be, o, why, why_len);
	if ((rc = build_blocks(&j, req, &m)) != GNN_OK ||
	    ((req->flags & GNN_MB_FEATURES) &&
	     ((rc = check_feature_bytes(&j, &m)) != GNN_OK || (rc = admit_features(&j, &m)) != GNN_OK)))
		goto out;
	/* The feature rows go from the graph stores' answers straight into
	 * the message (docs/protocol.md has the layout). */
	if ((rc = gnn_mb_writer_begin(&mw, w, req_id, &m.mb)) != GNN_OK) {
		rc = fail(&j, rc, "cannot encode the minibatch (%s)", gnn_strerror(rc));
		goto out;
	}
	if ((req->flags & GNN_MB_FEATURES) &&
	    ((rc = gnn_mb_writer_features(&mw, rows)) != GNN_OK || (rc = gather_features(&j, &m.mb, rows)) != GNN_OK)) {
		gnn_mb_writer_abort(&mw);
		goto out;
	}
	if (req->flags & GNN_MB_LABELS)
		gnn_mb_writer_labels(&mw, m.labels);
	if ((rc = gnn_mb_writer_end(&mw)) != GNN_OK) {
		rc = fail(&j, rc, "cannot encode the minibatch (%s)", gnn_strerror(rc));
		goto out;
	}
	if (st != NULL)
		*st = (struct smp_minibatch_stats){ .sampled_edges = m.sampled_edges,
						    .feature_bytes = m.feature_bytes,
						    .excluded_edges = m.excluded_edges,
						    .input_nodes = m.mb.blocks[0].num_src,
						    .wire_bytes = w->len - start - GNN_PROTO_HDR_BYTES,
						    .admitted_bytes = j.admitted };
	if (st != NULL)
		j.admitted = 0;   /* the caller's now: the message is not sent yet */
out:
	job_end(&j);
	smp_minibatch_free(&m);
	return rc;
}

void smp_minibatch_free(struct smp_minibatch *m)
{
	for (int l = 0; l < GNN_PROTO_MAX_LAYERS; l++) {
		free(m->src_ids[l]);
		free(m->indptr[l]);
		free(m->indices[l]);
	}
	for (int t = 0; t < GNN_PROTO_MAX_TYPES; t++)
		free(m->feat[t]);
	free(m->src_types);
	free(m->labels);
	memset(m, 0, sizeof(*m));
}

/* ---- NODES ---- */

/* Checks partition p's NODES answer c to req: the page lies in [cursor,
 * end of the partition), ascending, at most limit long, and its
 * next_cursor moves past it (progress is guaranteed). */
static int check_page(const struct smp_backend *be, int32_t p, const struct gnn_nodes_req *req,
		      const struct smp_call *c, char *why, size_t why_len)
{
	int64_t lo = req->cursor, hi = be->layout->offsets[p + 1], prev = lo - 1, next = c->next_cursor;
	char who[256];

	be->describe(be->ctx, (uint32_t)p, who, sizeof(who));
	if (c->num_found > req->limit) {
		snprintf(why, why_len, "%s: %" PRIu32 " nodes listed for a limit of %" PRIu32, who, c->num_found,
			 req->limit);
		return GNN_EPROTO;
	}
	for (uint32_t i = 0; i < c->num_found; i++) {
		if (c->found[i] <= prev || c->found[i] >= hi) {
			snprintf(why, why_len, "%s: listed node %" PRId64 " (entry %" PRIu32 ") out of order or outside "
				 "[%" PRId64 ", %" PRId64 ")", who, c->found[i], i, lo, hi);
			return GNN_EPROTO;
		}
		prev = c->found[i];
	}
	if (next != -1 && (next <= prev || next <= lo || next >= hi)) {
		snprintf(why, why_len, "%s: next_cursor %" PRId64 " does not move forward inside [%" PRId64 ", %" PRId64
			 ") after node %" PRId64, who, next, lo, hi, prev);
		return GNN_EPROTO;
	}
	return GNN_OK;
}

int smp_nodes_message(const struct smp_backend *be, uint64_t req_id, const struct gnn_nodes_req *req,
		      struct gnn_wbuf *w, uint32_t *n, char *why, size_t why_len)
{
	const struct gnn_layout *l = be->layout;
	int32_t p = gnn_layout_owner(l, req->cursor);
	size_t start = w->len;
	struct smp_call c;
	int64_t next;
	int rc;

	why[0] = '\0';
	if (p < 0) {
		snprintf(why, why_len, "cursor %" PRId64 " is outside the graph's nodes [0, %" PRId64 "): start at 0 "
			 "and continue at each reply's next_cursor until it is -1", req->cursor, l->num_nodes);
		return GNN_ERANGE;
	}
	c = (struct smp_call){ .type = GNN_MSG_NODES_REQ, .part = (uint32_t)p, .split = req->split,
			       .limit = req->limit, .cursor = req->cursor };
	if ((rc = be->run(be->ctx, &c, 1, why, why_len)) != GNN_OK ||
	    (rc = check_page(be, p, req, &c, why, why_len)) != GNN_OK)
		goto out;
	/* This partition is done: continue with the next one. */
	next = c.next_cursor;
	if (next == -1 && (uint32_t)p + 1 < l->num_parts)
		next = l->offsets[p + 1];
	if ((rc = gnn_encode_nodes_resp(w, req_id, c.found, c.num_found, next)) != GNN_OK) {
		snprintf(why, why_len, "cannot encode %" PRIu32 " nodes (%s)", c.num_found, gnn_strerror(rc));
		w->len = start;
		goto out;
	}
	if (n != NULL)
		*n = c.num_found;
out:
	be->release(be->ctx, &c, 1);
	return rc;
}

/* ---- PREDICT ---- */

/* The answers of calls[0..nc) merged in the order of ids (pos[i]: where
 * ids[i] went in its partition's call, part[i] its call), checked to be of
 * one run, then encoded. */
static int merge_predictions(const struct smp_backend *be, uint64_t req_id, const struct smp_call *calls,
			     size_t nc, const uint32_t *call_of, const uint32_t *pos, uint32_t n,
			     struct gnn_wbuf *w, char *why, size_t why_len)
{
	const struct gnn_predict_resp *first = &calls[0].predict;
	struct gnn_predict_resp r = { .n = n, .k = first->k, .params_crc = first->params_crc };
	int64_t *orig = malloc((size_t)n * 8 + 1);
	int32_t *pred = malloc((size_t)n * 4 + 1), *cls = malloc((size_t)n * r.k * 4 + 1);
	float *prob = malloc((size_t)n * r.k * 4 + 1);
	char who[256];
	int rc = GNN_ENOMEM;

	if (orig == NULL || pred == NULL || cls == NULL || prob == NULL)
		goto out;
	for (size_t c = 1; c < nc; c++)
		if (calls[c].predict.k != r.k || calls[c].predict.params_crc != r.params_crc) {
			be->describe(be->ctx, calls[c].part, who, sizeof(who));
			snprintf(why, why_len, "%s holds predictions of another inference run (params_crc %08" PRIx32
				 ", top %" PRIu32 ") than partition %" PRIu32 "'s (%08" PRIx32 ", top %" PRIu32 ")", who,
				 calls[c].predict.params_crc, calls[c].predict.k, calls[0].part, r.params_crc, r.k);
			rc = GNN_EPROTO;
			goto out;
		}
	for (uint32_t i = 0; i < n; i++) {
		const struct gnn_predict_resp *a = &calls[call_of[i]].predict;

		orig[i] = a->orig_ids[pos[i]];
		pred[i] = a->pred[pos[i]];
		memcpy(cls + (size_t)i * r.k, a->classes + (size_t)pos[i] * r.k, r.k * 4);
		memcpy(prob + (size_t)i * r.k, a->probs + (size_t)pos[i] * r.k, r.k * 4);
	}
	r.orig_ids = orig;
	r.pred = pred;
	r.classes = cls;
	r.probs = prob;
	if ((rc = gnn_encode_predict_resp(w, req_id, &r)) != GNN_OK)
		snprintf(why, why_len, "cannot encode %" PRIu32 " predictions (%s)", n, gnn_strerror(rc));
out:
	free(orig);
	free(pred);
	free(cls);
	free(prob);
	return rc;
}

/* Node IDs split by owner: one call of type per partition that owns any of
 * them (calls[0..nc)), ids[i] being calls[call_of[i]].ids[pos[i]]. The
 * calls' ids point into sorted. */
struct by_owner {
	struct smp_call *calls;
	size_t nc;
	uint32_t *call_of, *pos;
	int64_t *sorted;
};

static void by_owner_free(struct by_owner *b)
{
	free(b->calls);
	free(b->call_of);
	free(b->pos);
	free(b->sorted);
	memset(b, 0, sizeof(*b));
}

/* Splits ids[n] by owner into b (the caller's: by_owner_free, also on
 * error). GNN_ERANGE (why naming the node outside the graph) or GNN_ENOMEM. */
static int by_owner_split(const struct gnn_layout *l, uint16_t type, const int64_t *ids, uint32_t n,
			  struct by_owner *b, char *why, size_t why_len)
{
	uint32_t *of_part = malloc((size_t)l->num_parts * 4);
	int rc = GNN_ENOMEM;

	b->call_of = malloc((size_t)n * 4 + 1);
	b->pos = malloc((size_t)n * 4 + 1);
	b->sorted = malloc((size_t)n * 8 + 1);
	b->calls = calloc(l->num_parts, sizeof(*b->calls));
	b->nc = 0;
	if (b->call_of == NULL || b->pos == NULL || of_part == NULL || b->sorted == NULL || b->calls == NULL)
		goto out;
	/* One call per partition that owns any of the nodes: count, then place. */
	memset(of_part, 0xff, (size_t)l->num_parts * 4);
	for (uint32_t i = 0; i < n; i++) {
		int32_t p = gnn_layout_owner(l, ids[i]);

		if (p < 0) {
			snprintf(why, why_len, "node %" PRId64 " (ids[%" PRIu32 "]) is outside the graph [0, %" PRId64 ")",
				 ids[i], i, l->num_nodes);
			rc = GNN_ERANGE;
			goto out;
		}
		if (of_part[p] == UINT32_MAX) {
			of_part[p] = (uint32_t)b->nc;
			b->calls[b->nc++] = (struct smp_call){ .type = type, .part = (uint32_t)p };
		}
		b->call_of[i] = of_part[p];
		b->pos[i] = b->calls[b->call_of[i]].n++;
	}
	for (size_t c = 0, at = 0; c < b->nc; at += b->calls[c].n, c++) {
		b->calls[c].first = (uint32_t)at;
		b->calls[c].ids = b->sorted + at;
	}
	for (uint32_t i = 0; i < n; i++)
		b->sorted[b->calls[b->call_of[i]].first + b->pos[i]] = ids[i];
	rc = GNN_OK;
out:
	free(of_part);
	return rc;
}

int smp_predict_message(const struct smp_backend *be, uint64_t req_id, const int64_t *ids, uint32_t n,
			struct gnn_wbuf *w, char *why, size_t why_len)
{
	struct by_owner b = { 0 };
	size_t start = w->len;
	int rc;

	why[0] = '\0';
	if ((rc = by_owner_split(be->layout, GNN_MSG_PREDICT_REQ, ids, n, &b, why, why_len)) != GNN_OK)
		goto out;
	if (b.nc == 0) {
		rc = gnn_encode_predict_resp(w, req_id, &(struct gnn_predict_resp){ .k = 1 });
		goto out;
	}
	if ((rc = be->run(be->ctx, b.calls, b.nc, why, why_len)) == GNN_OK)
		rc = merge_predictions(be, req_id, b.calls, b.nc, b.call_of, b.pos, n, w, why, why_len);
	be->release(be->ctx, b.calls, b.nc);
out:
	if (rc != GNN_OK)
		w->len = start;
	by_owner_free(&b);
	return rc;
}

/* ---- LINK ---- */

/* Whether every answer of calls[0..nc) is of calls[0]'s model; if not,
 * why names the store that differs. */
static bool same_model(const struct smp_backend *be, const struct smp_call *calls, size_t nc, char *why,
		       size_t why_len)
{
	const struct gnn_link_resp *a = &calls[0].link_resp;
	char who[256];

	for (size_t c = 1; c < nc; c++) {
		const struct gnn_link_resp *b = &calls[c].link_resp;

		if (b->params_crc == a->params_crc && b->decoder == a->decoder && b->dim == a->dim &&
		    b->hidden == a->hidden)
			continue;
		be->describe(be->ctx, calls[c].part, who, sizeof(who));
		snprintf(why, why_len, "%s holds the output of another link-prediction model (params_crc %08" PRIx32
			 ", dim %" PRIu32 ") than partition %" PRIu32 "'s (%08" PRIx32 ", dim %" PRIu32 ")", who,
			 b->params_crc, b->dim, calls[0].part, a->params_crc, a->dim);
		return false;
	}
	return true;
}

/* The rows of ids[n] from their owners into *rows ([n x dim], the
 * caller's to free), the model (and decoder params copied into *params,
 * the caller's, NULL for dot) into *m. */
static int fetch_rows(const struct smp_backend *be, const int64_t *ids, uint32_t n, struct gnn_link_resp *m,
		      float **rows, float **params, char *why, size_t why_len)
{
	struct by_owner b = { 0 };
	uint64_t np;
	int rc;

	*rows = NULL;
	*params = NULL;
	if ((rc = by_owner_split(be->layout, GNN_MSG_LINK_REQ, ids, n, &b, why, why_len)) != GNN_OK)
		goto out;
	for (size_t c = 0; c < b.nc; c++)
		b.calls[c].link = (struct gnn_link_req){ .op = GNN_LINK_ROWS, .flags = GNN_LINK_WITH_DECODER,
							 .n = b.calls[c].n, .ids = b.calls[c].ids, .node = -1 };
	if ((rc = be->run(be->ctx, b.calls, b.nc, why, why_len)) != GNN_OK)
		goto out_release;
	if (!same_model(be, b.calls, b.nc, why, why_len)) {
		rc = GNN_EPROTO;
		goto out_release;
	}
	*m = b.calls[0].link_resp;
	np = gnn_link_params_count(m->decoder, m->dim, m->hidden);
	*rows = malloc((size_t)n * m->dim * 4 + 1);
	*params = malloc((size_t)np * 4 + 1);
	if (*rows == NULL || *params == NULL) {
		rc = GNN_ENOMEM;
		goto out_release;
	}
	if (np > 0)  /* dot: no parameters (m->params NULL) */
		memcpy(*params, m->params, (size_t)np * 4);
	for (uint32_t i = 0; i < n; i++)
		memcpy(*rows + (size_t)i * m->dim, b.calls[b.call_of[i]].link_resp.rows + (size_t)b.pos[i] * m->dim,
		       (size_t)m->dim * 4);
out_release:
	be->release(be->ctx, b.calls, b.nc);
out:
	if (rc != GNN_OK) {
		free(*rows);
		free(*params);
		*rows = *params = NULL;
	}
	by_owner_free(&b);
	return rc;
}

/* TOPK of query (dim floats; node: the query node, excluded, or -1) to
 * every store at once, merged into r (its nodes and scores in t). */
static int topk_all(const struct smp_backend *be, const struct gnn_link_req *req, const float *query, uint32_t dim,
		    int64_t node, struct gnn_topk *t, struct gnn_link_resp *r, char *why, size_t why_len)
{
	uint32_t P = be->layout->num_parts, ne = req->n + (node >= 0);
	struct smp_call *calls = calloc(P, sizeof(*calls));
	int64_t *excl = malloc((size_t)ne * 8 + 1);
	int rc = GNN_ENOMEM;

	if (calls == NULL || excl == NULL || gnn_topk_init(t, req->k) != GNN_OK)
		goto out;
	memcpy(excl, req->ids, (size_t)req->n * 8);
	if (node >= 0)
		excl[req->n] = node;
	if (ne > GNN_PROTO_MAX_LINK_EXCL) {
		snprintf(why, why_len, "%" PRIu32 " excluded nodes with the query node: at most %d", ne,
			 GNN_PROTO_MAX_LINK_EXCL);
		rc = GNN_ERANGE;
		goto out;
	}
	for (uint32_t p = 0; p < P; p++)
		calls[p] = (struct smp_call){ .type = GNN_MSG_LINK_REQ, .part = p,
					      .link = { .op = GNN_LINK_TOPK, .n = ne, .k = req->k, .dim = dim,
							.node_type = req->node_type, .node = -1, .query = query,
							.ids = excl } };
	if ((rc = be->run(be->ctx, calls, P, why, why_len)) == GNN_OK) {
		if (!same_model(be, calls, P, why, why_len)) {
			rc = GNN_EPROTO;
		} else {
			*r = calls[0].link_resp;
			for (uint32_t p = 0; p < P; p++)
				for (uint32_t i = 0; i < calls[p].link_resp.n; i++)
					gnn_topk_offer(t, calls[p].link_resp.nodes[i], calls[p].link_resp.scores[i]);
			gnn_topk_sort(t);
		}
	}
	be->release(be->ctx, calls, P);
out:
	free(calls);
	free(excl);
	return rc;
}

/* SCORE: the scores of n pairs whose endpoints' rows (m's dim wide) are
 * rows[2 i], rows[2 i + 1], with m's decoder and its params, into *scores
 * (the caller's: free). GNN_ENOMEM. */
static int score_pairs(const struct gnn_link_resp *m, const float *rows, const float *params, uint32_t n,
		       float **scores)
{
	struct gnn_linkdec d = { .kind = m->decoder, .dim = m->dim, .hidden = m->hidden, .params = params };

	if ((*scores = malloc((size_t)n * 4 + 1)) == NULL)
		return GNN_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		(*scores)[i] = (float)gnn_linkdec_score(&d, rows + (size_t)2 * i * m->dim,
							rows + (size_t)(2 * i + 1) * m->dim);
	return GNN_OK;
}

int smp_link_message(const struct smp_backend *be, uint64_t req_id, const struct gnn_link_req *req,
		     struct gnn_wbuf *w, char *why, size_t why_len)
{
	struct gnn_link_resp m = { 0 }, r = { .op = req->op };
	struct gnn_topk t = { 0 };
	float *rows = NULL, *params = NULL, *scores = NULL;
	size_t start = w->len;
	int rc;

	why[0] = '\0';
	if (req->op == GNN_LINK_TOPK && req->node_type != GNN_LINK_ANY_TYPE &&
	    req->node_type >= be->layout->schema->num_types) {
		snprintf(why, why_len, "no node type %" PRIu32 ": the graph has %" PRIu32, req->node_type,
			 be->layout->schema->num_types);
		return GNN_EINVAL;
	}
	if (req->op == GNN_LINK_TOPK && req->dim > 0) {
		rc = topk_all(be, req, req->query, req->dim, -1, &t, &r, why, why_len);
	} else if ((rc = fetch_rows(be, req->op == GNN_LINK_TOPK ? &req->node : req->ids,
				    req->op == GNN_LINK_ROWS ? req->n : req->op == GNN_LINK_SCORE ? 2 * req->n : 1, &m, &rows,
				    &params, why, why_len)) != GNN_OK) {
		goto out;
	} else if (req->op == GNN_LINK_TOPK) {
		rc = topk_all(be, req, rows, m.dim, req->node, &t, &r, why, why_len);
	} else {
		r = m;
		r.op = req->op;
		r.n = req->n;
		r.flags = req->flags;
		r.rows = rows;
		r.params = req->flags & GNN_LINK_WITH_DECODER ? params : NULL;
	}
	if (rc != GNN_OK)
		goto out;
	r.op = req->op;
	r.rows = req->op == GNN_LINK_ROWS ? rows : NULL;
	r.nodes = req->op == GNN_LINK_TOPK ? t.nodes : NULL;
	if (req->op == GNN_LINK_TOPK) {
		r.n = t.n;
		r.scores = t.scores;
	} else if (req->op == GNN_LINK_SCORE && (rc = score_pairs(&m, rows, params, req->n, &scores)) == GNN_OK) {
		r.scores = scores;
	}
	if (req->op != GNN_LINK_ROWS) {  /* scores only */
		r.flags = 0;
		r.params = NULL;
	}
	if (rc != GNN_OK)
		goto out;
	if ((rc = gnn_encode_link_resp(w, req_id, &r)) != GNN_OK)
		snprintf(why, why_len, "cannot encode the reply (%s)", gnn_strerror(rc));
out:
	if (rc != GNN_OK)
		w->len = start;
	free(rows);
	free(params);
	free(scores);
	gnn_topk_free(&t);
	return rc;
}

/* ---- LOOKUP ---- */

/* Merges the stores' answers (calls[p] is partition p's) into ids:
 * exactly one store must hold each original ID. */
static int merge_lookup(const struct smp_backend *be, const struct smp_call *calls, uint32_t P, uint32_t node_type,
			const int64_t *orig_ids, uint32_t n, int64_t *ids, char *why, size_t why_len)
{
	const struct gnn_schema *sc = be->layout->schema;
	char who[256];

	for (uint32_t i = 0; i < n; i++) {
		ids[i] = -1;
		for (uint32_t p = 0; p < P; p++) {
			int64_t g = calls[p].found[i];

			if (g < 0)
				continue;
			if (ids[i] >= 0 || gnn_layout_owner(be->layout, g) != (int32_t)p ||
			    gnn_layout_type(be->layout, g) != (int32_t)node_type) {
				be->describe(be->ctx, p, who, sizeof(who));
				snprintf(why, why_len, "%s: %s %" PRId64 " answered as node %" PRId64 ", which it does not "
					 "hold, or which another store holds too", who, sc->types[node_type].name, orig_ids[i], g);
				return GNN_EPROTO;
			}
			ids[i] = g;
		}
		if (ids[i] < 0) {
			snprintf(why, why_len, "%s %" PRId64 " (orig_ids[%" PRIu32 "]) is not in the graph: its %" PRId64
				 " %s nodes have original IDs as in the input files", sc->types[node_type].name, orig_ids[i], i,
				 sc->types[node_type].num_nodes, sc->types[node_type].name);
			return GNN_ENOENT;
		}
	}
	return GNN_OK;
}

int smp_lookup_message(const struct smp_backend *be, uint64_t req_id, uint32_t node_type, const int64_t *orig_ids,
		       uint32_t n, struct gnn_wbuf *w, char *why, size_t why_len)
{
	const struct gnn_layout *l = be->layout;
	uint32_t P = l->num_parts;
	struct smp_call *calls = calloc(P, sizeof(*calls));
	int64_t *ids = malloc((size_t)n * sizeof(*ids) + 1);
	size_t start = w->len;
	int rc = GNN_ENOMEM;

	why[0] = '\0';
	if (calls == NULL || ids == NULL)
		goto out;
	if (node_type >= l->schema->num_types) {
		snprintf(why, why_len, "no node type %" PRIu32 ": the graph has %" PRIu32, node_type, l->schema->num_types);
		rc = GNN_EINVAL;
		goto out;
	}
	for (uint32_t p = 0; p < P; p++)
		calls[p] = (struct smp_call){ .type = GNN_MSG_LOOKUP_REQ, .part = p, .n = n, .ids = orig_ids,
					      .node_type = node_type };
	if ((rc = be->run(be->ctx, calls, P, why, why_len)) == GNN_OK &&
	    (rc = merge_lookup(be, calls, P, node_type, orig_ids, n, ids, why, why_len)) == GNN_OK &&
	    (rc = gnn_encode_ids_req(w, GNN_MSG_LOOKUP_RESP, req_id, ids, n)) != GNN_OK)
		snprintf(why, why_len, "cannot encode %" PRIu32 " node IDs (%s)", n, gnn_strerror(rc));
	be->release(be->ctx, calls, P);
out:
	if (rc != GNN_OK)
		w->len = start;
	free(calls);
	free(ids);
	return rc;
}
