#!/usr/bin/env python3
"""Writes a homogeneous dataset in OGB's CSV raw layout (DIR/raw/*.csv.gz,
DIR/split/NAME/*.csv.gz) again in OGB's binary layout, as ogbn-papers100M
ships it and ogb/io/read_graph_raw.py's read_binary_graph_raw reads it:

    OUT/raw/data.npz        edge_index int64 (2, E), node_feat float32 (N, D),
                            num_nodes_list and num_edges_list int64 (1,)
                            (and --extra: node_year int64 (N, 1), which
                            readers ignore)
    OUT/raw/node-label.npz  node_label float64 (N, 1), NaN for unlabelled nodes
    OUT/split/NAME/         copied

usage: ogb_to_binary.py SRC OUT [--compressed] [--unzip-features] [--extra]
--compressed: np.savez_compressed (deflated members) instead of np.savez;
--unzip-features: node_feat as OUT/raw/node_feat.npy beside data.npz (as a
user unzips papers100M's 57 GB of features) instead of inside it.
Needs NumPy (Debian: python3-numpy)."""
import gzip
import os
import shutil
import sys

import numpy as np


def read_csv(path, dtype):
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    src, out = args
    raw = os.path.join(src, "raw")
    edges = read_csv(os.path.join(raw, "edge.csv.gz"), np.int64)
    feat = read_csv(os.path.join(raw, "node-feat.csv.gz"), np.float32)
    with gzip.open(os.path.join(raw, "node-label.csv.gz"), "rt") as f:
        labels = np.array([float(x) for x in f.read().split()], dtype=np.float64).reshape(-1, 1)
    n = labels.shape[0]
    os.makedirs(os.path.join(out, "raw"), exist_ok=True)
    arrays = {
        "edge_index": np.ascontiguousarray(edges.T),
        "num_nodes_list": np.array([n], dtype=np.int64),
        "num_edges_list": np.array([edges.shape[0]], dtype=np.int64),
    }
    if "--extra" in argv:
        arrays["node_year"] = np.full((n, 1), 2020, dtype=np.int64)
    if "--unzip-features" in argv:
        np.save(os.path.join(out, "raw", "node_feat.npy"), feat)
    else:
        arrays["node_feat"] = feat
    save = np.savez_compressed if "--compressed" in argv else np.savez
    save(os.path.join(out, "raw", "data.npz"), **arrays)
    save(os.path.join(out, "raw", "node-label.npz"), node_label=labels)
    shutil.copytree(os.path.join(src, "split"), os.path.join(out, "split"), dirs_exist_ok=True)


if __name__ == "__main__":
    main(sys.argv[1:])
