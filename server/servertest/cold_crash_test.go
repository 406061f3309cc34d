package servertest_test

import (
	"context"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestColdCreateCrash: a plain cold create writes its reservation while
// the driver starts the jail (server/sandbox/plain.go), so a control plane
// killed between the two can leave a jail that no row names. With the
// warm pool off, on SQLite and on Postgres:
//
//   - killed after the driver's start, before the reservation's commit:
//     the restart's reconciliation deletes the jail (no directory, nothing
//     the driver lists, no row);
//   - killed after the answer: the row is active with the endpoint, and
//     the restart adopts the sandbox, which answers.
func TestColdCreateCrash(t *testing.T) {
	needRoot(t)
	onEachStore(t, 0, testColdCreateCrash)
}

func testColdCreateCrash(t *testing.T, s *servertest.Server) {
	ctx := context.Background()
	// Killed after the driver's start, before the reservation's commit:
	// what the create handler has done by then is the driver's create.
	started := model.NewID()
	if _, err := s.Driver.Create(ctx, model.Spec{ID: started}); err != nil {
		t.Fatal(err)
	}
	sb, err := client.New(s.BaseURL, s.APIKey).CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}

	checkCrashRestart(t, s, started, sb.ID)
}
