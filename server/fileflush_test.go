package server_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// fileFlushingDriver is the flushing driver whose flush reaches every
// filesystem of its sandboxes (model.FileFlusher), as server/local's
// with loop disks: file writes leave their flush to it.
type fileFlushingDriver struct{ *flushingDriver }

var _ model.FileFlusher = (*fileFlushingDriver)(nil)

func (d *fileFlushingDriver) FlushesFiles(string) bool { return true }

// newFileFlushEnv is an env whose driver is a fileFlushingDriver with
// flush (armed), its sandbox, and a fake sidecar whose file writes
// answer 200 and record whether the host-flush header came with them.
func newFileFlushEnv(t *testing.T, flush func(id string) error) (*env, api.Sandbox, model.Store, func() []string) {
	t.Helper()
	st := openStore(t, t.TempDir())
	var d *fileFlushingDriver
	e := newEnvWithDriver(t, server.Config{}, st, func(f *fakeDriver) model.Driver {
		d = &fileFlushingDriver{&flushingDriver{fakeDriver: f, flush: flush}}
		return d
	})
	var mu sync.Mutex
	var headers []string
	write := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.URL.Path+" "+r.Header.Get(api.HeaderSidecarHostFlush))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}
	for _, route := range []string{"PUT /files/raw", "POST /file-create", "POST /str-replace", "POST /files/archive"} {
		e.Sidecar.Route(route, write)
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	d.armed.Store(true)
	return e, sb, st, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), headers...)
	}
}

// TestFileWriteFlushBesideItsEntry: with a driver that flushes every
// filesystem of the sandbox, a file write tells the sidecar to leave the
// flush to the host (an archive does not: its sidecar syncs it), and
// the server flushes the disk beside the write's audit entry as for an
// exec (issue 27, step 63): the flush finds the entry committed while it
// runs, and the client has no answer until it returns.
func TestFileWriteFlushBesideItsEntry(t *testing.T) {
	t.Parallel()
	var st model.Store
	sawEntry := make(chan bool, 1)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the server closes
	var flushes sync.Mutex
	n := 0
	e, sb, st, headers := newFileFlushEnv(t, func(id string) error {
		flushes.Lock()
		n++
		first := n == 1
		flushes.Unlock()
		if !first {
			return nil
		}
		// Sequential (flush, then commit), the entry never comes: give up.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && !hasEntry(st, id, "file_upload") {
			time.Sleep(5 * time.Millisecond)
		}
		sawEntry <- hasEntry(st, id, "file_upload")
		<-release
		return nil
	})

	done := make(chan int, 1)
	go func() {
		resp, _ := e.do("PUT", sandboxPath(sb.ID, "/files/raw?path=/workspace/a"), e.KeyA, "data")
		done <- resp.StatusCode
	}()
	select {
	case saw := <-sawEntry:
		if !saw {
			t.Fatal("the upload's entry was not committed while its disk flush ran: one waits for the other")
		}
	case code := <-done:
		t.Fatalf("the upload was answered (%d) without a disk flush", code)
	}
	select {
	case code := <-done:
		t.Fatalf("the client had the answer (%d) while the disk flush still ran", code)
	case <-time.After(100 * time.Millisecond):
	}
	once.Do(func() { close(release) })
	if code := <-done; code != http.StatusOK {
		t.Fatalf("upload = %d, want 200", code)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/files", api.FileCreateRequest{Path: "/workspace/b", Content: "x"}},
		{"POST", "/files/str-replace", api.StrReplaceRequest{Path: "/workspace/b", OldStr: "x", NewStr: "y"}},
		{"POST", "/files/archive?path=/workspace", "tar"},
	} {
		if resp, body := e.do(c.method, sandboxPath(sb.ID, c.path), e.KeyA, c.body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s = %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	want := []string{"/files/raw 1", "/file-create 1", "/str-replace 1", "/files/archive "}
	if diff := cmp.Diff(want, headers()); diff != "" {
		t.Errorf("sidecar calls and their %s header (-want +got):\n%s", api.HeaderSidecarHostFlush, diff)
	}
	flushes.Lock()
	defer flushes.Unlock()
	if n != 3 {
		t.Errorf("%d disk flushes for an upload, a create and a str-replace, want 3", n)
	}
}

// TestFileWriteFlushFailsAfterItsEntry: when the flush beside a file
// write's entry fails (the host's storage is full), the answer is the
// exec's 507 (performed, with its hint), and a system entry naming the
// write's says that what it wrote was not stored.
func TestFileWriteFlushFailsAfterItsEntry(t *testing.T) {
	t.Parallel()
	e, sb, st, _ := newFileFlushEnv(t, func(string) error {
		return fmt.Errorf("%w: flush /x: no space left on device", model.ErrInsufficientStorage)
	})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/files"), e.KeyA, api.FileCreateRequest{Path: "/workspace/b", Content: "x"})
	ae := wantError(t, resp, body, http.StatusInsufficientStorage, api.CodeInsufficientStorage)
	if det, _ := ae.Details.(map[string]any); det["performed"] != true {
		t.Errorf("507 details = %v, want performed", ae.Details)
	}
	if ae.Hint == "" {
		t.Error("the 507 has no hint")
	}
	got, writeID := logOf(t, st, sb.ID, "file_create")
	want := []logLine{
		{api.LogSourceAgent, "file_create", `{"path":"/workspace/b","size":0}`}, // the fake sidecar answers {}
		{api.LogSourceSystem, "not_stored", `{"entry":"` + writeID + `","operation":"file_create","stored":false}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log of a file write whose flush failed (-want +got):\n%s", diff)
	}
}
