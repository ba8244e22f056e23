#!/usr/bin/env bash
# Trainer step benchmark: forward + backward + Adam of the 3-layer
# GraphSAGE (hidden 256, fanouts 15,10,5, batch 1024, 100 features, 47
# classes) on synthetic blocks of a sampler's shapes (`gnn-trainer bench`),
# next to the same model on the same blocks from the same initial
# parameters in PyTorch (tests/bench_torch.py, Debian's python3-torch), with
# the same thread count, in the same run. Prints, per thread count:
#   torch_over_ours=R               target >= 3
#   model_gflops_over_sgemm_peak=R  target >= 0.5 (the model's matrix
#                                   products against OpenBLAS's best sgemm
#                                   measured in the same run)
# with PASS or MISS. A missed target does not fail the script (a benchmark
# reports); a C/PyTorch disagreement on the loss or gradient does.
# Usage: tests/bench_trainer.sh [BUILD_DIR]
# Knobs: GNN_BENCH_TRAINER_THREADS ("1 2"), GNN_BENCH_TRAINER_STEPS (20).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
THREADS=${GNN_BENCH_TRAINER_THREADS:-"1 2"}
STEPS=${GNN_BENCH_TRAINER_STEPS:-20}
WORK=$(mktemp -d /tmp/gnn-bench-trainer.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# Debian's interpreter carries python3-torch; a python3 earlier on PATH
# (pyenv, a venv) may not.
PY=
for p in /usr/bin/python3 python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import torch, numpy' 2>/dev/null; then
		PY=$p
		break
	fi
done

echo "trainer benchmark: layers=3 hidden=256 fanouts=15,10,5 batch=1024 in_dim=100 classes=47 steps=$STEPS threads=\"$THREADS\" cpus=$(nproc)"
[ -n "$PY" ] || echo "bench_trainer: python3-torch (and python3-numpy) not installed: skipping the PyTorch comparison (make bench installs them)"

val() { sed -n "s/^$2=\([0-9.]*\).*/\1/p" "$1" | head -n 1; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t ? "PASS" : "MISS") }'; }

status=0
dump=
for t in $THREADS; do
	args=(--threads "$t" --steps "$STEPS")
	# The blocks are seeded: one dump serves every thread count.
	if [ -n "$PY" ] && [ -z "$dump" ]; then
		dump=$WORK/blocks.bin
		args+=(--dump "$dump")
	fi
	if ! OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$BUILD/bin/gnn-trainer" bench "${args[@]}" \
		>"$WORK/ours-$t" 2>"$WORK/ours-$t.log"; then
		echo "bench_trainer: gnn-trainer bench failed:" >&2
		tail -n 5 "$WORK/ours-$t.log" >&2
		exit 1
	fi
	echo "== threads=$t: ours (gnn-trainer bench)"
	grep -E '^(openblas_thread_timeout|nodes_per_hop|edges_per_block|reference|loss_first|step_ms|matmul|other_ms|adam_ms|model_|sgemm_peak|step_gflops)' "$WORK/ours-$t" | sed 's/^/  /'
	# OpenBLAS's idle threads spin for ~2^28 cycles after each product and
	# take the cores from the model's own threads; OPENBLAS_THREAD_TIMEOUT=4
	# makes them sleep at once (docs/model.md). Ours again with it, right
	# after the default run (the machine's other load drifts).
	if [ "$t" -gt 1 ] && [ -z "${OPENBLAS_THREAD_TIMEOUT:-}" ] &&
		OPENBLAS_THREAD_TIMEOUT=4 OPENBLAS_NUM_THREADS=$t "$BUILD/bin/gnn-trainer" bench --threads "$t" \
			--steps "$STEPS" >"$WORK/ours-$t-timeout" 2>"$WORK/ours-$t-timeout.log"; then
		echo "  with OPENBLAS_THREAD_TIMEOUT=4: step_ms_median=$(val "$WORK/ours-$t-timeout" step_ms_median)" \
			"matmul_ms_median=$(val "$WORK/ours-$t-timeout" matmul_ms_median)" \
			"other_ms_median=$(val "$WORK/ours-$t-timeout" other_ms_median)"
	fi
	ours=$(val "$WORK/ours-$t" step_ms_median)
	eff=$(val "$WORK/ours-$t" model_gflops_over_sgemm_peak)
	echo "threads=$t model_gflops_over_sgemm_peak=$eff target>=0.5 $(verdict "$eff" 0.5)"
	if [ -n "$PY" ]; then
		echo "== threads=$t: PyTorch (tests/bench_torch.py)"
		if ! OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$PY" "$ROOT/tests/bench_torch.py" --dump "$dump" \
			--threads "$t" --steps "$STEPS" >"$WORK/torch-$t" 2>"$WORK/torch-$t.log"; then
			sed 's/^/  /' "$WORK/torch-$t"
			tail -n 5 "$WORK/torch-$t.log" >&2
			echo "bench_trainer: PyTorch and the C model disagree (or bench_torch.py failed)" >&2
			status=1
			continue
		fi
		sed 's/^/  /' "$WORK/torch-$t"
		theirs=$(val "$WORK/torch-$t" torch_step_ms_median)
		ratio=$(awk -v a="$theirs" -v b="$ours" 'BEGIN { printf "%.2f", a / b }')
		echo "threads=$t ours_ms=$ours torch_ms=$theirs torch_over_ours=$ratio target>=3 $(verdict "$ratio" 3)"
	fi
done
exit $status
