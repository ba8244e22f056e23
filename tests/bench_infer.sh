#!/usr/bin/env bash
# make bench: inference over every node of the synthetic `small` graph
# (100,000 nodes) next to the sampled evaluation path for the same nodes.
# gnn-local (2 graph stores, 2 samplers, 2 trainers, 3 layers 15,10,5,
# hidden 256) trains 2 epochs and evaluates the whole test split (90,400
# nodes, --test-nodes 0) the sampled way; then `gnn-trainer infer` (2
# workers) predicts every node. Prints both times (the sampled one scaled
# from the test split to every node at its measured rate), their ratio,
# both test accuracies, and every process's peak memory.
# The products-scale numbers: tests/bench_products.sh (make bench-products).
# Usage: tests/bench_infer.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PRESET=${GNN_BENCH_PRESET:-small}
WORK=$BUILD/bench/infer-$PRESET
# shellcheck source=tests/bench_lib.bash
. "$ROOT/tests/bench_lib.bash"
trap mem_watch_stop EXIT
mkdir -p "$WORK"
rm -rf "$WORK/run"
echo "inference benchmark: preset=$PRESET parts=2 samplers=2 trainers=2 infer_workers=2 cpus=$(nproc)"
mem_watch_start "$BUILD" "$WORK/rss.samples"
"$BUILD/bin/gnn-local" --synthetic "$PRESET" --parts 2 --samplers 2 --trainers 2 --epochs 2 --test-nodes 0 \
	--fresh --workdir "$WORK/run" >"$WORK/local.out" 2>&1 || {
	echo "bench_infer: gnn-local failed:" >&2
	tail -n 20 "$WORK/local.out" >&2
	exit 1
}
mem_watch_stop
infer_report "$PRESET" "$WORK/run" "$WORK/local.out"
mem_local_pids "$WORK/local.out" >"$WORK/pids"
mem_table "$WORK/pids" "$WORK/rss.samples"
