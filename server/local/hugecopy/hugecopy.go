//go:build linux

// Package hugecopy keeps byte-identical copies of a binary (the sidecar's)
// on a tmpfs whose files take 2 MiB pages, one per binary, named by its
// SHA-256 and shared by every server of the host: each exec of a copy maps
// its text with a few huge-page faults instead of hundreds of 4 KiB ones.
// A copy is held (a shared flock) for as long as its driver may start
// processes from it, and a driver that starts removes the copies no other
// holds. It knows nothing of sandboxes; server/local runs its jails from
// the copy (Config.SidecarCopies).
package hugecopy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mountData is the tmpfs's mount data: files in it are backed by
// 2 MiB pages where the kernel can, so an exec of one maps its text and
// read-only data with a few PMD faults instead of hundreds of 4 KiB ones
// (each tens of µs on a shadow-paged VM, session14-hugetext14). The size
// caps what the copies of different binaries (≈ 14 MiB each) may take of
// the host's memory; a driver that finds no room runs its binary where it
// is.
const mountData = "huge=always,mode=0755,size=256m,nr_inodes=1024"

// Copy is a driver's byte-identical copy of its sidecar binary in the
// copies directory, named by the binary's SHA-256. hold is open on it
// with a shared flock for as long as the driver may start jails from it: a
// driver that starts (under the directory's lock) removes every copy no
// other driver holds, which takes nothing from jails already running (an
// unlinked file lives on while it is mapped).
type Copy struct {
	path string
	hold *os.File
}

// Make returns the copy of the binary at src in dir, made now if
// missing or not byte-identical, with dir mounted first when it is not
// yet: a tmpfs whose files take huge pages. Every boxkite server of the
// host shares dir; a lock file beside it (dir + ".lock") serialises them.
// An error means the caller runs src itself.
func Make(dir, src string) (*Copy, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("read sidecar binary: %w", err)
	}
	sum := sha256.Sum256(bin)
	name := hex.EncodeToString(sum[:])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make sidecar copies directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Clean(dir)+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock sidecar copies: %w", err)
	}
	defer lock.Close() // unlocks
	if err := flock(lock, unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock sidecar copies: %w", err)
	}
	if err := mountHugeTmpfs(dir); err != nil {
		return nil, err
	}
	c, err := placeCopy(filepath.Join(dir, name), bin)
	if err != nil {
		return nil, err
	}
	evictCopies(dir, name)
	return c, nil
}

// Supported fails when the kernel has no transparent huge pages, or its
// operator denied them to every tmpfs (shmem_enabled "deny"): a mount's
// huge= would then be refused or ignored.
func Supported() error {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/shmem_enabled")
	if err != nil {
		return fmt.Errorf("no transparent huge pages for tmpfs: %w", err)
	}
	if strings.Contains(string(b), "[deny]") {
		return errors.New("no transparent huge pages for tmpfs: shmem_enabled is deny")
	}
	return nil
}

// mountHugeTmpfs mounts the copies' tmpfs on dir unless it is there,
// mounted by an earlier server. Anything else mounted there is refused,
// not covered.
func mountHugeTmpfs(dir string) error {
	fstype, opts, err := mountAt(dir)
	if err != nil {
		return err
	}
	switch {
	case fstype == "tmpfs" && hasOption(opts, "huge=always"):
		return nil
	case fstype != "":
		return fmt.Errorf("sidecar copies: %s holds a %s mount (%s), not a tmpfs with huge=always", dir, fstype, opts)
	}
	if err := unix.Mount("boxkite-sidecar", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mountData); err != nil {
		return fmt.Errorf("mount sidecar copies on %s: %w", dir, err)
	}
	fstype, opts, err = mountAt(dir)
	if err == nil && (fstype != "tmpfs" || !hasOption(opts, "huge=always")) {
		err = fmt.Errorf("the kernel mounted %s %s (%s): no huge pages", dir, fstype, opts)
	}
	if err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		return fmt.Errorf("mount sidecar copies: %w", err)
	}
	return nil
}

// mountAt returns the type and superblock options of the topmost mount on
// dir, "" when none is.
func mountAt(dir string) (fstype, opts string, err error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("read mounts: %w", err)
	}
	dir = escapeMount(filepath.Clean(dir))
	for line := range strings.Lines(string(b)) {
		// id parent dev root mountpoint options [optional...] - type source superoptions
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+3 >= len(f) || f[4] != dir {
			continue
		}
		fstype, opts = f[sep+1], f[sep+3] // later lines are mounted over earlier ones
	}
	return fstype, opts, nil
}

// escapeMount escapes a path as mountinfo writes it (octal escapes:
// \040 for a space), to compare with its fields as they are.
func escapeMount(p string) string {
	return strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`).Replace(p)
}

func hasOption(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// placeCopy returns path held, written from bin first unless it already
// holds exactly bin. The caller holds the directory's lock.
func placeCopy(path string, bin []byte) (*Copy, error) {
	if f, err := os.Open(path); err == nil {
		got, rerr := readAll(f)
		if rerr == nil && bytes.Equal(got, bin) {
			return holdCopy(f, path)
		}
		_ = f.Close() // not ours, truncated, changed: replaced
	}
	tmp := path + ".tmp"
	// No fork may happen while the file is open for writing: a child
	// would hold it open until its own exec, and an exec of the copy
	// meanwhile fails with ETXTBSY (golang.org/issue/22315).
	syscall.ForkLock.RLock()
	err := writeCopy(tmp, bin)
	syscall.ForkLock.RUnlock()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("copy sidecar binary: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("copy sidecar binary: %w", err)
	}
	return holdCopy(f, path)
}

func writeCopy(path string, bin []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o555)
	if err != nil {
		return err
	}
	_, err = f.Write(bin)
	return errors.Join(err, f.Chmod(0o555), f.Close())
}

func readAll(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

func holdCopy(f *os.File, path string) (*Copy, error) {
	if err := flock(f, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("hold sidecar copy: %w", err)
	}
	return &Copy{path: path, hold: f}, nil
}

// evictCopies removes the copies in dir but keep that no driver holds,
// and leftovers of an interrupted copy. The caller holds the directory's
// lock. Best effort: a copy left is removed by a later driver.
func evictCopies(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if name == keep {
			continue
		}
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(p)
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if flock(f, unix.LOCK_EX|unix.LOCK_NB) == nil {
			_ = os.Remove(p)
		}
		_ = f.Close()
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Path is the copy's file.
func (c *Copy) Path() string { return c.path }

// Close lets other drivers remove the copy; jails running from it keep it.
// A second Close (a driver shut down twice) does nothing.
func (c *Copy) Close() error {
	if c == nil {
		return nil
	}
	if err := c.hold.Close(); !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
