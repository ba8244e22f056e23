/* checkpoint.h - training checkpoints and the final result (docs/training.md).
 *
 * Rank 0 writes DIR/epoch-NNNNNN/ after every epoch, and
 * DIR/epoch-NNNNNN-step-SSSSSS/ within one (--checkpoint-interval-s: SSSSSS
 * steps of the epoch after NNNNNN are done): state.json (epoch, step,
 * optimizer step count, seeds, best validation accuracy, the model's shape)
 * and four GNNARRAY files (params, adam_m, adam_v, best: the parameters of
 * the best-validation epoch), every file CRC-checked (state.json by its
 * "crc32" key). The folder is written as DIR/.tmp-epoch-NNNNNN-PID and
 * renamed, then the directory is fsynced, so a checkpoint is complete or
 * absent; the two newest are kept. A finished run leaves DIR/result.json
 * (written atomically, checksummed). Files that do not load are moved to
 * DIR/corrupt-NAME and logged (WARN moved_aside), so that a damaged file
 * costs the work since the checkpoint before it, never a crash loop. */
#ifndef TR_CKPT_H
#define TR_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "modelcfg.h"
#include "result.h"

/* More files of a checkpoint, owned by another module (the embedding
 * shards, embeddings.h): save writes them into the folder being written
 * (before it is renamed, so that a checkpoint has them all or is absent),
 * or starts their writing by other processes; finish (may be NULL), on
 * the commit's thread, waits for that writing before the folder is
 * synced (an error: the checkpoint is dropped); check verifies them in a
 * folder being loaded (an error: the folder is damaged and the one before
 * it is used). */
struct tr_ckpt_extra {
	int (*save)(void *ctx, const char *dir);
	int (*finish)(void *ctx, const char *dir);
	int (*check)(void *ctx, const char *dir);
	void *ctx;
};

struct tr_ckpt {
	uint32_t epoch;             /* epochs completed */
	uint32_t step;              /* steps completed of the next epoch (0: at an epoch's end) */
	uint32_t world, batch;      /* what a step meant: a mid-epoch position needs the same */
	double partial[3];          /* the next epoch's loss sum, labelled and correct so far (all ranks) */
	uint64_t adam_t;            /* Adam steps taken */
	uint64_t model_hash;        /* model shape + graph: a checkpoint only resumes the same */
	uint64_t seed;
	double best_val_acc;
	int32_t best_epoch;         /* 1-based; 0: none yet */
	size_t num_params;
	/* [num_params] each. tr_ckpt_save borrows them; tr_ckpt_load_latest
	 * allocates them (tr_ckpt_free). */
	float *params, *adam_m, *adam_v, *best;
	const struct tr_ckpt_extra *extra;  /* tr_ckpt_save: more files to write (NULL: none) */
	/* The run's configuration (state.json's "config"), so that a refused
	 * checkpoint can name the option that differs; has_config false in
	 * one written before it was recorded. */
	bool has_config;
	struct gnn_model_cfg config;
	char folder[4096];                  /* tr_ckpt_load_latest: the folder it loaded */
};

/* Writes c as DIR/epoch-<c->epoch>[-step-<c->step>] (creating DIR) and
 * prunes older ones. The files are written here, into the temporary
 * folder; the rest (the commit: fsync of every file, the rename, pruning)
 * runs on a thread while the caller goes on, because a disk takes seconds
 * to sync the gigabytes of learnable embeddings' shards (docs/training.md,
 * "Checkpoints"). One commit at a time: a save first waits for the one
 * before. The commit logs INFO checkpoint_saved, or ERROR
 * checkpoint_failed and counts failures (may be NULL).
 * When the write fails (a full volume: it needs room for three), only the
 * newest checkpoint is kept and the write tried once more. *path (may be
 * NULL) gets the folder's final path. Returns the write's error (logged,
 * counted: GNN_EIO etc.); the caller may go on training. */
int tr_ckpt_save(const char *dir, const struct tr_ckpt *c, struct gnn_counter *failures, char *path,
		 size_t path_len);

/* Waits for the commit in flight, if any: GNN_OK, or its error (logged
 * already). Call it before anything depends on the last checkpoint being
 * on the disk (result.json, the process's end); tr_ckpt_load_latest and
 * tr_ckpt_save call it. */
int tr_ckpt_flush(void);

/* Loads the newest intact checkpoint of DIR (extra's files checked too,
 * when extra is not NULL), after removing the temporary
 * folders of writes that never finished (call it from the only writer,
 * rank 0). A newer one that does not load (damaged, state.json's epoch not
 * the folder's) is moved aside, and the fallback is logged naming both
 * (WARN checkpoint_fallback). *found false (and GNN_OK) when none is left.
 * Errors: GNN_EIO when DIR cannot be listed, GNN_ENOMEM. */
int tr_ckpt_load_latest(const char *dir, const struct tr_ckpt_extra *extra, struct tr_ckpt *out, bool *found);
void tr_ckpt_free(struct tr_ckpt *c);

/* CRC-32 of a parameter block (the params_crc of logs, result.json and
 * the ring's agreement check). */
uint32_t tr_params_crc(const float *p, size_t n);

/* Read-only, for a process that is not the writer (gnn-trainer infer):
 * the newest intact checkpoint of DIR whose model hash is model_hash and
 * whose best parameters have CRC-32 params_crc (result.json's), loaded
 * into *out (tr_ckpt_free). Nothing in DIR is moved or removed.
 * GNN_ENOENT (logged) when there is none; GNN_EIO, GNN_ENOMEM. */
int tr_ckpt_find_best(const char *dir, uint64_t model_hash, uint32_t params_crc, struct tr_ckpt *out);

/* DIR/result.json (gnn_result_read), with the trainer's policy: one that
 * does not load is moved aside and *found is false (the run's last
 * checkpoint gives the result again). Saving is gnn_result_save. */
int tr_result_load(const char *dir, struct gnn_result *r, bool *found);

#endif
