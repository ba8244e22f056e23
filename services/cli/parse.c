/* parse.c - gnn-cli's argument parsing (node lists, fanouts, split names)
 * and the conversions of decoded replies into JSON. No network here. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "cli.h"
#include "err.h"
#include "linkpred.h"
#include "fanouts.h"
#include "part.h"

void cli_error(const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gnn-cli: error: %s\n", text);
}

/* Reads all of f into a NUL-terminated malloc'd string. */
static int slurp(FILE *f, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *grown;

	if (buf == NULL)
		return GNN_ENOMEM;
	for (;;) {
		size_t got = fread(buf + len, 1, cap - len - 1, f);

		len += got;
		if (got == 0)
			break;
		if (cap - len - 1 == 0) {
			if ((grown = realloc(buf, cap * 2)) == NULL) {
				free(buf);
				return GNN_ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		free(buf);
		return GNN_EIO;
	}
	buf[len] = '\0';
	*out = buf;
	return GNN_OK;
}

#define BLANKS " \t\r\n"

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A list's text: *text itself, or for "@FILE" ("@-": stdin) the file's
 * contents, then in *owned (malloc'd, the caller's) and *text. */
static int list_text(const char **text, const char *what, char **owned)
{
	FILE *f;
	int rc;

	if ((*text)[0] != '@')
		return GNN_OK;
	if ((f = strcmp(*text, "@-") == 0 ? stdin : fopen(*text + 1, "r")) == NULL) {
		cli_error("%s %s: cannot open: %s", what, *text + 1, strerror(errno));
		return GNN_EIO;
	}
	rc = slurp(f, owned);
	if (f != stdin)
		fclose(f);
	if (rc != GNN_OK) {
		cli_error("%s %s: cannot read it: %s", what, *text, gnn_strerror(rc));
		return rc;
	}
	*text = *owned;
	return GNN_OK;
}

/* The IDs parsed so far. */
struct id_list {
	int64_t *v;
	size_t count, cap;
};

static int push_id(struct id_list *l, int64_t x)
{
	int64_t *grown;

	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;

		if ((grown = realloc(l->v, cap * sizeof(*l->v))) == NULL)
			return GNN_ENOMEM;
		l->v = grown;
		l->cap = cap;
	}
	l->v[l->count++] = x;
	return GNN_OK;
}

/* The ID at start, entry count of the list, into *x and its end into
 * *end. first: u of a pair u:v, which a colon must follow; else a
 * separator or the end must. GNN_EINVAL (printed) when it is not one. */
static int parse_id(const char *start, const char *what, bool pairs, bool first, size_t count, int64_t *x,
		    const char **end)
{
	char *e;
	long long v;

	errno = 0;
	v = strtoll(start, &e, 10);
	if (e == start || *start == '+' || *start == '-' || errno != 0 ||
	    (first ? *e != ':' : *e != '\0' && !is_sep(*e))) {
		size_t len = strcspn(start, ", \t\r\n");

		if (pairs)
			cli_error("%s: \"%.*s\" (pair %zu) is not a pair of node IDs u:v (integers >= 0)", what,
				  (int)(len > 40 ? 40 : len), start, count / 2 + 1);
		else
			cli_error("%s: \"%.*s\" (entry %zu) is not a node ID: IDs are integers >= 0", what,
				  (int)(len > 40 ? 40 : len), start, count + 1);
		return GNN_EINVAL;
	}
	*x = v;
	*end = e;
	return GNN_OK;
}

/* After ID x ending at *p: blanks, then at most one comma that another ID
 * follows; *p moves past them. */
static int skip_separator(const char **p, const char *what, int64_t x)
{
	*p += strspn(*p, BLANKS);
	if (**p != ',')
		return GNN_OK;
	(*p)++;
	*p += strspn(*p, BLANKS);
	if (**p == ',' || **p == '\0') {
		cli_error("%s: empty entry after ID %lld", what, (long long)x);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

/* The entries of text into l, at most max (IDs, or pairs). */
static int parse_entries(const char *text, const char *what, bool pairs, size_t max, struct id_list *l)
{
	for (const char *p = text;;) {
		bool first = pairs && l->count % 2 == 0;  /* u of a pair u:v: a colon follows */
		const char *end;
		int64_t x;
		int rc;

		p += strspn(p, BLANKS);
		if (*p == '\0')
			return GNN_OK;
		if ((rc = parse_id(p, what, pairs, first, l->count, &x, &end)) != GNN_OK)
			return rc;
		if (l->count == max * (pairs ? 2 : 1)) {
			cli_error("%s: more than %zu %s; the protocol takes at most that many per request", what, max,
				  pairs ? "pairs" : "node IDs");
			return GNN_EINVAL;
		}
		if ((rc = push_id(l, x)) != GNN_OK)
			return rc;
		p = end;
		if (first) {  /* v must follow the colon at once */
			if (*++p < '0' || *p > '9') {
				cli_error("%s: pair %zu (%lld:...) has no node ID after the colon", what, l->count / 2 + 1,
					  (long long)x);
				return GNN_EINVAL;
			}
		} else if ((rc = skip_separator(&p, what, x)) != GNN_OK) {
			return rc;
		}
	}
}

/* A list of node IDs (pairs: of pairs u:v, ids[2i] = u, ids[2i+1] = v) of
 * at most max entries (IDs, or pairs), as cli_parse_ids and cli_parse_pairs. */
static int parse_list(const char *text, const char *what, bool pairs, size_t max, int64_t **ids, uint32_t *n)
{
	struct id_list l = { 0 };
	char *owned = NULL;
	int rc;

	if (text == NULL) {
		cli_error("%s is required (%s)", what, pairs ? "a list of node pairs such as 1:2,3:4" :
			  "a list of node IDs such as 1,2,3");
		return GNN_EINVAL;
	}
	if ((rc = list_text(&text, what, &owned)) != GNN_OK)
		return rc;
	if ((rc = parse_entries(text, what, pairs, max, &l)) == GNN_OK && l.count == 0) {
		cli_error("%s: no %s given", what, pairs ? "pairs" : "node IDs");
		rc = GNN_EINVAL;
	}
	if (rc == GNN_OK) {
		*ids = l.v;
		*n = (uint32_t)(pairs ? l.count / 2 : l.count);
		l.v = NULL;
	}
	free(l.v);
	free(owned);
	return rc;
}

int cli_parse_ids(const char *text, const char *what, int64_t **ids, uint32_t *n)
{
	return parse_list(text, what, false, GNN_PROTO_MAX_IDS, ids, n);
}

int cli_parse_pairs(const char *text, const char *what, int64_t **ids, uint32_t *n)
{
	return parse_list(text, what, true, GNN_PROTO_MAX_LINK_PAIRS, ids, n);
}

/* A wanted name and where it stands in the list given. */
struct wanted {
	const char *name;
	uint32_t at;
};

static int wanted_cmp(const void *a, const void *b)
{
	return strcmp(((const struct wanted *)a)->name, ((const struct wanted *)b)->name);
}

/* The names of text: a line each after "@", else comma-separated; cut
 * in place in buf (owned, text's copy) into w. */
static int split_name_list(char *buf, bool lines, const char *what, struct wanted **w, uint32_t *n)
{
	size_t cap = 0, count = 0;

	*w = NULL;
	for (char *p = buf, *next; p != NULL; p = next) {
		char *end = strchr(p, lines ? '\n' : ',');

		next = end != NULL ? end + 1 : NULL;
		if (end != NULL)
			*end = '\0';
		if (lines && *p != '\0' && p[strlen(p) - 1] == '\r')
			p[strlen(p) - 1] = '\0';
		if (*p == '\0' && lines)
			continue;
		if (*p == '\0') {
			cli_error("%s: an empty ID in the list", what);
			return GNN_EINVAL;
		}
		if (count == GNN_PROTO_MAX_IDS) {
			cli_error("%s: more than %d IDs; the protocol takes at most that many per request", what, GNN_PROTO_MAX_IDS);
			return GNN_EINVAL;
		}
		if (count == cap) {
			struct wanted *g = realloc(*w, (cap = cap ? cap * 2 : 64) * sizeof(**w));

			if (g == NULL)
				return GNN_ENOMEM;
			*w = g;
		}
		(*w)[count] = (struct wanted){ p, (uint32_t)count };
		count++;
	}
	if (count == 0) {
		cli_error("%s: no IDs given", what);
		return GNN_EINVAL;
	}
	*n = (uint32_t)count;
	return GNN_OK;
}

void cli_free_names(char **names, uint32_t n)
{
	for (uint32_t k = 0; names != NULL && k < n; k++)
		free(names[k]);
	free(names);
}

int cli_parse_names(const char *text, const char *what, const char *ids_file, int64_t **ids, char ***names,
		    uint32_t *n)
{
	struct wanted *w = NULL;
	char *buf = NULL, *line = NULL;
	size_t cap = 0;
	int64_t *out = NULL, i = 0;
	uint32_t count = 0, found = 0;
	bool lines = text != NULL && text[0] == '@';
	FILE *f = NULL;
	ssize_t len;
	int rc;

	if (text == NULL) {
		cli_error("%s is required (the IDs as in %s, comma-separated, or @FILE one a line)", what, ids_file);
		return GNN_EINVAL;
	}
	if ((rc = list_text(&text, what, &buf)) != GNN_OK)
		return rc;
	if (!lines && (buf = strdup(text)) == NULL)
		return GNN_ENOMEM;
	if ((rc = split_name_list(buf, lines, what, &w, &count)) != GNN_OK)
		goto out;
	qsort(w, count, sizeof(*w), wanted_cmp);
	if ((out = malloc(count * sizeof(*out))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < count; k++)
		out[k] = -1;
	if ((f = fopen(ids_file, "r")) == NULL) {
		cli_error("--ids-file %s: cannot open: %s", ids_file, strerror(errno));
		rc = GNN_EIO;
		goto out;
	}
	for (; found < count && (len = getline(&line, &cap, f)) > 0; i++) {
		struct wanted key = { line, 0 }, *hit;

		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		/* the first of equal names; each of them gets this line */
		for (hit = bsearch(&key, w, count, sizeof(*w), wanted_cmp); hit != NULL && hit > w && strcmp(hit[-1].name, line) == 0;)
			hit--;
		for (; hit != NULL && hit < w + count && strcmp(hit->name, line) == 0; hit++)
			if (out[hit->at] < 0) {
				out[hit->at] = i;
				found++;
			}
	}
	for (uint32_t k = 0; k < count && found < count; k++)
		if (out[w[k].at] < 0) {
			cli_error("%s: \"%s\" is not in %s", what, w[k].name, ids_file);
			rc = GNN_EINVAL;
			goto out;
		}
	if ((*names = calloc(count, sizeof(**names))) == NULL) {
		rc = GNN_ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < count; k++)
		if (((*names)[w[k].at] = strdup(w[k].name)) == NULL)
			rc = GNN_ENOMEM;
	if (rc != GNN_OK) {
		cli_free_names(*names, count);
		*names = NULL;
		goto out;
	}
	*ids = out;
	*n = count;
	out = NULL;
out:
	if (f != NULL)
		fclose(f);
	free(line);
	free(out);
	free(w);
	free(buf);
	return rc;
}

int cli_parse_fanouts(const char *what, const char *text, bool one_layer, const struct gnn_schema *s,
		      int32_t out[GNN_PROTO_MAX_LAYERS * GNN_PROTO_MAX_RELS], uint32_t *n)
{
	char why[256];

	if (text == NULL || *text == '\0') {
		cli_error("%s is required: %s, e.g. %s", what, one_layer ? "one fanout" : "one per layer, input layer first",
			  one_layer ? "10" : "10,5");
		return GNN_EINVAL;
	}
	if (gnn_fanouts_for(text, s, out, n, why, sizeof(why)) != GNN_OK) {
		cli_error("%s \"%s\": %s", what, text, why);
		return GNN_EINVAL;
	}
	if (one_layer && *n != 1) {
		cli_error("%s \"%s\": one fanout (per relation), not %u layers", what, text, *n);
		return GNN_EINVAL;
	}
	return GNN_OK;
}

static const char *const split_names[] = {
	[GNN_SPLIT_NONE] = "none", [GNN_SPLIT_TRAIN] = "train", [GNN_SPLIT_VALID] = "valid",
	[GNN_SPLIT_TEST] = "test",
};

int cli_split_code(const char *name, uint8_t *out)
{
	for (uint8_t i = 0; i < 4; i++) {
		if (name != NULL && strcmp(name, split_names[i]) == 0) {
			*out = i;
			return GNN_OK;
		}
	}
	return GNN_EINVAL;
}

const char *cli_split_name(uint8_t code)
{
	return code < 4 ? split_names[code] : "unknown";
}

/* ---- replies as JSON ---- */

json_t *cli_id_array(const int64_t *ids, uint64_t n)
{
	json_t *a = json_array();

	for (uint64_t i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, json_integer(ids[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *hex64(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)v);
	return json_string(buf);
}

/* Adds add's keys to doc and drops add; -1 when add is NULL or a key fails. */
static int merge(json_t *doc, json_t *add)
{
	int rc = add != NULL ? json_object_update(doc, add) : -1;

	json_decref(add);
	return rc;
}

json_t *cli_info_json(const char *key, const char *url, const struct gnn_info *in)
{
	const struct gnn_layout *l = &in->layout;
	json_t *doc = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", key, url,
				"part_id", (json_int_t)in->part_id, "num_parts", (json_int_t)l->num_parts,
				"num_nodes", (json_int_t)l->num_nodes, "num_edges", (json_int_t)l->num_edges,
				"feat_dim", (json_int_t)l->feat_dim, "num_classes", (json_int_t)l->num_classes,
				"part_edges", (json_int_t)in->part_edges, "graph_id", hex64(l->graph_id),
				"offsets", cli_id_array(l->offsets, (uint64_t)l->num_parts + 1));

	if (doc != NULL &&
	    merge(doc, json_pack("{s:s, s:o, s:o}", "feature_dtype", gnn_dtype_name(l->feat_dtype), "schema",
				 gnn_schema_json(l->schema), "type_offsets",
				 cli_id_array(l->type_offsets, (uint64_t)l->num_parts * l->schema->num_types + 1))) != 0) {
		json_decref(doc);
		return NULL;
	}
	/* The decoder allows part_id == num_parts (a sampler), which owns no range. */
	if (doc != NULL && in->part_id < l->num_parts &&
	    (json_object_set_new(doc, "node_start", json_integer(l->offsets[in->part_id])) != 0 ||
	     json_object_set_new(doc, "node_end", json_integer(l->offsets[in->part_id + 1])) != 0)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* The fanouts of one layer: a number when one relation, else one per
 * relation. */
static json_t *fanouts_json(const int32_t *v, uint32_t R)
{
	json_t *a;

	if (R == 1)
		return json_integer(v[0]);
	a = json_array();
	for (uint32_t r = 0; a != NULL && r < R; r++)
		json_array_append_new(a, json_integer(v[r]));
	return a;
}

static json_t *rel_names(const struct gnn_schema *s)
{
	json_t *a = json_array();
	char label[3 * GNN_NAME_MAX];

	for (uint32_t r = 0; a != NULL && r < s->num_rels; r++) {
		gnn_schema_rel_label(s, r, label, sizeof(label));
		json_array_append_new(a, json_string(label));
	}
	return a;
}

json_t *cli_sample_json(uint64_t seed, const int32_t *fanouts, const int64_t *ids, const struct gnn_sample_resp *r,
			const struct gnn_schema *schema)
{
	uint32_t R = r->num_rels;
	json_t *lists = json_array(), *rels = R > 1 ? json_array() : NULL, *doc;
	uint64_t at = 0;

	for (uint32_t i = 0; lists != NULL && i < r->n; i++) {
		uint64_t cnt = 0;
		json_t *which = NULL;

		for (uint32_t q = 0; q < R; q++)
			cnt += r->counts[(size_t)i * R + q];
		if (rels != NULL) {  /* each neighbour's relation, in the list's order */
			which = json_array();
			for (uint32_t q = 0; which != NULL && q < R; q++)
				for (uint32_t k = 0; k < r->counts[(size_t)i * R + q]; k++)
					json_array_append_new(which, json_integer(q));
		}
		if (json_array_append_new(lists, cli_id_array(r->nbrs + at, cnt)) != 0 ||
		    (rels != NULL && json_array_append_new(rels, which) != 0)) {
			json_decref(lists);
			json_decref(rels);
			return NULL;
		}
		at += cnt;
	}
	doc = json_pack("{s:I, s:o, s:o, s:o}", "seed", (json_int_t)seed, "fanout", fanouts_json(fanouts, R), "nodes",
			cli_id_array(ids, r->n), "neighbours", lists);
	if (doc != NULL && rels != NULL)
		merge(doc, json_pack("{s:o, s:o}", "relations", rels, "relation_names", rel_names(schema)));
	else
		json_decref(rels);
	return doc;
}

/* One block: its dst and src IDs and its edges as [dst_local, src_local]
 * (and, with several relations, [dst_local, src_local, relation]). */
static json_t *block_json(uint32_t layer, const struct gnn_block *b)
{
	uint32_t R = b->num_rels;
	json_t *edges = json_array();

	for (uint64_t row = 0; edges != NULL && row < (uint64_t)b->num_dst * R; row++)
		for (int32_t e = b->indptr[row]; e < b->indptr[row + 1]; e++)
			if (json_array_append_new(edges, R == 1 ? json_pack("[i, i]", (int)row, (int)b->indices[e]) :
						  json_pack("[i, i, i]", (int)(row / R), (int)b->indices[e],
							    (int)(row % R))) != 0) {
				json_decref(edges);
				return NULL;
			}
	return json_pack("{s:i, s:I, s:I, s:I, s:o, s:o, s:o}", "layer", (int)layer, "num_dst",
			 (json_int_t)b->num_dst, "num_src", (json_int_t)b->num_src, "num_edges",
			 (json_int_t)b->num_edges, "dst", cli_id_array(b->src_ids, b->num_dst), "src",
			 cli_id_array(b->src_ids, b->num_src), "edges", edges);
}

/* One row per input node (blocks[0]'s sources), in source order; a node
 * of a type without features has an empty row. */
static json_t *features_json(const struct gnn_minibatch *mb)
{
	uint32_t at[GNN_PROTO_MAX_TYPES] = { 0 }, n = mb->blocks[0].num_src;
	json_t *rows = json_array();

	for (uint32_t i = 0; rows != NULL && i < n; i++) {
		uint32_t t = mb->src_types[i];

		json_array_append_new(rows, mb->feat[t] != NULL ? cli_feat_row(mb->feat[t], mb->feat_dtype, at[t], mb->feat_dims[t])
								: json_array());
		at[t]++;
	}
	return rows;
}

json_t *cli_feat_row(const void *rows, uint32_t dtype, size_t i, uint32_t dim)
{
	size_t elem = gnn_dtype_size(dtype);
	json_t *row = json_array();

	for (uint32_t k = 0; row != NULL && k < dim; k++) {
		float x;

		gnn_feat_to_f32((const char *)rows + (i * dim + k) * elem, dtype, 1, &x);
		json_array_append_new(row, json_real(x));
	}
	return row;
}

json_t *cli_minibatch_json(const struct gnn_minibatch_req *req, const struct gnn_minibatch *mb,
			   const struct gnn_schema *schema)
{
	json_t *doc = NULL, *blocks = json_array(), *fanouts = json_array();

	if (blocks == NULL || fanouts == NULL)
		goto out_fail;
	for (uint32_t l = 0; l < req->num_layers; l++)
		if (json_array_append_new(fanouts, fanouts_json(req->fanouts + (size_t)l * req->num_rels,
								req->num_rels)) != 0)
			goto out_fail;
	for (uint32_t l = 0; l < mb->num_layers; l++)
		if (json_array_append_new(blocks, block_json(l, &mb->blocks[l])) != 0)
			goto out_fail;
	doc = json_pack("{s:I, s:O, s:o, s:I, s:O}", "seed", (json_int_t)req->seed, "fanouts", fanouts,
			"seeds", cli_id_array(req->seeds, req->num_seeds), "num_layers", (json_int_t)mb->num_layers,
			"blocks", blocks);
	if (doc == NULL)
		goto out_fail;
	if (mb->num_rels > 1)
		json_object_set_new(doc, "relation_names", rel_names(schema));
	if (mb->num_types > 1) {
		json_t *types = json_array();

		for (uint32_t i = 0; types != NULL && i < mb->blocks[0].num_src; i++)
			json_array_append_new(types, json_string(schema->types[mb->src_types[i]].name));
		json_object_set_new(doc, "input_types", types);
	}
	if (mb->flags & GNN_MB_FEATURES) {
		json_object_set_new(doc, "feat_dim", json_integer(gnn_schema_max_feat_dim(schema)));
		json_object_set_new(doc, "features", features_json(mb));
	}
	if (mb->labels != NULL) {
		json_t *labels = json_array();

		for (uint32_t i = 0; labels != NULL && i < mb->num_seeds; i++)
			json_array_append_new(labels, json_integer(mb->labels[i]));
		json_object_set_new(doc, "labels", labels);
	}
	json_decref(fanouts);
	json_decref(blocks);
	return doc;

out_fail:
	json_decref(fanouts);
	json_decref(blocks);
	return NULL;
}

json_t *cli_predict_json(const int64_t *ids, const struct gnn_predict_resp *r, char *const *names)
{
	json_t *doc, *list = json_array();
	char crc[9];

	snprintf(crc, sizeof(crc), "%08" PRIx32, r->params_crc);
	for (uint32_t i = 0; list != NULL && i < r->n; i++) {
		json_t *top = json_array();

		for (uint32_t j = 0; top != NULL && j < r->k; j++)
			json_array_append_new(top, json_pack("{s:i, s:f}", "class", r->classes[(size_t)i * r->k + j], "prob",
							     (double)r->probs[(size_t)i * r->k + j]));
		json_t *p = json_pack("{s:I, s:I, s:i, s:o}", "node", (json_int_t)ids[i], "original_id",
				      (json_int_t)r->orig_ids[i], "class", r->pred[i], "top", top);

		if (p != NULL && names != NULL)
			json_object_set_new(p, "id", json_string(names[i]));
		json_array_append_new(list, p);
	}
	doc = json_pack("{s:s, s:i, s:o}", "params_crc", crc, "top_k", (int)r->k, "predictions", list);
	return doc;
}

/* {"kind", "dim", "hidden"} of r's decoder. */
static json_t *decoder_json(const struct gnn_link_resp *r)
{
	return json_pack("{s:s, s:i, s:i}", "kind", r->decoder == GNN_LINK_MLP ? "mlp" : "dot", "dim", (int)r->dim,
			 "hidden", (int)r->hidden);
}

json_t *cli_score_json(const int64_t *pairs, const struct gnn_link_resp *r)
{
	json_t *list = json_array();
	char crc[9];

	snprintf(crc, sizeof(crc), "%08" PRIx32, r->params_crc);
	for (uint32_t i = 0; list != NULL && i < r->n; i++)
		json_array_append_new(list, json_pack("{s:I, s:I, s:f, s:f}", "src", (json_int_t)pairs[2 * i], "dst",
						      (json_int_t)pairs[2 * i + 1], "score", (double)r->scores[i], "prob",
						      gnn_sigmoid(r->scores[i])));
	return json_pack("{s:s, s:o, s:o}", "params_crc", crc, "decoder", decoder_json(r), "scores", list);
}

json_t *cli_topk_json(int64_t node, uint32_t k, const struct gnn_link_resp *r)
{
	json_t *list = json_array();
	char crc[9];

	snprintf(crc, sizeof(crc), "%08" PRIx32, r->params_crc);
	for (uint32_t i = 0; list != NULL && i < r->n; i++)
		json_array_append_new(list, json_pack("{s:I, s:f, s:f}", "node", (json_int_t)r->nodes[i], "score",
						      (double)r->scores[i], "prob", gnn_sigmoid(r->scores[i])));
	return json_pack("{s:I, s:i, s:s, s:o, s:o}", "node", (json_int_t)node, "k", (int)k, "params_crc", crc,
			 "decoder", decoder_json(r), "top", list);
}
