/* feats.h - the input feature rows of a trainer's minibatches, read from
 * the graph stores directly and from a hot-feature cache (docs/scale.md,
 * "Feature movement").
 *
 * With --features-from stores the samplers send blocks, input types and
 * labels only; the loader's workers then fill each minibatch's rows here:
 * the rows the cache holds are copied from it, the others come in FEAT
 * calls straight from the stores that own them (about GNN_FEAT_CALL_BYTES
 * each, all at once). A row so crosses the network once, from its store
 * to the trainer that reads it, and not at all when the cache holds it.
 * The rows are the stores' bytes either way, so a run gives the same
 * parameters as with --features-from sampler.
 *
 * The cache holds the hottest rows, chosen when the trainer starts: it
 * asks its samplers for --cache-presample minibatches of its own training
 * seeds (blocks only, the run's fanouts) and ranks every node by how many
 * of them read it (GNNLab's pre-sampling; ties go to the lower ID). It
 * takes the top ones up to --cache-ratio of the nodes with features, or a
 * byte budget, fetches them once, and never changes them: partitions are
 * immutable.
 *
 * A store's answers are used only from the graph the samplers reported:
 * every store is asked INFO (graph_id, partition) before its first rows,
 * and again whenever its connection came up anew (a restart), before the
 * rows that came over it are used; a store serving another graph fails the
 * minibatch (`graph_changed`), cache or not. */
#ifndef TR_FEATS_H
#define TR_FEATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "metrics.h"
#include "proto.h"
#include "store_clients.h"

struct tr_feats_opts {
	struct tr_stores *stores;      /* borrowed: one per partition */
	double cache_ratio;            /* the fraction of the nodes with features to cache, 0..1 */
	uint64_t cache_bytes;          /* or, when not 0, a budget in bytes */
	uint32_t presample;            /* minibatches that rank the nodes (0: no cache) */
	struct gnn_metrics *metrics;   /* required: gnn_trainer_feature_* are registered here, and
					* tr_feats_stats reads them */
};

struct tr_feats;

/* The rows of g (borrowed: it must outlive *out). GNN_EINVAL, logged as
 * bad_config, unless there is one store per partition. *out:
 * tr_feats_close. */
int tr_feats_open(const struct tr_feats_opts *o, const struct gnn_layout *g, struct tr_feats **out);
void tr_feats_close(struct tr_feats *f);

/* True while the cache is still to be built: the caller presamples
 * o->presample minibatches, tr_feats_count each, then tr_feats_build. */
bool tr_feats_wants_cache(const struct tr_feats *f);
/* Counts mb's input nodes (blocks[0]'s sources) toward their hotness. */
int tr_feats_count(struct tr_feats *f, const struct gnn_minibatch *mb);
/* Picks the hottest rows within the budget and fetches them; logs
 * `feature_cache`. Without counts (no presampling) it ranks by ID. */
int tr_feats_build(struct tr_feats *f);

/* Fills mb's feature rows (a minibatch asked for without GNN_MB_FEATURES):
 * rows[t], the caller's buffer of mb->type_rows[t] * mb->feat_dims[t]
 * floats (NULL where that is 0), gets type t's rows in source order as f32
 * and mb->feat[t] points at it; mb->flags gains
 * GNN_MB_FEATURES. Thread-safe: the loader's workers call it at once. A
 * store still starting or restarting is waited for, bounded by the call
 * timeout and retries. On failure why (why_len bytes) names the store. */
int tr_feats_fill(struct tr_feats *f, struct gnn_minibatch *mb, float *rows[GNN_PROTO_MAX_TYPES], char *why,
		  size_t why_len);

/* Rows served so far: from the cache, and from the stores (and their
 * bytes: the FEAT answers). */
struct tr_feats_stats {
	uint64_t cached_rows, store_rows, store_bytes;
};
void tr_feats_stats(const struct tr_feats *f, struct tr_feats_stats *out);

#endif
