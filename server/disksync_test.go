package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

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
