#!/usr/bin/env bash
# make test-cluster: the chart, with its default values, on a real Kubernetes.
#
# Which cluster:
#   - $KUBECONFIG set: that cluster (kind, minikube, a cloud one). The image
#     is GNN_TEST_IMAGE (REPO:TAG, pulled by the cluster) or, on a kind
#     cluster, built here and loaded with `kind load`; otherwise SKIP.
#   - else ../shared/k8s (a real single-node Kubernetes 1.20; needs root):
#     brought up when it is not running, and down again at the end if this
#     script brought it up; the image is built (make images) and loaded.
#   - neither: SKIP, saying why (a user's clone has no ../shared).
#
# What it checks, each a PASS/FAIL line (docs/kubernetes.md, "How this is
# tested"):
#   1. the rendered chart (defaults and every ci/*-values.yaml) passes the
#      API server's own validation: server-side dry runs, plain and
#      server-side apply (what helm 4 does);
#   2. `helm install` with default values: the partitioner Job completes,
#      every pod becomes Ready, trainer-0's log ends with its summary (then
#      only serving_result, result_serving), a useful test accuracy, equal parameters on
#      both ranks, `helm test` passes;
#   3. a real Prometheus (Debian's, run on this machine with
#      kubernetes_sd_configs pod discovery, the chart's scrape annotations
#      and docs/operations.md's relabelling), started at the install,
#      scrapes every graph store, sampler and trainer pod: up == 1 and the
#      services' metrics, through its HTTP API. It loads the chart's alert
#      rules for the release (every duration threshold at 1 minute) and
#      evaluates each without an error; no alert fires during the
#      undisturbed run; every query of the dashboard returns data for it;
#      the last graph store held down (its StatefulSet scaled below the
#      partitions) takes GnnGraphStoresUnreachable from pending to firing,
#      and back resolves it. The alerts of the whole test, with when they
#      began, fired and went, are printed at the end ("alert:" lines);
#   4. day-2 operations during training, each costing at most STALL_MAX_S
#      of training progress (tests/cluster/stall.py on trainer-0's log
#      timestamps) and ending in one finished run: helm upgrade continuing
#      the finished run, delete graphstore-1, delete a sampler pod, rollout
#      restart of the samplers, scale them to 3 then 1, delete trainer-1,
#      helm upgrade --set trainer.epochs=N+5 during training; afterwards
#      Prometheus scrapes every new pod by itself;
#   5. `helm uninstall`: every pod's containers exit 0 before their
#      deletion deadline (terminationGracePeriodSeconds); `helm install`
#      again finds the finished run on the retained claims.
# Bounded: every wait has its own limit, and the whole run TEST_BUDGET_S.
# Cleans up: the release, its namespace (claims included), the volumes it
# used (../shared/k8s only), the cluster if it started it. Prints a summary
# table, then "N passed, N failed, N skipped".
# Usage: tests/cluster/run.sh [BUILD_DIR]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(mkdir -p "${1:-$ROOT/build}" && cd "${1:-$ROOT/build}" && pwd)
K=${GNN_K8S_CLUSTER:-$ROOT/../shared/k8s/cluster}
NS=${GNN_TEST_NAMESPACE:-gnn-dist-test}
REL=gnn-dist
CHART=$ROOT/charts/gnn-dist
STALL_MAX_S=${STALL_MAX_S:-15}
# The stall allowed when one of a partition's two graph stores is deleted.
REPLICA_STALL_MAX_S=${REPLICA_STALL_MAX_S:-2}
TEST_BUDGET_S=${TEST_BUDGET_S:-1500}
MIN_TEST_ACC=0.85   # the default run reaches 0.927 here (docs/kubernetes.md)
WORK=$(mktemp -d /tmp/gnn-cluster.XXXXXX)
T_BEGIN=$SECONDS
pass=0 failed=0 skipped=0
ROWS=()     # the summary table
STARTED_CLUSTER=0
MODE=

say() { echo "$(date -u +%H:%M:%S) $*" >&2; }
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
check() {  # check NAME WHAT COMMAND...
	local name=$1 what=$2
	shift 2
	if "$@"; then ok "$name"; else bad "$name" "$what"; return 1; fi
}
row() { ROWS+=("$(printf '%-52s %s' "$1" "$2")"); }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
left() { echo $((TEST_BUDGET_S - (SECONDS - T_BEGIN))); }
kc() { kubectl -n "$NS" "$@"; }

# wait_until SECONDS WHAT COMMAND...: polls every second, bounded by the
# test budget too; logs what it waits for every 15 s.
wait_until() {
	local limit=$1 what=$2 t0=$SECONDS next=15
	shift 2
	[ "$limit" -gt "$(left)" ] && limit=$(left)
	until "$@" >/dev/null 2>&1; do
		if [ $((SECONDS - t0)) -ge "$limit" ]; then
			say "gave up waiting for $what after ${limit}s"
			return 1
		fi
		if [ $((SECONDS - t0)) -ge $next ]; then
			say "waiting for $what ($((SECONDS - t0))s)"
			next=$((next + 15))
		fi
		sleep 1
	done
}

# Stops every process this script started in the background, with their
# children (the kubectl of a loop or pipeline), and waits for them: TERM,
# then KILL after 2 s.
kill_tree() {  # SIGNAL PID
	local c
	for c in $(pgrep -P "$2"); do kill_tree "$1" "$c"; done
	kill "-$1" "$2" 2>/dev/null
}
stop_bg() {
	local c
	for c in $(pgrep -P $$); do kill_tree TERM "$c"; done
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ -z "$(pgrep -P $$)" ] && break
		sleep 0.2
	done
	for c in $(pgrep -P $$); do kill_tree KILL "$c"; done
	wait 2>/dev/null
}

finish() {
	stop_bg
	prom_netns_down
	if [ -n "$MODE" ]; then
		helm uninstall "$REL" -n "$NS" --wait --timeout 120s >/dev/null 2>&1
		kubectl delete namespace "$NS" --wait --timeout=120s >/dev/null 2>&1
		[ "$MODE" = shared ] && free_volumes
	fi
	# What a failure needs to be understood: trainer-0's log, Prometheus'.
	mkdir -p "$BUILD/test-cluster" && cp "$WORK"/*.log "$WORK"/*.jsonl "$BUILD/test-cluster/" 2>/dev/null
	if [ "$STARTED_CLUSTER" = 1 ]; then
		say "cluster down (this run brought it up)"
		"$K" down >"$WORK/cluster-down.log" 2>&1 || tail -n 5 "$WORK/cluster-down.log" >&2
	fi
	rm -rf "$WORK"
}
trap finish EXIT

summary_and_exit() {
	echo
	echo "== make test-cluster ($MODE cluster, namespace $NS, $((SECONDS - T_BEGIN)) s in all)"
	local r
	for r in "${ROWS[@]}"; do echo "  $r"; done
	echo "$pass passed, $failed failed, $skipped skipped"
	[ "$failed" = 0 ]
	exit
}
skip_all() {
	skip test_cluster "$1"
	summary_and_exit
}

# ../shared/k8s only: volumes whose claim is gone are emptied and offered
# again (its README), so runs do not use up the 12 volumes; every free one
# is made root-owned 0755, so that the chart cannot rely on world-writable
# volumes (kind's and k3s' are 0777).
free_volumes() {
	local pv path
	for pv in $(kubectl get pv -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.phase}{" "}{.spec.claimRef.namespace}{"\n"}{end}' 2>/dev/null |
		awk -v ns="$NS" '$2 == "Released" && $3 == ns { print $1 }'); do
		path=$(kubectl get pv "$pv" -o jsonpath='{.spec.local.path}')
		[ -n "$path" ] && [ -d "$path" ] && find "$path" -mindepth 1 -delete
		kubectl patch pv "$pv" --type json -p '[{"op":"remove","path":"/spec/claimRef"}]' >/dev/null
	done
	for pv in $(kubectl get pv -o jsonpath='{range .items[?(@.status.phase=="Available")]}{.metadata.name}{"\n"}{end}' 2>/dev/null); do
		path=$(kubectl get pv "$pv" -o jsonpath='{.spec.local.path}')
		[ -n "$path" ] && [ -d "$path" ] && chown root:root "$path" && chmod 0755 "$path"
	done
}

# ---- the cluster and the image --------------------------------------------
# The kubeconfig `cluster env` sets: a KUBECONFIG pointing there is ours.
shared_kubeconfig() {
	[ -x "$K" ] && "$K" env 2>/dev/null | sed -n 's/.*KUBECONFIG=\([^ ]*\).*/\1/p' | head -n 1
}

choose_cluster() {
	if [ -n "${KUBECONFIG:-}" ] && [ "$KUBECONFIG" != "$(shared_kubeconfig)" ]; then
		MODE=user
		if ! command -v helm >/dev/null || ! command -v kubectl >/dev/null; then
			"$ROOT/tests/k8s/install-tools.sh" || skip_all "helm and kubectl are missing and could not be installed"
			PATH=$ROOT/build/k8s-tools/bin:$PATH
		fi
		kubectl version >/dev/null 2>&1 || skip_all "KUBECONFIG=$KUBECONFIG: the cluster does not answer"
		return
	fi
	[ -x "$K" ] || skip_all "no KUBECONFIG and no cluster harness at $K (CI has ../shared/k8s)"
	[ "$(id -u)" = 0 ] || skip_all "../shared/k8s needs root"
	MODE=shared
	if ! "$K" status >/dev/null 2>&1; then
		say "cluster up"
		STARTED_CLUSTER=1
		"$K" up >"$WORK/cluster-up.log" 2>&1 || {
			tail -n 20 "$WORK/cluster-up.log"
			bad cluster_up "../shared/k8s/cluster up failed (last lines above)"
			summary_and_exit
		}
		row "cluster up" "$(grep -o 'took [0-9]*s' "$WORK/cluster-up.log" | tail -n 1)"
	fi
	eval "$("$K" env)"
	command -v python3 >/dev/null || skip_all "python3 is missing"
	free_volumes
}

# Sets IMAGE_SET (helm flags) and loads the image where needed.
IMAGE_SET=() IMAGE_VARS=()
prepare_image() {
	local tag t0
	tag=$(sed -n 's/^appVersion: *"*\([^"]*\)"*$/\1/p' "$CHART/Chart.yaml")
	if [ -n "${GNN_TEST_IMAGE:-}" ]; then
		IMAGE_SET=(--set "image.repository=${GNN_TEST_IMAGE%:*}" --set "image.tag=${GNN_TEST_IMAGE##*:}")
		row "image" "$GNN_TEST_IMAGE (pulled by the cluster)"
		return
	fi
	if [ "$MODE" = user ] && ! { command -v kind >/dev/null && kubectl config current-context | grep -q '^kind-'; }; then
		skip_all "a cluster from KUBECONFIG needs GNN_TEST_IMAGE=REPO:TAG (an image it can pull), or kind"
	fi
	t0=$(now)
	if [ "$MODE" = shared ]; then
		# No registry here: podman, and the base image from Debian's archive
		# (docker/debian-base.sh), as `make test-images` does.
		local missing=""
		command -v podman >/dev/null || missing="$missing podman"
		[ -x /usr/sbin/runc ] || missing="$missing runc"
		command -v debootstrap >/dev/null || missing="$missing debootstrap"
		if [ -n "$missing" ]; then
			say "installing$missing"
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing; } \
				>"$WORK/apt.log" 2>&1 || { bad image_tools "cannot install$missing: $(tail -n 1 "$WORK/apt.log")"; summary_and_exit; }
		fi
		IMAGE_VARS=(IMAGE_ENGINE=podman IMAGE_DEBOOTSTRAP=1)
	fi
	if ! make -C "$ROOT" --no-print-directory images BUILD="$BUILD" "${IMAGE_VARS[@]}" >"$WORK/images.log" 2>&1; then
		tail -n 15 "$WORK/images.log"
		bad image_builds "make images failed (last lines above)"
		summary_and_exit
	fi
	if [ "$MODE" = shared ]; then
		"$K" load-image "gnn-dist:$tag" >"$WORK/load.log" 2>&1 ||
			{ tail -n 5 "$WORK/load.log"; bad image_loads "cluster load-image failed"; summary_and_exit; }
	else
		local name=${KIND_CLUSTER_NAME:-$(kubectl config current-context | sed 's/^kind-//')}
		if command -v docker >/dev/null && docker image inspect "gnn-dist:$tag" >/dev/null 2>&1; then
			kind load docker-image "gnn-dist:$tag" --name "$name" >"$WORK/load.log" 2>&1
		else
			podman save "gnn-dist:$tag" -o "$WORK/image.tar" && kind load image-archive "$WORK/image.tar" --name "$name" >"$WORK/load.log" 2>&1
		fi || { tail -n 5 "$WORK/load.log"; bad image_loads "kind load failed"; summary_and_exit; }
	fi
	row "make images + load" "$(since "$t0") s (gnn-dist:$tag)"
}

# ---- 1. the API server's validation ----------------------------------------
server_validation() {
	local server vf name out bad_sets=""
	server=$(kubectl version -o json 2>/dev/null | jq -r .serverVersion.gitVersion)
	row "Kubernetes" "$server"
	kubectl create namespace "$NS" >/dev/null 2>&1
	for vf in "" "$CHART"/ci/*-values.yaml "$CHART"/examples/*-values.yaml; do
		name=${vf:+$(basename "$vf")}
		name=${name:-defaults}
		# The dashboard's ConfigMap in this namespace, not the example's
		# Grafana namespace (the dry runs name one namespace).
		if ! helm template "$REL" "$CHART" -n "$NS" ${vf:+-f "$vf"} --set "monitoring.dashboard.namespace=$NS" \
			--kube-version "$server" >"$WORK/render.yaml" 2>"$WORK/render.err"; then
			bad_sets="$bad_sets $name(render: $(tail -n 1 "$WORK/render.err"))"
			continue
		fi
		# A ServiceMonitor and a PrometheusRule need prometheus-operator's
		# CRDs, which this cluster may lack; everything else must pass (the
		# dashboard's ConfigMap too).
		if ! kubectl api-resources 2>/dev/null | grep -q '^servicemonitors '; then
			awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" } !/\nkind: (ServiceMonitor|PrometheusRule)\n/' "$WORK/render.yaml" >"$WORK/render2.yaml"
			mv "$WORK/render2.yaml" "$WORK/render.yaml"
		fi
		out=$(kc apply --dry-run=server -f "$WORK/render.yaml" 2>&1) ||
			bad_sets="$bad_sets $name(apply: $(grep -m1 -i error <<<"$out"))"
		out=$(kc apply --dry-run=server --server-side --field-manager=helm -f "$WORK/render.yaml" 2>&1) ||
			bad_sets="$bad_sets $name(server-side apply: $(grep -m1 -i error <<<"$out"))"
	done
	check server_side_validation "every rendered value set passes the API server's dry runs:$bad_sets" \
		[ -z "$bad_sets" ]
}

# ---- 2. install with default values ---------------------------------------
ready_count() {  # pods of graph stores, samplers and trainers that are Ready
	kc get pods -l 'app.kubernetes.io/component in (graphstore,sampler,trainer)' -o json |
		jq '[.items[] | select(.metadata.deletionTimestamp == null) | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
all_ready() { [ "$(ready_count)" = "$1" ]; }
job_complete() {
	[ "$(kc get job -l app.kubernetes.io/component=partition -o jsonpath='{.items[*].status.succeeded}')" = 1 ]
}
infer_complete() {
	[ "$(kc get job -l app.kubernetes.io/component=inference -o jsonpath='{.items[*].status.succeeded}')" = 1 ]
}
has_summary() { kc logs "$1" -c trainer 2>/dev/null | grep -q ' summary '; }
summary_of() { kc logs "$1" -c trainer 2>/dev/null | grep ' summary ' | tail -n 1 | sed 's/.* summary //'; }
kv() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -n 1; }

# TLS, on by default: the scheme of the HTTP ports, the Secret holding
# Prometheus' client certificate, the name the servers' certificates carry
# for scrapers (set by install_defaults from the release's values).
SCHEME=http SCRAPER_SECRET= METRICS_NAME=
tls_settings() {
	if [ "$(helm get values "$REL" -n "$NS" -a -o json | jq -r .tls.enabled)" = true ]; then
		SCHEME=https SCRAPER_SECRET=gnn-dist-scraper-tls METRICS_NAME=gnn-dist
	fi
}
scraper_files() {  # DIR: ca.crt, tls.crt, tls.key of the scraper's Secret
	local k
	mkdir -p "$1" && chmod 700 "$1"
	for k in ca.crt tls.crt tls.key; do
		kc get secret "$SCRAPER_SECRET" -o json | jq -r --arg k "$k" '.data[$k]' | base64 -d >"$1/$k" && [ -s "$1/$k" ] || return 1
	done
}

install_defaults() {
	local t0 t_job t_ready t_sum s0 s1 after out
	t0=$(now)
	if ! out=$(helm install "$REL" "$CHART" -n "$NS" "${IMAGE_SET[@]}" 2>&1); then
		bad helm_install_defaults "helm install with default values failed: $(tail -n 3 <<<"$out")"
		summary_and_exit
	fi
	ok helm_install_defaults
	T_INSTALL=$t0
	tls_settings
	NPODS=$(($(helm get values "$REL" -n "$NS" -a -o json | jq '.partition.parts + .sampler.replicas + .trainer.replicas')))
	# Prometheus from the start: the undisturbed run is where no alert
	# may fire, and every dashboard panel must show data.
	start_prometheus && phase undisturbed_run
	wait_until 300 "the partitioner Job" job_complete && t_job=$(since "$t0") || t_job=
	check job_completes "the partitioner Job completes" [ -n "$t_job" ]
	wait_until 300 "$NPODS pods Ready" all_ready "$NPODS" && t_ready=$(since "$t0") || t_ready=
	check pods_ready "every graph-store, sampler and trainer pod Ready ($(ready_count)/$NPODS)" [ -n "$t_ready" ]
	wait_until 600 "trainer-0's summary" has_summary trainer-0 && t_sum=$(since "$t0") || t_sum=
	s0=$(summary_of trainer-0)
	s1=$(summary_of trainer-1)
	after=$(kc logs trainer-0 -c trainer | sed -n '/ summary /,$p' | tail -n +2 | grep -v ' serving_result \| result_serving ')
	check trainer0_log_ends_with_summary "kubectl logs trainer-0 ends with 'summary test_acc=...' then only serving_result, result_serving (got: ${s0:-no summary}${after:+; then: $after})" \
		bash -c "[ -n '$s0' ] && [ -z '$after' ]"
	ACC=$(kv test_acc "$s0")
	check useful_accuracy "default run's test_acc >= $MIN_TEST_ACC (got ${ACC:-none})" \
		awk -v a="${ACC:-0}" -v m="$MIN_TEST_ACC" 'BEGIN { exit !(a >= m) }'
	check ranks_agree "both ranks end with the same params_crc ($(kv params_crc "$s0") vs $(kv params_crc "$s1"))" \
		bash -c "[ -n '$(kv params_crc "$s0")' ] && [ '$(kv params_crc "$s0")' = '$(kv params_crc "$s1")' ]"
	row "install -> Job complete" "${t_job:-never} s"
	row "install -> all $NPODS pods Ready" "${t_ready:-never} s"
	row "install -> trainer-0 summary" "${t_sum:-never} s ($s0)"
	t0=$(now)
	if helm test "$REL" -n "$NS" --timeout 300s >"$WORK/helm-test.log" 2>&1; then
		ok helm_test
	else
		bad helm_test "helm test failed: $(tail -n 3 "$WORK/helm-test.log" | tr '\n' ' ')"
	fi
	row "helm test" "$(since "$t0") s"
	check_inference "$(kv params_crc "$s0")"
}

# The inference Job after the run, and a lookup through a sampler pod: the
# graph stores serve the predictions of the run whose params_crc is $1.
check_inference() {
	local t0 t_inf smp out
	t0=$(now)
	wait_until 300 "the inference Job" infer_complete && t_inf=$(since "$t0") || t_inf=
	check inference_job_completes "the inference Job completes: predictions for every node" [ -n "$t_inf" ]
	smp=$(kc get pods -l app.kubernetes.io/component=sampler -o jsonpath='{.items[0].metadata.name}')
	# The Service name: with TLS the samplers' certificate names it (and
	# gnn-cli finds the pod's GNN_TLS_* variables); mbed TLS matches no
	# addresses, and localhost is ::1 first in a pod, where nothing listens.
	out=$(kc exec "$smp" -c sampler -- gnn-cli predict --sampler tcp://sampler:7100 --nodes 0,1,2 2>&1)
	check predict_lookup "gnn-cli predict in a sampler pod answers 3 nodes with params_crc $1 (got: $(head -c 300 <<<"$out"))" \
		bash -c "[ \"\$(jq '.predictions | length' <<<'$out' 2>/dev/null)\" = 3 ] && [ \"\$(jq -r .params_crc <<<'$out')\" = '$1' ]"
	row "summary -> inference Job complete" "${t_inf:-never} s"
}

# ---- 3. Prometheus ---------------------------------------------------------
# Where it runs. On ../shared/k8s: in a network namespace on the cluster's
# pod bridge, as a Prometheus pod would. Not on the node itself: there, a
# scrape into a deleted pod's address holds the 1.20 kubelet's clean-up of
# that pod back until its next container garbage collection (measured: a
# StatefulSet pod replaced after 61 s with a curl a second from the node
# into it, 4-5 s without, 12 s with the same curl from another pod), which
# would be measured as stalls of the day-2 operations. Elsewhere: on this
# machine, when the pod addresses answer from here.
PROM= PROM_NETNS= PROM_ADDR=127.0.0.1
prom_netns_up() {
	local br
	br=$(ip -o -4 addr show | awk '$4 == "10.244.0.1/24" { print $2 }')
	[ -n "$br" ] || return 1
	PROM_NETNS=gnn-test-prom PROM_ADDR=10.244.0.3   # below the pods' 10.244.0.10-254
	ip netns del "$PROM_NETNS" 2>/dev/null
	ip netns add "$PROM_NETNS" && ip link add gnntestprom type veth peer name eth0 netns "$PROM_NETNS" &&
		ip link set gnntestprom master "$br" up && ip -n "$PROM_NETNS" addr add "$PROM_ADDR/24" dev eth0 &&
		ip -n "$PROM_NETNS" link set eth0 up && ip -n "$PROM_NETNS" link set lo up
}
prom_netns_down() {
	[ -n "$PROM_NETNS" ] && ip netns del "$PROM_NETNS" 2>/dev/null
	PROM_NETNS=
}
# spawn_in_prom_net CMD... &: runs CMD where Prometheus runs (exec: $! is CMD)
spawn_in_prom_net() {
	if [ -n "$PROM_NETNS" ]; then exec ip netns exec "$PROM_NETNS" "$@"; else exec "$@"; fi
}
start_prometheus() {
	local ip port=$((19090 + RANDOM % 500)) sd_port=$((19600 + RANDOM % 300)) bin
	bin=$(command -v prometheus || echo /usr/bin/prometheus)
	[ -x "$bin" ] || { skip prometheus "no prometheus binary (Debian package prometheus)"; return 1; }
	if [ "$MODE" = shared ]; then
		prom_netns_up || { bad prometheus_network "could not make a network namespace on the pod bridge"; return 1; }
	elif ! wait_until 120 "trainer-0's /healthz from this machine" pod_answers trainer-0; then
		skip prometheus "pod IPs ($(kc get pod trainer-0 -o jsonpath='{.status.podIP}')) are not reachable from this machine: run Prometheus in the cluster (ServiceMonitor) instead"
		return 1
	fi
	render_rules || { bad alert_rules_render "tests/alerts/rules_file.sh failed: $(tail -n 2 "$WORK/rules.err")"; return 1; }
	# Debian's Prometheus lacks Kubernetes discovery: pod_sd.py serves the
	# same targets and __meta_kubernetes_pod_* labels from the API server.
	spawn_in_prom_net python3 "$ROOT/tests/cluster/pod_sd.py" "$sd_port" "$NS" >"$WORK/pod_sd.log" 2>&1 &
	# With TLS (the chart's default) Prometheus scrapes over HTTPS with the
	# scraper's client certificate from the chart's Secret, checking the
	# pods' certificates against the data plane's CA and the name they
	# carry for scrapers (targets are addresses).
	local tls=""
	if [ "$SCHEME" = https ]; then
		scraper_files "$WORK/scraper" || { bad prometheus_tls "no scraper certificate in Secret $SCRAPER_SECRET"; return 1; }
		tls="    tls_config:
      ca_file: $WORK/scraper/ca.crt
      cert_file: $WORK/scraper/tls.crt
      key_file: $WORK/scraper/tls.key
      server_name: $METRICS_NAME"
	fi
	cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 2s
rule_files:
  - $WORK/rules.yaml
scrape_configs:
  # The usual pod-annotation job (prometheus.io/scrape, /port, /path).
  - job_name: kubernetes-pods
    http_sd_configs:
      - url: http://127.0.0.1:$sd_port/
        refresh_interval: 2s
$tls
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: "true"
      - source_labels: [__meta_kubernetes_pod_phase]
        action: drop
        regex: Pending|Succeeded|Failed
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scheme]
        target_label: __scheme__
        regex: (https?)
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
        target_label: __metrics_path__
        regex: (.+)
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        regex: ([^:]+)(?::\d+)?;(\d+)
        replacement: \$1:\$2
        target_label: __address__
      # docs/operations.md, "Scraping": the labels the rules and the
      # dashboard select on
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_instance]
        target_label: release
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_component]
        target_label: component
EOF
	spawn_in_prom_net "$bin" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
		--web.listen-address="$PROM_ADDR:$port" >"$WORK/prometheus.log" 2>&1 &
	PROM=http://$PROM_ADDR:$port
	wait_until 60 "Prometheus ready" curl -sf "$PROM/-/ready" ||
		{ bad prometheus_starts "$(tail -n 3 "$WORK/prometheus.log")"; PROM=; return 1; }
	poll_alerts &
}
pod_answers() {  # POD: its /healthz answers from this machine
	local ip
	ip=$(kc get pod "$1" -o jsonpath='{.status.podIP}')
	[ -n "$ip" ] && timeout 5 curl -sfk "$SCHEME://$ip:9102/healthz" >/dev/null
}
# prom QUERY: the result vector, one "pod value" line each
prom() {
	curl -sf --get "$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[] | "\(.metric.pod) \(.value[1])"'
}
current_pods() {
	kc get pods -l 'app.kubernetes.io/component in (graphstore,sampler,trainer)' -o json |
		jq -r '.items[] | select(.metadata.deletionTimestamp == null) | select(.status.phase == "Running") | .metadata.name' | sort
}
# Every running pod is up in Prometheus, and nothing else is.
all_scraped() {
	local want got
	want=$(current_pods)
	got=$(prom 'up == 1' | awk '{ print $1 }' | sort)
	[ -n "$want" ] && [ "$want" = "$got" ]
}
check_prometheus() {  # LABEL
	local t0 missing
	[ -n "$PROM" ] || return
	t0=$(now)
	if wait_until 90 "Prometheus to scrape every pod" all_scraped; then
		ok "prometheus_scrapes_every_pod_$1"
	else
		missing=$(comm -23 <(current_pods) <(prom 'up == 1' | awk '{ print $1 }' | sort) | tr '\n' ' ')
		bad "prometheus_scrapes_every_pod_$1" "pods without up == 1: ${missing:-none} (extra targets: $(comm -13 <(current_pods) <(prom 'up == 1' | awk '{ print $1 }' | sort) | tr '\n' ' '))"
	fi
	row "prometheus: every pod up ($1)" "$(since "$t0") s, $(prom 'up == 1' | wc -l) targets"
}
# Every pod's series through Prometheus' API, and work done. Each sampler
# replica must export its counter, but not every one need have built a
# minibatch: a trainer learns of a replica that became ready after its
# last DNS lookup only at the next (--resolve-interval-s, 30 s), and the
# default run's first 10 epochs can finish sooner (seen once in CI: one
# replica at 0). The samplers together must have built some.
check_metrics_present() {
	local q n bad_q=""
	[ -n "$PROM" ] || return
	for q in 'gnn_trainer_epoch{component="trainer"} >= 10' 'gnn_trainer_test_accuracy{component="trainer"} > 0' \
		'gnn_graphstore_requests_total{component="graphstore"} > 0' 'gnn_sampler_minibatches_total{component="sampler"} >= 0'; do
		n=$(prom "count by (pod) ($q)" | wc -l)
		case $q in gnn_trainer*) want=$(kc get sts trainer -o jsonpath='{.spec.replicas}') ;;
			gnn_graphstore*) want=$(kc get sts graphstore -o jsonpath='{.spec.replicas}') ;;
			*) want=$(kc get deploy sampler -o jsonpath='{.spec.replicas}') ;; esac
		[ "$n" = "$want" ] || bad_q="$bad_q [$q: $n series, want $want]"
	done
	q='sum(gnn_sampler_minibatches_total{component="sampler"}) > 0'
	n=$(prom "$q" | wc -l)
	[ "$n" = 1 ] || bad_q="$bad_q [$q: no result]"
	check prometheus_training_metrics "the services' metrics through Prometheus' API:$bad_q" [ -z "$bad_q" ]
}

# ---- 3a. the alert rules and the dashboard (docs/operations.md) -----------
# The rules as the chart's PrometheusRule has them for this release (scoped
# to its namespace and release labels), with every duration threshold at
# one minute, so that the few minutes of this test can tell a rule that
# fires from one that holds back (the defaults are 3 to 10 minutes).
TEST_ALERT_SETS=()
for a in trainingStalled componentDown componentNotReady admissionRefusals storeCallTimeouts storeErrors; do
	TEST_ALERT_SETS+=(--set "monitoring.alerts.$a.minutes=1")
done
render_rules() {
	bash "$ROOT/tests/alerts/rules_file.sh" helm -n "$NS" --set monitoring.rules.allReleases=false \
		"${TEST_ALERT_SETS[@]}" >"$WORK/rules.yaml" 2>"$WORK/rules.err"
}
# Where the test is, for the alert timeline: "UNIX NAME" lines.
phase() { echo "$(now) $1" >>"$WORK/phases"; }
# Every 2 s, the alerts Prometheus has pending or firing (prom_checks.py
# timeline reads it).
poll_alerts() {
	while :; do
		curl -sf --max-time 2 "$PROM/api/v1/alerts" |
			jq -c --arg t "$(now)" '{t: ($t | tonumber), alerts: .data.alerts}' >>"$WORK/alerts.jsonl"
		sleep 2
	done
}
alert_state() {  # ALERTNAME: prints firing, pending or none; fails when Prometheus does not answer
	local json
	json=$(curl -sf --max-time 5 "$PROM/api/v1/alerts") || return 1
	jq -r --arg n "$1" '[.data.alerts[] | select(.labels.alertname == $n) | .state]
		| if index("firing") then "firing" elif length > 0 then "pending" else "none" end' <<<"$json"
}
alert_is() { [ "$(alert_state "$1")" = "$2" ]; }  # ALERTNAME STATE
# Each rule loaded and evaluated without an error against the live series
# (health "ok"; "err" with lastError, e.g. a many-to-many match).
rules_health() {
	curl -sf "$PROM/api/v1/rules" | jq -r '[.data.groups[].rules[]] | "\(length) \([.[] | select(.health != "ok") | "\(.name):\(.health):\(.lastError // "")"] | join(" "))"'
}
rules_healthy() {
	local h
	h=$(rules_health)
	[ "${h%% *}" = "$NRULES" ] && [ -z "${h#* }" ]
}
check_rules() {  # LABEL
	[ -n "$PROM" ] || return
	NRULES=$(grep -c '^ *- alert: ' "$WORK/rules.yaml")
	wait_until 30 "Prometheus to evaluate the $NRULES alert rules" rules_healthy
	check "alert_rules_loaded_$1" "Prometheus loaded the $NRULES rules of the chart's PrometheusRule and evaluates each without an error (got: $(rules_health))" rules_healthy
}
alerts_within() {  # STATE SECONDS: the alerts in that state at some time in the last SECONDS
	curl -sf --get "$PROM/api/v1/query" --data-urlencode "query=max_over_time(ALERTS{alertstate=\"$1\"}[$2s])" |
		jq -r '[.data.result[].metric | "\(.alertname){\(.pod // .graphstore // "")}"] | join(" ")'
}
# The undisturbed run, from helm install to the inference Job's end: no
# alert fired, and every query of the dashboard returned data.
check_undisturbed() {
	local w firing pending out
	[ -n "$PROM" ] || return
	w=$(awk -v a="$T_INSTALL" -v b="$(now)" 'BEGIN { printf "%d", b - a + 1 }')
	firing=$(alerts_within firing "$w")
	pending=$(alerts_within pending "$w")
	check undisturbed_run_fires_no_alert "no alert fired during the undisturbed run (${w} s from helm install; thresholds of 1 minute): fired: ${firing:-none}" \
		[ -z "$firing" ]
	row "undisturbed run: alerts" "fired: ${firing:-none}; pending at some point: ${pending:-none}"
	out=$(python3 "$ROOT/tests/cluster/prom_checks.py" panels "$PROM" "$CHART/monitoring/gnn-dist-dashboard.json" "$NS" "$REL" "$T_INSTALL" "$(now)" 2>&1)
	check dashboard_panels_have_data "every query of the dashboard (and its variables) returns data for the run; without: $(grep -v '^data ' <<<"$out" | tr '\n' ';')" \
		[ -n "$out" -a "$(grep -cv '^data ' <<<"$out")" = 0 ]
	row "dashboard queries with data" "$(grep -c '^data ' <<<"$out") of $(grep -c . <<<"$out")"
}
# graphstore-N (the last) held down, the StatefulSet scaled below the
# partitions: the samplers reach fewer stores, GnnGraphStoresUnreachable
# goes pending, then firing after its minute; scaled back, it resolves.
hold_graphstore_down() {
	local parts t0 t_pend= t_fire= t_back t_res= a=GnnGraphStoresUnreachable
	[ -n "$PROM" ] || return
	parts=$(kc get sts graphstore -o jsonpath='{.spec.replicas}')
	phase "graphstore-$((parts - 1))_held_down"
	say "holding graphstore-$((parts - 1)) down"
	t0=$(now)
	kc scale sts graphstore --replicas $((parts - 1)) >/dev/null
	wait_until 60 "$a pending" alert_is $a pending && t_pend=$(since "$t0")
	wait_until 120 "$a firing" alert_is $a firing && t_fire=$(since "$t0")
	phase "graphstore-$((parts - 1))_back"
	t_back=$(since "$t0")
	kc scale sts graphstore --replicas "$parts" >/dev/null
	wait_until 180 "$a resolved" alert_is $a none && t_res=$(since "$t0")
	check graphstore_down_alert "graphstore-$((parts - 1)) held down: $a pending (after ${t_pend:-never} s), firing (${t_fire:-never} s); back at ${t_back} s: resolved (${t_res:-never} s)" \
		[ -n "$t_pend" -a -n "$t_fire" -a -n "$t_res" ]
	row "graphstore-$((parts - 1)) held down: $a" "pending ${t_pend:-never} s, firing ${t_fire:-never} s, back ${t_back} s, resolved ${t_res:-never} s"
	wait_until 120 "graphstore-$((parts - 1)) and the samplers ready" all_ready "$NPODS"
}
# Every alert episode of the test, with when it began, fired and went.
report_alerts() {
	[ -n "$PROM" ] && [ -s "$WORK/alerts.jsonl" ] || return
	python3 "$ROOT/tests/cluster/prom_checks.py" timeline "$WORK/alerts.jsonl" "$WORK/phases" "$T_INSTALL" | sed 's/^/  alert: /'
}

# ---- 3b. TLS (the chart's default) ------------------------------------------
# Every service runs mutual TLS (its log says so at start), the trainers'
# ring too; what has no certificate of the data plane's CA is refused: a
# gnn-cli without TLS options against a graph store (it times out), /metrics
# without a client certificate (403), plain http (no answer); the scraper's
# certificate gets /metrics, anyone /readyz. The HTTPS requests come from
# where Prometheus runs (the pod network) and check the server's
# certificate against the CA and its name for scrapers.
in_prom_net() { if [ -n "$PROM_NETNS" ]; then ip netns exec "$PROM_NETNS" "$@"; else "$@"; fi; }
check_tls() {
	local smp ip port=9100 c_none c_cert c_ready plain cli_tls cli_plain logs_bad="" p
	if [ "$SCHEME" != https ]; then
		skip tls_refuses_the_uncertified "the release has tls.enabled=false"
		return
	fi
	smp=$(kc get pods -l app.kubernetes.io/component=sampler -o jsonpath='{.items[0].metadata.name}')
	for p in graphstore-0 "$smp" trainer-0; do
		kc logs "$p" 2>/dev/null | grep -q ' links domain=data tls=mutual ' || logs_bad="$logs_bad $p(data)"
	done
	kc logs trainer-0 2>/dev/null | grep -q ' links domain=ring tls=mutual ' || logs_bad="$logs_bad trainer-0(ring)"
	check tls_mutual_everywhere "graph store, sampler and trainer log links domain=data tls=mutual, the trainer domain=ring tls=mutual; missing:$logs_bad" \
		[ -z "$logs_bad" ]
	[ -d "$WORK/scraper" ] || scraper_files "$WORK/scraper"
	ip=$(kc get pod graphstore-0 -o jsonpath='{.status.podIP}')
	https() {  # CURL-ARGS... PATH: the HTTP status of https://$METRICS_NAME:$port/PATH at the pod's address
		local path=${*: -1}
		in_prom_net curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$WORK/scraper/ca.crt" \
			--connect-to "$METRICS_NAME:$port:$ip:$port" "${@:1:$#-1}" "https://$METRICS_NAME:$port$path"
	}
	c_none=$(https /metrics)
	c_cert=$(https --cert "$WORK/scraper/tls.crt" --key "$WORK/scraper/tls.key" /metrics)
	c_ready=$(https /readyz)
	in_prom_net curl -s -o /dev/null --max-time 3 "http://$ip:$port/metrics" && plain=answered || plain=refused
	check tls_metrics_need_client_cert "graphstore-0's /metrics over HTTPS: 403 without a client certificate (got $c_none), 200 with the scraper's ($c_cert); /readyz 200 without one ($c_ready); plain http no answer ($plain)" \
		test "$c_none/$c_cert/$c_ready/$plain" = 403/200/200/refused
	kc exec "$smp" -c sampler -- gnn-cli info --store tcp://graphstore-0.graphstore:7000 --timeout-ms 3000 --retries 0 >"$WORK/cli-tls.out" 2>&1 &&
		cli_tls=answered || cli_tls="failed: $(tail -n 1 "$WORK/cli-tls.out")"
	kc exec "$smp" -c sampler -- env -u GNN_TLS_CA -u GNN_TLS_CERT -u GNN_TLS_KEY \
		gnn-cli info --store tcp://graphstore-0.graphstore:7000 --timeout-ms 3000 --retries 0 >"$WORK/cli-plain.out" 2>&1 &&
		cli_plain=answered || cli_plain=refused
	check tls_refuses_the_uncertified "gnn-cli info against graphstore-0 from a sampler pod: with the pod's certificate $cli_tls, without TLS options $cli_plain" \
		test "$cli_tls/$cli_plain" = answered/refused
}

# ---- 4. day-2 operations ---------------------------------------------------
# trainer-0's log, across its incarnations (stall.py drops repeated lines),
# and every pod change with its time (stall.py: how long Kubernetes took to
# replace a StatefulSet pod).
capture_trainer_log() {
	while :; do
		kc logs -f trainer-0 -c trainer >>"$WORK/trainer-0.log" 2>/dev/null
		sleep 0.5
	done &
	kc get pods --watch --output-watch-events -o json 2>/dev/null |
		jq -c --unbuffered '{n: .object.metadata.name, u: .object.metadata.uid,
			d: (.object.metadata.deletionTimestamp != null),
			r: ([.object.status.containerStatuses[]? | select(.state.running != null)] | length > 0)}' |
		while read -r l; do echo "$(date +%s.%N) $l"; done >>"$WORK/pods.jsonl" &
}
last_epoch() { kc logs trainer-0 -c trainer 2>/dev/null | sed -n 's/.* epoch epoch=\([0-9]*\) .*/\1/p' | tail -n 1; }
epochs_after() {  # EPOCH: trainer-0 logged an epoch beyond it
	local e
	e=$(last_epoch)
	[ -n "$e" ] && [ "$e" -ge "$1" ]
}
ready_replicas() {  # DEPLOYMENT-OR-STS N: exactly N ready replicas and no pod terminating
	[ "$(kc get "$1" -o jsonpath='{.status.readyReplicas}')" = "$2" ] &&
		[ "$(kc get pods -l "app.kubernetes.io/component=${1#*/}" -o json | jq '[.items[] | select(.metadata.deletionTimestamp != null)] | length')" = 0 ]
}
pod_ready() {
	[ "$(kc get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
sts_ready() {  # STATEFULSET N: exactly N ready pods
	[ "$(kc get statefulset "$1" -o jsonpath='{.status.readyReplicas}')" = "$2" ]
}

# What a stalled run's pods were saying: the last lines of each trainer's,
# sampler's and graph store's log (CI keeps only this script's output).
pods_tail() {
	local p
	local restarts
	for p in $(kc get pods -l 'app.kubernetes.io/component in (trainer,sampler,graphstore)' -o name 2>/dev/null); do
		restarts=$(kc get "$p" -o jsonpath='{.status.containerStatuses[0].restartCount}' 2>/dev/null)
		echo "--- last lines of ${p#pod/} (restarts: ${restarts:-?}):" >&2
		kc logs "$p" --tail=25 2>&1 | cut -c1-400 >&2
		if [ "${restarts:-0}" != 0 ]; then
			echo "--- last lines of ${p#pod/}'s previous container:" >&2
			kc logs "$p" --previous --tail=25 2>&1 | cut -c1-400 >&2
		fi
	done
}
# day2 NAME RECOVERED-COMMAND [finished] [total=S] -- OPERATION...: runs
# the operation, waits (bounded) until RECOVERED-COMMAND holds and trainer-0
# has logged 2 epochs beyond the one before the operation, then measures
# the stall (stall.py) and checks it: our share at most STALL_MAX_S, or with
# total=S the whole stall, Kubernetes' replacing a pod included, at most S.
day2() {
	local name=$1 recovered=$2 mode="" total="" t_op e0 e_rec res stall
	shift 2
	[ "$1" = finished ] && { mode=finished; shift; }
	[ "${1%%=*}" = total ] && { total=${1#total=}; shift; }
	shift  # --
	e0=$(last_epoch)
	t_op=$(now)
	say "day-2: $name"
	phase "day2_$name"
	if ! "$@" >"$WORK/op.log" 2>&1; then
		bad "day2_$name" "the operation failed: $(tail -n 2 "$WORK/op.log" | tr '\n' ' ')"
		row "day-2: $name" "operation failed"
		return
	fi
	wait_until 180 "$name: recovered" bash -c "$recovered"
	e_rec=$(last_epoch)
	[ -n "$e_rec" ] && [ "$e_rec" -gt "$e0" ] || e_rec=$e0
	wait_until 180 "$name: 2 epochs beyond $e_rec" bash -c "epochs_after $((e_rec + 2)) || has_summary trainer-0"
	res=$(python3 "$ROOT/tests/cluster/stall.py" "$WORK/trainer-0.log" "$t_op" "$(now)" \
		${mode:+--finished} --pods "$WORK/pods.jsonl")
	if [ -n "$total" ]; then
		stall=$(kv stall_s "$res")
		check "day2_$name" "training went on within ${total}s of stall, replacing the pod included ($res)" \
			awk -v s="$stall" -v m="$total" 'BEGIN { exit !(s != "" && s <= m) }' || pods_tail
	else
		stall=$(kv ours_s "$res")
		check "day2_$name" "training went on within ${STALL_MAX_S}s of stall, not counting the time Kubernetes took to replace a StatefulSet pod ($res)" \
			awk -v s="$stall" -v m="$STALL_MAX_S" 'BEGIN { exit !(s != "" && s <= m) }' || pods_tail
	fi
	row "day-2: $name" "$res"
}
export -f ready_replicas pod_ready sts_ready kc epochs_after last_epoch has_summary
export NS

day2_operations() {
	local sampler e_now e_final s0 s1 target
	capture_trainer_log
	# A run long enough for the operations below; the last one sets the end.
	day2 upgrade_continues_finished_run "kubectl -n $NS rollout status statefulset/trainer --timeout=10s" finished -- \
		helm upgrade "$REL" "$CHART" -n "$NS" "${IMAGE_SET[@]}" --reuse-values --set trainer.epochs=100000
	day2 delete_graphstore_1 "pod_ready graphstore-1" -- kc delete pod graphstore-1 --wait=false
	sampler=$(kc get pods -l app.kubernetes.io/component=sampler -o jsonpath='{.items[0].metadata.name}')
	day2 delete_sampler_pod "ready_replicas deploy/sampler 2" -- kc delete pod "$sampler" --wait=false
	day2 rollout_restart_samplers "ready_replicas deploy/sampler 2" -- kc rollout restart deployment/sampler
	day2 scale_samplers_to_3 "ready_replicas deploy/sampler 3" -- kc scale deployment/sampler --replicas 3
	day2 scale_samplers_to_1 "ready_replicas deploy/sampler 1" -- kc scale deployment/sampler --replicas 1
	# A second store per partition (StatefulSet graphstore-r1; the samplers
	# roll out with the longer list, back at the release's count), then one
	# of partition 1's deleted: the other serves on, and training does not
	# wait for the new pod.
	day2 add_graphstore_replicas "sts_ready graphstore-r1 2 && kubectl -n $NS rollout status deployment/sampler --timeout=10s" -- \
		helm upgrade "$REL" "$CHART" -n "$NS" "${IMAGE_SET[@]}" --reuse-values --set graphstore.replicasPerPartition=2
	day2 delete_graphstore_replica "pod_ready graphstore-1" total=$REPLICA_STALL_MAX_S -- \
		kc delete pod graphstore-1 --wait=false
	day2 delete_trainer_1 "pod_ready trainer-1" -- kc delete pod trainer-1 --wait=false
	e_now=$(last_epoch)
	target=$((e_now + 5))
	day2 upgrade_epochs_n_plus_5 "kubectl -n $NS rollout status statefulset/trainer --timeout=10s" -- \
		helm upgrade "$REL" "$CHART" -n "$NS" "${IMAGE_SET[@]}" --reuse-values --set trainer.epochs=$target
	wait_until 300 "the continued run's summary" bash -c "kubectl -n $NS logs trainer-0 -c trainer | grep -q ' summary .* epochs=$target '"
	# trainer-1's too: a rank whose ring close hung at the end exits for a
	# restart when that holds its port (docs/reliability.md), and reports
	# the run again once restarted
	wait_until 120 "trainer-1's summary" bash -c "kubectl -n $NS logs trainer-1 -c trainer | grep -q ' summary .* epochs=$target '"
	s0=$(summary_of trainer-0)
	s1=$(summary_of trainer-1)
	e_final=$(kv epochs "$s0")
	check day2_one_finished_run "the run ends at epochs=$target on both ranks with equal params_crc, its log ending with the summary (got: $s0 / $s1)" \
		bash -c "[ '$e_final' = $target ] && [ '$(kv epochs "$s1")' = $target ] && [ -n '$(kv params_crc "$s0")' ] &&
			 [ '$(kv params_crc "$s0")' = '$(kv params_crc "$s1")' ] &&
			 [ -z \"\$(kubectl -n $NS logs trainer-0 -c trainer | sed -n '/ summary /,\$p' | tail -n +2 | grep -v ' serving_result \| result_serving ')\" ]" || pods_tail
	FINAL=$s0
	row "finished run after the operations" "$s0"
}

# ---- 5. uninstall, install again -------------------------------------------
# The running containers of the release: "ID POD CONTAINER GRACE_S".
running_containers() {
	kc get pods -o json | jq -r '.items[] | .metadata.name as $n | (.spec.terminationGracePeriodSeconds // 30) as $g
		| .status.containerStatuses[]? | select(.state.running != null)
		| "\(.containerID | sub("^[a-z]+://"; "")) \($n) \(.name) \($g)"'
}
# How each container ended, "POD CONTAINER exit=N after_s=S grace_s=G",
# S counted from T_REQ. ../shared/k8s: containerd's own task-exit events;
# another cluster: the kubelet's report in the pod status (watch.jsonl).
exit_report() {  # T_REQ
	if [ "$MODE" = shared ]; then
		python3 - "$WORK/containers.txt" "$WORK/ctr-events.log" "$1" <<'PY'
import datetime, json, sys
exits = {}
for line in open(sys.argv[2], errors="replace"):
    if "/tasks/exit" in line and "{" in line:
        ev = json.loads(line[line.index("{"):])
        exits[ev.get("id")] = ev
for cid, pod, name, grace in (l.split() for l in open(sys.argv[1]) if l.strip()):
    ev = exits.get(cid)
    if ev is None:
        print(pod, name, "exit=none after_s=none", f"grace_s={grace}")
        continue
    at = ev["exited_at"].rstrip("Z")  # 2026-11-24T04:45:31.508908205
    t = datetime.datetime.strptime(at[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    t += float("0." + at[20:]) if len(at) > 20 else 0.0
    # protobuf's JSON leaves out zero values: no exit_status means 0
    print(pod, name, f"exit={ev.get('exit_status', 0)} after_s={t - float(sys.argv[3]):.1f} grace_s={grace}")
PY
	else
		jq -rs --arg t0 "$1" '[.[] | .object] | group_by(.metadata.name)[] | last | .metadata.name as $n
			| (.spec.terminationGracePeriodSeconds // 30) as $g | .status.containerStatuses[]?
			| "\($n) \(.name) exit=\(.state.terminated.exitCode // .lastState.terminated.exitCode // "none") after_s=\(if .state.terminated.finishedAt then ((.state.terminated.finishedAt | fromdate) - ($t0 | tonumber) | floor) else "none" end) grace_s=\($g)"' \
			"$WORK/watch.jsonl"
	fi
}
uninstall_and_reinstall() {
	local t0 report bad_pods out s0 seen dir
	# The last upgrade's inference Job waits for the continued run's result:
	# done before the uninstall, as a Job pod stopped mid-run exits 1.
	wait_until 300 "the inference Job of the continued run" infer_complete ||
		bad inference_after_upgrade "the inference Job of the run the upgrades continued did not complete"
	running_containers >"$WORK/containers.txt"
	# each container's log to its end, to show why one did not exit cleanly
	mkdir -p "$WORK/final-logs"
	while read -r _ pod ctr _; do
		timeout 150 kubectl -n "$NS" logs -f "$pod" -c "$ctr" --tail=20 >"$WORK/final-logs/$pod" 2>&1 &
	done <"$WORK/containers.txt"
	if [ "$MODE" = shared ]; then
		dir=$(dirname "$(dirname "$KUBECONFIG")")
		ctr --address "$dir/run/containerd/containerd.sock" -n k8s.io events >"$WORK/ctr-events.log" 2>&1 &
	else
		kubectl -n "$NS" get pods --watch --output-watch-events -o json 2>/dev/null | jq -c --unbuffered . >"$WORK/watch.jsonl" &
	fi
	sleep 1
	t0=$(now)
	helm uninstall "$REL" -n "$NS" --wait --timeout 120s >"$WORK/uninstall.log" 2>&1
	wait_until 120 "every pod gone" bash -c "[ -z \"\$(kubectl -n $NS get pods -o name)\" ]"
	row "helm uninstall -> every pod gone" "$(since "$t0") s"
	sleep 1
	report=$(exit_report "$t0")
	echo "$report" | sed 's/^/  uninstall: /'
	bad_pods=$(awk '{ a = substr($4, 9); g = substr($5, 9) }
		$3 != "exit=0" || a == "none" || a + 0 > g + 0 { print $1 "(" $3 " " $4 ")" }' <<<"$report" | tr '\n' ' ')
	seen=$(awk '{ sub(/-[a-z0-9]+-[a-z0-9]+$/, "", $1); sub(/-[0-9]+$/, "", $1); print $1 }' <<<"$report" | sort -u | tr '\n' ' ')
	for p in $bad_pods; do
		p=${p%%(*}
		echo "-- the end of $p's log:"
		tail -n 15 "$WORK/final-logs/$p" 2>/dev/null
	done
	check uninstall_clean_exits "every running container exits 0 within its terminationGracePeriodSeconds on helm uninstall: ${bad_pods:-all did} ($(grep -c . <<<"$report") containers of: $seen)" \
		bash -c "[ -z '$bad_pods' ] && [ '$seen' = 'graphstore sampler trainer ' ]"
	row "helm uninstall: exits" "$(awk '{ print $1 ":" substr($3, 6) "@" substr($4, 9) "s" }' <<<"$report" | tr '\n' ' ')"
	t0=$(now)
	if ! out=$(helm install "$REL" "$CHART" -n "$NS" "${IMAGE_SET[@]}" 2>&1); then
		bad reinstall_finds_finished_run "helm install again failed: $(tail -n 3 <<<"$out")"
		return
	fi
	wait_until 300 "trainer-0's summary after reinstalling" has_summary trainer-0
	s0=$(summary_of trainer-0)
	check reinstall_finds_finished_run "helm install again (default values) reports the finished run from the retained claims: already_finished, the same params_crc $(kv params_crc "$FINAL") (got: ${s0:-no summary})" \
		bash -c "kubectl -n $NS logs trainer-0 -c trainer | grep -q ' already_finished ' &&
			 [ '$(kv params_crc "$s0")' = '$(kv params_crc "$FINAL")' ] && [ -n '$(kv params_crc "$s0")' ]"
	check reinstall_reuses_partitions "the partitioner Job finds the output on the retained data claim (already_partitioned)" \
		bash -c "kubectl -n $NS logs -l app.kubernetes.io/component=partition -c partition --tail=-1 | grep -q already_partitioned"
	row "reinstall -> summary of the finished run" "$(since "$t0") s ($s0)"
}

# ---- main ------------------------------------------------------------------
choose_cluster
prepare_image
kubectl delete namespace "$NS" --wait --timeout=120s >/dev/null 2>&1   # a leftover of an aborted run
[ "$MODE" = shared ] && free_volumes
server_validation
install_defaults   # starts Prometheus too
check_prometheus after_install
check_metrics_present
check_rules after_install
check_undisturbed
phase tls_checks
check_tls
hold_graphstore_down
day2_operations
check_prometheus after_day2_operations
check_rules after_day2_operations
report_alerts
phase uninstall
uninstall_and_reinstall
summary_and_exit
