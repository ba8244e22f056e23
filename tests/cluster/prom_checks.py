#!/usr/bin/env python3
"""prom_checks.py: make test-cluster's checks of the dashboard and the alerts
against its real Prometheus (tests/cluster/run.sh).

  prom_checks.py panels PROM DASHBOARD NAMESPACE RELEASE START END
      Every query of the dashboard (its panels' and its template variables')
      for the given namespace and release, as a range query over START..END
      (Unix seconds): one line per query, "data" or "NO DATA"; exit 1 when a
      query returned no series, or Prometheus refused it.
  prom_checks.py timeline ALERTS_JSONL PHASES T0
      The alerts seen by run.sh's poller (a line per poll: {"t": UNIX,
      "alerts": /api/v1/alerts' list}), as one line per alert and label set:
      when it became pending and firing and when it was gone, in seconds
      since T0, and the phase of the test (PHASES: "UNIX NAME" lines) it
      began in.

Grafana's $__rate_interval is at least four scrape intervals; the test's
Prometheus scrapes every 2 s, and 30s gives each rate a dozen samples."""
import json
import sys
import urllib.parse
import urllib.request

RATE_INTERVAL = "30s"


def dashboard_queries(path, namespace, release):
    """(title, PromQL) of every panel target and template variable."""
    with open(path) as f:
        board = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"]))

    walk(board.get("panels", []))
    for v in board.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if isinstance(q, str) and q.startswith("label_values("):
            # label_values(SELECTOR, LABEL): the series that give the values
            sel, label = q[len("label_values("):-1].rsplit(",", 1)
            out.append((f"variable {v['name']}", f"count by ({label.strip()}) ({sel.strip()})"))
    subst = {"$namespace": namespace, "$release": release, "$__rate_interval": RATE_INTERVAL}
    for i, (title, expr) in enumerate(out):
        for k, val in subst.items():
            expr = expr.replace(k, val)
        out[i] = (title, expr)
    return out


def query_range(prom, expr, start, end):
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": "2"})
    with urllib.request.urlopen(f"{prom}/api/v1/query_range?{params}", timeout=20) as r:
        return json.load(r)["data"]["result"]


def panels(prom, path, namespace, release, start, end):
    missing = 0
    for title, expr in dashboard_queries(path, namespace, release):
        try:
            result = query_range(prom, expr, start, end)
            verdict = "data" if result else "NO DATA"
        except Exception as e:  # a refused query is as bad as an empty one
            verdict = f"NO DATA ({e})"
        if verdict != "data":
            missing += 1
        print(f"{verdict:8} {title}: {expr}")
    return 1 if missing else 0


def timeline(jsonl, phases_path, t0):
    phases = []
    with open(phases_path) as f:
        for line in f:
            t, name = line.split(maxsplit=1)
            phases.append((float(t), name.strip()))

    def phase_at(t):
        name = "before"
        for pt, pn in phases:
            if pt <= t:
                name = pn
        return name

    episodes = []  # [key, {"pending": t, "firing": t, "gone": t}]
    active = {}    # key -> its episode's dict
    polls = 0
    with open(jsonl) as f:
        for line in f:
            try:
                poll = json.loads(line)
            except ValueError:
                continue  # the poller stopped mid-line
            t, polls = float(poll["t"]), polls + 1
            now = set()
            for a in poll.get("alerts", []):
                labels = a.get("labels", {})
                who = ",".join(f"{k}={labels[k]}" for k in ("pod", "graphstore") if k in labels)
                key = f"{labels.get('alertname', '?')}{{{who}}}"
                now.add(key)
                if key not in active:
                    active[key] = {}
                    episodes.append((key, active[key]))
                active[key].setdefault(a.get("state", "?"), t)
            for key in [k for k in active if k not in now]:
                active.pop(key)["gone"] = t
    for key, s in episodes:
        began = s.get("pending", s.get("firing"))
        parts = [f"{st} +{s[st] - t0:.1f}s" for st in ("pending", "firing") if st in s]
        parts.append(f"gone +{s['gone'] - t0:.1f}s" if "gone" in s else "still active")
        print(f"{key} {' '.join(parts)} (began in {phase_at(began)})")
    if not polls:
        print("no poll recorded")
    return 0


def main():
    if len(sys.argv) == 8 and sys.argv[1] == "panels":
        return panels(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6]), float(sys.argv[7]))
    if len(sys.argv) == 5 and sys.argv[1] == "timeline":
        return timeline(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
