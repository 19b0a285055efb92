{{/* The chart's name, or nameOverride. */}}
{{- define "mrsched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects: the release name when it contains the chart's name. */}}
{{- define "mrsched.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mrsched.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mrsched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mrsched.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mrsched.labels" -}}
helm.sh/chart: {{ include "mrsched.chart" . }}
{{ include "mrsched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: mrsched
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mrsched.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mrsched.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Cluster-scoped objects (ClusterRole, ClusterRoleBinding) are shared by every namespace: their names carry
the release namespace too, so releases of the same name in two namespaces do not collide. */}}
{{- define "mrsched.clusterName" -}}
{{- printf "%s-%s" (include "mrsched.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mrsched.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "mrsched.workerImage" -}}
{{- default (printf "ghcr.io/mrsched/worker:%s" .Chart.AppVersion) .Values.worker.image }}
{{- end }}

{{/* RBAC rules on the watched namespaces' jobs, task pods and events (rbac.yaml: a ClusterRole when
watchNamespaces is empty, else a Role in each). */}}
{{- define "mrsched.jobRules" -}}
# Task pods: the operator's cache lists and watches them (label selector), the loop creates them already bound
# and deletes lost, stuck or failed attempts; patch only removes the mrsched.dev/task-record finalizer once a
# pod's outcome is in its job's status (a JSON patch tested against the finalizer).
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, create, delete, patch]
# MapReduceJobs: the operator's cache lists and watches them; the loop deletes those past
# ttlSecondsAfterFinished.
- apiGroups: [mrsched.dev]
  resources: [mapreducejobs]
  verbs: [list, watch, delete]
# Job status is written through the status subresource only (merge patch).
- apiGroups: [mrsched.dev]
  resources: [mapreducejobs/status]
  verbs: [patch]
# Task pods carry an owner reference to their job with blockOwnerDeletion: clusters that enable the
# OwnerReferencesPermissionEnforcement admission plugin require update on the owner's finalizers for that.
- apiGroups: [mrsched.dev]
  resources: [mapreducejobs/finalizers]
  verbs: [update]
# One core/v1 Event per job transition and failed attempt (kubectl describe mrj).
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- end }}
