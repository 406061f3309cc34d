// Package auditlog serves the sandboxes' audit logs: a page of a hash
// chain (GET …/log, and the image builds' logs through WritePage) and
// the live watch (GET …/watch, server-sent events that replay the newest
// entries or resume after Last-Event-ID, then push each new one).
// Writing entries is server/internal/audit's.
package auditlog
