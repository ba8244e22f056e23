#!/usr/bin/env bash
# make bench-products: ogbn-products scale end to end on this machine
# (synthetic preset `products`: 2,449,029 nodes, 123.7M directed edges,
# 196,615 training nodes). Partitions it (METIS, 2 parts), then, for each
# feature path of GNN_BENCH_PATHS, gnn-local with 2 graph stores, 2
# samplers and 2 trainers trains one epoch (3 layers 15,10,5, hidden 256,
# batch 1024) and validates on the default sample; the sampler path, the
# first stores path and every f16 path also run `gnn-trainer infer` (every
# node's prediction, the test accuracy over the whole test split). The
# paths (docs/scale.md, "Feature movement"): `sampler` (the samplers send
# the rows: two hops), `stores:R` (--features-from stores --cache-ratio R:
# the trainers read the rows from the stores, R of the nodes from their
# hot-feature cache); a `:f16` suffix runs the path on a second partition
# output of the same graph whose rows are f16 (gnn-partition
# --feature-dtype f16); a `:tls` suffix (last) runs it with mutual TLS on
# every link (gnn-local --tls) and compares it with the same path without;
# `:tls-mbedtls` the same on libnng's own TLS engine (--tls-engine mbedtls).
# Prints, per path:
#   - the time of each stage and of the whole run (target: 30 minutes);
#   - trainer-0's epoch split (wait, compute, all-reduce, validation);
#   - compute per training step inside the system over `gnn-trainer bench`'s
#     step, measured in the same run with the trainers' thread count
#     (target <= 1.5), in wall time and in the trainer thread's CPU time;
#   - the sampled test estimate and the inference's test accuracy, and
#     what a sampled evaluation of every test node would have taken;
#   - every process's peak RSS (VmHWM) and peak anonymous memory (sampled
#     every 0.5 s), against 2x the partition output plus the model, its
#     CPU seconds and its minor page faults (memory touched the first time);
#   - the bytes over the network per minibatch, by hop (the servers'
#     `traffic` lines: every message has a graph store or a sampler at one
#     end), the cache's hit rate;
# then each stores path against the sampler path: bytes (target <= 1/5),
# epoch time (<= 0.6), the step ratio (<= 1.8), the test accuracy (within
# 0.005) and the system's summed peak RSS (no higher).
# Exits non-zero only when the run fails.
# Knobs: GNN_BENCH_BUSY=N runs N CPU-bound processes beside the run (a busy
# machine); GNN_BENCH_PRESET (products), GNN_BENCH_EPOCHS (1),
# GNN_BENCH_LOCAL_ARGS (extra gnn-local flags, e.g. "--build-budget-mb 384 --prefetch 2"),
# GNN_BENCH_PATHS ("sampler stores:0.2 stores:1 stores:0.2:f16"),
# GNN_BENCH_REUSE_PARTITION=1 (keep the last run's partition outputs),
# GNN_BENCH_NO_INFER=1 (no inference).
# Usage: tests/bench_products.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PRESET=${GNN_BENCH_PRESET:-products}
PATHS=${GNN_BENCH_PATHS:-sampler stores:0.2 stores:1 stores:0.2:f16}
EPOCHS=${GNN_BENCH_EPOCHS:-1}
BUSY=${GNN_BENCH_BUSY:-0}
WORK=$BUILD/bench/$PRESET-e2e
CPUS=$(nproc)
THREADS=$((CPUS / 2 > 0 ? CPUS / 2 : 1))   # gnn-local's share per trainer (2 trainers)
mkdir -p "$WORK"
[ -n "${GNN_BENCH_REPORT_ONLY:-}" ] || rm -rf "$WORK"/run-*
[ "${GNN_BENCH_REUSE_PARTITION:-0}" = 1 ] || rm -rf "$WORK"/partition "$WORK"/partition-f16
# shellcheck source=tests/bench_lib.bash
. "$ROOT/tests/bench_lib.bash"
trap bench_cleanup EXIT

echo "products benchmark: preset=$PRESET parts=2 samplers=2 trainers=2 epochs=$EPOCHS cpus=$CPUS trainer_threads=$THREADS busy=$BUSY paths=\"$PATHS\""
# A busy machine: BUSY processes that each keep a CPU busy until the end.
for _ in $(seq 1 "$BUSY"); do
	( trap 'exit 0' TERM; while :; do :; done ) &
	BENCH_PIDS+=($!)
done

# partition DTYPE: the partition output whose rows are DTYPE (made unless
# there), its folder into $part
partition() {
	part=$WORK/partition
	[ "$1" = f32 ] || part=$WORK/partition-$1
	[ -f "$part/meta.json" ] && return
	"$BUILD/bin/gnn-partition" --synthetic "$PRESET" --parts 2 --feature-dtype "$1" --out "$part" --force \
		>/dev/null 2>"$part.log" || { tail -n 5 "$part.log" >&2; exit 1; }
	jq -r '"partition feature_dtype=\(.feature_dtype) seconds=\(.timing_seconds.total|.*10|round/10) peak_rss_mb=\(.memory.peak_rss_bytes/1048576|round) nodes=\(.num_nodes) edges=\(.num_edges) edge_cut=\(.edge_cut)"' \
		"$part/meta.json" | sed "s|\$| bytes=$(du -sb "$part" | cut -f1)|"
}

t_start=$(date +%s.%N)
partition f32

[ -n "${GNN_BENCH_REPORT_ONLY:-}" ] ||
	"$BUILD/bin/gnn-trainer" bench --threads "$THREADS" --steps 10 >"$WORK/step-bench.out" 2>"$WORK/step-bench.log" ||
	{ tail -n 5 "$WORK/step-bench.log" >&2; exit 1; }
bench_ms=$(sed -n 's/^step_ms_median=//p' "$WORK/step-bench.out")

# traffic RUN: the network bytes per minibatch carrying features, by hop,
# from the stores' and samplers' `traffic` lines. The one-off cache fill
# is left out (printed by the trainers' feature_cache lines); presampled
# minibatches (blocks only) are not counted as minibatches, their bytes are.
traffic() {
	local run=$1
	cat "$run"/logs/graphstore-*.log "$run"/logs/sampler-*.log "$run"/logs/trainer-*.log | awk '
		function val(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] + 0 } return 0 }
		/ traffic server=graphstore / { f += val("features_received_bytes") + val("features_sent_bytes")
			o += val("received_bytes") + val("sent_bytes") - val("features_received_bytes") - val("features_sent_bytes") }
		/ traffic server=sampler / { s += val("received_bytes") + val("sent_bytes"); mb += val("minibatch_requests") }
		/ presampled / { pre += val("minibatches") }
		/ feature_cache / { fill += val("mb") * 1048576 + val("rows") * 8 }
		END {
			n = mb - pre; if (n < 1) n = 1
			printf "minibatches=%d store_features_mb=%.1f store_other_mb=%.1f sampler_mb=%.1f cache_fill_mb=%.1f total_mb=%.1f\n",
				n, (f - fill) / n / 1e6, o / n / 1e6, s / n / 1e6, fill / 1e6, (f - fill + o + s) / n / 1e6
		}'
}

# run_path NAME ARGS INFER: one run of gnn-local on the partition $part
# (with the inference when INFER is 1), then report_path.
run_path() {
	local name=$1 args=$2 infer=$3 t0 t1
	t0=$(date +%s.%N)
	mem_watch_start "$BUILD" "$WORK/rss-$name.samples"
	# shellcheck disable=SC2086
	"$BUILD/bin/gnn-local" --partition-dir "$part" --samplers 2 --trainers 2 --epochs "$EPOCHS" \
		--fresh --workdir "$WORK/run-$name" $args $([ "$infer" = 1 ] || echo --no-infer) ${GNN_BENCH_LOCAL_ARGS:-} \
		>"$WORK/local-$name.out" 2>&1 || local_failed "bench_products: gnn-local ($name)" "$WORK/local-$name.out"
	mem_watch_stop
	t1=$(date +%s.%N)
	report_path "$name" "$infer" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')"
}

# report_path NAME INFER SECONDS: the run's figures as "NAME key=value ..."
# lines, also kept in $WORK/path-NAME.
report_path() {
	local name=$1 infer=$2 secs=$3 run="$WORK/run-$1" epoch steps feats line params part_bytes
	epoch=$(grep ' epoch epoch=' "$run/logs/trainer-0.log" | tail -n 1 || true)
	steps=$(kv steps <<<"$epoch" || true)
	feats=$(grep ' features epoch=' "$run/logs/trainer-0.log" | tail -n 1 || true)
	line=$(grep ' test_evaluated ' "$run/logs/trainer-0.log" | tail -n 1 || true)
	params=$(grep -o ' params=[0-9]*' "$run/logs/trainer-0.log" | head -n 1 | cut -d= -f2 || true)
	part_bytes=$(du -sb "$(sed -n 's/.* config .* partition-dir=\([^ ]*\) .*/\1/p' "$WORK/local-$name.out")" | cut -f1)
	mem_local_pids "$WORK/local-$name.out" >"$WORK/pids-$name"
	mem_table "$WORK/pids-$name" "$WORK/rss-$name.samples" >"$WORK/memory-$name"
	{
		echo "path=$name seconds=$secs"
		echo "epoch $(epoch_split <<<"$epoch")"
		awk -v c="$(kv compute_s <<<"$epoch" || true)" -v cpu="$(kv compute_cpu_s <<<"$epoch" || true)" -v n="$steps" \
			-v b="$bench_ms" -v t="$THREADS" 'BEGIN {
			w = c / n * 1000; u = cpu / n * 1000
			printf "step compute_ms_per_step=%.1f compute_cpu_ms_per_step=%.1f bench_step_ms=%.1f threads=%d ratio_wall=%.2f ratio_cpu=%.2f\n", w, u, b, t, w / b, u / b
		}'
		echo "network $(traffic "$run") cache_hit=$(kv cache_hit <<<"$feats" || true)"
		grep -h ' feature_cache ' "$run"/logs/trainer-*.log | sed 's/.* feature_cache /cache /' || true
		echo "test sampled_test_acc=$(kv test_acc <<<"$line" || true)"
		if [ "$infer" = 1 ]; then infer_report "$PRESET" "$run" "$WORK/local-$name.out"; fi
		cat "$WORK/memory-$name"
		mem_system_sum "$WORK/memory-$name" "$part_bytes" "$params"
	} | sed "s/^/$name /" | tee "$WORK/path-$name"
}

if [ -n "${GNN_BENCH_REPORT_ONLY:-}" ]; then   # the figures of runs already in WORK (a report changed)
	for p in $GNN_BENCH_REPORT_ONLY; do report_path "$p" "$([ -f "$WORK/run-$p/predictions/summary.json" ] && echo 1 || echo 0)" 0; done
	exit 0
fi
# tls_engine PATH: the engine of a :tls (gnutls) or :tls-mbedtls path
tls_engine() { case $1 in *:tls) echo gnutls ;; *:tls-mbedtls) echo mbedtls ;; *) echo "?" ;; esac; }
stores32=0
for p in $PATHS; do
	q=${p%:tls*}
	tls=""
	[ "$q" = "$p" ] || tls="--tls --tls-engine=$(tls_engine "$p")"
	b=$q
	q=${q%:f16}
	dt=f32
	[ "$q" = "$b" ] || dt=f16
	case $q in
	sampler) args="--features-from sampler $tls" ;;
	stores:*) args="--features-from stores --cache-ratio ${q#stores:} $tls" ;;
	*) echo "bench_products: unknown path $p (sampler or stores:RATIO, either with :f16, then :tls or :tls-mbedtls)" >&2; exit 2 ;;
	esac
	infer=0
	if [ -z "${GNN_BENCH_NO_INFER:-}" ] && { [ "$q" = sampler ] || [ "$dt" = f16 ] || [ "$stores32" = 0 ]; }; then infer=1; fi
	[ "$q" = sampler ] || [ "$dt" = f16 ] || stores32=1
	partition "$dt"
	run_path "$p" "$args" "$infer"
done
t_end=$(date +%s.%N)

# Each stores path against the sampler path.
# field PATH PREFIX KEY: KEY's value on the line of path PATH starting with PREFIX.
field() { grep "^$1 $2 " "$WORK/path-$1" | kv "$3"; }
# (path files of earlier runs stay in WORK: only this run's paths count)
if [[ " $PATHS " == *" sampler "* ]] && [ -f "$WORK/path-sampler" ]; then
	for p in $PATHS; do
		[ "$p" = sampler ] && continue
		awk -v p="$p" -v b1="$(field sampler network total_mb)" -v b2="$(field "$p" network total_mb)" \
			-v e1="$(field sampler epoch epoch_s)" -v e2="$(field "$p" epoch epoch_s)" \
			-v r2="$(field "$p" step ratio_wall)" \
			-v a1="$(field sampler test inference_test_acc)" -v a2="$(field "$p" test inference_test_acc)" \
			-v s1="$(field sampler test sampled_test_acc)" -v s2="$(field "$p" test sampled_test_acc)" \
			-v m1="$(field sampler memory sum_peak_rss_mb)" -v m2="$(field "$p" memory sum_peak_rss_mb)" \
			-v c1="$(grep '^sampler memory training_system ' "$WORK/path-sampler" | kv cpu_s)" \
			-v c2="$(grep "^$p memory training_system " "$WORK/path-$p" | kv cpu_s)" 'BEGIN {
			ok = "PASS"; no = "MISS"
			printf "compare %s/sampler bytes_per_minibatch=%.2f target<=0.2 %s epoch=%.2f target<=0.6 %s step_ratio_wall=%.2f target<=1.8 %s",
				p, b2 / b1, (b2 / b1 <= 0.2 ? ok : no), e2 / e1, (e2 / e1 <= 0.6 ? ok : no), r2, (r2 <= 1.8 ? ok : no)
			if (a1 != "" && a2 != "") { d = a2 - a1; printf " inference_test_acc_diff=%+.4f target>=-0.005 %s", d, (d >= -0.005 ? ok : no) }
			else { d = s2 - s1; printf " sampled_test_acc_diff=%+.4f", d }
			printf " sum_peak_rss=%.2f target<=1 %s", m2 / m1, (m2 <= m1 ? ok : no)
			# the CPU the training system used (the inference excluded):
			# what the work cost, whatever else ran on the machine
			if (c1 > 0 && c2 > 0) printf " cpu_s=%.2f", c2 / c1
			printf "\n"
		}'
	done
fi
# Each :tls path against the same path without TLS.
for p in $PATHS; do
	b=${p%:tls*}
	[ "$b" != "$p" ] && [ -f "$WORK/path-$b" ] && [ -f "$WORK/path-$p" ] || continue
	awk -v p="$p" -v b="$b" -v e1="$(field "$b" epoch epoch_s)" -v e2="$(field "$p" epoch epoch_s)" \
		-v c1="$(grep "^$b memory training_system " "$WORK/path-$b" | kv cpu_s)" \
		-v c2="$(grep "^$p memory training_system " "$WORK/path-$p" | kv cpu_s)" 'BEGIN {
		printf "compare %s/%s epoch=%.3f (%.1f s / %.1f s)", p, b, e2 / e1, e2, e1
		if (c1 > 0 && c2 > 0) printf " cpu_s=%.3f (%.0f / %.0f)", c2 / c1, c2, c1
		printf "\n"
	}'
done
awk -v a="$t_start" -v b="$t_end" 'BEGIN { s = b - a; printf "total seconds=%.0f\n", s }'
