/* storeid.h - which graph, and which partition of it, a graph store
 * serves, as its INFO answer says (proto.h): the check a client makes
 * before it trusts a store's answers, whenever the store may have been
 * replaced (a sampler's store backend, a trainer's feature rows). */
#ifndef GNN_STOREID_H
#define GNN_STOREID_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "proto.h"

/* Whether got, a store's INFO answer, says that it serves partition part
 * of the graph want describes (both borrowed): the same graph_id (a hash
 * of the partition output: its node map, sizes and files), number of
 * partitions and of nodes, and that partition. */
bool gnn_storeid_serves(const struct gnn_info *got, uint32_t part, const struct gnn_layout *want);

#endif
