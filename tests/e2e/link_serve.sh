#!/usr/bin/env bash
# End-to-end tests of serving a link-prediction model (docs/inference.md,
# "Link prediction: score and top-k"): real graph stores and a sampler on
# gnn-partition's synthetic tiny graph (2 partitions) and link outputs
# written by tests/tools/linkfix.py as gnn-trainer infer writes them (dot,
# then mlp). gnn-cli score and topk through the sampler and a store must
# equal linkfix.py's pure-Python oracle (scores within 1e-5 relative, top-k
# by brute force); stores of two models, a node-classification output, no
# output at all and bad input (k, node, pairs, raw LINK requests) are
# refused with clear errors and a non-zero exit. Every process started
# here is killed on exit.
. "$(dirname "$0")/lib.bash"
CLI=$BIN/gnn-cli
FIX="python3 $ROOT/tests/tools/linkfix.py"
NNGSEND=$TOOLS/nngsend
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

"$BIN/gnn-partition" --synthetic tiny --parts 2 --out "$WORK/tiny" >/dev/null 2>&1
D=$WORK/tiny
if ! serve_two tiny "$D" "$WORK/pred"; then
	fail link_serve "sampler not ready: $(tail -n 3 "$WORK/tiny.log")"
	exit 1
fi
TINY_URL=$URL TINY_HTTP=$HTTP TINY_SPID=$SPID TINY_STORE0=$STORE0

# install OUT: what both stores serve from now on (a new summary.json: reloaded)
install() {
	for p in 0 1; do rm -rf "$WORK/pred$p"; cp -r "$1" "$WORK/pred$p"; done
}
# fails NAME PATTERN STATUS CLI-ARGS...: gnn-cli exits STATUS with PATTERN on stderr
fails() {
	local name=$1 pat=$2 want=$3 rc
	shift 3
	"$CLI" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	if [ $rc -ne "$want" ]; then
		fail "$name" "exit $rc, want $want: $(cat "$WORK/err")"
	elif ! grep -q -- "$pat" "$WORK/err"; then
		fail "$name" "stderr lacks '$pat': $(cat "$WORK/err")"
	else
		pass "$name"
	fi
}
# 50 pairs: within and across partitions, a node with itself
PAIRS=$(python3 -c "import random; r = random.Random(7); print(','.join('%d:%d' % (r.randrange(2000), r.randrange(2000)) for _ in range(48)) + ',0:0,1999:998')")
OWNED=$(python3 -c "import random; r = random.Random(8); print(','.join('%d:%d' % (r.randrange(999), r.randrange(999)) for _ in range(20)))")

fails no_output "no predictions at .*pred0/summary.json" 1 score --sampler "$URL" --pairs 1:2

# ok NAME WHAT: PASS when the last command list succeeded (its status read
# first: the message's substitutions would reset $?), else FAIL with its
# stderr and the oracle's output.
ok() {
	local rc=$?
	if [ $rc -eq 0 ]; then pass "$1"; else fail "$1" "$2: $(cat "$WORK/err" "$WORK/chk" 2>/dev/null | head -n 3)"; fi
	[ -f "$WORK/chk" ] && cat "$WORK/chk"
	rm -f "$WORK/chk" "$WORK/err"
}

# answers NAME OUT: score and topk through the sampler and store 0 against the oracle
answers() {
	local tag=$1 out=$2
	"$CLI" score --sampler "$URL" --pairs "$PAIRS" >"$WORK/score.json" 2>"$WORK/err" &&
		$FIX check-score "$out" "$WORK/score.json" >"$WORK/chk" 2>&1
	ok ${tag}_score_sampler "50 pairs through the sampler equal the oracle"
	"$CLI" score --store "$STORE0" --pairs "$OWNED" >"$WORK/score0.json" 2>"$WORK/err" &&
		$FIX check-score "$out" "$WORK/score0.json" >"$WORK/chk" 2>&1
	ok ${tag}_score_store "20 owned pairs from store 0 equal the oracle"
	"$CLI" topk --sampler "$URL" --node 5 --k 10 >"$WORK/topk.json" 2>"$WORK/err" &&
		$FIX check-topk "$out" "$WORK/topk.json" 5 10 >"$WORK/chk" 2>&1 &&
		"$CLI" topk --sampler "$URL" --node 1500 --k 25 --exclude 61,718,1627 >"$WORK/topk2.json" 2>"$WORK/err" &&
		$FIX check-topk "$out" "$WORK/topk2.json" 1500 25 --exclude 61,718,1627 >>"$WORK/chk" 2>&1
	ok ${tag}_topk_sampler "top 10 of node 5, top 25 of node 1500 (3 excluded) merged over both stores equal the brute force"
	"$CLI" topk --store "$STORE0" --node 7 --k 1000 >"$WORK/topk0.json" 2>"$WORK/err" &&
		$FIX check-topk "$out" "$WORK/topk0.json" 7 1000 --store 0 >"$WORK/chk" 2>&1
	ok ${tag}_topk_store "top 1000 of node 7 over store 0's partition equal the brute force"
}

$FIX make "$D" "$WORK/dot" --decoder dot --dim 16 --seed 1 --crc 1f97ab63
install "$WORK/dot"
answers dot "$WORK/dot"
# --type: pairs of original IDs, looked up first; the reply names the global IDs
"$CLI" score --sampler "$URL" --type node --pairs 0:1,1999:7 >"$WORK/score-t.json" 2>"$WORK/err" &&
	$FIX check-score "$WORK/dot" "$WORK/score-t.json" >"$WORK/chk" 2>&1 &&
	[ "$(jq -c '[.scores[] | .src, .dst] | length' "$WORK/score-t.json")" = 4 ]
ok dot_score_type "score --type node (original IDs) equals the oracle on the looked-up global IDs"
$FIX make "$D" "$WORK/mlp" --decoder mlp --dim 16 --hidden 8 --seed 2 --crc 2a2a2a2a
install "$WORK/mlp"
answers mlp "$WORK/mlp"

# a heterogeneous graph (tests/data/hetero-tiny: author, paper, subject): the candidates of one type
"$BIN/gnn-partition" --input "$ROOT/tests/data/hetero-tiny" --parts 2 --out "$WORK/ht" >/dev/null 2>&1
$FIX make "$WORK/ht" "$WORK/ht/predictions" --decoder dot --dim 8 --seed 4
serve_two ht "$WORK/ht" || fail hetero_candidate_type "sampler not ready: $(tail -n 3 "$WORK/ht.log")"
HURL=$URL
URL=$TINY_URL HTTP=$TINY_HTTP SPID=$TINY_SPID STORE0=$TINY_STORE0
"$CLI" topk --sampler "$HURL" --node 3 --k 40 --candidate-type paper >"$WORK/ht.json" 2>"$WORK/err" &&
	$FIX check-topk "$WORK/ht/predictions" "$WORK/ht.json" 3 40 --data "$WORK/ht" --type paper >"$WORK/chk" 2>&1
ok hetero_candidate_type "top 40 papers for author 3 on hetero-tiny (papers in both partitions) equal the brute force over the papers"

# bad input: gnn-cli refuses before sending (exit 2), the services answer ERRORs (exit 1)
fails k_zero "option=k value=0 .*out of range" 2 topk --sampler "$URL" --node 5 --k 0
fails k_too_big "option=k value=1001 .*out of range" 2 topk --sampler "$URL" --node 5 --k 1001
fails node_missing "--node N is required" 2 topk --sampler "$URL" --k 3
fails node_out_of_range "erange: .*node 2000 .*outside the graph" 1 topk --sampler "$URL" --node 2000 --k 3
fails pair_out_of_range "erange: .*node 5000 .*outside the graph" 1 score --sampler "$URL" --pairs 1:2,3:5000
fails pair_half "\"3\" (pair 2) is not a pair of node IDs u:v" 2 score --sampler "$URL" --pairs 1:2,3
fails pair_letters "is not a pair of node IDs" 2 score --sampler "$URL" --pairs a:b
fails pair_dangling "pair 1 (1:...) has no node ID after the colon" 2 score --sampler "$URL" --pairs 1:
fails pair_store_not_owned "erange: node 1500 .*not owned by graph store 0" 1 score --store "$STORE0" --pairs 1:1500
fails candidate_type "--candidate-type paper: not a node type" 2 topk --sampler "$URL" --node 5 --k 3 --candidate-type paper
# raw LINK_REQ TOPK (op 3) with k 0 and k 2000: the decoder's erange, the sampler unharmed
for k in 0 2000; do
	python3 -c "import struct,sys; p = struct.pack('<6Iq', 3, 0, 0, $k, 0, 0xffffffff, 5); \
sys.stdout.buffer.write(struct.pack('<IHHQIII', 0x504e4e47, 3, 22, 9, len(p), 0, 0) + p)" >"$WORK/raw$k"
	timeout 60 "$NNGSEND" "$URL" "$WORK/raw$k" 5000 >"$WORK/raw$k.out" 2>&1
done
check raw_k_refused "raw TOPK requests with k 0 and k 2000: ERROR erange (malformed link request): $(cat "$WORK"/raw*.out)" \
	bash -c "grep -q 'status=erange .*malformed link request' '$WORK/raw0.out' && grep -q 'status=erange .*malformed link request' '$WORK/raw2000.out'"

# stores of two models: the sampler refuses to merge them
$FIX make "$D" "$WORK/other" --decoder mlp --dim 16 --hidden 8 --seed 2 --crc deadbeef
rm -rf "$WORK/pred1"; cp -r "$WORK/other" "$WORK/pred1"
fails crc_mismatch_score "eproto: .*another link-prediction model (params_crc deadbeef" 1 score --sampler "$URL" --pairs 1:1500
fails crc_mismatch_topk "eproto: .*another link-prediction model" 1 topk --sampler "$URL" --node 5 --k 3

# a node-classification output (emb.arr from --embeddings, no task): refused; PREDICT still answers
$FIX make-node "$D" "$WORK/node"
install "$WORK/node"
fails node_output_score "not a link-prediction model's output" 1 score --sampler "$URL" --pairs 1:2
fails node_output_topk "not a link-prediction model's output" 1 topk --store "$STORE0" --node 1 --k 3
check node_output_predict "PREDICT answers from the node-classification output" \
	bash -c "'$CLI' predict --sampler '$URL' --nodes 1,1500 >/dev/null"

# a damaged link output (a truncated emb.arr): eformat naming the file, nothing served from it
cp -r "$WORK/dot" "$WORK/bad"
head -c 1000 "$WORK/dot/part-0/emb.arr" >"$WORK/bad/part-0/emb.arr"
install "$WORK/bad"
fails damaged_output "eformat: .*part-0/emb.arr does not load" 1 topk --store "$STORE0" --node 1 --k 3

n=$(curl -s "http://127.0.0.1:$HTTP/metrics" | awk '$1 == "gnn_sampler_requests_total{op=\"link\"}" { print $2 }')
check link_requests_metric "gnn_sampler_requests_total{op=\"link\"} counts the link requests (got '$n')" [ "${n:-0}" -ge 10 ]
kill -TERM "$SPID"
wait "$SPID"
check clean_exit "the sampler stops with exit 0 after the link requests (SIGTERM)" [ $? -eq 0 ]
