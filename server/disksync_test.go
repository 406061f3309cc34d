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

// newFlushEnv is an env whose driver is a flushingDriver with flush
// (a fileFlushingDriver with files: its flush reaches every filesystem),
// and its sandbox; the flush is armed once the sandbox exists.
func newFlushEnv(t *testing.T, st model.Store, files bool, flush func(id string) error) (*env, api.Sandbox) {
	t.Helper()
	var d *flushingDriver
	e := newEnvWithDriver(t, server.Config{}, st, func(f *fakeDriver) model.Driver {
		d = &flushingDriver{fakeDriver: f, flush: flush}
		if files {
			return &fileFlushingDriver{d}
		}
		return d
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	d.armed.Store(true)
	return e, sb
}

// heldFlush is the disk flush of the "beside its entry" tests: the first
// one waits for the sandbox's entry of op to be committed, says whether
// it was, and returns only when released; the others return at once.
type heldFlush struct {
	st      model.Store
	op      string
	saw     chan bool
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	n       int
}

func holdFlush(st model.Store, op string) *heldFlush {
	return &heldFlush{st: st, op: op, saw: make(chan bool, 1), release: make(chan struct{})}
}

func (h *heldFlush) flush(id string) error {
	h.mu.Lock()
	h.n++
	first := h.n == 1
	h.mu.Unlock()
	if !first {
		return nil
	}
	// Sequential (flush, then commit), the entry never comes: give up,
	// late enough that a commit slowed by a loaded host is still seen.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !hasEntry(h.st, id, h.op) {
		time.Sleep(5 * time.Millisecond)
	}
	h.saw <- hasEntry(h.st, id, h.op)
	<-h.release
	return nil
}

// count is how many flushes there were.
func (h *heldFlush) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// check makes the request call (which answers its status) and fails t
// unless the held flush found the entry committed while it ran, the
// client had no answer until it returned, and the answer is 200.
func (h *heldFlush) check(t *testing.T, call func() int) {
	t.Helper()
	let := func() { h.once.Do(func() { close(h.release) }) }
	t.Cleanup(let) // before the server closes
	done := make(chan int, 1)
	go func() { done <- call() }()
	select {
	case saw := <-h.saw:
		if !saw {
			t.Fatalf("the %s entry was not committed while its disk flush ran: one waits for the other", h.op)
		}
	case code := <-done:
		t.Fatalf("the %s was answered (%d) without a disk flush", h.op, code)
	}
	select {
	case code := <-done:
		t.Fatalf("the client had the answer (%d) while the disk flush still ran", code)
	case <-time.After(100 * time.Millisecond):
	}
	let()
	if code := <-done; code != http.StatusOK {
		t.Fatalf("%s = %d, want 200", h.op, code)
	}
}

// TestExecFlushBesideItsEntry: an exec's disk flush and the commit of its
// audit entry run side by side (two device flushes that used to add up,
// issue 27), and the answer waits for both: the flush here finds the
// entry committed while it runs, and the client has no answer until the
// flush returns.
func TestExecFlushBesideItsEntry(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	h := holdFlush(st, "exec")
	e, sb := newFlushEnv(t, st, false, h.flush)
	h.check(t, func() int {
		resp, _ := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "echo x > f"})
		return resp.StatusCode
	})
}

// wantNotStored checks the answer of a call whose flush beside its entry
// failed: a 507 saying the call was performed, with a hint, and the log
// (-want +got) of the call's entry (op, detail) and a system entry naming
// it that says what it wrote was not stored. It returns the 507.
func wantNotStored(t *testing.T, st model.Store, id string, resp *http.Response, body []byte, op, detail string) *api.Error {
	t.Helper()
	ae := wantError(t, resp, body, http.StatusInsufficientStorage, api.CodeInsufficientStorage)
	if det, _ := ae.Details.(map[string]any); det["performed"] != true {
		t.Errorf("507 details = %v, want performed", ae.Details)
	}
	if ae.Hint == "" {
		t.Error("the 507 has no hint")
	}
	got, opID := logOf(t, st, id, op)
	want := []logLine{
		{api.LogSourceAgent, op, detail},
		{api.LogSourceSystem, "not_stored", `{"entry":"` + opID + `","operation":"` + op + `","stored":false}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log of a %s whose flush failed (-want +got):\n%s", op, diff)
	}
	return ae
}

// noSpace is the flush of a host whose storage is full.
func noSpace(string) error {
	return fmt.Errorf("%w: flush /x: no space left on device", model.ErrInsufficientStorage)
}

// TestExecFlushFailsAfterItsEntry: when the flush beside an exec's entry
// fails (the host's storage is full), the answer is the 507 with what the
// command returned, and a system entry naming the exec's says that what
// it wrote was not stored.
func TestExecFlushFailsAfterItsEntry(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	e, sb := newFlushEnv(t, st, false, noSpace)
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "echo x > f"})
	ae := wantNotStored(t, st, sb.ID, resp, body, "exec", `{"command":"echo x > f","timeout":30}`)
	if det, _ := ae.Details.(map[string]any); det["exit_code"] != 0.0 {
		t.Errorf("507 details = %v, want the exit code", ae.Details)
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
	flushing := make(chan struct{})
	var once sync.Once
	e, sb := newFlushEnv(t, openStore(t, t.TempDir()), false, func(string) error {
		once.Do(func() { close(flushing) })
		return nil
	})
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
