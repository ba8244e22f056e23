/* gnn-cli: talks to gnn-dist's graph stores and samplers from a shell, as
 * redis-cli does for Redis (docs/cli.md):
 *
 *   gnn-cli COMMAND [options]
 *
 * Each command prints one JSON document on stdout and exits 0; a failure
 * prints "gnn-cli: error: ..." on stderr and exits 1 (2 for bad usage).
 * Options come from one table per command (the command's own rows plus
 * the common ones), so --help, GNN_* variables and range checks work as
 * in every gnn-dist program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "err.h"
#include "log.h"
#include "opt.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define MAX_ROWS 16

static struct cli_config cfg;

#define STORE_ROW { "store", GNN_OPT_STR, &cfg.store, NULL, 0, 0, NULL, \
		    "graph store's nng URL, e.g. tcp://graphstore-0.graphstore:7000" }
#define SAMPLER_ROW { "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL, \
		      "sampler's nng URL, e.g. tcp://sampler:7100" }
/* info and nodes ask either one store or a sampler (the whole graph). */
#define STORE_OR_SAMPLER_ROWS \
	{ "store", GNN_OPT_STR, &cfg.store, NULL, 0, 0, NULL, \
	  "graph store's nng URL, e.g. tcp://graphstore-0.graphstore:7000 (its partition)" }, \
	{ "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL, \
	  "instead of --store: a sampler's nng URL, e.g. tcp://sampler:7100 (the whole graph)" }
#define NODES_ROW { "nodes", GNN_OPT_LIST, &cfg.nodes, NULL, 0, 0, NULL, \
		    "node IDs (global): 1,2,3, or @FILE / @- to read them from a file / stdin" }
#define SEED_ROW { "seed", GNN_OPT_INT, &cfg.seed, "0", 0, (double)INT64_MAX, NULL, \
		   "sampling seed: the same seed gives the same sample" }

static const struct gnn_opt info_rows[] = { STORE_OR_SAMPLER_ROWS, { NULL } };
static const struct gnn_opt sample_rows[] = {
	STORE_ROW, NODES_ROW,
	{ "fanout", GNN_OPT_LIST, &cfg.fanout, "10", 0, 0, NULL,
	  "neighbours per node under each relation, uniformly without replacement; -1 = all; per relation: "
	  "writes=5;*=0 (docs/training.md, Fanouts)" },
	SEED_ROW, { NULL },
};
static const struct gnn_opt rows_rows[] = { STORE_ROW, NODES_ROW, { NULL } };
static const struct gnn_opt nodes_rows[] = {
	STORE_OR_SAMPLER_ROWS,
	{ "split", GNN_OPT_STR, &cfg.split, NULL, 0, 0, "train|valid|test|none", "which nodes to list" },
	{ "limit", GNN_OPT_INT, &cfg.limit, "0", 0, (double)INT64_MAX, NULL, "at most this many (0: all)" },
	{ "page", GNN_OPT_INT, &cfg.page, "65536", 1, GNN_PROTO_MAX_IDS, NULL, "nodes per request while paging" },
	{ NULL },
};
static const struct gnn_opt minibatch_rows[] = {
	SAMPLER_ROW,
	{ "seeds", GNN_OPT_LIST, &cfg.seeds, NULL, 0, 0, NULL,
	  "seed nodes (global IDs): 0,5,9, or @FILE / @-" },
	{ "fanouts", GNN_OPT_LIST, &cfg.fanouts, NULL, 0, 0, NULL,
	  "one fanout per layer, input layer first (DGL's order), e.g. 10,5; -1 = all; per relation: "
	  "writes=10,5;*=5,5 (docs/training.md, Fanouts)" },
	SEED_ROW,
	{ "no-features", GNN_OPT_BOOL, &cfg.no_features, NULL, 0, 0, NULL, "leave out the input features" },
	{ "no-labels", GNN_OPT_BOOL, &cfg.no_labels, NULL, 0, 0, NULL, "leave out the seeds' labels" },
	{ NULL },
};
#define TYPE_ROW { "type", GNN_OPT_STR, &cfg.type, NULL, 0, 0, NULL, \
		   "the node type (e.g. paper): --nodes are then original IDs of that type, as in the input files" }
#define IDS_FILE_ROW { "ids-file", GNN_OPT_STR, &cfg.ids_file, NULL, 0, 0, NULL, \
		       "with --type: --nodes are the IDs as your tables give them (comma-separated, or @FILE one a " \
		       "line), looked up in this file: the partition output's node-ids/TYPE.txt (gnn-partition --config)" }
static const struct gnn_opt predict_rows[] = {
	{ "store", GNN_OPT_STR, &cfg.store, NULL, 0, 0, NULL,
	  "graph store's nng URL, e.g. tcp://graphstore-0.graphstore:7000 (nodes it owns)" },
	{ "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL,
	  "instead of --store: a sampler's nng URL, e.g. tcp://sampler:7100 (any nodes)" },
	NODES_ROW, TYPE_ROW, IDS_FILE_ROW, { NULL },
};
static const struct gnn_opt lookup_rows[] = { STORE_OR_SAMPLER_ROWS, NODES_ROW, TYPE_ROW, IDS_FILE_ROW, { NULL } };
static const struct gnn_opt embedding_rows[] = {
	{ "store", GNN_OPT_STR, &cfg.store, NULL, 0, 0, NULL,
	  "the graph store that holds the nodes, e.g. tcp://graphstore-0.graphstore:7000" },
	NODES_ROW, TYPE_ROW,
	{ "best", GNN_OPT_BOOL, &cfg.best, NULL, 0, 0, NULL, "the best validation epoch's rows, not the latest" },
	{ NULL },
};
static const struct gnn_opt score_rows[] = {
	{ "store", GNN_OPT_STR, &cfg.store, NULL, 0, 0, NULL,
	  "graph store's nng URL, e.g. tcp://graphstore-0.graphstore:7000 (pairs of nodes it owns)" },
	{ "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL,
	  "instead of --store: a sampler's nng URL, e.g. tcp://sampler:7100 (any pairs)" },
	{ "pairs", GNN_OPT_LIST, &cfg.pairs, NULL, 0, 0, NULL,
	  "node pairs u:v (global IDs): 1:2,3:4, or @FILE / @- to read them; at most 65536" },
	{ "type", GNN_OPT_STR, &cfg.type, NULL, 0, 0, NULL,
	  "the node type (e.g. paper): --pairs are then original IDs of that type, as in the input files" },
	{ NULL },
};
static const struct gnn_opt topk_rows[] = {
	{ "store", GNN_OPT_STR, &cfg.store, NULL, 0, 0, NULL,
	  "graph store's nng URL (the node must be its own; candidates: its partition's nodes)" },
	{ "sampler", GNN_OPT_STR, &cfg.sampler, NULL, 0, 0, NULL,
	  "instead of --store: a sampler's nng URL, e.g. tcp://sampler:7100 (candidates: every node)" },
	{ "node", GNN_OPT_INT, &cfg.node, "-1", -1, (double)INT64_MAX, NULL, "the node (global ID) to find links for" },
	{ "k", GNN_OPT_INT, &cfg.k, "10", 1, GNN_PROTO_MAX_LINK_K, NULL, "how many of the best-scoring nodes" },
	{ "candidate-type", GNN_OPT_STR, &cfg.candidate_type, NULL, 0, 0, NULL,
	  "only nodes of this type (e.g. the relation's destination type); default every type" },
	{ "exclude", GNN_OPT_LIST, &cfg.exclude, NULL, 0, 0, NULL,
	  "nodes never answered (e.g. the node's known neighbours): 1,2,3 or @FILE; at most 65536" },
	{ NULL },
};
static const struct gnn_opt common_rows[] = {
	{ "timeout-ms", GNN_OPT_INT, &cfg.timeout_ms, "5000", 1, 3600000, NULL,
	  "milliseconds to wait for each attempt's reply" },
	{ "retries", GNN_OPT_INT, &cfg.retries, "2", 0, 100, NULL, "extra attempts after a timeout" },
	{ "json", GNN_OPT_BOOL, &cfg.json, NULL, 0, 0, NULL, "JSON output (the only format; accepted for scripts)" },
	GNN_TLS_OPTIONS(cfg.tls),
	{ NULL },
};

struct command {
	const char *name, *summary;
	const struct gnn_opt *rows;
	const struct cli_cmd *cmd;
};

static const struct command commands[] = {
	{ "info", "Graph layout from a graph store (and its partition) or a sampler.", info_rows, &cli_cmd_info },
	{ "sample", "Sampled in-neighbours of nodes the store owns.", sample_rows, &cli_cmd_sample },
	{ "features", "Feature rows of nodes the store owns.", rows_rows, &cli_cmd_features },
	{ "labels", "Labels of nodes the store owns (-1: unlabeled).", rows_rows, &cli_cmd_labels },
	{ "split", "Split (train, valid, test, none) of nodes the store owns.", rows_rows, &cli_cmd_split },
	{ "nodes", "Nodes of one split in ID order: one store's, or the whole graph's through a sampler.",
	  nodes_rows, &cli_cmd_nodes },
	{ "minibatch", "A minibatch from a sampler: sampled blocks, features, labels.", minibatch_rows,
	  &cli_cmd_minibatch },
	{ "predict", "Predicted class and top-k of nodes (global IDs, or --type T and original IDs; the reply gives both).",
	  predict_rows, &cli_cmd_predict },
	{ "lookup", "Global IDs of nodes of --type given by their original IDs (a store: its partition's; a sampler: any).",
	  lookup_rows, &cli_cmd_lookup },
	{ "embedding", "Learned embedding rows of nodes of --type (original IDs) held by a graph store (docs/embeddings.md).",
	  embedding_rows, &cli_cmd_embedding },
	{ "score", "A link-prediction model's scores and probabilities of node pairs (docs/inference.md).", score_rows,
	  &cli_cmd_score },
	{ "topk", "The k nodes a link-prediction model scores highest with --node (itself excluded).", topk_rows,
	  &cli_cmd_topk },
	{ NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gnn-cli COMMAND [options]\n"
		   "Query gnn-dist graph stores and samplers; prints one JSON document.\n\ncommands:\n");
	for (const struct command *c = commands; c->name != NULL; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\n'gnn-cli COMMAND --help' lists the command's options. Exit status: 0 ok,\n"
		   "1 the request failed (message on stderr), 2 bad usage.\n");
}

/* The command's rows followed by the common ones, in table. */
static void build_table(const struct command *cmd, struct gnn_opt table[MAX_ROWS])
{
	size_t n = 0;

	for (const struct gnn_opt *o = cmd->rows; o->name != NULL && n < MAX_ROWS - 1; o++)
		table[n++] = *o;
	for (const struct gnn_opt *o = common_rows; o->name != NULL && n < MAX_ROWS - 1; o++)
		table[n++] = *o;
	memset(&table[n], 0, sizeof(table[n]));
}

static int print_json(json_t *doc)
{
	/* 9 significant digits bring every float back exactly. */
	if (json_dumpf(doc, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9)) != 0 || fputc('\n', stdout) == EOF ||
	    fflush(stdout) != 0) {
		cli_error("cannot write the output");
		return GNN_EIO;
	}
	return GNN_OK;
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct gnn_opt table[MAX_ROWS];
	char prog[64];
	json_t *doc = NULL;
	int rc;

	gnn_log_init("gnn-cli");
	/* A command-line tool keeps quiet unless asked: warnings and errors only. */
	if (getenv("GNN_LOG_LEVEL") == NULL || *getenv("GNN_LOG_LEVEL") == '\0')
		gnn_log_set_level(GNN_LOG_WARN);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (const struct command *c = commands; c->name != NULL; c++)
		if (strcmp(argv[1], c->name) == 0)
			cmd = c;
	if (cmd == NULL) {
		cli_error("unknown command \"%s\" (see gnn-cli --help)", argv[1]);
		return EXIT_USAGE;
	}
	build_table(cmd, table);
	snprintf(prog, sizeof(prog), "gnn-cli %s", cmd->name);
	/* argv[1] is the command: parsing starts after it. */
	rc = gnn_opt_parse(prog, cmd->summary, table, argc - 1, argv + 1);
	if (rc == GNN_EHELP)
		return 0;
	if (rc != GNN_OK || gnn_tls_setup(&cfg.tls) != GNN_OK)
		return EXIT_USAGE;
	rc = cli_cmd_run(cmd->cmd, &cfg, &doc);
	gnn_tls_teardown();
	if (rc == GNN_OK)
		rc = print_json(doc);
	json_decref(doc);
	if (rc == GNN_EINVAL)
		return EXIT_USAGE;
	return rc == GNN_OK ? 0 : EXIT_FAILED;
}
