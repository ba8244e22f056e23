#!/usr/bin/env bash
# Mutual TLS on the data plane's nng links (--tls-ca, --tls-cert, --tls-key;
# docs/security.md), real processes on 127.0.0.1 (dialled as localhost,
# the name in the servers' certificates):
#   - a graph store and a sampler refuse each of: no client certificate,
#     a client certificate of another CA, a dialer expecting another server
#     name, a client trusting another CA, plain tcp://; they answer a valid
#     client before and after, unharmed;
#   - a run with TLS on every data-plane link (stores, sampler, trainer
#     reading rows from the stores) ends with the parameters of the same
#     run without TLS; so does a run of two trainers whose ring has its
#     own CA (--ring-tls-*), and a trainer whose ring certificate is a
#     data-plane one cannot join that ring;
#   - HTTP becomes HTTPS: /healthz and /readyz answer anyone (the
#     kubelet's probes), /metrics only a client certificate of the CA;
#   - refused handshakes are counted in /metrics and logged (links_refused),
#     the certificates' ends exported;
#   - bad TLS files, an expired certificate among them, stop a service at
#     start (exit 2, naming the file);
#   - the engine (gnutls by default) and the suites in the links line, the
#     negotiated suite in /metrics; misbehaving peers (tests/tools/tlspeer.py:
#     a ClientHello cut short, garbage after the handshake, an expired client
#     certificate) are turned away and the store serves on; a client's
#     TLS 1.3 key updates do not stall its link (tests/tools/tlskeyupdate);
#     a server certificate naming an IP address only is served to a dialer
#     of that address (gnutls; libnng's mbed TLS refuses it), and libnng's engine
#     (--tls-engine mbedtls, TLS 1.2) still reaches a gnutls store; a
#     wildcard name covers one left-most label, as libnng's engine did.
# The certificates are made here with openssl (ECDSA P-256, valid 2 days).
. "$(dirname "$0")/lib.bash"
if ! command -v openssl >/dev/null; then
	skip tls "openssl is not installed (make deps installs it)"
	exit 0
fi
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
C=$WORK/certs
mkdir -p "$C"

# ---- certificates ---------------------------------------------------------------------------
# ca NAME: a self-signed CA. cert NAME CA SAN: a key and a certificate for
# both ends of a link (serverAuth, clientAuth), signed by CA.
ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$C/$1.key" \
		-out "$C/$1.crt" -days 2 -subj "/CN=gnn-dist test $1" 2>>"$WORK/openssl.log"
}
cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$C/$1.key" -out "$C/$1.csr" \
		-subj "/CN=$1" 2>>"$WORK/openssl.log" &&
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$C/$1.ext" &&
		openssl x509 -req -in "$C/$1.csr" -CA "$C/$2.crt" -CAkey "$C/$2.key" -CAcreateserial -out "$C/$1.crt" \
			-days 2 -extfile "$C/$1.ext" 2>>"$WORK/openssl.log"
}
if ! { ca data && ca other && ca ring && cert server data DNS:localhost && cert client data DNS:client &&
	cert stranger other DNS:localhost && cert trainer ring DNS:localhost && cert ipsrv data IP:127.0.0.1 &&
	cert wild data 'DNS:*.graphstore'; }; then
	fail tls_certificates "openssl could not make the test certificates: $(tail -n 2 "$WORK/openssl.log" | tr '\n' ' ')"
	exit 0
fi
tls() {  # NAME CA: the flags of certificate NAME trusting CA
	echo "--tls-ca $C/$2.crt --tls-cert $C/$1.crt --tls-key $C/$1.key"
}
SRV=$(tls server data)
# valid until yesterday (openssl: -days -1)
openssl x509 -req -in "$C/client.csr" -CA "$C/data.crt" -CAkey "$C/data.key" -CAcreateserial -out "$C/expired.crt" \
	-days -1 -extfile "$C/client.ext" 2>>"$WORK/openssl.log"

"$BIN/gnn-partition" --synthetic tiny --parts 2 --out "$WORK/part" >/dev/null 2>&1

# store PART LOG [flags]: a graph store in the background
store() {
	local part=$1 log=$2
	shift 2
	"$BIN/gnn-graphstore" --data "$WORK/part" --part "$part" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 \
		--http-port 0 --workers 2 "$@" 2>"$log" &
	PIDS+=($!)
}
# sampler LOG STORES [flags]
sampler() {
	local log=$1 stores=$2
	shift 2
	"$BIN/gnn-sampler" --graphstores "$stores" --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 --http-port 0 \
		--workers 2 "$@" 2>"$log" &
	PIDS+=($!)
}
url() { echo "tcp://localhost:$(port_of "$1")"; }

# ---- the six cases against a graph store and a sampler -----------------------------------------
# shellcheck disable=SC2086
store 0 "$WORK/gs0.log" $SRV
# shellcheck disable=SC2086
store 1 "$WORK/gs1.log" $SRV
wait_for 30 grep -q " ready part=" "$WORK/gs0.log"
wait_for 30 grep -q " ready part=" "$WORK/gs1.log"
g0=$(url "$WORK/gs0.log")
g1=$(url "$WORK/gs1.log")
# shellcheck disable=SC2086
sampler "$WORK/smp.log" "$g0,$g1" $SRV
wait_for 60 grep -q " ready listen=" "$WORK/smp.log"
sm=$(url "$WORK/smp.log")

# info MS FLAG URL [tls flags]: gnn-cli info against a store or a
# sampler, waiting MS for the answer (a refused one never comes: short; an
# accepted one may be slow on a busy machine, under ASan: long); prints
# its exit status
info() {
	local ms=$1 flag=$2 u=$3
	shift 3
	timeout 60 "$BIN/gnn-cli" info "$flag" "$u" --timeout-ms "$ms" --retries 0 "$@" >"$WORK/info.out" 2>"$WORK/info.err"
	echo $?
}
# no client certificate: gnn-cli has none without the others, so openssl's
# client (trusting the data CA) is the one; the handshake must not finish
nocert() {
	timeout 10 openssl s_client -connect "localhost:$1" -CAfile "$C/data.crt" -verify_return_error \
		</dev/null >"$WORK/nocert.out" 2>&1
	grep -q -E '^ +Verify return code: 0' "$WORK/nocert.out" && ! grep -q -E 'alert|unexpected eof|error' "$WORK/nocert.out" &&
		echo accepted || echo refused
}
for who in store sampler; do
	if [ $who = store ]; then f=--store u=$g0 port=$(port_of "$WORK/gs0.log"); else f=--sampler u=$sm port=$(port_of "$WORK/smp.log"); fi
	# shellcheck disable=SC2046
	ok1=$(info 20000 $f "$u" $(tls client data))
	# shellcheck disable=SC2046
	r_cert=$(nocert "$port") r_ca=$(info 1500 $f "$u" $(tls stranger other | sed "s|$C/other.crt|$C/data.crt|"))
	# shellcheck disable=SC2046
	r_name=$(info 1500 $f "${u/localhost/127.0.0.1}" $(tls client data))
	# shellcheck disable=SC2046
	r_trust=$(info 1500 $f "$u" --tls-ca "$C/other.crt" --tls-cert "$C/client.crt" --tls-key "$C/client.key")
	cp "$WORK/info.err" "$WORK/trust-$who.err"
	r_plain=$(info 1500 $f "$u")
	cp "$WORK/info.err" "$WORK/plain-$who.err"
	# shellcheck disable=SC2046
	ok2=$(info 20000 $f "$u" $(tls client data))
	check tls_${who}_refuses "a $who with TLS: valid client 0 before and after ($ok1, $ok2); refused: no client certificate ($r_cert), another CA's ($r_ca), another server name ($r_name), a client trusting another CA ($r_trust), plain tcp ($r_plain)" \
		bash -c "[ '$ok1' = 0 ] && [ '$ok2' = 0 ] && [ '$r_cert' = refused ] && [ '$r_ca' = 1 ] && [ '$r_name' = 1 ] &&
			[ '$r_trust' = 1 ] && [ '$r_plain' = 1 ]"
done
check tls_logged "the services log links domain=data tls=mutual; gnn-cli's failures name TLS as a cause: $(tail -n 1 "$WORK/trust-store.err" | cut -c1-200)" \
	bash -c "grep -q ' links domain=data tls=mutual' '$WORK/gs0.log' && grep -q ' links domain=data tls=mutual' '$WORK/smp.log' &&
		grep -q 'with TLS, its certificate' '$WORK/trust-store.err' && grep -q 'without TLS' '$WORK/plain-sampler.err'"

# ---- the refusals counted and logged, the certificates' ends exported -----------------------------
# metrics LOG: a service's /metrics over HTTPS with the client's certificate
metrics() {
	local hp
	hp=$(sed -n 's/.* http_listening .* port=\([0-9]*\) .*/\1/p' "$1" | head -n 1)
	curl -s --max-time 10 --cacert "$C/data.crt" --cert "$C/client.crt" --key "$C/client.key" "https://localhost:$hp/metrics"
}
# The store's and the sampler's refused handshakes: at least the four
# cases above that reach the TLS handshake (no certificate, another CA's,
# another server name, trusting another CA) and plain tcp.
refused_auth() {
	metrics "$1" | awk '$1 ~ /^gnn_links_errors_total\{side="listen",url="tls\+tcp:\/\/127\.0\.0\.1:0",reason="auth"\}$/ { print $2 }'
}
wait_for 5 bash -c "$(declare -f metrics refused_auth); C='$C'; [ \"\$(refused_auth '$WORK/gs0.log')\" -ge 5 ] 2>/dev/null"
a_store=$(refused_auth "$WORK/gs0.log") a_smp=$(refused_auth "$WORK/smp.log")
metrics "$WORK/gs0.log" >"$WORK/gs0.metrics"
end_own=$(date -d "$(openssl x509 -in "$C/server.crt" -noout -enddate | cut -d= -f2)" +%s)
end_ca=$(date -d "$(openssl x509 -in "$C/data.crt" -noout -enddate | cut -d= -f2)" +%s)
m_own=$(awk '$1 == "gnn_tls_certificate_not_after_seconds{domain=\"data\",certificate=\"own\"}" { printf "%d", $2 }' "$WORK/gs0.metrics")
m_ca=$(awk '$1 == "gnn_tls_certificate_not_after_seconds{domain=\"data\",certificate=\"ca\"}" { printf "%d", $2 }' "$WORK/gs0.metrics")
m_lim=$(awk '$1 == "gnn_links_receive_limit_bytes{url=\"tls+tcp://127.0.0.1:0\"}" { printf "%d", $2 }' "$WORK/gs0.metrics")
check tls_refusals_counted "refused handshakes in /metrics (store $a_store, sampler $a_smp; >= 5 each) and one WARN links_refused naming the listener; the certificates' ends (own $m_own = $end_own, CA $m_ca = $end_ca); the store's receive limit 2^30 + 32 ($m_lim)" \
	bash -c "[ '${a_store:-0}' -ge 5 ] && [ '${a_smp:-0}' -ge 5 ] &&
		grep -q 'WARN  gnn-graphstore links_refused side=listen url=tls+tcp://127.0.0.1:0 auth=[1-9]' '$WORK/gs0.log' &&
		grep -q 'WARN  gnn-sampler links_refused side=listen url=tls+tcp://127.0.0.1:0 auth=[1-9]' '$WORK/smp.log' &&
		[ '$m_own' = '$end_own' ] && [ '$m_ca' = '$end_ca' ] && [ '$m_lim' = $(((1 << 30) + 32)) ]"

# ---- HTTPS: the probes open, /metrics for the CA's certificates -------------------------------
hp=$(sed -n 's/.* http_listening .* port=\([0-9]*\) .*/\1/p' "$WORK/gs0.log" | head -n 1)
code() { curl -s -o "$WORK/http.out" -w '%{http_code}' --max-time 10 "$@"; }
h_health=$(code -k "https://localhost:$hp/healthz")
h_ready=$(code -k "https://localhost:$hp/readyz")
h_nocert=$(code -k "https://localhost:$hp/metrics")
h_other=$(code -k --cert "$C/stranger.crt" --key "$C/stranger.key" "https://localhost:$hp/metrics")
h_ok=$(code --cacert "$C/data.crt" --cert "$C/client.crt" --key "$C/client.key" "https://localhost:$hp/metrics")
cp "$WORK/http.out" "$WORK/metrics.txt"
h_plain=$(code "http://localhost:$hp/healthz")
check tls_https "a graph store's HTTP with TLS: /healthz $h_health and /readyz $h_ready without a client certificate; /metrics 403 without one ($h_nocert) or with another CA's ($h_other), 200 with the CA's ($h_ok, verified against the CA); plain http fails ($h_plain)" \
	bash -c "[ '$h_health' = 200 ] && [ '$h_ready' = 200 ] && [ '$h_nocert' = 403 ] && [ '$h_other' = 403 ] &&
		[ '$h_ok' = 200 ] && grep -q '^gnn_http_requests_total' '$WORK/metrics.txt' && [ '$h_plain' != 200 ]"

# ---- the engine, and peers that misbehave ------------------------------------------------------
first_suite=$(sed -n 's/.* links domain=data tls=mutual .* engine=gnutls suites=\([A-Z0-9_]*\).*/\1/p' "$WORK/gs0.log" | head -n 1)
metrics "$WORK/gs0.log" >"$WORK/gs0.metrics2"
m_hs=$(awk -v s="$first_suite" '$1 == "gnn_tls_handshakes_total{engine=\"gnutls\",suite=\"" s "\"}" { printf "%d", $2 }' "$WORK/gs0.metrics2")
check tls_engine_reported "the links line names the engine and its suites (first: $first_suite); the store's handshakes of that suite in /metrics ($m_hs >= 2: the valid clients above) and a tls_negotiated line" \
	bash -c "[ -n '$first_suite' ] && [ '${m_hs:-0}' -ge 2 ] &&
		grep -q ' tls_negotiated engine=gnutls side=listen version=TLS1.3 suite=$first_suite ' '$WORK/gs0.log'"
PEER="$ROOT/tests/tools/tlspeer.py"
p0port=$(port_of "$WORK/gs0.log")
# peer MODE CERT KEY: tlspeer.py against the first store, presenting CERT with KEY
peer() { timeout 30 python3 "$PEER" "$1" "$p0port" "$C/data.crt" "$C/$2.crt" "$C/$3.key" 2>>"$WORK/peer.err"; }
pe_valid=$(peer handshake client client) pe_trunc=$(peer truncated client client)
pe_garbage=$(peer garbage client client) pe_expired=$(peer handshake expired client)
pe_other=$(peer handshake stranger stranger)
ok3=$(info 20000 --store "$g0" $(tls client data))
check tls_misbehaving_peers "a store turns away a ClientHello cut short ($pe_trunc), garbage after the handshake ($pe_garbage: the connection closed), an expired client certificate ($pe_expired) and another CA's, sent regardless ($pe_other), accepts a valid one ($pe_valid), and answers gnn-cli after ($ok3)" \
	bash -c "[ '$pe_valid' = accepted ] && [ '$pe_trunc' = sent ] && [ '$pe_garbage' = closed ] &&
		[ '$pe_expired' = refused ] && [ '$pe_other' = refused ] && [ '$ok3' = 0 ] && kill -0 ${PIDS[0]}"
# A TLS 1.3 key update (any peer may send one; GnuTLS does after 2^24
# records on a connection) arriving in one read with the request behind
# it: the engine must go on to the request rather than wait for the wire
# (it did, and the link stalled for good: every call to that store timed
# out). tlskeyupdate: a request, then one after a key update, then one
# after an update the store must answer in kind.
ku=$(timeout 60 "$BUILD/tests/tlskeyupdate" "$p0port" "$C/data.crt" "$C/client.crt" "$C/client.key" 2>&1)
ku_after=$(info 20000 --store "$g0" $(tls client data))
check tls_key_update "a store answers the requests that follow a client's TLS 1.3 key updates on one connection ($ku), and gnn-cli after ($ku_after)" \
	bash -c "[ '$ku' = replies=3 ] && [ '$ku_after' = 0 ]"
# shellcheck disable=SC2046
store 0 "$WORK/ip.log" $(tls ipsrv data)
wait_for 30 grep -q " ready part=" "$WORK/ip.log"
uip="tcp://127.0.0.1:$(port_of "$WORK/ip.log")"
# shellcheck disable=SC2046
ip_gnutls=$(info 20000 --store "$uip" $(tls client data))
# shellcheck disable=SC2046
ip_mbed=$(info 1500 --store "$uip" $(tls client data) --tls-engine mbedtls)
# shellcheck disable=SC2046
mbed_ok=$(info 20000 --store "$g0" $(tls client data) --tls-engine mbedtls)
check tls_ip_san_and_engines "a store whose certificate names 127.0.0.1 only (an IP SAN): served to a gnutls dialer of 127.0.0.1 ($ip_gnutls), refused by libnng's mbed TLS ($ip_mbed); libnng's engine reaches a gnutls store over TLS 1.2 ($mbed_ok)" \
	bash -c "[ '$ip_gnutls' = 0 ] && [ '$ip_mbed' = 1 ] && [ '$mbed_ok' = 0 ] &&
		grep -q ' tls_negotiated engine=gnutls side=listen version=TLS1.2 ' '$WORK/gs0.log'"

# A wildcard covers one whole left-most label (the chart's `*.graphstore`,
# dialled as graphstore-0.graphstore; GnuTLS alone wants two labels after
# it): tlsbench's dialer expects the name given, whatever it dials (a refused
# name fails its dial at once; the long reply timeout is for a busy machine).
wild() {
	timeout 60 "$BUILD/tests/tlsbench" --size 1024 --seconds 1 --timeout-ms 20000 --tls-ca "$C/data.crt" \
		--tls-cert "$C/wild.crt" --tls-key "$C/wild.key" --server-name "$1" >/dev/null 2>>"$WORK/wild.err"
	echo $?
}
w_one=$(wild graphstore-0.graphstore) w_two=$(wild a.b.graphstore) w_bare=$(wild graphstore) w_other=$(wild graphstore-0.sampler)
check tls_wildcard_names "a certificate naming *.graphstore serves graphstore-0.graphstore ($w_one), not a.b.graphstore ($w_two), graphstore ($w_bare) or graphstore-0.sampler ($w_other)" \
	bash -c "[ '$w_one' = 0 ] && [ '$w_two' != 0 ] && [ '$w_bare' != 0 ] && [ '$w_other' != 0 ]"

# ---- a run over TLS ends as the same run without it ---------------------------------------------
# train NAME [tls flags]: one trainer reading the rows from the stores
# through the sampler above (TLS) or a plain set of services; prints the
# summary's params_crc
train() {
	local name=$1 smp=$2 stores=$3
	shift 3
	timeout 180 "$BIN/gnn-trainer" --samplers "$smp" --graphstores "$stores" --features-from stores --cache-ratio 0.3 \
		--epochs 2 --batch-size 64 --seed 5 --listen "tcp://127.0.0.1:$(free_port)" --http-addr 127.0.0.1 \
		--http-port 0 --wait-s 60 --checkpoint-dir "$WORK/ck-$name" "$@" >/dev/null 2>"$WORK/tr-$name.log"
	sed -n 's/.* summary .*params_crc=\([0-9a-f]*\).*/\1/p' "$WORK/tr-$name.log" | tail -n 1
}
store 0 "$WORK/p0.log"
store 1 "$WORK/p1.log"
wait_for 30 grep -q " ready part=" "$WORK/p0.log"
wait_for 30 grep -q " ready part=" "$WORK/p1.log"
p0=$(url "$WORK/p0.log")
p1=$(url "$WORK/p1.log")
sampler "$WORK/psmp.log" "$p0,$p1"
wait_for 60 grep -q " ready listen=" "$WORK/psmp.log"
crc_plain=$(train plain "$(url "$WORK/psmp.log")" "$p0,$p1")
# shellcheck disable=SC2046
crc_tls=$(train tls "$sm" "$g0,$g1" $(tls client data))
check tls_same_parameters "2 epochs over TLS (stores, sampler, trainer) end with the plain run's params_crc ($crc_tls, $crc_plain)" \
	bash -c "[ -n '$crc_plain' ] && [ '$crc_tls' = '$crc_plain' ] && grep -q ' links domain=data tls=mutual' '$WORK/tr-tls.log' &&
		grep -q ' links domain=data tls=off' '$WORK/tr-plain.log'"

# ---- the trainers' ring: its own CA -----------------------------------------------------------------
# ring NAME SAMPLER STORES WAIT RING_FLAGS_0 -- RING_FLAGS_1: two trainers;
# prints their exit statuses and trainer-0's params_crc
ring() {
	local name=$1 smp=$2 stores=$3 wait=$4 a=() b=() r pids=() rcs=""
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	local l0 l1
	l0=$(free_port)
	l1=$(free_port)
	for r in 0 1; do
		local extra=("${a[@]}")
		[ $r = 1 ] && extra=("${b[@]}")
		timeout 180 "$BIN/gnn-trainer" --samplers "$smp" --rank $r --world-size 2 \
			--peers "tcp://localhost:$l0,tcp://localhost:$l1" --listen "tcp://127.0.0.1:$([ $r = 0 ] && echo "$l0" || echo "$l1")" \
			--epochs 2 --batch-size 64 --seed 5 --http-addr 127.0.0.1 --http-port 0 --wait-s "$wait" \
			--checkpoint-dir "$WORK/ck-$name-$r" "${extra[@]}" >/dev/null 2>"$WORK/ring-$name-$r.log" &
		pids+=($!)
	done
	for r in 0 1; do
		wait "${pids[$r]}"
		rcs="$rcs$?,"
	done
	echo "$rcs$(sed -n 's/.* summary .*params_crc=\([0-9a-f]*\).*/\1/p' "$WORK/ring-$name-0.log" | tail -n 1)"
}
RING="--ring-tls-ca $C/ring.crt --ring-tls-cert $C/trainer.crt --ring-tls-key $C/trainer.key"
r_plain=$(ring plain "$(url "$WORK/psmp.log")" "$p0,$p1" 60 --)
# shellcheck disable=SC2046,SC2086
r_tls=$(ring tls "$sm" "$g0,$g1" 60 $(tls client data) $RING -- $(tls client data) $RING)
check tls_ring_same_parameters "two trainers, the ring on its own CA and the data plane on TLS, end as the plain pair ($r_tls, $r_plain)" \
	bash -c "[[ '$r_plain' == 0,0,?* ]] && [ '$r_tls' = '$r_plain' ] && grep -q ' links domain=ring tls=mutual' '$WORK/ring-tls-0.log'"
# trainer-1 presents a data-plane certificate to the ring: no ring forms
# shellcheck disable=SC2046,SC2086
r_bad=$(ring bad "$sm" "$g0,$g1" 8 $(tls client data) $RING -- $(tls client data) \
	--ring-tls-ca "$C/ring.crt" --ring-tls-cert "$C/client.crt" --ring-tls-key "$C/client.key")
check tls_ring_refuses_data_plane "a trainer with a data-plane certificate as its ring certificate cannot join: both fail at --wait-s (peer_timeout), no summary ($r_bad)" \
	bash -c "[[ '$r_bad' == [1-9]*,[1-9]*, ]] && grep -q ' peer_timeout ' '$WORK/ring-bad-0.log' &&
		! grep -q ' summary ' '$WORK/ring-bad-0.log' '$WORK/ring-bad-1.log'"

# ---- bad files stop the service at start -------------------------------------------------------
# bad NAME FLAGS...: a graph store with these TLS flags; prints "status:log"
bad() {
	timeout 30 "$BIN/gnn-graphstore" --data "$WORK/part" --part 0 --listen tcp://127.0.0.1:0 --http-addr 127.0.0.1 \
		--http-port 0 "$@" 2>"$WORK/bad.log"
	echo "$?:$(grep -E 'ERROR' "$WORK/bad.log" | head -n 1 | sed 's/.* ERROR  *//' | cut -c1-240)"
}
echo "not a certificate" >"$C/junk.crt"
b_expired=$(bad --tls-ca "$C/data.crt" --tls-cert "$C/expired.crt" --tls-key "$C/client.key")
b_missing=$(bad --tls-ca "$C/none.crt" --tls-cert "$C/server.crt" --tls-key "$C/server.key")
b_two=$(bad --tls-cert "$C/server.crt" --tls-key "$C/server.key")
b_junk=$(bad --tls-ca "$C/data.crt" --tls-cert "$C/junk.crt" --tls-key "$C/server.key")
b_keycert=$(bad --tls-ca "$C/data.crt" --tls-cert "$C/server.key" --tls-key "$C/server.crt")
check tls_bad_files "exit 2 naming the problem: a missing file ($b_missing), two of three ($b_two), not PEM ($b_junk), certificate and key swapped ($b_keycert), an expired certificate ($b_expired)" \
	bash -c "[[ '$b_missing' == 2:*tls_bad_file*none.crt* ]] && [[ '$b_two' == 2:*--tls-ca* ]] &&
		[[ '$b_junk' == 2:*tls_bad_file*junk.crt* ]] && [[ '$b_keycert' == 2:*tls_bad_file* ]] &&
		[[ '$b_expired' == 2:*tls_bad_file*expired.crt*expired* ]]"

# ---- the store that met every peer above stops clean (under make asan: no leak, no error) -------
kill -TERM "${PIDS[0]}" 2>/dev/null
wait "${PIDS[0]}"
s_exit=$?
check tls_store_stops_clean "the first store, which met every peer and refusal above, exits 0 on SIGTERM ($s_exit)" \
	bash -c "[ '$s_exit' = 0 ] && grep -q ' stopped exit=0' '$WORK/gs0.log'"
