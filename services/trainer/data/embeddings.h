/* embeddings.h - learnable node embeddings, the trainer's side (docs/embeddings.md).
 *
 * The graph stores hold the rows, their sparse optimizer's state and the
 * best epoch's rows (proto.h, EMB); a trainer pulls the rows a minibatch
 * needs when the step starts and pushes their gradients when its backward
 * pass is done, before the dense all-reduce. Every store applies an update
 * once every rank pushed for it, so when the all-reduce returns on any rank
 * every store is at the next version: step s+1 reads exactly what step s
 * wrote, on every rank, whatever the timing. The next minibatch's rows
 * are pulled while a step computes (tr_emb_prefetch), and its attach then
 * reads again only the rows that step's update changed: the same rows, so
 * the same results, with most of the pull beside the step. The model sees an embedded
 * type as a type with features: its rows are the embeddings (--embed-input
 * replace, or a type without features) or the features followed by the
 * embeddings (concat).
 *
 * Rank 0 sets the stores up at every start and resume (INIT under a new
 * generation, then the checkpoint's rows written back), and has their
 * rows put into each checkpoint folder (emb-TYPE-ARRAY.arr, one file per
 * type and array, partitions concatenated in global ID order: embfile.h):
 * written by the stores themselves, from a copy, beside training, where
 * they reach the folder; else streamed through rank 0 a chunk at a time.
 * No process ever holds a whole table. A store that restarted or was
 * restored answers GNN_ESTALE; the training loop then rejoins the ring and
 * every rank resumes from the checkpoint. With replicas (several stores
 * per partition) every rank pushes to all of them and pulls from one in
 * step; rank 0 has a replica that fell behind catch up from another
 * (EMB JOIN, its arrays copied, READY), and only a partition without any
 * replica in step sends the ranks back to the checkpoint
 * (docs/embeddings.md, "Replicas"). Not thread-safe: one per rank, used
 * by one thread, but for tr_emb_finish, which rank 0's checkpoint commit
 * runs on its own thread beside the others: it reads only what the save
 * before it set, and the next save waits for it; and for the prefetch's
 * thread, which owns the next minibatch's buffers and calls until the
 * training thread joins it (attach, push, drop). */
#ifndef TR_EMB_H
#define TR_EMB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "metrics.h"
#include "proto.h"
#include "store_clients.h"

/* With no stores (offline) a tr_emb only knows the shapes, and can
 * read the best rows of a checkpoint (tr_emb_map_best): what layer-wise
 * inference needs. */
struct tr_emb_opts {
	uint32_t dim;                  /* --embed-dim: 1..GNN_PROTO_MAX_FEAT_DIM */
	const char *types;             /* --embed-types, comma-separated; NULL: the types without features */
	bool replace;                  /* --embed-input replace: a type with features reads only its embedding */
	uint32_t optimizer;            /* GNN_EMB_ADAM or GNN_EMB_ADAGRAD */
	float lr;
	uint64_t seed;
	struct tr_stores *stores;      /* borrowed: one per partition; NULL: offline */
	bool prefetch;                 /* tr_emb_prefetch pulls ahead (--embed-prefetch); else it does nothing */
	double wait_s;                 /* how long rank 0 waits for every store at a (re)start */
	struct gnn_metrics *metrics;   /* gnn_trainer_embedding_* are registered here */
};

struct tr_emb;

/* Resolves o's types on the graph g (borrowed: it must outlive *out).
 * GNN_EINVAL, logged as bad_config, for a type the graph lacks, one named
 * twice, no type to embed, or stores that are not one per partition.
 * *out: tr_emb_close. */
int tr_emb_open(const struct tr_emb_opts *o, const struct gnn_layout *g, struct tr_emb **out);
void tr_emb_close(struct tr_emb *e);

/* The schema the model sees: g's, each embedded type's feature width
 * made its input row's (the features, then the embedding, or only it). */
void tr_emb_model_schema(const struct tr_emb *e, struct gnn_schema *out);
/* A digest of what the stores hold (types, widths, optimizer, input
 * mode): part of the model hash a checkpoint must match. */
uint64_t tr_emb_hash(const struct tr_emb *e);
/* "author:128,field_of_study:128,institution:128" for logs. */
void tr_emb_describe(const struct tr_emb *e, char *buf, size_t cap);

/* Rank 0: waits (o->wait_s, logging what it waits for) until every store
 * answers, then sets them all to generation gen at version 0: from the
 * seed, or (ckpt_dir not NULL) with the rows and state of checkpoint
 * folder ckpt_dir written back. e then expects the stores there. */
int tr_emb_setup(struct tr_emb *e, uint64_t gen, const char *ckpt_dir);
/* Every other rank: the stores are at generation gen, version 0 (rank 0's
 * tr_emb_setup, learnt over the ring). */
void tr_emb_expect(struct tr_emb *e, uint64_t gen);

/* Checks the shards of checkpoint folder cdir: every file present, its
 * shape the graph's and the options', its CRC intact (reads them whole).
 * GNN_EFORMAT / GNN_ECHECKSUM / GNN_ENOENT, logged naming the file. */
int tr_emb_check_ckpt(void *e, const char *cdir);
/* Rank 0: every store's rows and state into folder dir (a checkpoint
 * being written): the version after this rank's last push (or set-up),
 * which every store must still be at (GNN_ESTALE otherwise): call it
 * between steps. Where the stores reach dir, each partition's store
 * writes its rows itself, from a copy, while training goes on
 * (EMB SAVE), and tr_emb_finish waits for them; where they do not, the
 * rows are streamed through this rank here (logged once). */
int tr_emb_save(void *e, const char *dir);
/* The commit's part (checkpoint.h's finish, on the commit's thread):
 * waits for every partition's record of the snapshot tr_emb_save asked
 * for (logging every 10 s; at most about a slow disk's time for the
 * bytes; not at all for a store whose writer is gone, which its lock on
 * the record tells), then writes the arrays' headers. GNN_OK at once
 * when the rows were streamed. GNN_EIO, GNN_EFORMAT, GNN_EUNAVAIL (a
 * store's failure or end, logged), GNN_ETIMEDOUT. */
int tr_emb_finish(void *e, const char *dir);

/* Fills mb's embedded types (their input rows become the rows of
 * tr_emb_model_schema; the pointers are e's until the next call) with the
 * rows of the version e expects: array GNN_EMB_ROWS (training, validation)
 * or GNN_EMB_BEST_ROWS (the test of the best epoch). GNN_ESTALE when a
 * store is not there; other errors name the store. */
int tr_emb_attach(struct tr_emb *e, struct gnn_minibatch *mb, uint32_t array);

/* Starts pulling mb's rows (GNN_EMB_ROWS, at the version e expects now)
 * on a thread of their own, for a tr_emb_attach of mb after the next
 * push: the step computes meanwhile, and that attach then asks only for
 * the rows the push's update changed (EMB DELTA). mb must stay as it is
 * until that attach or tr_emb_prefetch_drop. A prefetch that fails, or
 * an attach of another minibatch, leaves the full pull to that attach.
 * Nothing is started without o->prefetch or with replicas (their
 * failover belongs to the training thread). GNN_ENOMEM when no thread
 * could start. */
int tr_emb_prefetch(struct tr_emb *e, const struct gnn_minibatch *mb);
/* Waits for a prefetch still running and forgets its rows: before the
 * minibatch it reads is freed. */
void tr_emb_prefetch_drop(struct tr_emb *e);

/* After the backward pass of the minibatch last attached: pushes the
 * gradient of its embedded rows (dh: layer 0's input rows' gradient,
 * num_src x ld floats) as rank's part of the update to the version e
 * expects, to every store for every embedded type (empty pushes too: a
 * store applies an update when all world ranks' arrived); e then expects
 * the next version. */
int tr_emb_push(struct tr_emb *e, const float *dh, size_t ld, uint32_t rank, uint32_t world);

/* Rank 0, after a new best validation accuracy: every store keeps its
 * rows as the best ones. */
int tr_emb_best(struct tr_emb *e);

/* Offline (inference): maps the best rows of checkpoint folder cdir
 * (emb-TYPE-best.arr, checked whole), unmapped by tr_emb_close. */
int tr_emb_map_best(struct tr_emb *e, const char *cdir);
/* After tr_emb_map_best: the input row the model reads for node gid of
 * embedded type t (tr_emb_model_schema's width of it into out): feat (its
 * features, NULL for a type without them) then the best embedding row, or
 * that row alone (replace). feat may be out itself. Any thread. */
void tr_emb_input_row(const struct tr_emb *e, uint32_t t, int64_t gid, const float *feat, float *out);
/* After tr_emb_map_best: node gid's best embedding row (t's dim floats,
 * mapped: valid until tr_emb_close). */
const float *tr_emb_best_row(const struct tr_emb *e, uint32_t t, int64_t gid);
/* Type t's embedding width (0: none). */
uint32_t tr_emb_dim(const struct tr_emb *e, uint32_t t);

#endif
