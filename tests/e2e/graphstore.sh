#!/usr/bin/env bash
# End-to-end tests of gnn-graphstore and gnn-cli: real processes on
# 127.0.0.1 with ephemeral ports (port 0, read back from the logs), real
# partition files. Every wait is bounded; every process started here is
# killed on exit, also when a test fails. The Cora tests read
# ../shared/datasets/cora and are skipped when it is absent; the synthetic
# `tiny` graph needs nothing.
. "$(dirname "$0")/lib.bash"
GS=$BIN/gnn-graphstore
CLI=$BIN/gnn-cli
P=$BIN/gnn-partition
GSCHECK=$TOOLS/gscheck
NNGSEND=$TOOLS/nngsend

declare -A PID RPC HTTPP
cleanup() {
	local n
	for n in "${!PID[@]}"; do kill -KILL "${PID[$n]}" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME DATA PART [flags]: a graph store in the background, logging to
# $WORK/NAME.log, on ephemeral ports.
start() {
	local name=$1 data=$2 part=$3
	shift 3
	"$GS" --data "$data" --part "$part" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 "$@" 2>"$WORK/$name.log" &
	PID[$name]=$!
}

# wait_log NAME PATTERN [SECONDS]: until NAME's log has PATTERN (false on
# timeout, or when the process exited without writing it).
wait_log() {
	local name=$1 pat=$2 ticks=$(( ${3:-20} * 10 ))
	while (( ticks-- > 0 )); do
		grep -qs -- "$pat" "$WORK/$name.log" && return 0
		kill -0 "${PID[$name]}" 2>/dev/null || { grep -qs -- "$pat" "$WORK/$name.log"; return; }
		sleep 0.1
	done
	return 1
}

# ports NAME: reads the bound ports from the log into RPC[NAME], HTTPP[NAME].
ports() {
	HTTPP[$1]=$(sed -n 's/.* http_listening .* port=\([0-9]*\).*/\1/p' "$WORK/$1.log" | head -n 1)
	RPC[$1]=$(sed -n 's/.* server_listening .* port=\([0-9]*\) .*/\1/p' "$WORK/$1.log" | head -n 1)
}

# start_ready NAME DATA PART [flags]: start, wait (bounded) for the ready line.
start_ready() {
	start "$@"
	if wait_log "$1" " ready part=" 30; then
		ports "$1"
		return 0
	fi
	echo "store $1 did not become ready; its log:"
	tail -n 5 "$WORK/$1.log"
	return 1
}

# stop NAME: SIGTERM, wait at most 10 s; sets RC to the exit status (124
# when it had to be killed). Not in a subshell: only this shell can wait.
stop() {
	local pid=${PID[$1]} ticks=100
	kill -TERM "$pid" 2>/dev/null
	while (( ticks-- > 0 )) && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	exit_status "$1" 0
}

# exit_status NAME [SECONDS]: waits for a process expected to exit by
# itself (killing it after SECONDS); sets RC as stop does.
exit_status() {
	local pid=${PID[$1]} ticks=$(( ${2:-20} * 10 ))
	while (( ticks-- > 0 )) && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		RC=124
	else
		wait "$pid"
		RC=$?
	fi
	unset "PID[$1]"
}

http() {  # http NAME PATH: status code
	curl -s -o "$WORK/body" -w '%{http_code}' --max-time 5 "http://127.0.0.1:${HTTPP[$1]}$2"
}
url() { echo "tcp://127.0.0.1:${RPC[$1]}"; }
cli() { timeout 60 "$CLI" "$@"; }
# metric NAME SERIES-REGEX: sum of the matching samples in NAME's /metrics.
metric() {
	curl -s --max-time 5 "http://127.0.0.1:${HTTPP[$1]}/metrics" | awk -v re="^$2" '$0 ~ re { s += $NF } END { print s + 0 }'
}

# ---- command line -------------------------------------------------------
out=$("$GS" --help 2>&1)
check gs_help "--help lists the options with their variables" \
	bash -c 'grep -q -- "--wait-data N  \[GNN_WAIT_DATA\]" <<<"$1" && grep -q -- "--part N  \[GNN_PART\]" <<<"$1"' _ "$out"
out=$("$CLI" --help 2>&1)
out2=$("$CLI" minibatch --help 2>&1)
check cli_help "gnn-cli --help lists the commands, COMMAND --help its options" \
	bash -c 'for c in info sample features labels split nodes minibatch; do grep -q "^  $c " <<<"$1" || exit 1; done;
		 grep -q -- "--fanouts VALUE" <<<"$2" && grep -q -- "--timeout-ms N" <<<"$2"' _ "$out" "$out2"
"$CLI" frobnicate 2>"$WORK/err"; rc=$?
check cli_unknown_command "unknown command: exit 2 naming it" \
	bash -c "[ $rc -eq 2 ] && grep -q 'unknown command \"frobnicate\"' '$WORK/err'"

# ---- bad configuration ------------------------------------------------------
"$P" --synthetic tiny --parts 2 --out "$WORK/tiny" 2>/dev/null >/dev/null
[ -f "$WORK/tiny/meta.json" ] || { fail tiny_partition "gnn-partition failed"; exit 1; }

start nodata "$WORK/absent" 0 --wait-data 0
exit_status nodata 10; rc=$RC
check missing_data_no_wait "missing --data folder with --wait-data 0: non-zero exit, names meta.json" \
	bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'data_missing file=$WORK/absent/meta.json' '$WORK/nodata.log'"

start late1 "$WORK/absent" 0 --wait-data 1
exit_status late1 10; rc=$RC
check wait_data_timeout "--wait-data 1 on a missing output: data_timeout, non-zero exit" \
	bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'data_timeout file=$WORK/absent/meta.json' '$WORK/late1.log'"

start badpart "$WORK/tiny" 5 --wait-data 0
exit_status badpart 10; rc=$RC
check part_out_of_range "--part 5 of 2 partitions: non-zero exit, says which exist" \
	bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'part=5 num_parts=2 .*partitions 0..1' '$WORK/badpart.log'"

HOSTNAME=laptop "$GS" --data "$WORK/tiny" --wait-data 0 2>"$WORK/err"; rc=$?
check part_needs_ordinal "no --part, host name without -<n>: exit 2 naming the host" \
	bash -c "[ $rc -eq 2 ] && grep -q 'host=\"laptop\".*pass --part' '$WORK/err'"

cp -r "$WORK/tiny" "$WORK/corrupt"
f=$WORK/corrupt/part-0/feat-node.arr
b=$(od -An -tu1 -j 200 -N 1 "$f" | tr -d ' ')
printf "\\x$(printf %02x $(( b ^ 0xff )))" | dd of="$f" bs=1 seek=200 conv=notrunc status=none
start corrupt "$WORK/corrupt" 0 --wait-data 0
exit_status corrupt 20; rc=$RC
check corrupt_partition_refused "a flipped byte in feat-node.arr: never ready, non-zero exit, checksum message" \
	bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'feat-node.arr.*checksum mismatch' '$WORK/corrupt.log' &&
		 grep -q 'load_failed part=0 .*checksum mismatch' '$WORK/corrupt.log' && ! grep -q ' ready part=' '$WORK/corrupt.log'"

# ---- start-up: waiting for the partitioner, health before readiness --------
HOSTNAME=graphstore-1 "$GS" --data "$WORK/late" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
	--workers 2 --wait-data 60 2>"$WORK/late.log" &
PID[late]=$!
if wait_log late "waiting_for_data" 10; then
	ports late
	hz=$(http late /healthz)
	rz=$(http late /readyz)
	rzbody=$(cat "$WORK/body")
	check health_before_data "/healthz 200 and /readyz 503 'waiting for' while the output is missing" \
		bash -c "[ '$hz' = 200 ] && [ '$rz' = 503 ] && grep -q 'not ready: waiting for $WORK/late/meta.json' <<<'$rzbody'"
	"$P" --synthetic tiny --parts 2 --out "$WORK/late" 2>/dev/null >/dev/null
	wait_log late " ready part=1" 30
	check wait_data_then_ready "the output appears: part 1 from the host name graphstore-1, ready, /readyz 200" \
		bash -c "grep -q 'ordinal_from_host host=graphstore-1 part=1' '$WORK/late.log' && grep -q 'data_found' '$WORK/late.log' &&
			 [ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:${HTTPP[late]}/readyz)\" = 200 ] &&
			 [ \"\$(curl -s --max-time 5 http://127.0.0.1:${HTTPP[late]}/metrics | awk '/^gnn_graphstore_ready /{print \$2}')\" = 1 ]"
else
	fail health_before_data "the store did not log waiting_for_data"
	fail wait_data_then_ready "not started"
fi

start waitstop "$WORK/absent" 0 --wait-data 60
wait_log waitstop "waiting_for_data" 10
t0=$(date +%s%N)
stop waitstop; rc=$RC
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check sigterm_while_waiting "SIGTERM while waiting for data: exit 0 within 3 s (took ${ms} ms)" \
	bash -c "[ $rc -eq 0 ] && [ $ms -lt 3000 ] && grep -q 'stopping' '$WORK/waitstop.log'"

# ---- serving: the synthetic graph ------------------------------------------
# serve_checks TAG DIR NAME0 NAME1 NUM_TRAIN: the request checks over two stores.
serve_checks() {
	local tag=$1 dir=$2 s0=$3 s1=$4 ntrain=$5 n0 n1 e0 e1 ids0 ids1 big
	local u0 u1
	u0=$(url "$s0")
	u1=$(url "$s1")
	cli info --store "$u0" >"$WORK/info0.json" 2>"$WORK/err"
	cli info --store "$u1" >"$WORK/info1.json" 2>>"$WORK/err"
	check ${tag}_info_agree "both stores report the same graph, layout and graph_id, their own range" \
		bash -c "a=\$(jq -c '[.num_parts,.num_nodes,.num_edges,.feat_dim,.num_classes,.graph_id,.offsets]' '$WORK/info0.json');
			 b=\$(jq -c '[.num_parts,.num_nodes,.num_edges,.feat_dim,.num_classes,.graph_id,.offsets]' '$WORK/info1.json');
			 m=\$(jq -c '[.num_parts,.num_nodes,.num_edges,.feat_dim,.num_classes]' '$dir/meta.json');
			 [ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ] && [ \"\$(jq -c '.[0:5]' <<<\"\$a\")\" = \"\$m\" ] &&
			 [ \"\$(jq -c '.offsets' '$WORK/info0.json')\" = \"\$(jq -c '.node_offsets' '$dir/meta.json')\" ] &&
			 [ \"\$(jq -c '[.part_id,.node_start,.part_edges]' '$WORK/info0.json')\" = \"\$(jq -c '[0,.parts[0].node_start,.parts[0].num_edges]' '$dir/meta.json')\" ] &&
			 [ \"\$(jq .part_id '$WORK/info1.json')\" = 1 ]"
	n0=$(jq '.parts[0].node_start' "$dir/meta.json"); e0=$(jq '.parts[0].node_end' "$dir/meta.json")
	n1=$(jq '.parts[1].node_start' "$dir/meta.json"); e1=$(jq '.parts[1].node_end' "$dir/meta.json")
	ids0=$(seq -s, "$n0" 3 $(( e0 - 1 )))
	ids1=$(seq -s, "$n1" 3 $(( e1 - 1 )))

	local ok=1 s u ids k
	for k in 0 1; do
		if [ $k = 0 ]; then u=$u0; ids=$ids0; else u=$u1; ids=$ids1; fi
		for s in 3 -1; do
			cli sample --store "$u" --nodes "$ids" --fanout $s --seed 42 >"$WORK/s.json" 2>"$WORK/err" || ok=0
			"$GSCHECK" "$dir" sample "$WORK/s.json" >"$WORK/chk" || { ok=0; head -n 3 "$WORK/chk"; }
		done
	done
	check ${tag}_sample_true_neighbours "sample --fanout 3 and -1 on every third node of both stores: true in-neighbours, min(degree, fanout) each, gnn_sample_choose's pick (gscheck)" \
		[ $ok = 1 ]

	cli sample --store "$u0" --nodes "$ids0" --fanout -1 >"$WORK/all.json"
	big=$(jq -r '[range(0; .nodes|length) as $i | select((.neighbours[$i]|length) > 6) | .nodes[$i]] | .[:30] | join(",")' "$WORK/all.json")
	cli sample --store "$u0" --nodes "$big" --fanout 3 --seed 1 >"$WORK/a1.json"
	cli sample --store "$u0" --nodes "$big" --fanout 3 --seed 1 >"$WORK/a2.json"
	cli sample --store "$u0" --nodes "$big" --fanout 3 --seed 2 >"$WORK/b.json"
	check ${tag}_sample_seeded "same seed, same neighbours; another seed, others (on $(tr , '\n' <<<"$big" | grep -c .) nodes of degree > 6)" \
		bash -c "[ -n '$big' ] && cmp -s '$WORK/a1.json' '$WORK/a2.json' &&
			 [ \"\$(jq -c .neighbours '$WORK/a1.json')\" != \"\$(jq -c .neighbours '$WORK/b.json')\" ] &&
			 [ \"\$(jq '[.neighbours[]|length]|max' '$WORK/b.json')\" = 3 ]"

	ok=1
	for k in 0 1; do
		if [ $k = 0 ]; then u=$u0; ids=$ids0; else u=$u1; ids=$ids1; fi
		for s in features labels split; do
			cli $s --store "$u" --nodes "$ids" >"$WORK/r.json" 2>"$WORK/err" || { ok=0; cat "$WORK/err"; }
			"$GSCHECK" "$dir" $s "$WORK/r.json" >"$WORK/chk" || { ok=0; head -n 3 "$WORK/chk"; }
		done
	done
	check ${tag}_rows_match_files "features (bit for bit), labels and split of every third node equal the partition files (gscheck)" \
		[ $ok = 1 ]

	cli nodes --store "$u0" --split train >"$WORK/n0.json"
	cli nodes --store "$u1" --split train --page 7 >"$WORK/n1.json"
	check ${tag}_nodes_train "nodes --split train over both stores: $ntrain in total, exactly each partition's (paged by 7 on store 1)" \
		bash -c "[ \$(( \$(jq .count '$WORK/n0.json') + \$(jq .count '$WORK/n1.json') )) -eq $ntrain ] &&
			 '$GSCHECK' '$dir' nodes '$WORK/n0.json' --part 0 >/dev/null && '$GSCHECK' '$dir' nodes '$WORK/n1.json' --part 1 >/dev/null &&
			 [ \$(jq .pages '$WORK/n1.json') -gt 1 ]"
	cli nodes --store "$u1" --split train --limit 5 >"$WORK/n5.json"
	check ${tag}_nodes_limit "--limit 5: the first five, and where to continue" \
		bash -c "[ \"\$(jq -c .nodes '$WORK/n5.json')\" = \"\$(jq -c '.nodes[:5]' '$WORK/n1.json')\" ] &&
			 [ \$(jq .next_cursor '$WORK/n5.json') -eq \$(( \$(jq '.nodes[4]' '$WORK/n5.json') + 1 )) ]"

	cli labels --store "$u0" --nodes "$n0,$n1" >/dev/null 2>"$WORK/err"; rc=$?
	check ${tag}_foreign_node_refused "a node of the other partition: exit 1, error naming it and the owned range" \
		bash -c "[ $rc -eq 1 ] && grep -q 'erange: node $n1 (ids\[1\]) is not owned by graph store 0, which owns \[$n0, $e0); partition 1 owns it' '$WORK/err'"
	cli sample --store "$u1" --nodes 99999999 >/dev/null 2>"$WORK/err"; rc=$?
	check ${tag}_outside_graph_refused "a node outside the graph: exit 1, error naming it" \
		bash -c "[ $rc -eq 1 ] && grep -q 'node 99999999 (ids\[0\]) is outside the graph' '$WORK/err'"
}

if start_ready t0 "$WORK/tiny" 0 && start_ready t1 "$WORK/tiny" 1; then
	serve_checks tiny "$WORK/tiny" t0 t1 "$(jq .num_train "$WORK/tiny/meta.json")"
else
	fail tiny_start "graph stores on the tiny graph did not start"
fi

# ---- the command line client's own checks ------------------------------------
cli labels --store "$(url t0)" --nodes "1,,2" 2>"$WORK/err"; rc=$?
check cli_empty_entry "--nodes 1,,2: exit 2, says so" bash -c "[ $rc -eq 2 ] && grep -q 'empty entry after ID 1' '$WORK/err'"
cli labels --store "$(url t0)" --nodes "3,x7" 2>"$WORK/err"; rc=$?
check cli_not_an_id "--nodes 3,x7: exit 2 naming x7" bash -c "[ $rc -eq 2 ] && grep -q '\"x7\" (entry 2) is not a node ID' '$WORK/err'"
cli features --store "$(url t0)" --nodes "-4" 2>"$WORK/err"; rc=$?
check cli_negative_id "--nodes -4: exit 2" bash -c "[ $rc -eq 2 ] && grep -q '\"-4\" (entry 1) is not a node ID' '$WORK/err'"
printf '1\n2 3,\n4\n' >"$WORK/ids.txt"
out=$(cli labels --store "$(url t0)" --nodes "@$WORK/ids.txt" | jq -c .nodes)
check cli_ids_from_file "--nodes @FILE reads IDs separated by newlines, blanks or commas" [ "$out" = "[1,2,3,4]" ]
cli sample --store "$(url t0)" --nodes 1 --fanout 0 2>"$WORK/err"; rc=$?
check cli_fanout_zero "--fanout 0: exit 2" [ $rc -eq 2 ]
t0=$(date +%s%N)
cli info --store tcp://127.0.0.1:1 --timeout-ms 200 --retries 1 >/dev/null 2>"$WORK/err"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check cli_unreachable_times_out "nothing listening: exit 1 after 2 attempts of 200 ms (${ms} ms), error names the URL" \
	bash -c "[ $rc -eq 1 ] && [ $ms -lt 3000 ] && grep -q 'info request to tcp://127.0.0.1:1 failed' '$WORK/err' && grep -q 'attempts=2' '$WORK/err'"
cli info --store not-a-url 2>"$WORK/err"; rc=$?
check cli_bad_url "an unparsable URL: non-zero exit, says so" bash -c "[ $rc -ne 0 ] && grep -q 'cannot use --store \"not-a-url\"' '$WORK/err'"
GNN_STORE=$(url t0) cli info >"$WORK/env.json" 2>/dev/null
check cli_env_store "GNN_STORE gives the URL" [ "$(jq .part_id "$WORK/env.json" 2>/dev/null)" = 0 ]

# ---- garbage on the nng port -------------------------------------------------
le() {  # le BYTES VALUE: printf escapes of VALUE, little-endian
	local i s=""
	for (( i = 0; i < $1; i++ )); do s+=$(printf '\\x%02x' $(( ($2 >> (8 * i)) & 255 ))); done
	printf '%s' "$s"
}
# msg FILE MAGIC VERSION TYPE LEN [PAYLOAD-ESCAPES]: a 28-byte header and payload.
msg() {
	printf "$2$(le 2 "$3")$(le 2 "$4")$(le 8 4242)$(le 4 "$5")$(le 4 0)$(le 4 0)${6:-}" >"$1"
}
if [ -n "${RPC[t0]:-}" ]; then
	U=$(url t0)
	bad0=$(metric t0 gnn_graphstore_bad_messages_total)
	err0=$(metric t0 gnn_graphstore_request_errors_total)
	# Raw TCP: not even an SP handshake; then a handshake with an absurd frame.
	( exec 3<>/dev/tcp/127.0.0.1/${RPC[t0]} && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && sleep 0.2 ) 2>/dev/null
	( exec 3<>/dev/tcp/127.0.0.1/${RPC[t0]} && head -c 5000 /dev/urandom >&3 && sleep 0.2 ) 2>/dev/null
	( exec 3<>/dev/tcp/127.0.0.1/${RPC[t0]} &&
	  printf '\x00SP\x00\x00\x30\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00' >&3 && sleep 0.2 ) 2>/dev/null
	( exec 3<>/dev/tcp/127.0.0.1/${RPC[t0]} &&
	  printf '\x00SP\x00\x00\x30\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x80\x00\x00\x01' >&3 && sleep 0.2 ) 2>/dev/null
	# Well-formed SP frames holding bad messages: file, expected reply.
	: >"$WORK/m-empty"
	printf 'garbage!' >"$WORK/m-short"
	head -c 4096 /dev/urandom >"$WORK/m-random"
	head -c 2000000 /dev/zero >"$WORK/m-zeros"
	msg "$WORK/m-magic" XNNP 3 2 0
	msg "$WORK/m-version" GNNP 1 2 0
	msg "$WORK/m-type" GNNP 3 99 0
	msg "$WORK/m-oversized" GNNP 3 4 $(( 0x7fffffff ))
	msg "$WORK/m-truncated" GNNP 3 4 16 '\x01\x00\x00\x00\x00\x00\x00\x00'
	msg "$WORK/m-sample-noids" GNNP 3 4 24 "$(le 8 7)$(le 4 1)$(le 4 1000)$(le 4 3)$(le 4 0)"
	msg "$WORK/m-sample-hugen" GNNP 3 4 16 "$(le 8 7)$(le 4 1)$(le 4 $(( 0x7fffffff )))"
	msg "$WORK/m-sample-fanout0" GNNP 3 4 32 "$(le 8 7)$(le 4 1)$(le 4 1)$(le 4 0)$(le 4 0)$(le 8 1)"
	msg "$WORK/m-sample-foreign" GNNP 3 4 32 "$(le 8 7)$(le 4 1)$(le 4 1)$(le 4 3)$(le 4 0)$(le 8 1999)"
	msg "$WORK/m-feat-negative" GNNP 3 6 16 "$(le 4 1)$(le 4 0)$(le 8 $(( -5 )))"
	msg "$WORK/m-info-payload" GNNP 3 2 8 "$(le 8 1)"
	msg "$WORK/m-reply-type" GNNP 3 3 0
	msg "$WORK/m-minibatch" GNNP 3 14 0
	msg "$WORK/m-nodes-badsplit" GNNP 3 12 16 "$(le 4 9)$(le 4 10)$(le 8 0)"
	ok=1 undecodable=0
	while read -r f want; do
		got=$(timeout 60 "$NNGSEND" "$U" "$WORK/m-$f" 3000)
		if ! grep -q -- "$want" <<<"$got"; then
			ok=0
			echo "garbage $f: got '$got', want '$want'"
		fi
		grep -q 'undecodable message header' <<<"$got" && undecodable=$(( undecodable + 1 ))
	done <<'EOF'
empty status=eproto .*undecodable
short status=eproto .*undecodable
random status=eproto .*undecodable
zeros status=eproto .*undecodable
magic status=eproto .*undecodable
version status=eversion
type status=eproto .*undecodable
oversized status=erange
truncated status=eproto .*undecodable
sample-noids status=eproto .*malformed sample request
sample-hugen status=erange .*malformed sample request
sample-fanout0 status=erange
sample-foreign status=erange .*node 1999 (ids\[0\]) is not owned
feat-negative status=erange .*node -5 (ids\[0\]) is outside the graph
info-payload status=eproto .*INFO request carries 8 payload bytes
reply-type status=eproto .*does not serve info_resp
minibatch status=eproto .*does not serve minibatch
nodes-badsplit status=erange
EOF
	check garbage_gets_errors "18 bad messages in SP frames: each gets an ERROR reply with the right code and text" [ $ok = 1 ]
	bad1=$(metric t0 gnn_graphstore_bad_messages_total)
	err1=$(metric t0 gnn_graphstore_request_errors_total)
	check garbage_counted "undecodable ones counted in gnn_graphstore_bad_messages_total (+$(( bad1 - bad0 ))), the others in request_errors_total (+$(( err1 - err0 )))" \
		bash -c "[ $undecodable -ge 9 ] && [ $(( bad1 - bad0 )) -ge $undecodable ] && [ $(( err1 - err0 )) -ge 9 ]"
	out=$(cli info --store "$U" | jq .part_id)
	check garbage_store_healthy "after the garbage: /healthz 200, /readyz 200, a normal request works" \
		bash -c "[ '$(http t0 /healthz)' = 200 ] && [ '$(http t0 /readyz)' = 200 ] && [ '$out' = 0 ] && kill -0 ${PID[t0]}"
else
	fail garbage_gets_errors "store t0 not running"
fi

# ---- gnn-cli minibatch through a real sampler --------------------------------
if [ ! -x "$BIN/gnn-sampler" ]; then
	skip cli_minibatch "gnn-sampler is not built"
elif [ -n "${RPC[t0]:-}" ] && [ -n "${RPC[t1]:-}" ]; then
	"$BIN/gnn-sampler" --graphstores "$(url t0),$(url t1)" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 \
		--http-port 0 --workers 2 --wait-stores 20 2>"$WORK/smp.log" &
	PID[smp]=$!
	if wait_log smp " ready listen=" 30; then
		su=tcp://127.0.0.1:$(sed -n 's/.* ready listen=.* port=\([0-9]*\) .*/\1/p' "$WORK/smp.log" | head -n 1)
		cli minibatch --sampler "$su" --seeds 3,1500,7 --fanouts 4,3 --seed 5 >"$WORK/mb.json" 2>"$WORK/err"
		cli minibatch --sampler "$su" --seeds 3,1500,7 --fanouts 4,3 --seed 5 >"$WORK/mb2.json" 2>>"$WORK/err"
		jq '{nodes: .blocks[0].src, features: .features}' "$WORK/mb.json" >"$WORK/mbf.json" 2>/dev/null
		jq '{nodes: .seeds, labels: .labels}' "$WORK/mb.json" >"$WORK/mbl.json" 2>/dev/null
		check cli_minibatch "minibatch --fanouts 4,3: 2 blocks chained to the seeds, edges within bounds, features and labels equal the partition files', same seed same batch" \
			bash -c "jq -e '(.num_layers == 2) and (.blocks[1].dst == [3,1500,7]) and (.blocks[0].dst == .blocks[1].src) and
				     (all(.blocks[]; . as \$b | (.edges|length) == .num_edges and (.dst|length) == .num_dst and (.src|length) == .num_src and
				      all(.edges[]; .[0] < \$b.num_dst and .[1] < \$b.num_src) and (.src[:.num_dst] == .dst))) and
				     ([.blocks[1].edges[] | .[0]] | group_by(.) | map(length) | max <= 3) and
				     ((.features|length) == .blocks[0].num_src) and ((.labels|length) == 3)' '$WORK/mb.json' >/dev/null &&
				 '$GSCHECK' '$WORK/tiny' features '$WORK/mbf.json' >/dev/null && '$GSCHECK' '$WORK/tiny' labels '$WORK/mbl.json' >/dev/null &&
				 cmp -s '$WORK/mb.json' '$WORK/mb2.json'"
		cli minibatch --sampler "$su" --seeds 3 --fanouts 2 --no-features --no-labels >"$WORK/mb3.json" 2>>"$WORK/err"
		check cli_minibatch_flags "--no-features --no-labels leave them out" \
			bash -c "jq -e '(has(\"features\")|not) and (has(\"labels\")|not) and .num_layers == 1' '$WORK/mb3.json' >/dev/null"
	else
		fail cli_minibatch "the sampler did not become ready: $(tail -n 2 "$WORK/smp.log")"
	fi
	stop smp
fi

# ---- metrics ------------------------------------------------------------------
if [ -n "${HTTPP[t0]:-}" ]; then
	curl -s --max-time 5 "http://127.0.0.1:${HTTPP[t0]}/metrics" >"$WORK/metrics"
	files=$(( $(cat "$WORK"/tiny/part-0/*.arr | wc -c) ))
	check metrics_present "the graph store's metrics: ready 1, partition_bytes = the files' $files bytes, sampled edges and feature rows counted, per-op requests" \
		bash -c "grep -q '^gnn_graphstore_ready 1\$' '$WORK/metrics' && grep -q '^gnn_graphstore_partition_bytes $files\$' '$WORK/metrics' &&
			 awk '/^gnn_graphstore_sampled_edges_total /{ exit !(\$2 > 0) }' '$WORK/metrics' &&
			 awk '/^gnn_graphstore_feature_rows_total /{ exit !(\$2 > 0) }' '$WORK/metrics' &&
			 grep -q '^gnn_graphstore_requests_total{op=\"sample\"}' '$WORK/metrics' &&
			 grep -q '^process_resident_memory_bytes' '$WORK/metrics'"
	if [ -x /usr/bin/promtool ] || command -v promtool >/dev/null; then
		check metrics_promtool "/metrics passes promtool check metrics" \
			bash -c "promtool check metrics <'$WORK/metrics' >'$WORK/promtool.out' 2>&1 || { cat '$WORK/promtool.out'; exit 1; }"
	else
		skip metrics_promtool "promtool is not installed"
	fi
fi

# ---- SIGTERM ----------------------------------------------------------------------
for s in t0 t1 late; do
	[ -n "${PID[$s]:-}" ] || continue
	t0=$(date +%s%N)
	stop $s; rc=$RC
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	check sigterm_clean_exit_$s "SIGTERM: exit 0 within 5 s (took ${ms} ms), logs stopping and stopped" \
		bash -c "[ $rc -eq 0 ] && [ $ms -lt 5000 ] && grep -q ' stopping reason=signal' '$WORK/$s.log' && grep -q ' stopped exit=0' '$WORK/$s.log'"
done

# ---- Cora --------------------------------------------------------------------------
if ! have_cora; then
	for t in cora_info_agree cora_sample_true_neighbours cora_sample_seeded cora_rows_match_files cora_nodes_train \
		 cora_nodes_limit cora_foreign_node_refused cora_outside_graph_refused cora_nodes_valid_test; do
		skip $t "reads ../shared/datasets/cora, which is absent"
	done
	exit 0
fi
"$P" --input "$DATASETS/cora" --parts 2 --out "$WORK/cora" 2>/dev/null >/dev/null
if start_ready c0 "$WORK/cora" 0 && start_ready c1 "$WORK/cora" 1; then
	serve_checks cora "$WORK/cora" c0 c1 140
	v=$(( $(cli nodes --store "$(url c0)" --split valid | jq .count) + $(cli nodes --store "$(url c1)" --split valid | jq .count) ))
	t=$(( $(cli nodes --store "$(url c0)" --split test | jq .count) + $(cli nodes --store "$(url c1)" --split test | jq .count) ))
	check cora_nodes_valid_test "nodes --split valid / test over both stores: 500 / 1000 (Planetoid)" \
		bash -c "[ $v -eq 500 ] && [ $t -eq 1000 ]"
	for s in c0 c1; do
		sed -n 's/.* loaded \(part=[0-9]*\).*\(partition_bytes=[0-9]*\) \(rss_bytes=[0-9]*\) \(rss_growth_bytes=[0-9]*\) \(growth_over_partition=[0-9.]*\).*/cora store \1 \2 \3 \4 \5/p' "$WORK/$s.log"
		stop $s
	done
else
	fail cora_start "graph stores on Cora did not start"
fi
