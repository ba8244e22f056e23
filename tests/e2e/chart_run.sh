#!/usr/bin/env bash
# The Helm chart as rendered, run without a cluster: `helm template` with
# tests/k8s/run-values.yaml (synthetic `tiny`, 2 partitions, 2 samplers,
# 2 trainers, 8 epochs, 8-wide learnable embeddings on a checkpoint claim
# the trainers share with the graph stores), and every pod it describes (the partitioner Job,
# graphstore-0/1, two sampler replicas, trainer-0/1, the inference Job,
# later the helm test pod)
# run as a local process with the container's command, args and environment
# (tests/k8s/pods.cjs writes each pod's script):
#   - its own network namespace with its own address on a bridge (in a hub
#     namespace of its own: nothing touches the host's network), and its
#     host name set to the pod name;
#   - an /etc/hosts answering what cluster DNS would: POD.SERVICE for
#     StatefulSet pods, a headless Service name as all its pods' addresses
#     (the sampler Service's only once each sampler is ready, as its
#     publishNotReadyAddresses: false says: the trainers must find them);
#   - the claims as shared directories bound at the mount paths (read-only
#     where mounted so), emptyDirs as tmpfs, the binaries at /usr/local/bin
#     as in the image, the root filesystem read-only, and the pod's
#     runAsUser/runAsGroup/fsGroup.
# All pods start at once, as on a cluster: the start-up order must come from
# the services' own waits. Checked: the Job partitions; training completes
# and trainer-0's log ends with its summary, equal on both ranks; the helm
# test pod passes; the report is on the checkpoint claim; the inference Job
# predicts every node after the run and a sampler answers a lookup; a
# restarted trainer pair does not train again, a re-run Job does not
# partition again and a re-run inference Job does not infer again. Needs root and `ip netns`; skips otherwise. Every process and
# namespace started here is removed on exit.
. "$(dirname "$0")/lib.bash"
CHART=$ROOT/charts/gnn-dist
TOOLDIR=${GNN_K8S_TOOLS:-$ROOT/build/k8s-tools}
NAME=chart_run
DEADLINE_S=${CHART_RUN_TIMEOUT_S:-420}

if [ "$(id -u)" != 0 ]; then skip $NAME "needs root (network namespaces, mounts)"; exit 0; fi
if ! command -v ip >/dev/null; then
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2; } >/dev/null 2>&1
fi
for c in ip unshare setpriv mount curl; do
	command -v $c >/dev/null || { skip $NAME "$c is not installed"; exit 0; }
done
if ! "$ROOT/tests/k8s/install-tools.sh" "$TOOLDIR" 2>"$WORK/install.log"; then
	skip $NAME "chart tools unavailable: $(tail -n 1 "$WORK/install.log")"
	exit 0
fi
PFX=gnnrun$$
HUB=$PFX-hub
if ! ip netns add "$HUB" 2>"$WORK/netns.err"; then
	skip $NAME "ip netns unavailable: $(cat "$WORK/netns.err")"
	exit 0
fi

NSES=("$HUB")
PIDS=()
MADE_DIRS=()
cleanup() {
	local p ns
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 1
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	# Whatever else runs in our namespaces was started by us.
	for ns in "${NSES[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	done
	for ns in "${NSES[@]}"; do ip netns del "$ns" 2>/dev/null; done
	# Mount points made for the pods, unless another run still uses them.
	if ! ip netns list 2>/dev/null | grep -q '^gnnrun'; then
		for d in "${MADE_DIRS[@]}"; do rmdir "$d" 2>/dev/null; done
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${CHART_RUN_KEEP:-}" ] && trap "cp -r \"\$WORK\" \"\$CHART_RUN_KEEP\"; cleanup" EXIT

# ---- render and plan ------------------------------------------------------------
H=$TOOLDIR/bin/helm
SUBNET=198.18.0   # RFC 2544's benchmarking range, only inside our namespaces
if ! "$H" template gnn-dist "$CHART" --namespace default -f "$ROOT/tests/k8s/run-values.yaml" >"$WORK/rendered.yaml" 2>"$WORK/helm.err" ||
	! node "$ROOT/tests/k8s/pods.cjs" "$TOOLDIR" "$WORK/rendered.yaml" "$WORK/plan" $SUBNET default 2>"$WORK/plan.err"; then
	fail $NAME "render/plan failed: $(cat "$WORK/helm.err" "$WORK/plan.err" | head -n 3)"
	exit 1
fi
mkdir -p "$WORK/vol" "$WORK/logs"
# TLS (the chart's default): gnn-cli from here presents the data plane's
# certificate, /metrics is scraped over HTTPS with the scraper's (the
# render's Secrets, decoded by pods.cjs).
SCHEME=http CLI_TLS=() SCRAPE=()
if grep -q '^ *- name: GNN_TLS_CA$' "$WORK/rendered.yaml"; then
	d=$WORK/plan/secrets/gnn-dist-tls s=$WORK/plan/secrets/gnn-dist-scraper-tls
	SCHEME=https CLI_TLS=(--tls-ca "$d/ca.crt" --tls-cert "$d/tls.crt" --tls-key "$d/tls.key")
	SCRAPE=(-k --cert "$s/tls.crt" --key "$s/tls.key")
fi
fsgroup=$(grep -o 'groups=[0-9,]*' "$WORK/plan"/pod-trainer-0.sh | head -n 1 | cut -d= -f2 | cut -d, -f2)
while read -r claim; do
	[ -n "$claim" ] || continue
	mkdir -p "$WORK/vol/$claim"
	# As a volume plugin honouring fsGroup: group-owned, group-writable, setgid.
	chgrp "${fsgroup:-0}" "$WORK/vol/$claim" && chmod 2775 "$WORK/vol/$claim"
done <"$WORK/plan/claims"
while read -r mp; do
	[ -n "$mp" ] && [ ! -d "$mp" ] && mkdir -p "$mp" && MADE_DIRS+=("$mp")
done <"$WORK/plan/mountpoints"

# ---- network: a bridge in the hub namespace, one veth per pod ----------------------
# (A kernel without bridge or veth support is the machine's limit: skip.)
ip -n "$HUB" link add br0 type bridge 2>"$WORK/netns.err" && ip -n "$HUB" link set br0 up && ip -n "$HUB" link set lo up || {
	skip $NAME "cannot make a bridge in a network namespace: $(cat "$WORK/netns.err")"; exit 0; }
i=0
declare -A NS_OF ADDR_OF
while IFS=$'\t' read -r pod comp addr hook rest; do
	ns=$PFX-$i
	ip netns add "$ns" && NSES+=("$ns") || { fail $NAME "cannot add network namespace $ns"; exit 1; }
	if ! ip -n "$HUB" link add "v$i" type veth peer name eth0 netns "$ns" 2>"$WORK/netns.err"; then
		skip $NAME "cannot make a veth pair: $(cat "$WORK/netns.err")"
		exit 0
	fi
	ip -n "$HUB" link set "v$i" master br0 up &&
		ip -n "$HUB" link set "v$i" master br0 up &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$addr/24" dev eth0 &&
		ip -n "$ns" link set eth0 up || { fail $NAME "cannot set up the network of $pod"; exit 1; }
	NS_OF[$pod]=$ns
	ADDR_OF[$pod]=$addr
	i=$((i + 1))
done <"$WORK/plan/pods.tsv"

export VOLUME_ROOT=$WORK/vol BIN_DIR=$BIN HOSTS_FILE=$WORK/plan/hosts CPUS=$(nproc)
declare -A PID_OF
# start POD [LOG]: runs the pod in its namespace; its output goes to LOG.
start() {
	ip netns exec "${NS_OF[$1]}" unshare --uts /bin/sh "$WORK/plan/pod-$1.sh" >>"$WORK/logs/${2:-$1}.log" 2>&1 &
	PIDS+=($!)
	PID_OF[$1]=$!
}
pods_of() { awk -F'\t' -v c="$1" '$2 == c && $4 == "-" { print $1 }' "$WORK/plan/pods.tsv"; }
JOB=$(pods_of partition)
INFER=$(pods_of inference)
TRAINERS=$(pods_of trainer)
T0=$(pods_of trainer | head -n 1)
TESTPOD=$(awk -F'\t' '$4 == "test" { print $1 }' "$WORK/plan/pods.tsv")
# check_dump NAME WHAT POD_LOG COMMAND...: check, and on failure show the log's end.
check_dump() {
	local name=$1 what=$2 log=$3
	shift 3
	if "$@"; then pass "$name"; else fail "$name" "$what"; logtail "$log" 12; fi
}
logtail() { tail -n "${2:-8}" "$WORK/logs/$1.log" | sed "s/^/    $1: /"; }
dump_all() {
	local p
	for p in $(cut -f1 "$WORK/plan/pods.tsv"); do [ -f "$WORK/logs/$p.log" ] && logtail "$p" 6; done
}

# The endpoints controller: a Service publishing only ready pods (the
# samplers') resolves to a pod once its readiness probe passes. The hosts
# file is appended to in place, so every pod's bind mount sees it.
endpoints() {
	local pod line port path scheme
	declare -A done_
	while :; do
		while IFS=$'\t' read -r pod line; do
			[ -n "${done_[$pod]:-}" ] && continue
			port=$(awk -F'\t' -v p="$pod" '$1 == p { print $5 }' "$WORK/plan/pods.tsv")
			path=$(awk -F'\t' -v p="$pod" '$1 == p { print $6 }' "$WORK/plan/pods.tsv")
			scheme=$(awk -F'\t' -v p="$pod" '$1 == p { print tolower($7) }' "$WORK/plan/pods.tsv")
			# as the kubelet: HTTPS without checking the certificate
			if [ "$(ip netns exec "${NS_OF[$pod]}" curl -sk -m 2 -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port$path")" = 200 ]; then
				grep -h -P "^\Q$pod\E\t" "$WORK/plan/hosts-ready" | cut -f2 >>"$WORK/plan/hosts"
				echo "$(date -u +%T) $pod ready: published" >>"$WORK/logs/endpoints.log"
				done_[$pod]=1
			fi
		done <"$WORK/plan/hosts-ready"
		sleep 0.5
	done
}

# ---- everything at once ---------------------------------------------------------------
t_start=$SECONDS
while IFS=$'\t' read -r pod comp addr hook rest; do
	[ "$hook" = - ] && start "$pod"
done <"$WORK/plan/pods.tsv"
endpoints &
PIDS+=($!)

# Until trainer-0 logs its summary: fail early when a long-running pod dies.
ok=0
while [ $((SECONDS - t_start)) -lt "$DEADLINE_S" ]; do
	if grep -q ' summary ' "$WORK/logs/$T0.log" 2>/dev/null; then ok=1; break; fi
	dead=""
	for p in $(cut -f1 "$WORK/plan/pods.tsv"); do
		[ "$p" = "$JOB" ] || [ "$p" = "$TESTPOD" ] || [ "$p" = "$INFER" ] && continue
		kill -0 "${PID_OF[$p]}" 2>/dev/null || dead="$dead $p"
	done
	[ -n "$dead" ] && break
	sleep 1
done
t_train=$((SECONDS - t_start))
if [ $ok != 1 ]; then
	fail $NAME "no summary from $T0 after ${t_train}s${dead:+ (exited:$dead)}; last log lines:"
	dump_all
	exit 1
fi
wait "${PID_OF[$JOB]}"
job_rc=$?
check job_partitions "the Job exits 0 after partitioning as the pod's user onto the data claim" \
	bash -c "[ $job_rc = 0 ] && grep -q ' done out=' '$WORK/logs/$JOB.log' &&
		[ \"\$(stat -c %u \"\$(ls -d '$WORK/vol'/*/partitions/*/ | head -n 1)\")\" != 0 ]"

# The start-up waits that made this work, as logged.
check startup_waits_logged "stores waited for the data or samplers for the stores, each saying so" \
	bash -c "cat '$WORK/logs'/graphstore-*.log '$WORK/logs'/sampler-*.log | grep -q -E 'waiting_for_(data|graphstores)'"

# What `kubectl logs trainer-0` shows at the end: the summary, followed only
# by the line saying the pod keeps serving (--on-finish serve).
sleep 1
summary0=$(grep ' summary ' "$WORK/logs/$T0.log" | tail -n 1)
after=$(sed -n '/ summary /,$p' "$WORK/logs/$T0.log" | tail -n +2 | grep -v ' serving_result \| result_serving ')
acc=$(grep -o 'test_acc=[0-9.]*' <<<"$summary0" | cut -d= -f2)
check_dump trainer0_log_ends_with_summary "trainer-0's log ends with 'summary test_acc=...' (then only serving_result, result_serving)" \
	"$T0" bash -c "grep -q ' summary test_acc=[0-9.]* ' <<<'$summary0' && [ -z '$after' ]"
check trained_not_guessed "test accuracy $acc well above chance (0.2 for tiny's 5 classes): the minibatches were real" \
	awk -v a="${acc:-0}" 'BEGIN { exit !(a > 0.5) }'
echo "  (${t_train}s from start to $T0's summary: ${summary0#* summary })"

# Every rank finishes the same run: same parameters after the last all-reduce.
crcs=""
for t in $TRAINERS; do
	wait_for 30 grep -q ' summary ' "$WORK/logs/$t.log"
	crcs="$crcs $(grep ' summary ' "$WORK/logs/$t.log" | tail -n 1 | grep -o 'params_crc=[0-9a-f]*')"
done
check ranks_agree "every trainer logs a summary with the same params_crc" \
	bash -c "n=\$(tr ' ' '\n' <<<'$crcs' | grep -c params_crc); u=\$(tr ' ' '\n' <<<'$crcs' | grep params_crc | sort -u | wc -l);
		[ \$n = $(echo "$TRAINERS" | wc -w) ] && [ \$u = 1 ]"

run_dir=$(sed -n 's/.*--checkpoint-dir=\([^ ]*\).*/\1/p' "$WORK/rendered.yaml" | head -n 1)
report=$(find "$WORK/vol" -path "*checkpoints*/${run_dir##*/}/result.json" | head -n 1)
check report_on_claim "result.json of the run is on the checkpoint claim and names the test accuracy" \
	bash -c "[ -s '$report' ] && grep -q test_acc '$report'"

# The graph stores mount the trainers' checkpoint claim
# (storage.checkpoints.graphstoresWrite) and write their embedding rows
# into each checkpoint themselves: no rank reads them through the stores.
snaps=$(cat "$WORK/logs"/graphstore-*.log 2>/dev/null | grep -c ' embeddings_snapshot_written ')
streamed=$(cat "$WORK/logs"/trainer-*.log 2>/dev/null | grep -c ' embeddings_save_streamed ')
ckrows=$(find "$WORK/vol" -path "*checkpoints*/${run_dir##*/}/epoch-*/emb-node-rows.arr" | head -n 1)
check graphstores_write_checkpoints "the graph stores wrote their rows into the checkpoints ($snaps embeddings_snapshot_written, $streamed embeddings_save_streamed, rows file: ${ckrows:-none})" \
	bash -c "[ $snaps -ge 2 ] && [ $streamed = 0 ] && [ -s '$ckrows' ]"

# The inference Job waited for that report, then predicted every node; the
# graph stores serve the predictions, and a sampler routes a lookup.
infer_rc=none
if [ -n "$INFER" ] && timeout 120 tail --pid="${PID_OF[$INFER]}" -f /dev/null; then
	wait "${PID_OF[$INFER]}"
	infer_rc=$?
fi
preds=$(find "$WORK/vol" -path "*/predictions/${run_dir##*/}/summary.json" | head -n 1)
S0=$(pods_of sampler | head -n 1)
sport=$(sed -n 's/.*--listen=tcp:\/\/[^:]*:\([0-9]*\).*/\1/p' "$WORK/plan/pod-$S0.sh" | head -n 1)
# The samplers' Service name: with TLS (the chart's default) the sampler's
# certificate names it, and gnn-cli presents the data plane's certificate;
# the name resolves through the pods' hosts file, as in a pod.
ip netns exec "${NS_OF[$S0]}" unshare --mount /bin/sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh "$WORK/plan/hosts" \
	"$BIN/gnn-cli" predict --sampler "tcp://sampler:$sport" --nodes 0,1,1999 "${CLI_TLS[@]}" \
	>"$WORK/predict.json" 2>"$WORK/predict.err"
prc=$?
check_dump inference_job_predicts "the inference Job exits 0 (got $infer_rc) after waiting for result.json; summary.json on the data claim; gnn-cli predict through a sampler answers 3 nodes (got $prc: $(head -c 200 "$WORK/predict.err"))" \
	"${INFER:-none}" bash -c "[ '$infer_rc' = 0 ] && grep -q 'waiting_for what=result.json' '$WORK/logs/$INFER.log' &&
		grep -q infer_summary '$WORK/logs/$INFER.log' && [ -s '$preds' ] && [ $prc = 0 ] &&
		[ \"\$(jq '.predictions | length' '$WORK/predict.json')\" = 3 ]"

# ---- helm test ----------------------------------------------------------------
if [ -n "$TESTPOD" ]; then
	t0=$SECONDS
	timeout 120 ip netns exec "${NS_OF[$TESTPOD]}" unshare --uts /bin/sh "$WORK/plan/pod-$TESTPOD.sh" >"$WORK/logs/$TESTPOD.log" 2>&1
	rc=$?
	check_dump helm_test_pod_passes "the helm test pod finds every graph store, sampler and trainer ready (/readyz 200)" \
		"$TESTPOD" bash -c "[ $rc = 0 ] && grep -q 'all components ready' '$WORK/logs/$TESTPOD.log'"
	echo "  (helm test pod: $((SECONDS - t0))s)"
else
	fail helm_test_pod_passes "the chart renders no helm test pod"
fi

# TLS is the chart's default: every graph store, sampler and trainer ran
# mutual TLS on the data plane, the trainers on their ring too, and the
# helm test pod asked over HTTPS.
tls_bad=""
while IFS=$'\t' read -r pod comp addr hook rest; do
	case $comp in graphstore | sampler | trainer) ;; *) continue ;; esac
	grep -q ' links domain=data tls=mutual ' "$WORK/logs/$pod.log" || tls_bad="$tls_bad $pod(data)"
	[ "$comp" = trainer ] && { grep -q ' links domain=ring tls=mutual ' "$WORK/logs/$pod.log" || tls_bad="$tls_bad $pod(ring)"; }
done <"$WORK/plan/pods.tsv"
grep -q 'ok   .* https://' "$WORK/logs/$TESTPOD.log" || tls_bad="$tls_bad $TESTPOD(https)"
check pods_run_tls "every graph store, sampler and trainer logs links domain=data tls=mutual, the trainers domain=ring tls=mutual, the helm test pod asks over https; not:$tls_bad" \
	[ -z "$tls_bad" ]

# Finished trainers stay up (--on-finish serve) with their metrics.
# (In a file: a help text may hold a quote, such as the embedding metrics'.)
ip netns exec "${NS_OF[$TESTPOD]}" curl -s -m 5 "${SCRAPE[@]}" "$SCHEME://${ADDR_OF[$T0]}:$(sed -n 's/.*--http-port=\([0-9]*\).*/\1/p' "$WORK/plan/pod-$T0.sh")/metrics" >"$WORK/metrics-served-$T0.txt"
check finished_trainer_serves_metrics "trainer-0 still serves /metrics after the summary" \
	bash -c "kill -0 ${PID_OF[$T0]} && grep -q '^gnn_trainer_' '$WORK/metrics-served-$T0.txt'"

# Every metric family any pod serves is documented in docs/metrics.md (the
# scrape of each graph store, sampler and trainer, after training).
undoc=""
while IFS=$'\t' read -r pod comp addr hook rest; do
	case $comp in graphstore | sampler | trainer) ;; *) continue ;; esac
	port=$(sed -n 's/.*--http-port=\([0-9]*\).*/\1/p' "$WORK/plan/pod-$pod.sh")
	ip netns exec "${NS_OF[$TESTPOD]}" curl -s -m 5 "${SCRAPE[@]}" "$SCHEME://$addr:$port/metrics" >"$WORK/metrics-$pod.txt"
	for f in $(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$WORK/metrics-$pod.txt"); do
		grep -q "\`$f[\`{]" "$ROOT/docs/metrics.md" || undoc="$undoc $f"
	done
done <"$WORK/plan/pods.tsv"
undoc=$(tr ' ' '\n' <<<"$undoc" | sort -u | tr '\n' ' ')
check metrics_documented "every served metric is in docs/metrics.md; missing:$undoc" \
	bash -c "[ -z '$(tr -d ' ' <<<"$undoc")' ] && [ \$(cat '$WORK'/metrics-*.txt | grep -c '^# TYPE') -gt 30 ]"

# ---- restarts: nothing is redone ---------------------------------------------------
for t in $TRAINERS; do kill -TERM "${PID_OF[$t]}"; done
rcs=""
for t in $TRAINERS; do wait "${PID_OF[$t]}"; rcs="$rcs$?"; done
check serving_trainer_stops_on_sigterm "finished trainers exit 0 on SIGTERM" bash -c "[ '$rcs' = '$(printf '0%.0s' $TRAINERS)' ]"
t0=$SECONDS
for t in $TRAINERS; do start "$t" "$t.restart"; done
wait_for 120 grep -q ' summary ' "$WORK/logs/$T0.restart.log"
check_dump restarted_trainers_not_retrained "restarted trainers find the finished run: already_finished, the same summary, no epoch trained" \
	"$T0.restart" bash -c "grep -q already_finished '$WORK/logs/$T0.restart.log' && ! grep -q ' epoch epoch=' '$WORK/logs/$T0.restart.log' &&
		[ \"\$(grep ' summary ' '$WORK/logs/$T0.restart.log' | tail -n 1 | grep -o 'test_acc=[0-9.]*')\" = \"$(grep -o 'test_acc=[0-9.]*' <<<"$summary0")\" ]"
echo "  (restarted trainers to summary: $((SECONDS - t0))s)"

start "$JOB" "$JOB.rerun"
wait "${PID_OF[$JOB]}"
rc=$?
check rerun_job_not_repartitioned "the Job run again exits 0 at once: already_partitioned" \
	bash -c "[ $rc = 0 ] && grep -q already_partitioned '$WORK/logs/$JOB.rerun.log' && ! grep -q ' done out=' '$WORK/logs/$JOB.rerun.log'"
rc=none
if [ -n "$INFER" ]; then
	start "$INFER" "$INFER.rerun"
	wait "${PID_OF[$INFER]}"
	rc=$?
fi
check rerun_inference_not_redone "the inference Job run again exits 0 at once: already_inferred (got $rc)" \
	bash -c "[ $rc = 0 ] && grep -q already_inferred '$WORK/logs/$INFER.rerun.log' && ! grep -q layer_done '$WORK/logs/$INFER.rerun.log'"
# Pods are stopped as Kubernetes stops them (SIGTERM): every process exits
# 0, and no log holds a sanitizer report (with the SAN=1 build).
rcs=""
bad_pods=""
alive=()
for p in "${!PID_OF[@]}"; do
	kill -0 "${PID_OF[$p]}" 2>/dev/null && alive+=("$p") && kill -TERM "${PID_OF[$p]}"
done
for p in "${alive[@]}"; do
	timeout 15 tail --pid="${PID_OF[$p]}" -f /dev/null
	wait "${PID_OF[$p]}"
	rc=$?
	[ $rc = 0 ] || { rcs="$rcs $p=$rc"; bad_pods="$bad_pods $p"; }
done
san=$(grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$WORK/logs"/*.log 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
check pods_stop_cleanly "every pod exits 0 on SIGTERM, no sanitizer report (exits:${rcs:- all 0}; reports: ${san:-none})" \
	bash -c "[ -z '$rcs' ] && [ -z '$san' ] && [ ${#alive[@]} -ge 6 ]"
for p in $bad_pods; do logtail "$p" 20; done
echo "  (chart_run total: $((SECONDS - t_start))s)"
