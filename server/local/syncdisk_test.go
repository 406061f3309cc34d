//go:build linux

package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
)

// TestSyncDiskAfterUnseenWrites: what a command changes between two execs
// is in the sandbox disk's journal when SyncDisk returns, including the
// changes that leave every counter user space can read before the flush
// as a flush of a clean disk left it (issue 27, session 24): an overwrite
// in place, a rename, a chmod, a mkdir move neither the loop device's
// I/O counts, nor the journal's transactions, nor ext4's
// lifetime_write_kbytes or delayed allocations until the flush itself
// writes them. So no flush may be skipped on those counters' word: a
// SyncDisk that did (a "nothing is dirty" skip) fails here.
func TestSyncDiskAfterUnseenWrites(t *testing.T) {
	if os.Geteuid() != 0 || loopdisk.MkfsPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("loop devices need root and mkfs.ext4, as CI has")
		}
		t.Skip("loop devices need root and mkfs.ext4")
	}
	t.Parallel()
	d := newDriver(t)
	const id = "unseen"
	ep := create(t, d, id)
	loop := diskDevice(t, d, id)
	if res := run(t, ep, "head -c 4096 /dev/zero > /workspace/f && mkdir /workspace/d"); res.ExitCode != 0 {
		t.Fatalf("setup: %+v", res)
	}
	if err := d.SyncDisk(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, command string
	}{
		{"new file", "echo x > /workspace/new"},
		{"overwrite in place", "printf y | dd of=/workspace/f bs=1 count=1 conv=notrunc status=none"},
		{"rename", "mv /workspace/f /workspace/g && mv /workspace/g /workspace/f"},
		{"chmod", "chmod 600 /workspace/f"},
		{"mkdir", "mkdir /workspace/d/sub"},
		{"remove", "rmdir /workspace/d/sub"},
	}
	for _, tt := range tests {
		before := readLoopCounters(t, loop)
		if res := run(t, ep, tt.command); res.ExitCode != 0 {
			t.Fatalf("%s: %+v", tt.name, res)
		}
		if err := d.SyncDisk(t.Context(), id); err != nil {
			t.Fatalf("%s: SyncDisk: %v", tt.name, err)
		}
		after := readLoopCounters(t, loop)
		// jbd2 may also commit on its own timer between the command and
		// SyncDisk; that can hide a skipped flush here, never fail the test.
		if after.transactions <= before.transactions {
			t.Errorf("%s: the journal committed %d transactions by the time SyncDisk returned, want at least one", tt.name, after.transactions-before.transactions)
		}
		if after.flushes <= before.flushes {
			t.Errorf("%s: the loop device was flushed %d times, want at least once", tt.name, after.flushes-before.flushes)
		}
	}
}

// diskDevice returns the name of the block device (loopN) holding sandbox
// id's disk.
func diskDevice(t *testing.T, d *Driver, id string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(d.sandboxDir(id), diskMount), &st); err != nil {
		t.Fatal(err)
	}
	link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(link)
}

// loopCounters are a loop device's flush count (/sys/block/NAME/stat)
// and its ext4 journal's committed transactions (/proc/fs/jbd2).
type loopCounters struct{ flushes, transactions int64 }

func readLoopCounters(t *testing.T, dev string) loopCounters {
	t.Helper()
	number := func(path string, field int) int64 {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		if len(f) <= field {
			t.Fatalf("%s: %q has no field %d", path, b, field)
		}
		n, err := strconv.ParseInt(f[field], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return n
	}
	return loopCounters{
		flushes:      number("/sys/block/"+dev+"/stat", 15),
		transactions: number("/proc/fs/jbd2/"+dev+"-8/info", 0),
	}
}
