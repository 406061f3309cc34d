package loopdisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiskImagesHaveJournal formats sandbox disk and volume images of a
// few sizes and checks that each keeps an ext4 journal, so a write the
// host cannot store leaves a consistent, read-only filesystem behind.
func TestDiskImagesHaveJournal(t *testing.T) {
	if MkfsPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("mkfs.ext4 not found: CI installs e2fsprogs")
		}
		t.Skip("mkfs.ext4 not found (install e2fsprogs)")
	}
	dumpe2fs, err := exec.LookPath("dumpe2fs")
	if err != nil {
		dumpe2fs = "/usr/sbin/dumpe2fs"
	}
	im := NewImages(t.TempDir(), nil)
	tests := []struct {
		name        string
		size        int64
		wantJournal string // "Total journal size" line
	}{
		{"minimum quota", 16 << 20, "1024k"},
		{"a volume", 1 << 30, "16M"},
		{"the default quota", 5 << 30, "16M"}, // server/local.DefaultStorageGB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "disk.img")
			if err := im.Create(img, tt.size); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(dumpe2fs, "-h", img).CombinedOutput()
			if err != nil {
				t.Fatalf("dumpe2fs: %v\n%s", err, out)
			}
			var features, journal string
			for _, line := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(line, "Filesystem features:"); ok {
					features = v
				}
				if v, ok := strings.CutPrefix(line, "Total journal size:"); ok {
					journal = strings.TrimSpace(v)
				}
			}
			if !strings.Contains(features, "has_journal") {
				t.Errorf("features %q lack has_journal", features)
			}
			if journal != tt.wantJournal {
				t.Errorf("journal size %q, want %q", journal, tt.wantJournal)
			}
		})
	}
}
