#!/usr/bin/env bash
# make demo: generates the embedded default graph (synthetic preset `small`,
# no download), partitions it with METIS into 2 partitions and prints the
# statistics. Usage: tests/demo.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=$BUILD/demo/small-2p

echo "gnn-dist demo: synthetic 'small' graph -> 2 METIS partitions in $OUT"
"$BUILD/bin/gnn-partition" --synthetic small --parts 2 --out "$OUT" --force
echo
jq -r '"graph: \(.num_nodes) nodes, \(.num_edges) directed edges, \(.feat_dim) features, \(.num_classes) classes; split \(.num_train)/\(.num_valid)/\(.num_test)",
       "edge cut: \(.edge_cut) edges (\(.edge_cut_ratio * 1000 | round / 10)% of all edges cross partitions)",
       "balance (max/mean): nodes \(.balance.nodes * 1000 | round / 1000), edges \(.balance.edges * 1000 | round / 1000), train \(.balance.train * 1000 | round / 1000)",
       "time: load \(.timing_seconds.load * 100 | round / 100)s, partition \(.timing_seconds.partition * 100 | round / 100)s, write \(.timing_seconds.write * 100 | round / 100)s",
       "peak memory: \(.memory.peak_rss_bytes / 1048576 | round) MiB = \(.memory.peak_ratio * 100 | round / 100) x the CSR plus features"' "$OUT/meta.json"
echo
echo "partition layout: $OUT (meta.json documented in docs/formats.md)"
