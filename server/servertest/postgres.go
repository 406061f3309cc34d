package servertest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	// The database/sql driver "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
)

// PostgresEnv names a Postgres URL (postgres://user:pass@host:port/db) whose
// role may create databases. Tests that run against Postgres use it; .ci/run
// starts a server and sets it.
const PostgresEnv = "BOXKITE_TEST_POSTGRES"

// PostgresDSN returns the URL of a new, empty database on the server that
// PostgresEnv names, dropped when the test ends, so tests can run in
// parallel. Without PostgresEnv it returns "" (the caller skips its
// Postgres cases), except in CI (CI set), where that is a failure: CI must
// run every store test on Postgres too.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("servertest: %s is not set but CI is: .ci/run must start PostgreSQL for the store tests", PostgresEnv)
		}
		return ""
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("servertest: %s: %v", PostgresEnv, err)
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("servertest: open %s: %v", PostgresEnv, err)
	}
	defer db.Close()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("servertest: create database %s on %s: %v", name, u.Redacted(), err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			t.Errorf("servertest: drop database %s: %v", name, err)
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE ends connections a test left open (a server's listener).
		// It cannot end an autovacuum worker that happens to be in the
		// database (those belong to the superuser), so a refusal is tried
		// again once the worker has moved on.
		for {
			_, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			if err == nil {
				return
			}
			select {
			case <-ctx.Done():
				t.Errorf("servertest: drop database %s: %v", name, err)
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	u.Path = "/" + name
	return u.String()
}
