#!/usr/bin/env python3
"""stall.py LOG T_OP T_END [--finished] [--pods PODS_LOG]: what a day-2
operation at T_OP (Unix seconds) cost the training run whose trainer log is
LOG (gnn-trainer lines, possibly from several incarnations, in any order,
repeated lines allowed), judged over the window up to T_END (when it had
recovered and trained on).

Progress is the epoch lines ("... epoch epoch=N ..."). Let E0 be the last
epoch finished before T_OP (at T0), `typical` the median of the last epoch
durations before T_OP, and E1 the highest epoch finished by T_END, first at
T1. Undisturbed, E1 would have been reached at T0 + (E1 - E0) typical (or,
for a finished run that the operation continues, --finished, at T_OP +
(E1 - E0) typical). The stall is T1 minus that: the training time the
operation cost, lost work (epochs redone after a resume) and every pause
included.

--pods: a log of `kubectl get pods --watch` events, one "UNIX_TIME JSON"
line each, JSON {"n": name, "u": uid, "d": deleting, "r": a container
running}. The time a graph-store or trainer pod (StatefulSet pods: the new
one can only be created once the old one is gone) spent being replaced,
from the old pod's deletion to the new pod's container running, is
Kubernetes' share of the stall (`replacing_s`, overlapping replacements
counted once); `ours_s` is the rest.

Prints "stall_s=S ours_s=O replacing_s=R pauses_s=P,... e0=E0 e1=E1
typical_s=T", or "stall_s=none ..." without an epoch beyond E0."""
import argparse
import datetime
import json
import re
import statistics


def epochs(path):
    seen, out = set(), []
    pat = re.compile(r"^(\S+) INFO +\S+ epoch epoch=(\d+) ")
    for line in open(path, errors="replace"):
        m = pat.match(line)
        if not m or line in seen:
            continue
        seen.add(line)
        t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
        out.append((t.replace(tzinfo=datetime.timezone.utc).timestamp(), int(m.group(2))))
    return sorted(out)


def replacing(path, t_op, t_end):
    """Seconds within [t_op, t_end] during which some StatefulSet pod was
    being replaced (deleted, and its successor's container not running)."""
    events = []
    for line in open(path, errors="replace"):
        t, _, rest = line.partition(" ")
        try:
            events.append((float(t), json.loads(rest)))
        except ValueError:
            continue
    events.sort(key=lambda e: e[0])
    spans, gone = [], {}  # gone[name] = (old uid, deletion seen at)
    for t, e in events:
        name = e.get("n", "")
        if not re.match(r"^(graphstore|trainer)-\d+$", name):
            continue
        if e.get("d") and name not in gone:
            gone[name] = (e.get("u"), t)
        elif name in gone and e.get("u") != gone[name][0] and e.get("r"):
            spans.append((gone.pop(name)[1], t))
    spans += [(t0, t_end) for _, t0 in gone.values()]
    total, end = 0.0, None
    for a, b in sorted((max(a, t_op), min(b, t_end)) for a, b in spans):
        if b <= a:
            continue
        if end is not None and a < end:
            a = end
        if b > a:
            total += b - a
            end = b
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("t_op", type=float)
    ap.add_argument("t_end", type=float)
    ap.add_argument("--finished", action="store_true")
    ap.add_argument("--pods")
    a = ap.parse_args()
    ev = epochs(a.log)
    before = [e for e in ev if e[0] <= a.t_op]
    if not before:
        print("stall_s=none reason=no_epoch_before")
        return
    e0 = max(e for _, e in before)
    t0 = max(t for t, e in before if e == e0)
    durs = [y[0] - x[0] for x, y in zip(before, before[1:]) if y[1] == x[1] + 1][-5:]
    typical = statistics.median(durs) if durs else 0.0
    prog, best = [(a.t_op if a.finished else t0, e0)], e0
    for t, e in ev:
        if a.t_op < t <= a.t_end and e > best:
            prog.append((t, e))
            best = e
    if len(prog) == 1:
        print(f"stall_s=none e0={e0} typical_s={typical:.1f}")
        return
    t1, e1 = prog[-1]
    stall = max(0.0, t1 - (prog[0][0] + (e1 - e0) * typical))
    rep = replacing(a.pods, a.t_op, t1) if a.pods else 0.0
    pauses = [y[0] - x[0] - (y[1] - x[1]) * typical for x, y in zip(prog, prog[1:])]
    big = ",".join(f"{p:.1f}" for p in pauses if p > 1.0) or "-"
    print(f"stall_s={stall:.1f} ours_s={max(0.0, stall - rep):.1f} replacing_s={rep:.1f} pauses_s={big} "
          f"e0={e0} e1={e1} typical_s={typical:.1f}")


main()
