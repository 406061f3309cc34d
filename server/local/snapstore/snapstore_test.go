//go:build linux

package snapstore

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// part writes a part file of the store holding data at offset 1 MiB of
// an otherwise sparse 4 MiB image.
func part(t *testing.T, s Store, data string) string {
	t.Helper()
	p, err := s.NewPart()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(4 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 1<<20); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStore: a copy's key is the hash of its data, so the same data
// twice is stored once and other data apart; a fork's transient image
// gets a key of its own; Keys lists the snapshots alone, EmptyTrash
// removes what a crash left, Delete takes a missing key, and a key that
// is not one is refused.
func TestStore(t *testing.T) {
	t.Parallel()
	s := New(filepath.Join(t.TempDir(), "snapshots"))
	put := func(data string, transient bool) string {
		t.Helper()
		p := part(t, s, data)
		key, size, err := Seal(p, transient, false)
		if err != nil {
			t.Fatal(err)
		}
		if size <= 0 {
			t.Errorf("Seal(%q) = size %d, want the data's", data, size)
		}
		if err := s.Put(p, key, transient); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the part %s is left after Put", p)
		}
		return key
	}
	a, again, b := put("state a", false), put("state a", false), put("state b", false)
	if a != again || a == b || !strings.HasPrefix(a, "sha256-") || !ValidKey(a) {
		t.Errorf("keys %s, %s (the same data) and %s (other data): want the first two equal, the third apart", a, again, b)
	}
	fork := put("state a", true)
	if !strings.HasPrefix(fork, "tmp-") || !ValidKey(fork) {
		t.Errorf("a transient image's key %s, want tmp-<hex>", fork)
	}
	trash := part(t, s, "interrupted")

	keys, err := s.Keys()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	want := []string{a, b}
	slices.Sort(want)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
	for _, key := range []string{a, fork} {
		if ok, err := s.Has(key); !ok || err != nil {
			t.Errorf("Has(%s) = %v, %v; want true", key, ok, err)
		}
	}

	s.EmptyTrash()
	for _, p := range []string{trash, s.Path(fork)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left after EmptyTrash", filepath.Base(p))
		}
	}
	if _, err := os.Stat(s.Path(a)); err != nil {
		t.Errorf("EmptyTrash took a snapshot: %v", err)
	}

	if err := s.Delete(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(b); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if ok, err := s.Has(b); ok || err != nil {
		t.Errorf("Has(%s) after Delete = %v, %v", b, ok, err)
	}
	for _, bad := range []string{"../etc/passwd", "sha256-xyz", a + ".img"} {
		if err := s.Delete(bad); err == nil {
			t.Errorf("Delete(%q) succeeded", bad)
		}
		if err := s.Restore(filepath.Join(t.TempDir(), "x"), bad); err == nil {
			t.Errorf("Restore(%q) succeeded", bad)
		}
	}
}

// TestExportImport: an image exported from one store and imported into
// another holds the same bytes, under the same key.
func TestExportImport(t *testing.T) {
	t.Parallel()
	src, dst := New(filepath.Join(t.TempDir(), "a")), New(filepath.Join(t.TempDir(), "b"))
	p := part(t, src, "exported")
	key, _, err := Seal(p, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(p, key, false); err != nil {
		t.Fatal(err)
	}
	r, _, err := src.Export(key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := dst.Import(key, r); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(src.Path(key))
	got, err := os.ReadFile(dst.Path(key))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("imported image: %d bytes, err %v; want the exported %d", len(got), err, len(want))
	}
}
