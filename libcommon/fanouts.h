/* fanouts.h - the per-layer fanout list, as every program that takes one
 * parses it (--fanouts, --eval-fanouts), and its meaning on a graph's
 * relations (docs/training.md, "Fanouts").
 *
 * A fanout is how many in-neighbours of each node a layer samples under
 * one relation: -1 all of them, 0 none, else 1 .. GNN_PROTO_MAX_FANOUT.
 * Programs that accept fewer pass a narrower range. The text is one or
 * more lists separated by ';', each "[REL=]F0,F1,...", input layer first:
 *
 *   15,10,5                      every relation: 15, 10, 5 (DGL's int fanout)
 *   writes=15,10;cites=10,5;*=5,5  per relation (PyG's dict of edge types);
 *                                  '*' (or a list without REL=) is every
 *                                  relation not named
 *
 * REL is a relation's bare name when no other relation has it, or its
 * canonical "src:rel:dst". Every list has the same number of layers. */
#ifndef GNN_FANOUTS_H
#define GNN_FANOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "proto.h"

/* Relations one text may name. */
#define GNN_FANOUTS_MAX_NAMED 32

struct gnn_fanouts {
	uint32_t n;                         /* layers, 1..GNN_PROTO_MAX_LAYERS */
	bool has_default;                   /* v holds the list of every relation not named */
	int32_t v[GNN_PROTO_MAX_LAYERS];    /* the default list; v[0]: the input layer's */
	uint32_t num_named;
	struct {
		char rel[3 * GNN_NAME_MAX];     /* as written */
		int32_t v[GNN_PROTO_MAX_LAYERS];
	} named[GNN_FANOUTS_MAX_NAMED];
};

/* Parses text (syntax above), every fanout in [min, max] (min >= -1, max <=
 * GNN_PROTO_MAX_FANOUT), 1 to GNN_PROTO_MAX_LAYERS layers, into *out.
 * Returns GNN_OK, or GNN_EINVAL with *out unspecified and why (why_len bytes,
 * caller's) saying what is wrong in words fit for a log line's reason. */
int gnn_fanouts_parse(const char *text, int32_t min, int32_t max, struct gnn_fanouts *out, char *why,
		      size_t why_len);


/* Each layer's fanout for each relation of s: out[l R + r] (out holds
 * f->n * s->num_rels). GNN_EINVAL with why when a named relation is
 * unknown or ambiguous, named twice, or a relation has no list (none
 * names it and there is no default). */
int gnn_fanouts_resolve(const struct gnn_fanouts *f, const struct gnn_schema *s, int32_t *out, char *why,
			size_t why_len);

/* gnn_fanouts_parse over [-1, GNN_PROTO_MAX_FANOUT], then
 * gnn_fanouts_resolve on s into out (caller's, GNN_PROTO_MAX_LAYERS *
 * s->num_rels entries), the layer count into *layers: what a program that
 * asks a sampler or store for neighbours does with its --fanouts text.
 * GNN_EINVAL with why (why_len bytes, caller's). */
int gnn_fanouts_for(const char *text, const struct gnn_schema *s, int32_t *out, uint32_t *layers, char *why,
		    size_t why_len);

/* Whether any of the n fanouts v[0..n) samples (is not 0): one layer's
 * R fanouts, say, at v + l R. */
bool gnn_fanouts_any(const int32_t *v, size_t n);

/* Writes the text back ("15,10,5", or "writes=15,10;*=5,5") into buf (cap
 * bytes, caller's); GNN_ERANGE when it does not fit. */
int gnn_fanouts_format(const struct gnn_fanouts *f, char *buf, size_t cap);

#endif
