package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/model"
)

// expiryDriver is the fake driver with model.ExpiryRecorder: it logs each
// expiry it is told, and fails them all with fail set.
type expiryDriver struct {
	*fakeDriver
	mu   sync.Mutex
	got  []time.Time
	fail error
}

func (d *expiryDriver) RecordExpiry(_ context.Context, _ string, at time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, at.UTC())
	return d.fail
}

// last is the expiry recorded last, and how many were.
func (d *expiryDriver) last() (time.Time, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) == 0 {
		return time.Time{}, 0
	}
	return d.got[len(d.got)-1], len(d.got)
}

// TestExpiryRecorded: a driver that shows a sandbox's expiry (the kube
// driver's pod annotation) is given expires_at at the create, in the
// spec, and after every change of it: the v1 extend, E2B's setTimeout,
// refreshes and connect; a failure to record it is logged and the
// change stands (the row is the truth).
func TestExpiryRecorded(t *testing.T) {
	t.Parallel()
	var d *expiryDriver
	e := newEnvWithDriver(t, server.Config{}, openStore(t, t.TempDir()), func(f *fakeDriver) model.Driver {
		d = &expiryDriver{fakeDriver: f}
		return d
	})
	e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 5})
	specs := e.Driver.Created()
	if len(specs) != 1 || !specs[0].ExpiresAt.Equal(sb.ExpiresAt) {
		t.Fatalf("create's spec expiry = %v, want the row's %v", specs, sb.ExpiresAt)
	}
	get := func() time.Time {
		t.Helper()
		resp, body := e.do("GET", "/v1/sandboxes/"+sb.ID, e.KeyA, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("get: %d %s", resp.StatusCode, body)
		}
		var got api.Sandbox
		mustUnmarshal(t, body, &got)
		return got.ExpiresAt.UTC()
	}
	hdr := http.Header{"X-API-Key": {e.KeyA}}
	steps := []struct {
		name string
		call func()
	}{
		{"v1 extend", func() {
			if resp, body := e.do("POST", "/v1/sandboxes/"+sb.ID+"/extend", e.KeyA, api.ExtendSandboxRequest{LifetimeMinutes: 30}); resp.StatusCode != http.StatusOK {
				t.Fatalf("extend: %d %s", resp.StatusCode, body)
			}
		}},
		{"e2b setTimeout", func() {
			e2bPost(t, e.URL, "/sandboxes/"+sb.ID+"/timeout", hdr, `{"timeout":3600}`, http.StatusNoContent)
		}},
		{"e2b refreshes", func() {
			e2bPost(t, e.URL, "/sandboxes/"+sb.ID+"/refreshes", hdr, `{"duration":7200}`, http.StatusNoContent)
		}},
		{"e2b connect", func() { e2bPost(t, e.URL, "/sandboxes/"+sb.ID+"/connect", hdr, `{"timeout":10800}`, http.StatusOK) }},
	}
	for i, step := range steps {
		before := get()
		e.clock.Advance(time.Minute)
		step.call()
		after := get()
		if !after.After(before) {
			t.Fatalf("%s: expires_at %v, want after %v", step.name, after, before)
		}
		// The row keeps microseconds; the annotation shows seconds.
		if got, n := d.last(); n != i+1 || !got.Truncate(time.Microsecond).Equal(after) {
			t.Errorf("%s: driver told %v (%d calls), want the new expires_at %v (%d calls)", step.name, got, n, after, i+1)
		}
	}

	d.mu.Lock()
	d.fail = errors.New("the API server is down")
	d.mu.Unlock()
	before := get()
	if resp, body := e.do("POST", "/v1/sandboxes/"+sb.ID+"/extend", e.KeyA, api.ExtendSandboxRequest{LifetimeMinutes: 600}); resp.StatusCode != http.StatusOK {
		t.Fatalf("extend with the driver failing: %d %s, want 200", resp.StatusCode, body)
	}
	if after := get(); !after.After(before) {
		t.Errorf("extend with the driver failing: expires_at %v, want after %v", after, before)
	}
	if !strings.Contains(e.Logs.String(), "the API server is down") {
		t.Errorf("the failed record is not logged:\n%s", e.Logs.String())
	}
}

// e2bPost makes an E2B call and fails t unless it answers want.
func e2bPost(t *testing.T, base, path string, hdr http.Header, body string, want int) {
	t.Helper()
	if status, out := e2bsdk.Do(t, base, "POST", path, hdr, body); status != want {
		t.Fatalf("POST %s = %d %s, want %d", path, status, out, want)
	}
}
