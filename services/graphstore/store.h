/* store.h - the graph store's state: one partition of a gnn-partition
 * output (docs/formats.md), mapped read-only and verified, and the request
 * handler that serves it over the RPC server (docs/graphstore.md).
 *
 * Life cycle, driven by main.c:
 *
 *   gs_store_init    registers the metrics; state WAITING (not ready)
 *   gs_wait_data     waits, with a timeout, for DIR/meta.json to appear
 *   gs_store_load    maps and verifies the partition; state READY
 *   gs_handle        answers requests (any thread) once READY;
 *                    gs_after_reply after each reply
 *   gs_store_close   STOPPING, then unmaps; call after the server stopped
 *
 * The state is one atomic, so the HTTP ready probe and the request workers
 * read it without locks; the partition is written before READY is
 * published (release) and read only after READY is seen (acquire). */
#ifndef GS_STORE_H
#define GS_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emb_table.h"
#include "metrics.h"
#include "part.h"
#include "preds.h"
#include "proto.h"

enum gs_state { GS_WAITING, GS_LOADING, GS_READY, GS_STOPPING };

struct gs_store {
	_Atomic int state;          /* enum gs_state */
	const char *dir;            /* partition output folder (borrowed) */
	const char *preds_dir;      /* gnn-trainer infer's output (borrowed) */
	int32_t part_id;            /* the partition served (fixed at init) */
	struct gnn_meta meta;       /* valid from READY on; meta.layout.graph_id is
				     * gnn_meta_graph_id(&meta), which gnn_meta_load leaves 0 */
	struct gnn_part part;       /* mapped arrays, valid from READY on */
	struct gnn_arr node_map;    /* node-map.arr (every node's original ID), for LOOKUP */
	struct gs_preds *preds;     /* this partition's predictions (preds.h), from READY on */
	struct gs_emb *emb;         /* the trainers' learnable embeddings (emb_table.h), from init to close */
	const char *emb_wal_dir;    /* their log of changes (gs_emb_recover at load); NULL: none (borrowed) */
	uint64_t mapped_bytes;      /* the partition's files, headers included */
	double load_seconds;

	/* metrics, owned by the registry given to gs_store_init */
	struct gnn_counter *sampled_edges, *feature_rows;
	struct gnn_gauge *partition_bytes, *ready, *partition_nodes, *partition_edges;
	struct gnn_gauge *partition_id, *load_seconds_gauge;
	struct gnn_gauge *preds_time;  /* preds_dir/summary.json's time, read at each render */
	struct gs_emb_metrics emb_metrics;
};

/* Prepares s (state WAITING) to serve partition part of the output in dir,
 * the predictions in preds_dir (preds.h) and embeddings (emb_table.h, none until
 * the trainers' INIT), and registers the graph store's metrics in reg
 * (borrowed: it must outlive s). dir and preds_dir are borrowed too. A
 * render of reg reads s (the predictions' time): s must not move, and reg
 * must not render after s is gone.
 * Returns GNN_OK, the registry's error or GNN_ENOMEM. */
int gs_store_init(struct gs_store *s, const char *dir, const char *preds_dir, int32_t part,
		  struct gnn_metrics *reg);

/* Waits up to timeout_s seconds for dir/meta.json to exist, logging what it
 * waits for when it starts and about every 10 s; a SIGTERM ends the wait.
 * timeout_s 0 checks once. Returns GNN_OK, GNN_ETIMEDOUT (logged with what
 * is missing), GNN_ENOENT (timeout 0 and missing) or GNN_ECLOSED (stop
 * requested). */
int gs_wait_data(const char *dir, int64_t timeout_s);

/* Loads dir/meta.json, checks that the partition exists (GNN_ERANGE,
 * logged with the partition count, otherwise), maps it with
 * GNN_PART_VERIFY (checksums and contents: GNN_ECHECKSUM or GNN_EFORMAT,
 * logged by part.c with the file), then publishes READY. On failure s
 * holds nothing and stays not ready. */
int gs_store_load(struct gs_store *s);

/* Marks s STOPPING (readiness goes false), unmaps the partition and frees
 * the embeddings. No request may be in progress: stop the server first.
 * Safe to call twice. */
void gs_store_close(struct gs_store *s);

/* gnn_http ready callback (ctx is the store): true once READY; otherwise
 * writes what it is doing into why ("loading partition 0", ...). */
bool gs_ready(void *ctx, char *why, size_t why_len);


/* The RPC handler (gnn_handler_fn of server.h; ctx is the store): INFO,
 * SAMPLE, FEAT, LABEL, SPLIT, NODES, PREDICT (GNN_ENOENT naming what is
 * missing while there are no predictions), LOOKUP and EMB (emb_table.h's
 * refusals as ERROR replies) requests. Every request is checked
 * completely before any work: a malformed payload gets an ERROR reply with
 * the decoder's code, a node outside this partition GNN_ERANGE naming the
 * node and the owned range, a request before READY GNN_EUNAVAIL. */
int gs_handle(void *ctx, const struct gnn_hdr *h, const void *payload, size_t len,
	      struct gnn_wbuf *out);
/* The server's after_reply (ctx is the store): the embeddings' update
 * whose last push was just answered (gs_emb_settle). */
void gs_after_reply(void *ctx);

#endif
