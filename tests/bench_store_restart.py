#!/usr/bin/env python3
"""make bench-mag-restart: a graph store killed (SIGKILL) in the middle of
an epoch with learnable embeddings at ogbn-mag's size, and how much it
cost. The synthetic `mag` preset in 2 partitions (build/bench/mag-e2e's,
made when missing), 2 graph stores logging their embeddings' changes
(--emb-wal-dir), 2 samplers and 2 trainers under the kubelet-like
supervisor of the chaos suite (tests/chaos/cluster.py: a process that
exits is started again on its ports, here at once). R-GCN, one epoch,
64-wide embeddings for the three featureless types (bench_mag.sh's run).

Three runs of the same settings, one after the other: undisturbed, then
with graphstore-1 killed a few steps after the epoch's first checkpoint
(so its restart reads that checkpoint's rows and replays its log since),
then the same kill with the stores logging nothing (gnn-local's and the
chart's default): the store comes back without its rows, and the ranks
go back to the checkpoint. Prints one line per run and then, for each
killed run (log=on, log=off):
  - went_back: trainers that logged `resumed` after the kill (the target
    with the log: 0), and redone_steps: trainer-0's steps done again;
  - same_params: the run ends with the undisturbed run's params_crc;
  - restart_ready_s: from the kill to the restarted store's `ready` line,
    and its `embeddings_recovered` (records replayed, seconds);
  - kill_gap_s: trainer-0's longest time without a finished step within
    30 s of the kill (its steps counter polled over HTTP every 0.2 s),
    against the undisturbed run's median and longest such time over its
    epoch (base_gap_median_s, base_gap_max_s);
  - back_s: from the kill until trainer-0 has passed the step it was at
    (the steps done again included): what the kill cost training (the
    target: 10 s or less);
  - extra_s: the run's wall time less the undisturbed run's. On 2 shared
    cores the same run varies by several seconds either way, so read it
    with back_s.
Exits non-zero when a run fails or does not finish. Keeps the logs in
BUILD_DIR/bench/mag-restart, not the checkpoints and logs of changes
(gigabytes).

Usage: bench_store_restart.py [BUILD_DIR]  (GNN_BENCH_EMBED_DIM: 64)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if len(sys.argv) > 1:
    os.environ["GNN_BUILD"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(ROOT, "tests", "chaos"))
from cluster import BIN, BUILD, Cluster, kv, log_time  # noqa: E402

EMBED_DIM = int(os.environ.get("GNN_BENCH_EMBED_DIM", "64"))
ARGS = ["--epochs=1", "--model=rgcn", "--fanouts=5,5", "--hidden=64", "--lr=0.01",
        "--embed-dim=%d" % EMBED_DIM]
RUN_LIMIT_S = 1200
WORK = os.path.join(BUILD, "bench", "mag-restart")
PART = os.path.join(BUILD, "bench", "mag-e2e", "partition")


def partition():
    if os.path.exists(os.path.join(PART, "meta.json")):
        return
    print("partitioning the mag preset into %s" % PART, flush=True)
    subprocess.run([BIN + "/gnn-partition", "--synthetic", "mag", "--parts", "2", "--out", PART, "--force"],
                   check=True, stdout=subprocess.DEVNULL, timeout=900)


def steps_total(c):
    m = re.search(r"^gnn_trainer_steps_total(?:\{[^}]*\})? (\S+)$", c.metrics("trainer-0"), re.M)
    return float(m.group(1)) if m else None


class Run:
    """One run: its cluster, trainer-0's steps over time, its wall time."""

    def __init__(self, name, log=True):
        self.name, self.log = name, log
        self.dir = os.path.join(WORK, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.c = Cluster(self.dir, PART, 2, 2, 2, ARGS, os.path.join(self.dir, "ckpt"), emb_wal=log)
        for p in self.c.procs.values():
            p.delay_s = 0.0
        self.steps = []        # (time, steps_total) at each change
        self.t0 = self.t_end = None

    def poll(self):
        n = steps_total(self.c)
        if n is not None and (not self.steps or n != self.steps[-1][1]):
            self.steps.append((time.time(), n))

    def wait(self, what, pred, limit_s):
        end = time.time() + limit_s
        while time.time() < end:
            self.c.tick()
            self.poll()
            if pred():
                return True
            time.sleep(0.2)
        print("gave up waiting for %s after %.0f s" % (what, limit_s), flush=True)
        return False

    def gaps(self, after, until):
        """The times between trainer-0's finished steps from the last one
        before `after` to the first one after `until`."""
        ts = [t for t, _ in self.steps]
        lo = max([i for i, t in enumerate(ts) if t <= after], default=0)
        hi = min([i for i, t in enumerate(ts) if t >= until], default=len(ts) - 1)
        return [b - a for a, b in zip(ts[lo:hi], ts[lo + 1:hi + 1])]

    def epoch_line(self):
        ln = self.c.lines("trainer-0", "epoch")
        return ln[-1] if ln else ""

    def summary(self, t):
        s = self.c.lines(t, "summary")
        return s[-1] if s else ""


def report(r):
    ep = r.epoch_line()
    print("%s wall_s=%.1f epoch_s=%s embed_s=%s compute_s=%s params_crc=%s test_acc=%s" % (
        r.name, r.t_end - r.t0, kv(ep, "epoch_s"), kv(ep, "embed_s"), kv(ep, "compute_s"),
        kv(r.summary("trainer-0"), "params_crc"), kv(r.summary("trainer-0"), "test_acc")), flush=True)


def kill_store(r):
    """graphstore-1 killed a few steps after the epoch's first checkpoint."""
    if not r.wait("a checkpoint within the epoch", lambda: r.c.lines("trainer-0", "checkpoint_saved"), RUN_LIMIT_S):
        return False
    n = r.steps[-1][1] if r.steps else 0
    r.wait("10 more steps", lambda: r.steps and r.steps[-1][1] >= n + 10, 120)
    killed = r.c.procs["graphstore-1"].popen
    r.kill_at = r.steps[-1][1] if r.steps else 0
    r.t_kill = time.time()
    r.c.kill("graphstore-1", signal.SIGKILL)
    print("%s: killed graphstore-1 pid=%d at trainer-0 step %d" % (r.name, killed.pid, r.kill_at), flush=True)
    return True


def judge(base, r):
    t_kill = r.t_kill
    resumed = [ln for ln in r.c.lines("trainer-0", "resumed") if (log_time(ln) or 0) >= t_kill]
    back = [t for t in r.c.trainers if any((log_time(ln) or 0) >= t_kill for ln in r.c.lines(t, "resumed"))]
    # one epoch: a resume's step is the steps it keeps of the kill's
    redone = r.kill_at - int(kv(resumed[0], "step") or 0) if resumed else 0
    ready = [log_time(ln) for ln in r.c.lines("graphstore-1", "ready") if (log_time(ln) or 0) >= t_kill]
    rec = [ln for ln in r.c.lines("graphstore-1", "embeddings_recovered") if (log_time(ln) or 0) >= t_kill]
    crc_b, crc_f = (kv(x.summary("trainer-0"), "params_crc") for x in (base, r))
    kill_gap = max(r.gaps(t_kill, t_kill + 30), default=0.0)
    base_gaps = sorted(base.gaps(0, base.t_end)[1:]) or [0.0]   # from the first step on
    passed = [t for t, n in r.steps if t > t_kill and n > r.kill_at + redone]
    print("store_restart log=%s went_back=%d redone_steps=%d same_params=%s restart_ready_s=%s "
          "recovered_records=%s recover_s=%s kill_gap_s=%.1f base_gap_median_s=%.2f base_gap_max_s=%.1f "
          "back_s=%s extra_s=%.1f" % (
              "on" if r.log else "off", len(back), redone, "yes" if crc_b == crc_f else "no",
              "%.1f" % (ready[0] - t_kill) if ready else "none",
              kv(rec[-1], "records") if rec else "none", kv(rec[-1], "seconds") if rec else "none",
              kill_gap, base_gaps[len(base_gaps) // 2], base_gaps[-1],
              "%.1f" % (passed[0] - t_kill) if passed else "none", (r.t_end - r.t0) - (base.t_end - base.t0)),
          flush=True)


def main():
    for b in ("gnn-graphstore", "gnn-sampler", "gnn-trainer", "gnn-partition"):
        if not os.access(os.path.join(BIN, b), os.X_OK):
            sys.exit("bench_store_restart: %s/%s is missing (make)" % (BIN, b))
    partition()
    print("store restart benchmark: preset=mag parts=2 samplers=2 trainers=2 epochs=1 embed_dim=%d "
          "cpus=%d" % (EMBED_DIM, os.cpu_count()), flush=True)
    runs = [Run("undisturbed"), Run("killed"), Run("killed_without_log", log=False)]
    ok = True
    try:
        for r in runs:
            r.t0 = time.time()
            r.c.start()
            ok = (r is runs[0] or kill_store(r)) and r.wait("every trainer's summary", r.c.finished, RUN_LIMIT_S)
            if not ok:
                break
            r.t_end = time.time()
            report(r)
            r.c.stop()
    finally:
        for r in runs:
            r.c.stop()
            for big in ("ckpt", "wal"):   # gigabytes each; the logs stay
                shutil.rmtree(os.path.join(r.dir, big), ignore_errors=True)
    if not ok:
        for r in runs:
            for t in ("trainer-0", "graphstore-1"):
                print("-- last lines of %s's %s:" % (r.name, t))
                for ln in r.c.text(t).splitlines()[-6:]:
                    print("   " + ln[:300])
        sys.exit(1)
    for r in runs[1:]:
        judge(runs[0], r)


if __name__ == "__main__":
    main()
