#!/usr/bin/env bash
# Prints the plain Prometheus rules file of gnn-dist's alerts,
# charts/gnn-dist/monitoring/gnn-dist-rules.yaml, as the chart renders it:
# the PrometheusRule's spec with monitoring.rules.allReleases=true and the
# thresholds of values.yaml, or of the --set/-f arguments given after HELM.
# With --write first, writes that file instead (after editing
# templates/_alerts.tpl or the default thresholds; tests/e2e/alerts.sh
# fails while it differs).
# Usage: tests/alerts/rules_file.sh [--write] HELM [helm template arguments...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHART=$ROOT/charts/gnn-dist
OUT=$CHART/monitoring/gnn-dist-rules.yaml
write=false
if [ "${1:-}" = --write ]; then
	write=true
	shift
fi
[ $# -ge 1 ] || { echo "usage: $0 [--write] HELM [helm template arguments...]" >&2; exit 2; }
helm=$1
shift
render() {
	cat <<'HEAD'
# gnn-dist's alert rules as a plain Prometheus rules file (rule_files:),
# for a Prometheus without the prometheus-operator: the chart's
# PrometheusRule (monitoring.enabled) over every gnn-dist release, with the
# default thresholds of charts/gnn-dist/values.yaml. Generated from
# charts/gnn-dist/templates/_alerts.tpl by tests/alerts/rules_file.sh (other
# thresholds: its --set arguments). The series need the labels namespace,
# pod, release and component: docs/operations.md, "Scraping".
HEAD
	"$helm" template gnn-dist "$CHART" --set monitoring.enabled=true --set monitoring.rules.allReleases=true \
		"$@" --show-only templates/prometheusrule.yaml |
		sed -n '/^spec:$/,$p' | tail -n +2 | sed 's/^  //'
}
if $write; then
	render "$@" >"$OUT.tmp"
	mv "$OUT.tmp" "$OUT"
else
	render "$@"
fi
