# Shared helpers of the end-to-end tests (sourced). Each test prints
# PASS/FAIL/SKIP lines for tests/run.sh; WORK is a scratch folder removed on exit.
set -u
ROOT=${GNN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${GNN_BUILD:-$ROOT/build}
BIN=$BUILD/bin
TOOLS=$BUILD/tests
DATASETS=${GNN_DATASETS:-$ROOT/../shared/datasets}
WORK=$(mktemp -d /tmp/gnn-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$ROOT/tests/proc.bash"

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
# plain_only NAME WHY: under `make asan` (GNN_SAN=1) the test says why it
# leaves itself to `make test` (no C code of ours, or the same run either
# way) and the script ends.
plain_only() {
	if [ "${GNN_SAN:-0}" = 1 ]; then
		skip "$1" "run by make test (the plain build): $2"
		exit 0
	fi
}

# check NAME CONDITION-DESCRIPTION COMMAND...: PASS when the command succeeds.
check() {
	local name=$1 what=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name" "$what"; fi
}

# refused NAME EXPECTED-MESSAGE OUT COMMAND...: PASS when COMMAND (which
# writes to OUT) exits non-zero, its stderr holds the message (a grep
# pattern) and neither OUT nor a temporary OUT.tmp-* is left behind: bad
# input gives a clear error and writes nothing. Its stderr stays in $WORK/err.
refused() {
	local name=$1 msg=$2 out=$3 rc
	shift 3
	rm -rf "$out"
	"$@" 2>"$WORK/err" >/dev/null
	rc=$?
	if [ $rc -eq 0 ]; then
		fail "$name" "exit status 0"
	elif ! grep -q -- "$msg" "$WORK/err"; then
		fail "$name" "message lacks '$msg': $(grep ERROR "$WORK/err" | head -n 2)"
	elif [ -e "$out" ] || ls -d "$out".tmp-* >/dev/null 2>&1; then
		fail "$name" "output or temporary folder left behind"
	else
		pass "$name"
	fi
}

# Tests reading ../shared/datasets say so and skip when it is absent (a
# user's clone has none); CI always has it.
have_cora() {
	[ -f "$DATASETS/cora/raw/edge.csv.gz" ]
}

# port_of LOG: the nng port a service's "ready ... port=N http_port=" line names.
port_of() { sed -n 's/.* ready .* port=\([0-9]*\) http_port=.*/\1/p' "$1" | head -n 1; }

# jget FILE FILTER: a value from a JSON file (jq).
jget() {
	jq -r "$2" "$1"
}

# serve_two TAG DATA [PRED]: graph stores 0 and 1 of DATA (store p serving
# PRED$p when given, so that two stores can hold two models; else
# DATA/predictions) and a sampler; sets URL, HTTP (its metrics port),
# SPID and STORE0, or returns 1. Logs in $WORK/TAG*.log; the PIDs are
# added to the caller's array PIDS (for its exit trap to kill).
serve_two() {
	local tag=$1 dir=$2 pred=${3:-} pa pb line
	pa=$(free_port) pb=$(free_port)
	for p in 0 1; do
		"$BIN/gnn-graphstore" --data "$dir" --part $p ${pred:+--predictions "$pred$p"} \
			--listen "tcp://127.0.0.1:$([ $p = 0 ] && echo "$pa" || echo "$pb")" \
			--http-addr 127.0.0.1 --http-port 0 --workers 2 2>>"$WORK/$tag-store$p.log" &
		PIDS+=($!)
	done
	"$BIN/gnn-sampler" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 --workers 2 \
		--graphstores "tcp://127.0.0.1:$pa,tcp://127.0.0.1:$pb" 2>>"$WORK/$tag.log" &
	SPID=$!
	PIDS+=($SPID)
	wait_for 60 grep -q " ready listen=" "$WORK/$tag.log" || return 1
	line=$(grep " ready listen=" "$WORK/$tag.log" | tail -n 1)
	URL="tcp://127.0.0.1:$(sed -n 's/.* port=\([0-9]*\) .*/\1/p' <<<"$line")"
	HTTP=$(sed -n 's/.* http_port=\([0-9]*\) .*/\1/p' <<<"$line")
	STORE0=tcp://127.0.0.1:$pa
}

# numpy_python: prints the first of python3 and /usr/bin/python3 that
# imports NumPy (Debian's python3-numpy; python3 may be a shim without it).
numpy_python() {
	local p
	for p in python3 /usr/bin/python3; do
		"$p" -c 'import numpy' 2>/dev/null && { echo "$p"; return 0; }
	done
	return 1
}

# same_partitions A B: two gnn-partition outputs hold the same files, byte
# for byte, and meta.json says the same but for the source and the cost
# (B may hold more: node-ids/).
same_partitions() {
	local f
	(cd "$1" && find . -type f ! -name meta.json | sort) >"$WORK/same.files"
	[ -s "$WORK/same.files" ] || return 1
	while read -r f; do cmp -s "$1/$f" "$2/$f" || { echo "# differs: $f"; return 1; }; done <"$WORK/same.files"
	[ "$(jq -c 'del(.memory, .timing_seconds, .source)' "$1/meta.json")" = \
		"$(jq -c 'del(.memory, .timing_seconds, .source)' "$2/meta.json" 2>/dev/null)" ]
}

# trains_alike NAME WHAT SOURCE-A SOURCE-B GNN-LOCAL-FLAGS...: gnn-local on
# two sources (each one "--flag value", e.g. "--partition-dir D") with the
# same flags ends both runs with exit 0 and the same test_acc and
# params_crc. WHAT names the two.
trains_alike() {
	local name=$1 what=$2 a=$3 b=$4 r1 r2 s1 s2 c1 c2
	shift 4
	# shellcheck disable=SC2086 # each source is a flag and its value
	timeout 400 "$BIN/gnn-local" $a --workdir "$WORK/$name-a" "$@" >/dev/null 2>&1
	r1=$?
	# shellcheck disable=SC2086
	timeout 400 "$BIN/gnn-local" $b --workdir "$WORK/$name-b" "$@" >/dev/null 2>&1
	r2=$?
	s1=$(grep ' summary ' "$WORK/$name-a/logs/trainer-0.log" 2>/dev/null | tail -n 1 | sed 's/.* summary //')
	s2=$(grep ' summary ' "$WORK/$name-b/logs/trainer-0.log" 2>/dev/null | tail -n 1 | sed 's/.* summary //')
	echo "# $name: $s1"
	echo "# $name: $s2"
	c1=$(grep -o 'params_crc=[0-9a-f]* ' <<<"$s1 " | head -n 1)$(grep -o 'test_acc=[0-9.]*' <<<"$s1")
	c2=$(grep -o 'params_crc=[0-9a-f]* ' <<<"$s2 " | head -n 1)$(grep -o 'test_acc=[0-9.]*' <<<"$s2")
	check "$name" "$what: exit 0 ($r1, $r2), the same test_acc and params_crc" \
		bash -c "[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -n '$c1' ] && [ '$c1' = '$c2' ]"
}
