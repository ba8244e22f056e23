#!/usr/bin/env bash
# The network-fault scenarios (tests/net/netfaults.py, docs/reliability.md,
# "Network faults"): the chaos suite's run with every process on an
# emulated host of its own (network namespaces, veth pairs, a bridge), one
# network fault per scenario. `make test-net` runs it on the plain build;
# not part of tests/run.sh (root, namespaces; about 4 minutes). Prints
# SKIP lines and exits 0 where namespaces or iptables are unavailable.
. "$(dirname "$0")/../e2e/lib.bash"
if ! command -v python3 >/dev/null || ! command -v ip >/dev/null || ! command -v iptables >/dev/null; then
	skip net "python3, ip (iproute2) and iptables are needed (make deps installs them)"
	exit 0
fi
timeout --kill-after=10 480 python3 "$(dirname "$0")/netfaults.py" "$@"
