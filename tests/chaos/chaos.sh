#!/usr/bin/env bash
# The chaos suite (tests/chaos/chaos.py, docs/reliability.md): faults
# injected into a supervised run of real processes, each scenario compared
# with an undisturbed run. Needs python3 (make deps installs it).
. "$(dirname "$0")/../e2e/lib.bash"
if ! command -v python3 >/dev/null; then
	skip chaos "python3 is not installed (make deps installs it)"
	exit 0
fi
timeout --kill-after=10 900 python3 "$(dirname "$0")/chaos.py"
