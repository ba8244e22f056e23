/* rowpool.c - see rowpool.h. */
#include "rowpool.h"

#include <pthread.h>
#include <stdlib.h>

#include "err.h"

/* Each buffer starts with a header that says its capacity; the rows
 * follow, 64-byte aligned as malloc's 16 would not keep them for AVX. */
#define HEAD 64
/* A new buffer has this much more than asked (1/8): minibatches of one
 * job vary by a few percent, and a buffer that fits the next ones is
 * reused instead of replaced. Pages never written cost no memory. */
#define SLACK_SHIFT 3

struct tr_rowpool {
	pthread_mutex_t mu;
	float **free;      /* [nfree] buffers given back */
	size_t nfree, cap;
	uint64_t made;
};

static size_t capacity(const float *buf)
{
	return *(const size_t *)(const void *)((const char *)buf - HEAD);
}

static void drop(float *buf)
{
	free((char *)buf - HEAD);
}

int tr_rowpool_new(struct tr_rowpool **out)
{
	struct tr_rowpool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return GNN_ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return GNN_OK;
}

void tr_rowpool_free(struct tr_rowpool *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nfree; i++)
		drop(p->free[i]);
	free(p->free);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* The smallest free buffer of at least n floats, else the largest (too
 * small), removed from the list; NULL when none is free (mu held). */
static float *take(struct tr_rowpool *p, size_t n)
{
	size_t best = p->nfree, largest = 0;
	float *b;

	for (size_t i = 0; i < p->nfree; i++) {
		size_t c = capacity(p->free[i]);

		if (c >= n && (best == p->nfree || c < capacity(p->free[best])))
			best = i;
		if (c > capacity(p->free[largest]))
			largest = i;
	}
	if (p->nfree == 0)
		return NULL;
	if (best == p->nfree)
		best = largest;
	b = p->free[best];
	p->free[best] = p->free[--p->nfree];
	return b;
}

float *tr_rowpool_get(struct tr_rowpool *p, size_t n)
{
	float *b;
	char *raw;
	size_t c = n + (n >> SLACK_SHIFT);

	if (n == 0 || c > (SIZE_MAX - HEAD) / sizeof(float))
		return NULL;
	pthread_mutex_lock(&p->mu);
	b = take(p, n);
	if (b != NULL && capacity(b) >= n) {
		pthread_mutex_unlock(&p->mu);
		return b;
	}
	p->made++;
	pthread_mutex_unlock(&p->mu);
	if (b != NULL)
		drop(b);
	if ((raw = aligned_alloc(HEAD, HEAD + ((c * sizeof(float) + HEAD - 1) / HEAD) * HEAD)) == NULL)
		return NULL;
	*(size_t *)(void *)raw = c;
	return (float *)(void *)(raw + HEAD);
}

void tr_rowpool_put(struct tr_rowpool *p, float *buf)
{
	if (buf == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->nfree == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 8;
		float **q = realloc(p->free, cap * sizeof(*q));

		if (q == NULL) {
			pthread_mutex_unlock(&p->mu);
			drop(buf);
			return;
		}
		p->free = q;
		p->cap = cap;
	}
	p->free[p->nfree++] = buf;
	pthread_mutex_unlock(&p->mu);
}

uint64_t tr_rowpool_made(struct tr_rowpool *p)
{
	uint64_t n;

	pthread_mutex_lock(&p->mu);
	n = p->made;
	pthread_mutex_unlock(&p->mu);
	return n;
}
