//go:build linux

package loopdisk

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCreateWithLayout mounts images cloned from templates with and
// without a layout: the layout's directories are there, 0755 and owned
// by its ids whatever the umask, the root is root's 0755 as in an empty
// filesystem, and an empty template (volumes, and sandbox disks before
// the layouts) stays empty beside it: the two are different files.
func TestCreateWithLayout(t *testing.T) {
	requireLoop(t)
	old := syscall.Umask(0o077) // the modes must not follow it
	t.Cleanup(func() { syscall.Umask(old) })
	im := NewImages(t.TempDir(), nil)
	layout := Layout{Dirs: []string{"workspace", "outputs"}, UID: 1001, GID: 1002}
	type entry struct {
		Mode     os.FileMode
		UID, GID uint32
	}
	tests := []struct {
		name   string
		layout Layout
		want   map[string]entry
	}{
		{"sandbox disk", layout, map[string]entry{
			".":          {os.ModeDir | 0o755, 0, 0},
			"lost+found": {os.ModeDir | 0o700, 0, 0},
			"workspace":  {os.ModeDir | 0o755, 1001, 1002},
			"outputs":    {os.ModeDir | 0o755, 1001, 1002},
		}},
		{"volume", Layout{}, map[string]entry{
			".":          {os.ModeDir | 0o755, 0, 0},
			"lost+found": {os.ModeDir | 0o700, 0, 0},
		}},
		{"sandbox disk again, from its template", layout, map[string]entry{
			".":          {os.ModeDir | 0o755, 0, 0},
			"lost+found": {os.ModeDir | 0o700, 0, 0},
			"workspace":  {os.ModeDir | 0o755, 1001, 1002},
			"outputs":    {os.ModeDir | 0o755, 1001, 1002},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt")
			if err := im.CreateWith(img, 64<<20, tt.layout); err != nil {
				t.Fatal(err)
			}
			if err := MountNew(img, mnt); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = Unmount(mnt) })
			names, err := os.ReadDir(mnt)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]entry{}
			for _, name := range append([]string{"."}, dirNames(names)...) {
				fi, err := os.Stat(filepath.Join(mnt, name))
				if err != nil {
					t.Fatal(err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				got[name] = entry{fi.Mode(), st.Uid, st.Gid}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("disk's root (-want +got):\n%s", diff)
			}
		})
	}
	templates, _ := filepath.Glob(filepath.Join(im.dir, templatePrefix+"*"))
	if len(templates) != 2 {
		t.Errorf("templates %q, want one empty and one with the layout", templates)
	}
}

func dirNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestLayoutInvalid refuses directory names that would leave the root
// or clash with the template's name or lost+found.
func TestLayoutInvalid(t *testing.T) {
	im := NewImages(t.TempDir(), nil)
	for _, name := range []string{"", ".", "..", "a/b", "a+b", "lost+found"} {
		if err := im.CreateWith(filepath.Join(t.TempDir(), "x.img"), 16<<20, Layout{Dirs: []string{name}}); err == nil {
			t.Errorf("layout dir %q accepted", name)
		}
	}
}
