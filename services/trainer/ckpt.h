/* ckpt.h - training checkpoints and the final result (docs/training.md).
 *
 * Rank 0 writes DIR/epoch-NNNNNN/ after every epoch: state.json (epoch,
 * optimizer step count, seeds, best validation accuracy, the model's shape)
 * and four GNNARRAY files (params, adam_m, adam_v, best: the parameters of
 * the best-validation epoch), each CRC-checked. The folder is written as
 * DIR/.tmp-epoch-NNNNNN-PID and renamed, then the directory is fsynced, so
 * a checkpoint is complete or absent; the two newest are kept. A finished
 * run leaves DIR/result.json (written atomically). */
#ifndef TR_CKPT_H
#define TR_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tr_ckpt {
	uint32_t epoch;             /* epochs completed */
	uint64_t adam_t;            /* Adam steps taken */
	uint64_t model_hash;        /* model shape + graph: a checkpoint only resumes the same */
	uint64_t seed;
	double best_val_acc;
	int32_t best_epoch;         /* 1-based; 0: none yet */
	size_t num_params;
	/* [num_params] each. tr_ckpt_save borrows them; tr_ckpt_load_latest
	 * allocates them (tr_ckpt_free). */
	float *params, *adam_m, *adam_v, *best;
};

/* Writes c as DIR/epoch-<c->epoch> (creating DIR) and prunes older ones.
 * *path (may be NULL) gets the folder's path. Logs and returns GNN_EIO etc. */
int tr_ckpt_save(const char *dir, const struct tr_ckpt *c, char *path, size_t path_len);

/* Loads the newest complete checkpoint of DIR. *found false (and GNN_OK)
 * when there is none. A checkpoint that does not load (corrupt, other
 * format) is an error, not skipped: it is logged with its path. */
int tr_ckpt_load_latest(const char *dir, struct tr_ckpt *out, bool *found);
void tr_ckpt_free(struct tr_ckpt *c);

struct tr_result {
	uint32_t epochs;
	uint64_t model_hash;
	double test_acc, best_val_acc;
	int32_t best_epoch;
	uint32_t params_crc;        /* of the best parameters */
	double train_s;
};

/* DIR/result.json. load: *found false when absent. */
int tr_result_save(const char *dir, const struct tr_result *r);
int tr_result_load(const char *dir, struct tr_result *r, bool *found);

#endif
