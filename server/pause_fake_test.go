package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// The fake driver pauses by recording: enough for the control plane's
// side of pause, resume and auto-pause.

func (d *fakeDriver) Pause(_ context.Context, id, mode string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pauses = append(d.pauses, mode+" "+id)
	return nil
}

func (d *fakeDriver) Resume(_ context.Context, id string, _ func(net.Listener)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pauses = append(d.pauses, "resume "+id)
	return nil
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
