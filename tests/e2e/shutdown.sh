#!/usr/bin/env bash
# Shutdown in at most 5 s (docs/reliability.md): SIGTERM ends a service
# whatever it waits on. A trainer whose sampler is frozen (SIGSTOP) and a
# sampler whose graph stores are frozen cancel their calls in flight and
# exit cleanly; a partitioner inside METIS stops at once on SIGTERM (METIS's
# own handler) and is ended by the stop watchdog on SIGINT (stop_forced);
# the next run removes the temporary output that leaves. Every process started here is
# stopped on exit.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
BG=() FROZEN=()
cleanup() {
	local p
	for p in "${FROZEN[@]}"; do kill -CONT "$p" 2>/dev/null; done
	for p in "${BG[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
LIMIT_S=5

# pid_of LOG COMPONENT: the PID gnn-local reports starting COMPONENT with.
pid_of() {
	sed -n "s/.* started component=$2 pid=\([0-9]*\) .*/\1/p" "$1" | tail -n 1
}
# stop_time PID [SIGNAL]: sends SIGNAL (TERM), prints the seconds until the
# process is gone (polled every 50 ms; 99 when it is still there after 20 s).
stop_time() {
	local t0 t1
	t0=$(date +%s.%N)
	kill -"${2:-TERM}" "$1"
	for _ in $(seq 400); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$1" 2>/dev/null && { echo 99; return; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
within() {
	awk -v t="$1" -v l="$LIMIT_S" 'BEGIN { exit !(t >= 0 && t <= l) }'
}
# took NAME SECONDS: the measured time, for docs/reliability.md.
took() {
	echo "time $1 ${2}s"
}
export LIMIT_S
export -f within
# start_run NAME: gnn-local on tiny with 2 stores, 1 sampler, 1 trainer,
# training for good; waits for the first epoch. The log is $WORK/NAME.err.
start_run() {
	"$L" --synthetic tiny --parts 2 --samplers 1 --trainers 1 --epochs 100000 --workdir "$WORK/w-$1" \
		--ready-timeout-s 60 --stop-timeout-s 10 >"$WORK/$1.out" 2>"$WORK/$1.err" &
	BG+=($!)
	wait_for 60 grep -qs 'epoch component=trainer-0' "$WORK/$1.err"
}

# ---- a trainer whose sampler froze ------------------------------------------
t=-1
if start_run trainer; then
	smp=$(pid_of "$WORK/trainer.err" sampler-0)
	tr=$(pid_of "$WORK/trainer.err" trainer-0)
	kill -STOP "$smp" && FROZEN+=("$smp")
	sleep 1.5   # its minibatch requests are now stuck in flight
	t=$(stop_time "$tr")
fi
T0=$WORK/w-trainer/logs/trainer-0.log
took trainer_stops_with_stuck_sampler "$t"
check trainer_stops_with_stuck_sampler "exit within ${LIMIT_S} s, requests abandoned, no forced stop (took ${t} s)" \
	bash -c "within $t && grep -q 'abandoning what=' '$T0' && grep -q 'stopping reason=signal' '$T0' &&
		 ! grep -q stop_forced '$T0'"

# ---- a sampler whose graph stores froze -------------------------------------
t=-1
if start_run sampler; then
	smp=$(pid_of "$WORK/sampler.err" sampler-0)
	for s in graphstore-0 graphstore-1; do
		p=$(pid_of "$WORK/sampler.err" $s)
		kill -STOP "$p" && FROZEN+=("$p")
	done
	sleep 1.5   # the trainer's requests now wait in the sampler for the stores
	t=$(stop_time "$smp")
fi
S0=$WORK/w-sampler/logs/sampler-0.log
took sampler_stops_with_stuck_stores "$t"
check sampler_stops_with_stuck_stores "exit within ${LIMIT_S} s, exit=0 logged, no forced stop (took ${t} s)" \
	bash -c "within $t && grep -q 'stopped exit=0' '$S0' && ! grep -q stop_forced '$S0'"

# ---- a partitioner inside METIS ---------------------------------------------
# The medium preset spends seconds in METIS_PartGraphKway. SIGTERM: METIS's
# own handler jumps out of it, the partitioner fails at once and removes
# its temporary output. SIGINT (ours during METIS): the stop watchdog ends
# the process (stop_forced, 130); the next run removes what it left.
OUT=$WORK/parts/medium
# in_metis SIGNAL NAME: starts the partitioner, sends SIGNAL inside METIS;
# sets t (seconds to exit) and rc. Logs in $WORK/NAME.err.
in_metis() {
	local p
	"$BIN/gnn-partition" --synthetic medium --parts 2 --out "$OUT" >"$WORK/$2.out" 2>"$WORK/$2.err" &
	p=$!
	BG+=($p)
	t=-1 rc=-1
	wait_for 120 grep -qs 'metis_start' "$WORK/$2.err" || return
	sleep 0.2
	grep -q partition_done "$WORK/$2.err" && return   # METIS was faster than the signal
	t=$(stop_time $p "$1")
	wait $p
	rc=$?
}
in_metis TERM term
took partitioner_sigterm_in_metis "$t"
check partitioner_sigterm_in_metis "exit 1 within ${LIMIT_S} s, nothing left behind (took ${t} s, rc $rc)" \
	bash -c "within $t && [ $rc -eq 1 ] && grep -q 'nothing was written' '$WORK/term.err' &&
		 ! ls -d '$OUT'* >/dev/null 2>&1"
in_metis INT int
stale=$(ls -d "$OUT".tmp-* 2>/dev/null | head -n 1)
"$BIN/gnn-partition" --synthetic tiny --parts 2 --out "$OUT" >"$WORK/next.out" 2>"$WORK/next.err"
rc2=$?
took partitioner_stop_forced "$t"
check partitioner_stop_forced "SIGINT in METIS: exit 130 within ${LIMIT_S} s with stop_forced, its temporary output removed by the next run (took ${t} s, rc $rc, next rc $rc2, stale '$stale')" \
	bash -c "within $t && [ $rc -eq 130 ] && grep -q 'ERROR .*stop_forced signal=2' '$WORK/int.err' &&
		 [ -n '$stale' ] && [ ! -e '$stale' ] && [ $rc2 -eq 0 ] && grep -q 'stale_removed path=$stale' '$WORK/next.err'"
