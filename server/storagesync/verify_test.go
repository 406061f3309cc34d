package storagesync

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// TestVerifyRefills: a bucket emptied behind the sync (or one object
// replaced by another of a different size) is refilled by a forced flush
// and by this server's first flush of a sandbox, while a periodic flush
// after that trusts the index (no listing).
func TestVerifyRefills(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	files := &memFiles{files: map[string]memFile{
		"a.txt":     {[]byte("alpha"), now.Add(-time.Minute)},
		"d/ü b.txt": {[]byte("unicode"), now.Add(-time.Minute)},
		"empty":     {nil, now.Add(-time.Minute)},
	}}
	b := &memBackend{objs: map[string][]byte{}}
	st := &memStore{synced: map[string]Synced{}, queue: map[string]time.Time{}}
	newService := func() *Service {
		s, err := New(Deps{Backend: b, Store: st, Files: files, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }, Prefix: "p"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := newService()
	sb := &model.Sandbox{ID: "sb", AccountID: "acct"}
	s.Created(t.Context(), sb)
	if _, res, err := s.Flush(t.Context(), sb); err != nil || res.Uploaded != 3 {
		t.Fatalf("first flush: %+v, %v", res, err)
	}
	emptied := func() {
		b.mu.Lock()
		clear(b.objs)
		b.mu.Unlock()
	}
	stored := func(what string) {
		t.Helper()
		for p, f := range files.files {
			if got, ok := b.objs["p/acct/sb/"+p]; !ok || !bytes.Equal(got, f.data) {
				t.Errorf("%s: %s is not stored (%v, %q)", what, p, ok, got)
			}
		}
	}

	// A forced flush lists the bucket and uploads what is gone.
	emptied()
	if _, res, err := s.Flush(t.Context(), sb); err != nil || res.Uploaded != 3 {
		t.Errorf("forced flush of an emptied bucket: %+v, %v; want 3 uploaded", res, err)
	}
	stored("after a forced flush")

	// An object replaced by one of another size is stored again.
	b.objs["p/acct/sb/a.txt"] = []byte("x")
	if _, res, err := s.Flush(t.Context(), sb); err != nil || res.Uploaded != 1 {
		t.Errorf("forced flush after a.txt was replaced: %+v, %v; want 1 uploaded", res, err)
	}
	stored("after a.txt was replaced")

	// The periodic flush trusts the index: a bucket emptied now stays
	// empty for this server...
	state, _ := st.SyncState(t.Context(), "sb")
	emptied()
	s.runOne(t.Context(), state)
	if len(b.objs) != 0 {
		t.Errorf("a periodic flush listed the bucket: %d objects back", len(b.objs))
	}
	// ...while a server that starts checks once, at its first flush.
	s = newService()
	s.runOne(t.Context(), state)
	stored("after the first flush of a restarted server")
}
