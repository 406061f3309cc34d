// Package sqldb is the SQL machinery under server/sqlstore, which knows
// nothing of boxkite's tables or records: the write slot that queues and
// group-commits a SQLite database's writers (WriteSlot), the group
// committer of appends (Committer), SQLite connections that report the
// data generation and keep their prepared statements (OpenSQLite,
// Generation, Cache), the SQLite DSN and its durability settings, the
// owner lock of a SQLite file, Postgres's pool, placeholders, LISTEN and
// unsorted index-ordered queries, and applying embedded migrations.
// server/sqlstore writes the queries and decides what each of these
// serves.
package sqldb
