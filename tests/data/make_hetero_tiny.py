#!/usr/bin/env python3
"""Writes tests/data/hetero-tiny: a small heterogeneous graph in OGB's
heterogeneous raw layout (ogbn-mag's), deterministic (README.md beside it).

Usage: make_hetero_tiny.py OUT_DIR [--stats]
  --stats  also prints the accuracies of two simple classifiers (own
           features only, typed neighbourhood) that README.md quotes.

Standard library only. Only random.Random.random() is used, whose sequence
Python keeps fixed for a seed; every float is written rounded to 4
decimals; gzip headers carry no name and mtime 0: reruns write the same
bytes.
"""
import gzip
import math
import os
import random
import sys

SEED = 20261126
CLASSES = 4
PAPERS, AUTHORS, SUBJECTS = 320, 120, 8   # 30 authors and 2 subjects per class
UNLABELLED = 20                           # papers whose label is nan
PAPER_DIM, AUTHOR_DIM = 16, 8
PAPER_SIGNAL, AUTHOR_SIGNAL = 0.25, 1.0   # centroid scale against unit noise
SAME_CLASS_AUTHOR, SAME_CLASS_CITE, SAME_CLASS_SUBJECT = 0.85, 0.8, 0.75

rng = random.Random(SEED)


def uniform_int(n):
    return int(rng.random() * n)


def gauss():
    """Box-Muller on random() alone (random.gauss is not pinned across versions)."""
    u = 1.0 - rng.random()
    return math.sqrt(-2.0 * math.log(u)) * math.cos(2.0 * math.pi * rng.random())


def centroids(dim):
    return [[gauss() for _ in range(dim)] for _ in range(CLASSES)]


def by_class(cls):
    """The nodes of each class, given each node's class."""
    return [[v for v, c in enumerate(cls) if c == k] for k in range(CLASSES)]


def pick(members, cls, p_same):
    """A node of class cls with probability p_same, else of a random class."""
    nodes = members[cls if rng.random() < p_same else uniform_int(CLASSES)]
    return nodes[uniform_int(len(nodes))]


def build():
    paper_cls = [uniform_int(CLASSES) for _ in range(PAPERS)]
    author_cls = [a // (AUTHORS // CLASSES) for a in range(AUTHORS)]
    subject_cls = [s // (SUBJECTS // CLASSES) for s in range(SUBJECTS)]
    papers, authors_of, subjects_of = by_class(paper_cls), by_class(author_cls), by_class(subject_cls)
    pc, ac = centroids(PAPER_DIM), centroids(AUTHOR_DIM)
    paper_feat = [[PAPER_SIGNAL * pc[c][j] + gauss() for j in range(PAPER_DIM)] for c in paper_cls]
    author_feat = [[AUTHOR_SIGNAL * ac[c][j] + gauss() for j in range(AUTHOR_DIM)] for c in author_cls]
    writes, cites, subject = [], [], []
    for p, c in enumerate(paper_cls):
        authors = set()
        while len(authors) < 2 + uniform_int(2):
            authors.add(pick(authors_of, c, SAME_CLASS_AUTHOR))
        writes += [(a, p) for a in sorted(authors)]
        for _ in range(3):
            cites.append((p, pick(papers, c, SAME_CLASS_CITE)))
        subject.append((p, pick(subjects_of, c, SAME_CLASS_SUBJECT)))
    # What the importer must cope with: a self-citation (dropped) and a
    # repeated line (stored once).
    cites += [(7, 7), cites[0]]
    writes.sort()
    unlabelled = set(sorted(range(PAPERS), key=lambda _: rng.random())[:UNLABELLED])
    labelled = [p for p in range(PAPERS) if p not in unlabelled]
    order = sorted(labelled, key=lambda _: rng.random())
    n = len(order)
    split = {"train": sorted(order[:n * 2 // 5]), "valid": sorted(order[n * 2 // 5:n * 3 // 5]),
             "test": sorted(order[n * 3 // 5:])}
    labels = ["nan" if p in unlabelled else str(c) for p, c in enumerate(paper_cls)]
    return dict(paper_cls=paper_cls, paper_feat=paper_feat, author_feat=author_feat, writes=writes,
                cites=cites, subject=subject, labels=labels, split=split)


def write(out, rel, lines):
    path = os.path.join(out, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as z:
        z.write("".join(line + "\n" for line in lines).encode())


def rows(feat):
    return [",".join(f"{x:.4f}" for x in r) for r in feat]


def edges(pairs):
    return [f"{u},{v}" for u, v in pairs]


def write_all(out, d):
    # Type columns deliberately not in name order: readers sort them.
    write(out, "raw/num-node-dict.csv.gz", ["paper,author,subject", f"{PAPERS},{AUTHORS},{SUBJECTS}"])
    write(out, "raw/triplet-type-list.csv.gz",
          ["author,writes,paper", "paper,cites,paper", "paper,has_subject,subject"])
    for name, pairs in (("author___writes___paper", d["writes"]), ("paper___cites___paper", d["cites"]),
                        ("paper___has_subject___subject", d["subject"])):
        write(out, f"raw/relations/{name}/edge.csv.gz", edges(pairs))
        write(out, f"raw/relations/{name}/num-edge-list.csv.gz", [str(len(pairs))])
    write(out, "raw/node-feat/paper/node-feat.csv.gz", rows(d["paper_feat"]))
    write(out, "raw/node-feat/author/node-feat.csv.gz", rows(d["author_feat"]))
    write(out, "raw/nodetype-has-label.csv.gz", ["paper,author,subject", "True,False,False"])
    write(out, "raw/node-label/paper/node-label.csv.gz", d["labels"])
    write(out, "split/random/nodetype-has-split.csv.gz", ["paper,author,subject", "True,False,False"])
    for s, ids in d["split"].items():
        write(out, f"split/random/paper/{s}.csv.gz", [str(p) for p in ids])


def nearest_centroid(vecs, d):
    """Test accuracy of classifying vecs[p] by the nearest class mean of the training papers."""
    train, test, cls = d["split"]["train"], d["split"]["test"], d["paper_cls"]
    dim = len(vecs[0])
    mean = [[0.0] * dim for _ in range(CLASSES)]
    count = [0] * CLASSES
    for p in train:
        count[cls[p]] += 1
        mean[cls[p]] = [m + x for m, x in zip(mean[cls[p]], vecs[p])]
    mean = [[m / max(count[c], 1) for m in mean[c]] for c in range(CLASSES)]

    def guess(v):
        return min(range(CLASSES), key=lambda c: sum((x - m) ** 2 for x, m in zip(v, mean[c])))
    return sum(guess(vecs[p]) == cls[p] for p in test) / len(test)


def stats(d):
    """Own features against own features + the mean features of the paper's
    authors and cited/citing papers + its subject's training-label histogram."""
    own = [[round(x, 4) for x in r] for r in d["paper_feat"]]
    auth = [[] for _ in range(PAPERS)]
    for a, p in d["writes"]:
        auth[p].append(d["author_feat"][a])
    cite = [[] for _ in range(PAPERS)]
    for u, v in d["cites"]:
        if u != v:
            cite[u].append(own[v])
            cite[v].append(own[u])
    hist = [[0] * CLASSES for _ in range(SUBJECTS)]
    for p in d["split"]["train"]:
        hist[d["subject"][p][1]][d["paper_cls"][p]] += 1
    mean = lambda vs, dim: [sum(c) / len(vs) for c in zip(*vs)] if vs else [0.0] * dim  # noqa: E731
    typed = [own[p] + mean(auth[p], AUTHOR_DIM) + mean(cite[p], PAPER_DIM) +
             [4.0 * h / max(sum(hist[d["subject"][p][1]]), 1) for h in hist[d["subject"][p][1]]]
             for p in range(PAPERS)]
    print(f"features_only_test_accuracy={nearest_centroid(own, d):.3f}")
    print(f"typed_neighbourhood_test_accuracy={nearest_centroid(typed, d):.3f}")


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--stats"):
        sys.exit(__doc__)
    d = build()
    write_all(sys.argv[1], d)
    if len(sys.argv) == 3:
        stats(d)


if __name__ == "__main__":
    main()
