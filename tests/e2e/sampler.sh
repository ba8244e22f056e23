#!/usr/bin/env bash
# End-to-end tests of gnn-sampler: real graph stores and a real sampler on
# 127.0.0.1 (random free ports), checked from outside by tests/tools/mbcheck
# against the partition files. The Cora parts read ../shared/datasets/cora
# and are skipped when it is absent; a synthetic graph covers the basics
# without it. Every process started here is killed on exit.
. "$(dirname "$0")/lib.bash"
S=$BIN/gnn-sampler
G=$BIN/gnn-graphstore
MB=$TOOLS/mbcheck
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
# PID_<NAME>; sampler_ready NAME then sets URL_<NAME> and HTTP_<NAME>.
sampler() {
	local name=$1
	shift
	"$S" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 --workers 4 "$@" 2>>"$WORK/$name.log" &
	PIDS+=($!)
	printf -v "PID_$name" %s $!
}
sampler_ready() {
	wait_for "${2:-20}" grep -q " ready listen=" "$WORK/$1.log" || return 1
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
# sampler waits, and it gives up after --wait-stores naming both.
t0=$SECONDS
GNN_GRAPHSTORE_PATTERN='tcp://127.0.0.1:1%d' GNN_GRAPHSTORE_COUNT=2 GNN_WAIT_STORES=3 \
	"$S" --http-addr 127.0.0.1 --http-port 0 --check-timeout-ms 300 2>"$WORK/wait.log" &
pid=$!
PIDS+=($pid)
hp=$(http_port_of wait)
health=$(curl -s "http://127.0.0.1:$hp/healthz")
ready=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$hp/readyz" | tr -d '\n')
wait $pid; rc=$?
check startup_wait_times_out "unreachable stores: alive, not ready, exit 1 after --wait-stores naming both" \
	bash -c "[ $rc -eq 1 ] && [ $((SECONDS - t0)) -le 8 ] && [ '$health' = ok ] &&
		 grep -q 'waiting for graph stores: graphstore-0(tcp://127.0.0.1:10),graphstore-1(tcp://127.0.0.1:11) 503' <<<'$ready' &&
		 grep -q 'graphstores_unreachable missing=graphstore-0(tcp://127.0.0.1:10),graphstore-1(tcp://127.0.0.1:11)' '$WORK/wait.log'"

GNN_GRAPHSTORES=tcp://127.0.0.1:10 "$S" --http-addr 127.0.0.1 --http-port 0 2>"$WORK/term.log" &
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
else
	fail synthetic_minibatches_valid "sampler not ready: $(tail -n 3 "$WORK/tiny.log")"
fi
# The same store listed twice: a clear refusal.
sampler dup --graphstores "tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pa" --wait-stores 10
wait "$PID_dup"; rc=$?
check duplicate_partition_refused "one store listed twice: exit 1, 'two graph stores serve partition 0'" \
	bash -c "[ $rc -eq 1 ] && grep -q 'two graph stores serve partition 0' '$WORK/dup.log'"
kill -TERM "$PID_tiny" "$PID_ta" "$PID_tb" 2>/dev/null
wait "$PID_tiny"; rc=$?
check sigterm_clean_exit "SIGTERM while serving: exit 0" bash -c "[ $rc -eq 0 ] && grep -q 'stopped exit=0' '$WORK/tiny.log'"

# ---- Cora ------------------------------------------------------------------
if ! have_cora; then
	for t in cora_sampler_waits_for_stores cora_minibatches_valid cora_garbage_answered cora_healthy_after_garbage \
		cora_store_down_error cora_store_down_not_ready cora_store_back cora_metrics_promtool cora_metrics_counted \
		cora_sigterm_clean_exit; do
		skip $t "reads ../shared/datasets/cora, which is absent"
	done
	exit 0
fi
"$BIN/gnn-partition" --input "$DATASETS/cora" --parts 2 --out "$WORK/cora" >/dev/null 2>&1
p0=$(free_port) p1=$(free_port)
# The sampler first: it waits, not ready, until both stores answer.
TIMEOUT_MS=1000 RETRIES=1
sampler cora --graphstores "tcp://127.0.0.1:$p0,tcp://127.0.0.1:$p1" --timeout-ms $TIMEOUT_MS --retries $RETRIES \
	--check-interval-ms 300 --check-timeout-ms 300
hp=$(http_port_of cora)
early=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$hp/readyz" | tr -d '\n')
sleep 0.5
store c0 "$WORK/cora" 0 "$p0"
store c1 "$WORK/cora" 1 "$p1"
if ! sampler_ready cora; then
	fail cora_sampler_waits_for_stores "not ready after the stores started: $(tail -n 3 "$WORK/cora.log")"
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

# ---- garbage to the sampler port -----------------------------------------
# hdr TYPE VERSION LEN: a 28-byte header (magic, version, type, req_id 9, len, status 0, reserved 0).
# (the inner printf writes octal escapes, the outer one turns them into bytes)
le32() { printf "$(printf '\\%03o' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
hdr() { printf 'GNNP'; printf "$(printf '\\%03o\\000\\%03o\\000' "$2" "$1")"; printf '\011\0\0\0\0\0\0\0'; le32 "$3"; le32 0; le32 0; }
head -c 300 /dev/urandom | sed 's/^GNNP/XXXX/' >"$WORK/g-random"
printf 'GNN' >"$WORK/g-short"
hdr 14 2 0 >"$WORK/g-version"
{ hdr 14 1 8; printf '\x01\x00\x00\x00\x00\x00\x00\x00'; } >"$WORK/g-truncated"
hdr 14 1 4294967280 >"$WORK/g-oversized"
# A minibatch request declaring 2^22 + 1 seeds (over GNN_PROTO_MAX_IDS).
{ hdr 14 1 32; printf '\x01\0\0\0\0\0\0\0'; le32 3; le32 1; le32 5; le32 0; le32 4194305; le32 0; } >"$WORK/g-toomany"
# A well-formed request for node 99999 (Cora has 2708).
{ hdr 14 1 40; printf '\x01\0\0\0\0\0\0\0'; le32 3; le32 1; le32 5; le32 0; le32 1; le32 0; printf '\x9f\x86\x01\0\0\0\0\0'; } >"$WORK/g-range"
hdr 2 1 0 >"$WORK/g-info"
expect=(random:eproto short:none version:eversion truncated:eproto oversized:erange toomany:erange range:einval info:eproto)
bad=""
for e in "${expect[@]}"; do
	f=${e%%:*} want=${e#*:}
	got=$("$MB" --sampler "$URL_cora" --send "$WORK/g-$f" --timeout-ms 3000)
	echo "garbage $f: $got"
	if [ "$want" = none ]; then
		# Too short for a header: answered with an ERROR or dropped; either is fine.
		[[ $got == *"type=error status=eproto"* || $got == *"no reply"* ]] || bad="$bad $f"
	elif [[ $got != *"type=error status=$want"* ]]; then
		bad="$bad $f"
	fi
done
check cora_garbage_answered "each malformed message gets the expected ERROR code" [ -z "$bad" ]
"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --once --batch 32 >"$WORK/after"
check cora_healthy_after_garbage "after the garbage: minibatches work, /healthz ok, bad messages counted" \
	bash -c "grep -q '^mbcheck: ok' '$WORK/after' && [ \"\$(curl -s http://127.0.0.1:$HTTP_cora/healthz)\" = ok ] &&
		 awk '\$1 ~ /^gnn_sampler_bad_messages_total/ { s += \$2 } END { exit !(s >= 4) }' <(curl -s http://127.0.0.1:$HTTP_cora/metrics) &&
		 [ \"\$(curl -s http://127.0.0.1:$HTTP_cora/metrics | awk '\$1 == \"gnn_sampler_request_errors_total{op=\\\"minibatch\\\",code=\\\"einval\\\"}\" { print \$2 }')\" -ge 1 ]"

# ---- a graph store dies and comes back ------------------------------------
kill -KILL "$PID_c1"
wait "$PID_c1" 2>/dev/null
"$MB" --sampler "$URL_cora" --parts "$WORK/cora" --once --batch 32 >"$WORK/down"
cat "$WORK/down"
secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' "$WORK/down")
limit=$(awk -v t=$TIMEOUT_MS -v r=$RETRIES 'BEGIN { print t / 1000 * (r + 1) + 1.5 }')
check cora_store_down_error "store killed: ERROR eunavail naming graphstore-1 and its URL in ${secs}s < ${limit}s" \
	bash -c "grep -q 'error code=eunavail' '$WORK/down' && grep -q 'graphstore-1 (tcp://127.0.0.1:$p1)' '$WORK/down' &&
		 awk -v s='$secs' -v l='$limit' 'BEGIN { exit !(s != \"\" && s < l) }'"
check cora_store_down_not_ready "/readyz says 503 naming graphstore-1; the log says unreachable" \
	wait_for 5 bash -c "curl -s -w ' %{http_code}' http://127.0.0.1:$HTTP_cora/readyz | tr -d '\n' | grep -q 'graphstore-1(tcp://127.0.0.1:$p1) 503' &&
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
check cora_metrics_counted "minibatches, edges, feature bytes, per-store requests/errors/retries and ready stores counted" \
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
