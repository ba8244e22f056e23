/* tlsbench - how fast one nng link moves replies of a given size, plain or
 * over TLS of either engine (tests/bench_tls.sh runs it side by side):
 *
 *   tlsbench --size BYTES --seconds S [--tls-ca F --tls-cert F --tls-key F
 *            --tls-engine gnutls|mbedtls] [--server-name NAME] [--timeout-ms MS]
 *
 * A REP socket on 127.0.0.1 answers every request of a REQ socket, dialled
 * as localhost (the test certificates' name), with a reply of --size
 * bytes, one request at a time, for --seconds (the dialer expects the
 * server's certificate to name --server-name, localhost by default: tls.sh
 * checks wildcard names with it). Prints one line:
 *
 *   tlsbench tls=off|gnutls|mbedtls size=B replies=N seconds=S mb_per_s=X cpu_s_per_gb=Y
 *
 * (CPU: both ends, this process's user + system time). Exit 0, or 1 when
 * the link failed, 2 for bad usage. */
#include <arpa/inet.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "opt.h"
#include "tls.h"

struct cfg {
	int64_t size, seconds, timeout_ms;
	const char *server_name;
	struct gnn_tls_paths tls;
};

struct server {
	nng_socket sock;
	nng_msg *reply; /* the template, copied for each answer */
	int err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* Answers until the socket closes. */
static void *serve(void *arg)
{
	struct server *s = arg;
	nng_msg *req, *rep;
	int rv;

	while ((rv = nng_recvmsg(s->sock, &req, 0)) == 0) {
		nng_msg_free(req);
		if ((rv = nng_msg_dup(&rep, s->reply)) != 0 || (rv = nng_sendmsg(s->sock, rep, 0)) != 0)
			break;
	}
	if (rv != NNG_ECLOSED)
		s->err = rv;
	return NULL;
}

/* The port the listener l bound (127.0.0.1:0) into *port. */
static int bound_port(nng_listener l, int *port)
{
	nng_sockaddr sa;
	int rv = nng_listener_get_addr(l, NNG_OPT_LOCADDR, &sa);

	if (rv == 0)
		*port = ntohs(sa.s_in.sa_port);
	return rv;
}

/* Requests replies for c->seconds over client; prints the line. */
static int measure(const struct cfg *c, nng_socket client, const char *tls)
{
	double t0 = now_s(), c0 = cpu_s(), t;
	long replies = 0;
	nng_msg *req, *rep;
	int rv;

	do {
		if ((rv = nng_msg_alloc(&req, 8)) != 0 || (rv = nng_sendmsg(client, req, 0)) != 0 ||
		    (rv = nng_recvmsg(client, &rep, 0)) != 0) {
			fprintf(stderr, "tlsbench: request %ld: %s\n", replies, nng_strerror(rv));
			return 1;
		}
		if (nng_msg_len(rep) != (size_t)c->size) {
			fprintf(stderr, "tlsbench: a reply of %zu bytes, not %lld\n", nng_msg_len(rep),
				(long long)c->size);
			nng_msg_free(rep);
			return 1;
		}
		nng_msg_free(rep);
		replies++;
	} while ((t = now_s() - t0) < (double)c->seconds);
	printf("tlsbench tls=%s size=%lld replies=%ld seconds=%.2f mb_per_s=%.1f cpu_s_per_gb=%.3f\n", tls,
	       (long long)c->size, replies, t, (double)replies * (double)c->size / t / 1e6,
	       (cpu_s() - c0) / ((double)replies * (double)c->size / 1e9));
	return 0;
}

int main(int argc, char **argv)
{
	static struct cfg c;
	const struct gnn_opt opts[] = {
		{ "size", GNN_OPT_INT, &c.size, "4194304", 1, 1 << 30, NULL, "bytes of each reply" },
		{ "seconds", GNN_OPT_INT, &c.seconds, "3", 1, 600, NULL, "how long to measure" },
		{ "server-name", GNN_OPT_STR, &c.server_name, "localhost", 0, 0, NULL,
		  "the name the server's certificate must carry (TLS)" },
		{ "timeout-ms", GNN_OPT_INT, &c.timeout_ms, "30000", 1, 600000, NULL, "longest wait for one reply" },
		GNN_TLS_OPTIONS(c.tls),
		{ 0 },
	};
	struct server s = { .err = 0 };
	nng_socket client;
	nng_listener l;
	pthread_t th;
	char url[64];
	int port = 0, rv, status;

	gnn_log_init("tlsbench");
	if ((rv = gnn_opt_parse("tlsbench", "One nng link's reply throughput, plain or TLS.", opts, argc, argv)) !=
	    GNN_OK)
		return rv == GNN_EHELP ? 0 : 2;
	if (gnn_tls_setup(&c.tls) != GNN_OK)
		return 2;
	if ((rv = nng_rep0_open(&s.sock)) != 0 || (rv = nng_req0_open(&client)) != 0 ||
	    (rv = nng_msg_alloc(&s.reply, (size_t)c.size)) != 0 ||
	    (rv = nng_socket_set_size(s.sock, NNG_OPT_RECVMAXSZ, 0)) != 0 ||
	    (rv = nng_socket_set_size(client, NNG_OPT_RECVMAXSZ, 0)) != 0 ||
	    (rv = nng_socket_set_ms(client, NNG_OPT_RECVTIMEO, (nng_duration)c.timeout_ms)) != 0 ||
	    (rv = gnn_tls_listen(s.sock, "tcp://127.0.0.1:0", gnn_tls_data_plane(), &l)) != 0 ||
	    (rv = bound_port(l, &port)) != 0) {
		fprintf(stderr, "tlsbench: %s\n", nng_strerror(rv));
		return 1;
	}
	memset(nng_msg_body(s.reply), 0x5a, (size_t)c.size);
	snprintf(url, sizeof(url), "tcp://localhost:%d", port);
	if ((rv = gnn_tls_dial(client, url, gnn_tls_data_plane(), c.server_name, NULL, 0)) != 0 ||
	    pthread_create(&th, NULL, serve, &s) != 0) {
		fprintf(stderr, "tlsbench: dial %s: %s\n", url, nng_strerror(rv));
		return 1;
	}
	status = measure(&c, client, gnn_tls_data_plane() == NULL ? "off" : c.tls.engine);
	nng_close(client);
	nng_close(s.sock);
	pthread_join(th, NULL);
	nng_msg_free(s.reply);
	gnn_tls_teardown();
	if (s.err != 0) {
		fprintf(stderr, "tlsbench: the server: %s\n", nng_strerror(s.err));
		status = 1;
	}
	return status;
}
