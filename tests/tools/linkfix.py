#!/usr/bin/env python3
"""linkfix.py - a link-prediction model's inference output for tests, and
an independent oracle of its scores (pure Python, no numpy).

  linkfix.py make DATA OUT --decoder dot|mlp --dim D [--hidden H] [--crc HEX] [--seed S]
      writes OUT as `gnn-trainer infer` of a link model does
      (docs/inference.md, "Link prediction"): summary.json with "task":
      "link" and "decoder", part-<p>/emb.arr (f32, every node of partition
      p of the partition output DATA), part-<p>/stats.json and, for mlp,
      decoder.arr; values deterministic from the seed.
  linkfix.py make-node DATA OUT
      a node-classification output (no "task"; pred.arr ... and emb.arr as
      with --embeddings), which score and topk must refuse.
  linkfix.py check-score OUT REPLY.json
      checks gnn-cli score's output against scores computed here from the
      files: every pair, score and prob within 1e-5 relative (1e-6 absolute).
  linkfix.py check-topk OUT REPLY.json NODE K [--exclude IDS] [--store P] [--data DATA --type T]
      brute force over every node (or partition P's; or type T's of the
      partition output DATA), NODE and IDS excluded, best first by score then node ID; the reply's nodes must be
      exactly those, its scores within tolerance.
Exit 0 when the check holds; 1 with a message saying what differs."""
import json
import math
import os
import random
import struct
import sys
import zlib

F32 = 4
CODES = {2: "i", 3: "q", 4: "f"}  # i32, i64, f32


def write_arr(path, rows, cols, values, dtype=F32):
    data = struct.pack("<%d%s" % (len(values), CODES[dtype]), *values)
    head = b"GNNARRAY" + struct.pack("<IIQQQI", 1, dtype, rows, cols, len(data), zlib.crc32(data) & 0xFFFFFFFF)
    head += struct.pack("<I", zlib.crc32(head) & 0xFFFFFFFF) + bytes(16)
    with open(path + ".tmp", "wb") as f:
        f.write(head + data)
    os.rename(path + ".tmp", path)


def read_arr(path):
    with open(path, "rb") as f:
        b = f.read()
    assert b[:8] == b"GNNARRAY", path
    _, dt, rows, cols, nbytes = struct.unpack_from("<IIQQQ", b, 8)
    assert dt == F32, path
    return rows, cols, list(struct.unpack_from("<%df" % (rows * cols), b, 64))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def make(data, out, decoder, dim, hidden, crc, seed):
    meta = json.load(open(os.path.join(data, "meta.json")))
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    ident = {"format": 1, "params_crc": crc, "model_hash": "0123456789abcdef", "graph_id": "0000000000000000",
             "model": "graphsage", "top_k": 1, "embeddings": True, "label_type": meta["label_type"], "task": "link"}
    for p in meta["parts"]:
        d = os.path.join(out, "part-%d" % p["id"])
        os.makedirs(d, exist_ok=True)
        vals = [f32(rng.uniform(-1, 1)) for _ in range(p["num_nodes"] * dim)]
        write_arr(os.path.join(d, "emb.arr"), p["num_nodes"], dim, vals)
        st = dict(ident, part=p["id"], nodes=p["num_nodes"])
        json.dump(st, open(os.path.join(d, "stats.json"), "w"))
    if decoder == "mlp":
        n = hidden * dim + 2 * hidden + 1
        write_arr(os.path.join(out, "decoder.arr"), n, 1, [f32(rng.uniform(-0.5, 0.5)) for _ in range(n)])
    summ = dict(ident, nodes=meta["num_nodes"], parts=meta["num_parts"],
                decoder={"kind": decoder, "dim": dim, "hidden": hidden if decoder == "mlp" else 0})
    json.dump(summ, open(os.path.join(out, "summary.json") + ".tmp", "w"))
    os.rename(os.path.join(out, "summary.json") + ".tmp", os.path.join(out, "summary.json"))


def make_node(data, out):
    """A node-classification output (no task field), top 1, with --embeddings' emb.arr."""
    meta = json.load(open(os.path.join(data, "meta.json")))
    os.makedirs(out, exist_ok=True)
    ident = {"format": 1, "params_crc": "00c0ffee", "model_hash": "0123456789abcdef", "graph_id": "0000000000000000",
             "model": "graphsage", "top_k": 1, "embeddings": True, "label_type": meta["label_type"]}
    for p in meta["parts"]:
        d, n = os.path.join(out, "part-%d" % p["id"]), p["num_nodes"]
        os.makedirs(d, exist_ok=True)
        write_arr(os.path.join(d, "pred.arr"), n, 1, [0] * n, 2)
        write_arr(os.path.join(d, "topk-class.arr"), n, 1, [0] * n, 2)
        write_arr(os.path.join(d, "topk-prob.arr"), n, 1, [1.0] * n)
        write_arr(os.path.join(d, "orig-id.arr"), n, 1, list(range(p["node_start"], p["node_end"])), 3)
        write_arr(os.path.join(d, "emb.arr"), n, 4, [0.5] * (4 * n))
        json.dump(dict(ident, part=p["id"], nodes=n), open(os.path.join(d, "stats.json"), "w"))
    json.dump(dict(ident, nodes=meta["num_nodes"], parts=meta["num_parts"]), open(os.path.join(out, "summary.json"), "w"))


class Model:
    def __init__(self, out):
        s = json.load(open(os.path.join(out, "summary.json")))
        self.crc, self.kind = s["params_crc"], s["decoder"]["kind"]
        self.dim, self.hidden = s["decoder"]["dim"], s["decoder"]["hidden"]
        self.rows, self.part_of = [], []
        p = 0
        while os.path.exists(os.path.join(out, "part-%d" % p, "emb.arr")):
            r, c, v = read_arr(os.path.join(out, "part-%d" % p, "emb.arr"))
            assert c == self.dim
            for i in range(r):
                self.rows.append(v[i * c:(i + 1) * c])
                self.part_of.append(p)
            p += 1
        if self.kind == "mlp":
            _, _, self.params = read_arr(os.path.join(out, "decoder.arr"))

    def score(self, u, v):
        a, b, d = self.rows[u], self.rows[v], self.dim
        if self.kind == "dot":
            return math.fsum(x * y for x, y in zip(a, b))
        h, P = self.hidden, self.params
        x = [p * q for p, q in zip(a, b)]
        s = 0.0
        for j in range(h):
            z = P[h * d + j] + math.fsum(P[j * d + i] * x[i] for i in range(d))
            if z > 0:
                s += P[h * d + h + j] * z
        return s + P[h * d + 2 * h]


def close(a, b):
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b)) + 1e-6


def sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def check_score(out, reply):
    m, r = Model(out), json.load(open(reply))
    if r["params_crc"] != m.crc or r["decoder"]["kind"] != m.kind or r["decoder"]["dim"] != m.dim:
        return "model differs: %s" % r["decoder"]
    for e in r["scores"]:
        want = m.score(e["src"], e["dst"])
        if not close(e["score"], want) or not close(e["prob"], sigmoid(want)):
            return "pair %d:%d score %r prob %r, want %r %r" % (e["src"], e["dst"], e["score"], e["prob"], want,
                                                                 sigmoid(want))
    print("linkfix: %d scores of %s equal the oracle's" % (len(r["scores"]), m.kind))
    return None


def type_nodes(data, name):
    """The global IDs of the nodes of type name in the partition output data."""
    meta = json.load(open(os.path.join(data, "meta.json")))
    t = [x["name"] for x in meta["node_types"]].index(name)
    return {u for p in meta["parts"] for u in range(p["type_offsets"][t], p["type_offsets"][t + 1])}


def check_topk(out, reply, node, k, exclude, store, only=None):
    m, r = Model(out), json.load(open(reply))
    excl = set(exclude) | {node}
    cands = [(-m.score(node, u), u) for u in range(len(m.rows))
             if u not in excl and (store is None or m.part_of[u] == store) and (only is None or u in only)]
    cands.sort()
    want = cands[:k]
    got = [(e["node"], e["score"]) for e in r["top"]]
    if len(got) != len(want):
        return "%d answers, want %d" % (len(got), len(want))
    for i, ((ws, wu), (gu, gs)) in enumerate(zip(want, got)):
        # a near-tie may swap within float rounding: the same score is fine
        if gu != wu and not close(-ws, m.score(node, gu)):
            return "rank %d: node %d (%r), want node %d (%r)" % (i, gu, gs, wu, -ws)
        if not close(gs, m.score(node, gu)):
            return "rank %d: node %d score %r, want %r" % (i, gu, gs, m.score(node, gu))
    if r["node"] != node or r["k"] != k or r["params_crc"] != m.crc:
        return "header differs: %r" % {x: r[x] for x in ("node", "k", "params_crc")}
    print("linkfix: top %d of node %d (%s) equal the brute force over %d candidates" % (k, node, m.kind, len(cands)))
    return None


def main(a):
    if a[0] == "make":
        opt = dict(zip(a[3::2], a[4::2]))
        make(a[1], a[2], opt["--decoder"], int(opt["--dim"]), int(opt.get("--hidden", 0)),
             opt.get("--crc", "1f97ab63"), int(opt.get("--seed", 1)))
        return 0
    if a[0] == "make-node":
        make_node(a[1], a[2])
        return 0
    if a[0] == "check-score":
        err = check_score(a[1], a[2])
    elif a[0] == "check-topk":
        opt = dict(zip(a[5::2], a[6::2]))
        ex = [int(x) for x in opt.get("--exclude", "").split(",") if x]
        st = int(opt["--store"]) if "--store" in opt else None
        only = type_nodes(opt["--data"], opt["--type"]) if "--type" in opt else None
        err = check_topk(a[1], a[2], int(a[3]), int(a[4]), ex, st, only)
    else:
        print(__doc__)
        return 2
    if err:
        print("linkfix: FAIL %s" % err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
