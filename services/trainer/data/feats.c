/* feats.c - see feats.h. */
#include "feats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dtype.h"
#include "client.h"
#include "err.h"
#include "hash.h"
#include "multicall.h"
#include "replica.h"
#include "log.h"
#include "storeid.h"
#include "sys.h"

/* FEAT calls in flight per fill (or per wave of the cache's fetch): 64 MB
 * of answers at most, so prefetching workers do not pile up memory. */
#define MAX_CALLS 16
/* A store answering eunavail (loading its partition, restarting) is asked
 * again this often, within the call's timeout chain. */
#define RETRY_MS 250

/* What a trainer knows of one store's graph. */
struct store {
	struct gnn_client *c;    /* tr_stores' */
	pthread_mutex_t mu;      /* one INFO check at a time */
	atomic_uint verified;    /* gnn_client_connections when its graph was last checked; 0: never */
	struct gnn_replica rep;  /* its calls in flight, and whether to avoid it (replica.h) */
};

enum { SRC_CACHE, SRC_STORE, SRC_COUNT };

struct tr_feats {
	struct tr_feats_opts o;
	const struct gnn_layout *g;
	uint32_t T, P, R;              /* types, partitions, stores per partition */
	uint32_t dim[GNN_MAX_TYPES];
	enum gnn_dtype dtype;          /* the stores' rows' (the graph's), and the cache's */
	size_t elem;                   /* its bytes per element */
	struct store *st;              /* [P x R]: store i serves partition i mod P */
	atomic_uint next_pick;         /* rotates the choice among equally good replicas */
	struct range *ranges;          /* [nranges] */
	size_t nranges;
	/* the cache: built once (slot set), read-only afterwards */
	uint16_t *counts;              /* [num_nodes] while presampling: minibatches reading each node */
	uint32_t counted;
	int32_t *slot;                 /* [num_nodes]: the node's row in its type's cache, -1: none */
	uint8_t *rows[GNN_MAX_TYPES];  /* the cached rows, of dtype: f16 rows cost half */
	atomic_uint_fast64_t req_id;
	struct gnn_counter *rows_from[SRC_COUNT], *store_bytes;
	struct gnn_gauge *cache_rows, *cache_bytes;
};

/* The nodes of one type with features in one partition: the cache picks
 * and fetches them range after range (partition, then type order), so a
 * range's cached rows are contiguous in its type's cache. */
struct range {
	uint32_t p, t;
	int64_t b, e;
};

/* One FEAT call: n rows of type t from store p, row i into dst + pos[i]
 * rows (pos NULL: row i) of dst_dtype: the stores' dtype (the cache) or
 * F32 (a minibatch, converted on the way). */
struct fcall {
	uint32_t p, t, n;
	const int64_t *ids;
	const uint32_t *pos;
	uint8_t *dst;
	enum gnn_dtype dst_dtype;
};

/* ---- set-up ---- */

static int register_metrics(struct tr_feats *f)
{
	static const char *const src_label[] = { "source" };
	static const char *const src[SRC_COUNT] = { "cache", "graphstore" };
	struct gnn_counter *fam;
	int rc;

	if ((rc = gnn_metrics_counter(f->o.metrics, "gnn_trainer_feature_rows_total", "Input feature rows of the "
				      "minibatches, by where they came from (--features-from stores)", src_label, 1,
				      &fam)) != GNN_OK)
		return rc;
	for (int s = 0; s < SRC_COUNT; s++)
		if ((rc = gnn_counter_labels(fam, &src[s], 1, &f->rows_from[s])) != GNN_OK)
			return rc;
	if ((rc = gnn_metrics_counter(f->o.metrics, "gnn_trainer_feature_store_bytes_total", "Bytes of the FEAT "
				      "answers received from the graph stores", NULL, 0, &f->store_bytes)) != GNN_OK ||
	    (rc = gnn_metrics_gauge(f->o.metrics, "gnn_trainer_feature_cache_rows", "Rows in the hot-feature cache",
				    NULL, 0, &f->cache_rows)) != GNN_OK)
		return rc;
	return gnn_metrics_gauge(f->o.metrics, "gnn_trainer_feature_cache_bytes", "Bytes of the hot-feature cache",
				 NULL, 0, &f->cache_bytes);
}

int tr_feats_open(const struct tr_feats_opts *o, const struct gnn_layout *g, struct tr_feats **out)
{
	struct tr_feats *f;
	int rc = GNN_ENOMEM;

	*out = NULL;
	if (g->num_parts == 0 || tr_stores_count(o->stores) % g->num_parts != 0 ||
	    tr_stores_count(o->stores) / g->num_parts > GNN_MAX_REPLICAS || tr_stores_count(o->stores) == 0) {
		GNN_ERROR("bad_config", "option=graphstores urls=%zu partitions=%" PRIu32 " reason=\"--features-from "
			  "stores needs one graph store URL per partition, or the same number for each (replicas, "
			  "partition by partition, at most %d) (--graphstores or --graphstore-pattern)\"",
			  tr_stores_count(o->stores), g->num_parts, GNN_MAX_REPLICAS);
		return GNN_EINVAL;
	}
	if ((f = calloc(1, sizeof(*f))) == NULL)
		return GNN_ENOMEM;
	f->o = *o;
	f->g = g;
	f->T = g->schema->num_types;
	f->P = g->num_parts;
	f->R = (uint32_t)(tr_stores_count(o->stores) / f->P);
	f->dtype = g->feat_dtype;
	f->elem = gnn_dtype_size(f->dtype);
	for (uint32_t t = 0; t < f->T; t++)
		f->dim[t] = g->schema->types[t].feat_dim;
	atomic_init(&f->req_id, gnn_draw64((uint64_t)time(NULL), (uint64_t)getpid()) & 0xffffffffull);
	if ((f->st = calloc((size_t)f->P * f->R, sizeof(*f->st))) == NULL ||
	    (f->ranges = calloc((size_t)f->P * f->T, sizeof(*f->ranges))) == NULL)
		goto fail;
	for (uint32_t p = 0; p < f->P; p++)
		for (uint32_t t = 0; t < f->T; t++)
			if (f->dim[t] > 0) {
				struct range *r = &f->ranges[f->nranges++];

				*r = (struct range){ .p = p, .t = t };
				gnn_layout_type_range(g, p, t, &r->b, &r->e);
			}
	for (uint32_t i = 0; i < f->P * f->R; i++) {
		pthread_mutex_init(&f->st[i].mu, NULL);
		f->st[i].c = tr_stores_client(o->stores, i);
	}
	if (f->R > 1)
		GNN_INFO("graphstore_replicas", "what=features stores=%" PRIu32 " num_parts=%" PRIu32 " note=\"each "
			 "row call goes to the replica with the fewest in flight, and on to another at a timeout or a "
			 "lost connection\"", f->P * f->R, f->P);
	if ((rc = register_metrics(f)) != GNN_OK)
		goto fail;
	*out = f;
	return GNN_OK;
fail:
	tr_feats_close(f);
	return rc;
}

void tr_feats_close(struct tr_feats *f)
{
	if (f == NULL)
		return;
	for (uint32_t i = 0; f->st != NULL && i < f->P * f->R; i++)
		pthread_mutex_destroy(&f->st[i].mu);
	free(f->st);
	free(f->ranges);
	free(f->counts);
	free(f->slot);
	for (uint32_t t = 0; t < f->T; t++)
		free(f->rows[t]);
	free(f);
}

/* ---- the stores' graph ---- */

/* Store i serves partition i mod P of the samplers' graph: checked by
 * INFO whenever its connection came up since the last check. */
static int verify(struct tr_feats *f, uint32_t i, char *why, size_t why_len)
{
	struct store *st = &f->st[i];
	uint32_t p = i % f->P;
	struct gnn_wbuf w;
	struct gnn_info info = { 0 };
	nng_msg *reply = NULL;
	const void *pl;
	size_t len;
	unsigned conn;
	int rc;

	pthread_mutex_lock(&st->mu);
	conn = gnn_client_connections(st->c);
	if (conn != 0 && conn == atomic_load(&st->verified)) {
		pthread_mutex_unlock(&st->mu);
		return GNN_OK;
	}
	gnn_wbuf_init(&w);
	if ((rc = gnn_encode_info_req(&w, atomic_fetch_add(&f->req_id, 1))) != GNN_OK ||
	    (rc = gnn_client_call(st->c, &w, &reply, why, why_len)) != GNN_OK ||
	    (rc = gnn_reply_payload(reply, GNN_MSG_INFO_RESP, &pl, &len)) != GNN_OK ||
	    (rc = gnn_decode_info_resp(pl, len, &info)) != GNN_OK) {
		if (rc != GNN_ECLOSED && why[0] == '\0')
			snprintf(why, why_len, "%s: INFO failed: %s", gnn_client_name(st->c), gnn_strerror(rc));
		goto out;
	}
	if (!gnn_storeid_serves(&info, p, f->g)) {
		GNN_ERROR("graph_changed", "store=%s graph_id=%016" PRIx64 " part=%" PRIu32 " num_parts=%" PRIu32
			  " expected_graph_id=%016" PRIx64 " expected_part=%" PRIu32 " reason=\"the store serves "
			  "another graph or partition than the samplers: its rows are not used\"",
			  gnn_client_name(st->c), info.layout.graph_id, info.part_id, info.layout.num_parts,
			  f->g->graph_id, p);
		snprintf(why, why_len, "%s serves graph_id %016" PRIx64 " partition %" PRIu32 ", not graph_id %016"
			 PRIx64 " partition %" PRIu32, gnn_client_name(st->c), info.layout.graph_id, info.part_id,
			 f->g->graph_id, p);
		rc = GNN_EPROTO;
		goto out;
	}
	/* the count before the call: a connection that came up during it is
	 * checked next time */
	atomic_store(&st->verified, conn);
out:
	gnn_proto_release(info.owned);
	if (reply != NULL)
		nng_msg_free(reply);
	gnn_wbuf_free(&w);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/* ---- FEAT calls ---- */

/* Splits n rows of type t from store p (ids, pos as in struct fcall) into
 * calls of about GNN_FEAT_CALL_BYTES, appended to *fc (*nfc of *cap). */
static int add_calls(struct tr_feats *f, uint32_t p, uint32_t t, const int64_t *ids, const uint32_t *pos,
		     void *dst, enum gnn_dtype dst_dtype, uint64_t n, struct fcall **fc, size_t *nfc, size_t *cap)
{
	uint64_t per = GNN_FEAT_CALL_BYTES / ((uint64_t)f->dim[t] * f->elem);
	size_t out_row = (size_t)f->dim[t] * gnn_dtype_size(dst_dtype);

	if (per == 0)
		per = 1;
	if (per > GNN_PROTO_MAX_IDS)
		per = GNN_PROTO_MAX_IDS;
	for (uint64_t i = 0; i < n; i += per) {
		if (*nfc == *cap) {
			size_t c = *cap < 16 ? 16 : *cap * 2;
			struct fcall *q = realloc(*fc, c * sizeof(*q));

			if (q == NULL)
				return GNN_ENOMEM;
			*fc = q;
			*cap = c;
		}
		(*fc)[(*nfc)++] = (struct fcall){ .p = p, .t = t, .n = (uint32_t)(n - i < per ? n - i : per),
						  .ids = ids + i, .pos = pos != NULL ? pos + i : NULL,
						  .dst = (uint8_t *)dst + (pos != NULL ? 0 : i * out_row),
						  .dst_dtype = dst_dtype };
	}
	return GNN_OK;
}

/* Copies call k's answer (from c) into place, after checking its shape. */
static int scatter(struct tr_feats *f, const struct fcall *k, const struct gnn_client *c, nng_msg *reply,
		   char *why, size_t why_len)
{
	struct gnn_feat_resp r;
	const void *pl;
	size_t len, d = f->dim[k->t], in_row = d * f->elem, out_row = d * gnn_dtype_size(k->dst_dtype);
	int rc;

	if ((rc = gnn_reply_payload(reply, GNN_MSG_FEAT_RESP, &pl, &len)) != GNN_OK ||
	    (rc = gnn_decode_feat_resp(pl, len, &r)) != GNN_OK || r.n != k->n || r.dim != d || r.dtype != f->dtype) {
		snprintf(why, why_len, "%s: bad FEAT answer (%s)", gnn_client_name(c),
			 rc != GNN_OK ? gnn_strerror(rc) : "wrong shape or dtype");
		return rc != GNN_OK ? rc : GNN_EPROTO;
	}
	if (k->pos == NULL && k->dst_dtype == f->dtype)   /* the cache's fill, or f32 rows in order */
		memcpy(k->dst, r.rows, (size_t)k->n * in_row);
	else   /* a minibatch's rows: f32, in their places */
		for (uint32_t i = 0; i < k->n; i++)
			gnn_feat_to_f32((const uint8_t *)r.rows + i * in_row, f->dtype, d,
					(float *)(void *)(k->dst + (size_t)(k->pos != NULL ? k->pos[i] : i) * out_row));
	gnn_proto_release(r.owned);
	gnn_counter_add(f->store_bytes, (double)len);
	return GNN_OK;
}

/* The bytes of call k's answer. */
static double fcall_bytes(const struct tr_feats *f, const struct fcall *k)
{
	return (double)k->n * f->dim[k->t] * f->elem;
}

/* Partition p's store for a call (gnn_replica_pick over stores p, p + P,
 * ...): the unconnected after the others, those the call tried (bits of
 * tried, by replica rank) last. */
static uint32_t pick_store(struct tr_feats *f, uint32_t p, uint64_t tried)
{
	struct gnn_replica *reps[GNN_MAX_REPLICAS];
	bool usable[GNN_MAX_REPLICAS];

	if (f->R == 1)
		return p;
	for (uint32_t r = 0; r < f->R; r++) {
		reps[r] = &f->st[p + r * f->P].rep;
		usable[r] = gnn_client_connected(f->st[p + r * f->P].c);
	}
	return p + (uint32_t)gnn_replica_pick(reps, usable, f->R, tried, &f->next_pick) * f->P;
}

/* One wave's calls and what became of them. */
struct wave {
	struct tr_feats *f;
	struct gnn_multicall *batch;
	const struct fcall *fc;
	uint32_t store[MAX_CALLS];  /* the store each call goes to now */
	uint64_t tried[MAX_CALLS];  /* the replicas each call went to (bits by rank) */
	uint32_t sent[MAX_CALLS];   /* times each call was sent */
	unsigned conn[MAX_CALLS];   /* each call's store's connections when it was sent */
	bool moved;                 /* a call went on to a connected replica: no pause */
	double deadline, logged;
	int rc;                     /* the first failure that ends the wave */
	char *why;
	size_t why_len;
};

/* Call i goes to store st: its client, one attempt that a lost connection
 * ends at once when the partition has other replicas. Its first attempt
 * on each replica waits gnn_replica_timeout_ms (a frozen or vanished
 * replica costs that), later ones the rows timeout; both plus the bytes
 * term. */
static void send_to(struct wave *w, size_t i, uint32_t st)
{
	struct tr_feats *f = w->f;
	struct gnn_replica *reps[GNN_MAX_REPLICAS];
	int base_ms = 0;

	w->store[i] = st;
	w->tried[i] |= 1ull << (st / f->P);
	w->batch->call[i].client = f->st[st].c;
	w->batch->call[i].failover = f->R > 1;
	if (f->R > 1 && ++w->sent[i] <= f->R) {
		for (uint32_t r = 0; r < f->R; r++)
			reps[r] = &f->st[w->fc[i].p + r * f->P].rep;
		base_ms = gnn_replica_timeout_ms(reps, f->R, tr_stores_replica_timeout_ms(f->o.stores));
	}
	w->batch->call[i].timeout_ms = tr_stores_rows_timeout_ms(f->o.stores, fcall_bytes(f, &w->fc[i]), base_ms);
}

/* Call i, refused by its store (eunavail, silent, connection lost), goes
 * on to another replica of its partition, every one once before any
 * again. */
static void fail_over(struct wave *w, size_t i)
{
	struct tr_feats *f = w->f;
	uint32_t from = w->store[i], to;

	if (f->R == 1)
		return;
	gnn_replica_avoid(&f->st[from].rep);
	tr_stores_failed_over(f->o.stores, from);
	if (__builtin_popcountll(w->tried[i]) >= (int)f->R)
		w->tried[i] = 0;
	to = pick_store(f, w->fc[i].p, w->tried[i] | 1ull << (from / f->P));
	GNN_LOG_LIMITED(GNN_LOG_INFO, "graphstore_failover", "what=features store=%s to=%s part=%" PRIu32,
			gnn_client_name(f->st[from].c), gnn_client_name(f->st[to].c), w->fc[i].p);
	send_to(w, i, to);
	w->moved |= gnn_client_connected(f->st[to].c);
}

/* Call i's result (gnn_multicall_answer_fn): the rows copied into place once
 * the store is known to serve the graph (checked again when its
 * connection came up meanwhile). A store answering eunavail, or silent for
 * an attempt's (short) timeout, is refused until the deadline (the call
 * runs again, on another replica if there is one); any other failure ends
 * the wave. */
static int take_rows(void *ctx, size_t i, struct gnn_call *c)
{
	struct wave *w = ctx;
	const struct fcall *k = &w->fc[i];
	int crc = c->rc;

	gnn_replica_end(&w->f->st[w->store[i]].rep, crc == GNN_OK ? c->answer_s : 0);
	if (crc == GNN_OK && gnn_client_connections(c->client) != w->conn[i])
		crc = verify(w->f, w->store[i], w->why, w->why_len);
	if (crc == GNN_OK)
		crc = scatter(w->f, k, c->client, c->reply, w->why, w->why_len);
	if (crc == GNN_OK)
		return GNN_OK;
	if ((crc == GNN_EUNAVAIL || crc == GNN_ETIMEDOUT) && gnn_now() < w->deadline && w->rc == GNN_OK) {
		if (gnn_now() - w->logged >= 5) {
			GNN_WARN_LIMITED("features_waiting", "store=%s reason=\"%s\"", gnn_client_name(c->client),
					 c->err[0] ? c->err : gnn_strerror(crc));
			w->logged = gnn_now();
		}
		fail_over(w, i);
	} else if (w->rc == GNN_OK) {
		w->rc = crc;
		if (w->why[0] == '\0')
			snprintf(w->why, w->why_len, "%s: %s", gnn_client_name(c->client),
				 c->err[0] ? c->err : gnn_strerror(crc));
	}
	return crc;
}

/* One wave of at most MAX_CALLS calls: every store it uses checked
 * before, the calls, then take_rows; the calls refused are sent again,
 * at once when they went on to a connected replica, else after RETRY_MS,
 * until they are answered or the deadline ends the wave: each attempt
 * after a silent one dials a new connection. */
static int run_wave(struct tr_feats *f, const struct fcall *fc, size_t n, double deadline, char *why,
		    size_t why_len)
{
	struct gnn_multicall batch;
	struct wave w = { .f = f, .batch = &batch, .fc = fc, .deadline = deadline, .why = why, .why_len = why_len };
	struct gnn_wbuf *req;

	gnn_multicall_init(&batch);
	for (size_t i = 0; i < n && w.rc == GNN_OK; i++) {
		uint32_t st = pick_store(f, fc[i].p, 0);

		if ((w.rc = gnn_multicall_add(&batch, f->st[st].c, 0, &req)) == GNN_OK &&
		    (w.rc = gnn_encode_ids_req(req, GNN_MSG_FEAT_REQ, atomic_fetch_add(&f->req_id, 1), fc[i].ids,
					       fc[i].n)) == GNN_OK)
			send_to(&w, i, st);
	}
	while (w.rc == GNN_OK) {
		int rc;

		for (size_t i = 0; i < n && w.rc == GNN_OK; i++)
			if (!batch.done[i] && (w.rc = verify(f, w.store[i], why, why_len)) == GNN_OK)
				w.conn[i] = gnn_client_connections(f->st[w.store[i]].c);
		if (w.rc != GNN_OK)
			break;
		for (size_t i = 0; i < n; i++)
			if (!batch.done[i])
				gnn_replica_begin(&f->st[w.store[i]].rep);  /* take_rows ends it */
		w.moved = false;
		if ((rc = gnn_multicall_run(&batch, take_rows, &w)) == GNN_OK || w.rc != GNN_OK)
			break;
		if (rc == GNN_ENOMEM) {  /* nothing was sent, nor taken */
			for (size_t i = 0; i < n; i++)
				if (!batch.done[i])
					gnn_replica_end(&f->st[w.store[i]].rep, 0);
			w.rc = rc;
			break;
		}
		if (!w.moved)
			nanosleep(&(struct timespec){ 0, RETRY_MS * 1000000L }, NULL);
	}
	gnn_multicall_free(&batch);
	return w.rc;
}

static int run_calls(struct tr_feats *f, const struct fcall *fc, size_t n, char *why, size_t why_len)
{
	double deadline = gnn_now() + (double)tr_stores_timeout_ms(f->o.stores) *
			  (tr_stores_retries(f->o.stores) + 1) / 1000.0;
	int rc = GNN_OK;

	why[0] = '\0';
	for (size_t i = 0; i < n && rc == GNN_OK; i += MAX_CALLS)
		rc = run_wave(f, fc + i, n - i < MAX_CALLS ? n - i : MAX_CALLS, deadline, why, why_len);
	return rc;
}

/* ---- the cache ---- */

bool tr_feats_wants_cache(const struct tr_feats *f)
{
	return f->slot == NULL && f->o.presample > 0 && (f->o.cache_ratio > 0 || f->o.cache_bytes > 0);
}

int tr_feats_count(struct tr_feats *f, const struct gnn_minibatch *mb)
{
	const struct gnn_block *b0 = &mb->blocks[0];

	if (f->counts == NULL && (f->counts = calloc((size_t)f->g->num_nodes, sizeof(uint16_t))) == NULL)
		return GNN_ENOMEM;
	for (uint32_t i = 0; i < b0->num_src; i++) {
		int64_t id = b0->src_ids[i];

		if (id >= 0 && id < f->g->num_nodes && f->counts[id] < UINT16_MAX)
			f->counts[id]++;
	}
	f->counted++;
	return GNN_OK;
}

/* What a cached row costs against the budget: a row (--cache-ratio) or
 * its bytes (a byte budget). */
static uint64_t cost(const struct tr_feats *f, uint32_t t)
{
	return f->o.cache_bytes > 0 ? (uint64_t)f->dim[t] * f->elem : 1;
}

/* The hotness below which nothing is cached (*cut), and how much of the
 * budget is left for nodes of exactly that hotness (*rest). */
static int threshold(struct tr_feats *f, uint64_t budget, uint32_t *cut, uint64_t *rest)
{
	uint32_t top = f->counts != NULL ? (f->counted < UINT16_MAX ? f->counted : UINT16_MAX) : 0;
	uint64_t *hist = calloc(top + 1, sizeof(uint64_t)), sum = 0;

	if (hist == NULL)
		return GNN_ENOMEM;
	for (size_t i = 0; i < f->nranges; i++)
		for (int64_t v = f->ranges[i].b; v < f->ranges[i].e; v++)
			hist[f->counts != NULL ? f->counts[v] : 0] += cost(f, f->ranges[i].t);
	*cut = 0;
	*rest = budget;
	for (int64_t c = top; c >= 0; c--) {
		if (sum + hist[c] > budget) {
			*cut = (uint32_t)c;
			*rest = budget - sum;
			free(hist);
			return GNN_OK;
		}
		sum += hist[c];
	}
	*rest = UINT64_MAX;   /* everything fits */
	free(hist);
	return GNN_OK;
}

/* Marks the hottest nodes within the budget in f->slot (their rows in
 * their type's cache, in range order), counting them per type. */
static int choose(struct tr_feats *f, uint64_t budget, uint64_t nrows[], uint64_t *total, double *covered)
{
	double reads = 0;
	uint64_t rest;
	uint32_t cut;
	int rc;

	if ((rc = threshold(f, budget, &cut, &rest)) != GNN_OK)
		return rc;
	if ((f->slot = malloc((size_t)f->g->num_nodes * sizeof(int32_t))) == NULL)
		return GNN_ENOMEM;
	memset(f->slot, 0xff, (size_t)f->g->num_nodes * sizeof(int32_t));
	*total = 0;
	*covered = 0;
	for (size_t i = 0; i < f->nranges; i++) {
		uint32_t t = f->ranges[i].t;

		for (int64_t v = f->ranges[i].b; v < f->ranges[i].e; v++) {
			uint32_t c = f->counts != NULL ? f->counts[v] : 0;

			reads += c;
			if (c < cut || (c == cut && rest < cost(f, t)))
				continue;
			if (c == cut)
				rest -= cost(f, t);
			if (nrows[t] >= INT32_MAX) {
				GNN_ERROR("bad_config", "option=cache-ratio reason=\"more than 2^31 cached rows of one "
					  "type\"");
				return GNN_ERANGE;
			}
			f->slot[v] = (int32_t)nrows[t]++;
			*covered += c;
			(*total)++;
		}
	}
	*covered = reads > 0 ? *covered / reads : 0;
	return GNN_OK;
}

/* Fetches the chosen rows into the type's caches (*bytes of them). */
static int fetch_chosen(struct tr_feats *f, const uint64_t nrows[], uint64_t total, uint64_t *bytes)
{
	int64_t *ids = malloc((total > 0 ? total : 1) * sizeof(int64_t));
	struct fcall *fc = NULL;
	size_t nfc = 0, cap = 0, at = 0;
	char err[512];
	int rc = GNN_ENOMEM;

	*bytes = 0;
	if (ids == NULL)
		goto out;
	for (uint32_t t = 0; t < f->T; t++)
		if (nrows[t] > 0) {
			if ((f->rows[t] = malloc(nrows[t] * f->dim[t] * f->elem)) == NULL)
				goto out;
			*bytes += nrows[t] * f->dim[t] * f->elem;
		}
	for (size_t i = 0; i < f->nranges; i++) {
		const struct range *r = &f->ranges[i];
		size_t first = at;

		for (int64_t v = r->b; v < r->e; v++)
			if (f->slot[v] >= 0)
				ids[at++] = v;
		if (at > first &&
		    (rc = add_calls(f, r->p, r->t, ids + first, NULL,
				    f->rows[r->t] + (size_t)f->slot[ids[first]] * f->dim[r->t] * f->elem, f->dtype,
				    at - first, &fc, &nfc, &cap)) != GNN_OK)
			goto out;
	}
	if ((rc = run_calls(f, fc, nfc, err, sizeof(err))) != GNN_OK)
		GNN_ERROR("feature_cache_failed", "rows=%" PRIu64 " reason=\"%s\"", total, err[0] ? err : gnn_strerror(rc));
out:
	free(fc);
	free(ids);
	return rc;
}

int tr_feats_build(struct tr_feats *f)
{
	double t0 = gnn_now(), covered;
	uint64_t nfeat = 0, budget, nrows[GNN_MAX_TYPES] = { 0 }, total = 0, bytes = 0;
	int rc;

	for (size_t i = 0; i < f->nranges; i++)
		nfeat += (uint64_t)(f->ranges[i].e - f->ranges[i].b);
	budget = f->o.cache_bytes > 0 ? f->o.cache_bytes : (uint64_t)(f->o.cache_ratio * (double)nfeat + 0.5);
	rc = choose(f, budget, nrows, &total, &covered);
	free(f->counts);
	f->counts = NULL;
	if (rc == GNN_OK && (rc = fetch_chosen(f, nrows, total, &bytes)) == GNN_OK) {
		gnn_gauge_set(f->cache_rows, (double)total);
		gnn_gauge_set(f->cache_bytes, (double)bytes);
		GNN_INFO("feature_cache", "rows=%" PRIu64 " of=%" PRIu64 " fraction=%.3f mb=%.1f presampled=%" PRIu32
			 " presampled_reads_covered=%.3f seconds=%.1f", total, nfeat,
			 nfeat > 0 ? (double)total / (double)nfeat : 0.0, (double)bytes / 1048576.0, f->counted, covered,
			 gnn_now() - t0);
		return GNN_OK;
	}
	free(f->slot);
	f->slot = NULL;
	for (uint32_t t = 0; t < f->T; t++) {
		free(f->rows[t]);
		f->rows[t] = NULL;
	}
	return rc;
}

/* ---- a minibatch's rows ---- */

/* The sources that the cache does not hold, grouped by (type, partition):
 * group k = t P + p at [gs[k], gs[k + 1]) of mid (their IDs) and mpos
 * (their rows in the type's matrix). The cached rows are copied now. */
struct misses {
	int64_t *mid;
	uint32_t *mpos, *key, *gs;
	uint64_t cached, missed;
};

/* Copies the cached rows of mb's sources into rows now; the others, in
 * source order, go to tid (their IDs), tpos (their rows in the type's
 * matrix) and m->key (type t P + owner p), *nm of them, counted in m->gs.
 * GNN_EPROTO for a source outside the graph or not of the type given. */
static int split_cached(struct tr_feats *f, const struct gnn_minibatch *mb, float *rows[], struct misses *m,
			int64_t *tid, uint32_t *tpos, uint32_t *nm)
{
	const struct gnn_block *b0 = &mb->blocks[0];
	uint32_t k_t[GNN_MAX_TYPES] = { 0 };

	*nm = 0;
	for (uint32_t i = 0; i < b0->num_src; i++) {
		uint32_t t = f->T > 1 ? mb->src_types[i] : 0, k, d = f->dim[t];
		int64_t id = b0->src_ids[i];
		int32_t p;

		if (d == 0)
			continue;
		/* the sampler's word is checked before it indexes anything */
		if (id < 0 || id >= f->g->num_nodes || (f->T > 1 && gnn_layout_type(f->g, id) != (int32_t)t))
			return GNN_EPROTO;
		k = k_t[t]++;
		if (f->slot != NULL && f->slot[id] >= 0) {
			gnn_feat_to_f32(f->rows[t] + (size_t)f->slot[id] * d * f->elem, f->dtype, d, rows[t] + (size_t)k * d);
			m->cached++;
			continue;
		}
		if ((p = gnn_layout_owner(f->g, id)) < 0)
			return GNN_EPROTO;
		tid[*nm] = id;
		tpos[*nm] = k;
		m->key[(*nm)++] = t * f->P + (uint32_t)p;
		m->gs[t * f->P + (uint32_t)p + 1]++;
	}
	return GNN_OK;
}

static int collect(struct tr_feats *f, const struct gnn_minibatch *mb, float *rows[], struct misses *m)
{
	uint32_t n = mb->blocks[0].num_src, G = f->T * f->P, *cur = NULL, nm;
	int64_t *tid = malloc((size_t)n * sizeof(int64_t) + 1);
	uint32_t *tpos = malloc((size_t)n * sizeof(uint32_t) + 1);
	int rc = GNN_ENOMEM;

	m->mid = malloc((size_t)n * sizeof(int64_t) + 1);
	m->mpos = malloc((size_t)n * sizeof(uint32_t) + 1);
	m->key = malloc((size_t)n * sizeof(uint32_t) + 1);
	m->gs = calloc((size_t)G + 1, sizeof(uint32_t));
	if (tid == NULL || tpos == NULL || m->mid == NULL || m->mpos == NULL || m->key == NULL || m->gs == NULL)
		goto out;
	if ((rc = split_cached(f, mb, rows, m, tid, tpos, &nm)) != GNN_OK)
		goto out;
	if ((cur = calloc(G, sizeof(uint32_t))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	/* the misses grouped by (type, partition), in source order within */
	for (uint32_t g = 0; g < G; g++)
		m->gs[g + 1] += m->gs[g];
	for (uint32_t j = 0; j < nm; j++) {
		uint32_t q = m->gs[m->key[j]] + cur[m->key[j]]++;

		m->mid[q] = tid[j];
		m->mpos[q] = tpos[j];
	}
	m->missed = nm;
	rc = GNN_OK;
out:
	free(cur);
	free(tid);
	free(tpos);
	return rc;
}

int tr_feats_fill(struct tr_feats *f, struct gnn_minibatch *mb, float *rows[GNN_PROTO_MAX_TYPES], char *why,
		  size_t why_len)
{
	struct misses m = { 0 };
	struct fcall *fc = NULL;
	size_t nfc = 0, cap = 0;
	int rc = GNN_ENOMEM;

	why[0] = '\0';
	if (mb->num_types != f->T) {
		snprintf(why, why_len, "the minibatch has %" PRIu32 " node types, the graph %" PRIu32, mb->num_types, f->T);
		return GNN_EPROTO;
	}
	for (uint32_t t = 0; t < f->T; t++) {
		if (mb->feat_dims[t] != f->dim[t]) {
			snprintf(why, why_len, "type %" PRIu32 "'s features are %" PRIu32 " wide in the minibatch, %" PRIu32
				 " in the graph", t, mb->feat_dims[t], f->dim[t]);
			return GNN_EPROTO;
		}
	}
	if ((rc = collect(f, mb, rows, &m)) != GNN_OK) {
		snprintf(why, why_len, "%s", rc == GNN_EPROTO ? "an input node outside the graph, or not of the type the "
			 "sampler gave" : "out of memory");
		goto out;
	}
	for (uint32_t g = 0; g < f->T * f->P && rc == GNN_OK; g++)
		if (m.gs[g + 1] > m.gs[g])
			rc = add_calls(f, g % f->P, g / f->P, m.mid + m.gs[g], m.mpos + m.gs[g], rows[g / f->P], GNN_DT_F32,
				       m.gs[g + 1] - m.gs[g], &fc, &nfc, &cap);
	if (rc == GNN_OK && (rc = run_calls(f, fc, nfc, why, why_len)) == GNN_OK) {
		for (uint32_t t = 0; t < f->T; t++)
			mb->feat[t] = rows[t];
		mb->flags |= GNN_MB_FEATURES;
		mb->feat_dtype = GNN_DT_F32;
		gnn_counter_add(f->rows_from[SRC_CACHE], (double)m.cached);
		gnn_counter_add(f->rows_from[SRC_STORE], (double)m.missed);
	}
out:
	free(fc);
	free(m.mid);
	free(m.mpos);
	free(m.key);
	free(m.gs);
	return rc;
}

void tr_feats_stats(const struct tr_feats *f, struct tr_feats_stats *out)
{
	*out = (struct tr_feats_stats){ .cached_rows = (uint64_t)gnn_counter_value(f->rows_from[SRC_CACHE]),
					.store_rows = (uint64_t)gnn_counter_value(f->rows_from[SRC_STORE]),
					.store_bytes = (uint64_t)gnn_counter_value(f->store_bytes) };
}
