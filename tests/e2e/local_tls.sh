#!/usr/bin/env bash
# gnn-local --tls (docs/security.md, "Certificates for a local run"): the
# same run (synthetic tiny, 2 graph stores, 1 sampler, 2 trainers reading
# their rows from the stores, 2 epochs) without and with --tls:
#   - both end with the same params_crc in result.json;
#   - with --tls every component ran with mutual TLS: the graph stores,
#     the sampler and the trainers log `links domain=data tls=mutual` with
#     the certificates of WORKDIR/tls, the trainers `links domain=ring
#     tls=mutual` with the ring's; gnn-local dialled localhost, checked
#     readiness over HTTPS and says where the certificates are; the run
#     without says tls=off everywhere;
#   - the keys are mode 0600 in a folder 0700; with openssl at hand, the
#     certificates verify against their CAs, name DNS:localhost, and the
#     ring's do not verify against the data plane's CA.
# About 5 s (2 cores); under ASan longer.
. "$(dirname "$0")/lib.bash"
L=$BIN/gnn-local
"$BIN/gnn-partition" --synthetic tiny --parts 2 --out "$WORK/part" >/dev/null 2>&1 ||
	{ fail local_tls_partition "gnn-partition --synthetic tiny failed"; exit 0; }

# run NAME [flags]: gnn-local into WORK/NAME; prints its exit status and
# result.json's params_crc
run() {
	local name=$1 rc
	shift
	timeout 240 "$L" --partition-dir "$WORK/part" --workdir "$WORK/$name" --samplers 1 --trainers 2 --epochs 2 \
		--batch-size 64 --fanouts 5,5 --seed 5 --features-from stores --no-infer --ready-timeout-s 60 \
		--timeout-s 180 --stop-timeout-s 10 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
	rc=$?
	echo "$rc,$(jq -r '.params_crc // empty' "$WORK/$name/checkpoints/result.json" 2>/dev/null)"
}
r_plain=$(run plain)
r_tls=$(run tls --tls)
check local_tls_same_parameters "gnn-local --tls ends with the plain run's params_crc (exit,params_crc: tls $r_tls, plain $r_plain)" \
	bash -c "[[ '$r_plain' == 0,?* ]] && [ '$r_tls' = '$r_plain' ]"

# every LOG has LINE (a fixed string)
all_have() {
	local line=$1 f
	shift
	[ $# -gt 0 ] || return 1
	for f in "$@"; do grep -qF -- "$line" "$f" 2>/dev/null || return 1; done
}
T=$WORK/tls
LOGS=$T/logs
data="links domain=data tls=mutual ca=$T/tls/data-ca.crt cert=$T/tls/data-cert.crt"
ring="links domain=ring tls=mutual ca=$T/tls/ring-ca.crt cert=$T/tls/ring-cert.crt"
tls_links() {
	all_have "$data" "$LOGS"/graphstore-0.log "$LOGS"/graphstore-1.log "$LOGS"/sampler-0.log \
		"$LOGS"/trainer-0.log "$LOGS"/trainer-1.log &&
		all_have "$ring" "$LOGS"/trainer-0.log "$LOGS"/trainer-1.log &&
		grep -q " tls mode=mutual dir=$T/tls " "$WORK/tls.err" &&
		grep -q " services_started graphstores=tcp://localhost:[0-9]*,tcp://localhost:[0-9]* samplers=tcp://localhost:[0-9]* tls=mutual" "$WORK/tls.err" &&
		grep -q " trainers_started .* peers=tcp://localhost:[0-9]*,tcp://localhost:[0-9]* " "$WORK/tls.err" &&
		[ "$(grep -c ' component_ready .* url=https://localhost:' "$WORK/tls.err")" = 3 ] &&
		grep -q "^tls  *mutual .* in $T/tls\$" "$WORK/tls.out" &&
		all_have "links domain=data tls=off" "$WORK"/plain/logs/{graphstore-0,sampler-0,trainer-0}.log &&
		all_have "links domain=ring tls=off" "$WORK"/plain/logs/trainer-{0,1}.log &&
		! grep -q "tls=mutual" "$WORK"/plain/logs/*.log
}
export -f all_have tls_links
export T LOGS WORK data ring
check local_tls_links "with --tls the graph stores, the sampler and the trainers log '$data', the trainers '$ring'; gnn-local dials localhost, checks readiness over https and names the folder; the plain run says tls=off: $(grep -h ' links ' "$LOGS"/trainer-0.log 2>/dev/null | sed 's/.* links /links /' | cut -c1-60 | tr '\n' ';')" \
	bash -c tls_links

modes=$(stat -c '%a' "$T/tls" "$T/tls/data-cert.key" "$T/tls/ring-cert.key" 2>/dev/null | tr '\n' ' ')
check local_tls_key_modes "WORKDIR/tls 700, the keys 600 ($modes)" [ "$modes" = "700 600 600 " ]
if command -v openssl >/dev/null; then
	v_data=$(openssl verify -CAfile "$T/tls/data-ca.crt" "$T/tls/data-cert.crt" 2>&1 | tail -n 1)
	v_ring=$(openssl verify -CAfile "$T/tls/ring-ca.crt" "$T/tls/ring-cert.crt" 2>&1 | tail -n 1)
	v_cross=$(openssl verify -CAfile "$T/tls/data-ca.crt" "$T/tls/ring-cert.crt" 2>&1 | tail -n 1)
	san=$(openssl x509 -in "$T/tls/data-cert.crt" -noout -ext subjectAltName,extendedKeyUsage 2>&1 | tr -s ' \n' ' ')
	check local_tls_certificates "certificates of their CAs ($v_data; $v_ring), the ring's not of the data plane's ($v_cross), DNS:localhost, serverAuth and clientAuth ($san)" \
		bash -c "[[ '$v_data' == *': OK' ]] && [[ '$v_ring' == *': OK' ]] && [[ '$v_cross' != *': OK' ]] &&
			[[ '$san' == *'DNS:localhost'* ]] && [[ '$san' == *'Server Authentication'* ]] && [[ '$san' == *'Client Authentication'* ]]"
else
	skip local_tls_certificates "openssl is not installed (make deps installs it)"
fi
