/* loader.h - keeps several minibatch requests in flight so the trainer
 * rarely waits for sampling: depth worker threads each build the request of
 * the next step not yet claimed (at most depth steps ahead of the one being
 * trained), send it to a sampler replica (spread by step number) and park
 * the answer until the training loop takes it, in step order. A request
 * much slower than the job's others (4x their median, at least 1 s) is
 * sent again to another replica by an idle worker (a hedge: needs depth
 * >= 2 and two live replicas); the first answer is used and the slow
 * replica is set aside (tr_samplers_set_slow). */
#ifndef TR_LOADER_H
#define TR_LOADER_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "feats.h"
#include "metrics.h"
#include "proto.h"
#include "rowpool.h"
#include "samplers.h"

/* One pass over a list of seed nodes in batches: step k asks for seeds
 * [k * batch, min(n, (k+1) * batch)) with request seed gnn_draw64(seed, k),
 * from step first_step on (a pass resumed where a checkpoint left it). */
struct tr_job {
	const int64_t *seeds;       /* [n], borrowed until tr_loader_end */
	size_t n;
	uint32_t batch;
	uint64_t first_step;
	uint32_t num_layers, num_rels;
	const int32_t *fanouts;     /* [num_layers * num_rels], borrowed until tr_loader_end */
	uint32_t flags;             /* GNN_MB_* */
	uint64_t seed;
	const char *what;           /* "train", "valid", "test": for logs */
	/* Link prediction (training.c): steps of their own sizes. When step_off
	 * is set, the job has `steps` steps (n and batch are then only the
	 * total and a bound) and step k asks for seeds[step_off[k] ..
	 * step_off[k+1]); with excl set too, its request carries the pairs
	 * excl[2 excl_off[k] .. 2 excl_off[k+1]) of relation excl_rel as
	 * GNN_MB_EXCLUDE. All borrowed until tr_loader_end. */
	const size_t *step_off;     /* [steps + 1] */
	size_t steps;
	const int64_t *excl;        /* [2 excl_off[steps]] (u, v) global IDs */
	const size_t *excl_off;     /* [steps + 1] */
	uint32_t excl_rel;
};

/* A delivered minibatch: mb points into reply, and into rows when the
 * feature rows came from tr_feats or were widened from f16. Its rows are
 * f32, from the loader's pool. tr_batch_free frees the batch and gives the
 * rows back; it must come before tr_loader_free. */
struct tr_batch {
	uint64_t step;
	nng_msg *reply;
	struct gnn_minibatch mb;
	float *rows[GNN_PROTO_MAX_TYPES];
	struct tr_rowpool *pool;    /* the loader's */
};
void tr_batch_free(struct tr_batch *b);

struct tr_loader_opts {
	struct tr_samplers *samplers;  /* borrowed, outlives the loader */
	uint32_t depth;                /* requests in flight, >= 1 */
	uint32_t rank;                 /* spreads ranks over replicas */
	bool (*stop)(void);            /* polled while waiting; may be NULL */
	struct gnn_counter *hedges;    /* counts hedged requests; may be NULL */
	/* Set: a job's feature rows come from here, not from the samplers
	 * (they are asked without GNN_MB_FEATURES). Borrowed, may be NULL. */
	struct tr_feats *feats;
	/* Bytes of the samplers' answers by kind (TR_MB_*); each may be NULL. */
	struct gnn_counter *mb_bytes[4];
};

/* The kinds of a MINIBATCH_RESP's bytes: node IDs (the blocks' sources
 * and blocks[0]'s input types), the rest of the blocks (CSR, headers),
 * feature rows and labels. */
enum { TR_MB_IDS, TR_MB_BLOCKS, TR_MB_FEATURES, TR_MB_LABELS, TR_MB_KINDS };
extern const char *const tr_mb_kind_names[TR_MB_KINDS];

struct tr_loader;

int tr_loader_new(const struct tr_loader_opts *o, struct tr_loader **out);
/* Starts producing job's batches (no job may be active). */
int tr_loader_begin(struct tr_loader *l, const struct tr_job *job);
/* The next batch in step order, *waited the seconds spent waiting for it.
 * *b is the caller's (tr_batch_free). A failed request gives its error
 * (logged with the replicas tried); GNN_ECLOSED when stop() became true;
 * GNN_ERANGE past the last step. */
int tr_loader_next(struct tr_loader *l, struct tr_batch **b, double *waited);
/* The next batch, as tr_loader_next gives it, if it is there now (true);
 * false when it is not, when its request failed (tr_loader_next then says
 * so) and past the last step. */
bool tr_loader_poll(struct tr_loader *l, struct tr_batch **b);
/* Ends the job: drops undelivered batches and the answers still to come
 * (requests still out are not waited for). When stop() is true the
 * requests in flight are abandoned and waited for (tr_samplers_abort: the
 * samplers are unusable afterwards). */
void tr_loader_end(struct tr_loader *l);
void tr_loader_free(struct tr_loader *l);

#endif
