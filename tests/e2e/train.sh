#!/usr/bin/env bash
# End-to-end training tests through gnn-local (docs/local.md): the whole
# system as real processes on 127.0.0.1. Without Cora: bad configurations
# (gnn-trainer and gnn-local), a component dying mid-run, a failing
# partitioner, Ctrl-C, a damaged newest checkpoint, a full checkpoint
# volume (root: tmpfs), learning on the synthetic graph against the
# features-only baseline. With ../shared/datasets/cora (skipped when absent):
# accuracy with 2 partitions, 1 sampler and 2 trainers, 1 trainer against 2,
# GAT with the defaults,
# equal parameter checksums across ranks, and stop-then-resume against an
# uninterrupted run. Every gnn-local started here is stopped on exit (its
# children go with it).
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
TR=$BIN/gnn-trainer
BG=()
cleanup() {
	local p
	for p in "${BG[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
	umount "$WORK/small" "$WORK/tiny" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# Cora settings: DGL's GraphSAGE example (2 layers, fanouts 10,25, Adam)
# with stronger regularisation, which Cora's 140 training nodes need here:
# with PyTorch's initialisation (docs/model.md) seeds 1-3 gave test_acc
# 0.806, 0.801, 0.813 on 2 trainers and seed 1 0.798 on 1 (the 0.78 bar
# leaves 2-3 points; with DGL's initialisation it was 0.791-0.800); DGL's
# own settings (hidden 16-64, lr 0.01, dropout 0.5, weight decay 5e-4) gave
# 0.766-0.787. About 12 s a run.
CORA_MODEL=(--fanouts 10,25 --eval-fanouts -1,-1 --hidden 256 --lr 0.003 --dropout 0.8 --weight-decay 5e-3
	--epochs 60 --seed 1)
# Bounded waits everywhere: no run here may hang the suite.
LIMITS=(--ready-timeout-s 60 --timeout-s 300 --stop-timeout-s 10)

# pids_of LOG: the PIDs of the children gnn-local reports starting in LOG.
pids_of() {
	sed -n 's/.* started component=[^ ]* pid=\([0-9]*\) .*/\1/p' "$1" | tr '\n' ' '
}
# all_gone PID...: true when none of them is still alive.
all_gone() {
	local p
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
# summary LOG: the key=values of the last summary line in a trainer log.
summary() {
	grep ' summary ' "$1" | tail -n 1 | sed 's/.* summary //'
}
# kv KEY TEXT: one value out of "k=v k=v".
kv() {
	tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -n 1
}
# close A B POINTS: |A - B| <= POINTS / 100.
close() {
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; exit !(a != "" && b != "" && x <= d / 100 + 1e-9) }'
}
at_least() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a >= b) }'
}
export -f all_gone close at_least

# exited_within SECONDS PID: waits for the process to end (bounded); the
# exit status is then in $rc.
exited_within() {
	wait_for "$1" bash -c "! kill -0 $2 2>/dev/null" || return 1
	wait "$2"
	rc=$?
}

# ---- bad configuration: gnn-trainer directly ------------------------------
# Each must be refused with exit status 2 and a message naming the problem
# before the trainer connects to anything (the sampler URL is never dialled).
trainer_refuses() {  # NAME PATTERN ARGS...
	local name=$1 pat=$2 r
	shift 2
	timeout 20 "$TR" --rank 0 --http-port 0 "$@" >"$WORK/$name.out" 2>&1
	r=$?
	check "trainer_$name" "exit 2 and a message matching '$pat' (got $r: $(tail -n 1 "$WORK/$name.out"))" \
		bash -c "[ $r -eq 2 ] && grep -Eq -- '$pat' '$WORK/$name.out'"
}
trainer_refuses fanouts_vs_layers 'bad_config fanouts=.*layers=3' --samplers tcp://127.0.0.1:1 --layers 3 --fanouts 10,25
trainer_refuses batch_size_zero 'bad_option option=batch-size value=0' --samplers tcp://127.0.0.1:1 --batch-size 0
trainer_refuses unknown_flag 'unknown_option.*--no-such-flag' --samplers tcp://127.0.0.1:1 --no-such-flag 1
trainer_refuses missing_peers 'bad_config.*--peers' --samplers tcp://127.0.0.1:1 --world-size 2
trainer_refuses missing_samplers 'bad_config.*--samplers'

# ---- bad configuration: gnn-local -----------------------------------------
# Refused before anything starts: exit 2, the option named, no workdir made.
local_refuses() {  # NAME PATTERN ARGS...
	local name=$1 pat=$2 r
	shift 2
	timeout 20 "$L" --workdir "$WORK/bad-$name" "$@" >"$WORK/$name.out" 2>&1
	r=$?
	check "local_$name" "exit 2, a message matching '$pat', nothing started (got $r: $(tail -n 1 "$WORK/$name.out"))" \
		bash -c "[ $r -eq 2 ] && grep -Eq -- '$pat' '$WORK/$name.out' && [ ! -e '$WORK/bad-$name' ] &&
			 ! grep -q ' started ' '$WORK/$name.out'"
}
local_refuses fanouts_vs_layers 'bad_config option=--fanouts .*2 fanouts for 3 layers' --synthetic tiny \
	--layers 3 --fanouts 10,25
local_refuses batch_size_zero 'bad_option option=batch-size value=0' --synthetic tiny --batch-size 0
local_refuses unknown_flag 'unknown_option option=--no-such-flag' --synthetic tiny --no-such-flag 1
local_refuses no_trainers 'option=trainers value=0' --synthetic tiny --trainers 0
local_refuses no_samplers 'option=samplers value=0' --synthetic tiny --samplers 0
local_refuses no_graph 'give exactly one of --dataset' --parts 2
local_refuses two_graphs 'give exactly one of --dataset' --synthetic tiny --dataset "$WORK"

# A dataset folder that is not a graph: the partitioner fails, gnn-local
# exits non-zero with the partitioner's log tail and starts nothing else.
mkdir -p "$WORK/notagraph"
timeout 60 "$L" --dataset "$WORK/notagraph" --workdir "$WORK/w-nograph" "${LIMITS[@]}" >"$WORK/nograph.out" 2>&1
rc=$?
check partitioner_failure_reported "non-zero exit naming the partitioner with its log tail (got $rc)" \
	bash -c "[ $rc -ne 0 ] && grep -q 'component_failed component=partition ' '$WORK/nograph.out' &&
		 grep -q -- '--- last 20 lines of $WORK/w-nograph/logs/partition.log' '$WORK/nograph.out' &&
		 ! grep -q 'component=graphstore' '$WORK/nograph.out'"

# ---- a component dies mid-run ---------------------------------------------
# A graph store killed while the trainers run: gnn-local stops everything,
# exits 1, names the store and prints its status and log tail.
"$L" --synthetic tiny --parts 2 --samplers 1 --trainers 2 --epochs 100000 --workdir "$WORK/w-kill" \
	"${LIMITS[@]}" >"$WORK/kill.out" 2>"$WORK/kill.err" &
lpid=$!
BG+=($lpid)
rc=-1
if wait_for 60 grep -qs 'epoch component=trainer-0' "$WORK/kill.err"; then
	victim=$(sed -n 's/.* started component=graphstore-1 pid=\([0-9]*\) .*/\1/p' "$WORK/kill.err")
	kids=$(pids_of "$WORK/kill.err")
	kill -KILL "$victim"
	exited_within 30 $lpid
fi
check component_death_reported "exit 1 naming graphstore-1 with its status and log tail, no child left (got $rc)" \
	bash -c "[ $rc -eq 1 ] && grep -q 'component_failed component=graphstore-1 status=\"killed by signal 9' '$WORK/kill.err' &&
		 grep -q -- '--- last 20 lines of .*graphstore-1.log' '$WORK/kill.err' &&
		 grep -q 'gnn-graphstore ready part=1' '$WORK/kill.err' && [ -n '$kids' ] && all_gone $kids"

# ---- Ctrl-C ---------------------------------------------------------------
# SIGINT mid-training: every child stopped (trainers with their own
# "stopping reason=signal"), no PID left, exit status 130, no result block.
"$L" --synthetic tiny --parts 2 --samplers 2 --trainers 2 --epochs 100000 --workdir "$WORK/w-int" \
	"${LIMITS[@]}" >"$WORK/int.out" 2>"$WORK/int.err" &
lpid=$!
BG+=($lpid)
rc=-1
kids=
if wait_for 60 grep -qs 'epoch component=trainer-0' "$WORK/int.err"; then
	kids=$(pids_of "$WORK/int.err")
	kill -INT $lpid
	exited_within 40 $lpid
fi
check ctrl_c_stops_everything "exit 130, all $(wc -w <<<"$kids") children gone, trainers stopped by signal (got $rc)" \
	bash -c "[ $rc -eq 130 ] && [ -n '$kids' ] && all_gone $kids &&
		 grep -q 'stopping reason=signal' '$WORK/w-int/logs/trainer-0.log' &&
		 grep -q 'stopping reason=signal' '$WORK/w-int/logs/trainer-1.log' &&
		 grep -q 'exit status=130' '$WORK/int.err' && ! grep -q 'gnn-local result' '$WORK/int.out'"

# ---- checkpoints that cannot be trusted, or written ------------------------
# crc_of LOG: the params_crc of the summary in a trainer log.
crc_of() {
	kv params_crc "$(summary "$1")"
}
TINY=(--synthetic tiny --parts 2 --samplers 1 --trainers 2 "${LIMITS[@]}")
timeout 120 "$L" "${TINY[@]}" --epochs 4 --workdir "$WORK/w-ref" >/dev/null 2>&1
ref_crc=$(crc_of "$WORK/w-ref/logs/trainer-0.log")

# The newest checkpoint damaged (one flipped byte) and a dead writer's
# temporary folder left: the rerun moves the damaged one aside, says so
# naming both, resumes from the one before and ends with the parameters of
# an undisturbed run; the temporary folder is gone.
timeout 120 "$L" "${TINY[@]}" --epochs 3 --workdir "$WORK/w-dmg" >/dev/null 2>&1
CK=$WORK/w-dmg/checkpoints
printf '\x5a' | dd of="$CK/epoch-000003/params.arr" bs=1 seek=100 conv=notrunc status=none
mkdir -p "$CK/.tmp-epoch-000004-4242"
timeout 120 "$L" "${TINY[@]}" --epochs 4 --workdir "$WORK/w-dmg" >"$WORK/dmg.out" 2>&1
rc=$?
T0=$WORK/w-dmg/logs/trainer-0.log
check checkpoint_damaged_falls_back "exit 0, fallback from epoch 3 to 2 logged, resumed at 2, stale folder removed, params_crc of an undisturbed run $ref_crc (got $rc, $(crc_of "$T0"))" \
	bash -c "[ $rc -eq 0 ] && grep -q 'checkpoint_fallback newest=$CK/epoch-000003 used=$CK/epoch-000002' '$T0' &&
		 grep -q 'resumed epoch=2 ' '$T0' && [ -d '$CK/corrupt-epoch-000003' ] && [ ! -e '$CK/.tmp-epoch-000004-4242' ] &&
		 [ -n '$ref_crc' ] && [ '$(crc_of "$T0")' = '$ref_crc' ]"

# A checkpoint volume that fills up (tmpfs; needs root): with room for two
# checkpoints but not three, only the newest is kept and the write retried;
# with room for none, every epoch logs an ERROR and training goes on. Both
# runs end with the undisturbed parameters, no crash loop. (The second
# has no checkpoint for the inference to read: --no-infer.)
if [ "$(id -u)" -ne 0 ]; then
	skip checkpoint_volume_full "mounting a small tmpfs needs root"
else
	mkdir -p "$WORK/small" "$WORK/tiny"
	mount -t tmpfs -o size=6m tmpfs "$WORK/small" && mount -t tmpfs -o size=1m tmpfs "$WORK/tiny"
	timeout 120 "$L" "${TINY[@]}" --epochs 4 --workdir "$WORK/w-full" --checkpoint-dir "$WORK/small/ck" >/dev/null 2>&1
	rc=$?
	timeout 120 "$L" "${TINY[@]}" --epochs 4 --workdir "$WORK/w-none" --checkpoint-dir "$WORK/tiny/ck" --no-infer \
		>/dev/null 2>&1
	rc2=$?
	F0=$WORK/w-full/logs/trainer-0.log N0=$WORK/w-none/logs/trainer-0.log
	nfail=$(grep -c 'ERROR .*checkpoint_failed path=.*code=' "$N0")
	check checkpoint_volume_full "room for 2: exit 0, retries logged, newest kept, crc $ref_crc (got $rc, $(grep -c checkpoint_retry "$F0") retries, $(crc_of "$F0")); room for none: exit 0, 4 ERRORs (got $rc2, $nfail, $(crc_of "$N0"))" \
		bash -c "[ $rc -eq 0 ] && grep -q 'checkpoint_retry' '$F0' && [ -d '$WORK/small/ck/epoch-000004' ] &&
			 [ '$(crc_of "$F0")' = '$ref_crc' ] && [ $rc2 -eq 0 ] && [ '$nfail' -eq 4 ] &&
			 [ '$(crc_of "$N0")' = '$ref_crc' ]"
	umount "$WORK/small" "$WORK/tiny"
fi

# Progress on every epoch line: done= is the fraction of the run's steps
# (tiny: one step per epoch), eta_s= the seconds left, 0 at the end. A
# resumed run counts the epochs before the checkpoint as done (3 of 4 after
# epoch 3 here), and its ETA comes from its own pace, a number from its
# first epoch on.
progress_of() {  # progress_of LOG: "EPOCH:DONE:ETA" per epoch line
	sed -n 's/.* epoch epoch=\([0-9]*\) .* done=\([0-9.]*\) eta_s=\([0-9.]*\) .*/\1:\2:\3/p' "$1" | tr '\n' ' '
}
p_ref=$(progress_of "$WORK/w-ref/logs/trainer-0.log")
p_dmg=$(progress_of "$T0")
check epoch_lines_carry_progress "epoch lines: done=k/4 and eta_s=, 0.0 after the last (got '$p_ref'); resumed at 2: done=0.75, 1 (got '$p_dmg')" \
	bash -c "[[ '$p_ref' =~ ^1:0\.2500:[0-9]+\.[0-9]\ 2:0\.5000:[0-9]+\.[0-9]\ 3:0\.7500:[0-9]+\.[0-9]\ 4:1\.0000:0\.0\ \$ ]] &&
		[[ '$p_dmg' =~ ^3:0\.7500:[0-9]+\.[0-9]\ 4:1\.0000:0\.0\ \$ ]]"

# ---- learning, without ../shared ------------------------------------------
# GraphSAGE must learn on the synthetic graph, and learn from the
# neighbours: 20 epochs reached test_acc 0.8907 against 0.5900 for the same
# network on each node's own features (gnn-local --baseline; deterministic,
# so no load can change it). A build that drops the optimizer step, the
# gradient, or the neighbour aggregation fails one of the two bars.
timeout 120 "$L" "${TINY[@]}" --epochs 20 --baseline --workdir "$WORK/w-learn" >"$WORK/learn.out" 2>&1
rc=$?
learn=$(sed -n 's/^test_acc graphsage=\([0-9.]*\) features_only=\([0-9.]*\)$/\1 \2/p' "$WORK/learn.out")
check tiny_learns_from_neighbours "exit 0, graphsage test_acc >= 0.80 and >= 0.15 above features-only (got $rc, ${learn:-no result})" \
	bash -c "[ $rc -eq 0 ] && awk -v g='${learn% *}' -v f='${learn#* }' 'BEGIN { exit !(g != \"\" && g >= 0.80 && g >= f + 0.15) }'"
# The second model (--model gcn) learns from the neighbours too, against
# the same features-only bar.
timeout 120 "$L" "${TINY[@]}" --epochs 20 --model gcn --workdir "$WORK/w-gcn" >"$WORK/gcn.out" 2>&1
rc=$?
gcn=$(sed -n 's/^test_acc gcn=\([0-9.]*\)$/\1/p' "$WORK/gcn.out")
check tiny_gcn_learns "gnn-local --model gcn: exit 0, test_acc >= 0.80 and >= 0.15 above features-only ${learn#* } (got $rc, ${gcn:-no result})" \
	bash -c "[ $rc -eq 0 ] && awk -v g='$gcn' -v f='${learn#* }' 'BEGIN { exit !(g != \"\" && f != \"\" && g >= 0.80 && g >= f + 0.15) }'"

# Evaluation on seeded samples (--val-nodes, --test-nodes): the sizes are
# logged against the splits' (tiny: 200 valid, 1400 test), the test
# estimate's sample size reaches result.json, and the inference still
# covers every test node.
# The same run passes every sampler and trainer timeout gnn-local offers.
timeout 120 "$L" "${TINY[@]}" --epochs 2 --val-nodes 50 --test-nodes 100 --workdir "$WORK/w-eval" \
	--store-timeout-ms 7000 --store-retries 3 --store-min-mb-per-s 30 --build-budget-mb 64 --admission-wait-s 15 \
	--sampler-timeout-ms 40000 --sampler-retries 1 --peer-timeout-s 120 >"$WORK/eval.out" 2>&1
rc=$?
E0=$WORK/w-eval/logs/trainer-0.log
scfg=$(grep -o ' config .*' "$WORK/w-eval/logs/sampler-0.log" | head -n 1)
tcfg=$(grep -o ' config .*' "$E0" | head -n 1)
passed=yes
for kv in timeout-ms=7000 retries=3 store-min-mb-per-s=30 build-budget-mb=64 admission-wait-s=15; do
	[[ "$scfg " == *" $kv "* ]] || passed="no: sampler lacks $kv"
done
for kv in timeout-ms=40000 retries=1 peer-timeout-s=120; do
	[[ "$tcfg " == *" $kv "* ]] || passed="no: trainer lacks $kv"
done
check local_passes_timeouts "gnn-local's --store-*, --build-budget-mb, --admission-wait-s, --sampler-* and --peer-timeout-s reach the samplers' and trainers' configuration ($passed)" \
	[ "$passed" = yes ]
split=$(grep -o 'valid_nodes=[0-9]* of=[0-9]* test_nodes=[0-9]* of=[0-9]*' "$E0" | head -n 1)
tested=$(grep -o 'test_evaluated test_acc=[0-9.]* nodes=[0-9]* of=[0-9]*' "$E0" | head -n 1)
check tiny_eval_samples "exit 0; work_split 'valid_nodes=50 of=200 test_nodes=100 of=1400' (got '$split'), test_evaluated over 100 of 1400 (got '$tested'), result.json test_nodes 100, inference over all 1400 test nodes (got $rc)" \
	bash -c "[ $rc -eq 0 ] && [ '$split' = 'valid_nodes=50 of=200 test_nodes=100 of=1400' ] &&
		 [[ '$tested' == *' nodes=100 of=1400' ]] && [ \"\$(jq .test_nodes '$WORK/w-eval/checkpoints/result.json')\" = 100 ] &&
		 [ \"\$(jq .splits.test.labelled '$WORK/w-eval/predictions/summary.json')\" = 1400 ] &&
		 [ \"\$(jq .trainer.sampled_test_nodes '$WORK/w-eval/predictions/summary.json')\" = 100 ]"

# ---- Cora -----------------------------------------------------------------
if ! have_cora; then
	for t in cora_accuracy cora_params_equal cora_one_vs_two_trainers cora_gat_defaults component_config_error_reported \
		cora_resume; do
		skip "$t" "no Cora at $DATASETS/cora (CI has it)"
	done
	exit 0
fi
CORA=$DATASETS/cora

# 2 partitions (2 graph stores), 1 sampler, 2 trainers.
timeout 400 "$L" --dataset "$CORA" --parts 2 --samplers 1 --trainers 2 --workdir "$WORK/c2" "${CORA_MODEL[@]}" \
	"${LIMITS[@]}" >"$WORK/c2.out" 2>"$WORK/c2.err"
rc=$?
s0=$(summary "$WORK/c2/logs/trainer-0.log")
s1=$(summary "$WORK/c2/logs/trainer-1.log")
acc2=$(kv test_acc "$s0")
echo "# cora 2 trainers: $s0"
check cora_accuracy "exit 0 and test_acc >= 0.78 (got $rc, test_acc=$acc2)" \
	bash -c "[ $rc -eq 0 ] && at_least '$acc2' 0.78 &&
		 grep -q '^test_acc graphsage=$acc2' '$WORK/c2.out'"
crc0=$(kv params_crc "$s0")
crc1=$(kv params_crc "$s1")
check cora_params_equal "both ranks end with the same params_crc (rank 0 $crc0, rank 1 $crc1)" \
	bash -c "[ -n '$crc0' ] && [ '$crc0' = '$crc1' ]"

# The same with 1 trainer, on the same partitions: a comparison of the
# math, which the plain build checks (under ASan a single trainer runs in
# embed.sh, hetero.sh and shutdown.sh).
if [ "${GNN_SAN:-0}" = 1 ]; then
	skip cora_one_vs_two_trainers "run by make test (the plain build): it compares accuracies"
else
	timeout 400 "$L" --partition-dir "$WORK/c2/partition" --samplers 1 --trainers 1 --workdir "$WORK/c1" \
		"${CORA_MODEL[@]}" "${LIMITS[@]}" >"$WORK/c1.out" 2>"$WORK/c1.err"
	rc=$?
	acc1=$(kv test_acc "$(summary "$WORK/c1/logs/trainer-0.log")")
	echo "# cora 1 trainer: test_acc=$acc1"
	check cora_one_vs_two_trainers "1 and 2 trainers within 2 points (got $rc, $acc1 vs $acc2)" \
		bash -c "[ $rc -eq 0 ] && close '$acc1' '$acc2' 2"
fi

# GAT with the defaults (issue 36: 0.81 over seeds; seeds 1-5 gave
# 0.809-0.825, 0.813 on average; without the attention dropout 0.807):
# 300 steps, attention and all, train a model of the paper's class.
if [ "${GNN_SAN:-0}" = 1 ]; then
	skip cora_gat_defaults "run by make test (the plain build): an accuracy"
else
	timeout 400 "$L" --partition-dir "$WORK/c2/partition" --samplers 1 --trainers 1 --model gat --no-infer \
		--workdir "$WORK/gat" "${LIMITS[@]}" >"$WORK/gat.out" 2>"$WORK/gat.err"
	rc=$?
	accg=$(kv test_acc "$(summary "$WORK/gat/logs/trainer-0.log")")
	check cora_gat_defaults "gnn-local --model gat and no other model flag: exit 0, test_acc >= 0.79 (got $rc, $accg)" \
		bash -c "[ $rc -eq 0 ] && at_least '$accg' 0.79"
fi

# A finished run's checkpoints with another model: the trainers refuse
# them (their exit status 2), and so does gnn-local, with trainer-0's log.
timeout 120 "$L" --partition-dir "$WORK/c2/partition" --samplers 1 --trainers 2 --workdir "$WORK/c2" \
	"${CORA_MODEL[@]}" --hidden 32 "${LIMITS[@]}" >"$WORK/c2x.out" 2>"$WORK/c2x.err"
rc=$?
check component_config_error_reported "exit 2 naming trainer-0 with its log tail (got $rc)" \
	bash -c "[ $rc -eq 2 ] && grep -q 'component_failed component=trainer-[01] status=\"exit status 2\" reason=\"it rejected its configuration\"' '$WORK/c2x.err' &&
		 grep -q -- '--- last 20 lines of .*trainer-[01].log' '$WORK/c2x.err'"

# Resume: stop everything (Ctrl-C to gnn-local) after trainer-0 saved epoch
# K0, start the same command again: every rank resumes from the last saved
# epoch K, continues with K+1, and lands within 2 points of the
# uninterrupted 2-trainer run above.
K0=20
resume_cmd=("$L" --partition-dir "$WORK/c2/partition" --samplers 1 --trainers 2 --workdir "$WORK/cr"
	"${CORA_MODEL[@]}" "${LIMITS[@]}")
"${resume_cmd[@]}" >"$WORK/cr1.out" 2>"$WORK/cr1.err" &
lpid=$!
BG+=($lpid)
rc=-1
kids=
if wait_for 120 grep -qs "checkpoint_saved epoch=$K0 " "$WORK/cr/logs/trainer-0.log"; then
	kids=$(pids_of "$WORK/cr1.err")
	kill -INT $lpid
	exited_within 40 $lpid
fi
K=$(sed -n 's/.* checkpoint_saved epoch=\([0-9]*\) .*/\1/p' "$WORK/cr/logs/trainer-0.log" | tail -n 1)
stopped_ok=false
[ $rc -eq 130 ] && [ -n "$kids" ] && all_gone $kids && ! grep -q ' summary ' "$WORK/cr/logs/trainer-0.log" &&
	stopped_ok=true
timeout 400 "${resume_cmd[@]}" >"$WORK/cr2.out" 2>"$WORK/cr2.err"
rc=$?
accr=$(kv test_acc "$(summary "$WORK/cr/logs/trainer-0.log")")
first=$(sed -n 's/.* epoch epoch=\([0-9]*\) .*/\1/p' "$WORK/cr/logs/trainer-0.log" | head -n 1)
echo "# cora resume: stopped after epoch $K, went on at epoch $first, test_acc=$accr"
check cora_resume "stopped cleanly after epoch K=$K (stopped_ok=$stopped_ok), rerun exit 0 (got $rc) resuming at K+1 (got $first) on both ranks, within 2 points of $acc2 (got $accr)" \
	bash -c "$stopped_ok && [ $rc -eq 0 ] && [ -n '$K' ] && [ '$first' = $((K + 1)) ] &&
		 grep -Eq 'resumed epoch=$K( |\$)' '$WORK/cr/logs/trainer-0.log' &&
		 grep -Eq 'resumed epoch=$K( |\$)' '$WORK/cr/logs/trainer-1.log' &&
		 close '$accr' '$acc2' 2"
