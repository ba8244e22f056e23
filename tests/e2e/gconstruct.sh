#!/usr/bin/env bash
# gnn-partition --config: a graph described by a GraphStorm-style gconstruct
# JSON over CSV tables and .npy files (docs/formats.md). A small typed graph
# written here checks string IDs, node types known only from edges,
# split_pct, a TSV and every refusal; ACM (../shared/datasets/acm, skipped
# when absent), converted by tests/tools/ogb_to_gconstruct.py with string
# IDs, author features as CSV columns and paper features as .npy, gives the
# OGB-layout import's partitions byte for byte and trains to its params_crc.
# The ACM part needs NumPy (python3-numpy, which `make deps` installs).
. "$(dirname "$0")/lib.bash"
P=$BIN/gnn-partition
L=$BIN/gnn-local
G=$WORK/g

# ---- a small graph of our own ------------------------------------------------
mkdir -p "$G"
# the example of docs/formats.md, its files as the page shows them
for f in user.csv follows.tsv likes.csv graph.json; do
	awk -v f="$f" '$0 == "<!-- gconstruct-example: " f " -->" { on = 1; next }
		on && /^```/ { if (++fence == 2) exit; next } on && fence == 1' "$ROOT/docs/formats.md" >"$G/$f"
done
"$P" --config "$G/graph.json" --parts 2 --out "$WORK/small" 2>"$WORK/small.err" >/dev/null
rc=$?
meta=$(jq -c '[[.node_types[] | .name, .num_nodes, .feat_dim], [.relations[] | .src + ":" + .name + ":" + .dst, .num_edges], .num_classes, .num_train, .num_valid, .num_test, .source.kind]' "$WORK/small/meta.json" 2>/dev/null)
check gconstruct_small_graph "docs/formats.md's example (CSV, TSV): exit 0 ($rc), items from the edges alone, reverses added, 7 labelled users split 3/1/1 by split_pct (got $meta)" \
	test "$rc/$meta" = '0/[["item",3,0,"user",8,2],["user:follows:user",14,"user:likes:item",5,"item:rev_likes:user",5],2,3,1,1,"gconstruct"]'
check gconstruct_ids_kept "node-ids/TYPE.txt keep the users' IDs in order, quotes undone (\"carol, jr\"), items in the order the edges name them" \
	bash -c "[ \"\$(tr '\n' '|' <'$WORK/small/node-ids/user.txt')\" = 'alice|bob|carol, jr|dave|erin|frank|grace|heidi|' ] &&
		 [ \"\$(tr '\n' '|' <'$WORK/small/node-ids/item.txt')\" = 'i9|i7|i3|' ]"

# Predictions name the users by their own IDs: part-<p>/node-id.txt, row by
# row beside orig-id (whose row i is node-ids/user.txt's line orig-id + 1).
timeout 200 "$L" --partition-dir "$WORK/small" --workdir "$WORK/small-run" --parts 2 --samplers 1 --trainers 1 \
	--model rgcn --epochs 3 --ready-timeout-s 60 --timeout-s 120 --stop-timeout-s 10 >/dev/null 2>&1
rc=$?
ids_ok=true rows=0
for d in "$WORK/small-run/predictions"/part-*; do
	od -An -t d8 -j 64 -w8 "$d/orig-id.arr" | tr -d ' ' >"$WORK/orig.txt"
	[ "$(wc -l <"$WORK/orig.txt")" = "$(wc -l <"$d/node-id.txt")" ] || ids_ok=false
	awk -v names="$d/node-id.txt" 'NR == FNR { id[NR - 1] = $0; next }
		{ if ((getline name <names) <= 0 || name != id[$1]) exit 1 }' \
		"$WORK/small/node-ids/user.txt" "$WORK/orig.txt" || ids_ok=false
	rows=$((rows + $(wc -l <"$d/node-id.txt")))
done
check gconstruct_predictions_name_ids "gnn-local on the example: exit 0 ($rc), node-id.txt gives each prediction row the user's own ID ($ids_ok, $rows rows of 8)" \
	bash -c "[ $rc -eq 0 ] && $ids_ok && [ $rows -eq 8 ]"

# gnn-cli predict by the user's IDs (--ids-file node-ids/user.txt), through
# a sampler in front of the two graph stores serving those predictions.
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
for p in 0 1; do cp -r "$WORK/small-run/predictions" "$WORK/gcpred$p"; done
if serve_two gc "$WORK/small" "$WORK/gcpred"; then
	printf 'carol, jr\nheidi\n' >"$WORK/names.txt"
	q=$(timeout 60 "$BIN/gnn-cli" predict --sampler "$URL" --type user --ids-file "$WORK/small/node-ids/user.txt" \
		--nodes @"$WORK/names.txt" --json 2>&1 | jq -c '[.predictions[] | .id, .original_id]' 2>&1)
	timeout 60 "$BIN/gnn-cli" predict --sampler "$URL" --type user --ids-file "$WORK/small/node-ids/user.txt" \
		--nodes alice,zoe >/dev/null 2>"$WORK/cli.err"
	rc=$?
	check gconstruct_cli_by_user_ids "gnn-cli predict --ids-file: \"carol, jr\" and heidi answered as users 2 and 7 (got $q); zoe refused naming the file (exit $rc)" \
		bash -c "[ '$q' = '[\"carol, jr\",2,\"heidi\",7]' ] && [ $rc -ne 0 ] && grep -q '\"zoe\" is not in .*user.txt' '$WORK/cli.err'"
else
	fail gconstruct_cli_by_user_ids "sampler not ready: $(tail -n 3 "$WORK/gc.log")"
fi
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done

# ---- refusals: the key or the file and line named, nothing written ---------
bad() {  # NAME MESSAGE JQ-EDIT-OF-graph.json [FILE-EDIT]
	local name=$1 msg=$2
	jq "$3" "$G/graph.json" >"$G/bad.json"
	refused "gconstruct_bad_$name" "$msg" "$WORK/bad-out" "$P" --config "$G/bad.json" --parts 2 --out "$WORK/bad-out"
}
bad parquet 'key=nodes\[0\].format.name reason="parquet is not read: write the table as CSV' '.nodes[0].format.name = "parquet"'
bad unknown_key 'key=edges\[1\].weight reason="unknown key' '.edges[1].weight = "w"'
bad edge_features 'key=edges\[0\].features reason="edge features are not supported' '.edges[0].features = []'
bad transform 'key=nodes\[0\].features\[0\].transform reason="feature transforms are not supported' '.nodes[0].features[0].transform = {"name": "max_min_norm"}'
bad regression 'key=nodes\[0\].labels\[0\].task_type reason="only classification' '.nodes[0].labels[0].task_type = "regression"'
bad no_column "user.csv line=1 reason=\"no column 'height' (feature_col) in the header" '.nodes[0].features[0].feature_col = ["age", "height"]'
bad missing_file 'key=edges\[0\].files\[0\] path=.*nope.tsv reason="no such file' '.edges[0].files = ["nope.tsv"]'
cp "$G/user.csv" "$G/user.ok" && echo 'bob,20,1.0,0' >>"$G/user.csv"
bad duplicate_id "user.csv line=10 reason=\"duplicate node ID 'bob'" '.'
cp "$G/user.ok" "$G/user.csv" && echo 'ivan,20,1.0,9' >>"$G/user.csv"
"$P" --config "$G/bad.json" --parts 2 --classes 2 --out "$WORK/bad-out" 2>"$WORK/err" >/dev/null
check gconstruct_bad_label_range_classes "--classes 2 and a label 9: refused naming the line" \
	bash -c "grep -q \"user.csv line=10 reason=.label '9' out of range\" '$WORK/err' && [ ! -e '$WORK/bad-out' ]"
cp "$G/user.ok" "$G/user.csv"
printf 'src\tdst\nalice\tzoe\n' >"$G/follows2.tsv"
bad edge_to_nothing "follows2.tsv line=2 reason=\"destination node 'zoe' does not exist" '.edges[0].files = ["follows2.tsv"]'
printf 'alice\ndave\n' >"$G/train.txt"
bad split_unlabelled 'train.txt line=2 reason="node in the split has no label' \
	'.nodes[0].labels[0] |= (del(.split_pct) | .custom_split_filenames = {"train": "train.txt"})'

# ---- ACM: the same graph as OGB's layout --------------------------------------
PY=$(numpy_python)
ACM=$DATASETS/acm
if [ ! -f "$ACM/raw/num-node-dict.csv.gz" ] || [ -z "$PY" ]; then
	why="no python3 with NumPy (python3-numpy)"
	[ -f "$ACM/raw/num-node-dict.csv.gz" ] || why="reads ../shared/datasets/acm, which is absent"
	skip gconstruct_acm_same_partitions "$why"
	skip gconstruct_acm_trains_alike "$why"
	exit 0
fi
"$PY" "$ROOT/tests/tools/ogb_to_gconstruct.py" "$ACM" heco20 "$WORK/acm-gc" --columns author
"$P" --input "$ACM" --split heco20 --parts 2 --out "$WORK/acm-ogb" 2>/dev/null >/dev/null
"$P" --config "$WORK/acm-gc/graph.json" --parts 2 --out "$WORK/acm-cfg" 2>"$WORK/acm-cfg.err" >/dev/null
rc=$?
same=true
same_partitions "$WORK/acm-ogb" "$WORK/acm-cfg" || same=false
check gconstruct_acm_same_partitions "ACM as tables (string IDs, author features in 1902 CSV columns, paper features in a .npy, split files): exit 0 ($rc), partitions and meta.json equal to the OGB import's ($same), paper IDs kept" \
	bash -c "[ $rc -eq 0 ] && $same && [ \"\$(sed -n 18p '$WORK/acm-cfg/node-ids/paper.txt')\" = paper_17 ]"
if [ "${GNN_SAN:-0}" = 1 ]; then
	skip gconstruct_acm_trains_alike "run by make test (the plain build): the partitions are checked identical above"
	exit 0
fi
trains_alike gconstruct_acm_trains_alike "R-GCN on ACM's OGB import and on its tables" \
	"--partition-dir $WORK/acm-ogb" "--partition-dir $WORK/acm-cfg" --parts 2 --samplers 1 --trainers 1 \
	--model rgcn --epochs 20 --seed 1 --no-infer --ready-timeout-s 60 --timeout-s 300 --stop-timeout-s 10
