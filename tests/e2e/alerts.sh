#!/usr/bin/env bash
# The alert rules and the Grafana dashboard shipped with charts/gnn-dist
# (docs/operations.md), without a cluster:
#   - promtool check rules on the plain rules file
#     (charts/gnn-dist/monitoring/gnn-dist-rules.yaml) and on the chart's
#     PrometheusRule;
#   - promtool test rules: tests/alerts/ALERT.test.yaml for every alert,
#     each with a case where it fires and one where it must stay quiet,
#     against both; every alert has its test file and a runbook section;
#   - the tests catch each alert broken: one edit per alert (a threshold, a
#     guard, a label filter) makes its test fail;
#   - tests/alerts/check_names.cjs: every metric the rules and the
#     dashboard's queries name is in docs/metrics.md and registered in the
#     C sources (or one of its short list of standard ones), the
#     PrometheusRule watches its own release only and the plain file every
#     release, every panel queries through the datasource variable and
#     selects $namespace and $release, and the panels cover issue 24's list;
#     and that checker shown to catch an unknown name;
#   - the chart: nothing by default; monitoring.enabled alone renders the
#     ServiceMonitor, the PrometheusRule and the dashboard ConfigMap, with
#     monitoring.labels; the plain file is what the chart renders; the
#     thresholds come from values.yaml; the ConfigMap holds the dashboard
#     file unchanged.
# promtool comes from Debian's prometheus package (make deps); helm and
# node from tests/k8s/install-tools.sh, as for chart.sh. Without promtool
# the test skips; without the chart tools, the parts that need them skip.
. "$(dirname "$0")/lib.bash"
plain_only alerts "they exercise helm and promtool, not the C code"
CHART=$ROOT/charts/gnn-dist
RULES=$CHART/monitoring/gnn-dist-rules.yaml
DASH=$CHART/monitoring/gnn-dist-dashboard.json
TESTS=$ROOT/tests/alerts
TOOLDIR=${GNN_K8S_TOOLS:-$ROOT/build/k8s-tools}
if ! command -v promtool >/dev/null; then
	skip alerts "promtool is missing (Debian's prometheus package: make deps)"
	exit 0
fi
t_start=$SECONDS

# unit_tests RULES_FILE OUT TEST_FILE...: promtool test rules with the test
# files' rule_files pointed at RULES_FILE (copies in WORK); output in OUT.
unit_tests() {
	local rules=$1 out=$2 f copies=()
	shift 2
	for f in "$@"; do
		sed "s|^  - \.\./\.\./charts/gnn-dist/monitoring/gnn-dist-rules\.yaml\$|  - $rules|" "$f" >"$WORK/$(basename "$f")"
		copies+=("$WORK/$(basename "$f")")
	done
	promtool test rules "${copies[@]}" >"$out" 2>&1
}

# ---- the plain rules file --------------------------------------------------------------
promtool check rules "$RULES" >"$WORK/check.out" 2>&1
check rules_file_valid "promtool check rules: $(grep -v -E '^Checking|SUCCESS' "$WORK/check.out" | head -n 3 | tr '\n' ' ')" \
	grep -q 'SUCCESS: [0-9]* rules found' "$WORK/check.out"

alerts=$(sed -n 's/^      - alert: \(Gnn[A-Za-z]*\)$/\1/p' "$RULES")
missing=""
for a in $alerts; do
	f=$TESTS/$a.test.yaml
	# A firing case: an exp_alerts list with entries; a quiet one: [].
	[ -f "$f" ] && grep -q "alertname: $a\$" "$f" || { missing="$missing $a(no test file)"; continue; }
	awk -v a="$a" '$1 == "alertname:" { cur = $2 } $1 == "exp_alerts:" && cur == a { if ($2 == "[]") q = 1; else f = 1 }
		END { exit !(q && f) }' "$f" || missing="$missing $a(needs a firing and a quiet case)"
	grep -q "^### $a\$" "$ROOT/docs/operations.md" || missing="$missing $a(no runbook section)"
done
check every_alert_tested "$(wc -w <<<"$alerts") alerts; missing:$missing" \
	bash -c "[ $(wc -w <<<"$alerts") -ge 12 ] && [ -z '$missing' ] && [ \$(ls '$TESTS'/*.test.yaml | wc -l) = $(wc -w <<<"$alerts") ]"

unit_tests "$RULES" "$WORK/unit.out" "$TESTS"/*.test.yaml
check rules_unit_tests "promtool test rules: $(grep -A 12 FAILED "$WORK/unit.out" | head -n 12 | tr -s ' \n' ' ')" \
	bash -c "! grep -q FAILED '$WORK/unit.out' && [ \$(grep -c SUCCESS '$WORK/unit.out') = $(wc -w <<<"$alerts") ]"

# One edit per alert, inside its own rule, that its test file must catch.
mut_bad=""
while IFS='|' read -r a edit; do
	[ -n "$a" ] || continue
	sed "/^      - alert: $a\$/,/^      - alert: /{$edit}" "$RULES" >"$WORK/mut-rules.yaml"
	if cmp -s "$WORK/mut-rules.yaml" "$RULES"; then
		mut_bad="$mut_bad $a(edit changed nothing)"
	elif unit_tests "$WORK/mut-rules.yaml" "$WORK/mut.out" "$TESTS/$a.test.yaml"; then
		mut_bad="$mut_bad $a(not caught: $edit)"
	fi
done <<'EOF'
GnnTrainingStalled|s/gnn_trainer_finished == 1/gnn_trainer_finished == 2/
GnnTrainingStalled|s/and on(namespace, pod) (gnn_trainer_steps_total offset 10m)/and on(namespace, pod) gnn_trainer_steps_total/
GnnComponentDown|s/up{component=~"graphstore|sampler|trainer"}/up/
GnnGraphStoresUnreachable|/and on(namespace, release) count by/d
GnnComponentNotReady|/and on(namespace, release) count by/d
GnnSamplerAdmissionRefusals|s/> 0.05/> 0.5/
GnnStoreCallTimeouts|s/rate(gnn_sampler_graphstore_retries_total/rate(gnn_sampler_graphstore_errors_total/
GnnStoreErrors|s/op!~"info|predict|lookup"/op!~"predict|lookup"/g
GnnCheckpointSaveFailures|s/\[30m\]/[300m]/
GnnRingRejoinsRepeating|s/>= 3/>= 1/
GnnPodMemoryNearLimit|/and on(namespace, pod) up/d
GnnTlsHandshakeFailures|s/reason="auth"/reason=~".+"/
GnnCertificateExpiringSoon|s/< 1209600/< 120960/
EOF
check rule_tests_catch_breakage "an alert broken and its tests still pass:$mut_bad" [ -z "$mut_bad" ]

# ---- the chart ----------------------------------------------------------------------------
if ! "$ROOT/tests/k8s/install-tools.sh" "$TOOLDIR" 2>"$WORK/install.log"; then
	skip alerts_chart "chart tools unavailable: $(tail -n 1 "$WORK/install.log")"
	echo "# alerts.sh: $((SECONDS - t_start)) s"
	exit 0
fi
H=$TOOLDIR/bin/helm
NAMES="node $TESTS/check_names.cjs $TOOLDIR $ROOT"

"$H" template gnn-dist "$CHART" --namespace ml >"$WORK/r-default.yaml" 2>"$WORK/err"
"$H" template gnn-dist "$CHART" --namespace ml --set monitoring.enabled=true --set monitoring.labels.release=kps \
	>"$WORK/r-mon.yaml" 2>>"$WORK/err"
kinds() { sed -n 's/^kind: //p' "$1" | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }'; }
labelled() {  # labelled FILE KIND LABEL: the object of that kind carries the label (in metadata)
	awk -v k="$2" -v l="$3" '/^kind: / { on = ($2 == k) } on && /^  labels:/ { in_l = 1; next }
		on && in_l && /^  [a-z]/ { in_l = 0 } on && in_l && index($0, "    " l) == 1 { found = 1 } END { exit !found }' "$1"
}
sw_ok=false
! grep -q -E '^kind: (ServiceMonitor|PrometheusRule|ConfigMap)$' "$WORK/r-default.yaml" &&
	[ "$(kinds "$WORK/r-mon.yaml" | grep -o -E '(ServiceMonitor|PrometheusRule|ConfigMap)=[0-9]+' | tr '\n' ' ')" = \
		"ConfigMap=1 PrometheusRule=1 ServiceMonitor=1 " ] &&
	labelled "$WORK/r-mon.yaml" ServiceMonitor 'release: kps' && labelled "$WORK/r-mon.yaml" PrometheusRule 'release: kps' &&
	labelled "$WORK/r-mon.yaml" ConfigMap 'grafana_dashboard: "1"' && ! labelled "$WORK/r-mon.yaml" ConfigMap 'release: kps' &&
	grep -q 'targetLabel: release$' "$WORK/r-mon.yaml" && grep -q 'targetLabel: component$' "$WORK/r-mon.yaml" && sw_ok=true
check one_switch "nothing by default ($(kinds "$WORK/r-default.yaml" | grep -o -E '(ServiceMonitor|PrometheusRule|ConfigMap)=[0-9]+')); monitoring.enabled: one ServiceMonitor, PrometheusRule and dashboard ConfigMap (got $(kinds "$WORK/r-mon.yaml")), the first two labelled release: kps, the ConfigMap grafana_dashboard: \"1\", the series relabelled with release and component $(head -n 2 "$WORK/err")" \
	$sw_ok

# The PrometheusRule's spec (the rules file it hands Prometheus), and the
# plain file as the chart renders it.
awk '/^---/ { on = 0 } /^kind: PrometheusRule$/ { on = 1 } on' "$WORK/r-mon.yaml" |
	sed -n '/^spec:$/,$p' | tail -n +2 | sed 's/^  //' >"$WORK/scoped.yaml"
promtool check rules "$WORK/scoped.yaml" >"$WORK/check-scoped.out" 2>&1
unit_tests "$WORK/scoped.yaml" "$WORK/unit-scoped.out" "$TESTS"/*.test.yaml
check prometheusrule_valid "the PrometheusRule's rules: promtool check ($(grep -v -E '^Checking|SUCCESS' "$WORK/check-scoped.out" | head -n 2 | tr '\n' ' ')) and the unit tests ($(grep -A 6 FAILED "$WORK/unit-scoped.out" | head -n 6 | tr -s ' \n' ' '))" \
	bash -c "grep -q 'SUCCESS: $(wc -w <<<"$alerts") rules found' '$WORK/check-scoped.out' && ! grep -q FAILED '$WORK/unit-scoped.out'"
"$ROOT/tests/alerts/rules_file.sh" "$H" >"$WORK/plain.yaml" 2>"$WORK/err"
check rules_file_from_chart "$RULES differs from the chart's rules (tests/alerts/rules_file.sh --write updates it): $(diff "$RULES" "$WORK/plain.yaml" | head -n 4 | tr '\n' ' ')$(head -n 1 "$WORK/err")" \
	cmp -s "$RULES" "$WORK/plain.yaml"

# Thresholds come from values.yaml: other values, other rules.
"$H" template gnn-dist "$CHART" --namespace ml --set monitoring.enabled=true --set monitoring.alerts.trainingStalled.minutes=7 \
	--set-json monitoring.alerts.storeErrors.ratio=0.2 --set monitoring.alerts.certificateExpiry.days=3 \
	--set monitoring.alerts.componentDown.minutes=1 --show-only templates/prometheusrule.yaml >"$WORK/r-thr.yaml" 2>"$WORK/err"
"$H" template gnn-dist "$CHART" --set monitoring.enabled=true --set-json monitoring.alerts.storeErrors.ratio=1.5 \
	--set monitoring.alerts.trainingStalled.minutes=0 >/dev/null 2>"$WORK/rej"
check thresholds_from_values "trainingStalled 7 min, storeErrors 0.2, certificates 3 days, componentDown 1 min reach the rules; a ratio of 1.5 and 0 minutes refused by the schema ($(head -n 1 "$WORK/err"))" \
	bash -c "grep -q 'increase(gnn_trainer_steps_total{namespace=\"ml\",release=\"gnn-dist\"}\[7m\]) == 0' '$WORK/r-thr.yaml' &&
		grep -q 'process_start_time_seconds{namespace=\"ml\",release=\"gnn-dist\"} > 420\$' '$WORK/r-thr.yaml' &&
		[ \$(grep -c -E '^ +> 0\.2\$' '$WORK/r-thr.yaml') = 2 ] && grep -q '< 259200\$' '$WORK/r-thr.yaml' &&
		[ \$(grep -c -E '^ +for: 1m\$' '$WORK/r-thr.yaml') = 2 ] &&
		grep -q \"don't meet the specifications\" '$WORK/rej' && grep -q 'storeErrors/ratio' '$WORK/rej' &&
		grep -q 'trainingStalled/minutes' '$WORK/rej'"

# The dashboard ConfigMap holds the file as it is.
node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
const cm = YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8")).map((d) => d.toJS()).find((o) => o && o.kind === "ConfigMap");
const want = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const got = JSON.parse(cm.data["gnn-dist.json"]);
process.exit(JSON.stringify(got) === JSON.stringify(want) ? 0 : 1);
' "$TOOLDIR" "$WORK/r-mon.yaml" "$DASH" 2>"$WORK/err"
rc=$?
check dashboard_configmap "the ConfigMap's gnn-dist.json is $DASH ($(head -n 1 "$WORK/err"))" [ $rc = 0 ]

# ---- metric names, scope and panels -----------------------------------------------------
$NAMES --rules "$RULES" --unscoped --rules "$WORK/scoped.yaml" --scope ml,gnn-dist --dashboard "$DASH" >"$WORK/names.out" 2>&1
check metrics_exported "$(grep -E '^bad|Error' "$WORK/names.out" | head -n 4 | tr '\n' ' ')" \
	bash -c "! grep -q -E '^bad|Error' '$WORK/names.out' && [ \$(grep -c '^ok ' '$WORK/names.out') = 7 ]"
# The checker itself: a name nobody exports, a panel outside the release,
# a rule of the PrometheusRule that watches every release.
sed 's/gnn_trainer_steps_total/gnn_trainer_stepz_total/' "$RULES" >"$WORK/bad-rules.yaml"
sed 's/max(gnn_trainer_epoch{namespace=\\"$namespace\\",release=\\"$release\\"})/max(gnn_trainer_epoch{namespace=\\"$namespace\\"})/' "$DASH" >"$WORK/bad-dash.json"
sed 's/gnn_trainer_finished{namespace="ml",release="gnn-dist"} == 1/gnn_trainer_finished == 1/' "$WORK/scoped.yaml" >"$WORK/bad-scoped.yaml"
$NAMES --rules "$WORK/bad-rules.yaml" --unscoped --dashboard "$WORK/bad-dash.json" --rules "$WORK/bad-scoped.yaml" --scope ml,gnn-dist \
	>"$WORK/names-bad.out" 2>&1
check names_checker_catches "check_names.cjs: $(tr '\n' ' ' <"$WORK/names-bad.out" | head -c 300)" \
	bash -c "grep -q '^bad names bad-rules.yaml: gnn_trainer_stepz_total\$' '$WORK/names-bad.out' &&
		grep -q '^bad scope bad-dash.json: gnn_trainer_epoch' '$WORK/names-bad.out' &&
		grep -q '^bad scope bad-scoped.yaml: gnn_trainer_finished{}' '$WORK/names-bad.out'"
echo "# alerts.sh: $((SECONDS - t_start)) s"
