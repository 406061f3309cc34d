package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

// TestAppendStartsNoWatchers: on SQLite an append's transaction runs on
// a context that cannot end, so the driver starts no goroutine to
// interrupt its BEGIN and COMMIT; what is left are database/sql's own,
// one for the transaction and one for the head's read.
func TestAppendStartsNoWatchers(t *testing.T) {
	s := openSQLiteStore(t)
	const n = 20
	created := func() uint64 {
		m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(m)
		return m[0].Value.Uint64()
	}
	s.AppendExecLog(t.Context(), &model.ExecLogEntry{ID: model.NewID(), SandboxID: "sb", AccountID: "a", Source: "agent", Operation: "exec", Detail: []byte(`{}`)})
	before := created()
	for range n {
		e := &model.ExecLogEntry{ID: model.NewID(), SandboxID: "sb", AccountID: "a", Source: "agent", Operation: "exec", Detail: []byte(`{}`)}
		if err := s.AppendExecLog(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	// An unrelated goroutine (a timer's) may start meanwhile: the mean
	// stays below 3 for one or two of them, and is 4 with the watchers.
	if per := float64(created()-before) / n; per >= 3 {
		t.Errorf("an append starts %.2f goroutines, want 2 (database/sql's)", per)
	}
}

// TestAppendOutOfTime: a batch whose BEGIN waits past the batch's
// deadline for another process's lock fails as out of time, which
// answers every entry of it alike (isStoreWide), not as one entry's
// error that has each written again alone.
func TestAppendOutOfTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxkite.db")
	s, err := open(t.Context(), "sqlite:"+path, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Another process's writer, as far as the store can tell.
	dsn, err := sqldb.SQLiteDSN(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.BeginTx(t.Context(), nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	e := &model.ExecLogEntry{ID: model.NewID(), SandboxID: "sb", AccountID: "a", Source: "agent", Operation: "exec", Detail: []byte(`{}`)}
	err = s.appendBatch(ctx, []*model.ExecLogEntry{e})
	if !isStoreWide(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("appendBatch with the lock held past its deadline: %v, want it out of time (store-wide)", err)
	}
}
