package sqlstore_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// createsChildEnv names the store DSN a TestConcurrentCreatesKill child
// creates sandboxes in until it is killed.
const createsChildEnv = "BOXKITE_TEST_CREATES_CHILD"

// TestConcurrentCreatesKill: a process recording creates from 100
// goroutines at once (a "creating" row, then the endpoint and "active",
// as the create service does; on SQLite the writes waiting together are
// group-committed) is killed with SIGKILL. Every write it acknowledged is
// in the store after a reopen: a sandbox acknowledged active is active
// with its endpoint, one acknowledged created exists. On SQLite, and on
// Postgres when servertest.PostgresEnv names a server.
func TestConcurrentCreatesKill(t *testing.T) {
	if dsn := os.Getenv(createsChildEnv); dsn != "" {
		createsChild(t, dsn)
		return
	}
	for name, dsn := range killTestDSNs(t, "creates.db") {
		t.Run(name, func(t *testing.T) { killCreator(t, name, dsn) })
	}
}

func killCreator(t *testing.T, name, dsn string) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestConcurrentCreatesKill$", "-test.count", "1")
	cmd.Env = append(os.Environ(), createsChildEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const kill = 600 // creates acknowledged active before the kill
	created, active := map[string]bool{}, map[string]bool{}
	var batched string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		what, rest, _ := strings.Cut(sc.Text(), " ")
		switch what {
		case "created":
			created[rest] = true
		case "active":
			active[rest] = true
			if len(active) == kill {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		case "batched":
			batched = rest
		}
	}
	_ = cmd.Wait()
	if len(active) < kill {
		t.Fatalf("the child acknowledged %d creates before it ended, want %d", len(active), kill)
	}
	if name == "sqlite" && (batched == "" || strings.HasSuffix(batched, " 0")) {
		t.Errorf("the child's writes shared no commit before the kill (WriteStats: %q)", batched)
	}
	st, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id := range created {
		sb, err := st.SandboxByID(t.Context(), id)
		switch {
		case err != nil:
			t.Errorf("sandbox %s was acknowledged created but is not in the store: %v", id, err)
		case active[id] && (sb.Status != api.StatusActive || sb.Endpoint.Address == ""):
			t.Errorf("sandbox %s was acknowledged active; the store has %q at %q", id, sb.Status, sb.Endpoint.Address)
		}
	}
	t.Logf("%d creates and %d activations acknowledged before the kill (batches, writes: %s)", len(created), len(active), batched)
}

// createsChild records creates from 100 goroutines, printing "created ID"
// and "active ID" as each write returns, until it is killed.
func createsChild(t *testing.T, dsn string) {
	st, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	a := &model.Account{ID: model.NewID(), Email: model.NewID() + "@example.com", CreatedAt: time.Now()}
	if err := st.CreateAccount(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ack := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			for {
				now := time.Now().UTC()
				sb := &model.Sandbox{
					ID: model.NewID(), AccountID: a.ID, Label: "kill", Size: api.SizeSmall, StorageGB: 1,
					LifetimeMinutes: 30, Status: model.StatusCreating, CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
					Driver: "local",
				}
				if err := st.CreateSandbox(t.Context(), sb); err != nil {
					t.Errorf("CreateSandbox: %v", err)
					return
				}
				ack("created %s", sb.ID)
				_, err := st.UpdateSandbox(t.Context(), sb.ID, func(sb *model.Sandbox) error {
					sb.Status = api.StatusActive
					sb.Endpoint = model.Endpoint{Network: "unix", Address: "/run/" + sb.ID + ".sock", Token: "tok"}
					return nil
				})
				if err != nil {
					t.Errorf("UpdateSandbox: %v", err)
					return
				}
				ack("active %s", sb.ID)
				if b, n := st.WriteStats(); n > 0 {
					ack("batched %d %d", b, n)
				}
			}
		})
	}
	wg.Wait()
}
