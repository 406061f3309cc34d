// Package storagesync copies sandboxes' workspaces to the operator's
// object storage (S3 and S3-compatible stores, Azure Blob, GCS), host-side
// and outside the sandbox's trust boundary: the credentials stay in the
// control plane, and the tree the agent controls is walked without
// following links (docs/storage.md).
package storagesync
