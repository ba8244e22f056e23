/* tlsengine.h - nng's TLS on GnuTLS: a TLS engine for libnng 1.5.2.
 *
 * Debian's libnng 1.5.2 does TLS with mbed TLS 2.28, which negotiates
 * ChaCha20-Poly1305 in portable C: a products epoch took 2.37x plain
 * (docs/scale.md, "The cost of TLS"). nng takes another engine at run
 * time (<nng/supplemental/tls/engine.h>, ABI V1 in nng 1.5 to 1.8); this
 * one is GnuTLS (libmicrohttpd's HTTPS already uses it): TLS 1.3,
 * AES-128-GCM first where the CPU has AES-NI and PCLMULQDQ, ChaCha20
 * first where it has not, the server's preference deciding; TLS 1.2
 * (ECDHE, AEAD) only with a peer that lacks 1.3, libnng's own engine
 * (mbed TLS 2.28), so that a rolling upgrade keeps its links.
 *
 * Beyond the cipher, it works around nng 1.5.2's TLS layer, which moves
 * at most 16 KiB per operation and wakes a thread for each (docs/scale.md):
 * a send takes up to 256 KiB of the caller's buffer at once and feeds the
 * records to nng as its 16 KiB buffer drains; a receive fills the
 * caller's buffer before it returns. Both are right for nng's SP
 * transports, which send whole messages and read exact lengths, the only
 * users of nng's TLS in these programs.
 *
 * Only tls.c calls these (gnn_tls_domain selects the engine). */
#ifndef GNN_TLSENGINE_H
#define GNN_TLSENGINE_H

#include <stddef.h>
#include <stdint.h>

/* Makes GnuTLS nng's TLS engine for this process. Call before any
 * nng_tls_config exists (configurations made before keep their engine).
 * GNN_EVERSION, logged, when libnng refuses an engine of ABI V1 (nng 1.9
 * changed it; 2.0 has no registration); GNN_ENOMEM. Idempotent. */
int gnn_tlsengine_register(void);

/* What GnuTLS said about the last configuration call of this thread that
 * failed ("" if none): a certificate or key it could not take. Static. */
const char *gnn_tlsengine_last_error(void);

/* The suites this engine offers, most preferred first, as decided for
 * this CPU (*n of them; 0 before gnn_tlsengine_register). Static. */
const char *const *gnn_tlsengine_suites(size_t *n);

/* Handshakes this process's engine completed with suite (one of
 * gnn_tlsengine_suites; 0 for any other). Thread-safe; only grows. */
uint64_t gnn_tlsengine_handshakes(const char *suite);

#endif
