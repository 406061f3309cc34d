//go:build linux

package loopdisk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Images makes quota images from one formatted template per size, so a
// Create clones it (or, without the clone pool, copies a few megabytes of
// metadata) instead of running mkfs.
type Images struct {
	dir  string    // images/ of the driver's data directory (StateDir, or the clone pool)
	trim *PoolTrim // the clone pool's, nil without one
	sys  string    // where sysfs is: "/sys" but in tests
	mu   sync.Mutex
	// checked holds, by path, the template files whose block size was
	// read and right (templateBlockSize): a Create stats its template
	// instead of opening it and reading its superblock again. A template
	// replaced (made again, or by hand) is another file, read afresh.
	checked map[string]fileID
}

// fileID tells one file at a path from another put there since: its
// device and inode, and its change time and size should it be rewritten
// in place.
type fileID struct {
	dev, ino, size uint64
	ctime          unix.Timespec
}

// statID returns the fileID of the file at path.
func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), ctime: st.Ctim}, nil
}

// NewImages keeps its templates in dir (images/ of the driver's data
// directory); trim is the clone pool's trimmer, nil without a pool.
func NewImages(dir string, trim *PoolTrim) *Images {
	return &Images{dir: dir, trim: trim, sys: "/sys"}
}

// Pool is the clone pool's trimmer, nil without a pool.
func (im *Images) Pool() *PoolTrim { return im.trim }

// trashPrefix names images waiting in images/ to be unlinked.
const trashPrefix = ".trash-"

// Discard moves a sandbox's image out of its directory and unlinks it in
// the background: freeing a multi-GiB sparse file takes the host's
// filesystem tens of milliseconds that Delete need not wait for. An image
// left by a crash is unlinked by the next driver (see EmptyTrash).
//
// loop is the loop device the image was mounted from (LoopDevice, read
// before the unmount), 0 when unknown: the background wait for the
// device to detach then reads that one device's backing file, not every
// loop device's on the host.
func (im *Images) Discard(image string, loop uint64) error {
	if _, err := os.Lstat(image); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(im.dir, 0o700); err != nil {
		return fmt.Errorf("discard disk image: %w", err)
	}
	trash, err := os.CreateTemp(im.dir, trashPrefix)
	if err != nil {
		return fmt.Errorf("discard disk image: %w", err)
	}
	_ = trash.Close()
	if err := os.Rename(image, trash.Name()); err != nil {
		_ = os.Remove(trash.Name())
		if !errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("discard disk image: %w", err)
		}
		// A volume's image lives on the host's filesystem, the trash
		// in the clone pool: unlinked where it is.
		if err := os.Remove(image); err != nil {
			return fmt.Errorf("discard disk image: %w", err)
		}
		return nil
	}
	go func() {
		if im.trim == nil {
			_ = os.Remove(trash.Name())
			return
		}
		if !im.loopReleased(trash.Name(), loop, releaseBudget) {
			im.trim.log.Warn("a discarded disk image is still attached to a loop device: its space returns to the host at a later trim", "image", trash.Name())
			_ = os.Remove(trash.Name())
			return
		}
		_ = RemoveNow(trash.Name())
		im.trim.Trim()
	}()
	return nil
}

// RemoveNow unlinks the file at path with its blocks freed before it
// returns: XFS frees an unlinked file's blocks moments later in the
// background (inode inactivation), too late for the trim that follows,
// while a truncate frees them at once.
func RemoveNow(path string) error {
	if err := os.Truncate(path, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Remove(path)
}

// releaseBudget is how long a discarded image's loop device is waited
// for: autoclear detaches it in the background once its filesystem is
// unmounted everywhere, and the image's blocks are freed only then.
const releaseBudget = 10 * time.Second

// loopReleased waits, up to budget, until no loop device is backed by
// the file at path, and reports whether none is. With loop, the device
// the file was attached to, only that device is read; else every loop
// device's backing file, each 20 ms: with thousands of loop devices on a
// host (each a sysfs directory) and a hundred removals at once, that scan
// was two thirds of the server's CPU (issue 27, session 9).
func (im *Images) loopReleased(path string, loop uint64, budget time.Duration) bool {
	// The kernel names the backing file by its absolute, resolved path.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	deadline := time.Now().Add(budget)
	for {
		var files []string
		if loop != 0 {
			files = []string{filepath.Join(im.sys, "dev/block", fmt.Sprintf("%d:%d", unix.Major(loop), unix.Minor(loop)), "loop/backing_file")}
		} else {
			files, _ = filepath.Glob(filepath.Join(im.sys, "block/loop*/loop/backing_file"))
		}
		held := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			held = held || (err == nil && strings.TrimSpace(string(b)) == path)
		}
		if !held {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// templatePrefix names the formatted templates in images/, by size and
// layout: "ext4j-<size>.img" is empty (volumes; sandbox disks before
// session 14, whose templates are left to volumes),
// "ext4j-<size>-<dirs>.<uid>.<gid>.img" holds a Layout. Templates of
// earlier versions ("ext4-<size>.img") had no journal; they are thrown
// away (EmptyTrash).
const templatePrefix = "ext4j-"

// EmptyTrash unlinks, in the background, images a previous driver
// discarded but did not get to unlink, and journal-less templates of
// earlier versions.
func (im *Images) EmptyTrash() {
	old, _ := filepath.Glob(filepath.Join(im.dir, trashPrefix+"*"))
	stale, _ := filepath.Glob(filepath.Join(im.dir, "ext4-[0-9]*.img"))
	old = append(old, stale...)
	if len(old) == 0 {
		return
	}
	go func() {
		for _, p := range old {
			_ = os.Remove(p)
		}
		im.trim.Trim()
	}()
}

// Create writes a new sparse ext4 image of size bytes at dst, empty but
// for lost+found.
func (im *Images) Create(dst string, size int64) error {
	return im.CreateWith(dst, size, Layout{})
}

// A Layout is what a template holds besides an empty filesystem: empty
// directories at its root, mode 0755 and owned by UID:GID. A sandbox's
// disk has its workspace and outputs there, the same for every sandbox
// (the canonical ids), so each clone has them without an mkdir and chown
// in its fresh filesystem: their inodes and blocks were written once, in
// the template (issue 27, session 14). The directories' times are the
// template's, as the filesystem's root and lost+found always were.
type Layout struct {
	Dirs     []string
	UID, GID int
}

// key names the layout in its template's file name: templates of other
// layouts (or of none: volumes, and sandbox disks before session 14) are
// other files.
func (l Layout) key() string {
	if len(l.Dirs) == 0 {
		return ""
	}
	return "-" + strings.Join(l.Dirs, "+") + "." + strconv.Itoa(l.UID) + "." + strconv.Itoa(l.GID)
}

func (l Layout) valid() bool {
	for _, d := range l.Dirs {
		if d == "" || d == "." || d == ".." || d == "lost+found" || strings.ContainsAny(d, "/+") {
			return false
		}
	}
	return true
}

// CreateWith writes a new sparse ext4 image of size bytes at dst holding
// layout. A template whose mkfs.ext4 cannot populate a filesystem (-d,
// e2fsprogs before 1.43) is made empty instead: callers check for the
// directories and make those missing.
func (im *Images) CreateWith(dst string, size int64, layout Layout) error {
	if !layout.valid() {
		return fmt.Errorf("create disk image: invalid layout %q", layout.Dirs)
	}
	tmpl, err := im.template(size, layout)
	if err != nil {
		return err
	}
	if _, err := CloneFile(dst, tmpl); err != nil {
		return fmt.Errorf("create disk image: %w", err)
	}
	return nil
}

// template returns the path of the formatted image of size bytes holding
// layout, making it on first use, or again when the file there is not of
// templateBlockSize. Its block size is read once per template file
// (checked); later calls stat it.
func (im *Images) template(size int64, layout Layout) (string, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	path := filepath.Join(im.dir, templatePrefix+strconv.FormatInt(size, 10)+layout.key()+".img")
	if id, err := statID(path); err == nil {
		if checked, ok := im.checked[path]; ok && checked == id {
			return path, nil
		}
		if blockSize(path) == templateBlockSize {
			im.check(path, id)
			return path, nil
		}
	}
	if err := os.MkdirAll(im.dir, 0o700); err != nil {
		return "", fmt.Errorf("create disk template: %w", err)
	}
	tmp := path + ".tmp"
	if err := formatImage(tmp, size, layout); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("create disk template: %w", err)
	}
	if id, err := statID(path); err == nil && blockSize(path) == templateBlockSize {
		im.check(path, id)
	}
	return path, nil
}

// check records that the template file id at path has the right block
// size; im.mu is held.
func (im *Images) check(path string, id fileID) {
	if im.checked == nil {
		im.checked = map[string]fileID{}
	}
	im.checked[path] = id
}

// layoutSource makes, at src, the directory tree mkfs.ext4 -d copies into
// a new filesystem: its root as the filesystem's root always is (root's,
// 0755, should an mkfs.ext4 copy it), the layout's directories below. The
// modes are set past the umask, which would otherwise decide them.
func layoutSource(src string, layout Layout) error {
	_ = os.RemoveAll(src) // left by a crash
	if err := os.Mkdir(src, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(src, 0o755); err != nil {
		return err
	}
	for _, name := range layout.Dirs {
		p := filepath.Join(src, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		if err := os.Chown(p, layout.UID, layout.GID); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// templateBlockSize is every image's block size. mkfs.ext4 picks 1 KiB
// below 512 MiB, which a loop device with direct I/O over a filesystem
// of 4 KiB sectors (the XFS clone pool) cannot mount ("bad block size
// 1024": a sandbox asking for storage_gb 0.3 failed to create).
const templateBlockSize = 4096

// blockSize is the block size of the ext4 image at path, from its
// superblock (s_log_block_size, 1024 bytes in), or 0.
func blockSize(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], 1024+24); err != nil {
		return 0
	}
	if log := binary.LittleEndian.Uint32(b[:]); log <= 6 {
		return 1024 << log
	}
	return 0
}

func formatImage(path string, size int64, layout Layout) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		return fmt.Errorf("create disk template: %w", err)
	}
	populates := [][]string{nil}
	if len(layout.Dirs) > 0 {
		src := path + ".src"
		defer os.RemoveAll(src)
		if err := layoutSource(src, layout); err != nil {
			return fmt.Errorf("create disk template: %w", err)
		}
		populates = [][]string{{"-d", src}, nil}
	}
	// A journal, so that a write the host could not store (its filesystem
	// filled under the sparse image) aborts the journal and leaves the
	// filesystem read-only and consistent (errors=remount-ro at mount)
	// instead of corrupt; it is small, since the journal's blocks become
	// real host blocks as it is used. No reserved blocks, and no inode
	// table or journal zeroing, since a new sparse file reads as zeros;
	// e2fsprogs before 1.47 lacks assume_storage_prezeroed.
	journal := []string{}
	if size >= 256<<20 {
		journal = []string{"-J", "size=" + strconv.Itoa(journalMiB)}
	}
	var out []byte
	for _, populate := range populates {
		for _, ext := range []string{
			"nodiscard,lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1",
			"nodiscard,lazy_itable_init=1,lazy_journal_init=1",
		} {
			args := append([]string{"-q", "-F", "-m", "0", "-b", strconv.Itoa(templateBlockSize), "-O", "has_journal", "-E", ext}, journal...)
			args = append(append(args, populate...), path)
			if out, err = exec.Command(MkfsPath(), args...).CombinedOutput(); err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("format disk template: %w: %s", err, out)
}

// copySparse copies src's data extents to a new file dst of size bytes,
// leaving holes as holes.
func copySparse(dst, src string, size int64) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	if err := out.Truncate(size); err != nil {
		return err
	}
	return DataRuns(in, size, func(off, n int64) error { return copyRange(out, in, off, n) })
}

// DataRuns calls fn with the offset and length of each run of data in
// the first size bytes of f, in order, skipping the holes between them
// (SEEK_DATA, SEEK_HOLE).
func DataRuns(f *os.File, size int64, fn func(off, n int64) error) error {
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		hole = min(hole, size)
		if hole <= data {
			return nil
		}
		if err := fn(data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

func copyRange(out, in *os.File, off, n int64) error {
	for n > 0 {
		roff, woff := off, off
		c, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(min(n, 1<<30)), 0)
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			_, err = io.Copy(io.NewOffsetWriter(out, off), io.NewSectionReader(in, off, n))
			return err
		}
		if err != nil {
			return err
		}
		if c == 0 {
			return io.ErrUnexpectedEOF
		}
		off, n = off+int64(c), n-int64(c)
	}
	return nil
}

// CloneFile makes dst a copy of src: a reflink (FICLONE) where the
// filesystem has them, else a sparse copy. It reports whether it cloned.
func CloneFile(dst, src string) (cloned bool, err error) {
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false, err
	}
	err = unix.IoctlFileClone(int(out.Fd()), int(in.Fd()))
	if err == nil {
		return true, out.Close()
	}
	_ = out.Close()
	_ = os.Remove(dst)
	if !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return false, fmt.Errorf("clone %s: %w", src, err)
	}
	fi, err := in.Stat()
	if err != nil {
		return false, err
	}
	return false, copySparse(dst, src, fi.Size())
}
