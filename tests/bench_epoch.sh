#!/usr/bin/env bash
# The demo's epoch time split into waiting for minibatches, computing and
# all-reducing (make bench): gnn-local on the synthetic `small` graph with
# 2 partitions, 2 samplers and 2 trainers, batch 1024, fanouts 15,10,5,
# hidden 256 (the issue's model), averaged over trainer-0's epochs after
# the first (warm-up).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
WORK=$BUILD/bench/epoch
EPOCHS=${EPOCHS:-6}
mkdir -p "$WORK"
"$BUILD/bin/gnn-local" --synthetic small --parts 2 --samplers 2 --trainers 2 --fresh --workdir "$WORK" \
	--epochs "$EPOCHS" --layers 3 --fanouts 15,10,5 --hidden 256 --batch-size 1024 >"$WORK/out.log" 2>&1 || {
	echo "bench_epoch: gnn-local failed:" >&2
	tail -n 20 "$WORK/out.log" >&2
	exit 1
}
awk '/ epoch epoch=/ {
	for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	if (v["epoch"] > 1) { n++; e += v["epoch_s"]; w += v["wait_s"]; c += v["compute_s"]; a += v["allreduce_s"]; ev += v["eval_s"] }
}
END {
	if (n == 0) { print "bench_epoch: no epoch lines" > "/dev/stderr"; exit 1 }
	printf "demo_epoch small parts=2 samplers=2 trainers=2 epochs_averaged=%d epoch_s=%.2f wait_s=%.2f compute_s=%.2f allreduce_s=%.2f eval_s=%.2f wait_fraction=%.2f compute_fraction=%.2f allreduce_fraction=%.2f\n",
		n, e / n, w / n, c / n, a / n, ev / n, w / e, c / e, a / e
}' "$WORK/logs/trainer-0.log"
grep -h " summary " "$WORK/logs/trainer-0.log" | sed 's/.* summary /demo_result /'
