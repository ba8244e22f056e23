/* gnn-partition: imports a graph (OGB raw layout or the built-in synthetic
 * generator), partitions it with METIS (or at random) and writes the
 * partition layout that the graph stores serve (docs/formats.md).
 *
 * Output is atomic: everything goes to OUT.tmp-<pid>-<random>, which is renamed to OUT
 * only when complete; any failure removes it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype.h"
#include "edgesplit.h"
#include "err.h"
#include "featnorm.h"
#include "graph.h"
#include "gconstruct.h"
#include "import.h"
#include "json.h"
#include "log.h"
#include "opt.h"
#include "partition.h"
#include "synth.h"
#include "sys.h"
#include "write.h"

#define VERSION "0.1.0"
#define EXIT_USAGE 2

struct config {
	const char *input, *config, *split, *synthetic, *out, *method, *feature_dtype, *feat_norm;
	const char *edge_split, *edge_split_from, *edge_relation;
	bool keep_directed, force, no_features;
	int64_t parts, seed, nodes, edges, feat_dim, classes, metis_max_edges, eval_negatives;
};

static struct config cfg;
static struct pt_edge_split_opts es_opts;  /* from the edge-split options, when one is given */
static enum pt_feat_norm feat_norm;        /* --feat-norm */

static const struct gnn_opt options[] = {
	{ "input", GNN_OPT_STR, &cfg.input, NULL, 0, 0, NULL,
	  "dataset folder in OGB's node-property raw layout (raw/, split/): CSV, homogeneous or heterogeneous "
	  "(ogbn-mag's: raw/num-node-dict.csv.gz, raw/relations/...), or binary (ogbn-papers100M's: raw/data.npz)" },
	{ "config", GNN_OPT_STR, &cfg.config, NULL, 0, 0, NULL,
	  "a graph description instead: GraphStorm-style gconstruct JSON over CSV tables and .npy features "
	  "(docs/formats.md, \"A graph description\")" },
	{ "split", GNN_OPT_STR, &cfg.split, NULL, 0, 0, NULL,
	  "split folder name under INPUT/split (default: the only one)" },
	{ "keep-directed", GNN_OPT_BOOL, &cfg.keep_directed, NULL, 0, 0, NULL,
	  "keep edges as given instead of adding every reverse edge (heterogeneous: no rev_ relations, "
	  "no symmetrising)" },
	{ "synthetic", GNN_OPT_STR, &cfg.synthetic, NULL, 0, 0, NULL,
	  "generate a synthetic graph from a preset instead: tiny|small|medium|products|mag-tiny|mag-small|mag" },
	{ "nodes", GNN_OPT_INT, &cfg.nodes, "0", 0, INT32_MAX, NULL,
	  "synthetic: node count (0: preset's); mag presets: all types together, every type, relation "
	  "and split scaled alike" },
	{ "edges", GNN_OPT_INT, &cfg.edges, "0", 0, 1e12, NULL,
	  "synthetic: undirected edge count (0: preset's); not for mag presets" },
	{ "feat-dim", GNN_OPT_INT, &cfg.feat_dim, "0", 0, 65536, NULL,
	  "synthetic: feature dimension (0: preset's); mag presets: the papers'" },
	{ "no-features", GNN_OPT_BOOL, &cfg.no_features, NULL, 0, 0, NULL,
	  "synthetic: nodes without features (mag presets: the papers too), for learnable embeddings "
	  "(gnn-trainer --embed-dim)" },
	{ "classes", GNN_OPT_INT, &cfg.classes, "0", 0, 65536, NULL,
	  "synthetic: class count; import: labels must lie below it (0: preset's / max label + 1)" },
	{ "feature-dtype", GNN_OPT_STR, &cfg.feature_dtype, "f32", 0, 0, "f32|f16",
	  "how feature rows are stored and sent: f16 halves their bytes (rounded to nearest; values beyond 65504 refused)" },
	{ "feat-norm", GNN_OPT_STR, &cfg.feat_norm, "none", 0, 0, PT_FEAT_NORM_CHOICES,
	  "feature normalisation per node type, stored with the rows: row (each row divided by its sum), standard "
	  "(columns to mean 0, sd 1), none; auto: row for a type whose values are all >= 0 (bag-of-words), else none" },
	{ "edge-split", GNN_OPT_LIST, &cfg.edge_split, NULL, 0, 0, NULL,
	  "link prediction: TRAIN,VALID,TEST ratios (e.g. 0.85,0.05,0.10) of --edge-relation's edges, seeded by "
	  "--seed; valid and test pairs (and their reverses) leave the graph for OUT/edge-split/ with sampled "
	  "negatives (docs/partitioning.md)" },
	{ "edge-split-from", GNN_OPT_STR, &cfg.edge_split_from, NULL, 0, 0, NULL,
	  "link prediction: your own split instead of --edge-split: DIR/valid.csv and DIR/test.csv (.gz too), "
	  "\"src,dst\" per-type node IDs, one edge of --edge-relation a line" },
	{ "edge-relation", GNN_OPT_STR, &cfg.edge_relation, NULL, 0, 0, NULL,
	  "the relation whose edges are split, NAME or src:NAME:dst (default: edge, a homogeneous graph's)" },
	{ "eval-negatives", GNN_OPT_INT, &cfg.eval_negatives, "100", 1, 100000, NULL,
	  "with an edge split: negative destinations stored per valid/test pair, for ranking metrics (MRR, Hits@K)" },
	{ "parts", GNN_OPT_INT, &cfg.parts, "2", 1, 65536, NULL, "number of partitions" },
	{ "method", GNN_OPT_STR, &cfg.method, "metis", 0, 0, "metis|random", "partitioning method" },
	{ "metis-max-edges", GNN_OPT_INT, &cfg.metis_max_edges, "33554432", 1000, INT32_MAX, NULL,
	  "above this many directed edges METIS partitions an importance-sampled subgraph, "
	  "bounding its memory (docs/partitioning.md)" },
	{ "seed", GNN_OPT_INT, &cfg.seed, "1", 0, INT32_MAX, NULL,
	  "seed of METIS, of --method random and of the synthetic generator" },
	{ "out", GNN_OPT_STR, &cfg.out, NULL, 0, 0, NULL, "output folder (must not exist unless --force)" },
	{ "force", GNN_OPT_BOOL, &cfg.force, NULL, 0, 0, NULL, "replace an existing output folder" },
	{ NULL },
};

static bool edge_split_on(void)
{
	return cfg.edge_split != NULL || cfg.edge_split_from != NULL;
}

static int check_config(void)
{
	if ((cfg.input != NULL) + (cfg.config != NULL) + (cfg.synthetic != NULL) != 1) {
		GNN_ERROR("bad_config", "reason=\"give exactly one of --input DIR, --config FILE or --synthetic PRESET\"");
		return GNN_EINVAL;
	}
	if (cfg.out == NULL) {
		GNN_ERROR("bad_config", "reason=\"--out DIR is required\"");
		return GNN_EINVAL;
	}
	if (cfg.synthetic == NULL && (cfg.nodes || cfg.edges || cfg.feat_dim || cfg.no_features)) {
		GNN_ERROR("bad_config", "reason=\"--nodes/--edges/--feat-dim/--no-features only apply to --synthetic\"");
		return GNN_EINVAL;
	}
	if ((cfg.synthetic != NULL && (cfg.split != NULL || cfg.keep_directed)) || (cfg.config != NULL && cfg.split != NULL)) {
		GNN_ERROR("bad_config", "reason=\"--split only applies to --input, --keep-directed to --input and --config\"");
		return GNN_EINVAL;
	}
	if (cfg.edge_split != NULL && cfg.edge_split_from != NULL) {
		GNN_ERROR("bad_config", "reason=\"give --edge-split RATIOS or --edge-split-from DIR, not both\"");
		return GNN_EINVAL;
	}
	if (pt_feat_norm_parse(cfg.feat_norm, &feat_norm) != GNN_OK) {  /* the table checked the choices */
		GNN_ERROR("bad_config", "option=--feat-norm value=%s reason=\"one of %s\"", cfg.feat_norm,
			  PT_FEAT_NORM_CHOICES);
		return GNN_EINVAL;
	}
	if (cfg.edge_relation != NULL && !edge_split_on()) {
		GNN_ERROR("bad_config", "reason=\"--edge-relation only applies with --edge-split or --edge-split-from\"");
		return GNN_EINVAL;
	}
	es_opts = (struct pt_edge_split_opts){ .from_csv = cfg.edge_split_from != NULL, .csv_dir = cfg.edge_split_from,
					    .relation = cfg.edge_relation, .eval_negatives = cfg.eval_negatives,
					    .seed = (uint64_t)cfg.seed };
	if (cfg.edge_split != NULL)
		return pt_edge_split_parse_ratios(cfg.edge_split, es_opts.ratios);
	return GNN_OK;
}

/* Removes OUT.tmp-* beside OUT: temporary outputs of runs that were
 * killed (or ended by the stop watchdog, which cannot clean up). */
static void remove_stale_tmp(void)
{
	char dir[PATH_MAX], prefix[PATH_MAX];
	const char *slash = strrchr(cfg.out, '/');

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == cfg.out ? 1 : (int)(slash - cfg.out), cfg.out);
	snprintf(prefix, sizeof(prefix), "%s.tmp-", slash == NULL ? cfg.out : slash + 1);
	gnn_remove_stale(dir, prefix, "", "the temporary output of a run that did not finish");
}

/* Refuses an existing output (unless --force) and creates the temporary
 * folder next to it, so an unwritable destination fails before any work. */
static int prepare_output(char *tmp, size_t len)
{
	struct stat st;
	char *parent, *slash;
	int rc;

	if (stat(cfg.out, &st) == 0 && !cfg.force) {
		GNN_ERROR("output_exists", "out=%s reason=\"already exists; use --force to replace it\"", cfg.out);
		return GNN_EEXIST;
	}
	remove_stale_tmp();
	/* The pid alone repeats across containers (every first process is 1)
	 * sharing a volume: mkdtemp makes the name unique. */
	if ((size_t)snprintf(tmp, len, "%s.tmp-%d-XXXXXX", cfg.out, (int)getpid()) >= len)
		return GNN_ERANGE;
	parent = strdup(cfg.out);
	if (parent == NULL)
		return GNN_ENOMEM;
	slash = strrchr(parent, '/');
	rc = GNN_OK;
	if (slash != NULL && slash != parent) {
		*slash = '\0';
		rc = gnn_mkdir_p(parent);
	}
	free(parent);
	if (rc == GNN_OK && (mkdtemp(tmp) == NULL || chmod(tmp, 0755) != 0))
		rc = GNN_EIO;
	if (rc != GNN_OK)
		GNN_ERROR("output_unwritable", "out=%s tmp=%s error=\"%s\"", cfg.out, tmp, strerror(errno));
	return rc;
}

/* The synthetic parameters: the preset's, with --nodes/--edges/--feat-dim/
 * --classes overriding them. A mag preset has no single edge count:
 * --nodes scales every type's nodes, every relation's edges and the split
 * by --nodes over the preset's total (rounding down), --feat-dim sets the
 * papers' width, and --edges is refused. */
static int synth_config(struct pt_synth_params *p)
{
	int rc = pt_synth_preset(cfg.synthetic, (uint64_t)cfg.seed, p);
	int64_t total;
	double scale;

	if (rc != GNN_OK)
		return rc;
	if (p->kind == PT_SYNTH_MAG && cfg.edges) {
		GNN_ERROR("bad_config",
			  "preset=%s reason=\"--edges does not apply to a heterogeneous preset: --nodes scales every type's nodes and every relation's edges together\"",
			  cfg.synthetic);
		return GNN_EINVAL;
	}
	if (cfg.nodes || cfg.edges || cfg.feat_dim || cfg.classes) {
		/* Custom sizes keep the preset's split fractions and density. */
		total = p->nodes;
		for (int t = 0; p->kind == PT_SYNTH_MAG && t < PT_SYNTH_MAG_TYPES; t++)
			total += p->type_nodes[t];
		scale = cfg.nodes ? (double)cfg.nodes / (double)total : 1.0;
		p->preset = "custom";
		if (cfg.nodes) {
			p->num_train = (int64_t)((double)p->num_train * scale);
			p->num_valid = (int64_t)((double)p->num_valid * scale);
			p->num_test = (int64_t)((double)p->num_test * scale);
		}
		if (cfg.nodes && p->kind == PT_SYNTH_MAG) {
			for (int t = 0; t < PT_SYNTH_MAG_TYPES; t++)
				p->type_nodes[t] = (int64_t)((double)p->type_nodes[t] * scale);
			for (int r = 0; r < PT_SYNTH_MAG_FWD; r++)
				p->rel_edges[r] = (int64_t)((double)p->rel_edges[r] * scale);
		} else if (cfg.nodes) {
			p->edges = (int64_t)((double)p->edges * scale);
			p->nodes = cfg.nodes;
		}
		if (cfg.edges)
			p->edges = cfg.edges;
		if (cfg.feat_dim)
			p->feat_dim = (int32_t)cfg.feat_dim;
		if (cfg.classes)
			p->classes = (int32_t)cfg.classes;
	}
	if (cfg.no_features)
		p->feat_dim = 0;
	return pt_synth_validate(p);
}

/* Loads the graph (sp: the checked synthetic parameters, when --synthetic)
 * and records where it came from in meta["source"]. */
static int load_graph(const struct pt_synth_params *sp, struct pt_graph *g, json_t *meta, const char *tmp)
{
	int rc;

	if (cfg.config != NULL) {
		struct pt_import_opts io = { .keep_directed = cfg.keep_directed, .num_classes = cfg.classes, .scratch = tmp };

		rc = pt_import_gconstruct(&io, cfg.config, (uint64_t)cfg.seed, g);
		json_object_set_new(meta, "source", json_pack("{s:s, s:s, s:s}", "kind", "gconstruct", "path", cfg.config,
							      "node_ids", "node-ids"));
		return rc;
	}
	if (cfg.input != NULL) {
		struct pt_import_opts io = { .dir = cfg.input, .split = cfg.split, .keep_directed = cfg.keep_directed,
					     .num_classes = cfg.classes, .scratch = tmp };

		char split[256] = "";

		rc = pt_import_ogb(&io, g, split, sizeof(split));
		json_object_set_new(meta, "source", json_pack("{s:s, s:s, s:s}", "kind", "ogb", "path",
							      cfg.input, "split", split));
		return rc;
	}
	rc = pt_synth_generate(sp, g);
	if (sp->kind == PT_SYNTH_MAG) {
		json_t *nodes = json_object(), *edges = json_object();

		/* The generated schema names the types and relations. */
		for (uint32_t t = 0; rc == GNN_OK && t < PT_SYNTH_MAG_TYPES; t++)
			json_object_set_new(nodes, g->schema.types[t].name, json_integer(sp->type_nodes[t]));
		for (uint32_t r = 0; rc == GNN_OK && r < PT_SYNTH_MAG_FWD; r++)
			json_object_set_new(edges, g->schema.rels[r].name, json_integer(sp->rel_edges[r]));
		json_object_set_new(meta, "source",
				    json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:I}", "kind", "synthetic", "model",
					      "mag", "preset", sp->preset, "nodes", nodes, "edges", edges, "feat_dim",
					      sp->feat_dim, "classes", sp->classes, "seed", (json_int_t)sp->seed));
		return rc;
	}
	json_object_set_new(meta, "source",
			    json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:I}", "kind", "synthetic", "preset",
				      sp->preset, "nodes", (json_int_t)sp->nodes, "undirected_edges",
				      (json_int_t)sp->edges, "feat_dim", sp->feat_dim, "classes", sp->classes,
				      "seed", (json_int_t)sp->seed));
	return rc;
}

static void count_split(const struct pt_graph *g, int64_t counts[4])
{
	memset(counts, 0, 4 * sizeof(counts[0]));
	for (int64_t v = 0; v < g->num_nodes; v++)
		counts[g->split[v] & 3]++;
}

static json_t *meta_new(void)
{
	return json_pack("{s:s, s:i, s:s}", "format", GNN_PART_FORMAT, "format_version", GNN_PART_FORMAT_VERSION,
			 "created_by", "gnn-partition " VERSION);
}

static void meta_graph(json_t *meta, const struct pt_graph *g, const struct pt_partition *pt)
{
	json_t *offsets = json_array();
	int64_t counts[4];

	count_split(g, counts);
	for (int32_t p = 0; p <= pt->num_parts; p++)
		json_array_append_new(offsets, json_integer(pt->offsets[p]));
	json_t *fields = json_pack(
		"{s:I, s:I, s:b, s:i, s:i, s:I, s:I, s:I, s:i, s:s, s:I, s:I, s:f, s:I, s:I, s:o}",
		"num_nodes", (json_int_t)g->num_nodes, "num_edges", (json_int_t)g->num_edges,
		"symmetric", g->symmetric, "feat_dim", g->feat_dim, "num_classes", g->num_classes,
		"num_train", (json_int_t)counts[GNN_SPLIT_TRAIN], "num_valid",
		(json_int_t)counts[GNN_SPLIT_VALID], "num_test", (json_int_t)counts[GNN_SPLIT_TEST],
		"num_parts", pt->num_parts, "method", cfg.method, "seed", (json_int_t)cfg.seed,
		"edge_cut", (json_int_t)pt->edge_cut, "edge_cut_ratio",
		g->num_edges ? (double)pt->edge_cut / (double)g->num_edges : 0.0, "train_moves",
		(json_int_t)pt->train_moves, "metis_input_edges", (json_int_t)pt->metis_edges,
		"node_offsets", offsets);

	json_object_update(meta, fields);
	json_decref(fields);
	json_object_set_new(meta, "feature_dtype", json_string(cfg.feature_dtype));
	fields = gnn_schema_json(&g->schema);  /* node_types, relations, label_type (format 2) */
	json_object_update(meta, fields);
	json_decref(fields);
	pt_feat_norm_meta(g, feat_norm, meta);
}

/* Replaces cfg.out by tmp: a plain rename, or with --force an atomic
 * exchange with the old folder, which is then removed. */
static int commit_output(const char *tmp)
{
	struct stat st;

	if (gnn_fsync_dir(tmp) != GNN_OK)
		return GNN_EIO;
	if (stat(cfg.out, &st) == 0) {
		if (!cfg.force) {
			GNN_ERROR("output_exists", "out=%s reason=\"appeared while partitioning\"", cfg.out);
			return GNN_EEXIST;
		}
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, cfg.out, RENAME_EXCHANGE) != 0) {
			GNN_ERROR("rename_failed", "from=%s to=%s error=\"%s\"", tmp, cfg.out, strerror(errno));
			return GNN_EIO;
		}
		return gnn_rm_rf(tmp);  /* now holds the old output */
	}
	if (rename(tmp, cfg.out) != 0) {
		GNN_ERROR("rename_failed", "from=%s to=%s error=\"%s\"", tmp, cfg.out, strerror(errno));
		return GNN_EIO;
	}
	return GNN_OK;
}

/* The schema, then one line per partition (with a column per node type
 * when there are several), then the edge split's counts if any. */
static void print_summary(const json_t *meta, const struct pt_graph *g)
{
	const struct gnn_schema *s = &g->schema;
	json_t *parts = json_object_get(meta, "parts"), *p, *es;
	char label[3 * GNN_NAME_MAX];
	size_t i;

	for (uint32_t t = 0; t < s->num_types; t++)
		printf("type %s nodes=%lld feat_dim=%u%s\n", s->types[t].name, (long long)s->types[t].num_nodes,
		       s->types[t].feat_dim, t == s->label_type ? " labelled" : "");
	for (uint32_t r = 0; r < s->num_rels; r++) {
		gnn_schema_rel_label(s, r, label, sizeof(label));
		printf("relation %s edges=%lld\n", label, (long long)s->rels[r].num_edges);
	}
	printf("%-6s %12s %14s %10s %10s %10s %10s", "part", "nodes", "edges", "remote%", "train", "valid", "test");
	for (uint32_t t = 0; s->num_types > 1 && t < s->num_types; t++)
		printf(" %10.10s", s->types[t].name);
	printf("\n");
	json_array_foreach(parts, i, p) {
		double e = (double)json_integer_value(json_object_get(p, "num_edges"));
		double r = (double)json_integer_value(json_object_get(p, "num_remote_edges"));

		printf("%-6zu %12lld %14lld %9.1f%% %10lld %10lld %10lld", i,
		       (long long)json_integer_value(json_object_get(p, "num_nodes")), (long long)e,
		       e > 0 ? 100.0 * r / e : 0.0,
		       (long long)json_integer_value(json_object_get(p, "num_train")),
		       (long long)json_integer_value(json_object_get(p, "num_valid")),
		       (long long)json_integer_value(json_object_get(p, "num_test")));
		for (uint32_t t = 0; s->num_types > 1 && t < s->num_types; t++)
			printf(" %10lld", (long long)json_integer_value(
						  json_object_get(json_object_get(p, "type_nodes"), s->types[t].name)));
		printf("\n");
	}
	if ((es = json_object_get(meta, "edge_split")) != NULL)
		printf("edge_split relation=%s pairs=%lld train=%lld valid=%lld test=%lld removed_edges=%lld\n",
		       json_string_value(json_object_get(es, "relation")),
		       (long long)json_integer_value(json_object_get(es, "num_pairs")),
		       (long long)json_integer_value(json_object_get(es, "num_train")),
		       (long long)json_integer_value(json_object_get(es, "num_valid")),
		       (long long)json_integer_value(json_object_get(es, "num_test")),
		       (long long)json_integer_value(json_object_get(es, "removed_edges")));
	fflush(stdout);
}

/* Bytes of what a reader maps: the CSR with int64 offsets (one per node
 * and relation) and IDs, plus every type's float features. */
static uint64_t csr_plus_features_bytes(const struct pt_graph *g)
{
	uint64_t bytes = 8u * ((uint64_t)g->num_nodes * g->schema.num_rels + 1) + 8u * (uint64_t)g->num_edges;

	for (uint32_t t = 0; t < g->schema.num_types; t++)
		bytes += 4u * (uint64_t)g->schema.types[t].num_nodes * g->schema.types[t].feat_dim;
	return bytes;
}

/* One run: what its steps hand each other, all of which fail() and
 * run_free() release. */
struct run {
	struct pt_synth_params sp;  /* --synthetic: the checked parameters */
	struct pt_graph g;
	struct pt_edge_split es;
	struct pt_partition pt;
	json_t *meta;
	char tmp[4096];             /* the temporary output folder (prepare_output) */
	double t0, t_load, t_part, t_write;
	uint64_t ref_bytes;         /* csr_plus_features_bytes, for memory_ratio */
};

/* Imports or generates the graph, normalises its features, then takes
 * the edge split out of it. */
static int load(struct run *r)
{
	int rc;

	if ((r->meta = meta_new()) == NULL)
		return GNN_ENOMEM;
	if ((rc = load_graph(&r->sp, &r->g, r->meta, r->tmp)) != GNN_OK || (rc = pt_feat_norm_apply(&r->g, feat_norm)) != GNN_OK)
		return rc;
	/* Held-out edges leave the graph before METIS sees it: the partitions
	 * (and their edge cut) are those of the graph the model reads. */
	if (edge_split_on() && (rc = pt_edge_split_apply(&r->g, &es_opts, &r->es)) != GNN_OK)
		return rc;
	r->t_load = gnn_now() - r->t0;
	return GNN_OK;
}

/* Assigns the nodes to --parts partitions and records them in meta. */
static int partition(struct run *r)
{
	struct pt_partition_opts o = { .parts = (int32_t)cfg.parts, .method = cfg.method,
				       .seed = (uint64_t)cfg.seed, .metis_max_edges = cfg.metis_max_edges };
	int rc;

	if (cfg.parts > r->g.num_nodes) {
		GNN_ERROR("bad_config", "parts=%lld nodes=%lld reason=\"more partitions than nodes\"",
			  (long long)cfg.parts, (long long)r->g.num_nodes);
		return GNN_EINVAL;
	}
	if (gnn_stop_requested())
		return GNN_ECLOSED;
	if ((rc = pt_partition_compute(&r->g, &o, &r->pt)) != GNN_OK)
		return rc;
	r->t_part = gnn_now() - r->t0 - r->t_load;
	meta_graph(r->meta, &r->g, &r->pt);
	return GNN_OK;
}

/* meta["memory"] and meta["timing_seconds"]: the run's cost, measured last. */
static void meta_cost(struct run *r)
{
	r->ref_bytes = csr_plus_features_bytes(&r->g);
	json_object_set_new(r->meta, "memory",
			    json_pack("{s:I, s:I, s:f}", "peak_rss_bytes", (json_int_t)gnn_peak_rss_bytes(),
				      "csr_plus_features_bytes", (json_int_t)r->ref_bytes, "peak_ratio",
				      (double)gnn_peak_rss_bytes() / (double)r->ref_bytes));
	json_object_set_new(r->meta, "timing_seconds",
			    json_pack("{s:f, s:f, s:f, s:f}", "load", r->t_load, "partition", r->t_part, "write",
				      r->t_write, "total", gnn_now() - r->t0));
}

/* The partitions and the edge split into the temporary folder, meta.json
 * last, then the folder becomes OUT. */
static int write_output(struct run *r)
{
	char path[4200];
	int rc;

	if (gnn_stop_requested())
		return GNN_ECLOSED;
	if ((rc = pt_write_partitions(&r->g, &r->pt, gnn_dtype_parse(cfg.feature_dtype), r->tmp, r->meta)) != GNN_OK)
		return rc;
	if (edge_split_on() && (rc = pt_edge_split_write(&r->es, &es_opts, &r->g, &r->pt, r->tmp, r->meta)) != GNN_OK)
		return rc;
	r->t_write = gnn_now() - r->t0 - r->t_load - r->t_part;
	meta_cost(r);
	snprintf(path, sizeof(path), "%s/meta.json", r->tmp);
	if (gnn_stop_requested())
		return GNN_ECLOSED;
	if ((rc = gnn_json_save_atomic(path, r->meta)) != GNN_OK)
		return rc;
	return commit_output(r->tmp);
}

/* The done line and the summary on stdout. */
static void report(const struct run *r)
{
	const struct pt_graph *g = &r->g;
	char types[1024], rels[2048];

	pt_graph_names(&g->schema, false, types, sizeof(types));
	pt_graph_names(&g->schema, true, rels, sizeof(rels));
	GNN_INFO("done", "out=%s nodes=%lld edges=%lld types=%s relations=%s parts=%lld method=%s feature_dtype=%s edge_cut_ratio=%.4f balance_train=%.3f peak_rss_mb=%.1f memory_ratio=%.2f seconds=%.2f",
		 cfg.out, (long long)g->num_nodes, (long long)g->num_edges, types, rels, (long long)cfg.parts,
		 cfg.method, cfg.feature_dtype, json_real_value(json_object_get(r->meta, "edge_cut_ratio")),
		 json_real_value(json_object_get(json_object_get(r->meta, "balance"), "train")),
		 (double)gnn_peak_rss_bytes() / 1048576.0, (double)gnn_peak_rss_bytes() / (double)r->ref_bytes,
		 gnn_now() - r->t0);
	print_summary(r->meta, g);
}

static void run_free(struct run *r)
{
	json_decref(r->meta);
	pt_edge_split_free(&r->es);
	pt_partition_free(&r->pt);
	pt_graph_free(&r->g);
}

/* A failed run leaves nothing behind: the temporary folder goes. Exit 1. */
static int fail(struct run *r, int rc)
{
	if (gnn_stop_requested())
		rc = GNN_ECLOSED;
	GNN_ERROR("failed", "reason=\"%s\" out=%s note=\"nothing was written\"", gnn_strerror(rc), cfg.out);
	gnn_rm_rf(r->tmp);
	run_free(r);
	return 1;
}

/* The options over the table's defaults, checked (sp: the synthetic
 * parameters, with --synthetic), then the config line. GNN_EHELP after
 * --help; any other error is a usage error, logged. */
static int configure(int argc, char **argv, struct pt_synth_params *sp)
{
	int rc = gnn_opt_parse("gnn-partition", "Partition a graph for gnn-dist's graph stores.", options, argc, argv);

	if (rc != GNN_OK)
		return rc;
	if ((rc = check_config()) != GNN_OK || (cfg.synthetic != NULL && (rc = synth_config(sp)) != GNN_OK))
		return rc;
	gnn_opt_log(options);
	return GNN_OK;
}

int main(int argc, char **argv)
{
	struct run run = { .t0 = gnn_now() };
	int rc;

	gnn_log_init("gnn-partition");
	if ((rc = configure(argc, argv, &run.sp)) != GNN_OK)
		return rc == GNN_EHELP ? 0 : EXIT_USAGE;
	gnn_signals_install();
	gnn_stop_watchdog(GNN_STOP_GRACE_S);
	if (prepare_output(run.tmp, sizeof(run.tmp)) != GNN_OK)
		return 1;

	if ((rc = load(&run)) != GNN_OK || (rc = partition(&run)) != GNN_OK || (rc = write_output(&run)) != GNN_OK)
		return fail(&run, rc);
	report(&run);
	run_free(&run);
	return 0;
}
