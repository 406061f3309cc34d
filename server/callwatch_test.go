package server_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// callWatchingDriver is a fake driver that keeps what WatchCalls gave it.
type callWatchingDriver struct {
	*fakeDriver
	mu   sync.Mutex
	idle func() time.Duration
}

func (d *callWatchingDriver) WatchCalls(idle func() time.Duration) {
	d.mu.Lock()
	d.idle = idle
	d.mu.Unlock()
}

// The driver is told when calls to sidecars are in flight (the local
// driver's warm pool refills once they pause).
func TestWatchCalls(t *testing.T) {
	var d *callWatchingDriver
	e := newEnvWithDriver(t, server.Config{}, openStore(t, t.TempDir()), func(f *fakeDriver) model.Driver {
		d = &callWatchingDriver{fakeDriver: f}
		return d
	})
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	if idle == nil {
		t.Fatal("server.New did not call WatchCalls")
	}
	if got := idle(); got <= 0 {
		t.Errorf("idle() before any call = %v, want > 0", got)
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	inside, release := make(chan time.Duration), make(chan struct{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
		inside <- idle()
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"exit_code":0}`))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.exec(e.KeyA, sb.ID, "true")
	}()
	if got := <-inside; got != 0 {
		t.Errorf("idle() during an exec = %v, want 0", got)
	}
	close(release)
	<-done
	if got := idle(); got <= 0 {
		t.Errorf("idle() after the exec = %v, want > 0", got)
	}
}
