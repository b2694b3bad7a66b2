{{/* The image: registry/repository, then @digest or :tag (default the chart's appVersion). */}}
{{- define "multus-ipmgr.image" -}}
{{- $i := .Values.image -}}
{{- $name := ternary (printf "%s/%s" $i.registry $i.repository) $i.repository (ne $i.registry "") -}}
{{- if $i.digest -}}{{ $name }}@{{ $i.digest }}{{- else -}}{{ $name }}:{{ default .Chart.AppVersion $i.tag }}{{- end -}}
{{- end }}

{{/* The bridge's objects' name: <release>-bridge (multus-ipmgr-bridge for the release multus-ipmgr). */}}
{{- define "multus-ipmgr.bridge" -}}
{{ .Release.Name | trunc 56 | trimSuffix "-" }}-bridge
{{- end }}

{{/* Labels of every object but the workloads' pods. */}}
{{- define "multus-ipmgr.labels" -}}
app.kubernetes.io/part-of: multus-ipmgr
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* A network of the address plan, by name: {{ include "multus-ipmgr.network" (list $ "ipvlan-multus") }}. */}}
{{- define "multus-ipmgr.network" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}
{{- $found := dict -}}
{{- range $root.Values.addressPlan.networks }}{{ if eq .name $name }}{{ $found = . }}{{ end }}{{ end -}}
{{- if not $found }}{{ fail (printf "addressPlan.networks has no network %q, which the demo's workloads use" $name) }}{{ end -}}
{{- toJson $found -}}
{{- end }}

{{/* The securityContext of the init and sidecar containers. */}}
{{- define "multus-ipmgr.podSecurityContext" -}}
{{ toYaml .Values.pods.securityContext }}
{{- end }}
