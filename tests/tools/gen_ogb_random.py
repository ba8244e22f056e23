#!/usr/bin/env python3
"""A random graph in OGB's two node-property layouts, written from the same
arrays, for tests/bench_import.sh:

    OUT/csv/raw/edge.csv.gz            "src,dst" a line (gzip level 1)
    OUT/csv/raw/node-feat.csv.gz       D floats a line ("%.3f": k / 1000, k in [0, 9999])
    OUT/csv/raw/node-label.csv.gz      a class or "nan" a line
    OUT/csv/raw/num-node-list.csv.gz, num-edge-list.csv.gz
    OUT/bin/raw/data.npz               np.savez (stored): edge_index int64 (2, E),
                                       node_feat float32 (N, D), num_nodes_list,
                                       num_edges_list int64 (1,)
    OUT/bin/raw/node_feat.npy          node_feat again, unzipped beside data.npz
    OUT/bin/raw/node-label.npz         node_label float64 (N, 1), NaN = unlabelled
    OUT/{csv,bin}/split/random/{train,valid,test}.csv.gz   one node a line
and with --big-dim DB:
    OUT/big/raw/data.npz               edge_index and the counts only
    OUT/big/raw/node_feat.npy          float32 (N, DB), normal; its pages are
                                       dropped from the page cache once written
    OUT/big/raw/node-label.npz, OUT/big/split/   the same as bin's (hard links)

Edges: E pairs drawn uniformly (self-loops and duplicates included, as
gnn-partition removes them). Labels: --classes classes, --unlabelled of the
nodes NaN; the labelled nodes split 60/20/20 (train/valid/test), each file
sorted. Both layouts decode to the same float32 features: "%.3f" of k / 1000
parses to the float32 nearest k / 1000, which is what float32(k / 1000.0) is.

Text is formatted by NumPy byte arithmetic, not per value. Prints one
"generated WHAT seconds=S bytes=B" line per dataset.

usage: gen_ogb_random.py OUT --nodes N --edges E --dim D [--big-dim DB]
       [--classes C] [--unlabelled F] [--seed S]
Needs NumPy (Debian: python3-numpy)."""
import argparse
import os
import time
import zlib

import numpy as np

CHUNK = 1 << 20  # rows (edges, nodes) formatted at a time
DIGITS = 10      # int64 node IDs up to 9,999,999,999


def int_lines(v, sep=b"\n"):
    """ASCII of the non-negative integers v, each followed by sep (bytes of
    v's shape[1:] is 1) or, for a (n, k) array, the row's values joined by
    ',' and ended by sep."""
    v = np.asarray(v, dtype=np.int64)
    if v.ndim == 1:
        v = v[:, None]
    n, k = v.shape
    pow10 = 10 ** np.arange(DIGITS - 1, -1, -1, dtype=np.int64)
    digits = (v[:, :, None] // pow10) % 10                      # (n, k, DIGITS)
    keep = (v[:, :, None] >= pow10) | (pow10 == 1)              # no leading zeros
    cell = np.empty((n, k, DIGITS + 1), dtype=np.uint8)
    cell[:, :, :DIGITS] = digits + ord("0")
    cell[:, :, DIGITS] = ord(",")
    cell[:, -1, DIGITS] = ord(sep)
    mask = np.ones((n, k, DIGITS + 1), dtype=bool)
    mask[:, :, :DIGITS] = keep
    return cell[mask].tobytes()


def feat_lines(k):
    """'a.bcd,...\\n' rows of the (n, D) integers k in [0, 9999] (value k / 1000)."""
    n, d = k.shape
    k = k.astype(np.int32)
    cell = np.empty((n, d, 6), dtype=np.uint8)
    cell[:, :, 0] = k // 1000 + 48
    cell[:, :, 1] = ord(".")
    cell[:, :, 2] = (k // 100) % 10 + 48
    cell[:, :, 3] = (k // 10) % 10 + 48
    cell[:, :, 4] = k % 10 + 48
    cell[:, :, 5] = ord(",")
    cell[:, -1, 5] = ord("\n")
    return cell.tobytes()


def label_lines(lab):
    """A class (0..9) or 'nan' a line."""
    n = lab.shape[0]
    nan = np.isnan(lab)
    cell = np.empty((n, 4), dtype=np.uint8)
    cell[:] = np.frombuffer(b"nan\n", dtype=np.uint8)
    cls = np.where(nan, 0, lab).astype(np.int64)
    cell[~nan, 0] = cls[~nan] + 48
    cell[~nan, 1] = ord("\n")
    mask = np.ones((n, 4), dtype=bool)
    mask[~nan, 2:] = False
    return cell[mask].tobytes()


def write_gz(path, pieces):
    """pieces: an iterable of bytes, deflated at level 1 into a gzip file."""
    with open(path, "wb") as f:
        c = zlib.compressobj(1, zlib.DEFLATED, 31)
        for p in pieces:
            f.write(c.compress(p))
        f.write(c.flush())


def chunks(a, fmt):
    for i in range(0, a.shape[0], CHUNK):
        yield fmt(a[i:i + CHUNK])


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def write_split(dirs, train, valid, test):
    first = os.path.join(dirs[0], "split", "random")
    os.makedirs(first)
    for name, ids in (("train", train), ("valid", valid), ("test", test)):
        write_gz(os.path.join(first, name + ".csv.gz"), chunks(ids, int_lines))
    for d in dirs[1:]:
        os.makedirs(os.path.join(d, "split", "random"))
        for name in ("train", "valid", "test"):
            os.link(os.path.join(first, name + ".csv.gz"), os.path.join(d, "split", "random", name + ".csv.gz"))


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def big_features(path, n, d, rng):
    """float32 (n, d) standard normal into a .npy, a chunk at a time."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (n, d)})
        for i in range(0, n, CHUNK):
            f.write(rng.standard_normal((min(CHUNK, n - i), d), dtype=np.float32).tobytes())
    drop_cache(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--edges", type=int, required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--big-dim", type=int, default=0)
    ap.add_argument("--classes", type=int, default=8)
    ap.add_argument("--unlabelled", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not 1 <= a.classes <= 10:
        ap.error("--classes: 1..10 (one digit a label)")
    n, e = a.nodes, a.edges
    rng = np.random.default_rng(a.seed)
    csv, bin_, big = (os.path.join(a.out, x) for x in ("csv", "bin", "big"))
    for d in (csv, bin_) + ((big,) if a.big_dim else ()):
        os.makedirs(os.path.join(d, "raw"))

    t = time.monotonic()
    edge_index = rng.integers(0, n, size=(2, e), dtype=np.int64)
    lab = rng.integers(0, a.classes, size=n).astype(np.float64)
    lab[rng.random(n) < a.unlabelled] = np.nan
    labelled = np.flatnonzero(~np.isnan(lab))
    rng.shuffle(labelled)
    t1, t2 = int(0.6 * labelled.size), int(0.8 * labelled.size)
    train, valid, test = (np.sort(s) for s in (labelled[:t1], labelled[t1:t2], labelled[t2:]))
    k = rng.integers(0, 10000, size=(n, a.dim), dtype=np.int16)
    feat = (k.astype(np.float64) / 1000.0).astype(np.float32)
    write_split([csv, bin_] + ([big] if a.big_dim else []), train, valid, test)
    gen_s = time.monotonic() - t

    t = time.monotonic()
    raw = os.path.join(csv, "raw")
    write_gz(os.path.join(raw, "edge.csv.gz"),
             (int_lines(edge_index[:, i:i + CHUNK].T) for i in range(0, e, CHUNK)))
    write_gz(os.path.join(raw, "node-feat.csv.gz"), chunks(k, feat_lines))
    write_gz(os.path.join(raw, "node-label.csv.gz"), chunks(lab, label_lines))
    write_gz(os.path.join(raw, "num-node-list.csv.gz"), [b"%d\n" % n])
    write_gz(os.path.join(raw, "num-edge-list.csv.gz"), [b"%d\n" % e])
    print(f"generated csv seconds={time.monotonic() - t + gen_s:.1f} bytes={du(csv)} "
          f"(arrays and split {gen_s:.1f} s)", flush=True)
    del k

    t = time.monotonic()
    raw = os.path.join(bin_, "raw")
    counts = {"num_nodes_list": np.array([n], dtype=np.int64), "num_edges_list": np.array([e], dtype=np.int64)}
    np.savez(os.path.join(raw, "data.npz"), edge_index=edge_index, node_feat=feat, **counts)
    np.save(os.path.join(raw, "node_feat.npy"), feat)
    np.savez(os.path.join(raw, "node-label.npz"), node_label=lab.reshape(-1, 1))
    print(f"generated binary seconds={time.monotonic() - t:.1f} bytes={du(bin_)}", flush=True)
    del feat

    if a.big_dim:
        t = time.monotonic()
        raw = os.path.join(big, "raw")
        np.savez(os.path.join(raw, "data.npz"), edge_index=edge_index, **counts)
        os.link(os.path.join(bin_, "raw", "node-label.npz"), os.path.join(raw, "node-label.npz"))
        big_features(os.path.join(raw, "node_feat.npy"), n, a.big_dim, rng)
        print(f"generated big seconds={time.monotonic() - t:.1f} bytes={du(big)} feature_dim={a.big_dim}", flush=True)


if __name__ == "__main__":
    main()
