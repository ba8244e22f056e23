/* tlskeyupdate - a TLS 1.3 client (GnuTLS) of an nng REP service over
 * tls+tcp that sends key updates, as any TLS 1.3 peer may and as GnuTLS
 * does by itself after 2^24 records on a connection:
 *
 *   tlskeyupdate PORT CA CERT KEY [SERVER_NAME]
 *
 * dials 127.0.0.1:PORT as SERVER_NAME (localhost by default), presenting
 * CERT, and sends three requests on one connection, each answered within
 * 10 s:
 *   1. plain;
 *   2. after a key update written in one piece with it, so that the
 *      server reads both at once: GnuTLS takes the update as a record
 *      without data, and an engine that then waits for the wire never sees
 *      the request, already read;
 *   3. the same, with the update asking the server to update its keys too
 *      (its reply comes under its new keys).
 * The body is not a valid message: the service answers an error, which is
 * enough. Prints "replies=3" and exits 0; "no_reply request=N reason=..."
 * and exits 1; 2 for bad usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 10
#define SP_REQ 0x30 /* nng's protocol number of REQ v0 */
#define SP_REP 0x31

/* What GnuTLS writes while corked: sent in one write() by uncork. */
static struct {
	int fd;
	int corked;
	uint8_t buf[1 << 16];
	size_t len;
} wire;

static int write_all(const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t n = write(wire.fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static ssize_t push(gnutls_transport_ptr_t p, const void *data, size_t len)
{
	(void)p;
	if (!wire.corked)
		return write_all(data, len) == 0 ? (ssize_t)len : -1;
	if (wire.len + len > sizeof(wire.buf)) {
		errno = ENOBUFS;
		return -1;
	}
	memcpy(wire.buf + wire.len, data, len);
	wire.len += len;
	return (ssize_t)len;
}

static int uncork(void)
{
	int rv = write_all(wire.buf, wire.len);

	wire.corked = 0;
	wire.len = 0;
	return rv;
}

/* Reads exactly len bytes of plaintext within TIMEOUT_S: 0, or GnuTLS's
 * error (AGAIN: the time ran out). GnuTLS says AGAIN, even blocking, after
 * a record without data, such as the server's own key update. */
static int read_exact(gnutls_session_t s, void *p, size_t len)
{
	uint8_t *b = p;
	time_t end = time(NULL) + TIMEOUT_S;

	while (len > 0) {
		ssize_t n = gnutls_record_recv(s, b, len);

		if ((n == GNUTLS_E_AGAIN && time(NULL) < end) || n == GNUTLS_E_INTERRUPTED)
			continue;
		if (n <= 0)
			return n == 0 ? GNUTLS_E_PREMATURE_TERMINATION : (int)n;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_all(gnutls_session_t s, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t n = gnutls_record_send(s, b, len);

		if (n < 0)
			return (int)n;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Request id (nng's REQ: the high bit set), then the body, framed as nng's
 * TCP transport frames a message; then waits for the reply to that id. */
static int call(gnutls_session_t s, uint32_t id, unsigned ku, const char **why)
{
	static const char body[] = "not a gnn-dist message";
	uint8_t hdr[12], rep[4096];
	uint64_t len = 4 + sizeof(body);
	int rv;

	for (int i = 0; i < 8; i++)
		hdr[i] = (uint8_t)(len >> (56 - 8 * i));
	id |= 0x80000000u;
	for (int i = 0; i < 4; i++)
		hdr[8 + i] = (uint8_t)(id >> (24 - 8 * i));
	wire.corked = 1;
	if ((ku != 0 && (rv = gnutls_session_key_update(s, ku == 2 ? GNUTLS_KU_PEER : 0)) < 0) ||
	    (rv = send_all(s, hdr, sizeof(hdr))) < 0 || (rv = send_all(s, body, sizeof(body))) < 0) {
		*why = gnutls_strerror(rv);
		return -1;
	}
	if (uncork() != 0) {
		*why = strerror(errno);
		return -1;
	}
	if ((rv = read_exact(s, hdr, 8)) < 0)
		goto failed;
	len = 0;
	for (int i = 0; i < 8; i++)
		len = len << 8 | hdr[i];
	if (len < 4 || len > sizeof(rep)) {
		*why = "a reply of an unexpected size";
		return -1;
	}
	if ((rv = read_exact(s, rep, (size_t)len)) < 0)
		goto failed;
	if (((uint32_t)rep[0] << 24 | (uint32_t)rep[1] << 16 | (uint32_t)rep[2] << 8 | rep[3]) != id) {
		*why = "a reply to another request";
		return -1;
	}
	return 0;
failed:
	*why = rv == GNUTLS_E_AGAIN ? "no reply within the timeout" : gnutls_strerror(rv);
	return -1;
}

/* Connects, shakes hands, exchanges nng's SP headers: 0, or -1 with *why. */
static int open_link(gnutls_session_t s, int port, const char **why)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { TIMEOUT_S, 0 };
	uint8_t sp[8] = { 0, 'S', 'P', 0, 0, SP_REQ, 0, 0 }, got[8];
	int rv;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((wire.fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    setsockopt(wire.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(wire.fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		*why = strerror(errno);
		return -1;
	}
	gnutls_transport_set_int(s, wire.fd);
	gnutls_transport_set_push_function(s, push);
	do
		rv = gnutls_handshake(s);
	while (rv < 0 && gnutls_error_is_fatal(rv) == 0 && rv != GNUTLS_E_AGAIN);
	if (rv < 0 || (rv = send_all(s, sp, sizeof(sp))) < 0 || (rv = read_exact(s, got, sizeof(got))) < 0) {
		*why = gnutls_strerror(rv);
		return -1;
	}
	sp[5] = SP_REP;
	if (memcmp(sp, got, sizeof(sp)) != 0) {
		*why = "the peer is not an nng REP socket";
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_session_t s = NULL;
	const char *name = argc > 5 ? argv[5] : "localhost", *why = "";
	int port = argc > 1 ? atoi(argv[1]) : 0, rv, i = 0;

	wire.fd = -1;
	if (argc < 5 || argc > 6 || port <= 0 || port > 65535) {
		fprintf(stderr, "usage: tlskeyupdate PORT CA CERT KEY [SERVER_NAME]\n");
		return 2;
	}
	if ((rv = gnutls_certificate_allocate_credentials(&cred)) < 0 ||
	    (rv = gnutls_certificate_set_x509_trust_file(cred, argv[2], GNUTLS_X509_FMT_PEM)) < 0 ||
	    (rv = gnutls_certificate_set_x509_key_file(cred, argv[3], argv[4], GNUTLS_X509_FMT_PEM)) < 0 ||
	    (rv = gnutls_init(&s, GNUTLS_CLIENT)) < 0 ||
	    (rv = gnutls_priority_set_direct(s, "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL)) < 0 ||
	    (rv = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred)) < 0 ||
	    (rv = gnutls_server_name_set(s, GNUTLS_NAME_DNS, name, strlen(name))) < 0) {
		fprintf(stderr, "tlskeyupdate: %s\n", gnutls_strerror(rv));
		rv = 2;
		goto out;
	}
	gnutls_session_set_verify_cert(s, name, 0);
	rv = 1;
	if (open_link(s, port, &why) != 0) {
		printf("no_reply request=0 reason=\"%s\"\n", why);
		goto out;
	}
	for (i = 1; i <= 3; i++) {
		if (call(s, (uint32_t)i, (unsigned)(i - 1), &why) != 0) {
			printf("no_reply request=%d reason=\"%s\"\n", i, why);
			goto out;
		}
	}
	printf("replies=3\n");
	rv = 0;
out:
	if (s != NULL)
		gnutls_deinit(s);
	if (cred != NULL)
		gnutls_certificate_free_credentials(cred);
	if (wire.fd >= 0)
		close(wire.fd);
	return rv;
}
