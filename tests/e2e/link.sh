#!/usr/bin/env bash
# End-to-end tests of link prediction (docs/training.md "Link prediction",
# docs/inference.md "Link prediction"): gnn-local --task link on Cora with
# GAE's 85/5/10 edge split reaches GAE's published test AUC and AP through
# training and layer-wise inference; the same run with the exclusion off
# shows the leak; learnable embeddings train and are tested at their best
# epoch; bad input is refused. Reads ../shared/datasets/cora and
# is skipped when it is absent.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
TR=$BIN/gnn-trainer
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
LIMITS=(--ready-timeout-s 60 --timeout-s 600 --stop-timeout-s 10)

# at_least A B: A >= B (numbers).
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a >= b) }'; }
# at_epoch LOG N KEY: KEY's value on epoch N's link_epoch line.
at_epoch() { grep " link_epoch epoch=$2 " "$1" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"; }

# ---- bad input (no dataset needed) -------------------------------------------------
"$TR" --samplers tcp://127.0.0.1:1 --task link >/dev/null 2>"$WORK/nodata.err"
check link_needs_data "gnn-trainer --task link without --data: exit 2, bad_config naming --data" \
	bash -c "[ $? -eq 2 ] && grep -q 'bad_config.*needs --data' '$WORK/nodata.err'"
"$TR" --samplers tcp://127.0.0.1:1 --task link --data /nonexistent --decoder cosine >/dev/null 2>"$WORK/dec.err"
check link_bad_decoder "gnn-trainer --decoder cosine: exit 2 naming the choices dot|mlp" \
	bash -c "[ $? -eq 2 ] && grep -q 'dot|mlp' '$WORK/dec.err'"
"$TR" --samplers tcp://127.0.0.1:1 --task link --data /nonexistent --neg-k 0 >/dev/null 2>"$WORK/negk.err"
check link_bad_neg_k "gnn-trainer --neg-k 0: exit 2 naming neg-k" \
	bash -c "[ $? -eq 2 ] && grep -q 'neg-k' '$WORK/negk.err'"
"$TR" infer --data /nonexistent --checkpoint-dir /nonexistent --task links >/dev/null 2>"$WORK/itask.err"
check link_infer_bad_task "gnn-trainer infer --task links: exit 2 naming node|link" \
	bash -c "[ $? -eq 2 ] && grep -q 'node|link' '$WORK/itask.err'"

if ! have_cora; then
	skip link_cora "no $DATASETS/cora (../shared/datasets)"
	exit 0
fi

# A partition output without an edge split: gnn-local --task link refuses it
# before starting anything.
"$BIN/gnn-partition" --input "$DATASETS/cora" --parts 2 --out "$WORK/plain" >/dev/null 2>&1
"$L" --partition-dir "$WORK/plain" --task link --workdir "$WORK/nosplit" "${LIMITS[@]}" >/dev/null 2>"$WORK/nosplit.err"
rc=$?
check link_needs_edge_split "gnn-local --task link on an output without an edge split: exit 2, the message names --edge-split (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'needs an edge split.*--edge-split' '$WORK/nosplit.err'"

# ---- Cora: GAE's targets --------------------------------------------------------------
# gnn-local's link defaults (docs/local.md); under ASan fewer epochs and only
# that the pipeline works (the numbers are the plain build's).
EPOCHS=()
[ "${GNN_SAN:-0}" = 1 ] && EPOCHS=(--epochs 3)
"$L" --dataset "$DATASETS/cora" --task link --workdir "$WORK/lp" "${EPOCHS[@]}" "${LIMITS[@]}" >"$WORK/lp.out" 2>"$WORK/lp.err"
rc=$?
S=$WORK/lp/predictions/summary.json
check link_cora_runs "gnn-local --task link: exit 0, summary.json with task link (got $rc: $(grep ERROR "$WORK/lp.err" | head -n 2))" \
	bash -c "[ $rc -eq 0 ] && [ \"\$(jq -r .task '$S')\" = link ] && [ \"\$(jq -r .decoder.kind '$S')\" = dot ]"
auc=$(jq -r '.link.test.auc // empty' "$S" 2>/dev/null)
ap=$(jq -r '.link.test.ap // empty' "$S" 2>/dev/null)
rows=$(( $(jq -r '.nodes' "$S" 2>/dev/null || echo 0) ))
check link_cora_outputs "every node's embedding in part-*/emb.arr (2 parts, $rows rows), result.json's task, link metrics printed" \
	bash -c "ls '$WORK'/lp/predictions/part-0/emb.arr '$WORK'/lp/predictions/part-1/emb.arr >/dev/null &&
		 [ \"\$(jq -r .task '$WORK/lp/checkpoints/result.json')\" = link ] &&
		 grep -q '^link test .*auc=.*hits@10=' '$WORK/lp.out' &&
		 [ \"\$(jq -r '.link.test.pairs' '$S')\" = 527 ] && [ \"\$(jq -r '.link.test.negatives_per_pair' '$S')\" = 100 ]"
if [ "${GNN_SAN:-0}" = 1 ]; then
	skip link_cora_targets "under ASan (3 epochs): the targets are the plain build's"
else
	# GAE (Kipf & Welling 2016) reports AUC 0.910 and AP 0.920; these
	# defaults measured AUC 0.914 and AP 0.925 on this seed, 0.914-0.924
	# and 0.923-0.930 over seeds 1-3 (docs/training.md). With --degree-scale
	# off this seed gives AP 0.9196 and the check fails.
	check link_cora_targets "test AUC >= 0.91 and AP >= 0.92 (GAE's): got auc=$auc ap=$ap" \
		bash -c "awk -v a='$auc' -v p='$ap' 'BEGIN { exit !(a != \"\" && a >= 0.91 && p >= 0.92) }'"
fi

# ---- serving that run: gnn-cli score and topk through a sampler -------------------------
# The graph stores serve the run's own output (its emb.arr, its summary),
# which must equal tests/tools/linkfix.py's scoring of the same files: a
# held-out test pair, its negative, and a node's top 10.
# first_pair FILE: the first pair of an edge-split .arr (i64 [n x 2], its
# data after the 64-byte header).
first_pair() {
	python3 -c "import struct,sys; print('%d:%d' % struct.unpack_from('<qq', open(sys.argv[1],'rb').read(), 64))" "$1"
}
ln -s "$WORK/lp/predictions" "$WORK/lp/partition/predictions"
if serve_two serve "$WORK/lp/partition"; then
	pair=$(first_pair "$WORK/lp/partition/edge-split/test-pos.arr")
	neg=$(first_pair "$WORK/lp/partition/edge-split/test-neg.arr")
	"$BIN/gnn-cli" score --sampler "$URL" --pairs "$pair,$neg" >"$WORK/score.json" 2>"$WORK/score.err" &&
		python3 "$ROOT/tests/tools/linkfix.py" check-score "$WORK/lp/predictions" "$WORK/score.json" >"$WORK/chk" 2>&1
	rc=$?
	check link_serves_the_run "gnn-cli score of test pair $pair and negative $neg through a sampler equals the run's emb.arr (rc $rc: $(cat "$WORK/score.err" "$WORK/chk" 2>/dev/null | head -n 2))" \
		[ $rc -eq 0 ]
	"$BIN/gnn-cli" topk --sampler "$URL" --node "${pair%%:*}" --k 10 >"$WORK/topk.json" 2>"$WORK/topk.err" &&
		python3 "$ROOT/tests/tools/linkfix.py" check-topk "$WORK/lp/predictions" "$WORK/topk.json" "${pair%%:*}" 10 >"$WORK/chk" 2>&1
	rc=$?
	check link_topk_of_the_run "gnn-cli topk --node ${pair%%:*} --k 10 equals the brute force over the run's embeddings (rc $rc: $(cat "$WORK/topk.err" "$WORK/chk" 2>/dev/null | head -n 2))" \
		[ $rc -eq 0 ]
	kill -TERM "${PIDS[@]}" 2>/dev/null
	wait "${PIDS[@]}" 2>/dev/null
	PIDS=()
else
	fail link_serves_the_run "sampler not ready: $(tail -n 3 "$WORK/serve.log")"
fi

# ---- a capped epoch: --epoch-pairs --------------------------------------------------------
# 600 of Cora's 4,488 training edges an epoch (one trainer): 3 steps of
# 256, and each epoch's steps checkpointed and counted as such.
mkdir -p "$WORK/cap" && cp -r "$WORK/lp/partition" "$WORK/cap/partition" 2>/dev/null
"$L" --dataset "$DATASETS/cora" --task link --epoch-pairs 600 --epochs 2 --workdir "$WORK/cap" "${LIMITS[@]}" \
	>"$WORK/cap.out" 2>"$WORK/cap.err"
rc=$?
check link_epoch_pairs_caps "--epoch-pairs 600: exit 0, work_split per_epoch=600 steps_per_epoch=3, 2 epochs, a test AUC (got $rc: $(grep -o 'work_split.*steps_per_epoch=[0-9]*' "$WORK/cap/logs/trainer-0.log" 2>/dev/null))" \
	bash -c "[ $rc -eq 0 ] && grep -q 'work_split task=link .* per_epoch=600 steps_per_epoch=3 ' '$WORK/cap/logs/trainer-0.log' &&
		 [ \"\$(grep -c ' link_epoch epoch=' '$WORK/cap/logs/trainer-0.log')\" = 2 ] &&
		 grep -q 'link_test_evaluated test_auc=0\.' '$WORK/cap/logs/trainer-0.log'"

# ---- learnable embeddings (--embed-dim, docs/embeddings.md) ---------------------------------
# Cora's one node type embedded (concat with its features), 3 epochs on
# the same split: the pushes reach the stores (the rows of the last two
# checkpoints differ) and the test reads the best epoch's rows, as the
# inference does from the checkpoint: the two test AUCs agree. That only
# tells the rows apart when the best epoch is not the last, so it must be
# earlier: --embed-lr 0.1 peaks at epoch 2 (measured: val_auc 0.9132, then
# 0.9118; the test read with the last rows gave 0.9051 against the
# inference's 0.9081).
mkdir -p "$WORK/le" && cp -r "$WORK/lp/partition" "$WORK/le/partition" 2>/dev/null
"$L" --dataset "$DATASETS/cora" --task link --embed-dim 16 --embed-types node --embed-lr 0.1 --epochs 3 \
	--workdir "$WORK/le" "${LIMITS[@]}" >"$WORK/le.out" 2>"$WORK/le.err"
rc=$?
T0=$WORK/le/logs/trainer-0.log
t_auc=$(sed -n 's/.* link_test_evaluated test_auc=\([0-9.]*\) .*/\1/p' "$T0")
best=$(sed -n 's/.* link_test_evaluated .* best_epoch=\([0-9]*\).*/\1/p' "$T0")
i_auc=$(sed -n 's/^link test *auc=\([0-9.]*\) .*/\1/p' "$WORK/le.out")
rows=$(ls "$WORK/le/checkpoints"/epoch-*/emb-node-rows.arr 2>/dev/null | tail -n 2)
before_last=1
[ "${GNN_SAN:-0}" = 1 ] && before_last=   # the measured epoch is the plain build's
check link_embed_trains "--task link --embed-dim 16: exit 0, embeddings node:16, rows of epochs 2 and 3 differ, part-*/emb.arr written, trainer test AUC of the best rows = the inference's (got $rc: best_epoch=${best:-?} trainer=${t_auc:-?} inference=${i_auc:-?} $(grep ERROR "$WORK/le.err" | head -n 1))" \
	bash -c "[ $rc -eq 0 ] && grep -q 'embeddings types=node:16 ' '$T0' && [ \$(echo '$rows' | wc -w) = 2 ] &&
		 ! cmp -s $(echo $rows) && [ -f '$WORK/le/predictions/part-0/emb.arr' ] &&
		 [ -f '$WORK/le/predictions/part-1/emb.arr' ] && [ -n '$t_auc' ] && [ '$t_auc' = '$i_auc' ] &&
		 { [ -z '$before_last' ] || [ '${best:-3}' -lt 3 ]; }"

# ---- the leak: the same run with the exclusion off ------------------------------------
# With --exclude off each step's positive edges stay in the neighbourhoods
# the model reads, so it learns to find the edge rather than to predict it:
# its score on those pairs (train_auc, the steps' own AUC) is inflated
# against the held-out pairs' (val_auc: their edges are not in the graph,
# whatever the flag). With the exclusion on, training pairs are scored like
# held-out ones and the two stay together. Measured at epoch 10 (the leak
# run stops there; the runs are deterministic): on 0.945 vs 0.917, off
# 0.979 vs 0.902 (docs/training.md). With the exclusion silently ignored
# the two runs are the same run and this check fails (tried).
if [ "${GNN_SAN:-0}" = 1 ]; then   # the flag's C path is a log line: the plain build covers it
	skip link_exclusion_off_warns "under ASan: run by the plain build"
	skip link_leak_shows "under ASan: the comparison is the plain build's"
	exit 0
fi
cp -r "$WORK/lp/partition" "$WORK/leak-partition" 2>/dev/null && mkdir -p "$WORK/leak" &&
	mv "$WORK/leak-partition" "$WORK/leak/partition"   # the same split, not made again
"$L" --dataset "$DATASETS/cora" --task link --exclude off --workdir "$WORK/leak" --epochs 10 "${LIMITS[@]}" \
	>"$WORK/leak.out" 2>"$WORK/leak.err"
rc=$?
check link_exclusion_off_warns "--exclude off: exit 0 and a WARN exclusion_off line in the trainer's log (got $rc)" \
	bash -c "[ $rc -eq 0 ] && grep -q 'WARN .*exclusion_off' '$WORK/leak/logs/trainer-0.log' &&
		 ! grep -q 'exclusion_off' '$WORK/lp/logs/trainer-0.log'"
on_t=$(at_epoch "$WORK/lp/logs/trainer-0.log" 10 train_auc); on_v=$(at_epoch "$WORK/lp/logs/trainer-0.log" 10 val_auc)
off_t=$(at_epoch "$WORK/leak/logs/trainer-0.log" 10 train_auc); off_v=$(at_epoch "$WORK/leak/logs/trainer-0.log" 10 val_auc)
check link_leak_shows "epoch 10: exclusion off inflates the training pairs' AUC over the held-out ones' by 0.03 more than with it on (on: train_auc=$on_t val_auc=$on_v; off: train_auc=$off_t val_auc=$off_v)" \
	awk -v a="$on_t" -v b="$on_v" -v c="$off_t" -v d="$off_v" 'BEGIN { exit !(a != "" && c != "" && (c - d) >= (a - b) + 0.03) }'
