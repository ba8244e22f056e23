/* preds.c - see preds.h. */
#include "preds.h"

#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arr.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "proto.h"

enum { A_PRED, A_CLASS, A_PROB, A_ORIG, A_COUNT };
static const char *const files[A_COUNT] = { "pred", "topk-class", "topk-prob", "orig-id" };
static const enum gnn_dtype dtypes[A_COUNT] = { GNN_DT_I32, GNN_DT_I32, GNN_DT_F32, GNN_DT_I64 };

struct gs_preds {
	const char *dir;
	int32_t part;
	int64_t node_start, num_nodes;
	pthread_rwlock_t lock;
	/* what is loaded, under lock */
	bool loaded;
	struct stat seen;            /* summary.json when it was loaded */
	uint32_t params_crc, k;
	struct gnn_arr arr[A_COUNT];
};

int gs_preds_new(const char *dir, int32_t part, int64_t node_start, int64_t num_nodes, struct gs_preds **out)
{
	struct gs_preds *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return GNN_ENOMEM;
	*p = (struct gs_preds){ .dir = dir, .part = part, .node_start = node_start, .num_nodes = num_nodes };
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
	memset(p->arr, 0, sizeof(p->arr));
	p->loaded = false;
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

/* The params_crc ("%08x") and top_k of a summary.json or stats.json. */
static int read_identity(const char *path, uint32_t *crc, uint32_t *k, char *why, size_t why_size)
{
	json_t *j = NULL;
	const char *s;
	json_int_t top;
	int rc;

	if ((rc = gnn_json_load_format(path, 1, 1, &j)) != GNN_OK) {
		snprintf(why, why_size, "%s does not load", path);
		return rc;
	}
	s = json_string_value(json_object_get(j, "params_crc"));
	top = json_integer_value(json_object_get(j, "top_k"));
	if (s == NULL || sscanf(s, "%8" SCNx32, crc) != 1 || top < 1 || top > GNN_PROTO_MAX_TOP_K) {
		snprintf(why, why_size, "%s has no params_crc or top_k in range", path);
		rc = GNN_EFORMAT;
	}
	*k = (uint32_t)top;
	json_decref(j);
	return rc;
}

/* Maps DIR/part-<p>/'s arrays of the run summary.json names. */
static int load(struct gs_preds *p, const struct stat *st, char *why, size_t why_size)
{
	char path[PATH_MAX];
	uint32_t crc, k, pcrc, pk;
	int rc;

	unload(p);
	snprintf(path, sizeof(path), "%s/summary.json", p->dir);
	if ((rc = read_identity(path, &crc, &k, why, why_size)) != GNN_OK)
		return rc;
	snprintf(path, sizeof(path), "%s/part-%d/stats.json", p->dir, p->part);
	if ((rc = read_identity(path, &pcrc, &pk, why, why_size)) != GNN_OK)
		return rc;
	if (pcrc != crc || pk != k) {
		snprintf(why, why_size, "%s is of another run (params_crc %08" PRIx32 ") than summary.json (%08" PRIx32 ")",
			 path, pcrc, crc);
		return GNN_EFORMAT;
	}
	for (int i = 0; i < A_COUNT; i++) {
		uint64_t cols = i == A_CLASS || i == A_PROB ? k : 1;

		snprintf(path, sizeof(path), "%s/part-%d/%s.arr", p->dir, p->part, files[i]);
		if ((rc = gnn_arr_open(path, dtypes[i], 0, &p->arr[i])) != GNN_OK ||
		    p->arr[i].info.rows != (uint64_t)p->num_nodes || p->arr[i].info.cols != cols) {
			snprintf(why, why_size, "%s does not load or is not %" PRId64 " x %" PRIu64, path, p->num_nodes,
				 cols);
			unload(p);
			return rc != GNN_OK ? rc : GNN_EFORMAT;
		}
	}
	p->loaded = true;
	p->seen = *st;
	p->params_crc = crc;
	p->k = k;
	GNN_INFO("predictions_loaded", "part=%d dir=%s params_crc=%08" PRIx32 " top_k=%" PRIu32, p->part, p->dir, crc,
		 k);
	return GNN_OK;
}

/* Loaded and current (summary.json unchanged), reloading under the write
 * lock when not; returns with the read lock held on GNN_OK. */
static int current(struct gs_preds *p, char *why, size_t why_size)
{
	char path[PATH_MAX];
	struct stat st;
	int rc = GNN_OK;

	snprintf(path, sizeof(path), "%s/summary.json", p->dir);
	if (stat(path, &st) != 0) {
		snprintf(why, why_size, "no predictions at %s: run gnn-trainer infer (docs/inference.md)", path);
		return GNN_ENOENT;
	}
	pthread_rwlock_rdlock(&p->lock);
	if (p->loaded && same_file(&p->seen, &st))
		return GNN_OK;
	pthread_rwlock_unlock(&p->lock);
	pthread_rwlock_wrlock(&p->lock);
	if (!p->loaded || !same_file(&p->seen, &st))
		rc = load(p, &st, why, why_size);
	pthread_rwlock_unlock(&p->lock);
	if (rc != GNN_OK)
		return rc;
	/* another reload may slip in here: this one answers from that */
	pthread_rwlock_rdlock(&p->lock);
	if (p->loaded)
		return GNN_OK;
	pthread_rwlock_unlock(&p->lock);
	snprintf(why, why_size, "predictions at %s changed while loading", p->dir);
	return GNN_EUNAVAIL;
}

int gs_preds_answer(struct gs_preds *p, uint64_t req_id, const int64_t *ids, uint32_t n, struct gnn_wbuf *w,
		    char *why, size_t why_size)
{
	struct gnn_predict_resp r = { .n = n };
	int64_t *orig = NULL;
	int32_t *pred = NULL, *cls = NULL;
	float *prob = NULL;
	int rc;

	if ((rc = current(p, why, why_size)) != GNN_OK)
		return rc;
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
