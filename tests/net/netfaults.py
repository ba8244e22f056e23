#!/usr/bin/env python3
"""Network faults (docs/reliability.md, "Network faults"): the chaos suite's
run (tests/chaos/chaos.py: 2 graph stores, 2 samplers, 2 trainers, the
synthetic `tiny` graph, 40 epochs) with every process on an emulated host
of its own (tests/net/hosts.py: a network namespace, a veth to a shared
bridge, its own address), and one network fault per scenario.

Each scenario is judged as the chaos suite judges its own (chaos.judge:
every trainer's summary, the undisturbed run's params_crc after every
epoch and at the end, no trainer silent for more than 15 s, no process
exiting on its own), plus what the scenario promises (below). It prints
PASS/FAIL/SKIP lines and `time NAME extra_s=.. gap_s=..` (chaos.judge's),
and for some a `cost NAME ...` line.

Usage: netfaults.py [SCENARIO...]  (default: all but ON_REQUEST's;
GNN_BUILD = the build dir; GNN_CHAOS_KEEP=1 keeps the logs). Needs root,
ip netns, veth, a bridge and iptables; prints SKIP lines and exits 0
without them. Latency needs tc's netem or else iptables' nat table (the
delaying relay, hosts.py's Hosts.delay).
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
from chaos import Scenario, base_of, chosen, epoch_pause, partition_tiny, reference, remove_work, run  # noqa: E402
from cluster import kv, log_time  # noqa: E402
import hosts as hostlib  # noqa: E402

PARTITION_S = 30


def lines_after(c, name, event, t):
    return [ln for ln in c.lines(name, event) if (log_time(ln) or 0) >= t]


def store_partitioned(s):
    """(#3) graphstore-1 cut off from everything (DROP both ways, no reset)
    for 30 s from epoch 3: training waits, saying what for, and goes on
    after the heal; our share of the stall at most the partition + 15 s."""
    h = s.c.hosts
    s.epoch(3)
    t_cut = time.time()
    h.isolate("graphstore-1")
    s.c.sleep(PARTITION_S)
    h.heal("graphstore-1")

    def after(s):
        why = []
        waits = [ln for t in s.c.trainers for ln in lines_after(s.c, t, "waiting_for_minibatch", t_cut)]
        if not waits:
            why.append("no trainer logged waiting_for_minibatch during the partition")
        extra = s.t_run - s.base["t"]
        if extra > PARTITION_S + 15:
            why.append("the run took %.1f s more than the undisturbed one (partition %d s + 15)" %
                       (extra, PARTITION_S))
        return why
    s.after = after


def node_lost(s):
    """(#6) a whole node: trainer-1, graphstore-1 and sampler-1 killed
    together at epoch 10, each restarted 5 s later."""
    node = ("trainer-1", "graphstore-1", "sampler-1")
    for n in node:
        s.c.procs[n].delay_s = 5.0
    s.epoch(10)
    for n in node:
        s.c.kill(n)


def no_failed_minibatch(s):
    bad = [ln for t in s.c.trainers for ln in s.c.lines(t, "minibatch_failed")]
    return ["%d minibatch_failed lines, first: %s" % (len(bad), bad[0][:200])] if bad else []


# How latency is made here (main() decides): "netem", or "relay" where the
# kernel has no netem (hosts.py's Hosts.delay).
LATENCY = {"how": "netem"}


def delay_links(s, ms, jitter_ms):
    """ms +- jitter_ms between any two hosts, each way: netem on both ends
    of every veth (half on each), or the delaying relay. Set before the
    processes start (a fault's `prepare`): the relay's DNAT rules only
    catch connections dialled after them."""
    if LATENCY["how"] == "netem":
        for n in s.c.procs:
            s.c.hosts.qdisc(n, "netem", "delay", "%gms" % (ms / 2), "%gms" % (jitter_ms / 2))
    else:
        s.c.hosts.delay(ms, jitter_ms, (7000, 8000))
    s.notes.append("latency_by=" + LATENCY["how"])


def slow_links(s):
    """(#1) 20 ms +- 5 ms on every link, whole run (slow_links.prepare)."""
    s.after = no_failed_minibatch


slow_links.prepare = lambda s: delay_links(s, 20, 5)


def lossy_links(s):
    """(#1) 1% of the packets every host receives dropped, whole run."""
    for n in s.c.procs:
        s.c.hosts.lose(n, 0.01)
    s.after = no_failed_minibatch


def slow_lossy_links(s):
    """(#1) both: 20 ms +- 5 ms on every link and 1% of the packets each
    host receives dropped, whole run."""
    lossy_links(s)


slow_lossy_links.prepare = slow_links.prepare


def ring_one_way(s):
    """(#4) trainer-0 stops receiving from trainer-1 for 20 s from epoch 5
    (trainer-1 still receives from trainer-0; both reach samplers and
    stores): the wait is logged, the ring goes on after the heal."""
    h = s.c.hosts
    s.epoch(5)
    t_cut = time.time()
    h.drop_from("trainer-0", "trainer-1")
    s.c.sleep(20)
    h.heal("trainer-0")

    def after(s):
        waits = [ln for t in s.c.trainers for ln in lines_after(s.c, t, "waiting_for_peer", t_cut)]
        return [] if waits else ["no trainer logged waiting_for_peer during the one-way partition"]
    s.after = after


DETECT_S = 10.0   # a vanished graph store noticed by its samplers within this


def vanish_and_move(s, n):
    """n's host vanishes (link down: no FIN, no RST, ever); n is killed there
    and restarted 5 s later on another host (another namespace and address;
    everyone dials it by name). Returns when the link went down."""
    c, h = s.c, s.c.hosts
    p = c.procs[n]
    p.delay_s = 5.0
    t_down = time.time()
    h.link(n, False)
    p.restart = False
    c.kill(n)   # on a host that is gone: what it sends on its way out goes nowhere
    c.wait(n + " gone", lambda: not p.alive(), 10)
    (old_ns, old_addr), (new_ns, new_addr) = h.move(n)
    p.argv = [new_ns if a == old_ns else a.replace(old_addr, new_addr) for a in p.argv]
    p.restart = True
    s.notes.append("moved=%s->%s" % (old_addr, new_addr))
    return t_down


def store_vanished(s):
    """(#5) graphstore-1's host vanishes at epoch 3 (its link down: no FIN,
    no RST, ever) and its pod starts 5 s later on another host (another
    namespace and address; everyone dials it by name): the samplers notice
    the silence within DETECT_S, find the new host, and training goes on."""
    c, n = s.c, "graphstore-1"
    s.epoch(3)
    t_down = vanish_and_move(s, n)

    def after(s):
        smp = [x for x in c.procs if x.startswith("sampler-")]
        said = [log_time(ln) for x in smp for ev in ("call_failed", "connection_dropped")
                for ln in lines_after(c, x, ev, t_down) if n in ln]
        back = [log_time(ln) for x in smp for ln in lines_after(c, x, "graphstore_reachable_again", t_down)]
        up = [log_time(ln) for ln in lines_after(c, n, "ready", t_down)]
        if not said:
            return ["no sampler logged a failed call to %s after its host vanished" % n]
        detect = min(said) - t_down
        s.notes.append("detected_s=%.1f" % detect)
        if not back or not up:
            return ["no sampler found %s on its new host (ready lines: %d)" % (n, len(up))]
        s.notes.append("found_again_s=%.1f" % (max(back) - up[0]))
        return [] if detect <= DETECT_S else ["the silence was noticed after %.1f s (bound %.0f s)" % (detect, DETECT_S)]
    s.after = after


STORES_EXTRA_S = 25.0


def stores_vanished(s):
    """store_vanished with the trainers reading feature rows from the stores
    themselves (stores_*): their own calls to graphstore-1 hang on the dead
    connection too, and must find it within --store-timeout-ms (5 s), not
    the 30 s of a minibatch call; so the run may take at most
    STORES_EXTRA_S more than the undisturbed one (the 5 s until the move
    included; their log lines while they wait keep the gap bound from
    seeing it)."""
    store_vanished(s)
    first = s.after

    def after(s):
        why = first(s)
        extra = s.t_run - s.base["t"]
        if extra > STORES_EXTRA_S:
            why.append("the run took %.1f s more than the undisturbed one (bound %.0f s)" % (extra, STORES_EXTRA_S))
        return why
    s.after = after


SILENCE_S = 10.0  # the trainers' --peer-silence-s (default)


def trainer_vanished(s):
    """(#5) trainer-1's host vanishes at epoch 3 (its link down: no FIN, no
    RST, ever) and its pod starts 5 s later on another host: trainer-0, waiting
    for it in the ring, hears not even its heartbeat and gives up on it
    within SILENCE_S (+ 5 s for the step it was in), forms the ring again
    with the moved trainer-1 (dialled by name) and the run ends as the
    undisturbed one did."""
    c, n = s.c, "trainer-1"
    s.epoch(3)
    s.frozen.add(n)  # its own silence (host gone, then restarting) is not judged
    t_down = vanish_and_move(s, n)

    def after(s):
        silent = [log_time(ln) for ln in lines_after(c, "trainer-0", "peer_silent", t_down)]
        formed = [log_time(ln) for ln in lines_after(c, "trainer-0", "ring_connected", t_down)]
        if not silent:
            return ["trainer-0 logged no peer_silent after trainer-1's host vanished"]
        detect = silent[0] - t_down
        s.notes.append("detected_s=%.1f" % detect)
        if not formed:
            return ["trainer-0 never formed the ring again"]
        s.notes.append("ring_again_s=%.1f" % (formed[0] - t_down))
        bound = SILENCE_S + 5
        return [] if detect <= bound else ["the silence was noticed after %.1f s (bound %.0f s)" % (detect, bound)]
    s.after = after


REPLICA_PAUSE_S = 2.0


def replica_gone(how):
    """(issue 39) R = 2 (the chaos suite's replicas_* runs): graphstore-1,
    one of partition 1's two stores, cut off from epoch 10 on, its
    connections open and silent: its host vanishes (link down: no FIN, no
    RST) until the run ends ("vanished"), or every packet to and from it
    is dropped for PARTITION_S or until the run ends, which comes first
    (a few seconds: "partitioned_30s"). The samplers and
    trainers go on with graphstore-3: no pause between two epochs over
    REPLICA_PAUSE_S, the undisturbed parameters (chaos.judge)."""
    def fault(s):
        c, h, n = s.c, s.c.hosts, "graphstore-1"
        s.epoch(10)
        t_cut = time.time()
        if how == "vanished":
            h.link(n, False)
            c.wait("every trainer's summary", c.finished, 300)
            h.link(n, True)
        else:
            h.isolate(n)
            c.wait("every trainer's summary", c.finished, PARTITION_S)
            h.heal(n)

        def after(s):
            done = [log_time(ln) for ln in c.lines("trainer-0", "summary")]
            if done and done[0] is not None and done[0] < t_cut:
                return ["the run ended before the fault (epoch 10 too late: make the run longer)"]
            pause = max(epoch_pause(c, t) for t in c.trainers)
            s.notes.append("pause_s=%.2f" % pause)
            why = [] if pause <= REPLICA_PAUSE_S else \
                ["a pause of %.2f s between two epochs (at most %.1f s with a replica left)" % (pause, REPLICA_PAUSE_S)]
            back = [t for t in c.trainers if any((log_time(ln) or 0) >= t_cut for ln in c.lines(t, "resumed"))]
            if back:
                why.append("%s went back to a checkpoint with a replica of each partition alive" % ",".join(back))
            return why
        s.after = after
    return fault


def minibatch_bytes(c):
    """Bytes per minibatch the samplers sent (their `traffic` lines at stop)."""
    sent = reqs = 0
    for x in c.procs:
        for ln in c.lines(x, "traffic") if x.startswith("sampler-") else []:
            sent += int(kv(ln, "minibatch_sent_bytes") or 0)
            reqs += int(kv(ln, "minibatch_requests") or 0)
    return sent / reqs if reqs else 0.0


def median_epoch_s(c, name="trainer-0"):
    xs = sorted(float(kv(ln, "epoch_s")) for ln in c.lines(name, "epoch"))
    return xs[len(xs) // 2] if xs else 0.0


def bandwidth(mbit):
    """(#2) every host capped at `mbit` Mbit/s each way (tbf on both ends
    of its veth), whole run: an epoch takes at least the time its
    minibatches' bytes need through a trainer's link, and the run still
    ends with the undisturbed parameters."""
    def fault(s):
        for n in s.c.procs:
            s.c.hosts.qdisc(n, "tbf", "rate", "%dmbit" % mbit, "burst", "%dkb" % max(64, mbit // 4),
                            "latency", "200ms")

        def after(s):
            per_mb = s.base["mb_bytes"]
            steps = int(kv(s.c.lines("trainer-0", "epoch")[-1], "steps"))
            predicted = steps * per_mb * 8 / (mbit * 1e6)
            got, base = median_epoch_s(s.c), s.base["epoch_s"]
            print("cost %s epoch_s=%.3f undisturbed_epoch_s=%.3f minibatch_bytes=%.0f steps=%d "
                  "transfer_s=%.3f (bytes/rate)" % (s.name, got, base, per_mb, steps, predicted), flush=True)
            return [] if got >= 0.8 * predicted else \
                ["median epoch %.3f s, below what the bytes need at %d Mbit/s (%.3f s)" % (got, mbit, predicted)]
        s.after = after
    return fault


SCENARIOS = {
    "graphstore_partitioned_30s": store_partitioned,
    "node_lost": node_lost,
    "latency_20ms": slow_links,
    "loss_1pct": lossy_links,
    "latency_20ms_loss_1pct": slow_lossy_links,
    "ring_one_way_20s": ring_one_way,
    "graphstore_vanished_moved": store_vanished,
    "trainer_vanished_moved": trainer_vanished,
    "stores_graphstore_vanished_moved": stores_vanished,
    "bandwidth_1gbit": bandwidth(1000),
    "bandwidth_100mbit": bandwidth(100),
    # where the bytes, not the computing, set the pace (0.4 s an epoch)
    "bandwidth_20mbit": bandwidth(20),
    # two stores per partition (chaos' REPLICAS): one cut off, no pause
    "replicas_graphstore_vanished": replica_gone("vanished"),
    "replicas_stores_graphstore_vanished": replica_gone("vanished"),
    "replicas_graphstore_partitioned_30s": replica_gone("partitioned_30s"),
    # the same with learnable embeddings on both replicas (judged against
    # the embed100 family's own undisturbed run): no rank back to a
    # checkpoint either
    "replicas_embed100_graphstore_vanished": replica_gone("vanished"),
    "replicas_embed100_graphstore_partitioned_30s": replica_gone("partitioned_30s"),
}
BY_NAME = ("graphstore_vanished_moved", "trainer_vanished_moved", "stores_graphstore_vanished_moved")
# Throughput cost against the undisturbed run is printed for these.
COST = ("latency_20ms", "loss_1pct", "latency_20ms_loss_1pct")
# Run only when named: latency_20ms and loss_1pct cover each fault, and
# both together would add another minute or more to `make test-net`.
ON_REQUEST = ("latency_20ms_loss_1pct",)


def run_one(work, partdir, name, fault, base):
    h = hostlib.Hosts(by_name=name in BY_NAME)
    try:
        s = Scenario(work, partdir, name, hosts=h)
        s.base = base
        prepare = getattr(fault, "prepare", None)
        try:
            if prepare is not None:
                prepare(s)
        except Exception as e:  # as run() says of a broken scenario
            print("FAIL net_%s: scenario error before the start: %r" % (name, e), flush=True)
            return False, s
        ok, _ = run(s, fault, base, prefix="net_")
        if ok and name in COST and base is not None:
            print("cost %s total_s=%.1f undisturbed_s=%.1f throughput=%.2fx" %
                  (name, s.t_run, base["t"], base["t"] / s.t_run), flush=True)
        return ok, s
    finally:
        h.close()


def main():
    names = chosen(sys.argv[1:], SCENARIOS)
    if names is None:
        return 2
    if not sys.argv[1:]:
        names = [n for n in names if n not in ON_REQUEST]
    why = hostlib.unavailable()
    if why:
        for n in names:
            print("SKIP net_%s: emulated hosts unavailable: %s" % (n, why))
        return 0
    skipped = 0
    if any(n.startswith("latency_") for n in names) and not hostlib.has_qdisc("netem", "delay", "1ms"):
        LATENCY["how"] = "relay"
        if not hostlib.has_nat():
            for n in [n for n in names if n.startswith("latency_")]:
                print("SKIP net_%s: neither tc's netem qdisc (CONFIG_NET_SCH_NETEM) nor iptables' "
                      "nat table (the delaying relay's DNAT) here" % n)
                names.remove(n)
                skipped += 1
    work = tempfile.mkdtemp(prefix="gnn-net-")
    try:
        partdir = partition_tiny(work)
        bases = {}
        # the plain undisturbed run, and a family's own where one is named
        for b in ["undisturbed"] + sorted({base_of(n) for n in names} - {"undisturbed"}):
            ok, s = run_one(work, partdir, b, lambda s: None, None)
            if not ok:
                print("0 passed, %d failed, %d skipped" % (len(bases) + 1, skipped))
                return 1
            bases[b] = dict(reference(s.c, s.t_run), mb_bytes=minibatch_bytes(s.c), epoch_s=median_epoch_s(s.c))
            print("time %s total_s=%.1f" % (b, s.t_run), flush=True)
        passed, failed = len(bases), 0
        for n in names:
            ok, _ = run_one(work, partdir, n, SCENARIOS[n], bases[base_of(n)])
            passed, failed = passed + ok, failed + (not ok)
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
        return 1 if failed else 0
    finally:
        remove_work(work)


if __name__ == "__main__":
    sys.exit(main())
