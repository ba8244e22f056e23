#!/usr/bin/env bash
# make bench-link (part of make bench): link prediction at ogbn-products
# scale (issue 25; synthetic preset `products`: 2,449,029 nodes, 61.9M
# undirected edges). Partitions it with an edge split (METIS, 2 parts,
# --edge-split 0.85,0.05,0.10, --eval-negatives 100: docs/partitioning.md
# "Edge split"), then gnn-local --task link with 2 graph stores, 2 samplers
# and 2 trainers trains GNN_BENCH_EPOCHS epochs of GraphSAGE on sampled
# neighbourhoods (2 layers, fanouts 15,10, batch 1024 positive pairs, one
# uniform negative each; gnn-local's link defaults read whole
# neighbourhoods, which is for Cora), validates on every validation pair
# (sampled), scores the test pairs, and runs `gnn-trainer infer` (2
# workers): every node's embedding, AUC, AP, MRR and Hits@K on the split.
# Prints:
#   - the partitioner's seconds, peak RSS and the split's pair counts;
#   - the stages: partition, start-up (graph stores and samplers ready),
#     the trainers' set-up (training edges read), the epochs' training,
#     validation, the trainer's test scoring, inference (layers, metrics);
#   - trainer-0's epoch split (its `epoch` and `link_epoch` lines: wait,
#     compute, all-reduce, validation; loss, train/val AUC) and the
#     training throughput in positive pairs per second (both trainers);
#   - every process's peak RSS, own memory, CPU seconds and minor faults
#     (bench_lib.bash), and the training system's sum;
#   - the link metrics: the trainer's sampled test AUC/AP, and inference's
#     AUC, AP, MRR, Hits@1/3/10 on the valid and test pairs.
# A products epoch is 52.6M training pairs (25,674 steps per trainer at
# batch 1024): about 6 hours on a 2-core machine (docs/scale.md, "Link prediction
# at products scale"). GNN_BENCH_TRAIN_BUDGET_S=S stops the training after
# S seconds (gnn-local --timeout-s) and reports what ran instead: the
# steps done, their rate and the epoch they project, every process's
# memory (no validation, test scoring or inference then);
# GNN_BENCH_PRESET=small gives a whole run in minutes.
# Exits non-zero only when the run fails (a budget's stop is not a failure).
# Knobs: GNN_BENCH_PRESET (products), GNN_BENCH_EPOCHS (1),
# GNN_BENCH_FANOUTS (15,10), GNN_BENCH_BATCH (1024), GNN_BENCH_EDGE_SPLIT
# (0.85,0.05,0.10), GNN_BENCH_EVAL_NEGATIVES (100), GNN_BENCH_LOCAL_ARGS
# (extra gnn-local flags, e.g. "--neg-k 3 --eval-fanouts 10,5"),
# GNN_BENCH_REUSE_PARTITION=1 (keep the last run's partition output),
# GNN_BENCH_TRAIN_BUDGET_S (none: the whole run).
# Usage: tests/bench_link.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PRESET=${GNN_BENCH_PRESET:-products}
EPOCHS=${GNN_BENCH_EPOCHS:-1}
FANOUTS=${GNN_BENCH_FANOUTS:-15,10}
BATCH=${GNN_BENCH_BATCH:-1024}
SPLIT=${GNN_BENCH_EDGE_SPLIT:-0.85,0.05,0.10}
NEGS=${GNN_BENCH_EVAL_NEGATIVES:-100}
BUDGET=${GNN_BENCH_TRAIN_BUDGET_S:-}
WORK=$BUILD/bench/$PRESET-link
PART=$WORK/partition
LAYERS=$(tr ',' '\n' <<<"$FANOUTS" | wc -l)
mkdir -p "$WORK"
rm -rf "$WORK/run" "$WORK/local.out" "$WORK/rss.samples"
[ "${GNN_BENCH_REUSE_PARTITION:-0}" = 1 ] || rm -rf "$PART"
# shellcheck source=tests/bench_lib.bash
. "$ROOT/tests/bench_lib.bash"
trap bench_cleanup EXIT

echo "link benchmark: preset=$PRESET parts=2 samplers=2 trainers=2 epochs=$EPOCHS edge_split=$SPLIT eval_negatives=$NEGS model=graphsage fanouts=$FANOUTS batch=$BATCH cpus=$(nproc)${BUDGET:+ train_budget_s=$BUDGET}"
t_start=$(date +%s.%N)
if ! jq -e '.edge_split' "$PART/meta.json" >/dev/null 2>&1; then
	"$BUILD/bin/gnn-partition" --synthetic "$PRESET" --parts 2 --edge-split "$SPLIT" --eval-negatives "$NEGS" \
		--out "$PART" --force >"$WORK/partition.out" 2>"$WORK/partition.log" ||
		{ tail -n 5 "$WORK/partition.log" >&2; exit 1; }
fi
jq -r '"partition seconds=\(.timing_seconds.total|.*10|round/10) generate_s=\(.timing_seconds.load|.*10|round/10) metis_s=\(.timing_seconds.partition|.*10|round/10) write_s=\(.timing_seconds.write|.*10|round/10) peak_rss_mb=\(.memory.peak_rss_bytes/1048576|round) nodes=\(.num_nodes) edges=\(.num_edges) edge_cut_ratio=\(.edge_cut_ratio*1000|round/1000)",
	"edge_split pairs=\(.edge_split.num_pairs) train=\(.edge_split.num_train) valid=\(.edge_split.num_valid) test=\(.edge_split.num_test) eval_negatives=\(.edge_split.eval_negatives) removed_edges=\(.edge_split.removed_edges)"' \
	"$PART/meta.json" | sed "1s|\$| bytes=$(du -sb "$PART" | cut -f1) edge_split_bytes=$(du -sb "$PART/edge-split" | cut -f1)|"
t_part=$(date +%s.%N)

partial=0
mem_watch_start "$BUILD" "$WORK/rss.samples"
# shellcheck disable=SC2086
"$BUILD/bin/gnn-local" --partition-dir "$PART" --task link --samplers 2 --trainers 2 --epochs "$EPOCHS" \
	--model graphsage --layers "$LAYERS" --fanouts "$FANOUTS" --batch-size "$BATCH" ${BUDGET:+--timeout-s "$BUDGET"} \
	--fresh --workdir "$WORK/run" ${GNN_BENCH_LOCAL_ARGS:-} >"$WORK/local.out" 2>&1 || {
	if [ -n "$BUDGET" ] && grep -q 'training ran past --timeout-s' "$WORK/local.out"; then
		partial=1
	else
		local_failed "bench_link: gnn-local" "$WORK/local.out"
	fi
}
mem_watch_stop
t_end=$(date +%s.%N)

T0=$WORK/run/logs/trainer-0.log
L=$WORK/run/logs
first_ts() { grep -h -- "$1" "${@:2}" | sort | head -n 1 | cut -d' ' -f1; }
last_ts() { grep -h -- "$1" "${@:2}" | sort | tail -n 1 | cut -d' ' -f1; }
secs() { date -d "$1" +%s.%N; }
gap() { awk -v a="$(secs "$1")" -v b="$(secs "$2")" 'BEGIN { printf "%.1f", b - a }'; }
split=$(grep ' work_split ' "$T0" | tail -n 1)
echo "work_split ${split#* work_split }"
setup_s=$(gap "$(first_ts ' start pid=' "$L"/trainer-*.log)" "$(last_ts ' work_split ' "$L"/trainer-*.log)")
part_s=$(awk -v a="$t_start" -v b="$t_part" 'BEGIN { printf "%.1f", b - a }')
start_s=$(sed -n 's/.* services_ready .* seconds=\([0-9.]*\).*/\1/p' "$WORK/local.out")

report_memory() {
	mem_local_pids "$WORK/local.out" >"$WORK/pids"
	mem_table "$WORK/pids" "$WORK/rss.samples" | tee "$WORK/memory"
	mem_system_sum "$WORK/memory" "$(du -cb "$PART"/part-* | tail -n 1 | cut -f1)" \
		"$(grep -o ' params=[0-9]*' "$T0" | head -n 1 | cut -d= -f2)" "2x the part-* folders (edge-split/ left out) + the model"
	echo "memory partitioner peak_rss_mb=$(jq '.memory.peak_rss_bytes/1048576|round' "$PART/meta.json")"
}

if [ "$partial" = 1 ]; then
	# The steps trainer-0 took before the budget ran out, timed from its
	# work split (its first step's request) to its last progress line.
	prog=$(grep ' progress epoch=' "$T0" | tail -n 1)
	[ -n "$prog" ] || { echo "bench_link: no progress line in $T0 within ${BUDGET} s" >&2; exit 1; }
	echo "progress ${prog#* progress }"
	awk -v step="$(kv step <<<"$prog")" -v el="$(gap "$(last_ts ' work_split ' "$T0")" "$(cut -d' ' -f1 <<<"$prog")")" \
		-v k="$(kv neg_k <<<"$split")" -v b="$BATCH" -v e="$EPOCHS" -v part="$part_s" -v st="$start_s" -v su="$setup_s" -v bud="$BUDGET" -v ep="$(kv epoch <<<"$prog")" 'BEGIN {
		split(step, a, "/"); n = a[1]; N = a[2]
		printf "partial stopped_after_budget_s=%s epoch=%s steps_done=%d of=%d elapsed_s=%.1f ms_per_step=%.0f pairs_per_s=%.0f scored_pairs_per_s=%.0f (both trainers, %d negative each)\n",
			bud, ep, n, N, el, el / n * 1000, 2 * n * b / el, 2 * n * b * (1 + k) / el, k
		printf "projected train_s_per_epoch=%.0f (%.1f h) for %d epoch(s): %.0f s; stages measured: partition_s=%s start_s=%s trainer_setup_s=%s\n",
			N * el / n, N * el / n / 3600, e, e * N * el / n, part, st, su
	}'
	report_memory
	exit 0
fi

epoch=$(grep ' epoch epoch=' "$T0" | tail -n 1)
echo "epoch $(epoch_split <<<"$epoch")"
echo "link_epoch $(grep ' link_epoch ' "$T0" | tail -n 1 | sed 's/.* link_epoch //')"

# The stages, from gnn-local's "time" line and the trainers' and the
# inference workers' log timestamps.
epochs_s=$(grep ' epoch epoch=' "$T0" | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == "epoch_s") e += a[2]; if (a[1] == "eval_s") v += a[2] } }
	END { printf "%.1f %.1f", e - v, v }')
train_s=${epochs_s% *}
val_s=${epochs_s#* }
# the test pairs' scoring: from the last epoch's line, or the checkpoint saved after it, to link_test_evaluated
after=$(grep -E ' (epoch epoch=|checkpoint_saved )' "$T0" | tail -n 1 | cut -d' ' -f1)
test_s=$(gap "$after" "$(last_ts ' link_test_evaluated ' "$T0")")
layers_s=$(gap "$(first_ts ' infer_start ' "$L"/infer-*.log)" "$(last_ts ' part_done ' "$L"/infer-*.log)")
metrics_s=$(gap "$(last_ts ' part_done ' "$L"/infer-*.log)" "$(last_ts ' link_metrics ' "$L"/infer-*.log)")
timeline=$(grep '^time ' "$WORK/local.out")
tl() { sed -n "s/.* $1 \([0-9.]*\) s.*/\1/p" <<<"$timeline"; }
echo "stages partition_s=$part_s start_s=$start_s trainer_setup_s=$setup_s train_s=$train_s validation_s=$val_s test_scoring_s=$test_s inference_s=$(tl inference) (layers_s=$layers_s metrics_s=$metrics_s) gnn_local_training_s=$(tl training) total_s=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "%.0f", b - a }')"
# Positive pairs trained per second, both trainers (padded shares, as stepped).
awk -v per="$(kv padded_to <<<"$split")" -v k="$(kv neg_k <<<"$split")" -v e="$EPOCHS" -v s="$train_s" \
	-v steps="$(kv steps_per_epoch <<<"$split")" -v rate="$(kv samples_per_s <<<"$epoch")" 'BEGIN {
	p = 2 * per * e
	printf "throughput positive_pairs=%d pairs_per_s=%.0f scored_pairs_per_s=%.0f (with %d negative each) steps_per_trainer=%d ms_per_step=%.0f trainer0_samples_per_s=%s\n",
		p, p / s, p * (1 + k) / s, k, steps * e, s / (steps * e) * 1000, rate
}'

grep -h ' link_test_evaluated ' "$T0" | sed 's/.* link_test_evaluated /trainer_test sampled /'
grep -E '^link (test|valid) ' "$WORK/local.out"
report_memory
