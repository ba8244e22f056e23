/* nngsend - sends a file's bytes, unchanged, as one nng REQ message and
 * prints what comes back, so tests can feed a service garbage, truncated,
 * oversized or wrong-version messages inside well-formed SP frames:
 *
 *   nngsend URL FILE [TIMEOUT_MS]
 *
 * Prints one line and exits 0 when a reply came:
 *   reply bytes=N type=NAME status=CODE req_id=R len=L text="..."
 *   reply bytes=N undecodable=REASON
 * or "no_reply error=..." and exits 1 (the service dropped it or is down);
 * 2 for bad usage. */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"

/* Reads the whole file into *buf (malloc'd); *len its size. */
static int read_file(const char *path, void **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long size;
	void *b;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		if (f != NULL)
			fclose(f);
		return GNN_EIO;
	}
	b = malloc((size_t)size + 1);
	if (b == NULL || fread(b, 1, (size_t)size, f) != (size_t)size) {
		free(b);
		fclose(f);
		return GNN_EIO;
	}
	fclose(f);
	*buf = b;
	*len = (size_t)size;
	return GNN_OK;
}

static void print_reply(const void *body, size_t len)
{
	struct gnn_hdr h;
	struct gnn_error_msg e;
	const void *payload;
	int rc = gnn_proto_decode_hdr(body, len, &h, &payload);

	if (rc != GNN_OK) {
		printf("reply bytes=%zu undecodable=%s\n", len, gnn_errname(rc));
		return;
	}
	printf("reply bytes=%zu type=%s status=%s req_id=%llu len=%u", len, gnn_msg_name(h.type),
	       h.type == GNN_MSG_ERROR ? gnn_errname((int)h.status) : "ok", (unsigned long long)h.req_id, h.len);
	if (h.type == GNN_MSG_ERROR && gnn_decode_error(&h, payload, &e) == GNN_OK)
		printf(" text=\"%.*s\"", (int)e.text_len, e.text);
	printf("\n");
}

int main(int argc, char **argv)
{
	nng_socket sock;
	nng_msg *msg = NULL;
	void *data = NULL;
	size_t len = 0;
	int timeout = argc > 3 ? atoi(argv[3]) : 3000, rv, status = 1;

	if (argc < 3 || timeout <= 0) {
		fprintf(stderr, "usage: nngsend URL FILE [TIMEOUT_MS]\n");
		return 2;
	}
	if (read_file(argv[2], &data, &len) != GNN_OK) {
		fprintf(stderr, "nngsend: cannot read %s\n", argv[2]);
		return 2;
	}
	if ((rv = nng_req0_open(&sock)) != 0) {
		fprintf(stderr, "nngsend: %s\n", nng_strerror(rv));
		free(data);
		return 2;
	}
	nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, timeout);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, timeout);
	nng_socket_set_ms(sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ, 0); /* no limit: print any reply */
	/* Blocking dial: the service is expected up; a failure is the answer. */
	if ((rv = nng_dial(sock, argv[1], NULL, 0)) != 0 || (rv = nng_msg_alloc(&msg, 0)) != 0 ||
	    (rv = nng_msg_append(msg, data, len)) != 0 || (rv = nng_sendmsg(sock, msg, 0)) != 0) {
		if (msg != NULL)
			nng_msg_free(msg);
		printf("no_reply error=\"%s\"\n", nng_strerror(rv));
		goto out;
	}
	msg = NULL;
	if ((rv = nng_recvmsg(sock, &msg, 0)) != 0) {
		printf("no_reply error=\"%s\"\n", nng_strerror(rv));
		goto out;
	}
	print_reply(nng_msg_body(msg), nng_msg_len(msg));
	nng_msg_free(msg);
	status = 0;
out:
	/* The answer goes out before the close, so that a test's timeout
	 * around this process keeps it: one sampler.sh run under make asan
	 * hung in its garbage loop, and a REQ close with its request
	 * unanswered is the suspect (cf. nanomsg/nng#648). */
	fflush(stdout);
	nng_close(sock);
	free(data);
	return status;
}
