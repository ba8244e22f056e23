#!/usr/bin/env bash
# End-to-end tests of gnn-partition: real binary, real files. The Cora and
# ACM tests read ../shared/datasets/cora and ../shared/datasets/acm and are
# skipped when they are absent; the heterogeneous tests also read
# tests/data/hetero-tiny (committed).
. "$(dirname "$0")/lib.bash"
P=$BIN/gnn-partition
CHECK=$TOOLS/partcheck

# ---- command line -------------------------------------------------------
out=$("$P" --help 2>&1)
check help_lists_flags_and_env "--help exits 0 and lists --parts and GNN_PARTS" \
	grep -q -- "--parts N  \[GNN_PARTS\]" <<<"$out"

"$P" --synthetic tiny --out "$WORK/x" --bogus 2>"$WORK/err"; rc=$?
check unknown_flag_rejected "unknown flag: exit 2 naming it" \
	bash -c "[ $rc -eq 2 ] && grep -q 'unknown_option option=--bogus' '$WORK/err'"

"$P" --synthetic tiny --out "$WORK/x" --parts 0 2>"$WORK/err"; rc=$?
check parts_range_checked "--parts 0: exit 2, out of range" \
	bash -c "[ $rc -eq 2 ] && grep -q 'out of range' '$WORK/err' && [ ! -e '$WORK/x' ]"

"$P" --synthetic huge --out "$WORK/x" 2>"$WORK/err"; rc=$?
check unknown_preset_rejected "unknown preset: exit 2 before any output" \
	bash -c "[ $rc -eq 2 ] && grep -q 'tiny|small|medium|products' '$WORK/err' && [ -z \"\$(ls -d '$WORK'/x* 2>/dev/null)\" ]"

"$P" --out "$WORK/x" 2>"$WORK/err"; rc=$?
check input_required "no --input/--synthetic: exit 2" \
	bash -c "[ $rc -eq 2 ] && grep -q 'exactly one of --input' '$WORK/err'"

GNN_PARTS=3 GNN_METHOD=random "$P" --synthetic tiny --out "$WORK/env" 2>"$WORK/err" >/dev/null
check env_vars_configure "GNN_PARTS=3 GNN_METHOD=random give 3 random partitions" \
	bash -c "[ \"\$(jq -r '.num_parts, .method' '$WORK/env/meta.json' | tr '\n' ' ')\" = '3 random ' ] && grep -q 'config .*parts=3' '$WORK/err'"

GNN_PARTS=3 "$P" --synthetic tiny --parts 2 --out "$WORK/flagwins" 2>/dev/null >/dev/null
check flag_overrides_env "--parts beats GNN_PARTS" \
	bash -c "[ \"\$(jq .num_parts '$WORK/flagwins/meta.json')\" = 2 ]"

# ---- synthetic graphs -----------------------------------------------------
"$P" --synthetic tiny --parts 4 --out "$WORK/t1" 2>/dev/null >/dev/null
"$P" --synthetic tiny --parts 4 --out "$WORK/t2" 2>/dev/null >/dev/null
"$P" --synthetic tiny --parts 4 --seed 7 --out "$WORK/t3" 2>/dev/null >/dev/null
check synthetic_partition_valid "tiny in 4 partitions passes partcheck" \
	bash -c "'$CHECK' '$WORK/t1' | grep -q 'partcheck: ok'"
check synthetic_deterministic "same seed gives byte-identical arrays" \
	bash -c "for f in node-map.arr part-0/indices.arr part-3/feat-node.arr part-2/label.arr part-1/split.arr; do cmp -s '$WORK/t1/'\$f '$WORK/t2/'\$f || exit 1; done"
check synthetic_seed_matters "another seed gives another graph" \
	bash -c "! cmp -s '$WORK/t1/part-0/indices.arr' '$WORK/t3/part-0/indices.arr'"

# ---- output handling ------------------------------------------------------
before=$(md5sum "$WORK/t1/meta.json")
"$P" --synthetic tiny --parts 2 --out "$WORK/t1" 2>"$WORK/err"; rc=$?
check existing_output_refused "existing output without --force: exit 1, untouched" \
	bash -c "[ $rc -ne 0 ] && grep -q 'already exists' '$WORK/err' && [ \"\$(md5sum '$WORK/t1/meta.json')\" = '$before' ]"
"$P" --synthetic tiny --parts 2 --out "$WORK/t1" --force 2>/dev/null >/dev/null
check force_replaces "--force replaces the output" \
	bash -c "[ \"\$(jq .num_parts '$WORK/t1/meta.json')\" = 2 ] && [ ! -e '$WORK/t1/part-3' ] && [ -z \"\$(ls -d '$WORK'/t1.tmp-* 2>/dev/null)\" ]"

touch "$WORK/afile"
"$P" --synthetic tiny --out "$WORK/afile/out" 2>"$WORK/err"; rc=$?
check unwritable_output "output under a regular file: clear error, nothing written" \
	bash -c "[ $rc -ne 0 ] && grep -q 'output_unwritable' '$WORK/err' && [ -z \"\$(ls -d '$WORK'/afile.* 2>/dev/null)\" ]"

# SIGTERM in the middle: exit non-zero, no output, no temporary folder.
"$P" --synthetic medium --parts 2 --out "$WORK/killed" 2>"$WORK/err" >/dev/null &
pid=$!
sleep 1
kill -TERM $pid
wait $pid; rc=$?
# A slow build may still be generating after 4 s: the stop watchdog then
# ends it (stop_forced) and the next run removes the temporary folder.
if grep -q stop_forced "$WORK/err"; then
	"$P" --synthetic tiny --out "$WORK/killed" 2>/dev/null >/dev/null && rm -rf "$WORK/killed"
fi
check sigterm_leaves_nothing "SIGTERM: non-zero exit, no output or temporary folder" \
	bash -c "[ $rc -ne 0 ] && grep -Eq 'failed reason=\"closed\"|stop_forced' '$WORK/err' && [ ! -e '$WORK/killed' ] && [ -z \"\$(ls -d '$WORK'/killed.tmp-* 2>/dev/null)\" ]"

# ---- homogeneous outputs unchanged --------------------------------------
# The crc32 of every file of `--synthetic tiny --seed 1` (2 partitions),
# metis and random, as format 1 wrote them before node types existed:
# format 2 must write the same arrays for a homogeneous graph.
crcs() { jq -c '[.node_map.crc32] + [.parts[].files | .indptr.crc32, .indices.crc32, .feat[0].crc32, .label.crc32, .split.crc32]' "$1/meta.json"; }
for m in metis random; do
	"$P" --synthetic tiny --seed 1 --method $m --out "$WORK/crc-$m" 2>/dev/null >/dev/null
done
check homogeneous_metis_unchanged "tiny --seed 1 metis: the format-1 crc32s" \
	[ "$(crcs "$WORK/crc-metis")" = "[3408317197,1947336191,1433827473,2790356939,357021325,3626571155,499624942,293232227,2334897798,663418889,1791937128]" ]
check homogeneous_random_unchanged "tiny --seed 1 random: the format-1 crc32s" \
	[ "$(crcs "$WORK/crc-random")" = "[802500054,1103174462,1886445998,3442573926,2267482974,1454059371,2604568750,3158530802,459714804,959486593,3365011824]" ]
check homogeneous_format_2 "a homogeneous output is format 2: one type node, one relation edge" \
	[ "$(jq -c '[.format_version, .node_types, .relations, .label_type, .parts[0].files.feat[0].file]' "$WORK/crc-metis/meta.json")" = \
	  '[2,[{"name":"node","num_nodes":2000,"feat_dim":32,"feat_norm":"none"}],[{"name":"edge","src":"node","dst":"node","num_edges":20000}],"node","feat-node.arr"]' ]

# ---- bad input: clear message, non-zero exit, nothing left behind ----------
# bad NAME EXPECTED-MESSAGE [extra flags]: partitions $WORK/bad (prepared by
# the caller) and checks the outcome.
bad() {
	local name=$1 msg=$2
	shift 2
	refused "bad_input_$name" "$msg" "$WORK/bad-out" "$P" --input "$WORK/bad" --parts 2 --out "$WORK/bad-out" "$@"
}
fresh() {  # a writable copy of dataset $1 (default: Cora) in $WORK/bad
	rm -rf "$WORK/bad"
	cp -r "${1:-$CORA}" "$WORK/bad"
	chmod -R u+w "$WORK/bad"
}
# edit FILE SED-SCRIPT: rewrites a gzip file of $WORK/bad through sed.
edit() {
	zcat "$WORK/bad/$1" | sed "$2" | gzip -c >"$WORK/bad/$1.new" && mv "$WORK/bad/$1.new" "$WORK/bad/$1"
}

# ---- heterogeneous: tests/data/hetero-tiny ---------------------------------
HT=$ROOT/tests/data/hetero-tiny
if command -v python3 >/dev/null; then
	python3 "$ROOT/tests/data/make_hetero_tiny.py" "$WORK/ht-regen" >/dev/null
	check hetero_tiny_regenerates "make_hetero_tiny.py writes what is committed (file list and contents)" \
		bash -c "cd '$HT' && [ \"\$(find . -name '*.gz' | sort)\" = \"\$(cd '$WORK/ht-regen' && find . -name '*.gz' | sort)\" ] &&
			 for f in \$(find . -name '*.gz'); do cmp -s <(zcat \$f) <(zcat '$WORK/ht-regen/'\$f) || exit 1; done"
else
	skip hetero_tiny_regenerates "no python3"
fi
for m in metis random; do
	for parts in 2 3; do
		"$P" --input "$HT" --method $m --parts $parts --out "$WORK/ht-$m-$parts" 2>/dev/null >"$WORK/ht-$m-$parts.txt"
		check hetero_tiny_${m}_P$parts "hetero-tiny, $m, $parts parts: partcheck ok against the raw files" \
			bash -c "'$CHECK' '$WORK/ht-$m-$parts' --raw '$HT' --split random | grep -q 'partcheck: ok'"
	done
done
check hetero_tiny_meta "hetero-tiny: types in name order, forward then rev_ relations, 448 nodes, 4122 edges, per-type counts" \
	bash -c "[ \"\$(jq -c '[.format_version, [.node_types[] | .name, .num_nodes, .feat_dim], [.relations[] | .src + \":\" + .name + \":\" + .dst, .num_edges], .label_type, .num_nodes, .num_edges, .feat_dim, .num_classes, .symmetric]' '$WORK/ht-metis-3/meta.json')\" = \\
		'[2,[\"author\",120,8,\"paper\",320,16,\"subject\",8,0],[\"author:writes:paper\",804,\"paper:cites:paper\",1874,\"paper:has_subject:subject\",320,\"paper:rev_writes:author\",804,\"subject:rev_has_subject:paper\",320],\"paper\",448,4122,16,4,true]' ] &&
		 [ \"\$(jq -c '[.parts[] | .type_nodes | .author, .paper, .subject] | [.[0]+.[3]+.[6], .[1]+.[4]+.[7], .[2]+.[5]+.[8]]' '$WORK/ht-metis-3/meta.json')\" = '[120,320,8]' ] &&
		 [ \"\$(jq -c '.parts[0].files.feat | [.[0].file, .[1].file, .[2]]' '$WORK/ht-metis-3/meta.json')\" = '[\"feat-author.arr\",\"feat-paper.arr\",null]' ] &&
		 grep -q '^relation paper:rev_writes:author edges=804' '$WORK/ht-metis-3.txt'"
m=$(jq .edge_cut "$WORK/ht-metis-3/meta.json")
r=$(jq .edge_cut "$WORK/ht-random-3/meta.json")
echo "hetero-tiny P=3 edge_cut metis=$m random=$r"
check hetero_tiny_metis_beats_random "METIS edge cut ($m) below two thirds of random's ($r)" \
	bash -c "[ -n '$m' ] && [ -n '$r' ] && [ \$(( 3 * $m )) -lt \$(( 2 * $r )) ]"
"$P" --input "$HT" --method random --parts 60 --out "$WORK/ht-60" 2>/dev/null >/dev/null
check hetero_tiny_empty_ranges "60 random parts: empty (partition, type) ranges and 0-row feature files, partcheck ok" \
	bash -c "[ \"\$(jq '[.parts[].files.feat[] | select(. != null and .rows == 0)] | length > 0' '$WORK/ht-60/meta.json')\" = true ] &&
		 '$CHECK' '$WORK/ht-60' --raw '$HT' --split random | grep -q 'partcheck: ok'"
"$P" --input "$HT" --keep-directed --parts 2 --out "$WORK/ht-dir" 2>/dev/null >/dev/null
check hetero_tiny_keep_directed "--keep-directed: the 3 relations as given (804, 947, 320 edges), partcheck ok" \
	bash -c "[ \"\$(jq -c '[.symmetric, [.relations[].num_edges]]' '$WORK/ht-dir/meta.json')\" = '[false,[804,947,320]]' ] &&
		 '$CHECK' '$WORK/ht-dir' --raw '$HT' --split random --directed | grep -q 'partcheck: ok'"

# ---- feature normalisation (--feat-norm) ----------------------------------
# hetero-tiny's rows are Gaussian (signed): auto leaves both types as they
# are, byte for byte; standard is checked by partcheck, which standardises
# the raw columns with its own code.
for m in auto none standard; do
	"$P" --input "$HT" --parts 2 --feat-norm $m --out "$WORK/ht-norm-$m" 2>"$WORK/ht-norm-$m.err" >/dev/null
done
check feat_norm_auto_signed_none "hetero-tiny (signed rows), auto: none for author and paper, one feat_norm line each, meta.json records it; feature files byte-identical to --feat-norm none's" \
	bash -c "grep -q 'feat_norm type=author mode=none requested=auto' '$WORK/ht-norm-auto.err' &&
		 grep -q 'feat_norm type=paper mode=none requested=auto' '$WORK/ht-norm-auto.err' &&
		 [ \"\$(grep -c ' feat_norm ' '$WORK/ht-norm-auto.err')\" = 2 ] &&
		 [ \"\$(jq -c '[.feat_norm_requested, [.node_types[] | .feat_norm]]' '$WORK/ht-norm-auto/meta.json')\" = '[\"auto\",[\"none\",\"none\",null]]' ] &&
		 for f in part-0/feat-author.arr part-0/feat-paper.arr part-1/feat-author.arr part-1/feat-paper.arr; do
			 cmp -s '$WORK/ht-norm-auto/'\$f '$WORK/ht-norm-none/'\$f || exit 1; done"
check feat_norm_standard "hetero-tiny, standard: recorded per type; partcheck ok (columns of mean 0, sd 1 against the raw files)" \
	bash -c "[ \"\$(jq -c '[.feat_norm_requested, [.node_types[] | .feat_norm]]' '$WORK/ht-norm-standard/meta.json')\" = '[\"standard\",[\"standard\",\"standard\",null]]' ] &&
		 '$CHECK' '$WORK/ht-norm-standard' --raw '$HT' --split random | grep -q 'partcheck: ok'"
"$P" --input "$HT" --feat-norm l2 --out "$WORK/norm-bad" 2>"$WORK/err" >/dev/null; rc=$?
check feat_norm_bad_value "--feat-norm l2: exit 2 naming the choices, nothing written" \
	bash -c "[ $rc -eq 2 ] && grep -q 'option=feat-norm value=\"l2\".*auto|row|standard|none' '$WORK/err' && [ ! -e '$WORK/norm-bad' ]"
# gnn-local reuses its workdir's output only when made with the same
# --feat-norm; an output from before the option (no feat_norm_requested)
# reads as none. With --partition-dir the output has its own: refused.
"$P" --synthetic tiny --parts 2 --feat-norm none --out "$WORK/loc/partition" >/dev/null 2>&1
jq 'del(.feat_norm_requested)' "$WORK/loc/partition/meta.json" >"$WORK/old-meta" && mv "$WORK/old-meta" "$WORK/loc/partition/meta.json"
LOC=("$BIN/gnn-local" --synthetic tiny --epochs 1 --no-infer --workdir "$WORK/loc")
timeout 120 "${LOC[@]}" --feat-norm none >"$WORK/loc-none.out" 2>&1
timeout 120 "${LOC[@]}" --feat-norm auto >"$WORK/loc-auto.out" 2>&1
"$BIN/gnn-local" --partition-dir "$WORK/loc/partition" --feat-norm row --workdir "$WORK/loc-given" >/dev/null 2>"$WORK/loc-given.err"; rc=$?
check local_feat_norm_reuse "gnn-local: an older output (read as none) reused with --feat-norm none, repartitioned for auto; --feat-norm with --partition-dir: exit 2" \
	bash -c "grep -q 'partition_reused' '$WORK/loc-none.out' &&
		 grep -q 'partition_stale .*reason=\"its features were normalised with --feat-norm none, auto asked for\"' '$WORK/loc-auto.out' &&
		 [ \"\$(jq -r .feat_norm_requested '$WORK/loc/partition/meta.json')\" = auto ] &&
		 [ $rc -eq 2 ] && grep -q 'bad_config option=--feat-norm value=row' '$WORK/loc-given.err'"

# Each bad heterogeneous input: non-zero exit, the error names the file
# and line, no output left.
fresh "$HT"; edit raw/triplet-type-list.csv.gz '2s/.*/paper,cites,journal/'
bad hetero_triplet_unknown_type "triplet-type-list.csv.gz line=2 reason=\"relation names an unknown node type journal"
fresh "$HT"; mkdir "$WORK/bad/raw/relations/journal___cites___paper"
bad hetero_folder_unknown_type "journal___cites___paper reason=\"relation folder names an unknown node type"
fresh "$HT"; edit raw/relations/author___writes___paper/edge.csv.gz '5s/.*/120,3/'
bad hetero_id_out_of_range "author___writes___paper/edge.csv.gz line=5 reason=\"node ID out of range \[0, 120) for node type author"
fresh "$HT"; edit raw/node-feat/author/node-feat.csv.gz '4s/,[^,]*$//'
bad hetero_ragged_features "node-feat/author/node-feat.csv.gz line=4 reason=\"expected 8 numeric columns"
fresh "$HT"; mkdir -p "$WORK/bad/raw/node-label/author" && printf '1\n' | gzip -c >"$WORK/bad/raw/node-label/author/node-label.csv.gz"
bad hetero_labels_for_unlabelled_type "nodetype-has-label.csv.gz line=2 reason=\"node type author is marked False"
fresh "$HT"; mkdir -p "$WORK/bad/split/random/subject" && printf '1\n' | gzip -c >"$WORK/bad/split/random/subject/train.csv.gz"
bad hetero_split_for_type_without_split "nodetype-has-split.csv.gz line=2 reason=\"node type subject is marked False"
fresh "$HT"; edit split/random/nodetype-has-split.csv.gz '2s/.*/True,True,False/'
bad hetero_split_type_without_labels "nodetype-has-split.csv.gz line=2 reason=\"node type author has a split but no labels"
fresh "$HT"; edit raw/nodetype-has-label.csv.gz '2s/.*/True,True,False/'
mkdir -p "$WORK/bad/raw/node-label/author" && printf '1\n' | gzip -c >"$WORK/bad/raw/node-label/author/node-label.csv.gz"
bad hetero_several_labelled_types "nodetype-has-label.csv.gz line=2 reason=\"several node types are marked True"
fresh "$HT"; printf '961\n' | gzip -c >"$WORK/bad/raw/relations/paper___cites___paper/num-edge-list.csv.gz"
bad hetero_edge_count_mismatch "paper___cites___paper/edge.csv.gz reason=\"edge count 962 differs from num-edge-list"
fresh "$HT"; edit split/random/paper/test.csv.gz "1s/.*/$(zcat "$HT/split/random/paper/train.csv.gz" | head -n 1)/"
bad hetero_split_duplicate "paper/test.csv.gz line=1 reason=\"node listed twice"
fresh "$HT"; edit raw/node-label/paper/node-label.csv.gz "$(( $(zcat "$HT/split/random/paper/valid.csv.gz" | head -n 1) + 1 ))s/.*/nan/"
bad hetero_split_unlabelled "paper/valid.csv.gz line=1 reason=\"node in the split has no label (nan)"

# ---- ACM (HeCo's, in OGB's heterogeneous layout) -----------------------------
if [ -f "$DATASETS/acm/raw/num-node-dict.csv.gz" ]; then
	for split in heco20 heco40 heco60; do
		[ -d "$DATASETS/acm/split/$split" ] || continue
		"$P" --input "$DATASETS/acm" --split $split --parts 3 --out "$WORK/acm-$split" 2>/dev/null >/dev/null
		check acm_$split "ACM $split in 3 parts: partcheck ok against the raw files (11246 nodes, 34852 edges, 4 relations)" \
			bash -c "'$CHECK' '$WORK/acm-$split' --raw '$DATASETS/acm' --split $split | grep -q 'partcheck: ok' &&
				 [ \"\$(jq -c '[.num_nodes, .num_edges, (.relations | length), .label_type, .num_classes]' '$WORK/acm-$split/meta.json')\" = '[11246,34852,4,\"paper\",3]' ]"
	done
else
	skip acm "reads ../shared/datasets/acm, which is absent"
fi

# ---- Cora -----------------------------------------------------------------
if ! have_cora; then
	for t in cora_partitions cora_feat_norm_row cora_metis_beats_random cora_keep_directed cora_bad_inputs; do
		skip $t "reads ../shared/datasets/cora, which is absent"
	done
	exit 0
fi
CORA=$DATASETS/cora

for parts in 1 2 4 8; do
	"$P" --input "$CORA" --parts $parts --out "$WORK/cora-$parts" 2>"$WORK/err-$parts" >/dev/null
	"$CHECK" "$WORK/cora-$parts" --raw "$CORA" --split planetoid >"$WORK/check-$parts"
	check cora_partitions_P$parts "Cora in $parts: partcheck ok against the raw files, 2708 nodes, 10556 edges, train balanced within 10%" \
		bash -c "grep -q 'partcheck: ok' '$WORK/check-$parts' &&
			 [ \"\$(jq -r '[.num_nodes,.num_edges,.feat_dim,.num_classes,.num_train,.num_valid,.num_test,.source.split]|join(\" \")' '$WORK/cora-$parts/meta.json')\" = '2708 10556 1433 7 140 500 1000 planetoid' ] &&
			 awk -F'train_max_over_mean=' '/train_max_over_mean/ { exit !(\$2 <= 1.10) }' '$WORK/check-$parts'"
done

# Cora's 0/1 bag-of-words rows: auto divides each by its sum (partcheck
# normalises the raw rows as meta.json says); the default, none, leaves
# them as they are (the runs above)
"$P" --input "$CORA" --parts 2 --feat-norm auto --out "$WORK/cora-auto" 2>"$WORK/err-auto" >/dev/null
check cora_feat_norm_row "Cora, auto: row, logged once, recorded in meta.json and partchecked; the default records none" \
	bash -c "grep -q 'feat_norm type=node mode=row requested=auto' '$WORK/err-auto' &&
		 [ \"\$(jq -c '[.feat_norm_requested, .node_types[0].feat_norm]' '$WORK/cora-auto/meta.json')\" = '[\"auto\",\"row\"]' ] &&
		 '$CHECK' '$WORK/cora-auto' --raw '$CORA' --split planetoid | grep -q 'partcheck: ok' &&
		 [ \"\$(jq -c '[.feat_norm_requested, .node_types[0].feat_norm]' '$WORK/cora-2/meta.json')\" = '[\"none\",\"none\"]' ]"

for parts in 2 4 8; do
	"$P" --input "$CORA" --parts $parts --method random --out "$WORK/cora-r$parts" 2>/dev/null >/dev/null
	m=$(jq .edge_cut "$WORK/cora-$parts/meta.json")
	r=$(jq .edge_cut "$WORK/cora-r$parts/meta.json")
	echo "cora P=$parts edge_cut metis=$m random=$r"
	check cora_metis_beats_random_P$parts "METIS edge cut ($m) below half of random's ($r)" \
		bash -c "[ -n '$m' ] && [ -n '$r' ] && [ \$(( 2 * $m )) -lt $r ]"
done

"$P" --input "$CORA" --parts 2 --keep-directed --out "$WORK/cora-dir" 2>/dev/null >/dev/null
check cora_keep_directed "--keep-directed keeps the 5278 given edges" \
	bash -c "[ \"\$(jq -r '[.num_edges,.symmetric]|join(\" \")' '$WORK/cora-dir/meta.json')\" = '5278 false' ] &&
		 '$CHECK' '$WORK/cora-dir' --raw '$CORA' --split planetoid --directed | grep -q 'partcheck: ok'"

# ---- Cora: bad input -----------------------------------------------------
fresh; rm "$WORK/bad/raw/node-label.csv.gz"
bad missing_file "node-label.csv.gz"
fresh; head -c $(( $(stat -c %s "$CORA/raw/edge.csv.gz") / 2 )) "$CORA/raw/edge.csv.gz" >"$WORK/bad/raw/edge.csv.gz"
bad truncated_gzip "edge.csv.gz line=[0-9]* reason=\"truncated gzip file"
fresh; printf 'garbage that is not gzip\n' >"$WORK/bad/raw/node-label.csv.gz"
bad not_gzip "node-label.csv.gz line=1 reason=\"label is not a number"
fresh; edit raw/edge.csv.gz '17s/.*/12,abc/'
bad non_numeric_field "line=17 reason=\"expected two integer columns"
fresh; edit raw/edge.csv.gz '9s/$/,3/'
bad wrong_column_count "line=9 reason=\"expected two integer columns"
fresh; edit raw/node-feat.csv.gz '5s/,[^,]*$//'
bad wrong_feature_columns "node-feat.csv.gz line=5 reason=\"expected 1433 numeric columns"
fresh; edit raw/edge.csv.gz '3s/.*/0,2708/'
bad node_id_out_of_range "line=3 reason=\"node ID out of range \[0, 2708)"
fresh; edit raw/node-feat.csv.gz '7s/^[^,]*,/nan,/'
bad nan_feature "line=7 reason=\"feature is NaN or infinite"
fresh; edit raw/node-feat.csv.gz '8s/,[^,]*,/,inf,/'
bad infinite_feature "line=8 reason=\"feature is NaN or infinite"
fresh; edit raw/node-feat.csv.gz '7s/^[^,]*,/70000,/'
bad f16_feature_out_of_range "feature_out_of_range type=node node=6 column=0 value=70000 reason=\"beyond f16's range" --feature-dtype f16 --feat-norm none
fresh; edit raw/node-label.csv.gz '11s/.*/-2/'
bad negative_label "line=11 reason=\"label out of range"
fresh; edit raw/node-label.csv.gz '12s/.*/9/'
bad label_above_classes "line=12 reason=\"label out of range: must be an integer in \[0, 7)" --classes 7
fresh; printf '0\n' | gzip -c >"$WORK/bad/raw/num-node-list.csv.gz"
bad empty_graph "empty graph"
fresh; edit split/planetoid/valid.csv.gz '4s/.*/99999/'
bad split_id_out_of_range "valid.csv.gz line=4 reason=\"node ID out of range"
fresh; edit raw/edge.csv.gz '1,4d'
bad edge_count_mismatch "differs from num-edge-list"
fresh
bad more_parts_than_nodes "more partitions than nodes" --parts 3000
