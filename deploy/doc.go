// Package deploy holds what runs boxkite on Kubernetes: the Dockerfiles of
// the server, sidecar and bastion images (docker/), and the Helm chart
// (helm/boxkite) with the control plane, the bastion and the sandbox
// namespace's RBAC, NetworkPolicies and admission policy. It has no Go code
// of its own; its tests render the chart with helm, check what it renders
// and apply it to a real API server. docs/kubernetes.md is the operator's
// guide.
package deploy
