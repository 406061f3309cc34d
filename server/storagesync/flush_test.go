package storagesync

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// memFile is one file of a fake workspace.
type memFile struct {
	data  []byte
	mtime time.Time
}

// memFiles is a workspace in memory, read as the sidecar's routes do.
type memFiles struct{ files map[string]memFile }

func (m *memFiles) Tree(context.Context, string, TreeQuery) (api.TreeResult, error) {
	out := api.TreeResult{}
	for p, f := range m.files {
		out.Entries = append(out.Entries, api.TreeEntry{Path: p, Kind: "file", Size: int64(len(f.data)), ModifiedNS: f.mtime.UnixNano()})
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Path < out.Entries[j].Path })
	return out, nil
}

func (m *memFiles) Bundle(_ context.Context, _, _ string, paths []string) (io.ReadCloser, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := m.files[p]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Size: int64(len(f.data)), Mode: 0o644, ModTime: f.mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		tw.Write(f.data)
	}
	tw.Close()
	return io.NopCloser(&buf), nil
}

// memBackend is a bucket in memory.
type memBackend struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (b *memBackend) Put(_ context.Context, key string, r io.Reader, _ int64) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objs[key] = data
	return nil
}

func (b *memBackend) Get(_ context.Context, key string) (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.objs[key]
	if !ok {
		return nil, ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(d)), nil
}

func (b *memBackend) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objs, key)
	return nil
}

func (b *memBackend) List(_ context.Context, prefix string, fn func(Object) error) error {
	b.mu.Lock()
	var out []Object
	for k, v := range b.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Object{Key: k, Size: int64(len(v))})
		}
	}
	b.mu.Unlock()
	for _, o := range out {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (b *memBackend) Kind() string { return "mem" }

// memStore keeps the sync's index and queue in memory (one sandbox).
type memStore struct {
	mu     sync.Mutex
	synced map[string]Synced
	queue  map[string]time.Time
}

func (s *memStore) StartSync(context.Context, *State) error { return nil }
func (s *memStore) SyncState(context.Context, string) (*State, error) {
	return &State{SandboxID: "sb", AccountID: "acct", State: StateSyncing}, nil
}
func (s *memStore) SyncStates(context.Context, string) ([]*State, error) { return nil, nil }
func (s *memStore) UpdateSyncState(context.Context, *State) error        { return nil }
func (s *memStore) EnqueueSync(_ context.Context, _, p string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue[p] = at
	return nil
}

func (s *memStore) QueuedSync(context.Context, string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p := range s.queue {
		out = append(out, p)
	}
	return out, nil
}

func (s *memStore) DequeueSync(_ context.Context, _ string, upTo time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, at := range s.queue {
		if !at.After(upTo) {
			delete(s.queue, p)
		}
	}
	return nil
}

func (s *memStore) SyncedFiles(context.Context, string) (map[string]Synced, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Synced{}
	for k, v := range s.synced {
		out[k] = v
	}
	return out, nil
}

func (s *memStore) PutSynced(_ context.Context, _ string, files []Synced) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range files {
		s.synced[f.Path] = f
	}
	return nil
}

func (s *memStore) DeleteSynced(_ context.Context, _ string, paths ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		delete(s.synced, p)
	}
	return nil
}
func (s *memStore) ClearSynced(context.Context, string) error { return nil }

// TestFlushStability: a file a command is still writing waits until it
// has been unchanged for the stability wait (a quarter of the interval at
// most) and the flush says when; a write the API acknowledged is stored at
// once; a large file and many small ones are all stored byte-exact in one
// flush; a file gone is deleted.
func TestFlushStability(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: streamed
	files := &memFiles{files: map[string]memFile{
		"old.txt":      {[]byte("old"), now.Add(-time.Minute)},
		"writing.log":  {[]byte("still being written"), now.Add(-500 * time.Millisecond)},
		"api.txt":      {[]byte("acknowledged"), now},
		"data/big.bin": {big, now.Add(-time.Minute)},
	}}
	for i := range 100 {
		files.files["many/f"+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = memFile{[]byte{byte(i)}, now.Add(-time.Minute)}
	}
	b := &memBackend{objs: map[string][]byte{"p/acct/sb/gone.txt": []byte("gone")}}
	st := &memStore{synced: map[string]Synced{"gone.txt": {Path: "gone.txt", Size: 4}}, queue: map[string]time.Time{"api.txt": now}}
	s, err := New(Deps{
		Backend: b, Store: st, Files: files, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now },
		Prefix: "p", Interval: 4 * time.Second, StableFor: 2 * time.Second, // the wait: a quarter of 4 s
	})
	if err != nil {
		t.Fatal(err)
	}
	state, _ := st.SyncState(t.Context(), "sb")
	res, err := s.flush(t.Context(), state, false)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Uploaded: 103, Bytes: int64(len(big)) + 3 + 12 + 100, Deleted: 1, Deferred: 1, Settled: now.Add(500 * time.Millisecond)}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("flush (-want +got):\n%s", d)
	}
	for p, f := range files.files {
		got, ok := b.objs["p/acct/sb/"+p]
		if p == "writing.log" {
			if ok {
				t.Errorf("%s was stored while it was changing", p)
			}
			continue
		}
		if !bytes.Equal(got, f.data) {
			t.Errorf("%s: stored %d bytes (%v), want %d byte-exact", p, len(got), ok, len(f.data))
		}
	}
	if _, ok := b.objs["p/acct/sb/gone.txt"]; ok {
		t.Error("gone.txt is still stored")
	}
	if q, _ := st.QueuedSync(t.Context(), "sb"); len(q) != 0 {
		t.Errorf("queue after the flush: %v", q)
	}

	// Once it has settled, the next flush stores it; nothing else moves.
	now = now.Add(time.Second)
	res, err = s.flush(t.Context(), state, false)
	if err != nil || res.Uploaded != 1 || res.Deferred != 0 || !res.Complete || string(b.objs["p/acct/sb/writing.log"]) != "still being written" {
		t.Errorf("second flush: %+v, %v", res, err)
	}
}

// diskBackend is a bucket kept as files, as fake-gcs-server keeps one on
// disk: an object "a" and an object "a/b" cannot both be held. Its
// deletes are slow: one waits (a few seconds at most) for a put to start,
// so that a flush that puts while it deletes is caught every time.
type diskBackend struct {
	memBackend
	putting chan struct{} // closed by the first put
	once    sync.Once
}

func (b *diskBackend) Delete(ctx context.Context, key string) error {
	select {
	case <-b.putting:
	case <-time.After(3 * time.Second):
	}
	return b.memBackend.Delete(ctx, key)
}

func (b *diskBackend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	b.once.Do(func() { close(b.putting) })
	b.mu.Lock()
	for k := range b.objs {
		if strings.HasPrefix(key, k+"/") || strings.HasPrefix(k, key+"/") {
			b.mu.Unlock()
			return fmt.Errorf("put %s: %s is in the way", key, k)
		}
	}
	b.mu.Unlock()
	return b.memBackend.Put(ctx, key, r, size)
}

// TestFlushFileBecomesDirectory: a file replaced by a directory of the
// same name, and back, is stored in one flush each, on a store that
// cannot hold "a" beside "a/b": the flush deletes before it puts.
func TestFlushFileBecomesDirectory(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	files := &memFiles{files: map[string]memFile{"fd": {[]byte("a file"), now}}}
	b := &diskBackend{memBackend: memBackend{objs: map[string][]byte{}}, putting: make(chan struct{})}
	st := &memStore{synced: map[string]Synced{}, queue: map[string]time.Time{}}
	s, err := New(Deps{
		Backend: b, Store: st, Files: files, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now },
		Prefix: "p", Interval: 4 * time.Second, StableFor: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	state, _ := st.SyncState(t.Context(), "sb")
	for _, step := range []map[string]memFile{
		{"fd": {[]byte("a file"), now}},
		{"fd/inner.txt": {[]byte("now a directory"), now}},
		{"fd": {[]byte("a file again"), now}},
	} {
		files.files = step
		if _, err := s.flush(t.Context(), state, true); err != nil {
			t.Fatalf("flush of %v: %v", slices.Collect(maps.Keys(step)), err)
		}
		want := map[string][]byte{"p/acct/sb/" + NamesMarker: []byte(namesMarkerBody)}
		for p, f := range step {
			want["p/acct/sb/"+p] = f.data
		}
		if d := cmp.Diff(want, b.objs); d != "" {
			t.Errorf("stored (-want +got):\n%s", d)
		}
	}
}
