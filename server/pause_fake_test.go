package server_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// The fake driver pauses by recording: enough for the control plane's
// side of pause, resume and auto-pause.

func (d *fakeDriver) Pause(_ context.Context, id, mode string) error {
	d.mu.Lock()
	hook := d.PauseHook
	d.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pauses = append(d.pauses, mode+" "+id)
	d.calls = append(d.calls, "pause "+id)
	return nil
}

func (d *fakeDriver) Resume(_ context.Context, id string, _ func(net.Listener)) error {
	d.mu.Lock()
	delay, hook := d.ResumeDelay, d.ResumeHook
	d.mu.Unlock()
	time.Sleep(delay)
	if hook != nil {
		hook(id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pauses = append(d.pauses, "resume "+id)
	d.calls = append(d.calls, "resume "+id)
	return d.ResumeErr
}

func (d *fakeDriver) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

func (d *fakeDriver) PauseModes() map[string]string {
	return map[string]string{api.PauseFreeze: "", api.PauseFilesystem: "", api.PauseCheckpoint: "criu check fails here"}
}

func (d *fakeDriver) Pauses() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.pauses...)
}

// TestAutoPause: a sandbox created with auto_pause is paused (filesystem)
// at the end of its lifetime instead of destroyed, resume gives it a
// fresh lifetime, and a sandbox paused longer than the retention is
// destroyed; lifetimes and monthly hours do not run while paused.
func TestAutoPause(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{MaxPausedAge: time.Hour})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 5, AutoPause: true})
	plain := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 5})
	e.clock.Advance(5 * time.Minute)
	e.Server.Reap(context.Background())
	got := e.get(t, sb.ID)
	if got.Status != api.StatusPaused || got.PausedWith != api.PauseFilesystem || !got.AutoPause {
		t.Fatalf("auto-pause sandbox at its end = %+v, want paused with filesystem", got)
	}
	if p := e.get(t, plain.ID); p.Status != api.StatusDestroyed {
		t.Errorf("a sandbox without auto_pause at its end = %s, want destroyed", p.Status)
	}
	e.clock.Advance(30 * time.Minute)
	resp, body := e.do("POST", sandboxPath(sb.ID)+"/resume", e.KeyA, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("resume: %d %s", resp.StatusCode, body)
	}
	var res api.ResumeResult
	mustUnmarshal(t, body, &res)
	if res.Status != api.StatusActive || !res.ExpiresAt.After(e.clock.Now()) {
		t.Errorf("resumed = %+v, want active with a fresh lifetime", res.Sandbox)
	}
	if want := []string{"filesystem " + sb.ID, "resume " + sb.ID}; !equal(e.Driver.Pauses(), want) {
		t.Errorf("driver calls = %q, want %q", e.Driver.Pauses(), want)
	}

	// Paused past the retention: destroyed.
	resp, body = e.do("POST", sandboxPath(sb.ID)+"/pause", e.KeyA, api.PauseSandboxRequest{})
	if resp.StatusCode != 200 {
		t.Fatalf("pause: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(59 * time.Minute)
	e.Server.ReapPaused(context.Background())
	if p := e.get(t, sb.ID); p.Status != api.StatusPaused {
		t.Errorf("paused 59 minutes of a 1 h retention = %s, want paused", p.Status)
	}
	e.clock.Advance(time.Minute)
	e.Server.ReapPaused(context.Background())
	if p := e.get(t, sb.ID); p.Status != api.StatusDestroyed {
		t.Errorf("paused past the retention = %s, want destroyed", p.Status)
	}
}

func (e *env) get(t *testing.T, id string) api.Sandbox {
	t.Helper()
	_, body := e.do("GET", sandboxPath(id), e.KeyA, nil)
	var sb api.Sandbox
	mustUnmarshal(t, body, &sb)
	return sb
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestResumeRaces: resumes racing each other resume the driver once and
// all answer the running sandbox; a resume racing a delete never resumes
// a sandbox whose teardown began. Run with -race.
func TestResumeRaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{RateLimits: server.RateLimits{Lifecycle: 1000}})
	e.Driver.mu.Lock()
	e.Driver.ResumeDelay = 50 * time.Millisecond
	e.Driver.mu.Unlock()
	pause := func(id string) {
		t.Helper()
		if resp, body := e.do("POST", sandboxPath(id)+"/pause", e.KeyA, api.PauseSandboxRequest{}); resp.StatusCode != 200 {
			t.Fatalf("pause: %d %s", resp.StatusCode, body)
		}
	}
	race := func(reqs ...[2]string) []int {
		var wg sync.WaitGroup
		statuses := make([]int, len(reqs))
		for i, r := range reqs {
			wg.Go(func() {
				resp, _ := e.do(r[0], r[1], e.KeyA, nil)
				statuses[i] = resp.StatusCode
			})
		}
		wg.Wait()
		return statuses
	}

	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	pause(sb.ID)
	resume := [2]string{"POST", sandboxPath(sb.ID) + "/resume"}
	if got := race(resume, resume, resume, resume); !slices.Equal(got, []int{200, 200, 200, 200}) {
		t.Errorf("four racing resumes answered %v, want 200 each", got)
	}
	if got := e.Driver.Calls(); !slices.Equal(got, []string{"pause " + sb.ID, "resume " + sb.ID}) {
		t.Errorf("driver calls = %q, want one pause and one resume", got)
	}
	if got := e.get(t, sb.ID); got.Status != api.StatusActive {
		t.Errorf("after the resumes: %s, want active", got.Status)
	}

	for range 5 {
		sb := e.create(e.KeyA, api.CreateSandboxRequest{})
		pause(sb.ID)
		got := race([2]string{"POST", sandboxPath(sb.ID) + "/resume"}, [2]string{"DELETE", sandboxPath(sb.ID)})
		if got[1] != 204 {
			t.Errorf("delete racing a resume answered %d, want 204", got[1])
		}
		calls := e.Driver.Calls()
		del := slices.Index(calls, "delete "+sb.ID)
		if res := slices.Index(calls, "resume "+sb.ID); res > del {
			t.Errorf("driver calls %q: resumed after the delete", calls)
		}
		if st := e.get(t, sb.ID).Status; st != api.StatusDestroyed {
			t.Errorf("after resume and delete: %s, want destroyed", st)
		}
	}
}

// TestPausedLimit: an account keeps at most PausedLimit paused sandboxes;
// the next pause is 429 limit_exceeded, and an auto-pause past it
// destroys the sandbox instead.
func TestPausedLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{PausedLimit: 2})
	for range 2 {
		sb := e.create(e.KeyA, api.CreateSandboxRequest{})
		if resp, body := e.do("POST", sandboxPath(sb.ID)+"/pause", e.KeyA, api.PauseSandboxRequest{}); resp.StatusCode != 200 {
			t.Fatalf("pause: %d %s", resp.StatusCode, body)
		}
	}
	third := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 5, AutoPause: true})
	resp, body := e.do("POST", sandboxPath(third.ID)+"/pause", e.KeyA, api.PauseSandboxRequest{})
	var env api.ErrorEnvelope
	mustUnmarshal(t, body, &env)
	if resp.StatusCode != 429 || env.Error == nil || env.Error.Code != api.CodeLimitExceeded || env.Error.Hint == "" {
		t.Fatalf("third pause: %d %s, want 429 limit_exceeded with a hint", resp.StatusCode, body)
	}
	// Another account is not held back by this one's.
	other := e.create(e.KeyB, api.CreateSandboxRequest{})
	if resp, body := e.do("POST", sandboxPath(other.ID)+"/pause", e.KeyB, api.PauseSandboxRequest{}); resp.StatusCode != 200 {
		t.Fatalf("other account's pause: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(5 * time.Minute)
	e.Server.Reap(context.Background())
	if st := e.get(t, third.ID).Status; st != api.StatusDestroyed {
		t.Errorf("auto-pause past the limit: %s, want destroyed", st)
	}
}

// TestResumeGone: a paused sandbox the driver holds nothing of any more
// is answered 410 sandbox_lost and recorded lost, not 502 "retry".
func TestResumeGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if resp, body := e.do("POST", sandboxPath(sb.ID)+"/pause", e.KeyA, api.PauseSandboxRequest{}); resp.StatusCode != 200 {
		t.Fatalf("pause: %d %s", resp.StatusCode, body)
	}
	e.Driver.mu.Lock()
	e.Driver.ResumeErr = fmt.Errorf("resume sandbox %s: %w", sb.ID, model.ErrSandboxGone)
	e.Driver.mu.Unlock()
	resp, body := e.do("POST", sandboxPath(sb.ID)+"/resume", e.KeyA, nil)
	if resp.StatusCode != 410 || !strings.Contains(string(body), api.CodeSandboxLost) {
		t.Errorf("resume of a sandbox the driver lost: %d %s, want 410 %s", resp.StatusCode, body, api.CodeSandboxLost)
	}
	if got := e.get(t, sb.ID); got.Status != api.StatusLost {
		t.Errorf("after that resume: %s, want lost", got.Status)
	}
}

// TestResumedByAnotherServer: a resume whose driver call fails because
// another server sharing the database resumed the sandbox meanwhile (the
// lifecycle lock is per server; on kube the second resume finds the
// workspace copy the first deleted, ErrCopyElsewhere) answers the running
// sandbox, as a resume of an active sandbox does, not 503.
func TestResumedByAnotherServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if resp, body := e.do("POST", sandboxPath(sb.ID)+"/pause", e.KeyA, api.PauseSandboxRequest{Mode: api.PauseFilesystem}); resp.StatusCode != 200 {
		t.Fatalf("pause: %d %s", resp.StatusCode, body)
	}
	e.Driver.mu.Lock()
	e.Driver.ResumeErr = fmt.Errorf("resume sandbox %s: its workspace copy: %w", sb.ID, model.ErrCopyElsewhere)
	e.Driver.ResumeHook = func(id string) { // the other server's resume, recorded
		if _, err := e.Store.UpdateSandbox(context.Background(), id, func(sb *model.Sandbox) error {
			sb.Status, sb.PausedWith, sb.PausedAt, sb.PausedProcesses = api.StatusActive, "", nil, nil
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	e.Driver.mu.Unlock()
	resp, body := e.do("POST", sandboxPath(sb.ID)+"/resume", e.KeyA, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("resume of a sandbox another server resumed meanwhile: %d %s, want 200", resp.StatusCode, body)
	}
	if got := e.get(t, sb.ID); got.Status != api.StatusActive {
		t.Errorf("after that resume: %s, want active", got.Status)
	}
}
