#!/usr/bin/env python3
"""tlspeer - a TLS client that misbehaves on purpose, for tests/e2e/tls.sh.

    tlspeer.py MODE PORT CA CERT KEY

dials localhost:PORT (a gnn-dist service with --tls-*), trusting CA and
presenting CERT/KEY, and prints one word:

  truncated  sends the first half of its ClientHello and hangs up: "sent"
  garbage    finishes the handshake, reads the service's SP header, then
             writes 64 KiB of random bytes on the raw socket: "closed" when
             the service closes the connection within 10 s, else "open"
  handshake  finishes the handshake and waits for the service's SP header:
             "accepted" when it comes, "refused" when the service ends the
             connection instead (an alert, a reset)

Exit 0 (the word says what happened), 2 for bad usage.
"""
import os
import socket
import ssl
import sys

TIMEOUT_S = 10


def context(ca, cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    return ctx


def pump(sock, obj, out):
    """Sends what the TLS object wrote."""
    data = out.read()
    if data:
        sock.sendall(data)


def handshake(sock, obj, inc, out):
    while True:
        try:
            obj.do_handshake()
            pump(sock, obj, out)
            return
        except ssl.SSLWantReadError:
            pump(sock, obj, out)
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed during the handshake")
            inc.write(data)


def read_plain(sock, obj, inc, n):
    """n decrypted bytes, or raises when the service ends the connection."""
    got = b""
    while len(got) < n:
        try:
            got += obj.read(n - len(got))
        except ssl.SSLWantReadError:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            inc.write(data)
    return got


def closed_within(sock, seconds):
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return True
    except (ConnectionError, OSError):
        return True
    except socket.timeout:
        return False


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in ("truncated", "garbage", "handshake"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, port, ca, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = context(ca, cert, key).wrap_bio(inc, out, server_hostname="localhost")
    sock = socket.create_connection(("localhost", port), timeout=TIMEOUT_S)
    if mode == "truncated":
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = out.read()
        sock.sendall(hello[: len(hello) // 2])
        sock.close()
        print("sent")
        return 0
    try:
        handshake(sock, obj, inc, out)
        header = read_plain(sock, obj, inc, 8)
    except (ssl.SSLError, ConnectionError, OSError):
        print("refused")
        return 0
    if mode == "handshake":
        print("accepted" if header[:4] == b"\x00SP\x00" else "refused")
        return 0
    try:
        sock.sendall(os.urandom(65536))
    except OSError:  # the service closed it before all was written
        print("closed")
        return 0
    print("closed" if closed_within(sock, TIMEOUT_S) else "open")
    return 0


if __name__ == "__main__":
    sys.exit(main())
