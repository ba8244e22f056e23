{{/*
Names. Objects are named after their component (trainer, graphstore,
sampler, ...) so that `kubectl logs trainer-0` works; prefixWithRelease
puts "RELEASE-" in front of every name, and of every DNS name passed to the
binaries, so that two releases can share a namespace.
*/}}
{{- define "gnn-dist.prefix" -}}
{{- if .Values.prefixWithRelease -}}{{ printf "%s-" .Release.Name }}{{- end -}}
{{- end -}}

{{/* gnn-dist.name: prefix + component ("graphstore"), checked against the
StatefulSet limit: its pods carry a controller-revision-hash label
"NAME-<10 chars>", which must fit the 63-character label limit. */}}
{{- define "gnn-dist.name" -}}
{{- $name := printf "%s%s" (include "gnn-dist.prefix" .root) .component -}}
{{- if gt (len $name) 52 -}}
{{- fail (printf "object name %q is longer than 52 characters: use a shorter release name or prefixWithRelease=false" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{- define "gnn-dist.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component: {root, component}. */}}
{{- define "gnn-dist.selectorLabels" -}}
app.kubernetes.io/name: gnn-dist
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gnn-dist.labels" -}}
{{ include "gnn-dist.selectorLabels" . }}
app.kubernetes.io/part-of: gnn-dist
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ include "gnn-dist.chart" .root }}
{{- end -}}

{{- define "gnn-dist.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
Where things live on the volumes. The partition output folder and the
checkpoint folder are named after a hash of the settings that determine
their contents: the same settings find the finished output (the Job does
not partition again, a finished run is not retrained), changed settings get
a fresh folder instead of a stale or mismatched one.
*/}}
{{- define "gnn-dist.datasetName" -}}
{{- if .Values.dataset.name -}}
{{- .Values.dataset.name -}}
{{- else if eq .Values.dataset.source "synthetic" -}}
{{- printf "synthetic-%s" .Values.dataset.synthetic.preset -}}
{{- else if eq .Values.dataset.source "gconstruct" -}}
{{- base (dir .Values.dataset.gconstruct.config) -}}
{{- else -}}
{{- base (trimSuffix "/" .Values.dataset.ogb.path) -}}
{{- end -}}
{{- end -}}

{{/* The partitioner's settings, as environment variables (GNN_*: each is
one of gnn-partition's options). */}}
{{- define "gnn-dist.partitionEnv" -}}
- name: GNN_PARTS
  value: {{ int64 .Values.partition.parts | quote }}
- name: GNN_METHOD
  value: {{ .Values.partition.method | quote }}
- name: GNN_SEED
  value: {{ int64 .Values.partition.seed | quote }}
- name: GNN_METIS_MAX_EDGES
  value: {{ int64 .Values.partition.metisMaxEdges | quote }}
{{- /* only when not the default: an f32 output keeps the folder (hash) it had */}}
{{- if ne .Values.partition.featureDtype "f32" }}
- name: GNN_FEATURE_DTYPE
  value: {{ .Values.partition.featureDtype | quote }}
{{- end }}
{{- /* only when not none, the default: an output made before --feat-norm
(none) keeps its folder (hash); any other setting may store other rows
and gets a folder of its own */}}
{{- if ne .Values.partition.featNorm "none" }}
- name: GNN_FEAT_NORM
  value: {{ .Values.partition.featNorm | quote }}
{{- end }}
{{- /* link prediction's edge split, only when set: an output without one
keeps its folder (hash); with one, every output of another split, relation
or negatives is a folder of its own */}}
{{- with .Values.partition.edgeSplit }}
- name: GNN_EDGE_SPLIT
  value: {{ . | quote }}
{{- with $.Values.partition.edgeRelation }}
- name: GNN_EDGE_RELATION
  value: {{ . | quote }}
{{- end }}
- name: GNN_EVAL_NEGATIVES
  value: {{ int64 $.Values.partition.evalNegatives | quote }}
{{- end }}
{{- if eq .Values.dataset.source "synthetic" }}
- name: GNN_SYNTHETIC
  value: {{ .Values.dataset.synthetic.preset | quote }}
{{- with .Values.dataset.synthetic }}
{{- if .nodes }}
- name: GNN_NODES
  value: {{ int64 .nodes | quote }}
{{- end }}
{{- if .edges }}
- name: GNN_EDGES
  value: {{ int64 .edges | quote }}
{{- end }}
{{- if .featDim }}
- name: GNN_FEAT_DIM
  value: {{ int64 .featDim | quote }}
{{- end }}
{{- if .classes }}
- name: GNN_CLASSES
  value: {{ int64 .classes | quote }}
{{- end }}
{{- end }}
{{- else if eq .Values.dataset.source "gconstruct" }}
- name: GNN_CONFIG
  value: {{ printf "%s/%s" .Values.storage.data.mountPath .Values.dataset.gconstruct.config | quote }}
{{- with .Values.dataset.gconstruct }}
{{- if .keepDirected }}
- name: GNN_KEEP_DIRECTED
  value: "1"
{{- end }}
{{- if .classes }}
- name: GNN_CLASSES
  value: {{ int64 .classes | quote }}
{{- end }}
{{- end }}
{{- else }}
- name: GNN_INPUT
  value: {{ printf "%s/%s" .Values.storage.data.mountPath (trimSuffix "/" .Values.dataset.ogb.path) | quote }}
{{- with .Values.dataset.ogb }}
{{- if .split }}
- name: GNN_SPLIT
  value: {{ .split | quote }}
{{- end }}
{{- if .keepDirected }}
- name: GNN_KEEP_DIRECTED
  value: "1"
{{- end }}
{{- if .classes }}
- name: GNN_CLASSES
  value: {{ int64 .classes | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "gnn-dist.partitionHash" -}}
{{- include "gnn-dist.partitionEnv" . | sha256sum | trunc 10 -}}
{{- end -}}

{{- define "gnn-dist.partitionDir" -}}
{{- printf "%s/partitions/%s-%s" .Values.storage.data.mountPath (include "gnn-dist.datasetName" .) (include "gnn-dist.partitionHash" .) -}}
{{- end -}}

{{/* What identifies a run: the graph (the partition output) and what the
trainer's checkpoints are tied to (the model hash: the widths, and the model
options that differ from their defaults, gnn-dist.modelKey, generated from
the model table) plus the seed. Epochs, batch size, learning rate and the
number of trainers may change between attempts of one run, as gnn-trainer
allows: a larger trainer.epochs continues a finished run
(docs/training.md). The defaults' key is what it was before the table, so
their runs continue. */}}
{{- define "gnn-dist.runKey" -}}
{{- with .Values.trainer -}}
partition={{ include "gnn-dist.partitionHash" $ }} layers={{ include "gnn-dist.layers" .fanouts }} hidden={{ include "gnn-dist.hidden" . }} seed={{ int64 .seed }}
{{- end -}}
{{- include "gnn-dist.modelKey" . -}}
{{- end -}}

{{/* Whether the trainers call the graph stores: for learnable embeddings,
or for the feature rows ("true" or ""). */}}
{{- define "gnn-dist.trainerDialsStores" -}}
{{- if or (gt (int64 .Values.trainer.embed.dim) 0) (eq .Values.trainer.features.from "stores") }}true{{ end -}}
{{- end -}}

{{/* A fanouts value as gnn-trainer's --fanouts text: a list joined with
commas, or a per-relation string ("writes=15,10;*=5,5") as it is. */}}
{{- define "gnn-dist.fanoutText" -}}
{{- if kindIs "string" . -}}{{ . }}{{- else -}}{{ join "," . }}{{- end -}}
{{- end -}}

{{/* The layers of a fanouts value: its entries, or a per-relation string's
first list's. */}}
{{- define "gnn-dist.layers" -}}
{{- if kindIs "string" . -}}
{{- len (splitList "," (regexReplaceAll "^[^=]*=" (first (splitList ";" .)) "")) -}}
{{- else -}}
{{- len . -}}
{{- end -}}
{{- end -}}

{{- define "gnn-dist.runName" -}}
{{- if .Values.trainer.runName -}}
{{- .Values.trainer.runName -}}
{{- else -}}
{{- printf "%s-%s" (include "gnn-dist.datasetName" .) (include "gnn-dist.runKey" . | sha256sum | trunc 10) -}}
{{- end -}}
{{- end -}}

{{/* Where the inference Jobs write the run's predictions and the graph
stores read them: next to the partition output, one folder per run. */}}
{{- define "gnn-dist.predictionsDir" -}}
{{- printf "%s/predictions/%s" (include "gnn-dist.partitionDir" .) (include "gnn-dist.runName" .) -}}
{{- end -}}

{{- define "gnn-dist.checkpointDir" -}}
{{- printf "%s/%s" .Values.storage.checkpoints.mountPath (include "gnn-dist.runName" .) -}}
{{- end -}}

{{/* The data claim's name. */}}
{{- define "gnn-dist.dataClaim" -}}
{{- default (include "gnn-dist.name" (dict "root" . "component" "gnn-data")) .Values.storage.data.existingClaim -}}
{{- end -}}

{{/* DNS names the binaries dial: short names, resolved through the pod's
search domains (NAMESPACE.svc.CLUSTER-DOMAIN), so they need neither the
namespace nor the cluster domain. A headless Service name resolves to the
addresses of all its (ready, unless publishNotReadyAddresses) pods, a
StatefulSet pod as POD.SERVICE. */}}
{{- define "gnn-dist.graphstorePattern" -}}
{{- $n := include "gnn-dist.name" (dict "root" . "component" "graphstore") -}}
{{- printf "tcp://%s-%%d.%s:%d" $n $n (int64 .Values.graphstore.port) -}}
{{- end -}}
{{- define "gnn-dist.trainerPattern" -}}
{{- $n := include "gnn-dist.name" (dict "root" . "component" "trainer") -}}
{{- printf "tcp://%s-%%d.%s:%d" $n $n (int64 .Values.trainer.port) -}}
{{- end -}}
{{- define "gnn-dist.samplerURL" -}}
{{- printf "tcp://%s:%d" (include "gnn-dist.name" (dict "root" . "component" "sampler")) (int64 .Values.sampler.port) -}}
{{- end -}}

{{/* Pod-level pieces shared by every workload: {root, comp (values of the
component)}. */}}
{{- define "gnn-dist.podCommon" -}}
automountServiceAccountToken: false
# No NAME_SERVICE_HOST/_PORT variables: the binaries find each other by DNS,
# and any Service of the namespace named gnn-* would inject GNN_* variables,
# which the binaries read as options.
enableServiceLinks: false
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .comp.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .comp.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .comp.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The trainers' preference for the node of the graph store of their own
ordinal (root). */}}
{{- define "gnn-dist.besideGraphStore" -}}
podAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        labelSelector:
          matchLabels:
            {{- include "gnn-dist.selectorLabels" (dict "root" . "component" "graphstore") | nindent 12 }}
        matchLabelKeys:
          - apps.kubernetes.io/pod-index
        topologyKey: kubernetes.io/hostname
{{- end -}}

{{/* An added graph store's preference for a node without another store of
its ordinal (the same partition, in another StatefulSet): matchLabelKeys
adds the pod's own index label to the selector (the label and the key:
Kubernetes 1.28, 1.31). An older API server refuses the key, so there the
preference is for a node without any other store: it spreads them all
(root). */}}
{{- define "gnn-dist.apartFromReplicas" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        labelSelector:
          matchLabels:
            {{- include "gnn-dist.selectorLabels" (dict "root" . "component" "graphstore") | nindent 12 }}
        {{- if semverCompare ">=1.31-0" .Capabilities.KubeVersion.Version }}
        matchLabelKeys:
          - apps.kubernetes.io/pod-index
        {{- end }}
        topologyKey: kubernetes.io/hostname
{{- end -}}

{{/* The samplers' --graphstores with replicas: every partition's first
store (graphstore-<p>), then each further replica's (graphstore-r<k>-<p>),
partition by partition (root). */}}
{{- define "gnn-dist.graphstoreList" -}}
{{- $n := include "gnn-dist.name" (dict "root" . "component" "graphstore") -}}
{{- $urls := list -}}
{{- range $r := until (int .Values.graphstore.replicasPerPartition) -}}
{{- range $p := until (int $.Values.partition.parts) -}}
{{- $pod := ternary (printf "%s-%d" $n $p) (printf "%s-r%d-%d" $n $r $p) (eq $r 0) -}}
{{- $urls = append $urls (printf "tcp://%s.%s:%d" $pod $n (int64 $.Values.graphstore.port)) -}}
{{- end -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}

{{/* Pod annotations: Prometheus' scrape convention, then the user's. */}}
{{- define "gnn-dist.podAnnotations" -}}
{{- if and .root.Values.metrics.podAnnotations .httpPort }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .httpPort | quote }}
prometheus.io/path: /metrics
{{- if .root.Values.tls.enabled }}
# HTTPS, /metrics only for a client certificate of the data plane's CA
# (the tls.scraper Secret; docs/kubernetes.md "TLS").
prometheus.io/scheme: https
{{- end }}
{{- end }}
{{- with .comp.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Probes on the HTTP port: liveness /healthz (answers from the first
moment, so no startup probe is needed), readiness /readyz. With TLS the
port is HTTPS; /healthz and /readyz answer without a client certificate. */}}
{{- define "gnn-dist.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: http
    {{- if .Values.tls.enabled }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
# Every 2 s: a new sampler joins the Service, and a StatefulSet rolling
# update moves on, as soon as the pod is ready (a local HTTP GET is cheap).
readinessProbe:
  httpGet:
    path: /readyz
    port: http
    {{- if .Values.tls.enabled }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 2
  timeoutSeconds: 2
  failureThreshold: 3
{{- end -}}

{{/* The writable scratch space the read-only root filesystem lacks. */}}
{{- define "gnn-dist.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{/*
An init container giving folders on a claim to the pods' user, for volume
plugins that ignore fsGroup (hostPath, NFS, local-path provisioners) or
apply it only when a node first mounts the volume (the `local` plugin: a
pod that mounted it earlier decides). Runs as root with only CHOWN, FOWNER
and DAC_OVERRIDE; creates the folders, changes the owner of those that are
not the user's already, nothing else (never recursive: a dataset copied in
keeps its owner). {root, volume, mountPath, dirs}
*/}}
{{- define "gnn-dist.volumePermissions" -}}
{{- $v := .root.Values -}}
{{- if $v.volumePermissions.enabled }}
- name: volume-permissions
  image: {{ include "gnn-dist.image" .root }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  command:
    - /bin/sh
    - -c
    - |
      set -eu
      for d in "$@"; do
        mkdir -p "$d"
        if [ "$(stat -c %u:%g "$d")" != "$OWNER" ]; then
          chown "$OWNER" "$d"
          echo "$(date -u +%Y-%m-%dT%H:%M:%S.000Z) INFO  volume-permissions owner_changed dir=$d owner=$OWNER" >&2
        fi
      done
    - volume-permissions
    {{- range .dirs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: OWNER
      value: {{ printf "%d:%d" (int64 ($v.podSecurityContext.runAsUser | default 10001)) (int64 ($v.podSecurityContext.fsGroup | default ($v.podSecurityContext.runAsGroup | default 10001))) | quote }}
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
  securityContext:
    runAsUser: 0
    runAsGroup: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
      add: [CHOWN, FOWNER, DAC_OVERRIDE]
  volumeMounts:
    - name: {{ .volume }}
      mountPath: {{ .mountPath }}
{{- end }}
{{- end -}}

{{/* An inference Job's pod: {root, comp (inference values), podComp (the
same with the affinity in force), worker, claim (the checkpoint claim)}. */}}
{{- define "gnn-dist.inferPod" -}}
{{- $root := .root -}}
{{- $comp := .comp -}}
{{- $t := $root.Values.trainer -}}
metadata:
  labels:
    {{- include "gnn-dist.selectorLabels" (dict "root" $root "component" "inference") | nindent 4 }}
  {{- with $comp.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  restartPolicy: Never
  {{- include "gnn-dist.podCommon" (dict "root" $root "comp" .podComp) | nindent 2 }}
  containers:
    - name: inference
      image: {{ include "gnn-dist.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      command: [gnn-trainer]
      args:
        - infer
        - --data={{ include "gnn-dist.partitionDir" $root }}
        - --checkpoint-dir={{ include "gnn-dist.checkpointDir" $root }}
        - --out={{ include "gnn-dist.predictionsDir" $root }}
        {{- /* no model flag: result.json records the run's configuration */}}
        - --epochs={{ int64 $t.epochs }}
        - --workers={{ int64 $comp.workers }}
        - --worker={{ .worker }}
        - --top-k={{ int64 $comp.topK }}
        - --buffer-mb={{ int64 $comp.bufferMb }}
        - --wait-s={{ int64 $comp.waitSeconds }}
        {{- if $comp.embeddings }}
        - --embeddings
        {{- end }}
        {{- with $comp.extraArgs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $comp.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: data
          mountPath: {{ $root.Values.storage.data.mountPath }}
        - name: checkpoints
          mountPath: {{ $root.Values.storage.checkpoints.mountPath }}
          readOnly: true
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: {{ include "gnn-dist.dataClaim" $root }}
    - name: checkpoints
      persistentVolumeClaim:
        claimName: {{ .claim }}
        readOnly: true
    {{- include "gnn-dist.tmpVolume" $root | nindent 4 }}

{{- end -}}

{{/*
TLS (docs/kubernetes.md "TLS"). Three Secrets in the kubernetes.io/tls
layout (ca.crt, tls.crt, tls.key): the data plane's (every graph store,
sampler and trainer pod; the partitioner and inference Jobs use no network:
they read and write the claims), the trainers' ring's (another CA) and
Prometheus' scraper's (a client certificate of the data plane's CA).
Each is a Secret of the user's (tls.existingSecret, ...), cert-manager's
(tls.certManager) or generated here with genCA/genSignedCert and kept
across `helm upgrade` (lookup).
*/}}
{{- define "gnn-dist.tlsSecret" -}}
{{- default (include "gnn-dist.name" (dict "root" . "component" "gnn-dist-tls")) .Values.tls.existingSecret -}}
{{- end -}}
{{- define "gnn-dist.ringTlsSecret" -}}
{{- default (include "gnn-dist.name" (dict "root" . "component" "gnn-dist-ring-tls")) .Values.tls.ring.existingSecret -}}
{{- end -}}
{{- define "gnn-dist.scraperTlsSecret" -}}
{{- if .Values.tls.scraper.existingSecret -}}{{ .Values.tls.scraper.existingSecret }}
{{- else if .Values.tls.existingSecret -}}{{ .Values.tls.existingSecret }}
{{- else -}}{{ include "gnn-dist.name" (dict "root" . "component" "gnn-dist-scraper-tls") }}
{{- end -}}
{{- end -}}
{{/* Who makes each Secret: "user", "cert-manager" or "helm". */}}
{{- define "gnn-dist.tlsSource" -}}
{{- if .Values.tls.existingSecret }}user{{ else if .Values.tls.certManager.enabled }}cert-manager{{ else }}helm{{ end -}}
{{- end -}}
{{- define "gnn-dist.ringTlsSource" -}}
{{- if .Values.tls.ring.existingSecret }}user{{ else if .Values.tls.certManager.enabled }}cert-manager{{ else }}helm{{ end -}}
{{- end -}}
{{- define "gnn-dist.scraperTlsSource" -}}
{{- if or .Values.tls.scraper.existingSecret .Values.tls.existingSecret }}user{{ else if .Values.tls.certManager.enabled }}cert-manager{{ else }}helm{{ end -}}
{{- end -}}

{{/* The name Prometheus checks in the server certificates (tls_config
server_name): it scrapes pods by address, which no certificate names. */}}
{{- define "gnn-dist.metricsServerName" -}}
{{- include "gnn-dist.name" (dict "root" . "component" "gnn-dist") -}}
{{- end -}}

{{/* The data plane certificate's DNS names (JSON list): every graph store
as dialled (graphstore-N.graphstore: the wildcard *.graphstore), the
samplers' Service name (what the trainers check a replica against), each
also namespace-qualified, the metrics server name, and tls.extraDNSNames.
No localhost: in a pod it resolves to ::1 first, where nothing listens. */}}
{{- define "gnn-dist.tlsDNSNames" -}}
{{- $ns := .Release.Namespace -}}
{{- $cd := .Values.tls.clusterDomain -}}
{{- $gs := include "gnn-dist.name" (dict "root" . "component" "graphstore") -}}
{{- $sm := include "gnn-dist.name" (dict "root" . "component" "sampler") -}}
{{- $names := list -}}
{{- range $suffix := list "" (printf ".%s" $ns) (printf ".%s.svc" $ns) (printf ".%s.svc.%s" $ns $cd) -}}
{{- $names = append $names (printf "*.%s%s" $gs $suffix) -}}
{{- $names = append $names (printf "%s%s" $sm $suffix) -}}
{{- end -}}
{{- $names = append $names (include "gnn-dist.metricsServerName" .) -}}
{{- concat $names .Values.tls.extraDNSNames | uniq | toJson -}}
{{- end -}}
{{/* The ring certificate's: the host each rank's predecessor dials
(trainer-N.trainer: *.trainer), also namespace-qualified. */}}
{{- define "gnn-dist.ringDNSNames" -}}
{{- $ns := .Release.Namespace -}}
{{- $tr := include "gnn-dist.name" (dict "root" . "component" "trainer") -}}
{{- $names := list -}}
{{- range $suffix := list "" (printf ".%s" $ns) (printf ".%s.svc" $ns) (printf ".%s.svc.%s" $ns .Values.tls.clusterDomain) -}}
{{- $names = append $names (printf "*.%s%s" $tr $suffix) -}}
{{- end -}}
{{- $names | toJson -}}
{{- end -}}

{{/*
The generated certificates, as Secret data (base64), JSON {data, scraper,
ring} for what helm makes. Made once per render (kept in .Values, so that
every template sees the same certificates) and only when no Secret of the
same name exists with certificates for the same names: `helm upgrade`
keeps them (lookup; `helm template` has no cluster, lookup is empty there
and every render is new). The data plane's and the scraper's share a CA:
both are kept, or both made again.
*/}}
{{- define "gnn-dist.tlsMaterial" -}}
{{- if not (hasKey .Values "gnnDistTlsCache") -}}
{{- $m := dict -}}
{{- $days := int .Values.tls.validityDays -}}
{{- $ns := .Release.Namespace -}}
{{- if and .Values.tls.enabled (eq (include "gnn-dist.tlsSource" .) "helm") -}}
{{- $names := include "gnn-dist.tlsDNSNames" . | fromJsonArray -}}
{{- $want := toJson $names | sha256sum | trunc 16 -}}
{{- $old := lookup "v1" "Secret" $ns (include "gnn-dist.tlsSecret" .) -}}
{{- $oldScraper := lookup "v1" "Secret" $ns (include "gnn-dist.scraperTlsSecret" .) -}}
{{- if and $old $old.data $oldScraper $oldScraper.data (eq (index ($old.metadata.annotations | default dict) "gnn-dist/dns-names" | default "") $want) -}}
{{- $_ := set $m "data" $old.data -}}
{{- if eq (include "gnn-dist.scraperTlsSource" .) "helm" }}{{ $_ := set $m "scraper" $oldScraper.data }}{{ end -}}
{{- else -}}
{{- $ca := genCA "gnn-dist data plane CA" $days -}}
{{- $crt := genSignedCert "gnn-dist" nil $names $days $ca -}}
{{- $_ := set $m "data" (dict "ca.crt" (b64enc $ca.Cert) "tls.crt" (b64enc $crt.Cert) "tls.key" (b64enc $crt.Key)) -}}
{{- if eq (include "gnn-dist.scraperTlsSource" .) "helm" -}}
{{- $sc := genSignedCert "gnn-dist scraper" nil nil $days $ca -}}
{{- $_ := set $m "scraper" (dict "ca.crt" (b64enc $ca.Cert) "tls.crt" (b64enc $sc.Cert) "tls.key" (b64enc $sc.Key)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $m "dataNames" $want -}}
{{- end -}}
{{- if and .Values.tls.enabled (eq (include "gnn-dist.ringTlsSource" .) "helm") -}}
{{- $names := include "gnn-dist.ringDNSNames" . | fromJsonArray -}}
{{- $want := toJson $names | sha256sum | trunc 16 -}}
{{- $old := lookup "v1" "Secret" $ns (include "gnn-dist.ringTlsSecret" .) -}}
{{- if and $old $old.data (eq (index ($old.metadata.annotations | default dict) "gnn-dist/dns-names" | default "") $want) -}}
{{- $_ := set $m "ring" $old.data -}}
{{- else -}}
{{- $ca := genCA "gnn-dist trainer ring CA" $days -}}
{{- $crt := genSignedCert "gnn-dist trainer" nil $names $days $ca -}}
{{- $_ := set $m "ring" (dict "ca.crt" (b64enc $ca.Cert) "tls.crt" (b64enc $crt.Cert) "tls.key" (b64enc $crt.Key)) -}}
{{- end -}}
{{- $_ := set $m "ringNames" $want -}}
{{- end -}}
{{- $_ := set .Values "gnnDistTlsCache" $m -}}
{{- end -}}
{{- toJson .Values.gnnDistTlsCache -}}
{{- end -}}

{{/* What a pod's certificates are, hashed, for its checksum annotation:
a change rolls the pods (the binaries read their certificates at start
only). The Secret's data where helm makes it or can read it (lookup),
otherwise what names it. {root, ring} */}}
{{- define "gnn-dist.tlsChecksum" -}}
{{- $root := .root -}}
{{- $m := include "gnn-dist.tlsMaterial" $root | fromJson -}}
{{- $parts := list -}}
{{- $domains := list (list "data" (include "gnn-dist.tlsSecret" $root) (include "gnn-dist.tlsSource" $root)) -}}
{{- if .ring }}{{ $domains = append $domains (list "ring" (include "gnn-dist.ringTlsSecret" $root) (include "gnn-dist.ringTlsSource" $root)) }}{{ end -}}
{{- range $d := $domains -}}
{{- $key := index $d 0 -}}
{{- if hasKey $m $key -}}
{{- $parts = append $parts (toJson (index $m $key)) -}}
{{- else -}}
{{- $s := lookup "v1" "Secret" $root.Release.Namespace (index $d 1) -}}
{{- if and $s $s.data -}}
{{- $parts = append $parts (toJson $s.data) -}}
{{- else -}}
{{- $parts = append $parts (printf "%s secret=%s names=%s" (index $d 2) (index $d 1) (ternary (include "gnn-dist.ringDNSNames" $root) (include "gnn-dist.tlsDNSNames" $root) (eq $key "ring"))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "\n" $parts | sha256sum -}}
{{- end -}}

{{/* The container's TLS variables: {root, ring}. */}}
{{- define "gnn-dist.tlsEnv" -}}
{{- if .root.Values.tls.enabled }}
- name: GNN_TLS_CA
  value: /etc/gnn-dist/tls/ca.crt
- name: GNN_TLS_CERT
  value: /etc/gnn-dist/tls/tls.crt
- name: GNN_TLS_KEY
  value: /etc/gnn-dist/tls/tls.key
{{- if .ring }}
- name: GNN_RING_TLS_CA
  value: /etc/gnn-dist/ring-tls/ca.crt
- name: GNN_RING_TLS_CERT
  value: /etc/gnn-dist/ring-tls/tls.crt
- name: GNN_RING_TLS_KEY
  value: /etc/gnn-dist/ring-tls/tls.key
{{- end }}
{{- end }}
{{- end -}}
{{- define "gnn-dist.tlsMounts" -}}
{{- if .root.Values.tls.enabled }}
- name: tls
  mountPath: /etc/gnn-dist/tls
  readOnly: true
{{- if .ring }}
- name: ring-tls
  mountPath: /etc/gnn-dist/ring-tls
  readOnly: true
{{- end }}
{{- end }}
{{- end -}}
{{- define "gnn-dist.tlsVolumes" -}}
{{- if .root.Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ include "gnn-dist.tlsSecret" .root }}
{{- if .ring }}
- name: ring-tls
  secret:
    secretName: {{ include "gnn-dist.ringTlsSecret" .root }}
{{- end }}
{{- end }}
{{- end -}}
{{/* The pod template annotation that rolls pods when certificates change. */}}
{{- define "gnn-dist.tlsAnnotation" -}}
{{- if .root.Values.tls.enabled }}
checksum/tls: {{ include "gnn-dist.tlsChecksum" . | quote }}
{{- end }}
{{- end -}}
