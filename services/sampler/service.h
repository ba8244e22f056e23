/* service.h - the sampler's request handler: MINIBATCH_REQ in, one
 * MINIBATCH_RESP (or ERROR) out, built by the core (core.h) over any
 * backend, with the gnn_sampler_* minibatch metrics; INFO_REQ (the whole
 * graph's layout) and NODES_REQ (one split's nodes across all partitions,
 * paged) for trainers, which talk to samplers only. */
#ifndef SMP_SERVICE_H
#define SMP_SERVICE_H

#include <stddef.h>

#include "core.h"
#include "metrics.h"
#include "proto.h"

struct smp_service_opts {
	const struct smp_backend *backend;  /* borrowed; outlives the service */
	struct gnn_metrics *metrics;        /* borrowed; outlives the service */
	uint32_t max_ids_per_call;          /* see struct smp_build_opts */
	struct smp_admit *admit;            /* borrowed, may be NULL: see struct smp_build_opts */
};

struct smp_service;

/* Registers the metrics. *out is the caller's: smp_service_free. */
int smp_service_new(const struct smp_service_opts *o, struct smp_service **out);
void smp_service_free(struct smp_service *s);

/* gnn_handler_fn (server.h); ctx is the struct smp_service. Always appends
 * one message to out: the INFO_RESP, NODES_RESP or MINIBATCH_RESP, or an
 * ERROR whose text says what was wrong (GNN_EPROTO / GNN_ERANGE for an
 * undecodable request or one of another type, GNN_EUNAVAIL "waiting for
 * graph stores: ..." while the backend's layout is not known yet,
 * GNN_EINVAL for seeds outside the graph or repeated, GNN_ERANGE for a
 * NODES cursor outside the graph, GNN_EUNAVAIL or a store's code when a
 * graph store failed, GNN_ERANGE when the minibatch would exceed a
 * message). Returns GNN_OK, or GNN_ENOMEM when not even the error could be
 * written. Thread-safe. */
int smp_service_handle(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len,
		       struct gnn_wbuf *out);

/* The server's after_reply (server.h): a minibatch's bytes stay admitted
 * until its reply was sent, and go now. */
void smp_service_after_reply(void *ctx);

#endif
