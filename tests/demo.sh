#!/usr/bin/env bash
# make demo: the whole system on this machine through gnn-local
# (docs/local.md): the embedded synthetic graph `small` (no download)
# partitioned with METIS into 2 partitions, 2 graph stores, 2 samplers and 2
# trainers training GraphSAGE, then the same model without neighbours
# (features only), so the accuracy the graph adds is a number on the screen.
# Usage: tests/demo.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=$BUILD/demo/local
t0=$(date +%s.%N)

echo "gnn-dist demo: synthetic 'small' graph (100,000 nodes, 47 classes), 2 partitions, 2 graph stores,"
echo "2 samplers, 2 trainers on 127.0.0.1; then the same model on node features alone. Work folder: $OUT"
echo
result=$(mktemp)
trap 'rm -f "$result"' EXIT
# --fresh: a second `make demo` trains again (the partition is reused).
"$BUILD/bin/gnn-local" --synthetic small --parts 2 --samplers 2 --trainers 2 --baseline --fresh \
	--workdir "$OUT" --epochs 30 --fanouts 10,10 --hidden 128 --batch-size 512 \
	--timeout-s 1200 --ready-timeout-s 300 | tee "$result"
t1=$(date +%s.%N)

# "test_acc graphsage=0.xx features_only=0.yy": say what the difference means.
sed -n 's/^test_acc graphsage=\([0-9.]*\) features_only=\([0-9.]*\)$/\1 \2/p' "$result" |
	awk '{ printf "\nGraphSAGE reached test accuracy %.3f; the same network on each node'"'"'s own features\n", $1
	       printf "reached %.3f: sampling neighbours through the graph stores adds %.1f points.\n", $2, 100 * ($1 - $2) }'
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "demo took %.0f s\n", b - a }'
