#!/usr/bin/env bash
# make bench (and make bench-import): importing a large graph from OGB's
# binary layout (NumPy arrays: raw/data.npz, raw/node_feat.npy beside it,
# raw/node-label.npz) against its CSV layout (raw/*.csv.gz), and the
# partitioner's memory bounded by the graph's structure, not its features.
#
# tests/tools/gen_ogb_random.py writes one random graph (GNN_BENCH_IMPORT_NODES
# nodes, 10,000,000; GNN_BENCH_IMPORT_EDGES input edges drawn uniformly, 5 a
# node; 8 classes, 30% of the nodes unlabelled (NaN), the labelled split
# 60/20/20) in both layouts from the same arrays, with GNN_BENCH_IMPORT_DIM
# (16) features a node. Both are partitioned with the same flags (--parts
# GNN_BENCH_IMPORT_PARTS (4), --method GNN_BENCH_IMPORT_METHOD (random: the
# partitioner's own work is then the same for both layouts and small; METIS
# takes 127 s on the binary layout here, docs/partitioning.md).
# Printed for each: wall time, the import's time (meta.json's load), CPU
# time, peak RSS (meta.json's VmHWM and /usr/bin/time -v's, both counting
# mapped file pages), the peak anonymous and file-backed RSS (sampled
# every 0.2 s), and binary / CSV, measured in the same run; then that both
# outputs are the same graph (meta.json less memory, timing and source)
# and, file by file, the same bytes (cmp).
#
# The bound: the same structure with a node_feat.npy of GNN_BENCH_IMPORT_BIG_DIM
# (128) float32 features a node (5.1 GB at 10M nodes), its pages dropped
# from the page cache, partitioned in a memory cgroup (v1, root) limited to
# GNN_BENCH_IMPORT_LIMIT_MB (default: a quarter of the feature bytes, 1220
# MiB at the default size; 850 MiB was too little for the structure there,
# 1000 MiB enough). Mapped file
# pages count in RSS and in the cgroup's usage but can be reclaimed, so the
# run must finish (exit 0, every partition's features written) under the
# limit; printed: the limit, the cgroup's max usage and failcnt (times it
# hit the limit and reclaimed), OOM kills, peak RSS. Without a memory
# cgroup it prints a SKIP line for that part. GNN_BENCH_IMPORT_UNBOUNDED=1
# (default 1) first runs it without a limit, for the RSS it reaches then.
#
# Scratch data (11,705 MiB at its peak at the default size: free space is
# checked first) lives in a folder under ${TMPDIR:-/tmp}, removed at the
# end; each step is bounded by GNN_BENCH_IMPORT_STEP_S (1800) seconds.
# About 4 minutes on 2 idle cores (the generation, 1.5 of them, doubles on
# a busy machine). Needs NumPy (python3-numpy): SKIP without it.
# Exits non-zero when a run fails, the outputs differ, or the bounded run
# does not finish under its limit.
# Usage: tests/bench_import.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
NODES=${GNN_BENCH_IMPORT_NODES:-10000000}
EDGES=${GNN_BENCH_IMPORT_EDGES:-$((5 * NODES))}
DIM=${GNN_BENCH_IMPORT_DIM:-16}
BIG_DIM=${GNN_BENCH_IMPORT_BIG_DIM:-128}
PARTS=${GNN_BENCH_IMPORT_PARTS:-4}
METHOD=${GNN_BENCH_IMPORT_METHOD:-random}
STEP_S=${GNN_BENCH_IMPORT_STEP_S:-1800}
UNBOUNDED=${GNN_BENCH_IMPORT_UNBOUNDED:-1}
FEAT_BYTES=$((NODES * BIG_DIM * 4))
LIMIT_MB=${GNN_BENCH_IMPORT_LIMIT_MB:-$((FEAT_BYTES / 4 / 1048576))}
P=$BUILD/bin/gnn-partition
P_REAL=$(readlink -f "$P")

PY=
for p in python3 /usr/bin/python3; do
	"$p" -c 'import numpy' 2>/dev/null && { PY=$p; break; }
done
if [ -z "$PY" ]; then
	echo "bench_import: SKIP no python3 with NumPy (python3-numpy; make deps installs it)"
	exit 0
fi
TMP=${TMPDIR:-/tmp}
# the most on disk at once: every input (edge_index twice, CSV text, the small
# features twice, the big ones) and the two small outputs; or the big input
# and its output. Plus a fifth.
need=$((60 * EDGES + 22 * NODES * DIM + 4 * NODES * BIG_DIM + 80 * NODES))
need2=$((24 * EDGES + 8 * NODES * BIG_DIM + 40 * NODES))
[ "$need2" -le "$need" ] || need=$need2
need=$((need + need / 5))
avail=$(($(df -Pk "$TMP" | awk 'NR == 2 { print $4 }') * 1024))
if [ "$avail" -lt "$need" ]; then
	echo "bench_import: FAIL $TMP has $((avail >> 30)) GiB free, the run needs about $((need >> 30)) GiB (GNN_BENCH_IMPORT_NODES smaller, or TMPDIR)" >&2
	exit 1
fi
WORK=$(mktemp -d "$TMP/gnn-bench-import.XXXXXX")
CG=
cleanup() {
	if [ -n "$CG" ]; then rmdir "$CG" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "import benchmark: nodes=$NODES input_edges=$EDGES feat_dim=$DIM parts=$PARTS method=$METHOD big_feat_dim=$BIG_DIM cpus=$(nproc) load=$(cut -d' ' -f1 /proc/loadavg) work=$WORK"
t_start=$SECONDS
exec 3>&2
# bounded STEP CMD...: CMD under STEP_S seconds, or a FAIL line and exit 1
# (137 before the deadline is a kill by the kernel: returned, as any failure)
bounded() {
	local what=$1 rc=0 t0=$SECONDS
	shift
	timeout --kill-after=10 "$STEP_S" "$@" || rc=$?
	if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ $((SECONDS - t0)) -ge "$STEP_S" ]; }; then
		echo "bench_import: FAIL $what took over $STEP_S s" >&3
		exit 1
	fi
	return "$rc"
}
bounded generate "$PY" "$ROOT/tests/tools/gen_ogb_random.py" "$WORK/data" --nodes "$NODES" --edges "$EDGES" \
	--dim "$DIM" --big-dim "$BIG_DIM" | sed 's/^/data /'

# watch NAME: the peak RssAnon and RssFile (kB) of the gnn-partition writing
# $WORK/out-NAME, sampled every 0.2 s, into $WORK/NAME.peak ("anon file")
watch() {
	local name=$1 pid='' a=0 f=0 k val p
	echo "0 0" >"$WORK/$name.peak"
	for _ in $(seq 1 100); do
		for p in $(pgrep -f -- "--out $WORK/out-$name" || true); do
			[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$P_REAL" ] && pid=$p
		done
		[ -z "$pid" ] || break
		sleep 0.1
	done
	[ -n "$pid" ] || return 0
	while [ -r "/proc/$pid/status" ]; do
		while read -r k val _; do
			case $k in
			RssAnon:) [ "$val" -le "$a" ] || a=$val ;;
			RssFile:) [ "$val" -le "$f" ] || f=$val ;;
			esac
		done <"/proc/$pid/status" 2>/dev/null || break
		echo "$a $f" >"$WORK/$name.peak"
		sleep 0.2
	done
}
# part NAME INPUT [WRAPPER...]: gnn-partition INPUT into $WORK/out-NAME (under
# WRAPPER), time -v's report, the sampled peaks and the log in $WORK/NAME.*;
# sets $wall and $rc.
part() {
	local name=$1 input=$2 t0 wpid
	shift 2
	watch "$name" &
	wpid=$!
	t0=$(date +%s.%N)
	rc=0
	bounded "partition $name" "$@" /usr/bin/time -v -o "$WORK/$name.time" "$P" --input "$input" --parts "$PARTS" \
		--method "$METHOD" --out "$WORK/out-$name" >/dev/null 2>"$WORK/$name.log" || rc=$?
	wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	wait "$wpid" || true
	if [ "$rc" -ne 0 ]; then
		echo "partition $name exit=$rc after $wall s:"
		tail -n 5 "$WORK/$name.log"
	fi
}
# maxrss NAME: time -v's "Maximum resident set size" in MiB
maxrss() { awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$WORK/$1.time"; }
# cpu NAME: time -v's user + system seconds
cpu() { awk -F': ' '/(User|System) time/ { s += $2 } END { printf "%.1f", s }' "$WORK/$1.time"; }
# report NAME LAYOUT: one result line from meta.json, time -v, the samples and $wall
report() {
	local a f
	read -r a f <"$WORK/$1.peak"
	jq -r --arg n "$2" --arg w "$wall" --arg t "$(maxrss "$1")" --arg c "$(cpu "$1")" --arg a $((a / 1024)) --arg f $((f / 1024)) '
	  "result layout=\($n) seconds=\($w) load_s=\(.timing_seconds.load|.*10|round/10) partition_s=\(.timing_seconds.partition|.*10|round/10) write_s=\(.timing_seconds.write|.*10|round/10) cpu_s=\($c) peak_rss_mb=\(.memory.peak_rss_bytes/1048576|round) time_v_max_rss_mb=\($t) peak_anon_mb=\($a) peak_file_mb=\($f) csr_plus_features_mb=\(.memory.csr_plus_features_bytes/1048576|round) edge_cut_ratio=\(.edge_cut_ratio*1000|round/1000)"' \
		"$WORK/out-$1/meta.json" | tee "$WORK/$1.result"
}
fail=0
for l in csv:csv bin:binary; do
	part "${l%%:*}" "$WORK/data/${l%%:*}"
	[ "$rc" -eq 0 ] || exit 1
	report "${l%%:*}" "${l#*:}"
done
grep -o ' features file=.*' "$WORK/bin.log" | sed 's/^ /binary /'
# v NAME KEY: KEY's value on NAME's result line
v() { grep -o " $2=[^ ]*" "$WORK/$1.result" | cut -d= -f2; }
awk -v s1="$(v csv seconds)" -v s2="$(v bin seconds)" -v l1="$(v csv load_s)" -v l2="$(v bin load_s)" \
	-v c1="$(v csv cpu_s)" -v c2="$(v bin cpu_s)" -v m1="$(v csv peak_rss_mb)" -v m2="$(v bin peak_rss_mb)" \
	-v t1="$(v csv time_v_max_rss_mb)" -v t2="$(v bin time_v_max_rss_mb)" -v a1="$(v csv peak_anon_mb)" -v a2="$(v bin peak_anon_mb)" 'BEGIN {
	printf "compare binary/csv seconds=%.2f load=%.2f cpu_s=%.2f peak_rss=%.2f time_v_max_rss=%.2f peak_anon=%.2f\n",
		s2 / s1, l2 / l1, c2 / c1, m2 / m1, t2 / t1, a2 / a1
}'
same=$(jq -c 'del(.memory, .timing_seconds, .source)' "$WORK/out-csv/meta.json")
if [ "$same" = "$(jq -c 'del(.memory, .timing_seconds, .source)' "$WORK/out-bin/meta.json")" ]; then
	jq -r '"same_graph yes (meta.json less memory, timing, source): nodes=\(.num_nodes) edges=\(.num_edges) classes=\(.num_classes) train=\(.num_train) valid=\(.num_valid) test=\(.num_test) edge_cut=\(.edge_cut)"' \
		"$WORK/out-csv/meta.json"
else
	echo "same_graph NO: meta.json differs (less memory, timing, source):"
	diff <(jq 'del(.memory, .timing_seconds, .source)' "$WORK/out-csv/meta.json") \
		<(jq 'del(.memory, .timing_seconds, .source)' "$WORK/out-bin/meta.json") | head -n 20 || true
	fail=1
fi
files=$(cd "$WORK/out-csv" && find . -type f ! -name meta.json | sort)
diffs=0 n=0 bytes=0
[ "$files" = "$(cd "$WORK/out-bin" && find . -type f ! -name meta.json | sort)" ] || { echo "same_bytes NO: the file lists differ"; fail=1; }
while read -r f; do
	n=$((n + 1)) bytes=$((bytes + $(stat -c %s "$WORK/out-csv/$f")))
	cmp -s "$WORK/out-csv/$f" "$WORK/out-bin/$f" || { echo "same_bytes NO: $f differs"; diffs=$((diffs + 1)); }
done <<<"$files"
if [ "$diffs" -eq 0 ]; then echo "same_bytes yes: $n files, $bytes bytes, identical (cmp; meta.json aside)"; else fail=1; fi
scratch=$(du -sm "$WORK" | cut -f1)
rm -rf "$WORK/data/csv" "$WORK/data/bin" "$WORK/out-csv" "$WORK/out-bin"

# ---- the bound: features larger than the memory allowed ---------------------
BIG=$WORK/data/big
NPY=$BIG/raw/node_feat.npy
echo "bound features=$NPY bytes=$(stat -c %s "$NPY") ($((FEAT_BYTES >> 20)) MiB of float32) limit_mb=$LIMIT_MB"
cached() { fincore -nb -o RES "$NPY" 2>/dev/null | awk '{ printf "%.0f", $1 / 1048576 }'; }
if [ "$UNBOUNDED" = 1 ]; then
	part unbounded "$BIG"
	[ "$rc" -eq 0 ] || exit 1
	report unbounded "binary_big_unbounded"
	rm -rf "$WORK/out-unbounded"
	# its pages again out of the page cache, for the bounded run to fault them in
	"$PY" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$NPY"
fi
# A memory cgroup (v1) under this process's own, when this is root and the
# controller is mounted writable; no cgroup v2 or systemd path (not testable here).
mem_root=/sys/fs/cgroup/memory
parent=$mem_root$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
[ -d "$parent" ] || parent=$mem_root
if [ -w "$parent" ] && [ -f "$parent/memory.limit_in_bytes" ] && mkdir "$parent/gnn-bench-import.$$" 2>/dev/null; then
	CG=$parent/gnn-bench-import.$$
	if ! echo $((LIMIT_MB * 1048576)) >"$CG/memory.limit_in_bytes" 2>/dev/null; then
		echo "bound SKIP could not set memory.limit_in_bytes in $CG"
		rmdir "$CG"
		CG=
	fi
else
	echo "bound SKIP no memory cgroup to limit the run: cgroup v1's memory controller at $mem_root, writable by root, is needed (uid=$(id -u))"
fi
if [ -n "$CG" ]; then
	echo "bound cgroup=$CG limit_in_bytes=$(cat "$CG/memory.limit_in_bytes") features_cached_mb=$(cached)"
	# shellcheck disable=SC2016
	part bounded "$BIG" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG"
	max_mb=$(awk '{ printf "%.0f", $1 / 1048576 }' "$CG/memory.max_usage_in_bytes")
	failcnt=$(cat "$CG/memory.failcnt")
	ooms=$(awk '$1 == "oom_kill" { print $2 }' "$CG/memory.oom_control")
	written=0 parts=0
	if [ "$rc" -eq 0 ]; then
		report bounded "binary_big_bounded"
		parts=$(jq '.parts | length' "$WORK/out-bounded/meta.json")
		written=$(find "$WORK/out-bounded" -name 'feat-*.arr' -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f", s / 1048576 }')
	fi
	verdict=PASS
	if [ "$rc" -ne 0 ] || [ "$parts" -ne "$PARTS" ] || [ "${ooms:-1}" -ne 0 ] || [ "$written" -lt $((FEAT_BYTES >> 20)) ] ||
		[ $((LIMIT_MB * 1048576)) -ge "$FEAT_BYTES" ]; then
		verdict=MISS
		fail=1
	fi
	read -r anon file <"$WORK/bounded.peak"
	awk -v l="$LIMIT_MB" -v f=$((FEAT_BYTES >> 20)) 'BEGIN { printf "bound result limit_mb=%d feature_mb=%d limit/features=%.2f ", l, f, l / f }'
	echo "exit=$rc seconds=$wall cgroup_max_usage_mb=$max_mb failcnt=$failcnt oom_kills=${ooms:-?}" \
		"time_v_max_rss_mb=$(maxrss bounded) peak_anon_mb=$((anon / 1024)) peak_file_mb=$((file / 1024))" \
		"parts_written=$parts features_written_mb=$written $verdict"
fi
s2=$(du -sm "$WORK" | cut -f1)
echo "total seconds=$((SECONDS - t_start)) peak_scratch_mb=$((s2 > scratch ? s2 : scratch)) (du of $WORK, before each clean-up)"
exit "$fail"
