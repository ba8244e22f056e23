/* loader.c - see loader.h. */
#include "loader.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "err.h"
#include "hash.h"
#include "log.h"
#include "sys.h"

/* Hedging: a request still unanswered after HEDGE_FACTOR times the
 * median of the job's recent answers (and at least HEDGE_MIN_S) is sent
 * again, to another replica, by an idle worker; the first answer is used
 * (any replica gives the same minibatch for the same request). */
#define HEDGE_FACTOR 4.0
#define HEDGE_MIN_S 1.0
#define HEDGE_SAMPLES 32        /* answers the median is taken over */
#define HEDGE_MIN_SAMPLES 4     /* fewer: no hedging yet */
#define IDLE_TICK_MS 100        /* idle workers look for a request to hedge this often */

/* A step's slot: FREE -> FETCHING (claimed; `pending` requests out, 2 once
 * hedged) -> READY (an answer, or the last request's error) -> FREE when
 * taken. Step k lives in slot k % depth. */
enum slot_state { SLOT_FREE, SLOT_FETCHING, SLOT_READY };

struct slot {
	enum slot_state state;
	uint32_t pending;
	bool hedged;
	double started;
	int rc;
	struct tr_batch *b;
	char err[1024];
};

/* Answer times of one kind of job ("train", "valid", "test": their
 * minibatches differ in size), kept across its jobs. */
#define LAT_KINDS 4
struct latency {
	char what[16];
	double lat[HEDGE_SAMPLES];  /* a ring */
	uint32_t n;
	double hedge_after;         /* seconds; 0: not enough answers yet */
};

/* What a worker fetched, for deliver(). */
struct fetched {
	int rc;
	struct tr_batch *b;
	char err[1024];
};

struct tr_loader {
	struct tr_loader_opts o;
	pthread_mutex_t mu;
	pthread_cond_t work, done;  /* work: workers may claim; done: a slot filled or a call ended */
	pthread_t *threads;
	uint32_t nthreads;
	bool closing, active;
	uint64_t generation;        /* bumped by tr_loader_end: late answers are dropped */
	struct tr_job job;
	uint64_t steps, next_claim, consumed;
	uint32_t in_flight;
	struct slot *slots;         /* [depth] */
	uint64_t next_req;
	struct latency kinds[LAT_KINDS];
	struct latency *lat;        /* the current job's kind */
	double hedge_logged;
	struct tr_rowpool *pool;    /* every batch's f32 rows */
};

const char *const tr_mb_kind_names[TR_MB_KINDS] = { "ids", "blocks", "features", "labels" };

void tr_batch_free(struct tr_batch *b)
{
	if (b == NULL)
		return;
	for (uint32_t t = 0; t < GNN_PROTO_MAX_TYPES; t++)
		tr_rowpool_put(b->pool, b->rows[t]);
	gnn_proto_release(b->mb.owned);
	if (b->reply != NULL)
		nng_msg_free(b->reply);
	free(b);
}

/* A sampler's answer of len bytes, counted by kind. */
static void count_bytes(const struct tr_loader *l, const struct gnn_minibatch *mb, size_t len)
{
	double v[TR_MB_KINDS] = { 0 };

	for (uint32_t i = 0; i < mb->num_layers; i++)
		v[TR_MB_IDS] += (double)mb->blocks[i].num_src * sizeof(int64_t);
	v[TR_MB_IDS] += mb->blocks[0].num_src;   /* input types */
	for (uint32_t t = 0; (mb->flags & GNN_MB_FEATURES) && t < mb->num_types; t++)
		v[TR_MB_FEATURES] += (double)mb->type_rows[t] * mb->feat_dims[t] * gnn_dtype_size(mb->feat_dtype);
	if (mb->flags & GNN_MB_LABELS)
		v[TR_MB_LABELS] = (double)mb->num_seeds * sizeof(int32_t);
	v[TR_MB_BLOCKS] = (double)len - v[TR_MB_IDS] - v[TR_MB_FEATURES] - v[TR_MB_LABELS];
	for (int i = 0; i < TR_MB_KINDS; i++)
		if (l->o.mb_bytes[i] != NULL)
			gnn_counter_add(l->o.mb_bytes[i], v[i]);
}

/* Buffers for b's f32 rows, when it needs them: all of them when tr_feats
 * fills the rows, those of rows to widen otherwise (f32 rows stay in the
 * reply). */
static int take_rows(struct tr_loader *l, struct tr_batch *b, bool fill)
{
	const struct gnn_minibatch *mb = &b->mb;

	if (!fill && (!(mb->flags & GNN_MB_FEATURES) || mb->feat_dtype == GNN_DT_F32))
		return GNN_OK;
	for (uint32_t t = 0; t < mb->num_types; t++) {
		size_t n = (size_t)mb->type_rows[t] * mb->feat_dims[t];

		if (n > 0 && (fill || mb->feat[t] != NULL) && (b->rows[t] = tr_rowpool_get(l->pool, n)) == NULL)
			return GNN_ENOMEM;
	}
	return GNN_OK;
}

/* Builds and sends step k's request (seeds: the step's own copy) to the
 * replicas starting at hint; with tr_feats, fills the rows from it. */
static void fetch(struct tr_loader *l, const struct tr_job *job, const int64_t *seeds, uint32_t n,
		  const int64_t *excl, uint32_t nexcl, uint64_t k, uint64_t hint, uint64_t req_id, struct fetched *out)
{
	bool fill = l->o.feats != NULL && (job->flags & GNN_MB_FEATURES);
	struct gnn_minibatch_req req = { .seed = gnn_draw64(job->seed, k),
					  .flags = fill ? job->flags & ~(uint32_t)GNN_MB_FEATURES : job->flags,
					  .num_layers = job->num_layers, .num_rels = job->num_rels,
					  .fanouts = job->fanouts, .seeds = seeds, .num_seeds = n };

	if (excl != NULL) {
		req.flags |= GNN_MB_EXCLUDE;
		req.num_excl = nexcl;
		req.excl_rel = job->excl_rel;
		req.excl = excl;
	}
	struct tr_batch *b = calloc(1, sizeof(*b));

	out->rc = GNN_ENOMEM;
	out->b = NULL;
	out->err[0] = '\0';
	if (b == NULL)
		return;
	b->step = k;
	b->pool = l->pool;
	out->rc = tr_samplers_minibatch(l->o.samplers, hint, req_id, &req, &b->reply, &b->mb, out->err,
					sizeof(out->err));
	if (out->rc != GNN_OK) {
		free(b);
		return;
	}
	count_bytes(l, &b->mb, nng_msg_len(b->reply));
	if ((out->rc = take_rows(l, b, fill)) != GNN_OK ||
	    (!fill && (out->rc = gnn_minibatch_widen(&b->mb, b->rows)) != GNN_OK)) {
		snprintf(out->err, sizeof(out->err), "out of memory for the feature rows");
		tr_batch_free(b);
		return;
	}
	if (fill && (out->rc = tr_feats_fill(l->o.feats, &b->mb, b->rows, out->err, sizeof(out->err))) != GNN_OK) {
		if (out->rc != GNN_ECLOSED)
			GNN_ERROR("features_failed", "what=%s step=%" PRIu64 " reason=\"%s\"", job->what, k, out->err);
		tr_batch_free(b);
		return;
	}
	out->b = b;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* An answer took `s` seconds: the hedging threshold follows the median. */
static void record_latency(struct latency *k, double s)
{
	double v[HEDGE_SAMPLES], med;
	uint32_t n;

	k->lat[k->n++ % HEDGE_SAMPLES] = s;
	n = k->n < HEDGE_SAMPLES ? k->n : HEDGE_SAMPLES;
	if (n < HEDGE_MIN_SAMPLES)
		return;
	memcpy(v, k->lat, n * sizeof(double));
	qsort(v, n, sizeof(double), cmp_double);
	med = v[n / 2];
	k->hedge_after = med * HEDGE_FACTOR > HEDGE_MIN_S ? med * HEDGE_FACTOR : HEDGE_MIN_S;
}

/* The statistics of jobs like this one (the last slot is shared by any
 * further kinds). */
static struct latency *latency_of(struct tr_loader *l, const char *what)
{
	struct latency *k = NULL;

	for (int i = 0; i < LAT_KINDS && k == NULL; i++)
		if (l->kinds[i].what[0] == '\0' || strncmp(l->kinds[i].what, what, sizeof(k->what) - 1) == 0 ||
		    i == LAT_KINDS - 1)
			k = &l->kinds[i];
	if (k->what[0] == '\0')
		snprintf(k->what, sizeof(k->what), "%s", what);
	return k;
}

/* How long the current job's head request may take before it is hedged:
 * its kind's estimate, or, while that kind has too few answers (an
 * evaluation runs a step or two an epoch, the test job one), HEDGE_FACTOR
 * times the largest estimate of another kind (its minibatches are larger,
 * so later); 0 while no kind has one. Without this a sampler that froze
 * under an evaluation's request held it for the request's whole timeout
 * chain (seen in the chaos suite's sampler_frozen_20s). */
static double hedge_after(const struct tr_loader *l)
{
	double other = 0;

	if (l->lat->hedge_after > 0)
		return l->lat->hedge_after;
	for (int i = 0; i < LAT_KINDS; i++)
		if (l->kinds[i].hedge_after > other)
			other = l->kinds[i].hedge_after;
	return HEDGE_FACTOR * other;
}

/* The step at the head of the line, when it should be hedged now. */
static bool hedge_due(struct tr_loader *l)
{
	struct slot *s;
	double after;

	if (!l->active || l->consumed >= l->steps || l->consumed >= l->next_claim || !((after = hedge_after(l)) > 0))
		return false;
	s = &l->slots[l->consumed % l->o.depth];
	return s->state == SLOT_FETCHING && !s->hedged && gnn_now() - s->started >= after &&
	       tr_samplers_live(l->o.samplers) >= 2;
}

/* A request for step k ended (mu held). The first answer fills the slot;
 * a late or duplicate one is dropped; an error fills it only when no other
 * request for the step is still out. */
static void deliver(struct tr_loader *l, uint64_t gen, uint64_t k, bool hedge, struct fetched *got)
{
	struct slot *s = &l->slots[k % l->o.depth];
	bool current = gen == l->generation && k >= l->consumed && s->state == SLOT_FETCHING;

	if (current)
		s->pending--;
	if (!current || (got->rc != GNN_OK && s->pending > 0)) {
		tr_batch_free(got->b);
		return;
	}
	if (got->rc == GNN_OK) {
		if (!hedge)
			record_latency(l->lat, gnn_now() - s->started);
		else if (s->pending > 0)  /* the original is still out: its replica is slow */
			tr_samplers_set_slow(l->o.samplers, k + l->o.rank, gnn_now() - s->started);
	}
	s->state = SLOT_READY;
	s->rc = got->rc;
	s->b = got->b;
	snprintf(s->err, sizeof(s->err), "%s", got->err);
}

/* A step may be claimed now (mu held). */
static bool claimable(const struct tr_loader *l)
{
	return l->active && l->next_claim < l->steps && l->next_claim < l->consumed + l->o.depth;
}

/* Waits (mu held) until the loader closes, a step may be claimed or the
 * head of the line is due a hedge; idle workers look every IDLE_TICK_MS. */
static void wait_work(struct tr_loader *l)
{
	while (!l->closing && !claimable(l) && !hedge_due(l)) {
		struct timespec until;

		gnn_deadline(CLOCK_REALTIME, IDLE_TICK_MS, &until);
		if (l->active)
			pthread_cond_timedwait(&l->work, &l->mu, &until);
		else
			pthread_cond_wait(&l->work, &l->mu);
	}
}

/* Claims the next step, or the head of the line again as a hedge (mu
 * held); *hint is the replica its request starts at. */
static uint64_t claim(struct tr_loader *l, bool hedge, uint64_t *hint)
{
	uint64_t k = hedge ? l->consumed : l->next_claim++;
	struct slot *s = &l->slots[k % l->o.depth];

	if (hedge) {
		s->hedged = true;
		*hint = k + l->o.rank + 1;   /* starts at another replica */
		if (l->o.hedges != NULL)
			gnn_counter_inc(l->o.hedges);
		if (gnn_now() - l->hedge_logged >= 10) {
			GNN_INFO("minibatch_hedged", "what=%s step=%" PRIu64 " waited_s=%.1f hedge_after_s=%.2f "
				 "reason=\"much slower than the others: sent again to another replica\"",
				 l->job.what, k, gnn_now() - s->started, hedge_after(l));
			l->hedge_logged = gnn_now();
		}
	} else {
		*s = (struct slot){ .state = SLOT_FETCHING, .started = gnn_now() };
		*hint = k + l->o.rank;
	}
	s->pending++;
	return k;
}

/* Copies step k's seeds, then its exclusion pairs, into the worker's
 * buffer *seeds (*cap entries, grown): the job ends without waiting for
 * requests still out, and its seed list may then change. */
static int copy_seeds(const struct tr_job *job, uint64_t k, int64_t **seeds, size_t *cap, size_t *n, size_t *nexcl)
{
	size_t first;

	if (job->step_off != NULL) {
		first = job->step_off[k];
		*n = job->step_off[k + 1] - first;
		*nexcl = job->excl != NULL ? job->excl_off[k + 1] - job->excl_off[k] : 0;
	} else {
		first = (size_t)k * job->batch;
		*n = job->n - first < job->batch ? job->n - first : job->batch;
		*nexcl = 0;
	}
	if (*n + 2 * *nexcl > *cap) {
		int64_t *g = realloc(*seeds, (*n + 2 * *nexcl) * sizeof(*g));

		if (g == NULL)
			return GNN_ENOMEM;
		*seeds = g;
		*cap = *n + 2 * *nexcl;
	}
	memcpy(*seeds, job->seeds + first, *n * sizeof(**seeds));
	if (job->excl != NULL)
		memcpy(*seeds + *n, job->excl + 2 * job->excl_off[k], 2 * *nexcl * sizeof(**seeds));
	return GNN_OK;
}

static void *worker(void *arg)
{
	struct tr_loader *l = arg;
	int64_t *seeds = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct tr_job job;
		struct fetched got;
		uint64_t k, gen, req_id, hint;
		size_t n, nexcl;
		bool hedge;

		wait_work(l);
		if (l->closing)
			break;
		hedge = !claimable(l);
		k = claim(l, hedge, &hint);
		gen = l->generation;
		job = l->job;
		req_id = l->next_req++;
		if (copy_seeds(&job, k, &seeds, &cap, &n, &nexcl) != GNN_OK) {
			deliver(l, gen, k, hedge, &(struct fetched){ .rc = GNN_ENOMEM, .err = "out of memory" });
			pthread_cond_broadcast(&l->done);
			continue;
		}
		l->in_flight++;
		pthread_mutex_unlock(&l->mu);

		fetch(l, &job, seeds, (uint32_t)n, job.excl != NULL ? seeds + n : NULL, (uint32_t)nexcl, k, hint, req_id,
		      &got);

		pthread_mutex_lock(&l->mu);
		l->in_flight--;
		deliver(l, gen, k, hedge, &got);
		pthread_cond_broadcast(&l->done);
	}
	pthread_mutex_unlock(&l->mu);
	free(seeds);
	return NULL;
}

int tr_loader_new(const struct tr_loader_opts *o, struct tr_loader **out)
{
	struct tr_loader *l;

	if (o->depth == 0 || o->samplers == NULL)
		return GNN_EINVAL;
	if ((l = calloc(1, sizeof(*l))) == NULL)
		return GNN_ENOMEM;
	l->o = *o;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->work, NULL);
	pthread_cond_init(&l->done, NULL);
	l->next_req = 1;
	if (tr_rowpool_new(&l->pool) != GNN_OK || (l->slots = calloc(o->depth, sizeof(*l->slots))) == NULL ||
	    (l->threads = calloc(o->depth, sizeof(*l->threads))) == NULL)
		goto fail;
	for (uint32_t i = 0; i < o->depth; i++) {
		if (pthread_create(&l->threads[i], NULL, worker, l) != 0)
			goto fail;
		l->nthreads++;
	}
	*out = l;
	return GNN_OK;
fail:
	tr_loader_free(l);
	return GNN_ENOMEM;
}

int tr_loader_begin(struct tr_loader *l, const struct tr_job *job)
{
	if (job->batch == 0)
		return GNN_EINVAL;
	pthread_mutex_lock(&l->mu);
	if (l->active) {
		pthread_mutex_unlock(&l->mu);
		return GNN_EINVAL;
	}
	l->job = *job;
	l->steps = job->step_off != NULL ? job->steps : (job->n + job->batch - 1) / job->batch;
	l->next_claim = l->consumed = job->first_step < l->steps ? job->first_step : l->steps;
	l->lat = latency_of(l, job->what != NULL ? job->what : "-");
	l->active = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	return GNN_OK;
}

int tr_loader_next(struct tr_loader *l, struct tr_batch **b, double *waited)
{
	double t0 = gnn_now(), last_log = t0;
	struct slot *s;
	int rc;

	*b = NULL;
	pthread_mutex_lock(&l->mu);
	if (!l->active || l->consumed >= l->steps) {
		pthread_mutex_unlock(&l->mu);
		return GNN_ERANGE;
	}
	s = &l->slots[l->consumed % l->o.depth];
	while (s->state != SLOT_READY) {
		struct timespec until;

		/* The request itself is bounded (timeouts, retries, replicas,
		 * a hedge); this loop only reports and honours stop. */
		if (l->o.stop != NULL && l->o.stop()) {
			pthread_mutex_unlock(&l->mu);
			return GNN_ECLOSED;
		}
		if (gnn_now() - last_log >= 10) {
			GNN_INFO("waiting_for_minibatch", "what=%s step=%" PRIu64 " in_flight=%u live_samplers=%zu "
				 "waited_s=%.0f", l->job.what, l->consumed, l->in_flight,
				 tr_samplers_live(l->o.samplers), gnn_now() - t0);
			last_log = gnn_now();
		}
		gnn_deadline(CLOCK_REALTIME, 200, &until);
		pthread_cond_timedwait(&l->done, &l->mu, &until);
	}
	rc = s->rc;
	if (rc == GNN_OK)
		*b = s->b;
	else
		GNN_ERROR("minibatch_failed", "what=%s step=%" PRIu64 " code=%s reason=\"%s\"", l->job.what,
			  l->consumed, gnn_errname(rc), s->err);
	s->state = SLOT_FREE;
	s->b = NULL;
	l->consumed++;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	*waited = gnn_now() - t0;
	return rc;
}

bool tr_loader_poll(struct tr_loader *l, struct tr_batch **b)
{
	struct slot *s;

	*b = NULL;
	pthread_mutex_lock(&l->mu);
	if (l->active && l->consumed < l->steps &&
	    (s = &l->slots[l->consumed % l->o.depth])->state == SLOT_READY && s->rc == GNN_OK) {
		*b = s->b;
		s->state = SLOT_FREE;
		s->b = NULL;
		l->consumed++;
		pthread_cond_broadcast(&l->work);
	}
	pthread_mutex_unlock(&l->mu);
	return *b != NULL;
}

/* Waits (mu held) until no request is out; when stopping, cancels them
 * first: a request to a stuck sampler would hold the exit for its whole
 * timeout chain. */
static void drain(struct tr_loader *l, const char *why)
{
	double t0 = gnn_now(), last_log = t0;
	bool aborted = false;

	while (l->in_flight > 0) {
		struct timespec until;

		if (!aborted && l->o.stop != NULL && l->o.stop()) {
			GNN_INFO("abandoning", "what=%s in_flight=%u reason=\"stopping: minibatch requests in flight "
				 "are cancelled\"", l->job.what, l->in_flight);
			tr_samplers_abort(l->o.samplers);
			aborted = true;
		}
		if (gnn_now() - last_log >= 5) {
			GNN_INFO("waiting_for_requests", "what=%s in_flight=%u waited_s=%.0f reason=\"%s\"", l->job.what,
				 l->in_flight, gnn_now() - t0, why);
			last_log = gnn_now();
		}
		gnn_deadline(CLOCK_REALTIME, 200, &until);
		pthread_cond_timedwait(&l->done, &l->mu, &until);
	}
}

void tr_loader_end(struct tr_loader *l)
{
	pthread_mutex_lock(&l->mu);
	l->active = false;
	l->generation++;    /* answers still to come are dropped */
	/* Requests still out (a hedged one whose replica is stuck) are not
	 * waited for, unless the process stops. */
	if (l->o.stop != NULL && l->o.stop())
		drain(l, "stopping");
	for (uint32_t i = 0; i < l->o.depth; i++) {
		tr_batch_free(l->slots[i].b);
		l->slots[i] = (struct slot){ 0 };
	}
	pthread_mutex_unlock(&l->mu);
}

void tr_loader_free(struct tr_loader *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	drain(l, "the loader closes: requests still out (a stuck replica) end first");
	l->closing = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	for (uint32_t i = 0; i < l->nthreads; i++)
		pthread_join(l->threads[i], NULL);
	if (l->slots != NULL)
		for (uint32_t i = 0; i < l->o.depth; i++)
			tr_batch_free(l->slots[i].b);
	tr_rowpool_free(l->pool);
	free(l->slots);
	free(l->threads);
	pthread_cond_destroy(&l->work);
	pthread_cond_destroy(&l->done);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
