#!/usr/bin/env bash
# The observability HTTP server under load (docs/reliability.md, "HTTP"): a
# real graph store on the synthetic `tiny` graph must answer /healthz and
# /readyz within 1 s (a liveness probe's timeout) while 200 slow clients
# hold connections to its HTTP port, and while the process is at its
# file-descriptor limit (prlimit --nofile=64, the rest taken by TCP
# connections to its RPC port); the accept failures at the limit must not
# flood the log. Every wait is bounded; every process started here is
# killed on exit.
. "$(dirname "$0")/lib.bash"
GS=$BIN/gnn-graphstore
P=$BIN/gnn-partition
SLOW=200       # slow clients
PROBES=12      # probes of each path per case, one every 0.5 s
FD_LIMIT=64

declare -A PID HTTPP RPC
BG=()
cleanup() {
	local p
	for p in "${PID[@]}" "${BG[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# The clients, in Python for its sockets. Modes:
#   slow PORT N SECONDS FILE  keeps N connections open for SECONDS: half send
#                             nothing, half send a request that never ends, a
#                             byte every 0.5 s; a closed one is reopened (as
#                             a real slow client would); writes FILE once all
#                             N were open
#   hold PORT N SECONDS FILE  keeps N connections open to an nng port,
#                             each sending the SP header of a REQ socket so
#                             that nng keeps it; the ones the kernel only
#                             queues (the process is out of descriptors)
#                             count as open
cat >"$WORK/clients.py" <<'EOF'
import socket, sys, time
mode, port, n, secs, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
end = time.monotonic() + secs
def dial():
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    if mode == "hold":
        s.sendall(b"\x00SP\x00\x00\x30\x00\x00")
    s.setblocking(False)
    return s
socks = [dial() for _ in range(n)]
open(ready, "w").write("%d\n" % sum(s is not None for s in socks))
drip = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100000
sent = [0] * n
while time.monotonic() < end:
    time.sleep(0.5)
    for i, s in enumerate(socks):
        if s is not None:
            try:
                if s.recv(4096) == b"":
                    raise OSError("closed")
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                s = None
        if s is None:
            socks[i] = s = dial()
            sent[i] = 0
        if s is not None and mode == "slow" and i % 2 == 1:
            try:
                s.send(drip[sent[i]:sent[i] + 1])
                sent[i] += 1
            except OSError:
                pass
EOF

# start NAME [prlimit args]: a graph store on part 0 of tiny, ephemeral
# ports, logging to $WORK/NAME.log; waits (bounded) for it to be ready.
start() {
	local name=$1
	shift
	prlimit "$@" -- "$GS" --data "$WORK/tiny" --part 0 --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 \
		--http-port 0 --workers 2 --wait-data 0 2>"$WORK/$name.log" &
	PID[$name]=$!
	wait_for 30 grep -qs " ready part=" "$WORK/$name.log" || return 1
	HTTPP[$name]=$(sed -n 's/.* http_listening .* port=\([0-9]*\).*/\1/p' "$WORK/$name.log" | head -n 1)
	RPC[$name]=$(sed -n 's/.* server_listening .* port=\([0-9]*\) .*/\1/p' "$WORK/$name.log" | head -n 1)
	[ -n "${HTTPP[$name]}" ] && [ -n "${RPC[$name]}" ]
}

# probe NAME: PROBES rounds, one every 0.5 s, of /healthz then /readyz, each
# with curl's 1 s limit; sets BAD_<path> (answers other than 200 or over
# 1 s) and MAX_<path> (the slowest, seconds) for healthz and readyz.
probe() {
	local out code t p m
	BAD_healthz=0 MAX_healthz=0 BAD_readyz=0 MAX_readyz=0
	for _ in $(seq "$PROBES"); do
		for p in healthz readyz; do
			out=$(curl -s -o /dev/null -m 1 -w '%{http_code} %{time_total}' "http://127.0.0.1:${HTTPP[$1]}/$p")
			read -r code t <<<"$out"
			[ "$code" = 200 ] && awk -v t="$t" 'BEGIN { exit !(t < 1.0) }' || printf -v "BAD_$p" %d $(( BAD_$p + 1 ))
			m=MAX_$p
			printf -v "$m" %s "$(awk -v a="${!m}" -v b="$t" 'BEGIN { print (b > a ? b : a) }')"
		done
		sleep 0.5
	done
}

# fds_below NAME: NAME's open descriptors below FD_LIMIT (one inherited from
# a parent may sit above it).
fds_below() {
	ls "/proc/${PID[$1]}/fd" 2>/dev/null | awk -v l=$FD_LIMIT '$1 < l' | wc -l
}

"$P" --synthetic tiny --parts 2 --out "$WORK/tiny" 2>/dev/null >/dev/null
[ -f "$WORK/tiny/meta.json" ] || { fail http_load_setup "gnn-partition failed"; exit 1; }

# ---- 200 slow clients on the HTTP port ---------------------------------------
if start slow; then
	python3 "$WORK/clients.py" slow "${HTTPP[slow]}" "$SLOW" 30 "$WORK/slow.ready" &
	BG+=($!)
	disown $! # no "Killed" notice when it is killed
	wait_for 20 test -s "$WORK/slow.ready"
	opened=$(cat "$WORK/slow.ready" 2>/dev/null)
	sleep 4 # past the server's idle timeout: the silent ones have been dropped and reopened
	probe slow
	hb=$BAD_healthz hm=$MAX_healthz rb=$BAD_readyz rm=$MAX_readyz
	echo "time slow_clients_healthz max=${hm}s slow_clients_readyz max=${rm}s (connected=${opened:-0})"
	check slow_clients_healthz "$SLOW slow clients ($opened connected): $PROBES /healthz answer 200 within 1 s ($hb did not, slowest ${hm}s)" \
		test "${opened:-0}" -ge "$SLOW" -a "$hb" -eq 0
	check slow_clients_readyz "$SLOW slow clients: $PROBES /readyz answer 200 within 1 s ($rb did not, slowest ${rm}s)" \
		test "${opened:-0}" -ge "$SLOW" -a "$rb" -eq 0
	{ kill -KILL "${PID[slow]}" "${BG[@]}"; wait; } 2>/dev/null
	unset "PID[slow]"
	BG=()
else
	fail slow_clients_healthz "the store did not start; its log: $(tail -n 3 "$WORK/slow.log")"
	fail slow_clients_readyz "not started"
fi

# ---- the process at its file-descriptor limit --------------------------------
if start fdlimit --nofile=$FD_LIMIT; then
	before=$(wc -l <"$WORK/fdlimit.log")
	# More than the limit leaves: the kernel queues the rest, and the store
	# keeps trying to accept them, taking every descriptor that frees up.
	python3 "$WORK/clients.py" hold "${RPC[fdlimit]}" $((FD_LIMIT + 40)) 40 "$WORK/hold.ready" &
	BG+=($!)
	disown $!
	wait_for 20 test -s "$WORK/hold.ready"
	sleep 1
	nfd=$(fds_below fdlimit)
	probe fdlimit
	hb=$BAD_healthz hm=$MAX_healthz rb=$BAD_readyz rm=$MAX_readyz
	nfd2=$(fds_below fdlimit)
	echo "time fd_limit_healthz max=${hm}s fd_limit_readyz max=${rm}s (open fds ${nfd} then ${nfd2} of $FD_LIMIT)"
	check fd_limit_healthz "at the fd limit ($nfd then $nfd2 of $FD_LIMIT open): $PROBES /healthz answer 200 within 1 s ($hb did not, slowest ${hm}s)" \
		test "$nfd" -ge $FD_LIMIT -a "$nfd2" -ge $FD_LIMIT -a "$hb" -eq 0
	check fd_limit_readyz "at the fd limit: $PROBES /readyz answer 200 within 1 s ($rb did not, slowest ${rm}s)" \
		test "$nfd" -ge $FD_LIMIT -a "$rb" -eq 0
	kill -TERM "${PID[fdlimit]}"
	wait_for 10 bash -c "! kill -0 ${PID[fdlimit]} 2>/dev/null"
	if kill -0 "${PID[fdlimit]}" 2>/dev/null; then rc=124; else wait "${PID[fdlimit]}"; rc=$?; fi
	unset "PID[fdlimit]"
	check fd_limit_clean_stop "SIGTERM at the fd limit: exit 0 within 10 s (got $rc)" test "$rc" -eq 0
	lines=$(( $(wc -l <"$WORK/fdlimit.log") - before ))
	bytes=$(tail -n +$((before + 1)) "$WORK/fdlimit.log" | wc -c)
	supp=$(tail -n +$((before + 1)) "$WORK/fdlimit.log" | grep -o 'suppressed=[0-9]*' | head -n 1)
	echo "time fd_limit_log lines=$lines bytes=$bytes ${supp:-suppressed=none}"
	[ -n "${GNN_HTTP_LOAD_SHOW:-}" ] && tail -n +$((before + 1)) "$WORK/fdlimit.log" | cut -c1-220
	check fd_limit_log_quiet "at the fd limit the log grows by a handful of lines and says how many it suppressed ($lines lines, $bytes bytes, ${supp:-no suppressed= count}); first lines: $(tail -n +$((before + 1)) "$WORK/fdlimit.log" | head -n 3 | cut -c1-200 | tr '\n' '|')" \
		test "$lines" -le 20 -a -n "$supp"
else
	fail fd_limit_healthz "the store did not start; its log: $(tail -n 3 "$WORK/fdlimit.log")"
	fail fd_limit_readyz "not started"
	fail fd_limit_log_quiet "not started"
	fail fd_limit_clean_stop "not started"
fi
