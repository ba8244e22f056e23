# Helpers for scripts that start services on loopback (sourced by
# tests/e2e/lib.bash and tests/bench_sampling.sh).

# free_port: a TCP port nothing listens on now (the race with other
# processes is negligible over this range), outside the kernel's ephemeral
# range: a process that dials the port before its listener is up could
# otherwise get that very port as its source port and connect to itself,
# and the listener then fails to bind (seen under ASan, where stores take
# seconds to start while a sampler keeps dialling).
free_port() {
	local p lo=32768 hi=60999 first count
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	# 10000 up to the range, short of Kubernetes' NodePorts (30000-32767)
	if [ "$lo" -gt 11024 ]; then first=10000 count=$(((lo < 30000 ? lo : 30000) - 10000)); else first=$((hi + 1)) count=$((65535 - hi)); fi
	for _ in $(seq 50); do
		p=$((first + (RANDOM * 32768 + RANDOM) % count))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

# wait_for SECONDS COMMAND...: polls the command every 0.1 s; false on timeout.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# stop_within PID SECONDS: SIGTERM, then up to SECONDS for the process to
# exit; one still there gets SIGKILL (said on stderr, so a test never
# hangs on a process that does not stop) and the call is false.
stop_within() {
	local pid=$1 deadline=$((SECONDS + $2)) ok=0
	kill -TERM "$pid" 2>/dev/null || return 0
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			echo "stop_within: pid $pid still running $2 s after SIGTERM: killed" >&2
			kill -KILL "$pid" 2>/dev/null
			ok=1
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null
	return $ok
}
