/* training.h - the training loop (docs/training.md): the work split, epochs of
 * synchronous data-parallel steps, evaluation, checkpoints and resume. */
#ifndef TR_TRAIN_H
#define TR_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "config.h"
#include "embeddings.h"
#include "feats.h"
#include "fanouts.h"
#include "decoder.h"
#include "metrics.h"
#include "proto.h"
#include "ring.h"
#include "samplers.h"


/* What the loop runs on, all borrowed. */
struct tr_env {
	struct tr_samplers *samplers;
	struct tr_ring *ring;
	struct tr_emb *emb;             /* learnable embeddings (embeddings.h), NULL: none */
	struct tr_feats *feats;         /* feature rows from the stores (feats.h), NULL: from the samplers */
	const struct gnn_layout *graph;
	struct gnn_metrics *metrics;
	bool (*stop)(void);
};

/* Trains (or resumes, or finds the run finished in the checkpoint dir) and
 * evaluates. On GNN_OK *out holds the result and *resumed_finished tells
 * whether it was already there. GNN_ECLOSED: stop requested. GNN_ESTALE:
 * a graph store lost the embeddings (it restarted): every rank must
 * resume from the checkpoint, as after a ring failure. Registers its
 * metrics in env->metrics (gnn_trainer_*). */
int tr_train(const struct tr_config *c, const struct tr_env *env, struct gnn_result *out, bool *already_finished);

/* Sets the trainer's gauges (epoch, accuracies, finished) to a finished
 * run's result learnt from a peer (tr_ring_peer_result), as tr_train does
 * for one found in the checkpoint dir. */
int tr_publish_result(struct gnn_metrics *reg, const struct gnn_result *res);

#endif
