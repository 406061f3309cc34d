package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/storagesync"
)

// TestStorageSyncKillNine (issue 26, acceptance 2): boxkite-server, the
// real program, syncs to each backend's real server. With the store
// stopped (so nothing can be uploaded), files are written through the
// API from several clients and the server is SIGKILLed in the middle of
// the burst. Once the store and the server (on the same state directory)
// are back, every file the API acknowledged is in the bucket, byte-exact.
// 6 s (gcs) to 50 s (s3: SeaweedFS starting twice) a backend.
func TestStorageSyncKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	for _, kind := range objtest.Kinds {
		t.Run(kind, func(t *testing.T) { testStorageSyncKillNine(t, kind) })
	}
}

func testStorageSyncKillNine(t *testing.T, kind string) {
	r := startStorageRun(t, kind)
	obj, stateDir, key, flags, srv, sb := r.obj, r.stateDir, r.key, r.flags, r.srv, r.sb
	ctx := context.Background()

	obj.Stop() // nothing the API acknowledges from now on can be uploaded
	const workers, killAfter = 4, 30
	var (
		mu    sync.Mutex
		acked = map[string]string{} // path → content, answered 2xx
		count atomic.Int32
		wg    sync.WaitGroup
	)
	killed := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				p := fmt.Sprintf("burst/w%d/f%d.txt", w, i)
				content := fmt.Sprintf("written by worker %d, file %d, %x\n", w, i, rand.Uint64())
				if _, err := call(ctx, srv.base, key, "POST", "/v1/sandboxes/"+sb.ID+"/files", api.FileCreateRequest{Path: p, Content: content}, nil); err != nil {
					select {
					case <-killed:
						return // the server is gone; this write has no answer
					default:
						t.Errorf("write before the kill: %v", err)
						return
					}
				}
				mu.Lock()
				acked[p] = content
				mu.Unlock()
				count.Add(1)
			}
		})
	}
	for count.Load() < killAfter {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	close(killed)
	if err := srv.kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	obj.Start(t)
	srv = startServer(t, stateDir, key, flags...)
	b, err := storagesync.Open(ctx, obj.Config)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "" // boxkite/<account>/<sandbox>/, from the first object stored
	mu.Lock()
	defer mu.Unlock()
	missing := len(acked)
	for deadline := time.Now().Add(90 * time.Second); missing > 0; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged files are not in the bucket 90 s after the restart\n%s", missing, len(acked), srv.out.String())
		}
		if prefix == "" {
			_ = b.List(ctx, "boxkite/", func(o storagesync.Object) error {
				if i := strings.Index(o.Key, "/"+sb.ID+"/"); i >= 0 {
					prefix = o.Key[:i+len(sb.ID)+2]
				}
				return nil
			})
		}
		missing = 0
		for p, want := range acked {
			rc, err := b.Get(ctx, prefix+p)
			if err != nil {
				missing++
				continue
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(got) != want {
				missing++ // an older version, perhaps: it must be replaced
			}
		}
	}
	var st api.SyncStatus
	if _, err := call(ctx, srv.base, key, "GET", "/v1/sandboxes/"+sb.ID+"/sync", nil, &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d files acknowledged before the kill, all stored after the restart; sync %+v", kind, len(acked), st)
}

// storageRun is boxkite-server syncing to a fresh store of one kind (the
// flush interval an hour), on a state directory of its own, with one
// sandbox created.
type storageRun struct {
	obj      *objtest.Server
	stateDir string
	key      string
	flags    []string // the store's flags, to start the server again
	srv      *serverProcess
	sb       api.Sandbox
}

func startStorageRun(t *testing.T, kind string) *storageRun {
	t.Helper()
	r := &storageRun{obj: objtest.Start(t, kind), key: model.NewAPIKey()}
	// Unix socket paths under the state directory must stay short.
	dir, err := os.MkdirTemp("", "bxk-sync-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r.stateDir = dir
	r.flags = objectStoreFlags(t, r.obj.Config)
	r.srv = startServer(t, r.stateDir, r.key, r.flags...)
	if _, err := call(context.Background(), r.srv.base, r.key, "POST", "/v1/sandboxes", api.CreateSandboxRequest{}, &r.sb); err != nil {
		t.Fatalf("create sandbox: %v\n%s", err, r.srv.out.String())
	}
	return r
}

// objectStoreFlags are boxkite-server's flags reaching the store c
// configures, its secret in a 0600 file.
func objectStoreFlags(t *testing.T, c storagesync.Config) []string {
	t.Helper()
	flags := []string{"--storage-kind", c.Kind, "--storage-bucket", c.Bucket, "--storage-flush-interval", "1h"}
	secret := ""
	switch c.Kind {
	case "s3":
		flags = append(flags, "--storage-endpoint", c.Endpoint, "--storage-region", c.Region, "--storage-access-key-id", c.AccessKey)
		if c.PathStyle {
			flags = append(flags, "--storage-path-style")
		}
		secret = c.SecretKey
	case "azure":
		secret = c.ConnectionString
	case "gcs":
		flags = append(flags, "--storage-endpoint", c.Endpoint)
	}
	if secret != "" {
		f := filepath.Join(t.TempDir(), "storage.secret")
		if err := os.WriteFile(f, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "--storage-secret-file", f)
	}
	return flags
}
