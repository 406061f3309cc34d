package server_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// snapFake is the fake driver with snapshots: SnapshotFunc copies (nil:
// a key per sandbox), and every sandbox it creates from a snapshot is
// recorded with the key it started from.
type snapFake struct {
	*fakeDriver
	SnapshotFunc func(ctx context.Context, id string, transient bool) (model.SnapshotRef, error)
	// AfterClaim, when set, runs once a snapshot of sandbox id claimed
	// its key (the data under it is the copy's from then on).
	AfterClaim func(id string)
	// Disk, when set, is the store's directory (which replicas share):
	// a snapshot writes its key there once it claimed it (AfterClaim
	// returned), DeleteSnapshot removes it, SnapshotKeys lists it.
	Disk *fakeDisk
	// Written, when set, runs once a snapshot of sandbox id wrote its
	// data to Disk.
	Written func(id string)
	deleted []string // the keys DeleteSnapshot deleted, under fakeDriver.mu
}

// fakeDisk is a snapshot store's directory: the keys it holds.
type fakeDisk struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (k *fakeDisk) put(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string]bool{}
	}
	k.keys[key] = true
}

func (k *fakeDisk) remove(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.keys, key)
}

// Has reports whether the directory holds key.
func (k *fakeDisk) Has(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[key]
}

// SnapshotKeys lists d's store (model.SnapshotLister): Disk, nothing
// without one.
func (d *snapFake) SnapshotKeys(context.Context) ([]string, error) {
	if d.Disk == nil {
		return nil, nil
	}
	d.Disk.mu.Lock()
	defer d.Disk.mu.Unlock()
	return slices.Sorted(maps.Keys(d.Disk.keys)), nil
}

var _ model.SnapshotDriver = (*snapFake)(nil)

func (d *snapFake) Snapshot(ctx context.Context, id string, transient bool, claim func(string) error) (model.SnapshotRef, error) {
	d.mu.Lock()
	d.calls = append(d.calls, "snapshot "+id)
	d.mu.Unlock()
	ref := model.SnapshotRef{Key: "key-" + id, SizeBytes: 1, Method: "copy"}
	var err error
	if d.SnapshotFunc != nil {
		ref, err = d.SnapshotFunc(ctx, id, transient)
	}
	if err == nil && claim != nil && !transient {
		err = claim(ref.Key)
		if err == nil && d.AfterClaim != nil {
			d.AfterClaim(id)
		}
	}
	if err != nil {
		return model.SnapshotRef{}, err
	}
	if d.Disk != nil && !transient {
		d.Disk.put(ref.Key)
		if d.Written != nil {
			d.Written(id)
		}
	}
	return ref, nil
}

func (d *snapFake) DeleteSnapshot(_ context.Context, key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted = append(d.deleted, key)
	if d.Disk != nil {
		d.Disk.remove(key)
	}
	return nil
}

// Deleted returns the keys DeleteSnapshot deleted.
func (d *snapFake) Deleted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.deleted)
}

// newSnapEnv is newEnv on the fake driver with snapshots.
func newSnapEnv(t *testing.T, cfg server.Config) (*env, *snapFake) {
	t.Helper()
	return newSnapEnvWithStore(t, cfg, openStore(t, t.TempDir()))
}

// newSnapEnvWithStore is newSnapEnv on st.
func newSnapEnvWithStore(t *testing.T, cfg server.Config, st model.Store) (*env, *snapFake) {
	t.Helper()
	var sd *snapFake
	e := newEnvWithDriver(t, cfg, st, func(d *fakeDriver) model.Driver {
		sd = &snapFake{fakeDriver: d}
		return sd
	})
	return e, sd
}

// TestDeleteWaitsForSnapshot: a delete that comes while a snapshot (or a
// fork) copies the sandbox waits for the copy, so the snapshot completes
// and the delete follows (it answered 502 "retry" when the teardown cut
// the copy: session 20's state20, item 3). The copy blocks until the
// delete waits for the sandbox's lifecycle lock (LockWaitForTests), and
// fails as the real one does if the driver's delete comes first.
func TestDeleteWaitsForSnapshot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path string }{
		{"snapshot", "/snapshots"},
		{"fork", "/fork"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			waiting := make(chan string, 1)
			e, d := newSnapEnv(t, server.Config{
				RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000},
				LockWaitForTests: func(id string) {
					select {
					case waiting <- id:
					default:
					}
				},
			})
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			entered, release, torn := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var tornOnce sync.Once
			d.DeleteFunc = func(context.Context, string) error { tornOnce.Do(func() { close(torn) }); return nil }
			d.SnapshotFunc = func(_ context.Context, id string, _ bool) (model.SnapshotRef, error) {
				if id != sb.ID {
					return model.SnapshotRef{Key: "key-" + id, Method: "copy"}, nil
				}
				close(entered)
				select {
				case <-release:
					return model.SnapshotRef{Key: "key-" + id, SizeBytes: 1, Method: "copy"}, nil
				case <-torn:
					return model.SnapshotRef{}, errors.New("the sandbox's disk is gone")
				}
			}
			snapped := make(chan int, 1)
			go func() {
				resp, body := e.do("POST", sandboxPath(sb.ID, tc.path), e.KeyA, map[string]any{})
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
				}
				snapped <- resp.StatusCode
			}()
			<-entered
			deleted := make(chan int, 1)
			go func() {
				resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil)
				if resp.StatusCode != http.StatusNoContent {
					t.Errorf("delete: %d %s", resp.StatusCode, body)
				}
				deleted <- resp.StatusCode
			}()
			select {
			case id := <-waiting:
				if id != sb.ID {
					t.Fatalf("lock wait for %s, want %s", id, sb.ID)
				}
			case code := <-snapped:
				t.Fatalf("the %s answered %d before the delete waited for it", tc.name, code)
			case <-time.After(30 * time.Second):
				t.Fatal("the delete neither waited for the copy nor tore the sandbox down")
			}
			close(release)
			<-snapped
			<-deleted
			calls := d.Calls()
			if len(calls) < 2 || calls[0] != "snapshot "+sb.ID || calls[1] != "delete "+sb.ID {
				t.Errorf("driver calls %q: want the copy, then the delete", calls)
			}
		})
	}
}

// TestSnapshotOfSandboxGoneElsewhere: a copy that fails because another
// server sharing the database removed the sandbox meanwhile (which no
// lock of this process orders) answers 409 conflict saying so, not 502
// "retry".
func TestSnapshotOfSandboxGoneElsewhere(t *testing.T) {
	t.Parallel()
	e, d := newSnapEnv(t, server.Config{RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	d.SnapshotFunc = func(ctx context.Context, id string, _ bool) (model.SnapshotRef, error) {
		if _, err := e.Store.UpdateSandbox(ctx, id, func(sb *model.Sandbox) error {
			sb.Status = api.StatusDestroyed
			return nil
		}); err != nil {
			t.Errorf("mark destroyed: %v", err)
		}
		return model.SnapshotRef{}, errors.New("the sandbox's disk is gone")
	}
	for _, path := range []string{"/snapshots", "/fork"} {
		if _, err := e.Store.UpdateSandbox(t.Context(), sb.ID, func(sb *model.Sandbox) error {
			sb.Status = api.StatusActive
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		resp, body := e.do("POST", sandboxPath(sb.ID, path), e.KeyA, map[string]any{})
		var env api.ErrorEnvelope
		mustUnmarshal(t, body, &env)
		if resp.StatusCode != http.StatusConflict || env.Error == nil || env.Error.Code != api.CodeConflict || env.Error.Hint == "" {
			t.Errorf("%s of a sandbox deleted meanwhile: %d %s, want 409 conflict with a hint", path, resp.StatusCode, body)
		}
	}
}
