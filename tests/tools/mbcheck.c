/* mbcheck - checks a running gnn-sampler against the partition files it
 * serves, independently of the sampler's code: it requests minibatches
 * over nng (client.h) and reads the graph through libcommon/part.h.
 *
 * Default mode: --minibatches N random minibatches (random seeds and batch
 * sizes; every other one with random fanouts, some -1 = all), each checked:
 *   - the reply decodes (the decoder checks the block structure: dst prefix,
 *     chaining, CSR bounds) and the last block's destinations are the seeds
 *     in request order;
 *   - every sampled edge u -> v of relation r exists in v's stored
 *     neighbour list of that relation;
 *   - no (node, relation) has more than its layer's fanout for the
 *     relation, one whose degree is at most the fanout has all its
 *     neighbours, the neighbours are distinct, and they are exactly what
 *     gnn_sample_choose picks with the relation's seed (docs/protocol.md);
 *   - source lists hold each node once;
 *   - the input nodes' types are the layout's, every feature row (of its
 *     type's matrix) and label equals the partition files';
 *   - every 4th minibatch, asked again, comes back byte-identical.
 * Prints statistics and "mbcheck: ok", or "mbcheck: FAIL ..." and exits 1.
 *
 * --exclude N: link prediction's exclusion (GNN_MB_EXCLUDE). N training
 * pairs (u, v), edges u -> v of --exclude-rel (default: meta.json's
 * edge_split relation, else relation 0) still in the CSR, their endpoints
 * as seeds, --fanouts (give -1s: every row is then checked exactly). With
 * the pairs excluded no block holds an edge between a pair's endpoints
 * under the relation or its reverse, and every other row holds all its
 * stored neighbours; the same request repeated is byte-identical; the
 * same seeds without exclusion do hold pair edges (printed: the check can
 * fail); a bad relation index, a pair outside the graph and (typed
 * graphs) a pair of the wrong types get ERROR einval, and the sampler
 * answers afterwards. Prints "mbcheck: exclude ..." lines, then "mbcheck:
 * ok" or FAILs.
 *
 * --once: one minibatch; prints "mbcheck: ok seconds=S" (exit 0) or
 * "mbcheck: error code=NAME seconds=S text=..." (exit 3).
 * --send FILE: sends FILE's bytes as one message on a plain REQ socket and
 * prints "mbcheck: reply type=T status=S bytes=N" or "mbcheck: no reply". */
#include <inttypes.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "err.h"
#include "fanouts.h"
#include "log.h"
#include "opt.h"
#include "part.h"
#include "proto.h"
#include "sample.h"
#include "sys.h"

static struct {
	const char *sampler, *parts, *fanouts, *send, *exclude_rel;
	int64_t minibatches, batch, seed, timeout_ms, retries, exclude;
	bool once;
} cfg;

static const struct gnn_opt options[] = {
	{ "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL, "sampler URL (required)" },
	{ "parts", GNN_OPT_STR, &cfg.parts, NULL, 0, 0, NULL, "the partition folder the stores serve" },
	{ "minibatches", GNN_OPT_INT, &cfg.minibatches, "50", 1, 1e6, NULL, "minibatches to check" },
	{ "batch", GNN_OPT_INT, &cfg.batch, "64", 1, 1e6, NULL, "largest batch (sizes vary up to it)" },
	{ "fanouts", GNN_OPT_LIST, &cfg.fanouts, "15,10,5", 0, 0, NULL,
	  "fanouts, input layer first (per relation: fanouts.h)" },
	{ "seed", GNN_OPT_INT, &cfg.seed, "1", 0, INT64_MAX, NULL, "seed of the random requests" },
	{ "timeout-ms", GNN_OPT_INT, &cfg.timeout_ms, "30000", 1, 1e7, NULL, "timeout of one request" },
	{ "retries", GNN_OPT_INT, &cfg.retries, "0", 0, 100, NULL, "retries of a request that timed out" },
	{ "once", GNN_OPT_BOOL, &cfg.once, NULL, 0, 0, NULL, "one minibatch; report its outcome and time" },
	{ "send", GNN_OPT_STR, &cfg.send, NULL, 0, 0, NULL, "send this file's bytes as one message" },
	{ "exclude", GNN_OPT_INT, &cfg.exclude, "0", 0, 4096, NULL,
	  "check the exclusion of this many training pairs (GNN_MB_EXCLUDE) instead" },
	{ "exclude-rel", GNN_OPT_STR, &cfg.exclude_rel, NULL, 0, 0, NULL,
	  "the pairs' relation (default: meta.json's edge_split relation, else relation 0)" },
	{ NULL },
};

static struct gnn_meta meta;
static struct gnn_part *parts;
static int failures;
static struct {
	uint64_t minibatches, edges, input_nodes, full_nodes, capped_nodes, feat_rows, labels, repeats;
} stats;

#define FAIL(...)                                       \
	do {                                            \
		if (failures++ < 10) {                  \
			printf("mbcheck: FAIL " __VA_ARGS__); \
			printf("\n");                   \
		}                                       \
	} while (0)

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* Node v's stored in-neighbours under relation r (ascending), *deg of them. */
static const int64_t *adj_of(int64_t v, uint32_t r, uint32_t *deg, const struct gnn_part **pt_out)
{
	const struct gnn_part *pt = &parts[gnn_layout_owner(&meta.layout, v)];
	int64_t row = (v - pt->node_start) * pt->num_rels + r;

	*deg = (uint32_t)(pt->indptr[row + 1] - pt->indptr[row]);
	if (pt_out != NULL)
		*pt_out = pt;
	return pt->indices + pt->indptr[row];
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* One (destination, relation) row of block l against the files. */
static void check_row(uint64_t n, uint32_t l, const struct gnn_block *b, uint32_t i, uint32_t r, uint64_t seed,
		      int32_t fanout, uint32_t **pos, size_t *pos_cap)
{
	size_t row = (size_t)i * b->num_rels + r;
	int64_t v = b->src_ids[i];
	uint32_t deg, got = (uint32_t)(b->indptr[row + 1] - b->indptr[row]), want, k;
	const int64_t *adj = adj_of(v, r, &deg, NULL);

	want = fanout == 0 ? 0 : fanout < 0 || deg <= (uint32_t)fanout ? deg : (uint32_t)fanout;
	if (got != want) {
		FAIL("minibatch=%" PRIu64 " layer=%u node=%" PRId64 " relation=%u degree=%u fanout=%d sampled=%u "
		     "reason=\"expected %u neighbours\"", n, l, v, r, deg, fanout, got, want);
		return;
	}
	if (want == 0)
		return;
	stats.full_nodes += want == deg;
	stats.capped_nodes += want != deg;
	if (deg > *pos_cap) {
		*pos_cap = deg;
		*pos = realloc(*pos, *pos_cap * sizeof(**pos));
	}
	k = gnn_sample_choose(gnn_sample_rel_seed(seed, r), v, deg, fanout, *pos);
	for (uint32_t e = 0; e < got; e++) {
		int64_t u = b->src_ids[b->indices[b->indptr[row] + e]];

		if (bsearch(&u, adj, deg, 8, cmp_i64) == NULL)
			FAIL("minibatch=%" PRIu64 " layer=%u edge=%" PRId64 "->%" PRId64 " relation=%u"
			     " reason=\"no such edge of that relation in the partition files\"", n, l, u, v, r);
		else if (e > 0 && u <= b->src_ids[b->indices[b->indptr[row] + e - 1]])
			FAIL("minibatch=%" PRIu64 " layer=%u node=%" PRId64
			     " reason=\"neighbours repeated or out of order\"", n, l, v);
		else if (k != got || u != adj[(*pos)[e]])
			FAIL("minibatch=%" PRIu64 " layer=%u node=%" PRId64 " relation=%u"
			     " reason=\"not the neighbours gnn_sample_choose picks\"", n, l, v, r);
	}
}

/* The input nodes' types and feature rows against the files. */
static void check_features(uint64_t n, const struct gnn_minibatch *mb)
{
	const struct gnn_block *b0 = &mb->blocks[0];
	const struct gnn_schema *sc = meta.layout.schema;
	uint32_t at[GNN_MAX_TYPES] = { 0 };

	if (mb->num_types != sc->num_types) {
		FAIL("minibatch=%" PRIu64 " reason=\"%u node types, the graph has %u\"", n, mb->num_types, sc->num_types);
		return;
	}
	for (uint32_t i = 0; i < b0->num_src; i++) {
		const struct gnn_part *pt = &parts[gnn_layout_owner(&meta.layout, b0->src_ids[i])];
		int32_t t = gnn_layout_type(&meta.layout, b0->src_ids[i]);
		const void *want;
		uint32_t d;
		size_t row;

		if (t != mb->src_types[i] || mb->feat_dims[t] != sc->types[t].feat_dim) {
			FAIL("minibatch=%" PRIu64 " node=%" PRId64 " reason=\"wrong node type or feature width\"", n,
			     b0->src_ids[i]);
			return;
		}
		/* the rows as stored: a sampler passes f16 rows on unconverted */
		want = gnn_part_feat_row(pt, b0->src_ids[i], &d);
		row = (size_t)d * gnn_dtype_size(pt->feat_dtype);
		if (d > 0 && (mb->feat[t] == NULL || mb->feat_dtype != pt->feat_dtype ||
			      memcmp((const char *)mb->feat[t] + at[t] * row, want, row) != 0)) {
			FAIL("minibatch=%" PRIu64 " node=%" PRId64 " reason=\"feature row differs\"", n, b0->src_ids[i]);
			return;
		}
		at[t]++;
		stats.feat_rows += d > 0;
	}
	stats.input_nodes += b0->num_src;
}

/* Checks one decoded minibatch against the partition files. */
static void check(uint64_t n, const struct gnn_minibatch_req *rq, const struct gnn_minibatch *mb)
{
	uint32_t L = rq->num_layers, R = rq->num_rels, *pos = NULL;
	size_t pos_cap = 0;

	if (mb->num_layers != L || mb->num_seeds != rq->num_seeds || mb->blocks[L - 1].num_dst != rq->num_seeds ||
	    mb->num_rels != R || memcmp(mb->blocks[L - 1].src_ids, rq->seeds, (size_t)rq->num_seeds * 8) != 0) {
		FAIL("minibatch=%" PRIu64 " reason=\"last block's destinations are not the seeds\"", n);
		return;
	}
	for (uint32_t l = 0; l < L; l++) {
		const struct gnn_block *b = &mb->blocks[l];
		uint64_t seed = gnn_sample_layer_seed(rq->seed, l);
		int64_t *sorted = malloc(((size_t)b->num_src + 1) * 8);

		for (uint32_t i = 0; i < b->num_dst; i++)
			for (uint32_t r = 0; r < R; r++)
				check_row(n, l, b, i, r, seed, rq->fanouts[(size_t)l * R + r], &pos, &pos_cap);
		memcpy(sorted, b->src_ids, (size_t)b->num_src * 8);
		qsort(sorted, b->num_src, 8, cmp_i64);
		for (uint32_t i = 1; i < b->num_src; i++)
			if (sorted[i] == sorted[i - 1]) {
				FAIL("minibatch=%" PRIu64 " layer=%u node=%" PRId64 " reason=\"source listed twice\"", n, l,
				     sorted[i]);
				break;
			}
		free(sorted);
		stats.edges += b->num_edges;
	}
	free(pos);
	if (rq->flags & GNN_MB_FEATURES)
		check_features(n, mb);
	if (rq->flags & GNN_MB_LABELS) {
		for (uint32_t i = 0; mb->labels != NULL && i < rq->num_seeds; i++) {
			const struct gnn_part *pt = &parts[gnn_layout_owner(&meta.layout, rq->seeds[i])];

			if (mb->labels[i] != pt->labels[rq->seeds[i] - pt->node_start]) {
				FAIL("minibatch=%" PRIu64 " node=%" PRId64 " reason=\"label differs\"", n, rq->seeds[i]);
				break;
			}
			stats.labels++;
		}
		if (mb->labels == NULL)
			FAIL("minibatch=%" PRIu64 " reason=\"no labels\"", n);
	}
	stats.minibatches++;
}

/* One request; on GNN_OK *reply is the caller's. */
static int request(struct gnn_client *c, uint64_t id, const struct gnn_minibatch_req *rq, nng_msg **reply,
		   char *err, size_t err_len)
{
	struct gnn_wbuf w;
	int rc;

	gnn_wbuf_init(&w);
	if ((rc = gnn_encode_minibatch_req(&w, id, rq)) == GNN_OK)
		rc = gnn_client_call(c, &w, reply, err, err_len);
	gnn_wbuf_free(&w);
	return rc;
}

static int32_t fanouts[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS];

/* --fanouts resolved on the graph's relations into rq. */
static int parse_fanouts(const char *text, struct gnn_minibatch_req *rq)
{
	char why[256];

	if (gnn_fanouts_for(text, meta.layout.schema, fanouts, &rq->num_layers, why, sizeof(why)) != GNN_OK) {
		printf("mbcheck: --fanouts %s: %s\n", text, why);
		return GNN_EINVAL;
	}
	rq->num_rels = meta.layout.schema->num_rels;
	rq->fanouts = fanouts;
	return GNN_OK;
}

/* 1..3 layers of random fanouts per relation: some -1 (all), some 0 (none). */
static void random_fanouts(struct gnn_minibatch_req *rq)
{
	rq->num_layers = 1 + (uint32_t)rnd(3);
	rq->num_rels = meta.layout.schema->num_rels;
	for (uint32_t k = 0; k < rq->num_layers * rq->num_rels; k++) {
		uint64_t x = rnd(10);

		fanouts[k] = x == 0 ? -1 : x == 1 && rq->num_rels > 1 ? 0 : 1 + (int32_t)rnd(20);
	}
	rq->fanouts = fanouts;
}

static void random_seeds(uint32_t n, int64_t *out)
{
	for (uint32_t i = 0; i < n;) {
		int64_t v = (int64_t)rnd((uint64_t)meta.layout.num_nodes);
		bool dup = false;

		for (uint32_t q = 0; q < i && !dup; q++)
			dup = out[q] == v;
		if (!dup)
			out[i++] = v;
	}
}

static int send_file(void)
{
	FILE *f = fopen(cfg.send, "rb");
	nng_socket s;
	char *buf = NULL;
	void *rep;
	size_t len = 0, rlen;
	long size;
	int rv;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0) {
		printf("mbcheck: cannot read %s\n", cfg.send);
		return 1;
	}
	rewind(f);
	buf = malloc((size_t)size + 1);
	len = fread(buf, 1, (size_t)size, f);
	fclose(f);
	if ((rv = nng_req0_open(&s)) != 0 || (rv = nng_dial(s, cfg.sampler, NULL, 0)) != 0) {
		printf("mbcheck: cannot dial %s: %s\n", cfg.sampler, nng_strerror(rv));
		free(buf);
		return 1;
	}
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, (int)cfg.timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, (int)cfg.timeout_ms);
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	if ((rv = nng_send(s, buf, len, 0)) != 0 || (rv = nng_recv(s, &rep, &rlen, NNG_FLAG_ALLOC)) != 0) {
		printf("mbcheck: no reply (%s)\n", nng_strerror(rv));
	} else {
		struct gnn_hdr h;
		const void *payload;
		int rc = gnn_proto_decode_hdr(rep, rlen, &h, &payload);

		if (rc != GNN_OK)
			printf("mbcheck: reply undecodable bytes=%zu\n", rlen);
		else
			printf("mbcheck: reply type=%s status=%s bytes=%zu\n", gnn_msg_name(h.type),
			       gnn_errname((int)h.status), rlen);
		nng_free(rep, rlen);
	}
	/* The answer goes out before the close, so that a test's timeout
	 * around this process keeps it: one sampler.sh run under make asan
	 * hung in its garbage loop, and a REQ close with its request
	 * unanswered is the suspect (cf. nanomsg/nng#648). */
	fflush(stdout);
	nng_close(s);
	free(buf);
	return 0;
}

/* ---- --exclude ---- */

static struct {
	uint32_t rel;
	int32_t rev;
	uint32_t n;
	int64_t *pairs;  /* [2 n] (u, v) */
} ex;

/* Whether {a, b} is one of the pairs, either way round. */
static bool is_pair(int64_t a, int64_t b)
{
	for (uint32_t k = 0; k < ex.n; k++)
		if ((ex.pairs[2 * k] == a && ex.pairs[2 * k + 1] == b) || (ex.pairs[2 * k] == b && ex.pairs[2 * k + 1] == a))
			return true;
	return false;
}

/* ex.n training pairs: a random stored in-neighbour u of a random node v
 * of the relation's destination type; pairs distinct. */
static int pick_pairs(uint32_t want)
{
	const struct gnn_rel *re = &meta.layout.schema->rels[ex.rel];

	ex.pairs = malloc((size_t)want * 16);
	for (uint64_t tries = 0; ex.pairs != NULL && ex.n < want && tries < 1000000; tries++) {
		int64_t v = (int64_t)rnd((uint64_t)meta.layout.num_nodes), u;
		const int64_t *adj;
		uint32_t deg;

		if (gnn_layout_type(&meta.layout, v) != (int32_t)re->dst || (adj = adj_of(v, ex.rel, &deg, NULL), deg == 0))
			continue;
		u = adj[rnd(deg)];
		if (is_pair(u, v))
			continue;
		ex.pairs[2 * ex.n] = u;
		ex.pairs[2 * ex.n++ + 1] = v;
	}
	return ex.n == want ? GNN_OK : GNN_EINVAL;
}

/* Every block of mb against the files, all fanouts -1: each row holds its
 * stored neighbours, less the pairs' when excl (relation and reverse).
 * Returns the edges between a pair's endpoints under those relations. */
static uint64_t check_excluded(const char *what, const struct gnn_minibatch *mb, bool excl)
{
	uint64_t pair_edges = 0;

	for (uint32_t l = 0; l < mb->num_layers; l++) {
		const struct gnn_block *b = &mb->blocks[l];

		for (uint32_t i = 0; i < b->num_dst; i++)
			for (uint32_t r = 0; r < b->num_rels; r++) {
				size_t row = (size_t)i * b->num_rels + r;
				int64_t v = b->src_ids[i];
				bool ours = r == ex.rel || (int32_t)r == ex.rev;
				uint32_t deg, want = 0, got = (uint32_t)(b->indptr[row + 1] - b->indptr[row]);
				const int64_t *adj = adj_of(v, r, &deg, NULL);

				for (uint32_t k = 0; k < deg; k++)
					want += !(excl && ours && is_pair(adj[k], v));
				for (uint32_t e = 0; e < got; e++) {
					int64_t u = b->src_ids[b->indices[b->indptr[row] + e]];

					pair_edges += ours && is_pair(u, v);
					if (bsearch(&u, adj, deg, 8, cmp_i64) == NULL)
						FAIL("%s layer=%u edge=%" PRId64 "->%" PRId64 " reason=\"no such edge\"", what, l,
						     u, v);
				}
				if (got != want)
					FAIL("%s layer=%u node=%" PRId64 " relation=%u sampled=%u expected=%u stored=%u "
					     "reason=\"not the stored neighbours less the excluded pairs'\"", what, l, v, r, got,
					     want, deg);
			}
		stats.edges += b->num_edges;
	}
	return pair_edges;
}

/* Requests rq; checks the reply (see check_excluded). *pair_edges gets
 * the pairs' edges found; *bytes (may be NULL) a copy of the payload. */
static int excl_request(struct gnn_client *c, const char *what, const struct gnn_minibatch_req *rq,
			uint64_t *pair_edges, void **bytes, size_t *len)
{
	struct gnn_minibatch mb;
	nng_msg *reply;
	const void *payload;
	char err[512];
	int rc;

	if ((rc = request(c, 1, rq, &reply, err, sizeof(err))) != GNN_OK) {
		FAIL("%s code=%s reason=\"%s\"", what, gnn_errname(rc), err);
		return rc;
	}
	if ((rc = gnn_reply_payload(reply, GNN_MSG_MINIBATCH_RESP, &payload, len)) != GNN_OK ||
	    (rc = gnn_decode_minibatch_resp(payload, *len, &mb)) != GNN_OK) {
		FAIL("%s reason=\"reply does not decode\"", what);
		nng_msg_free(reply);
		return rc;
	}
	*pair_edges = check_excluded(what, &mb, (rq->flags & GNN_MB_EXCLUDE) != 0);
	if (bytes != NULL && (*bytes = malloc(*len)) != NULL)
		memcpy(*bytes, payload, *len);
	gnn_proto_release(mb.owned);
	nng_msg_free(reply);
	return GNN_OK;
}

/* A request that must get ERROR einval whose text holds text. */
static void excl_refused(struct gnn_client *c, const char *what, const struct gnn_minibatch_req *rq, const char *text)
{
	nng_msg *reply;
	char err[512];
	int rc = request(c, 2, rq, &reply, err, sizeof(err));

	if (rc == GNN_OK)
		nng_msg_free(reply);
	if (rc != GNN_EINVAL || strstr(err, text) == NULL)
		FAIL("%s code=%s text=\"%s\" reason=\"expected einval saying '%s'\"", what, gnn_errname(rc),
		     rc == GNN_OK ? "" : err, text);
	else
		printf("mbcheck: exclude refused %s: %s\n", what, err);
}

/* The relation of the pairs: --exclude-rel, meta.json's edge_split, 0. */
static int excl_relation(void)
{
	const char *name = cfg.exclude_rel;
	json_t *es = json_object_get(meta.json, "edge_split");
	int32_t r;

	if (name == NULL && es != NULL)
		name = json_string_value(json_object_get(es, "relation"));
	r = name != NULL ? gnn_schema_rel(meta.layout.schema, name) : 0;
	if (r < 0) {
		printf("mbcheck: no relation %s\n", name);
		return GNN_EINVAL;
	}
	ex.rel = (uint32_t)r;
	ex.rev = gnn_schema_reverse(meta.layout.schema, ex.rel);
	return GNN_OK;
}

static void run_exclude(struct gnn_client *c, struct gnn_minibatch_req *rq, int64_t *seeds)
{
	const struct gnn_schema *sc = meta.layout.schema;
	uint64_t with = 0, without = 0, again = 0;
	void *b1 = NULL, *b2 = NULL;
	size_t len1 = 0, len2 = 0, len;
	int64_t bad[2];

	if (excl_relation() != GNN_OK || pick_pairs((uint32_t)cfg.exclude) != GNN_OK) {
		FAIL("exclude reason=\"no relation or not %" PRId64 " training pairs\"", cfg.exclude);
		return;
	}
	rq->num_seeds = 0;
	for (uint32_t k = 0; k < 2 * ex.n; k++) {
		bool dup = false;

		for (uint32_t q = 0; q < rq->num_seeds && !dup; q++)
			dup = seeds[q] == ex.pairs[k];
		if (!dup)
			seeds[rq->num_seeds++] = ex.pairs[k];
	}
	rq->flags = GNN_MB_EXCLUDE;
	rq->seed = (uint64_t)cfg.seed;
	rq->num_excl = ex.n;
	rq->excl_rel = ex.rel;
	rq->excl = ex.pairs;
	if (excl_request(c, "excluded", rq, &with, &b1, &len1) == GNN_OK &&
	    excl_request(c, "excluded-again", rq, &again, &b2, &len2) == GNN_OK &&
	    (b1 == NULL || b2 == NULL || len1 != len2 || memcmp(b1, b2, len1) != 0))
		FAIL("exclude reason=\"same request, different minibatch\"");
	if (with > 0)
		FAIL("exclude pair_edges=%" PRIu64 " reason=\"excluded pairs' edges in the blocks\"", with);
	rq->flags = 0;
	rq->num_excl = 0;
	rq->excl_rel = 0;
	rq->excl = NULL;
	if (excl_request(c, "not-excluded", rq, &without, NULL, &len) == GNN_OK && without == 0)
		FAIL("exclude reason=\"without exclusion no pair edge was sampled: the check proves nothing\"");
	printf("mbcheck: exclude relation=%u reverse=%d pairs=%u seeds=%u pair_edges_excluded=%" PRIu64
	       " pair_edges_not_excluded=%" PRIu64 " repeat_identical=%d edges=%" PRIu64 "\n", ex.rel, ex.rev, ex.n,
	       rq->num_seeds, with, without, b1 != NULL && b2 != NULL && len1 == len2 && !memcmp(b1, b2, len1),
	       stats.edges);
	free(b1);
	free(b2);
	rq->flags = GNN_MB_EXCLUDE;
	rq->num_excl = 1;
	rq->excl = bad;
	rq->excl_rel = sc->num_rels;
	bad[0] = ex.pairs[0], bad[1] = ex.pairs[1];
	excl_refused(c, "relation=R", rq, "exclusion relation");
	rq->excl_rel = ex.rel;
	bad[1] = meta.layout.num_nodes;
	excl_refused(c, "pair=num_nodes", rq, "outside [0, ");
	bad[1] = -1;
	excl_refused(c, "pair=-1", rq, "outside [0, ");
	if (sc->rels[ex.rel].src != sc->rels[ex.rel].dst) {
		bad[0] = ex.pairs[1], bad[1] = ex.pairs[0];
		excl_refused(c, "pair=(v,u)", rq, "source and destination types");
	}
	rq->excl = ex.pairs;
	rq->num_excl = ex.n;
	if (excl_request(c, "after-refusals", rq, &with, NULL, &len) == GNN_OK)
		printf("mbcheck: exclude sampler answers after the refusals\n");
	free(ex.pairs);
}

int main(int argc, char **argv)
{
	struct gnn_client *c = NULL;
	struct gnn_client_opts co;
	struct gnn_minibatch_req rq = { 0 };
	int64_t *seeds;
	char err[512];
	int rc;

	gnn_log_init("mbcheck");
	gnn_log_set_level(GNN_LOG_ERROR);
	if ((rc = gnn_opt_parse("mbcheck", "Check a gnn-sampler's minibatches against partition files.", options,
				argc, argv)) != GNN_OK)
		return rc == GNN_EHELP ? 0 : 2;
	if (cfg.sampler == NULL || (cfg.parts == NULL && cfg.send == NULL)) {
		printf("mbcheck: --sampler and --parts (or --send) are required\n");
		return 2;
	}
	if (cfg.send != NULL)
		return send_file();
	if (gnn_meta_load(cfg.parts, &meta) != GNN_OK || parse_fanouts(cfg.fanouts, &rq) != GNN_OK) {
		printf("mbcheck: cannot read %s or bad --fanouts\n", cfg.parts);
		return 2;
	}
	parts = calloc((size_t)meta.layout.num_parts, sizeof(*parts));
	for (int32_t p = 0; p < (int32_t)meta.layout.num_parts; p++)
		if (gnn_part_open(cfg.parts, &meta, p, 0, &parts[p]) != GNN_OK) {
			printf("mbcheck: cannot open partition %d of %s\n", p, cfg.parts);
			return 2;
		}
	if (cfg.batch > meta.layout.num_nodes)
		cfg.batch = meta.layout.num_nodes;
	rng ^= (uint64_t)cfg.seed * 0x9E3779B97F4A7C15ull;
	seeds = malloc((size_t)(cfg.batch > 2 * cfg.exclude ? cfg.batch : 2 * cfg.exclude) * sizeof(*seeds));
	co = (struct gnn_client_opts){ .url = cfg.sampler, .name = "sampler", .timeout_ms = (int)cfg.timeout_ms,
				       .retries = (int)cfg.retries };
	if (gnn_client_open(&co, &c) != GNN_OK) {
		printf("mbcheck: cannot dial %s\n", cfg.sampler);
		return 2;
	}
	rq.seeds = seeds;
	rq.flags = GNN_MB_FEATURES | GNN_MB_LABELS;
	if (cfg.exclude > 0) {
		run_exclude(c, &rq, seeds);
		if (failures)
			printf("mbcheck: FAIL %d problem(s)\n", failures);
		else
			printf("mbcheck: ok\n");
		goto out;
	}

	if (cfg.once) {
		nng_msg *reply;
		double t0 = gnn_now();

		rq.num_seeds = (uint32_t)cfg.batch;
		rq.seed = (uint64_t)cfg.seed;
		random_seeds(rq.num_seeds, seeds);
		rc = request(c, 1, &rq, &reply, err, sizeof(err));
		if (rc == GNN_OK) {
			printf("mbcheck: ok seconds=%.3f\n", gnn_now() - t0);
			nng_msg_free(reply);
		} else {
			printf("mbcheck: error code=%s seconds=%.3f text=\"%s\"\n", gnn_errname(rc), gnn_now() - t0, err);
			failures = -1;  /* exit 3 */
		}
		goto out;
	}

	for (int64_t n = 0; n < cfg.minibatches && failures == 0; n++) {
		struct gnn_minibatch mb;
		nng_msg *reply, *again;
		const void *payload;
		size_t len;

		rq.seed = rnd(UINT64_MAX);
		rq.num_seeds = 1 + (uint32_t)rnd((uint64_t)cfg.batch);
		random_seeds(rq.num_seeds, seeds);
		if (n % 2 == 1)
			random_fanouts(&rq);
		else
			parse_fanouts(cfg.fanouts, &rq);
		if ((rc = request(c, (uint64_t)n + 1, &rq, &reply, err, sizeof(err))) != GNN_OK) {
			FAIL("minibatch=%" PRId64 " code=%s reason=\"%s\"", n, gnn_errname(rc), err);
			break;
		}
		if ((rc = gnn_reply_payload(reply, GNN_MSG_MINIBATCH_RESP, &payload, &len)) != GNN_OK ||
		    (rc = gnn_decode_minibatch_resp(payload, len, &mb)) != GNN_OK) {
			FAIL("minibatch=%" PRId64 " reason=\"reply does not decode: %s\"", n, gnn_errname(rc));
			nng_msg_free(reply);
			break;
		}
		check((uint64_t)n, &rq, &mb);
		if (n % 4 == 0) {
			const void *p2;
			size_t len2;

			if (request(c, (uint64_t)n + 1, &rq, &again, err, sizeof(err)) != GNN_OK ||
			    gnn_reply_payload(again, GNN_MSG_MINIBATCH_RESP, &p2, &len2) != GNN_OK) {
				FAIL("minibatch=%" PRId64 " reason=\"repeat failed: %s\"", n, err);
			} else {
				if (len2 != len || memcmp(p2, payload, len) != 0)
					FAIL("minibatch=%" PRId64 " reason=\"same request, different minibatch\"", n);
				stats.repeats++;
				nng_msg_free(again);
			}
		}
		gnn_proto_release(mb.owned);
		nng_msg_free(reply);
	}
	printf("mbcheck: minibatches=%" PRIu64 " edges=%" PRIu64 " input_nodes=%" PRIu64 " nodes_all_neighbours=%" PRIu64
	       " nodes_capped_at_fanout=%" PRIu64 " feature_rows=%" PRIu64 " labels=%" PRIu64 " repeats_identical=%" PRIu64
	       "\n", stats.minibatches, stats.edges, stats.input_nodes, stats.full_nodes, stats.capped_nodes,
	       stats.feat_rows, stats.labels, stats.repeats);
	if (failures)
		printf("mbcheck: FAIL %d problem(s)\n", failures);
	else
		printf("mbcheck: ok\n");
out:
	gnn_client_close(c);
	for (int32_t p = 0; p < (int32_t)meta.layout.num_parts; p++)
		gnn_part_close(&parts[p]);
	free(parts);
	free(seeds);
	gnn_meta_free(&meta);
	return failures < 0 ? 3 : failures ? 1 : 0;
}
