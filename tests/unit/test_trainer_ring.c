/* Unit tests of the trainers' ring collectives (services/trainer/ring/ring.h):
 * T ranks as threads of this process, each with its own ring over real nng
 * sockets (tcp on 127.0.0.1 and ipc in a temp folder). Checks every
 * collective against a reference computed here, bitwise equality across
 * ranks, the handshake's mismatch detection, timeouts against a peer that
 * never comes, a peer that dies, restarts or closes early, stop(), bad
 * arguments, and that closing right after an operation loses nothing.
 *
 * GNN_RING_BENCH=1 build/tests/test_trainer_ring measures all-reduce
 * throughput instead (docs/allreduce.md) and runs no test. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/pair0/pair.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "hash.h"
#include "log.h"
#include "metrics.h"
#include "ring.h"
#include "sys.h"
#include "testlib.h"

#define MAXT 4

static atomic_bool stop_flag;
static struct gnn_metrics *reg;
static char tmpdir[64];

static bool stop_fn(void)
{
	return atomic_load(&stop_flag);
}

/* ---- addresses ---- */

struct net {
	uint32_t T;
	bool tcp;
	char urls[MAXT][160];
	const char *ptrs[MAXT];
	double silence[MAXT];  /* each rank's silence_s (0: no heartbeat, the default here) */
};

static void net_tcp(struct net *n, uint32_t T)
{
	n->T = T;
	n->tcp = true;
	for (uint32_t i = 0; i < T; i++) {
		snprintf(n->urls[i], sizeof(n->urls[i]), "tcp://127.0.0.1:%d", t_free_port());
		n->ptrs[i] = n->urls[i];
		n->silence[i] = 0;
	}
}

static void net_ipc(struct net *n, uint32_t T)
{
	static int counter;

	n->T = T;
	n->tcp = false;
	counter++;
	for (uint32_t i = 0; i < T; i++) {
		snprintf(n->urls[i], sizeof(n->urls[i]), "ipc://%s/r%d-%u", tmpdir, counter, i);
		n->ptrs[i] = n->urls[i];
		n->silence[i] = 0;
	}
}

static int open_rank(const struct net *n, uint32_t rank, int timeout_ms, struct tr_ring **r)
{
	struct tr_ring_opts o = { .rank = rank, .world = n->T, .listen = n->urls[rank], .urls = n->ptrs,
				  .timeout_ms = timeout_ms, .silence_s = n->silence[rank], .metrics = reg,
				  .stop = stop_fn };

	return tr_ring_open(&o, r);
}

/* ---- ranks as threads ---- */

enum what { J_IDLE, J_CONNECT, J_AR, J_AR64, J_AG, J_BC, J_BC_CLOSE, J_CLOSE, J_BENCH };

struct job {
	enum what what;
	struct tr_ring *r;
	void *data;
	const void *mine;
	size_t n;
	uint32_t root;
	uint64_t hash;
	double wait_s;
	int iters;
	int delay_ms;            /* before the operation */
	pthread_barrier_t *barrier;
	int rc;
	double secs;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	double t0;

	if (j->delay_ms > 0)
		usleep((useconds_t)j->delay_ms * 1000);
	t0 = gnn_now();
	switch (j->what) {
	case J_IDLE:
		j->rc = GNN_OK;
		break;
	case J_CONNECT:
		j->rc = tr_ring_connect(j->r, j->hash, j->wait_s);
		break;
	case J_AR:
		j->rc = tr_ring_allreduce(j->r, j->data, j->n);
		break;
	case J_AR64:
		j->rc = tr_ring_allreduce_f64(j->r, j->data, j->n);
		break;
	case J_AG:
		j->rc = tr_ring_allgather(j->r, j->mine, j->n, j->data);
		break;
	case J_BC:
		j->rc = tr_ring_broadcast(j->r, j->root, j->data, j->n);
		break;
	case J_BC_CLOSE:
		j->rc = tr_ring_broadcast(j->r, j->root, j->data, j->n);
		tr_ring_close(j->r);
		break;
	case J_CLOSE:
		tr_ring_close(j->r);
		j->rc = GNN_OK;
		break;
	case J_BENCH:
		for (int i = 0; i < 2 && (j->rc = tr_ring_allreduce(j->r, j->data, j->n)) == GNN_OK; i++)
			;
		pthread_barrier_wait(j->barrier);
		t0 = gnn_now();
		for (int i = 0; i < j->iters && j->rc == GNN_OK; i++)
			j->rc = tr_ring_allreduce(j->r, j->data, j->n);
		break;
	}
	j->secs = gnn_now() - t0;
	return NULL;
}

static void run_jobs(struct job *jobs, uint32_t T)
{
	pthread_t th[MAXT];

	for (uint32_t i = 0; i < T; i++)
		pthread_create(&th[i], NULL, job_main, &jobs[i]);
	for (uint32_t i = 0; i < T; i++)
		pthread_join(th[i], NULL);
}

/* Opens and connects T ranks; false (with checks recorded) on failure. */
static bool ring_up(struct net *n, int timeout_ms, struct tr_ring **rings)
{
	struct job jobs[MAXT] = { 0 };
	bool ok = true;

	for (uint32_t i = 0; i < n->T; i++)
		rings[i] = NULL;
	for (int attempt = 0;; attempt++) {
		uint32_t i = 0;
		int rc = GNN_OK;

		while (i < n->T && (rc = open_rank(n, i, timeout_ms, &rings[i])) == GNN_OK)
			i++;
		if (rc == GNN_OK)
			break;
		/* another process took one of the free ports meanwhile: new ports */
		for (uint32_t k = 0; k < i; k++) {
			tr_ring_close(rings[k]);
			rings[k] = NULL;
		}
		if (!CHECK(rc == GNN_EIO && n->tcp && attempt < 3))
			return false;
		double silence[MAXT];

		memcpy(silence, n->silence, sizeof(silence));
		net_tcp(n, n->T);
		memcpy(n->silence, silence, sizeof(silence));
	}
	for (uint32_t i = 0; i < n->T; i++)
		jobs[i] = (struct job){ .what = J_CONNECT, .r = rings[i], .hash = 42, .wait_s = 10 };
	run_jobs(jobs, n->T);
	for (uint32_t i = 0; i < n->T; i++)
		ok &= CHECK(jobs[i].rc == GNN_OK);
	return ok;
}

/* Closes T rings at once, as T processes would (a healthy ring's close
 * waits for its neighbours' goodbye). */
static void ring_down(struct tr_ring **rings, uint32_t T)
{
	struct job jobs[MAXT];

	for (uint32_t i = 0; i < T; i++) {
		jobs[i] = (struct job){ .what = J_CLOSE, .r = rings[i] };
		rings[i] = NULL;
	}
	run_jobs(jobs, T);
}

/* Closes rings one after the other, in rank order: for tests where some
 * failed. A failed ring closes at once; closing it while a healthy
 * neighbour's goodbye arrives can hang nng 1.5.2 (tr_ring_close then gives
 * up after 5 s and leaks the ring), so the failed ones (the low ranks in
 * these tests) go first and the healthy ones find them gone. */
static void ring_down_seq(struct tr_ring **rings, uint32_t T)
{
	for (uint32_t i = 0; i < T; i++) {
		tr_ring_close(rings[i]);
		rings[i] = NULL;
	}
}

/* A crash: the ring goes away without its goodbye (stop() skips it). */
static void crash(struct tr_ring **r)
{
	atomic_store(&stop_flag, true);
	tr_ring_close(*r);
	atomic_store(&stop_flag, false);
	*r = NULL;
}

/* ---- log capture (stderr is where log lines go) ---- */

static int saved_fd = -1;
static char cap_path[96];

static void capture_start(void)
{
	int fd;

	snprintf(cap_path, sizeof(cap_path), "%s/log.txt", tmpdir);
	fflush(stderr);
	saved_fd = dup(2);
	fd = open(cap_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	dup2(fd, 2);
	close(fd);
}

/* Restores stderr, echoes what was captured there, returns it (caller frees). */
static char *capture_end(void)
{
	FILE *f;
	char *text = NULL;
	long len;

	dup2(saved_fd, 2);
	close(saved_fd);
	if ((f = fopen(cap_path, "r")) == NULL)
		return strdup("");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)len + 1);
	if (text != NULL && fread(text, 1, (size_t)len, f) != (size_t)len)
		text[0] = '\0';
	fclose(f);
	if (text != NULL)
		fputs(text, stderr);
	return text != NULL ? text : strdup("");
}

/* ---- data ---- */

static uint64_t mix(uint64_t x)
{
	return gnn_splitmix64(&x);
}

/* Values of mixed sign and magnitude, so that the summation order shows. */
static double value(uint32_t rank, size_t i)
{
	uint64_t h = mix((uint64_t)rank << 40 ^ i);
	double u = (double)(h >> 11) / 9007199254740992.0 - 0.5;

	return u * (double)(1u << (h & 7));
}

static double metric(const char *key)
{
	char *text;
	double v;

	if (gnn_metrics_render(reg, &text, NULL) != GNN_OK)
		return NAN;
	v = t_sample_value(text, key);
	free(text);
	return v;
}

/* ---- tests ---- */

static void test_world_one(void)
{
	struct tr_ring_opts o = { .rank = 0, .world = 1, .timeout_ms = 1000 };
	struct tr_ring *r = NULL;
	float f[3] = { 1, 2, 3 };
	double d[2] = { 0.5, -1 };
	char mine[4] = "abc", all[4] = { 0 };

	if (!CHECK(tr_ring_open(&o, &r) == GNN_OK))
		return;
	CHECK(tr_ring_connect(r, 7, 1.0) == GNN_OK);
	CHECK(tr_ring_allreduce(r, f, 3) == GNN_OK && f[0] == 1 && f[1] == 2 && f[2] == 3);
	CHECK(tr_ring_allreduce(r, NULL, 0) == GNN_OK);
	CHECK(tr_ring_allreduce_f64(r, d, 2) == GNN_OK && d[0] == 0.5 && d[1] == -1);
	CHECK(tr_ring_allgather(r, mine, 4, all) == GNN_OK && strcmp(all, "abc") == 0);
	CHECK(tr_ring_broadcast(r, 0, f, sizeof(f)) == GNN_OK && f[2] == 3);
	CHECK(tr_ring_broadcast(r, 1, f, sizeof(f)) == GNN_EINVAL);
	CHECK(tr_ring_bytes(r) == 0);
	tr_ring_close(r);
	tr_ring_close(NULL);
}

/* All-reduce of n floats on T ranks: against a double-precision sum and
 * bitwise equal on every rank. */
static bool check_allreduce(struct tr_ring **rings, uint32_t T, size_t n)
{
	struct job jobs[MAXT];
	float *data[MAXT] = { 0 };
	bool ok = true;
	double worst = 0;

	for (uint32_t i = 0; i < T; i++) {
		data[i] = malloc((n ? n : 1) * sizeof(float));
		if (!CHECK(data[i] != NULL))
			goto out;
		for (size_t k = 0; k < n; k++)
			data[i][k] = (float)value(i, k);
		jobs[i] = (struct job){ .what = J_AR, .r = rings[i], .data = data[i], .n = n };
	}
	run_jobs(jobs, T);
	for (uint32_t i = 0; i < T; i++)
		ok &= CHECK(jobs[i].rc == GNN_OK);
	for (size_t k = 0; ok && k < n; k++) {
		double ref = 0, mag = 0;

		for (uint32_t i = 0; i < T; i++) {
			ref += (double)(float)value(i, k);
			mag += fabs((double)(float)value(i, k));
		}
		if (fabs((double)data[0][k] - ref) > 4e-7 * mag * T + 1e-30) {
			printf("  T=%u n=%zu element %zu: %.9g, expected %.9g\n", T, n, k, data[0][k], ref);
			ok = CHECK(false);
		}
		worst = fmax(worst, fabs((double)data[0][k] - ref));
	}
	for (uint32_t i = 1; ok && i < T; i++)
		ok &= CHECK(n == 0 || memcmp(data[0], data[i], n * sizeof(float)) == 0);
	if (!ok)
		printf("  allreduce T=%u n=%zu failed (largest error %.3g)\n", T, n, worst);
out:
	for (uint32_t i = 0; i < T; i++)
		free(data[i]);
	return ok;
}

static void test_allreduce_tcp(void)
{
	struct tr_ring *rings[MAXT];
	struct net n;
	double ops = 0, count0 = metric("gnn_trainer_allreduce_seconds_count");

	if (isnan(count0))
		count0 = 0;
	for (uint32_t T = 1; T <= 4; T++) {
		size_t sizes[] = { 0, 1, T - 1, T, 1000003 };
		uint64_t before;

		net_tcp(&n, T);
		if (!ring_up(&n, 10000, rings)) {
			ring_down(rings, T);
			return;
		}
		before = tr_ring_bytes(rings[0]);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			if (!check_allreduce(rings, T, sizes[s]))
				break;
			ops += T;
		}
		/* each rank sends and receives 2 (T-1)/T of the data, plus headers */
		if (T > 1)
			CHECK(tr_ring_bytes(rings[0]) - before >= 2 * 2 * (T - 1) * (1000003 / T) * 4);
		ring_down(rings, T);
	}
	CHECK(metric("gnn_trainer_allreduce_seconds_count") - count0 == ops);
	CHECK(metric("gnn_trainer_allreduce_bytes_total") > 0);
}

static void test_allreduce_f64_ipc(void)
{
	enum { T = 3 };
	struct tr_ring *rings[MAXT];
	struct job jobs[MAXT];
	double *data[T] = { 0 };
	size_t sizes[] = { 0, 1, 2, 3, 100001 };
	struct net n;

	net_ipc(&n, T);
	if (!ring_up(&n, 10000, rings))
		goto out;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		bool ok = true;

		for (uint32_t i = 0; i < T; i++) {
			free(data[i]);
			data[i] = malloc((len ? len : 1) * sizeof(double));
			if (!CHECK(data[i] != NULL))
				goto out;
			for (size_t k = 0; k < len; k++)
				data[i][k] = value(i + 10, k);
			jobs[i] = (struct job){ .what = J_AR64, .r = rings[i], .data = data[i], .n = len };
		}
		run_jobs(jobs, T);
		for (uint32_t i = 0; i < T; i++)
			ok &= CHECK(jobs[i].rc == GNN_OK);
		for (size_t k = 0; ok && k < len; k++) {
			double ref = value(10, k) + value(11, k) + value(12, k);

			double mag = fabs(value(10, k)) + fabs(value(11, k)) + fabs(value(12, k));

			/* both sums round twice, in different orders */
			if (!CHECK(fabs(data[0][k] - ref) <= 1e-15 * mag)) {
				printf("  element %zu: %.17g, expected %.17g\n", k, data[0][k], ref);
				ok = false;
			}
		}
		for (uint32_t i = 1; ok && i < T; i++)
			ok = CHECK(len == 0 || memcmp(data[0], data[i], len * sizeof(double)) == 0);
	}
out:
	for (uint32_t i = 0; i < T; i++)
		free(data[i]);
	ring_down(rings, T);
}

/* Every rank's block in rank order, over tcp and ipc, also in place. */
static void test_allgather(void)
{
	for (uint32_t T = 1; T <= 4; T++) {
		size_t sizes[] = { 0, 1, 13, 2500001 }; /* the last: 3 segments */
		struct tr_ring *rings[MAXT];
		struct net n;

		if (T % 2)
			net_ipc(&n, T);
		else
			net_tcp(&n, T);
		if (!ring_up(&n, 10000, rings)) {
			ring_down(rings, T);
			return;
		}
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			for (int in_place = 0; in_place < 2; in_place++) {
				size_t b = sizes[s];
				unsigned char *mine[MAXT] = { 0 }, *all[MAXT] = { 0 };
				struct job jobs[MAXT];
				bool ok = true;

				for (uint32_t i = 0; i < T; i++) {
					mine[i] = malloc(b + 1);
					all[i] = malloc(T * b + 1);
					if (!CHECK(mine[i] != NULL && all[i] != NULL))
						goto next;
					memset(all[i], 0xee, T * b);
					for (size_t k = 0; k < b; k++)
						mine[i][k] = (unsigned char)mix(i * 1000003u + k);
					if (in_place)
						memcpy(all[i] + i * b, mine[i], b);
					jobs[i] = (struct job){ .what = J_AG, .r = rings[i], .data = all[i],
								.mine = in_place ? all[i] + i * b : mine[i],
								.n = b };
				}
				run_jobs(jobs, T);
				for (uint32_t i = 0; i < T; i++) {
					ok &= CHECK(jobs[i].rc == GNN_OK);
					for (uint32_t q = 0; ok && q < T; q++)
						ok &= CHECK(b == 0 || memcmp(all[i] + q * b, mine[q], b) == 0);
				}
				if (!ok)
					printf("  allgather T=%u bytes=%zu in_place=%d failed\n", T, b, in_place);
next:
				for (uint32_t i = 0; i < T; i++) {
					free(mine[i]);
					free(all[i]);
				}
				if (!ok)
					break;
			}
		}
		ring_down(rings, T);
	}
}

static void test_broadcast(void)
{
	for (uint32_t T = 1; T <= 4; T++) {
		size_t sizes[] = { 0, 5, 2500000 }; /* the last: 3 segments */
		struct tr_ring *rings[MAXT];
		struct net n;

		net_tcp(&n, T);
		if (!ring_up(&n, 10000, rings)) {
			ring_down(rings, T);
			return;
		}
		for (uint32_t root = 0; root < T; root++) {
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				size_t b = sizes[s];
				unsigned char *buf[MAXT] = { 0 };
				struct job jobs[MAXT];
				bool ok = true;

				for (uint32_t i = 0; i < T; i++) {
					buf[i] = malloc(b + 1);
					if (!CHECK(buf[i] != NULL))
						goto next;
					for (size_t k = 0; k < b; k++)
						buf[i][k] = (unsigned char)mix(i * 7919u + k);
					jobs[i] = (struct job){ .what = J_BC, .r = rings[i], .data = buf[i],
								.n = b, .root = root };
				}
				run_jobs(jobs, T);
				for (uint32_t i = 0; i < T; i++) {
					ok &= CHECK(jobs[i].rc == GNN_OK);
					for (size_t k = 0; ok && k < b; k++)
						ok &= CHECK(buf[i][k] == (unsigned char)mix(root * 7919u + k));
				}
				if (!ok)
					printf("  broadcast T=%u root=%u bytes=%zu failed\n", T, root, b);
next:
				for (uint32_t i = 0; i < T; i++)
					free(buf[i]);
			}
		}
		ring_down(rings, T);
	}
}

/* Rank 1 has another config hash: every rank fails with GNN_EINVAL, at once
 * (not after wait_s), and the log names rank 1 and both values. */
static void test_handshake_mismatch(void)
{
	enum { T = 3 };
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[MAXT];
	struct net n;
	char *log;
	double t0;

	net_tcp(&n, T);
	for (uint32_t i = 0; i < T; i++)
		if (!CHECK(open_rank(&n, i, 5000, &rings[i]) == GNN_OK))
			goto out;
	for (uint32_t i = 0; i < T; i++)
		jobs[i] = (struct job){ .what = J_CONNECT, .r = rings[i], .hash = i == 1 ? 0xbad : 0x600d,
					.wait_s = 20 };
	capture_start();
	t0 = gnn_now();
	run_jobs(jobs, T);
	log = capture_end();
	for (uint32_t i = 0; i < T; i++)
		CHECK(jobs[i].rc == GNN_EINVAL);
	CHECK(gnn_now() - t0 < 5);
	CHECK(strstr(log, "ring_mismatch what=config_hash rank=1 theirs=0x0000000000000bad "
			  "ours=0x000000000000600d this_rank=0") != NULL);
	CHECK(strstr(log, "ring_mismatch what=config_hash rank=0 theirs=0x000000000000600d "
			  "ours=0x0000000000000bad this_rank=1") != NULL);
	free(log);
	/* the ring is unusable now */
	CHECK(tr_ring_allreduce(rings[0], NULL, 0) == GNN_EINVAL);
out:
	ring_down_seq(rings, T);
}

/* Rank 2 never starts: ranks 0 and 1 give up after wait_s, naming it. */
static void test_peer_never_appears(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[MAXT];
	struct net n;
	char *log;

	net_tcp(&n, 3);
	for (uint32_t i = 0; i < 2; i++)
		if (!CHECK(open_rank(&n, i, 5000, &rings[i]) == GNN_OK))
			goto out;
	for (uint32_t i = 0; i < 2; i++)
		jobs[i] = (struct job){ .what = J_CONNECT, .r = rings[i], .hash = 1, .wait_s = 0.8 };
	capture_start();
	run_jobs(jobs, 2);
	log = capture_end();
	for (uint32_t i = 0; i < 2; i++) {
		CHECK(jobs[i].rc == GNN_ETIMEDOUT);
		CHECK(jobs[i].secs >= 0.7 && jobs[i].secs < 2.0);
	}
	{
		char want[256];

		snprintf(want, sizeof(want), "peer_timeout peer=trainer-2 url=%s op=hello seq=0", n.urls[2]);
		CHECK(strstr(log, want) != NULL);
		CHECK(strstr(log, "connected=no") != NULL);
	}
	free(log);
out:
	ring_down_seq(rings, 2);
}

/* After the handshake, rank 1 does not join an all-reduce: rank 0 times
 * out after timeout_ms, naming it. */
static void test_op_timeout(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	float x[1000] = { 0 };
	struct net n;
	char *log, want[256];

	net_ipc(&n, 2);
	if (!ring_up(&n, 600, rings))
		goto out;
	jobs[0] = (struct job){ .what = J_AR, .r = rings[0], .data = x, .n = 1000 };
	jobs[1] = (struct job){ .what = J_IDLE };
	capture_start();
	run_jobs(jobs, 2);
	log = capture_end();
	CHECK(jobs[0].rc == GNN_ETIMEDOUT);
	CHECK(jobs[0].secs >= 0.55 && jobs[0].secs < 1.5);
	snprintf(want, sizeof(want), "peer_timeout peer=trainer-1 url=%s op=allreduce seq=1", n.urls[1]);
	CHECK(strstr(log, want) != NULL);
	free(log);
	/* unusable afterwards, immediately */
	CHECK(tr_ring_allreduce(rings[0], x, 1000) == GNN_ETIMEDOUT);
out:
	ring_down_seq(rings, 2);
}

/* Rank 2 dies after one all-reduce; the others' next one fails within the
 * 1 s grace period for a lost pipe, not after the 5 s timeout. */
static void test_peer_dies(void)
{
	enum { T = 3 };
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[MAXT];
	static float x[T][5000];
	struct net n;
	char *log;

	net_tcp(&n, T);
	if (!ring_up(&n, 5000, rings))
		goto out;
	if (!check_allreduce(rings, T, 5000))
		goto out;
	capture_start();
	crash(&rings[2]);
	for (uint32_t i = 0; i < 2; i++)
		jobs[i] = (struct job){ .what = J_AR, .r = rings[i], .data = x[i], .n = 5000 };
	run_jobs(jobs, 2);
	log = capture_end();
	for (uint32_t i = 0; i < 2; i++) {
		CHECK(jobs[i].rc == GNN_EUNAVAIL || jobs[i].rc == GNN_ETIMEDOUT);
		CHECK(jobs[i].secs < 3.0);
	}
	CHECK(strstr(log, "peer_lost peer=trainer-2") != NULL);
	CHECK(strstr(log, "ring_peer_disconnected peer=trainer-2") != NULL);
	free(log);
	CHECK(metric("gnn_trainer_ring_errors_total") >= 2);
out:
	ring_down_seq(rings, T);
}

/* Rank 1 stays connected but sends nothing, not even a heartbeat (it has
 * none: a vanished host, a partition without a reset): rank 0, waiting for
 * it in an all-reduce, gives up after its silence_s of 1 s, not after the
 * 5 s timeout. */
static void test_peer_silent(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	float x[100] = { 0 };
	struct net n;
	char *log, want[256];

	net_tcp(&n, 2);
	n.silence[0] = 1.0;
	if (!ring_up(&n, 5000, rings))
		goto out;
	jobs[0] = (struct job){ .what = J_AR, .r = rings[0], .data = x, .n = 100 };
	jobs[1] = (struct job){ .what = J_IDLE };
	capture_start();
	run_jobs(jobs, 2);
	log = capture_end();
	CHECK(jobs[0].rc == GNN_EUNAVAIL);
	CHECK(jobs[0].secs >= 0.95 && jobs[0].secs < 4.0);
	snprintf(want, sizeof(want), "peer_silent peer=trainer-1 url=%s op=allreduce seq=1", n.urls[1]);
	CHECK(strstr(log, want) != NULL);
	free(log);
	CHECK(tr_ring_allreduce(rings[0], x, 100) == GNN_EUNAVAIL);
out:
	ring_down_seq(rings, 2);
}

/* A busy peer is not a silent one: rank 1 joins the all-reduce 4 s late,
 * past rank 0's silence_s of 2 s, but its heartbeat kept coming, so both
 * succeed; and the heartbeat's pings before, between and after operations
 * (handshake, goodbye) are skipped by every receive. */
static void test_busy_peer_kept(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	static float x[2][3000];
	struct net n;
	char *log;

	net_tcp(&n, 2);
	/* 2 s: pings every 0.4 s, so a ping thread starved for 1.5 s on a
	 * busy machine does not fail the test */
	n.silence[0] = n.silence[1] = 2.0;
	if (!ring_up(&n, 10000, rings))
		goto out;
	usleep(500 * 1000);  /* pings wait in the sockets */
	capture_start();
	for (uint32_t i = 0; i < 2; i++)
		jobs[i] = (struct job){ .what = J_AR, .r = rings[i], .data = x[i], .n = 3000,
					.delay_ms = i == 1 ? 4000 : 0 };
	run_jobs(jobs, 2);
	log = capture_end();
	CHECK(jobs[0].rc == GNN_OK && jobs[1].rc == GNN_OK);
	CHECK(jobs[0].secs >= 3.5);
	CHECK(strstr(log, "peer_silent") == NULL);
	CHECK(strstr(log, "ring_protocol_error") == NULL);
	free(log);
	CHECK(check_allreduce(rings, 2, 3000));
	usleep(300 * 1000);
	capture_start();
	ring_down(rings, 2);
	log = capture_end();
	CHECK(strstr(log, "ring_close_unexpected") == NULL && strstr(log, "ring_close_timeout") == NULL);
	free(log);
out:
	ring_down_seq(rings, 2);
}

/* Rank 1 restarts (a new ring on the same URL, handshaking again) while
 * rank 0 is in an all-reduce: neither mixes data; rank 0's error says so. */
static void test_peer_restarts(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	float x[100] = { 0 };
	struct net n;
	char *log;

	net_tcp(&n, 2);
	if (!ring_up(&n, 1200, rings) || !check_allreduce(rings, 2, 100))
		goto out;
	crash(&rings[1]);
	if (!CHECK(open_rank(&n, 1, 1200, &rings[1]) == GNN_OK))
		goto out;
	jobs[0] = (struct job){ .what = J_AR, .r = rings[0], .data = x, .n = 100 };
	jobs[1] = (struct job){ .what = J_CONNECT, .r = rings[1], .hash = 42, .wait_s = 1.5 };
	capture_start();
	run_jobs(jobs, 2);
	log = capture_end();
	/* which of the two sees the other's message first is a race: the
	 * other one then waits for a message that never comes */
	CHECK(jobs[0].rc == GNN_EPROTO || jobs[0].rc == GNN_EUNAVAIL || jobs[0].rc == GNN_ETIMEDOUT);
	CHECK(jobs[1].rc != GNN_OK);
	CHECK(jobs[0].rc == GNN_EPROTO || jobs[1].rc == GNN_EPROTO);
	CHECK(jobs[0].secs < 2.0);
	if (jobs[0].rc == GNN_EPROTO) {
		char want[256];

		snprintf(want, sizeof(want), "peer trainer-1 (%s) sent op=hello seq=0", n.urls[1]);
		CHECK(strstr(log, want) != NULL);
		CHECK(strstr(log, "while this rank expected op=allreduce seq=2") != NULL);
		CHECK(strstr(log, "did it restart?") != NULL);
	}
	free(log);
out:
	ring_down_seq(rings, 2);
}

/* The ranks call different operations: both fail with GNN_EPROTO naming
 * the peer, none hangs. */
static void test_protocol_mismatch(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	float x[10] = { 0 };
	char mine[8] = "1234567", all[16];
	struct net n;
	char *log, want[256];

	net_ipc(&n, 2);
	if (!ring_up(&n, 3000, rings))
		goto out;
	jobs[0] = (struct job){ .what = J_AR, .r = rings[0], .data = x, .n = 10 };
	jobs[1] = (struct job){ .what = J_AG, .r = rings[1], .data = all, .mine = mine, .n = 8 };
	capture_start();
	run_jobs(jobs, 2);
	log = capture_end();
	CHECK(jobs[0].rc == GNN_EPROTO && jobs[1].rc == GNN_EPROTO);
	snprintf(want, sizeof(want), "peer trainer-1 (%s) sent op=allgather seq=1", n.urls[1]);
	CHECK(strstr(log, want) != NULL);
	CHECK(strstr(log, "while this rank expected op=allreduce seq=1") != NULL);
	free(log);
out:
	ring_down_seq(rings, 2);
}

/* Rank 0 broadcasts 3 MB and closes its ring at once, while rank 1 is
 * late: closing must not drop what nng has not written yet (it did before
 * tr_ring_close waited for the next rank's acknowledgement: rank 1 got
 * peer_lost). */
static void test_close_flushes(void)
{
	enum { B = 3 << 20 }; /* three full segments */
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	unsigned char *buf[2] = { malloc(B), malloc(B) };
	struct net n;
	bool same = true;

	/* ipc: unix socket buffers (~200 KB) are smaller than the message, so
	 * it is still being written when rank 0's broadcast returns */
	net_ipc(&n, 2);
	if (!CHECK(buf[0] != NULL && buf[1] != NULL) || !ring_up(&n, 5000, rings))
		goto out;
	for (size_t k = 0; k < B; k++) {
		buf[0][k] = (unsigned char)mix(k);
		buf[1][k] = 0;
	}
	jobs[0] = (struct job){ .what = J_BC_CLOSE, .r = rings[0], .data = buf[0], .n = B };
	jobs[1] = (struct job){ .what = J_BC_CLOSE, .r = rings[1], .data = buf[1], .n = B,
				.delay_ms = 500 };
	rings[0] = rings[1] = NULL; /* the jobs close them */
	run_jobs(jobs, 2);
	CHECK(jobs[0].rc == GNN_OK);
	CHECK(jobs[1].rc == GNN_OK);
	for (size_t k = 0; k < B && same; k++)
		same = buf[1][k] == (unsigned char)mix(k);
	CHECK(same);
out:
	free(buf[0]);
	free(buf[1]);
	ring_down(rings, 2);
}

/* Rank 1 closes its ring (cleanly) while rank 0 is in an all-reduce:
 * rank 0's error says the peer closed; rank 1's close is bounded. */
static void test_peer_closes_early(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job jobs[2];
	float x[100] = { 0 };
	struct net n;
	char *log, want[256];

	net_ipc(&n, 2);
	if (!ring_up(&n, 500, rings))
		goto out;
	jobs[0] = (struct job){ .what = J_AR, .r = rings[0], .data = x, .n = 100, .delay_ms = 100 };
	jobs[1] = (struct job){ .what = J_CLOSE, .r = rings[1] };
	rings[1] = NULL;
	capture_start();
	run_jobs(jobs, 2);
	log = capture_end();
	CHECK(jobs[0].rc == GNN_EPROTO);
	CHECK(jobs[1].secs < 1.0);
	snprintf(want, sizeof(want), "peer trainer-1 (%s) sent op=bye seq=1", n.urls[1]);
	CHECK(strstr(log, want) != NULL);
	CHECK(strstr(log, "it closed its ring") != NULL);
	free(log);
out:
	ring_down_seq(rings, 2);
}

/* stop() during a wait: GNN_ECLOSED within a slice, not after the timeout. */
static void test_stop(void)
{
	struct tr_ring *rings[MAXT] = { 0 };
	struct job j;
	pthread_t th;
	float x[10] = { 0 };
	struct net n;

	net_ipc(&n, 2);
	if (!ring_up(&n, 20000, rings))
		goto out;
	j = (struct job){ .what = J_AR, .r = rings[0], .data = x, .n = 10 };
	pthread_create(&th, NULL, job_main, &j);
	usleep(300000);
	atomic_store(&stop_flag, true);
	pthread_join(th, NULL);
	atomic_store(&stop_flag, false);
	CHECK(j.rc == GNN_ECLOSED);
	CHECK(j.secs < 1.5);
out:
	ring_down_seq(rings, 2);
}

static void test_bad_args(void)
{
	struct net n;
	struct tr_ring *r = NULL;
	struct tr_ring_opts o;
	float x[4] = { 0 };

	net_tcp(&n, 2);
	o = (struct tr_ring_opts){ .rank = 2, .world = 2, .listen = n.urls[0], .urls = n.ptrs,
				   .timeout_ms = 1000 };
	CHECK(tr_ring_open(&o, &r) == GNN_EINVAL);
	o.rank = 0;
	o.timeout_ms = 0;
	CHECK(tr_ring_open(&o, &r) == GNN_EINVAL);
	o.timeout_ms = 1000;
	o.urls = NULL;
	CHECK(tr_ring_open(&o, &r) == GNN_EINVAL);
	o.urls = n.ptrs;
	o.listen = "bogus://nowhere";
	CHECK(tr_ring_open(&o, &r) == GNN_EIO);
	o.listen = n.urls[0];
	n.ptrs[1] = "not a url";
	CHECK(tr_ring_open(&o, &r) == GNN_EINVAL);
	n.ptrs[1] = n.urls[1];
	if (!CHECK(tr_ring_open(&o, &r) == GNN_OK))
		return;
	/* operations before the handshake, bad arguments */
	CHECK(tr_ring_allreduce(r, x, 4) == GNN_EINVAL);
	CHECK(tr_ring_allreduce(r, NULL, 4) == GNN_EINVAL);
	CHECK(tr_ring_broadcast(r, 2, x, 4) == GNN_EINVAL);
	CHECK(tr_ring_connect(r, 1, 0) == GNN_EINVAL);
	CHECK(tr_ring_connect(NULL, 1, 1) == GNN_EINVAL);
	tr_ring_close(r);
}

/* ---- measurement (GNN_RING_BENCH=1) ---- */

struct base_ctx {
	nng_socket s;
	size_t bytes;
	int iters, rc;
};

static void *base_send(void *arg)
{
	struct base_ctx *c = arg;

	for (int i = 0; i < c->iters && c->rc == 0; i++) {
		nng_msg *m;

		if ((c->rc = nng_msg_alloc(&m, c->bytes)) == 0 && (c->rc = nng_sendmsg(c->s, m, 0)) != 0)
			nng_msg_free(m);
	}
	return NULL;
}

/* GB/s of a stream of messages of `bytes` from one pair0 socket to
 * another on loopback: what one ring link can carry. */
static double baseline(size_t bytes, int iters)
{
	struct base_ctx c = { .bytes = bytes, .iters = iters };
	nng_socket rx;
	pthread_t th;
	char url[64];
	double t0 = 0, t;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", t_free_port());
	if (nng_pair0_open(&rx) != 0 || nng_pair0_open(&c.s) != 0)
		return NAN;
	nng_socket_set_size(rx, NNG_OPT_RECVMAXSZ, bytes + 64);
	nng_socket_set_ms(rx, NNG_OPT_RECVTIMEO, 10000);
	if (nng_listen(rx, url, NULL, 0) != 0 || nng_dial(c.s, url, NULL, 0) != 0)
		return NAN;
	pthread_create(&th, NULL, base_send, &c);
	for (int i = 0; i < iters; i++) {
		nng_msg *m;

		if (nng_recvmsg(rx, &m, 0) != 0)
			break;
		if (i == 1)
			t0 = gnn_now(); /* from the end of the second message */
		nng_msg_free(m);
	}
	t = gnn_now() - t0;
	pthread_join(th, NULL);
	nng_close(c.s);
	nng_close(rx);
	return (double)bytes * (iters - 2) / t / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Seconds per all-reduce of `bytes` on T ranks over tcp (NAN on failure). */
static double ring_time(uint32_t T, size_t bytes, int iters)
{
	struct tr_ring *rings[MAXT];
	struct job jobs[MAXT];
	float *data[MAXT] = { 0 };
	pthread_barrier_t bar;
	struct net n;
	double t = 0;
	bool ok = true;

	net_tcp(&n, T);
	if (!ring_up(&n, 30000, rings)) {
		ring_down(rings, T);
		return NAN;
	}
	pthread_barrier_init(&bar, NULL, T);
	for (uint32_t i = 0; i < T; i++) {
		data[i] = calloc(bytes / sizeof(float), sizeof(float));
		jobs[i] = (struct job){ .what = J_BENCH, .r = rings[i], .data = data[i],
					.n = bytes / sizeof(float), .iters = iters, .barrier = &bar };
	}
	run_jobs(jobs, T);
	for (uint32_t i = 0; i < T; i++) {
		ok &= jobs[i].rc == GNN_OK;
		t = fmax(t, jobs[i].secs);
		free(data[i]);
	}
	pthread_barrier_destroy(&bar);
	ring_down(rings, T);
	return ok ? t / iters : NAN;
}

/* Each configuration REPS times, alternating with the link baseline so
 * that load from elsewhere on the machine hits both alike; medians. */
static void bench(void)
{
	enum { REPS = 5 };
	static const size_t sizes[] = { 1u << 20, 8u << 20 };
	static const uint32_t worlds[] = { 2, 4 };

	printf("# all-reduce of float vectors over tcp://127.0.0.1, ranks as threads of one\n"
	       "# process; median of %d runs. algbw = vector bytes / time; busbw = algbw *\n"
	       "# 2(T-1)/T (what each rank sends); link = one pair0 socket streaming messages\n"
	       "# of the same size to another; wire = all ranks' bytes on the wire per second,\n"
	       "# 2(T-1) * bytes / time, over link\n", REPS);
	for (size_t s = 0; s < 2; s++) {
		for (size_t w = 0; w < 2; w++) {
			uint32_t T = worlds[w];
			size_t b = sizes[s];
			int iters = b > (1u << 20) ? 20 : 100;
			double t[REPS], link[REPS], ratio[REPS], tm, lm, algbw;

			for (int i = 0; i < REPS; i++) {
				link[i] = baseline(b, iters + 2);
				t[i] = ring_time(T, b, iters);
				ratio[i] = (double)b / t[i] / 1e9 / link[i];
			}
			tm = median(t, REPS);
			lm = median(link, REPS);
			algbw = (double)b / tm / 1e9;
			printf("bench T=%u bytes=%zu ms_per_allreduce=%.2f algbw_GBps=%.3f busbw_GBps=%.3f "
			       "link_GBps=%.3f algbw_over_link=%.2f wire_over_link=%.2f\n", T, b, tm * 1e3,
			       algbw, algbw * 2 * (T - 1) / T, lm, median(ratio, REPS),
			       algbw * 2 * (T - 1) / lm);
			fflush(stdout);
		}
	}
}

/* Rejoin (the trainer's ring loop): each rank first gives up on the
 * handshake three times after a short random wait, closing its ring and
 * opening a new one at random moments, like ranks that restart one after
 * another; then it waits patiently, and after a failure backs off as
 * gnn-trainer does (0.5, 1, 2 s). So every rank meets the others' earlier
 * attempts: stale records, links to incarnations already gone. Records are
 * taken by content, so the patient attempts must form the ring and run an
 * all-reduce with the right sum within a few tries (a ring can form with
 * an incarnation that closes right after forwarding the records; the
 * all-reduce then fails, and the ranks try again). The handshake of
 * positional steps failed every attempt with "expected op=hello step=0". */
struct rejoiner {
	const struct net *n;
	uint32_t rank;
	unsigned seed;
	int patient, rc;
	bool stuck;                 /* nng could not close a ring: like the trainer, give up */
	float data[64];
};

static void *rejoin_main(void *arg)
{
	struct rejoiner *j = arg;
	double backoff = 0.5;

	j->rc = GNN_ETIMEDOUT;
	usleep(j->rank * 150000);
	for (int attempt = 0; attempt < 9 && j->rc != GNN_OK; attempt++) {
		struct tr_ring *r = NULL;
		bool hasty = attempt < 3;
		double wait_s = hasty ? 0.05 + (double)(rand_r(&j->seed) % 300) / 1000.0 : 8.0;

		for (size_t i = 0; i < 64; i++)
			j->data[i] = (float)(j->rank + 1);
		j->patient += !hasty;
		if (open_rank(j->n, j->rank, 3000, &r) == GNN_OK && tr_ring_connect(r, 7, wait_s) == GNN_OK &&
		    tr_ring_allreduce(r, j->data, 64) == GNN_OK)
			j->rc = GNN_OK;
		if (!tr_ring_close(r)) {
			j->stuck = true;
			break;
		}
		if (hasty) {
			usleep((useconds_t)(rand_r(&j->seed) % 200) * 1000);
		} else if (j->rc != GNN_OK) {
			usleep((useconds_t)(backoff * 1e6));
			backoff = backoff * 2 < 2 ? backoff * 2 : 2;
		}
	}
	return NULL;
}

static void test_rejoin_staggered(void)
{
	struct rejoiner j[3];
	pthread_t th[3];
	struct net n;
	uint32_t T = 3;

	net_ipc(&n, T);
	capture_start();
	for (uint32_t i = 0; i < T; i++) {
		j[i] = (struct rejoiner){ .n = &n, .rank = i, .seed = (unsigned)(1234 + i + 10 * getpid()) };
		pthread_create(&th[i], NULL, rejoin_main, &j[i]);
	}
	for (uint32_t i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	free(capture_end());
	/* nng 1.5.2's close deadlock (nanomsg/nng#1543) leaves that rank's
	 * listener bound: the trainer exits for a restart (ring_unusable),
	 * which threads cannot do. Rare; the handshake is not what failed. */
	for (uint32_t i = 0; i < T; i++)
		if (j[i].stuck) {
			SKIP("nng's close deadlock hit a rank (close_stuck): only a process restart heals that");
			return;
		}
	for (uint32_t i = 0; i < T; i++) {
		printf("  rank %u: %s after %d patient attempt(s)\n", i, j[i].rc == GNN_OK ? "ring formed" : "failed",
		       j[i].patient);
		CHECK(j[i].rc == GNN_OK);
		CHECK(j[i].data[0] == 6.0f && j[i].data[63] == 6.0f);  /* 1 + 2 + 3 */
	}
}

/* A finished rank's stand-in (tr_ring_serve_result): a rank that starts a
 * handshake gets the result of a run with its configuration (GNN_EDONE),
 * and keeps waiting when the finished run had another one. */
static void test_finished_peer_answers(void)
{
	struct tr_ring_opts so = { .rank = 1, .world = 2, .metrics = reg };
	struct tr_ring_server *srv = NULL;
	struct tr_ring *r = NULL;
	const char result[] = "the result of a finished run";
	char got[TR_RING_RESULT_MAX], *log;
	size_t len = 0;
	uint32_t from = 9;
	struct net n;
	double t0;

	net_ipc(&n, 2);
	so.listen = n.urls[1];
	so.urls = n.ptrs;
	if (!CHECK(tr_ring_serve_result(&so, 42, result, sizeof(result), &srv) == GNN_OK))
		return;
	capture_start();
	if (CHECK(open_rank(&n, 0, 3000, &r) == GNN_OK)) {
		t0 = gnn_now();
		CHECK(tr_ring_connect(r, 42, 5) == GNN_EDONE);
		CHECK(gnn_now() - t0 < 2);
		CHECK(tr_ring_peer_result(r, got, sizeof(got), &len, &from) == GNN_OK && len == sizeof(result) &&
		      memcmp(got, result, len) == 0 && from == 1);
		CHECK(tr_ring_allreduce(r, (float[1]){ 1 }, 1) == GNN_EDONE);  /* no ring to use */
	}
	/* nng 1.5.2's close deadlock (nanomsg/nng#1543) can keep the old
	 * connection to the stand-in (a pair socket: one peer) open, and then
	 * the stand-in cannot answer the next rank; the trainer exits for a
	 * restart there (ring_unusable). Rare, under load; not what is tested. */
	if (!tr_ring_close(r)) {
		free(capture_end());
		tr_ring_serve_close(srv);
		SKIP("nng's close deadlock hit the first rank (close_stuck): only a process restart heals that");
		return;
	}
	r = NULL;
	/* another configuration's result is not believed */
	if (CHECK(open_rank(&n, 0, 3000, &r) == GNN_OK))
		CHECK(tr_ring_connect(r, 43, 0.8) == GNN_ETIMEDOUT);
	CHECK(tr_ring_peer_result(r, got, sizeof(got), &len, &from) == GNN_EINVAL);
	CHECK(tr_ring_close(r));
	log = capture_end();
	CHECK(strstr(log, "ring_peer_finished peer=trainer-1") != NULL);
	CHECK(strstr(log, "result_served peer=trainer-0") != NULL);
	CHECK(strstr(log, "ring_peer_finished_other_run") != NULL);
	free(log);
	tr_ring_serve_close(srv);
}

int main(void)
{
	gnn_log_init("test_trainer_ring");
	gnn_log_set_level(GNN_LOG_INFO);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gnn-ring-XXXXXX");
	if (mkdtemp(tmpdir) == NULL || gnn_metrics_new(&reg) != GNN_OK)
		return 1;
	if (getenv("GNN_RING_BENCH") != NULL) {
		gnn_log_set_level(GNN_LOG_WARN);
		bench();
	} else {
		RUN(test_world_one);
		RUN(test_bad_args);
		RUN(test_allreduce_tcp);
		RUN(test_allreduce_f64_ipc);
		RUN(test_allgather);
		RUN(test_broadcast);
		RUN(test_handshake_mismatch);
		RUN(test_peer_never_appears);
		RUN(test_op_timeout);
		RUN(test_peer_dies);
		RUN(test_peer_restarts);
		RUN(test_peer_silent);
		RUN(test_busy_peer_kept);
		RUN(test_protocol_mismatch);
		RUN(test_stop);
		RUN(test_close_flushes);
		RUN(test_peer_closes_early);
		RUN(test_rejoin_staggered);
		RUN(test_finished_peer_answers);
	}
	gnn_metrics_free(reg);
	gnn_rm_rf(tmpdir);
	return t_done();
}
