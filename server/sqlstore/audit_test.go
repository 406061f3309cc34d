package sqlstore_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
)

func logEntry(sandboxID, accountID, op string, i int) *model.ExecLogEntry {
	code := i
	return &model.ExecLogEntry{
		ID: model.NewID(), SandboxID: sandboxID, AccountID: accountID, Source: api.LogSourceAgent,
		Operation: op, Detail: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), ExitCode: &code,
		OutputTruncated: i%2 == 1, StartedAt: base.Add(time.Duration(i) * time.Microsecond), DurationMS: int64(i),
	}
}

// testExecLogChain: appends link up per sandbox, read back exactly as
// written (across a reopen), pages and counts right, and verify.
func testExecLogChain(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st := open(t)
	a := mustAccount(t, st, "log@example.com")
	var written []*model.ExecLogEntry
	for i := range 5 {
		for _, sb := range []string{"sb-1", "sb-2"} {
			e := logEntry(sb, a.ID, "exec", i)
			if i == 0 && sb == "sb-2" {
				e.ExitCode = nil
			}
			if err := st.AppendExecLog(t.Context(), e); err != nil {
				t.Fatalf("AppendExecLog: %v", err)
			}
			if sb == "sb-1" {
				written = append(written, e)
			}
		}
	}
	if written[0].PrevHash != api.GenesisHash || written[0].Seq != 1 || written[4].Seq != 5 {
		t.Errorf("first entry prev %s seq %d, last seq %d; want genesis, 1, 5", written[0].PrevHash, written[0].Seq, written[4].Seq)
	}
	st.Close()
	st = open(t)
	all, total, err := st.ExecLog(t.Context(), "sb-1", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 5 {
		t.Errorf("total = %d, want 5", total)
	}
	if diff := cmp.Diff(written, all); diff != "" {
		t.Errorf("read back (-written +read):\n%s", diff)
	}
	if err := model.VerifyExecLog(all, mustHead(t, st, "sb-1")); err != nil {
		t.Errorf("VerifyExecLog: %v", err)
	}
	if h := mustHead(t, st, "sb-1"); h.Seq != 5 || h.RowHash != written[4].RowHash {
		t.Errorf("head %+v, want seq 5 and the last entry's hash %s", h, written[4].RowHash)
	}
	if h := mustHead(t, st, "sb-none"); h.Seq != 0 || h.RowHash != api.GenesisHash {
		t.Errorf("head of a sandbox without entries %+v, want 0 and the genesis hash", h)
	}
	other, _, err := st.ExecLog(t.Context(), "sb-2", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := model.VerifyExecLog(other, mustHead(t, st, "sb-2")); err != nil || other[0].ExitCode != nil {
		t.Errorf("second sandbox's chain: %v, first exit code %v (want nil)", err, other[0].ExitCode)
	}
	page, total, err := st.ExecLog(t.Context(), "sb-1", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if total != 5 || len(page) != 2 || page[0].Seq != 4 || page[1].Seq != 5 {
		t.Errorf("page limit 2 offset 3: total %d, %d entries %v", total, len(page), page)
	}
	none, total, err := st.ExecLog(t.Context(), "sb-none", 10, 0)
	if err != nil || total != 0 || none == nil || len(none) != 0 {
		t.Errorf("unknown sandbox: %v %d %v; want an empty, non-nil list", none, total, err)
	}
}

// testExecLogConcurrentAppends: appends racing on one sandbox never fork
// the chain.
func testExecLogConcurrentAppends(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := st.AppendExecLog(t.Context(), logEntry("sb", "acct", "view", i)); err != nil {
				t.Errorf("AppendExecLog: %v", err)
			}
		})
	}
	wg.Wait()
	all, total, err := st.ExecLog(t.Context(), "sb", 500, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != n || len(all) != n {
		t.Fatalf("%d entries (total %d), want %d", len(all), total, n)
	}
	if err := model.VerifyExecLog(all, mustHead(t, st, "sb")); err != nil {
		t.Errorf("VerifyExecLog: %v", err)
	}
}

func mustHead(t *testing.T, st model.Store, sandboxID string) model.ExecLogHead {
	t.Helper()
	h, err := st.ExecLogHead(t.Context(), sandboxID)
	if err != nil {
		t.Fatalf("ExecLogHead(%s): %v", sandboxID, err)
	}
	return h
}

// TestExecLogTamper: edits made to the table behind the server's back
// are caught by VerifyExecLog.
func TestExecLogTamper(t *testing.T) {
	tests := []struct {
		name, stmt string
		gap        bool // the error must also say an entry is missing
	}{
		{"detail edited", `UPDATE exec_log SET detail = '{"i":99}' WHERE seq = 2`, false},
		{"operation edited", `UPDATE exec_log SET operation = 'ls' WHERE seq = 1`, false},
		{"exit code cleared", `UPDATE exec_log SET exit_code = NULL WHERE seq = 3`, false},
		{"row deleted", `DELETE FROM exec_log WHERE seq = 2`, true},
		{"rows renumbered after a delete", `DELETE FROM exec_log WHERE seq = 2; UPDATE exec_log SET seq = seq - 1 WHERE seq > 2`, false},
		{"hash recomputed without the chain", `UPDATE exec_log SET prev_hash = '` + api.GenesisHash + `' WHERE seq = 3`, false},
		{"newest row deleted", `DELETE FROM exec_log WHERE seq = 4`, true},
		{"newest rows deleted", `DELETE FROM exec_log WHERE seq >= 2`, true},
		{"every row deleted", `DELETE FROM exec_log`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boxkite.db")
			st, err := sqlstore.Open(t.Context(), "sqlite:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for i := range 4 {
				if err := st.AppendExecLog(t.Context(), logEntry("sb", "acct", "exec", i)); err != nil {
					t.Fatal(err)
				}
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(t.Context(), tt.stmt); err != nil {
				t.Fatalf("tamper: %v", err)
			}
			all, _, err := st.ExecLog(t.Context(), "sb", 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = model.VerifyExecLog(all, mustHead(t, st, "sb"))
			if !errors.Is(err, api.ErrChainBroken) {
				t.Errorf("VerifyExecLog after %s = %v, want ErrChainBroken", tt.name, err)
			}
			if tt.gap && !errors.Is(err, api.ErrLogGap) {
				t.Errorf("VerifyExecLog after %s = %v, want ErrLogGap", tt.name, err)
			}
			// The next append links after the recorded head, so the
			// removal stays visible rather than being written over.
			if err := st.AppendExecLog(t.Context(), logEntry("sb", "acct", "exec", 9)); err != nil {
				t.Fatal(err)
			}
			all, _, err = st.ExecLog(t.Context(), "sb", 100, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := model.VerifyExecLog(all, mustHead(t, st, "sb")); !errors.Is(err, api.ErrChainBroken) {
				t.Errorf("VerifyExecLog after %s and one more append = %v, want ErrChainBroken", tt.name, err)
			}
		})
	}
}

// TestExecLogHeadsBackfill: a database from before exec_log_heads gets
// each sandbox's head from its newest entry when the migration runs.
func TestExecLogHeadsBackfill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxkite.db")
	st, err := sqlstore.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.ExecLogHead{}
	for _, sb := range []string{"sb-1", "sb-2"} {
		for i := range 3 {
			e := logEntry(sb, "acct", "exec", i)
			if err := st.AppendExecLog(t.Context(), e); err != nil {
				t.Fatal(err)
			}
			want[sb] = model.ExecLogHead{Seq: e.Seq, RowHash: e.RowHash}
		}
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Back to the schema before the migration.
	if _, err := db.ExecContext(t.Context(), `DROP TABLE exec_log_heads; DELETE FROM schema_migrations WHERE name = '0010_exec_log_heads'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err = sqlstore.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for sb, h := range want {
		if got := mustHead(t, st, sb); got != h {
			t.Errorf("head of %s after the migration = %+v, want %+v", sb, got, h)
		}
	}
}
