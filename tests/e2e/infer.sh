#!/usr/bin/env bash
# gnn-trainer infer (docs/inference.md): layer-wise full-neighbourhood
# inference over every node of a finished run, checked by
# tests/tools/predcheck (every node predicted, top-k well formed, original
# IDs, per-split counts). Without ../shared, on the synthetic tiny graph:
# 1 worker and 2 workers give the same bytes, every .arr output has a .npy
# twin that NumPy loads with the same values (--npy=false: none), a re-run
# finds its result, a
# stopped run resumes from the layers it wrote, and bad inputs (another
# model's flags, a damaged checkpoint, no result.json) fail clearly with
# nothing written. With ../shared/datasets/cora (skipped when absent): the
# test accuracy of the predictions equals the trainer's full-neighbourhood
# evaluation of the same checkpoint.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
TR=$BIN/gnn-trainer
PC=$BUILD/tests/predcheck
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
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

# NumPy for the .npy checks: Debian's python3-numpy (python3 may be a pyenv
# shim without it).
PY=
for p in python3 /usr/bin/python3; do "$p" -c 'import numpy' 2>/dev/null && PY=$p && break; done
# npy_same OUT: every OUT/part-*/X.arr has an X.npy that np.load maps with
# the .arr's dtype, shape ((rows,) for one column) and bytes, and there is
# no other .npy; prints "ok N" (N files compared) or what differs.
npy_same() {
	"$PY" - "$1" <<'EOF'
import glob, os, sys
import numpy as np
DT = {1: '|u1', 2: '<i4', 3: '<i8', 4: '<f4', 5: '<f2'}  # arr.h's dtype codes
out, bad, n = sys.argv[1], [], 0
arrs = sorted(glob.glob(os.path.join(out, 'part-*', '*.arr')))
npys = sorted(glob.glob(os.path.join(out, 'part-*', '*.npy*')))
if not arrs:
    bad.append('no .arr outputs in %s' % out)
for a in arrs:
    h = np.fromfile(a, np.uint8, 64)
    code, = h[12:16].view('<u4')
    rows, cols = (int(x) for x in h[16:32].view('<u8'))
    want = np.fromfile(a, DT[int(code)], offset=64).reshape((rows,) if cols == 1 else (rows, cols))
    p = a[:-4] + '.npy'
    try:
        got = np.load(p, mmap_mode='r')
    except Exception as e:
        bad.append('%s: %s' % (os.path.relpath(p, out), e))
        continue
    n += 1
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        bad.append('%s: %s %s, the .arr %s %s%s' % (os.path.relpath(p, out), got.dtype, got.shape, want.dtype,
                   want.shape, '' if got.shape != want.shape else ', %d values differ' % np.sum(got != want)))
bad += ['%s: no .arr twin' % os.path.relpath(p, out) for p in npys if p[:-4] + '.arr' not in arrs]
print('; '.join(bad[:3]) if bad else 'ok %d' % n)
EOF
}

# serve TAG DATA PREDS: graph stores 0 and 1 of DATA with --predictions
# PREDS and a sampler over them; sets ST0, ST1, SMP (nng URLs) and HTTP0
# (store 0's HTTP port).
serve() {
	local tag=$1 d=$2 preds=$3 p
	for p in 0 1; do
		"$BIN/gnn-graphstore" --data "$d" --part $p --predictions "$preds" --listen tcp://127.0.0.1:0 \
			--http-addr 127.0.0.1 --http-port 0 --workers 2 2>"$WORK/$tag-gs$p.log" &
		PIDS+=($!)
	done
	for p in 0 1; do wait_for 30 grep -q " ready part=" "$WORK/$tag-gs$p.log" || return 1; done
	ST0=tcp://127.0.0.1:$(port_of "$WORK/$tag-gs0.log") ST1=tcp://127.0.0.1:$(port_of "$WORK/$tag-gs1.log")
	HTTP0=$(sed -n 's/.* ready .* http_port=\([0-9]*\) .*/\1/p' "$WORK/$tag-gs0.log" | head -n 1)
	"$BIN/gnn-sampler" --graphstores "$ST0,$ST1" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 2>"$WORK/$tag-smp.log" &
	PIDS+=($!)
	wait_for 30 grep -q " ready listen=" "$WORK/$tag-smp.log" || return 1
	SMP=tcp://127.0.0.1:$(port_of "$WORK/$tag-smp.log")
}
# same_as_arrays JSON OUT: the lookup's classes and original IDs are the
# inference's pred.arr and orig-id.arr rows, partition after partition.
same_as_arrays() {
	local f
	cmp -s <(jq -r '.predictions[].class' "$1") \
		<(for f in "$2"/part-0/pred.arr "$2"/part-1/pred.arr; do od -An -v -t d4 -j 64 "$f"; done | tr -s ' ' '\n' | grep -v '^$') &&
	cmp -s <(jq -r '.predictions[].original_id' "$1") \
		<(for f in "$2"/part-0/orig-id.arr "$2"/part-1/orig-id.arr; do od -An -v -t d8 -j 64 "$f"; done | tr -s ' ' '\n' | grep -v '^$')
}

# ---- tiny: train, then infer ------------------------------------------------
timeout 200 "$L" --synthetic tiny --parts 2 --trainers 2 --epochs 10 --hidden 32 --workdir "$WORK/t" --no-infer "${LIMITS[@]}" \
	>"$WORK/train.out" 2>&1
rc=$?
D=$WORK/t/partition CK=$WORK/t/checkpoints
check tiny_trained "gnn-local exit 0 (got $rc)" bash -c "[ $rc -eq 0 ] && [ -f '$CK/result.json' ]"
# No model flag: result.json records the run's configuration. A model flag
# that agrees with it is accepted (worker 1 below), one that does not is
# refused (wrong_model_refused).
M=()

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
	--hidden 32 --model graphsage --embeddings 2>"$WORK/two1.log" &
w1=$!
infer "$WORK/two" "$WORK/two0.log" "${M[@]}" --workers 2 --worker 0 --embeddings --wait-s 30
rc0=$?
wait $w1
rc1=$?
# same_outputs A B: the two outputs' per-partition arrays are the same bytes.
same_outputs() {
	local p f
	for p in 0 1; do
		for f in pred topk-class topk-prob orig-id; do
			cmp -s "$1/part-$p/$f.arr" "$2/part-$p/$f.arr" || return 1
		done
	done
}
same=true
same_outputs "$WORK/one" "$WORK/two" || same=false
"$PC" "$D" "$WORK/two" >"$WORK/two.check" 2>&1
check tiny_two_workers_same "2 workers: exit 0 0 (got $rc0 $rc1), the same bytes as 1 worker ($same), embeddings written, work folder removed" \
	bash -c "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && $same && grep -q 'predcheck: ok' '$WORK/two.check' &&
		 [ -f '$WORK/two/part-1/emb.arr' ] && [ -z \"\$(ls -d '$WORK/two'/.work-* 2>/dev/null)\" ]"

# The .npy twins (--npy, on by default): what np.load(mmap_mode='r') gives
# is the .arr's array, with 1 worker (pred, topk-class, topk-prob, orig-id:
# 8 files) and 2 (emb too: 10); --npy=false writes the .arr files alone,
# the same bytes, and says so in summary.json.
if [ -z "$PY" ]; then
	skip tiny_npy_outputs "no python3 with NumPy (Debian: apt-get install python3-numpy)"
else
	r1=$(npy_same "$WORK/one" 2>&1) r2=$(npy_same "$WORK/two" 2>&1)
	infer "$WORK/nonpy" "$WORK/nonpy.log" "${M[@]}" --npy=false
	rc=$?
	same=true
	same_outputs "$WORK/one" "$WORK/nonpy" || same=false
	loads=false
	[ "$r1" = "ok 8" ] && [ "$r2" = "ok 10" ] && loads=true
	check tiny_npy_outputs "np.load of every .npy equals its .arr (1 worker: $r1; 2 workers with --embeddings: $r2); --npy=false: exit 0 (got $rc), the same .arr bytes ($same), no .npy, summary.json npy true/false" \
		bash -c "$loads && [ $rc -eq 0 ] && $same &&
			 [ -z \"\$(ls '$WORK'/nonpy/part-*/*.npy* 2>/dev/null)\" ] &&
			 [ \"\$(jq -r .npy '$WORK/one/summary.json') \$(jq -r .npy '$WORK/nonpy/summary.json')\" = 'true false' ]"
fi

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

# ---- PREDICT: graph stores serve the predictions, the sampler routes ------
# The stores start before there are any, pick them up when they appear and
# again when another inference run replaces them: no restart.
if serve t "$D" "$WORK/live"; then
	seq 0 1999 >"$WORK/ids"
	timeout 30 "$BIN/gnn-cli" predict --sampler "$SMP" --nodes 0,1 >"$WORK/p0.json" 2>"$WORK/p0.err"
	rc0=$?
	cp -r "$WORK/one" "$WORK/live"
	timeout 60 "$BIN/gnn-cli" predict --sampler "$SMP" --nodes @"$WORK/ids" >"$WORK/p1.json" 2>"$WORK/p1.err"
	rc1=$?
	check predict_through_sampler "none yet: exit 1 naming it (got $rc0); then all 2000 nodes through the sampler (got $rc1, $(jq '.predictions | length' "$WORK/p1.json" 2>/dev/null)), the same classes and original IDs as the arrays" \
		bash -c "[ $rc0 -eq 1 ] && grep -q 'no predictions' '$WORK/p0.err' && [ $rc1 -eq 0 ] &&
			 [ \"\$(jq '.predictions | length' '$WORK/p1.json')\" = 2000 ] && [ \"\$(jq -r .top_k '$WORK/p1.json')\" = 3 ] &&
			 $(declare -f same_as_arrays); same_as_arrays '$WORK/p1.json' '$WORK/one'"
	timeout 30 "$BIN/gnn-cli" predict --store "$ST0" --nodes 0,1 >"$WORK/p2.json" 2>/dev/null
	rc2=$?
	timeout 30 "$BIN/gnn-cli" predict --store "$ST0" --nodes 1999 >/dev/null 2>"$WORK/p3.err"
	rc3=$?
	n=$(curl -s "http://127.0.0.1:$HTTP0/metrics" | awk '$1 == "gnn_graphstore_requests_total{op=\"predict\"}" { print $2 }')
	check predict_from_store "a store answers for its nodes (got $rc2), refuses another's (got $rc3), counts them in /metrics (predict=$n)" \
		bash -c "[ $rc2 -eq 0 ] && [ \"\$(jq '.predictions[1].node' '$WORK/p2.json')\" = 1 ] && [ $rc3 -eq 1 ] &&
			 grep -q 'not owned' '$WORK/p3.err' && [ '${n:-0}' -ge 3 ]"
	infer "$WORK/live" "$WORK/live.log" "${M[@]}" --top-k 2
	rc=$?
	timeout 30 "$BIN/gnn-cli" predict --sampler "$SMP" --nodes 5,1500 >"$WORK/p4.json" 2>/dev/null
	rc4=$?
	check predict_picks_up_new_run "another inference run (--top-k 2) replaces them (got $rc): the stores answer with it, no restart (got $rc4, top_k $(jq -r .top_k "$WORK/p4.json" 2>/dev/null))" \
		bash -c "[ $rc -eq 0 ] && [ $rc4 -eq 0 ] && [ \"\$(jq -r .top_k '$WORK/p4.json')\" = 2 ] &&
			 grep -q predictions_loaded '$WORK/t-gs1.log'"
else
	for t in predict_through_sampler predict_from_store predict_picks_up_new_run; do
		fail $t "graph stores or sampler not ready: $(tail -n 2 "$WORK"/t-*.log | tr '\n' ' ')"
	done
fi

# ---- bad inputs: a clear error, nothing written ----------------------------
infer "$WORK/bad1" "$WORK/bad1.log" --hidden 64
rc=$?
check wrong_model_refused "--hidden 64 against a run of 32: exit 2 (got $rc), bad_config naming --hidden, the given and the trained value, no output" \
	bash -c "[ $rc -eq 2 ] && grep -q 'bad_config option=--hidden given=64 trained=32' '$WORK/bad1.log' && [ -z \"\$(ls '$WORK/bad1' 2>/dev/null | grep -v '^\.')\" ]"
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

infer "$WORK/bad4" "$WORK/bad4.log" "${M[@]}" --epochs 99 --wait-s 1
rc=$?
check result_of_fewer_epochs_waited_out "--epochs 99 against a 10-epoch result (a run being continued): waits for it, then exit 1 (got $rc), nothing written" \
	bash -c "[ $rc -eq 1 ] && grep -q 'epochs>=99,has=10' '$WORK/bad4.log' && [ ! -e '$WORK/bad4/summary.json' ]"

# ---- Cora: the same accuracy as the trainer's full-neighbourhood evaluation --
if ! have_cora; then
	skip cora_matches_full_evaluation "no Cora at $DATASETS/cora (CI has it)"
	skip cora_lookup "no Cora at $DATASETS/cora (CI has it)"
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
# The same 2708 predictions looked up through the graph stores and a sampler.
rc=1
if serve c "$D" "$WORK/cp"; then
	seq 0 2707 >"$WORK/cids"
	timeout 60 "$BIN/gnn-cli" predict --sampler "$SMP" --nodes @"$WORK/cids" >"$WORK/cora.json" 2>"$WORK/cora-p.err"
	rc=$?
fi
check cora_lookup "gnn-cli predict --sampler: exit 0 (got $rc), all 2708 nodes, the classes whose accuracy predcheck measured" \
	bash -c "[ $rc -eq 0 ] && [ \"\$(jq '.predictions | length' '$WORK/cora.json')\" = 2708 ] &&
		 $(declare -f same_as_arrays); same_as_arrays '$WORK/cora.json' '$WORK/cp'"
