#!/usr/bin/env bash
# End-to-end tests of the sampler's exclusion for link prediction
# (MINIBATCH_REQ's GNN_MB_EXCLUDE, docs/sampler.md "Excluding seed edges"):
# real graph stores and a sampler on gnn-partition --edge-split outputs,
# checked from outside by tests/tools/mbcheck --exclude against the
# partition files: with exclusion no block holds an edge between a
# training pair's endpoints (either direction, the reverse relation too)
# and every other row all its neighbours; without it the same request
# does hold them; bad exclusion lists get ERROR einval and the sampler
# goes on. Synthetic tiny (one type) and tests/data/hetero-tiny (writes
# and rev_writes). Every process started here is killed on exit.
. "$(dirname "$0")/lib.bash"
MB=$TOOLS/mbcheck
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

metric() { curl -s "http://127.0.0.1:$HTTP/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

"$BIN/gnn-partition" --synthetic tiny --parts 2 --edge-split 0.85,0.05,0.10 --out "$WORK/tiny" >/dev/null 2>&1
"$BIN/gnn-partition" --input "$ROOT/tests/data/hetero-tiny" --parts 2 --edge-split 0.8,0.1,0.1 \
	--edge-relation writes --out "$WORK/ht" >/dev/null 2>&1

if serve_two tiny "$WORK/tiny"; then
	"$MB" --sampler "$URL" --parts "$WORK/tiny" --exclude 32 --fanouts=-1,-1 >"$WORK/mb-tiny" 2>&1
	cat "$WORK/mb-tiny"
	check tiny_excluded "tiny, 32 training pairs, fanouts -1,-1: no pair edge in any block with exclusion, every other neighbour kept, repeat identical" \
		bash -c "grep -q '^mbcheck: exclude relation=0 reverse=-1 pairs=32 .* pair_edges_excluded=0 .* repeat_identical=1' '$WORK/mb-tiny' &&
			 grep -q '^mbcheck: ok' '$WORK/mb-tiny'"
	check tiny_not_excluded "the same seeds without exclusion: the pairs' edges are sampled (the check can fail)" \
		bash -c "n=\$(sed -n 's/.* pair_edges_not_excluded=\([0-9]*\) .*/\1/p' '$WORK/mb-tiny'); [ \"\${n:-0}\" -gt 0 ]"
	check tiny_refused "bad relation index, pair IDs outside the graph: ERROR einval; the sampler answers afterwards" \
		bash -c "[ \$(grep -c '^mbcheck: exclude refused' '$WORK/mb-tiny') -eq 3 ] &&
			 grep -q 'sampler answers after the refusals' '$WORK/mb-tiny'"
	ex=$(metric gnn_sampler_excluded_edges_total)
	echo "gnn_sampler_excluded_edges_total=$ex"
	check tiny_metric "gnn_sampler_excluded_edges_total counts the dropped edges" [ "${ex:-0}" -gt 0 ]
	# SIGTERM: a clean exit (under the sanitizers, no leak of the exclusion's maps)
	kill -TERM "$SPID"
	wait "$SPID"
	check tiny_clean_exit "the sampler stops with exit 0 after the refusals (SIGTERM)" [ $? -eq 0 ]
else
	for t in tiny_excluded tiny_not_excluded tiny_refused tiny_metric tiny_clean_exit; do
		fail $t "sampler not ready: $(tail -n 3 "$WORK/tiny.log")"
	done
fi

if serve_two ht "$WORK/ht"; then
	"$MB" --sampler "$URL" --parts "$WORK/ht" --exclude 16 --fanouts=-1,-1 >"$WORK/mb-ht" 2>&1
	cat "$WORK/mb-ht"
	check hetero_excluded "hetero-tiny writes (reverse rev_writes): no pair edge of either relation with exclusion, sampled without; wrong types refused" \
		bash -c "grep -q '^mbcheck: exclude relation=[0-9]* reverse=[0-9]* pairs=16 .* pair_edges_excluded=0 pair_edges_not_excluded=[1-9]' '$WORK/mb-ht' &&
			 grep -q 'refused pair=(v,u): .*source and destination types' '$WORK/mb-ht' && grep -q '^mbcheck: ok' '$WORK/mb-ht'"
else
	fail hetero_excluded "sampler not ready: $(tail -n 3 "$WORK/ht.log")"
fi
