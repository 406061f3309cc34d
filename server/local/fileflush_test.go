//go:build linux

package local

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFlushesFiles: a sandbox's file writes are left to SyncDisk only
// while every filesystem it keeps data on is open to be flushed: not
// before its disks are opened, not when one could not be, not after they
// are closed; a warm member's disk handed to the sandbox that claims it
// counts (moveDisks). Else the sidecar fsyncs the write itself.
func TestFlushesFiles(t *testing.T) {
	t.Parallel()
	d := &Driver{storage: StorageLoop}
	open := func() *os.File {
		f, err := os.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if d.FlushesFiles("sb") {
		t.Error("FlushesFiles before the disks were opened")
	}
	d.disks.mu.Lock()
	d.disks.files = map[string][]*os.File{"sb": {open(), open()}}
	d.disks.setPartial("sb", true) // a volume could not be opened
	d.disks.mu.Unlock()
	if d.FlushesFiles("sb") {
		t.Error("FlushesFiles with a volume that could not be opened")
	}
	d.disks.mu.Lock()
	d.disks.setPartial("sb", false)
	d.disks.mu.Unlock()
	if !d.FlushesFiles("sb") {
		t.Error("not FlushesFiles with the disk and volume open")
	}
	d.closeDisks("sb")
	if d.FlushesFiles("sb") {
		t.Error("FlushesFiles after the disks were closed")
	}

	d.disks.mu.Lock()
	d.disks.files["member"] = []*os.File{open()}
	d.disks.mu.Unlock()
	if !d.moveDisks("member", "claimed", filepath.Join(t.TempDir(), "claimed")) {
		t.Fatal("moveDisks did not hand the member's disk over")
	}
	if !d.FlushesFiles("claimed") || d.FlushesFiles("member") {
		t.Errorf("after a claim: FlushesFiles(claimed) = %v, (member) = %v; want true, false", d.FlushesFiles("claimed"), d.FlushesFiles("member"))
	}
	d.closeDisks("claimed")
}
