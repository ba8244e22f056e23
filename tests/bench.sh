#!/usr/bin/env bash
# make bench: the partitioner at ogbn-products scale (synthetic preset
# `products`: 2,449,029 nodes, 123,718,280 directed edges, 100 features).
# Prints time, peak RSS against the bytes of the symmetrised CSR plus
# features (target: ratio < 3) and METIS's edge cut against --method random's,
# both measured in this run. GNN_BENCH_PRESET=small gives a quick run.
# Then the trainer step (bench_trainer.sh), the demo's epoch split
# (bench_epoch.sh), inference against the sampled evaluation on `small`
# (bench_infer.sh), products end to end, inference included
# (bench_products.sh), the heterogeneous `mag` preset end to end with
# R-GCN against the features-only baseline (bench_mag.sh), and link
# prediction at products scale (bench_link.sh): its training stops after
# GNN_BENCH_TRAIN_BUDGET_S (600 here; empty: the whole epoch, hours on 2
# cores) and reports the rate and the epoch it projects.
# Usage: tests/bench.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
PRESET=${GNN_BENCH_PRESET:-products}
PARTS=${GNN_BENCH_PARTS:-4}
DIR=$BUILD/bench
mkdir -p "$DIR"

run() {  # method
	/usr/bin/time -v "$BUILD/bin/gnn-partition" --synthetic "$PRESET" --parts "$PARTS" --method "$1" \
		--out "$DIR/$PRESET-$1" --force >/dev/null 2>"$DIR/$PRESET-$1.log"
	grep -E " done " "$DIR/$PRESET-$1.log"
}
echo "partitioner benchmark: preset=$PRESET parts=$PARTS"
run metis
run random
m=$DIR/$PRESET-metis/meta.json
r=$DIR/$PRESET-random/meta.json
jq -r --slurpfile r "$r" '
  "result preset='"$PRESET"' parts=\(.num_parts) nodes=\(.num_nodes) edges=\(.num_edges)",
  "time_seconds metis: total=\(.timing_seconds.total|.*10|round/10) load=\(.timing_seconds.load|.*10|round/10) partition=\(.timing_seconds.partition|.*10|round/10) write=\(.timing_seconds.write|.*10|round/10); random: total=\($r[0].timing_seconds.total|.*10|round/10)",
  "memory peak_rss=\(.memory.peak_rss_bytes/1048576|round) MiB reference(csr+features)=\(.memory.csr_plus_features_bytes/1048576|round) MiB ratio=\(.memory.peak_ratio*100|round/100) target<3 \(if .memory.peak_ratio < 3 then "OK" else "OVER" end)",
  "edge_cut metis=\(.edge_cut) random=\($r[0].edge_cut) ratio=\(.edge_cut/$r[0].edge_cut*1000|round/1000) target<0.5 \(if .edge_cut*2 < $r[0].edge_cut then "OK" else "OVER" end)",
  "balance metis nodes=\(.balance.nodes*1000|round/1000) edges=\(.balance.edges*1000|round/1000) train=\(.balance.train*1000|round/1000)"' "$m"
grep -h "Maximum resident set size" "$DIR/$PRESET-metis.log" | sed 's/^\s*/time -v (metis): /'
"$ROOT/tests/bench_trainer.sh" "$BUILD"
"$ROOT/tests/bench_epoch.sh" "$BUILD"
"$ROOT/tests/bench_infer.sh" "$BUILD"
"$ROOT/tests/bench_products.sh" "$BUILD"
"$ROOT/tests/bench_mag.sh" "$BUILD"
GNN_BENCH_TRAIN_BUDGET_S=${GNN_BENCH_TRAIN_BUDGET_S-600} "$ROOT/tests/bench_link.sh" "$BUILD"
