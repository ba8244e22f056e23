/* training.c - see training.h. */
#include "training.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"
#include "hash.h"
#include "adam.h"
#include "kernels.h"
#include "loader.h"
#include "log.h"
#include "model.h"
#include "pairs.h"
#include "part.h"
#include "sys.h"

enum phase { PH_WAIT, PH_COMPUTE, PH_ALLREDUCE, PH_EVAL, PH_CHECKPOINT, PH_EMBED, PH_COUNT };
static const char *const phase_names[PH_COUNT] = { "wait", "compute", "allreduce", "eval", "checkpoint",
						   "embed" };

struct metrics {
	struct gnn_gauge *epoch, *step, *loss, *train_acc, *val_acc, *test_acc, *samples_per_s, *finished, *params;
	struct gnn_gauge *progress, *eta;
	struct gnn_counter *samples, *steps, *ckpt_failures, *hedges, *phase[PH_COUNT];
	struct gnn_counter *mb_bytes[TR_MB_KINDS];
};

/* An epoch's running sums on one rank (the loss weighted by labelled
 * seeds): all-reduced at its end, and kept in a mid-epoch checkpoint's
 * `partial` (as three doubles, in this order). */
struct epoch_sums {
	double loss, labelled, correct;
};

/* The sums of every rank, added up over the ring. */
static int sums_allreduce(struct tr_ring *ring, struct epoch_sums *s)
{
	double v[3] = { s->loss, s->labelled, s->correct };
	int rc = tr_ring_allreduce_f64(ring, v, 3);

	*s = (struct epoch_sums){ v[0], v[1], v[2] };
	return rc;
}

struct run {
	const struct tr_config *c;
	const struct tr_env *e;
	struct metrics m;
	struct tr_model *model;
	struct tr_adam adam;
	size_t np;
	float *best;
	double best_val;
	int32_t best_epoch;
	uint32_t start_epoch, start_step;       /* where this process begins (a checkpoint's position) */
	struct epoch_sums start_sums;           /* the start epoch's sums so far (rank 0 carries them) */
	double ckpt_at;                         /* when the last checkpoint was taken (rank 0) */
	int64_t *train, *valid, *test;
	size_t ntrain, nvalid, ntest;           /* valid and test: the evaluation samples */
	size_t valid_all, test_all;             /* the splits' sizes */
	size_t share_lo, share_hi, per_rank;    /* this rank's training nodes, and every rank's count */
	size_t per_epoch;                       /* seeds (node) or positives (link) an epoch visits, <= per_rank */
	uint32_t steps;
	uint32_t epochs, eval_every;            /* plan_epochs's */
	double last_val;                        /* the last validation's measure */
	int64_t *epoch_seeds;                   /* [per_rank] */
	int32_t *pred;                          /* [eval_batch] */
	struct tr_loader *loader;
	double phase_s[PH_COUNT];               /* this epoch */
	struct tr_feats_stats feats_seen;       /* tr_feats_stats at the last features line */
	double compute_cpu_s;                   /* this epoch: the compute phase's CPU time on this thread */
	uint64_t global_step;
	uint64_t pace_step;                     /* global_step when this process began training (tr_train) */
	double pace_t0;                         /* and when */
	struct gnn_schema mschema;              /* what the model reads (embedded types widened) */
	/* What the optimizer, the all-reduce and checkpoints see: np floats,
	 * the model's own blocks, or with an mlp decoder (link) blocks of the
	 * run's own: the model's nm parameters, then the decoder's. */
	float *params, *grads;
	size_t nm;
	/* --task link */
	struct tr_decoder dec;
	struct gnn_meta meta;                   /* --data's meta.json */
	struct gnn_edge_split es;
	int64_t *tpairs;                        /* [2 ntrain] this rank's training edges (u, v) */
	int64_t *epoch_pairs;                   /* [2 per_rank] shuffled, padded */
	int64_t *negs;                          /* [2 batch neg_k] one step's negatives */
	struct tr_pair_steps ps;
	struct tr_fbuf demb, scores;
	double val_ap;
};

/* With separate blocks (an mlp decoder): the model reads its own copy of
 * the first nm parameters. */
static void sync_model(struct run *r)
{
	if (r->params != tr_model_params(r->model))
		memcpy(tr_model_params(r->model), r->params, r->nm * sizeof(float));
}

/* Registration that finds the family when it is there already: a rank
 * whose ring failed runs tr_train again in the same process. */
static int gauge(struct gnn_metrics *reg, const char *name, const char *help, const char *const *labels,
		 size_t nlabels, struct gnn_gauge **out)
{
	int rc = gnn_metrics_find_gauge(reg, name, out);

	return rc == GNN_ENOENT ? gnn_metrics_gauge(reg, name, help, labels, nlabels, out) : rc;
}

static int counter(struct gnn_metrics *reg, const char *name, const char *help, const char *const *labels,
		   size_t nlabels, struct gnn_counter **out)
{
	int rc = gnn_metrics_find_counter(reg, name, out);

	return rc == GNN_ENOENT ? gnn_metrics_counter(reg, name, help, labels, nlabels, out) : rc;
}

static int register_metrics(struct metrics *m, struct gnn_metrics *reg)
{
	static const char *const phase_label[] = { "phase" };
	struct {
		struct gnn_gauge **g;
		const char *name, *help;
	} gauges[] = {
		{ &m->epoch, "gnn_trainer_epoch", "Epochs completed" },
		{ &m->step, "gnn_trainer_step", "Step within the current epoch" },
		{ &m->loss, "gnn_trainer_loss", "Mean training loss of the last epoch (all ranks)" },
		{ &m->train_acc, "gnn_trainer_train_accuracy", "Training accuracy of the last epoch (all ranks)" },
		{ &m->val_acc, "gnn_trainer_val_accuracy", "Validation accuracy after the last epoch" },
		{ &m->test_acc, "gnn_trainer_test_accuracy", "Test accuracy of the best-validation model (set at the end)" },
		{ &m->samples_per_s, "gnn_trainer_samples_per_second", "Training seeds per second of this rank, last epoch" },
		{ &m->finished, "gnn_trainer_finished", "1 once the run has finished" },
		{ &m->params, "gnn_trainer_model_parameters", "Parameters of the model this rank trains" },
		{ &m->progress, "gnn_trainer_progress_ratio", "Fraction of the run's training steps done (0 to 1)" },
		{ &m->eta, "gnn_trainer_eta_seconds", "Estimated seconds until the last training step, at this "
		  "process's own pace since it began training (NaN before its first step)" },
	};
	int rc;

	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
		if ((rc = gauge(reg, gauges[i].name, gauges[i].help, NULL, 0, gauges[i].g)) != GNN_OK)
			return rc;
	if ((rc = counter(reg, "gnn_trainer_samples_total", "Training seeds processed by this rank", NULL, 0,
			  &m->samples)) != GNN_OK ||
	    (rc = counter(reg, "gnn_trainer_steps_total", "Training steps taken by this rank", NULL, 0,
			  &m->steps)) != GNN_OK ||
	    (rc = counter(reg, "gnn_trainer_checkpoint_failures_total",
			  "Checkpoints and results rank 0 could not write (training went on)", NULL, 0,
			  &m->ckpt_failures)) != GNN_OK ||
	    (rc = counter(reg, "gnn_trainer_minibatch_hedges_total",
			  "Minibatch requests sent again to another sampler replica because they were much "
			  "slower than the others", NULL, 0, &m->hedges)) != GNN_OK)
		return rc;
	{
		static const char *const kind_label[] = { "kind" };
		struct gnn_counter *fam;

		if ((rc = counter(reg, "gnn_trainer_minibatch_bytes_total", "Bytes of the samplers' minibatch answers, "
				  "by kind: ids, blocks, features, labels", kind_label, 1, &fam)) != GNN_OK)
			return rc;
		for (int k = 0; k < TR_MB_KINDS; k++)
			if ((rc = gnn_counter_labels(fam, &tr_mb_kind_names[k], 1, &m->mb_bytes[k])) != GNN_OK)
				return rc;
	}
	for (int p = 0; p < PH_COUNT; p++) {
		struct gnn_counter *fam;

		if (p == 0 && (rc = counter(reg, "gnn_trainer_phase_seconds_total",
					    "Seconds spent per phase: waiting for minibatches, computing, "
					    "all-reducing, evaluating, checkpointing",
					    phase_label, 1, &fam)) != GNN_OK)
			return rc;
		if (p > 0)
			fam = m->phase[0];
		if ((rc = gnn_counter_labels(fam, &phase_names[p], 1, &m->phase[p])) != GNN_OK)
			return rc;
	}
	gnn_gauge_set(m->test_acc, NAN);
	gnn_gauge_set(m->val_acc, NAN);
	gnn_gauge_set(m->eta, NAN);
	return GNN_OK;
}

/* Which model (--model) this rank trains, Prometheus' info-metric way: a
 * constant 1 labelled with the name, and its parameter count. */
static int model_metrics(struct metrics *m, struct gnn_metrics *reg, const struct tr_model *model)
{
	static const char *const label[] = { "model" };
	const char *name = tr_model_config(model)->model;
	struct gnn_gauge *fam, *info;
	int rc;

	if ((rc = gauge(reg, "gnn_trainer_model_info", "1, labelled with the model this rank trains (--model)", label,
			1, &fam)) != GNN_OK ||
	    (rc = gnn_gauge_labels(fam, &name, 1, &info)) != GNN_OK)
		return rc;
	gnn_gauge_set(info, 1);
	gnn_gauge_set(m->params, (double)tr_model_num_params(model));
	return GNN_OK;
}

static void add_phase(struct run *r, enum phase p, double s)
{
	r->phase_s[p] += s;
	gnn_counter_add(r->m.phase[p], s);
}

/* The fraction of the run's steps done, and the seconds left at the pace
 * of this process since tr_train began here: steps a checkpoint resumed
 * from took no time here, so counting them would make a resumed run look
 * fast. Evaluation and checkpoints are in that pace. *eta_s is NaN before
 * the first step here. Sets the gauges too. */
static void progress(struct run *r, double *done, double *eta_s)
{
	uint64_t total = (uint64_t)r->epochs * r->steps, here = r->global_step - r->pace_step;

	*done = total > 0 && r->global_step < total ? (double)r->global_step / (double)total : 1.0;
	*eta_s = r->global_step >= total ? 0.0 : here > 0 ?
		 (gnn_now() - r->pace_t0) * (double)(total - r->global_step) / (double)here : NAN;
	gnn_gauge_set(r->m.progress, *done);
	gnn_gauge_set(r->m.eta, *eta_s);
}

/* ---- data ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Keeps a seeded sample of k of the *n nodes (k = 0 or k >= *n: all), in ID
 * order. Every rank draws the same sample, and so does every epoch: the
 * best epoch is picked on the same nodes. Evaluating a whole split of
 * ogbn-products' size as sampled minibatches takes longer than the
 * training (docs/training.md, "Evaluation"). */
static void eval_sample(int64_t *nodes, size_t *n, uint32_t k, uint64_t seed)
{
	if (k == 0 || k >= *n)
		return;
	for (size_t i = 0; i < k; i++) {   /* partial Fisher-Yates: the first k */
		size_t j;
		int64_t t;

		seed = gnn_draw64(seed, i);
		j = i + (size_t)(seed % (*n - i));
		t = nodes[i];
		nodes[i] = nodes[j];
		nodes[j] = t;
	}
	qsort(nodes, k, sizeof(*nodes), cmp_i64);
	*n = k;
}

static int load_nodes(struct run *r)
{
	const struct tr_config *c = r->c;
	int rc;

	if ((rc = tr_samplers_nodes(r->e->samplers, GNN_SPLIT_TRAIN, &r->train, &r->ntrain)) != GNN_OK ||
	    (rc = tr_samplers_nodes(r->e->samplers, GNN_SPLIT_VALID, &r->valid, &r->nvalid)) != GNN_OK ||
	    (rc = tr_samplers_nodes(r->e->samplers, GNN_SPLIT_TEST, &r->test, &r->ntest)) != GNN_OK)
		return rc;
	r->valid_all = r->nvalid;
	r->test_all = r->ntest;
	eval_sample(r->valid, &r->nvalid, c->val_nodes, gnn_draw64(c->seed, 0x76616c6964ull));
	eval_sample(r->test, &r->ntest, c->test_nodes, gnn_draw64(c->seed, 0x74657374ull));
	if (r->ntrain < c->world) {
		GNN_ERROR("bad_config", "train_nodes=%zu world_size=%" PRIu32 " reason=\"fewer training nodes than "
			  "trainers\"", r->ntrain, c->world);
		return GNN_EINVAL;
	}
	/* Contiguous shares in ID order: partitions own contiguous ID ranges
	 * (balanced in training nodes by the partitioner), so with as many
	 * trainers as partitions rank r's nodes are mostly partition r's. Every
	 * rank pads its share to the same size, so all take the same number of
	 * steps and no one waits at an all-reduce that others never reach. */
	r->share_lo = (size_t)((uint64_t)r->ntrain * c->rank / c->world);
	r->share_hi = (size_t)((uint64_t)r->ntrain * (c->rank + 1) / c->world);
	r->per_rank = r->per_epoch = (r->ntrain + c->world - 1) / c->world;
	r->steps = (uint32_t)((r->per_rank + c->batch - 1) / c->batch);
	if ((r->epoch_seeds = malloc(r->per_rank * sizeof(int64_t))) == NULL ||
	    (r->pred = malloc(c->eval_batch * sizeof(int32_t))) == NULL)
		return GNN_ENOMEM;
	{
		uint32_t own = c->rank % r->e->graph->num_parts;
		size_t mine = 0;

		for (size_t i = r->share_lo; i < r->share_hi; i++)
			mine += r->train[i] >= r->e->graph->offsets[own] && r->train[i] < r->e->graph->offsets[own + 1];
		GNN_INFO("work_split", "train_nodes=%zu valid_nodes=%zu of=%zu test_nodes=%zu of=%zu share=%zu "
			 "padded_to=%zu steps_per_epoch=%" PRIu32 " own_partition=%" PRIu32 " own_partition_fraction=%.3f",
			 r->ntrain, r->nvalid, r->valid_all, r->ntest, r->test_all, r->share_hi - r->share_lo,
			 r->per_rank, r->steps, own,
			 r->share_hi > r->share_lo ? (double)mine / (double)(r->share_hi - r->share_lo) : 0.0);
	}
	return GNN_OK;
}

/* This rank's seeds for epoch: its share shuffled with (seed, epoch, rank),
 * padded to per_rank by repeating its start. */
static void epoch_seeds(struct run *r, uint32_t epoch)
{
	size_t n = r->share_hi - r->share_lo;
	uint64_t s = gnn_draw64(gnn_draw64(r->c->seed ^ 0x73687566ull, epoch), r->c->rank);

	memcpy(r->epoch_seeds, r->train + r->share_lo, n * sizeof(int64_t));
	for (size_t i = n; i > 1; i--) {
		size_t j;
		int64_t t;

		s = gnn_draw64(s, i);
		j = (size_t)(s % i);
		t = r->epoch_seeds[i - 1];
		r->epoch_seeds[i - 1] = r->epoch_seeds[j];
		r->epoch_seeds[j] = t;
	}
	for (size_t i = n; i < r->per_rank; i++)
		r->epoch_seeds[i] = r->epoch_seeds[i - n];
}

/* ---- evaluation ---- */

/* The minibatch's embedded types filled from the graph stores (array:
 * GNN_EMB_ROWS or GNN_EMB_BEST_ROWS), when the model has embeddings. */
static int attach(struct run *r, struct gnn_minibatch *mb, uint32_t array)
{
	return r->e->emb == NULL ? GNN_OK : tr_emb_attach(r->e->emb, mb, array);
}

/* Accuracy over this rank's slice of nodes, summed over ranks (the
 * embedding pulls count as evaluation). */
static int evaluate(struct run *r, const int64_t *nodes, size_t n, const char *what, uint64_t seed, uint32_t array,
		    double *acc)
{
	const struct tr_config *c = r->c;
	size_t lo = (size_t)((uint64_t)n * c->rank / c->world), hi = (size_t)((uint64_t)n * (c->rank + 1) / c->world);
	struct tr_job job = { .seeds = nodes + lo, .n = hi - lo, .batch = c->eval_batch, .num_layers = c->layers,
			      .num_rels = c->num_rels, .fanouts = c->eval_fanouts,
			      .flags = GNN_MB_FEATURES | GNN_MB_LABELS, .seed = seed, .what = what };
	double counts[2] = { 0, 0 }, t0 = gnn_now(), waited;
	char err[512];
	int rc = GNN_OK;

	if (job.n > 0 && (rc = tr_loader_begin(r->loader, &job)) != GNN_OK)
		return rc;
	for (size_t k = 0; job.n > 0 && k < (job.n + job.batch - 1) / job.batch; k++) {
		struct tr_batch *b;

		if ((rc = tr_loader_next(r->loader, &b, &waited)) != GNN_OK)
			break;
		if ((rc = attach(r, &b->mb, array)) != GNN_OK) {
			tr_batch_free(b);
			break;
		}
		if ((rc = tr_model_check(r->model, &b->mb, true, err, sizeof(err))) != GNN_OK ||
		    (rc = tr_model_predict(r->model, &b->mb, r->pred)) != GNN_OK) {
			GNN_ERROR("bad_minibatch", "what=%s step=%zu reason=\"%s\"", what, k, err);
			tr_batch_free(b);
			break;
		}
		for (uint32_t i = 0; i < b->mb.num_seeds; i++)
			if (b->mb.labels[i] >= 0) {
				counts[0] += r->pred[i] == b->mb.labels[i];
				counts[1] += 1;
			}
		tr_batch_free(b);
	}
	if (job.n > 0)
		tr_loader_end(r->loader);
	if (rc != GNN_OK)
		return rc;
	add_phase(r, PH_EVAL, gnn_now() - t0);
	t0 = gnn_now();
	rc = tr_ring_allreduce_f64(r->e->ring, counts, 2);
	add_phase(r, PH_ALLREDUCE, gnn_now() - t0);
	*acc = counts[1] > 0 ? counts[0] / counts[1] : 0.0;
	return rc;
}

/* ---- link prediction (docs/training.md, "Link prediction") ---- */

/* The edge split and this rank's share of the training edges from --data.
 * The trainer reads them from the partition output itself: the held-out
 * pairs are not in the graph the samplers serve, and the training edges
 * are exactly the relation's edges in the partitions' CSRs (mapped, so a
 * rank touches the pages of the whole list once per start). */
static int load_link(struct run *r)
{
	const struct tr_config *c = r->c;
	const struct gnn_layout *g = r->e->graph;
	int64_t *all = NULL;
	size_t n = 0, lo, hi;
	uint64_t cap;
	int rc;

	if ((rc = gnn_meta_load(c->data, &r->meta)) != GNN_OK)
		return rc;
	if (r->meta.layout.num_nodes != g->num_nodes || r->meta.layout.num_edges != g->num_edges ||
	    r->meta.layout.num_parts != g->num_parts) {
		GNN_ERROR("bad_config", "data=%s nodes=%" PRId64 " edges=%" PRId64 " samplers_nodes=%" PRId64
			  " samplers_edges=%" PRId64 " reason=\"--data is not the partition output the samplers serve\"",
			  c->data, r->meta.layout.num_nodes, r->meta.layout.num_edges, g->num_nodes, g->num_edges);
		return GNN_EINVAL;
	}
	if ((rc = gnn_edge_split_open(c->data, &r->meta, 0, &r->es)) != GNN_OK) {
		GNN_ERROR("bad_config", "data=%s code=%s reason=\"--task link needs an edge split: partition with "
			  "gnn-partition --edge-split 0.85,0.05,0.10 (docs/partitioning.md)\"", c->data, gnn_errname(rc));
		return rc == GNN_ENOENT ? GNN_EINVAL : rc;
	}
	if ((rc = tr_train_edges(c->data, &r->meta, r->es.rel, &all, &n)) != GNN_OK)
		return rc;
	if (n < c->world || r->es.num[GNN_ES_VALID] == 0) {
		GNN_ERROR("bad_config", "train_edges=%zu valid_pairs=%" PRId64 " world_size=%" PRIu32 " reason=\"too few "
			  "training edges for the trainers, or no validation pairs\"", n, r->es.num[GNN_ES_VALID], c->world);
		free(all);
		return GNN_EINVAL;
	}
	/* contiguous shares in partition order, padded to one size: every rank
	 * takes the same number of steps, as with nodes (load_nodes) */
	lo = (size_t)((uint64_t)n * c->rank / c->world);
	hi = (size_t)((uint64_t)n * (c->rank + 1) / c->world);
	r->ntrain = hi - lo;
	r->per_rank = r->per_epoch = (n + c->world - 1) / c->world;
	cap = (c->epoch_pairs + c->world - 1) / c->world;   /* --epoch-pairs, 0: none */
	if (cap > 0 && cap < r->per_rank)
		r->per_epoch = (size_t)cap;
	r->steps = (uint32_t)((r->per_epoch + c->batch - 1) / c->batch);
	r->tpairs = malloc(2 * r->ntrain * sizeof(int64_t));
	r->epoch_pairs = malloc(2 * r->per_rank * sizeof(int64_t));
	r->negs = malloc(2 * (size_t)c->batch * c->neg_k * sizeof(int64_t));
	if (r->tpairs == NULL || r->epoch_pairs == NULL || r->negs == NULL) {
		free(all);
		return GNN_ENOMEM;
	}
	memcpy(r->tpairs, all + 2 * lo, 2 * r->ntrain * sizeof(int64_t));
	free(all);
	GNN_INFO("work_split", "task=link relation=%s train_edges=%zu share=%zu padded_to=%zu per_epoch=%zu "
		 "steps_per_epoch=%" PRIu32 " valid_pairs=%" PRId64 " test_pairs=%" PRId64 " eval_negatives=%" PRIu32
		 " neg_k=%" PRIu32 " neg=%s decoder=%s emb_dim=%" PRIu32 " exclude=%s", g->schema->rels[r->es.rel].name, n,
		 r->ntrain, r->per_rank, r->per_epoch, r->steps, r->es.num[GNN_ES_VALID], r->es.num[GNN_ES_TEST],
		 r->es.eval_negatives, c->neg_k, c->neg_in_batch ? "in_batch" : "uniform", tr_decoder_name(c->decoder),
		 c->emb_dim, c->exclude ? "on" : "off");
	if (!c->exclude)
		GNN_WARN("exclusion_off", "reason=\"--exclude off: each step's positive edges (and their reverses) "
			 "stay in the sampled neighbourhoods, so the model reads the very edge it scores; training "
			 "scores are inflated against the held-out ones\"");
	return GNN_OK;
}

/* The epoch's steps: this rank's edges shuffled with (seed, epoch, rank)
 * and padded, the first per_epoch of them (--epoch-pairs: another sample
 * each epoch), batch positives per step, each with neg_k negatives: its
 * source and a destination drawn uniformly over the destination type, or
 * (--neg-in-batch) the destinations of the next neg_k positives of the
 * step, which reuse endpoints the step samples anyway. */
static int link_epoch(struct run *r, uint32_t epoch)
{
	const struct tr_config *c = r->c;
	const struct gnn_layout *g = r->e->graph;
	uint32_t dt = g->schema->rels[r->es.rel].dst;
	int64_t nd = g->schema->types[dt].num_nodes;
	size_t n = r->ntrain;
	uint64_t s = gnn_draw64(gnn_draw64(c->seed ^ 0x73687566ull, epoch), c->rank);
	int rc;

	memcpy(r->epoch_pairs, r->tpairs, 2 * n * sizeof(int64_t));
	for (size_t i = n; i > 1; i--) {
		size_t j;
		int64_t t0, t1;

		s = gnn_draw64(s, i);
		j = (size_t)(s % i);
		t0 = r->epoch_pairs[2 * (i - 1)];
		t1 = r->epoch_pairs[2 * (i - 1) + 1];
		r->epoch_pairs[2 * (i - 1)] = r->epoch_pairs[2 * j];
		r->epoch_pairs[2 * (i - 1) + 1] = r->epoch_pairs[2 * j + 1];
		r->epoch_pairs[2 * j] = t0;
		r->epoch_pairs[2 * j + 1] = t1;
	}
	for (size_t i = n; i < r->per_rank; i++) {
		r->epoch_pairs[2 * i] = r->epoch_pairs[2 * (i - n)];
		r->epoch_pairs[2 * i + 1] = r->epoch_pairs[2 * (i - n) + 1];
	}
	tr_pair_steps_reset(&r->ps);
	for (uint32_t k = 0; k < r->steps; k++) {
		size_t first = (size_t)k * c->batch, b = r->per_epoch - first < c->batch ? r->per_epoch - first : c->batch;
		const int64_t *pos = r->epoch_pairs + 2 * first;
		uint64_t key = gnn_draw64(gnn_draw64(gnn_draw64(c->seed ^ 0x6e6567ull, epoch), c->rank), k);
		size_t nn = 0;

		for (size_t i = 0; i < b; i++)
			for (uint32_t q = 1; q <= c->neg_k; q++) {
				int64_t v;

				if (c->neg_in_batch) {
					if (b < 2)
						continue;
					v = pos[2 * ((i + q) % b) + 1];
				} else {
					v = tr_type_node(g, dt, (int64_t)(gnn_draw64(key, i * c->neg_k + q) % (uint64_t)nd));
				}
				r->negs[2 * nn] = pos[2 * i];
				r->negs[2 * nn + 1] = v;
				nn++;
			}
		if ((rc = tr_pair_steps_add(&r->ps, pos, b, r->negs, nn)) != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

/* A link step's computation on minibatch b: the seeds' embeddings,
 * binary cross-entropy over the step's pairs, the decoder's gradient into
 * grads[nm..] and the model's through the embeddings into grads[..nm).
 * st: loss and labelled as the node task's (pairs for seeds); correct
 * carries the step's AUC times its pairs (the epoch line's train_auc). */
static int link_step(struct run *r, const struct tr_batch *b, uint64_t dropout_seed, struct tr_step_stats *st)
{
	const struct tr_pair_steps *ps = &r->ps;
	size_t k = b->step, d = r->c->emb_dim, npos = ps->excl_off[k + 1] - ps->excl_off[k],
	       n = ps->pair_off[k + 1] - ps->pair_off[k], ns = ps->step_off[k + 1] - ps->step_off[k];
	const float *emb;
	double auc = 0, ap;
	int rc;

	memset(st, 0, sizeof(*st));
	if (b->mb.num_seeds != ns)
		return GNN_EPROTO;
	if ((rc = tr_model_forward(r->model, &b->mb, true, dropout_seed, &emb)) != GNN_OK ||
	    (rc = tr_fbuf_reserve(&r->demb, ns * d)) != GNN_OK || (rc = tr_fbuf_reserve(&r->scores, n)) != GNN_OK)
		return rc;
	memset(r->demb.p, 0, ns * d * sizeof(float));
	memset(r->grads + r->nm, 0, (r->np - r->nm) * sizeof(float));
	if ((rc = tr_link_loss(&r->dec, r->params + r->nm, emb, d, ps->pairs + 2 * ps->pair_off[k], n, npos, &st->loss,
			       r->scores.p, r->demb.p, r->grads + r->nm)) != GNN_OK ||
	    (rc = tr_model_backward(r->model, &b->mb, r->demb.p)) != GNN_OK)
		return rc;
	if (r->grads != tr_model_grads(r->model))
		memcpy(r->grads, tr_model_grads(r->model), r->nm * sizeof(float));
	if (n > npos && npos > 0)
		(void)tr_auc_ap(r->scores.p, npos, r->scores.p + npos, n - npos, &auc, &ap);
	st->labelled = (uint32_t)n;
	st->correct = (uint32_t)llround(auc * (double)n);
	return GNN_OK;
}

/* This rank's share [lo, hi) of the set's positive and negative pairs,
 * scored: the positives' scores into mine[0..], the negatives' into
 * mine[per..]. */
static int score_pairs(struct run *r, int set, const char *what, uint64_t seed, uint32_t array, size_t lo,
		       size_t hi, size_t per, float *mine)
{
	const struct tr_config *c = r->c;
	size_t chunk = c->eval_batch / 2 > 0 ? c->eval_batch / 2 : 1, d = c->emb_dim, got = 0;
	struct tr_job job = { .batch = c->eval_batch, .num_layers = c->layers, .num_rels = c->num_rels,
			      .fanouts = c->eval_fanouts, .flags = GNN_MB_FEATURES, .seed = seed, .what = what };
	double waited;
	int rc;

	tr_pair_steps_reset(&r->ps);
	for (size_t i = lo; i < hi; i += chunk) {
		size_t m = hi - i < chunk ? hi - i : chunk;

		if ((rc = tr_pair_steps_add(&r->ps, r->es.pos[set] + 2 * i, m, r->es.neg[set] + 2 * i, m)) != GNN_OK)
			return rc;
	}
	job.seeds = r->ps.seeds;
	job.step_off = r->ps.step_off;
	job.steps = r->ps.steps;
	job.n = r->ps.steps > 0 ? r->ps.step_off[r->ps.steps] : 0;
	if (job.steps == 0)
		return GNN_OK;
	if ((rc = tr_loader_begin(r->loader, &job)) != GNN_OK)
		return rc;
	for (size_t k = 0; k < job.steps; k++) {
		struct tr_batch *b;
		const float *emb;
		size_t m = r->ps.excl_off[k + 1] - r->ps.excl_off[k];
		double loss;

		if ((rc = tr_loader_next(r->loader, &b, &waited)) != GNN_OK)
			break;
		if ((rc = attach(r, &b->mb, array)) == GNN_OK &&
		    (rc = b->mb.num_seeds == r->ps.step_off[k + 1] - r->ps.step_off[k] ? GNN_OK : GNN_EPROTO) == GNN_OK &&
		    (rc = tr_model_forward(r->model, &b->mb, false, 0, &emb)) == GNN_OK &&
		    (rc = tr_fbuf_reserve(&r->scores, 2 * m)) == GNN_OK)
			rc = tr_link_loss(&r->dec, r->params + r->nm, emb, d, r->ps.pairs + 2 * r->ps.pair_off[k], 2 * m, m,
					  &loss, r->scores.p, NULL, NULL);
		tr_batch_free(b);
		if (rc != GNN_OK)
			break;
		memcpy(mine + got, r->scores.p, m * sizeof(float));
		memcpy(mine + per + got, r->scores.p + m, m * sizeof(float));
		got += m;
	}
	tr_loader_end(r->loader);
	return rc;
}

/* AUC and AP of held-out set `set` (GNN_ES_*: its positives against its
 * one negative each), GAE's protocol: each rank scores its slice of the
 * pairs from embeddings sampled with --eval-fanouts (no exclusion: the
 * held-out edges are not in the graph), the ranks gather every score.
 * array: the learnable embeddings' rows read (GNN_EMB_ROWS, or
 * GNN_EMB_BEST_ROWS to test the best epoch's), as evaluate's. */
static int link_evaluate(struct run *r, int set, const char *what, uint64_t seed, uint32_t array, double *auc,
			 double *ap)
{
	const struct tr_config *c = r->c;
	size_t n = (size_t)r->es.num[set], W = c->world, per = (n + W - 1) / W;
	size_t lo = (size_t)((uint64_t)n * c->rank / W), hi = (size_t)((uint64_t)n * (c->rank + 1) / W);
	float *mine = calloc(2 * per, sizeof(float)), *all = calloc(2 * per * W, sizeof(float)), *pos = NULL, *neg;
	double t0 = gnn_now();
	int rc = GNN_ENOMEM;

	if (mine == NULL || all == NULL || (rc = score_pairs(r, set, what, seed, array, lo, hi, per, mine)) != GNN_OK)
		goto out;
	add_phase(r, PH_EVAL, gnn_now() - t0);
	t0 = gnn_now();
	rc = tr_ring_allgather(r->e->ring, mine, 2 * per * sizeof(float), all);
	add_phase(r, PH_ALLREDUCE, gnn_now() - t0);
	if (rc != GNN_OK)
		goto out;
	/* rank q's slice: its first (hi_q - lo_q) entries of each half */
	if ((pos = malloc(2 * n * sizeof(float))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	neg = pos + n;
	for (size_t q = 0, at = 0; q < W; q++) {
		size_t m = (size_t)((uint64_t)n * (q + 1) / W) - (size_t)((uint64_t)n * q / W);

		memcpy(pos + at, all + 2 * per * q, m * sizeof(float));
		memcpy(neg + at, all + 2 * per * q + per, m * sizeof(float));
		at += m;
	}
	rc = tr_auc_ap(pos, n, neg, n, auc, ap);
out:
	free(mine);
	free(all);
	free(pos);
	return rc;
}

/* ---- resume ---- */

enum { RS_STATUS, RS_FINISHED, RS_EPOCHS, RS_TEST, RS_BESTVAL, RS_BESTEPOCH, RS_CRC, RS_TRAIN_S, RS_CKPT,
       RS_CKPT_EPOCH, RS_CKPT_STEP, RS_LOSS, RS_LABELLED, RS_CORRECT, RS_ADAM_T, RS_TEST_NODES, RS_COUNT };

/* The epochs a run of c trains at most, as far as is known before it
 * plans them (plan_epochs): --epochs 0 is decided then, and its run is
 * finished once it wrote its result. */
static uint32_t epochs_cap(const struct tr_config *c)
{
	return c->epochs > 0 ? c->epochs : UINT32_MAX;
}

/* A mid-epoch position means the same steps only with the same world size
 * and batch size; otherwise the epoch starts again from these parameters. */
static uint32_t usable_step(const struct tr_config *c, const struct tr_ckpt *ck)
{
	if (ck->step == 0 || ck->epoch >= epochs_cap(c))
		return 0;
	if (ck->world == c->world && ck->batch == c->batch)
		return ck->step;
	GNN_WARN("checkpoint_step_ignored", "epoch=%" PRIu32 " step=%" PRIu32 " world=%" PRIu32 " batch=%" PRIu32
		 " now_world=%" PRIu32 " now_batch=%" PRIu32 " reason=\"written with another world or batch size: "
		 "the epoch starts again from its parameters\"", ck->epoch, ck->step, ck->world, ck->batch,
		 c->world, c->batch);
	return 0;
}

/* Rank 0 sets the graph stores' embeddings up under a new generation *gen
 * (the others learn it over the ring): from the seed, or from checkpoint
 * folder ckpt. */
static int setup_embeddings(struct run *r, const char *ckpt, uint64_t *gen)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*gen = gnn_draw64(gnn_draw64((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, (uint64_t)getpid()),
			  r->c->seed) | 1;
	return tr_emb_setup(r->e->emb, *gen, ckpt);
}

/* The reason a checkpoint or result of dir is not this run's: the first
 * model option that differs when it recorded its configuration. */
static void log_mismatch(const struct tr_config *c, const char *what, bool has_config,
			 const struct gnn_model_cfg *theirs)
{
	char mine[256], old[256];
	size_t row;

	if (has_config && gnn_mcfg_differs(&c->mcfg, theirs, GNN_MCFG_MODEL, &row)) {
		gnn_mcfg_format(&c->mcfg, row, mine, sizeof(mine));
		gnn_mcfg_format(theirs, row, old, sizeof(old));
		GNN_ERROR("checkpoint_mismatch", "dir=%s holds=%s option=%s given=%s trained=%s reason=\"it belongs "
			  "to a run of another model: use another --checkpoint-dir or remove it\"", c->checkpoint_dir,
			  what, gnn_mcfg_row(row)->name, mine, old);
		return;
	}
	GNN_ERROR("checkpoint_mismatch", "dir=%s holds=%s reason=\"it was written for another model, task or graph "
		  "(layers, hidden, features, classes, --task, --decoder, --emb-dim or partition output differ): use "
		  "another --checkpoint-dir or remove it\"", c->checkpoint_dir, what);
}

/* Rank 0's look at the checkpoint dir, into st (RS_*) and *ck: a finished
 * result of this run, or the newest usable checkpoint. */
static void inspect_checkpoints(struct run *r, uint64_t mh, double *st, struct tr_ckpt *ck)
{
	const struct tr_config *c = r->c;
	struct tr_ckpt_extra extra = { .check = tr_emb_check_ckpt, .ctx = r->e->emb };
	struct gnn_result prev;
	bool found = false, have_ck = false;
	int rc;

	if ((rc = tr_result_load(c->checkpoint_dir, &prev, &found)) != GNN_OK) {
		st[RS_STATUS] = rc;
		return;
	}
	if (found && prev.model_hash != mh) {
		log_mismatch(c, "result.json", prev.has_config, &prev.config);
		st[RS_STATUS] = GNN_EINVAL;
		return;
	}
	if (found && (c->epochs == 0 || prev.epochs >= c->epochs)) {
		st[RS_FINISHED] = 1;
		st[RS_EPOCHS] = prev.epochs;
		st[RS_TEST] = prev.test_acc;
		st[RS_BESTVAL] = prev.best_val_acc;
		st[RS_BESTEPOCH] = prev.best_epoch;
		st[RS_CRC] = prev.params_crc;
		st[RS_TRAIN_S] = prev.train_s;
		st[RS_TEST_NODES] = (double)prev.test_nodes;
		return;
	}
	if ((rc = tr_ckpt_load_latest(c->checkpoint_dir, r->e->emb != NULL ? &extra : NULL, ck, &have_ck)) != GNN_OK) {
		st[RS_STATUS] = rc;
	} else if (have_ck && (ck->model_hash != mh || ck->num_params != r->np)) {
		log_mismatch(c, ck->folder, ck->has_config, &ck->config);
		st[RS_STATUS] = GNN_EINVAL;
	} else if (have_ck) {
		st[RS_CKPT] = 1;
		st[RS_CKPT_EPOCH] = ck->epoch > epochs_cap(c) ? epochs_cap(c) : ck->epoch;
		st[RS_CKPT_STEP] = usable_step(c, ck);
		if (st[RS_CKPT_STEP] > 0)
			memcpy(&st[RS_LOSS], ck->partial, sizeof(ck->partial));
		st[RS_ADAM_T] = (double)ck->adam_t;
		st[RS_BESTVAL] = ck->best_val_acc;
		st[RS_BESTEPOCH] = ck->best_epoch;
	}
}

/* Every rank takes the checkpoint rank 0 loaded (ck, rank 0's only) at the
 * position st tells. */
static int take_checkpoint(struct run *r, const double *st, const struct tr_ckpt *ck)
{
	const struct tr_config *c = r->c;
	float *src[4] = { ck->params, ck->adam_m, ck->adam_v, ck->best };
	float *dst[4] = { r->params, r->adam.m, r->adam.v, r->best };
	int rc;

	for (int i = 0; i < 4; i++) {
		if (c->rank == 0)
			memcpy(dst[i], src[i], r->np * sizeof(float));
		if ((rc = tr_ring_broadcast(r->e->ring, 0, dst[i], r->np * sizeof(float))) != GNN_OK)
			return rc;
	}
	sync_model(r);
	r->start_epoch = (uint32_t)st[RS_CKPT_EPOCH];
	r->start_step = (uint32_t)st[RS_CKPT_STEP];
	if (c->rank == 0)   /* the sums of every rank so far: one rank carries them */
		r->start_sums = (struct epoch_sums){ st[RS_LOSS], st[RS_LABELLED], st[RS_CORRECT] };
	r->adam.t = (uint64_t)st[RS_ADAM_T];
	r->best_val = st[RS_BESTVAL];
	r->best_epoch = (int32_t)st[RS_BESTEPOCH];
	GNN_INFO("resumed", "epoch=%" PRIu32 " step=%" PRIu32 " adam_t=%" PRIu64 " best_val_acc=%.4f "
		 "best_epoch=%" PRId32 " params_crc=%08" PRIx32 " dir=%s", r->start_epoch, r->start_step,
		 r->adam.t, r->best_val, r->best_epoch, tr_params_crc(r->params, r->np),
		 c->checkpoint_dir ? c->checkpoint_dir : "-");
	return GNN_OK;
}

/* Rank 0 reads the checkpoint dir; everyone learns the outcome through the
 * ring (other ranks need no access to the checkpoint volume). */
static int resume(struct run *r, struct gnn_result *res, bool *finished)
{
	const struct tr_config *c = r->c;
	uint64_t mh = tr_model_hash(c, r->e->graph);
	double st[RS_COUNT] = { 0 };
	struct tr_ckpt ck = { 0 };
	uint64_t gen = 0;                   /* the embeddings' generation: rank 0 picks it */
	int rc = GNN_OK;

	*finished = false;
	if (c->rank == 0 && c->checkpoint_dir != NULL)
		inspect_checkpoints(r, mh, st, &ck);
	if (c->rank == 0 && st[RS_STATUS] == 0 && st[RS_FINISHED] == 0 && r->e->emb != NULL &&
	    (rc = setup_embeddings(r, st[RS_CKPT] != 0 ? ck.folder : NULL, &gen)) != GNN_OK)
		st[RS_STATUS] = rc;
	if ((rc = tr_ring_broadcast(r->e->ring, 0, st, sizeof(st))) != GNN_OK ||
	    (rc = tr_ring_broadcast(r->e->ring, 0, &gen, sizeof(gen))) != GNN_OK)
		goto out;
	if (r->e->emb != NULL)
		tr_emb_expect(r->e->emb, gen);
	if (st[RS_STATUS] != 0) {
		if (c->rank != 0)
			GNN_ERROR("checkpoint_refused", "reason=\"rank 0 could not use the checkpoint dir (see its log)\"");
		rc = (int)st[RS_STATUS];
		goto out;
	}
	if (st[RS_FINISHED] != 0) {
		*res = (struct gnn_result){ .epochs = (uint32_t)st[RS_EPOCHS], .model_hash = mh, .test_acc = st[RS_TEST],
					   .best_val_acc = st[RS_BESTVAL], .best_epoch = (int32_t)st[RS_BESTEPOCH],
					   .params_crc = (uint32_t)st[RS_CRC], .train_s = st[RS_TRAIN_S],
					   .test_nodes = (uint64_t)st[RS_TEST_NODES] };
		*finished = true;
		goto out;
	}
	if (st[RS_CKPT] != 0)
		rc = take_checkpoint(r, st, &ck);
out:
	tr_ckpt_free(&ck);
	return rc;
}

/* Rank 0 writes the checkpoint. A failed write (a full or read-only
 * volume) is logged and counted, and training goes on: the run loses at
 * most the work since the last checkpoint that was written. */
static void save_checkpoint(struct run *r, uint32_t epochs_done, uint32_t step, const struct epoch_sums *part)
{
	const struct tr_config *c = r->c;
	double t0 = gnn_now();

	if (c->checkpoint_dir == NULL || c->rank != 0)
		return;
	struct tr_ckpt ck = { .epoch = epochs_done, .step = step, .world = c->world, .batch = c->batch,
			      .partial = { part->loss, part->labelled, part->correct }, .adam_t = r->adam.t,
			      .model_hash = tr_model_hash(c, r->e->graph), .seed = c->seed,
			      .best_val_acc = r->best_val, .best_epoch = r->best_epoch, .num_params = r->np,
			      .params = r->params, .adam_m = r->adam.m, .adam_v = r->adam.v,
			      .best = r->best, .has_config = true, .config = c->mcfg };
	struct tr_ckpt_extra extra = { .save = tr_emb_save, .finish = tr_emb_finish, .ctx = r->e->emb };

	if (r->e->emb != NULL)
		ck.extra = &extra;
	tr_ckpt_save(c->checkpoint_dir, &ck, r->m.ckpt_failures, NULL, 0);   /* logs and counts */
	r->ckpt_at = gnn_now();
	add_phase(r, PH_CHECKPOINT, gnn_now() - t0);
}

/* Every SYNC_STEPS steps the ranks agree whether rank 0's clock says a
 * checkpoint is due (--checkpoint-interval-s): a one-number all-reduce, so
 * that every rank takes it after the same step. Then the epoch's sums so
 * far are summed over ranks into the checkpoint, which rank 0 writes. */
#define SYNC_STEPS 4

static int maybe_checkpoint(struct run *r, uint32_t epoch, uint32_t done, const struct epoch_sums *sums)
{
	const struct tr_config *c = r->c;
	struct epoch_sums part = *sums;
	double due, t0 = gnn_now();
	int rc;

	/* none in the last twentieth of an epoch: its own checkpoint comes
	 * soon, and would wait for this one's commit */
	if (c->checkpoint_dir == NULL || !(c->checkpoint_interval_s > 0) || done % SYNC_STEPS != 0 ||
	    done >= r->steps || r->steps - done < r->steps / 20)
		return GNN_OK;
	due = c->rank == 0 && gnn_now() - r->ckpt_at >= c->checkpoint_interval_s;
	if ((rc = tr_ring_allreduce_f64(r->e->ring, &due, 1)) != GNN_OK || !(due > 0))
		goto out;
	if ((rc = sums_allreduce(r->e->ring, &part)) != GNN_OK)
		goto out;
	add_phase(r, PH_ALLREDUCE, gnn_now() - t0);
	save_checkpoint(r, epoch, done, &part);
	return GNN_OK;
out:
	add_phase(r, PH_ALLREDUCE, gnn_now() - t0);
	return rc;
}

/* ---- one epoch ---- */

/* The step's embedding gradients to the graph stores, before the
 * all-reduce: once it returns on any rank, every store has applied the
 * update of every rank, so the next step reads it. */
static int push_embeddings(struct run *r)
{
	double t0 = gnn_now();
	const float *dh;
	size_t ld;
	int rc;

	if (r->e->emb == NULL)
		return GNN_OK;
	dh = tr_model_input_grad(r->model, &ld);
	if (dh == NULL)
		return GNN_EINTERNAL;
	rc = tr_emb_push(r->e->emb, dh, ld, r->c->rank, r->c->world);
	add_phase(r, PH_EMBED, gnn_now() - t0);
	return rc;
}

/* Epoch `epoch` (0-based) from step `first` on, adding to *sums (in: this
 * rank's share of the steps before `first`); *seconds: how long it took. */
/* The loader's job of epoch's steps: this rank's shuffled seeds, or its
 * steps of node pairs (link). */
static int epoch_job(struct run *r, uint32_t epoch, uint32_t first, struct tr_job *job)
{
	const struct tr_config *c = r->c;
	int rc;

	*job = (struct tr_job){ .seeds = r->epoch_seeds, .n = r->per_rank, .batch = c->batch, .first_step = first,
				.num_layers = c->layers, .num_rels = c->num_rels, .fanouts = c->fanouts,
				.flags = GNN_MB_FEATURES | GNN_MB_LABELS,
				.seed = gnn_draw64(gnn_draw64(c->seed, epoch), c->rank), .what = "train" };
	if (!c->link) {
		epoch_seeds(r, epoch);
		return GNN_OK;
	}
	if ((rc = link_epoch(r, epoch)) != GNN_OK)
		return rc;
	job->seeds = r->ps.seeds;
	job->n = r->ps.step_off[r->ps.steps];
	job->step_off = r->ps.step_off;
	job->steps = r->ps.steps;
	job->flags = GNN_MB_FEATURES;
	if (c->exclude) {
		job->excl = r->ps.excl;
		job->excl_off = r->ps.excl_off;
		job->excl_rel = r->es.rel;
	}
	return GNN_OK;
}

/* With embeddings, the next minibatch if it is there (into *next), its
 * rows pulled beside the step (tr_emb_prefetch). */
static void prefetch_next(struct run *r, struct tr_batch **next)
{
	if (r->e->emb == NULL || next == NULL || !tr_loader_poll(r->loader, next))
		return;
	if (tr_emb_prefetch(r->e->emb, &(*next)->mb) != GNN_OK)
		GNN_WARN("embeddings_prefetch_not_started", "reason=\"no thread could start: the rows are pulled when "
			 "the step starts\"");
}

/* The minibatch taken ahead (NULL: none), given back. */
static void drop_next(struct run *r, struct tr_batch *next)
{
	if (next == NULL)
		return;
	if (r->e->emb != NULL)
		tr_emb_prefetch_drop(r->e->emb);
	tr_batch_free(next);
}

/* Step k's forward and backward on minibatch b (freed): its embedding
 * rows, the minibatch checks, the gradient into r->grads; next (NULL:
 * none) may get the next minibatch (prefetch_next). */
static int compute_step(struct run *r, struct tr_batch *b, uint32_t epoch, uint32_t k, struct tr_step_stats *st,
			struct tr_batch **next)
{
	const struct tr_config *c = r->c;
	uint64_t dropout_seed = gnn_draw64(gnn_draw64(c->seed ^ 0x64726f70ull, r->global_step), c->rank);
	double t0 = gnn_now(), c0;
	char why[512];
	int rc = attach(r, &b->mb, GNN_EMB_ROWS);

	add_phase(r, PH_EMBED, gnn_now() - t0);
	if (rc != GNN_OK)
		goto out;
	prefetch_next(r, next);
	t0 = gnn_now();
	c0 = gnn_thread_cpu_s();
	if ((rc = tr_model_check(r->model, &b->mb, !c->link, why, sizeof(why))) != GNN_OK) {
		GNN_ERROR("bad_minibatch", "what=train epoch=%" PRIu32 " step=%" PRIu32 " reason=\"%s\"", epoch + 1, k,
			  why);
		goto out;
	}
	rc = c->link ? link_step(r, b, dropout_seed, st) : tr_model_train_step(r->model, &b->mb, dropout_seed, st);
	gnn_counter_add(r->m.samples, b->mb.num_seeds);
	if (rc == GNN_OK) {
		add_phase(r, PH_COMPUTE, gnn_now() - t0);
		r->compute_cpu_s += gnn_thread_cpu_s() - c0;
	}
out:
	tr_batch_free(b);
	return rc;
}

/* The step's update: the embeddings' rows pushed, the gradient averaged
 * over the ranks, Adam. */
static int apply_step(struct run *r)
{
	float scale = 1.0f / (float)r->c->world;
	double t0, c0;
	int rc;

	if ((rc = push_embeddings(r)) != GNN_OK)
		return rc;
	t0 = gnn_now();
	if ((rc = tr_ring_allreduce(r->e->ring, r->grads, r->np)) != GNN_OK)
		return rc;
	add_phase(r, PH_ALLREDUCE, gnn_now() - t0);
	t0 = gnn_now();
	c0 = gnn_thread_cpu_s();
	for (size_t i = 0; i < r->np; i++)
		r->grads[i] *= scale;
	tr_adam_step(&r->adam, r->params, r->grads);
	sync_model(r);
	add_phase(r, PH_COMPUTE, gnn_now() - t0);
	r->compute_cpu_s += gnn_thread_cpu_s() - c0;
	return GNN_OK;
}

/* Epoch's steps from first on, adding to *sums; *seconds its time. */
static int train_epoch(struct run *r, uint32_t epoch, uint32_t first, struct epoch_sums *sums, double *seconds)
{
	const struct tr_config *c = r->c;
	double t_epoch = gnn_now(), last_log = t_epoch;
	struct tr_batch *next = NULL;   /* taken ahead: its rows are being pulled */
	struct tr_job job;
	int rc;

	if ((rc = epoch_job(r, epoch, first, &job)) != GNN_OK || (rc = tr_loader_begin(r->loader, &job)) != GNN_OK)
		return rc;
	for (uint32_t k = first; k < r->steps; k++) {
		struct tr_step_stats st;
		struct tr_batch *b = next;
		double waited = 0, done, eta_s, el;

		next = NULL;
		if (b == NULL && (rc = tr_loader_next(r->loader, &b, &waited)) != GNN_OK)
			break;
		add_phase(r, PH_WAIT, waited);
		if ((rc = compute_step(r, b, epoch, k, &st, k + 1 < r->steps ? &next : NULL)) != GNN_OK ||
		    (rc = apply_step(r)) != GNN_OK)
			break;
		sums->loss += st.loss * st.labelled;
		sums->labelled += st.labelled;
		sums->correct += st.correct;
		r->global_step++;
		gnn_counter_inc(r->m.steps);
		gnn_gauge_set(r->m.step, k + 1);
		progress(r, &done, &eta_s);
		if ((rc = maybe_checkpoint(r, epoch, k + 1, sums)) != GNN_OK)
			break;
		if (gnn_now() - last_log < c->log_interval_s || k + 1 >= r->steps)
			continue;
		el = gnn_now() - t_epoch;
		GNN_INFO("progress", "epoch=%" PRIu32 " step=%" PRIu32 "/%" PRIu32 " loss=%.4f samples_per_s=%.0f "
			 "done=%.4f eta_s=%.1f", epoch + 1, k + 1, r->steps,
			 sums->labelled > 0 ? sums->loss / sums->labelled : 0.0,
			 el > 0 ? (double)(k + 1 - first) * c->batch / el : 0.0, done, eta_s);
		last_log = gnn_now();
	}
	drop_next(r, next);
	tr_loader_end(r->loader);
	*seconds = gnn_now() - t_epoch;
	return rc;
}

static void run_free(struct run *r)
{
	if (r->model != NULL && r->params != tr_model_params(r->model)) {
		free(r->params);
		free(r->grads);
	}
	gnn_edge_split_close(&r->es);
	if (r->meta.json != NULL)
		gnn_meta_free(&r->meta);
	free(r->tpairs);
	free(r->epoch_pairs);
	free(r->negs);
	tr_pair_steps_free(&r->ps);
	free(r->demb.p);
	free(r->scores.p);
	tr_loader_free(r->loader);
	tr_model_free(r->model);
	tr_adam_free(&r->adam);
	free(r->best);
	free(r->train);
	free(r->valid);
	free(r->test);
	free(r->epoch_seeds);
	free(r->pred);
}

static int setup(struct run *r)
{
	const struct tr_config *c = r->c;
	struct tr_model_cfg mc;
	struct tr_loader_opts lo = { .samplers = r->e->samplers, .depth = c->prefetch, .rank = c->rank,
				     .stop = r->e->stop };
	int rc;

	tr_config_model(c, r->e->graph, r->e->emb, &r->mschema, &mc);
	for (uint32_t t = 0; r->e->emb != NULL && t < r->mschema.num_types; t++)
		if (tr_emb_dim(r->e->emb, t) > 0)   /* the embeddings' rows learn */
			mc.input_grad |= (uint64_t)1 << t;
	if ((rc = register_metrics(&r->m, r->e->metrics)) != GNN_OK || (rc = tr_model_new(&mc, &r->model)) != GNN_OK)
		return rc;
	if ((rc = model_metrics(&r->m, r->e->metrics, r->model)) != GNN_OK)
		return rc;
	lo.hedges = r->m.hedges;
	lo.feats = r->e->feats;
	memcpy(lo.mb_bytes, r->m.mb_bytes, sizeof(lo.mb_bytes));
	tr_model_init(r->model, c->seed);
	r->nm = r->np = tr_model_num_params(r->model);
	r->params = tr_model_params(r->model);
	r->grads = tr_model_grads(r->model);
	if (c->link) {
		r->dec = tr_config_decoder(c);
		r->np += tr_decoder_num_params(&r->dec);
	}
	if (r->np > r->nm) {
		if ((r->params = malloc(r->np * sizeof(float))) == NULL ||
		    (r->grads = calloc(r->np, sizeof(float))) == NULL)
			return GNN_ENOMEM;
		memcpy(r->params, tr_model_params(r->model), r->nm * sizeof(float));
		tr_decoder_init(&r->dec, r->params + r->nm, c->seed);
	}
	r->best_val = -1;
	r->best_epoch = 0;
	if ((rc = tr_adam_init(&r->adam, r->np, c->lr, c->weight_decay)) != GNN_OK)
		return rc;
	if ((r->best = malloc(r->np * sizeof(float))) == NULL)
		return GNN_ENOMEM;
	memcpy(r->best, r->params, r->np * sizeof(float));
	GNN_INFO("model", "layers=%" PRIu32 " in_dim=%" PRIu32 " hidden=%" PRIu32 " classes=%" PRIu32 " params=%zu "
		 "params_crc=%08" PRIx32 " name=%s", c->layers, mc.in_dim, c->hidden, mc.num_classes, r->np,
		 tr_params_crc(r->params, r->np), tr_model_config(r->model)->model);
	return tr_loader_new(&lo, &r->loader);
}

/* The gauges of a run found finished. */
static void publish(const struct metrics *m, const struct gnn_result *res)
{
	gnn_gauge_set(m->epoch, res->epochs);
	gnn_gauge_set(m->test_acc, res->test_acc);
	gnn_gauge_set(m->val_acc, res->best_val_acc);
	gnn_gauge_set(m->finished, 1);
	gnn_gauge_set(m->progress, 1);
	gnn_gauge_set(m->eta, 0);
}

int tr_publish_result(struct gnn_metrics *reg, const struct gnn_result *res)
{
	struct metrics m;
	int rc = register_metrics(&m, reg);

	if (rc == GNN_OK)
		publish(&m, res);
	return rc;
}

/* The hot-feature cache (feats.h): this rank's training seeds, shuffled
 * apart from every epoch's, presampled without features or labels; each
 * minibatch's input nodes count toward their hotness. */
static int warm_cache(struct run *r)
{
	const struct tr_config *c = r->c;
	uint32_t nb = c->cache_presample;
	struct tr_job job = { .seeds = r->epoch_seeds, .batch = c->batch, .num_layers = c->layers,
			      .num_rels = c->num_rels, .fanouts = c->fanouts, .flags = 0,
			      .seed = gnn_draw64(c->seed ^ 0x686f74ull, c->rank), .what = "presample" };
	double t0 = gnn_now();
	int rc;

	epoch_seeds(r, UINT32_MAX);
	job.n = r->per_rank < (size_t)nb * c->batch ? r->per_rank : (size_t)nb * c->batch;
	if ((rc = tr_loader_begin(r->loader, &job)) != GNN_OK)
		return rc;
	for (;;) {
		struct tr_batch *b;
		double waited;

		if ((rc = tr_loader_next(r->loader, &b, &waited)) != GNN_OK)
			break;
		rc = tr_feats_count(r->e->feats, &b->mb);
		tr_batch_free(b);
		if (rc != GNN_OK)
			break;
	}
	tr_loader_end(r->loader);
	if (rc != GNN_ERANGE)   /* past the last step: all presampled */
		return rc;
	GNN_INFO("presampled", "minibatches=%" PRIu32 " seconds=%.1f", (uint32_t)((job.n + c->batch - 1) / c->batch),
		 gnn_now() - t0);
	return tr_feats_build(r->e->feats);
}

/* Where the epoch's feature rows came from (with --features-from stores),
 * validation included. */
static void log_features(struct run *r, uint32_t epoch)
{
	struct tr_feats_stats now;
	double cached, stored;

	if (r->e->feats == NULL)
		return;
	tr_feats_stats(r->e->feats, &now);
	cached = (double)(now.cached_rows - r->feats_seen.cached_rows);
	stored = (double)(now.store_rows - r->feats_seen.store_rows);
	GNN_INFO("features", "epoch=%" PRIu32 " rows_cached=%.0f rows_from_stores=%.0f cache_hit=%.3f "
		 "from_stores_mb=%.1f", epoch, cached, stored, cached + stored > 0 ? cached / (cached + stored) : 0.0,
		 (double)(now.store_bytes - r->feats_seen.store_bytes) / 1048576.0);
	r->feats_seen = now;
}

/* Data parallelism keeps every rank's parameters equal; the result is
 * written only when they are (a rank that differs is a bug, not a result). */
static int ranks_agree(struct run *r, uint32_t crc)
{
	uint32_t world = r->c->world, *all;
	int rc;

	if (world < 2)
		return GNN_OK;
	if ((all = calloc(world, sizeof(*all))) == NULL)
		return GNN_ENOMEM;
	if ((rc = tr_ring_allgather(r->e->ring, &crc, sizeof(crc), all)) == GNN_OK)
		for (uint32_t i = 0; i < world; i++)
			if (all[i] != crc) {
				GNN_ERROR("params_differ", "rank=%u params_crc=%08" PRIx32 " this_rank=%u "
					  "this_params_crc=%08" PRIx32 " reason=\"the ranks ended with different "
					  "parameters: no result is written\"", i, all[i], r->c->rank, crc);
				rc = GNN_EPROTO;
				break;
			}
	free(all);
	return rc;
}

/* --epochs 0 trains AUTO_EPOCHS epochs, or more when they would make
 * fewer than --min-steps optimizer steps: a graph of a thousand labels
 * has one step an epoch at the default batch size, and ten steps do not
 * train a model. */
#define AUTO_EPOCHS 10u

/* The run's epochs and validation period (every rank the same: they
 * follow from the configuration and the split's sizes). An epoch's
 * validation passes forward only (about a third of a training step's
 * work per seed) over this rank's validation nodes: with --eval-every 0
 * it comes every k epochs, k the least for which that is no more than
 * the training of those k epochs (link prediction: every epoch). */
static void plan_epochs(struct run *r)
{
	const struct tr_config *c = r->c;
	size_t val_rank = (r->nvalid + c->world - 1) / c->world, train = r->per_epoch;
	uint32_t want;

	r->epochs = c->epochs;
	if (c->epochs == 0) {
		want = r->steps > 0 ? (c->min_steps + r->steps - 1) / r->steps : AUTO_EPOCHS;
		r->epochs = want > AUTO_EPOCHS ? want : AUTO_EPOCHS;
	}
	r->last_val = r->best_val > 0 ? r->best_val : 0;   /* a resumed run's, until it validates */
	r->eval_every = c->eval_every;
	if (c->eval_every == 0)
		r->eval_every = c->link || train == 0 ? 1 : (uint32_t)((val_rank + 3 * train - 1) / (3 * train));
	if (r->eval_every < 1)
		r->eval_every = 1;
	GNN_INFO("epochs_planned", "epochs=%" PRIu32 " given=%" PRIu32 " steps_per_epoch=%" PRIu32 " min_steps=%" PRIu32
		 " eval_every=%" PRIu32 " valid_nodes=%zu", r->epochs, c->epochs, r->steps, c->min_steps, r->eval_every,
		 r->nvalid);
}

/* Whether epoch (0-based) ends with a validation: every eval_every-th and
 * the last. */
static bool validates(const struct run *r, uint32_t epoch)
{
	return (epoch + 1) % r->eval_every == 0 || epoch + 1 == r->epochs;
}

/* After epoch's steps: its sums over the ranks, validation, the best
 * parameters so far, the metrics, the epoch line and the checkpoint. */
static int end_epoch(struct run *r, uint32_t epoch, uint32_t first, struct epoch_sums *sums, double epoch_s,
		     uint64_t eval_seed, double *done, double *eta_s)
{
	const struct tr_config *c = r->c;
	const struct tr_env *env = r->e;
	double val_acc, rate, loss, train_acc;
	bool validated = validates(r, epoch);
	char embed[32];
	int rc;

	if ((rc = sums_allreduce(env->ring, sums)) != GNN_OK)
		return rc;
	if (!validated) {
		val_acc = r->last_val;
	} else if ((rc = c->link ? link_evaluate(r, GNN_ES_VALID, "valid", eval_seed, GNN_EMB_ROWS, &val_acc,
						 &r->val_ap) :
		    evaluate(r, r->valid, r->nvalid, "valid", eval_seed, GNN_EMB_ROWS, &val_acc)) != GNN_OK) {
		return rc;
	}
	r->last_val = val_acc;
	if (validated && val_acc > r->best_val) {
		r->best_val = val_acc;
		r->best_epoch = (int32_t)epoch + 1;
		memcpy(r->best, r->params, r->np * sizeof(float));
		if (c->rank == 0 && env->emb != NULL && (rc = tr_emb_best(env->emb)) != GNN_OK)
			return rc;
	}
	loss = sums->labelled > 0 ? sums->loss / sums->labelled : 0;
	train_acc = sums->labelled > 0 ? sums->correct / sums->labelled : 0;
	rate = epoch_s > 0 ? (double)r->per_epoch * (r->steps - first) / r->steps / epoch_s : 0;
	gnn_gauge_set(r->m.epoch, epoch + 1);
	gnn_gauge_set(r->m.loss, loss);
	gnn_gauge_set(r->m.train_acc, train_acc);
	gnn_gauge_set(r->m.val_acc, val_acc);
	gnn_gauge_set(r->m.samples_per_s, rate);
	progress(r, done, eta_s);   /* evaluation included */
	/* embed_s only when there are embeddings to pull and push */
	snprintf(embed, sizeof(embed), env->emb != NULL ? " embed_s=%.2f" : "", r->phase_s[PH_EMBED]);
	if (c->link)   /* the same line, with the link task's measures */
		GNN_INFO("link_epoch", "epoch=%" PRIu32 " loss=%.4f train_auc=%.4f val_auc=%.4f val_ap=%.4f",
			 epoch + 1, loss, train_acc, val_acc, r->val_ap);
	GNN_INFO("epoch", "epoch=%" PRIu32 " epochs=%" PRIu32 " loss=%.4f train_acc=%.4f val_acc=%.4f "
		 "epoch_s=%.2f wait_s=%.2f compute_s=%.2f compute_cpu_s=%.2f allreduce_s=%.2f eval_s=%.2f%s "
		 "steps=%" PRIu32 " samples_per_s=%.0f done=%.4f eta_s=%.1f params_crc=%08" PRIx32, epoch + 1, r->epochs,
		 loss, train_acc, val_acc, epoch_s + r->phase_s[PH_EVAL], r->phase_s[PH_WAIT], r->phase_s[PH_COMPUTE],
		 r->compute_cpu_s, r->phase_s[PH_ALLREDUCE], r->phase_s[PH_EVAL], embed, r->steps - first, rate, *done,
		 *eta_s, tr_params_crc(r->params, r->np));
	log_features(r, epoch + 1);
	save_checkpoint(r, epoch + 1, 0, &(struct epoch_sums){ 0 });
	return GNN_OK;
}

/* The epochs from where this process begins (a checkpoint's position). */
static int train_epochs(struct run *r, uint64_t eval_seed)
{
	double done, eta_s;
	int rc;

	if (r->start_step >= r->steps) {   /* cannot happen with the same world and batch size */
		r->start_step = 0;
		r->start_sums = (struct epoch_sums){ 0 };
	}
	if (r->e->feats != NULL)
		tr_feats_stats(r->e->feats, &r->feats_seen);
	r->global_step = (uint64_t)r->start_epoch * r->steps + r->start_step;
	r->pace_step = r->global_step;
	r->pace_t0 = r->ckpt_at = gnn_now();
	progress(r, &done, &eta_s);
	for (uint32_t epoch = r->start_epoch; epoch < r->epochs; epoch++) {
		uint32_t first = epoch == r->start_epoch ? r->start_step : 0;
		struct epoch_sums sums = first > 0 ? r->start_sums : (struct epoch_sums){ 0 };
		double epoch_s = 0;

		memset(r->phase_s, 0, sizeof(r->phase_s));
		r->compute_cpu_s = 0;
		gnn_gauge_set(r->m.step, first);
		if ((rc = train_epoch(r, epoch, first, &sums, &epoch_s)) != GNN_OK ||
		    (rc = end_epoch(r, epoch, first, &sums, epoch_s, eval_seed, &done, &eta_s)) != GNN_OK)
			return rc;
	}
	return GNN_OK;
}

/* The test measure of the best-validation parameters, once every rank
 * holds the same, into *out (rank 0 also writes result.json). */
static int test_and_result(struct run *r, uint64_t eval_seed, double t_train, struct gnn_result *out)
{
	const struct tr_config *c = r->c;
	double test_acc = 0, test_ap = 0, t_test = gnn_now();
	int rc;

	memcpy(r->params, r->best, r->np * sizeof(float));
	sync_model(r);
	if ((rc = c->link ? link_evaluate(r, GNN_ES_TEST, "test", eval_seed ^ 1, GNN_EMB_BEST_ROWS, &test_acc,
					&test_ap) :
	     evaluate(r, r->test, r->ntest, "test", eval_seed ^ 1, GNN_EMB_BEST_ROWS, &test_acc)) != GNN_OK)
		return rc;
	if (c->link) {
		r->ntest = r->test_all = (size_t)r->es.num[GNN_ES_TEST];
		GNN_INFO("link_test_evaluated", "test_auc=%.4f test_ap=%.4f pairs=%zu best_val_auc=%.4f best_epoch=%" PRId32,
			 test_acc, test_ap, r->ntest, r->best_val, r->best_epoch);
	}
	t_test = gnn_now() - t_test;
	if (!c->link)   /* (a link run logged link_test_evaluated above) */
		GNN_INFO("test_evaluated", "test_acc=%.4f nodes=%zu of=%zu seconds=%.2f nodes_per_s=%.0f%s", test_acc,
			 r->ntest, r->test_all, t_test, t_test > 0 ? (double)r->ntest / t_test : 0.0,
			 r->ntest < r->test_all ? " reason=\"a sampled estimate (--test-nodes); the whole split's "
			 "accuracy: gnn-trainer infer\"" : "");
	if ((rc = ranks_agree(r, tr_params_crc(r->best, r->np))) != GNN_OK)
		return rc;
	*out = (struct gnn_result){ .epochs = r->epochs, .model_hash = tr_model_hash(c, r->e->graph),
				   .test_acc = test_acc, .best_val_acc = r->best_val, .best_epoch = r->best_epoch,
				   .params_crc = tr_params_crc(r->best, r->np), .train_s = gnn_now() - t_train,
				   .test_nodes = r->ntest, .test_ap = test_ap, .has_config = true };
	if ((rc = gnn_mcfg_copy(&out->config, &c->mcfg)) != GNN_OK)
		return rc;
	if (c->link) {
		snprintf(out->task, sizeof(out->task), "link");
		snprintf(out->decoder, sizeof(out->decoder), "%s", tr_decoder_name(c->decoder));
	}
	gnn_gauge_set(r->m.test_acc, test_acc);
	gnn_gauge_set(r->m.finished, 1);
	gnn_gauge_set(r->m.progress, 1);
	gnn_gauge_set(r->m.eta, 0);
	/* Not fatal: a restart evaluates the last checkpoint again. The
	 * result names a finished run: its last checkpoint is on the disk. */
	if (c->rank == 0 && c->checkpoint_dir != NULL &&
	    ((rc = tr_ckpt_flush()) != GNN_OK || (rc = gnn_result_save(c->checkpoint_dir, out)) != GNN_OK)) {
		GNN_ERROR("result_not_saved", "dir=%s code=%s", c->checkpoint_dir, gnn_errname(rc));
		gnn_counter_inc(r->m.ckpt_failures);
	}
	return GNN_OK;
}

int tr_train(const struct tr_config *c, const struct tr_env *env, struct gnn_result *out, bool *already_finished)
{
	struct run r = { .c = c, .e = env };
	double t_train = gnn_now();
	uint64_t eval_seed = gnn_draw64(c->seed, 0x6576616cull);
	int rc;

	if ((rc = setup(&r)) != GNN_OK || (rc = resume(&r, out, already_finished)) != GNN_OK)
		goto out;
	if (*already_finished) {
		publish(&r.m, out);
		GNN_INFO("already_finished", "epochs=%" PRIu32 " dir=%s reason=\"the checkpoint dir holds this run's "
			 "result: not retrained\"", out->epochs, c->checkpoint_dir);
		goto out;
	}
	/* (the hot-feature cache is ranked on training nodes: not built for links) */
	if ((rc = c->link ? load_link(&r) : load_nodes(&r)) != GNN_OK ||
	    (!c->link && env->feats != NULL && tr_feats_wants_cache(env->feats) && (rc = warm_cache(&r)) != GNN_OK))
		goto out;
	plan_epochs(&r);
	if ((rc = train_epochs(&r, eval_seed)) == GNN_OK)
		rc = test_and_result(&r, eval_seed, t_train, out);
out:
	tr_ckpt_flush();   /* a checkpoint being committed reaches the disk before the caller goes on */
	run_free(&r);
	return rc;
}
