package sidecar

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// archiveName validates a tar entry name and returns it clean and relative.
// Absolute names, ".." anywhere and NUL bytes are refused outright rather
// than cleaned into something harmless: an archive carrying them was built
// to escape. "" means the entry is the destination itself ("./").
func archiveName(name string) (string, error) {
	switch {
	case strings.IndexByte(name, 0) >= 0:
		return "", errors.New("contains a NUL byte")
	case path.IsAbs(name):
		return "", errors.New("is absolute")
	case slices.Contains(strings.Split(name, "/"), ".."):
		return "", errors.New(`contains ".."`)
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	return c, nil
}

// archiveHint is the hint of a body that is not a readable tar or tar.gz.
const archiveHint = "send a tar or tar.gz stream (Content-Type application/x-tar or application/gzip), e.g. tar -cz DIR"

// badEntry is the 400 that stops an extraction at entry name.
func badEntry(name, format string, args ...any) error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "archive entry %q %s", name, fmt.Sprintf(format, args...)).
		WithHint("entries extracted before this one stay; fix the archive (relative names without .., links that stay inside the destination) and upload it again")
}

// putArchive extracts a tar or tar.gz request body under the directory
// ?path=, streaming. Entries already extracted stay when a later one is
// refused; the error names the refused entry.
func (h *Handler) putArchive(w http.ResponseWriter, r *http.Request) error {
	p, err := uploadPath(r)
	if err != nil {
		return err
	}
	v, dest, done, err := h.openTarget(p, false)
	if err != nil {
		return err
	}
	defer done()
	if err := dest.writable("write to", p); err != nil {
		return err
	}
	if dest.exists && !dest.isDir() {
		return errNotDirectory(p)
	}
	if !dest.exists {
		dest.missing, dest.name, dest.exists = append(dest.missing, dest.name), "", true
		if err := v.user.do(func() error { return v.makeDirs(dest) }); err != nil {
			return fileError(err, "write to", p)
		}
	}
	x := &extractor{v: v, dest: dest.cur}
	defer x.close()
	br := bufio.NewReader(r.Body)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid archive: %v", err).
				WithHint(archiveHint)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid archive: %v", err).
				WithHint(archiveHint)
		}
		if err := x.entry(hdr, archiveReader{tr}); err != nil {
			return err
		}
	}
	x.finish()
	if err := x.sync(); err != nil {
		return fileError(err, "write to", p)
	}
	return writeJSON(w, http.StatusOK, x.result)
}

// archiveReader turns a broken archive body into a 400, not a 500.
type archiveReader struct{ r io.Reader }

func (a archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid archive: %v", err).
			WithHint(archiveHint)
	}
	return n, err
}

// extractor is the state of one archive upload. Entries are placed beneath
// the destination's descriptor and may not lead out of it, whatever
// symlinks earlier entries (or the agent) planted.
type extractor struct {
	v      *fsView
	dest   *cursor // the destination directory
	dirs   []dirMeta
	result api.ArchiveResult
	// written holds, per filesystem an entry went to (the destination may
	// hold a volume's mount), a descriptor opened before the first write
	// there, to sync it once at the end.
	written map[uint64]int
}

// dirMeta is a directory's mode and mtime, applied once its contents are in:
// writing them would change the mtime, and a read-only mode would stop them.
type dirMeta struct {
	rel   []string // below the destination
	mode  uint32
	mtime time.Time
}

// entryMode keeps permission and sticky bits and drops setuid and setgid:
// an uploaded archive must not plant privileged binaries.
func entryMode(m int64) uint32 {
	return uint32(m) & 0o1777
}

// entry extracts one tar entry.
func (x *extractor) entry(hdr *tar.Header, body io.Reader) error {
	name, err := archiveName(hdr.Name)
	if err != nil {
		return badEntry(hdr.Name, "%v", err)
	}
	if name == "" {
		return nil // "./": the destination itself
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	default:
		return nil // devices, FIFOs and extension headers are not extracted
	}
	dir, base, err := x.place(name)
	if err != nil {
		return err
	}
	defer dir.close()
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(hdr, name, dir, base)
	case tar.TypeReg:
		meta := fileMeta{mode: entryMode(hdr.Mode), mtime: hdr.ModTime}
		n, err := x.v.writeFile(&target{cur: dir, name: base}, name, body, &meta, syncLater)
		if err != nil {
			return err
		}
		x.result.Files++
		x.result.Bytes += n
		return nil
	case tar.TypeSymlink:
		return x.symlink(hdr, name, dir, base)
	}
	return x.hardlink(hdr, name, dir, base)
}

// place resolves the directory entry name goes into: its parent, through
// whatever symlinks earlier entries planted, must lie inside the
// destination, and missing directories are created. A non-directory
// already at the name is removed, so the entry replaces a symlink rather
// than writing through it. The caller closes the cursor.
func (x *extractor) place(name string) (*cursor, string, error) {
	comps := strings.Split(name, "/")
	base := comps[len(comps)-1]
	var dir *cursor
	err := x.v.user.do(func() error {
		w := walker{v: x.v, within: x.dest}
		t, err := w.walk(x.dest.sub(), comps[:len(comps)-1])
		if err != nil {
			return err
		}
		if t.exists && !t.isDir() {
			t.close()
			return errNotDir
		}
		if !t.exists {
			t.missing, t.name = append(t.missing, t.name), ""
			if err := x.v.makeDirs(t); err != nil {
				t.close()
				return err
			}
		}
		dir = t.cur
		if err := x.track(dir.dir()); err != nil {
			dir.close()
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dir.dir(), base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(dir.dir(), base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				dir.close()
				return fmt.Errorf("replace %s: %w", name, err)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errEscapes):
		return nil, "", badEntry(name, "escapes the destination directory")
	case errors.Is(err, errDangling), errors.Is(err, errNotDir), errors.Is(err, errLoop), errors.Is(err, errChanged):
		return nil, "", badEntry(name, "cannot be placed: %v", err)
	case err != nil:
		return nil, "", fileError(err, "write to", name)
	}
	return dir, base, nil
}

func (x *extractor) dir(hdr *tar.Header, name string, dir *cursor, base string) error {
	err := x.v.user.do(func() error {
		err := unix.Mkdirat(dir.dir(), base, 0o755)
		if errors.Is(err, unix.EEXIST) {
			return nil // place left only a directory there
		}
		return err
	})
	if err != nil {
		return fileError(err, "create directory", name)
	}
	rel := slices.Concat(dir.names[len(x.dest.names):], []string{base})
	x.dirs = append(x.dirs, dirMeta{rel: rel, mode: entryMode(hdr.Mode), mtime: hdr.ModTime})
	return nil
}

// symlink creates a symlink whose target stays inside the typed roots. An
// absolute target is read as a sandbox path, which it is inside the jail.
// The check is for the archive's author: the sidecar's own resolution never
// follows a link out of the roots anyway.
func (x *extractor) symlink(hdr *tar.Header, name string, dir *cursor, base string) error {
	target := hdr.Linkname
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return badEntry(name, "is a symlink without a valid target")
	}
	err := x.v.user.do(func() error {
		if !x.v.linkInside(dir, target) {
			return badEntry(name, "is a symlink to %q, outside the allowed roots", target)
		}
		if err := unix.Symlinkat(target, dir.dir(), base); err != nil {
			return err
		}
		ts := []unix.Timespec{unix.NsecToTimespec(hdr.ModTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
		_ = unix.UtimesNanoAt(dir.dir(), base, ts, unix.AT_SYMLINK_NOFOLLOW) // cosmetic; some filesystems refuse
		return nil
	})
	if err != nil {
		return fileError(err, "create symlink", name)
	}
	return nil
}

// linkInside reports whether a symlink in the directory at cur reading
// target would lead inside the typed roots (or nowhere yet: a name still
// missing, taken lexically from there). Call it as the sandbox user.
func (v *fsView) linkInside(cur *cursor, target string) bool {
	w := walker{v: v, probe: true}
	start, comps := cur.sub(), splitPath(target)
	if path.IsAbs(target) {
		start.close()
		i := v.topOfVirtual(comps)
		if i < 0 {
			return false
		}
		next, err := v.cursorAt(i)
		if err != nil {
			return false
		}
		start, comps = next, comps[len(splitPath(v.tops[i].virt)):]
	}
	t, err := w.walk(start, comps)
	if err != nil {
		return false
	}
	defer t.close()
	if t.exists {
		return true
	}
	return v.lexicallyInside(path.Join(t.cur.host(), path.Join(t.missing...), t.name))
}

// topOfVirtual returns the writable or readable (not list-only) top whose
// virtual path is the longest prefix of comps, or -1.
func (v *fsView) topOfVirtual(comps []string) int {
	best, bestLen := -1, -1
	for i, t := range v.tops {
		tc := splitPath(t.virt)
		if !t.listOnly && len(tc) <= len(comps) && slices.Equal(comps[:len(tc)], tc) && len(tc) > bestLen {
			best, bestLen = i, len(tc)
		}
	}
	return best
}

// lexicallyInside reports whether the clean host path p lies in a root
// that is not list-only.
func (v *fsView) lexicallyInside(p string) bool {
	for _, t := range v.tops {
		if !t.listOnly && within(t.real, p) {
			return true
		}
	}
	return false
}

// hardlink links to a regular file extracted earlier under the destination.
func (x *extractor) hardlink(hdr *tar.Header, name string, dir *cursor, base string) error {
	src, err := archiveName(hdr.Linkname)
	if err != nil || src == "" {
		return badEntry(name, "is a hard link to an invalid name %q", hdr.Linkname)
	}
	err = x.v.user.do(func() error {
		w := walker{v: x.v, within: x.dest}
		t, err := w.walk(x.dest.sub(), strings.Split(src, "/"))
		if err != nil {
			return badEntry(name, "is a hard link to %q, outside the destination directory", hdr.Linkname)
		}
		defer t.close()
		if !t.exists || t.mode != unix.S_IFREG {
			return badEntry(name, "is a hard link to %q, which is not a regular file extracted earlier", hdr.Linkname)
		}
		return unix.Linkat(t.cur.dir(), t.name, dir.dir(), base, 0)
	})
	if err != nil {
		return fileError(err, "create hard link", name)
	}
	x.result.Files++
	return nil
}

// track remembers the filesystem of the directory dir for sync. The
// descriptor is opened before anything is written there: syncfs reports
// the write-back errors a filesystem met since the descriptor was opened.
// It is opened as the sidecar ("." beneath a held directory: no name is
// looked up), since the sandbox user need not be able to read it.
func (x *extractor) track(dir int) error {
	var st unix.Stat_t
	if err := unix.Fstat(dir, &st); err != nil {
		return fmt.Errorf("stat directory: %w", err)
	}
	if _, ok := x.written[uint64(st.Dev)]; ok {
		return nil
	}
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open directory to sync: %w", err)
	}
	if x.written == nil {
		x.written = map[uint64]int{}
	}
	x.written[uint64(st.Dev)] = fd
	return nil
}

// sync makes everything the extraction wrote durable before it is
// acknowledged: one syncfs per filesystem written to flushes every file
// and directory entry, and reports what failed to reach the disk.
func (x *extractor) sync() error {
	for _, fd := range x.written {
		if err := syncFS(fd); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
	}
	return nil
}

func (x *extractor) close() {
	for _, fd := range x.written {
		unix.Close(fd)
	}
}

// finish gives directories their modes and mtimes, deepest first, so
// setting a parent's mtime comes after every change inside it. A directory
// replaced by a later entry, or reached only through a symlink now, is
// left as it is.
func (x *extractor) finish() {
	_ = x.v.user.do(func() error {
		for i := len(x.dirs) - 1; i >= 0; i-- {
			d := x.dirs[i]
			fd, err := openBeneath(x.dest.dir(), d.rel, unix.O_RDONLY|unix.O_DIRECTORY)
			if err != nil {
				continue
			}
			f := os.NewFile(uintptr(fd), path.Join(d.rel...))
			_ = unix.Fchmod(fd, d.mode)
			_ = futimes(f, d.mtime)
			f.Close()
		}
		return nil
	})
}
