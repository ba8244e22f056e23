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
