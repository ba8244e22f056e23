#!/usr/bin/env bash
# Sampling benchmark: minibatches through the sampler service (2 graph
# stores + 1 sampler on loopback, several requests in flight) next to the
# same minibatches built in one process by the same core code over the
# partitions mapped in memory (`gnn-sampler bench`), in the same run, and
# the ratio (target: distributed >= 0.5 x in-process). Also the feature
# bytes/s delivered against one thread gathering the same rows in memory.
#
# With openssl, the same minibatches again through 2 other graph stores
# and a sampler with mutual TLS on every link (docs/security.md), once on
# each TLS engine (gnutls, the default; mbedtls, libnng's own), and the
# ratios TLS / plain (target: gnutls >= 0.75; GNN_BENCH_TLS=0 skips them).
#
# Graph: synthetic `small` (100,000 nodes, 2,000,000 directed edges, 100
# features) in 2 partitions; batch 1024, fanouts 15,10,5 (input layer first).
# Usage: tests/bench_sampling.sh [BUILD_DIR]
# Knobs: GNN_BENCH_MINIBATCHES (100), GNN_BENCH_INFLIGHT (4), GNN_BENCH_PRESET (small),
# GNN_BENCH_TLS (1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PRESET=${GNN_BENCH_PRESET:-small}
N=${GNN_BENCH_MINIBATCHES:-100}
INFLIGHT=${GNN_BENCH_INFLIGHT:-4}
CPUS=$(nproc)
DATA=$BUILD/bench/sampling-$PRESET-2
WORK=$(mktemp -d /tmp/gnn-bench-sampling.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
. "$ROOT/tests/proc.bash"

wait_log() {  # FILE PATTERN SECONDS
	local deadline=$((SECONDS + $3))
	until grep -q "$2" "$1" 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			echo "bench_sampling: gave up waiting for '$2' in $1:" >&2
			tail -n 5 "$1" >&2
			exit 1
		fi
		sleep 0.2
	done
}

echo "sampling benchmark: preset=$PRESET parts=2 batch=1024 fanouts=15,10,5 minibatches=$N inflight=$INFLIGHT cpus=$CPUS"
if [ ! -f "$DATA/meta.json" ]; then
	"$BUILD/bin/gnn-partition" --synthetic "$PRESET" --parts 2 --out "$DATA" --force >/dev/null 2>"$WORK/partition.log"
fi

# services NAME HOST [tls flags]: 2 graph stores and a sampler, dialled by
# HOST (TLS: localhost, the certificates' name); then the distributed
# measurement into $WORK/NAME; the services are stopped after it.
services() {
	local name=$1 host=$2 p0 p1 p url pids=()
	shift 2
	p0=$(free_port) p1=$(free_port)
	for p in 0 1; do
		"$BUILD/bin/gnn-graphstore" --data "$DATA" --part $p --listen "tcp://127.0.0.1:$([ $p = 0 ] && echo $p0 || echo $p1)" \
			--http-addr 127.0.0.1 --http-port 0 "$@" 2>"$WORK/$name-store$p.log" &
		pids+=($!)
	done
	"$BUILD/bin/gnn-sampler" --graphstores "tcp://$host:$p0,tcp://$host:$p1" --listen tcp://127.0.0.1:0 \
		--http-addr 127.0.0.1 --http-port 0 "$@" 2>"$WORK/$name-sampler.log" &
	pids+=($!)
	PIDS+=("${pids[@]}")
	wait_log "$WORK/$name-sampler.log" " ready listen=" 120
	url="tcp://$host:$(sed -n 's/.* ready listen=.* port=\([0-9]*\) .*/\1/p' "$WORK/$name-sampler.log")"
	"$BUILD/tests/bench_sampling" --sampler "$url" --parts "$DATA" --minibatches "$N" --inflight "$INFLIGHT" "$@" \
		>"$WORK/$name" 2>"$WORK/$name.log"
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
}
services dist 127.0.0.1
cat "$WORK/dist"
TLS=${GNN_BENCH_TLS:-1}
if [ "$TLS" = 1 ] && command -v openssl >/dev/null; then
	C=$WORK/certs
	mkdir -p "$C"
	ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
	printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$C/node.ext"
	openssl req -x509 "${ec[@]}" -keyout "$C/ca.key" -out "$C/ca.crt" -days 30 -subj "/CN=bench" 2>/dev/null
	openssl req "${ec[@]}" -keyout "$C/node.key" -out "$C/node.csr" -subj "/CN=node" 2>/dev/null
	openssl x509 -req -in "$C/node.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial -out "$C/node.crt" \
		-days 30 -extfile "$C/node.ext" 2>/dev/null
	for engine in gnutls mbedtls; do
		services "tls-$engine" localhost --tls-ca "$C/ca.crt" --tls-cert "$C/node.crt" --tls-key "$C/node.key" \
			--tls-engine $engine
		cat "$WORK/tls-$engine"
	done
else
	TLS=0
fi
# Nothing else runs from here on.
"$BUILD/bin/gnn-sampler" bench --parts "$DATA" --minibatches "$N" --threads 1 2>/dev/null | tee "$WORK/local1"
"$BUILD/bin/gnn-sampler" bench --parts "$DATA" --minibatches "$N" --threads "$CPUS" 2>/dev/null | tee "$WORK/localP"

val() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$1"; }
awk -v d="$(val "$WORK/dist" minibatches_per_s)" -v de="$(val "$WORK/dist" edges_per_s)" \
	-v l1="$(val "$WORK/local1" minibatches_per_s)" -v lp="$(val "$WORK/localP" minibatches_per_s)" \
	-v df="$(val "$WORK/dist" feature_bytes_per_s)" -v g="$(grep bench_gather "$WORK/dist" | sed -n 's/.* bytes_per_s=\([0-9.]*\).*/\1/p')" \
	-v cpus="$CPUS" -v k="$INFLIGHT" 'BEGIN {
	printf "result distributed minibatches_per_s=%.2f sampled_edges_per_s=%.0f (%d in flight, 2 stores + sampler + client on %d CPUs)\n", d, de, k, cpus
	printf "result in_process minibatches_per_s=%.2f (1 thread) %.2f (%d threads)\n", l1, lp, cpus
	printf "ratio distributed/in_process_1_thread=%.2f target>=0.5 %s\n", d / l1, (d / l1 >= 0.5 ? "OK" : "UNDER")
	printf "ratio distributed/in_process_%d_threads=%.2f\n", cpus, d / lp
	printf "features distributed_bytes_per_s=%.0f memory_gather_bytes_per_s=%.0f (1 thread) ratio=%.3f\n", df, g, df / g
}'
if [ "$TLS" = 1 ]; then
	for engine in gnutls mbedtls; do
		t=$WORK/tls-$engine
		awk -v e=$engine -v d="$(val "$WORK/dist" minibatches_per_s)" -v t="$(val "$t" minibatches_per_s)" \
			-v df="$(val "$WORK/dist" feature_bytes_per_s)" -v tf="$(val "$t" feature_bytes_per_s)" \
			-v dl="$(val "$WORK/dist" latency_ms_p50)" -v tl="$(val "$t" latency_ms_p50)" 'BEGIN {
			printf "result tls engine=%s minibatches_per_s=%.2f feature_bytes_per_s=%.0f latency_ms_p50=%.1f (plain: %.2f, %.0f, %.1f)\n", e, t, tf, tl, d, df, dl
			if (e == "gnutls")
				printf "ratio tls/plain engine=%s minibatches_per_s=%.2f target>=0.75 %s\n", e, t / d, (t / d >= 0.75 ? "OK" : "UNDER")
			else
				printf "ratio tls/plain engine=%s minibatches_per_s=%.2f\n", e, t / d
		}'
	done
fi
