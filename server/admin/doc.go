// Package admin serves the operator's view across accounts
// (/v1/admin/metrics, /v1/admin/audit-log, /v1/admin/access-log). The
// operator role belongs to accounts named in the server's own
// configuration (boxkite-server --operator EMAIL), never granted through
// the API; it is distinct from the API key role admin and from an
// organization's admin. Every call to these routes, allowed or refused,
// is written to the admin access log. docs/admin.md is the guide.
package admin
