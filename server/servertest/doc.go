// Package servertest starts a real control plane for tests: the HTTP API on
// httptest, SQLite in t.TempDir() and the local namespace driver.
package servertest
