// Package sqlstore implements model.Store on SQLite (modernc.org/sqlite, no cgo)
// and, later, Postgres, with embedded per-dialect migrations.
package sqlstore
