#!/usr/bin/env bash
# End-to-end tests of gnn-partition's link-prediction split (--edge-split,
# --edge-split-from; docs/partitioning.md "Edge split"): counts, no
# held-out pair left in any partition's CSR, negatives that are no edges,
# the same bytes for the same seed, and bad input refused with nothing
# written. tests/tools/edgesplit_check.py compares each output with the
# same graph partitioned without the split, all in one run (Python starts
# slowly): the outputs are made first, then checked, then the tests read
# its lines. Cora reads ../shared/datasets/cora and is skipped when absent.
. "$(dirname "$0")/lib.bash"
P=$BIN/gnn-partition
CHECK=$TOOLS/partcheck
HT=$ROOT/tests/data/hetero-tiny
CORA=$DATASETS/cora

if ! command -v python3 >/dev/null; then
	skip edge_split "no python3 (tests/tools/edgesplit_check.py reads the outputs)"
	exit 0
fi

# ---- the outputs, and edgesplit_check over them ---------------------------------
P2() { "$P" --parts 2 "$@" 2>/dev/null >/dev/null; }
P2 --synthetic tiny --out "$WORK/t-full"
"$P" --synthetic tiny --parts 2 --edge-split 0.85,0.05,0.10 --eval-negatives 20 --out "$WORK/t1" 2>"$WORK/t1.err" >/dev/null
P2 --synthetic tiny --edge-split 0.85,0.05,0.10 --eval-negatives 20 --out "$WORK/t2"
P2 --synthetic tiny --edge-split 0.85,0.05,0.10 --eval-negatives 20 --seed 2 --out "$WORK/t3"
"$P" --synthetic tiny --parts 3 --method random --edge-split 0.85,0.05,0.10 --eval-negatives 20 --out "$WORK/t4" 2>/dev/null >/dev/null
P2 --input "$HT" --out "$WORK/ht-full"
P2 --input "$HT" --edge-split 0.8,0.1,0.1 --edge-relation writes --eval-negatives 5 --out "$WORK/ht"
mkdir -p "$WORK/csv" "$WORK/csv-cites"
zcat "$HT/raw/relations/author___writes___paper/edge.csv.gz" | sed -n '1,20p' >"$WORK/csv/valid.csv"
zcat "$HT/raw/relations/author___writes___paper/edge.csv.gz" | sed -n '21,50p' | gzip -c >"$WORK/csv/test.csv.gz"
P2 --input "$HT" --edge-split-from "$WORK/csv" --edge-relation author:writes:paper --out "$WORK/ht-csv"
# Within one type a pair may be listed either way round: valid.csv reversed.
zcat "$HT/raw/relations/paper___cites___paper/edge.csv.gz" | sed -n '1,5p' | awk -F, '{ print $2 "," $1 }' >"$WORK/csv-cites/valid.csv"
zcat "$HT/raw/relations/paper___cites___paper/edge.csv.gz" | sed -n '6,9p' >"$WORK/csv-cites/test.csv"
P2 --input "$HT" --edge-split-from "$WORK/csv-cites" --edge-relation cites --out "$WORK/ht-cites"
{
	echo "tiny $WORK/t1 $WORK/t-full"
	echo "leak $WORK/t1 $WORK/t-full $WORK/t-full"  # the check's own test: a CSR with every pair
	echo "parts same $WORK/t1 $WORK/t4"
	echo "ht $WORK/ht $WORK/ht-full"
	echo "csv $WORK/ht-csv $WORK/ht-full"
	echo "cites $WORK/ht-cites $WORK/ht-full"
} >"$WORK/batch"
if have_cora; then
	P2 --input "$CORA" --out "$WORK/cora-full"
	P2 --input "$CORA" --edge-split 0.85,0.05,0.10 --out "$WORK/cora"
	echo "cora $WORK/cora $WORK/cora-full" >>"$WORK/batch"
fi
python3 "$ROOT/tests/tools/edgesplit_check.py" --batch "$WORK/batch" >"$WORK/checked"
checked() { grep -q "^$1: edgesplit_check: ok" "$WORK/checked"; }

# ---- synthetic tiny: 2000 nodes, 10000 undirected edges ---------------------------
check tiny_counts "tiny: 10000 pairs -> 8500 train, 500 valid, 1000 test; 3000 directed edges removed, 17000 stored" \
	[ "$(jq -c '[.edge_split | .relation, .reverse_relation, .num_pairs, .num_train, .num_valid, .num_test, .removed_edges, .eval_negatives, .files.test_neg_dst.cols] + [.num_edges, .relations[0].num_edges]' "$WORK/t1/meta.json")" = \
	  '["node:edge:node",null,10000,8500,500,1000,3000,20,20,17000,17000]' ]
check tiny_no_leak "tiny: edgesplit_check ok (no held-out pair in any CSR, negatives no edges, exact removal), partcheck ok" \
	bash -c "grep -q '^tiny: edgesplit_check: ok' '$WORK/checked' && '$CHECK' '$WORK/t1' | grep -q 'partcheck: ok'"
check tiny_leak_detected "edgesplit_check fails on a CSR that still holds the held-out pairs (the unsplit graph's)" \
	bash -c "grep -q '^leak: edgesplit_check: FAIL valid: 500 held-out pairs (or their reverses) left in the CSR' '$WORK/checked' &&
		 grep -q '^leak: edgesplit_check: FAIL test: 1000 held-out pairs' '$WORK/checked'"
check tiny_deterministic "same seed: every array file byte for byte the same, meta.json too (less timings and memory)" \
	bash -c "cd '$WORK/t1' && [ \"\$(find . -name '*.arr' | wc -l)\" -eq 17 ] && for f in \$(find . -name '*.arr'); do cmp -s \$f '$WORK/t2/'\$f || exit 1; done &&
		 [ \"\$(jq -c 'del(.timing_seconds, .memory)' meta.json)\" = \"\$(jq -c 'del(.timing_seconds, .memory)' '$WORK/t2/meta.json')\" ]"
check tiny_partitioning_irrelevant "3 random partitions instead of 2 METIS ones: the same split in original IDs" \
	grep -q '^parts: edgesplit_check: ok' "$WORK/checked"
check tiny_seed_matters "another seed holds out other pairs" \
	bash -c "! cmp -s '$WORK/t1/edge-split/test-pos.arr' '$WORK/t3/edge-split/test-pos.arr'"
check tiny_logged "the split is one edge_split log line" \
	grep -q 'edge_split relation=node:edge:node reverse=none from=ratios pairs=10000 train=8500 valid=500 test=1000 removed_edges=3000' "$WORK/t1.err"

# ---- heterogeneous: one relation, its reverse removed too -------------------------
check hetero_writes "hetero-tiny writes: 804 pairs -> 644/80/80, rev_writes loses the same 160, edgesplit_check ok" \
	bash -c "[ \"\$(jq -c '[.edge_split | .relation, .reverse_relation, .num_train, .num_valid, .num_test, .removed_edges] + [[.relations[].num_edges]]' '$WORK/ht/meta.json')\" = \\
		 '[\"author:writes:paper\",\"paper:rev_writes:author\",644,80,80,320,[644,1874,320,644,320]]' ] && grep -q '^ht: edgesplit_check: ok' '$WORK/checked'"

# ---- the user's own split (CSV) ----------------------------------------------------
check csv_split "--edge-split-from: valid.csv 20 and test.csv.gz 30 pairs held out as listed, edgesplit_check ok" \
	bash -c "[ \"\$(jq -c '[.edge_split | .source, .ratios, .num_train, .num_valid, .num_test, .removed_edges]' '$WORK/ht-csv/meta.json')\" = '[\"csv\",null,754,20,30,100]' ] &&
		 grep -q '^csv: edgesplit_check: ok' '$WORK/checked'"
check csv_within_type_either_direction "a pair of a relation within one type may be listed either way round" \
	bash -c "[ \"\$(jq -c '[.edge_split | .num_valid, .num_test, .removed_edges]' '$WORK/ht-cites/meta.json')\" = '[5,4,18]' ] &&
		 grep -q '^cites: edgesplit_check: ok' '$WORK/checked'"

# ---- Cora: 5278 undirected edges ---------------------------------------------------
if have_cora; then
	check cora_edge_split "Cora 0.85,0.05,0.10: 5278 pairs -> 4488/263/527 (GAE's floor), 1580 edges removed, 8976 stored, 100 negatives each, edgesplit_check ok" \
		bash -c "[ \"\$(jq -c '[.edge_split | .num_pairs, .num_train, .num_valid, .num_test, .removed_edges, .eval_negatives] + [.num_edges]' '$WORK/cora/meta.json')\" = '[5278,4488,263,527,1580,100,8976]' ] &&
			 grep -q '^cora: edgesplit_check: ok' '$WORK/checked' && '$CHECK' '$WORK/cora' | grep -q 'partcheck: ok'"
else
	skip cora_edge_split "reads ../shared/datasets/cora, which is absent"
fi

# ---- bad input: clear message, non-zero exit, nothing written -------------------------
# bad NAME EXPECTED-MESSAGE FLAGS...: runs gnn-partition with FLAGS and
# checks the outcome.
bad() {
	local name=$1 msg=$2
	shift 2
	refused "bad_$name" "$msg" "$WORK/bad-out" "$P" --parts 2 --out "$WORK/bad-out" "$@"
}
bad ratios_sum "reason=\"the ratios must add up to 1" --synthetic tiny --edge-split 0.8,0.1,0.2
bad ratio_negative "reason=\"a ratio is negative" --synthetic tiny --edge-split 1.1,-0.2,0.1
bad ratios_two "reason=\"expected three numbers TRAIN,VALID,TEST" --synthetic tiny --edge-split 0.9,0.1
bad ratio_train_zero "reason=\"the train ratio must be above 0" --synthetic tiny --edge-split 0,0.5,0.5
bad unknown_relation "edge_relation=nosuch relations=edge reason=\"no such relation" --synthetic tiny --edge-split 0.85,0.05,0.10 --edge-relation nosuch
bad hetero_default_relation "reason=\"the graph has no relation edge: name one with --edge-relation" --input "$HT" --edge-split 0.8,0.1,0.1
bad too_few_edges "edge_split_too_small relation=node:edge:node pairs=10000 train=10000 valid=0 test=0 reason=\"too few edges for the split" --synthetic tiny --edge-split 0.9999,0.00005,0.00005
bad both_kinds "give --edge-split RATIOS or --edge-split-from DIR, not both" --synthetic tiny --edge-split 0.8,0.1,0.1 --edge-split-from "$WORK/csv"
bad relation_without_split "--edge-relation only applies with --edge-split" --synthetic tiny --edge-relation edge
# bad_csv NAME EXPECTED-MESSAGE VALID-LINES: valid.csv holds the lines,
# test.csv the good test lines above.
bad_csv() {
	rm -rf "$WORK/csvbad" && mkdir "$WORK/csvbad"
	printf "$3" >"$WORK/csvbad/valid.csv"
	zcat "$WORK/csv/test.csv.gz" >"$WORK/csvbad/test.csv"
	bad "csv_$1" "$2" --input "$HT" --edge-split-from "$WORK/csvbad" --edge-relation writes
}
bad_csv not_numeric "valid.csv line=2 reason=\"expected two integer columns" '0,9\n0,x\n'
bad_csv three_columns "valid.csv line=1 reason=\"expected two integer columns" '0,9,1\n'
bad_csv out_of_range "valid.csv line=1 reason=\"node ID out of range: src in \[0, 120) (type author), dst in \[0, 320) (type paper)" '120,9\n'
bad_csv not_an_edge "valid.csv line=1 reason=\"not an edge of relation writes" '0,10\n'
bad_csv duplicate "test.csv line=1 reason=\"pair listed twice" "$(zcat "$WORK/csv/test.csv.gz" | head -n 1)\n"
rm -rf "$WORK/csvbad" && mkdir "$WORK/csvbad" && cp "$WORK/csv/valid.csv" "$WORK/csvbad/"
bad csv_missing_test "test.csv.gz error=" --input "$HT" --edge-split-from "$WORK/csvbad" --edge-relation writes
