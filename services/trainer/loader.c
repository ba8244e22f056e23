/* loader.c - see loader.h. */
#include "loader.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "sys.h"

struct slot {
	bool ready;
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
	struct slot *slots;         /* [depth], step k in k % depth */
	uint64_t next_req;
};

uint64_t tr_mix(uint64_t seed, uint64_t v)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (v + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tr_batch_free(struct tr_batch *b)
{
	if (b == NULL)
		return;
	gnn_proto_release(b->mb.owned);
	if (b->reply != NULL)
		nng_msg_free(b->reply);
	free(b);
}

static void fetch(struct tr_loader *l, const struct tr_job *job, uint64_t k, uint64_t req_id, struct slot *out)
{
	struct gnn_minibatch_req req = { .seed = tr_mix(job->seed, k), .flags = job->flags,
					  .num_layers = job->num_layers };
	size_t first = (size_t)k * job->batch;
	struct tr_batch *b = calloc(1, sizeof(*b));

	out->rc = GNN_ENOMEM;
	out->b = NULL;
	if (b == NULL)
		return;
	memcpy(req.fanouts, job->fanouts, sizeof(req.fanouts));
	req.seeds = job->seeds + first;
	req.num_seeds = (uint32_t)(job->n - first < job->batch ? job->n - first : job->batch);
	b->step = k;
	out->rc = tr_samplers_minibatch(l->o.samplers, k + l->o.rank, req_id, &req, &b->reply, &b->mb, out->err,
					sizeof(out->err));
	if (out->rc != GNN_OK) {
		free(b);
		return;
	}
	out->b = b;
}

static void *worker(void *arg)
{
	struct tr_loader *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct tr_job job;
		struct slot got = { 0 };
		uint64_t k, gen, req_id;

		while (!l->closing && !(l->active && l->next_claim < l->steps &&
					l->next_claim < l->consumed + l->o.depth))
			pthread_cond_wait(&l->work, &l->mu);
		if (l->closing)
			break;
		k = l->next_claim++;
		gen = l->generation;
		job = l->job;
		req_id = l->next_req++;
		l->in_flight++;
		pthread_mutex_unlock(&l->mu);

		fetch(l, &job, k, req_id, &got);

		pthread_mutex_lock(&l->mu);
		l->in_flight--;
		if (gen == l->generation) {
			struct slot *s = &l->slots[k % l->o.depth];

			*s = got;
			s->ready = true;
		} else {
			tr_batch_free(got.b);
		}
		pthread_cond_broadcast(&l->done);
	}
	pthread_mutex_unlock(&l->mu);
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
	if ((l->slots = calloc(o->depth, sizeof(*l->slots))) == NULL ||
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
	l->steps = (job->n + job->batch - 1) / job->batch;
	l->next_claim = l->consumed = 0;
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
	while (!s->ready) {
		struct timespec until;

		/* The request itself is bounded (timeouts, retries, replicas);
		 * this loop only reports and honours stop. */
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
	s->ready = false;
	s->b = NULL;
	l->consumed++;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	*waited = gnn_now() - t0;
	return rc;
}

void tr_loader_end(struct tr_loader *l)
{
	double t0 = gnn_now(), last_log = t0;
	bool aborted = false;

	pthread_mutex_lock(&l->mu);
	l->active = false;
	l->generation++;
	while (l->in_flight > 0) {
		struct timespec until;

		/* Stopping: a request to a stuck sampler would hold the exit
		 * for its whole timeout chain. */
		if (!aborted && l->o.stop != NULL && l->o.stop()) {
			GNN_INFO("abandoning", "what=%s in_flight=%u reason=\"stopping: minibatch requests in flight "
				 "are cancelled\"", l->job.what, l->in_flight);
			tr_samplers_abort(l->o.samplers);
			aborted = true;
		}
		if (gnn_now() - last_log >= 5) {
			GNN_INFO("waiting_for_requests", "what=%s in_flight=%u waited_s=%.0f reason=\"the job ended: "
				 "requests in flight finish first\"", l->job.what, l->in_flight, gnn_now() - t0);
			last_log = gnn_now();
		}
		gnn_deadline(CLOCK_REALTIME, 200, &until);
		pthread_cond_timedwait(&l->done, &l->mu, &until);
	}
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
	l->closing = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	for (uint32_t i = 0; i < l->nthreads; i++)
		pthread_join(l->threads[i], NULL);
	if (l->slots != NULL)
		for (uint32_t i = 0; i < l->o.depth; i++)
			tr_batch_free(l->slots[i].b);
	free(l->slots);
	free(l->threads);
	pthread_cond_destroy(&l->work);
	pthread_cond_destroy(&l->done);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
