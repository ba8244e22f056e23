/* fanouts.h - the per-layer fanout list ("15,10,5": input layer first), as
 * every program that takes one parses it (--fanouts, --eval-fanouts).
 *
 * A fanout is how many in-neighbours of each node a layer samples: -1 all of
 * them, 0 none (that layer sees only the node's own features), else 1 ..
 * GNN_PROTO_MAX_FANOUT. Programs that accept fewer pass a narrower range. */
#ifndef GNN_FANOUTS_H
#define GNN_FANOUTS_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct gnn_fanouts {
	uint32_t n;                         /* layers, 1..GNN_PROTO_MAX_LAYERS */
	int32_t v[GNN_PROTO_MAX_LAYERS];    /* v[0]: the input layer's */
};

/* Parses text, comma-separated integers in [min, max] (min >= -1, max <=
 * GNN_PROTO_MAX_FANOUT), 1 to GNN_PROTO_MAX_LAYERS of them, into *out.
 * Returns GNN_OK, or GNN_EINVAL with *out unspecified and why (cap bytes,
 * caller's) saying what is wrong in words fit for a log line's reason. */
int gnn_fanouts_parse(const char *text, int32_t min, int32_t max, struct gnn_fanouts *out, char *why,
		      size_t cap);

/* Writes "15,10,5" into buf (cap bytes, caller's; 12 per layer suffice);
 * GNN_ERANGE when it does not fit. */
int gnn_fanouts_format(const struct gnn_fanouts *f, char *buf, size_t cap);

#endif
