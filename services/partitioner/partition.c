#include "partition.h"

#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "log.h"
#include "sys.h"

_Static_assert(sizeof(idx_t) == sizeof(int32_t), "graph.h stores node IDs as METIS idx_t");


static int partition_random(const struct pt_graph *g, int32_t parts, uint64_t seed, int32_t *part)
{
	int64_t n = g->num_nodes, *order = malloc((size_t)n * sizeof(*order));
	int64_t k = 0, dealt[2] = { 0, 0 };
	uint64_t s = seed;

	if (order == NULL)
		return GNN_ENOMEM;
	for (int64_t v = 0; v < n; v++)
		order[v] = v;
	for (int64_t i = n - 1; i > 0; i--) {  /* Fisher-Yates */
		int64_t j = (int64_t)(gnn_splitmix64(&s) % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	/* Deal training nodes and the others round-robin, each from its own
	 * counter, so both counts balance exactly. */
	for (k = 0; k < n; k++) {
		int64_t v = order[k];
		int c = g->split[v] == GNN_SPLIT_TRAIN;

		part[v] = (int32_t)(dealt[c]++ % parts);
	}
	free(order);
	return GNN_OK;
}

/* Builds the adjacency METIS needs when the stored graph is directed or
 * has several relations: one row per node, every edge in both directions,
 * a pair joined by several relations (or both ways) once. */
static int symmetric_copy(const struct pt_graph *g, struct pt_graph *sym)
{
	int64_t m = g->num_edges;
	int32_t *src = malloc((size_t)(m ? m : 1) * sizeof(*src));
	int32_t *dst = malloc((size_t)(m ? m : 1) * sizeof(*dst));

	if (src == NULL || dst == NULL) {
		free(src);
		free(dst);
		return GNN_ENOMEM;
	}
	for (int64_t v = 0; v < g->num_nodes; v++) {
		for (int64_t e = graph_row_begin(g, v); e < graph_row_end(g, v); e++) {
			src[e] = g->indices[e];
			dst[e] = (int32_t)v;
		}
	}
	sym->schema.num_rels = 1;
	return pt_graph_build_csr(sym, g->num_nodes, src, dst, NULL, m, true);
}

/* Position of the undirected edge {u, v} in [0, 1), the same from both ends. */
static double edge_hash(uint64_t seed, int32_t u, int32_t v)
{
	uint64_t s = seed ^ ((uint64_t)(uint32_t)(u < v ? u : v) << 32 | (uint32_t)(u < v ? v : u));

	return gnn_unit64(gnn_splitmix64(&s));
}

/* k such that sum over edges of min(1, k / mindeg(e)) is about budget;
 * cnt[d] counts directed edges whose smaller end-degree is d. */
static double sample_k(const int64_t *cnt, int64_t maxdeg, int64_t budget)
{
	double lo = 0, hi = (double)maxdeg;

	for (int it = 0; it < 60; it++) {
		double k = (lo + hi) / 2, kept = 0;

		for (int64_t d = 1; d <= maxdeg; d++)
			kept += (double)cnt[d] * (k >= (double)d ? 1.0 : k / (double)d);
		if (kept > (double)budget)
			hi = k;
		else
			lo = k;
	}
	return lo;
}

/* Node v's neighbours over every relation. */
static int64_t degree(const struct pt_graph *a, int64_t v)
{
	return graph_row_end(a, v) - graph_row_begin(a, v);
}

struct metis_graph {
	idx_t *xadj, *adjncy, *adjwgt;  /* adjncy borrowed from the graph when not sampled */
	bool own_adjncy;
	int64_t edges;
};

/* The k of sample_k for the symmetric graph a and budget edges.
 * GNN_ENOMEM. */
static int sampling_k(const struct pt_graph *a, int64_t budget, double *k)
{
	int64_t n = a->num_nodes, maxdeg = 0, *cnt;

	for (int64_t v = 0; v < n; v++)
		if (degree(a, v) > maxdeg)
			maxdeg = degree(a, v);
	cnt = calloc((size_t)maxdeg + 1, sizeof(*cnt));
	if (cnt == NULL)
		return GNN_ENOMEM;
	for (int64_t v = 0; v < n; v++) {
		int64_t dv = degree(a, v);

		for (int64_t e = graph_row_begin(a, v); e < graph_row_end(a, v); e++) {
			int32_t u = a->indices[e];
			int64_t du = degree(a, u);

			cnt[du < dv ? du : dv]++;
		}
	}
	*k = sample_k(cnt, maxdeg, budget);
	free(cnt);
	return GNN_OK;
}

/* One pass over a's edges, keeping each with probability p = min(1, k /
 * its smaller end-degree), weighted 1/p, into mg's offsets (and with fill
 * its edges and weights). Every pass makes the same deterministic
 * decisions. Returns the edges kept. */
static int64_t sample_pass(const struct pt_graph *a, double k, uint64_t seed, struct metis_graph *mg, bool fill)
{
	int64_t w = 0;

	for (int64_t v = 0; v < a->num_nodes; v++) {
		int64_t dv = degree(a, v);

		mg->xadj[v] = (idx_t)w;
		for (int64_t e = graph_row_begin(a, v); e < graph_row_end(a, v); e++) {
			int32_t u = a->indices[e];
			int64_t du = degree(a, u), d = du < dv ? du : dv;
			double p = k >= (double)d ? 1.0 : k / (double)d;

			if (p < 1.0 && edge_hash(seed, u, (int32_t)v) >= p)
				continue;
			if (fill) {
				mg->adjncy[w] = u;
				mg->adjwgt[w] = (idx_t)(1.0 / p + 0.5);
			}
			w++;
		}
	}
	return w;
}

/* Builds METIS's adjacency from the symmetric graph a: the graph itself when
 * it has at most budget edges, else the importance-sampled subgraph. */
static int metis_input(const struct pt_graph *a, int64_t budget, uint64_t seed, struct metis_graph *mg)
{
	int64_t n = a->num_nodes, w = 0;
	double k;
	int rc;

	mg->xadj = malloc(((size_t)n + 1) * sizeof(*mg->xadj));
	if (mg->xadj == NULL)
		return GNN_ENOMEM;
	if (a->num_edges <= budget) {  /* a has one relation: its rows are nodes */
		for (int64_t v = 0; v <= n; v++)
			mg->xadj[v] = (idx_t)a->indptr[v];
		mg->adjncy = a->indices;
		mg->edges = a->num_edges;
		return GNN_OK;
	}
	if ((rc = sampling_k(a, budget, &k)) != GNN_OK)
		return rc;
	/* Two passes: the same deterministic decisions size, then fill. */
	for (int pass = 0; pass < 2; pass++) {
		w = sample_pass(a, k, seed, mg, pass == 1);
		if (w > INT32_MAX) {
			GNN_ERROR("graph_too_large", "edges=%lld reason=\"METIS 5.1 idx_t is 32-bit; lower --metis-max-edges\"",
				  (long long)w);
			return GNN_ERANGE;
		}
		mg->xadj[n] = (idx_t)w;
		if (pass == 0) {
			mg->adjncy = malloc((size_t)(w ? w : 1) * sizeof(*mg->adjncy));
			mg->adjwgt = malloc((size_t)(w ? w : 1) * sizeof(*mg->adjwgt));
			mg->own_adjncy = true;
			if (mg->adjncy == NULL || mg->adjwgt == NULL)
				return GNN_ENOMEM;
		}
	}
	mg->edges = w;
	GNN_INFO("metis_sparsified", "edges=%lld kept=%lld budget=%lld k=%.2f reason=\"METIS memory grows with every coarsening level\"",
		 (long long)a->num_edges, (long long)w, (long long)budget, k);
	return GNN_OK;
}

static void metis_graph_free(struct metis_graph *mg)
{
	free(mg->xadj);
	if (mg->own_adjncy)
		free(mg->adjncy);
	free(mg->adjwgt);
}

/* METIS's vertex weights, ncon per node: one 0/1 weight per node type
 * (whether the node is of that type), its degree in a, and 1 for a
 * training node. With one type that is (1, degree, train), as before
 * types. A constraint whose weights are all zero confuses METIS: types
 * without nodes and, without training nodes, the last are left out. */
static int vertex_weights(const struct pt_graph *g, const struct pt_graph *a, idx_t **vwgt_out, idx_t *ncon_out)
{
	int64_t num_train = 0;
	idx_t types = 0, ncon, col[GNN_MAX_TYPES], *vwgt;

	for (int64_t v = 0; v < g->num_nodes; v++)
		num_train += g->split[v] == GNN_SPLIT_TRAIN;
	for (uint32_t t = 0; t < g->schema.num_types; t++)
		col[t] = g->type_start[t + 1] > g->type_start[t] ? types++ : -1;
	ncon = types + 1 + (num_train > 0);
	vwgt = calloc((size_t)g->num_nodes * (size_t)ncon, sizeof(*vwgt));
	if (vwgt == NULL)
		return GNN_ENOMEM;
	for (uint32_t t = 0; t < g->schema.num_types; t++) {
		for (int64_t v = g->type_start[t]; v < g->type_start[t + 1]; v++) {
			vwgt[v * ncon + col[t]] = 1;
			vwgt[v * ncon + types] = (idx_t)degree(a, v);
			if (num_train > 0)
				vwgt[v * ncon + types + 1] = g->split[v] == GNN_SPLIT_TRAIN;
		}
	}
	*vwgt_out = vwgt;
	*ncon_out = ncon;
	return GNN_OK;
}

static int partition_metis(const struct pt_graph *g, const struct pt_partition_opts *o, int32_t *part,
			   int64_t *metis_edges)
{
	struct pt_graph sym = { 0 };
	struct metis_graph mg = { 0 };
	const struct pt_graph *a = g;
	idx_t nvtxs = (idx_t)g->num_nodes, ncon, nparts = o->parts, objval = 0;
	idx_t options[METIS_NOPTIONS];
	idx_t *vwgt = NULL;
	int rc, mrc;

	if (!g->symmetric || g->schema.num_rels > 1) {
		if ((rc = symmetric_copy(g, &sym)) != GNN_OK)
			return rc;
		a = &sym;
	}
	if ((rc = metis_input(a, o->metis_max_edges, o->seed, &mg)) != GNN_OK ||
	    (rc = vertex_weights(g, a, &vwgt, &ncon)) != GNN_OK)
		goto out;
	METIS_SetDefaultOptions(options);
	options[METIS_OPTION_SEED] = (idx_t)(o->seed & 0x7fffffff);
	options[METIS_OPTION_NUMBERING] = 0;
	/* METIS runs for minutes on large graphs without a word. During the
	 * call its own handler owns SIGTERM (GKlib's gk_sigtrap: it jumps out
	 * and METIS returns METIS_ERROR); SIGINT is ours, so the stop
	 * watchdog ends the process (docs/reliability.md). */
	GNN_INFO("metis_start", "vertices=%lld types=%u constraints=%d parts=%d", (long long)nvtxs,
		 g->schema.num_types, (int)ncon, (int)nparts);
	mrc = METIS_PartGraphKway(&nvtxs, &ncon, mg.xadj, mg.adjncy, vwgt, NULL, mg.adjwgt, &nparts,
				  NULL, NULL, options, &objval, part);
	if (mrc != METIS_OK) {
		GNN_ERROR("metis_failed", "code=%d reason=\"%s\"", mrc,
			  mrc == METIS_ERROR_MEMORY ? "out of memory" :
			  mrc == METIS_ERROR_INPUT ? "input rejected" :
			  "METIS error (also what it returns when SIGTERM interrupts it)");
		rc = mrc == METIS_ERROR_MEMORY ? GNN_ENOMEM : GNN_EINTERNAL;
		goto out;
	}
	*metis_edges = mg.edges;
	rc = GNN_OK;
out:
	metis_graph_free(&mg);
	free(vwgt);
	pt_graph_free(&sym);
	return rc;
}

/* Moves nodes so that no partition is empty (METIS may leave one empty on
 * tiny graphs): each empty partition takes a node from the largest. */
static void fill_empty(int64_t n, int32_t parts, int32_t *part, int64_t *count)
{
	for (int32_t p = 0; p < parts; p++) {
		int32_t big = 0;

		if (count[p] > 0)
			continue;
		for (int32_t q = 1; q < parts; q++)
			if (count[q] > count[big])
				big = q;
		for (int64_t v = 0; v < n; v++) {
			if (part[v] == big) {
				part[v] = p;
				count[big]--;
				count[p]++;
				break;
			}
		}
	}
}

/* A training node of the partition moved from, and what its move to the
 * one moved to does to the edge cut (in-neighbours there minus those
 * left behind: higher is better). */
struct cand {
	int64_t gain, v;
};

/* Best first; equal gains: the lower ID, as one scan picking the first
 * best would. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->gain != y->gain)
		return x->gain > y->gain ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

/* Moves the k training nodes of from whose moves to `to` raise the edge cut
 * least, by one scan of the graph; returns how many moved. */
static int64_t move_best(const struct pt_graph *g, int32_t *part, int32_t from, int32_t to, int64_t k,
			 struct cand *c)
{
	int64_t n = 0;

	for (int64_t v = 0; v < g->num_nodes; v++) {
		int64_t gain = 0;

		if (part[v] != from || g->split[v] != GNN_SPLIT_TRAIN)
			continue;
		for (int64_t e = graph_row_begin(g, v); e < graph_row_end(g, v); e++)
			gain += (part[g->indices[e]] == to) - (part[g->indices[e]] == from);
		if (k > 1) {
			c[n++] = (struct cand){ gain, v };
		} else if (n == 0 || gain > c[0].gain) { /* one move: the first best only */
			c[0] = (struct cand){ gain, v };
			n = 1;
		}
	}
	if (k > 1)
		qsort(c, (size_t)n, sizeof(*c), cand_cmp);
	if (k > n)
		k = n;
	for (int64_t i = 0; i < k; i++)
		part[c[i].v] = to;
	return k;
}

/* Up to this many training nodes to move, one scan picks each (the exact
 * greedy); beyond it (a sampled METIS input on a large graph can leave tens
 * of thousands, and a scan per node took hours at 10M nodes), one scan
 * moves a batch: as many as the fuller side is beyond its bound, at most
 * half the gap. Gains within a batch are those before it. */
#define EXACT_MOVES 1024

/* Moves training nodes from the fullest to the emptiest partition (by
 * training count) until all lie within 5% of the mean (at least +-1 node),
 * choosing the nodes whose moves raise the edge cut least. */
static int64_t balance_train(const struct pt_graph *g, int32_t parts, int32_t *part)
{
	int64_t *train = calloc((size_t)parts, sizeof(*train)), total = 0, moves = 0, excess = 0;
	struct cand *c = NULL;
	int64_t hi, lo;

	if (train == NULL)
		return 0;
	for (int64_t v = 0; v < g->num_nodes; v++) {
		if (g->split[v] == GNN_SPLIT_TRAIN) {
			train[part[v]]++;
			total++;
		}
	}
	/* Bounds around the mean: the tightest integers within 5%. */
	hi = (total * 105 + parts * 100 - 1) / (parts * 100);
	lo = (total * 95) / (parts * 100);
	if (hi * parts < total)
		hi = (total + parts - 1) / parts;
	if (lo * parts > total)
		lo = total / parts;
	for (int32_t p = 0; p < parts; p++) /* the moves needed, at least */
		excess += (train[p] > hi ? train[p] - hi : 0) + (train[p] < lo ? lo - train[p] : 0);
	if ((c = malloc((size_t)(excess > EXACT_MOVES ? total : 1) * sizeof(*c))) == NULL)
		goto out;
	for (int64_t guard = 0; guard < total && !gnn_stop_requested(); guard++) {
		int32_t from = 0, to = 0;
		int64_t k = 1, moved;

		for (int32_t p = 1; p < parts; p++) {
			if (train[p] > train[from])
				from = p;
			if (train[p] < train[to])
				to = p;
		}
		if ((train[from] <= hi && train[to] >= lo) || train[from] - train[to] < 2)
			break;
		if (excess > EXACT_MOVES) {
			k = train[from] - hi > lo - train[to] ? train[from] - hi : lo - train[to];
			if (k > (train[from] - train[to]) / 2)
				k = (train[from] - train[to]) / 2;
			if (k < 1)
				k = 1;
		}
		if ((moved = move_best(g, part, from, to, k, c)) == 0)
			break;
		train[from] -= moved;
		train[to] += moved;
		moves += moved;
	}
out:
	free(c);
	free(train);
	return moves;
}

/* New IDs: partition p owns [offsets[p], offsets[p+1]), and within it
 * type t's nodes [type_offsets[p T + t], type_offsets[p T + t + 1]). Nodes
 * are numbered type after type, so handing out IDs in old-ID order gives
 * both, and keeps the input order within a type. */
static int relabel(const struct pt_graph *g, struct pt_partition *pt)
{
	int64_t n = g->num_nodes, *next, *to;
	int32_t parts = pt->num_parts;
	uint32_t T = g->schema.num_types;

	pt->num_types = T;
	pt->offsets = calloc((size_t)parts + 1, sizeof(*pt->offsets));
	pt->type_offsets = to = calloc((size_t)parts * T + 1, sizeof(*pt->type_offsets));
	pt->orig_id = malloc((size_t)n * sizeof(*pt->orig_id));
	pt->new_id = malloc((size_t)n * sizeof(*pt->new_id));
	next = malloc((size_t)parts * sizeof(*next));
	if (pt->offsets == NULL || to == NULL || pt->orig_id == NULL || pt->new_id == NULL || next == NULL) {
		free(next);
		return GNN_ENOMEM;
	}
	for (uint32_t t = 0; t < T; t++)
		for (int64_t v = g->type_start[t]; v < g->type_start[t + 1]; v++)
			to[(size_t)pt->part[v] * T + t + 1]++;
	for (size_t k = 0; k < (size_t)parts * T; k++)
		to[k + 1] += to[k];
	for (int32_t p = 0; p <= parts; p++)
		pt->offsets[p] = to[(size_t)p * T];
	memcpy(next, pt->offsets, (size_t)parts * sizeof(*next));
	for (int64_t v = 0; v < n; v++) {
		int64_t id = next[pt->part[v]]++;

		pt->new_id[v] = id;
		pt->orig_id[id] = v;
	}
	free(next);
	return GNN_OK;
}

int pt_partition_compute(const struct pt_graph *g, const struct pt_partition_opts *o, struct pt_partition *out)
{
	int32_t parts = o->parts;
	struct pt_partition pt = { .num_parts = parts };
	int64_t *count = NULL;
	double t0 = gnn_now();
	int rc = GNN_ENOMEM;

	if (parts < 1 || parts > g->num_nodes)
		return GNN_EINVAL;
	pt.part = calloc((size_t)g->num_nodes, sizeof(*pt.part));
	count = calloc((size_t)parts, sizeof(*count));
	if (pt.part == NULL || count == NULL)
		goto out_fail;
	if (parts == 1)
		rc = GNN_OK;  /* everything in partition 0 */
	else if (strcmp(o->method, "random") == 0)
		rc = partition_random(g, parts, o->seed, pt.part);
	else if (strcmp(o->method, "metis") == 0)
		rc = partition_metis(g, o, pt.part, &pt.metis_edges);
	else
		rc = GNN_EINVAL;
	if (rc != GNN_OK)
		goto out_fail;
	for (int64_t v = 0; v < g->num_nodes; v++)
		count[pt.part[v]]++;
	fill_empty(g->num_nodes, parts, pt.part, count);
	if (parts > 1)
		pt.train_moves = balance_train(g, parts, pt.part);
	for (int64_t v = 0; v < g->num_nodes; v++)
		for (int64_t e = graph_row_begin(g, v); e < graph_row_end(g, v); e++)
			pt.edge_cut += pt.part[g->indices[e]] != pt.part[v];
	if ((rc = relabel(g, &pt)) != GNN_OK)
		goto out_fail;
	free(count);
	GNN_INFO("partition_done", "method=%s parts=%d edge_cut=%lld edge_cut_ratio=%.4f train_moves=%lld seconds=%.2f",
		 o->method, parts, (long long)pt.edge_cut,
		 g->num_edges ? (double)pt.edge_cut / (double)g->num_edges : 0.0,
		 (long long)pt.train_moves, gnn_now() - t0);
	*out = pt;
	return GNN_OK;

out_fail:
	free(count);
	pt_partition_free(&pt);
	return rc;
}

void pt_partition_free(struct pt_partition *pt)
{
	free(pt->part);
	free(pt->offsets);
	free(pt->type_offsets);
	free(pt->orig_id);
	free(pt->new_id);
	memset(pt, 0, sizeof(*pt));
}
