package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageJournalMaxDirs: the journal budget of the server's storage
// config (--storage-journal-max-dirs) is what the sync asks each sidecar
// for in GET /files/tree?max_dirs=; unset, the documented default.
func TestStorageJournalMaxDirs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		set, want int
	}{
		{0, storagesync.DefaultJournalMaxDirs},
		{77, 77},
	} {
		t.Run(strconv.Itoa(tt.set), func(t *testing.T) {
			t.Parallel()
			obj := objtest.Start(t, "gcs") // in this process
			b, err := storagesync.Open(context.Background(), obj.Config)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, server.Config{Storage: server.StorageConfig{Backend: b, Prefix: "p", JournalMaxDirs: tt.set}})
			asked := make(chan string, 16)
			e.Sidecar.Route("GET /files/tree", func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("since") {
					select {
					case asked <- r.URL.Query().Get("max_dirs"):
					default:
					}
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(api.TreeResult{Journal: storagesync.JournalWatching, Token: "0123456789abcdef.1"})
			})
			e.create(e.KeyA, api.CreateSandboxRequest{})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); _ = e.Server.Run(ctx) }()
			defer func() { cancel(); <-done }()
			select {
			case got := <-asked:
				if got != strconv.Itoa(tt.want) {
					t.Errorf("max_dirs=%s, want %d", got, tt.want)
				}
			case <-t.Context().Done():
				t.Fatal("the sync never asked the sidecar's journal")
			}
		})
	}
}

// TestStorageSyncOlderSidecar: a sandbox whose sidecar is older than the
// sync's own routes (its "no route" 404 for GET /files/tree, no protocol
// stated) is refused with 422 not_supported that names the sync and says
// how to get a sandbox that serves it, on POST …/sync/flush and in GET
// …/sync's last_error. Before, the flush answered 502 storage_failed
// ("the object storage could not be reached") and last_error held the
// sidecar's bare 404.
func TestStorageSyncOlderSidecar(t *testing.T) {
	t.Parallel()
	obj := objtest.Start(t, "gcs") // in this process
	b, err := storagesync.Open(context.Background(), obj.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, server.Config{Storage: server.StorageConfig{Backend: b, Prefix: "p"}})
	e.Sidecar.Route("GET /files/tree", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no route `+r.Method+` `+r.URL.Path+`"}}`)
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/sync/flush"), e.KeyA, nil)
	ae := wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeNotSupported)
	if !strings.Contains(ae.Message, "older than this server") || !strings.Contains(ae.Message, "workspace sync (GET /files/tree)") ||
		!strings.Contains(ae.Hint, "boxkite session fork "+sb.ID) {
		t.Errorf("flush: %q, hint %q", ae.Message, ae.Hint)
	}
	resp, body = e.do("GET", sandboxPath(sb.ID, "/sync"), e.KeyA, nil)
	var st api.SyncStatus
	if err := json.Unmarshal(body, &st); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET …/sync: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(st.LastError, "older than this server") {
		t.Errorf("sync status last_error %q, want the older sidecar named", st.LastError)
	}
}
