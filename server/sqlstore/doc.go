// Package sqlstore implements model.Store on SQLite (modernc.org/sqlite, no
// cgo) and Postgres (pgx), with embedded per-dialect migrations, and the
// stores the subsystems declare. It writes the queries; the SQL machinery
// they run on (the write slot, group commit, the generation-checked
// cache, statement caching, DSNs, applying migrations) is
// server/sqlstore/sqldb's.
package sqlstore
