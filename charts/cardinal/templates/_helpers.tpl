{{/* The scheduler's identity: its service account, as the API server names it. */}}
{{- define "cardinal.serviceAccountUser" -}}
system:serviceaccount:{{ .Values.namespace }}:cardinal-scheduler
{{- end -}}

{{/* The scheduler configuration (SPEC 1.5), from the plugin arguments in values. */}}
{{- define "cardinal.schedulerConfig" -}}
# Cardinal's scheduler configuration: one profile, cardinal-scheduler, beside
# the cluster's default scheduler. Pods opt in with schedulerName: cardinal-scheduler.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: cardinal-scheduler
  resourceNamespace: {{ .Values.namespace }}
profiles:
- schedulerName: cardinal-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: CardinalGang
      - name: CardinalQueue
      - name: CardinalCardQuota
        weight: 10
      - name: CardinalPreemption
      disabled:
      - name: PrioritySort
      - name: DefaultPreemption
    filter:
      enabled:
      - name: NodeName
      - name: NodeUnschedulable
      - name: TaintToleration
      - name: NodeAffinity
      - name: NodePorts
      - name: CardinalCardQuota
    bind:
      enabled:
      - name: CardinalGang
  pluginConfig:
  - name: CardinalGang
    args:
      permitWaitingTimeSeconds: {{ .Values.gang.permitWaitingTimeSeconds }}
      podGroupBackoffSeconds: {{ .Values.gang.podGroupBackoffSeconds }}
      staleGangSeconds: {{ .Values.gang.staleGangSeconds }}
      groupedKinds: {{ .Values.gang.groupedKinds | toJson }}
  - name: CardinalQueue
    args:
      defaultQueue: {{ .Values.queue.defaultQueue | quote }}
  - name: CardinalCardQuota
    args:
      cardUnlimitedCpuMemory: {{ .Values.cardQuota.cardUnlimitedCpuMemory }}
  - name: CardinalPreemption
    args:
      preemptibleBelowPriority: {{ .Values.preemption.preemptibleBelowPriority }}
{{- end -}}

{{/* The ConfigMap's name ends in a hash of the configuration, as kustomize's configMapGenerator names it: a changed configuration rolls the pods. */}}
{{- define "cardinal.configMapName" -}}
cardinal-scheduler-config-{{ include "cardinal.schedulerConfig" . | sha256sum | trunc 10 }}
{{- end -}}
