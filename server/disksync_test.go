package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// syncingDriver is the fake driver with a DiskSyncer that counts its calls.
type syncingDriver struct {
	*fakeDriver
	mu    sync.Mutex
	syncs int
}

var _ model.DiskSyncer = (*syncingDriver)(nil)

func (d *syncingDriver) SyncDisk(context.Context, string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncs++
	return nil
}

func (d *syncingDriver) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs
}

// TestDiskSyncOnlyWhereTheSidecarDidNot: the file writes whose sidecar
// flushed what it wrote before answering (docs/files.md) are acknowledged
// without the server flushing the disk again; an exec, whose command's
// writes nobody flushed, and a file write the sidecar failed (told apart
// from a full host by a flush) still flush it.
func TestDiskSyncOnlyWhereTheSidecarDidNot(t *testing.T) {
	t.Parallel()
	var d *syncingDriver
	e := newEnvWithDriver(t, server.Config{}, openStore(t, t.TempDir()), func(f *fakeDriver) model.Driver {
		d = &syncingDriver{fakeDriver: f}
		return d
	})
	ok := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}
	failUpload := false
	e.Sidecar.Route("PUT /files/raw", func(w http.ResponseWriter, r *http.Request) {
		if failUpload {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":{"code":"internal","message":"write: input/output error"}}`))
			return
		}
		ok(w, r)
	})
	e.Sidecar.Route("POST /file-create", ok)
	e.Sidecar.Route("POST /str-replace", ok)
	e.Sidecar.Route("POST /files/archive", ok)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})

	calls := []struct {
		name, method, path string
		body               any
		wantStatus         int
		wantSyncs          int
	}{
		{"upload", "PUT", "/files/raw?path=/workspace/a", "data", 200, 0},
		{"file create", "POST", "/files", api.FileCreateRequest{Path: "/workspace/b", Content: "x"}, 200, 0},
		{"str-replace", "POST", "/files/str-replace", api.StrReplaceRequest{Path: "/workspace/b", OldStr: "x", NewStr: "y"}, 200, 0},
		{"archive", "POST", "/files/archive?path=/workspace", "tar", 200, 0},
		{"exec", "POST", "/exec", api.ExecRequest{Command: "echo x > f"}, 200, 1},
		{"failed upload", "PUT", "/files/raw?path=/workspace/a", "data", 500, 1},
	}
	type got struct{ Status, Syncs int }
	for _, c := range calls {
		failUpload = c.name == "failed upload"
		before := d.count()
		resp, body := e.do(c.method, sandboxPath(sb.ID, c.path), e.KeyA, c.body)
		g := got{resp.StatusCode, d.count() - before}
		if diff := cmp.Diff(got{c.wantStatus, c.wantSyncs}, g); diff != "" {
			t.Errorf("%s (%s): status and disk syncs (-want +got):\n%s", c.name, body, diff)
		}
	}
}

// flushingDriver is the fake driver whose disk flush is flush, once armed.
type flushingDriver struct {
	*fakeDriver
	armed atomic.Bool
	flush func(id string) error
}

var _ model.DiskSyncer = (*flushingDriver)(nil)

func (d *flushingDriver) SyncDisk(_ context.Context, id string) error {
	if !d.armed.Load() {
		return nil
	}
	return d.flush(id)
}

// TestExecFlushBesideItsEntry: an exec's disk flush and the commit of its
// audit entry run side by side (two device flushes that used to add up,
// issue 27), and the answer waits for both: the flush here finds the
// entry committed while it runs, and the client has no answer until the
// flush returns.
func TestExecFlushBesideItsEntry(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	var d *flushingDriver
	e := newEnvWithDriver(t, server.Config{}, st, func(f *fakeDriver) model.Driver {
		d = &flushingDriver{fakeDriver: f}
		return d
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	sawEntry := make(chan bool, 1)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the server closes
	d.flush = func(id string) error {
		// Sequential (flush, then commit), the entry never comes: give up.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && !hasEntry(st, id, "exec") {
			time.Sleep(5 * time.Millisecond)
		}
		sawEntry <- hasEntry(st, id, "exec")
		<-release
		return nil
	}
	d.armed.Store(true)

	done := make(chan int, 1)
	go func() {
		resp, _ := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "echo x > f"})
		done <- resp.StatusCode
	}()
	if !<-sawEntry {
		t.Fatal("the exec's entry was not committed while its disk flush ran: one waits for the other")
	}
	select {
	case code := <-done:
		t.Fatalf("the client had the answer (%d) while the disk flush still ran", code)
	case <-time.After(100 * time.Millisecond):
	}
	once.Do(func() { close(release) })
	if code := <-done; code != http.StatusOK {
		t.Errorf("exec = %d, want 200", code)
	}
}

// TestExecFlushFailsAfterItsEntry: when the flush beside an exec's entry
// fails (the host's storage is full), the answer is the 507 with what the
// command returned, and a system entry naming the exec's says that what
// it wrote was not stored.
func TestExecFlushFailsAfterItsEntry(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	var d *flushingDriver
	e := newEnvWithDriver(t, server.Config{}, st, func(f *fakeDriver) model.Driver {
		d = &flushingDriver{fakeDriver: f, flush: func(string) error {
			return fmt.Errorf("%w: flush /x: no space left on device", model.ErrInsufficientStorage)
		}}
		return d
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	d.armed.Store(true)
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "echo x > f"})
	ae := wantError(t, resp, body, http.StatusInsufficientStorage, api.CodeInsufficientStorage)
	if det, _ := ae.Details.(map[string]any); det["performed"] != true || det["exit_code"] != 0.0 {
		t.Errorf("507 details = %v, want performed and the exit code", ae.Details)
	}
	got, execID := logOf(t, st, sb.ID, "exec")
	want := []logLine{
		{api.LogSourceAgent, "exec", `{"command":"echo x > f","timeout":30}`},
		{api.LogSourceSystem, "not_stored", `{"entry":"` + execID + `","operation":"exec","stored":false}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log of an exec whose flush failed (-want +got):\n%s", diff)
	}
}

// logLine is an audit entry as the flush tests compare it.
type logLine struct{ Source, Operation, Detail string }

// logOf is sandbox id's audit log, and the id of its entry of op.
func logOf(t *testing.T, st model.Store, id, op string) (lines []logLine, opID string) {
	t.Helper()
	entries, _, err := st.ExecLog(context.Background(), id, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		lines = append(lines, logLine{en.Source, en.Operation, string(en.Detail)})
		if en.Operation == op {
			opID = en.ID
		}
	}
	return lines, opID
}

// hasEntry reports whether sandbox id's log has an entry of operation op.
func hasEntry(st model.Store, id, op string) bool {
	entries, _, err := st.ExecLog(context.Background(), id, 100, 0)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Operation == op {
			return true
		}
	}
	return false
}

// TestExecFlushStartsWithTheAnswer: a JSON exec's disk flush starts as
// soon as the sidecar's answer begins (the command has ended by then),
// not once its body has been read and scrubbed (issue 27): the fake
// sidecar sends the first half of its answer and waits for the flush
// before it sends the rest.
func TestExecFlushStartsWithTheAnswer(t *testing.T) {
	t.Parallel()
	var d *flushingDriver
	flushing := make(chan struct{})
	var once sync.Once
	e := newEnvWithDriver(t, server.Config{}, openStore(t, t.TempDir()), func(f *fakeDriver) model.Driver {
		d = &flushingDriver{fakeDriver: f, flush: func(string) error {
			once.Do(func() { close(flushing) })
			return nil
		}}
		return d
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	d.armed.Store(true)
	var flushedFirst atomic.Bool
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"exit_code":0,"stdout":"first half, `))
		w.(http.Flusher).Flush()
		select {
		case <-flushing:
			flushedFirst.Store(true)
		case <-time.After(20 * time.Second): // a hang guard: the flush waits for the whole body
		}
		w.Write([]byte(`second half","stderr":""}`))
	}
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "true"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec = %d %s", resp.StatusCode, body)
	}
	if !flushedFirst.Load() {
		t.Error("the disk flush started only after the sidecar's whole answer was read")
	}
}
