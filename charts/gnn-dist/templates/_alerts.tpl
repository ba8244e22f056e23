{{/*
The alert rules (docs/operations.md has a runbook section for each), as a
Prometheus rules file: the PrometheusRule's spec (prometheusrule.yaml), and,
rendered with the default values and monitoring.rules.allReleases=true,
charts/gnn-dist/monitoring/gnn-dist-rules.yaml for a Prometheus without the
operator (tests/e2e/alerts.sh keeps the two the same).

Selectors end in a scope token that gnn-dist.alertRules replaces: "{@}" or
"@}" by this release's namespace and release labels (the labels
docs/operations.md asks the scrape configuration for), "{@ns}" or "@ns}" by
its namespace only (cAdvisor and kube-state-metrics series carry no
release); with allReleases, by nothing: the rules then cover every gnn-dist
release the Prometheus scrapes.

Metrics: the services' own (docs/metrics.md), and the standard up,
container_memory_working_set_bytes (cAdvisor) and
kube_pod_container_resource_limits (kube-state-metrics).
*/}}
{{- define "gnn-dist.alertGroups" -}}
{{- $a := .Values.monitoring.alerts -}}
{{- $components := `component=~"graphstore|sampler|trainer"` -}}
{{- /* the run has started training: from then on a component that is not
ready or not reachable holds it up (before, graph stores wait for the
partitioner, which can take hours) */ -}}
{{- $training := `count by (namespace, release) (gnn_trainer_finished{@})` -}}
groups:
  - name: gnn-dist
    rules:
      - alert: GnnTrainingStalled
        expr: |
          (
            increase(gnn_trainer_steps_total{@}[{{ $a.trainingStalled.minutes }}m]) == 0
              and on(namespace, pod) (gnn_trainer_steps_total{@} offset {{ $a.trainingStalled.minutes }}m)
            or
            max_over_time(gnn_trainer_ring_up{@}[{{ $a.trainingStalled.minutes }}m]) == 0
              and on(namespace, pod) min_over_time(gnn_trainer_samplers_live{@}[{{ $a.trainingStalled.minutes }}m]) > 0
          )
          and on(namespace, pod) time() - process_start_time_seconds{@} > {{ mul $a.trainingStalled.minutes 60 }}
          unless on(namespace, pod) gnn_trainer_finished{@} == 1
        labels:
          severity: critical
        annotations:
          summary: 'Training of {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.release }} has not taken a step for {{ $a.trainingStalled.minutes }} minutes'
          description: '{{ "{{" }} $labels.pod }} is not finished, took no training step in the last {{ $a.trainingStalled.minutes }} minutes, or has waited that long for its peers to form the ring.'
          runbook: docs/operations.md#gnntrainingstalled
      - alert: GnnComponentDown
        expr: |
          up{ {{- $components -}} @} == 0
        for: {{ $a.componentDown.minutes }}m
        labels:
          severity: critical
        annotations:
          summary: '{{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} does not answer /metrics'
          description: 'Prometheus has not scraped {{ "{{" }} $labels.pod }} ({{ "{{" }} $labels.component }}) for {{ $a.componentDown.minutes }} minutes: the process is stopped, hung or crash-looping.'
          runbook: docs/operations.md#gnncomponentdown
      - alert: GnnGraphStoresUnreachable
        expr: |
          gnn_sampler_graphstores_ready{@}
            < on(namespace, pod) group_left count by (namespace, pod) (gnn_sampler_graphstore_requests_total{@})
          and on(namespace, release) {{ $training }}
        for: {{ $a.componentDown.minutes }}m
        labels:
          severity: critical
        annotations:
          summary: 'Sampler {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} reaches {{ "{{" }} $value }} graph stores, fewer than the partitions'
          description: 'For {{ $a.componentDown.minutes }} minutes at least one graph store has not answered the sampler''s INFO checks: its pod is gone, stopped or unreachable.'
          runbook: docs/operations.md#gnngraphstoresunreachable
      - alert: GnnComponentNotReady
        expr: |
          sum by (namespace, release, component, pod) (increase(gnn_http_requests_total{path="/readyz",code="503"@}[2m])) > 0
          unless on(namespace, pod) sum by (namespace, pod) (increase(gnn_http_requests_total{path="/readyz",code="200"@}[2m])) > 0
          and on(namespace, release) {{ $training }}
        for: {{ $a.componentNotReady.minutes }}m
        labels:
          severity: warning
        annotations:
          summary: '{{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} is not ready'
          description: '{{ "{{" }} $labels.pod }} ({{ "{{" }} $labels.component }}) has answered every /readyz probe with 503 for {{ $a.componentNotReady.minutes }} minutes while the run trains.'
          runbook: docs/operations.md#gnncomponentnotready
      - alert: GnnSamplerAdmissionRefusals
        expr: |
          sum by (namespace, release, pod) (rate(gnn_sampler_admission_timeouts_total{@}[5m]))
            / sum by (namespace, release, pod) (rate(gnn_sampler_requests_total{op="minibatch"@}[5m]))
          > {{ $a.admissionRefusals.ratio }}
        for: {{ $a.admissionRefusals.minutes }}m
        labels:
          severity: warning
        annotations:
          summary: 'Sampler {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} refuses {{ "{{" }} $value | humanizePercentage }} of the minibatches'
          description: 'More than {{ $a.admissionRefusals.ratio }} of its minibatch requests waited longer than the admission wait for room in the build budget and were answered busy, for {{ $a.admissionRefusals.minutes }} minutes.'
          runbook: docs/operations.md#gnnsampleradmissionrefusals
      - alert: GnnStoreCallTimeouts
        expr: |
          sum by (namespace, release, graphstore) (rate(gnn_sampler_graphstore_retries_total{@}[5m]))
            / sum by (namespace, release, graphstore) (rate(gnn_sampler_graphstore_requests_total{@}[5m]))
          > {{ $a.storeCallTimeouts.ratio }}
        for: {{ $a.storeCallTimeouts.minutes }}m
        labels:
          severity: warning
        annotations:
          summary: 'Calls to {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.graphstore }} time out: {{ "{{" }} $value | humanizePercentage }} retried'
          description: 'The samplers retried more than {{ $a.storeCallTimeouts.ratio }} of their calls to {{ "{{" }} $labels.graphstore }} after a timeout, for {{ $a.storeCallTimeouts.minutes }} minutes.'
          runbook: docs/operations.md#gnnstorecalltimeouts
      - alert: GnnStoreErrors
        expr: |
          sum by (namespace, release, graphstore) (rate(gnn_sampler_graphstore_errors_total{@}[5m]))
            / sum by (namespace, release, graphstore) (rate(gnn_sampler_graphstore_requests_total{@}[5m]))
          > {{ $a.storeErrors.ratio }}
          or
          sum by (namespace, release, pod) (rate(gnn_graphstore_request_errors_total{op!~"info|predict|lookup"@}[5m]))
            / sum by (namespace, release, pod) (rate(gnn_graphstore_requests_total{op!~"info|predict|lookup"@}[5m]))
          > {{ $a.storeErrors.ratio }}
        for: {{ $a.storeErrors.minutes }}m
        labels:
          severity: warning
        annotations:
          summary: 'Graph store {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.graphstore }}{{ "{{" }} $labels.pod }}: {{ "{{" }} $value | humanizePercentage }} of the calls fail'
          description: 'More than {{ $a.storeErrors.ratio }} of the calls to it failed (after their retries, seen by the samplers) or were answered with an error (seen by the store), for {{ $a.storeErrors.minutes }} minutes.'
          runbook: docs/operations.md#gnnstoreerrors
      - alert: GnnCheckpointSaveFailures
        expr: |
          increase(gnn_trainer_checkpoint_failures_total{@}[{{ $a.checkpointFailures.minutes }}m]) > 0
        labels:
          severity: warning
        annotations:
          summary: '{{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} could not write a checkpoint or the result'
          description: 'Checkpoint or result.json writes failed in the last {{ $a.checkpointFailures.minutes }} minutes; training goes on, but a restart loses the work since the last checkpoint that was written.'
          runbook: docs/operations.md#gnncheckpointsavefailures
      - alert: GnnRingRejoinsRepeating
        expr: |
          count_over_time((increase(gnn_trainer_ring_rejoins_total{@}[5m]) > 0)[{{ $a.ringRejoins.minutes }}m:5m])
          >= {{ $a.ringRejoins.periods }}
        labels:
          severity: warning
        annotations:
          summary: 'The ring of {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.release }} keeps failing'
          description: '{{ "{{" }} $labels.pod }} formed its ring again in {{ "{{" }} $value }} of the 5-minute periods of the last {{ $a.ringRejoins.minutes }} minutes; each time the run resumes from its last checkpoint.'
          runbook: docs/operations.md#gnnringrejoinsrepeating
      - alert: GnnPodMemoryNearLimit
        expr: |
          max by (namespace, pod, container) (container_memory_working_set_bytes{container!="",container!="POD"@ns})
            / max by (namespace, pod, container) (kube_pod_container_resource_limits{resource="memory"@ns})
          > {{ $a.memoryNearLimit.ratio }}
          and on(namespace, pod) up{ {{- $components -}} @}
        for: {{ $a.memoryNearLimit.minutes }}m
        labels:
          severity: warning
        annotations:
          summary: '{{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} uses {{ "{{" }} $value | humanizePercentage }} of its memory limit'
          description: 'The working set of container {{ "{{" }} $labels.container }} has been above {{ $a.memoryNearLimit.ratio }} of its limit for {{ $a.memoryNearLimit.minutes }} minutes: at the limit the kernel kills it (OOMKilled).'
          runbook: docs/operations.md#gnnpodmemorynearlimit
      - alert: GnnTlsHandshakeFailures
        expr: |
          sum by (namespace, release, pod) (increase(gnn_links_errors_total{reason="auth"@}[{{ $a.tlsHandshakeFailures.minutes }}m]))
          > {{ $a.tlsHandshakeFailures.count }}
        labels:
          severity: warning
        annotations:
          summary: '{{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }}: {{ "{{" }} $value | humanize }} failed TLS handshakes'
          description: 'More than {{ $a.tlsHandshakeFailures.count }} TLS handshakes on its nng links failed in the last {{ $a.tlsHandshakeFailures.minutes }} minutes: a peer without a certificate of the CA, or with an expired one.'
          runbook: docs/operations.md#gnntlshandshakefailures
      - alert: GnnCertificateExpiringSoon
        expr: |
          gnn_tls_certificate_not_after_seconds{@} - time() < {{ mul $a.certificateExpiry.days 86400 }}
        labels:
          severity: warning
        annotations:
          summary: 'A certificate of {{ "{{" }} $labels.namespace }}/{{ "{{" }} $labels.pod }} expires in {{ "{{" }} $value | humanizeDuration }}'
          description: 'The {{ "{{" }} $labels.certificate }} certificate of the {{ "{{" }} $labels.domain }} links that {{ "{{" }} $labels.pod }} uses ends in less than {{ $a.certificateExpiry.days }} days. The process reads its certificates at start only.'
          runbook: docs/operations.md#gnncertificateexpiringsoon
{{- end -}}

{{/* The rules with the scope tokens replaced (see above). */}}
{{- define "gnn-dist.alertRules" -}}
{{- $rel := printf `namespace="%s",release="%s"` .Release.Namespace .Release.Name -}}
{{- $ns := printf `namespace="%s"` .Release.Namespace -}}
{{- $text := include "gnn-dist.alertGroups" . -}}
{{- if .Values.monitoring.rules.allReleases -}}
{{- $text | replace "{@}" "" | replace "@}" "}" | replace "{@ns}" "" | replace "@ns}" "}" -}}
{{- else -}}
{{- $text | replace "{@}" (printf "{%s}" $rel) | replace "@}" (printf ",%s}" $rel) | replace "{@ns}" (printf "{%s}" $ns) | replace "@ns}" (printf ",%s}" $ns) -}}
{{- end -}}
{{- end -}}
