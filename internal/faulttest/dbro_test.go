package faulttest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	// The database/sql driver "pgx", to make the database read-only.
	_ "github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestDatabaseReadOnly makes the database read-only while the server
// runs. For SQLite its files turn immutable (the kernel cannot remount a
// filesystem read-only under files open for writing, and ext4's
// errors=remount-ro now shuts the filesystem down for reads too), so
// every write the server tries fails while its reads go on; for Postgres
// the database gets default_transaction_read_only and its sessions are
// ended. Audited calls are refused (503 audit_unavailable) or, for one
// already running, answered as not recorded; /health/ready says why; once
// the database takes writes again, without a restart, every call
// answered 2xx is in the log, nothing performed is missing, and the
// chain verifies up to the head the server recorded.
func TestDatabaseReadOnly(t *testing.T) {
	needRoot(t)
	t.Run("sqlite", func(t *testing.T) {
		mnt := smallFS(t, 64) // ext4, whatever /tmp is
		db := filepath.Join(mnt, "boxkite.db")
		s := servertest.New(t, servertest.WithDBPath(db))
		files := []string{db, db + "-wal"}
		readOnlyRun(t, s, func() { immutable(t, files, true) }, func() { immutable(t, files, false) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := servertest.PostgresDSN(t)
		if dsn == "" {
			t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
		}
		s := servertest.New(t, servertest.WithDSN(dsn))
		readOnlyRun(t, s, func() { setReadOnly(t, dsn, true) }, func() { setReadOnly(t, dsn, false) })
	})
}

// readOnlyRun runs execs before, during and after the database is
// read-only (breaking it with fault, mending it with mend).
func readOnlyRun(t *testing.T, s *servertest.Server, fault, mend func()) {
	ctx := context.Background()
	c := newClient(s)
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var acked []string // commands answered 2xx
	exec := func(c *client.Client, cmd string) error {
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: cmd})
		if err == nil && res.ExitCode == 0 {
			acked = append(acked, cmd)
		}
		return err
	}
	for i := range 3 {
		if err := exec(c, fmt.Sprintf("echo before-%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	fault()
	var refused int
	for i := range 6 {
		err := exec(c, fmt.Sprintf("echo during-%d", i))
		if err == nil {
			continue // committed before the store noticed: must be in the log
		}
		if e, ok := errors.AsType[*api.Error](err); !ok || e.Status != http.StatusServiceUnavailable || e.Code != api.CodeAuditUnavailable || e.Hint == "" {
			t.Errorf("exec %d with the database read-only: %v; want 2xx or 503 audit_unavailable with a hint", i, err)
			continue
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("no audited call was refused while the database was read-only")
	}
	if err := c.Ready(ctx); apiCode(err) != api.CodeAuditUnavailable {
		t.Errorf("ready with the database read-only = %v, want 503 audit_unavailable", err)
	}
	if st, err := c.Host(ctx); err == nil && st.Audit.Writable {
		t.Errorf("GET /v1/host says the audit log is writable: %+v", st.Audit)
	}

	mend()
	c = newClient(s)
	poll(t, "the server to accept audited work again", time.Minute, func() bool { return c.Ready(ctx) == nil })
	if err := exec(c, "echo after"); err != nil {
		t.Fatalf("exec after the database was mended: %v", err)
	}
	entries, head := wholeLog(t, c, sb.ID)
	if err := api.VerifyLog(entries, head.HeadSeq, head.HeadHash); err != nil {
		t.Errorf("VerifyLog: %v", err)
	}
	logged := map[string]bool{}
	for _, e := range entries {
		var d struct{ Command string }
		_ = json.Unmarshal(e.Detail, &d)
		logged[d.Command] = true
	}
	for _, cmd := range acked {
		if !logged[cmd] {
			t.Errorf("%q was answered 2xx but is not in the audit log", cmd)
		}
	}
	t.Logf("%d execs answered 2xx, %d refused; %d entries, chain verified", len(acked), refused, len(entries))
}

// fsImmutable is FS_IMMUTABLE_FL of linux/fs.h (x/sys/unix lacks it).
const fsImmutable = 0x00000010

// immutable sets or clears the immutable attribute of files (chattr +i):
// writes to them fail with EPERM, even through descriptors already open.
func immutable(t *testing.T, files []string, on bool) {
	t.Helper()
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err == nil {
			if on {
				flags |= fsImmutable
			} else {
				flags &^= fsImmutable
			}
			err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
		}
		f.Close()
		if err != nil {
			t.Fatalf("chattr %s: %v", p, err)
		}
		if on {
			t.Cleanup(func() { immutable(t, present([]string{p}), false) })
		}
	}
}

// setReadOnly turns default_transaction_read_only of the database at dsn
// on or off and ends its other sessions, so the server's new ones get it.
func setReadOnly(t *testing.T, dsn string, on bool) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	value := "off"
	if on {
		value = "on"
	}
	for _, q := range []string{
		"SET default_transaction_read_only = off", // this session must write, whatever the database says
		fmt.Sprintf("ALTER DATABASE %q SET default_transaction_read_only = %s", name, value),
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var ended time.Time
	if err := conn.QueryRowContext(ctx, "SELECT now()").Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		t.Fatalf("end the server's sessions: %v", err)
	}
	// pg_terminate_backend only signals: wait until those sessions are
	// gone, so the fault is in place before the test goes on.
	// Each round signals the old sessions again: a backend busy in a
	// loaded CI run may take its time, and one signal is all it gets
	// otherwise.
	poll(t, "the server's old sessions to end", 30*time.Second, func() bool {
		var n int
		err := conn.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_start < $2`, name, ended).Scan(&n)
		return err == nil && n == 0
	})
}
