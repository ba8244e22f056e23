#!/usr/bin/env python3
"""The code's layout rules (docs/HACKING.md), checked over the tree.

Usage: layout_check.py ROOT OBJ_DIR [MAX_LINES]

  long      no function over MAX_LINES (default 80) lines in libcommon/ or
            services/ (universal-ctags gives each function's first and last line)
  circle    no import circle: within one service (or libcommon), the .o files
            that call each other's functions form no cycle (nm over OBJ_DIR);
            a service's main.o is its table of contents and may call anything
  samename  no file name in two folders of services/ (main.c excepted), so
            that a name says which part it is

Prints one "RULE what" line per breach and exits 1 when there is any.
"""
import collections
import os
import subprocess
import sys


def long_functions(root, max_lines):
    out = subprocess.run(["ctags", "--fields=+ne", "-o", "-", "--c-kinds=f", "-R", "libcommon", "services"],
                         cwd=root, capture_output=True, text=True, check=True).stdout
    bad = []
    for line in out.splitlines():
        parts = line.split("\t")
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if "line" in fields and "end" in fields:
            n = int(fields["end"]) - int(fields["line"]) + 1
            if n > max_lines:
                bad.append(f"long {parts[1]}:{fields['line']} {parts[0]} is {n} lines (at most {max_lines})")
    return bad


def part_of(obj, objdir):
    rel = os.path.relpath(obj, objdir).split(os.sep)
    return rel[0] if rel[0] == "libcommon" else "/".join(rel[:2])


def circles(objdir):
    objs = [os.path.join(d, f) for d, _, fs in os.walk(objdir) for f in fs
            if f.endswith(".o") and os.path.relpath(d, objdir).split(os.sep)[0] in ("libcommon", "services")]
    defs, uses = collections.defaultdict(set), collections.defaultdict(set)
    for o in objs:
        for line in subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBR":
                defs[p[2]].add(o)
            elif len(p) == 2 and p[0] == "U":
                uses[o].add(p[1])
    edges = collections.defaultdict(set)
    for o, syms in uses.items():
        if o.endswith(os.sep + "main.o"):
            continue
        for s in syms:
            for d in defs.get(s, ()):
                if d != o and part_of(d, objdir) == part_of(o, objdir):
                    edges[o].add(d)
    # Tarjan's strongly connected components, iteratively
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in list(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(os.path.relpath(c, objdir) for c in comp))
    return [f"circle {' '.join(c)}" for c in comps]


def same_names(root):
    seen = collections.defaultdict(list)
    for d, _, fs in os.walk(os.path.join(root, "services")):
        for f in fs:
            if f.endswith((".c", ".h")) and f != "main.c":
                seen[f].append(os.path.relpath(os.path.join(d, f), root))
    return [f"samename {f}: {' '.join(sorted(p))}" for f, p in sorted(seen.items()) if len(p) > 1]


def main():
    root, objdir = sys.argv[1], sys.argv[2]
    max_lines = int(sys.argv[3]) if len(sys.argv) > 3 else 80
    bad = long_functions(root, max_lines) + circles(objdir) + same_names(root)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
