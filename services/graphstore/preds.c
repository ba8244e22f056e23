/* preds.c - see preds.h. */
#include "preds.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arr.h"
#include "err.h"
#include "json.h"
#include "linkpred.h"
#include "modelcfg.h"
#include "log.h"
#include "proto.h"

enum { A_PRED, A_CLASS, A_PROB, A_ORIG, A_COUNT };
static const char *const files[A_COUNT] = { "pred", "topk-class", "topk-prob", "orig-id" };
static const enum gnn_dtype dtypes[A_COUNT] = { GNN_DT_I32, GNN_DT_I32, GNN_DT_F32, GNN_DT_I64 };
/* A link output's arrays: part-<p>/emb.arr and decoder.arr (mlp only). */
enum { L_EMB, L_DEC, L_COUNT };

struct gs_preds {
	const char *dir;
	int32_t part;
	int64_t node_start, num_nodes;  /* the predictions' rows: the label type's nodes */
	int64_t part_nodes;             /* a link output's rows: every node of the partition */
	pthread_rwlock_t lock;
	/* what is loaded, under lock */
	bool loaded;
	struct stat seen;            /* summary.json when it was loaded */
	uint32_t params_crc, k;
	struct gnn_arr arr[A_COUNT];
	/* a link-prediction model's output ("task": "link"): no class predictions,
	 * every node's final embedding and the decoder instead */
	bool link;
	struct gnn_linkdec dec;      /* params point into link_arr[L_DEC] */
	struct gnn_arr link_arr[L_COUNT];
};

int gs_preds_new(const char *dir, int32_t part, int64_t node_start, int64_t num_nodes, int64_t part_nodes,
		 struct gs_preds **out)
{
	struct gs_preds *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return GNN_ENOMEM;
	*p = (struct gs_preds){ .dir = dir, .part = part, .node_start = node_start, .num_nodes = num_nodes,
				.part_nodes = part_nodes };
	if (pthread_rwlock_init(&p->lock, NULL) != 0) {
		free(p);
		return GNN_ENOMEM;
	}
	*out = p;
	return GNN_OK;
}

static void unload(struct gs_preds *p)
{
	for (int i = 0; i < A_COUNT; i++)
		gnn_arr_close(&p->arr[i]);
	for (int i = 0; i < L_COUNT; i++)
		gnn_arr_close(&p->link_arr[i]);
	memset(p->arr, 0, sizeof(p->arr));
	memset(p->link_arr, 0, sizeof(p->link_arr));
	p->loaded = false;
	p->link = false;
}

void gs_preds_free(struct gs_preds *p)
{
	if (p == NULL)
		return;
	unload(p);
	pthread_rwlock_destroy(&p->lock);
	free(p);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The params_crc ("%08x") of a summary.json or stats.json, its top_k
 * (unless it is a link output's: none needed) and whether its task is
 * "link" ("node" or none: node classification). *j is the caller's. */
static int read_identity(const char *path, json_t **j, uint32_t *crc, uint32_t *k, bool *link, char *why,
			 size_t why_len)
{
	const char *s, *task;
	json_int_t top;
	int rc;

	if ((rc = gnn_json_load_format(path, 1, 1, j)) != GNN_OK) {
		snprintf(why, why_len, "%s does not load", path);
		return rc;
	}
	s = json_string_value(json_object_get(*j, "params_crc"));
	task = json_string_value(json_object_get(*j, "task"));
	*link = task != NULL && strcmp(task, "link") == 0;
	if (task != NULL && !*link && strcmp(task, "node") != 0) {
		snprintf(why, why_len, "%s has task \"%.32s\": neither node nor link", path, task);
		return GNN_EFORMAT;
	}
	top = json_integer_value(json_object_get(*j, "top_k"));
	if (s == NULL || sscanf(s, "%8" SCNx32, crc) != 1 || (!*link && (top < 1 || top > GNN_PROTO_MAX_TOP_K))) {
		snprintf(why, why_len, "%s has no params_crc or top_k in range", path);
		return GNN_EFORMAT;
	}
	*k = *link ? 0 : (uint32_t)top;
	return GNN_OK;
}

/* Whether the n floats at x are all finite (a NaN would break the top-k's order). */
static bool all_finite(const float *x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return false;
	return true;
}

/* The decoder of a link output: from summary.json's "config" (the model
 * as result.json records it: gnn_mcfg_linkdec, as the trainer derives it),
 * or, in a summary written before it was recorded, its "decoder":
 * {"kind", "dim", "hidden"}. */
static int read_decoder(struct gs_preds *p, const json_t *sum, char *why, size_t why_len)
{
	const json_t *d = json_object_get(sum, "decoder");
	const char *kind = json_string_value(json_object_get(d, "kind"));
	json_int_t dim = json_integer_value(json_object_get(d, "dim")), hid = json_integer_value(json_object_get(d, "hidden"));
	struct gnn_model_cfg mc;
	char file[PATH_MAX + 16];

	snprintf(file, sizeof(file), "%s/summary.json", p->dir);
	if (json_object_get(sum, "config") != NULL) {
		if (gnn_mcfg_from_json(json_object_get(sum, "config"), file, &mc) != GNN_OK ||
		    gnn_mcfg_linkdec(&mc, &p->dec) != GNN_OK) {
			snprintf(why, why_len, "%s's config is not a link-prediction model's (see the log)", file);
			return GNN_EFORMAT;
		}
		kind = p->dec.kind == GNN_LINK_MLP ? "mlp" : "dot";
		dim = p->dec.dim;
		hid = p->dec.hidden;
	}
	p->dec.kind = kind == NULL ? 0 : strcmp(kind, "dot") == 0 ? GNN_LINK_DOT : strcmp(kind, "mlp") == 0 ? GNN_LINK_MLP : 0;
	if (p->dec.kind == 0 || dim < 1 || dim > GNN_PROTO_MAX_FEAT_DIM ||
	    (p->dec.kind == GNN_LINK_MLP && (hid < 1 || hid > GNN_PROTO_MAX_FEAT_DIM))) {
		snprintf(why, why_len, "%s's decoder is not {\"kind\": \"dot\"|\"mlp\", \"dim\": 1..65536, "
			 "\"hidden\": 1..65536 (mlp)}", file);
		return GNN_EFORMAT;
	}
	p->dec.dim = (uint32_t)dim;
	p->dec.hidden = p->dec.kind == GNN_LINK_MLP ? (uint32_t)hid : 0;
	p->dec.params = NULL;
	return GNN_OK;
}

/* A link output's decoder (read_decoder) and arrays: part-<p>/emb.arr
 * [num_nodes x dim] and, for mlp, decoder.arr, every value finite. */
static int load_link(struct gs_preds *p, const json_t *sum, char *why, size_t why_len)
{
	char path[PATH_MAX];
	uint64_t np;
	int rc;

	if ((rc = read_decoder(p, sum, why, why_len)) != GNN_OK)
		return rc;
	snprintf(path, sizeof(path), "%s/part-%d/emb.arr", p->dir, p->part);
	if ((rc = gnn_arr_open(path, GNN_DT_F32, GNN_ARR_VERIFY, &p->link_arr[L_EMB])) != GNN_OK ||
	    p->link_arr[L_EMB].info.rows != (uint64_t)p->part_nodes || p->link_arr[L_EMB].info.cols != p->dec.dim ||
	    !all_finite(p->link_arr[L_EMB].data, (uint64_t)p->part_nodes * p->dec.dim)) {
		snprintf(why, why_len, "%s does not load, is not f32 %" PRId64 " x %" PRIu32 " or holds a NaN or infinity",
			 path, p->part_nodes, p->dec.dim);
		return rc != GNN_OK ? rc : GNN_EFORMAT;
	}
	if ((np = gnn_link_params_count(p->dec.kind, p->dec.dim, p->dec.hidden)) == 0)
		return GNN_OK;
	snprintf(path, sizeof(path), "%s/decoder.arr", p->dir);
	if ((rc = gnn_arr_open(path, GNN_DT_F32, GNN_ARR_VERIFY, &p->link_arr[L_DEC])) != GNN_OK ||
	    p->link_arr[L_DEC].info.rows * p->link_arr[L_DEC].info.cols != np ||
	    !all_finite(p->link_arr[L_DEC].data, np)) {
		snprintf(why, why_len, "%s does not load, is not %" PRIu64 " f32 (hidden x dim + 2 hidden + 1) or holds a "
			 "NaN or infinity", path, np);
		return rc != GNN_OK ? rc : GNN_EFORMAT;
	}
	p->dec.params = p->link_arr[L_DEC].data;
	return GNN_OK;
}

/* Maps DIR/part-<p>/'s arrays of the run summary.json names. */
static int load(struct gs_preds *p, const struct stat *st, char *why, size_t why_len)
{
	char path[PATH_MAX];
	json_t *sum = NULL, *stats = NULL;
	uint32_t crc, k, pcrc, pk;
	bool link, plink;
	int rc;

	unload(p);
	snprintf(path, sizeof(path), "%s/summary.json", p->dir);
	if ((rc = read_identity(path, &sum, &crc, &k, &link, why, why_len)) != GNN_OK)
		goto out;
	snprintf(path, sizeof(path), "%s/part-%d/stats.json", p->dir, p->part);
	if ((rc = read_identity(path, &stats, &pcrc, &pk, &plink, why, why_len)) != GNN_OK)
		goto out;
	if (pcrc != crc || pk != k) {
		snprintf(why, why_len, "%s is of another run (params_crc %08" PRIx32 ") than summary.json (%08" PRIx32 ")",
			 path, pcrc, crc);
		rc = GNN_EFORMAT;
		goto out;
	}
	if (link) {
		rc = load_link(p, sum, why, why_len);
		goto out;
	}
	for (int i = 0; i < A_COUNT; i++) {
		uint64_t cols = i == A_CLASS || i == A_PROB ? k : 1;

		snprintf(path, sizeof(path), "%s/part-%d/%s.arr", p->dir, p->part, files[i]);
		if ((rc = gnn_arr_open(path, dtypes[i], 0, &p->arr[i])) != GNN_OK ||
		    p->arr[i].info.rows != (uint64_t)p->num_nodes || p->arr[i].info.cols != cols) {
			snprintf(why, why_len, "%s does not load or is not %" PRId64 " x %" PRIu64, path, p->num_nodes,
				 cols);
			rc = rc != GNN_OK ? rc : GNN_EFORMAT;
			goto out;
		}
	}
out:
	json_decref(sum);
	json_decref(stats);
	if (rc != GNN_OK) {
		unload(p);
		return rc;
	}
	p->loaded = true;
	p->link = link;
	p->seen = *st;
	p->params_crc = crc;
	p->k = k;
	if (link)
		GNN_INFO("predictions_loaded", "part=%d dir=%s params_crc=%08" PRIx32 " task=link decoder=%s dim=%" PRIu32
			 " hidden=%" PRIu32, p->part, p->dir, crc, p->dec.kind == GNN_LINK_MLP ? "mlp" : "dot", p->dec.dim,
			 p->dec.hidden);
	else
		GNN_INFO("predictions_loaded", "part=%d dir=%s params_crc=%08" PRIx32 " top_k=%" PRIu32, p->part, p->dir,
			 crc, k);
	return GNN_OK;
}

/* Loaded and current (summary.json unchanged), reloading under the write
 * lock when not; returns with the read lock held on GNN_OK. */
static int current(struct gs_preds *p, char *why, size_t why_len)
{
	char path[PATH_MAX];
	struct stat st;
	int rc = GNN_OK;

	snprintf(path, sizeof(path), "%s/summary.json", p->dir);
	if (stat(path, &st) != 0) {
		snprintf(why, why_len, "no predictions at %s: run gnn-trainer infer (docs/inference.md)", path);
		return GNN_ENOENT;
	}
	pthread_rwlock_rdlock(&p->lock);
	if (p->loaded && same_file(&p->seen, &st))
		return GNN_OK;
	pthread_rwlock_unlock(&p->lock);
	pthread_rwlock_wrlock(&p->lock);
	if (!p->loaded || !same_file(&p->seen, &st))
		rc = load(p, &st, why, why_len);
	pthread_rwlock_unlock(&p->lock);
	if (rc != GNN_OK)
		return rc;
	/* another reload may slip in here: this one answers from that */
	pthread_rwlock_rdlock(&p->lock);
	if (p->loaded)
		return GNN_OK;
	pthread_rwlock_unlock(&p->lock);
	snprintf(why, why_len, "predictions at %s changed while loading", p->dir);
	return GNN_EUNAVAIL;
}

int gs_preds_answer(struct gs_preds *p, uint64_t req_id, const int64_t *ids, uint32_t n, struct gnn_wbuf *w,
		    char *why, size_t why_len)
{
	struct gnn_predict_resp r = { .n = n };
	int64_t *orig = NULL;
	int32_t *pred = NULL, *cls = NULL;
	float *prob = NULL;
	int rc;

	if ((rc = current(p, why, why_len)) != GNN_OK)
		return rc;
	if (p->link) {
		snprintf(why, why_len, "%s holds a link-prediction model's output (task link): no class predictions; ask "
			 "score or topk (docs/inference.md)", p->dir);
		rc = GNN_ENOENT;
		goto out;
	}
	r.k = p->k;
	r.params_crc = p->params_crc;
	orig = malloc((size_t)n * 8 + 1);
	pred = malloc((size_t)n * 4 + 1);
	cls = malloc((size_t)n * r.k * 4 + 1);
	prob = malloc((size_t)n * r.k * 4 + 1);
	if (orig == NULL || pred == NULL || cls == NULL || prob == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t row = (size_t)(ids[i] - p->node_start);

		orig[i] = ((const int64_t *)p->arr[A_ORIG].data)[row];
		pred[i] = ((const int32_t *)p->arr[A_PRED].data)[row];
		memcpy(cls + (size_t)i * r.k, (const int32_t *)p->arr[A_CLASS].data + row * r.k, r.k * 4);
		memcpy(prob + (size_t)i * r.k, (const float *)p->arr[A_PROB].data + row * r.k, r.k * 4);
	}
	r.orig_ids = orig;
	r.pred = pred;
	r.classes = cls;
	r.probs = prob;
	rc = gnn_encode_predict_resp(w, req_id, &r);
out:
	pthread_rwlock_unlock(&p->lock);
	free(orig);
	free(pred);
	free(cls);
	free(prob);
	return rc;
}

int gs_preds_link_acquire(struct gs_preds *p, struct gs_link_view *v, char *why, size_t why_len)
{
	int rc;

	if ((rc = current(p, why, why_len)) != GNN_OK)
		return rc;
	if (!p->link) {
		pthread_rwlock_unlock(&p->lock);
		snprintf(why, why_len, "not a link-prediction model's output: %s/summary.json has no \"task\": \"link\" "
			 "(a node-classification run's predictions)", p->dir);
		return GNN_ENOENT;
	}
	v->params_crc = p->params_crc;
	v->dec = p->dec;
	v->rows = p->link_arr[L_EMB].data;
	return GNN_OK;
}

void gs_preds_release(struct gs_preds *p)
{
	pthread_rwlock_unlock(&p->lock);
}
