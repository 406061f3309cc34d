package cli

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// snapshot describes a tree: every entry's kind, mode, content or target,
// and mtime, keyed by its slash path relative to the root.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var what string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			what = "symlink " + target
		case fi.IsDir():
			what = "dir " + fi.Mode().String()
		default:
			b, _ := os.ReadFile(p)
			what = "file " + fi.Mode().String() + " " + string(b)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			what += " " + fi.ModTime().UTC().Truncate(time.Second).Format(time.RFC3339)
		}
		out[filepath.ToSlash(rel)] = what
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTreeRoundTrip(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	mtime := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	files := []struct {
		name string
		mode fs.FileMode
		data string
	}{
		{"a.txt", 0o644, "alpha\n"},
		{"secret", 0o600, "s"},
		{"bin/run.sh", 0o755, "#!/bin/sh\necho hi\n"},
		{"deep/er/still/x", 0o640, strings.Repeat("x", 100000)},
		{"empty", 0o444, ""},
		{"spaces and ünïcode.txt", 0o644, "u"},
	}
	for _, f := range files {
		p := filepath.Join(src, filepath.FromSlash(f.name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.data), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, f.mode)
		os.Chtimes(p, mtime, mtime)
	}
	os.Mkdir(filepath.Join(src, "emptydir"), 0o700)
	os.Symlink("../a.txt", filepath.Join(src, "bin", "link"))
	os.Symlink("/etc/hostname", filepath.Join(src, "abs-link"))
	os.Mkdir(filepath.Join(src, "ro"), 0o755)
	os.WriteFile(filepath.Join(src, "ro", "f"), []byte("in a read-only dir"), 0o644)
	os.Chtimes(filepath.Join(src, "ro", "f"), mtime, mtime) // tar keeps whole seconds
	os.Chmod(filepath.Join(src, "ro"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "ro"), 0o755) })
	for _, d := range []string{"bin", "deep/er/still", "deep/er", "deep", "emptydir", "ro"} {
		os.Chtimes(filepath.Join(src, d), mtime, mtime)
	}

	var archive bytes.Buffer
	var warn strings.Builder
	if err := writeTree(&archive, src, &warn); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "new", "dest")
	st, err := extractTree(&archive, dst, &warn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dst, "ro"), 0o755) })
	if st.files != len(files)+1 {
		t.Errorf("extracted %d files, want %d", st.files, len(files)+1)
	}
	if diff := cmp.Diff(snapshot(t, src), snapshot(t, dst)); diff != "" {
		t.Errorf("tree after a round trip (-want +got):\n%s", diff)
	}
	if warn.Len() > 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}

// tarOf builds an archive from headers; a regular file's body is its Linkname field's
// content when Size is set (kept short: it is a test).
func tarOf(t *testing.T, entries ...tar.Header) io.Reader {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range entries {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body = strings.Repeat("x", int(h.Size))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	return &b
}

func TestExtractTreeStaysInside(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries []tar.Header
		wantErr string
	}{
		{"dot-dot", []tar.Header{{Name: "../escape", Typeflag: tar.TypeReg, Size: 1}}, `contains ".."`},
		{"absolute", []tar.Header{{Name: "/tmp/escape", Typeflag: tar.TypeReg, Size: 1}}, "is absolute"},
		{"through a symlink", []tar.Header{
			{Name: "up", Typeflag: tar.TypeSymlink, Linkname: ".."},
			{Name: "up/escape", Typeflag: tar.TypeReg, Size: 1},
		}, "escape"},
		{"through an absolute symlink", []tar.Header{
			{Name: "abs", Typeflag: tar.TypeSymlink, Linkname: "/tmp"},
			{Name: "abs/escape", Typeflag: tar.TypeReg, Size: 1},
		}, "abs"},
		{"hard link out", []tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"}}, `contains ".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			_, err := extractTree(tarOf(t, tt.entries...), dst, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("extractTree error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if _, err := os.Lstat(filepath.Join(parent, "escape")); err == nil {
				t.Error("an entry was written outside the destination")
			}
		})
	}
}

func TestExtractTreeReplacesSymlink(t *testing.T) {
	t.Parallel()
	dst := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(outside, []byte("keep"), 0o644)
	os.Symlink(outside, filepath.Join(dst, "f"))
	if _, err := extractTree(tarOf(t, tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 3}), dst, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the symlink's target was written through: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "xxx" {
		t.Errorf("f = %q, want the archive's content", b)
	}
}
