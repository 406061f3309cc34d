package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Scanner is a row to scan: *sql.Row, *sql.Rows, pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }

// QueryIndexOrdered runs a query whose ORDER BY an index serves, on
// Postgres with sorting turned off for it alone, in one round trip:
// set_config('enable_sort', 'off', true) and the query are one pgx batch,
// which Postgres runs as one implicit transaction, so the setting ends
// with the query and never reaches the next user of the connection.
//
// Why: on statistics that do not know an account's rows yet (a table
// autovacuum has not analyzed since a bulk insert) the planner estimates
// an account's sandboxes at a few rows and reads them all and sorts them
// for a page of 31, instead of reading the 31 from the index; with
// sorting off, the index's order is the only cheap one whatever the
// statistics say (bench/issue27/session21-store21.md). A SET LOCAL in a
// transaction of database/sql costs four round trips; this, one.
// query is written for Postgres ($1 placeholders). db must be a pgx
// pool (OpenPostgres).
func QueryIndexOrdered[T any](ctx context.Context, db *sql.DB, what string, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", what, err)
	}
	defer conn.Close()
	var out []T
	err = conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("query %s: a postgres connection is a %T, not pgx's", what, dc)
		}
		out, err = batchIndexOrdered(ctx, pc.Conn(), scan, query, args)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", what, err)
	}
	return out, nil
}

// batchIndexOrdered is QueryIndexOrdered's batch on one connection.
func batchIndexOrdered[T any](ctx context.Context, c *pgx.Conn, scan func(Scanner) (T, error), query string, args []any) (out []T, err error) {
	var b pgx.Batch
	b.Queue(`SELECT set_config('enable_sort', 'off', true)`)
	b.Queue(query, args...)
	br := c.SendBatch(ctx, &b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("turn sorting off: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
