#!/usr/bin/env bash
# Feature rows from the graph stores and the hot-feature cache
# (--features-from stores, --cache-ratio; docs/scale.md, "Feature movement"):
#   - synthetic tiny, 2 partitions, 2 trainers: the samplers' path, the
#     stores' path without a cache, with 30% of the nodes cached and with
#     all of them end with the same parameters (the rows are the stores'
#     bytes either way);
#   - the stores' path sends no rows through the samplers (their replies
#     shrink), the cache holds what was asked (a fraction, or a size) and
#     serves what it holds (a full cache: every row, none from the stores);
#   - f16 rows (gnn-partition --feature-dtype f16): half the bytes on disk
#     and from the samplers, the same parameters on both paths, inference
#     within a point of f32's; on Cora (0/1 rows, exact in f16) the same
#     parameters as f32's;
#   - a graph store of another graph is never read: a trainer given it
#     fails the minibatch naming it (graph_changed), and writes no result;
#   - bad settings exit 2 saying why.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
PIDS=()
trap 'for p in "${PIDS[@]}"; do stop_within "$p" 30; done; rm -rf "$WORK"' EXIT
LIMITS=(--ready-timeout-s 120 --timeout-s 300 --stop-timeout-s 10)
RUN=(--partition-dir "$WORK/part" --samplers 1 --trainers 2 --epochs 2 --no-infer "${LIMITS[@]}")

"$BIN/gnn-partition" --synthetic tiny --parts 2 --out "$WORK/part" >/dev/null 2>&1 ||
	{ fail features_partition "gnn-partition failed"; exit 0; }

crc() { sed -n 's/.* epoch epoch=2 .*params_crc=\([0-9a-f]*\).*/\1/p' "$1/logs/trainer-0.log"; }
# sent NAME RUN: the bytes a sampler sent, from its traffic line
sent() { sed -n 's/.* traffic server=sampler .* sent_bytes=\([0-9]*\) .*/\1/p' "$2/logs/$1.log"; }

for p in sampler stores:0 stores:0.3 stores:1 stores:4KB; do
	d=$WORK/run-${p/:/-}
	case $p in
	sampler) a=(--features-from sampler) ;;
	*) a=(--features-from stores --cache-ratio "${p#stores:}") ;;
	esac
	timeout 300 "$L" "${RUN[@]}" "${a[@]}" --workdir "$d" >"$d.out" 2>&1 || echo "gnn-local $p failed" >>"$WORK/failed"
done
c0=$(crc "$WORK/run-sampler")
all=$(for p in stores-0 stores-0.3 stores-1 stores-4KB; do crc "$WORK/run-$p"; done | sort -u | tr '\n' ' ')
check features_same_parameters "every path exits 0 and ends with the samplers' path's parameters (sampler ${c0:-?}; stores ${all:-?}; $(cat "$WORK/failed" 2>/dev/null))" \
	bash -c "[ ! -f '$WORK/failed' ] && [ -n '$c0' ] && [ '$all' = '$c0 ' ]"

s1=$(sent sampler-0 "$WORK/run-sampler")
s2=$(sent sampler-0 "$WORK/run-stores-0")
check features_rows_bypass_samplers "with --features-from stores the sampler's replies carry no rows: it sends under half the bytes (${s1:-?} -> ${s2:-?})" \
	awk -v a="$s1" -v b="$s2" 'BEGIN { exit !(a > 0 && b > 0 && b < a / 2) }'

T=$WORK/run-stores-0.3/logs/trainer-0.log
check features_cache_ratio "--cache-ratio 0.3: 600 of the 2,000 nodes cached, and both stores and cache served rows (a hit rate between 0 and 1)" \
	bash -c "grep -q 'feature_cache rows=600 of=2000 fraction=0.300' '$T' &&
		 grep ' features epoch=2 ' '$T' | grep -q 'cache_hit=0\.[0-9]*[1-9]' &&
		 ! grep ' features epoch=2 ' '$T' | grep -q 'rows_from_stores=0 '"
T=$WORK/run-stores-1/logs/trainer-1.log
check features_cache_full "--cache-ratio 1: every row from the cache, none from the stores" \
	bash -c "grep -q 'feature_cache rows=2000 of=2000' '$T' && grep ' features epoch=2 ' '$T' | grep -q 'rows_from_stores=0 cache_hit=1.000'"
dim=$(jq -r '.node_types[0].feat_dim // .feat_dim' "$WORK/part/meta.json")
want=$((4096 / (4 * dim)))
check features_cache_bytes "--cache-ratio 4KB: 4096 bytes of $dim-float rows: $want rows cached" \
	grep -q "feature_cache rows=$want of=2000" "$WORK/run-stores-4KB/logs/trainer-0.log"

# ---- a store of another graph is not read -------------------------------------------------
# graph stores 0 and 1 of the partition, a sampler on them; the trainer is
# given store 0 and a store serving partition 1 of another graph (seed 2)
"$BIN/gnn-partition" --synthetic tiny --parts 2 --seed 2 --out "$WORK/other" >/dev/null 2>&1
start_store() {  # PART DIR LOG
	"$BIN/gnn-graphstore" --data "$2" --part "$1" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 2>"$3" &
	PIDS+=($!)
}
start_store 0 "$WORK/part" "$WORK/gs0.log"
start_store 1 "$WORK/part" "$WORK/gs1.log"
start_store 1 "$WORK/other" "$WORK/gsx.log"
for f in gs0 gs1 gsx; do wait_for 30 grep -q " ready part=" "$WORK/$f.log"; done
g0=tcp://127.0.0.1:$(port_of "$WORK/gs0.log")
g1=tcp://127.0.0.1:$(port_of "$WORK/gs1.log")
gx=tcp://127.0.0.1:$(port_of "$WORK/gsx.log")
"$BIN/gnn-sampler" --graphstores "$g0,$g1" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
	--workers 2 2>"$WORK/smp.log" &
PIDS+=($!)
wait_for 30 grep -q " ready listen=" "$WORK/smp.log"
sm=tcp://127.0.0.1:$(port_of "$WORK/smp.log")
# the right stores: /metrics counts the rows by source and the cache's size
"$BIN/gnn-trainer" --samplers "$sm" --graphstores "$g0,$g1" --features-from stores --cache-ratio 0.5 --epochs 1 \
	--http-addr 127.0.0.1 --http-port 0 --wait-s 60 --on-finish serve >/dev/null 2>"$WORK/trm.log" &
PIDS+=($!)
wait_for 60 grep -q ' summary ' "$WORK/trm.log"
hp=$(sed -n 's/.* http_listening .* port=\([0-9]*\) .*/\1/p' "$WORK/trm.log" | head -n 1)
curl -s "http://127.0.0.1:${hp:-1}/metrics" >"$WORK/metrics.txt"
kill -TERM "${PIDS[-1]}" 2>/dev/null
check features_metrics "/metrics: rows from the cache and from the stores counted, the cache's 1,000 rows (of 2,000) and their bytes" \
	awk '/^gnn_trainer_feature_rows_total\{source="cache"\}/ { c = $2 } /^gnn_trainer_feature_rows_total\{source="graphstore"\}/ { g = $2 }
	     /^gnn_trainer_feature_cache_rows / { r = $2 } /^gnn_trainer_feature_cache_bytes / { b = $2 }
	     END { exit !(c > 0 && g > 0 && r == 1000 && b > 0) }' "$WORK/metrics.txt"
timeout 120 "$BIN/gnn-trainer" --samplers "$sm" --graphstores "$g0,$gx" --features-from stores --epochs 1 \
	--checkpoint-dir "$WORK/ckx" --http-addr 127.0.0.1 --http-port 0 --wait-s 60 >/dev/null 2>"$WORK/trx.log"
rc=$?
check features_other_graph_refused "a store of another graph: the trainer exits non-zero, logs graph_changed naming it, writes no result (got $rc)" \
	bash -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'graph_changed store=graphstore-1' '$WORK/trx.log' &&
		 [ ! -f '$WORK/ckx/result.json' ]"

# ---- half-width rows (gnn-partition --feature-dtype f16) ---------------------------------------
# synthetic tiny's rows are real numbers: f16 rounds them; the files and the
# samplers' replies halve, both paths still agree, and layer-wise inference
# over every node lands within a point of f32's
"$BIN/gnn-partition" --synthetic tiny --parts 2 --feature-dtype f16 --out "$WORK/part16" >/dev/null 2>&1 ||
	echo "gnn-partition --feature-dtype f16 failed" >>"$WORK/failed16"
for p in sampler stores:0.3; do
	d=$WORK/h16-${p/:/-}
	case $p in
	sampler) a=(--features-from sampler) ;;
	*) a=(--features-from stores --cache-ratio "${p#stores:}") ;;
	esac
	timeout 300 "$L" "${RUN[@]:2}" --partition-dir "$WORK/part16" "${a[@]}" --workdir "$d" >"$d.out" 2>&1 ||
		echo "gnn-local f16 $p failed" >>"$WORK/failed16"
done
b32=$(stat -c %s "$WORK/part/part-0/feat-node.arr")
b16=$(stat -c %s "$WORK/part16/part-0/feat-node.arr")
h1=$(crc "$WORK/h16-sampler")
h2=$(crc "$WORK/h16-stores-0.3")
s16=$(sent sampler-0 "$WORK/h16-sampler")
check features_f16_rows "f16: meta.json says so, the row files are half (64-byte header aside: $b32 -> $b16), both paths end alike (${h1:-?} ${h2:-?}), the sampler sends under 0.75 of f32's bytes (32-wide rows: the blocks weigh as much) (${s1:-?} -> ${s16:-?}) $(cat "$WORK/failed16" 2>/dev/null)" \
	bash -c "[ ! -f '$WORK/failed16' ] && [ \"\$(jq -r .feature_dtype '$WORK/part16/meta.json')\" = f16 ] &&
		 [ \$(( ($b32 - 64) / 2 + 64 )) -eq $b16 ] && [ -n '$h1' ] && [ '$h1' = '$h2' ] &&
		 awk -v a='$s1' -v b='$s16' 'BEGIN { exit !(a > 0 && b > 0 && b < 0.75 * a) }'"
for d in part part16; do
	timeout 300 "$L" --partition-dir "$WORK/$d" --samplers 1 --trainers 2 "${LIMITS[@]}" --workdir "$WORK/i-$d" \
		>"$WORK/i-$d.out" 2>&1
done
a32=$(sed -n 's/^inference *test_acc=\([0-9.]*\) .*/\1/p' "$WORK/i-part.out")
a16=$(sed -n 's/^inference *test_acc=\([0-9.]*\) .*/\1/p' "$WORK/i-part16.out")
check features_f16_accuracy "f16 rows: inference's test accuracy over every node within 1 point of f32's (${a32:-?} -> ${a16:-?})" \
	awk -v a="$a32" -v b="$a16" 'BEGIN { d = a - b; exit !(a > 0 && b > 0 && d < 0.01 && d > -0.01) }'
# Cora's bag-of-words rows are 0s and 1s, which f16 holds exactly: the
# same parameters as f32's, on both paths
if have_cora; then
	for t in 32 16; do
		"$BIN/gnn-partition" --input "$DATASETS/cora" --parts 2 --feature-dtype "f$t" --out "$WORK/cora$t" >/dev/null 2>&1
	done
	for r in 32:sampler 16:sampler 16:stores; do
		timeout 300 "$L" --partition-dir "$WORK/cora${r%%:*}" --samplers 1 --trainers 2 --epochs 3 --no-infer "${LIMITS[@]}" \
			--features-from "${r#*:}" --workdir "$WORK/cr-${r/:/-}" >/dev/null 2>&1
	done
	k=$(for r in 32-sampler 16-sampler 16-stores; do
		sed -n 's/.* summary .*params_crc=\([0-9a-f]*\).*/\1/p' "$WORK/cr-$r/logs/trainer-0.log"; done | tr '\n' ' ')
	check features_f16_cora_exact "Cora in f16 (its 0/1 rows exact): f32 and f16 runs, samplers' path and stores', end with one params_crc (${k:-?})" \
		bash -c "set -- $k; [ \$# -eq 3 ] && [ \"\$1\" = \"\$2\" ] && [ \"\$1\" = \"\$3\" ]"
else
	skip features_f16_cora_exact "no Cora at $DATASETS/cora (CI has it)"
fi

# ---- bad settings ---------------------------------------------------------------------------
"$BIN/gnn-trainer" --samplers tcp://127.0.0.1:1 --features-from stores >/dev/null 2>"$WORK/b1.err"
rc1=$?
"$BIN/gnn-trainer" --samplers tcp://127.0.0.1:1 --cache-ratio 0.2 >/dev/null 2>"$WORK/b2.err"
rc2=$?
"$BIN/gnn-trainer" --samplers tcp://127.0.0.1:1 --graphstores tcp://127.0.0.1:2 --features-from stores \
	--cache-ratio 1.5 >/dev/null 2>"$WORK/b3.err"
rc3=$?
check features_bad_settings "exit 2 with bad_config: stores without their URLs, a cache without --features-from stores, a ratio of 1.5 (got $rc1 $rc2 $rc3)" \
	bash -c "[ $rc1 -eq 2 ] && grep -q 'bad_config.*--graphstores' '$WORK/b1.err' &&
		 [ $rc2 -eq 2 ] && grep -q 'bad_config.*needs --features-from stores' '$WORK/b2.err' &&
		 [ $rc3 -eq 2 ] && grep -q 'bad_config cache_ratio=\"1.5\"' '$WORK/b3.err'"
