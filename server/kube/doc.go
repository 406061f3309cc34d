// Package kube will implement server.Driver on Kubernetes: one pod per sandbox
// running boxkite-sidecar, reached over pinned TLS. Not built yet (issue 12).
package kube
