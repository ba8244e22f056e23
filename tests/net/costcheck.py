#!/usr/bin/env python3
"""The cost model's check point (docs/scale.md, "ogbn-papers100M: a cost
model"): one measured epoch time under a bandwidth cap that the model was
not fitted to.

2 graph stores, 2 samplers and 2 trainers, each process on an emulated host
of its own (tests/net/hosts.py: a network namespace, a veth to a bridge),
train GraphSAGE on a synthetic graph (default `medium`, METIS into 2 parts)
with the products benchmark's settings (3 layers 15,10,5, hidden 256, batch
1024, `--features-from stores --cache-ratio 0.2`, `--prefetch 4`):

  1. fit: a run without a cap. From epochs 2..E it takes the model's inputs:
     steps per epoch, the compute and all-reduce time per step, the wait
     per epoch (the head: the first minibatch of each epoch, sampled and
     fetched before anything overlaps it), and the bytes per step through every host's
     link (each way; the processes' own /proc/PID/net/dev counters, over
     the training part of each epoch only, validation left out);
  2. the cap: every host's link capped (tbf on both ends of each veth, as
     tests/net/netfaults.py's bandwidth scenarios) at the rate that makes the
     busiest link's bytes per step GNN_COSTCHECK_RATIO (1.5) times the
     compute per step, so that both matter; the link's goodput at that rate
     is measured with a plain TCP stream between two hosts of their own;
  3. prediction (costmodel.pipeline_epoch): the per-step stages overlap
     (the loader fetches minibatches k+1..k+4 while step k computes), so an
     epoch's training takes head + m max(link, cpu) + min(link, cpu), where
     link = the busiest link's bytes per step / goodput and cpu = compute +
     all-reduce per step (the ring is in the step, not overlapped), its
     bytes at the capped rate;
  4. check: a run under the cap; the measured training time of epochs
     2..E (epoch_s - eval_s) against the prediction, and against what no
     overlap would give (head + m (link + cpu)).

Prints `costcheck predicted_s=.. measured_s=.. ratio=..`, and to see where
a miss comes from: how busy the busiest link was, 1-s bins of the links
under the cap (`cap bins=..`), the goodput with 4 streams (not used), each
process's CPU per step; each run's counters are kept in its folder
(samples.json). Exits 0 unless a
run fails (a model that misses is reported, not failed). Needs root (ip
netns, tc); prints a SKIP line and exits 0 without.

Knobs: GNN_BUILD (build dir), GNN_COSTCHECK_PRESET (medium),
GNN_COSTCHECK_EPOCHS (4), GNN_COSTCHECK_RATIO (1.5), GNN_COSTCHECK_MBIT
(a cap of your own instead), GNN_COSTCHECK_WORK (build/bench/costcheck;
the partition is kept there and reused, the runs' logs too).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from cluster import BIN, BUILD, Cluster, kv, log_time  # noqa: E402
import costmodel  # noqa: E402
import hosts as hostlib  # noqa: E402

PRESET = os.environ.get("GNN_COSTCHECK_PRESET", "medium")
EPOCHS = int(os.environ.get("GNN_COSTCHECK_EPOCHS", "4"))
RATIO = float(os.environ.get("GNN_COSTCHECK_RATIO", "1.5"))
WORK = os.environ.get("GNN_COSTCHECK_WORK") or os.path.join(BUILD, "bench", "costcheck")
RUN_LIMIT_S = 420
PREFETCH = 4
# The products benchmark's model and feature path (tests/bench_products.sh);
# a small validation sample: validation is not part of the check.
TRAIN = ["--epochs=%d" % EPOCHS, "--batch-size=1024", "--layers=3", "--fanouts=15,10,5", "--hidden=256",
         "--features-from=stores", "--cache-ratio=0.2", "--prefetch=%d" % PREFETCH, "--val-nodes=1024",
         "--test-nodes=1024", "--checkpoint-interval-s=0", "--seed=1"]


def partition():
    part = os.path.join(WORK, PRESET, "partition")
    if not os.path.exists(os.path.join(part, "meta.json")):
        os.makedirs(os.path.dirname(part), exist_ok=True)
        subprocess.run([BIN + "/gnn-partition", "--synthetic", PRESET, "--parts", "2", "--out", part, "--force"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    return part


# ---- per-process counters ------------------------------------------------

def net_dev(pid):
    """(rx, tx) bytes of eth0 in pid's network namespace (what tbf meters)."""
    with open("/proc/%d/net/dev" % pid) as f:
        for ln in f:
            name, _, rest = ln.partition(":")
            if name.strip() == "eth0":
                v = rest.split()
                return int(v[0]), int(v[8])
    return 0, 0


TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rpartition(")")[2].split()
    return (int(v[11]) + int(v[12])) / TICK


class Sampler:
    """Every process's link and CPU counters, about 5 times a second (from
    the supervisor's loop: no thread of its own)."""

    def __init__(self, c):
        self.c, self.rows, self.last = c, [], 0.0

    def __call__(self):
        now = time.time()
        if now - self.last < 0.2:
            return
        self.last = now
        row = {}
        for n, p in self.c.procs.items():
            pid = p.pid()
            if pid is None:
                continue
            try:
                rx, tx = net_dev(pid)
                row[n] = (rx, tx, cpu_s(pid))
            except (OSError, ValueError, IndexError):
                pass
        self.rows.append((now, row))

    def at(self, name, i, t):
        """Counter i (0 rx, 1 tx, 2 cpu) of name at time t, interpolated."""
        pts = [(ts, r[name][i]) for ts, r in self.rows if name in r]
        if not pts or t <= pts[0][0]:
            return pts[0][1] if pts else 0.0
        for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
        return pts[-1][1]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def epochs_of(c, name="trainer-0"):
    """{epoch: dict of the epoch line's figures and its end time}."""
    out = {}
    for ln in c.lines(name, "epoch"):
        e = {k: float(kv(ln, k) or 0) for k in ("epoch_s", "wait_s", "compute_s", "compute_cpu_s",
                                                  "allreduce_s", "eval_s", "steps")}
        e["end"] = log_time(ln)
        out[int(kv(ln, "epoch"))] = e
    return out


def run(name, part, qdisc=None):
    """One run on emulated hosts (capped by qdisc, tc's words, on every
    host); returns its figures over epochs 2..EPOCHS."""
    h = hostlib.Hosts()
    d = os.path.join(WORK, PRESET, "run-" + name)
    shutil.rmtree(d, ignore_errors=True)   # the last run's logs of this name
    try:
        c = Cluster(d, part, 2, 2, 2, TRAIN, os.path.join(d, "ckpt"), hosts=h)
        if qdisc:
            for n in c.procs:
                h.qdisc(n, *qdisc)
        smp = Sampler(c)
        load0 = loadavg()
        t0 = time.time()
        c.start()
        try:
            ok = c.wait("every trainer's summary", lambda: smp() or c.finished(), RUN_LIMIT_S)
        finally:
            c.stop()
        if not ok:
            raise RuntimeError("run %s: no summary within %d s (logs: %s)" % (name, RUN_LIMIT_S, d))
        wall = time.time() - t0
        ep = epochs_of(c)
        measured = [k for k in sorted(ep) if k >= 2]
        if not measured:
            raise RuntimeError("run %s: fewer than 2 epochs logged" % name)
        steps = sum(ep[k]["steps"] for k in measured)
        # each epoch's training part: [end - epoch_s, end - eval_s]
        wins = [(ep[k]["end"] - ep[k]["epoch_s"], ep[k]["end"] - ep[k]["eval_s"]) for k in measured]
        per_step = {}
        for n in c.procs:
            rx = sum(smp.at(n, 0, b) - smp.at(n, 0, a) for a, b in wins)
            tx = sum(smp.at(n, 1, b) - smp.at(n, 1, a) for a, b in wins)
            cpu = sum(smp.at(n, 2, b) - smp.at(n, 2, a) for a, b in wins)
            per_step[n] = (rx / steps, tx / steps, cpu / steps)
        params = int(kv(c.lines("trainer-0", "model")[0], "params"))
        with open(os.path.join(d, "samples.json"), "w") as f:   # for a look afterwards: links over time
            json.dump({"epochs": ep, "samples": smp.rows}, f)
        feats = [ln for ln in c.lines("trainer-0", "features")]
        mean = lambda key: statistics.mean(ep[k][key] for k in measured)  # noqa: E731
        return {
            "bins": link_bins(smp, wins, max(per_step, key=lambda n: max(per_step[n][:2]))),
            "wall_s": wall, "epochs": measured, "m": steps / len(measured), "params": params,
            "train_s": [ep[k]["epoch_s"] - ep[k]["eval_s"] for k in measured],
            "wait_s": mean("wait_s"), "compute_s": mean("compute_s"), "allreduce_s": mean("allreduce_s"),
            "compute_cpu_s": mean("compute_cpu_s"), "per_step": per_step,
            "cache_hit": kv(feats[-1], "cache_hit") if feats else None, "samples": len(smp.rows),
            "load": (load0, loadavg()),
        }
    finally:
        h.close()


# ---- the link's goodput at a rate -----------------------------------------

RECV = r"""
import socket, sys, threading, time
def rx():
    for ln in open('/proc/self/net/dev'):
        n, _, r = ln.partition(':')
        if n.strip() == 'eth0':
            return int(r.split()[0])
k = int(sys.argv[2]); s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 9000)); s.listen(k); print('ready', flush=True)
lock = threading.Lock(); at = {'n': 0}
def drain(c):
    buf = bytearray(1 << 20)
    while True:
        got = c.recv_into(buf)
        if not got:
            return
        with lock:
            at['n'] += got
            if 't0' not in at and at['n'] >= 4 << 20:   # past slow start
                at['t0'], at['r0'], at['n0'] = time.time(), rx(), at['n']
            if 't0' in at:
                at['t1'], at['r1'], at['n1'] = time.time(), rx(), at['n']
ts = [threading.Thread(target=drain, args=(s.accept()[0],)) for _ in range(k)]
[t.start() for t in ts]; [t.join() for t in ts]
print(at['r1'] - at['r0'], at['n1'] - at['n0'], at['t1'] - at['t0'], flush=True)
"""
SEND = r"""
import socket, sys, threading, time
k = int(sys.argv[2]); end = time.time() + float(sys.argv[3]); b = bytes(1 << 20)
def go():
    c = socket.create_connection((sys.argv[1], 9000))
    while time.time() < end:
        c.sendall(b)
    c.close()
ts = [threading.Thread(target=go) for _ in range(k)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def goodput(qdisc, streams=1, seconds=5.0):
    """Bytes per second `streams` TCP streams get through the cap together,
    counted as the runs count them (eth0's rx counter of the receiving
    host) and as payload."""
    h = hostlib.Hosts()
    try:
        h.add("send")
        b = h.add("recv")
        for n in ("send", "recv"):
            h.qdisc(n, *qdisc)
        r = subprocess.Popen(h.exec_argv("recv") + [sys.executable, "-c", RECV, b, str(streams)],
                             stdout=subprocess.PIPE, text=True)
        if r.stdout.readline().strip() != "ready":
            raise RuntimeError("goodput: the receiver did not start")
        subprocess.run(h.exec_argv("send") + [sys.executable, "-c", SEND, b, str(streams), str(seconds)],
                       check=True, timeout=seconds + 30)
        out = r.communicate(timeout=30)[0].split()
        counted, payload, dt = int(out[0]), int(out[1]), float(out[2])
        return counted / dt, payload / dt
    finally:
        h.close()


def tbf(mbit):
    # as netfaults.py's bandwidth scenarios
    return ("tbf", "rate", "%dmbit" % mbit, "burst", "%dkb" % max(64, mbit // 4), "latency", "200ms")


def stages(fit, gp):
    """The model's per-step stages at goodput gp (bytes/s) from a fit run."""
    m, T = fit["m"], 2
    ring = 2 * (T - 1) / T * 4 * fit["params"]      # bytes each trainer sends and receives per step
    busiest = max(max(rx, tx) for rx, tx, _ in fit["per_step"].values())
    link = busiest / gp
    cpu = (fit["compute_s"] + fit["allreduce_s"]) / m + ring / gp
    return link, cpu, busiest, ring


def link_bins(smp, wins, busiest):
    """MB moved per second, in 1-s bins over the training windows: the
    busiest link's (its busier direction) and each trainer's receiving."""
    def bins(name, i):
        out = []
        for a, b in wins:
            t = a
            while t + 1 <= b:
                out.append((smp.at(name, i, t + 1) - smp.at(name, i, t)) / 1e6)
                t += 1
        return out
    rx, tx = smp.at(busiest, 0, wins[-1][1]), smp.at(busiest, 1, wins[-1][1])
    return {"busiest": bins(busiest, 0 if rx >= tx else 1), "t0": bins("trainer-0", 0), "t1": bins("trainer-1", 0)}


def cpu_sum(r):
    return sum(cpu for _, _, cpu in r["per_step"].values())


def main():
    why = hostlib.unavailable()
    if why:
        print("SKIP costcheck: emulated hosts unavailable: %s" % why)
        return 0
    t_start = time.time()
    part = partition()
    print("costcheck preset=%s parts=2 samplers=2 trainers=2 epochs=%d (epochs 2..%d measured) ratio=%.2f"
          " work=%s" % (PRESET, EPOCHS, EPOCHS, RATIO, os.path.join(WORK, PRESET)), flush=True)

    fit = run("fit", part)
    head = fit["wait_s"]
    m = fit["m"]
    t_cpu0 = (fit["compute_s"] + fit["allreduce_s"]) / m
    print("fit steps_per_epoch=%.0f train_s=%s wait_s=%.2f compute_s=%.2f allreduce_s=%.2f compute_cpu_s=%.2f "
          "cache_hit=%s params=%d cpu_s_per_step=%.2f (all processes) load=%.1f-%.1f wall_s=%.0f" % (
              m, ",".join("%.2f" % x for x in fit["train_s"]), fit["wait_s"], fit["compute_s"],
              fit["allreduce_s"], fit["compute_cpu_s"], fit["cache_hit"], fit["params"], cpu_sum(fit),
              fit["load"][0], fit["load"][1], fit["wall_s"]), flush=True)
    for n, (rx, tx, cpu) in sorted(fit["per_step"].items()):
        print("fit link %s rx_mb_per_step=%.2f tx_mb_per_step=%.2f cpu_s_per_step=%.3f" % (n, rx / 1e6, tx / 1e6, cpu))
    busiest = max(max(rx, tx) for rx, tx, _ in fit["per_step"].values())
    # the cap: the busiest link's bytes per step take RATIO x the compute per step
    mbit = int(os.environ.get("GNN_COSTCHECK_MBIT") or max(1, round(busiest * 8 / (RATIO * t_cpu0) / 1e6)))
    counted, payload = goodput(tbf(mbit))
    print("cap mbit=%d goodput_mb_per_s=%.2f (eth0 counter) payload_mb_per_s=%.2f nominal_mb_per_s=%.2f "
          "goodput_4_streams_mb_per_s=%.2f (not used)" % (
              mbit, counted / 1e6, payload / 1e6, mbit / 8, goodput(tbf(mbit), streams=4)[0] / 1e6), flush=True)

    link, cpu, busiest, ring = stages(fit, counted)
    predicted = costmodel.pipeline_epoch(head, m, [link, cpu])
    serial = head + m * (link + cpu)
    print("model head_s=%.2f m=%.0f link_s_per_step=%.3f (busiest %.2f MB / %.2f MB/s) cpu_s_per_step=%.3f "
          "(compute+allreduce %.3f + ring %.2f MB at the cap) predicted_train_s=%.2f no_overlap_s=%.2f" % (
              head, m, link, busiest / 1e6, counted / 1e6, cpu, t_cpu0, ring / 1e6, predicted, serial), flush=True)

    cap = run("cap%d" % mbit, part, tbf(mbit))
    got = statistics.mean(cap["train_s"])
    print("cap steps_per_epoch=%.0f train_s=%s wait_s=%.2f compute_s=%.2f allreduce_s=%.2f compute_cpu_s=%.2f "
          "cache_hit=%s cpu_s_per_step=%.2f (all processes) load=%.1f-%.1f wall_s=%.0f" % (
              cap["m"], ",".join("%.2f" % x for x in cap["train_s"]), cap["wait_s"], cap["compute_s"],
              cap["allreduce_s"], cap["compute_cpu_s"], cap["cache_hit"], cpu_sum(cap), cap["load"][0],
              cap["load"][1], cap["wall_s"]), flush=True)
    # how busy the busiest link was: its bytes over the training time, against the goodput
    b_cap = max(max(rx, tx) for rx, tx, _ in cap["per_step"].values())
    print("cap busiest_link_busy=%.2f (its bytes per step x steps / training time / goodput)" % (
        b_cap * cap["m"] / got / counted), flush=True)
    # where the link time went, second by second: a link below LOW MB/s in a
    # 1-s bin counts as idle for that second
    low = 0.6 * counted / 1e6
    bz, t0, t1 = cap["bins"]["busiest"], cap["bins"]["t0"], cap["bins"]["t1"]
    busy = [x for x in bz if x >= low]
    print("cap bins=%d busiest_busy_mb_per_s=%.1f busiest_low_share=%.2f one_trainer_low=%.2f both_trainers_low=%.2f "
          "(1-s bins; low: under %.1f MB/s)" % (
              len(bz), statistics.mean(busy) if busy else 0.0, 1 - len(busy) / max(1, len(bz)),
              sum((a < low) != (b < low) for a, b in zip(t0, t1)) / max(1, len(t0)),
              sum(a < low and b < low for a, b in zip(t0, t1)) / max(1, len(t0)), low), flush=True)
    for n, (rx, tx, c) in sorted(cap["per_step"].items()):
        print("cap link %s rx_mb_per_step=%.2f tx_mb_per_step=%.2f cpu_s_per_step=%.3f" % (n, rx / 1e6, tx / 1e6, c))
    print("costcheck mbit=%d predicted_s=%.2f measured_s=%.2f ratio=%.2f (measured/predicted; no overlap would "
          "predict %.2f s, ratio %.2f) per epoch's training, mean of epochs 2..%d; total_s=%.0f" % (
              mbit, predicted, got, got / predicted, serial, got / serial, EPOCHS, time.time() - t_start), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.SubprocessError) as e:
        print("FAIL costcheck: %s" % e, flush=True)
        sys.exit(1)
