package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
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
