# Helpers for scripts that start services on loopback (sourced by
# tests/e2e/lib.bash and tests/bench_sampling.sh).

# free_port: a TCP port nothing listens on now (the race with other
# processes is negligible over this range).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
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
