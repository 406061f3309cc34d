package server_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// fileFlushingDriver is the flushing driver whose flush reaches every
// filesystem of its sandboxes (model.FileFlusher), as server/local's
// with loop disks: file writes leave their flush to it.
type fileFlushingDriver struct{ *flushingDriver }

var _ model.FileFlusher = (*fileFlushingDriver)(nil)

func (d *fileFlushingDriver) FlushesFiles(string) bool { return true }

// newFileFlushEnv is newFlushEnv's env with a fileFlushingDriver, whose
// fake sidecar's file writes answer 200 and record whether the
// host-flush header came with them (headers says, in order).
func newFileFlushEnv(t *testing.T, st model.Store, flush func(id string) error) (e *env, sb api.Sandbox, headers func() []string) {
	t.Helper()
	e, sb = newFlushEnv(t, st, true, flush)
	var mu sync.Mutex
	var got []string
	write := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get(api.HeaderSidecarHostFlush))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}
	for _, route := range []string{"PUT /files/raw", "POST /file-create", "POST /str-replace", "POST /files/archive"} {
		e.Sidecar.Route(route, write)
	}
	return e, sb, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
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
	st := openStore(t, t.TempDir())
	h := holdFlush(st, "file_upload")
	e, sb, headers := newFileFlushEnv(t, st, h.flush)
	h.check(t, func() int {
		resp, _ := e.do("PUT", sandboxPath(sb.ID, "/files/raw?path=/workspace/a"), e.KeyA, "data")
		return resp.StatusCode
	})
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
	if n := h.count(); n != 3 {
		t.Errorf("%d disk flushes for an upload, a create and a str-replace, want 3", n)
	}
}

// TestFileWriteFlushFailsAfterItsEntry: when the flush beside a file
// write's entry fails (the host's storage is full), the answer is the
// exec's 507 (performed, with its hint), and a system entry naming the
// write's says that what it wrote was not stored.
func TestFileWriteFlushFailsAfterItsEntry(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	e, sb, _ := newFileFlushEnv(t, st, noSpace)
	resp, body := e.do("POST", sandboxPath(sb.ID, "/files"), e.KeyA, api.FileCreateRequest{Path: "/workspace/b", Content: "x"})
	wantNotStored(t, st, sb.ID, resp, body, "file_create", `{"path":"/workspace/b","size":0}`) // the fake sidecar answers {}
}
