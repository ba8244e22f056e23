/* emb_table.c - see emb_table.h. */
#include "emb_table.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <sys/stat.h>
#include <zlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "arr.h"
#include "ckptname.h"
#include "emb_snap.h"
#include "emb_wal.h"
#include "embfile.h"
#include "err.h"
#include "hash.h"
#include "log.h"
#include "sys.h"

/* The initial rows' key: "embedd" in ASCII, so that their draws share no
 * stream with the run's other seeded choices of the same seed. */
#define INIT_KEY 0x656d6265646400ull

static const char *const array_names[GNN_EMB_ARRAYS] = {
	[GNN_EMB_ROWS] = "ROWS", [GNN_EMB_STATE1] = "STATE1", [GNN_EMB_STATE2] = "STATE2",
	[GNN_EMB_STEPS] = "STEPS", [GNN_EMB_BEST_ROWS] = "BEST_ROWS",
};

static const char *const op_names[GNN_EMB_OP_END] = {
	[GNN_EMB_INIT] = "INIT", [GNN_EMB_PULL] = "PULL", [GNN_EMB_PUSH] = "PUSH", [GNN_EMB_READ] = "READ",
	[GNN_EMB_WRITE] = "WRITE", [GNN_EMB_BEST] = "BEST", [GNN_EMB_STATUS] = "STATUS",
	[GNN_EMB_JOIN] = "JOIN", [GNN_EMB_READY] = "READY", [GNN_EMB_SAVE] = "SAVE", [GNN_EMB_DELTA] = "DELTA",
};

/* One node type's rows and state in this partition. */
struct emb_type {
	uint32_t dim;                 /* 0: not embedded */
	int64_t first, n;             /* this partition's nodes of the type: global IDs [first, first + n) */
	void *arr[GNN_EMB_ARRAYS];    /* n x width 4-byte words; NULL when n is 0 or the optimizer has none */
	size_t arr_bytes[GNN_EMB_ARRAYS];
	uint32_t *touch;              /* [n] during an update: 1 + the row's index among its touched rows; else 0 */
	size_t touch_bytes;
	uint64_t *changed;            /* [n]: the version an update last took the row to (0: none since INIT) */
	size_t changed_bytes;
};

/* One rank's push of one type for the pending update. */
struct emb_slot {
	bool filled;
	uint32_t n;
	int64_t *ids;                 /* [n] then the gradient rows [n x dim], one block (malloc'd) */
	const float *grad;
};

struct gs_emb {
	pthread_mutex_t lock;
	struct gs_emb_metrics m;
	struct gs_snap *snap;         /* SAVE's writer */
	/* all below under lock */
	struct gs_wal *wal;           /* the log of changes (emb_wal.h); NULL: none */
	bool replaying;               /* its records are being applied: not logged again */
	bool init;
	bool joining;                 /* JOIN until READY: being filled from a replica, not served */
	uint64_t gen, version, cfg_hash;
	uint64_t whole;               /* a DELTA from a version below this gets every row: the rows
				       * were set whole (WRITE, a JOIN's READY, recovery) at whole - 1 */
	struct gnn_emb_cfg cfg;
	struct emb_type types[GNN_MAX_TYPES];
	uint32_t nemb;                /* embedded types... */
	uint32_t emb_types[GNN_MAX_TYPES];  /* ...in ascending order */
	uint32_t slot_of[GNN_MAX_TYPES];    /* an embedded type's index in emb_types */
	/* the pending update (of version): world is its first push's */
	uint32_t world, filled;
	struct emb_slot *slots;       /* [nemb x world], type-major; NULL while nothing is pending */
	atomic_bool due;              /* its last push was answered, so gs_emb_settle applies it (a hint:
				       * every request applies a complete update first anyway) */
};

/* What one request carries through the checks. */
struct call {
	const struct gnn_layout *l;
	uint32_t part;
	const struct gnn_emb_req *req;
	char *why;
	size_t why_len;
	void *rows;                   /* PULL, READ: the reply's rows (malloc'd) */
	uint32_t n, dim;
	int64_t *push;                /* PUSH: its IDs and rows, copied before the lock (malloc'd; NULL once a slot took it) */
};

__attribute__((format(printf, 3, 4)))
static int refuse(struct call *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->why_len, fmt, ap);
	va_end(ap);
	return code;
}

static bool has_array(uint32_t optimizer, uint32_t a)
{
	return optimizer == GNN_EMB_ADAM || (a != GNN_EMB_STATE2 && a != GNN_EMB_STEPS);
}

static uint32_t width(const struct emb_type *ty, uint32_t a)
{
	return a == GNN_EMB_STEPS ? 1 : ty->dim;
}

/* Bytes of one type's state, scratch included (emb_table.h's formula). */
static uint64_t state_bytes(uint32_t optimizer, uint64_t n, uint32_t dim)
{
	uint64_t b = n * 12;   /* touch and changed */

	for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++)
		if (has_array(optimizer, a))
			b += n * (a == GNN_EMB_STEPS ? 1 : dim) * 4;
	return b;
}

int gs_emb_new(const struct gs_emb_metrics *m, struct gs_emb **out)
{
	struct gs_emb *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return GNN_ENOMEM;
	if (pthread_mutex_init(&e->lock, NULL) != 0) {
		free(e);
		return GNN_ENOMEM;
	}
	if (gs_snap_new(m->bytes_saved, &e->snap) != GNN_OK) {
		pthread_mutex_destroy(&e->lock);
		free(e);
		return GNN_ENOMEM;
	}
	e->m = *m;
	*out = e;
	return GNN_OK;
}

static void clear_pending(struct gs_emb *e)
{
	if (e->slots != NULL)
		for (size_t i = 0; i < (size_t)e->nemb * e->world; i++)
			free(e->slots[i].ids);
	free(e->slots);
	e->slots = NULL;
	e->world = e->filled = 0;
}

static void free_type(struct emb_type *ty)
{
	for (int a = 0; a < GNN_EMB_ARRAYS; a++)
		gnn_big_free(ty->arr[a], ty->arr_bytes[a]);
	gnn_big_free(ty->touch, ty->touch_bytes);
	gnn_big_free(ty->changed, ty->changed_bytes);
	memset(ty, 0, sizeof(*ty));
}

/* Back to the state of a store that never saw an INIT. */
static void drop(struct gs_emb *e)
{
	clear_pending(e);
	for (uint32_t t = 0; t < GNN_MAX_TYPES; t++)
		free_type(&e->types[t]);
	e->init = e->joining = false;
	e->gen = e->version = e->cfg_hash = 0;
	e->nemb = 0;
	gnn_gauge_set(e->m.rows, 0);
	gnn_gauge_set(e->m.bytes, 0);
}

void gs_emb_free(struct gs_emb *e)
{
	if (e == NULL)
		return;
	gs_snap_free(e->snap);
	gs_wal_free(e->wal);
	drop(e);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

/* Makes *p a block of bytes (NULL for 0; gnn_big_alloc's, for tables of
 * up to gigabytes read at random rows), keeping the one it has when its
 * size *have is that already: an INIT of the same shapes allocates nothing.
 * *fresh: true when the block is new, so all zero. */
static bool ensure(void **p, size_t *have, size_t bytes, bool *fresh)
{
	*fresh = *have != bytes;
	if (*have == bytes)
		return true;
	gnn_big_free(*p, *have);
	*p = NULL;
	*have = 0;
	if (bytes == 0)
		return true;
	if ((*p = gnn_big_alloc(bytes)) == NULL)
		return false;
	*have = bytes;
	return true;
}

/* A scratch array of `bytes` bytes, all zero (ensure's; cleared when kept). */
static bool ensure_zeroed(void **p, size_t *have, size_t bytes)
{
	bool fresh;

	if (!ensure(p, have, bytes, &fresh))
		return false;
	if (!fresh && bytes > 0)
		memset(*p, 0, bytes);
	return true;
}

/* Row i of type t from the seed: U(-1, 1) per column, a pure function of
 * (seed, type, node, column), so every store and every restart agrees. */
/* INIT's rows [lo, hi) of one type: drawn from the seed, the best rows a
 * copy, the optimizer's state zero. Spans of a type are independent (a
 * row is a pure function of seed, type, node and column), so threads fill
 * them side by side. */
struct init_span {
	const struct gnn_emb_cfg *cfg;
	uint32_t t;
	struct emb_type *ty;
	int64_t lo, hi;
	bool zeroed;   /* the optimizer's state is zero already (new pages) */
};

static void *fill_span(void *arg)
{
	const struct init_span *sp = arg;
	struct emb_type *ty = sp->ty;
	uint64_t kt = gnn_draw64(sp->cfg->seed ^ INIT_KEY, sp->t);
	float *rows = ty->arr[GNN_EMB_ROWS];
	size_t d = ty->dim;

	for (int64_t i = sp->lo; i < sp->hi; i++) {
		uint64_t kv = gnn_draw64(kt, (uint64_t)(ty->first + i));

		for (uint32_t j = 0; j < ty->dim; j++)
			rows[(size_t)i * d + j] = (float)(2 * gnn_unit64(gnn_draw64(kv, j)) - 1);
	}
	memcpy((float *)ty->arr[GNN_EMB_BEST_ROWS] + (size_t)sp->lo * d, rows + (size_t)sp->lo * d,
	       (size_t)(sp->hi - sp->lo) * d * 4);
	/* new pages stay untouched until an update writes them: not zeroing
	 * them took INIT at ogbn-mag's size from 2.9-3.1 s to 2.1-2.2 s */
	for (uint32_t a = GNN_EMB_STATE1; a <= GNN_EMB_STEPS && !sp->zeroed; a++)
		if (ty->arr[a] != NULL)
			memset((uint32_t *)ty->arr[a] + (size_t)sp->lo * width(ty, a), 0,
			       (size_t)(sp->hi - sp->lo) * width(ty, a) * 4);
	return NULL;
}

/* At most this many threads fill a type's rows, each at least
 * INIT_SPAN_ROWS of them: INIT at ogbn-mag's size took 8.2 s on one. */
#define INIT_THREADS 16
#define INIT_SPAN_ROWS 16384

static void init_rows(const struct gnn_emb_cfg *cfg, uint32_t t, struct emb_type *ty, bool zeroed)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t k = ty->n / INIT_SPAN_ROWS + 1;
	struct init_span sp[INIT_THREADS];
	pthread_t th[INIT_THREADS];
	bool started[INIT_THREADS] = { false };

	if (k > cpus)
		k = cpus > 1 ? cpus : 1;
	if (k > INIT_THREADS)
		k = INIT_THREADS;
	for (int64_t i = 0; i < k; i++)
		sp[i] = (struct init_span){ .cfg = cfg, .t = t, .ty = ty, .zeroed = zeroed, .lo = ty->n * i / k,
					    .hi = ty->n * (i + 1) / k };
	/* span 0 on this thread; one whose thread does not start, too */
	for (int64_t i = 1; i < k; i++)
		started[i] = pthread_create(&th[i], NULL, fill_span, &sp[i]) == 0;
	fill_span(&sp[0]);
	for (int64_t i = 1; i < k; i++)
		if (started[i])
			pthread_join(th[i], NULL);
		else
			fill_span(&sp[i]);
}

/* INIT's configuration against the graph: its types, and the rows and
 * bytes it would hold here. */
static int init_size(struct call *c, uint64_t *rows, uint64_t *bytes)
{
	const struct gnn_emb_cfg *cfg = &c->req->cfg;
	const struct gnn_schema *sc = c->l->schema;

	*rows = *bytes = 0;
	if (cfg->num_types != sc->num_types)
		return refuse(c, GNN_EINVAL, "INIT configures %u node types; the graph has %u", cfg->num_types,
			      sc->num_types);
	for (uint32_t t = 0; t < sc->num_types; t++) {
		int64_t b, end;

		if (cfg->dim[t] == 0)
			continue;
		gnn_layout_type_range(c->l, c->part, t, &b, &end);
		/* the touch index is a uint32 per row */
		if ((uint64_t)(end - b) >= UINT32_MAX)
			return refuse(c, GNN_ERANGE, "graph store %u has %lld nodes of type %s: embeddings are held for up to 2^32 - 2 per type and partition",
				      c->part, (long long)(end - b), sc->types[t].name);
		*rows += (uint64_t)(end - b);
		*bytes += state_bytes(cfg->optimizer, (uint64_t)(end - b), cfg->dim[t]);
	}
	return GNN_OK;
}

/* Type t's arrays as INIT configures them (none for a type without
 * embeddings): allocated, the rows drawn from the seed, the best rows a
 * copy, the optimizer's state zero. False when memory ran out. */
static bool init_type(const struct call *c, uint32_t t, struct emb_type *ty)
{
	const struct gnn_emb_cfg *cfg = &c->req->cfg;
	int64_t b = 0, end = 0;
	bool fresh, zeroed = true, ok;
	void *touch, *changed;

	if (t < c->l->schema->num_types && cfg->dim[t] > 0)
		gnn_layout_type_range(c->l, c->part, t, &b, &end);
	ty->dim = t < c->l->schema->num_types ? cfg->dim[t] : 0;
	ty->first = b;
	ty->n = end - b;
	for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++) {
		size_t want = has_array(cfg->optimizer, a) ? (size_t)ty->n * width(ty, a) * 4 : 0;

		if (!ensure(&ty->arr[a], &ty->arr_bytes[a], want, &fresh))
			return false;
		if (a >= GNN_EMB_STATE1 && a <= GNN_EMB_STEPS && want > 0)
			zeroed = zeroed && fresh;
	}
	touch = ty->touch;
	changed = ty->changed;
	ok = ensure_zeroed(&touch, &ty->touch_bytes, (size_t)ty->n * sizeof(*ty->touch)) &&
	     ensure_zeroed(&changed, &ty->changed_bytes, (size_t)ty->n * sizeof(*ty->changed));
	ty->touch = touch;
	ty->changed = changed;
	if (!ok)
		return false;
	if (ty->dim == 0 || ty->n == 0)
		return true;
	init_rows(cfg, t, ty, zeroed);
	return true;
}

/* What a SAVE copies: every array of every embedded type. */
static size_t snapshot_bytes(const struct gs_emb *e)
{
	size_t b = 0;

	for (uint32_t k = 0; k < e->nemb; k++)
		for (uint32_t a = 0; a < GNN_EMB_ARRAYS; a++)
			if (has_array(e->cfg.optimizer, a))
				b += e->types[e->emb_types[k]].arr_bytes[a];
	return b;
}

static int op_init(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_cfg *cfg = &c->req->cfg;
	char desc[GNN_MAX_TYPES * (GNN_NAME_MAX + 12)] = "";
	uint64_t rows, bytes;
	double t0 = gnn_now();
	size_t at = 0;
	int rc;

	if ((rc = init_size(c, &rows, &bytes)) != GNN_OK)
		return rc;
	/* Whatever the trainers had here goes: the new state is theirs. */
	clear_pending(e);
	e->init = false;
	e->nemb = 0;
	for (uint32_t t = 0; t < GNN_MAX_TYPES; t++) {
		if (!init_type(c, t, &e->types[t])) {
			drop(e);
			return refuse(c, GNN_ENOMEM, "graph store %u cannot allocate the %llu bytes of %llu embedding rows and their state; it holds none now",
				      c->part, (unsigned long long)bytes, (unsigned long long)rows);
		}
		if (e->types[t].dim == 0)
			continue;
		e->slot_of[t] = e->nemb;
		e->emb_types[e->nemb++] = t;
		at += (size_t)snprintf(desc + at, sizeof(desc) - at, "%s%s:%u", at ? "," : "", c->l->schema->types[t].name,
				       e->types[t].dim);
	}
	e->cfg = *cfg;
	e->gen = c->req->gen;
	e->version = c->req->step;
	e->whole = 0;   /* no PULL of this generation came before */
	e->cfg_hash = cfg->hash;
	e->init = true;
	e->joining = c->req->op == GNN_EMB_JOIN;
	gnn_gauge_set(e->m.rows, (double)rows);
	gnn_gauge_set(e->m.bytes, (double)bytes);
	gs_snap_reserve(e->snap, c->part, snapshot_bytes(e));
	GNN_INFO("embeddings_init", "part=%u op=%s gen=%llu version=%llu types=%s optimizer=%s rows=%llu bytes=%llu seconds=%.3f",
		 c->part, op_names[c->req->op], (unsigned long long)e->gen, (unsigned long long)e->version, desc,
		 cfg->optimizer == GNN_EMB_ADAM ? "adam" : "adagrad", (unsigned long long)rows,
		 (unsigned long long)bytes, gnn_now() - t0);
	return GNN_OK;
}

/* Outside the lock (the layout is fixed): the type exists and every ID
 * is one of this partition's nodes of it. */
static int check_ids(struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct gnn_schema *sc = c->l->schema;
	int64_t b, end;

	if (q->node_type >= sc->num_types)
		return refuse(c, GNN_EINVAL, "no node type %u: the graph has %u", q->node_type, sc->num_types);
	if (q->op != GNN_EMB_PULL && q->op != GNN_EMB_PUSH && q->op != GNN_EMB_DELTA)
		return GNN_OK;
	gnn_layout_type_range(c->l, c->part, q->node_type, &b, &end);
	for (uint32_t i = 0; i < q->n; i++) {
		int64_t v = q->ids[i];
		int32_t owner, t;

		if (v >= b && v < end)
			continue;
		owner = gnn_layout_owner(c->l, v);
		if (owner < 0)
			return refuse(c, GNN_ERANGE, "node %lld (ids[%u]) is outside the graph [0, %lld); graph store %u holds %s nodes [%lld, %lld)",
				      (long long)v, i, (long long)c->l->num_nodes, c->part, sc->types[q->node_type].name,
				      (long long)b, (long long)end);
		if ((uint32_t)owner != c->part)
			return refuse(c, GNN_ERANGE, "node %lld (ids[%u]) is not owned by graph store %u, which holds %s nodes [%lld, %lld); partition %d owns it",
				      (long long)v, i, c->part, sc->types[q->node_type].name, (long long)b,
				      (long long)end, owner);
		t = gnn_layout_type(c->l, v);
		return refuse(c, GNN_ERANGE, "node %lld (ids[%u]) is of type %s, not %s: graph store %u holds %s nodes [%lld, %lld)",
			      (long long)v, i, sc->types[t].name, sc->types[q->node_type].name, c->part,
			      sc->types[q->node_type].name, (long long)b, (long long)end);
	}
	return GNN_OK;
}

/* Under the lock, for every op but INIT and STATUS: the trainers' state
 * is here, and the request's type is embedded. */
static int check_state(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct gnn_schema *sc = c->l->schema;

	if (!e->init)
		return refuse(c, GNN_ESTALE, "no embeddings here: graph store %u (re)started since the trainers' INIT; they resume from their checkpoint",
			      c->part);
	if (q->gen != e->gen)
		return refuse(c, GNN_ESTALE, "%s of generation %llu, but graph store %u holds generation %llu: another INIT replaced the state; resume from the checkpoint",
			      op_names[q->op], (unsigned long long)q->gen, c->part, (unsigned long long)e->gen);
	if (e->joining && (q->op == GNN_EMB_PULL || q->op == GNN_EMB_DELTA || q->op == GNN_EMB_READ ||
			   q->op == GNN_EMB_BEST || q->op == GNN_EMB_SAVE))
		return refuse(c, GNN_ESTALE, "graph store %u is catching up from a replica (JOIN at version %llu): ask another",
			      c->part, (unsigned long long)e->version);
	if (q->op == GNN_EMB_READY && !e->joining)
		return refuse(c, GNN_ESTALE, "READY, but graph store %u is not joining (it restarted or was set up since the JOIN)",
			      c->part);
	if (q->op != GNN_EMB_BEST && q->op != GNN_EMB_READY && q->op != GNN_EMB_SAVE &&
	    e->types[q->node_type].dim == 0)
		return refuse(c, GNN_EINVAL, "node type %s has no embeddings (its INIT width is 0)",
			      sc->types[q->node_type].name);
	return GNN_OK;
}

/* The reply's payload for n rows of dim words, within the message limit. */
static int check_reply_size(struct call *c, uint32_t n, uint32_t dim)
{
	uint64_t bytes = (uint64_t)n * dim * 4;

	if (GNN_PROTO_HDR_BYTES + 32 + bytes + 8 > GNN_PROTO_MAX_MSG_BYTES)
		return refuse(c, GNN_ERANGE, "reply would hold %u rows of %u words (%llu bytes), over the %u-byte message limit: ask for fewer rows per request",
			      n, dim, (unsigned long long)bytes, GNN_PROTO_MAX_MSG_BYTES);
	return GNN_OK;
}

static int alloc_rows(struct call *c, uint32_t n, uint32_t dim)
{
	size_t bytes = (size_t)n * dim * 4;

	if ((c->rows = malloc(bytes + 1)) == NULL)
		return refuse(c, GNN_ENOMEM, "graph store %u cannot allocate the %zu bytes of the reply", c->part, bytes);
	c->n = n;
	c->dim = dim;
	return GNN_OK;
}

static int op_pull(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct emb_type *ty = &e->types[q->node_type];
	int rc;

	if (q->array != GNN_EMB_ROWS && q->array != GNN_EMB_BEST_ROWS)
		return refuse(c, GNN_EINVAL, "PULL reads ROWS or BEST_ROWS, not %s", array_names[q->array]);
	if (q->step != e->version)
		return refuse(c, GNN_ESTALE, "PULL of version %llu, but graph store %u is at version %llu (generation %llu)",
			      (unsigned long long)q->step, c->part, (unsigned long long)e->version,
			      (unsigned long long)e->gen);
	if ((rc = check_reply_size(c, q->n, ty->dim)) != GNN_OK || (rc = alloc_rows(c, q->n, ty->dim)) != GNN_OK)
		return rc;
	for (uint32_t i = 0; i < q->n; i++)
		memcpy((float *)c->rows + (size_t)i * ty->dim,
		       (const float *)ty->arr[q->array] + (size_t)(q->ids[i] - ty->first) * ty->dim, (size_t)ty->dim * 4);
	gnn_counter_add(e->m.rows_pulled, q->n);
	gnn_counter_add(e->m.bytes_out, (double)q->n * ty->dim * 4);
	return GNN_OK;
}

/* DELTA: of ids, the rows changed since version q->first, each after its
 * index (docs/embeddings.md, "The next minibatch's rows"). */
static int op_delta(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct emb_type *ty = &e->types[q->node_type];
	bool all = (uint64_t)q->first < e->whole;
	uint32_t n = 0, *out;
	int rc;

	if (q->step != e->version || (uint64_t)q->first > e->version)
		return refuse(c, GNN_ESTALE, "DELTA from version %lld to %llu, but graph store %u is at version %llu (generation %llu)",
			      (long long)q->first, (unsigned long long)q->step, c->part,
			      (unsigned long long)e->version, (unsigned long long)e->gen);
	for (uint32_t i = 0; i < q->n; i++)
		n += all || ty->changed[q->ids[i] - ty->first] > (uint64_t)q->first;
	if ((rc = check_reply_size(c, n, ty->dim + 1)) != GNN_OK || (rc = alloc_rows(c, n, ty->dim + 1)) != GNN_OK)
		return rc;
	out = c->rows;
	for (uint32_t i = 0; i < q->n; i++) {
		int64_t row = q->ids[i] - ty->first;

		if (!all && ty->changed[row] <= (uint64_t)q->first)
			continue;
		*out++ = i;
		memcpy(out, (const float *)ty->arr[GNN_EMB_ROWS] + (size_t)row * ty->dim, (size_t)ty->dim * 4);
		out += ty->dim;
	}
	gnn_counter_add(e->m.rows_refreshed, n);
	gnn_counter_add(e->m.bytes_out, (double)n * (ty->dim + 1) * 4);
	return GNN_OK;
}

/* The scratch of an update: per type, in runs that start at the
 * occurrences of the types before, the touched rows (list), their
 * number of occurrences (cnt) and, per occurrence, its row's index in
 * list (at); then, for the type at hand, each touched row's gradient
 * (grad), in sum when it was pushed more than once. */
struct scratch {
	int64_t *list;
	uint32_t *cnt, *at;
	float *sum;
	const float **grad;
};

static void free_scratch(struct scratch *x)
{
	free(x->list);
	free(x->cnt);
	free(x->at);
	free(x->sum);
	free(x->grad);
}

/* Allocates what the update needs and numbers the touched rows of every
 * type (touch), in the order the rule sums them: rank by rank, each push
 * in its order. On GNN_ENOMEM nothing is touched. */
static int number_rows(struct gs_emb *e, struct scratch *x, uint32_t *touched)
{
	uint64_t total = 0, off = 0, most = 0, most_rows = 0;

	for (size_t i = 0; i < (size_t)e->nemb * e->world; i++)
		total += e->slots[i].n;
	*x = (struct scratch){ .list = malloc(total * sizeof(*x->list) + 1),
			       .cnt = malloc(total * sizeof(*x->cnt) + 1),
			       .at = malloc(total * sizeof(*x->at) + 1) };
	if (x->list == NULL || x->cnt == NULL || x->at == NULL)
		return GNN_ENOMEM;
	for (uint32_t k = 0; k < e->nemb; k++) {
		struct emb_type *ty = &e->types[e->emb_types[k]];
		int64_t *lk = x->list + off;
		uint32_t *ck = x->cnt + off, nt = 0;

		for (uint32_t r = 0; r < e->world; r++) {
			const struct emb_slot *s = &e->slots[(size_t)k * e->world + r];

			for (uint32_t i = 0; i < s->n; i++) {
				int64_t row = s->ids[i] - ty->first;

				if (ty->touch[row] == 0) {
					lk[nt] = row;
					ck[nt] = 0;
					ty->touch[row] = ++nt;
				}
				x->at[off++] = ty->touch[row] - 1;
				ck[ty->touch[row] - 1]++;
			}
		}
		touched[k] = nt;
		most = (uint64_t)nt * ty->dim > most ? (uint64_t)nt * ty->dim : most;
		most_rows = nt > most_rows ? nt : most_rows;
	}
	x->sum = malloc(most * sizeof(*x->sum) + 1);
	x->grad = malloc(most_rows * sizeof(*x->grad) + 1);
	if (x->sum != NULL && x->grad != NULL)
		return GNN_OK;
	off = 0;
	for (uint32_t k = 0; k < e->nemb; k++) {
		struct emb_type *ty = &e->types[e->emb_types[k]];

		for (uint32_t i = 0; i < touched[k]; i++)
			ty->touch[x->list[off + i]] = 0;
		for (uint32_t r = 0; r < e->world; r++)
			off += e->slots[(size_t)k * e->world + r].n;
	}
	return GNN_ENOMEM;
}

/* Adam on columns [j0, dim) of one row, one column at a time: the
 * reference for the vector path below, and its tail. c1, c2: the bias
 * corrections of the row's step count. */
static void adam_cols(const struct gnn_emb_cfg *cfg, float *w, float *m, float *v, const float *g, uint32_t j0,
		      uint32_t dim, double c1, double c2)
{
	float b1 = cfg->beta1, b2 = cfg->beta2, a1 = 1.0f - b1, a2 = 1.0f - b2;
	double lr = cfg->lr, eps = cfg->eps;

	for (uint32_t j = j0; j < dim; j++) {
		m[j] = b1 * m[j] + a1 * g[j];
		v[j] = b2 * v[j] + a2 * g[j] * g[j];
		w[j] -= (float)(lr * (m[j] / c1) / (sqrt(v[j] / c2) + eps));
	}
}

/* The same, four columns at a time, operation for operation (float
 * moments, the step in double, each step IEEE-rounded as the scalar one
 * is, no contraction), so rows are bit-identical on every CPU: in a run
 * at ogbn-mag's size the update was 18% of all the machine's CPU samples,
 * most of it these divisions and square roots in double. */
#if defined(__x86_64__)
__attribute__((target("avx"))) static void adam_cols_avx(const struct gnn_emb_cfg *cfg, float *w, float *m,
							   float *v, const float *g, uint32_t dim, double c1,
							   double c2)
{
	float b1 = cfg->beta1, b2 = cfg->beta2, a1 = 1.0f - b1, a2 = 1.0f - b2;
	__m128 vb1 = _mm_set1_ps(b1), vb2 = _mm_set1_ps(b2), va1 = _mm_set1_ps(a1), va2 = _mm_set1_ps(a2);
	__m256d vlr = _mm256_set1_pd((double)cfg->lr), veps = _mm256_set1_pd((double)cfg->eps);
	__m256d vc1 = _mm256_set1_pd(c1), vc2 = _mm256_set1_pd(c2);
	uint32_t j = 0;

	for (; j + 4 <= dim; j += 4) {
		__m128 gj = _mm_loadu_ps(g + j);
		__m128 mj = _mm_add_ps(_mm_mul_ps(vb1, _mm_loadu_ps(m + j)), _mm_mul_ps(va1, gj));
		__m128 vj = _mm_add_ps(_mm_mul_ps(vb2, _mm_loadu_ps(v + j)), _mm_mul_ps(_mm_mul_ps(va2, gj), gj));
		__m256d num = _mm256_mul_pd(vlr, _mm256_div_pd(_mm256_cvtps_pd(mj), vc1));
		__m256d den = _mm256_add_pd(_mm256_sqrt_pd(_mm256_div_pd(_mm256_cvtps_pd(vj), vc2)), veps);

		_mm_storeu_ps(m + j, mj);
		_mm_storeu_ps(v + j, vj);
		_mm_storeu_ps(w + j, _mm_sub_ps(_mm_loadu_ps(w + j), _mm256_cvtpd_ps(_mm256_div_pd(num, den))));
	}
	adam_cols(cfg, w, m, v, g, j, dim, c1, c2);
}
#endif

static void adam_row(const struct gnn_emb_cfg *cfg, struct emb_type *ty, int64_t row, const float *g)
{
	size_t at = (size_t)row * ty->dim;
	float *w = (float *)ty->arr[GNN_EMB_ROWS] + at, *m = (float *)ty->arr[GNN_EMB_STATE1] + at;
	float *v = (float *)ty->arr[GNN_EMB_STATE2] + at;
	uint32_t *steps = ty->arr[GNN_EMB_STEPS];
	double c1, c2;

	if (steps[row] < UINT32_MAX)  /* b^k is 0 in double long before */
		steps[row]++;
	c1 = 1.0 - pow((double)cfg->beta1, (double)steps[row]);
	c2 = 1.0 - pow((double)cfg->beta2, (double)steps[row]);
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx")) {
		adam_cols_avx(cfg, w, m, v, g, ty->dim, c1, c2);
		return;
	}
#endif
	adam_cols(cfg, w, m, v, g, 0, ty->dim, c1, c2);
}

static void adagrad_row(const struct gnn_emb_cfg *cfg, struct emb_type *ty, int64_t row, const float *g)
{
	size_t at = (size_t)row * ty->dim;
	float *w = (float *)ty->arr[GNN_EMB_ROWS] + at, *s = (float *)ty->arr[GNN_EMB_STATE1] + at;
	float lr = cfg->lr, eps = cfg->eps;

	for (uint32_t j = 0; j < ty->dim; j++) {
		s[j] += g[j] * g[j];
		w[j] -= lr * g[j] / (sqrtf(s[j]) + eps);
	}
}

/* acc += g, and g /= n, column by column: SSE's operations are the
 * scalar ones, four at a time, so the sums are the same bit for bit. */
static void add_cols(float *acc, const float *g, uint32_t dim)
{
	uint32_t j = 0;

#if defined(__x86_64__)
	for (; j + 4 <= dim; j += 4)
		_mm_storeu_ps(acc + j, _mm_add_ps(_mm_loadu_ps(acc + j), _mm_loadu_ps(g + j)));
#endif
	for (; j < dim; j++)
		acc[j] += g[j];
}

static void div_cols(float *g, float n, uint32_t dim)
{
	uint32_t j = 0;

#if defined(__x86_64__)
	for (__m128 vn = _mm_set1_ps(n); j + 4 <= dim; j += 4)
		_mm_storeu_ps(g + j, _mm_div_ps(_mm_loadu_ps(g + j), vn));
#endif
	for (; j < dim; j++)
		g[j] /= n;
}

/* The touched rows are scattered over arrays of gigabytes: each row's
 * first touch of each array waits for memory. So the arrays' lines of the
 * row this many rows ahead are asked for early. A stand-alone loop of
 * ogbn-mag's shape (Adam on 43,000 rows of 128 of 600,000) took 18.5 ms
 * against 26 ms alone on this machine, 21 against 33-45 ms beside other
 * work. */
#define PREFETCH_ROWS 4

static void prefetch_row(const struct emb_type *ty, uint32_t optimizer, int64_t row)
{
	size_t bytes = (size_t)ty->dim * 4;

	for (uint32_t a = GNN_EMB_ROWS; a <= GNN_EMB_STATE2; a++)
		if (has_array(optimizer, a))
			for (size_t at = 0; at < bytes; at += 64)
				__builtin_prefetch((const char *)ty->arr[a] + (size_t)row * bytes + at, 1);
	if (has_array(optimizer, GNN_EMB_STEPS))
		__builtin_prefetch((const uint32_t *)ty->arr[GNN_EMB_STEPS] + row, 1);
	__builtin_prefetch(ty->changed + row, 1);
}

/* Each touched row of type k's gradient into x->grad: the pushed row
 * itself when it was pushed once, else the sum of its occurrences, from
 * the first, in x->sum (bit for bit the rule's sum from 0 but, at most,
 * for the sign of a zero). start: the type's run. */
static void gather_grads(const struct gs_emb *e, uint32_t k, uint32_t touched, uint64_t start,
			 const struct scratch *x)
{
	uint32_t dim = e->types[e->emb_types[k]].dim;
	uint64_t o = start;

	memset(x->grad, 0, touched * sizeof(*x->grad));
	for (uint32_t r = 0; r < e->world; r++) {
		const struct emb_slot *s = &e->slots[(size_t)k * e->world + r];

		for (uint32_t i = 0; i < s->n; i++, o++) {
			uint32_t t = x->at[o];
			const float *g = s->grad + (size_t)i * dim;
			float *acc = x->sum + (size_t)t * dim;

			if (x->cnt[start + t] == 1) {
				x->grad[t] = g;
			} else if (x->grad[t] == NULL) {
				memcpy(acc, g, dim * sizeof(*acc));
				x->grad[t] = acc;
			} else {
				add_cols(acc, g, dim);
			}
		}
	}
}

/* Applies the pending update (emb_table.h's rule), all of it or, on
 * GNN_ENOMEM, none of it. */
static int apply(struct gs_emb *e)
{
	double t0 = gnn_now();
	uint32_t touched[GNN_MAX_TYPES];
	struct scratch x;
	uint64_t start = 0;
	int rc;

	if ((rc = number_rows(e, &x, touched)) != GNN_OK)
		goto out;
	for (uint32_t k = 0; k < e->nemb; k++) {
		struct emb_type *ty = &e->types[e->emb_types[k]];
		uint32_t dim = ty->dim;

		gather_grads(e, k, touched[k], start, &x);
		for (uint32_t i = 0; i < touched[k]; i++) {
			int64_t row = x.list[start + i];
			uint32_t n = x.cnt[start + i];
			const float *g = x.grad[i];

			if (i + PREFETCH_ROWS < touched[k])
				prefetch_row(ty, e->cfg.optimizer, x.list[start + i + PREFETCH_ROWS]);
			if (n > 1)
				div_cols(x.sum + (size_t)i * dim, (float)n, dim);
			if (e->cfg.optimizer == GNN_EMB_ADAM)
				adam_row(&e->cfg, ty, row, g);
			else
				adagrad_row(&e->cfg, ty, row, g);
			ty->touch[row] = 0;
			ty->changed[row] = e->version + 1;
		}
		for (uint32_t r = 0; r < e->world; r++)
			start += e->slots[(size_t)k * e->world + r].n;
	}
	gnn_counter_inc(e->m.updates);
out:
	free_scratch(&x);
	gnn_counter_add(e->m.update_seconds, gnn_now() - t0);
	return rc;
}

/* Every rank pushed for the pending update, and the store is not joining. */
static bool complete(const struct gs_emb *e)
{
	return e->slots != NULL && e->filled == e->nemb * e->world && !e->joining;
}

/* A complete update applied: the next version. Nothing else sees the
 * state between its last push and this (emb_table.h, "The update's
 * time"). GNN_ENOMEM: not applied, still complete. */
static int settle(struct gs_emb *e)
{
	int rc;

	if (!complete(e))
		return GNN_OK;
	if ((rc = apply(e)) != GNN_OK)
		return rc;
	e->version++;
	clear_pending(e);
	return GNN_OK;
}

/* settle, or c refused with why. */
static int apply_complete(struct gs_emb *e, struct call *c)
{
	int rc = settle(e);

	if (rc != GNN_OK)
		return refuse(c, rc, "graph store %u cannot allocate the scratch memory to apply update %llu; its pushes are kept: ask again",
			      c->part, (unsigned long long)e->version);
	return GNN_OK;
}

static int op_push(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct gnn_schema *sc = c->l->schema;
	const struct emb_type *ty = &e->types[q->node_type];
	struct emb_slot *s;

	if (q->step != e->version) {
		/* the retry of a push whose update is applied: its answer was lost */
		if (e->version > 0 && q->step == e->version - 1)
			return GNN_OK;
		return refuse(c, GNN_ESTALE, "PUSH for update %llu, but graph store %u is at version %llu (generation %llu)",
			      (unsigned long long)q->step, c->part, (unsigned long long)e->version,
			      (unsigned long long)e->gen);
	}
	/* an empty push may say nothing of the width */
	if (q->dim != ty->dim && !(q->n == 0 && q->dim == 0))
		return refuse(c, GNN_EINVAL, "PUSH of %u-wide gradient rows; type %s's embeddings are %u wide", q->dim,
			      sc->types[q->node_type].name, ty->dim);
	if (e->slots != NULL && q->world != e->world)
		return refuse(c, GNN_EINVAL, "PUSH from rank %u of %u ranks, but update %llu's first push came from one of %u",
			      q->rank, q->world, (unsigned long long)e->version, e->world);
	if (e->slots == NULL) {
		if ((e->slots = calloc((size_t)e->nemb * q->world, sizeof(*e->slots))) == NULL)
			return refuse(c, GNN_ENOMEM, "graph store %u cannot allocate the %zu bytes of an update's %u x %u pushes",
				      c->part, (size_t)e->nemb * q->world * sizeof(*e->slots), e->nemb, q->world);
		e->world = q->world;
	}
	s = &e->slots[(size_t)e->slot_of[q->node_type] * e->world + q->rank];
	if (s->filled)
		return GNN_OK;  /* a repeat: the first one counts */
	s->ids = c->push;
	c->push = NULL;
	s->grad = (const float *)(s->ids + q->n);
	s->n = q->n;
	s->filled = true;
	/* the last one is answered before the update is applied (settle); a
	 * joining store applies at READY, once its rows are all written */
	if (++e->filled == e->nemb * e->world && !e->replaying)
		atomic_store(&e->due, true);
	gnn_counter_add(e->m.rows_pushed, q->n);
	gnn_counter_add(e->m.bytes_in, (double)q->n * q->dim * 4);
	return GNN_OK;
}

/* READ and WRITE: the array exists and rows [first, first + n) are this
 * partition's nodes of the type. */
static int check_rows(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct gnn_schema *sc = c->l->schema;
	const struct emb_type *ty = &e->types[q->node_type];
	int64_t end = ty->first + ty->n;

	if (!has_array(e->cfg.optimizer, q->array))
		return refuse(c, GNN_EINVAL, "%s exists with Adam only; these embeddings use Adagrad", array_names[q->array]);
	if (q->first < ty->first || q->first > end || (int64_t)q->n > end - q->first)
		return refuse(c, GNN_ERANGE, "rows [%lld, %lld) are not all %s nodes of graph store %u, which holds [%lld, %lld)",
			      (long long)q->first, (long long)q->first + q->n, sc->types[q->node_type].name, c->part,
			      (long long)ty->first, (long long)end);
	return GNN_OK;
}

static int op_read(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct emb_type *ty = &e->types[q->node_type];
	uint32_t w = width(ty, q->array);
	int rc;

	if ((rc = check_rows(e, c)) != GNN_OK || (rc = check_reply_size(c, q->n, w)) != GNN_OK)
		return rc;
	/* a checkpoint reads one version: one that moved on is not it */
	if (q->step != e->version)
		return refuse(c, GNN_ESTALE, "READ of version %llu, but graph store %u is at version %llu (generation %llu)",
			      (unsigned long long)q->step, c->part, (unsigned long long)e->version,
			      (unsigned long long)e->gen);
	if ((rc = alloc_rows(c, q->n, w)) != GNN_OK)
		return rc;
	if (q->n > 0)
		memcpy(c->rows, (const uint32_t *)ty->arr[q->array] + (size_t)(q->first - ty->first) * w,
		       (size_t)q->n * w * 4);
	gnn_counter_add(e->m.bytes_out, (double)q->n * w * 4);
	return GNN_OK;
}

static int op_write(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	const struct emb_type *ty = &e->types[q->node_type];
	uint32_t w = width(ty, q->array);
	int rc;

	if ((rc = check_rows(e, c)) != GNN_OK)
		return rc;
	if (q->dim != w && !(q->n == 0 && q->dim == 0))
		return refuse(c, GNN_EINVAL, "WRITE of %u-wide rows into %s of type %s, which is %u wide", q->dim,
			      array_names[q->array], c->l->schema->types[q->node_type].name, w);
	if (e->joining && q->step != e->version)
		return refuse(c, GNN_ESTALE, "WRITE of version %llu, but graph store %u joins at version %llu",
			      (unsigned long long)q->step, c->part, (unsigned long long)e->version);
	if (q->n > 0)
		memcpy((uint32_t *)ty->arr[q->array] + (size_t)(q->first - ty->first) * w, q->data, (size_t)q->n * w * 4);
	/* a restored state: pushes of the one it replaces must not mix in
	 * (a joining store's are of the very version it is given) */
	e->version = q->step;
	e->whole = e->version + 1;
	if (!e->joining)
		clear_pending(e);
	gnn_counter_add(e->m.bytes_in, (double)q->n * w * 4);
	return GNN_OK;
}

/* SAVE's folder, copied into buf: a checkpoint being written and
 * nothing else the store could be made to write into: absolute, no "."
 * or ".." part, a ".tmp-epoch-*" folder. */
static int check_save_dir(struct call *c, char *buf, size_t cap)
{
	const struct gnn_emb_req *q = c->req;
	const char *base;
	size_t n = q->n;

	if (n >= cap)
		return refuse(c, GNN_ERANGE, "SAVE's folder is %zu bytes; at most %zu", n, cap - 1);
	memcpy(buf, q->data, n);
	buf[n] = '\0';
	base = strrchr(buf, '/');
	if (buf[0] != '/' || strstr(buf, "/./") != NULL || strstr(buf, "/../") != NULL || strstr(buf, "//") != NULL ||
	    base == NULL || base == buf)
		return refuse(c, GNN_EINVAL, "SAVE's folder %s is not an absolute path without \".\" and \"..\" parts",
			      buf);
	if (strncmp(base + 1, GNN_CKPT_TMP_PREFIX, strlen(GNN_CKPT_TMP_PREFIX)) != 0)
		return refuse(c, GNN_EINVAL, "SAVE writes into a " GNN_CKPT_TMP_PREFIX "* checkpoint folder, not %s", buf);
	return GNN_OK;
}

/* An existing file of the checkpoint, for writing: never created, never
 * through a link (what the trainer created is all the store writes). */
static int open_existing(struct call *c, const char *path, int *fd)
{
	if ((*fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0)
		return GNN_OK;
	return refuse(c, errno == ENOENT || errno == EACCES || errno == EROFS || errno == EPERM ? GNN_ENOENT : GNN_EIO,
		      "graph store %u cannot open %s: %s", c->part, path, strerror(errno));
}

/* Region i of job: array a of type t into its file in dir, checked to
 * be a file with room for this partition's rows at their file row. */
static int add_region(struct gs_emb *e, struct call *c, const char *dir, uint32_t t, uint32_t a,
		      struct gs_snap_job *job)
{
	const struct emb_type *ty = &e->types[t];
	struct gs_snap_region *r = &job->r[job->n];
	uint64_t row = gnn_emb_file_row(c->l, c->part, t);
	char file[4200], path[4210];
	struct stat st;
	int rc;

	*r = (struct gs_snap_region){ .fd = -1, .data = ty->arr[a], .row_bytes = (size_t)width(ty, a) * 4,
				      .rec = { .type = t, .array = a, .row = row, .rows = (uint64_t)ty->n } };
	if (gnn_emb_file(file, sizeof(file), dir, c->l->schema->types[t].name, a) != GNN_OK ||
	    gnn_arr_shared_tmp(file, path, sizeof(path)) != GNN_OK)
		return refuse(c, GNN_ERANGE, "SAVE's folder %s is too long for its files", dir);
	if ((rc = open_existing(c, path, &r->fd)) != GNN_OK)
		return rc;
	job->n++;
	if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < GNN_ARR_HEADER_BYTES + (row + r->rec.rows) * r->row_bytes)
		return refuse(c, GNN_EINVAL, "%s is not a file with room for rows [%llu, %llu) of %zu bytes", path,
			      (unsigned long long)row, (unsigned long long)(row + r->rec.rows), r->row_bytes);
	return GNN_OK;
}

/* SAVE: the store writes all its rows and state into the checkpoint's
 * files itself (docs/graphstore.md): no rows cross the network, every
 * store writes at once, and from a copy taken here, under the lock
 * (emb_snap.h), so the rows are this version's while the store goes on
 * with the next. */
static int op_save(struct gs_emb *e, struct call *c)
{
	const struct gnn_emb_req *q = c->req;
	struct gs_snap_job *job;
	char dir[4096], path[4200];
	int rc = GNN_OK;

	if (q->step != e->version)
		return refuse(c, GNN_ESTALE, "SAVE of version %llu, but graph store %u is at version %llu (generation %llu)",
			      (unsigned long long)q->step, c->part, (unsigned long long)e->version,
			      (unsigned long long)e->gen);
	if ((rc = check_save_dir(c, dir, sizeof(dir))) != GNN_OK)
		return rc;
	if ((job = calloc(1, sizeof(*job))) == NULL)
		return refuse(c, GNN_ENOMEM, "graph store %u cannot allocate a snapshot's %zu bytes", c->part,
			      sizeof(*job));
	*job = (struct gs_snap_job){ .rec_fd = -1, .gen = e->gen, .version = e->version, .part = c->part };
	for (uint32_t k = 0; k < e->nemb && rc == GNN_OK; k++)
		for (uint32_t a = 0; e->types[e->emb_types[k]].n > 0 && a < GNN_EMB_ARRAYS && rc == GNN_OK; a++)
			if (has_array(e->cfg.optimizer, a))
				rc = add_region(e, c, dir, e->emb_types[k], a, job);
	if (rc == GNN_OK && gnn_emb_snap_file(path, sizeof(path), dir, c->part) == GNN_OK)
		rc = open_existing(c, path, &job->rec_fd);
	if (rc == GNN_OK && (rc = gs_snap_start(e->snap, job)) != GNN_OK)
		rc = refuse(c, rc, "graph store %u cannot take the snapshot (logged)", c->part);
	for (size_t i = 0; i < job->n; i++)   /* (gs_snap_start took them, if it was called) */
		close(job->r[i].fd);
	if (job->rec_fd >= 0)
		close(job->rec_fd);
	free(job);
	return rc;
}

/* The JOIN's rows are all written: served from now on, and the update
 * whose pushes all came meanwhile applied. */
static int op_ready(struct gs_emb *e, struct call *c)
{
	int rc;

	e->joining = false;
	e->whole = e->version + 1;
	if ((rc = apply_complete(e, c)) != GNN_OK) {
		e->joining = true;  /* its retry applies it */
		return rc;
	}
	GNN_INFO("embeddings_joined", "part=%u gen=%llu version=%llu pending_pushes=%u reason=\"the rows of a replica are "
		 "written: served again\"", c->part, (unsigned long long)e->gen, (unsigned long long)e->version,
		 e->filled);
	return GNN_OK;
}

static void op_best(struct gs_emb *e)
{
	for (uint32_t k = 0; k < e->nemb; k++) {
		struct emb_type *ty = &e->types[e->emb_types[k]];

		if (ty->n > 0)
			memcpy(ty->arr[GNN_EMB_BEST_ROWS], ty->arr[GNN_EMB_ROWS], ty->arr_bytes[GNN_EMB_ROWS]);
	}
}

static int dispatch(struct gs_emb *e, struct call *c)
{
	int rc;

	if (c->req->op == GNN_EMB_INIT || c->req->op == GNN_EMB_JOIN)
		return op_init(e, c);
	if (c->req->op == GNN_EMB_STATUS)
		return GNN_OK;
	if ((rc = check_state(e, c)) != GNN_OK)
		return rc;
	switch (c->req->op) {
	case GNN_EMB_PULL:
		return op_pull(e, c);
	case GNN_EMB_DELTA:
		return op_delta(e, c);
	case GNN_EMB_PUSH:
		return op_push(e, c);
	case GNN_EMB_READ:
		return op_read(e, c);
	case GNN_EMB_WRITE:
		return op_write(e, c);
	case GNN_EMB_READY:
		return op_ready(e, c);
	case GNN_EMB_SAVE:
		return op_save(e, c);
	default:
		op_best(e);
		return GNN_OK;
	}
}

/* ---- the log of changes (emb_wal.h) ---- */

/* A SAVE's snapshot is the start of a new segment: the state's
 * configuration at this version, the folder, and the pushes pending. */
static void log_save(struct gs_emb *e, const struct call *c)
{
	struct gnn_emb_req init = { .op = GNN_EMB_INIT, .gen = e->gen, .step = e->version, .cfg = e->cfg };

	if (gs_wal_begin(e->wal, &init, c->req) != GNN_OK || e->slots == NULL)
		return;
	for (uint32_t k = 0; k < e->nemb; k++)
		for (uint32_t r = 0; r < e->world; r++) {
			const struct emb_slot *sl = &e->slots[(size_t)k * e->world + r];
			struct gnn_emb_req push = { .op = GNN_EMB_PUSH, .node_type = e->emb_types[k], .rank = r,
						    .world = e->world, .gen = e->gen, .step = e->version, .n = sl->n,
						    .dim = sl->n > 0 ? e->types[e->emb_types[k]].dim : 0,
						    .ids = sl->ids, .data = sl->grad };

			if (sl->filled && gs_wal_append(e->wal, &push, true) != GNN_OK)
				return;
		}
}

/* Under the lock, after request c was answered rc: what changed the
 * state goes into the log before the answer goes out. */
static void log_change(struct gs_emb *e, const struct call *c, int rc)
{
	switch (c->req->op) {
	case GNN_EMB_INIT:
	case GNN_EMB_JOIN:
		/* (a refused one leaves the log as it was: the trainers INIT again) */
		if (rc == GNN_OK)
			gs_wal_begin(e->wal, c->req, NULL);
		break;
	case GNN_EMB_SAVE:
		if (rc == GNN_OK)
			log_save(e, c);
		else if (rc == GNN_ENOENT)
			gs_wal_off(e->wal, "the store cannot write into the checkpoints (rank 0 streams its rows), so "
				   "its log could never be cut");
		break;
	case GNN_EMB_PUSH:
	case GNN_EMB_WRITE:
	case GNN_EMB_BEST:
	case GNN_EMB_READY:
		if (rc == GNN_OK)
			gs_wal_append(e->wal, c->req, false);
		break;
	default:
		break;
	}
}

/* A checkpoint's rows and state of this partition, read into the arrays
 * an INIT of its configuration made (the committed folder's files, as
 * the store's snapshot wrote them: embfile.h). */
static int load_base(struct gs_emb *e, const struct gnn_layout *l, uint32_t part, const char *dir)
{
	for (uint32_t k = 0; k < e->nemb; k++) {
		uint32_t t = e->emb_types[k];
		struct emb_type *ty = &e->types[t];
		uint64_t row = gnn_emb_file_row(l, part, t);

		for (uint32_t a = 0; ty->n > 0 && a < GNN_EMB_ARRAYS; a++) {
			size_t rb = (size_t)width(ty, a) * 4, want = (size_t)ty->n * rb;
			off_t off = (off_t)(GNN_ARR_HEADER_BYTES + row * rb);
			char path[4200];
			struct stat st;
			int fd, rc;

			if (!has_array(e->cfg.optimizer, a))
				continue;
			if (gnn_emb_file(path, sizeof(path), dir, l->schema->types[t].name, a) != GNN_OK)
				return GNN_ERANGE;
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0 ||
			    (uint64_t)st.st_size < (uint64_t)off + want) {
				GNN_WARN("embeddings_wal_base_missing", "part=%u file=%s error=\"%s\"", part, path,
					 fd < 0 ? strerror(errno) : "too short for this partition's rows");
				if (fd >= 0)
					close(fd);
				return GNN_ENOENT;
			}
			rc = gnn_pread_all(fd, ty->arr[a], want, off);
			close(fd);
			if (rc != GNN_OK)
				return rc;
		}
	}
	return GNN_OK;
}

struct replay {
	struct gs_emb *e;
	const struct gnn_layout *l;
	uint32_t part;
	struct gnn_wbuf scratch;
};

static int replay_one(void *ctx, const struct gnn_emb_req *q, const char *committed)
{
	struct replay *rp = ctx;
	char why[GNN_PROTO_MAX_ERROR_TEXT];
	int rc;

	if (committed != NULL)
		return load_base(rp->e, rp->l, rp->part, committed);
	rp->scratch.len = 0;
	rc = gs_emb_answer(rp->e, rp->l, rp->part, 0, q, &rp->scratch, why, sizeof(why));
	if (rc != GNN_OK)
		GNN_WARN("embeddings_wal_record_refused", "part=%u op=%s code=%s reason=\"%s\"", rp->part,
			 q->op < GNN_EMB_OP_END ? op_names[q->op] : "?", gnn_errname(rc), why);
	return rc;
}

int gs_emb_recover(struct gs_emb *e, const char *dir, const struct gnn_layout *l, uint32_t part)
{
	struct replay rp = { .e = e, .l = l, .part = part };
	double t0 = gnn_now();
	uint64_t records;
	bool found;
	int rc;

	if ((rc = gs_wal_open(dir, part, e->m.bytes_logged, e->m.log_seconds, &e->wal)) != GNN_OK)
		return rc;
	gnn_wbuf_init(&rp.scratch);
	e->replaying = true;
	rc = gs_wal_replay(e->wal, replay_one, &rp, &records, &found);
	e->replaying = false;
	gnn_wbuf_free(&rp.scratch);
	if (rc != GNN_OK) {
		pthread_mutex_lock(&e->lock);
		drop(e);
		pthread_mutex_unlock(&e->lock);
		gs_wal_off(e->wal, "its replay failed");
		return GNN_OK;
	}
	/* a complete update, applied now (no request runs yet); without the
	 * memory for it, the first request applies it (gs_emb_answer) */
	(void)settle(e);
	e->whole = e->version + 1;   /* a DELTA from before the restart: every row, to be safe */
	if (found)
		GNN_INFO("embeddings_recovered", "part=%u gen=%llu version=%llu pending_pushes=%u records=%llu seconds=%.3f "
			 "reason=\"the rows, optimizer state and pending pushes as before the restart, from the log in %s\"",
			 part, (unsigned long long)e->gen, (unsigned long long)e->version, e->filled,
			 (unsigned long long)records, gnn_now() - t0, dir);
	return GNN_OK;
}

void gs_emb_settle(struct gs_emb *e)
{
	static struct gnn_log_limit lim = GNN_LOG_LIMIT_INIT;
	int rc;

	if (!atomic_exchange(&e->due, false))
		return;
	pthread_mutex_lock(&e->lock);
	if ((rc = settle(e)) != GNN_OK)
		gnn_log_write_limited(&lim, GNN_LOG_WARN, "embeddings_update_deferred",
				      "version=%llu code=%s reason=\"no memory for the update's scratch: the next request "
				      "applies it\"", (unsigned long long)e->version, gnn_errname(rc));
	pthread_mutex_unlock(&e->lock);
}

int gs_emb_answer(struct gs_emb *e, const struct gnn_layout *l, uint32_t part, uint64_t req_id,
		  const struct gnn_emb_req *req, struct gnn_wbuf *w, char *why, size_t why_len)
{
	struct call c = { .l = l, .part = part, .req = req, .why = why, .why_len = why_len };
	struct gnn_emb_resp r = { 0 };
	int rc;

	why[0] = '\0';
	if (req->op != GNN_EMB_INIT && req->op != GNN_EMB_JOIN && req->op != GNN_EMB_STATUS &&
	    req->op != GNN_EMB_READY && (rc = check_ids(&c)) != GNN_OK)
		return rc;
	/* a push's copy is made before the lock: the lock guards the state only */
	if (req->op == GNN_EMB_PUSH) {
		size_t bytes = (size_t)req->n * 8 + (size_t)req->n * req->dim * 4;

		if ((c.push = malloc(bytes + 1)) == NULL)
			return refuse(&c, GNN_ENOMEM, "graph store %u cannot allocate the %zu bytes of a push", part,
				      bytes);
		if (req->n > 0) {
			memcpy(c.push, req->ids, (size_t)req->n * 8);
			memcpy(c.push + req->n, req->data, (size_t)req->n * req->dim * 4);
		}
	}
	pthread_mutex_lock(&e->lock);
	/* an INIT replaces the state, a complete update with it */
	if (req->op == GNN_EMB_INIT || req->op == GNN_EMB_JOIN || (rc = apply_complete(e, &c)) == GNN_OK)
		rc = dispatch(e, &c);
	if (gs_wal_on(e->wal) && !e->replaying)
		log_change(e, &c, rc);
	r.gen = e->gen;
	r.version = e->version + complete(e);  /* what any later request sees */
	r.cfg_hash = e->cfg_hash;
	pthread_mutex_unlock(&e->lock);
	/* the rows were copied under the lock; the reply is built outside it */
	if (rc == GNN_OK) {
		r.n = c.n;
		r.dim = c.dim;
		r.data = c.rows;
		rc = gnn_encode_emb_resp(w, req_id, &r);
	}
	free(c.rows);
	free(c.push);
	return rc;
}
