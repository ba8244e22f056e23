/* result.h - result.json, the outcome of a finished training run.
 *
 * Rank 0 writes it into its checkpoint folder once the run is finished
 * and every rank agreed on the parameters; a trainer that starts on a
 * finished run reports it instead of training again, and gnn-local (and any
 * job that follows training) reads it instead of anybody's log. Format 2,
 * checksummed (gnn_json_save_checked); format 1 files, without checksum,
 * still load. docs/training.md, "Checkpoints", shows one. */
#ifndef GNN_RESULT_H
#define GNN_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "modelcfg.h"

struct gnn_result {
	uint32_t epochs;
	uint64_t model_hash;          /* the model and graph it belongs to */
	double test_acc, best_val_acc;
	int32_t best_epoch;           /* -1: none */
	uint32_t params_crc;          /* CRC-32 of the best parameters, equal on every rank */
	double train_s;
	uint64_t test_nodes;          /* the test accuracy's sample size (0: not recorded, before 2026-11) */
	/* Link prediction (docs/training.md): task "link" (empty: a node
	 * classification result, whose file has no task key), its decoder,
	 * and test_acc / best_val_acc hold the test and best validation AUC
	 * (also written as test_auc and best_val_auc); test_ap the test AP. */
	char task[8], decoder[8];
	double test_ap;
	/* The run's configuration (modelcfg.h: the model and its training),
	 * the "config" object; has_config false for a file written before it
	 * was recorded (before 2026-12). What `gnn-trainer infer` rebuilds the
	 * model from. */
	bool has_config;
	struct gnn_model_cfg config;
};

#define GNN_RESULT_FILE "result.json"

/* Writes DIR/result.json atomically. */
int gnn_result_save(const char *dir, const struct gnn_result *r);

/* Reads DIR/result.json into *r: GNN_OK with *found false when there is
 * none; GNN_EFORMAT (or GNN_ERANGE) when it is damaged or not a result,
 * logged naming the file; GNN_ENOMEM. */
int gnn_result_read(const char *dir, struct gnn_result *r, bool *found);

#endif
