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
# shellcheck source=tests/bench_mem.bash
. "$ROOT/tests/bench_mem.bash"
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
kv() { grep -o " $1=[^ ]*" | head -n 1 | cut -d= -f2; }
test_line=$(grep ' test_evaluated ' "$WORK/run/logs/trainer-0.log" | tail -n 1)
inf_s=$(grep -o ' inferred .*' "$WORK/local.out" | kv seconds)
jq -r --arg sacc "$(kv test_acc <<<"$test_line")" --arg sn "$(kv nodes <<<"$test_line")" \
	--arg ss "$(kv seconds <<<"$test_line")" --arg rate "$(kv nodes_per_s <<<"$test_line")" --arg s "$inf_s" '
  "test inference_test_acc=\(.accuracy.test*10000|round/10000) sampled_test_acc=\($sacc) over the same \($sn) test nodes (sampled: \($ss) s)",
  "inference preset='"$PRESET"' nodes=\(.nodes) workers=\(.workers) seconds=\($s) sampled_path_seconds=\(.nodes/($rate|tonumber)*10|round/10) (every node at the sampled evaluation'"'"'s \($rate) nodes/s) ratio=\(.nodes/($rate|tonumber)/($s|tonumber)*10|round/10)"' \
	"$WORK/run/predictions/summary.json"
mem_local_pids "$WORK/local.out" >"$WORK/pids"
mem_table "$WORK/pids" "$WORK/rss.samples"
