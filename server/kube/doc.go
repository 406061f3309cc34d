// Package kube implements model.Driver on Kubernetes: one pod per sandbox
// running boxkite-sidecar as a non-root user, reached over TLS pinned to a
// self-signed certificate the driver made for it.
//
// Each pod comes with a Secret (the sidecar's token, a boot token,
// certificate and key) and a NetworkPolicy that denies it all egress and
// admits only the control plane. The pod mounts the boot token, never the
// sidecar's token: its commands run as the sidecar's uid and can read what
// it mounts, and the driver claims the sidecar with its token before any
// command runs. Labels, not memory, are the source of truth: List reads them, so a
// restarted server finds its sandboxes again. A warm pool of ready pods is
// claimed by a JSON-patch compare-and-swap on resourceVersion, so two
// servers (or two creates) can never claim the same pod.
package kube
