#!/usr/bin/env python3
"""Graph store replicas for throughput (issue 39, docs/reliability.md,
"Graph store replicas"): minibatches per second with R = 1 and R = 2 stores
per partition when each store's link is the bottleneck.

The chaos suite's run (tests/chaos: the synthetic `tiny` graph in 2
partitions, 2 samplers, 2 trainers, GraphSAGE 10,5, batch 16) with every
process on an emulated host of its own (tests/net/hosts.py), each graph
store's link capped at GNN_REPLICA_BENCH_MBIT (default 4) Mbit/s each way
(tbf on both ends of its veth, as netfaults.py's bandwidth scenarios), the
samplers', trainers' and the rest uncapped. Both runs in turn, R = 1 first,
then R = 2 (each store's own cap: twice the stores' bandwidth in all).

Prints per run `bench replicas R=.. minibatches_per_s=.. epoch_s=..
store_mb_per_s=..` (the training steps of epochs 2..E over their training
time, the trainers' step rate summed; the bytes the stores sent per
second of that) and `bench replicas ratio=..` (R = 2 / R = 1; the issue's
target is >= 1.6). Exits 0 unless a run fails; a missed target is
reported, not failed. Needs root (ip netns, tc); prints a SKIP line and
exits 0 without.

Knobs: GNN_BUILD, GNN_REPLICA_BENCH_MBIT (4), GNN_REPLICA_BENCH_EPOCHS (12),
GNN_CHAOS_KEEP=1 keeps the runs' folders.
"""
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from chaos import TRAIN, partition_tiny  # noqa: E402
from cluster import Cluster, kv  # noqa: E402
import hosts as hostlib  # noqa: E402

MBIT = int(os.environ.get("GNN_REPLICA_BENCH_MBIT", "4"))
EPOCHS = int(os.environ.get("GNN_REPLICA_BENCH_EPOCHS", "12"))
RUN_LIMIT_S = 300
ARGS = [a for a in TRAIN if not a.startswith(("--epochs=", "--checkpoint-interval-s="))] + \
    ["--epochs=%d" % EPOCHS, "--checkpoint-interval-s=0"]


def tbf(mbit):
    return ("tbf", "rate", "%dmbit" % mbit, "burst", "%dkb" % max(64, mbit // 4), "latency", "200ms")


def store_sent_bytes(c):
    """Bytes the graph stores sent, from their `traffic` lines at stop."""
    return sum(int(kv(ln, "sent_bytes") or 0) for n in c.procs if n.startswith("graphstore-")
               for ln in c.lines(n, "traffic"))


def run(work, part, replicas):
    h = hostlib.Hosts()
    d = os.path.join(work, "r%d" % replicas)
    try:
        c = Cluster(d, part, 2, 2, 2, ARGS, os.path.join(d, "ckpt"), hosts=h, replicas=replicas)
        for n in c.procs:
            if n.startswith("graphstore-"):
                h.qdisc(n, *tbf(MBIT))
        c.start()
        try:
            ok = c.wait("every trainer's summary", c.finished, RUN_LIMIT_S)
        finally:
            c.stop()
        if not ok:
            raise RuntimeError("R=%d: no summary within %d s (logs: %s)" % (replicas, RUN_LIMIT_S, d))
        rate, epoch_s = 0.0, []
        for t in c.trainers:
            eps = [ln for ln in c.lines(t, "epoch") if int(kv(ln, "epoch")) >= 2]
            if not eps:
                raise RuntimeError("R=%d: %s logged fewer than 2 epochs" % (replicas, t))
            train_s = [float(kv(ln, "epoch_s")) - float(kv(ln, "eval_s")) for ln in eps]
            rate += sum(int(kv(ln, "steps")) for ln in eps) / sum(train_s)
            epoch_s += train_s
        sent = store_sent_bytes(c)
        wall = sum(float(kv(c.lines(t, "summary")[-1], "train_s")) for t in c.trainers) / len(c.trainers)
        crc = kv(c.lines("trainer-0", "summary")[-1], "params_crc")
        print("bench replicas R=%d minibatches_per_s=%.1f epoch_s=%.3f store_mb_per_s=%.2f cap_mbit=%d "
              "params_crc=%s" % (replicas, rate, statistics.median(epoch_s), sent / wall / 1e6 if wall else 0,
                                 MBIT, crc), flush=True)
        return rate, crc
    finally:
        h.close()


def main():
    why = hostlib.unavailable()
    if why:
        print("SKIP bench replicas: emulated hosts unavailable: %s" % why)
        return 0
    if not hostlib.has_qdisc("tbf", "rate", "1mbit", "burst", "64kb", "latency", "200ms"):
        print("SKIP bench replicas: no tc tbf qdisc here")
        return 0
    work = tempfile.mkdtemp(prefix="gnn-replica-bench-")
    try:
        part = partition_tiny(work)
        r1, crc1 = run(work, part, 1)
        r2, crc2 = run(work, part, 2)
        print("bench replicas ratio=%.2f (R=2 / R=1 minibatches per second, each store's link at %d Mbit/s; "
              "target >= 1.6) same_params=%s" % (r2 / r1, MBIT, "yes" if crc1 == crc2 else "no"), flush=True)
        return 0
    finally:
        if os.environ.get("GNN_CHAOS_KEEP") == "1":
            print("logs kept in %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
