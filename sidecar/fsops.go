package sidecar

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// File work on resolved targets. Every call that looks a name up does so in
// a directory held as a descriptor, one component, without following a
// symlink, and with the sandbox user's rights (fsUser.do); reading and
// writing file contents happen on descriptors outside that, so no thread is
// held while a request body streams in.

// fileError turns an error of file work on the request path p into an
// answer. verb says what was refused ("read", "write to").
func fileError(err error, verb, p string) error {
	if _, ok := errors.AsType[*api.Error](err); ok {
		return err
	}
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return api.Errorf(http.StatusForbidden, api.CodePermissionDenied, "Permission denied: the sandbox user may not %s %s", verb, p).
			WithHint("file routes act with the sandbox user's rights (uid 1001), as its commands do; check the owner and mode with exec (ls -l), or use another path")
	case errors.Is(err, errChanged):
		return resolveError(err, p)
	case storageFull(err, verb):
		return api.Errorf(http.StatusInsufficientStorage, api.CodeInsufficientStorage, "Cannot %s %s: %v; nothing was written", verb, p, errnoOf(err)).
			WithHint("the sandbox's disk (its storage_gb quota) or the host's disk is full: free space in the sandbox, e.g. delete files with exec, or create the sandbox with a larger storage_gb")
	}
	return fmt.Errorf("%s %s: %w", verb, p, err)
}

// storageFull reports whether err means the storage could not take a
// write: ENOSPC, EDQUOT, the EIO an inner filesystem sees when the host
// cannot grow its loop-backed image, and the EROFS of the same filesystem
// once its journal gave up after such an error (the typed roots' own
// read-only mounts are refused before anything is written, with 403).
// EIO while reading is a failing disk, not a full one.
func storageFull(err error, verb string) bool {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return true
	}
	writing := verb != "read" && verb != "reach" && verb != "watch"
	return writing && (errors.Is(err, unix.EIO) || errors.Is(err, unix.EROFS))
}

// errnoOf returns the system error inside err, for a message that says
// what the kernel said without the sidecar's internal wrapping.
func errnoOf(err error) error {
	if errno, ok := errors.AsType[unix.Errno](err); ok {
		return errno
	}
	return err
}

// fileMeta is what a written file gets: an overwrite keeps the mode and
// owner of the file it replaces.
type fileMeta struct {
	mode     uint32 // permission, setuid, setgid and sticky bits
	uid, gid int
	exists   bool      // replacing a file: give the new one its owner, if the user may
	mtime    time.Time // zero: now
}

// metaOf checks that the target may be written as a regular file and
// returns what the file written there keeps: a new file gets 0644, an
// existing one its mode and owner. A file the sandbox user may not write is
// refused, though replacing it needs only its directory: the user could not
// write it either. p names it in messages. Call it as the sandbox user.
func metaOf(t *target, p string) (fileMeta, error) {
	switch {
	case t.isDir():
		return fileMeta{}, errIsDirWrite(p)
	case !t.exists:
		return fileMeta{mode: 0o644}, nil
	case t.mode != unix.S_IFREG:
		return fileMeta{}, errNotRegular(p)
	}
	var st unix.Stat_t
	err := unix.Fstatat(t.cur.dir(), t.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		err = mayWrite(t.cur.dir(), t.name)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return fileMeta{mode: 0o644}, nil // gone meanwhile: a new file
	case err != nil:
		return fileMeta{}, err
	case uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG:
		return fileMeta{}, errNotRegular(p)
	}
	return fileMeta{mode: uint32(st.Mode) & 0o7777, uid: int(st.Uid), gid: int(st.Gid), exists: true}, nil
}

// makeDirs creates the directories missing before the target's name, as
// the sandbox user, and moves the target's cursor into the last. A symlink
// swapped in for one of them is not followed.
func (v *fsView) makeDirs(t *target) error {
	for len(t.missing) > 0 {
		name := t.missing[0]
		if err := unix.Mkdirat(t.cur.dir(), name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create directory %s: %w", name, err)
		}
		fd, err := unix.Openat(t.cur.dir(), name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			return errNotDirectory(path.Join(t.cur.virt(), name))
		case err != nil:
			return fmt.Errorf("open directory %s: %w", name, err)
		}
		t.cur.push(fd, name)
		t.missing = t.missing[1:]
	}
	return nil
}

// tempPattern names the temp files writeFile renames into place.
const tempPattern = ".boxkite-*.tmp"

// isTemp reports whether a file name is one of writeFile's temp files,
// which /watch leaves out: they are how the sidecar writes, not changes.
func isTemp(name string) bool {
	ok, _ := path.Match(tempPattern, name)
	return ok
}

// createTemp creates a new temp file in the directory dir.
func createTemp(dir int) (*os.File, string, error) {
	for range 10 {
		name := ".boxkite-" + rand.Text()[:12] + ".tmp"
		fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("create temp file: %w", err)
		}
		return os.NewFile(uintptr(fd), name), name, nil
	}
	return nil, "", errors.New("create temp file: names taken")
}

// bodyReader remembers a failure of the reader, so a broken request body
// is not mistaken for a failing disk.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// durability says how writeFile makes a write durable before it returns.
type durability int

const (
	// syncNow writes the file's data out (writeOut) before the rename and
	// fsyncs the file after it, then every directory the write changed. A
	// crash therefore finds the name on the old file or on the whole new
	// one, never on a file whose data did not reach the disk; and on a
	// journalling filesystem (a sandbox's ext4 disk) the file's fsync
	// commits its data, its metadata and the rename in one transaction,
	// after which the directories' fsyncs find nothing left to commit.
	// Fsyncing the file before the rename, as before issue 27's step 62,
	// took one journal commit for the file and one more for the directory,
	// each a flush of the loop device and of the host's disk.
	syncNow durability = iota
	// syncLater leaves flushing to the caller, which syncs each filesystem
	// it wrote to once (an archive's extraction: one syncfs instead of an
	// fsync per entry).
	syncLater
	// syncHost writes the file's data out (writeOut) before the rename and
	// leaves the rest to the host, which flushes the sandbox's disk
	// (syncfs) beside the write's audit entry before the client has the
	// answer (api.HeaderSidecarHostFlush, issue 27's step 63): the journal
	// commit that makes the rename durable is the host's, shared with
	// whatever else the disk's running transaction holds. A crash before
	// it finds the old file or the whole new one under the name, as with
	// syncNow (ordered journalling: the rename commits no earlier than the
	// allocation of the data that is on the disk already); a write-back
	// error is still met before the rename.
	syncHost
)

// durabilityOf is how a write for r is made durable: by the host when the
// control plane says it flushes the disk (api.HeaderSidecarHostFlush),
// else here.
func durabilityOf(r *http.Request) durability {
	if r.Header.Get(api.HeaderSidecarHostFlush) == "1" {
		return syncHost
	}
	return syncNow
}

// writeFile replaces the target's file with what src yields, atomically: a
// temp file in the same directory is written, given meta's mode and owner
// (nil: those of the file it replaces, see metaOf), and renamed over the
// name. Missing parents are created. With syncNow nothing is acknowledged
// before it is on disk: a full or failing disk is a 507, never a success.
// It returns the bytes written. p names the target in messages.
//
// The sandbox user's ids are switched to twice (each switch is a few
// credential changes): before the data, to check the target and create
// the temp file and its directories; after it, to settle, flush and
// rename. The data streams in between, holding no thread.
func (v *fsView) writeFile(t *target, p string, src io.Reader, meta *fileMeta, dur durability) (int64, error) {
	var (
		f, r *os.File // r: f read-only, to fsync it by after the rename (syncNow)
		tmp  string
	)
	changed := len(t.cur.fds) - 1 // the first directory that gets a new entry
	err := v.user.do(func() (err error) {
		if meta == nil {
			m, err := metaOf(t, p)
			if err != nil {
				return err
			}
			meta = &m
		}
		if err := v.makeDirs(t); err != nil {
			return err
		}
		if f, tmp, err = createTemp(t.cur.dir()); err != nil || dur != syncNow {
			return err
		}
		if r, err = reopenRead(t.cur.dir(), tmp, f); err != nil {
			f.Close()
			_ = unix.Unlinkat(t.cur.dir(), tmp, 0)
		}
		return err
	})
	if err != nil {
		return 0, fileError(err, "write to", p)
	}
	if r != nil {
		defer r.Close()
	}
	body := &bodyReader{r: src}
	n, err := v.copyInto(f, body)
	err = v.user.do(func() error { return replace(f, r, t.cur.dir(), tmp, t.name, *meta, dur, err) })
	if err == nil && dur == syncNow {
		err = syncDirs(t.cur.fds[changed:])
	}
	if err != nil {
		if body.err != nil {
			return 0, body.err
		}
		return 0, fileError(err, "write to", p)
	}
	return n, nil
}

// replace ends writeFile's temp file f, named tmp in dir: unless copyErr
// says its data did not arrive, it is given meta, its data written out
// (unless dur is syncLater), closed and renamed over name, and then, with
// r (its read-only descriptor: syncNow), fsynced through r. The fsync comes after the rename so
// that one journal commit takes both (durability), and through r so that
// the write descriptor is closed before: closing it after the rename
// would tell watchers (IN_CLOSE_WRITE) the target was modified after it
// was moved in. On a failure before the rename the temp file is removed,
// and when its data did not all arrive or could not be written (a full
// disk) it is emptied first: unlinking frees its blocks only once the
// last descriptor of it is closed, and a command the sidecar forks
// meanwhile holds a copy of every descriptor until it execs, so a write
// that fits, right after the refusal, could find the disk still full
// (TestRefusedWriteFreesItsSpace).
func replace(f, r *os.File, dir int, tmp, name string, meta fileMeta, dur durability, copyErr error) error {
	err := copyErr
	if err == nil {
		err = settle(f, meta)
	}
	if err == nil && dur != syncLater {
		err = writeOut(f)
	}
	if err != nil {
		_ = f.Truncate(0)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return err
	}
	if r != nil {
		return r.Sync()
	}
	return nil
}

// reopenRead opens the file f, just created as name in dir, once more
// for reading, checking that the name still leads to f's file.
func reopenRead(dir int, name string, f *os.File) (*os.File, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open temp file to sync: %w", err)
	}
	var a, b unix.Stat_t
	if err := errors.Join(unix.Fstat(int(f.Fd()), &a), unix.Fstat(fd, &b)); err != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("open temp file to sync: replaced meanwhile (%v)", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// copyInto copies src to the file f through a recycled buffer, filling
// it before each write: a small upload is one write(2), where io.Copy
// wrote each read of the request body (a 4 KiB body arrives in two) and,
// since f hides no ReadFrom, made a new 32 KiB buffer for every write
// (issue 27: most of what a 4 KiB PUT allocated in the sidecar). Only
// io.EOF ends it well; any other error of src (a body cut short is
// io.ErrUnexpectedEOF) is returned, after what was read before it is
// written.
func (v *fsView) copyInto(f io.Writer, src io.Reader) (int64, error) {
	var buf []byte
	if v.bufs != nil {
		bp := v.bufs.Get().(*[]byte)
		defer v.bufs.Put(bp)
		buf = *bp
	} else {
		buf = make([]byte, readChunk)
	}
	var n int64
	for {
		m := 0
		var rerr error
		for m < len(buf) && rerr == nil {
			var k int
			k, rerr = src.Read(buf[m:])
			m += k
		}
		if m > 0 {
			w, werr := f.Write(buf[:m])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
		}
		switch {
		case rerr == nil:
			continue
		case rerr == io.EOF: // io.EOF itself, as the io.Reader contract has it, never wrapped
			return n, nil
		}
		return n, rerr
	}
}

// syncDirs fsyncs the directories held by dirs, so entries created or
// renamed in them survive a crash. A directory is opened for that through
// its descriptor ("." beneath it: no name is looked up) as the sidecar
// itself, since fsync needs a readable descriptor and the sandbox user may
// be allowed to write a directory it cannot read.
func syncDirs(dirs []int) error {
	for _, d := range dirs {
		fd, err := unix.Openat(d, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open directory to sync: %w", err)
		}
		err = unix.Fsync(fd)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
	}
	return nil
}

// settle gives a written temp file its owner, mode and mtime.
func settle(f *os.File, meta fileMeta) error {
	// Chown before chmod: chown clears setuid and setgid bits. The user may
	// not give a file away: replacing someone else's file they may write,
	// they end up owning it, as a command would.
	if meta.exists {
		if err := f.Chown(meta.uid, meta.gid); err != nil && !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("chown: %w", err)
		}
	}
	if err := unix.Fchmod(int(f.Fd()), meta.mode); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if !meta.mtime.IsZero() {
		if err := futimes(f, meta.mtime); err != nil {
			return fmt.Errorf("set mtime: %w", err)
		}
	}
	return nil
}

// openFile opens the target, an existing regular file, for reading. p
// names it in messages.
func (v *fsView) openFile(t *target, p string) (*os.File, fs.FileInfo, error) {
	switch {
	case !t.exists:
		return nil, nil, errFileNotFound(p)
	case t.isDir():
		return nil, nil, errIsDir(p)
	}
	var fd int
	err := v.user.do(func() (err error) {
		// O_NONBLOCK: a FIFO swapped in must not block the open.
		fd, err = unix.Openat(t.cur.dir(), t.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil, errFileNotFound(p)
	case errors.Is(err, unix.ELOOP):
		return nil, nil, resolveError(errChanged, p)
	case err != nil:
		return nil, nil, fileError(err, "read", p)
	}
	f := os.NewFile(uintptr(fd), t.name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", p, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, errIsDir(p)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, errNotRegular(p)
	}
	return f, fi, nil
}

// dirEntry is one entry of a directory, not followed if a symlink.
type dirEntry struct {
	name string
	st   unix.Stat_t
}

func (d dirEntry) info() fs.FileInfo { return statInfo(d) }

func (d dirEntry) kind() uint32 { return uint32(d.st.Mode) & unix.S_IFMT }

// readDir lists the directory held by the descriptor dir, sorted by name,
// as the caller's user (call it inside fsUser.do). Entries that vanish
// meanwhile are left out.
func readDir(dir int) ([]dirEntry, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open directory: %w", err)
	}
	f := os.NewFile(uintptr(fd), ".")
	names, err := f.Readdirnames(-1) // names only: os's FileInfo would lstat by path
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read directory: %w", err)
	}
	slices.Sort(names)
	out := make([]dirEntry, 0, len(names))
	for _, name := range names {
		e := dirEntry{name: name}
		if err := unix.Fstatat(dir, name, &e.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// statInfo is an fs.FileInfo of a unix.Stat_t.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return uint32(s.st.Mode)&unix.S_IFMT == unix.S_IFDIR }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch uint32(s.st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// openEachBeneath opens comps below dir one component at a time, none of
// them a symlink; names are single components, so nothing leaves dir
// except by "..", which is refused.
func openEachBeneath(dir int, comps []string, flags int) (int, error) {
	cur := dir
	for i, c := range comps {
		if c == ".." || strings.Contains(c, "/") {
			return -1, errEscapes
		}
		fl := oPath | unix.O_DIRECTORY
		if i == len(comps)-1 {
			fl = flags
		}
		fd, err := unix.Openat(cur, c, fl|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if cur != dir {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	if cur == dir {
		return unix.Openat(dir, ".", flags|unix.O_CLOEXEC, 0)
	}
	return cur, nil
}
