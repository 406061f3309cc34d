{{/*
Names, labels and image references shared by the templates, and the checks
that span several values (values.schema.json checks each value alone).
*/}}

{{/*
The chart's name. Cut to 55 characters, as the release's prefix below is:
a component's "-bastion" (8) makes the longest name that must be a DNS
label (the Services) or a label value (app.kubernetes.io/name), at most
63 characters, for any release name helm accepts (53).
*/}}
{{- define "boxkite.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 55 | trimSuffix "-" }}
{{- end }}

{{/* The release's prefix for every object name, at most 55 characters (boxkite.name). */}}
{{- define "boxkite.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 55 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 55 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 55 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "boxkite.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "boxkite.labels" -}}
helm.sh/chart: {{ include "boxkite.chart" . }}
app.kubernetes.io/name: {{ include "boxkite.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: boxkite
{{- end }}

{{/*
Selector labels of one component: include with (list . "server"). The name
is the component's program, boxkite-server or boxkite-bastion: the kube
driver's per-sandbox NetworkPolicies admit pods named boxkite-server.
*/}}
{{- define "boxkite.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "boxkite.name" $ }}-{{ index . 1 }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels of one component's objects: include with (list . "server"). */}}
{{- define "boxkite.componentLabels" -}}
{{- $ := index . 0 -}}
helm.sh/chart: {{ include "boxkite.chart" $ }}
{{ include "boxkite.selectorLabels" . }}
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $.Release.Service }}
app.kubernetes.io/part-of: boxkite
{{- end }}

{{/*
The port every sandbox's sidecar serves TLS on: the kube driver's
(server/kube DefaultSidecarPort), which the server has no setting for.
*/}}
{{- define "boxkite.sidecarPort" -}}
8443
{{- end }}

{{- define "boxkite.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-server" (include "boxkite.fullname" .)) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret with the server's and bastion's credentials, if any. */}}
{{- define "boxkite.authSecretName" -}}
{{- default (printf "%s-auth" (include "boxkite.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{- define "boxkite.hasAuthSecret" -}}
{{- if or .Values.auth.existingSecret .Values.auth.bootstrapApiKey .Values.auth.jwtSecret .Values.auth.bastionKey }}true{{ end }}
{{- end }}

{{/*
An image reference from the shared registry and one image's values:
include with (list . .Values.server.image). A digest pins the image and
wins over the tag; the tag defaults to the chart's appVersion.
*/}}
{{- define "boxkite.image" -}}
{{- $ := index . 0 -}}
{{- $img := index . 1 -}}
{{- $repo := $img.repository -}}
{{- if $.Values.image.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $.Values.image.registry) $img.repository }}{{ end -}}
{{- if $img.digest -}}
{{ $repo }}@{{ $img.digest }}
{{- else -}}
{{ $repo }}:{{ default $.Chart.AppVersion $img.tag }}
{{- end }}
{{- end }}

{{/* The restricted container security context every boxkite container runs with. */}}
{{- define "boxkite.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Checks across values; rendered (as nothing) by the server Deployment. */}}
{{- define "boxkite.validate" -}}
{{- if and (eq .Values.database.driver "sqlite") (gt (int .Values.server.replicas) 1) }}
{{- fail "server.replicas > 1 needs database.driver=postgres: SQLite lives on one pod's volume" }}
{{- end }}
{{- if and (eq .Values.database.driver "postgres") (not .Values.database.postgres.existingSecret) (not .Values.database.postgres.dsn) }}
{{- fail "database.driver=postgres needs database.postgres.existingSecret (preferred) or database.postgres.dsn" }}
{{- end }}
{{- if and .Values.auth.existingSecret (or .Values.auth.bootstrapApiKey .Values.auth.jwtSecret .Values.auth.bastionKey) }}
{{- fail "set either auth.existingSecret or the auth values, not both" }}
{{- end }}
{{- if and .Values.objectStorage.kind (not .Values.objectStorage.bucket) }}
{{- fail "objectStorage.kind needs objectStorage.bucket" }}
{{- end }}
{{- if eq .Values.sandboxes.namespace .Release.Namespace }}
{{- fail "sandboxes.namespace must differ from the release namespace: its default-deny policy and admission policy would fence the control plane too" }}
{{- end }}
{{- end }}
