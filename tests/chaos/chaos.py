#!/usr/bin/env python3
"""The chaos suite (docs/reliability.md): one fault per scenario, injected
into a run of 2 graph stores, 2 samplers and 2 trainers (real binaries,
synthetic `tiny` graph) under a kubelet-like supervisor (cluster.py), and
compared with an undisturbed run of the same settings.

Each scenario must: complete (every trainer logs its summary), end with
the undisturbed run's parameters, give every epoch the undisturbed run's
params_crc (the last time that epoch ran: a resumed epoch runs again), keep
every trainer's log free of silences longer than 15 s, and have no process
exit that the scenario did not cause (no crash loop). It prints one
PASS/FAIL line per scenario and a `time NAME extra_s=.. gap_s=..` line:
the wall time beyond the undisturbed run's, and the longest silence. A
freeze that lands after the run has finished tested nothing: that
scenario runs once more (a `# RETRY` line), and the second run counts.

Usage: chaos.py [SCENARIO...]  (default: all; GNN_BUILD = the build dir;
GNN_CHAOS_KEEP=1 keeps the logs)
"""
import collections
import ctypes
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import BIN, Cluster, kv, log_time, make_certs  # noqa: E402

# Under ASan (`make asan`, GNN_SAN=1) 24: every fault lands by epoch 12,
# and the epochs after it check nothing the plain run does not.
EPOCHS = 24 if os.environ.get("GNN_SAN") == "1" else 40
# 13 steps an epoch (about 0.1 s): most epochs also get a checkpoint
# within them
TRAIN = ["--epochs=%d" % EPOCHS, "--batch-size=16", "--layers=2", "--fanouts=10,5", "--hidden=32",
         "--lr=0.01", "--seed=3", "--prefetch=2", "--checkpoint-interval-s=0.05"]
RUN_LIMIT_S = 150     # one scenario, fault included
MAX_GAP_S = 15.0


# Scenario families, by the prefix of their names (PREFIX_*). args: trainer
# flags beyond TRAIN, replacing TRAIN's of the same name; own_base: those
# flags change the math, so the family is judged against an undisturbed
# run of its own (undisturbed_PREFIX) rather than the plain one;
# partition: gnn-partition flags beyond the tiny graph's, for a partition
# of the family's own, which its trainers then read too (--data).
Family = collections.namedtuple("Family", "args own_base partition")
FAMILIES = {
    # learnable embeddings for the tiny graph's nodes beside their
    # features (docs/embeddings.md), each minibatch's rows pulled during
    # the step before (--embed-prefetch, off by default): its kills hit
    # the prefetch too
    "embed": Family(["--embed-dim=8", "--embed-types=node", "--embed-prefetch=on"], True, []),
    # the same without the prefetch, each graph store logging its
    # embeddings' changes (--emb-wal-dir): a restarted store comes back
    # with its rows. Judged against the embed family's undisturbed run
    # (SAME_MATH): neither the log nor the prefetch changes the math
    "embwal": Family(["--embed-dim=8", "--embed-types=node"], True, []),
    # the same, 100 epochs: time for a killed replica of its embeddings
    # to come back and catch up before the run ends (about 5 s)
    "embed100": Family(["--embed-dim=8", "--embed-types=node", "--epochs=100"], True, []),
    # feature rows read by the trainers straight from the graph stores,
    # 30% of the nodes from their cache (docs/scale.md, "Feature
    # movement"): the same bytes as the samplers'
    "stores": Family(["--features-from=stores", "--cache-ratio=0.3"], False, []),
    # the two together: link prediction over learnable embeddings (before
    # "link": a scenario's family is the first prefix its name starts with)
    "link_embed": Family(["--task=link", "--batch-size=512", "--embed-dim=8", "--embed-types=node"], True,
                         ["--edge-split=0.85,0.05,0.10"]),
    # link prediction on GAE's 85/5/10 edge split (docs/training.md, "Link
    # prediction"): 8,500 training pairs, 4,250 a rank, 512 a step: 9
    # steps an epoch (256 a step, 17 steps, took the undisturbed run
    # 17.7 s under ASan against 12.6 s, and 5.4-8.0 s against 4.3-5.6 s
    # in the plain build)
    "link": Family(["--task=link", "--batch-size=512"], True, ["--edge-split=0.85,0.05,0.10"]),
}
NO_FAMILY = Family([], False, [])
# families judged against another's undisturbed run
SAME_MATH = {"embwal": "embed"}

# Settings of a scenario that differ from TRAIN without changing the math
# (the undisturbed run's parameters stay the reference).
OVERRIDES = {
    # a checkpoint at every chance (every 4 steps), however fast the epochs
    "kill_trainers_after_mid_epoch_checkpoint": ["--checkpoint-interval-s=0.001"],
    "link_kill_trainers_after_mid_epoch_checkpoint": ["--checkpoint-interval-s=0.001"],
}


# The scenarios named replicas_* run REPLICAS graph stores per partition
# (graphstore-i serves partition i mod 2), judged against the undisturbed
# run of one store each: the same parameters, and a bound on the pause
# between two epochs (docs/reliability.md, "Graph store replicas").
REPLICAS = 2

# The scenarios named tls_* run with mutual TLS on every link, the ring on
# a CA of its own (docs/security.md); the math is the plain run's.
CERTS = {}


class Scenario:
    def __init__(self, work, partdir, name, hosts=None, extra_args=(), subdir=None):
        """hosts: cluster.py's Cluster option (tests/net: a host per process);
        extra_args: trainer flags beyond TRAIN, OVERRIDES and the family's;
        subdir: its folder under work (default: name)."""
        self.name = name
        self.dir = os.path.join(work, subdir or name)
        fam = FAMILIES.get(family(name), NO_FAMILY)
        over = OVERRIDES.get(name, []) + fam.args + (["--data=" + partdir] if fam.partition else [])
        args = [a for a in TRAIN if a.split("=")[0] not in [o.split("=")[0] for o in over]] + over
        args += list(extra_args)
        self.c = Cluster(self.dir, partdir, 2, 2, 2, args, os.path.join(self.dir, "ckpt"),
                         tls=CERTS["tls"] if name.startswith("tls_") else None, hosts=hosts,
                         replicas=REPLICAS if name.startswith("replicas_") else 1,
                         emb_wal=family(name) == "embwal")
        self.notes = []
        self.allowed_exits = set()   # components whose own exits are part of the scenario
        self.frozen = set()          # trainers frozen on purpose: their silence is not judged

    def epoch(self, k, who="trainer-0", limit=60):
        return self.c.wait("%s epoch %d" % (who, k), lambda: self.c.epoch_reached(who, k), limit)


def family(name):
    """The FAMILIES key of a scenario (PREFIX_*, or replicas_PREFIX_*) or
    of its family's undisturbed run (undisturbed_PREFIX), or None."""
    name = name[len("replicas_"):] if name.startswith("replicas_") else name
    return next((f for f in FAMILIES if name.startswith(f + "_") or name == "undisturbed_" + f), None)


def base_of(name):
    """The undisturbed run a scenario is judged against."""
    f = SAME_MATH.get(family(name), family(name))
    return "undisturbed_" + f if f and FAMILIES[f].own_base else "undisturbed"


def epoch_crcs(c, name):
    """{epoch: params_crc} from the last line of each epoch."""
    out = {}
    for ln in c.lines(name, "epoch"):
        out[int(kv(ln, "epoch"))] = kv(ln, "params_crc")
    return out


def longest_gap(c, name):
    """The longest time between two consecutive lines of name's log, up to
    its last summary."""
    times, last = [], None   # no summary: the whole log
    for ln in c.text(name).splitlines():
        t = log_time(ln)
        if t is not None:
            times.append(t)
        if " summary " in ln:
            last = len(times)
    times = times[:last]
    return max((b - a for a, b in zip(times, times[1:])), default=0.0)


def epoch_pause(c, name):
    """The longest time between two consecutive epoch lines of name's log."""
    times = [log_time(ln) for ln in c.lines(name, "epoch")]
    times = [t for t in times if t is not None]
    return max((b - a for a, b in zip(times, times[1:])), default=0.0)


def replica_lost(how, limit_s=None):
    """One replica of partition 1 (graphstore-1) killed (restarted by the
    supervisor) or frozen (SIGSTOP: its connections stay open, as when its
    host vanishes) from epoch 10 on: the samplers go on with the other
    replica, no pause between two epochs over limit_s (the plain build's
    bound; under ASan, GNN_SAN=1, it is only printed). "kill_both": both
    of its replicas killed, and the run heals as with one store when they
    are back (the suite's usual bounds only).

    With learnable embeddings (the embed100 family) no trainer may go back
    to a checkpoint (a `resumed` line after the fault) while a replica of
    each partition lives, and a killed replica must catch up from the
    other (its `embeddings_joined`) before the run ends; with both killed
    the trainers resume from the checkpoint, as with one store."""
    def fault(s):
        s.epoch(10)
        t_fault = time.time()
        if how.startswith("kill"):
            s.c.kill("graphstore-1")
            if how == "kill_both":
                s.c.kill("graphstore-3")  # partition 1's other store (3 mod 2)
        else:
            s.c.freeze("graphstore-1")
            s.c.wait("every trainer's summary", s.c.finished, RUN_LIMIT_S)
            s.c.thaw("graphstore-1")

        def after(s):
            done = [log_time(ln) for ln in s.c.lines("trainer-0", "summary")]
            if done and done[0] is not None and done[0] < t_fault:
                return [BEHIND]
            pause = max(epoch_pause(s.c, t) for t in s.c.trainers)
            fo = sum(metric_sum(s.c.metrics(m), "gnn_sampler_graphstore_failovers_total")
                     for m in s.c.procs if m.startswith("sampler-"))
            tfo = sum(metric_sum(s.c.metrics(t), "gnn_trainer_graphstore_failovers_total") for t in s.c.trainers)
            s.notes.append("pause_s=%.2f failovers=%d trainer_failovers=%d" % (pause, fo, tfo))
            why = []
            # the trainers' own calls to the stores (rows, embeddings) moved too
            if how == "freeze" and family(s.name) in ("stores", "embed100") and tfo < 1:
                why.append("no trainer counted a failover (gnn_trainer_graphstore_failovers_total)")
            if (family(s.name) or "").startswith("embed"):
                back = [t for t in s.c.trainers
                        if any((log_time(ln) or 0) >= t_fault for ln in s.c.lines(t, "resumed"))]
                if back and how != "kill_both":
                    why.append("%s went back to a checkpoint with a replica of each partition alive" %
                               ",".join(back))
                if how == "kill" and not s.c.lines("graphstore-1", "embeddings_joined"):
                    why.append("the restarted graphstore-1 never caught up (no embeddings_joined)")
            # a bound on time: the plain build's (ASan's runs are slower,
            # 1.05 s once for a kill); the parameters are judged in both
            timed = limit_s is not None and os.environ.get("GNN_SAN") != "1"
            if timed and pause > limit_s:
                why.append("a pause of %.2f s between two epochs (at most %.1f s with a replica left)" %
                           (pause, limit_s))
            return why
        s.after = after
    return fault


def metric_sum(text, name):
    """The sum of a metric's samples in a /metrics text (0 when absent)."""
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in (text or "").splitlines()
               if ln.startswith(name + "{") or ln.startswith(name + " "))


def judge(s, base, t_run):
    c, why = s.c, []
    for t in c.trainers:
        sm = c.lines(t, "summary")
        if not sm:
            why.append("%s has no summary" % t)
            continue
        if kv(sm[-1], "params_crc") != base["crc"]:
            why.append("%s params_crc=%s, undisturbed %s" % (t, kv(sm[-1], "params_crc"), base["crc"]))
        got = epoch_crcs(c, t)
        bad = [k for k in sorted(base["epochs"]) if k in got and got[k] != base["epochs"][k]]
        if bad:
            why.append("%s epochs %s differ from the undisturbed run" % (t, bad[:5]))
    gap = max(longest_gap(c, t) for t in c.trainers if t not in s.frozen)
    if gap > MAX_GAP_S:
        why.append("a trainer was silent for %.1f s" % gap)
    for p in c.procs.values():
        own = [st for st, injected in p.exits if not injected]
        if own and p.name not in s.allowed_exits:
            why.append("%s exited on its own (status %s)" % (p.name, own))
    extra = t_run - base["t"]
    print("time %s extra_s=%.1f gap_s=%.1f %s" % (s.name, extra, gap, " ".join(s.notes)), flush=True)
    return why


def chosen(args, known):
    """The scenarios named on the command line (all without), or None
    after saying which name is unknown."""
    for n in args:
        if n not in known:
            print("unknown scenario %s; known: %s" % (n, " ".join(known)))
            return None
    return list(args) or list(known)


def remove_work(work):
    """The scratch folder goes, unless GNN_CHAOS_KEEP=1 keeps it (said)."""
    if os.environ.get("GNN_CHAOS_KEEP"):
        print("logs kept in " + work)
    else:
        shutil.rmtree(work, ignore_errors=True)


def partition_tiny(work, flags=(), name="part"):
    """The synthetic `tiny` graph in 2 partitions (gnn-partition's flags
    beyond those) in work/name; its folder."""
    partdir = os.path.join(work, name)
    subprocess.run([BIN + "/gnn-partition", "--synthetic", "tiny", "--parts", "2", "--out", partdir] + list(flags),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return partdir


def reference(c, t):
    """What judge() compares a scenario with: an undisturbed run's final
    and per-epoch params_crc, and its wall time t."""
    return {"crc": kv(c.lines("trainer-0", "summary")[-1], "params_crc"), "epochs": epoch_crcs(c, "trainer-0"),
            "t": t}


# A freeze that landed after the run had finished tested nothing: not a
# result, so main() runs the scenario once more (the run takes 1-4 s, and
# waiting for both samplers to be in use can take longer on a busy machine).
BEHIND = "the trainers had finished before the fault landed (the harness fell behind)"


def run(s, fault, base, prefix="chaos_", retry_behind=False):
    """Runs scenario s: PASS or FAIL. With retry_behind, a run whose faults
    include BEHIND (nothing else it found counts then) says RETRY instead
    and sets s.behind."""
    t0 = time.time()
    why = []
    try:
        for name, env in getattr(fault, "env_once", {}).items():   # a fault present from the start
            s.c.procs[name].env_once = env
        s.c.start()
        fault(s)
        if not s.c.wait("every trainer's summary", s.c.finished, RUN_LIMIT_S):
            why.append("no summary within %d s" % RUN_LIMIT_S)
        t_run = s.t_run = time.time() - t0
        after = getattr(s, "after", None)
        if not why and after is not None:
            why += after(s)
        if base is not None:
            why += judge(s, base, t_run)
    except Exception as e:  # a broken scenario is a failure, not a crash of the suite
        why.append("scenario error: %r" % e)
    finally:
        s.c.stop()
    s.behind = retry_behind and BEHIND in why
    if s.behind:
        print("# RETRY %s%s: %s" % (prefix, s.name, BEHIND), flush=True)
    elif why:
        print("FAIL %s%s: %s (logs: %s)" % (prefix, s.name, "; ".join(why), s.dir), flush=True)
        for t in s.c.trainers:
            lines = s.c.text(t).splitlines()
            # an earlier incarnation's exit says why in an ERROR line,
            # which the last lines (of the last incarnation) do not show
            errors = [ln for ln in lines[:-8] if " ERROR " in ln][-8:]
            if errors:
                print("  -- ERROR lines of %s before its last lines:" % t)
                for ln in errors:
                    print("    " + ln[:300])
            print("  -- last lines of %s:" % t)
            for ln in lines[-8:]:
                print("    " + ln[:300])
    else:
        print("PASS %s%s" % (prefix, s.name), flush=True)
    return not why, time.time() - t0


# ---- faults -------------------------------------------------------------

def kill_store(s):
    s.epoch(10)
    s.c.kill("graphstore-1")


def kill_store_logged(s):
    """graphstore-1 killed mid-epoch, its embeddings' log kept: restarted,
    it replays the log and comes back with the rows, optimizer state and
    pending pushes it had, so no trainer goes back to a checkpoint (no
    `resumed` line after the kill), and the run ends as undisturbed. The
    restarted store answers "still loading" for 3 s first (a slow load,
    GNN_FAULT_LOAD_STALL_S: at ogbn-mag's size a load and replay take
    about 2 s): the ranks' embedding calls wait through it."""
    s.epoch(10)
    # within the epoch (about 0.1 s; most of a step is its pull and push),
    # not at its start, where the trainers wait for their first minibatch
    s.c.sleep(0.04)
    t_fault = time.time()
    s.c.procs["graphstore-1"].env_once = {"GNN_FAULT_LOAD_STALL_S": "3"}
    s.c.kill("graphstore-1")

    def after(s):
        why = []
        back = [t for t in s.c.trainers if any((log_time(ln) or 0) >= t_fault for ln in s.c.lines(t, "resumed"))]
        if back:
            why.append("%s went back to a checkpoint although graphstore-1 kept its log" % ",".join(back))
        rec = s.c.lines("graphstore-1", "embeddings_recovered")
        if not rec:
            why.append("the restarted graphstore-1 did not recover its embeddings (no embeddings_recovered)")
        else:
            s.notes.append("recovered_records=%s recover_s=%s" % (kv(rec[-1], "records"), kv(rec[-1], "seconds")))
        # gnn-cli reads the rows the restarted store holds: the graph's
        # last node's (partition 1's), by its original ID (node-map.arr,
        # an int64 per global ID after the 64-byte header)
        listen = next(a.split("=", 1)[1] for a in s.c.procs["graphstore-1"].argv if a.startswith("--listen="))
        with open(os.path.join(s.c.partdir, "meta.json")) as f:
            last = json.load(f)["num_nodes"] - 1
        with open(os.path.join(s.c.partdir, "node-map.arr"), "rb") as f:
            f.seek(64 + 8 * last)
            orig = int.from_bytes(f.read(8), "little", signed=True)
        cli = subprocess.run([BIN + "/gnn-cli", "embedding", "--store", listen, "--type", "node", "--nodes", str(orig)],
                             capture_output=True, text=True, timeout=60)
        try:
            rows = json.loads(cli.stdout)["rows"]
        except (ValueError, KeyError, TypeError):
            rows = None
        if cli.returncode != 0 or not rows or len(rows[0]) != 8:
            why.append("gnn-cli embedding on the restarted graphstore-1: status %d, %s" %
                       (cli.returncode, (cli.stderr or cli.stdout).strip()[:200]))
        return why
    s.after = after


def kill_sampler(s):
    s.epoch(10)
    s.c.kill("sampler-0")


def term_sampler(s):
    """A replica told to stop (SIGTERM, as Kubernetes deletes a pod)."""
    s.epoch(10)
    s.c.kill("sampler-0", signal.SIGTERM)


def sampler_gone(s):
    """A replica killed and never restarted: the other serves everything."""
    s.epoch(10)
    s.c.procs["sampler-1"].restart = False
    s.c.kill("sampler-1")


def kill_trainer(s):
    s.epoch(10)
    s.c.kill("trainer-1")


def tls_kill_trainer(s):
    """kill_trainer with TLS: the restarted trainer rejoins the ring over
    TLS (each incarnation says so), the trainers read /readyz over HTTPS."""
    kill_trainer(s)

    def after(s):
        why = []
        for t in s.c.trainers:
            n = len(s.c.lines(t, "links"))
            ring = [ln for ln in s.c.lines(t, "links") if "domain=ring tls=mutual" in ln]
            if not ring or len(ring) * 2 != n:
                why.append("%s: %d of its %d links lines say domain=ring tls=mutual" % (t, len(ring), n))
        if len(s.c.lines("trainer-1", "links")) < 4:
            why.append("trainer-1 did not start twice")
        if s.c.readyz("trainer-0") != 200:
            why.append("trainer-0's /readyz over HTTPS is not 200")
        return why
    s.after = after


def kill_trainer0_writing(s):
    """trainer-0 killed the moment a checkpoint's temporary folder appears."""
    s.epoch(8)
    ck = s.c.ckpt
    ino = Inotify(ck)
    try:
        if ino.wait_create(".tmp-epoch-", 30):
            s.c.kill("trainer-0")
            s.notes.append("killed_in_write=yes")
        else:
            s.notes.append("killed_in_write=no")
    finally:
        ino.close()
    s.after = lambda s: [] if not [n for n in os.listdir(ck) if n.startswith(".tmp-epoch-")] else \
        ["a temporary checkpoint folder was left"]


def locked_snapshot(ck):
    """A snapshot record whose graph store's writer is at work (it holds
    the record's lock), or None."""
    for d in [n for n in os.listdir(ck) if n.startswith(".tmp-epoch-")]:
        try:
            with open(os.path.join(ck, d, "emb-part-0000.snap"), "rb") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return os.path.join(d, "emb-part-0000.snap")
        except OSError:
            pass
    return None


def kill_store_in_snapshot(s):
    """graphstore-0 killed while it writes its rows into a checkpoint:
    restarted once with a stalled writer (the test's slow disk,
    GNN_FAULT_SNAPSHOT_STALL_S), then killed again while that writer
    waits. Rank 0's commit sees the writer gone (its lock released) and
    drops the checkpoint at once, rather than waiting out its deadline
    (two minutes here); the ranks resume from the one before."""
    s.epoch(8)
    ck = s.c.ckpt
    s.c.procs["graphstore-0"].env_once = {"GNN_FAULT_SNAPSHOT_STALL_S": "60"}
    killed = s.c.procs["graphstore-0"].popen
    s.c.kill("graphstore-0")
    # a snapshot the killed store was writing stays locked until its
    # files are closed (an ASan build's exit takes a while): that lock is
    # not the restarted store's stalled writer
    s.c.wait("graphstore-0 (pid %d) gone" % killed.pid, lambda: killed.poll() is not None, 20)
    found = []

    def stalled():
        found.extend(x for x in [locked_snapshot(ck)] if x)
        return bool(found)
    if s.c.wait("a stalled snapshot of graphstore-0", stalled, 60):
        s.c.sleep(1.0)   # the lock comes before the SAVE's answer; the writer waits 60 s
        s.c.kill("graphstore-0")
    s.notes.append("killed_in_snapshot=%s" % ("yes" if found else "no"))

    def after(s):
        why = []
        if not found:
            why.append("no stalled snapshot of graphstore-0 was seen")
        if [n for n in os.listdir(ck) if n.startswith(".tmp-epoch-")]:
            why.append("a temporary checkpoint folder was left")
        failed = s.c.lines("trainer-0", "checkpoint_failed")
        if not any("is gone" in ln for ln in failed):
            why.append("rank 0 did not say the store's writer was gone")
        if any("in time" in ln for ln in failed):
            why.append("rank 0 waited for a record until its deadline")
        return why
    s.after = after


def kill_after_mid_epoch_checkpoint(s):
    """Both trainers killed right after a checkpoint within an epoch, so
    they resume from the middle of that epoch (tried up to 5 times: an
    epoch's own checkpoint may come first)."""
    ck = s.c.ckpt
    s.epoch(5)
    for attempt in range(5):
        n = len(s.c.lines("trainer-0", "checkpoint_saved"))
        if not s.c.wait("a checkpoint within an epoch", lambda: any(
                kv(ln, "step") not in (None, "0") for ln in s.c.lines("trainer-0", "checkpoint_saved")[n:]), 30):
            break
        for t in s.c.trainers:
            s.c.procs[t].restart = False
            s.c.kill(t)
        s.c.wait("trainers gone", lambda: not any(s.c.procs[t].alive() for t in s.c.trainers), 10)
        newest = sorted(x for x in os.listdir(ck) if x.startswith("epoch-"))[-1]
        for t in s.c.trainers:
            s.c.procs[t].restart = True
        if "-step-" in newest:
            s.notes.append("resumed_from=%s attempts=%d" % (newest, attempt + 1))
            break
        s.c.wait("trainers back", lambda: all(s.c.lines(t, "resumed") for t in s.c.trainers), 30)

    def after(s):
        steps = [kv(ln, "step") for ln in s.c.lines("trainer-0", "resumed")]
        return [] if any(x not in (None, "0") for x in steps) else ["no resume from within an epoch"]
    s.after = after


def trainers_repeatedly(delay):
    def fault(s):
        for t in s.c.trainers:
            s.c.procs[t].delay_s = delay
        rnd = random.Random(7)
        s.epoch(5)
        for _ in range(6):
            for t in s.c.trainers:
                s.c.kill(t)
                s.c.sleep(rnd.uniform(0.0, 0.3))
            s.c.sleep(rnd.uniform(0.5, 2.0))
    return fault


def freeze(name, seconds, who=None, event=None, text=""):
    """name stops answering (SIGSTOP) for `seconds`, without closing its
    connections, from right after epoch 3. With `event` (one name, or a
    tuple of names any of which will do), trainer `who` (default: each)
    must have logged that event (containing `text`). A
    frozen trainer's own silence is not judged. The fault must land while
    the trainers still train: the whole run takes 1-4 s here, so a harness
    that falls behind could otherwise freeze a finished run and find no
    event (that is said, rather than the event's absence)."""
    def both_samplers_up(s):
        return all(len({kv(ln, "replica") for ln in s.c.lines(t, "sampler_up")}) >= 2 for t in s.c.trainers)

    def fault(s):
        s.epoch(3)
        if name.startswith("sampler-"):
            # Under load a replica's first probe can time out; it is probed
            # again every 2 s. Until then the trainers do not use it, and
            # freezing it would test nothing.
            s.c.wait("every trainer using both samplers", lambda: both_samplers_up(s), 20)
        if name.startswith("trainer-"):
            s.frozen.add(name)
        t_freeze = time.time()
        s.c.freeze(name)
        s.c.sleep(seconds)
        s.c.thaw(name)
        if event is not None:
            whose = [who] if who else s.c.trainers

            def after(s):
                done = [log_time(ln) for ln in s.c.lines("trainer-0", "summary")]
                if done and done[0] is not None and done[0] < t_freeze:
                    return [BEHIND]
                events = event if isinstance(event, tuple) else (event,)
                if any(text in ln for t in whose for e in events for ln in s.c.lines(t, e)):
                    return []
                # what the trainers did say about it, for the report
                said = [ln.strip()[-160:] for t in whose for ln in s.c.text(t).splitlines()
                        if "minibatch" in ln or "sampler" in ln][-4:]
                return ["no %s line%s; last related lines: %s" % (
                    " or ".join(events), " with " + text if text else "", said)]
            s.after = after
    return fault


def corrupt_newest(s):
    """Every trainer stops; one byte of the newest checkpoint's parameters
    flips; they start again."""
    s.epoch(12)
    for t in s.c.trainers:
        s.c.procs[t].restart = False
        s.c.kill(t)
    s.c.wait("trainers gone", lambda: not any(s.c.procs[t].alive() for t in s.c.trainers), 10)
    ck = s.c.ckpt
    newest = sorted(n for n in os.listdir(ck) if n.startswith("epoch-"))[-1]
    path = os.path.join(ck, newest, "params.arr")
    if not os.path.exists(path):
        path = os.path.join(ck, newest, sorted(os.listdir(os.path.join(ck, newest)))[0])
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x10]))
    s.notes.append("flipped=%s/%s" % (newest, os.path.basename(path)))
    for t in s.c.trainers:
        s.c.procs[t].restart = True
    s.after = lambda s: [] if s.c.lines("trainer-0", "checkpoint_fallback") else ["no checkpoint_fallback line"]


def restart_after_finish(s):
    """The run finishes; then each trainer in turn is killed and restarted
    alone: it must report the same summary and be ready within 15 s."""
    s.c.wait("every trainer's summary", s.c.finished, RUN_LIMIT_S)

    def after(s):
        why = []
        for t in ["trainer-1", "trainer-0"]:
            t0 = time.time()
            n = len(s.c.lines(t, "summary"))
            s.c.kill(t)
            ok = s.c.wait(t + " summary again", lambda: len(s.c.lines(t, "summary")) > n and
                          s.c.procs[t].alive(), 30)
            took = time.time() - t0
            s.notes.append("%s_summary_s=%.1f" % (t, took))
            if not ok or took > 15:
                why.append("%s restarted after the run: no summary within 15 s (%.1f s)" % (t, took))
            elif not s.c.lines(t, "already_finished"):
                why.append("%s did not say it found the run finished" % t)
            elif s.c.readyz(t) != 200:
                why.append("%s /readyz is not 200 after its summary" % t)
            elif "\ngnn_trainer_finished 1\n" not in s.c.metrics(t):
                why.append("%s /metrics does not say gnn_trainer_finished 1" % t)
        return why
    s.after = after


def ring_close_stuck_at_finish(s):
    """trainer-1's ring close hangs at the end of the run (injected for its
    first start: GNN_FAULT_RING_CLOSE_STUCK, the sockets left open as nng
    1.5.2's close deadlock leaves them). It still reports the result; its
    ring port held, it exits for a restart, which finds the run finished
    through trainer-0's stand-in and serves the result itself."""
    s.allowed_exits.add("trainer-1")
    s.c.wait("trainer-1 restarted and every trainer's summary",
             lambda: s.c.text("trainer-1").count(" config ") > 1 and s.c.finished(), RUN_LIMIT_S)

    def after(s):
        c, why = s.c, []
        first = c.text("trainer-1").split(" config ")[1] if c.text("trainer-1").count(" config ") > 1 else ""
        for event in ("fault_injected", "ring_close_stuck_finished", " summary ", "result_not_served"):
            if event not in first:
                why.append("trainer-1's first incarnation did not log %s" % event.strip())
        if [st for st, injected in c.procs["trainer-1"].exits if not injected] != [1]:
            why.append("trainer-1 did not exit once with status 1 (exits: %s)" % c.procs["trainer-1"].exits)
        if not c.lines("trainer-1", "already_finished"):
            why.append("the restarted trainer-1 did not find the run finished")
        elif c.readyz("trainer-1") != 200:
            why.append("the restarted trainer-1's /readyz is not 200")
        return why
    s.after = after


ring_close_stuck_at_finish.env_once = {"trainer-1": {"GNN_FAULT_RING_CLOSE_STUCK": "1"}}


SCENARIOS = {
    "kill_graphstore": kill_store,
    "kill_sampler": kill_sampler,
    "sampler_gone": sampler_gone,
    "kill_trainer": kill_trainer,
    "kill_trainer0_in_checkpoint_write": kill_trainer0_writing,
    "kill_trainers_after_mid_epoch_checkpoint": kill_after_mid_epoch_checkpoint,
    "trainers_killed_repeatedly_0.5s": trainers_repeatedly(0.5),
    "trainers_killed_repeatedly_0s": trainers_repeatedly(0.0),
    "graphstore_frozen_30s": freeze("graphstore-0", 30, event="waiting_for_minibatch"),
    # its requests hedged to the other replica, or it set aside after a
    # failed call: either way the trainers went around it
    "sampler_frozen_20s": freeze("sampler-0", 20, event=("minibatch_hedged", "sampler_down")),
    "trainer_frozen_20s": freeze("trainer-1", 20, "trainer-0", "peer_silent", "op=allreduce"),
    "corrupt_newest_checkpoint": corrupt_newest,
    "trainer_restarted_after_finish": restart_after_finish,
    "trainer_ring_close_stuck_at_finish": ring_close_stuck_at_finish,
    # the graph store loses its rows and optimizer state: every trainer
    # resumes from the checkpoint, whose embeddings rank 0 writes back
    "embed_kill_graphstore": kill_store,
    "embed_kill_trainer": kill_trainer,
    # killed while it streams the stores' rows into the checkpoint
    "embed_kill_trainer0_in_checkpoint_write": kill_trainer0_writing,
    # killed while it writes its rows into a checkpoint
    "embed_kill_graphstore_in_snapshot": kill_store_in_snapshot,
    # the killed store replays its log of changes: nobody goes back
    "embwal_kill_graphstore": kill_store_logged,
    # the trainers' own FEAT calls: a store killed (restarted by the
    # supervisor) or frozen under them, the same parameters at the end
    "stores_kill_graphstore": kill_store,
    "stores_kill_sampler": kill_sampler,
    "stores_term_sampler": term_sampler,
    "stores_graphstore_frozen_30s": freeze("graphstore-0", 30, event="waiting_for_minibatch"),
    # the restarted trainer rejoins a ring that only its CA's certificates open
    "tls_kill_trainer": tls_kill_trainer,
    # link prediction: the decoder's parameters resume with the GNN's, and
    # a resumed epoch, the last one's from a step within it, draws the
    # same pairs and negatives again (from the seed, epoch, rank and step)
    "link_kill_graphstore": kill_store,
    "link_kill_trainer": kill_trainer,
    "link_kill_trainer0_in_checkpoint_write": kill_trainer0_writing,
    "link_kill_trainers_after_mid_epoch_checkpoint": kill_after_mid_epoch_checkpoint,
    # the store loses the rows the link steps pushed: the resumed run
    # writes the checkpoint's back, its best rows (the test's) too
    "link_embed_kill_graphstore": kill_store,
    # two stores per partition: one killed, the other serves on
    "replicas_kill_graphstore": replica_lost("kill", 1.0),
    "replicas_graphstore_frozen": replica_lost("freeze", 2.0),
    # both of partition 1's stores killed: waited for, as one store is
    "replicas_kill_both_graphstores": replica_lost("kill_both"),
    # the trainers' own FEAT calls spread and fail over too
    "replicas_stores_kill_graphstore": replica_lost("kill", 1.0),
    "replicas_stores_graphstore_frozen": replica_lost("freeze", 2.0),
    # learnable embeddings on both replicas: no trainer back to a
    # checkpoint, the killed one catches up once back
    "replicas_embed100_kill_graphstore": replica_lost("kill", 1.0),
    "replicas_embed100_graphstore_frozen": replica_lost("freeze", 2.0),
    "replicas_embed100_kill_both_graphstores": replica_lost("kill_both"),
}


class Inotify:
    """Waits for a file created in a folder (Linux inotify through libc):
    fast enough to hit a checkpoint write in progress."""
    IN_CREATE, IN_MOVED_TO = 0x100, 0x80

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK)
        if self.fd < 0 or self.libc.inotify_add_watch(self.fd, path.encode(), self.IN_CREATE) < 0:
            raise OSError(ctypes.get_errno(), "inotify on " + path)

    def wait_create(self, prefix, timeout_s):
        end = time.time() + timeout_s
        while time.time() < end:
            try:
                buf = os.read(self.fd, 4096)
            except BlockingIOError:
                time.sleep(0.0005)
                continue
            off = 0
            while off + 16 <= len(buf):
                nlen = int.from_bytes(buf[off + 12:off + 16], "little")
                name = buf[off + 16:off + 16 + nlen].rstrip(b"\0").decode(errors="replace")
                if name.startswith(prefix):
                    return name
                off += 16 + nlen
        return None

    def close(self):
        os.close(self.fd)


# Timing scenarios: each sleeps through a freeze (100 s in all) to check
# how long the others wait, which an ASan build's slowness blurs, on paths
# (waiting, hedging, the ring's heartbeat) whose memory the unit tests
# check under ASan. `make asan` (GNN_SAN=1) leaves them to `make test`.
TIMING = ("graphstore_frozen_30s", "sampler_frozen_20s", "trainer_frozen_20s", "stores_graphstore_frozen_30s",
          "replicas_graphstore_frozen", "replicas_stores_graphstore_frozen", "replicas_embed100_graphstore_frozen")


# Scenarios whose C paths another scenario already runs under ASan, left to
# `make test` too, to keep CI's time: the 0 s repeat of the 0.5 s one; the
# link family's trainer kills (its resume runs in link_kill_graphstore and
# link_embed_kill_graphstore); stores_kill_sampler (stores_term_sampler);
# the replicas' FEAT failover (replicas_kill_graphstore, stores_kill_graphstore);
# embed_kill_trainer (embed_kill_trainer0_in_checkpoint_write).
ASAN_REPEATS = ("trainers_killed_repeatedly_0s", "link_kill_trainer", "link_kill_trainer0_in_checkpoint_write",
                "link_kill_trainers_after_mid_epoch_checkpoint", "stores_kill_sampler",
                "replicas_stores_kill_graphstore", "embed_kill_trainer")


def main():
    names = chosen(sys.argv[1:], SCENARIOS)
    if names is None:
        return 2
    if not sys.argv[1:] and os.environ.get("GNN_SAN") == "1":
        for n in TIMING:
            print("SKIP chaos_%s: a timing scenario, run by make test (the plain build)" % n)
        for n in ASAN_REPEATS:
            print("SKIP chaos_%s: its paths run under ASan in other scenarios; make test runs it" % n)
        names = [n for n in names if n not in TIMING and n not in ASAN_REPEATS]
    work = tempfile.mkdtemp(prefix="gnn-chaos-")
    keep = False
    try:
        if any(n.startswith("tls_") for n in names):
            CERTS["tls"] = make_certs(os.path.join(work, "certs"))
        # the plain partition, and one for each family named that has its own
        parts = {f: partition_tiny(work, FAMILIES[f].partition, "part_" + f) for f in FAMILIES
                 if FAMILIES[f].partition and any(family(n) == f for n in names)}
        parts[None] = partition_tiny(work)
        bases = {}
        for b in sorted({base_of(n) for n in names}):
            base_s = Scenario(work, parts.get(family(b), parts[None]), b)
            ok, t = run(base_s, lambda s: None, None)
            if not ok:
                keep = True
                return 1
            bases[b] = reference(base_s.c, t)
            print("time %s total_s=%.1f" % (b, t), flush=True)
        for n in names:
            s = Scenario(work, parts.get(family(n), parts[None]), n)
            ok, _ = run(s, SCENARIOS[n], bases[base_of(n)], retry_behind=True)
            if s.behind:
                s = Scenario(work, parts.get(family(n), parts[None]), n, subdir=n + "-again")
                ok, _ = run(s, SCENARIOS[n], bases[base_of(n)])
            keep |= not ok
        return 0
    finally:
        remove_work(work)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
