#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "err.h"
#include "hash.h"

/* ---- the schema ---- */

void gnn_schema_plain(struct gnn_schema *s, int64_t num_nodes, int64_t num_edges, uint32_t feat_dim)
{
	memset(s, 0, sizeof(*s));
	s->num_types = 1;
	s->num_rels = 1;
	snprintf(s->types[0].name, GNN_NAME_MAX, "node");
	s->types[0].num_nodes = num_nodes;
	s->types[0].feat_dim = feat_dim;
	snprintf(s->rels[0].name, GNN_NAME_MAX, "edge");
	s->rels[0].num_edges = num_edges;
}

bool gnn_name_ok(const char *name)
{
	size_t n = 0;

	for (; name[n] != '\0'; n++) {
		char c = name[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.'))
			return false;
	}
	return n >= 1 && n < GNN_NAME_MAX && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* Whether a fixed-size name field holds a NUL-terminated acceptable name. */
static bool name_field_ok(const char *name)
{
	return memchr(name, '\0', GNN_NAME_MAX) != NULL && gnn_name_ok(name);
}

int gnn_schema_check(const struct gnn_schema *s, char *why, size_t why_len)
{
	if (s->num_types < 1 || s->num_types > GNN_MAX_TYPES || s->num_rels < 1 || s->num_rels > GNN_MAX_RELS) {
		snprintf(why, why_len, "%u node types and %u relations: 1..%d and 1..%d are supported", s->num_types,
			 s->num_rels, GNN_MAX_TYPES, GNN_MAX_RELS);
		return GNN_EFORMAT;
	}
	if (s->label_type >= s->num_types) {
		snprintf(why, why_len, "label type %u of %u types", s->label_type, s->num_types);
		return GNN_EFORMAT;
	}
	for (uint32_t t = 0; t < s->num_types; t++) {
		const struct gnn_ntype *ty = &s->types[t];

		if (!name_field_ok(ty->name)) {
			snprintf(why, why_len, "node type %u has no valid name (1..%d letters, digits, '_', '-', '.')", t,
				 GNN_NAME_MAX - 1);
			return GNN_EFORMAT;
		}
		if (ty->num_nodes < 0 || ty->feat_dim > (1u << 16)) {
			snprintf(why, why_len, "node type %s: %lld nodes, feature width %u", ty->name, (long long)ty->num_nodes,
				 ty->feat_dim);
			return GNN_EFORMAT;
		}
		for (uint32_t u = 0; u < t; u++)
			if (strcmp(s->types[u].name, ty->name) == 0) {
				snprintf(why, why_len, "node type %s appears twice", ty->name);
				return GNN_EFORMAT;
			}
	}
	for (uint32_t r = 0; r < s->num_rels; r++) {
		const struct gnn_rel *re = &s->rels[r];

		if (!name_field_ok(re->name) || re->src >= s->num_types || re->dst >= s->num_types || re->num_edges < 0) {
			snprintf(why, why_len, "relation %u: bad name, node types (%u, %u of %u) or edge count", r, re->src,
				 re->dst, s->num_types);
			return GNN_EFORMAT;
		}
		for (uint32_t q = 0; q < r; q++)
			if (strcmp(s->rels[q].name, re->name) == 0 && s->rels[q].src == re->src && s->rels[q].dst == re->dst) {
				snprintf(why, why_len, "relation %s:%s:%s appears twice", s->types[re->src].name, re->name,
					 s->types[re->dst].name);
				return GNN_EFORMAT;
			}
	}
	return GNN_OK;
}

int32_t gnn_schema_type(const struct gnn_schema *s, const char *name)
{
	for (uint32_t t = 0; t < s->num_types; t++)
		if (strcmp(s->types[t].name, name) == 0)
			return (int32_t)t;
	return -1;
}

void gnn_schema_rel_label(const struct gnn_schema *s, uint32_t r, char *buf, size_t cap)
{
	const struct gnn_rel *re = &s->rels[r];

	snprintf(buf, cap, "%s:%s:%s", s->types[re->src].name, re->name, s->types[re->dst].name);
}

int32_t gnn_schema_rel(const struct gnn_schema *s, const char *name)
{
	char label[3 * GNN_NAME_MAX];
	int32_t found = -1;

	for (uint32_t r = 0; r < s->num_rels; r++) {
		gnn_schema_rel_label(s, r, label, sizeof(label));
		if (strcmp(label, name) == 0)
			return (int32_t)r;
	}
	for (uint32_t r = 0; r < s->num_rels; r++)
		if (strcmp(s->rels[r].name, name) == 0) {
			if (found >= 0)
				return -2;
			found = (int32_t)r;
		}
	return found;
}

int32_t gnn_schema_reverse(const struct gnn_schema *s, uint32_t r)
{
	const struct gnn_rel *re = &s->rels[r];
	char rev[GNN_NAME_MAX + 8];

	if (re->src == re->dst)
		return -1;  /* within one type both directions are r's own */
	if (strncmp(re->name, "rev_", 4) == 0)
		snprintf(rev, sizeof(rev), "%s", re->name + 4);
	else
		snprintf(rev, sizeof(rev), "rev_%s", re->name);
	for (uint32_t k = 0; k < s->num_rels; k++)
		if (strcmp(s->rels[k].name, rev) == 0 && s->rels[k].src == re->dst && s->rels[k].dst == re->src)
			return (int32_t)k;
	return -1;
}

uint32_t gnn_schema_max_feat_dim(const struct gnn_schema *s)
{
	uint32_t d = 0;

	for (uint32_t t = 0; t < s->num_types; t++)
		d = s->types[t].feat_dim > d ? s->types[t].feat_dim : d;
	return d;
}

bool gnn_schema_is_plain(const struct gnn_schema *s)
{
	return s->num_types == 1 && s->num_rels == 1;
}

static uint64_t fold_str(uint64_t h, const char *s)
{
	h = gnn_fold64(h, strlen(s));
	for (; *s != '\0'; s++)
		h = gnn_fold64(h, (unsigned char)*s);
	return h;
}

uint64_t gnn_schema_hash(const struct gnn_schema *s)
{
	uint64_t h = gnn_fold64(gnn_fold64(gnn_fold64(0x736368656d61ull, s->num_types), s->num_rels), s->label_type);

	for (uint32_t t = 0; t < s->num_types; t++)
		h = gnn_fold64(fold_str(h, s->types[t].name), s->types[t].feat_dim);
	for (uint32_t r = 0; r < s->num_rels; r++)
		h = gnn_fold64(gnn_fold64(fold_str(h, s->rels[r].name), s->rels[r].src), s->rels[r].dst);
	return h;
}

/* ---- the layout ---- */

int gnn_layout_dup(const struct gnn_layout *src, struct gnn_layout *dst)
{
	size_t P = src->num_parts, T = src->schema->num_types;
	size_t bytes = sizeof(struct gnn_schema) + (P + 1 + P * T + 1) * sizeof(int64_t);
	char *block = malloc(bytes);
	struct gnn_schema *s = (struct gnn_schema *)(void *)block;
	int64_t *offsets = (int64_t *)(void *)(block + sizeof(*s)), *toff = offsets + P + 1;

	if (block == NULL)
		return GNN_ENOMEM;
	memcpy(s, src->schema, sizeof(*s));
	memcpy(offsets, src->offsets, (P + 1) * sizeof(int64_t));
	memcpy(toff, src->type_offsets, (P * T + 1) * sizeof(int64_t));
	*dst = *src;
	dst->schema = s;
	dst->offsets = offsets;
	dst->type_offsets = toff;
	return GNN_OK;
}

void gnn_layout_free(struct gnn_layout *l)
{
	free((void *)l->schema);  /* the block gnn_layout_dup allocated starts there */
	memset(l, 0, sizeof(*l));
}

int gnn_layout_check(const struct gnn_layout *l, char *why, size_t why_len)
{
	const struct gnn_schema *s = l->schema;
	int64_t count[GNN_MAX_TYPES] = { 0 };
	uint32_t T;
	int rc;

	if ((rc = gnn_schema_check(s, why, why_len)) != GNN_OK)
		return rc;
	if (l->num_parts == 0 || l->offsets[0] != 0 || l->offsets[l->num_parts] != l->num_nodes) {
		snprintf(why, why_len, "the partitions' ranges span [%lld, %lld), the graph has %lld nodes",
			 (long long)l->offsets[0], (long long)l->offsets[l->num_parts], (long long)l->num_nodes);
		return GNN_EFORMAT;
	}
	T = s->num_types;
	for (uint32_t p = 0; p < l->num_parts; p++) {
		const int64_t *to = l->type_offsets + (size_t)p * T;

		if (to[0] != l->offsets[p] || to[T] != l->offsets[p + 1]) {
			snprintf(why, why_len, "type ranges of partition %u span [%lld, %lld), the partition [%lld, %lld)", p,
				 (long long)to[0], (long long)to[T], (long long)l->offsets[p], (long long)l->offsets[p + 1]);
			return GNN_EFORMAT;
		}
		for (uint32_t t = 0; t < T; t++) {
			if (to[t + 1] < to[t]) {
				snprintf(why, why_len, "type %s's range in partition %u ends before it starts", s->types[t].name, p);
				return GNN_EFORMAT;
			}
			count[t] += to[t + 1] - to[t];
		}
	}
	for (uint32_t t = 0; t < T; t++)
		if (count[t] != s->types[t].num_nodes) {
			snprintf(why, why_len, "type %s has %lld nodes in the partitions' ranges, %lld in the schema",
				 s->types[t].name, (long long)count[t], (long long)s->types[t].num_nodes);
			return GNN_EFORMAT;
		}
	if (!gnn_feat_dtype_ok(l->feat_dtype)) {
		snprintf(why, why_len, "feature dtype %u, not f32 or f16", l->feat_dtype);
		return GNN_EFORMAT;
	}
	if (l->feat_dim != gnn_schema_max_feat_dim(s)) {
		snprintf(why, why_len, "feature width %u, the schema's widest type has %u", l->feat_dim,
			 gnn_schema_max_feat_dim(s));
		return GNN_EFORMAT;
	}
	return GNN_OK;
}

int32_t gnn_owner_of(const int64_t *offsets, uint32_t num_parts, int64_t gid)
{
	uint32_t lo = 0, hi = num_parts;

	if (num_parts == 0 || gid < offsets[0] || gid >= offsets[num_parts])
		return -1;
	while (hi - lo > 1) {  /* invariant: offsets[lo] <= gid < offsets[hi] */
		uint32_t mid = lo + (hi - lo) / 2;

		if (offsets[mid] <= gid)
			lo = mid;
		else
			hi = mid;
	}
	return (int32_t)lo;
}

int32_t gnn_layout_owner(const struct gnn_layout *l, int64_t gid)
{
	return gid < 0 || gid >= l->num_nodes ? -1 : gnn_owner_of(l->offsets, l->num_parts, gid);
}

int32_t gnn_layout_locate(const struct gnn_layout *l, int64_t gid, uint32_t *part, int64_t *row)
{
	uint32_t T = l->schema->num_types;
	int32_t p = gnn_layout_owner(l, gid), t;
	const int64_t *to;

	if (p < 0)
		return -1;
	/* p's type ranges are ranges like the partitions' (empty ones skipped) */
	to = l->type_offsets + (size_t)p * T;
	t = gnn_owner_of(to, T, gid);
	if (part != NULL)
		*part = (uint32_t)p;
	if (row != NULL)
		*row = gid - to[t];
	return t;
}

int32_t gnn_layout_type(const struct gnn_layout *l, int64_t gid)
{
	return l->schema->num_types == 1 ? (gid >= 0 && gid < l->num_nodes ? 0 : -1)
					 : gnn_layout_locate(l, gid, NULL, NULL);
}

