#!/usr/bin/env bash
# One nng link's throughput, plain and over TLS on each engine, in the same
# run (tests/tools/tlsbench: replies of SIZE bytes over loopback, one at a
# time; docs/scale.md, "The cost of TLS"), and what TLS adds per 16 KiB
# record (the unit nng 1.5.2's TLS layer moves): CPU of both ends, from
# cpu_s_per_gb. Medians of GNN_BENCH_TLS_REPEAT (3) runs of 3 s each.
# Usage: tests/bench_tls.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
REPEAT=${GNN_BENCH_TLS_REPEAT:-3}
if ! command -v openssl >/dev/null; then
	echo "bench_tls: openssl is not installed (make deps installs it): skipped"
	exit 0
fi
WORK=$(mktemp -d /tmp/gnn-bench-tls.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$WORK/node.ext"
openssl req -x509 "${ec[@]}" -keyout "$WORK/ca.key" -out "$WORK/ca.crt" -days 30 -subj "/CN=bench" 2>/dev/null
openssl req "${ec[@]}" -keyout "$WORK/node.key" -out "$WORK/node.csr" -subj "/CN=node" 2>/dev/null
openssl x509 -req -in "$WORK/node.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" -CAcreateserial \
	-out "$WORK/node.crt" -days 30 -extfile "$WORK/node.ext" 2>/dev/null
TLS=(--tls-ca "$WORK/ca.crt" --tls-cert "$WORK/node.crt" --tls-key "$WORK/node.key")

echo "tls benchmark: one link, replies over loopback, repeat=$REPEAT cpus=$(nproc)"
for size in 16384 262144 4194304; do
	for _ in $(seq 1 "$REPEAT"); do   # the engines interleaved, so that drift hits all
		"$BUILD/tests/tlsbench" --size $size --seconds 3 2>/dev/null
		for e in gnutls mbedtls; do
			"$BUILD/tests/tlsbench" --size $size --seconds 3 "${TLS[@]}" --tls-engine $e 2>/dev/null
		done
	done
done | tee "$WORK/runs"
# median SIZE TLS KEY
median() {
	grep " tls=$2 size=$1 " "$WORK/runs" | sed -n "s/.* $3=\([0-9.]*\).*/\1/p" | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
for size in 16384 262144 4194304; do
	p=$(median $size off mb_per_s) pc=$(median $size off cpu_s_per_gb)
	for e in gnutls mbedtls; do
		t=$(median $size $e mb_per_s) tc=$(median $size $e cpu_s_per_gb)
		awk -v s=$size -v e=$e -v p="$p" -v t="$t" -v pc="$pc" -v tc="$tc" 'BEGIN {
			printf "result tls engine=%s size=%d mb_per_s=%.0f plain=%.0f ratio=%.2f cpu_s_per_gb=%.2f plain=%.2f tls_us_per_16k_record=%.1f\n",
				e, s, t, p, t / p, tc, pc, (tc - pc) * 16384 / 1e3
		}'
	done
done
