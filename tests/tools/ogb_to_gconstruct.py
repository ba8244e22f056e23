#!/usr/bin/env python3
"""Writes a heterogeneous dataset in OGB's CSV raw layout (ogbn-mag's: ACM)
as a user's own tables would be: CSV files with string node IDs
("TYPE_ID"), features as columns of a type's node file (--columns TYPE, the
values copied as written) or as a .npy (every other type with features),
labels in a column, the split as ID lists, and a GraphStorm-style
gconstruct description OUT/graph.json over them (docs/formats.md).

usage: ogb_to_gconstruct.py SRC SPLIT OUT [--columns TYPE] [--edges-only TYPE]
--edges-only TYPE: no node file for TYPE (its nodes come from the edge files).
Needs NumPy (Debian: python3-numpy)."""
import csv
import gzip
import json
import os
import sys

import numpy as np


def lines(path):
    with gzip.open(path, "rt") as f:
        return f.read().split()


def main(argv):
    args, opts, i = [], {}, 0
    while i < len(argv):
        if argv[i].startswith("--"):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 3:
        sys.exit(__doc__)
    src, split, out = args
    raw = os.path.join(src, "raw")
    os.makedirs(out, exist_ok=True)
    names = lines(os.path.join(raw, "num-node-dict.csv.gz"))
    counts = dict(zip(names[0].split(","), map(int, names[1].split(","))))
    labelled = dict(zip(*[l.split(",") for l in lines(os.path.join(raw, "nodetype-has-label.csv.gz"))]))
    desc = {"version": "gconstruct-v0.1", "nodes": [], "edges": []}
    for t, n in counts.items():
        if opts.get("--edges-only") == t:
            continue
        cols = ["id"]
        rows = [[f"{t}_{i}"] for i in range(n)]
        node = {"node_type": t, "files": [f"{t}.csv"], "format": {"name": "csv", "separator": ","},
                "node_id_col": "id"}
        feat = os.path.join(raw, "node-feat", t, "node-feat.csv.gz")
        if os.path.exists(feat):
            text = [l.split(",") for l in lines(feat)]
            if opts.get("--columns") == t:
                fc = [f"f{k}" for k in range(len(text[0]))]
                cols += fc
                for r, v in zip(rows, text):
                    r += v
                node["features"] = [{"feature_col": fc, "feature_name": "feat"}]
            else:
                np.save(os.path.join(out, f"{t}_feat.npy"), np.array(text, dtype=np.float32))
                node["features"] = [{"feature_npy": f"{t}_feat.npy", "feature_name": "feat"}]
        if labelled.get(t) == "True":
            labels = lines(os.path.join(raw, "node-label", t, "node-label.csv.gz"))
            cols.append("label")
            for r, v in zip(rows, labels):
                r.append("" if v == "nan" else v)
            files = {}
            for s in ("train", "valid", "test"):
                ids = lines(os.path.join(src, "split", split, t, f"{s}.csv.gz"))
                with open(os.path.join(out, f"{s}.txt"), "w") as f:
                    f.writelines(f"{t}_{i}\n" for i in ids)
                files[s] = f"{s}.txt"
            node["labels"] = [{"label_col": "label", "task_type": "classification",
                               "custom_split_filenames": files}]
        with open(os.path.join(out, f"{t}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            w.writerows(rows)
        desc["nodes"].append(node)
    for trip in lines(os.path.join(raw, "triplet-type-list.csv.gz")):
        s, r, d = trip.split(",")
        edges = [l.split(",") for l in lines(os.path.join(raw, "relations", f"{s}___{r}___{d}", "edge.csv.gz"))]
        with gzip.open(os.path.join(out, f"{r}.csv.gz"), "wt") as f:
            f.write("src,dst\n")
            f.writelines(f"{s}_{u},{d}_{v}\n" for u, v in edges)
        desc["edges"].append({"relation": [s, r, d], "files": [f"{r}.csv.gz"], "format": {"name": "csv"},
                              "source_id_col": "src", "dest_id_col": "dst"})
    with open(os.path.join(out, "graph.json"), "w") as f:
        json.dump(desc, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
