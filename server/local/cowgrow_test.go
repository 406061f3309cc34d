//go:build linux

package local

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
)

// growHost is a host filesystem of its own for a test's state directory:
// a sparse XFS image loop-mounted in a test directory (XFS because it is
// grown online, which ext4 allows only with CAP_SYS_RESOURCE). No real
// host filesystem is touched.
type growHost struct {
	img, mnt string
	state    string // the state directory in it
}

func newGrowHost(t *testing.T, size int64) *growHost {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the clone pool needs root")
	}
	dir := t.TempDir()
	h := &growHost{img: filepath.Join(dir, "host.img"), mnt: filepath.Join(dir, "host")}
	h.state = filepath.Join(h.mnt, "state")
	if err := os.WriteFile(h.img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(h.img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(loopdisk.MkfsXFSPath(), "-q", "-f", "-K", h.img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v: %s", err, out)
	}
	if err := os.Mkdir(h.mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", h.img, h.mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if err := loopdisk.Unmount(h.mnt); err != nil {
			t.Error(err)
		}
	})
	if err := os.Mkdir(h.state, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// grow grows the host filesystem to size bytes, online.
func (h *growHost) grow(t *testing.T, size int64) {
	t.Helper()
	if err := os.Truncate(h.img, size); err != nil {
		t.Fatal(err)
	}
	if _, err := loopdisk.SetLoopCapacity(h.mnt); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(filepath.Dir(loopdisk.MkfsXFSPath()), "xfs_growfs"), h.mnt).CombinedOutput(); err != nil {
		t.Fatalf("xfs_growfs: %v: %s", err, out)
	}
}

func (h *growHost) total(t *testing.T) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(h.mnt, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Bsize
}

// newGrowDriver starts a driver with the clone pool on host.
func newGrowDriver(t *testing.T, h *growHost) *Driver {
	t.Helper()
	return newDriverWith(t, Config{StateDir: h.state, SidecarPath: sidecarBin, Clones: ClonesXFS})
}

// poolSize is the pool's data size; it fails t unless that is the host's
// size (to the pool's block, and at least loopdisk.MinClonePool).
func poolSize(t *testing.T, d *Driver, h *growHost) int64 {
	t.Helper()
	size, err := loopdisk.ClonePoolSize(d.data)
	if err != nil {
		t.Fatal(err)
	}
	if want := max(h.total(t), loopdisk.MinClonePool); size > want || want-size >= 64<<10 {
		t.Errorf("clone pool: %d bytes on a host of %d, want the host's size", size, want)
	}
	return size
}

// fillPool takes all but leave bytes of the pool's free space with one
// allocated file, which takes no space of the host (its extents are
// unwritten: the pool's image stays sparse): a pool short of space while
// its host has plenty, as a pool the host outgrew is.
func fillPool(t *testing.T, d *Driver, leave int64) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(d.data, &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(d.data, "fill-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-leave); err != nil {
		t.Fatalf("fill the clone pool: %v", err)
	}
}

// TestClonePoolFollowsHost (found by session 26 from outside): the clone
// pool was sized once, when made, to the host filesystem. A host grown
// after that left the pool at its old size, and a pool with less room
// than its host was never counted: creates were admitted by the host's
// free space while every write inside a sandbox failed with 507. Now:
// a grown host grows the pool (at the admission that finds the pool
// short, or in the background), a sandbox then writes what only the grown
// pool has room for, and a pool short of space that cannot grow refuses
// creates up front with 507 insufficient_storage naming the pool and a
// hint, which Capacity reports too.
func TestClonePoolFollowsHost(t *testing.T) {
	h := newGrowHost(t, 2<<30)
	d := newGrowDriver(t, h)
	before := poolSize(t, d, h)

	h.grow(t, 4<<30)
	// The old pool's room, less 16 MiB: before the pool followed the
	// host, the sandbox's write below did not fit.
	fillPool(t, d, 16<<20)
	ctx := context.Background()
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatalf("create on a host grown to 4 GiB, the pool full: %v", err)
	}
	if after := poolSize(t, d, h); after <= before {
		t.Fatalf("clone pool after the host grew: %d bytes, was %d", after, before)
	}
	ep := create(t, d, "grown")
	if res := run(t, ep, "head -c 64M /dev/zero > /workspace/f && sync /workspace/f && wc -c < /workspace/f"); res.ExitCode != 0 || res.Stdout != "67108864\n" {
		t.Fatalf("write 64 MiB in the grown pool: %+v", res)
	}

	// Full again, and the host no larger: refused up front.
	fillPool(t, d, 16<<20)
	d.capacity.Forget() // read the host again now
	err := d.AdmitCreate(ctx, 1)
	var hl *model.HostLimitError
	if !errors.As(err, &hl) {
		t.Fatalf("create with the pool full: %v, want a HostLimitError", err)
	}
	ae := hl.APIError("create")
	if ae.Status != http.StatusInsufficientStorage || ae.Code != api.CodeInsufficientStorage ||
		!strings.HasPrefix(ae.Message, "create refused: the clone pool has ") || !strings.Contains(ae.Hint, d.data) ||
		ae.Details.(map[string]any)["resource"] != api.HostDiskResource {
		t.Errorf("refusal: %+v", ae)
	}
	if err := d.AdmitWrite(ctx, ""); !errors.As(err, &hl) {
		t.Errorf("upload with the pool full: %v, want a HostLimitError", err)
	}
	st, err := d.Capacity(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Disk == nil || st.Disk.Path != d.data || !st.Disk.Refusing || st.Disk.FreeBytes > 16<<20 || st.Disk.FreezeBelowBytes != st.Disk.WatermarkBytes/2 {
		t.Errorf("capacity with the pool full: %+v, want the pool's, refusing", st.Disk)
	}
}

// TestClonePoolGrowsAtRestart: a server started over a pool smaller than
// its host (the host grown while no server ran) grows the pool at mount;
// before, it kept the size it was made with for good.
func TestClonePoolGrowsAtRestart(t *testing.T) {
	h := newGrowHost(t, 2<<30)
	d1, err := New(Config{StateDir: h.state, SidecarPath: sidecarBin, Clones: ClonesXFS})
	if err != nil {
		t.Fatal(err)
	}
	before := poolSize(t, d1, h)
	if err := d1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.grow(t, 4<<30)
	d2 := newGrowDriver(t, h)
	if after := poolSize(t, d2, h); after <= before {
		t.Fatalf("clone pool after a restart on a grown host: %d bytes, was %d", after, before)
	}
}

// TestClonePoolGrowsInBackground: with no create at all, the storage
// watcher's reading finds the grown host and grows the pool.
func TestClonePoolGrowsInBackground(t *testing.T) {
	h := newGrowHost(t, 2<<30)
	d := newGrowDriver(t, h)
	before := poolSize(t, d, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.WatchStorage(ctx, func(string, bool, bool) {}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	h.grow(t, 4<<30)
	deadline := time.Now().Add(time.Minute)
	for {
		size, err := loopdisk.ClonePoolSize(d.data)
		if err != nil {
			t.Fatal(err)
		}
		if size > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("clone pool still %d bytes a minute after its host grew to %d", size, h.total(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for d.cow.running.Load() {
		time.Sleep(10 * time.Millisecond) // the grow's last steps
	}
	poolSize(t, d, h)
}

// TestClonePoolFullFreezes: running sandboxes are frozen while the clone
// pool holding their disks is below half its watermark, as while the
// host's filesystem is, and thawed once it has room again; before, only
// the host's free space was watched, and a sandbox kept writing into a
// full pool, each write failing.
func TestClonePoolFullFreezes(t *testing.T) {
	h := newGrowHost(t, 2<<30)
	d := newGrowDriver(t, h)
	create(t, d, "writer")
	events := make(chan bool, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- d.WatchStorage(ctx, func(id string, frozen, pool bool) {
			if id == "writer" {
				events <- frozen
				if frozen && !pool {
					t.Error("frozen for the host's filesystem, want for the clone pool (the 507 names it)")
				}
			}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	wait := func(want bool) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("sandbox frozen = %v, want %v", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("sandbox not frozen = %v a minute after the pool's space changed", want)
		}
	}
	fillPool(t, d, 16<<20)
	wait(true)
	// Its stats and the host's list of disks say the pool froze it
	// (before, only frozen: true, which the TUI took for the host's disk).
	if st, err := d.Stats(context.Background(), "writer"); err != nil || !st.Frozen || st.FrozenReason != api.FrozenClonePool {
		t.Errorf("stats of the frozen sandbox: frozen %v, reason %q, err %v; want true, %q", st.Frozen, st.FrozenReason, err, api.FrozenClonePool)
	}
	if sd, ok := d.sandboxDisk("writer"); ok && (!sd.Frozen || sd.FrozenReason != api.FrozenClonePool) {
		t.Errorf("host's disk of the frozen sandbox: frozen %v, reason %q; want true, %q", sd.Frozen, sd.FrozenReason, api.FrozenClonePool)
	}
	fills, err := filepath.Glob(filepath.Join(d.data, "fill-*"))
	if err != nil || len(fills) != 1 {
		t.Fatalf("fill files: %v, %v", fills, err)
	}
	if err := os.Remove(fills[0]); err != nil {
		t.Fatal(err)
	}
	wait(false)
}
