/* checkpoint.c - see checkpoint.h. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "arr.h"
#include "ckptname.h"
#include "err.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "sys.h"

/* 2: state.json and result.json carry a checksum (gnn_json_save_checked);
 * format 1 files, written before, are read without one. */
#define FORMAT 2
#define KEEP 2

static const char *const arrays[4] = { "params", "adam_m", "adam_v", "best" };

static float **array_ptr(struct tr_ckpt *c, int i)
{
	float **p[4] = { &c->params, &c->adam_m, &c->adam_v, &c->best };

	return p[i];
}

/* A checkpoint's place in the run: epochs done, then steps of the next. */
static uint64_t pos_of(uint32_t epoch, uint32_t step)
{
	return (uint64_t)epoch << 32 | step;
}

static void pos_name(uint64_t pos, char *buf, size_t len)
{
	gnn_ckpt_name((uint32_t)(pos >> 32), (uint32_t)pos, buf, len);
}

/* "epoch-NNNNNN" or "epoch-NNNNNN-step-SSSSSS" (S > 0), exactly. */
static bool parse_name(const char *name, uint64_t *pos)
{
	unsigned ep, st = 0;
	char canon[40];
	int used = 0;

	if (sscanf(name, "epoch-%6u%n", &ep, &used) != 1 || used != 12)
		return false;
	if (name[12] != '\0' && (sscanf(name + 12, "-step-%6u%n", &st, &used) != 1 || used != 12 ||
				  name[24] != '\0' || st == 0))
		return false;
	*pos = pos_of(ep, st);
	pos_name(*pos, canon, sizeof(canon));
	return strcmp(canon, name) == 0;
}

/* Positions of DIR's complete checkpoints, ascending; *n of them. */
static int list_positions(const char *dir, uint64_t **out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t *v = NULL, pos;
	size_t cnt = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (d == NULL)
		return errno == ENOENT ? GNN_OK : GNN_EIO;
	while ((e = readdir(d)) != NULL) {
		if (!parse_name(e->d_name, &pos))
			continue;
		if (cnt == cap) {
			uint64_t *g = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof(*v));

			if (g == NULL) {
				free(v);
				closedir(d);
				return GNN_ENOMEM;
			}
			v = g;
		}
		v[cnt++] = pos;
	}
	closedir(d);
	for (size_t i = 1; i < cnt; i++)        /* few entries: insertion sort */
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	*out = v;
	*n = cnt;
	return GNN_OK;
}

/* Removes DIR's checkpoints but the newest keep; returns how many went. */
static size_t prune(const char *dir, size_t keep)
{
	char file[PATH_MAX + 40], name[40];
	uint64_t *v = NULL;
	size_t n = 0, gone = 0;

	if (list_positions(dir, &v, &n) != GNN_OK)
		return 0;
	for (size_t i = 0; i + keep < n; i++) {
		pos_name(v[i], name, sizeof(name));
		snprintf(file, sizeof(file), "%s/%s", dir, name);
		if (gnn_rm_rf(file) == GNN_OK)
			gone++;
	}
	free(v);
	return gone;
}

/* A file that does not load is moved to DIR/corrupt-NAME (one per name):
 * out of the way of the next start and of pruning, and kept for a look. */
static void move_aside(const char *dir, const char *name, const char *why)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 32];

	snprintf(from, sizeof(from), "%s/%s", dir, name);
	snprintf(to, sizeof(to), "%s/corrupt-%s", dir, name);
	gnn_rm_rf(to);
	if (rename(from, to) != 0)
		GNN_ERROR("move_aside_failed", "path=%s error=\"%s\"", from, strerror(errno));
	else
		GNN_WARN("moved_aside", "path=%s to=%s reason=\"%s\"", from, to, why);
}

static json_t *state_json(const struct tr_ckpt *c)
{
	char hash[17], seed[21];
	json_t *st;

	snprintf(hash, sizeof(hash), "%016" PRIx64, c->model_hash);
	snprintf(seed, sizeof(seed), "%" PRIu64, c->seed);
	st = json_pack("{s:i, s:I, s:I, s:I, s:s, s:s, s:f, s:I, s:I, s:I, s:I, s:[f,f,f]}", "format", FORMAT,
		       "epoch", (json_int_t)c->epoch, "step", (json_int_t)c->step, "adam_t", (json_int_t)c->adam_t,
		       "model_hash", hash, "seed", seed, "best_val_acc", c->best_val_acc, "best_epoch",
		       (json_int_t)c->best_epoch, "num_params", (json_int_t)c->num_params, "world",
		       (json_int_t)c->world, "batch", (json_int_t)c->batch, "partial", c->partial[0], c->partial[1],
		       c->partial[2]);
	if (st != NULL && c->has_config &&
	    json_object_set_new(st, "config", gnn_mcfg_to_json(&c->config, GNN_MCFG_ALL)) != 0) {
		json_decref(st);
		return NULL;
	}
	return st;
}

/* c's files into the temporary folder tmp (created; removed on error).
 * The embeddings' shards are not fsynced here: commit does it. */
static int write_files(const struct tr_ckpt *c, const char *tmp)
{
	char file[PATH_MAX + 16];
	struct tr_ckpt *mc = (struct tr_ckpt *)c;
	json_t *st = NULL;
	int rc;

	gnn_rm_rf(tmp);
	if ((rc = gnn_mkdir_p(tmp)) != GNN_OK)
		goto fail;
	for (int i = 0; i < 4; i++) {
		snprintf(file, sizeof(file), "%s/%s.arr", tmp, arrays[i]);
		if ((rc = gnn_arr_write(file, GNN_DT_F32, c->num_params, 1, *array_ptr(mc, i), NULL)) != GNN_OK)
			goto fail;
	}
	if (c->extra != NULL && (rc = c->extra->save(c->extra->ctx, tmp)) != GNN_OK)
		goto fail;
	snprintf(file, sizeof(file), "%s/state.json", tmp);
	rc = GNN_ENOMEM;
	if ((st = state_json(c)) == NULL || (rc = gnn_json_save_checked(file, st)) != GNN_OK)
		goto fail;
fail:
	json_decref(st);
	if (rc != GNN_OK)
		gnn_rm_rf(tmp);
	return rc;
}

/* Every file of folder tmp on the disk, then the folder itself. */
static int sync_folder(const char *tmp)
{
	char file[PATH_MAX + 300];
	struct dirent *de;
	DIR *d = opendir(tmp);
	int rc = GNN_OK;

	if (d == NULL) {
		GNN_ERROR("checkpoint_failed", "path=%s error=\"opendir: %s\"", tmp, strerror(errno));
		return GNN_EIO;
	}
	while (rc == GNN_OK && (de = readdir(d)) != NULL) {
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", tmp, de->d_name);
		if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0 || fsync(fd) != 0) {
			GNN_ERROR("checkpoint_failed", "file=%s error=\"fsync: %s\"", file, strerror(errno));
			rc = GNN_EIO;
		}
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return rc == GNN_OK ? gnn_fsync_dir(tmp) : rc;
}

/* The written folder tmp made durable and renamed to final, older
 * checkpoints pruned: a checkpoint is complete or absent. */
static int commit(const char *dir, const char *tmp, const char *final)
{
	int rc = sync_folder(tmp);

	if (rc != GNN_OK)
		goto fail;
	gnn_rm_rf(final);       /* an older run's same position (restarted before the next) */
	if (rename(tmp, final) != 0) {
		GNN_ERROR("checkpoint_failed", "path=%s error=\"rename: %s\"", final, strerror(errno));
		rc = GNN_EIO;
		goto fail;
	}
	if ((rc = gnn_fsync_dir(dir)) != GNN_OK)
		goto fail;
	prune(dir, KEEP);       /* older ones are never resumed from */
	return GNN_OK;
fail:
	gnn_rm_rf(tmp);
	return rc;
}

static bool peer_failure(int rc)
{
	return rc == GNN_ESTALE || rc == GNN_ETIMEDOUT || rc == GNN_EUNAVAIL || rc == GNN_ECLOSED || rc == GNN_EPROTO;
}

/* The commit of the last save, on a thread of its own (one at a time;
 * only rank 0's training thread saves, loads and flushes). */
enum commit_state { COMMIT_IDLE, COMMIT_RUNNING };

static struct {
	enum commit_state state;
	pthread_t thread;
	char dir[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX];
	uint32_t epoch, step;
	double t0, write_s;
	struct gnn_counter *failures;
	struct tr_ckpt_extra extra;   /* the save's (finish NULL: none) */
	int rc;                       /* the commit's, read after the join */
} pending;

static void *commit_thread(void *arg)
{
	double t1 = gnn_now(), t2;

	(void)arg;
	pending.rc = pending.extra.finish != NULL ? pending.extra.finish(pending.extra.ctx, pending.tmp)
						  : GNN_OK;
	t2 = gnn_now();
	if (pending.rc == GNN_OK)
		pending.rc = commit(pending.dir, pending.tmp, pending.final);
	else
		gnn_rm_rf(pending.tmp);
	if (pending.rc == GNN_OK) {
		GNN_INFO("checkpoint_saved", "epoch=%" PRIu32 " step=%" PRIu32 " path=%s seconds=%.2f write_s=%.2f "
			 "shards_s=%.2f sync_s=%.2f", pending.epoch, pending.step, pending.final, gnn_now() - pending.t0,
			 pending.write_s, t2 - t1, gnn_now() - t2);
	} else {
		GNN_ERROR("checkpoint_failed", "path=%s code=%s reason=\"%s (see the line before)\"", pending.final,
			  gnn_errname(pending.rc), gnn_strerror(pending.rc));
		if (pending.failures != NULL)
			gnn_counter_inc(pending.failures);
	}
	return NULL;
}

int tr_ckpt_flush(void)
{
	double t0 = gnn_now();

	if (pending.state == COMMIT_IDLE)
		return GNN_OK;
	pthread_join(pending.thread, NULL);
	pending.state = COMMIT_IDLE;
	if (gnn_now() - t0 >= 1.0)
		GNN_INFO("checkpoint_waited", "path=%s seconds=%.2f reason=\"the commit before had not finished\"",
			 pending.final, gnn_now() - t0);
	return pending.rc;
}

int tr_ckpt_save(const char *dir, const struct tr_ckpt *c, struct gnn_counter *failures, char *path,
		 size_t path_len)
{
	char final[PATH_MAX], tmp[PATH_MAX], name[40];
	double t0 = gnn_now();
	size_t gone;
	int rc;

	tr_ckpt_flush();
	pos_name(pos_of(c->epoch, c->step), name, sizeof(name));
	if (snprintf(final, sizeof(final), "%s/%s", dir, name) >= (int)sizeof(final) ||
	    gnn_ckpt_tmp_path(dir, c->epoch, c->step, (int)getpid(), tmp, sizeof(tmp)) != GNN_OK)
		return GNN_EINVAL;
	rc = write_files(c, tmp);
	/* A full volume: writing needs room for KEEP + 1; make do with 2 (not
	 * when the graph stores failed the embeddings' part: room is not it). */
	if (rc != GNN_OK && !peer_failure(rc) && (gone = prune(dir, 1)) > 0) {
		GNN_WARN("checkpoint_retry", "path=%s removed=%zu reason=\"the write failed: kept only the newest "
			 "checkpoint to make room and trying once more\"", final, gone);
		rc = write_files(c, tmp);
	}
	if (rc != GNN_OK) {
		GNN_ERROR("checkpoint_failed", "path=%s code=%s reason=\"%s (see the line before)\"", final,
			  gnn_errname(rc), gnn_strerror(rc));
		if (failures != NULL)
			gnn_counter_inc(failures);
		return rc;
	}
	snprintf(pending.dir, sizeof(pending.dir), "%s", dir);
	snprintf(pending.tmp, sizeof(pending.tmp), "%s", tmp);
	snprintf(pending.final, sizeof(pending.final), "%s", final);
	pending.epoch = c->epoch;
	pending.step = c->step;
	pending.t0 = t0;
	pending.write_s = gnn_now() - t0;
	pending.failures = failures;
	pending.extra = c->extra != NULL ? *c->extra : (struct tr_ckpt_extra){ 0 };
	if (pthread_create(&pending.thread, NULL, commit_thread, NULL) == 0)
		pending.state = COMMIT_RUNNING;
	else
		commit_thread(NULL);   /* no thread: commit here */
	if (path != NULL)
		snprintf(path, path_len, "%s", final);
	return GNN_OK;
}

/* The keys a mid-epoch position adds (absent from checkpoints written
 * before it: those are at an epoch's end). */
static int load_position(const json_t *st, const char *file, struct tr_ckpt *c)
{
	const json_t *p = json_object_get(st, "partial");
	int64_t v;
	int rc;

	c->step = c->world = c->batch = 0;
	memset(c->partial, 0, sizeof(c->partial));
	if (json_object_get(st, "step") == NULL)
		return GNN_OK;
	if ((rc = gnn_json_get_int(st, file, "step", 0, UINT32_MAX, &v)) != GNN_OK)
		return rc;
	c->step = (uint32_t)v;
	if ((rc = gnn_json_get_int(st, file, "world", 0, UINT32_MAX, &v)) != GNN_OK)
		return rc;
	c->world = (uint32_t)v;
	if ((rc = gnn_json_get_int(st, file, "batch", 0, UINT32_MAX, &v)) != GNN_OK)
		return rc;
	c->batch = (uint32_t)v;
	if (!json_is_array(p) || json_array_size(p) != 3) {
		GNN_ERROR("bad_checkpoint", "file=%s key=partial reason=\"three numbers expected\"", file);
		return GNN_EFORMAT;
	}
	for (size_t i = 0; i < 3; i++) {
		if (!json_is_number(json_array_get(p, i))) {
			GNN_ERROR("bad_checkpoint", "file=%s key=partial reason=\"three numbers expected\"", file);
			return GNN_EFORMAT;
		}
		c->partial[i] = json_number_value(json_array_get(p, i));
	}
	return GNN_OK;
}

/* Loads the checkpoint at pos from cdir; state.json must say the same
 * epoch and step as the folder's name. */
static int load_one(const char *cdir, uint64_t pos, struct tr_ckpt *c)
{
	char file[PATH_MAX + 16];
	json_t *st = NULL;
	int64_t v;
	json_t *bv;
	int rc;

	snprintf(file, sizeof(file), "%s/state.json", cdir);
	if ((rc = gnn_json_load_format(file, 1, FORMAT, &st)) != GNN_OK)
		return rc;
	if ((rc = gnn_json_get_int(st, file, "epoch", 0, UINT32_MAX, &v)) != GNN_OK ||
	    (rc = load_position(st, file, c)) != GNN_OK)
		goto out;
	c->epoch = (uint32_t)v;
	if (pos_of(c->epoch, c->step) != pos) {
		GNN_ERROR("bad_checkpoint", "file=%s epoch=%" PRIu32 " step=%" PRIu32 " folder_epoch=%" PRIu32
			  " folder_step=%" PRIu32 " reason=\"the position in state.json is not the folder's\"", file,
			  c->epoch, c->step, (uint32_t)(pos >> 32), (uint32_t)pos);
		rc = GNN_EFORMAT;
		goto out;
	}
	if ((rc = gnn_json_get_int(st, file, "adam_t", 0, INT64_MAX, &v)) != GNN_OK)
		goto out;
	c->adam_t = (uint64_t)v;
	if ((rc = gnn_json_get_int(st, file, "best_epoch", -1, UINT32_MAX, &v)) != GNN_OK)
		goto out;
	c->best_epoch = (int32_t)v;
	if ((rc = gnn_json_get_int(st, file, "num_params", 1, INT64_MAX, &v)) != GNN_OK)
		goto out;
	c->num_params = (size_t)v;
	if ((rc = gnn_json_get_u64(st, file, "model_hash", true, &c->model_hash)) != GNN_OK ||
	    (rc = gnn_json_get_u64(st, file, "seed", false, &c->seed)) != GNN_OK)
		goto out;
	bv = json_object_get(st, "best_val_acc");
	if (!json_is_number(bv)) {
		GNN_ERROR("bad_checkpoint", "file=%s key=best_val_acc reason=\"missing or not a number\"", file);
		rc = GNN_EFORMAT;
		goto out;
	}
	c->best_val_acc = json_number_value(bv);
	c->has_config = json_object_get(st, "config") != NULL;
	if (c->has_config && (rc = gnn_mcfg_from_json(json_object_get(st, "config"), file, &c->config)) != GNN_OK)
		goto out;
	for (int i = 0; i < 4; i++) {
		struct gnn_arr a;
		float **dst = array_ptr(c, i);

		snprintf(file, sizeof(file), "%s/%s.arr", cdir, arrays[i]);
		if ((rc = gnn_arr_open(file, GNN_DT_F32, GNN_ARR_VERIFY, &a)) != GNN_OK)
			goto out;
		if (a.info.rows != c->num_params || a.info.cols != 1) {
			GNN_ERROR("bad_checkpoint", "file=%s rows=%" PRIu64 " expected=%zu", file, a.info.rows, c->num_params);
			gnn_arr_close(&a);
			rc = GNN_EFORMAT;
			goto out;
		}
		if ((*dst = malloc(c->num_params * sizeof(float))) == NULL) {
			gnn_arr_close(&a);
			rc = GNN_ENOMEM;
			goto out;
		}
		memcpy(*dst, a.data, c->num_params * sizeof(float));
		gnn_arr_close(&a);
	}
out:
	json_decref(st);
	return rc;
}

int tr_ckpt_load_latest(const char *dir, const struct tr_ckpt_extra *extra, struct tr_ckpt *out, bool *found)
{
	char cdir[PATH_MAX], newest[PATH_MAX] = "", name[40];
	uint64_t *eps = NULL;
	size_t n = 0;
	int rc;

	*found = false;
	memset(out, 0, sizeof(*out));
	tr_ckpt_flush();   /* the newest may be committing */
	/* only rank 0 writes here, and this is rank 0 */
	gnn_remove_stale(dir, GNN_CKPT_TMP_PREFIX, "", "left by a checkpoint write that did not finish");
	gnn_remove_stale(dir, "", ".tmp", "left by a checkpoint write that did not finish");
	if ((rc = list_positions(dir, &eps, &n)) != GNN_OK) {
		GNN_ERROR("checkpoint_unreadable", "dir=%s code=%s", dir, gnn_errname(rc));
		return rc;
	}
	/* Newest first; one that does not load is moved aside and the one
	 * before it is tried: a damaged file costs an epoch, not the run. */
	for (size_t i = n; i-- > 0;) {
		pos_name(eps[i], name, sizeof(name));
		snprintf(cdir, sizeof(cdir), "%s/%s", dir, name);
		if ((rc = load_one(cdir, eps[i], out)) == GNN_OK &&
		    (extra == NULL || (rc = extra->check(extra->ctx, cdir)) == GNN_OK)) {
			snprintf(out->folder, sizeof(out->folder), "%s", cdir);
			if (newest[0] != '\0')
				GNN_WARN("checkpoint_fallback", "newest=%s used=%s reason=\"the newest checkpoint is "
					 "damaged (moved aside): resuming from an older one\"", newest, cdir);
			*found = true;
			break;
		}
		tr_ckpt_free(out);
		if (rc == GNN_ENOMEM)
			break;
		if (newest[0] == '\0')
			snprintf(newest, sizeof(newest), "%s", cdir);
		move_aside(dir, name, "it does not load (see the line before)");
		rc = GNN_OK;
	}
	free(eps);
	if (rc == GNN_OK && !*found && newest[0] != '\0')
		GNN_WARN("checkpoint_fallback", "newest=%s used=none reason=\"no intact checkpoint: training from "
			 "the start\"", newest);
	return rc;
}

uint32_t tr_params_crc(const float *p, size_t n)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	const Bytef *b = (const Bytef *)p;
	size_t bytes = n * sizeof(float);

	while (bytes > 0) {     /* zlib takes uInt lengths */
		uInt chunk = bytes > (1u << 30) ? (1u << 30) : (uInt)bytes;

		crc = crc32(crc, b, chunk);
		b += chunk;
		bytes -= chunk;
	}
	return (uint32_t)crc;
}

int tr_ckpt_find_best(const char *dir, uint64_t model_hash, uint32_t params_crc, struct tr_ckpt *out)
{
	char cdir[PATH_MAX], name[40];
	uint64_t *eps = NULL;
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = list_positions(dir, &eps, &n)) != GNN_OK) {
		GNN_ERROR("checkpoint_unreadable", "dir=%s code=%s", dir, gnn_errname(rc));
		return rc;
	}
	rc = GNN_ENOENT;
	for (size_t i = n; i-- > 0;) {
		pos_name(eps[i], name, sizeof(name));
		snprintf(cdir, sizeof(cdir), "%s/%s", dir, name);
		if (load_one(cdir, eps[i], out) == GNN_OK && out->model_hash == model_hash &&
		    tr_params_crc(out->best, out->num_params) == params_crc) {
			GNN_INFO("checkpoint_found", "path=%s best_epoch=%" PRId32 " params=%zu params_crc=%08" PRIx32, cdir,
				 out->best_epoch, out->num_params, params_crc);
			snprintf(out->folder, sizeof(out->folder), "%s", cdir);
			rc = GNN_OK;
			break;
		}
		tr_ckpt_free(out);
	}
	free(eps);
	if (rc == GNN_ENOENT)
		GNN_ERROR("checkpoint_missing", "dir=%s checkpoints=%zu params_crc=%08" PRIx32 " reason=\"no intact "
			  "checkpoint of this model holds the parameters result.json names\"", dir, n, params_crc);
	return rc;
}

void tr_ckpt_free(struct tr_ckpt *c)
{
	for (int i = 0; i < 4; i++) {
		free(*array_ptr(c, i));
		*array_ptr(c, i) = NULL;
	}
}

int tr_result_load(const char *dir, struct gnn_result *r, bool *found)
{
	int rc = gnn_result_read(dir, r, found);

	/* The checkpoints still hold the run: the last one is evaluated again. */
	if (rc != GNN_OK && rc != GNN_ENOMEM) {
		*found = false;
		move_aside(dir, GNN_RESULT_FILE, "it does not load (see the line before): the result is computed again");
		rc = GNN_OK;
	}
	return rc;
}
