#!/usr/bin/env bash
# link_latency.sh DATA PRED N: serving latency of a link-prediction model
# (docs/inference.md, "Link prediction: score and top-k"). Starts a graph
# store per partition of the partition output DATA (2 partitions) serving
# the link output PRED (tests/tools/linkfix.py make writes one) and a
# sampler, then times N gnn-cli topk (k 10), N score (2 pairs) and N info
# calls (the baseline: process start and connection) and reads the
# sampler's own time per link request from its
# gnn_sampler_request_seconds{op="link"} histogram.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${GNN_BUILD:-$ROOT/build}/bin
. "$ROOT/tests/proc.bash"
D=$1 PRED=$2 N=$3
W=$(mktemp -d) PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
pa=$(free_port) pb=$(free_port) ps=$(free_port)
for p in 0 1; do
	"$B/gnn-graphstore" --data "$D" --part $p --predictions "$PRED" \
		--listen "tcp://127.0.0.1:$([ $p = 0 ] && echo "$pa" || echo "$pb")" --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 2>"$W/s$p.log" &
	PIDS+=($!)
done
"$B/gnn-sampler" --listen "tcp://127.0.0.1:$ps" --http-addr 127.0.0.1 --http-port 0 --workers 2 \
	--graphstores "tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pb" 2>"$W/smp.log" &
PIDS+=($!)
wait_for 60 grep -q " ready listen=" "$W/smp.log" || { echo "sampler not ready" >&2; exit 1; }
U=tcp://127.0.0.1:$ps
HTTP=$(sed -n 's/.* http_port=\([0-9]*\) .*/\1/p' "$W/smp.log" | head -n 1)
srv() { curl -s "http://127.0.0.1:$HTTP/metrics" | awk '$1 ~ /^gnn_sampler_request_seconds_(sum|count)\{op="link"\}/ { printf "%s ", $2 }'; }
"$B/gnn-cli" topk --sampler "$U" --node 1 --k 10 >/dev/null || exit 1  # the stores load the output
m0=$(srv) t0=$(date +%s.%N)
for i in $(seq "$N"); do "$B/gnn-cli" topk --sampler "$U" --node $((i * 7)) --k 10 >/dev/null || exit 1; done
m1=$(srv) t1=$(date +%s.%N)
for i in $(seq "$N"); do "$B/gnn-cli" score --sampler "$U" --pairs "$i:$((i * 3)),$((i * 5)):$((i * 11))" >/dev/null || exit 1; done
m2=$(srv) t2=$(date +%s.%N)
for i in $(seq "$N"); do "$B/gnn-cli" info --sampler "$U" >/dev/null || exit 1; done
t3=$(date +%s.%N)
python3 -c "
a, b, c = [list(map(float, x.split())) for x in ('$m0', '$m1', '$m2')]
print('gnn-cli: topk %.1f ms/call, score (2 pairs) %.1f ms/call, info (baseline) %.1f ms/call over $N calls' %
      (($t1 - $t0) * 1000 / $N, ($t2 - $t1) * 1000 / $N, ($t3 - $t2) * 1000 / $N))
print('sampler: topk %.2f ms/request, score %.2f ms/request' %
      ((b[0] - a[0]) * 1000 / (b[1] - a[1]), (c[0] - b[0]) * 1000 / (c[1] - b[1])))"
grep -h predictions_loaded "$W/s0.log" | head -n 1
