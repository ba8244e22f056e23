/* synth.h - the built-in synthetic graph: the embedded default dataset,
 * generated from a seed instead of downloaded. Two kinds: homogeneous
 * (presets tiny, small, medium, products; synth.c) and heterogeneous with
 * ogbn-mag's schema (presets mag-tiny, mag-small, mag; synth_mag.c, whose
 * model the "mag" section of docs/synthetic.md describes).
 *
 * Homogeneous model (docs/synthetic.md has the numbers): classes are communities of
 * Zipf-skewed sizes, each split into sub-communities; node degrees follow a
 * Chung-Lu model with Pareto(2.5) weights capped at sqrt(2 * edges); a
 * fraction PT_SYNTH_HOMOPHILY of the edges join two nodes of the same class.
 * Features are a per-class centroid plus per-node noise, strong enough that
 * features alone classify poorly while the mean over a node's neighbourhood
 * classifies well; a few "misfit" nodes carry another label than their
 * community, so no classifier reaches 100%.
 *
 * Everything is a function of the parameters and the seed: the same
 * synth_params give a bit-identical graph and bit-identical feature rows on
 * every run and machine (IEEE-754 doubles, no libm calls, no FMA contraction,
 * which GCC leaves off in -std=c11 mode). */
#ifndef GNN_PART_SYNTH_H
#define GNN_PART_SYNTH_H

#include <stdint.h>

#include "graph.h"

/* Target fraction of undirected edges whose endpoints share a class
 * (ogbn-products measures 0.81). The generated graph lands within about 0.02
 * of it; dedup removes slightly more within-class edges than others. */
#define PT_SYNTH_HOMOPHILY 0.81

/* Share of nodes labelled with another class than the community their
 * edges follow (their features follow the label). Real labels are
 * ambiguous too: without it, averaging over a products-scale neighbourhood
 * (mean degree 50) would classify almost every node correctly. */
#define PT_SYNTH_MISFIT 0.06

/* Target accuracy of an ideal nearest-class-centroid classifier on a single
 * node's raw features; the noise level is derived from it and the number of
 * classes. The neighbourhood mean does much better (see docs). */
#define PT_SYNTH_RAW_ACCURACY 0.60

enum pt_synth_kind {
	PT_SYNTH_PLAIN = 0,  /* one node type, one relation (a zeroed struct's kind) */
	PT_SYNTH_MAG,        /* ogbn-mag's node types and relations */
};

/* The mag schema: node types sorted by name, forward relations sorted by
 * (src, rel, dst). The generated graph has these 4 types and 7 relations:
 * the 4 forward ones (cites symmetrised in place), then rev_affiliated_with,
 * rev_writes and rev_has_topic (every edge of the forward one reversed),
 * as importing ogbn-mag with default options gives. */
enum { PT_SYNTH_MAG_AUTHOR, PT_SYNTH_MAG_FIELD, PT_SYNTH_MAG_INSTITUTION, PT_SYNTH_MAG_PAPER, PT_SYNTH_MAG_TYPES };
enum { PT_SYNTH_MAG_AFFILIATED, PT_SYNTH_MAG_WRITES, PT_SYNTH_MAG_CITES, PT_SYNTH_MAG_TOPIC, PT_SYNTH_MAG_FWD };
#define PT_SYNTH_MAG_RELS 7

struct pt_synth_params {
	const char *preset;     /* name it came from, for logs/metadata, or "custom" */
	enum pt_synth_kind kind;
	/* PT_SYNTH_PLAIN: */
	int64_t nodes;          /* 1 .. INT32_MAX (METIS idx_t is 32-bit) */
	int64_t edges;          /* undirected, unique, no self-loops; the CSR
				 * holds exactly 2 * edges directed edges */
	/* PT_SYNTH_MAG (nodes and edges unused): nodes of each type (each at least
	 * classes, INT32_MAX in all) and unique edges of each forward relation. */
	int64_t type_nodes[PT_SYNTH_MAG_TYPES];
	int64_t rel_edges[PT_SYNTH_MAG_FWD];
	/* Both; for PT_SYNTH_MAG, of the papers (the label type). */
	int32_t feat_dim;       /* 1 .. 65536 */
	int32_t classes;        /* 2 .. min(nodes, 65536); every class gets a node */
	int64_t num_train, num_valid, num_test; /* split sizes, sum <= nodes */
	uint64_t seed;
};

/* Fills *p with preset name's parameters and the given seed. Returns
 * GNN_ENOENT (and logs the known names) for an unknown name; *p is then
 * untouched. p->preset points at a static string. */
int pt_synth_preset(const char *name, uint64_t seed, struct pt_synth_params *p);

/* Checks every field of p: ranges, edges <= nodes*(nodes-1)/2 and at most
 * half of that (denser graphs would make rejection of duplicates crawl;
 * mag: each relation at most half of its node pairs), split sizes. Logs an
 * error naming the first bad field and returns GNN_EINVAL; 0 when p can
 * be generated. */
int pt_synth_validate(const struct pt_synth_params *p);

/* Generates the graph described by p into *g, which the caller zeroed:
 * CSR (symmetric, exactly 2 * p->edges entries; mag: exactly twice the
 * forward relations' edges, each relation's count in g->schema), labels,
 * split, num_classes, feat_dim. Features are not materialised: g->feat is NULL and g->feat_row
 * computes a row from (seed, node, label) on demand, with g->feat_ctx (one
 * malloc block holding the class centroids) owned by the graph. Returns
 * GNN_EINVAL for bad parameters, GNN_ENOMEM, or GNN_ECLOSED when a stop
 * signal arrived (checked between phases); on error *g is left zeroed.
 * Peak memory at ogbn-products scale is about 1.1 GB; pt_graph_free releases
 * the result. */
int pt_synth_generate(const struct pt_synth_params *p, struct pt_graph *g);

/* "tiny|small|...|mag", for --help and error messages. */
const char *pt_synth_preset_names(void);

#endif
