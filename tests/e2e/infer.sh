#!/usr/bin/env bash
# gnn-trainer infer (docs/inference.md): layer-wise full-neighbourhood
# inference over every node of a finished run, checked by
# tests/tools/predcheck (every node predicted, top-k well formed, original
# IDs, per-split counts). Without ../shared, on the synthetic tiny graph:
# 1 worker and 2 workers give the same bytes, a re-run finds its result, a
# stopped run resumes from the layers it wrote, and bad inputs (another
# model's flags, a damaged checkpoint, no result.json) fail clearly with
# nothing written. With ../shared/datasets/cora (skipped when absent): the
# test accuracy of the predictions equals the trainer's full-neighbourhood
# evaluation of the same checkpoint.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
TR=$BIN/gnn-trainer
PC=$BUILD/tests/predcheck
trap 'rm -rf "$WORK"' EXIT
LIMITS=(--ready-timeout-s 60 --timeout-s 300 --stop-timeout-s 10)

# infer OUT LOG [flags]: one worker; the exit status.
infer() {
	local out=$1 log=$2
	shift 2
	timeout 120 "$TR" infer --data "$D" --checkpoint-dir "$CK" --out "$out" --wait-s 10 "$@" 2>"$log"
}
# kv KEY FILE: a value of predcheck's output.
kv() { sed -n "s/^$1=//p" "$2" | head -n 1; }
close() {  # close A B D: |A - B| <= D
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; exit !(a != "" && b != "" && x <= d + 1e-9) }'
}

# ---- tiny: train, then infer ------------------------------------------------
timeout 200 "$L" --synthetic tiny --parts 2 --trainers 2 --epochs 10 --hidden 32 --workdir "$WORK/t" --no-infer "${LIMITS[@]}" \
	>"$WORK/train.out" 2>&1
rc=$?
D=$WORK/t/partition CK=$WORK/t/checkpoints
check tiny_trained "gnn-local exit 0 (got $rc)" bash -c "[ $rc -eq 0 ] && [ -f '$CK/result.json' ]"
M=(--hidden 32)

infer "$WORK/one" "$WORK/one.log" "${M[@]}"
rc=$?
"$PC" "$D" "$WORK/one" >"$WORK/one.check" 2>&1
pc=$?
echo "# tiny 1 worker: $(grep -E '^(nodes|test_acc|sampled)' "$WORK/one.check" | tr '\n' ' ')"
near=false
close "$(kv test_acc "$WORK/one.check")" "$(kv sampled_test_acc "$WORK/one.check")" 0.05 && near=true
check tiny_one_worker "exit 0 (got $rc), predcheck ok, all 2000 nodes predicted, test_acc within 0.05 of the trainer's sampled $(kv sampled_test_acc "$WORK/one.check") ($near)" \
	bash -c "[ $rc -eq 0 ] && [ $pc -eq 0 ] && [ '$(kv nodes "$WORK/one.check")' = 2000 ] && $near"
[ $pc -eq 0 ] || head -n 5 "$WORK/one.check"

# Two workers (as two pods would): the same predictions, byte for byte.
timeout 120 "$TR" infer --data "$D" --checkpoint-dir "$CK" --out "$WORK/two" --wait-s 30 --workers 2 --worker 1 \
	"${M[@]}" --embeddings 2>"$WORK/two1.log" &
w1=$!
infer "$WORK/two" "$WORK/two0.log" "${M[@]}" --workers 2 --worker 0 --embeddings --wait-s 30
rc0=$?
wait $w1
rc1=$?
same=true
for p in 0 1; do
	for f in pred topk-class topk-prob orig-id; do
		cmp -s "$WORK/one/part-$p/$f.arr" "$WORK/two/part-$p/$f.arr" || same=false
	done
done
"$PC" "$D" "$WORK/two" >"$WORK/two.check" 2>&1
check tiny_two_workers_same "2 workers: exit 0 0 (got $rc0 $rc1), the same bytes as 1 worker ($same), embeddings written, work folder removed" \
	bash -c "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && $same && grep -q 'predcheck: ok' '$WORK/two.check' &&
		 [ -f '$WORK/two/part-1/emb.arr' ] && [ -z \"\$(ls -d '$WORK/two'/.work-* 2>/dev/null)\" ]"

infer "$WORK/one" "$WORK/again.log" "${M[@]}"
rc=$?
check tiny_rerun_found "a re-run: exit 0 (got $rc), already_inferred, nothing recomputed" \
	bash -c "[ $rc -eq 0 ] && grep -q already_inferred '$WORK/again.log' && ! grep -q layer_done '$WORK/again.log'"

# Stopped after its first layer, it resumes from the layer file.
infer "$WORK/stop" "$WORK/stop1.log" "${M[@]}" --workers 2 --worker 0 --wait-s 3
rc=$?
infer "$WORK/stop" "$WORK/stop2.log" "${M[@]}" --workers 2 --worker 0 --wait-s 30 &
w0=$!
infer "$WORK/stop" "$WORK/stop3.log" "${M[@]}" --workers 2 --worker 1 --wait-s 30
rc1=$?
wait $w0
rc0=$?
check tiny_resumes_layers "a worker alone times out waiting for the other's layer (exit $rc, wait_timeout), nothing final written; run again both finish ($rc0 $rc1) reusing its layer" \
	bash -c "[ $rc -eq 1 ] && grep -q wait_timeout '$WORK/stop1.log' && grep -q layer_reused '$WORK/stop2.log' &&
		 [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && cmp -s '$WORK/one/part-0/pred.arr' '$WORK/stop/part-0/pred.arr'"

# ---- bad inputs: a clear error, nothing written ----------------------------
infer "$WORK/bad1" "$WORK/bad1.log" --hidden 64
rc=$?
check wrong_model_refused "--hidden 64 against a run of 32: exit 2 (got $rc), wrong_checkpoint, no output" \
	bash -c "[ $rc -eq 2 ] && grep -q wrong_checkpoint '$WORK/bad1.log' && [ -z \"\$(ls '$WORK/bad1' 2>/dev/null | grep -v '^\.')\" ]"
cp -r "$CK" "$WORK/ck-bad"
for b in "$WORK"/ck-bad/epoch-*/best.arr; do printf 'x' | dd of="$b" bs=1 seek=100 conv=notrunc 2>/dev/null; done
timeout 60 "$TR" infer --data "$D" --checkpoint-dir "$WORK/ck-bad" --out "$WORK/bad2" --wait-s 5 "${M[@]}" 2>"$WORK/bad2.log"
rc=$?
check damaged_checkpoint_refused "every best.arr damaged: exit 1 (got $rc), checkpoint_missing, no output" \
	bash -c "[ $rc -eq 1 ] && grep -q checkpoint_missing '$WORK/bad2.log' && [ ! -e '$WORK/bad2/summary.json' ] &&
		 [ -z \"\$(ls -d '$WORK'/bad2/part-* 2>/dev/null)\" ]"
mkdir -p "$WORK/empty"
timeout 60 "$TR" infer --data "$D" --checkpoint-dir "$WORK/empty" --out "$WORK/bad3" --wait-s 1 "${M[@]}" 2>"$WORK/bad3.log"
rc=$?
check no_result_waits_then_fails "no result.json: waits (logged) then exit 1 (got $rc)" \
	bash -c "[ $rc -eq 1 ] && grep -q 'waiting_for what=result.json' '$WORK/bad3.log' && grep -q wait_timeout '$WORK/bad3.log'"

# ---- Cora: the same accuracy as the trainer's full-neighbourhood evaluation --
if ! have_cora; then
	skip cora_matches_full_evaluation "no Cora at $DATASETS/cora (CI has it)"
	exit 0
fi
CM=(--fanouts 10,25 --eval-fanouts -1,-1 --hidden 256 --lr 0.003 --dropout 0.8 --weight-decay 5e-3 --epochs 30 --seed 1)
timeout 300 "$L" --dataset "$DATASETS/cora" --parts 2 --trainers 2 "${CM[@]}" --workdir "$WORK/c" --no-infer "${LIMITS[@]}" \
	>"$WORK/cora.out" 2>&1
rc=$?
D=$WORK/c/partition CK=$WORK/c/checkpoints
timeout 120 "$TR" infer --data "$D" --checkpoint-dir "$CK" --out "$WORK/cp" --layers 2 --hidden 256 --workers 1 \
	2>"$WORK/cora-infer.log"
rc2=$?
"$PC" "$D" "$WORK/cp" >"$WORK/cora.check" 2>&1
a=$(kv test_acc "$WORK/cora.check") s=$(kv sampled_test_acc "$WORK/cora.check")
echo "# cora: inference test_acc=$a, the trainer's (--eval-fanouts -1,-1) test_acc=$s, nodes=$(kv nodes "$WORK/cora.check")"
near=false
close "$a" "$s" 0.001 && near=true
check cora_matches_full_evaluation "all 2708 nodes predicted, test_acc $a equal to the trainer's full-neighbourhood $s (within one node of 1000: $near)" \
	bash -c "[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && grep -q 'predcheck: ok' '$WORK/cora.check' &&
		 [ '$(kv nodes "$WORK/cora.check")' = 2708 ] && $near"
