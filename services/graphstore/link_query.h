/* link_query.h - a graph store's LINK requests (proto.h): ROWS, SCORE and TOPK
 * over the link-prediction output of its partition (preds.h's
 * gs_link_view). Pure computation over the mapped rows; the handler
 * (handlers.c) decodes the request, checks that the IDs it must own are
 * owned and holds the view. */
#ifndef GS_LINK_H
#define GS_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "part.h"
#include "preds.h"
#include "proto.h"

/* Appends the LINK_RESP to req (decoded; ROWS' and SCORE's IDs owned by
 * pt, TOPK's node too when it queries by node) to out. Bounded work:
 * ROWS n x dim copies, SCORE n decoder evaluations, TOPK one per
 * candidate of pt (n_p x dim, or n_p x dim x hidden for mlp) and O(k +
 * excluded) memory. Returns GNN_OK, or GNN_EINVAL (a query of another
 * width than the model's, a node type the graph lacks), GNN_ERANGE (a
 * reply over the message limit) or GNN_ENOMEM, with why (why_len bytes)
 * saying what; nothing is appended then. v, pt, sc and req are borrowed. */
int gs_link_answer(const struct gs_link_view *v, const struct gnn_part *pt, const struct gnn_schema *sc,
		   uint64_t req_id, const struct gnn_link_req *req, struct gnn_wbuf *out, char *why, size_t why_len);

#endif
