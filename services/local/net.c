#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "proc.h"
#include "sys.h"

/* The kernel's ephemeral port range (the source ports of outgoing
 * connections); 32768-60999 when it cannot be read. */
static void ephemeral_range(int *lo, int *hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	*lo = 32768;
	*hi = 60999;
	if (f == NULL)
		return;
	if (fscanf(f, "%d %d", lo, hi) != 2 || *lo < 1 || *hi > 65535 || *lo > *hi) {
		*lo = 32768;
		*hi = 60999;
	}
	fclose(f);
}

/* Binds fd to 127.0.0.1:port (0: any). */
static int bind_loopback(int fd, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return bind(fd, (struct sockaddr *)&a, sizeof(a));
}

/* A port outside the ephemeral range, bound to fd: a process that dials
 * one of these ports before its listener is up cannot end up connected
 * to itself (TCP's self-connect: the kernel picks the dialled port as the
 * source port, and the listener then finds its port taken). Falls back to
 * port 0 when no such port is free after many tries. */
static int bind_outside_ephemeral(int fd, int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int lo, hi, first, count;

	ephemeral_range(&lo, &hi);
	/* below the range when there is room there (and below Kubernetes'
	 * NodePorts, 30000-32767, which kube-proxy may hold), else above it */
	first = lo > 11024 ? 10000 : hi + 1;
	count = lo > 11024 ? (lo < 30000 ? lo : 30000) - 10000 : 65536 - (hi + 1);
	for (int t = 0; count > 0 && t < 200; t++) {
		int p = first + (int)((unsigned)rand() % (unsigned)count);

		if (bind_loopback(fd, p) == 0) {
			*port = p;
			return 0;
		}
	}
	if (bind_loopback(fd, 0) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	*port = ntohs(a.sin_port);
	return 0;
}

int loc_free_ports(int *ports, size_t n)
{
	int *fds = calloc(n ? n : 1, sizeof(*fds));
	int rc = GNN_OK;
	size_t i, opened = 0;

	if (fds == NULL)
		return GNN_ENOMEM;
	srand((unsigned)getpid() ^ (unsigned)(gnn_now() * 1e6));
	for (i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0) {
			GNN_ERROR("socket_failed", "error=\"%s\"", strerror(errno));
			rc = GNN_EIO;
			break;
		}
		opened++;
		if (bind_outside_ephemeral(fds[i], &ports[i]) != 0) {
			GNN_ERROR("bind_failed", "addr=127.0.0.1 error=\"%s\"", strerror(errno));
			rc = GNN_EIO;
			break;
		}
	}
	for (i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	return rc;
}

static int wait_fd(int fd, short events, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int left_ms, r;

	for (;;) {
		left_ms = (int)((deadline - gnn_now()) * 1000.0);
		if (left_ms <= 0)
			return GNN_ETIMEDOUT;
		r = poll(&pfd, 1, left_ms);
		if (r > 0)
			return GNN_OK;
		if (r == 0)
			return GNN_ETIMEDOUT;
		if (errno != EINTR)
			return GNN_EUNAVAIL;
		if (gnn_stop_signal() != 0)
			return GNN_ECLOSED;
	}
}

int loc_http_get(int port, const char *path, int timeout_ms, int *code, char *body, size_t body_size)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	double deadline = gnn_now() + timeout_ms / 1000.0;
	char req[512], resp[4096];
	size_t have = 0, sent = 0, reqlen;
	const char *hdr_end;
	int fd, err = 0, rc;
	socklen_t elen = sizeof(err);
	ssize_t k;

	if (body_size == 0)
		return GNN_EINVAL;
	body[0] = '\0';
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	reqlen = (size_t)snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
	if (reqlen >= sizeof(req))
		return GNN_EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(body, body_size, "socket: %s", strerror(errno));
		return GNN_EUNAVAIL;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (errno != EINPROGRESS) {
			snprintf(body, body_size, "connect: %s", strerror(errno));
			rc = GNN_EUNAVAIL;
			goto out;
		}
		if ((rc = wait_fd(fd, POLLOUT, deadline)) != GNN_OK) {
			snprintf(body, body_size, "connect: %s", rc == GNN_ETIMEDOUT ? "timed out" : "failed");
			goto out;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
			snprintf(body, body_size, "connect: %s", strerror(err ? err : errno));
			rc = GNN_EUNAVAIL;
			goto out;
		}
	}
	while (sent < reqlen) {
		k = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);
		if (k > 0) {
			sent += (size_t)k;
		} else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			if ((rc = wait_fd(fd, POLLOUT, deadline)) != GNN_OK)
				goto out_io;
		} else {
			rc = GNN_EUNAVAIL;
			goto out_io;
		}
	}
	/* HTTP/1.0: the server closes the connection after the response. */
	for (;;) {
		k = recv(fd, resp + have, sizeof(resp) - 1 - have, 0);
		if (k > 0) {
			have += (size_t)k;
			if (have == sizeof(resp) - 1)
				break;
		} else if (k == 0) {
			break;
		} else if (errno == EAGAIN || errno == EINTR) {
			if ((rc = wait_fd(fd, POLLIN, deadline)) != GNN_OK)
				goto out_io;
		} else {
			rc = GNN_EUNAVAIL;
			goto out_io;
		}
	}
	resp[have] = '\0';
	if (sscanf(resp, "HTTP/1.%*1[01] %3d", code) != 1 || *code < 100 || *code > 599) {
		snprintf(body, body_size, "not an HTTP response");
		rc = GNN_EPROTO;
		goto out;
	}
	hdr_end = strstr(resp, "\r\n\r\n");
	snprintf(body, body_size, "%s", hdr_end ? hdr_end + 4 : "");
	rc = GNN_OK;
	goto out;
out_io:
	snprintf(body, body_size, "%s", rc == GNN_ETIMEDOUT ? "timed out" : "connection failed");
out:
	close(fd);
	return rc;
}
