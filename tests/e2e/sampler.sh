#!/usr/bin/env bash
# End-to-end tests of gnn-sampler: real graph stores and a real sampler on
# 127.0.0.1 (random free ports), checked from outside by tests/tools/mbcheck
# against the partition files, and by gnn-cli (INFO and NODES through the
# sampler against the stores' own answers and meta.json). The Cora parts read ../shared/datasets/cora
# and are skipped when it is absent; a synthetic graph covers the basics
# without it. Every process started here is killed on exit.
. "$(dirname "$0")/lib.bash"
S=$BIN/gnn-sampler
G=$BIN/gnn-graphstore
MB=$TOOLS/mbcheck
CLI=$BIN/gnn-cli
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

# store NAME DATA PART PORT: starts a graph store; its pid goes to PID_<NAME>.
store() {
	"$G" --data "$2" --part "$3" --listen "tcp://127.0.0.1:$4" --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 2>>"$WORK/$1.log" &
	PIDS+=($!)
	printf -v "PID_$1" %s $!
}

# sampler NAME ARGS...: starts a sampler on free ports; the pid goes to
# PID_<NAME>; sampler_ready NAME [S] waits up to S (60) seconds, then sets
# URL_<NAME> and HTTP_<NAME> (with 20 s, the Cora sampler was not ready in
# time once, under ASan beside a make test; it waits up to --wait-stores).
sampler() {
	local name=$1
	shift
	"$S" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 --workers 4 "$@" 2>>"$WORK/$name.log" &
	PIDS+=($!)
	printf -v "PID_$name" %s $!
}
sampler_ready() {
	wait_for "${2:-60}" grep -q " ready listen=" "$WORK/$1.log" || return 1
	local line
	line=$(grep " ready listen=" "$WORK/$1.log" | tail -n 1)
	printf -v "URL_$1" %s "tcp://127.0.0.1:$(sed -n 's/.* port=\([0-9]*\) .*/\1/p' <<<"$line")"
	printf -v "HTTP_$1" %s "$(sed -n 's/.* http_port=\([0-9]*\) .*/\1/p' <<<"$line")"
}
http_port_of() {  # the HTTP port a process logged (before it is ready)
	wait_for 10 grep -q "http_listening" "$WORK/$1.log" &&
		sed -n 's/.*http_listening .*port=\([0-9]*\).*/\1/p' "$WORK/$1.log" | head -n 1
}
metric() {  # metric PORT 'name{labels}': the sample's value
	curl -s "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k { print $2 }'
}
# le32 N / hdr TYPE VERSION LEN: bytes of a 28-byte header (magic, version,
# type, req_id 9, len, status 0, reserved 0) for hand-made messages.
# (the inner printf writes octal escapes, the outer one turns them into bytes)
le32() { printf "$(printf '\\%03o' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32 & 0xffffffff)); }
hdr() { printf 'GNNP'; printf "$(printf '\\%03o\\000\\%03o\\000' "$2" "$1")"; printf '\011\0\0\0\0\0\0\0'; le32 "$3"; le32 0; le32 0; }
# nodes_req SPLIT LIMIT CURSOR: a NODES_REQ message.
nodes_req() { hdr 12 3 16; le32 "$1"; le32 "$2"; le64 "$3"; }

# info_and_nodes TAG DIR SAMPLER_URL STORE_URL...: INFO through the sampler
# describes the stores' graph (graph_id, sizes, offsets; part_id = num_parts
# and part_edges = num_edges, the stores' part_edges adding up to it);
# NODES through the sampler, 97 a page so that pages end inside and at the
# partitions' ends, lists for train, valid and test exactly meta.json's
# count of nodes, ascending, equal to the stores' own lists one after the
# other. Prints what differs (nothing when all holds).
info_and_nodes() {
	local tag=$1 dir=$2 su=$3 shape='[.num_parts,.num_nodes,.num_edges,.feat_dim,.num_classes,.graph_id,.offsets]'
	shift 3
	local sum=0 i=0 u sp want
	"$CLI" info --sampler "$su" >"$WORK/$tag-info.json" 2>>"$WORK/$tag-cli.err" || echo "info through the sampler failed"
	jq -e '.part_id == .num_parts and .part_edges == .num_edges and (has("node_start") | not)' \
		"$WORK/$tag-info.json" >/dev/null || echo "sampler INFO: part_id/part_edges not the whole graph's"
	for u in "$@"; do
		"$CLI" info --store "$u" >"$WORK/$tag-info-$i.json" 2>>"$WORK/$tag-cli.err"
		[ "$(jq -c "$shape" "$WORK/$tag-info-$i.json")" = "$(jq -c "$shape" "$WORK/$tag-info.json")" ] ||
			echo "sampler INFO differs from store $i's"
		sum=$((sum + $(jq .part_edges "$WORK/$tag-info-$i.json")))
		i=$((i + 1))
	done
	[ "$sum" = "$(jq .num_edges "$WORK/$tag-info.json")" ] || echo "stores' part_edges add up to $sum"
	for sp in train valid test; do
		"$CLI" nodes --sampler "$su" --split $sp --page 97 >"$WORK/$tag-$sp.json" 2>>"$WORK/$tag-cli.err" ||
			echo "nodes --split $sp through the sampler failed"
		for u in "$@"; do "$CLI" nodes --store "$u" --split $sp; done 2>>"$WORK/$tag-cli.err" |
			jq -s -c '[.[].nodes[]]' >"$WORK/$tag-$sp-stores"
		want=$(jq ".num_$sp" "$dir/meta.json")
		jq -e --argjson n "$want" '.count == $n and (.nodes | length) == $n and .next_cursor == -1 and
			.nodes == (.nodes | unique)' "$WORK/$tag-$sp.json" >/dev/null ||
			echo "$sp: $(jq .count "$WORK/$tag-$sp.json") nodes listed, meta.json says $want"
		[ "$(jq -c .nodes "$WORK/$tag-$sp.json")" = "$(cat "$WORK/$tag-$sp-stores")" ] ||
			echo "$sp: the sampler's list is not the stores' lists together"
		echo "$tag $sp: $(jq .count "$WORK/$tag-$sp.json") nodes in $(jq .pages "$WORK/$tag-$sp.json") pages" >&2
	done
}

# ---- command line and start-up --------------------------------------------
"$S" --help >"$WORK/help" 2>&1
check help_lists_options "--help lists --graphstores [GNN_GRAPHSTORES] and the bench subcommand" \
	bash -c "grep -q -- '--graphstores VALUE  \[GNN_GRAPHSTORES\]' '$WORK/help' && grep -q 'gnn-sampler bench' '$WORK/help'"

"$S" --http-port 0 2>"$WORK/err"; rc=$?
check stores_required "no graph stores: exit 2 saying what to give" \
	bash -c "[ $rc -eq 2 ] && grep -q 'give --graphstores' '$WORK/err'"

"$S" --graphstore-pattern 'tcp://graphstore.graphstore:7000' --graphstore-count 2 --http-port 0 2>"$WORK/err"; rc=$?
check pattern_needs_placeholder "pattern without %d: exit 2" \
	bash -c "[ $rc -eq 2 ] && grep -q 'exactly one %d' '$WORK/err'"

# Stores that never come: the pattern from the environment expands to
# graphstore-0 and -1, /healthz answers and /readyz names them while the
# sampler waits, requests already get an ERROR naming them, and it gives up
# after --wait-stores naming both. (6 s: room for the two requests on a busy
# machine under the sanitizers, where one took most of a 3 s wait.)
t0=$SECONDS
GNN_GRAPHSTORE_PATTERN='tcp://127.0.0.1:1%d' GNN_GRAPHSTORE_COUNT=2 GNN_WAIT_STORES=6 \
	"$S" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 --check-timeout-ms 300 2>"$WORK/wait.log" &
pid=$!
PIDS+=($pid)
hp=$(http_port_of wait)
health=$(curl -s "http://127.0.0.1:$hp/healthz")
ready=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$hp/readyz" | tr -d '\n')
wait_for 5 grep -q "server_listening" "$WORK/wait.log"
sp=$(sed -n 's/.*server_listening .*port=\([0-9]*\).*/\1/p' "$WORK/wait.log" | head -n 1)
"$CLI" info --sampler "tcp://127.0.0.1:$sp" --timeout-ms 1000 --retries 0 >/dev/null 2>"$WORK/wait-info.err"; info_rc=$?
"$CLI" nodes --sampler "tcp://127.0.0.1:$sp" --split train --timeout-ms 1000 --retries 0 >/dev/null 2>"$WORK/wait-nodes.err"; nodes_rc=$?
wait $pid; rc=$?
cat "$WORK/wait-info.err"
check requests_while_waiting "INFO and NODES before the stores answered: ERROR eunavail 'waiting for graph stores: ...' naming both" \
	bash -c "[ $info_rc -eq 1 ] && [ $nodes_rc -eq 1 ] &&
		 grep -q 'eunavail: waiting for graph stores: graphstore-0(tcp://127.0.0.1:10),graphstore-1(tcp://127.0.0.1:11)' '$WORK/wait-info.err' &&
		 grep -q 'eunavail: waiting for graph stores: graphstore-0' '$WORK/wait-nodes.err'"
check startup_wait_times_out "unreachable stores: alive, not ready, exit 1 after --wait-stores naming both" \
	bash -c "[ $rc -eq 1 ] && [ $((SECONDS - t0)) -le 15 ] && [ '$health' = ok ] &&
		 grep -q 'waiting for graph stores: graphstore-0(tcp://127.0.0.1:10),graphstore-1(tcp://127.0.0.1:11) 503' <<<'$ready' &&
		 grep -q 'graphstores_unreachable missing=graphstore-0(tcp://127.0.0.1:10),graphstore-1(tcp://127.0.0.1:11)' '$WORK/wait.log'"

GNN_GRAPHSTORES=tcp://127.0.0.1:10 "$S" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 2>"$WORK/term.log" &
pid=$!
PIDS+=($pid)
wait_for 10 grep -q waiting_for_graphstores "$WORK/term.log"
kill -TERM $pid
wait $pid; rc=$?
check sigterm_while_waiting "SIGTERM while waiting for stores: exit 0" \
	bash -c "[ $rc -eq 0 ] && grep -q 'stopped exit=0' '$WORK/term.log'"

# ---- a synthetic graph (no download needed) ----------------------------------
"$BIN/gnn-partition" --synthetic tiny --parts 2 --out "$WORK/tiny" >/dev/null 2>&1
pa=$(free_port) pb=$(free_port)
store ta "$WORK/tiny" 0 "$pa"
store tb "$WORK/tiny" 1 "$pb"
sampler tiny --graphstores "tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pb"
if sampler_ready tiny; then
	"$MB" --sampler "$URL_tiny" --parts "$WORK/tiny" --minibatches 40 --batch 128 >"$WORK/mb-tiny"
	check synthetic_minibatches_valid "40 minibatches on synthetic tiny pass mbcheck" \
		grep -q '^mbcheck: ok' "$WORK/mb-tiny"

	info_and_nodes tiny "$WORK/tiny" "$URL_tiny" "tcp://127.0.0.1:$pa" "tcp://127.0.0.1:$pb" >"$WORK/tiny-bad"
	cat "$WORK/tiny-bad"
	check synthetic_info_matches_stores "INFO through the sampler is the stores' graph (part_id = num_parts, part_edges = all edges)" \
		bash -c "[ -s '$WORK/tiny-info.json' ] && ! grep -qiE 'info|part_edges' '$WORK/tiny-bad'"
	check synthetic_nodes_lists_splits "NODES through the sampler: exactly meta.json's train/valid/test counts, ascending, the stores' lists together" \
		bash -c "[ -s '$WORK/tiny-train.json' ] && ! grep -qE '^(train|valid|test|nodes)' '$WORK/tiny-bad'"
	nodes_req 1 10 2000 >"$WORK/n-range"     # tiny has 2000 nodes
	nodes_req 1 10 1999 >"$WORK/n-last"
	got=$("$MB" --sampler "$URL_tiny" --send "$WORK/n-range" --timeout-ms 3000)
	last=$("$MB" --sampler "$URL_tiny" --send "$WORK/n-last" --timeout-ms 3000)
	echo "cursor 2000: $got; cursor 1999: $last"
	check synthetic_nodes_cursor_range "NODES cursor = num_nodes: ERROR erange; the last node's cursor is answered" \
		bash -c "[[ '$got' == *'type=error status=erange'* && '$last' == *'type=nodes_resp'* ]]"

	# Fanout 0: mbcheck's even minibatches ask 0,0,0 (features only); a
	# hand-made request for seeds 5,6,7 with fanouts 0,0,0 and no features
	# or labels must come back as 3 blocks of 3 sources and no edges: a
	# 236-byte reply (28 header + 32 head + 3 x (16 + 3 x 8 + 16) + 8 for
	# the input nodes' types).
	"$MB" --sampler "$URL_tiny" --parts "$WORK/tiny" --minibatches 20 --batch 64 --fanouts 0,0,0 >"$WORK/mb-zero"
	{ hdr 14 3 72; le64 1; le32 0; le32 3; le32 1; le32 0; le32 0; le32 0; le32 0; le32 0; le32 3; le32 0; le64 5; le64 6; le64 7; } >"$WORK/mb0"
	got=$("$MB" --sampler "$URL_tiny" --send "$WORK/mb0" --timeout-ms 3000)
	echo "fanouts 0,0,0 for 3 seeds: $got"
	check synthetic_fanout_zero "fanouts 0,0,0: minibatches pass mbcheck; 3 seeds give 3 blocks of 3 sources, no edges" \
		bash -c "grep -q '^mbcheck: ok' '$WORK/mb-zero' && [[ '$got' == *'type=minibatch_resp status=ok bytes=236'* ]]"
	mi=$(metric "$HTTP_tiny" 'gnn_sampler_requests_total{op="info"}')
	mn=$(metric "$HTTP_tiny" 'gnn_sampler_requests_total{op="nodes"}')
	me=$(metric "$HTTP_tiny" 'gnn_sampler_request_errors_total{op="nodes",code="erange"}')
	echo "metrics: info=$mi nodes=$mn nodes_erange=$me"
	check synthetic_info_nodes_counted "INFO and NODES counted in gnn_sampler_requests_total{op}, the bad cursor in request_errors_total" \
		bash -c "[ '${mi:-0}' -ge 1 ] && [ '${mn:-0}' -ge 6 ] && [ '${me:-0}' -ge 1 ]"
	# A sampler listed as a graph store: refused at start-up, saying so.
	sampler notstore --graphstores "$URL_tiny,$URL_tiny" --wait-stores 10
	wait "$PID_notstore"; rc=$?
	check sampler_as_store_refused "a sampler's URL given as graph stores: exit 1, 'it is a sampler, not a graph store'" \
		bash -c "[ $rc -eq 1 ] && grep -q 'it is a sampler, not a graph store' '$WORK/notstore.log'"
else
	for t in synthetic_minibatches_valid synthetic_info_matches_stores synthetic_nodes_lists_splits \
		synthetic_nodes_cursor_range synthetic_fanout_zero synthetic_info_nodes_counted sampler_as_store_refused; do
		fail $t "sampler not ready: $(tail -n 3 "$WORK/tiny.log")"
	done
fi
# The same store listed twice, as many stores as partitions: a clear
# refusal (not replicas).
sampler dup --graphstores "tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pa" --wait-stores 10
wait "$PID_dup"; rc=$?
check duplicate_partition_refused "one store listed twice: exit 1, 'two graph stores serve partition 0'" \
	bash -c "[ $rc -eq 1 ] && grep -q 'two graph stores serve partition 0' '$WORK/dup.log'"
# More stores than partitions are replicas, but every partition needs one.
sampler nopart --graphstores "tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pa" --wait-stores 10
wait "$PID_nopart"; rc=$?
check missing_partition_refused "three stores all on partition 0: exit 1, 'no graph store serves partition 1 of 2'" \
	bash -c "[ $rc -eq 1 ] && grep -q 'no graph store serves partition 1 of 2' '$WORK/nopart.log'"
kill -TERM "$PID_tiny" "$PID_ta" "$PID_tb" 2>/dev/null
wait "$PID_tiny"; rc=$?
check sigterm_clean_exit "SIGTERM while serving: exit 0" bash -c "[ $rc -eq 0 ] && grep -q 'stopped exit=0' '$WORK/tiny.log'"

# ---- Cora ------------------------------------------------------------------
if ! have_cora; then
	for t in cora_sampler_waits_for_stores cora_minibatches_valid cora_info_nodes cora_fanout_zero \
		cora_garbage_answered cora_healthy_after_garbage \
		cora_store_down_grace cora_store_down_error cora_store_down_not_ready cora_store_back cora_metrics_promtool cora_metrics_counted \
		cora_sigterm_clean_exit cora_graph_changed_refused cora_graph_changed_not_ready cora_graph_changed_exit \
		cora_graph_changed_unchecked cora_graph_changed_restart_heals; do
		skip $t "reads ../shared/datasets/cora, which is absent"
	done
	exit 0
fi
"$BIN/gnn-partition" --input "$DATASETS/cora" --parts 2 --out "$WORK/cora" >/dev/null 2>&1
p0=$(free_port) p1=$(free_port)
# The sampler first: it waits, not ready, until both stores answer.
TIMEOUT_MS=1000 RETRIES=1
sampler cora --graphstores "tcp://127.0.0.1:$p0,tcp://127.0.0.1:$p1" --timeout-ms $TIMEOUT_MS --retries $RETRIES \
	--check-interval-ms 300 --check-timeout-ms 300 --store-down-grace-s 5
hp=$(http_port_of cora)
early=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$hp/readyz" | tr -d '\n')
sleep 0.5
store c0 "$WORK/cora" 0 "$p0"
store c1 "$WORK/cora" 1 "$p1"
# 180 s: generous for ASan beside a whole make test. Twice in CI the
# sampler was never ready, most likely because a store could not bind its
# port: the sampler, dialling it before it listened, had connected to itself
# on that very port (TCP self-connect, ports in the ephemeral range; the
# stores' logs were not kept to confirm it). free_port now
# picks ports outside that range (tests/proc.bash).
if ! sampler_ready cora 180; then
	fail cora_sampler_waits_for_stores "not ready after the stores started: $(tail -n 3 "$WORK/cora.log"); stores: $(tail -n 2 "$WORK/c0.log" "$WORK/c1.log")"
	exit 1
fi
cora_ready() { [ "$(curl -s "http://127.0.0.1:$HTTP_cora/readyz")" = ready ]; }
late=no
wait_for 5 cora_ready && late=yes
check cora_sampler_waits_for_stores "/readyz 503 naming both stores before they start ($early), ready after ($late)" \
	bash -c "grep -q 'waiting for graph stores: graphstore-0.*graphstore-1.* 503' <<<'$early' && [ $late = yes ]"

"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --minibatches 300 --batch 64 --seed 7 >"$WORK/mb-cora"
cat "$WORK/mb-cora" | grep -v '^mbcheck: ok'
check cora_minibatches_valid "300 random minibatches: edges exist, fanouts hold, all neighbours when degree <= fanout, features/labels equal, repeats identical" \
	grep -q '^mbcheck: ok' "$WORK/mb-cora"
info_and_nodes cora "$WORK/cora" "$URL_cora" "tcp://127.0.0.1:$p0" "tcp://127.0.0.1:$p1" >"$WORK/cora-bad"
cat "$WORK/cora-bad"
check cora_info_nodes "INFO through the sampler is the stores' graph; NODES lists exactly meta.json's train/valid/test nodes, as the stores do" \
	bash -c "[ -s '$WORK/cora-info.json' ] && [ -s '$WORK/cora-test.json' ] && [ ! -s '$WORK/cora-bad' ]"
"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --minibatches 40 --batch 64 --fanouts 0,0,0 --seed 3 >"$WORK/mb-cora0"
check cora_fanout_zero "fanouts 0,0,0 (features only): 40 minibatches pass mbcheck" grep -q '^mbcheck: ok' "$WORK/mb-cora0"

# ---- admission control: a build budget smaller than one minibatch --------
# Cora minibatches of 64 seeds carry ~10 MB of features (1433 floats per
# input node): with an 8 MB budget each is built alone, the others wait.
sampler coraadm --graphstores "tcp://127.0.0.1:$p0,tcp://127.0.0.1:$p1" --build-budget-mb 8 --admission-wait-s 60
if sampler_ready coraadm 60; then
	adm=()
	for i in 1 2 3 4; do
		"$MB" --sampler "$URL_coraadm" --parts "$WORK/cora" --minibatches 15 --batch 64 --seed "$i" >"$WORK/mb-adm-$i" &
		adm+=($!)
	done
	wait "${adm[@]}" || true
	queued=$(metric "$HTTP_coraadm" gnn_sampler_admission_queued_total)
	used=$(metric "$HTTP_coraadm" gnn_sampler_admission_used_bytes)
	busy=$(metric "$HTTP_coraadm" gnn_sampler_admission_timeouts_total)
	check cora_admission_queues "4 clients at once, --build-budget-mb 8: all 60 minibatches pass mbcheck, some waited (queued_total=$queued), none refused ($busy), nothing held after (used_bytes=$used)" \
		bash -c "[ \$(cat '$WORK'/mb-adm-* | grep -c '^mbcheck: ok') -eq 4 ] && [ '${queued:-0}' != 0 ] && [ '$used' = 0 ] && [ '$busy' = 0 ]"
else
	fail cora_admission_queues "the sampler with --build-budget-mb 8 did not become ready: $(tail -n 3 "$WORK/coraadm.log")"
fi

# ---- garbage to the sampler port (hdr, le32: above) ------------------------
head -c 300 /dev/urandom | sed 's/^GNNP/XXXX/' >"$WORK/g-random"
printf 'GNN' >"$WORK/g-short"
hdr 14 1 0 >"$WORK/g-version"
{ hdr 14 3 8; printf '\x01\x00\x00\x00\x00\x00\x00\x00'; } >"$WORK/g-truncated"
hdr 14 3 4294967280 >"$WORK/g-oversized"
# A minibatch request declaring 2^22 + 1 seeds (over GNN_PROTO_MAX_IDS).
{ hdr 14 3 40; printf '\x01\0\0\0\0\0\0\0'; le32 3; le32 1; le32 1; le32 0; le32 5; le32 0; le32 4194305; le32 0; } >"$WORK/g-toomany"
# A well-formed request for node 99999 (Cora has 2708).
{ hdr 14 3 48; printf '\x01\0\0\0\0\0\0\0'; le32 3; le32 1; le32 1; le32 0; le32 5; le32 0; le32 1; le32 0; printf '\x9f\x86\x01\0\0\0\0\0'; } >"$WORK/g-range"
hdr 4 3 0 >"$WORK/g-sample"                               # a graph store's message
{ hdr 2 3 8; le64 0; } >"$WORK/g-infopayload"             # INFO has no payload
{ hdr 12 3 8; le64 0; } >"$WORK/g-nodesshort"             # NODES_REQ is 16 bytes
nodes_req 1 0 0 >"$WORK/g-nodeslimit"                     # limit 0
nodes_req 1 10 2708 >"$WORK/g-nodesrange"                 # Cora has 2708 nodes
# The receive limit (GNN_PROTO_MAX_REQ_BYTES = 2^25 + 65536, + the header and
# REQ's 4-byte request ID):
# a request of exactly that size is read and refused by the decoder, one
# byte more closes the connection unread (no reply).
REQ_MAX=$(( (1 << 25) + 65536 ))
{ hdr 14 3 $REQ_MAX; head -c $REQ_MAX /dev/zero; } >"$WORK/g-atlimit"
{ hdr 14 3 $((REQ_MAX + 8)); head -c $((REQ_MAX + 8)) /dev/zero; } >"$WORK/g-overlimit"
expect=(random:eproto short:none version:eversion truncated:eproto oversized:erange toomany:erange range:einval
	sample:eproto infopayload:eproto nodesshort:eproto nodeslimit:erange nodesrange:erange atlimit:erange
	overlimit:dropped)
bad=""
for e in "${expect[@]}"; do
	f=${e%%:*} want=${e#*:}
	got=$(timeout 60 "$MB" --sampler "$URL_cora" --send "$WORK/g-$f" --timeout-ms 3000)
	echo "garbage $f: $got"
	if [ "$want" = none ]; then
		# Too short for a header: answered with an ERROR or dropped; either is fine.
		[[ $got == *"type=error status=eproto"* || $got == *"no reply"* ]] || bad="$bad $f"
	elif [ "$want" = dropped ]; then
		[[ $got == *"no reply"* ]] || bad="$bad $f"
	elif [[ $got != *"type=error status=$want"* ]]; then
		bad="$bad $f"
	fi
done
check cora_garbage_answered "each malformed message gets the expected ERROR code, one over the size limit none (wrong:$bad)" [ -z "$bad" ]
rm -f "$WORK/g-atlimit" "$WORK/g-overlimit"
# metric NAME{LABELS}: its value in the sampler's /metrics (nothing if absent).
cora_metric() {
	curl -s "http://127.0.0.1:$HTTP_cora/metrics" | awk -v k="$1" '$1 == k { print $2 }'
}
# The listener's URL as given (--listen), its port possibly 0.
listen_cora=$(sed -n 's/.* listen=\([^ ]*\) .*/\1/p' "$WORK/cora.log" | head -n 1)
wait_for 5 bash -c "curl -s http://127.0.0.1:$HTTP_cora/metrics |
	grep -q '^gnn_links_errors_total{side=\"listen\",url=\"$listen_cora\",reason=\"other\"} [1-9]'"
lim=$(cora_metric "gnn_links_receive_limit_bytes{url=\"$listen_cora\"}")
closed=$(cora_metric "gnn_links_errors_total{side=\"listen\",url=\"$listen_cora\",reason=\"other\"}")
check cora_size_limit_counted "/metrics: the receive limit $((REQ_MAX + 32)) (got $lim), the dropped connections counted (got $closed)" \
	bash -c "[ '$lim' = $((REQ_MAX + 32)) ] && [ '${closed:-0}' -ge 1 ]"
"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --once --batch 32 >"$WORK/after"
check cora_healthy_after_garbage "after the garbage: minibatches work, /healthz ok, bad messages counted" \
	bash -c "grep -q '^mbcheck: ok' '$WORK/after' && [ \"\$(curl -s http://127.0.0.1:$HTTP_cora/healthz)\" = ok ] &&
		 awk '\$1 ~ /^gnn_sampler_bad_messages_total/ { s += \$2 } END { exit !(s >= 4) }' <(curl -s http://127.0.0.1:$HTTP_cora/metrics) &&
		 [ \"\$(curl -s http://127.0.0.1:$HTTP_cora/metrics | awk '\$1 == \"gnn_sampler_request_errors_total{op=\\\"minibatch\\\",code=\\\"einval\\\"}\" { print \$2 }')\" -ge 1 ]"

# ---- a graph store dies and comes back ------------------------------------
# /readyz stays 200 for --store-down-grace-s after the check notices (a
# store pod being replaced must not empty the sampler Service), then 503.
kill -KILL "$PID_c1"
wait "$PID_c1" 2>/dev/null
wait_for 5 grep -q 'graphstore_unreachable store=graphstore-1' "$WORK/cora.log"
in_grace=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$HTTP_cora/readyz" | tr -d '\n')
check cora_store_down_grace "right after the store went: still ready (got '$in_grace')" [ "$in_grace" = "ready 200" ]
"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --once --batch 32 >"$WORK/down"
cat "$WORK/down"
secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' "$WORK/down")
limit=$(awk -v t=$TIMEOUT_MS -v r=$RETRIES 'BEGIN { print t / 1000 * (r + 1) + 1.5 }')
check cora_store_down_error "store killed: ERROR eunavail naming graphstore-1 and its URL in ${secs}s < ${limit}s" \
	bash -c "grep -q 'error code=eunavail' '$WORK/down' && grep -q 'graphstore-1 (tcp://127.0.0.1:$p1)' '$WORK/down' &&
		 awk -v s='$secs' -v l='$limit' 'BEGIN { exit !(s != \"\" && s < l) }'"
check cora_store_down_not_ready "after the grace, /readyz says 503 naming graphstore-1; the log says unreachable" \
	wait_for 10 bash -c "curl -s -w ' %{http_code}' http://127.0.0.1:$HTTP_cora/readyz | tr -d '\n' | grep -q 'graphstore-1(tcp://127.0.0.1:$p1) 503' &&
			    grep -q 'graphstore_unreachable store=graphstore-1' '$WORK/cora.log'"
store c1 "$WORK/cora" 1 "$p1"
back_ok() {
	"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --once --batch 32 >"$WORK/back" && grep -q '^mbcheck: ok' "$WORK/back"
}
t0=$SECONDS back=no
wait_for 15 back_ok && wait_for 5 cora_ready && back=yes
echo "store back: minibatches and /readyz ok after $((SECONDS - t0)) s"
check cora_store_back "store restarted: minibatches succeed again, ready again, same sampler process" \
	bash -c "[ $back = yes ] && grep -q 'graphstore_reachable_again store=graphstore-1' '$WORK/cora.log' && kill -0 $PID_cora"

# ---- metrics ---------------------------------------------------------------
curl -s "http://127.0.0.1:$HTTP_cora/metrics" >"$WORK/metrics"
if command -v promtool >/dev/null 2>&1; then
	check cora_metrics_promtool "promtool check metrics passes" bash -c "promtool check metrics <'$WORK/metrics'"
else
	skip cora_metrics_promtool "promtool not installed"
fi
v() { awk -v k="$1" '$1 == k { print $2 }' "$WORK/metrics"; }
echo "metrics: minibatches=$(v gnn_sampler_minibatches_total) edges=$(v gnn_sampler_sampled_edges_total) feature_bytes=$(v gnn_sampler_feature_bytes_total) errors_gs1=$(v 'gnn_sampler_graphstore_errors_total{graphstore="graphstore-1"}') retries_gs1=$(v 'gnn_sampler_graphstore_retries_total{graphstore="graphstore-1"}') ready=$(v gnn_sampler_graphstores_ready)"
# (the values in the line: a FAIL line is all that CI keeps of a flake)
check cora_metrics_counted "minibatches, edges, feature bytes, per-store requests/errors/retries and ready stores counted ($(v gnn_sampler_minibatches_total) minibatches, $(v 'gnn_sampler_graphstore_requests_total{graphstore="graphstore-0"}') requests to graphstore-0, $(v 'gnn_sampler_graphstore_errors_total{graphstore="graphstore-1"}') errors and $(v 'gnn_sampler_graphstore_retries_total{graphstore="graphstore-1"}') retries of graphstore-1, $(v gnn_sampler_graphstores_ready) ready, $(v gnn_sampler_minibatch_seconds_count) timed)" \
	awk -v mb="$(v gnn_sampler_minibatches_total)" -v e="$(v gnn_sampler_sampled_edges_total)" \
		-v fb="$(v gnn_sampler_feature_bytes_total)" -v r0="$(v 'gnn_sampler_graphstore_requests_total{graphstore="graphstore-0"}')" \
		-v e1="$(v 'gnn_sampler_graphstore_errors_total{graphstore="graphstore-1"}')" \
		-v t1="$(v 'gnn_sampler_graphstore_retries_total{graphstore="graphstore-1"}')" \
		-v rd="$(v gnn_sampler_graphstores_ready)" -v hc="$(v gnn_sampler_minibatch_seconds_count)" \
		'BEGIN { exit !(mb >= 300 && e > 0 && fb > 0 && r0 >= mb && e1 >= 1 && t1 >= 1 && rd == 2 && hc == mb) }'

# SIGTERM after all of the above (under ASan this also checks for leaks).
kill -TERM "$PID_cora"
wait "$PID_cora"; rc=$?
check cora_sigterm_clean_exit "SIGTERM after serving, failures and recovery: exit 0" \
	bash -c "[ $rc -eq 0 ] && grep -q 'stopped exit=0' '$WORK/cora.log'"

# ---- a graph store restarted on another graph ------------------------------
# graphstore-1 is restarted on another partition output of Cora (METIS seed
# 2: other node numbering, other graph_id) under two samplers: gc checks
# every 300 ms, gcq every 10 minutes, so only its verification of the
# reconnected store's answers can notice. From then on each must refuse
# every minibatch (ERROR eunavail naming the store and both graph_ids; the
# requests below run from the restart on, before either noticed), say 503
# "graph changed" on /readyz, log one ERROR graph_changed ... exiting, and
# exit 3 after --graph-changed-exit-s. A sampler started once both stores
# serve the new output is ready on it, with minibatches that check out.
gc_fail() {
	local t
	for t in cora_graph_changed_refused cora_graph_changed_not_ready cora_graph_changed_exit \
		cora_graph_changed_unchecked cora_graph_changed_restart_heals; do
		fail $t "$1"
	done
}
# hammer NAME SECONDS: minibatches, one at a time, from sampler NAME until
# it exits or SECONDS pass.
hammer() {
	local url=URL_$1 pid=PID_$1 end=$((SECONDS + $2))
	while kill -0 "${!pid}" 2>/dev/null && [ $SECONDS -lt $end ]; do
		"$MB" --sampler "${!url}" --parts "$WORK/cora" --once --batch 32 --timeout-ms 4000 >>"$WORK/$1-mb"
	done
}
# log_time LOG EVENT: the Unix time of EVENT's first line in LOG (nothing
# when there is none).
log_time() {
	local t
	t=$(grep -m 1 " $2 " "$1" | cut -d' ' -f1)
	[ -n "$t" ] && date -d "$t" +%s.%N 2>/dev/null
}
EXIT_S=4
"$BIN/gnn-partition" --input "$DATASETS/cora" --parts 2 --seed 2 --out "$WORK/cora-b" >/dev/null 2>&1
gargs=(--graphstores "tcp://127.0.0.1:$p0,tcp://127.0.0.1:$p1" --timeout-ms 1000 --retries 1 --graph-changed-exit-s $EXIT_S)
sampler gc "${gargs[@]}" --check-interval-ms 300 --check-timeout-ms 300
sampler gcq "${gargs[@]}" --check-interval-ms 600000
if ! sampler_ready gc || ! sampler_ready gcq; then
	gc_fail "samplers not ready on the first graph: $(tail -n 2 "$WORK/gc.log" "$WORK/gcq.log")"
elif ! "$MB" --sampler "$URL_gc" --parts "$WORK/cora" --once --batch 32 >/dev/null ||
	! "$MB" --sampler "$URL_gcq" --parts "$WORK/cora" --once --batch 32 >/dev/null; then
	gc_fail "no minibatch before the change"
else
	gid_a=$("$CLI" info --sampler "$URL_gc" | jq -r .graph_id)
	kill -KILL "$PID_c1"
	wait "$PID_c1" 2>/dev/null
	t_change=$(date +%s.%N)
	store c1 "$WORK/cora-b" 1 "$p1"
	hammer gc 30 &
	PIDS+=($!)
	hg=$!
	# gcq's first request once its data connection is back (nng redials
	# from 0.1 s on): the restart then shows only in the closing of its
	# watch connection (services/sampler/store_backend.c).
	(sleep 2 && hammer gcq 30) &
	PIDS+=($!)
	hq=$!
	# While gc refuses: /readyz and one more minibatch, by hand.
	ready_gc=none mb_gc=none
	if wait_for 15 grep -q " graph_changed " "$WORK/gc.log"; then
		ready_gc=$(curl -s -m 2 -w ' %{http_code}' "http://127.0.0.1:$HTTP_gc/readyz" | tr -d '\n')
		mb_gc=$("$MB" --sampler "$URL_gc" --parts "$WORK/cora" --once --batch 32 --timeout-ms 4000)
	fi
	gid_b=$("$CLI" info --store "tcp://127.0.0.1:$p1" --timeout-ms 2000 | jq -r .graph_id)
	# Bounded: a sampler still running after 30 s is killed (status 137).
	wait_for 30 bash -c "! kill -0 $PID_gc 2>/dev/null && ! kill -0 $PID_gcq 2>/dev/null"
	kill -KILL "$PID_gc" "$PID_gcq" 2>/dev/null
	wait "$PID_gc"; rc_gc=$?
	wait "$PID_gcq"; rc_gcq=$?
	wait "$hg" "$hq"
	echo "graph changed ($gid_a -> $gid_b): /readyz '$ready_gc'; by hand: $mb_gc"
	for n in gc gcq; do
		td=$(log_time "$WORK/$n.log" graph_changed) te=$(log_time "$WORK/$n.log" stopped)
		echo "$n: $(grep -c 'mbcheck: error' "$WORK/$n-mb") refused, $(grep -c 'mbcheck: ok' "$WORK/$n-mb") served;" \
			"refusing $(awk -v a="$t_change" -v b="$td" 'BEGIN { if (b == "") print "never"; else printf "%.2f s", b - a }') after the restart;" \
			"exit $(eval echo \$rc_$n) $(awk -v a="$td" -v b="$te" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.2f s", b - a }') after that"
		grep " graph_changed \| stopped " "$WORK/$n.log"
		sort "$WORK/$n-mb" | sed 's/seconds=[0-9.]*//' | uniq -c | head -n 5
	done
	ids="now serves graph_id $gid_b partition 1 of 2, not graph_id $gid_a partition 1 of 2"
	# Every reply since the restart an error, at least one the change's.
	refused() {
		[ -s "$WORK/$1-mb" ] && ! grep -q 'mbcheck: ok' "$WORK/$1-mb" &&
			grep 'code=eunavail' "$WORK/$1-mb" | grep -q "graphstore-1 (tcp://127.0.0.1:$p1) $ids"
	}
	# One ERROR line naming the store and both graphs; exit 3 within
	# --graph-changed-exit-s (+3 s for a busy machine) of it.
	exited() {
		local td te
		td=$(log_time "$WORK/$1.log" graph_changed) te=$(log_time "$WORK/$1.log" stopped)
		[ "$2" = 3 ] && [ "$(grep -c 'ERROR gnn-sampler graph_changed ' "$WORK/$1.log")" = 1 ] &&
			grep -q "ERROR gnn-sampler graph_changed store=graphstore-1 url=tcp://127.0.0.1:$p1 old_graph_id=$gid_a old_part=1 old_num_parts=2 new_graph_id=$gid_b new_part=1 .*exiting" "$WORK/$1.log" &&
			grep -q "ERROR gnn-sampler stopped exit=3" "$WORK/$1.log" &&
			awk -v a="$td" -v b="$te" -v x=$EXIT_S 'BEGIN { exit !(a != "" && b != "" && b - a >= x - 0.1 && b - a < x + 3) }'
	}
	check cora_graph_changed_refused "store restarted on another graph: no minibatch served after it, ERROR eunavail naming graphstore-1 and both graph_ids" \
		bash -c "$(declare -f refused); WORK='$WORK' p1=$p1 ids='$ids'; refused gc && [[ '$mb_gc' == *'code=eunavail'*'$ids'* ]]"
	check cora_graph_changed_not_ready "/readyz 503 'graph changed' while refusing (got '$ready_gc')" \
		bash -c "[[ '$ready_gc' == 'not ready: graph changed: graphstore-1 serves graph_id $gid_b, not $gid_a; exiting 503' ]]"
	# What a failure needs to be understood from CI's summary alone.
	got() {
		echo "got exit $(eval echo \$rc_$1), $(grep -c 'ERROR gnn-sampler graph_changed ' "$WORK/$1.log") ERROR graph_changed;" \
			"last lines: $(grep -v ' mb_served\| eunavail ' "$WORK/$1.log" | tail -n 4 | cut -c 1-300 | tr '\n' '|')"
	}
	check cora_graph_changed_exit "one ERROR graph_changed naming graphstore-1, old and new graph_id, exiting; exit 3 after --graph-changed-exit-s ($(got gc))" \
		bash -c "$(declare -f exited log_time); WORK='$WORK' p1=$p1 gid_a=$gid_a gid_b=$gid_b EXIT_S=$EXIT_S; exited gc $rc_gc"
	check cora_graph_changed_unchecked "no check before the exit (10 min): the reconnected store's answers refused all the same, ERROR, exit 3 ($(got gcq))" \
		bash -c "$(declare -f refused exited log_time); WORK='$WORK' p1=$p1 ids='$ids' gid_a=$gid_a gid_b=$gid_b EXIT_S=$EXIT_S
			 refused gcq && exited gcq $rc_gcq"
	# The restart heals: both stores on the new output, a fresh sampler.
	kill -KILL "$PID_c0"
	wait "$PID_c0" 2>/dev/null
	store c0 "$WORK/cora-b" 0 "$p0"
	sampler gcn "${gargs[@]}"
	heal=no
	if sampler_ready gcn; then
		"$MB" --sampler "$URL_gcn" --parts "$WORK/cora-b" --minibatches 20 --batch 64 >"$WORK/mb-gcn"
		[ "$("$CLI" info --sampler "$URL_gcn" | jq -r .graph_id)" = "$gid_b" ] && grep -q '^mbcheck: ok' "$WORK/mb-gcn" && heal=yes
	fi
	check cora_graph_changed_restart_heals "a sampler started on the new output: ready, graph_id $gid_b, 20 minibatches pass mbcheck against it" \
		[ $heal = yes ]
	stop_within "$PID_gcn" 30
fi
