/* multicall.c - see multicall.h. */
#include "multicall.h"

#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "err.h"

void gnn_multicall_init(struct gnn_multicall *f)
{
	memset(f, 0, sizeof(*f));
}

/* Room for one more call. */
static int grow(struct gnn_multicall *f)
{
	size_t cap = f->cap < 16 ? 16 : f->cap * 2;
	struct gnn_call *call = realloc(f->call, cap * sizeof(*call));
	struct gnn_wbuf *req;
	bool *done;

	if (call == NULL)
		return GNN_ENOMEM;
	f->call = call;
	if ((req = realloc(f->req, cap * sizeof(*req))) == NULL)
		return GNN_ENOMEM;
	/* the calls' req pointers follow their buffers */
	for (size_t i = 0; i < f->n; i++)
		f->call[i].req = &req[i];
	f->req = req;
	if ((done = realloc(f->done, cap * sizeof(*done))) == NULL)
		return GNN_ENOMEM;
	f->done = done;
	f->cap = cap;
	return GNN_OK;
}

int gnn_multicall_add(struct gnn_multicall *f, struct gnn_client *c, int timeout_ms, struct gnn_wbuf **req)
{
	size_t i = f->n;
	int rc;

	if (i == f->cap && (rc = grow(f)) != GNN_OK)
		return rc;
	if (i == f->inited) {
		gnn_wbuf_init(&f->req[i]);
		f->inited++;
	}
	f->req[i].len = 0;
	f->req[i].failed = false;
	f->call[i] = (struct gnn_call){ .client = c, .req = &f->req[i], .timeout_ms = timeout_ms };
	f->done[i] = false;
	f->n++;
	*req = &f->req[i];
	return GNN_OK;
}

static void free_reply(struct gnn_call *c)
{
	if (c->reply != NULL)
		nng_msg_free(c->reply);
	c->reply = NULL;
}

/* The calls not done yet, in order: the whole batch (the first run), or a
 * copy of them in *batch (a retry) with their indexes in *idx. */
static int pending(struct gnn_multicall *f, struct gnn_call **batch, size_t **idx, size_t *m)
{
	size_t k = 0;

	for (size_t i = 0; i < f->n; i++)
		k += !f->done[i];
	*m = k;
	if (k == f->n) {
		*batch = f->call;
		*idx = NULL;
		return GNN_OK;
	}
	*batch = malloc((k > 0 ? k : 1) * sizeof(**batch));
	*idx = malloc((k > 0 ? k : 1) * sizeof(**idx));
	if (*batch == NULL || *idx == NULL) {
		free(*batch);
		free(*idx);
		return GNN_ENOMEM;
	}
	k = 0;
	for (size_t i = 0; i < f->n; i++)
		if (!f->done[i]) {
			(*idx)[k] = i;
			(*batch)[k++] = f->call[i];
		}
	return GNN_OK;
}

int gnn_multicall_run(struct gnn_multicall *f, gnn_multicall_answer_fn answer, void *ctx)
{
	struct gnn_call *batch;
	size_t *idx, m;
	int rc, first = GNN_OK;

	for (size_t i = 0; i < f->n; i++)
		if (!f->done[i])
			free_reply(&f->call[i]);   /* a refused answer's, from the last run */
	if ((rc = pending(f, &batch, &idx, &m)) != GNN_OK)
		return rc;
	if (m > 0)
		gnn_client_call_all(batch, m);
	for (size_t k = 0; k < m; k++) {
		size_t i = idx != NULL ? idx[k] : k;

		if (idx != NULL)
			f->call[i] = batch[k];
		rc = answer != NULL ? answer(ctx, i, &f->call[i]) : f->call[i].rc;
		f->done[i] = rc == GNN_OK;
		if (rc != GNN_OK && first == GNN_OK)
			first = rc;
	}
	if (idx != NULL) {
		free(batch);
		free(idx);
	}
	return first;
}

void gnn_multicall_clear(struct gnn_multicall *f)
{
	for (size_t i = 0; i < f->n; i++)
		free_reply(&f->call[i]);
	f->n = 0;
}

void gnn_multicall_free(struct gnn_multicall *f)
{
	gnn_multicall_clear(f);
	for (size_t i = 0; i < f->inited; i++)
		gnn_wbuf_free(&f->req[i]);
	free(f->call);
	free(f->req);
	free(f->done);
	gnn_multicall_init(f);
}
