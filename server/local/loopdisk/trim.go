//go:build linux

package loopdisk

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The clone pool (server/local's cow.go) is a sparse image on the host's filesystem:
// blocks its XFS frees (a deleted sandbox's disk, a snapshot, a discarded
// template) stay allocated in the image, and so taken from the host, until
// the XFS passes them down as discards, which the loop device turns into
// holes. Nothing does that by itself: mounted without -o discard it never
// does, and with it only at its next log push, up to half a minute later.
// FITRIM forces the log and discards every free extent at once (a few
// milliseconds for an idle GiB), so the driver trims the pool after each
// removal, and once at start for what an earlier server freed: a host
// that filled up gets its space back as soon as sandboxes are removed, as
// the 507's hint says (internal/faulttest TestRemovingGivesSpaceBack).

// PoolTrim trims the clone pool mounted at dir; calls made while a trim
// runs are folded into one more trim after it. A nil *PoolTrim (no pool:
// the images live on the host's own filesystem) does nothing.
type PoolTrim struct {
	dir string
	dev uint64 // the pool's device: dir is not trimmed once it is unmounted
	log *slog.Logger

	mu             sync.Mutex
	running, again bool
}

// Trim returns the pool's free blocks to the host. It blocks while it
// trims, unless a trim is already running, which then runs once more.
func (t *PoolTrim) Trim() {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.running {
		t.again = true
		t.mu.Unlock()
		return
	}
	t.running = true
	t.mu.Unlock()
	for {
		if err := fitrim(t.dir, t.dev); err != nil {
			t.log.Warn("the clone pool could not give freed space back to the host", "pool", t.dir, "err", err)
		}
		t.mu.Lock()
		if !t.again {
			t.running = false
			t.mu.Unlock()
			return
		}
		t.again = false
		t.mu.Unlock()
	}
}

// fitrimRange is the kernel's struct fstrim_range.
type fitrimRange struct{ start, len, minLen uint64 }

// ioctlFITRIM is _IOWR('X', 121, struct fstrim_range), which
// golang.org/x/sys/unix does not name.
const ioctlFITRIM = 0xc0185879

// NewPoolTrim returns the trimmer of the clone pool mounted at dir.
func NewPoolTrim(dir string, log *slog.Logger) (*PoolTrim, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("clone pool: %w", err)
	}
	return &PoolTrim{dir: dir, dev: st.Dev, log: log}, nil
}

// fitrim discards the free extents of the filesystem mounted at dir, if
// it is still device dev's (unmounted, dir is the host's own filesystem,
// which is not the driver's to trim).
func fitrim(dir string, dev uint64) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("trim %s: %w", dir, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("trim %s: %w", dir, err)
	}
	if st.Dev != dev {
		return nil
	}
	r := fitrimRange{len: math.MaxUint64}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), ioctlFITRIM, uintptr(unsafe.Pointer(&r))); errno != 0 {
		return fmt.Errorf("trim %s: %w", dir, errno)
	}
	return nil
}
