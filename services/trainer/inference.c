/* inference.c - `gnn-trainer infer` (inference.h, docs/inference.md).
 *
 * Why files on the volume and not the graph stores for the intermediate
 * layers: each layer is written once and read by every worker, a
 * partition's rows are one array file that maps straight into memory, a
 * restarted worker finds the layers already done (the work folder is keyed
 * by the parameters' CRC), and nothing has to change in the stores. The
 * price is that every worker must see the data volume, which the
 * partitioner's output needs already.
 *
 * Memory: the partitions and layer files are mapped (page cache, not the
 * process's own memory); what a worker allocates is one batch's gathered
 * rows (--buffer-mb) and the model's workspace for that batch. */
#include "inference.h"

#include <cblas.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arr.h"
#include "checkpoint.h"
#include "err.h"
#include "json.h"
#include "kernels.h"
#include "decoder.h"
#include "log.h"
#include "model.h"
#include "modelcfg.h"
#include "opt.h"
#include "part.h"
#include "result.h"
#include "sys.h"
#include "training.h"

#define SUMMARY_FORMAT 1
#define MAX_TOP_K 64

static struct {
	const char *data, *ckpt, *out;
	int64_t workers, worker, top_k, buffer_mb, threads, wait_s, epochs;
	bool embeddings, npy;
	/* The model flags given (none is needed: result.json records the
	 * run's configuration); each is checked against it. */
	struct gnn_model_cfg given;
} ic;

static const struct gnn_opt own_options[] = {
	{ "data", GNN_OPT_STR, &ic.data, NULL, 0, 0, NULL, "partition output folder (gnn-partition --out)" },
	{ "checkpoint-dir", GNN_OPT_STR, &ic.ckpt, NULL, 0, 0, NULL,
	  "trainer rank 0's --checkpoint-dir: result.json and the checkpoints of the finished run" },
	{ "out", GNN_OPT_STR, &ic.out, NULL, 0, 0, NULL, "where the predictions go (default: DATA/predictions)" },
	{ "epochs", GNN_OPT_INT, &ic.epochs, "0", 0, 100000, NULL,
	  "wait for a result of at least this many epochs (a continued run's, not the one before it; 0: any)" },
	{ "workers", GNN_OPT_INT, &ic.workers, "1", 1, 65536, NULL,
	  "inference workers; worker w computes the partitions p with p mod workers == w" },
	{ "worker", GNN_OPT_INT, &ic.worker, "-1", -1, 65535, NULL, "this worker (-1: 0 when --workers is 1)" },
	{ "top-k", GNN_OPT_INT, &ic.top_k, "3", 1, MAX_TOP_K, NULL, "classes and probabilities kept per node" },
	{ "embeddings", GNN_OPT_BOOL, &ic.embeddings, NULL, 0, 0, NULL,
	  "also write each node's last hidden layer (the last layer's input)" },
	{ "npy", GNN_OPT_BOOL, &ic.npy, "true", 0, 0, NULL,
	  "also write each output array as a NumPy .npy file beside its .arr: same name, same values, for "
	  "np.load(path, mmap_mode='r') (--npy=false: the .arr files only)" },
	{ "buffer-mb", GNN_OPT_INT, &ic.buffer_mb, "256", 1, 1 << 20, NULL,
	  "rows gathered per batch at most (a node's whole neighbourhood is one batch at least)" },
	{ "threads", GNN_OPT_INT, &ic.threads, "0", 0, 1024, NULL, "OpenBLAS and gather threads (0: one per CPU)" },
	{ "wait-s", GNN_OPT_INT, &ic.wait_s, "3600", 0, 604800, NULL,
	  "longest wait for result.json and for the other workers' layers" },
	{ NULL },
};

/* own_options, then the model table's model rows (no defaults), then the end row. */
static struct gnn_opt infer_options[sizeof(own_options) / sizeof(own_options[0]) + GNN_MCFG_MAX_ROWS];

/* The split codes of part.h, for the counts. */
static const char *const split_names[4] = { "none", "train", "valid", "test" };

struct counts {
	uint64_t labelled[4], correct[4];
};

struct infer {
	struct gnn_meta meta;
	struct gnn_part *parts;    /* [num_parts], every partition mapped */
	struct gnn_arr *prev;      /* [num_parts]: the previous layer's outputs */
	struct gnn_arr node_map;
	struct gnn_result res;
	struct tr_model *model;
	struct tr_emb *emb;        /* the learned embeddings (--embed-dim), or NULL */
	struct gnn_schema mschema; /* the schema the model reads */
	struct tr_config c;        /* the run's (result.json's configuration, checked against ic.given) */
	struct tr_decoder dec;
	float *dec_params;         /* [tr_decoder_num_params] (mlp), from the checkpoint */
	uint32_t L, P, top_k;
	bool encoded;              /* layer 0's input rows come from the input pass (tr_model_input_projects) */
	char work[PATH_MAX];       /* OUT/.work-<params_crc> */
	double t0;
	/* one batch */
	struct tr_fbuf h, y;
	struct tr_ibuf indptr, indices;
};

/* ---- waiting, bounded and logged ---- */

typedef int (*probe_fn)(struct infer *in, void *arg, char *missing, size_t len, bool *ready);

/* Until probe says ready, --wait-s at most; one line per 10 s. */
static int wait_for(struct infer *in, const char *what, probe_fn probe, void *arg)
{
	const struct timespec tick = { 0, 200 * 1000000L };
	double t0 = gnn_now(), logged = -1e9;
	char missing[256];
	bool ready = false;
	int rc;

	for (;;) {
		missing[0] = '\0';
		if ((rc = probe(in, arg, missing, sizeof(missing), &ready)) != GNN_OK || ready)
			return rc;
		if (gnn_stop_requested())
			return GNN_ECLOSED;
		if (gnn_now() - t0 >= (double)ic.wait_s) {
			GNN_ERROR("wait_timeout", "what=%s missing=%s waited_s=%.0f", what, missing, gnn_now() - t0);
			return GNN_ETIMEDOUT;
		}
		if (gnn_now() - logged >= 10) {
			GNN_INFO("waiting_for", "what=%s missing=%s waited_s=%.0f timeout_s=%" PRId64, what, missing,
				 gnn_now() - t0, ic.wait_s);
			logged = gnn_now();
		}
		nanosleep(&tick, NULL);
	}
}

static int probe_result(struct infer *in, void *arg, char *missing, size_t len, bool *ready)
{
	int rc = gnn_result_read(ic.ckpt, &in->res, ready);

	(void)arg;
	if (rc == GNN_OK && *ready && in->res.epochs < (uint64_t)ic.epochs) {
		*ready = false;
		snprintf(missing, len, "%s/%s(epochs>=%" PRId64 ",has=%" PRIu32 ")", ic.ckpt, GNN_RESULT_FILE, ic.epochs,
			 in->res.epochs);
		return GNN_OK;
	}
	snprintf(missing, len, "%s/%s", ic.ckpt, GNN_RESULT_FILE);
	return rc;
}

/* ---- inputs ---- */

static int check_options(void)
{
	if (ic.data == NULL || ic.ckpt == NULL) {
		GNN_ERROR("bad_config", "reason=\"--data DIR and --checkpoint-dir DIR are required\"");
		return GNN_EINVAL;
	}
	if (ic.worker < 0 && ic.workers == 1)
		ic.worker = 0;
	if (ic.worker < 0 || ic.worker >= ic.workers) {
		GNN_ERROR("bad_config", "worker=%" PRId64 " workers=%" PRId64 " reason=\"give --worker in [0, "
			  "--workers)\"", ic.worker, ic.workers);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* The run's configuration: result.json's, where a model flag given must
 * agree with it; or, for a result written before it was recorded, the
 * flags given and the table's defaults. Then the trainer's configuration
 * from it, as gnn-trainer made it (the model hash must come out the same). */
static int resolve_model(struct infer *in)
{
	const struct gnn_model_cfg *run = &in->res.config;
	char given[256], trained[256], line[2048];
	size_t used = 0;

	if (!in->res.has_config) {
		GNN_WARN("no_recorded_config", "file=%s/%s reason=\"written before result.json recorded the run's "
			 "configuration: the model flags given and their defaults are used\"", ic.ckpt, GNN_RESULT_FILE);
		gnn_mcfg_defaults(&ic.given);
		run = &ic.given;
	}
	for (size_t i = 0; i < gnn_mcfg_count(); i++) {
		if (!ic.given.given[i])
			continue;
		gnn_mcfg_format(&ic.given, i, given, sizeof(given));
		gnn_mcfg_format(run, i, trained, sizeof(trained));
		if (strcmp(given, trained) != 0) {
			GNN_ERROR("bad_config", "option=--%s given=%s trained=%s reason=\"the run in %s was trained with "
				  "another value: leave the flag out (result.json has the run's configuration)\"",
				  gnn_mcfg_row(i)->name, given, trained, ic.ckpt);
			return GNN_EINVAL;
		}
	}
	if (tr_config_from_model(&in->c, run) != GNN_OK)
		return GNN_EINVAL;
	for (size_t i = 0; i < gnn_mcfg_count() && used < sizeof(line); i++)
		if (gnn_mcfg_row(i)->cls == GNN_MCFG_MODEL && gnn_mcfg_active(&in->c.mcfg, i)) {
			gnn_mcfg_format(&in->c.mcfg, i, trained, sizeof(trained));
			used += (size_t)snprintf(line + used, sizeof(line) - used, " %s=%s", gnn_mcfg_row(i)->name,
						 trained[0] != '\0' ? trained : "-");
		}
	GNN_INFO("model_config", "source=%s%s", in->res.has_config ? "result.json" : "flags", line);
	return GNN_OK;
}

/* Every partition mapped (the own ones verified), and the node map. */
static int open_graph(struct infer *in)
{
	char path[PATH_MAX];
	int rc;

	/* the graph stores' graph_id: the trainers mixed it into the model hash */
	if ((rc = gnn_meta_load(ic.data, &in->meta)) != GNN_OK ||
	    (rc = gnn_meta_graph_id(&in->meta, &in->meta.layout.graph_id)) != GNN_OK)
		return rc;
	in->P = in->meta.layout.num_parts;
	in->parts = calloc(in->P, sizeof(*in->parts));
	in->prev = calloc(in->P, sizeof(*in->prev));
	if (in->parts == NULL || in->prev == NULL)
		return GNN_ENOMEM;
	for (uint32_t p = 0; p < in->P; p++)
		if ((rc = gnn_part_open(ic.data, &in->meta, (int32_t)p,
					p % (uint32_t)ic.workers == (uint32_t)ic.worker ? GNN_PART_VERIFY : 0,
					&in->parts[p])) != GNN_OK)
			return rc;
	snprintf(path, sizeof(path), "%s/node-map.arr", ic.data);
	if ((rc = gnn_arr_open(path, GNN_DT_I64, 0, &in->node_map)) != GNN_OK)
		return rc;
	if (in->node_map.info.rows != (uint64_t)in->meta.layout.num_nodes) {
		GNN_ERROR("bad_partition", "file=%s rows=%" PRIu64 " nodes=%" PRId64, path, in->node_map.info.rows,
			  in->meta.layout.num_nodes);
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

/* The model of the flags, with the parameters result.json names, after
 * checking that both belong to this graph and this model. */
static int load_model(struct infer *in)
{
	const struct gnn_layout *g = &in->meta.layout;
	struct tr_config c = in->c;
	size_t nm, nd = 0;
	struct tr_model_cfg mc;
	struct tr_emb_opts eo = { 0 };
	uint64_t mh;
	struct tr_ckpt ck;
	int rc;

	tr_emb_opts_from_model(&eo, &in->c.mcfg);
	if (in->c.mcfg.embed_dim > 0) {
		if ((rc = tr_emb_open(&eo, g, &in->emb)) != GNN_OK)
			return rc;
		c.embed_hash = tr_emb_hash(in->emb);
	}
	tr_config_model(&c, g, in->emb, &in->mschema, &mc);
	mc.dropout = 0;   /* as before: inference runs infer_layer, without dropout */
	if (in->c.link) {
		in->dec = tr_config_decoder(&c);
		nd = tr_decoder_num_params(&in->dec);
	}
	mh = tr_model_hash(&c, g);
	if (in->res.model_hash != mh) {
		GNN_ERROR("wrong_checkpoint", "checkpoint_dir=%s result_model_hash=%016" PRIx64 " expected=%016" PRIx64
			  " graph_id=%016" PRIx64 " reason=\"result.json belongs to another graph: check --data against "
			  "the training run's partition output\"", ic.ckpt,
			  in->res.model_hash, mh, g->graph_id);
		return GNN_EINVAL;
	}
	if ((rc = tr_model_new(&mc, &in->model)) != GNN_OK ||
	    (rc = tr_ckpt_find_best(ic.ckpt, mh, in->res.params_crc, &ck)) != GNN_OK)
		return rc;
	nm = tr_model_num_params(in->model);
	if (ck.num_params != nm + nd) {
		GNN_ERROR("wrong_checkpoint", "params=%zu expected=%zu", ck.num_params, nm + nd);
		tr_ckpt_free(&ck);
		return GNN_EFORMAT;
	}
	memcpy(tr_model_params(in->model), ck.best, nm * sizeof(float));
	/* a link model's decoder parameters follow the model's (training.c) */
	if (nd > 0 && (in->dec_params = malloc(nd * sizeof(float))) == NULL) {
		tr_ckpt_free(&ck);
		return GNN_ENOMEM;
	}
	if (nd > 0)
		memcpy(in->dec_params, ck.best + nm, nd * sizeof(float));
	rc = in->emb != NULL ? tr_emb_map_best(in->emb, ck.folder) : GNN_OK;
	tr_ckpt_free(&ck);
	return rc;
}

/* ---- one layer over one partition, batch by batch ---- */

/* Node gid's row of the schema the model reads (its features, its
 * embedding, or both; NULL for a type without) and its type *t: the
 * partition's own f32 row, or one made in dst (width floats, at least the
 * model schema's widest type's). */
static const float *raw_input(const struct infer *in, int64_t gid, size_t width, float *dst, uint32_t *t)
{
	const struct gnn_layout *g = &in->meta.layout;
	uint32_t q, dim;
	const void *row;
	const float *feat;

	*t = (uint32_t)gnn_layout_locate(g, gid, &q, NULL);
	row = gnn_part_feat_row(&in->parts[q], gid, &dim);
	feat = row;
	/* f16 rows widened in dst (what follows reads feat first); a row
	 * wider than dst is one the model does not read (embeddings that
	 * replace the features) */
	if (row != NULL && g->feat_dtype == GNN_DT_F16) {
		feat = NULL;
		if (dim <= width) {
			gnn_f16_to_f32(row, dim, dst);
			feat = dst;
		}
	}
	if (in->emb != NULL && tr_emb_dim(in->emb, *t) > 0) {
		tr_emb_input_row(in->emb, *t, gid, feat, dst);
		return dst;
	}
	return feat;
}

/* Layer l's input row of global node gid (width floats) into dst: for
 * layer 0 what the model makes of the node's features (its type's learned
 * vector for a type without features) unless the input pass made it (a
 * projecting model: in->encoded), else the previous pass's output. */
static void put_row(const struct infer *in, uint32_t l, int64_t gid, size_t width, float *dst)
{
	const struct gnn_layout *g = &in->meta.layout;
	uint32_t q, t;

	if (l == 0 && !in->encoded) {
		const float *feat = raw_input(in, gid, width, dst, &t);

		/* cannot fail: the type and its row come from the partition
		 * output the model was built on (load_model) */
		(void)tr_model_input_row(in->model, t, feat, dst);
		return;
	}
	q = (uint32_t)gnn_layout_owner(g, gid);
	memcpy(dst, (const float *)in->prev[q].data + (size_t)(gid - g->offsets[q]) * width,
	       width * sizeof(float));
}

/* The batch [v0, v0 + nb) of partition p as a block: source rows 0..nb-1
 * are the nodes themselves, then one row per in-edge, relation after
 * relation (a neighbour seen twice is gathered twice: no lookup, and the
 * gather is per edge anyway). */
struct gather {
	const struct infer *in;
	const struct gnn_part *part;
	uint32_t l;
	int64_t v0;
	size_t nb, width;
	const int32_t *indptr;   /* block-local, [nb * R + 1] */
	float *h;
};

static void gather_rows(void *arg, size_t lo, size_t hi)
{
	const struct gather *g = arg;
	const int64_t *pi = g->part->indptr, *pidx = g->part->indices, R = g->part->num_rels;
	size_t w = g->width;

	for (size_t i = lo; i < hi; i++) {
		int64_t v = g->v0 + (int64_t)i;
		float *dst = g->h + ((size_t)g->nb + (size_t)g->indptr[i * (size_t)R]) * w;

		put_row(g->in, g->l, g->part->node_start + v, w, g->h + i * w);
		for (int64_t e = pi[v * R]; e < pi[(v + 1) * R]; e++, dst += w)
			put_row(g->in, g->l, pidx[e], w, dst);
	}
}

/* The most nodes from v0 (up to end) whose rows fit the buffer (one at least). */
static size_t batch_end(const struct gnn_part *part, int64_t v0, int64_t end, size_t budget)
{
	const int64_t *pi = part->indptr, R = part->num_rels;
	size_t rows = 0;
	int64_t v = v0;

	while (v < end) {
		size_t r = 1 + (size_t)(pi[(v + 1) * R] - pi[v * R]);

		if (v > v0 && rows + r > budget)
			break;
		rows += r;
		v++;
	}
	return (size_t)(v - v0);
}

/* Layer l's outputs of nodes [v0, v0 + nb) of part into in->y. */
static int run_batch(struct infer *in, const struct gnn_part *part, uint32_t l, int64_t v0, size_t nb)
{
	const int64_t R = part->num_rels, *pi = part->indptr + v0 * R;
	uint32_t win, wout;
	size_t ne = (size_t)(pi[(int64_t)nb * R] - pi[0]), rows = nb + ne;
	struct gather g;
	struct gnn_block b;
	int rc;

	tr_model_layer_dims(in->model, l, &win, &wout);
	if (rows > INT32_MAX) {
		GNN_ERROR("batch_too_large", "part=%d first_node=%" PRId64 " rows=%zu", part->id, v0, rows);
		return GNN_ERANGE;
	}
	if ((rc = tr_fbuf_reserve(&in->h, rows * win)) != GNN_OK || (rc = tr_fbuf_reserve(&in->y, nb * wout)) != GNN_OK ||
	    (rc = tr_ibuf_reserve(&in->indptr, nb * (size_t)R + 1)) != GNN_OK ||
	    (rc = tr_ibuf_reserve(&in->indices, ne ? ne : 1)) != GNN_OK)
		return rc;
	for (size_t k = 0; k <= nb * (size_t)R; k++)
		in->indptr.p[k] = (int32_t)(pi[k] - pi[0]);
	for (size_t e = 0; e < ne; e++)
		in->indices.p[e] = (int32_t)(nb + e);
	g = (struct gather){ in, part, l, v0, nb, win, in->indptr.p, in->h.p };
	tr_par_for(nb, 1 + 4096 / (1 + ne / (nb ? nb : 1)), gather_rows, &g);
	b = (struct gnn_block){ .num_dst = (uint32_t)nb, .num_src = (uint32_t)rows, .num_rels = (uint32_t)R,
				.num_edges = ne, .indptr = in->indptr.p, .indices = in->indices.p };
	return tr_model_infer_layer(in->model, l, &b, in->h.p, in->y.p);
}

/* The input pass's outputs stand as a layer's (layer_path: input-part-P,
 * the logs' layer=input). */
#define INPUT_PASS UINT32_MAX

/* Pass l's input and output widths: the input pass reads rows of the
 * model schema's (the widest type's) and writes layer 0's; its input
 * width is the larger, so one --buffer-mb budget bounds both. */
static void pass_dims(const struct infer *in, uint32_t l, uint32_t *win, uint32_t *wout)
{
	uint32_t unused, raw = gnn_schema_max_feat_dim(&in->mschema);

	if (l != INPUT_PASS) {
		tr_model_layer_dims(in->model, l, win, wout);
		return;
	}
	tr_model_layer_dims(in->model, 0, wout, &unused);
	*win = raw > *wout ? raw : *wout;
}

/* The input pass of a projecting model (in->encoded): layer 0's input
 * rows of nodes [v0, v0 + nb) of part into in->y, one product per node
 * (per edge, as the gather would make them, they would cost a degree's
 * times more), the raw rows made in in->h. */
struct encode {
	const struct infer *in;
	const struct gnn_part *part;
	int64_t v0;
	size_t raw_w, width;
	float *raw, *out;
};

static void encode_rows(void *arg, size_t lo, size_t hi)
{
	const struct encode *c = arg;

	for (size_t i = lo; i < hi; i++) {
		uint32_t t;
		const float *f = raw_input(c->in, c->part->node_start + c->v0 + (int64_t)i, c->raw_w, c->raw + i * c->raw_w,
					   &t);

		(void)tr_model_input_row(c->in->model, t, f, c->out + i * c->width);
	}
}

static int encode_batch(struct infer *in, const struct gnn_part *part, int64_t v0, size_t nb)
{
	uint32_t raw_w, width;
	struct encode c;
	int rc;

	pass_dims(in, INPUT_PASS, &raw_w, &width);
	if ((rc = tr_fbuf_reserve(&in->h, nb * raw_w)) != GNN_OK || (rc = tr_fbuf_reserve(&in->y, nb * width)) != GNN_OK)
		return rc;
	c = (struct encode){ in, part, v0, raw_w, width, in->h.p, in->y.p };
	tr_par_for(nb, 64, encode_rows, &c);
	return GNN_OK;
}

/* ---- outputs of the last layer ---- */

/* The arrays of one partition's predictions, written side by side. */
enum { OUT_PRED, OUT_TOPK_CLASS, OUT_TOPK_PROB, OUT_ORIG_ID, OUT_EMB, OUT_COUNT };
static const char *const out_names[OUT_COUNT] = { "pred", "topk-class", "topk-prob", "orig-id", "emb" };

struct part_out {
	struct gnn_arr_writer *w[OUT_COUNT];
	struct counts counts;
	int32_t *cls;     /* one batch's top-k classes, probabilities, predictions */
	float *prob;
	int32_t *pred;
};

/* Opens DIR/NAME.arr and, with --npy, its companion DIR/NAME.npy (the same
 * rows, for NumPy: the .arr stays, the graph stores serve it). */
static int open_output(const char *dir, const char *name, enum gnn_dtype dt, uint64_t cols,
		       struct gnn_arr_writer **out)
{
	char path[PATH_MAX + 160];
	int rc;

	snprintf(path, sizeof(path), "%s/%s.arr", dir, name);
	if ((rc = gnn_arr_writer_open(path, dt, cols, out)) != GNN_OK || !ic.npy)
		return rc;
	snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
	if ((rc = gnn_arr_writer_also_npy(*out, path)) != GNN_OK) {
		gnn_arr_writer_abort(*out);
		*out = NULL;
	}
	return rc;
}

/* Softmax of one row of logits, then its k most likely classes. */
static void top_k(const float *z, uint32_t C, uint32_t k, int32_t *cls, float *prob)
{
	float mx = z[0], sum = 0;

	for (uint32_t j = 1; j < C; j++)
		mx = z[j] > mx ? z[j] : mx;
	for (uint32_t j = 0; j < C; j++)
		sum += expf(z[j] - mx);
	for (uint32_t i = 0; i < k; i++) {
		int32_t best = -1;

		for (uint32_t j = 0; j < C; j++) {
			bool taken = false;

			for (uint32_t t = 0; t < i && !taken; t++)
				taken = cls[t] == (int32_t)j;
			if (!taken && (best < 0 || z[j] > z[best]))
				best = (int32_t)j;
		}
		cls[i] = best;
		prob[i] = expf(z[best] - mx) / sum;
	}
}

/* One batch of logits (in->y) into the writers, and the counts. */
static int emit_batch(struct infer *in, const struct gnn_part *part, int64_t v0, size_t nb, struct part_out *o)
{
	uint32_t C = in->meta.layout.num_classes, k = in->top_k;
	int rc;

	for (size_t i = 0; i < nb; i++) {
		int64_t v = v0 + (int64_t)i;
		int32_t y = part->labels[v];
		uint8_t s = part->split[v];

		top_k(in->y.p + i * C, C, k, o->cls + i * k, o->prob + i * k);
		o->pred[i] = o->cls[i * k];
		if (y >= 0) {
			o->counts.labelled[s]++;
			o->counts.correct[s] += o->pred[i] == y;
		}
	}
	if ((rc = gnn_arr_writer_append(o->w[OUT_PRED], o->pred, nb)) != GNN_OK ||
	    (rc = gnn_arr_writer_append(o->w[OUT_TOPK_CLASS], o->cls, nb)) != GNN_OK ||
	    (rc = gnn_arr_writer_append(o->w[OUT_TOPK_PROB], o->prob, nb)) != GNN_OK ||
	    (rc = gnn_arr_writer_append(o->w[OUT_ORIG_ID],
					(const int64_t *)in->node_map.data + part->node_start + v0, nb)) != GNN_OK)
		return rc;
	return GNN_OK;
}

/* With --embeddings: the last layer's input row of every node of part,
 * whatever its type (predictions are the label type's only). */
static int write_embeddings(struct infer *in, const struct gnn_part *part, size_t budget, struct gnn_arr_writer *w)
{
	uint32_t win, wout;
	int rc;

	tr_model_layer_dims(in->model, in->L - 1, &win, &wout);
	if ((rc = tr_fbuf_reserve(&in->h, budget * win)) != GNN_OK)
		return rc;
	for (int64_t v = 0; v < part->num_nodes; v += (int64_t)budget) {
		size_t nb = part->num_nodes - v < (int64_t)budget ? (size_t)(part->num_nodes - v) : budget;

		for (size_t i = 0; i < nb; i++)
			put_row(in, in->L - 1, part->node_start + v + (int64_t)i, win, in->h.p + i * win);
		if ((rc = gnn_arr_writer_append(w, in->h.p, nb)) != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

/* With --embeddings and learned embeddings: each embedded type's best rows
 * of part's nodes (input-emb-TYPE.arr, in global ID order) and their
 * original IDs (input-emb-TYPE-orig-id.arr), a bounded batch at a time. */
static int write_input_embeddings(struct infer *in, const struct gnn_part *part, const char *dir)
{
	const struct gnn_schema *s = in->meta.layout.schema;
	int rc = GNN_OK;

	for (uint32_t t = 0; t < s->num_types && rc == GNN_OK; t++) {
		uint32_t d = tr_emb_dim(in->emb, t);
		struct gnn_arr_writer *w = NULL, *wo = NULL;
		char name[160];

		if (d == 0)
			continue;
		snprintf(name, sizeof(name), "input-emb-%s", s->types[t].name);
		if ((rc = open_output(dir, name, GNN_DT_F32, d, &w)) != GNN_OK)
			break;
		snprintf(name, sizeof(name), "input-emb-%s-orig-id", s->types[t].name);
		if ((rc = open_output(dir, name, GNN_DT_I64, 1, &wo)) != GNN_OK) {
			gnn_arr_writer_abort(w);
			break;
		}
		for (int64_t v = part->type_start[t]; v < part->type_start[t + 1] && rc == GNN_OK; v++)
			if ((rc = gnn_arr_writer_append(w, tr_emb_best_row(in->emb, t, v), 1)) == GNN_OK)
				rc = gnn_arr_writer_append(wo, (const int64_t *)in->node_map.data + v, 1);
		if (rc != GNN_OK) {
			gnn_arr_writer_abort(w);
			gnn_arr_writer_abort(wo);
			break;
		}
		rc = gnn_arr_writer_finish(w, NULL);   /* frees w, also on error */
		if (rc == GNN_OK)
			rc = gnn_arr_writer_finish(wo, NULL);
		else
			gnn_arr_writer_abort(wo);
	}
	return rc;
}

static int open_writers(struct infer *in, const char *dir, size_t max_batch, struct part_out *o)
{
	static const enum gnn_dtype dt[OUT_COUNT] = { GNN_DT_I32, GNN_DT_I32, GNN_DT_F32, GNN_DT_I64, GNN_DT_F32 };
	uint32_t win, wout;
	uint64_t cols[OUT_COUNT] = { 1, in->top_k, in->top_k, 1, 0 };
	int rc;

	tr_model_layer_dims(in->model, in->L - 1, &win, &wout);
	cols[OUT_EMB] = win;
	for (int i = 0; i < OUT_COUNT; i++) {
		if (i == OUT_EMB && !ic.embeddings)
			continue;
		if ((rc = open_output(dir, out_names[i], dt[i], cols[i], &o->w[i])) != GNN_OK)
			return rc;
	}
	o->cls = malloc(max_batch * in->top_k * sizeof(int32_t));
	o->prob = malloc(max_batch * in->top_k * sizeof(float));
	o->pred = malloc(max_batch * sizeof(int32_t));
	return o->cls && o->prob && o->pred ? GNN_OK : GNN_ENOMEM;
}

static void part_out_free(struct part_out *o)
{
	for (int i = 0; i < OUT_COUNT; i++)
		gnn_arr_writer_abort(o->w[i]);
	free(o->cls);
	free(o->prob);
	free(o->pred);
}

/* ---- layers ---- */

static bool own(uint32_t p)
{
	return p % (uint32_t)ic.workers == (uint32_t)ic.worker;
}

static void layer_path(const struct infer *in, uint32_t l, uint32_t p, char *buf, size_t len)
{
	if (l == INPUT_PASS)
		snprintf(buf, len, "%s/input-part-%" PRIu32 ".arr", in->work, p);
	else
		snprintf(buf, len, "%s/layer-%" PRIu32 "-part-%" PRIu32 ".arr", in->work, l, p);
}

/* Pass l's name in logs. */
static const char *pass_name(uint32_t l, char *buf, size_t len)
{
	if (l == INPUT_PASS)
		return "input";
	snprintf(buf, len, "%" PRIu32, l);
	return buf;
}

/* The nodes from v of pass l's next batch: as many as budget rows hold,
 * a hidden layer's neighbours counted (batch_end). */
static size_t pass_batch(const struct gnn_part *part, uint32_t l, int64_t v, size_t budget)
{
	if (l != INPUT_PASS)
		return batch_end(part, v, part->num_nodes, budget);
	return part->num_nodes - v < (int64_t)budget ? (size_t)(part->num_nodes - v) : budget;
}

/* Rows of width floats that fit --buffer-mb. */
static size_t budget_rows(uint32_t width)
{
	size_t r = (size_t)ic.buffer_mb * 1048576u / ((size_t)width * sizeof(float));

	return r < 1 ? 1 : r > INT32_MAX / 2 ? INT32_MAX / 2 : r;
}

/* Whether path holds an array of rows x cols floats (left by an earlier
 * attempt at the same parameters: the work folder is theirs alone). */
static bool have_array(const char *path, uint64_t rows, uint64_t cols)
{
	struct gnn_arr a;
	bool ok;

	if (access(path, F_OK) != 0 || gnn_arr_open(path, GNN_DT_F32, 0, &a) != GNN_OK)
		return false;
	ok = a.info.rows == rows && a.info.cols == cols;
	gnn_arr_close(&a);
	return ok;
}

/* Pass l (a hidden layer, or the input pass) of own partition p into its
 * work file. */
static int hidden_layer_part(struct infer *in, uint32_t l, uint32_t p)
{
	const struct gnn_part *part = &in->parts[p];
	struct gnn_arr_writer *w = NULL;
	char path[PATH_MAX + 64], name[16];
	uint32_t win, wout;
	double t0 = gnn_now();
	size_t budget, nb;
	int rc;

	pass_dims(in, l, &win, &wout);
	layer_path(in, l, p, path, sizeof(path));
	if (have_array(path, (uint64_t)part->num_nodes, wout)) {
		GNN_INFO("layer_reused", "layer=%s part=%" PRIu32 " path=%s", pass_name(l, name, sizeof(name)), p, path);
		return GNN_OK;
	}
	budget = budget_rows(win);
	if ((rc = gnn_arr_writer_open(path, GNN_DT_F32, wout, &w)) != GNN_OK)
		return rc;
	for (int64_t v = 0; v < part->num_nodes; v += (int64_t)nb) {
		nb = pass_batch(part, l, v, budget);
		if (gnn_stop_requested())
			rc = GNN_ECLOSED;
		if (rc == GNN_OK)
			rc = l == INPUT_PASS ? encode_batch(in, part, v, nb) : run_batch(in, part, l, v, nb);
		if (rc != GNN_OK ||
		    (rc = gnn_arr_writer_append(w, in->y.p, nb)) != GNN_OK) {
			gnn_arr_writer_abort(w);
			return rc;
		}
	}
	if ((rc = gnn_arr_writer_finish(w, NULL)) != GNN_OK)
		return rc;
	GNN_INFO("layer_done", "layer=%s part=%" PRIu32 " nodes=%" PRId64 " edges=%" PRId64 " width=%" PRIu32
		 " seconds=%.2f", pass_name(l, name, sizeof(name)), p, part->num_nodes, part->num_edges, wout,
		 gnn_now() - t0);
	return GNN_OK;
}

/* Partition q is not there yet: added to the "part-1,part-3" list. */
static void note_missing(uint32_t q, char *missing, size_t len, size_t *used, bool *ready)
{
	*ready = false;
	if (*used + 16 < len)
		*used += (size_t)snprintf(missing + *used, len - *used, "%spart-%" PRIu32, *used ? "," : "", q);
}

static int probe_layer(struct infer *in, void *arg, char *missing, size_t len, bool *ready)
{
	uint32_t l = *(const uint32_t *)arg;
	char path[PATH_MAX + 64];
	size_t used = 0;

	*ready = true;
	for (uint32_t q = 0; q < in->P; q++) {
		layer_path(in, l, q, path, sizeof(path));
		if (access(path, F_OK) != 0)
			note_missing(q, missing, len, &used, ready);
	}
	return GNN_OK;
}

/* Layer l's outputs of every partition, mapped as the next layer's input. */
static int open_layer(struct infer *in, uint32_t l)
{
	char path[PATH_MAX + 64];
	int rc;

	for (uint32_t q = 0; q < in->P; q++) {
		gnn_arr_close(&in->prev[q]);
		layer_path(in, l, q, path, sizeof(path));
		if ((rc = gnn_arr_open(path, GNN_DT_F32, 0, &in->prev[q])) != GNN_OK)
			return rc;
		if (in->prev[q].info.rows != (uint64_t)in->parts[q].num_nodes ||
		    in->prev[q].info.cols != (uint64_t)in->c.hidden) {
			GNN_ERROR("bad_layer_file", "path=%s rows=%" PRIu64 " cols=%" PRIu64 " expected_rows=%" PRId64
				  " expected_cols=%" PRId64, path, in->prev[q].info.rows, in->prev[q].info.cols,
				  in->parts[q].num_nodes, (int64_t)in->c.hidden);
			return GNN_EFORMAT;
		}
	}
	return GNN_OK;
}

/* Pass l (a hidden layer, or the input pass) over own partitions, then
 * every partition's outputs, mapped as the next layer's input. */
static int hidden_pass(struct infer *in, uint32_t l)
{
	int rc;

	for (uint32_t p = 0; p < in->P; p++)
		if (own(p) && (rc = hidden_layer_part(in, l, p)) != GNN_OK)
			return rc;
	if ((rc = wait_for(in, "layer", probe_layer, &l)) != GNN_OK)
		return rc;
	return open_layer(in, l);
}

/* ---- the last layer: one partition's predictions ---- */

static json_t *counts_json(const struct counts *c)
{
	json_t *j = json_object();

	for (int s = 1; s < 4; s++)
		json_object_set_new(j, split_names[s], json_pack("{s:I, s:I}", "labelled", (json_int_t)c->labelled[s],
								 "correct", (json_int_t)c->correct[s]));
	return j;
}

/* The identity every output file of this run carries. */
static json_t *identity_json(const struct infer *in)
{
	char crc[9], mh[17], gid[17];

	snprintf(crc, sizeof(crc), "%08" PRIx32, in->res.params_crc);
	snprintf(mh, sizeof(mh), "%016" PRIx64, in->res.model_hash);
	snprintf(gid, sizeof(gid), "%016" PRIx64, in->meta.layout.graph_id);
	/* npy: whether every .arr output has its .npy (a run with the other
	 * --npy is not this one: already_done compares these keys) */
	json_t *j = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:b, s:b, s:s}", "format", SUMMARY_FORMAT, "params_crc",
			      crc, "model_hash", mh, "graph_id", gid, "model", in->c.model, "top_k", (int)in->top_k,
			      "embeddings", ic.embeddings, "npy", ic.npy, "label_type",
			      in->meta.layout.schema->types[in->meta.layout.schema->label_type].name);

	/* the model, as result.json records it: what serving reads */
	if (j != NULL && json_object_set_new(j, "config", gnn_mcfg_to_json(&in->c.mcfg, GNN_MCFG_MODEL)) != 0) {
		json_decref(j);
		return NULL;
	}
	if (j != NULL && in->c.link) {   /* what serving reads (docs/inference.md, "Link prediction") */
		json_object_set_new(j, "task", json_string("link"));
		json_object_set_new(j, "decoder", json_pack("{s:s, s:i, s:i}", "kind", tr_decoder_name(in->dec.kind),
							     "dim", (int)in->dec.dim, "hidden", (int)in->dec.hidden));
	}
	return j;
}

/* OUT/part-p replaced by the finished temporary folder tmp. */
static int swap_in(const char *tmp, uint32_t p)
{
	char final[PATH_MAX], old[PATH_MAX + 32];

	snprintf(final, sizeof(final), "%s/part-%" PRIu32, ic.out, p);
	snprintf(old, sizeof(old), "%s/.old-part-%" PRIu32 "-%d", ic.out, p, (int)getpid());
	if (access(final, F_OK) == 0 && rename(final, old) != 0) {
		GNN_ERROR("write_failed", "path=%s error=\"%s\"", final, strerror(errno));
		return GNN_EIO;
	}
	if (rename(tmp, final) != 0) {
		GNN_ERROR("write_failed", "path=%s error=\"%s\"", final, strerror(errno));
		rename(old, final);
		return GNN_EIO;
	}
	gnn_rm_rf(old);
	return gnn_fsync_dir(ic.out);
}

static int finish_part(struct infer *in, const char *tmp, uint32_t p, struct part_out *o)
{
	uint32_t lt = in->meta.layout.schema->label_type;
	char path[PATH_MAX + 32];
	json_t *st = identity_json(in);
	int rc = GNN_OK;

	for (int i = 0; i < OUT_COUNT; i++) {
		if (o->w[i] != NULL && rc == GNN_OK)
			rc = gnn_arr_writer_finish(o->w[i], NULL);
		else
			gnn_arr_writer_abort(o->w[i]);
		o->w[i] = NULL;
	}
	json_object_set_new(st, "part", json_integer(p));
	json_object_set_new(st, "nodes", json_integer(in->parts[p].num_nodes));
	/* the rows of pred.arr: the label type's nodes of the partition */
	json_object_set_new(st, "predicted_start", json_integer(in->parts[p].type_start[lt]));
	json_object_set_new(st, "predicted", json_integer(in->parts[p].type_start[lt + 1] - in->parts[p].type_start[lt]));
	json_object_set_new(st, "splits", counts_json(&o->counts));
	snprintf(path, sizeof(path), "%s/stats.json", tmp);
	if (rc == GNN_OK)
		rc = gnn_json_save_atomic(path, st);
	json_decref(st);
	return rc != GNN_OK ? rc : swap_in(tmp, p);
}

/* A link model's last layer: every node's final embedding, OUT/part-p/
 * emb.arr (f32, [nodes of p x d], row i = global node node_start + i),
 * batch by batch, and stats.json (the counts stay zero). */
static int link_part(struct infer *in, uint32_t p)
{
	const struct gnn_part *part = &in->parts[p];
	struct part_out o = { 0 };
	char tmp[PATH_MAX];
	uint32_t win, wout;
	double t0 = gnn_now();
	size_t nb;
	int rc;

	tr_model_layer_dims(in->model, in->L - 1, &win, &wout);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-part-%" PRIu32 "-%d", ic.out, p, (int)getpid());
	if ((rc = gnn_mkdir_p(tmp)) != GNN_OK || (rc = open_output(tmp, "emb", GNN_DT_F32, wout, &o.w[OUT_EMB])) != GNN_OK)
		goto out;
	for (int64_t v = 0; v < part->num_nodes; v += (int64_t)nb) {
		nb = batch_end(part, v, part->num_nodes, budget_rows(win));
		if (gnn_stop_requested())
			rc = GNN_ECLOSED;
		if (rc != GNN_OK || (rc = run_batch(in, part, in->L - 1, v, nb)) != GNN_OK ||
		    (rc = gnn_arr_writer_append(o.w[OUT_EMB], in->y.p, nb)) != GNN_OK)
			goto out;
	}
	if ((rc = finish_part(in, tmp, p, &o)) != GNN_OK)
		goto out;
	GNN_INFO("part_done", "part=%" PRIu32 " nodes=%" PRId64 " task=link emb_dim=%" PRIu32 " seconds=%.2f", p,
		 part->num_nodes, wout, gnn_now() - t0);
out:
	part_out_free(&o);
	if (rc != GNN_OK)
		gnn_rm_rf(tmp);
	return rc;
}

/* DIR/node-id.txt: the user's ID of each prediction row, when the
 * partitions came from a graph description (DATA/node-ids/TYPE.txt, line i
 * the type's node i). A partition's rows of a type follow the input's
 * order (docs/formats.md, "Node IDs"), so one forward pass of that file
 * finds them; no file of IDs, nothing to do. */
static int write_user_ids(const struct infer *in, const struct gnn_part *part, int64_t first, int64_t end,
			  const char *dir)
{
	const char *type = in->meta.layout.schema->types[in->meta.layout.schema->label_type].name;
	const int64_t *orig = (const int64_t *)in->node_map.data + part->node_start;
	char src[PATH_MAX + 96], dst[PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	int64_t at = -1;
	FILE *f, *o = NULL;
	int rc = GNN_OK;

	snprintf(src, sizeof(src), "%s/node-ids/%s.txt", ic.data, type);
	if ((f = fopen(src, "r")) == NULL) {
		if (errno == ENOENT)
			return GNN_OK;
		GNN_ERROR("open_failed", "file=%s error=\"%s\"", src, strerror(errno));
		return GNN_EIO;
	}
	snprintf(dst, sizeof(dst), "%s/node-id.txt", dir);
	if ((o = fopen(dst, "w")) == NULL) {
		GNN_ERROR("output_unwritable", "file=%s error=\"%s\"", dst, strerror(errno));
		rc = GNN_EIO;
		goto out;
	}
	for (int64_t v = first; v < end && rc == GNN_OK; v++) {
		ssize_t len = 0;

		if (orig[v] <= at) {
			GNN_ERROR("bad_partition", "file=%s reason=\"the partition's %s nodes are not in the input's order\"", src, type);
			rc = GNN_EFORMAT;
			break;
		}
		while (at < orig[v] && (len = getline(&line, &cap, f)) > 0)
			at++;
		if (at < orig[v]) {
			GNN_ERROR("bad_partition", "file=%s lines=%" PRId64 " reason=\"fewer IDs than %s nodes\"", src, at + 1, type);
			rc = GNN_EFORMAT;
		} else if (fputs(line, o) == EOF) {
			rc = GNN_EIO;
		}
	}
out:
	free(line);
	fclose(f);
	if (o != NULL && (ferror(o) | fclose(o)) && rc == GNN_OK) {
		GNN_ERROR("output_unwritable", "file=%s error=\"write failed\"", dst);
		rc = GNN_EIO;
	}
	return rc;
}

/* Predictions of partition p's label-type nodes (all of them with one
 * type), then with --embeddings every node's last hidden layer. */
static int last_layer_part(struct infer *in, uint32_t p)
{
	const struct gnn_part *part = &in->parts[p];
	uint32_t lt = in->meta.layout.schema->label_type;
	int64_t first = part->type_start[lt] - part->node_start, end = part->type_start[lt + 1] - part->node_start;
	struct part_out o = { 0 };
	char tmp[PATH_MAX];
	uint32_t win, wout;
	double t0 = gnn_now();
	size_t budget, nb;
	int rc;

	tr_model_layer_dims(in->model, in->L - 1, &win, &wout);
	budget = budget_rows(win);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-part-%" PRIu32 "-%d", ic.out, p, (int)getpid());
	if ((rc = gnn_mkdir_p(tmp)) != GNN_OK || (rc = open_writers(in, tmp, budget, &o)) != GNN_OK)
		goto out;
	for (int64_t v = first; v < end; v += (int64_t)nb) {
		nb = batch_end(part, v, end, budget);
		if (gnn_stop_requested())
			rc = GNN_ECLOSED;
		if (rc != GNN_OK || (rc = run_batch(in, part, in->L - 1, v, nb)) != GNN_OK ||
		    (rc = emit_batch(in, part, v, nb, &o)) != GNN_OK)
			goto out;
	}
	if ((rc = write_user_ids(in, part, first, end, tmp)) != GNN_OK ||
	    (o.w[OUT_EMB] != NULL && (rc = write_embeddings(in, part, budget, o.w[OUT_EMB])) != GNN_OK) ||
	    (o.w[OUT_EMB] != NULL && in->emb != NULL && (rc = write_input_embeddings(in, part, tmp)) != GNN_OK) ||
	    (rc = finish_part(in, tmp, p, &o)) != GNN_OK)
		goto out;
	GNN_INFO("part_done", "part=%" PRIu32 " nodes=%" PRId64 " predicted=%" PRId64 " test_acc=%.4f seconds=%.2f", p,
		 part->num_nodes, end - first,
		 o.counts.labelled[3] ? (double)o.counts.correct[3] / (double)o.counts.labelled[3] : 0.0, gnn_now() - t0);
out:
	part_out_free(&o);
	if (rc != GNN_OK)
		gnn_rm_rf(tmp);
	return rc;
}

/* ---- the summary (worker 0) ---- */

/* OUT/part-q/stats.json of this run, its counts added to *c. */
static int read_part_stats(const struct infer *in, uint32_t q, struct counts *c, bool *found)
{
	char path[PATH_MAX + 32];
	json_t *st = NULL, *splits;
	const char *crc;
	char want[9];
	int rc;

	*found = false;
	snprintf(path, sizeof(path), "%s/part-%" PRIu32 "/stats.json", ic.out, q);
	if (access(path, F_OK) != 0)
		return GNN_OK;
	if ((rc = gnn_json_load_format(path, SUMMARY_FORMAT, SUMMARY_FORMAT, &st)) != GNN_OK)
		return rc;
	snprintf(want, sizeof(want), "%08" PRIx32, in->res.params_crc);
	crc = json_string_value(json_object_get(st, "params_crc"));
	splits = json_object_get(st, "splits");
	if (crc != NULL && strcmp(crc, want) == 0 && json_is_object(splits)) {
		*found = true;
		for (int s = 1; s < 4; s++) {
			json_t *o = json_object_get(splits, split_names[s]);

			c->labelled[s] += (uint64_t)json_integer_value(json_object_get(o, "labelled"));
			c->correct[s] += (uint64_t)json_integer_value(json_object_get(o, "correct"));
		}
	}
	json_decref(st);
	return GNN_OK;
}

static int probe_parts(struct infer *in, void *arg, char *missing, size_t len, bool *ready)
{
	struct counts *c = arg;
	size_t used = 0;
	int rc;

	*ready = true;
	memset(c, 0, sizeof(*c));
	for (uint32_t q = 0; q < in->P; q++) {
		bool found;

		if ((rc = read_part_stats(in, q, c, &found)) != GNN_OK)
			return rc;
		if (!found)
			note_missing(q, missing, len, &used, ready);
	}
	return GNN_OK;
}

static double acc(const struct counts *c, int s)
{
	return c->labelled[s] ? (double)c->correct[s] / (double)c->labelled[s] : 0.0;
}

/* ---- link prediction's metrics (worker 0) ---- */

/* Every partition's emb.arr mapped, and the split, for scoring pairs. */
struct link_eval {
	struct infer *in;
	struct gnn_arr *emb;     /* [P] */
	struct gnn_edge_split es;
};

static const float *emb_row(const struct link_eval *le, int64_t gid)
{
	const struct gnn_layout *g = &le->in->meta.layout;
	int32_t q = gnn_layout_owner(g, gid);

	return (const float *)le->emb[q].data + (size_t)(gid - g->offsets[q]) * le->in->dec.dim;
}

static float pair_score(const struct link_eval *le, int64_t u, int64_t v)
{
	return tr_decoder_score(&le->in->dec, le->in->dec_params, emb_row(le, u), emb_row(le, v));
}

/* One held-out set's metrics as JSON: AUC and AP of its positives against
 * their one negative each (GAE), MRR and Hits@K of each positive (u, v)
 * against its K negative destinations (u, b) (OGB's ranking). Memory: two
 * scores per pair and K for the pair being ranked. */
static int link_set_json(struct link_eval *le, int set, json_t **out)
{
	const struct gnn_edge_split *es = &le->es;
	size_t n = (size_t)es->num[set], K = es->eval_negatives;
	float *pos = malloc((n ? n : 1) * sizeof(float)), *neg = malloc((n ? n : 1) * sizeof(float)),
	      *nk = malloc((K ? K : 1) * sizeof(float));
	struct tr_rank_sums rs = { 0 };
	double auc = 0, ap = 0;
	int rc = GNN_ENOMEM;

	if (pos == NULL || neg == NULL || nk == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const int64_t *pp = es->pos[set] + 2 * i, *np = es->neg[set] + 2 * i;

		pos[i] = pair_score(le, pp[0], pp[1]);
		neg[i] = pair_score(le, np[0], np[1]);
		for (size_t j = 0; j < K; j++)
			nk[j] = pair_score(le, pp[0], es->neg_dst[set][i * K + j]);
		tr_rank_add(&rs, pos[i], nk, K);
	}
	if (n > 0 && (rc = tr_auc_ap(pos, n, neg, n, &auc, &ap)) != GNN_OK)
		goto out;
	*out = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}", "auc", auc, "ap", ap, "mrr",
			 n ? rs.mrr / rs.n : 0.0, "hits@1", n ? rs.hits1 / rs.n : 0.0, "hits@3", n ? rs.hits3 / rs.n : 0.0,
			 "hits@10", n ? rs.hits10 / rs.n : 0.0, "pairs", (json_int_t)n, "negatives_per_pair", (json_int_t)K);
	rc = *out != NULL ? GNN_OK : GNN_ENOMEM;
out:
	free(pos);
	free(neg);
	free(nk);
	return rc;
}

/* OUT/decoder.arr: the mlp decoder's parameters, f32 [num_params x 1] in
 * decoder.h's layout (W1 [h x d] row-major, b1 [h], w2 [h], b2). */
static int write_decoder(const struct infer *in)
{
	struct gnn_arr_writer *w;
	char path[PATH_MAX + 16];
	int rc;

	if (in->dec.kind != TR_DEC_MLP)
		return GNN_OK;
	snprintf(path, sizeof(path), "%s/decoder.arr", ic.out);
	if ((rc = gnn_arr_writer_open(path, GNN_DT_F32, 1, &w)) != GNN_OK)
		return rc;
	if ((rc = gnn_arr_writer_append(w, in->dec_params, tr_decoder_num_params(&in->dec))) != GNN_OK) {
		gnn_arr_writer_abort(w);
		return rc;
	}
	return gnn_arr_writer_finish(w, NULL);
}

/* summary.json's "link" object, and decoder.arr. */
static int link_summary(struct infer *in, json_t *sum)
{
	struct link_eval le = { .in = in };
	json_t *sets[GNN_ES_SETS] = { NULL, NULL };
	char path[PATH_MAX + 32];
	int rc;

	if ((le.emb = calloc(in->P, sizeof(*le.emb))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (uint32_t q = 0; q < in->P; q++) {
		snprintf(path, sizeof(path), "%s/part-%" PRIu32 "/emb.arr", ic.out, q);
		if ((rc = gnn_arr_open(path, GNN_DT_F32, 0, &le.emb[q])) != GNN_OK)
			goto out;
		if (le.emb[q].info.rows != (uint64_t)in->parts[q].num_nodes || le.emb[q].info.cols != in->dec.dim) {
			GNN_ERROR("bad_layer_file", "path=%s rows=%" PRIu64 " cols=%" PRIu64, path, le.emb[q].info.rows,
				  le.emb[q].info.cols);
			rc = GNN_EFORMAT;
			goto out;
		}
	}
	if ((rc = gnn_edge_split_open(ic.data, &in->meta, 0, &le.es)) != GNN_OK) {
		GNN_ERROR("bad_config", "data=%s reason=\"--task link needs the edge split of the partition output\"",
			  ic.data);
		goto out;
	}
	if ((rc = link_set_json(&le, GNN_ES_VALID, &sets[0])) != GNN_OK ||
	    (rc = link_set_json(&le, GNN_ES_TEST, &sets[1])) != GNN_OK || (rc = write_decoder(in)) != GNN_OK)
		goto out;
	GNN_INFO("link_metrics", "test_auc=%.4f test_ap=%.4f test_mrr=%.4f test_hits@10=%.4f valid_auc=%.4f "
		 "valid_ap=%.4f pairs=%" PRId64 " negatives_per_pair=%" PRIu32,
		 json_real_value(json_object_get(sets[1], "auc")), json_real_value(json_object_get(sets[1], "ap")),
		 json_real_value(json_object_get(sets[1], "mrr")), json_real_value(json_object_get(sets[1], "hits@10")),
		 json_real_value(json_object_get(sets[0], "auc")), json_real_value(json_object_get(sets[0], "ap")),
		 le.es.num[GNN_ES_TEST], le.es.eval_negatives);
	json_object_set_new(sum, "link", json_pack("{s:o, s:o, s:s}", "valid", sets[0], "test", sets[1], "relation",
						     in->meta.layout.schema->rels[le.es.rel].name));
	sets[0] = sets[1] = NULL;
out:
	json_decref(sets[0]);
	json_decref(sets[1]);
	for (uint32_t q = 0; le.emb != NULL && q < in->P; q++)
		gnn_arr_close(&le.emb[q]);
	free(le.emb);
	gnn_edge_split_close(&le.es);
	return rc;
}

static int write_summary(struct infer *in)
{
	struct counts c;
	char path[PATH_MAX + 16];
	json_t *sum;
	int rc;

	if ((rc = wait_for(in, "predictions", probe_parts, &c)) != GNN_OK)
		return rc;
	sum = identity_json(in);
	json_object_set_new(sum, "nodes", json_integer(in->meta.layout.num_nodes));
	/* the label type's nodes, every node of a homogeneous graph */
	json_object_set_new(sum, "predicted",
			    json_integer(in->meta.layout.schema->types[in->meta.layout.schema->label_type].num_nodes));
	json_object_set_new(sum, "parts", json_integer(in->P));
	json_object_set_new(sum, "splits", counts_json(&c));
	json_object_set_new(sum, "accuracy", json_pack("{s:f, s:f, s:f}", "train", acc(&c, 1), "valid", acc(&c, 2),
							"test", acc(&c, 3)));
	json_object_set_new(sum, "trainer", json_pack("{s:f, s:I, s:f, s:i, s:i}", "sampled_test_acc",
						       in->res.test_acc, "sampled_test_nodes", (json_int_t)in->res.test_nodes,
						       "best_val_acc", in->res.best_val_acc, "best_epoch",
						       (int)in->res.best_epoch, "epochs", (int)in->res.epochs));
	json_object_set_new(sum, "workers", json_integer(ic.workers));
	if (in->c.link && (rc = link_summary(in, sum)) != GNN_OK) {
		json_decref(sum);
		return rc;
	}
	json_object_set_new(sum, "seconds", json_real(gnn_now() - in->t0));
	snprintf(path, sizeof(path), "%s/summary.json", ic.out);
	rc = gnn_json_save_atomic(path, sum);
	json_decref(sum);
	if (rc != GNN_OK)
		return rc;
	gnn_rm_rf(in->work);
	if (in->c.link) {   /* no classes: its measures are link_metrics' line */
		GNN_INFO("infer_summary", "task=link nodes=%" PRId64 " parts=%" PRIu32 " params_crc=%08" PRIx32
			 " out=%s seconds=%.1f", in->meta.layout.num_nodes, in->P, in->res.params_crc, ic.out,
			 gnn_now() - in->t0);
		return GNN_OK;
	}
	GNN_INFO("infer_summary", "test_acc=%.4f valid_acc=%.4f train_acc=%.4f sampled_test_acc=%.4f nodes=%" PRId64
		 " parts=%" PRIu32 " params_crc=%08" PRIx32 " out=%s seconds=%.1f", acc(&c, 3), acc(&c, 2), acc(&c, 1),
		 in->res.test_acc, in->meta.layout.num_nodes, in->P, in->res.params_crc, ic.out, gnn_now() - in->t0);
	return GNN_OK;
}

/* Whether OUT/summary.json is this run's already (a Job run again). */
static bool already_done(const struct infer *in)
{
	char path[PATH_MAX + 16];
	json_t *sum = NULL, *want = identity_json(in);
	bool same = false;

	snprintf(path, sizeof(path), "%s/summary.json", ic.out);
	if (access(path, F_OK) == 0 && gnn_json_load_format(path, SUMMARY_FORMAT, SUMMARY_FORMAT, &sum) == GNN_OK) {
		const char *key;
		json_t *v;

		same = true;
		json_object_foreach(want, key, v)
			same = same && json_equal(v, json_object_get(sum, key));
	}
	json_decref(sum);
	json_decref(want);
	return same;
}

/* ---- the whole run ---- */

static int infer_run(struct infer *in)
{
	int rc;

	if ((rc = wait_for(in, "result.json", probe_result, NULL)) != GNN_OK || (rc = open_graph(in)) != GNN_OK ||
	    (rc = resolve_model(in)) != GNN_OK || (rc = load_model(in)) != GNN_OK)
		return rc;
	in->L = in->c.layers;
	in->top_k = (uint32_t)ic.top_k < in->meta.layout.num_classes ? (uint32_t)ic.top_k : in->meta.layout.num_classes;
	if (already_done(in)) {
		GNN_INFO("already_inferred", "out=%s params_crc=%08" PRIx32 " reason=\"summary.json is this run's\"", ic.out,
			 in->res.params_crc);
		return GNN_OK;
	}
	snprintf(in->work, sizeof(in->work), "%s/.work-%08" PRIx32, ic.out, in->res.params_crc);
	if ((rc = gnn_mkdir_p(in->work)) != GNN_OK)
		return rc;
	in->encoded = tr_model_input_projects(in->model);
	if (in->encoded && (rc = hidden_pass(in, INPUT_PASS)) != GNN_OK)
		return rc;
	for (uint32_t l = 0; l + 1 < in->L; l++)
		if ((rc = hidden_pass(in, l)) != GNN_OK)
			return rc;
	for (uint32_t p = 0; p < in->P; p++)
		if (own(p) && (rc = in->c.link ? link_part(in, p) : last_layer_part(in, p)) != GNN_OK)
			return rc;
	return ic.worker == 0 ? write_summary(in) : GNN_OK;
}

static void infer_free(struct infer *in)
{
	for (uint32_t p = 0; in->parts != NULL && p < in->P; p++) {
		gnn_part_close(&in->parts[p]);
		gnn_arr_close(&in->prev[p]);
	}
	free(in->parts);
	free(in->prev);
	gnn_arr_close(&in->node_map);
	gnn_meta_free(&in->meta);
	tr_model_free(in->model);
	free(in->dec_params);
	tr_emb_close(in->emb);
	free(in->h.p);
	free(in->y.p);
	free(in->indptr.p);
	free(in->indices.p);
}

int tr_infer_main(int argc, char **argv)
{
	static struct infer in;
	static char out[PATH_MAX];
	int rc = gnn_mcfg_option_table(own_options, &ic.given, GNN_MCFG_MODEL, false,
				       "not needed (result.json records the run's configuration): when given, it must "
				       "be the run's: ", infer_options, sizeof(infer_options) / sizeof(infer_options[0]));

	if (rc == GNN_OK)
		rc = gnn_opt_parse("gnn-trainer infer",
			       "Predict every node of the graph with a finished run's best parameters: layer-wise "
			       "full-neighbourhood inference (docs/inference.md).", infer_options, argc, argv);

	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK || check_options() != GNN_OK)
		return 2;
	if (ic.out == NULL) {
		snprintf(out, sizeof(out), "%s/predictions", ic.data);
		ic.out = out;
	}
	gnn_opt_log(infer_options);
	gnn_signals_install();
	gnn_stop_watchdog(GNN_STOP_GRACE_S);
	openblas_set_num_threads(ic.threads > 0 ? (int)ic.threads : (int)gnn_cpu_count());
	in.t0 = gnn_now();
	GNN_INFO("infer_start", "worker=%" PRId64 " workers=%" PRId64 " data=%s checkpoint_dir=%s out=%s", ic.worker,
		 ic.workers, ic.data, ic.ckpt, ic.out);
	rc = infer_run(&in);
	infer_free(&in);
	if (rc == GNN_OK) {
		GNN_INFO("infer_done", "worker=%" PRId64 " seconds=%.1f peak_rss_mb=%.1f", ic.worker, gnn_now() - in.t0,
			 (double)gnn_peak_rss_bytes() / 1048576.0);
		return 0;
	}
	if (rc == GNN_ECLOSED) {
		/* not 0: a Job whose pod was stopped has not succeeded */
		GNN_WARN("stopping", "reason=signal exit=1 note=\"a new run reuses the layers already written\"");
		return 1;
	}
	GNN_ERROR("infer_failed", "code=%s reason=\"%s\" note=\"nothing half-written: the outputs are complete or "
		  "absent\"", gnn_errname(rc), gnn_strerror(rc));
	return rc == GNN_EINVAL ? 2 : 1;
}
