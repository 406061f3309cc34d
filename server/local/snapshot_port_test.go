//go:build linux

package local

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotPortRoundTrip: a sparse image exported and imported under
// the same key on a driver without it is the same bytes, its holes still
// holes; the export holds the data, not the holes.
func TestSnapshotPortRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, dst := &Driver{data: t.TempDir()}, &Driver{data: t.TempDir()}
	key := "sha256-" + string(bytes.Repeat([]byte("ab"), 32))
	if err := os.MkdirAll(src.snapshotsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(src.snapshotPath(key))
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	runs := map[int64][]byte{0: bytes.Repeat([]byte{1}, 4096), 8 << 20: bytes.Repeat([]byte("data"), 100_000), size - 4096: bytes.Repeat([]byte{9}, 4096)}
	for off, b := range runs {
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()

	if ok, err := dst.HasSnapshot(ctx, key); ok || err != nil {
		t.Fatalf("HasSnapshot before the import: %v, %v", ok, err)
	}
	rc, n, err := src.ExportSnapshot(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	exported, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || int64(len(exported)) != n {
		t.Fatalf("export: %d bytes read, %d announced, %v", len(exported), n, err)
	}
	if n > 2<<20 {
		t.Errorf("the export of an image holding 0.4 MiB is %d bytes: holes were copied", n)
	}
	if err := dst.ImportSnapshot(ctx, key, bytes.NewReader(exported)); err != nil {
		t.Fatal(err)
	}
	if ok, err := dst.HasSnapshot(ctx, key); !ok || err != nil {
		t.Fatalf("HasSnapshot after the import: %v, %v", ok, err)
	}
	want, _ := os.ReadFile(src.snapshotPath(key))
	got, _ := os.ReadFile(dst.snapshotPath(key))
	if !bytes.Equal(got, want) {
		t.Fatal("the imported image differs")
	}
	if a := allocated(dst.snapshotPath(key)); a > 4<<20 {
		t.Errorf("the imported image allocates %d bytes: its holes were filled", a)
	}
	if left, _ := filepath.Glob(filepath.Join(dst.snapshotsDir(), ".part-*")); len(left) != 0 {
		t.Errorf("part files left: %v", left)
	}
	// A broken stream leaves nothing behind.
	other := "sha256-" + string(bytes.Repeat([]byte("cd"), 32))
	if err := dst.ImportSnapshot(ctx, other, bytes.NewReader(exported[:len(exported)-20])); err == nil {
		t.Error("a cut stream imported")
	}
	if ok, _ := dst.HasSnapshot(ctx, other); ok {
		t.Error("a cut stream left an image")
	}
	if left, _ := filepath.Glob(filepath.Join(dst.snapshotsDir(), ".part-*")); len(left) != 0 {
		t.Errorf("part files left after a failed import: %v", left)
	}
	if _, _, err := src.ExportSnapshot(ctx, "../../etc/passwd"); err == nil {
		t.Error("exported a key that names no snapshot")
	}
}
