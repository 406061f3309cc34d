package snapshot

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// portingDriver is a fakeDriver whose data can be exported and imported.
type portingDriver struct {
	fakeDriver
	data map[string][]byte // by key: what this "host" holds
}

func (d *portingDriver) ExportSnapshot(_ context.Context, key string) (io.ReadCloser, int64, error) {
	b, ok := d.data[key]
	if !ok {
		return nil, 0, errors.New("no such snapshot")
	}
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

func (d *portingDriver) ImportSnapshot(_ context.Context, key string, r io.Reader) error {
	b, err := io.ReadAll(r)
	d.data[key] = b
	return err
}

func (d *portingDriver) HasSnapshot(_ context.Context, key string) (bool, error) {
	_, ok := d.data[key]
	return ok, nil
}

func (d *portingDriver) SnapshotKeys(context.Context) ([]string, error) {
	return slices.Sorted(maps.Keys(d.data)), nil
}

func (d *portingDriver) DeleteSnapshot(ctx context.Context, key string) error {
	delete(d.data, key)
	return d.fakeDriver.DeleteSnapshot(ctx, key)
}

// memRemote is a Remote in memory that can refuse every call.
type memRemote struct {
	mu      sync.Mutex
	objects map[string][]byte
	down    bool
	lists   int // ListKeys calls
}

func (m *memRemote) Put(_ context.Context, key string, r io.Reader, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("connection refused")
	}
	b, err := io.ReadAll(r)
	if err == nil && int64(len(b)) != size {
		err = errors.New("short body")
	}
	m.objects[key] = b
	return err
}

func (m *memRemote) Get(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[key]
	if m.down || !ok {
		return nil, errors.New("not there")
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memRemote) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

func (m *memRemote) ListKeys(_ context.Context, prefix string, fn func(string) error) error {
	m.mu.Lock()
	m.lists++
	down := m.down
	keys := slices.Sorted(maps.Keys(m.objects))
	m.mu.Unlock()
	if down {
		return errors.New("connection refused")
	}
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			if err := fn(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memRemote) Kind() string { return "mem" }

// TestRemote: with a Remote, a snapshot is completed once its data is in
// the bucket; a bucket that refuses fails it (502 storage_failed) and
// drops the driver's copy; a restore on a host without the data imports
// it; a delete removes the object, and so does the start-up after a crash
// that interrupted a snapshot.
func TestRemote(t *testing.T) {
	ctx := context.Background()
	st := &memStore{rows: map[string]*model.Snapshot{}}
	d := &portingDriver{data: map[string][]byte{"sha256-same": []byte("the data")}}
	rem := &memRemote{objects: map[string][]byte{}}
	ctl := &fakeControl{}
	s := New(Config{Store: st, Driver: d, Control: ctl, Remote: rem, RemotePrefix: "pfx", Now: func() time.Time { return time.Unix(0, 0) }})
	acct := &model.Account{ID: "a"}
	sb := &model.Sandbox{ID: "sb", AccountID: "a", Status: api.StatusActive}

	sn, err := s.Take(ctx, acct, sb, "one")
	if err != nil || sn.Status != api.SnapshotCompleted {
		t.Fatalf("Take = %+v, %v", sn, err)
	}
	key := "pfx/snapshots/a/" + sn.ID + "/data"
	if string(rem.objects[key]) != "the data" {
		t.Fatalf("the bucket holds %q", rem.objects)
	}

	rem.down = true
	_, err = s.Take(ctx, acct, sb, "two")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeStorageFailed || ae.Status != http.StatusBadGateway {
		t.Errorf("Take with the bucket down: %v, want 502 storage_failed", err)
	}
	failed, _ := st.SnapshotsWithStatus(ctx, api.SnapshotFailed)
	if len(failed) != 1 {
		t.Errorf("%d failed snapshots, want the one the bucket refused", len(failed))
	}
	if _, ok := d.data["sha256-same"]; !ok {
		t.Error("the driver's data was dropped though the first snapshot still holds it")
	}
	rem.down = false

	// Another host: the driver has nothing.
	d.data = map[string][]byte{}
	if _, err := s.Restore(ctx, acct, sn, "back"); err != nil {
		t.Fatalf("Restore from the bucket: %v", err)
	}
	if string(d.data["sha256-same"]) != "the data" {
		t.Errorf("the driver holds %q after the restore", d.data)
	}
	d.data = map[string][]byte{}
	rem.down = true
	if _, err := s.Restore(ctx, acct, sn, "back"); !errors.As(err, &ae) || ae.Code != api.CodeStorageFailed {
		t.Errorf("Restore with neither copy: %v, want storage_failed", err)
	}
	rem.down = false

	if err := s.Delete(ctx, sn); err != nil {
		t.Fatal(err)
	}
	// A snapshot a crash left pending after its copy reached the bucket:
	// failed at start-up, and its object deleted.
	crashed := &model.Snapshot{ID: "crashed", AccountID: "a", Status: api.SnapshotPending}
	if err := st.ReserveSnapshot(ctx, crashed, 0); err != nil {
		t.Fatal(err)
	}
	rem.objects["pfx/snapshots/a/crashed/data"] = []byte("half of it")
	if err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rem.objects) != 0 {
		t.Errorf("after the delete the bucket holds %v", slices.Collect(maps.Keys(rem.objects)))
	}
}
