# bench_mem.bash - per-process peak memory for the benchmarks (sourced).
#   mem_watch_start BUILD FILE   samples every process running a BUILD/bin/gnn-*
#                                binary twice a second: "pid VmHWM_kB RssAnon_kB"
#   mem_watch_stop               ends the sampler
#   mem_table PIDS FILE          one "memory NAME peak_rss_mb= peak_anon_mb=" line
#                                per process of PIDS ("name pid" lines), sorted
# VmHWM is the kernel's own peak and counts mapped files (a graph store's
# partition); RssAnon is the process's own memory, sampled, so a peak
# shorter than half a second can be missed.
MEM_WATCH_PID=

mem_watch_start() {
	local build=$1 out=$2
	( trap 'exit 0' TERM
	  while :; do
		for d in /proc/[0-9]*; do
			case $(readlink "$d/exe" 2>/dev/null) in "$build"/bin/gnn-*) ;; *) continue ;; esac
			awk -v p="${d#/proc/}" '/^VmHWM|^RssAnon/ { v[$1] = $2 }
				END { if (v["VmHWM:"] != "") print p, v["VmHWM:"], v["RssAnon:"] }' "$d/status" 2>/dev/null || true
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
	awk 'FNR == NR { name[$2] = $1; next }
	     ($1 in name) { if ($2 > hwm[$1]) hwm[$1] = $2; if ($3 > anon[$1]) anon[$1] = $3 }
	     END { for (p in hwm) printf "memory %-13s peak_rss_mb=%.0f peak_anon_mb=%.0f\n", name[p], hwm[p] / 1024, anon[p] / 1024 }' \
		"$1" "$2" | sort
}
