/* gconstruct.h - a graph described by one JSON file in the style of
 * GraphStorm's gconstruct configuration (gnn-partition --config FILE):
 * node and edge tables in CSV (gzip too), features from columns or .npy,
 * labels with a percentage split or split files. docs/formats.md ("A graph
 * description") gives the subset taken and a complete example.
 *
 *   { "version": "gconstruct-v0.1",
 *     "nodes": [ { "node_type": "paper", "files": ["paper.csv"],
 *                  "format": {"name": "csv", "separator": ","},
 *                  "node_id_col": "id",
 *                  "features": [ {"feature_col": ["f0", "f1"], "feature_name": "feat"} ]
 *                           or [ {"feature_npy": "paper_feat.npy", "feature_name": "feat"} ],
 *                  "labels": [ {"label_col": "label", "task_type": "classification",
 *                               "split_pct": [0.8, 0.1, 0.1]} ] } ],
 *                        or  "custom_split_filenames": {"train": F, "valid": F, "test": F}
 *     "edges": [ { "relation": ["author", "writes", "paper"], "files": ["writes.csv"],
 *                  "format": {"name": "csv"}, "source_id_col": "src", "dest_id_col": "dst" } ] }
 *
 * Node IDs are strings (an integer is its digits); a type's nodes are
 * numbered in the order of its files' rows, or, for a type without node
 * files, in the order its IDs first appear in the edge files. Types are
 * numbered in name order and relations in the file's order, each followed
 * by its reverse as the OGB importers do (import.h), so a dataset described
 * here gives the same partitions as in OGB's layout. The IDs are kept in
 * OUT/node-ids/TYPE.txt (line i: the user's ID of the type's node i).
 * Every key is checked: one this reader does not take is refused by name
 * (parquet, transforms, edge features and labels among them), never
 * ignored. Errors name the file and the line (the key, for the JSON). */
#ifndef GNN_PART_GCONSTRUCT_H
#define GNN_PART_GCONSTRUCT_H

#include "graph.h"
#include "import.h"

/* The graph described by the JSON file path into *g (zeroed by the
 * caller; pt_graph_free releases it, also after an error). Relative paths
 * in it start at its folder. o->dir is unused; o->scratch is the output's
 * temporary folder: node-ids/ is written there. seed draws split_pct. */
int pt_import_gconstruct(const struct pt_import_opts *o, const char *path, uint64_t seed, struct pt_graph *g);

#endif
