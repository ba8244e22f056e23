/* edgesplit.h - the link-prediction split made at partition time
 * (docs/partitioning.md "Edge split"): one relation's edges are dealt into
 * train, validation and test (seeded, GAE's protocol), or the validation
 * and test edges are read from the user's CSV files; validation and test
 * edges, with their reverses, are removed from the graph before it is
 * partitioned, and are written with sampled negatives to OUT/edge-split/
 * (docs/formats.md).
 *
 * The unit of the split is a pair: for a relation from a type to itself,
 * the unordered pair {u, v} joined by u -> v, v -> u or both (stored as
 * (u, v) when only u -> v is an edge, else with u < v); for a relation to
 * another type, the edge u -> v, whose reverse lives in rev_NAME. Holding a
 * pair out removes every stored edge between u and v of the relation and
 * of its reverse relation. */
#ifndef GNN_PART_EDGESPLIT_H
#define GNN_PART_EDGESPLIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "partition.h"

enum { PT_ES_VALID = 0, PT_ES_TEST = 1, PT_ES_SETS = 2 };

struct pt_edge_split_opts {
	double ratios[3];         /* train, valid, test (pt_edge_split_parse_ratios) */
	bool from_csv;            /* csv_dir given: its valid/test files instead of ratios */
	const char *csv_dir;      /* DIR/valid.csv and DIR/test.csv (.gz or plain), borrowed */
	const char *relation;     /* bare or "src:rel:dst"; NULL: "edge" (a homogeneous graph's) */
	int64_t eval_negatives;   /* K negative destinations per positive, >= 1 */
	uint64_t seed;
};

/* The split, in the graph's node IDs (graph.h) until pt_edge_split_write
 * renames them. */
struct pt_edge_split {
	uint32_t rel;                 /* the relation split */
	int32_t rev_rel;              /* its reverse relation, or -1 */
	int64_t num_pairs;            /* the relation's pairs before the split */
	int64_t num_held[PT_ES_SETS]; /* held-out pairs per set */
	int64_t removed_edges;        /* stored (directed) edges removed, every relation */
	int64_t k;                    /* negative destinations per positive */
	int32_t *pos[PT_ES_SETS];     /* [num_held x 2]: (u, v) */
	int32_t *neg[PT_ES_SETS];     /* [num_held x 2]: non-edges, one per positive */
	int32_t *neg_dst[PT_ES_SETS]; /* [num_held x k]: destinations b with (u, b) no edge */
};

/* Parses "TRAIN,VALID,TEST" (three finite numbers >= 0, train > 0, summing
 * to 1 within 1e-6) into ratios. GNN_EINVAL, logged (bad_config), naming
 * what is wrong. */
int pt_edge_split_parse_ratios(const char *text, double ratios[3]);

/* Splits the relation o names in g (whose CSR it rewrites: held-out edges
 * and their reverses gone, num_edges and the relations' counts updated)
 * and fills *es (zeroed by the caller; it owns the arrays afterwards:
 * pt_edge_split_free, also after an error). Negatives are sampled against
 * the full graph, before the removal. Errors, logged with the reason and
 * nothing changed in g: an unknown or ambiguous relation (GNN_EINVAL), too
 * few pairs for the ratios or too few non-edges for the negatives
 * (GNN_ERANGE), a bad CSV line (GNN_EFORMAT, naming file and line). */
int pt_edge_split_apply(struct pt_graph *g, const struct pt_edge_split_opts *o, struct pt_edge_split *es);

/* Writes es into dir/edge-split/ as new global IDs (pt->new_id) and adds
 * meta["edge_split"] (meta borrowed; o for the ratios and the seed). */
int pt_edge_split_write(const struct pt_edge_split *es, const struct pt_edge_split_opts *o, const struct pt_graph *g,
			const struct pt_partition *pt, const char *dir, json_t *meta);

void pt_edge_split_free(struct pt_edge_split *es);

#endif
