{{/*
The init and sidecar containers, which go into your own workloads: the demo's Deployments and StatefulSet
render them from here, with the address plan's network they are on. A network's allowedCidrs become the
container's IPMGR_ALLOWED_CIDRS.
  {{ include "multus-ipmgr.initContainer" (dict "root" $ "network" "ipvlan-multus" "env" (list ...)) }}
*/}}
{{- define "multus-ipmgr.initContainer" -}}
{{- $root := .root -}}
{{- $net := include "multus-ipmgr.network" (list $root .network) | fromJson -}}
- name: multus-ipmgr
  image: {{ include "multus-ipmgr.image" $root }} # your registry: image.registry, or images: in a kustomization (deploy/README.md)
  args: ["init"]
  env:
    # addressPlan's {{ $net.name }}: its pools (and floating addresses) as CIDRs; nothing outside is ever assigned.
    - name: IPMGR_ALLOWED_CIDRS
      value: {{ join "," $net.allowedCidrs | quote }}
    - name: IPMGR_INTERFACES
      value: "net1"
    {{- with .env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .volumeMounts }}
  volumeMounts:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml $root.Values.pods.initResources | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.pods.securityContext | nindent 4 }}
{{- end }}

{{- define "multus-ipmgr.sidecarContainer" -}}
{{- $root := .root -}}
{{- $net := include "multus-ipmgr.network" (list $root .network) | fromJson -}}
- name: multus-ipmgr
  image: {{ include "multus-ipmgr.image" $root }} # your registry: image.registry, or images: in a kustomization (deploy/README.md)
  args: ["sidecar"]
  restartPolicy: Always # native sidecar: started before the application, stopped after it
  env:
    # addressPlan's {{ $net.name }}: its pools and floating addresses ({{ join ", " $net.floatingAddresses }}) as CIDRs.
    - name: IPMGR_ALLOWED_CIDRS
      value: {{ join "," $net.allowedCidrs | quote }}
    - name: IPMGR_INTERFACES
      value: "net1"
    - name: IPMGR_HTTP_PORT
      value: {{ $root.Values.pods.httpPort | int | quote }}
    # A sidecar killed (OOM, SIGKILL) between an address leaving net1 and its release makes the
    # release when it starts again; without it the address stays on the ENI.
    - name: IPMGR_STATE_FILE
      value: "/var/run/multus-ipmgr/pending-releases.json"
    # Optional: the Elastic IP that follows the floating address (grant the opt-in statement of
    # deploy/iam/iam-policy-elastic-ips.json too). Same value on both pods of the pair.
    # - name: IPMGR_ELASTIC_IPS
    #   value: "198.51.100.80=eipalloc-0123456789abcdef0"
  volumeMounts:
    - name: ipmgr-state
      mountPath: /var/run/multus-ipmgr
  ports:
    - name: ipmgr-http
      containerPort: {{ $root.Values.pods.httpPort }}
  startupProbe:
    httpGet: { path: /readyz, port: ipmgr-http }
    periodSeconds: 1
    failureThreshold: 120
  readinessProbe:
    httpGet: { path: /readyz, port: ipmgr-http }
    periodSeconds: 5
  livenessProbe:
    httpGet: { path: /healthz, port: ipmgr-http }
    periodSeconds: 10
    failureThreshold: 3
  resources:
    {{- toYaml $root.Values.pods.sidecarResources | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.pods.securityContext | nindent 4 }}
{{- end }}

{{/* The stand-in application container of the demo's workloads. */}}
{{- define "multus-ipmgr.demoApp" -}}
- name: app
  image: public.ecr.aws/docker/library/busybox:1.37
  command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 3600 & wait $!; done"]
  resources:
    requests: { cpu: 10m, memory: 16Mi }
    limits: { memory: 32Mi }
{{- end }}
