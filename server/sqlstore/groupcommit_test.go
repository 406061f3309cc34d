package sqlstore_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// testExecLogGroupCommit: appends arriving together on several sandboxes
// share transactions (fewer group commits than entries), every one is
// committed, and every sandbox's chain verifies in the order its appends
// returned.
func testExecLogGroupCommit(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	const sandboxes, writers, each = 4, 8, 5
	var wg sync.WaitGroup
	for w := range sandboxes * writers {
		wg.Go(func() {
			for i := range each {
				if err := st.AppendExecLog(t.Context(), logEntry(fmt.Sprintf("gc-%d", w%sandboxes), "acct", "exec", i)); err != nil {
					t.Errorf("AppendExecLog: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for s := range sandboxes {
		id := fmt.Sprintf("gc-%d", s)
		all, total, err := st.ExecLog(t.Context(), id, 500, 0)
		if err != nil {
			t.Fatal(err)
		}
		if total != writers*each {
			t.Errorf("%s: %d entries, want %d", id, total, writers*each)
		}
		if err := model.VerifyExecLog(all, mustHead(t, st, id)); err != nil {
			t.Errorf("%s: VerifyExecLog: %v", id, err)
		}
	}
	batches, entries := st.(interface{ GroupCommitStats() (int64, int64) }).GroupCommitStats()
	if entries != sandboxes*writers*each || batches >= entries {
		t.Errorf("%d group commits wrote %d entries; want %d entries in fewer commits", batches, entries, sandboxes*writers*each)
	}
	t.Logf("%d entries in %d group commits", entries, batches)
}

// crashChildEnv names the store DSN a TestExecLogGroupCommitKill child
// appends to until it is killed.
const crashChildEnv = "BOXKITE_TEST_GROUPCOMMIT_CHILD"

// TestExecLogGroupCommitKill: a process appending from 16 goroutines is
// killed with SIGKILL; every append it acknowledged (AppendExecLog
// returned nil, and it printed the entry's id) is in the store after a
// reopen, and every chain verifies. On SQLite, and on Postgres when
// servertest.PostgresEnv names a server.
func TestExecLogGroupCommitKill(t *testing.T) {
	if dsn := os.Getenv(crashChildEnv); dsn != "" {
		groupCommitChild(t, dsn)
		return
	}
	for name, dsn := range killTestDSNs(t, "crash.db") {
		t.Run(name, func(t *testing.T) { killAppender(t, dsn) })
	}
}

// killTestDSNs names the stores a kill test runs on: a new SQLite file,
// and Postgres when servertest.PostgresEnv names a server.
func killTestDSNs(t *testing.T, file string) map[string]string {
	dsns := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), file)}
	if pg := servertest.PostgresDSN(t); pg != "" {
		dsns["postgres"] = pg
	}
	return dsns
}

func killAppender(t *testing.T, dsn string) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestExecLogGroupCommitKill$", "-test.count", "1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{} // entry id → sandbox id
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		sandbox, id, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "ack "), " ")
		if !ok {
			continue
		}
		acked[id] = sandbox
		if len(acked) == 300 {
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	_ = cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("the child acknowledged %d appends before it ended, want 300", len(acked))
	}
	st, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logged := map[string]bool{}
	for s := range 16 {
		id := fmt.Sprintf("crash-%d", s)
		all, _, err := st.ExecLog(t.Context(), id, 100000, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := model.VerifyExecLog(all, mustHead(t, st, id)); err != nil {
			t.Errorf("%s after the kill: VerifyExecLog: %v", id, err)
		}
		for _, e := range all {
			logged[e.ID] = true
		}
	}
	for id, sandbox := range acked {
		if !logged[id] {
			t.Errorf("append %s to %s was acknowledged but is not in the store", id, sandbox)
		}
	}
	t.Logf("%d appends acknowledged before the kill, %d entries in the store", len(acked), len(logged))
}

// groupCommitChild appends from 16 goroutines, one sandbox each, printing
// "ack SANDBOX ID" for each committed entry, until it is killed.
func groupCommitChild(t *testing.T, dsn string) {
	st, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for s := range 16 {
		wg.Go(func() {
			sandbox := fmt.Sprintf("crash-%d", s)
			for i := 0; ; i++ {
				e := logEntry(sandbox, "acct", "exec", i)
				if err := st.AppendExecLog(t.Context(), e); err != nil {
					t.Errorf("AppendExecLog: %v", err)
					return
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %s %s\n", sandbox, e.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
