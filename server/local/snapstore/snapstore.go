//go:build linux

// Package snapstore is the local driver's store of snapshot images (issue
// 22): a directory of disk images named by their content, so two
// snapshots of the same state share one file. A reflinked (FICLONE) copy's
// key is the SHA-256 of its extent map (equal maps share every block, so
// they hold equal data), a plain copy's the SHA-256 of its data runs with
// their offsets (loopdisk.HashData); a fork's transient image has a random
// key and no hash. It knows nothing of sandboxes: the driver copies a
// sandbox's frozen disk into a part file (NewPart), and Seal and Put make
// it a snapshot.
//
//	sha256-<hex>.img  a snapshot's image, read-only from here on
//	tmp-<hex>.img     a fork's transient image
//	.part-<hex>.img   a copy under way; a crash leaves it to EmptyTrash
//
// A snapshot's portable form (Export, Import), which the control
// plane keeps in object storage when one is configured, is the image's
// runs of data without its holes (loopdisk.Export). A restore on a host
// without the image (Import) writes the runs into a sparse file
// of that length under the same key.
package snapstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
)

// validKey is what a key may look like: it names a file.
var validKey = regexp.MustCompile(`^(sha256-[0-9a-f]{64}|tmp-[0-9a-f]{32})$`)

// ValidKey reports whether key may name a snapshot.
func ValidKey(key string) bool { return validKey.MatchString(key) }

// Store is the snapshot images in one directory.
type Store struct{ dir string }

// New returns the store in dir, which is made when first written to.
func New(dir string) Store { return Store{dir: dir} }

// Dir is the store's directory.
func (s Store) Dir() string { return s.dir }

// Path is the image of key.
func (s Store) Path(key string) string { return filepath.Join(s.dir, key+".img") }

// NewPart returns a new part file's path for a copy under way, the
// directory made.
func (s Store) NewPart() (string, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, ".part-"+randHex(16)+".img"), nil
}

// Seal makes part durable and returns its key and size: the content
// address of its data (of its extent map when reflinked), or a random key
// when transient.
func Seal(part string, transient, reflinked bool) (key string, size int64, err error) {
	f, err := os.Open(part)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return "", 0, err
	}
	if transient {
		var st unix.Stat_t
		if unix.Stat(part, &st) == nil {
			size = st.Blocks * 512 // the host storage its blocks take
		}
		return "tmp-" + randHex(16), size, nil
	}
	var sum []byte
	if reflinked {
		sum, size, err = hashExtents(f)
	} else {
		sum, size, err = loopdisk.HashData(f)
	}
	if err != nil {
		return "", 0, err
	}
	return "sha256-" + hex.EncodeToString(sum), size, nil
}

// Put makes the sealed part the image of key; a snapshot of the same
// state stored already (not transient) is kept and part removed.
func (s Store) Put(part, key string, transient bool) error {
	final := s.Path(key)
	if _, err := os.Stat(final); err == nil && !transient {
		_ = os.Remove(part) // the same state is stored already
	} else if err := os.Rename(part, final); err != nil {
		_ = os.Remove(part)
		return err
	}
	return syncDir(s.dir)
}

// FS_IOC_FIEMAP and its flags (linux/fiemap.h).
const (
	fsIocFiemap     = 0xc020660b
	fiemapFlagSync  = 0x1
	fiemapExtLast   = 0x1
	fiemapHeaderLen = 32
	fiemapExtentLen = 56
	fiemapBatch     = 512
)

// hashExtents hashes the extent map of a reflinked image: each extent's
// logical offset, physical block address and length, and the file's
// size. It reads no data, so it costs the same for 1 MiB as for 1 GiB.
// Two images with equal hashes share every block, and a shared block is
// copy-on-write, so equal keys still mean equal content (the converse does
// not hold: identical data written twice is not deduplicated).
func hashExtents(f *os.File) ([]byte, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	buf := make([]byte, fiemapHeaderLen+fiemapBatch*fiemapExtentLen)
	var rec [24]byte
	var n int64
	for start := uint64(0); start < uint64(fi.Size()); {
		clear(buf)
		binary.NativeEndian.PutUint64(buf[0:], start)
		binary.NativeEndian.PutUint64(buf[8:], uint64(fi.Size())-start)
		binary.NativeEndian.PutUint32(buf[16:], fiemapFlagSync)
		binary.NativeEndian.PutUint32(buf[24:], fiemapBatch)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
			return nil, 0, fmt.Errorf("map extents: %w", errno)
		}
		mapped := binary.NativeEndian.Uint32(buf[20:])
		if mapped == 0 {
			break
		}
		last := false
		for i := range mapped {
			e := buf[fiemapHeaderLen+int(i)*fiemapExtentLen:]
			logical, physical, length := binary.NativeEndian.Uint64(e[0:]), binary.NativeEndian.Uint64(e[8:]), binary.NativeEndian.Uint64(e[16:])
			binary.BigEndian.PutUint64(rec[0:], logical)
			binary.BigEndian.PutUint64(rec[8:], physical)
			binary.BigEndian.PutUint64(rec[16:], length)
			h.Write(rec[:])
			n += int64(length)
			start = logical + length
			last = binary.NativeEndian.Uint32(e[40:])&fiemapExtLast != 0
		}
		if last {
			break
		}
	}
	binary.BigEndian.PutUint64(rec[:8], uint64(fi.Size()))
	h.Write(rec[:8])
	return h.Sum(nil), n, nil
}

// Delete removes the image of key; a missing one is not an error.
// Unlinked, not truncated: a restore or fork may be cloning it.
func (s Store) Delete(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("delete snapshot: invalid key %q", key)
	}
	if err := os.Remove(s.Path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	return nil
}

// Restore makes dst, a new disk image, a copy of the image of key.
func (s Store) Restore(dst, key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("restore snapshot: invalid key %q", key)
	}
	if _, err := loopdisk.CloneFile(dst, s.Path(key)); err != nil {
		return fmt.Errorf("restore snapshot %s: %w", key, err)
	}
	return nil
}

// Keys lists the sha256-<hex>.img images (not the transient tmp- ones of
// forks, not the .part- copies under way).
func (s Store) Keys() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var keys []string
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".img")
		if ok && e.Type().IsRegular() && strings.HasPrefix(key, "sha256-") && ValidKey(key) {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// EmptyTrash removes copies a crash interrupted and the transient images
// of forks it interrupted (the driver's start).
func (s Store) EmptyTrash() {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".part-") || strings.HasPrefix(e.Name(), "tmp-") {
			_ = os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}

// Export returns the portable form of the image of key and its length.
func (s Store) Export(key string) (io.ReadCloser, int64, error) {
	if !ValidKey(key) {
		return nil, 0, fmt.Errorf("export snapshot: invalid key %q", key)
	}
	f, err := os.Open(s.Path(key))
	if err != nil {
		return nil, 0, fmt.Errorf("export snapshot: %w", err)
	}
	r, n, err := loopdisk.Export(f)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("export snapshot %s: %w", key, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, n, nil
}

// Import writes the image of key from its portable form r, unless the
// store has it.
func (s Store) Import(key string, r io.Reader) error {
	if !ValidKey(key) {
		return fmt.Errorf("import snapshot: invalid key %q", key)
	}
	final := s.Path(key)
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	part, err := s.NewPart()
	if err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	err = loopdisk.Import(r, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(part, final)
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		_ = os.Remove(part)
		return fmt.Errorf("import snapshot %s: %w", key, err)
	}
	return nil
}

// Has reports whether the store has the image of key.
func (s Store) Has(key string) (bool, error) {
	if !ValidKey(key) {
		return false, fmt.Errorf("snapshot: invalid key %q", key)
	}
	_, err := os.Stat(s.Path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// randHex returns n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
