/* step_bench.c - `gnn-trainer bench`: the training step (forward, backward,
 * Adam) on synthetic blocks of a sampler's shapes, the GFLOP/s of its
 * matrix products, and OpenBLAS's sgemm peak measured in the same run
 * (docs/model.md). --dump writes the blocks, features, labels and initial
 * parameters for tests/bench_torch.py, which trains the same model in
 * PyTorch. */
#include "step_bench.h"

#include <cblas.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "err.h"
#include "fanouts.h"
#include "hash.h"
#include "log.h"
#include "modelcfg.h"
#include "adam.h"
#include "model.h"
#include "opt.h"
#include "part.h"
#include "sys.h"

static struct {
	const char *fanouts, *dump, *model, *sampler;
	int64_t threads, steps, warmup, batch, in_dim, hidden, classes, graph_nodes, seed, relations, num_bases;
	double dropout, lr;
} bc;

static const struct gnn_opt bench_options[] = {
	{ "threads", GNN_OPT_INT, &bc.threads, "0", 0, 1024, NULL, "OpenBLAS threads, and the model's own (0: one per CPU)" },
	{ "steps", GNN_OPT_INT, &bc.steps, "20", 1, 100000, NULL, "timed training steps (the median is reported)" },
	{ "warmup", GNN_OPT_INT, &bc.warmup, "3", 0, 10000, NULL, "untimed steps first" },
	{ "batch", GNN_OPT_INT, &bc.batch, "1024", 1, 1 << 20, NULL, "seed nodes per minibatch" },
	{ "fanouts", GNN_OPT_LIST, &bc.fanouts, "15,10,5", 0, 0, NULL,
	  "fanout per layer, input layer first (0: no neighbours), at most 1000" },
	{ "in-dim", GNN_OPT_INT, &bc.in_dim, "100", 1, 1 << 16, NULL, "input feature width" },
	{ "hidden", GNN_OPT_INT, &bc.hidden, "256", 1, 1 << 16, NULL, "hidden width" },
	{ "classes", GNN_OPT_INT, &bc.classes, "47", 2, 1 << 16, NULL, "output classes" },
	{ "dropout", GNN_OPT_FLOAT, &bc.dropout, "0.5", 0, 0.99, NULL, "dropout probability" },
	{ "lr", GNN_OPT_FLOAT, &bc.lr, "0.003", 1e-9, 10, NULL, "Adam learning rate" },
	{ "graph-nodes", GNN_OPT_INT, &bc.graph_nodes, "2449029", 16, 1 << 28, NULL,
	  "nodes of the virtual graph the blocks are drawn from (default: ogbn-products)" },
	{ "seed", GNN_OPT_INT, &bc.seed, "1", 0, INT64_MAX, NULL, "blocks, features, labels, initial parameters" },
	{ "model", GNN_OPT_STR, &bc.model, "graphsage", 0, 0, NULL, "the model (gnn-trainer --model)" },
	{ "relations", GNN_OPT_INT, &bc.relations, "1", 1, GNN_PROTO_MAX_RELS, NULL,
	  "relations the sampled edges are split among (by a hash of the edge; more than 1: --model rgcn or rgat)" },
	{ "num-bases", GNN_OPT_INT, &bc.num_bases, "0", 0, GNN_PROTO_MAX_RELS, NULL,
	  "rgcn: basis matrices per layer (0: a full weight per relation)" },
	{ "sampler", GNN_OPT_STR, &bc.sampler, NULL, 0, 0, NULL,
	  "instead of synthetic blocks: a real minibatch from this running sampler (its graph's first --batch "
	  "training nodes, --fanouts per relation, --seed), so the step is timed on the blocks a trainer gets; "
	  "in-dim, classes and the schema are then the graph's" },
	{ "dump", GNN_OPT_STR, &bc.dump, NULL, 0, 0, NULL,
	  "write blocks, features, labels, initial parameters and reference values here (tests/bench_torch.py)" },
	{ NULL },
};

#define DUMP_HEADER 4096
#define DUMP_ALIGN 64


static inline double unit(uint64_t key, uint64_t i)  /* [0, 1) */
{
	return gnn_unit64(gnn_draw64(key, i));
}

/* ---- synthetic blocks ---- */

struct bench_mb {
	struct gnn_minibatch mb;
	int64_t *ids[GNN_PROTO_MAX_LAYERS + 1];  /* ids[l]: block l's src IDs; ids[L]: the seeds */
	int32_t *indptr[GNN_PROTO_MAX_LAYERS], *indices[GNN_PROTO_MAX_LAYERS];
	float *feat;
	float *wide[GNN_PROTO_MAX_TYPES];  /* --sampler: its f16 rows as f32 */
	uint8_t *types;   /* all 0: one node type */
	int32_t *labels;
	nng_msg *reply;   /* --sampler: mb points into it */
	void *owned;
};

static void bench_mb_free(struct bench_mb *b)
{
	for (int l = 0; l <= GNN_PROTO_MAX_LAYERS; l++)
		free(b->ids[l]);
	for (int l = 0; l < GNN_PROTO_MAX_LAYERS; l++) {
		free(b->indptr[l]);
		free(b->indices[l]);
	}
	free(b->feat);
	for (int t = 0; t < GNN_PROTO_MAX_TYPES; t++)
		free(b->wide[t]);
	free(b->types);
	free(b->labels);
	gnn_proto_release(b->owned);
	if (b->reply != NULL)
		nng_msg_free(b->reply);
}

/* The generator (docs/model.md): batch distinct seeds uniform over N
 * virtual nodes; then, from the last layer down, every dst node takes
 * `fanout` distinct in-neighbours u = floor(N r^3), r uniform, u != v. The
 * cube skews draws toward low IDs (hub nodes), so neighbourhoods overlap
 * as a power-law graph's do: with N = 2,449,029 this gives the sizes the
 * real sampler gives on the synthetic ogbn-products graph (1024 / ~6.1k /
 * ~59k / ~600k nodes per hop, 5.1k / 61k / 890k edges). */
/* With --relations R, each sampled edge u -> v belongs to relation
 * hash(u, v) mod R (a property of the edge, as a typed graph's relation
 * is): the dst's edges [first, e) are grouped by relation, stably, into
 * indptr[v R .. v R + R]. tmp holds e - first entries. */
static void split_relations(int32_t *indices, int32_t *indptr, size_t v, size_t first, size_t e,
			    const int64_t *src, int64_t dst, int32_t *tmp)
{
	uint32_t R = (uint32_t)bc.relations, cnt[GNN_PROTO_MAX_RELS + 1] = { 0 };
	uint64_t key = gnn_mix64((uint64_t)bc.seed ^ 0x72656c73ull);
	uint8_t rel[1000];  /* the fanout's limit */

	for (size_t k = first; k < e; k++) {
		rel[k - first] = (uint8_t)(gnn_draw64(gnn_mix64(key ^ (uint64_t)src[indices[k]]), (uint64_t)dst) % R);
		cnt[rel[k - first] + 1]++;
	}
	for (uint32_t r = 0; r < R; r++) {
		cnt[r + 1] += cnt[r];
		indptr[v * R + r + 1] = (int32_t)(first + cnt[r + 1]);
	}
	for (size_t k = first; k < e; k++)
		tmp[cnt[rel[k - first]]++] = indices[k];
	memcpy(indices + first, tmp, (e - first) * sizeof(int32_t));
}

/* Block l's in-neighbours of the dst nodes b->ids[l + 1] (nd of them),
 * its src IDs into b->ids[l]: see make_blocks. loc[N] is all -1 on entry
 * and on return (the local index of a node while the block is built). */
static int make_block(struct bench_mb *b, uint32_t l, uint32_t nd, uint32_t f, uint64_t key, int32_t *loc)
{
	uint64_t N = (uint64_t)bc.graph_nodes, lkey = gnn_mix64(key + l + 1), draws = 0;
	const int64_t *dst = b->ids[l + 1];
	uint32_t ns = nd, R = (uint32_t)bc.relations;
	int64_t *src;
	int32_t *indptr, *indices, tmp[1000];
	size_t e = 0;

	if ((uint64_t)nd * f > INT32_MAX) {
		GNN_ERROR("bad_config", "layer=%" PRIu32 " dst_nodes=%" PRIu32 " fanout=%" PRIu32
			  " reason=\"a block would exceed 2^31-1 edges\"", l, nd, f);
		return GNN_EINVAL;
	}
	b->ids[l] = src = malloc((size_t)nd * (1 + (size_t)f) * sizeof(int64_t));
	b->indptr[l] = indptr = malloc(((size_t)nd * R + 1) * sizeof(int32_t));
	b->indices[l] = indices = malloc(((size_t)nd * f + 1) * sizeof(int32_t));
	if (src == NULL || indptr == NULL || indices == NULL)
		return GNN_ENOMEM;
	if ((uint64_t)f >= N)
		f = (uint32_t)(N - 1);
	/* DGL's convention: the dst nodes are the first src nodes. */
	for (uint32_t v = 0; v < nd; v++) {
		src[v] = dst[v];
		loc[dst[v]] = (int32_t)v;
	}
	indptr[0] = 0;
	for (uint32_t v = 0; v < nd; v++) {
		size_t first = e;

		while (e - first < f) {
			double r = unit(lkey, draws++);
			uint64_t u = (uint64_t)(r * r * r * (double)N);
			int32_t li;
			bool dup = false;

			if (u >= N || (int64_t)u == dst[v])
				continue;
			li = loc[u];
			if (li < 0) {
				li = (int32_t)ns;
				loc[u] = li;
				src[ns++] = (int64_t)u;
			}
			for (size_t k = first; k < e && !dup; k++)
				dup = indices[k] == li;
			if (!dup)
				indices[e++] = li;
		}
		split_relations(indices, indptr, v, first, e, src, dst[v], tmp);
	}
	for (uint32_t i = 0; i < ns; i++)
		loc[src[i]] = -1;
	b->mb.blocks[l] = (struct gnn_block){ .num_dst = nd, .num_src = ns, .num_rels = R, .num_edges = e,
					      .src_ids = src, .indptr = indptr, .indices = indices };
	return GNN_OK;
}

/* Features of the input rows and labels of the seeds, uniform. */
static int make_rows(struct bench_mb *b, uint32_t L, uint64_t key)
{
	size_t nf = (size_t)b->mb.blocks[0].num_src * (size_t)bc.in_dim;
	uint64_t fkey = gnn_mix64(key ^ 0x66656174ull), ykey = gnn_mix64(key ^ 0x6c61626cull);

	if ((b->feat = malloc(nf * sizeof(float))) == NULL ||
	    (b->types = calloc((size_t)b->mb.blocks[0].num_src + 1, 1)) == NULL ||
	    (b->labels = malloc((size_t)bc.batch * sizeof(int32_t))) == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < nf; i++)
		b->feat[i] = (float)(2.0 * unit(fkey, i) - 1.0);
	for (int64_t i = 0; i < bc.batch; i++)
		b->labels[i] = (int32_t)(unit(ykey, (uint64_t)i) * (double)bc.classes);
	b->mb.num_layers = L;
	b->mb.flags = GNN_MB_FEATURES | GNN_MB_LABELS;
	b->mb.num_types = 1;
	b->mb.num_rels = (uint32_t)bc.relations;
	b->mb.feat_dims[0] = (uint32_t)bc.in_dim;
	b->mb.num_seeds = (uint32_t)bc.batch;
	b->mb.src_types = b->types;
	b->mb.feat[0] = b->feat;
	b->mb.feat_dtype = GNN_DT_F32;
	gnn_minibatch_count_types(&b->mb);
	b->mb.labels = b->labels;
	return GNN_OK;
}

static int make_blocks(struct bench_mb *b, uint32_t L, const int32_t *fanouts)
{
	uint64_t N = (uint64_t)bc.graph_nodes, key = gnn_mix64((uint64_t)bc.seed ^ 0x626c6f636b73ull);
	uint32_t nd = (uint32_t)bc.batch;
	int32_t *loc = malloc(N * sizeof(int32_t));
	int rc = GNN_ENOMEM;

	memset(b, 0, sizeof(*b));
	if (loc == NULL)
		return GNN_ENOMEM;
	memset(loc, 0xff, N * sizeof(int32_t));
	if ((b->ids[L] = malloc((size_t)nd * sizeof(int64_t))) == NULL)
		goto out;
	/* Seeds: distinct draws (loc marks the ones taken). */
	for (uint32_t i = 0, k = 0; i < nd; k++) {
		uint64_t u = (uint64_t)(unit(key, k) * (double)N);

		if (loc[u] < 0) {
			loc[u] = (int32_t)i;
			b->ids[L][i++] = (int64_t)u;
		}
	}
	for (uint32_t i = 0; i < nd; i++)
		loc[b->ids[L][i]] = -1;
	for (uint32_t l = L; l-- > 0;) {
		if ((rc = make_block(b, l, nd, (uint32_t)fanouts[l], key, loc)) != GNN_OK)
			goto out;
		nd = b->mb.blocks[l].num_src;
	}
	rc = make_rows(b, L, key);
out:
	free(loc);
	return rc;
}

static int parse_fanouts(const char *text, int32_t *fanouts, uint32_t *n)
{
	struct gnn_fanouts f;
	char why[160];

	if (gnn_fanouts_parse(text, 0, 1000, &f, why, sizeof(why)) != GNN_OK) {
		GNN_ERROR("bad_option", "option=fanouts value=\"%s\" reason=\"%s\"", text, why);
		return GNN_EINVAL;
	}
	memcpy(fanouts, f.v, f.n * sizeof(*fanouts));
	*n = f.n;
	return GNN_OK;
}

/* ---- sgemm peak ---- */

struct shape {
	size_t M, N, K;
	CBLAS_TRANSPOSE ta, tb;
};

/* Best of reps runs of one shape, in GFLOP/s (0 when it cannot allocate). */
static double sgemm_gflops(const struct shape *s, int reps)
{
	size_t lda = s->ta == CblasNoTrans ? s->K : s->M, ldb = s->tb == CblasNoTrans ? s->N : s->K;
	size_t na = s->M * s->K, nb = s->K * s->N, nc = s->M * s->N;
	float *a = malloc(na * sizeof(float)), *bm = malloc(nb * sizeof(float)), *c = malloc(nc * sizeof(float));
	double best = 0;

	if (a != NULL && bm != NULL && c != NULL) {
		/* Ordinary values (no denormals, no NaN) so time is the product's. */
		for (size_t i = 0; i < na; i++)
			a[i] = (float)(i % 13) * 0.01f;
		for (size_t i = 0; i < nb; i++)
			bm[i] = (float)(i % 7) * 0.01f;
		for (int r = 0; r <= reps; r++) {  /* the first run is a warm-up */
			double t0 = gnn_now(), dt;

			cblas_sgemm(CblasRowMajor, s->ta, s->tb, (blasint)s->M, (blasint)s->N, (blasint)s->K, 1.0f, a,
				    (blasint)lda, bm, (blasint)ldb, 0.0f, c, (blasint)s->N);
			dt = gnn_now() - t0;
			if (r > 0 && dt > 0 && 2.0 * s->M * s->N * s->K / dt / 1e9 > best)
				best = 2.0 * s->M * s->N * s->K / dt / 1e9;
		}
	}
	free(a);
	free(bm);
	free(c);
	return best;
}

static const char *tname(CBLAS_TRANSPOSE t)
{
	return t == CblasNoTrans ? "N" : "T";
}

/* ---- the dump for tests/bench_torch.py ---- */

struct dump_w {
	FILE *f;
	uint64_t off;
	int err;
};

static uint64_t dump_array(struct dump_w *w, const void *p, size_t bytes)
{
	static const char zeros[DUMP_ALIGN];
	uint64_t at;
	size_t pad = (size_t)((DUMP_ALIGN - w->off % DUMP_ALIGN) % DUMP_ALIGN);

	if (pad > 0 && fwrite(zeros, 1, pad, w->f) != pad)
		w->err = errno ? errno : EIO;
	w->off += pad;
	at = w->off;
	if (bytes > 0 && fwrite(p, 1, bytes, w->f) != bytes)
		w->err = errno ? errno : EIO;
	w->off += bytes;
	return at;
}

/* Header: DUMP_HEADER bytes of "key=value" lines, NUL padded; then the
 * arrays (little-endian, DUMP_ALIGN-aligned) at the offsets it names.
 * Written to PATH.tmp and renamed, so a reader never sees half a file. */
static int write_dump(const char *path, const struct bench_mb *b, const int32_t *fanouts, const float *params,
		      size_t np, const float *grad_nodrop, double loss_eval, double loss_nodrop_step,
		      double loss_after_step)
{
	char tmp[4096], hdr[DUMP_HEADER];
	struct dump_w w = { 0 };
	uint64_t off_indptr[GNN_PROTO_MAX_LAYERS], off_indices[GNN_PROTO_MAX_LAYERS], off_feat, off_labels,
		off_params, off_grad;
	uint32_t L = b->mb.num_layers;
	size_t n = 0;
	int len;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		GNN_ERROR("dump_failed", "path=%s reason=\"path too long\"", path);
		return GNN_EINVAL;
	}
	if ((w.f = fopen(tmp, "wb")) == NULL) {
		GNN_ERROR("dump_failed", "path=%s reason=\"%s\"", tmp, strerror(errno));
		return GNN_EIO;
	}
	memset(hdr, 0, sizeof(hdr));
	if (fwrite(hdr, 1, sizeof(hdr), w.f) != sizeof(hdr))
		w.err = errno ? errno : EIO;
	w.off = sizeof(hdr);
	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *k = &b->mb.blocks[l];

		off_indptr[l] = dump_array(&w, k->indptr, ((size_t)k->num_dst + 1) * sizeof(int32_t));
		off_indices[l] = dump_array(&w, k->indices, k->num_edges * sizeof(int32_t));
	}
	off_feat = dump_array(&w, b->feat, (size_t)b->mb.blocks[0].num_src * b->mb.feat_dims[0] * sizeof(float));
	off_labels = dump_array(&w, b->labels, (size_t)b->mb.num_seeds * sizeof(int32_t));
	off_params = dump_array(&w, params, np * sizeof(float));
	off_grad = dump_array(&w, grad_nodrop, np * sizeof(float));

	len = snprintf(hdr, sizeof(hdr),
		       "gnn-trainer-bench-dump 1\nlayers=%" PRIu32 "\nin_dim=%" PRId64 "\nhidden=%" PRId64
		       "\nclasses=%" PRId64 "\ndropout=%.9g\nlr=%.9g\nseeds=%" PRIu32 "\nnum_params=%zu\n"
		       "loss_eval=%.17g\nloss_nodrop_step=%.17g\nloss_after_step=%.17g\n"
		       "feat_offset=%" PRIu64 "\nlabels_offset=%" PRIu64 "\nparams_offset=%" PRIu64
		       "\ngrad_nodrop_offset=%" PRIu64 "\n",
		       L, bc.in_dim, bc.hidden, bc.classes, bc.dropout, bc.lr, b->mb.num_seeds, np, loss_eval,
		       loss_nodrop_step, loss_after_step, off_feat, off_labels, off_params, off_grad);
	n = (size_t)len;
	for (uint32_t l = 0; l < L && n < sizeof(hdr); l++) {
		const struct gnn_block *k = &b->mb.blocks[l];

		len = snprintf(hdr + n, sizeof(hdr) - n,
			       "block%" PRIu32 "=num_dst:%" PRIu32 ",num_src:%" PRIu32 ",num_edges:%" PRIu64 ",fanout:%"
			       PRId32 ",indptr_offset:%" PRIu64 ",indices_offset:%" PRIu64 "\n",
			       l, k->num_dst, k->num_src, k->num_edges, fanouts[l], off_indptr[l], off_indices[l]);
		n += (size_t)len;
	}
	if (n >= sizeof(hdr)) {
		GNN_ERROR("dump_failed", "path=%s reason=\"header longer than %d bytes\"", path, DUMP_HEADER);
		w.err = EOVERFLOW;
	}
	if (!w.err && (fseek(w.f, 0, SEEK_SET) != 0 || fwrite(hdr, 1, sizeof(hdr), w.f) != sizeof(hdr)))
		w.err = errno ? errno : EIO;
	if (fclose(w.f) != 0 && !w.err)
		w.err = errno ? errno : EIO;
	if (!w.err && rename(tmp, path) != 0)
		w.err = errno ? errno : EIO;
	if (w.err) {
		GNN_ERROR("dump_failed", "path=%s reason=\"%s\"", path, strerror(w.err));
		unlink(tmp);
		return GNN_EIO;
	}
	GNN_INFO("dump_written", "path=%s bytes=%" PRIu64, path, w.off);
	return GNN_OK;
}

#define MAX_SHAPES (3 * GNN_PROTO_MAX_LAYERS + 2)

/* The products a training step makes (layers.c: per layer X [W; b],
 * X^T dY and, above layer 0, dY W^T, with the model's nmat weight
 * matrices per layer: GraphSAGE's 2, GCN's 1, R-GCN's R + 1), plus two
 * square ones. */
static size_t model_shapes(const struct gnn_minibatch *mb, const struct tr_model_cfg *cfg, size_t nmat,
			   struct shape *s)
{
	size_t n = 0;

	s[n++] = (struct shape){ 1024, 1024, 1024, CblasNoTrans, CblasNoTrans };
	s[n++] = (struct shape){ 2048, 2048, 2048, CblasNoTrans, CblasNoTrans };
	for (uint32_t l = 0; l < mb->num_layers; l++) {
		size_t nd = mb->blocks[l].num_dst, in = l == 0 ? cfg->in_dim : cfg->hidden;
		size_t out = l + 1 == mb->num_layers ? cfg->num_classes : cfg->hidden;

		s[n++] = (struct shape){ nd, out, nmat * in + 1, CblasNoTrans, CblasNoTrans };
		s[n++] = (struct shape){ nmat * in + 1, out, nd, CblasTrans, CblasNoTrans };
		if (l > 0)
			s[n++] = (struct shape){ nd, nmat * in, out, CblasNoTrans, CblasTrans };
	}
	return n;
}

/* Runs every shape, keeping each one's best GFLOP/s in gfl; with report,
 * prints them and returns the best of all (its shape in best_shape). */
static double sgemm_peak(double *gfl, size_t n, const struct shape *shapes, char *best_shape, size_t len,
			 bool report)
{
	double peak = 0;

	for (size_t i = 0; i < n; i++) {
		double g = sgemm_gflops(&shapes[i], 3);

		if (g > gfl[i])
			gfl[i] = g;
		if (!report)
			continue;
		printf("sgemm shape=%zux%zux%zu op=%s%s gflops=%.1f\n", shapes[i].M, shapes[i].N, shapes[i].K,
		       tname(shapes[i].ta), tname(shapes[i].tb), gfl[i]);
		if (gfl[i] > peak) {
			peak = gfl[i];
			snprintf(best_shape, len, "%zux%zux%zu", shapes[i].M, shapes[i].N, shapes[i].K);
		}
	}
	return peak;
}

/* The reference values the PyTorch side must reproduce: the loss without
 * dropout at the initial parameters, and one step of the model without
 * dropout (its loss, its gradient, then Adam and the loss again). */
static int reference_values(const struct tr_model_cfg *cfg, const struct bench_mb *b, const float *init,
			    float *grad, double *loss_eval, double *loss_step, double *loss_after)
{
	struct tr_model_cfg c = *cfg;
	struct tr_model *m = NULL;
	struct tr_adam a = { 0 };
	struct tr_step_stats st;
	size_t np;
	int rc;

	c.dropout = 0.0f;
	if ((rc = tr_model_new(&c, &m)) != GNN_OK)
		return rc;
	np = tr_model_num_params(m);
	memcpy(tr_model_params(m), init, np * sizeof(float));
	if ((rc = tr_adam_init(&a, np, (float)bc.lr, 0.0f)) != GNN_OK ||
	    (rc = tr_model_loss(m, &b->mb, false, 0, loss_eval)) != GNN_OK ||
	    (rc = tr_model_train_step(m, &b->mb, 0, &st)) != GNN_OK)
		goto out;
	*loss_step = st.loss;
	memcpy(grad, tr_model_grads(m), np * sizeof(float));
	tr_adam_step(&a, tr_model_params(m), tr_model_grads(m));
	rc = tr_model_loss(m, &b->mb, false, 0, loss_after);
out:
	tr_adam_free(&a);
	tr_model_free(m);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v[n] (n >= 1) and returns its median. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One call to the sampler: *reply (the caller's) of type want. */
static int sampler_call(struct gnn_client *c, struct gnn_wbuf *w, uint16_t want, nng_msg **reply, const void **payload,
			size_t *len)
{
	char err[512];
	int rc;

	if ((rc = gnn_client_call(c, w, reply, err, sizeof(err))) != GNN_OK ||
	    (rc = gnn_reply_payload(*reply, want, payload, len)) != GNN_OK) {
		GNN_ERROR("bench_failed", "sampler=%s want=%s reason=\"%s\"", bc.sampler, gnn_msg_name(want),
			  err[0] ? err : gnn_strerror(rc));
		if (*reply != NULL)
			nng_msg_free(*reply);
		*reply = NULL;
	}
	w->len = 0;
	return rc;
}

/* The first n training nodes of the sampler's graph (NODES, page by page). */
static int first_train_nodes(struct gnn_client *c, uint32_t n, int64_t *seeds)
{
	struct gnn_wbuf w;
	uint32_t got = 0;
	int64_t cursor = 0;
	int rc = GNN_OK;

	gnn_wbuf_init(&w);
	while (got < n && cursor >= 0 && rc == GNN_OK) {
		struct gnn_nodes_resp r;
		nng_msg *reply = NULL;
		const void *payload;
		size_t len;

		gnn_encode_nodes_req(&w, 2, GNN_SPLIT_TRAIN, n - got, cursor);
		if ((rc = sampler_call(c, &w, GNN_MSG_NODES_RESP, &reply, &payload, &len)) != GNN_OK)
			break;
		if ((rc = gnn_decode_nodes_resp(payload, len, &r)) == GNN_OK) {
			for (uint32_t i = 0; i < r.n && got < n; i++)
				seeds[got++] = r.ids[i];
			cursor = r.next_cursor;
			gnn_proto_release(r.owned);
		}
		nng_msg_free(reply);
	}
	gnn_wbuf_free(&w);
	if (rc == GNN_OK && got < n) {
		GNN_ERROR("bad_config", "sampler=%s batch=%" PRIu32 " train_nodes=%" PRIu32 " reason=\"the graph has fewer "
			  "training nodes than --batch\"", bc.sampler, n, got);
		rc = GNN_EINVAL;
	}
	return rc;
}

/* --sampler: the graph's layout (INFO, copied into *layout: the caller
 * frees it) and one minibatch of its first --batch training nodes with
 * --fanouts resolved on its relations. */
static int fetch_minibatch(struct bench_mb *b, struct gnn_layout *layout, uint32_t *L)
{
	static int32_t fan[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];
	struct gnn_client_opts co = { .url = bc.sampler, .name = "sampler", .timeout_ms = 600000, .retries = 0 };
	struct gnn_minibatch_req req = { .seed = (uint64_t)bc.seed, .flags = GNN_MB_FEATURES | GNN_MB_LABELS };
	struct gnn_client *c = NULL;
	struct gnn_info info = { 0 };
	struct gnn_wbuf w;
	nng_msg *reply = NULL;
	int64_t *seeds = malloc((size_t)bc.batch * sizeof(*seeds));
	const void *payload;
	char why[256];
	size_t len;
	int rc;

	gnn_wbuf_init(&w);
	if (seeds == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	if ((rc = gnn_client_open(&co, &c)) != GNN_OK)
		goto out;
	gnn_encode_info_req(&w, 1);
	if ((rc = sampler_call(c, &w, GNN_MSG_INFO_RESP, &reply, &payload, &len)) != GNN_OK ||
	    (rc = gnn_decode_info_resp(payload, len, &info)) != GNN_OK || (rc = gnn_layout_dup(&info.layout, layout)) != GNN_OK)
		goto out;
	if (gnn_fanouts_for(bc.fanouts, layout->schema, fan, L, why, sizeof(why)) != GNN_OK) {
		GNN_ERROR("bad_option", "option=fanouts value=\"%s\" reason=\"%s\"", bc.fanouts, why);
		rc = GNN_EINVAL;
		goto out;
	}
	if ((rc = first_train_nodes(c, (uint32_t)bc.batch, seeds)) != GNN_OK)
		goto out;
	req.num_layers = *L;
	req.num_rels = layout->schema->num_rels;
	req.fanouts = fan;
	req.num_seeds = (uint32_t)bc.batch;
	req.seeds = seeds;
	gnn_encode_minibatch_req(&w, 3, &req);
	if ((rc = sampler_call(c, &w, GNN_MSG_MINIBATCH_RESP, &b->reply, &payload, &len)) != GNN_OK ||
	    (rc = gnn_decode_minibatch_resp(payload, len, &b->mb)) != GNN_OK)
		goto out;
	b->owned = b->mb.owned;
	rc = gnn_minibatch_widen(&b->mb, b->wide);
out:
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_proto_release(info.owned);
	gnn_wbuf_free(&w);
	gnn_client_close(c);
	free(seeds);
	return rc;
}

/* The synthetic graph's schema: one node type with in_dim features,
 * --relations relations r0, r1, ... from it to itself. */
static void bench_schema(struct gnn_schema *s)
{
	gnn_schema_plain(s, bc.graph_nodes, 0, (uint32_t)bc.in_dim);
	s->num_rels = (uint32_t)bc.relations;
	for (uint32_t r = 0; r < s->num_rels; r++)
		snprintf(s->rels[r].name, sizeof(s->rels[r].name), "r%" PRIu32, r);
}

/* Parses and checks the options, sets the thread count: 0, or the exit
 * status. */
/* The model table's rows the bench takes as they are, beside its own
 * options (whose defaults are the benchmark's shapes). */
static const char *const table_rows[] = { "encoder", "heads" };
static struct gnn_model_cfg bmc;
static struct gnn_opt options[sizeof(bench_options) / sizeof(bench_options[0]) + 2];

static int bench_configure(int argc, char **argv, int32_t *fanouts, uint32_t *L, int *threads)
{
	size_t n = 0;
	int rc = gnn_opt_append(options, sizeof(options) / sizeof(options[0]) - 1, &n, bench_options);

	for (size_t i = 0; rc == GNN_OK && i < sizeof(table_rows) / sizeof(table_rows[0]); i++)
		rc = gnn_mcfg_option(&bmc, table_rows[i], &options[n++]);
	if (rc != GNN_OK)
		return 2;
	rc = gnn_opt_parse("gnn-trainer bench",
			   "Time the training step (forward, backward, Adam) on synthetic blocks of a sampler's "
			   "shapes, against OpenBLAS's sgemm peak measured in the same run (docs/model.md).",
			   options, argc, argv);
	if (rc == GNN_EHELP)
		return -1;
	if (rc != GNN_OK || (bc.sampler == NULL && parse_fanouts(bc.fanouts, fanouts, L) != GNN_OK))
		return 2;
	if (bc.sampler != NULL && bc.dump != NULL) {
		GNN_ERROR("bad_config", "reason=\"--dump writes synthetic blocks: not with --sampler\"");
		return 2;
	}
	if (bc.batch > bc.graph_nodes) {
		GNN_ERROR("bad_config", "batch=%" PRId64 " graph-nodes=%" PRId64 " reason=\"more seeds than nodes\"",
			  bc.batch, bc.graph_nodes);
		return 2;
	}
	if (bc.dump != NULL && strcmp(bc.model, "graphsage") != 0) {
		GNN_ERROR("bad_config", "model=%s reason=\"--dump is for tests/bench_torch.py, which trains graphsage\"",
			  bc.model);
		return 2;
	}
	gnn_opt_log(options);
	*threads = bc.threads > 0 ? (int)bc.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (*threads < 1)
		*threads = 1;
	openblas_set_num_threads(*threads);
	return 0;
}

/* The shape of the run, for the reader and tests/bench_trainer.sh. */
static void print_shape(const struct bench_mb *b, uint32_t L, const struct tr_model *m, int threads)
{
	printf("threads=%d\n", threads);
	/* How long OpenBLAS's idle threads spin (2^N cycles, default 2^28)
	 * decides whether the model's own threads get the cores between
	 * products (docs/model.md). */
	printf("openblas_thread_timeout=%s\n",
	       getenv("OPENBLAS_THREAD_TIMEOUT") ? getenv("OPENBLAS_THREAD_TIMEOUT") : "default");
	printf("shape model=%s relations=%" PRId64 " num_bases=%" PRId64 " layers=%" PRIu32 " batch=%" PRId64
	       " fanouts=%s in_dim=%" PRId64 " hidden=%" PRId64 " classes=%" PRId64 " dropout=%g params=%zu "
	       "graph_nodes=%" PRId64 "\n",
	       tr_model_config(m)->model, bc.relations, bc.num_bases, L, bc.batch, bc.fanouts, bc.in_dim, bc.hidden,
	       bc.classes, bc.dropout, tr_model_num_params(m), bc.graph_nodes);
	printf("nodes_per_hop=");
	for (uint32_t l = 0; l < L; l++)
		printf("%" PRIu32 ",", b->mb.blocks[l].num_src);
	printf("%" PRIu32 "\nedges_per_block=", b->mb.num_seeds);
	for (uint32_t l = 0; l < L; l++)
		printf("%" PRIu64 "%s", b->mb.blocks[l].num_edges, l + 1 < L ? "," : "\n");
}

/* --dump: the blocks, the initial parameters and the reference values
 * for tests/bench_torch.py. */
static int dump_reference(const struct tr_model_cfg *cfg, const struct bench_mb *b, const int32_t *fanouts,
			  struct tr_model *m)
{
	size_t np = tr_model_num_params(m);
	float *init = malloc(np * sizeof(float)), *grad = malloc(np * sizeof(float));
	double le, ls, la;
	int rc = GNN_ENOMEM;

	if (init == NULL || grad == NULL)
		goto out;
	memcpy(init, tr_model_params(m), np * sizeof(float));
	if ((rc = reference_values(cfg, b, init, grad, &le, &ls, &la)) != GNN_OK ||
	    (rc = write_dump(bc.dump, b, fanouts, init, np, grad, le, ls, la)) != GNN_OK)
		goto out;
	printf("reference loss_eval=%.7f loss_nodrop_step=%.7f loss_after_step=%.7f\n", le, ls, la);
out:
	free(init);
	free(grad);
	return rc;
}

/* Per timed step: its seconds, inside the products, and outside them and
 * Adam; then the totals. */
struct step_times {
	double *step_s, *mm_s, *other_s;
	double flops, adam_total, first_loss, last_loss;
};

static void step_times_free(struct step_times *t)
{
	free(t->step_s);
	free(t->mm_s);
	free(t->other_s);
}

/* Warm-up and timed steps of training on the one minibatch. */
static int run_steps(struct tr_model *m, const struct bench_mb *b, struct tr_adam *adam, struct step_times *t)
{
	t->step_s = calloc((size_t)bc.steps, sizeof(double));
	t->mm_s = calloc((size_t)bc.steps, sizeof(double));
	t->other_s = calloc((size_t)bc.steps, sizeof(double));
	if (t->step_s == NULL || t->mm_s == NULL || t->other_s == NULL)
		return GNN_ENOMEM;
	for (int64_t i = -bc.warmup; i < bc.steps; i++) {
		struct tr_step_stats st;
		double ts = gnn_now(), ta;
		int rc;

		if ((rc = tr_model_train_step(m, &b->mb, (uint64_t)(i + bc.warmup), &st)) != GNN_OK)
			return rc;
		ta = gnn_now();
		tr_adam_step(adam, tr_model_params(m), tr_model_grads(m));
		if (i == -bc.warmup)
			t->first_loss = st.loss;
		t->last_loss = st.loss;
		if (i >= 0) {
			double now = gnn_now();

			t->step_s[i] = now - ts;
			t->mm_s[i] = st.matmul_s;
			t->other_s[i] = (ta - ts) - st.matmul_s;
			t->flops = st.flops;
			t->adam_total += now - ta;
		}
	}
	return GNN_OK;
}

/* Medians: a step the machine's other load interrupted says nothing
 * about the products. */
static void print_times(struct step_times *t, double peak, const char *peak_shape)
{
	double n = (double)bc.steps, med_mm = median(t->mm_s, (size_t)bc.steps);
	double med_step = median(t->step_s, (size_t)bc.steps);  /* sorts step_s */

	printf("loss_first=%.4f loss_last=%.4f (the same minibatch %" PRId64 " times: it must fall)\n",
	       t->first_loss, t->last_loss, bc.steps + bc.warmup);
	printf("step_ms_median=%.2f\n", med_step * 1e3);
	printf("step_ms_min=%.2f\n", t->step_s[0] * 1e3);
	printf("step_ms_max=%.2f\n", t->step_s[bc.steps - 1] * 1e3);
	printf("matmul_ms_median=%.2f\n", med_mm * 1e3);
	printf("other_ms_median=%.2f (outside the products and Adam: gathers, activations, loss, masks)\n",
	       median(t->other_s, (size_t)bc.steps) * 1e3);
	printf("adam_ms_mean=%.2f\n", t->adam_total / n * 1e3);
	printf("matmul_gflop_per_step=%.3f\n", t->flops / 1e9);
	printf("model_matmul_gflops=%.1f\n", t->flops / med_mm / 1e9);
	printf("model_step_gflops=%.1f\n", t->flops / med_step / 1e9);
	printf("sgemm_peak_gflops=%.1f\n", peak);
	printf("sgemm_peak_shape=%s\n", peak_shape);
	printf("model_gflops_over_sgemm_peak=%.3f\n", peak > 0 ? t->flops / med_mm / 1e9 / peak : 0.0);
	printf("step_gflops_over_sgemm_peak=%.3f\n", peak > 0 ? t->flops / med_step / 1e9 / peak : 0.0);
}

/* The blocks to time into *b: a running sampler's minibatch (--sampler;
 * the options then take its graph's shapes, and *layout its layout) or
 * synthetic ones on bench_schema's schema (into *sch). *schema: the one
 * the blocks are of. Returns 0, or the exit status (logged). */
static int load_blocks(struct bench_mb *b, struct gnn_layout *layout, struct gnn_schema *sch,
		       const int32_t *fanouts, uint32_t *L, const struct gnn_schema **schema)
{
	double t0 = gnn_now();
	int rc = bc.sampler != NULL ? fetch_minibatch(b, layout, L) : make_blocks(b, *L, fanouts);

	if (rc != GNN_OK) {
		GNN_ERROR("bench_failed", "reason=\"cannot %s the blocks: %s\"", bc.sampler ? "fetch" : "build",
			  gnn_strerror(rc));
		return rc == GNN_EINVAL ? 2 : 1;
	}
	GNN_INFO("blocks_built", "seconds=%.2f source=%s", gnn_now() - t0, bc.sampler ? bc.sampler : "synthetic");
	if (bc.sampler != NULL) {
		/* the graph's shapes, not the synthetic options' */
		bc.in_dim = layout->feat_dim;
		bc.classes = layout->num_classes;
		bc.graph_nodes = layout->num_nodes;
		bc.relations = layout->schema->num_rels;
		*schema = layout->schema;
	} else {
		bench_schema(sch);
		*schema = sch;
	}
	return 0;
}

int tr_bench_main(int argc, char **argv)
{
	struct bench_mb b = { 0 };
	struct tr_model *m = NULL;
	struct tr_adam adam = { 0 };
	struct step_times times = { 0 };
	struct tr_model_cfg cfg;
	struct gnn_layout layout = { 0 };  /* --sampler: the graph's */
	static struct gnn_schema schema;  /* ~28 KB: not on the stack */
	const struct gnn_schema *sc;
	int32_t fanouts[GNN_PROTO_MAX_LAYERS];
	uint32_t L = 0;
	char peak_shape[64] = "", err[512];
	struct shape shapes[MAX_SHAPES];
	double gfl[MAX_SHAPES] = { 0 }, peak;
	size_t ns_shapes;
	int rc = GNN_OK, status, threads;

	gnn_log_init("gnn-trainer");
	if ((status = bench_configure(argc, argv, fanouts, &L, &threads)) != 0)
		return status < 0 ? 0 : status;
	if ((status = load_blocks(&b, &layout, &schema, fanouts, &L, &sc)) != 0)
		goto out;
	status = 1;
	cfg = (struct tr_model_cfg){ .num_layers = L, .in_dim = (uint32_t)bc.in_dim, .hidden = (uint32_t)bc.hidden,
				     .num_classes = (uint32_t)bc.classes, .dropout = (float)bc.dropout,
				     .model = bc.model, .schema = sc, .num_bases = (uint32_t)bc.num_bases,
				     .heads = (uint32_t)bmc.heads, .encoder = tr_encoder_named(bmc.encoder) };
	if ((rc = tr_model_new(&cfg, &m)) != GNN_OK)
		goto out;
	tr_model_init(m, (uint64_t)bc.seed);
	if ((rc = tr_model_check(m, &b.mb, true, err, sizeof(err))) != GNN_OK) {
		GNN_ERROR("bench_failed", "reason=\"generated minibatch rejected: %s\"", err);
		goto out;
	}
	print_shape(&b, L, m, threads);
	if (bc.dump != NULL && (rc = dump_reference(&cfg, &b, fanouts, m)) != GNN_OK)
		goto out;
	ns_shapes = model_shapes(&b.mb, &cfg, tr_model_weight_mats(m), shapes);
	sgemm_peak(gfl, ns_shapes, shapes, peak_shape, sizeof(peak_shape), false);
	if ((rc = tr_adam_init(&adam, tr_model_num_params(m), (float)bc.lr, 0.0f)) != GNN_OK ||
	    (rc = run_steps(m, &b, &adam, &times)) != GNN_OK)
		goto out;
	/* The peak: the best of before and after the steps, since other load
	 * on the machine comes and goes. */
	peak = sgemm_peak(gfl, ns_shapes, shapes, peak_shape, sizeof(peak_shape), true);
	print_times(&times, peak, peak_shape);
	status = 0;
out:
	if (status != 0 && rc != GNN_OK)
		GNN_ERROR("bench_failed", "reason=\"%s\"", gnn_strerror(rc));
	step_times_free(&times);
	tr_adam_free(&adam);
	tr_model_free(m);
	bench_mb_free(&b);
	gnn_layout_free(&layout);
	return status;
}
