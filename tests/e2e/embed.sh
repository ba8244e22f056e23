#!/usr/bin/env bash
# Learnable node embeddings end to end (docs/embeddings.md):
#   - synthetic mag-tiny, R-GCN on 2 trainers: embeddings for the three
#     featureless types, as wide as the hidden layers (so unprojected: the
#     model's parameter count says so), train as well as one vector per
#     type (the gain needs more test papers: mag-small, README), the inference (which reads the
#     best rows from the checkpoint) agrees, every checkpoint holds the
#     shards, and a damaged shard falls back to the checkpoint before;
#   - a homogeneous synthetic graph without features (tiny --no-features):
#     GraphSAGE on embeddings alone learns to well above chance (5 classes);
#   - served: one graph store, a sampler and a trainer started by hand;
#     after training, gnn-cli embedding reads an author's best row from the
#     store, equal to that row of the last checkpoint's shard, and the
#     store's counters show the rows pulled ahead (DELTA);
#   - the run continued from its checkpoint dir with another --embed-dim is
#     refused (the embeddings are part of the model);
#   - bad configurations exit 2 saying why: --embed-dim without the graph
#     stores, an --embed-types the graph lacks, every type having features.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
CLI=$BIN/gnn-cli
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT
LIMITS=(--ready-timeout-s 120 --timeout-s 600 --stop-timeout-s 10)
RGCN=(--synthetic mag-tiny --parts 2 --samplers 1 --trainers 2 --model rgcn --lr 0.01 --hidden 64 --fanouts 10,10)

# acc MODEL OUT: the "test_acc MODEL=A" line's number (A features_only=B with --baseline).
acc() { sed -n "s/^test_acc $1=\([0-9.]*\).*$/\1/p" "$2"; }
infer_acc() { jq -r '.accuracy.test' "$1/predictions/summary.json" 2>/dev/null; }

# ---- mag-tiny: embeddings against one vector per type ------------------------------------
timeout 300 "$L" "${RGCN[@]}" --epochs 30 --workdir "$WORK/vec" "${LIMITS[@]}" >"$WORK/vec.out" 2>"$WORK/vec.err"
rc1=$?
timeout 300 "$L" "${RGCN[@]}" --epochs 30 --embed-dim 64 --workdir "$WORK/emb" "${LIMITS[@]}" >"$WORK/emb.out" 2>"$WORK/emb.err"
rc2=$?
a=$(acc rgcn "$WORK/vec.out")
b=$(acc rgcn "$WORK/emb.out")
# mag-tiny's 86 test papers are too few to show the gain (one paper is
# 0.0116; measured: 0.7674 with one vector per type, 0.7442 with
# embeddings): the gain is measured on mag-small and mag (README,
# docs/embeddings.md); here R-GCN with embeddings must train as well.
check mag_tiny_embeddings_train "mag-tiny rgcn: both exit 0, with embeddings test_acc >= 0.70 and within 0.05 of one vector per type (got $rc1 $rc2, ${a:-?} -> ${b:-?})" \
	awk -v rc1="$rc1" -v rc2="$rc2" -v a="$a" -v b="$b" 'BEGIN { exit !(rc1 == 0 && rc2 == 0 && a != "" && b != "" && b >= 0.70 && b >= a - 0.05) }'
# rows as wide as --hidden enter layer 0 unprojected (docs/model.md): the
# model has no W_t, b_t for them and no learnt vector either, so it is
# one vector per featureless type smaller than the model without
pv=$(sed -n 's/.* model .* params=\([0-9]*\) .*/\1/p' "$WORK/vec/logs/trainer-0.log" | head -n 1)
pe=$(sed -n 's/.* model .* params=\([0-9]*\) .*/\1/p' "$WORK/emb/logs/trainer-0.log" | head -n 1)
check embeddings_unprojected "--embed-dim 64 = --hidden: the model has 3 x 64 parameters fewer than one vector per type's (got ${pv:-?} -> ${pe:-?})" \
	bash -c "[ -n '$pv' ] && [ -n '$pe' ] && [ \$(( ${pv:-0} - ${pe:-0} )) -eq 192 ]"
ia=$(infer_acc "$WORK/emb")
check mag_tiny_embeddings_inference "the inference reads the learned rows: its test accuracy over every test paper is within 0.1 of the sampled one (${ia:-?} vs ${b:-?})" \
	awk -v a="$ia" -v b="$b" 'BEGIN { d = a - b; exit !(a != "" && a != "null" && b != "" && d < 0.1 && d > -0.1) }'
# the learned rows exported: per partition, each embedded type's rows and
# their original IDs, as many as the partition's nodes of that type
"$BIN/gnn-trainer" infer --data "$WORK/emb/partition" --checkpoint-dir "$WORK/emb/checkpoints" --out "$WORK/emb-out" \
	--model rgcn --layers 2 --hidden 64 --embed-dim 64 --embeddings --wait-s 60 >/dev/null 2>"$WORK/exp.err"
rc=$?
ok=$(python3 -c "
import json, struct
meta = json.load(open('$WORK/emb/partition/meta.json'))
names = [t['name'] for t in meta['node_types']]
T = len(names)
good = True
for p in range(2):
    to = meta['parts'][p]['type_offsets']
    for t, name in enumerate(names):
        if name == 'paper':
            continue
        d = open('$WORK/emb-out/part-%d/input-emb-%s.arr' % (p, name), 'rb').read()
        o = open('$WORK/emb-out/part-%d/input-emb-%s-orig-id.arr' % (p, name), 'rb').read()
        rows, cols = struct.unpack_from('<QQ', d, 16)
        orows = struct.unpack_from('<Q', o, 16)[0]
        n = to[t + 1] - to[t]
        good &= rows == n and cols == 64 and orows == n
print('yes' if good else 'no')" 2>&1)
check embeddings_exported "infer --embeddings: input-emb-TYPE.arr (64 wide) and its original IDs per partition, a row per node of each featureless type (got $rc $ok; $(tail -c 200 "$WORK/exp.err"))" \
	bash -c "[ $rc -eq 0 ] && [ '$ok' = yes ]"
check embeddings_logged "the trainers said what they embed, the stores were set up, the epoch line has embed_s" \
	bash -c "grep -q 'embeddings types=author:64,field_of_study:64,institution:64' '$WORK/emb/logs/trainer-0.log' &&
		 grep -q 'embeddings_ready' '$WORK/emb/logs/trainer-0.log' && grep -q ' embed_s=' '$WORK/emb/logs/trainer-1.log'"
check embeddings_checkpointed "every checkpoint holds the embedding shards (rows, Adam's state, best)" \
	bash -c "d=\$(ls -d '$WORK/emb/checkpoints'/epoch-* | tail -n 1); for t in author field_of_study institution; do
		 for a in rows state1 state2 steps best; do [ -f \"\$d/emb-\$t-\$a.arr\" ] || exit 1; done; done"

# a damaged shard: one byte of the newest checkpoint's author rows flipped,
# then the run continued for one more epoch: that checkpoint is set aside
# and the one before it used
newest=$(ls -d "$WORK/emb/checkpoints"/epoch-* | tail -n 1)
python3 -c "
import os
p = '$newest/emb-author-rows.arr'
with open(p, 'r+b') as f:
    f.seek(os.path.getsize(p) // 2); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 0x10]))"
timeout 300 "$L" "${RGCN[@]}" --epochs 31 --embed-dim 64 --workdir "$WORK/emb" "${LIMITS[@]}" --no-infer \
	>"$WORK/emb3.out" 2>"$WORK/emb3.err"
rc=$?
check embeddings_damaged_shard_falls_back "a flipped byte in the newest checkpoint's embedding shard: exit 0, checkpoint_fallback from it, resumed from the one before (got $rc)" \
	bash -c "[ $rc -eq 0 ] && grep -q 'checkpoint_fallback newest=$newest' '$WORK/emb/logs/trainer-0.log' &&
		 grep -q 'emb-author-rows.arr' '$WORK/emb/logs/trainer-0.log' && grep -q ' resumed epoch=' '$WORK/emb/logs/trainer-0.log'"

# the same checkpoint dir, another width: refused, nothing trained
timeout 120 "$L" "${RGCN[@]}" --epochs 30 --embed-dim 16 --workdir "$WORK/emb" "${LIMITS[@]}" --no-infer >"$WORK/emb2.out" 2>"$WORK/emb2.err"
rc=$?
check embeddings_other_width_refused "continuing with another --embed-dim: non-zero exit, checkpoint_mismatch (got $rc)" \
	bash -c "[ $rc -ne 0 ] && grep -q 'checkpoint_mismatch' '$WORK/emb/logs/trainer-0.log'"

# ---- served: gnn-cli reads a learned row from its graph store ---------------------------------
D=$WORK/served/partition
"$BIN/gnn-partition" --synthetic mag-tiny --parts 1 --out "$D" >/dev/null 2>"$WORK/sp.err"
"$BIN/gnn-graphstore" --data "$D" --part 0 --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 --workers 2 \
	2>"$WORK/sgs.log" &
PIDS+=($!)
served=1
wait_for 30 grep -q " ready part=" "$WORK/sgs.log" || served=0
if [ $served = 1 ]; then
	ST=tcp://127.0.0.1:$(port_of "$WORK/sgs.log")
	"$BIN/gnn-sampler" --graphstores "$ST" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 --workers 2 \
		2>"$WORK/ssmp.log" &
	PIDS+=($!)
	wait_for 30 grep -q " ready listen=" "$WORK/ssmp.log" || served=0
fi
if [ $served = 0 ]; then
	fail embed_served "graph store or sampler not ready: $(tail -n 2 "$WORK"/sgs.log "$WORK/ssmp.log" 2>/dev/null | tr '\n' ' ')"
else
	SMP=tcp://127.0.0.1:$(port_of "$WORK/ssmp.log")
	timeout 120 "$BIN/gnn-trainer" --samplers "$SMP" --graphstores "$ST" --model rgcn --layers 2 --fanouts 5,5 \
		--hidden 16 --epochs 3 --batch-size 256 --embed-dim 8 --embed-prefetch on --checkpoint-dir "$WORK/served/ckpt" --http-port 0 \
		--http-addr 127.0.0.1 >/dev/null 2>"$WORK/str.log"
	rc=$?
	"$CLI" embedding --store "$ST" --type author --nodes 0,5 --best >"$WORK/emb.json" 2>"$WORK/cli.err"
	rc2=$?
	last=$(ls -d "$WORK/served/ckpt"/epoch-* | tail -n 1)
	# the shard: a 64-byte header, then float32 rows of 8 in global ID order
	# (author is type 0: its rows start at the partition's first node)
	# the shard: a 64-byte header, then float32 rows of 8 in global ID order
	# (author is type 0: its rows start at the partition's first node)
	same=$(python3 -c "
import struct, json
doc = json.load(open('$WORK/emb.json'))
d = open('$last/emb-author-best.arr', 'rb').read()
want = [list(struct.unpack_from('<8f', d, 64 + 32 * i)) for i in doc['nodes']]
got = [[struct.unpack('<f', struct.pack('<f', x))[0] for x in r] for r in doc['rows']]
print('yes' if want == got and doc['type'] == 'author' and doc['dim'] == 8 and doc['array'] == 'best' else 'no')" 2>&1)
	check embed_cli_best_row "trainer exit 0, gnn-cli embedding --best: authors 0 and 5's rows, equal to the last checkpoint's best shard (got $rc $rc2 $same; $(head -c 200 "$WORK/cli.err"))" \
		bash -c "[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ '$same' = yes ]"
	# the next minibatch's rows are pulled during the step before, then
	# only those its update changed (EMB DELTA): the store's counters
	HP=$(sed -n 's/.* ready .* http_port=\([0-9]*\).*/\1/p' "$WORK/sgs.log" | head -n 1)
	curl -s --max-time 10 "http://127.0.0.1:$HP/metrics" >"$WORK/sgs.metrics"
	pulled=$(awk '$1 == "gnn_graphstore_embedding_rows_pulled_total" { print $2 }' "$WORK/sgs.metrics")
	refreshed=$(awk '$1 == "gnn_graphstore_embedding_rows_refreshed_total" { print $2 }' "$WORK/sgs.metrics")
	check embed_rows_prefetched "the store answered the changed rows of minibatches pulled ahead (DELTA), fewer than the rows it answered PULLs with (got pulled=${pulled:-?} refreshed=${refreshed:-?})" \
		awk -v p="$pulled" -v r="$refreshed" 'BEGIN { exit !(p != "" && r != "" && r > 0 && r < p) }'
	"$CLI" embedding --store "$ST" --type paper --nodes 0 >/dev/null 2>"$WORK/cli2.err"
	rc=$?
	check embed_cli_refuses_unembedded "gnn-cli embedding of a paper (no embedding): non-zero, naming it (got $rc)" \
		bash -c "[ $rc -ne 0 ] && grep -q 'paper has no embeddings' '$WORK/cli2.err'"
fi

# ---- a homogeneous graph without features ---------------------------------------------------
timeout 300 "$L" --synthetic tiny --no-features --parts 2 --samplers 1 --trainers 2 --epochs 20 --fanouts 10,5 \
	--hidden 32 --lr 0.01 --embed-dim 32 --embed-lr 0.05 --workdir "$WORK/nf" "${LIMITS[@]}" >"$WORK/nf.out" 2>"$WORK/nf.err"
rc=$?
c=$(acc graphsage "$WORK/nf.out")
check featureless_learns_from_embeddings "tiny without features, embeddings only: exit 0, test_acc >= 0.6 (chance 0.2; got $rc, ${c:-?})" \
	awk -v rc="$rc" -v c="$c" 'BEGIN { exit !(rc == 0 && c != "" && c >= 0.6) }'

# ---- bad configurations ---------------------------------------------------------------------
"$BIN/gnn-trainer" --samplers tcp://127.0.0.1:1 --embed-dim 8 >/dev/null 2>"$WORK/b1.err"
rc=$?
check embed_needs_stores "--embed-dim without --graphstores: exit 2, bad_config naming them (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'bad_config.*--graphstores' '$WORK/b1.err'"
timeout 120 "$L" --synthetic tiny --parts 1 --samplers 1 --trainers 1 --epochs 1 --embed-dim 8 --embed-types paper \
	--workdir "$WORK/b2" "${LIMITS[@]}" --no-infer >/dev/null 2>"$WORK/b2.err"
rc=$?
check embed_unknown_type "--embed-types naming a type the graph lacks: exit 2, bad_config (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'bad_config option=embed-types type=paper' '$WORK/b2/logs/trainer-0.log'"
timeout 120 "$L" --synthetic tiny --parts 1 --samplers 1 --trainers 1 --epochs 1 --embed-dim 8 \
	--workdir "$WORK/b3" "${LIMITS[@]}" --no-infer >/dev/null 2>"$WORK/b3.err"
rc=$?
check embed_nothing_to_embed "--embed-dim on a graph whose every type has features, no --embed-types: exit 2 (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'every node type has features' '$WORK/b3/logs/trainer-0.log'"
