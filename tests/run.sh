#!/usr/bin/env bash
# Runs every test: the unit-test binaries BUILD/tests/test_*, then the
# end-to-end scripts tests/e2e/*.sh (real binaries, real files) and the
# chaos suite tests/chaos/*.sh (faults injected into supervised runs). Each prints
# one "PASS name" / "FAIL name: why" / "SKIP name: why" line per test; this
# script adds a FAIL for a binary that crashes and ends with the totals line
# "N passed, N failed, N skipped". Usage: tests/run.sh [BUILD_DIR]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
export GNN_BUILD=$BUILD GNN_ROOT=$ROOT
export GNN_DATASETS=${GNN_DATASETS:-$ROOT/../shared/datasets}
results=$(mktemp)
logs=$(mktemp -d)
trap 'rm -rf "$results" "$logs"' EXIT

run_one() {  # name, command...
	local name=$1 rc t0=$SECONDS
	shift
	# Children write their log lines to stderr; keep them for failure reports.
	timeout --kill-after=10 900 "$@" >"$logs/out" 2>"$logs/stderr"
	rc=$?
	cat "$logs/out" >>"$results"
	echo "== $name: $(grep -c '^PASS ' "$logs/out") passed, $(grep -c '^FAIL ' "$logs/out") failed, $(grep -c '^SKIP ' "$logs/out") skipped ($((SECONDS - t0)) s)"
	# FAIL and SKIP lines, and the indented lines a FAIL brings (the chaos
	# and network suites' last log lines of each trainer: all there is of a
	# flake once its scratch folder is gone)
	awk '/^(FAIL|SKIP)/ { print; f = /^FAIL/; next } /check failed/ { print; next } f && /^  / { print; next } { f = 0 }' "$logs/out"
	if [ "$rc" -ne 0 ] && ! grep -q '^FAIL' "$logs/out"; then
		echo "FAIL $name: exited with status $rc" | tee -a "$results"
	fi
	if [ "$rc" -ne 0 ]; then
		echo "-- last stderr lines of $name:"
		tail -n 25 "$logs/stderr"
	fi
}

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for s in "$ROOT"/tests/e2e/*.sh "$ROOT"/tests/chaos/*.sh; do
	run_one "$(basename "$s")" bash "$s"
done

pass=$(grep -c '^PASS ' "$results")
fail=$(grep -c '^FAIL ' "$results")
skip=$(grep -c '^SKIP ' "$results")
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
