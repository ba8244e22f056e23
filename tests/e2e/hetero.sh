#!/usr/bin/env bash
# Heterogeneous graphs end to end (docs/formats.md, docs/model.md "R-GCN"):
#   - tests/data/hetero-tiny (hand-made, OGB's heterogeneous layout: 3 node
#     types, one without features, 5 relations with the reverses) through
#     import, METIS, graph stores, samplers, R-GCN training on 2 trainers
#     and inference: R-GCN must beat the features-only baseline by a wide
#     margin, and the predictions (papers only) pass predcheck;
#   - the same partitions served: typed minibatches with per-relation
#     fanouts pass mbcheck (every sampled edge exists in its relation),
#     gnn-cli shows the schema, looks papers up by their original IDs and
#     predicts them, and refuses an author's prediction;
#   - bad configurations: graphsage on a graph of several relations, and a
#     fanout list naming a relation the graph lacks, exit 2 saying so;
#   - the synthetic mag-tiny preset: R-GCN beats features-only;
#   - ../shared/datasets/acm (HeCo's ACM, skipped when absent): R-GCN with
#     the defaults (no model flag but --model) trains at hidden 64 and beats
#     features-only on split heco20 (under make asan: 2 epochs of the
#     recipe run to the end, a prediction for every paper).
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
CLI=$BIN/gnn-cli
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
TINY=$ROOT/tests/data/hetero-tiny
LIMITS=(--ready-timeout-s 120 --timeout-s 600 --stop-timeout-s 10)
RGCN=(--model rgcn --lr 0.01 --hidden 32 --fanouts 10,10)

# acc MODEL OUT: the "test_acc MODEL=A features_only=B" line's two numbers.
acc() { sed -n "s/^test_acc $1=\([0-9.]*\) features_only=\([0-9.]*\)$/\1 \2/p" "$2"; }
# beats A B BAR MARGIN: A >= BAR and A >= B + MARGIN.
beats() { awk -v a="$1" -v b="$2" -v bar="$3" -v m="$4" 'BEGIN { exit !(a != "" && b != "" && a >= bar && a >= b + m) }'; }

# ---- hetero-tiny: import -> METIS -> train -> infer ------------------------------
# 100 epochs of one step (120 training papers): R-GCN reached 0.9583
# against 0.4750 for the same network on each paper's own features
# (deterministic; the dataset's README: 0.958 from the typed
# neighbourhood, 0.508 from the features, by nearest centroid).
timeout 300 "$L" --dataset "$TINY" --parts 2 --samplers 1 --trainers 2 --epochs 100 "${RGCN[@]}" --baseline \
	--workdir "$WORK/ht" "${LIMITS[@]}" >"$WORK/ht.out" 2>"$WORK/ht.err"
rc=$?
read -r a b <<<"$(acc rgcn "$WORK/ht.out")"
check tiny_rgcn_beats_features "hetero-tiny: exit 0, rgcn test_acc >= 0.90 and >= 0.30 above features-only (got $rc, ${a:-?} ${b:-?})" \
	bash -c "[ $rc -eq 0 ] && $(declare -f beats); beats '$a' '$b' 0.90 0.30"
"$TOOLS/predcheck" "$WORK/ht/partition" "$WORK/ht/predictions" >"$WORK/ht.pc" 2>&1
check tiny_predictions_papers_only "predcheck ok: a prediction per paper (320), none for authors or subjects; the result block names them" \
	bash -c "grep -q '^predcheck: ok' '$WORK/ht.pc' && [ \"\$(jq '.predicted, .nodes, .label_type' '$WORK/ht/predictions/summary.json' | tr '\n' ' ')\" = '320 448 \"paper\" ' ] &&
		 grep -q 'predicted=320 (every paper node' '$WORK/ht.out'"

# ---- the same partitions, served ---------------------------------------------------
D=$WORK/ht/partition
for p in 0 1; do
	"$BIN/gnn-graphstore" --data "$D" --part $p --predictions "$WORK/ht/predictions" --listen tcp://127.0.0.1:0 \
		--http-addr 127.0.0.1 --http-port 0 --workers 2 2>"$WORK/gs$p.log" &
	PIDS+=($!)
done
served=1
for p in 0 1; do wait_for 30 grep -q " ready part=" "$WORK/gs$p.log" || served=0; done
if [ $served = 1 ]; then
	ST0=tcp://127.0.0.1:$(port_of "$WORK/gs0.log") ST1=tcp://127.0.0.1:$(port_of "$WORK/gs1.log")
	"$BIN/gnn-sampler" --graphstores "$ST0,$ST1" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 2>"$WORK/smp.log" &
	PIDS+=($!)
	wait_for 30 grep -q " ready listen=" "$WORK/smp.log" || served=0
fi
if [ $served = 0 ]; then
	fail tiny_served "graph stores or sampler not ready: $(tail -n 2 "$WORK"/gs*.log "$WORK/smp.log" 2>/dev/null | tr '\n' ' ')"
else
	SMP=tcp://127.0.0.1:$(port_of "$WORK/smp.log")
	"$TOOLS/mbcheck" --sampler "$SMP" --parts "$D" --minibatches 30 --batch 40 --fanouts "cites=4,3;writes=2,2;*=1,1" \
		>"$WORK/mb" 2>&1
	check tiny_minibatches_typed "30 typed minibatches (per-relation fanouts, random ones among them) pass mbcheck: every edge in its relation, gnn_sample_choose's pick, features per type: $(tail -n 1 "$WORK/mb")" \
		grep -q '^mbcheck: ok' "$WORK/mb"
	"$CLI" info --sampler "$SMP" >"$WORK/info.json" 2>"$WORK/cli.err"
	check tiny_info_schema "INFO through the sampler: 3 types, 5 relations in import order, label type paper, type offsets" \
		bash -c "[ \"\$(jq -c '[.schema.node_types[].name, .schema.label_type, (.schema.relations | map(.src + \":\" + .name + \":\" + .dst) | join(\",\")), (.type_offsets | length)]' '$WORK/info.json')\" = \
			'[\"author\",\"paper\",\"subject\",\"paper\",\"author:writes:paper,paper:cites:paper,paper:has_subject:subject,paper:rev_writes:author,subject:rev_has_subject:paper\",7]' ]"
	"$CLI" predict --sampler "$SMP" --type paper --nodes 0,7,319 >"$WORK/pred.json" 2>"$WORK/cli.err"
	"$CLI" lookup --sampler "$SMP" --type paper --nodes 0,7,319 >"$WORK/look.json" 2>>"$WORK/cli.err"
	check tiny_predict_by_original_id "predict --type paper --nodes 0,7,319: the papers of those original IDs, their global IDs those lookup gives" \
		bash -c "[ \"\$(jq -c '[.predictions[].original_id]' '$WORK/pred.json')\" = '[0,7,319]' ] &&
			 [ \"\$(jq -c '[.predictions[].node]' '$WORK/pred.json')\" = \"\$(jq -c .nodes '$WORK/look.json')\" ]"
	author=$(jq '.nodes[0]' <("$CLI" lookup --sampler "$SMP" --type author --nodes 3 2>/dev/null))
	"$CLI" predict --sampler "$SMP" --nodes "${author:-0}" >/dev/null 2>"$WORK/cli.err"
	rc=$?
	"$CLI" lookup --sampler "$SMP" --type paper --nodes 320 >/dev/null 2>"$WORK/cli2.err"
	rc2=$?
	check tiny_predict_refusals "an author's prediction: einval naming its type; paper 320 (there are 320): enoent (got $rc $rc2)" \
		bash -c "[ $rc -ne 0 ] && grep -q 'is of type author: predictions are of paper nodes' '$WORK/cli.err' &&
			 [ $rc2 -ne 0 ] && grep -q 'enoent: paper 320 (orig_ids\[0\]) is not in the graph' '$WORK/cli2.err'"
fi

# ---- bad configurations -------------------------------------------------------------
timeout 120 "$L" --partition-dir "$D" --samplers 1 --trainers 1 --epochs 1 --fanouts 5,5 --model graphsage \
	--no-infer --workdir "$WORK/bad1" "${LIMITS[@]}" >"$WORK/bad1.out" 2>&1
rc=$?
timeout 120 "$L" --partition-dir "$D" --samplers 1 --trainers 1 --epochs 1 --fanouts "wrote=5,5;*=5,5" --model rgcn \
	--no-infer --workdir "$WORK/bad2" "${LIMITS[@]}" >"$WORK/bad2.out" 2>&1
rc2=$?
check typed_bad_config "graphsage on 5 relations, and a fanout list naming relation 'wrote': exit 2 saying so (got $rc $rc2)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'use --model rgcn' '$WORK/bad1/logs/trainer-0.log' &&
		 [ $rc2 -eq 2 ] && grep -q \"unknown relation 'wrote'\" '$WORK/bad2/logs/trainer-0.log'"

# ---- synthetic mag-tiny ----------------------------------------------------------------
# 30 epochs: R-GCN 0.7674 against 0.3837 features-only on the 86 test
# papers (deterministic; docs/synthetic.md: 0.407 for the nearest
# centroid on own features).
timeout 300 "$L" --synthetic mag-tiny --parts 2 --samplers 1 --trainers 2 --epochs 30 --model rgcn --lr 0.01 \
	--hidden 64 --fanouts 10,10 --baseline --workdir "$WORK/mt" "${LIMITS[@]}" >"$WORK/mt.out" 2>"$WORK/mt.err"
rc=$?
read -r a b <<<"$(acc rgcn "$WORK/mt.out")"
check mag_tiny_rgcn_beats_features "mag-tiny: exit 0, rgcn test_acc >= 0.70 and >= 0.25 above features-only (got $rc, ${a:-?} ${b:-?})" \
	bash -c "[ $rc -eq 0 ] && $(declare -f beats); beats '$a' '$b' 0.70 0.25"

# ---- ACM (../shared) ----------------------------------------------------------------------
if [ -f "$DATASETS/acm/raw/num-node-dict.csv.gz" ] && [ "${GNN_SAN:-0}" = 1 ]; then
	# Under make asan the same import, training and full-neighbour
	# inference for 2 epochs: the 100 (and the baseline's 100) took 257 s
	# there; the accuracy is make test's to check.
	timeout 300 "$L" --dataset "$DATASETS/acm" --split heco20 --parts 2 --samplers 1 --trainers 1 --epochs 2 \
		--model rgcn --lr 0.01 --hidden 64 --fanouts 10,10 --eval-fanouts -1,-1 --workdir "$WORK/acm" \
		"${LIMITS[@]}" >"$WORK/acm.out" 2>"$WORK/acm.err"
	rc=$?
	check acm_rgcn_runs "ACM heco20 (reads ../shared/datasets/acm), 2 epochs under the sanitizers: exit 0 and a prediction for every paper (got $rc: $(grep -o 'predicted=[0-9]*' "$WORK/acm.out"))" \
		bash -c "[ $rc -eq 0 ] && grep -q 'predicted=4019 ' '$WORK/acm.out'"
elif [ -f "$DATASETS/acm/raw/num-node-dict.csv.gz" ]; then
	# The defaults (issue 36: they must train a graph of a few labels):
	# hidden 64 for rgcn (--hidden 0), 300 epochs of one step (60
	# training papers). Seed 1: 0.9040 against FEATURES_ONLY; hidden 256,
	# the defaults before, gave 0.8890 (docs/training.md, "Small typed
	# graphs").
	timeout 400 "$L" --dataset "$DATASETS/acm" --split heco20 --parts 2 --samplers 1 --trainers 1 --model rgcn \
		--baseline --no-infer --workdir "$WORK/acm" "${LIMITS[@]}" >"$WORK/acm.out" 2>"$WORK/acm.err"
	rc=$?
	read -r a b <<<"$(acc rgcn "$WORK/acm.out")"
	h=$(jq -r '.config.hidden' "$WORK/acm/checkpoints/result.json" 2>/dev/null)
	check acm_rgcn_defaults_train "ACM heco20 (reads ../shared/datasets/acm), gnn-local --model rgcn and no other model flag: exit 0, result.json records hidden 64, rgcn test_acc >= 0.895 and >= 0.10 above features-only (got $rc, hidden ${h:-?}, ${a:-?} ${b:-?})" \
		bash -c "[ $rc -eq 0 ] && [ '$h' = 64 ] && $(declare -f beats); beats '$a' '$b' 0.895 0.10"
else
	skip acm_rgcn_defaults_train "reads ../shared/datasets/acm, which is absent"
fi
