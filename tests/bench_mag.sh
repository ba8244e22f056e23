#!/usr/bin/env bash
# make bench-mag (part of make bench): the synthetic `mag` preset at
# ogbn-mag's full size (1,939,743 nodes of 4 types, 21.1M edges in 4
# relations, 42.2M stored with the reverses; 736,389 papers with 128
# features and 349 classes; 629,571 training papers) end to end with 2
# graph stores, 2 samplers and 2 trainers: R-GCN for GNN_BENCH_EPOCHS
# epochs, then the same network on each paper's own features (the
# features-only baseline), then inference over every node. Prints:
#   - partition seconds and peak memory (meta.json);
#   - trainer-0's epoch split (wait, compute, all-reduce, validation);
#   - sampled edges per second (the samplers' `served` lines over the
#     training time);
#   - the compute of a training step inside the system against `gnn-trainer
#     bench --sampler` on the same kind of blocks (a real minibatch of the
#     same graph, fanouts and batch, from a sampler started for it), in wall
#     and CPU time;
#   - every process's peak RSS and own memory;
#   - R-GCN's test accuracy (sampled, and by inference over every test
#     paper) against the features-only baseline's;
#   - then R-GCN again with learnable embeddings for the three featureless
#     types, as wide as the hidden layers (DGL's distributed R-GCN's
#     layout: the rows enter layer 0 unprojected; docs/embeddings.md): its
#     epoch split (embed_s: pulling rows and
#     pushing gradients, the stores' sparse update included), its epoch
#     over the one without (embed_epoch_ratio: one pair of runs is
#     within the machine's noise, so GNN_BENCH_ROUNDS - 1 more pairs of
#     epochs follow, alternated and without inference, each round's
#     ratio printed as embed_epoch_round, and the ratio of the rounds'
#     sums as embed_epoch_ratio_rounds), its checkpoints (how many,
#     within epochs; the seconds the ranks waited for each, and the sync
#     that ran beside training), each store's INIT, every process's
#     memory, and its test accuracy against the run without.
# Exits non-zero only when a run fails.
# Knobs: GNN_BENCH_PRESET (mag), GNN_BENCH_MODEL (rgcn; rgat), GNN_BENCH_EPOCHS
# (1), GNN_BENCH_FANOUTS (5,5), GNN_BENCH_HIDDEN (64), GNN_BENCH_LOCAL_ARGS (extra gnn-local flags),
# GNN_BENCH_EMBED_DIM (the hidden width; another width is projected to it,
# as ogbn-mag's OGB reference's 128; 0: no embedding run), GNN_BENCH_EMBED_LR
# (0.06, DGL's distributed R-GCN's --sparse-lr for ogbn-mag; gnn-trainer's
# default is 0.01: docs/embeddings.md, "The embeddings' learning rate"),
# GNN_BENCH_ROUNDS (3: pairs of epochs with and without embeddings).
# Usage: tests/bench_mag.sh [BUILD_DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
PRESET=${GNN_BENCH_PRESET:-mag}
EPOCHS=${GNN_BENCH_EPOCHS:-1}
FANOUTS=${GNN_BENCH_FANOUTS:-5,5}
HIDDEN=${GNN_BENCH_HIDDEN:-64}
EMBED_DIM=${GNN_BENCH_EMBED_DIM:-$HIDDEN}
EMBED_LR=${GNN_BENCH_EMBED_LR:-0.06}
ROUNDS=${GNN_BENCH_ROUNDS:-3}
WORK=$BUILD/bench/$PRESET-e2e
CPUS=$(nproc)
THREADS=$((CPUS / 2 > 0 ? CPUS / 2 : 1))   # gnn-local's share per trainer (2 trainers)
NAME=${GNN_BENCH_MODEL:-rgcn}
MODEL=(--model "$NAME" --fanouts "$FANOUTS" --hidden "$HIDDEN" --lr 0.01)
mkdir -p "$WORK"
# (old logs too: a service started in the background truncates its log
# only once it runs, and wait_log must not read the last run's port)
rm -rf "$WORK/run" "$WORK/run-emb" "$WORK"/run-round-* "$WORK/partition" "$WORK"/bench-*.log "$WORK"/step-bench.*
# shellcheck source=tests/bench_lib.bash
. "$ROOT/tests/bench_lib.bash"
trap bench_cleanup EXIT
port_of() { sed -n 's/.* ready .* port=\([0-9]*\) http_port=.*/\1/p' "$1" | head -n 1; }

echo "mag benchmark: preset=$PRESET model=$NAME parts=2 samplers=2 trainers=2 epochs=$EPOCHS fanouts=$FANOUTS hidden=$HIDDEN cpus=$CPUS trainer_threads=$THREADS"
t_start=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$WORK/partition.rss" "$BUILD/bin/gnn-partition" --synthetic "$PRESET" --parts 2 \
	--out "$WORK/partition" --force >"$WORK/partition.out" 2>"$WORK/partition.log" ||
	{ tail -n 5 "$WORK/partition.log" >&2; exit 1; }
jq -r '"partition seconds=\(.timing_seconds.total|.*10|round/10) generate_s=\(.timing_seconds.load|.*10|round/10) metis_s=\(.timing_seconds.partition|.*10|round/10) write_s=\(.timing_seconds.write|.*10|round/10) peak_rss_mb=\(.memory.peak_rss_bytes/1048576|round) nodes=\(.num_nodes) edges=\(.num_edges) relations=\(.relations|length) edge_cut_ratio=\(.edge_cut_ratio*1000|round/1000)"' \
	"$WORK/partition/meta.json"

# The step on real blocks: stores and one sampler on the partition, one
# minibatch of the first training papers, timed with the trainers' threads.
for p in 0 1; do
	"$BUILD/bin/gnn-graphstore" --data "$WORK/partition" --part $p --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 \
		--http-port 0 2>"$WORK/bench-gs$p.log" &
	BENCH_PIDS+=($!)
done
for p in 0 1; do wait_log "$WORK/bench-gs$p.log" ' ready part=' || exit 1; done
"$BUILD/bin/gnn-sampler" --graphstores "tcp://127.0.0.1:$(port_of "$WORK/bench-gs0.log"),tcp://127.0.0.1:$(port_of "$WORK/bench-gs1.log")" \
	--listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 2>"$WORK/bench-smp.log" &
BENCH_PIDS+=($!)
wait_log "$WORK/bench-smp.log" ' ready listen=' || exit 1
"$BUILD/bin/gnn-trainer" bench --sampler "tcp://127.0.0.1:$(port_of "$WORK/bench-smp.log")" --model "$NAME" \
	--fanouts "$FANOUTS" --hidden "$HIDDEN" --threads "$THREADS" --steps 10 >"$WORK/step-bench.out" 2>"$WORK/step-bench.log" ||
	{ tail -n 5 "$WORK/step-bench.log" >&2; exit 1; }
bench_stop
bench_ms=$(sed -n 's/^step_ms_median=//p' "$WORK/step-bench.out")
echo "step_bench $(grep '^nodes_per_hop=' "$WORK/step-bench.out") $(grep '^edges_per_block=' "$WORK/step-bench.out") step_ms_median=$bench_ms"

mem_watch_start "$BUILD" "$WORK/rss.samples"
# shellcheck disable=SC2086
"$BUILD/bin/gnn-local" --partition-dir "$WORK/partition" --samplers 2 --trainers 2 --epochs "$EPOCHS" "${MODEL[@]}" \
	--baseline --fresh --workdir "$WORK/run" ${GNN_BENCH_LOCAL_ARGS:-} >"$WORK/local.out" 2>&1 ||
	local_failed "bench_mag: gnn-local" "$WORK/local.out"
t_end=$(date +%s.%N)
mem_watch_stop

T0=$WORK/run/logs/trainer-0.log
epoch=$(grep ' epoch epoch=' "$T0" | head -n "$EPOCHS" | tail -n 1)
echo "epoch $(epoch_split <<<"$epoch")"
plain_epoch_s=$(grep -o 'epoch_s=[0-9.]*' <<<"$epoch" | cut -d= -f2)
steps=$(kv steps <<<"$epoch")
train_s=$(grep -o ' training [0-9.]* s' "$WORK/local.out" | head -n 1 | awk '{ print $2 }')
awk -v c="$(kv compute_s <<<"$epoch")" -v cpu="$(kv compute_cpu_s <<<"$epoch")" -v n="$steps" -v b="$bench_ms" -v t="$THREADS" 'BEGIN {
	w = c / n * 1000; u = cpu / n * 1000
	printf "step compute_ms_per_step=%.1f compute_cpu_ms_per_step=%.1f bench_step_ms=%.1f threads=%d ratio_wall=%.2f ratio_cpu=%.2f\n",
		w, u, b, t, w / b, u / b
}'
# The samplers' totals ("served" when they stop): the R-GCN run's first.
grep -h ' served ' "$WORK"/run/logs/sampler-*.log | head -n 2 |
	awk -v s="$train_s" '{ for (i = 1; i <= NF; i++) if ($i ~ /^sampled_edges=/) { split($i, a, "="); e += a[2] } }
	     END { printf "sampling sampled_edges=%.0f training_s=%s sampled_edges_per_s=%.0f\n", e, s, e / s }'
grep -E "^($NAME|features_only|test_acc|inference|time) " "$WORK/local.out"
infer_report "$PRESET" "$WORK/run" "$WORK/local.out"
mem_local_pids "$WORK/local.out" >"$WORK/pids"
mem_table "$WORK/pids" "$WORK/rss.samples"
echo "memory partitioner peak_rss_mb=$(( $(cat "$WORK/partition.rss") / 1024 ))"

if [ "$EMBED_DIM" -gt 0 ]; then
	rm -rf "$WORK/run-emb"
	mem_watch_start "$BUILD" "$WORK/rss-emb.samples"
	# shellcheck disable=SC2086
	"$BUILD/bin/gnn-local" --partition-dir "$WORK/partition" --samplers 2 --trainers 2 --epochs "$EPOCHS" "${MODEL[@]}" \
		--embed-dim "$EMBED_DIM" --embed-lr "$EMBED_LR" --fresh --workdir "$WORK/run-emb" ${GNN_BENCH_LOCAL_ARGS:-} >"$WORK/local-emb.out" 2>&1 ||
		local_failed "bench_mag: gnn-local with embeddings" "$WORK/local-emb.out"
	mem_watch_stop
	T0=$WORK/run-emb/logs/trainer-0.log
	epoch=$(grep ' epoch epoch=' "$T0" | head -n "$EPOCHS" | tail -n 1)
	echo "embed $(grep -o 'embeddings types=.* lr=[^ ]*' "$T0" | head -n 1) $(grep -o 'embeddings_ready .* seconds=[0-9.]*' "$T0" | head -n 1 | grep -o 'seconds=.*' | sed 's/^/setup_/')"
	echo "embed_epoch $(epoch_split <<<"$epoch")"
	# the epoch against the run without (target <= 1.3), and what its
	# checkpoints cost the ranks: write_s waited for (plus any
	# checkpoint_waited, a commit not done by the next save); shards_s the
	# stores' writers and sync_s the fsyncs, both beside training
	emb_epoch_s=$(grep -o 'epoch_s=[0-9.]*' <<<"$epoch" | cut -d= -f2)
	awk -v a="$emb_epoch_s" -v b="$plain_epoch_s" 'BEGIN { if (b > 0) printf "embed_epoch_ratio with=%.1f without=%.1f ratio=%.2f\n", a, b, a / b }'
	grep -h 'checkpoint_saved\|checkpoint_waited' "$T0" | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "=");
			if ($0 ~ /checkpoint_waited/) { if (a[1] == "seconds") q += a[2]; continue }
			if (a[1] == "seconds") s += a[2]; if (a[1] == "write_s") w += a[2]; if (a[1] == "sync_s") y += a[2];
			if (a[1] == "shards_s") h += a[2]; if (a[1] == "step" && a[2] != "0") mid++ }; if ($0 !~ /checkpoint_waited/) n++ }
		END { if (n) printf "embed_checkpoints count=%d within_epochs=%d seconds_each=%.1f waited_each=%.2f shards_each=%.1f synced_each=%.1f flush_waited=%.1f\n", n, mid, s / n, w / n, h / n, y / n, q }'
	grep -h 'embeddings_init' "$WORK"/run-emb/logs/graphstore-*.log | grep -o 'part=[0-9]* .*seconds=[0-9.]*' |
		sed 's/ op=.*seconds=/ seconds=/; s/^/embed_store_init /'
	# copy_s: the stores' copy under their lock, which the ranks wait for
	grep -h 'embeddings_snapshot_written' "$WORK"/run-emb/logs/graphstore-*.log | awk '{ for (i = 1; i <= NF; i++) {
			split($i, a, "="); if (a[1] == "seconds") s += a[2]; if (a[1] == "bytes") b += a[2]
			if (a[1] == "copy_s") { c += a[2]; if (a[2] > m) m = a[2] } }; n++ }
		END { if (n) printf "embed_store_snapshots count=%d copy_s_each=%.2f copy_s_max=%.2f seconds_each=%.1f mb_each=%.0f\n", n, c / n, m, s / n, b / n / 1048576 }'
	grep -h 'embeddings_save_streamed' "$T0" | head -n 1 | sed 's/.*embeddings_save_streamed/embed_checkpoint_streamed/' || true
	du -sm "$(ls -d "$WORK/run-emb/checkpoints"/epoch-* | tail -n 1)" | awk '{ print "embed_checkpoint_mb=" $1 }'
	a=$(sed -n "s/^test_acc $NAME=\([0-9.]*\).*/\1/p" "$WORK/local.out")
	b=$(sed -n "s/^test_acc $NAME=\([0-9.]*\).*/\1/p" "$WORK/local-emb.out")
	ia=$(jq -r '.accuracy.test * 10000 | round / 10000' "$WORK/run/predictions/summary.json" 2>/dev/null || echo "?")
	ib=$(jq -r '.accuracy.test * 10000 | round / 10000' "$WORK/run-emb/predictions/summary.json" 2>/dev/null || echo "?")
	echo "embed_accuracy sampled_with=$b sampled_without=$a inference_with=$ib inference_without=$ia"
	mem_local_pids "$WORK/local-emb.out" >"$WORK/pids-emb"
	mem_table "$WORK/pids-emb" "$WORK/rss-emb.samples" | sed 's/^memory /embed_memory /'
	sum_with=$emb_epoch_s sum_without=$plain_epoch_s
	for ((r = 2; r <= ROUNDS; r++)); do
		for kind in without with; do
			w=$WORK/run-round-$r-$kind
			extra=()
			[ "$kind" = with ] && extra=(--embed-dim "$EMBED_DIM" --embed-lr "$EMBED_LR")
			"$BUILD/bin/gnn-local" --partition-dir "$WORK/partition" --samplers 2 --trainers 2 --epochs "$EPOCHS" \
				"${MODEL[@]}" "${extra[@]}" --no-infer --fresh --workdir "$w" ${GNN_BENCH_LOCAL_ARGS:-} \
				>"$w.out" 2>&1 || local_failed "bench_mag: gnn-local, round $r $kind embeddings" "$w.out"
			rm -rf "$w/checkpoints"
		done
		a=$(grep ' epoch epoch=' "$WORK/run-round-$r-with/logs/trainer-0.log" | head -n "$EPOCHS" | tail -n 1 | kv epoch_s)
		b=$(grep ' epoch epoch=' "$WORK/run-round-$r-without/logs/trainer-0.log" | head -n "$EPOCHS" | tail -n 1 | kv epoch_s)
		awk -v r="$r" -v a="$a" -v b="$b" 'BEGIN { printf "embed_epoch_round round=%d with=%.1f without=%.1f ratio=%.2f\n", r, a, b, a / b }'
		sum_with=$(awk -v s="$sum_with" -v a="$a" 'BEGIN { print s + a }')
		sum_without=$(awk -v s="$sum_without" -v b="$b" 'BEGIN { print s + b }')
	done
	awk -v a="$sum_with" -v b="$sum_without" -v n="$ROUNDS" 'BEGIN {
		if (b > 0) printf "embed_epoch_ratio_rounds rounds=%d with=%.1f without=%.1f ratio=%.2f\n", n, a, b, a / b }'
fi
awk -v a="$t_start" -v b="$t_end" -v c="$(date +%s.%N)" 'BEGIN { printf "total seconds=%.0f without_embeddings_s=%.0f\n", c - a, b - a }'
