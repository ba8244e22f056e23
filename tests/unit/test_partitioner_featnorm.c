/* Unit tests of the partitioner's feature normalisation (featnorm.c,
 * gnn-partition --feat-norm): row sums 1, standard columns of mean 0 and
 * sd 1, none and a signed type under auto untouched byte for byte, auto
 * per type, generated (on-demand) rows normalised as they are read, the
 * meta.json record, and the names. On a small typed graph built here and
 * on the synthetic tiny preset. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "featnorm.h"
#include "graph.h"
#include "log.h"
#include "synth.h"
#include "testlib.h"

enum { N_CNT = 5, D_CNT = 4, N_SIG = 6, D_SIG = 3, N_NONE = 2 };

/* Three types: "counts" (nonnegative, one all-zero row), "signed" (a
 * negative value, a constant column) and "bare" (no features). Only what
 * featnorm.c reads is filled in. */
static void make_graph(struct pt_graph *g)
{
	static const float counts[N_CNT * D_CNT] = { 1, 0, 2, 1, 0, 0, 0, 0, 3, 3, 0, 0, 0, 1, 0, 0, 2, 2, 2, 2 };
	static const float sig[N_SIG * D_SIG] = { 1.5f, 0.1f, -2, 0.25f, 0.1f, 4, -3, 0.1f, 0, 2, 0.1f, 1, 8, 0.1f, 0.5f, -1, 0.1f, 3 };
	static const char *const names[] = { "counts", "signed", "bare" };
	static const uint32_t dims[] = { D_CNT, D_SIG, 0 };
	static const int64_t nodes[] = { N_CNT, N_SIG, N_NONE };

	memset(g, 0, sizeof(*g));
	g->schema.num_types = 3;
	for (uint32_t t = 0; t < 3; t++) {
		snprintf(g->schema.types[t].name, sizeof(g->schema.types[t].name), "%s", names[t]);
		g->schema.types[t].feat_dim = dims[t];
		g->schema.types[t].num_nodes = nodes[t];
		g->type_start[t + 1] = g->type_start[t] + nodes[t];
	}
	g->num_nodes = g->type_start[3];
	g->feat[0] = malloc(sizeof(counts));
	g->feat[1] = malloc(sizeof(sig));
	memcpy(g->feat[0], counts, sizeof(counts));
	memcpy(g->feat[1], sig, sizeof(sig));
}

/* Column j of n rows of width dim: its mean and population sd. */
static void col_stats(const float *x, int64_t n, size_t dim, size_t j, double *mean, double *sd)
{
	double s = 0.0, ss = 0.0;

	for (int64_t i = 0; i < n; i++)
		s += x[(size_t)i * dim + j];
	*mean = s / (double)n;
	for (int64_t i = 0; i < n; i++)
		ss += (x[(size_t)i * dim + j] - *mean) * (x[(size_t)i * dim + j] - *mean);
	*sd = sqrt(ss / (double)n);
}

static void test_feat_norm_names(void)
{
	static const char *const ok[] = { "auto", "row", "standard", "none" };
	enum pt_feat_norm m;

	for (size_t i = 0; i < 4; i++)
		CHECK(pt_feat_norm_parse(ok[i], &m) == GNN_OK && strcmp(pt_feat_norm_name(m), ok[i]) == 0);
	CHECK(pt_feat_norm_parse("l2", &m) == GNN_EINVAL && pt_feat_norm_parse("Row", &m) == GNN_EINVAL &&
	      pt_feat_norm_parse("", &m) == GNN_EINVAL && pt_feat_norm_parse(NULL, &m) == GNN_EINVAL);
}

/* auto: row for the nonnegative type (sums 1, the zero row kept), none for
 * the signed one (bytes as they were), nothing for the bare one. */
static void test_feat_norm_auto_row(void)
{
	struct pt_graph g;
	float sig[N_SIG * D_SIG];

	make_graph(&g);
	memcpy(sig, g.feat[1], sizeof(sig));
	if (!CHECK(pt_feat_norm_apply(&g, PT_FEAT_NORM_AUTO) == GNN_OK))
		goto out;
	CHECK(g.norm[0].mode == PT_FEAT_NORM_ROW && g.norm[1].mode == PT_FEAT_NORM_NONE &&
	      g.norm[2].mode == PT_FEAT_NORM_NONE);
	for (int64_t i = 0; i < N_CNT; i++) {
		double sum = 0.0;

		for (size_t j = 0; j < D_CNT; j++)
			sum += g.feat[0][i * D_CNT + j];
		CHECK(i == 1 ? sum == 0.0 : fabs(sum - 1.0) < 1e-6);
	}
	CHECK(g.feat[0][0] == 0.25f && g.feat[0][2] == 0.5f && g.feat[0][8] == 0.5f);
	CHECK(memcmp(sig, g.feat[1], sizeof(sig)) == 0);
out:
	pt_graph_free(&g);
}

/* standard: every column mean 0, sd 1; a constant column becomes 0. */
static void test_feat_norm_standard(void)
{
	static const size_t dims[] = { D_CNT, D_SIG };
	static const int64_t nodes[] = { N_CNT, N_SIG };
	struct pt_graph g;
	double mean, sd;

	make_graph(&g);
	if (!CHECK(pt_feat_norm_apply(&g, PT_FEAT_NORM_STANDARD) == GNN_OK))
		goto out;
	CHECK(g.norm[0].mode == PT_FEAT_NORM_STANDARD && g.norm[1].mode == PT_FEAT_NORM_STANDARD);
	/* in memory: normalised in place, the statistics not kept */
	CHECK(g.norm[0].shift == NULL && g.norm[1].scale == NULL);
	for (uint32_t t = 0; t < 2; t++)
		for (size_t j = 0; j < dims[t]; j++) {
			col_stats(g.feat[t], nodes[t], dims[t], j, &mean, &sd);
			if (t == 1 && j == 1)
				CHECK(mean == 0.0 && sd == 0.0);
			else
				CHECK(fabs(mean) < 1e-6 && fabs(sd - 1.0) < 1e-6);
		}
out:
	pt_graph_free(&g);
}

/* none: every byte as it was, on every type. */
static void test_feat_norm_none(void)
{
	struct pt_graph g, orig;

	make_graph(&g);
	make_graph(&orig);
	CHECK(pt_feat_norm_apply(&g, PT_FEAT_NORM_NONE) == GNN_OK);
	CHECK(g.norm[0].mode == PT_FEAT_NORM_NONE && g.norm[1].mode == PT_FEAT_NORM_NONE);
	CHECK(memcmp(g.feat[0], orig.feat[0], N_CNT * D_CNT * sizeof(float)) == 0 &&
	      memcmp(g.feat[1], orig.feat[1], N_SIG * D_SIG * sizeof(float)) == 0);
	pt_graph_free(&g);
	pt_graph_free(&orig);
}

/* meta.json: the applied mode in each featured type's entry, none in the
 * bare type's, and the requested mode. */
static void test_feat_norm_meta(void)
{
	struct pt_graph g;
	json_t *meta, *types;

	make_graph(&g);
	types = json_pack("[{s:s}, {s:s}, {s:s}]", "name", "counts", "name", "signed", "name", "bare");
	meta = json_pack("{s:o}", "node_types", types);
	if (CHECK(meta != NULL && pt_feat_norm_apply(&g, PT_FEAT_NORM_AUTO) == GNN_OK)) {
		pt_feat_norm_meta(&g, PT_FEAT_NORM_AUTO, meta);
		CHECK(strcmp(json_string_value(json_object_get(json_array_get(types, 0), "feat_norm")), "row") == 0);
		CHECK(strcmp(json_string_value(json_object_get(json_array_get(types, 1), "feat_norm")), "none") == 0);
		CHECK(json_object_get(json_array_get(types, 2), "feat_norm") == NULL);
		CHECK(strcmp(json_string_value(json_object_get(meta, "feat_norm_requested")), "auto") == 0);
	}
	json_decref(meta);
	pt_graph_free(&g);
}

/* The synthetic tiny graph (rows made on demand, Gaussian): auto leaves
 * every row as generated; standard normalises them as they are read. */
static void test_feat_norm_generated(void)
{
	struct pt_synth_params p;
	struct pt_graph g = { 0 }, ref = { 0 };
	float *x = NULL, *y = NULL;
	int64_t n;
	size_t dim;
	double mean, sd, worst_mean = 0.0, worst_sd = 0.0;

	if (!CHECK(pt_synth_preset("tiny", 1, &p) == GNN_OK && pt_synth_generate(&p, &g) == GNN_OK &&
		   pt_synth_generate(&p, &ref) == GNN_OK && g.feat[0] == NULL))
		goto out;
	n = g.num_nodes;
	dim = g.schema.types[0].feat_dim;
	x = malloc((size_t)n * dim * sizeof(*x));
	y = malloc((size_t)n * dim * sizeof(*y));
	CHECK(pt_feat_norm_apply(&g, PT_FEAT_NORM_AUTO) == GNN_OK && g.norm[0].mode == PT_FEAT_NORM_NONE);
	for (int64_t v = 0; v < n; v++)
		CHECK(pt_graph_feature_row(&g, v, x + (size_t)v * dim) == GNN_OK &&
		      pt_graph_feature_row(&ref, v, y + (size_t)v * dim) == GNN_OK);
	CHECK(memcmp(x, y, (size_t)n * dim * sizeof(*x)) == 0);
	if (!CHECK(pt_feat_norm_apply(&ref, PT_FEAT_NORM_STANDARD) == GNN_OK && ref.norm[0].scale != NULL))
		goto out;
	for (int64_t v = 0; v < n; v++)
		CHECK(pt_graph_feature_row(&ref, v, y + (size_t)v * dim) == GNN_OK);
	for (size_t j = 0; j < dim; j++) {
		col_stats(y, n, dim, j, &mean, &sd);
		worst_mean = fmax(worst_mean, fabs(mean));
		worst_sd = fmax(worst_sd, fabs(sd - 1.0));
	}
	CHECK(worst_mean < 1e-5 && worst_sd < 1e-5);
out:
	free(x);
	free(y);
	pt_graph_free(&g);
	pt_graph_free(&ref);
}

int main(void)
{
	gnn_log_init("test_partitioner_featnorm");
	gnn_log_set_level(GNN_LOG_WARN);
	RUN(test_feat_norm_names);
	RUN(test_feat_norm_auto_row);
	RUN(test_feat_norm_standard);
	RUN(test_feat_norm_none);
	RUN(test_feat_norm_meta);
	RUN(test_feat_norm_generated);
	return t_done();
}
