# bench_lib.bash - what the gnn-local benchmarks share (sourced):
# background processes, per-process peak memory, and inference against
# sampled evaluation.
#   BENCH_PIDS+=($!)             a background process the benchmark started
#   bench_stop                   kills and reaps them
#   bench_cleanup                the EXIT trap: mem_watch_stop, bench_stop
#   wait_log FILE PATTERN        waits up to 300 s for PATTERN in a log
#   mem_watch_start BUILD FILE   samples every process running a BUILD/bin/gnn-*
#                                binary twice a second: "pid VmHWM_kB RssAnon_kB cpu_ticks minor_faults"
#   mem_watch_stop               ends the sampler
#   mem_table PIDS FILE          one "memory NAME peak_rss_mb= peak_anon_mb= cpu_s= minor_faults=
#                                late_faults=" line per process of PIDS ("name pid" lines), sorted
#   mem_system_sum MEMORY PART_BYTES PARAMS [WHAT]
#                                the "memory training_system" line: mem_table's lines (MEMORY)
#                                summed, inference workers left out, against 2x PART_BYTES
#                                plus the model (PARAMS x 16 bytes); WHAT names the reference
#   local_failed WHAT OUT        a gnn-local run (WHAT) failed: ends the sampler, prints
#                                its output's (OUT) last 20 lines, exits 1
#   epoch_split                  a trainer's `epoch` line (stdin) from its loss on: the epoch
#                                split (epoch_s, wait_s, compute_s, allreduce_s, eval_s, ...)
# VmHWM is the kernel's own peak and counts mapped files (a graph store's
# partition); RssAnon is the process's own memory, sampled, so a peak
# shorter than half a second can be missed. cpu_s is the process's user
# plus system CPU time at its last sample (up to half a second short): on
# a shared machine it says what the work cost where wall time also
# counts the other tenants. minor_faults (the kernel's count, as perf's
# page-faults event, at the last sample) is how often the process touched
# memory it had not touched before; late_faults counts those of the second
# half of the process's samples: memory that grows to its peak faults
# early, fresh buffers per message fault all the time and show here.
MEM_WATCH_PID=
BENCH_PIDS=()

bench_stop() {
	local p
	for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${BENCH_PIDS[@]}" 2>/dev/null || true
	BENCH_PIDS=()
}

bench_cleanup() {
	mem_watch_stop
	bench_stop
}

wait_log() {
	local file=$1 pat=$2
	for _ in $(seq 1 600); do
		grep -qs -- "$pat" "$file" && return 0
		sleep 0.5
	done
	echo "timed out after 300 s waiting for '$pat' in $file:" >&2
	tail -n 5 "$file" >&2
	return 1
}

mem_watch_start() {
	local build=$1 out=$2
	( trap 'exit 0' TERM
	  while :; do
		for d in /proc/[0-9]*; do
			case $(readlink "$d/exe" 2>/dev/null) in "$build"/bin/gnn-*) ;; *) continue ;; esac
			# /proc/PID/stat after "PID (comm) ": $8 minflt, $12 utime, $13 stime
			awk -v p="${d#/proc/}" -v st="$(awk '{ sub(/^.*\) /, ""); print $12 + $13, $8 }' "$d/stat" 2>/dev/null)" \
				'/^VmHWM|^RssAnon/ { v[$1] = $2 }
				END { split(st, s, " "); if (v["VmHWM:"] != "") print p, v["VmHWM:"], v["RssAnon:"], s[1] + 0, s[2] + 0 }' \
				"$d/status" 2>/dev/null || true
		done
		sleep 0.5
	  done ) >"$out" &
	MEM_WATCH_PID=$!
}

mem_watch_stop() {
	[ -n "$MEM_WATCH_PID" ] || return 0
	kill "$MEM_WATCH_PID" 2>/dev/null || true
	wait "$MEM_WATCH_PID" 2>/dev/null || true
	MEM_WATCH_PID=
}

# gnn-local's "started component=NAME pid=PID" lines as "NAME PID".
mem_local_pids() {
	grep -o 'started component=[^ ]* pid=[0-9]*' "$1" | sed 's/started component=//; s/ pid=/ /'
}

mem_table() {
	awk -v hz="$(getconf CLK_TCK)" 'FNR == NR { name[$2] = $1; next }
	     ($1 in name) { if ($2 > hwm[$1]) hwm[$1] = $2; if ($3 > anon[$1]) anon[$1] = $3; if ($4 > cpu[$1]) cpu[$1] = $4
			    if ($5 > flt[$1]) flt[$1] = $5; seen[$1, ++ns[$1]] = flt[$1] }
	     END { for (p in hwm) printf "memory %-13s peak_rss_mb=%.0f peak_anon_mb=%.0f cpu_s=%.1f minor_faults=%d late_faults=%d\n", name[p], hwm[p] / 1024, anon[p] / 1024, cpu[p] / hz, flt[p], flt[p] - seen[p, int((ns[p] + 1) / 2)] }' \
		"$1" "$2" | sort
}

mem_system_sum() {
	awk -v part="$2" -v params="${3:-0}" -v what="${4:-2x the partition output + the model}" '$2 !~ /^infer/ {
			split($3, r, "="); split($4, a, "="); split($5, c, "="); split($6, f, "="); split($7, l, "=")
			tr += r[2]; ta += a[2]; tc += c[2]; tf += f[2]; tl += l[2]
		}
		END {
			ref = (2 * part + 16 * params) / 1048576   # the model: parameters, gradients, Adam moments, best copy
			printf "memory training_system sum_peak_rss_mb=%.0f sum_peak_anon_mb=%.0f reference_mb=%.0f (%s) ratio=%.2f cpu_s=%.0f minor_faults=%d late_faults=%d\n",
				tr, ta, ref, what, tr / ref, tc, tf, tl
		}' "$1"
}

local_failed() {
	mem_watch_stop
	echo "$1 failed:" >&2
	tail -n 20 "$2" >&2
	exit 1
}

epoch_split() { sed 's/.* epoch epoch=[0-9]* epochs=[0-9]* //'; }

# kv KEY: KEY's value in the key=value line on stdin.
kv() { grep -o " $1=[^ ]*" | head -n 1 | cut -d= -f2; }

# infer_report PRESET WORKDIR LOCAL_OUT: the test accuracies (inference over
# every test node; trainer-0's sampled evaluation, test_evaluated) and the
# inference's time against the sampled path's for every node, at the rate
# the sampled evaluation measured.
infer_report() {
	local preset=$1 work=$2 out=$3 line s
	line=$(grep ' test_evaluated ' "$work/logs/trainer-0.log" | tail -n 1)
	s=$(grep -o ' inferred .*' "$out" | kv seconds)
	jq -r --arg sacc "$(kv test_acc <<<"$line")" --arg sn "$(kv nodes <<<"$line")" \
		--arg ss "$(kv seconds <<<"$line")" --arg rate "$(kv nodes_per_s <<<"$line")" --arg s "$s" --arg p "$preset" '
	  "test inference_test_acc=\(.accuracy.test*10000|round/10000) over all \(.splits.test.labelled) test nodes; sampled_test_acc=\($sacc) over \($sn) in \($ss) s",
	  "inference preset=\($p) nodes=\(.nodes) workers=\(.workers) seconds=\($s) sampled_path_seconds=\(.nodes/($rate|tonumber)*10|round/10) (every node at the sampled evaluation'"'"'s \($rate) nodes/s) ratio=\(.nodes/($rate|tonumber)/($s|tonumber)*10|round/10)"' \
		"$work/predictions/summary.json"
}
