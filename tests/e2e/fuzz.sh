#!/usr/bin/env bash
# Fuzz smoke test of the wire-protocol decoders: builds the libFuzzer targets
# of tests/fuzz (rules in tests/fuzz.mk) into $BUILD/fuzz with clang, apart
# from the main build's objects, and runs each for GNN_FUZZ_SECONDS (4)
# seconds, GNN_FUZZ_JOBS (2) at a time: one PASS/FAIL line per target.
# SKIPs when clang or its libFuzzer runtime is missing. `make fuzz` runs the
# same targets for a minute each.
. "$(dirname "$0")/lib.bash"
plain_only fuzz "its targets are clang ASan + UBSan builds in either pass"
SECS=${GNN_FUZZ_SECONDS:-4}
JOBS=${GNN_FUZZ_JOBS:-2}

if ! command -v clang >/dev/null 2>&1; then
	skip fuzz "clang not installed (Debian: clang libclang-rt-14-dev)"
	exit 0
fi
cat >"$WORK/probe.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { (void)data; (void)size; return 0; }
EOF
if ! clang -fsanitize=fuzzer,address,undefined -o "$WORK/probe" "$WORK/probe.c" 2>"$WORK/probe.err"; then
	skip fuzz "clang cannot link -fsanitize=fuzzer (Debian: libclang-rt-14-dev): $(head -n 1 "$WORK/probe.err")"
	exit 0
fi

# A make of its own: none of the caller's flags or variables (make test, make asan).
fuzzmake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory BUILD="$BUILD" "$@"
}

targets=$(fuzzmake -s fuzz-list)
if ! fuzzmake -j"$JOBS" fuzz-build >"$WORK/build.log" 2>&1; then
	fail fuzz_build "make fuzz-build failed: $(grep -m 1 -E 'error:|undefined reference|cannot|No rule' "$WORK/build.log")"
	exit 1
fi

timeout --kill-after=10 100 env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" \
	--no-print-directory BUILD="$BUILD" -k -j"$JOBS" FUZZ_SECONDS="$SECS" fuzz-run \
	>"$WORK/run.log" 2>&1
for t in $targets; do
	line=$(grep -m 1 "^fuzz_$t: " "$WORK/run.log")
	log=$BUILD/fuzz/logs/fuzz_$t.log
	if [ -z "$line" ]; then
		fail "fuzz_$t" "no result line (make fuzz-run timed out or failed to start it)"
	elif [[ $line == *" runs, 0 crashes" ]]; then
		pass "fuzz_$t"
	else
		fail "fuzz_$t" "${line#*: }; $(grep -m 1 -E '^SUMMARY|^fuzz_proto: ' "$log" 2>/dev/null)"
	fi
done
