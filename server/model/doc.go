// Package model holds the control plane's domain records (accounts, keys,
// sandboxes, volumes, audit entries, …) and the contracts of what it runs
// on: the Store and its per-concern interfaces (implemented by
// server/sqlstore) and the Driver with its optional capabilities
// (implemented by server/local and server/kube). It is a leaf: it imports
// client/api and the standard library only and holds no logic beyond the
// format of ids and API keys (ids.go), converting a record or a refusal
// of the host to its wire form (errors.go) and sealing an audit entry, so
// every other package of the control plane can import it.
package model
