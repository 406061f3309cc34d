package faulttest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestDownLeavesNothing is acceptance 3's first half: after `boxkite up`,
// a sandbox with a volume mounted and written to, and `boxkite down`, no
// process, mount, loop device, cgroup or listener of the stack remains.
// Then the same after the server was killed (SIGKILL) with its sandboxes
// running: down cleans up what the dead server could not.
func TestDownLeavesNothing(t *testing.T) {
	needRoot(t)
	for _, killed := range []bool{false, true} {
		t.Run("server killed "+strconv.FormatBool(killed), func(t *testing.T) {
			s := newStack(t)
			s.up()
			vol := s.mustRun("volumes", "create", "--label", "data")
			id := s.mustRun("session", "create", "--label", "withvol", "--volume", vol+"=/workspace/data")
			s.mustRun("session", "create", "--label", "plain")
			if out := s.mustRun("exec", "-s", id, "--", "sh", "-c", "echo kept > /workspace/data/f && cat /workspace/data/f"); out != "kept" {
				t.Fatalf("write to the volume printed %q", out)
			}
			// The check sees each kind of thing while the stack runs, so
			// its silence after down means something.
			running := strings.Join(s.remains(), "\n")
			for _, kind := range []string{"process ", "mount ", "loop device ", "cgroup ", "listener on port"} {
				if !strings.Contains(running, kind) {
					t.Errorf("while the stack runs, no %q among what it holds:\n%s", kind, running)
				}
			}
			if killed {
				s.killServer()
			}
			s.down()
			s.wantNothingLeft()

			// The volume's data outlives the stack.
			s.up()
			id = s.mustRun("session", "create", "--label", "again", "--volume", vol+"=/workspace/data")
			if out := s.mustRun("exec", "-s", id, "--", "cat", "/workspace/data/f"); out != "kept" {
				t.Errorf("the volume after down and up holds %q, want kept", out)
			}
			s.down()
			s.wantNothingLeft()
		})
	}
}

// TestHostLimitRefusals is acceptance 3's second half: with a low cap on
// the sandboxes' tasks (so the test does not take the machine down),
// creating sandboxes until the host limit is reached ends in refusals
// with the stable code 503 host_capacity; every sandbox created before
// still answers exec; and down leaves nothing behind.
func TestHostLimitRefusals(t *testing.T) {
	needRoot(t)
	s := newStack(t, "BOXKITE_SERVER_MAX_SANDBOX_THREADS=150", "BOXKITE_SERVER_WARM_POOL=0")
	s.up()
	c := s.client()
	ctx := context.Background()
	var ids []string
	var refusals int
	for i := 0; i < 40 && refusals < 3; i++ {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "n" + strconv.Itoa(i)})
		if err == nil {
			ids = append(ids, sb.ID)
			continue
		}
		e, ok := errors.AsType[*api.Error](err)
		if !ok || e.Status != http.StatusServiceUnavailable || e.Code != api.CodeHostCapacity || e.Hint == "" {
			t.Fatalf("create %d: %v; want 503 host_capacity with a hint", i, err)
		}
		if d, _ := e.Details.(map[string]any); d["resource"] != api.SandboxThreads {
			t.Errorf("refusal details %v, want resource %s", e.Details, api.SandboxThreads)
		}
		refusals++
	}
	if refusals == 0 || len(ids) == 0 {
		t.Fatalf("%d sandboxes created, %d refused: the cap was never reached, or nothing fit", len(ids), refusals)
	}
	t.Logf("%d sandboxes created before the host limit refused creates", len(ids))
	for _, id := range ids {
		res, err := c.Exec(ctx, id, api.ExecRequest{Command: "echo alive"})
		if err != nil || strings.TrimSpace(res.Stdout) != "alive" {
			t.Errorf("exec in %s after the refusals = %+v, %v", id, res, err)
		}
	}
	// The sandboxes' threads peak while they start and settle after, so
	// the cap may no longer be refusing by now: /v1/host must report the
	// cap and what the sandboxes use of it, not a refusal at this instant.
	// The driver reads the host at most every 250 ms, so a reading taken
	// before the last creates may answer at first.
	var limits []api.HostLimit
	for deadline := time.Now().Add(30 * time.Second); ; {
		host, err := c.Host(ctx)
		if err != nil {
			t.Fatal(err)
		}
		limits = host.Limits
		i := slices.IndexFunc(limits, func(l api.HostLimit) bool { return l.Resource == api.SandboxThreads })
		if i >= 0 && limits[i].Limit == 150 && limits[i].Used > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/host does not show the sandbox task cap of 150 in use: %+v", limits)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.down()
	s.wantNothingLeft()
}
