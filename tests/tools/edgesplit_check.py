#!/usr/bin/env python3
"""Checks a gnn-partition output made with --edge-split / --edge-split-from
(docs/formats.md "Edge split") against the same graph partitioned without
it (FULL): every node is compared by its original (type, per-type ID)
through each output's node-map.arr, so the two partitionings may differ.

  edgesplit_check.py OUT FULL [--csr DIR]
  edgesplit_check.py --batch FILE    (lines "LABEL OUT FULL [CSR]": one
                                      check each, its lines prefixed
                                      "LABEL: "; Python starts once)

A batch line "LABEL same OUT1 OUT2" instead checks that two outputs hold
the same split (every edge-split file, row for row, in original IDs):
the split depends on the graph and the seed, not on the partitioning.

Checks: the counts in meta.json against the files; every held-out pair an
edge of FULL, and neither it nor its reverse (in the relation, or in its
reverse relation) in any partition's CSR of OUT (or of DIR with --csr:
the self-test of this check, which must then fail); OUT's stored edges
exactly FULL's less the held-out ones, every relation; negatives neither
edges of FULL nor self-loops, of the relation's types; num_edges true.
Prints "edgesplit_check: ok", or the problems and exits 1."""
import array
import json
import os
import struct
import sys

DTYPES = {1: "B", 2: "i", 3: "q"}


def read_arr(path):
    with open(path, "rb") as f:
        head = f.read(64)
        magic, _, dt, rows, cols = struct.unpack("<8sIIQQ", head[:32])
        assert magic == b"GNNARRAY", path
        a = array.array(DTYPES[dt])
        a.frombytes(f.read())
        assert len(a) == rows * cols, path
        return a, rows, cols


class Output:
    """An output's nodes as (type, original ID) and its stored edges as
    {relation label: set of (src, dst)} in those terms."""

    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "meta.json")) as f:
            self.meta = json.load(f)
        m = self.meta
        self.types = [t["name"] for t in m["node_types"]]
        self.rels = ["%s:%s:%s" % (r["src"], r["name"], r["dst"]) for r in m["relations"]]
        nmap, _, _ = read_arr(os.path.join(d, m["node_map"]["file"]))
        self.orig = [None] * len(nmap)
        for p in m["parts"]:
            to = p["type_offsets"]
            for t in range(len(self.types)):
                for g in range(to[t], to[t + 1]):
                    self.orig[g] = (self.types[t], nmap[g])
        self.edges = {r: set() for r in self.rels}
        R = len(self.rels)
        for p in m["parts"]:
            pdir = os.path.join(d, p["dir"])
            indptr, _, _ = read_arr(os.path.join(pdir, p["files"]["indptr"]["file"]))
            indices, _, _ = read_arr(os.path.join(pdir, p["files"]["indices"]["file"]))
            for i in range(p["num_nodes"]):
                v = self.orig[p["node_start"] + i]
                for r in range(R):
                    es = self.edges[self.rels[r]]
                    for k in range(indptr[i * R + r], indptr[i * R + r + 1]):
                        es.add((self.orig[indices[k]], v))

    def ids(self, es, key):
        a, rows, cols = read_arr(os.path.join(self.dir, es["dir"], es["files"][key]["file"]))
        return [[self.orig[a[i * cols + j]] for j in range(cols)] for i in range(rows)]


def check(out_dir, full_dir, csr_dir, say):
    """One check; say(line) reports. Returns whether it passed."""
    out, full = Output(out_dir), Output(full_dir)
    csr = Output(csr_dir) if csr_dir else out
    es = out.meta["edge_split"]
    rel, rev = es["relation"], es["reverse_relation"]
    src_t, _, dst_t = rel.split(":")
    same = src_t == dst_t
    bad = []

    def joined(edges, u, v):
        return (u, v) in edges or (same and (v, u) in edges)

    held = set()
    for s in ("valid", "test"):
        pos, neg, neg_dst = es["files"][s + "_pos"], es["files"][s + "_neg"], es["files"][s + "_neg_dst"]
        n = es["num_" + s]
        if pos["rows"] != n or neg["rows"] != n or neg_dst["rows"] != n or neg_dst["cols"] != es["eval_negatives"]:
            bad.append("%s: file rows/cols disagree with num_%s=%d" % (s, s, n))
        P, N, D = out.ids(es, s + "_pos"), out.ids(es, s + "_neg"), out.ids(es, s + "_neg_dst")
        leaks = 0
        for u, v in P:
            if u[0] != src_t or v[0] != dst_t:
                bad.append("%s: pair %s,%s not of the relation's types" % (s, u, v))
            if not joined(full.edges[rel], u, v):
                bad.append("%s: positive %s,%s is no edge of the full graph" % (s, u, v))
            key = (min(u, v), max(u, v)) if same else (u, v)
            if key in held:
                bad.append("%s: pair %s,%s held out twice" % (s, u, v))
            held.add(key)
            if (u, v) in csr.edges[rel] or (v, u) in csr.edges[rel] or (rev and (v, u) in csr.edges[rev]):
                leaks += 1
        if leaks:
            bad.append("%s: %d held-out pairs (or their reverses) left in the CSR" % (s, leaks))
        for a, b in N:
            if a == b or a[0] != src_t or b[0] != dst_t or joined(full.edges[rel], a, b):
                bad.append("%s: negative %s,%s is a self-loop, of a wrong type or an edge" % (s, a, b))
        for (u, _), row in zip(P, D):
            for b in row:
                if b == u or b[0] != dst_t or joined(full.edges[rel], u, b):
                    bad.append("%s: negative destination %s of %s is the source, of a wrong type or an edge" % (s, b, u))
                    break
    allneg = [tuple(x) for s in ("valid", "test") for x in out.ids(es, s + "_neg")]
    keys = {(min(a, b), max(a, b)) if same else (a, b) for a, b in allneg}
    if len(keys) != len(allneg):
        bad.append("negative pairs repeat")
    # OUT's CSR is FULL's less exactly the held-out pairs' edges.
    want_removed = 0
    for r in out.rels:
        gone = full.edges[r] - out.edges[r]
        if out.edges[r] - full.edges[r]:
            bad.append("relation %s: edges absent from the full graph" % r)
        for u, v in gone:
            if r == rel and ((min(u, v), max(u, v)) if same else (u, v)) in held:
                continue
            if r == rev and (v, u) in held:
                continue
            bad.append("relation %s: edge %s -> %s removed but not held out" % (r, u, v))
            break
        want_removed += len(gone)
    if want_removed != es["removed_edges"]:
        bad.append("removed_edges=%d, the CSRs differ by %d" % (es["removed_edges"], want_removed))
    if es["num_train"] + es["num_valid"] + es["num_test"] != es["num_pairs"]:
        bad.append("num_train + num_valid + num_test != num_pairs")
    stored = sum(len(e) for e in out.edges.values())
    if stored != out.meta["num_edges"] or stored + es["removed_edges"] != full.meta["num_edges"]:
        bad.append("num_edges=%d, stored %d, full %d" % (out.meta["num_edges"], stored, full.meta["num_edges"]))
    for b in bad[:20]:
        say("edgesplit_check: FAIL " + b)
    if not bad:
        say("edgesplit_check: ok pairs=%d train=%d valid=%d test=%d removed_edges=%d"
            % (es["num_pairs"], es["num_train"], es["num_valid"], es["num_test"], es["removed_edges"]))
    return not bad


def main():
    args = sys.argv[1:]
    if args[0] == "--batch":
        ok = True
        with open(args[1]) as f:
            for line in f:
                w = line.split()
                if w and w[1] == "same":
                    a, b = Output(w[2]), Output(w[3])
                    ea, eb = a.meta["edge_split"], b.meta["edge_split"]
                    same = all(a.ids(ea, k) == b.ids(eb, k) for k in ea["files"])
                    print("%s: edgesplit_check: %s" % (w[0], "ok" if same else "FAIL the splits differ"))
                    ok &= same
                elif w:
                    ok &= check(w[1], w[2], w[3] if len(w) > 3 else None,
                                lambda s, label=w[0]: print(label + ": " + s))
        sys.exit(0 if ok else 1)
    csr_dir = None
    if "--csr" in args:
        k = args.index("--csr")
        csr_dir = args[k + 1]
        del args[k:k + 2]
    sys.exit(0 if check(args[0], args[1], csr_dir, print) else 1)


if __name__ == "__main__":
    main()
