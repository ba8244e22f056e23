/* storeid.c - see storeid.h. */
#include "storeid.h"

bool gnn_storeid_serves(const struct gnn_info *got, uint32_t part, const struct gnn_layout *want)
{
	return got->layout.graph_id == want->graph_id && got->layout.num_parts == want->num_parts &&
	       got->layout.num_nodes == want->num_nodes && got->part_id == part;
}
