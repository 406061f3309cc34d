package sidecar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestArchiveOneFileSystem: GET /files/archive?one_file_system=true (what
// the kube driver's snapshots and pauses ask for) leaves out a directory
// another filesystem is mounted on — a volume below /workspace, whose
// data a resume would otherwise write back over the shared volume — and
// without it the archive holds the mount's files as before; a value that
// is not a boolean is 400.
func TestArchiveOneFileSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting a tmpfs needs root, and CI runs as root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	t.Parallel()
	fs := newFileServer(t, Options{})
	src := fs.ws + "/src"
	writeFile(t, src+"/own", "mine", 0o644)
	if err := os.MkdirAll(src+"/vol", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", src+"/vol", "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(src+"/vol", unix.MNT_DETACH) })
	writeFile(t, src+"/vol/shared", "theirs", 0o644)

	names := func(query string) []string {
		t.Helper()
		st, b := call(t, http.MethodGet, fs.url+"/files/archive?path=src"+query, authHeader, "")
		if st != http.StatusOK {
			t.Fatalf("GET /files/archive%s = %d %s", query, st, b)
		}
		var out []string
		tr := tar.NewReader(bytes.NewReader(b))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names("&one_file_system=true"), []string{"own"}; !slices.Equal(got, want) {
		t.Errorf("one_file_system=true archived %q, want %q", got, want)
	}
	if got, want := names(""), []string{"own", "vol/", "vol/shared"}; !slices.Equal(got, want) {
		t.Errorf("without one_file_system archived %q, want %q", got, want)
	}
	if st, b := call(t, http.MethodGet, fs.url+"/files/archive?path=src&one_file_system=yes", authHeader, ""); st != http.StatusBadRequest {
		t.Errorf("one_file_system=yes: %d %s, want 400", st, b)
	}
}
