package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestWarmCreateCrash: a create served from the warm pool records its
// sandbox in one write, after the claim (server/sandbox/warm.go). A
// control plane killed at either side of that write restarts into a
// consistent state, on SQLite and on Postgres:
//
//   - killed after the claim, before the write: the claimed sandbox has no
//     row; the restart's reconciliation deletes it (no jail, no directory,
//     no row), as it deleted the "creating" row and its sandbox that a
//     crash between the two writes of a create used to leave;
//   - killed after the write, before the answer: the row is active with
//     the endpoint, and the restart adopts the sandbox, which answers.
func TestWarmCreateCrash(t *testing.T) {
	needRoot(t)
	onEachStore(t, 1, testWarmCreateCrash)
}

func testWarmCreateCrash(t *testing.T, s *servertest.Server) {
	ctx := context.Background()
	// Killed after the claim, before the write: what the create handler
	// has done by then is the claim alone.
	waitWarm(t, s)
	claimed := model.NewID()
	if _, ok, err := s.Driver.ClaimWarm(ctx, model.Spec{ID: claimed}, nil, nil); !ok || err != nil {
		t.Fatalf("ClaimWarm = %v, %v; want a member claimed", ok, err)
	}
	// Killed after the write: a create served from the pool, answered.
	waitWarm(t, s)
	member := poolPID(t, s)
	sb, err := client.New(s.BaseURL, s.APIKey).CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if pid := jailState(t, s, sb.ID).PID; pid != member {
		t.Fatalf("sandbox runs as pid %d, the pool's member was %d: not served from the pool", pid, member)
	}

	checkCrashRestart(t, s, claimed, sb.ID)
}

// waitWarm waits for the pool's one member to be ready.
func waitWarm(t *testing.T, s *servertest.Server) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); s.Driver.WarmReady() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the warm pool did not fill within a minute")
		}
	}
}

// poolMember is what the pool's one ready member's state file holds of
// interest here.
type poolMember struct {
	PID    int    `json:"pid"`
	Socket string `json:"socket"` // its sidecar's
	Token  string `json:"token"`  // the pool's, which its sidecar accepts until claimed
}

// readPoolMember reads the state file of the pool's one ready member.
func readPoolMember(t *testing.T, s *servertest.Server) poolMember {
	t.Helper()
	states, err := filepath.Glob(filepath.Join(s.StateDir, "pool", "*", "state.json"))
	if err != nil || len(states) != 1 {
		t.Fatalf("pool members' state files: %v, %v; want one", states, err)
	}
	b, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	var m poolMember
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// poolPID is the jail pid of the pool's one ready member.
func poolPID(t *testing.T, s *servertest.Server) int {
	t.Helper()
	return readPoolMember(t, s).PID
}

// checkDeleted checks that the driver deleted the sandbox id, which
// names: nothing of it on disk, nothing the driver lists.
func checkDeleted(t *testing.T, s *servertest.Server, id, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(s.StateDir, "sandboxes", id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still on disk after the restart (%v)", name, err)
	}
	observed, err := s.Driver.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range observed {
		if o.ID == id {
			t.Errorf("the driver still has %s: %+v", name, o)
		}
	}
}

// checkCrashRestart restarts s, as after a crash, and checks what the
// restart's reconciliation did: the sandbox orphan, started (or claimed)
// without a row, is deleted (no directory, nothing the driver lists, no
// row), and created, answered before the crash, is adopted: its row is
// active with its endpoint and it answers an exec.
func checkCrashRestart(t *testing.T, s *servertest.Server, orphan, created string) {
	t.Helper()
	ctx := context.Background()

	s.Restart(t)

	checkDeleted(t, s, orphan, "the sandbox started without a row")
	if _, err := s.Store.Sandbox(ctx, s.Account.ID, orphan); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("row of the sandbox started without a row: %v, want none", err)
	}
	row, err := s.Store.Sandbox(ctx, s.Account.ID, created)
	if err != nil || row.Status != api.StatusActive || row.Endpoint.Address == "" {
		t.Fatalf("row of the created sandbox after the restart: %+v, %v; want active with its endpoint", row, err)
	}
	res, err := client.New(s.BaseURL, s.APIKey).Exec(ctx, created, api.ExecRequest{Command: "echo adopted"})
	if err != nil || res.ExitCode != 0 || res.Stdout != "adopted\n" {
		t.Errorf("exec in the adopted sandbox: %+v, %v", res, err)
	}
}

// onEachStore runs test on a server with a warm pool of warmPool, once on
// SQLite and once on Postgres (skipped when servertest.PostgresEnv is not
// set, as CI sets it).
func onEachStore(t *testing.T, warmPool int, test func(*testing.T, *servertest.Server)) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			opts := []servertest.Option{servertest.WithDriverConfig(func(c *local.Config) { c.WarmPool = warmPool })}
			if name == "postgres" {
				dsn := servertest.PostgresDSN(t)
				if dsn == "" {
					t.Skipf("%s is not set", servertest.PostgresEnv)
				}
				opts = append(opts, servertest.WithDSN(dsn))
			}
			test(t, servertest.New(t, opts...))
		})
	}
}
