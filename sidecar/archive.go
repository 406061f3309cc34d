package sidecar

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
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

// badEntry is the 400 that stops an extraction at entry name.
func badEntry(name, format string, args ...any) error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "archive entry %q %s", name, fmt.Sprintf(format, args...))
}

// putArchive extracts a tar or tar.gz request body under the directory
// ?path=, streaming. Entries already extracted stay when a later one is
// refused; the error names the refused entry.
func (h *Handler) putArchive(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	pm := h.paths()
	dest, err := pm.resolve(p, false)
	if err != nil {
		return err
	}
	if err := dest.writable("write to", p); err != nil {
		return err
	}
	x := &extractor{pm: pm, rs: pm.real(), dest: dest.host, owner: h.newOwner()}
	if err := x.rs.mkdirAll(dest.host, x.owner); err != nil {
		return err
	}
	br := bufio.NewReader(r.Body)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid archive: %v", err)
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
			return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid archive: %v", err)
		}
		if err := x.entry(hdr, archiveReader{tr}); err != nil {
			return err
		}
	}
	x.finish()
	return writeJSON(w, http.StatusOK, x.result)
}

// archiveReader turns a broken archive body into a 400, not a 500.
type archiveReader struct{ r io.Reader }

func (a archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid archive: %v", err)
	}
	return n, err
}

// extractor is the state of one archive upload.
type extractor struct {
	pm     pathMap
	rs     realRoots
	dest   string // real host path of the destination directory
	owner  owner
	dirs   []dirMeta
	result api.ArchiveResult
}

// dirMeta is a directory's mode and mtime, applied once its contents are in:
// writing them would change the mtime, and a read-only mode would stop them.
type dirMeta struct {
	host  string
	mode  fs.FileMode
	mtime time.Time
}

// entryMode keeps permission and sticky bits and drops setuid and setgid:
// an uploaded archive must not plant privileged binaries.
func entryMode(m int64) fs.FileMode {
	mode := fs.FileMode(m) & fs.ModePerm
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
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
	host, err := x.place(name)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(hdr, name, host)
	case tar.TypeReg:
		meta := fileMeta{mode: entryMode(hdr.Mode), owner: x.owner, mtime: hdr.ModTime}
		n, err := x.rs.writeFile(host, body, meta)
		if err != nil {
			return err
		}
		x.result.Files++
		x.result.Bytes += n
		return nil
	case tar.TypeSymlink:
		return x.symlink(hdr, name, host)
	}
	return x.hardlink(hdr, name, host)
}

// place resolves where entry name goes: its parent is resolved through
// whatever symlinks earlier entries planted and must still lie inside the
// destination. A non-directory already there is removed, so the entry
// replaces a symlink rather than writing through it.
func (x *extractor) place(name string) (string, error) {
	parent, err := realPath(filepath.Join(x.dest, filepath.FromSlash(path.Dir(name))))
	if err != nil {
		return "", badEntry(name, "cannot be placed: %v", err)
	}
	if !within(x.dest, parent) {
		return "", badEntry(name, "escapes the destination directory")
	}
	if err := x.rs.mkdirAll(parent, x.owner); err != nil {
		return "", err
	}
	host := filepath.Join(parent, path.Base(name))
	if fi, err := os.Lstat(host); err == nil && !fi.IsDir() {
		if err := os.Remove(host); err != nil {
			return "", fmt.Errorf("replace %s: %w", name, err)
		}
	}
	return host, nil
}

func (x *extractor) dir(hdr *tar.Header, name, host string) error {
	err := os.Mkdir(host, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create directory %s: %w", name, err)
	}
	if err := x.rs.recheck(host); err != nil {
		return err
	}
	if err := x.owner.lchown(host); err != nil {
		return fmt.Errorf("chown %s: %w", name, err)
	}
	x.dirs = append(x.dirs, dirMeta{host: host, mode: entryMode(hdr.Mode), mtime: hdr.ModTime})
	return nil
}

// symlink creates a symlink whose target stays inside the typed roots. An
// absolute target is read as a sandbox path, which it is inside the jail.
func (x *extractor) symlink(hdr *tar.Header, name, host string) error {
	target := hdr.Linkname
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return badEntry(name, "is a symlink without a valid target")
	}
	if !x.targetInside(target, filepath.Dir(host)) {
		return badEntry(name, "is a symlink to %q, outside the allowed roots", target)
	}
	if err := os.Symlink(target, host); err != nil {
		return fmt.Errorf("create symlink %s: %w", name, err)
	}
	if err := x.owner.lchown(host); err != nil {
		return fmt.Errorf("chown %s: %w", name, err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(hdr.ModTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, host, ts, unix.AT_SYMLINK_NOFOLLOW) // cosmetic; some filesystems refuse
	return nil
}

// targetInside reports whether a symlink in dir pointing at target would
// resolve inside the typed roots.
func (x *extractor) targetInside(target, dir string) bool {
	start := dir
	if path.IsAbs(target) {
		v := path.Clean(target)
		host := ""
		for _, r := range x.pm.roots {
			if rest, ok := strings.CutPrefix(v, r.virt); ok && !r.listOnly && (rest == "" || rest[0] == '/') {
				host = r.host + rest
				break
			}
		}
		if host == "" {
			return false
		}
		start, target = "/", host
	}
	real, err := followTarget(start, target)
	if err != nil {
		return false
	}
	_, ok := x.rs.locate(real, false)
	return ok
}

// maxLinkHops bounds symlinks followed in one resolution, as the kernel's
// ELOOP does.
const maxLinkHops = 40

// followTarget resolves target from the real directory start the way the
// kernel will: component by component, following symlinks before applying
// a later "..", which a lexical clean would apply first ("up/../x" with up
// a link to ".." is two levels up, not x). From the first missing component
// on, the rest is applied lexically: nothing there can be a link yet.
func followTarget(start, target string) (string, error) {
	cur, comps, hops := start, strings.Split(target, "/"), 0
	for i := 0; i < len(comps); i++ {
		switch c := comps[i]; c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comps[i])
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, comps[i+1:]...)...), nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", errors.New("too many levels of symbolic links")
		}
		link, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(link) {
			cur = "/"
		}
		comps, i = append(strings.Split(link, "/"), comps[i+1:]...), -1
	}
	return cur, nil
}

// hardlink links to a regular file extracted earlier under the destination.
func (x *extractor) hardlink(hdr *tar.Header, name, host string) error {
	src, err := archiveName(hdr.Linkname)
	if err != nil || src == "" {
		return badEntry(name, "is a hard link to an invalid name %q", hdr.Linkname)
	}
	real, err := realPath(filepath.Join(x.dest, filepath.FromSlash(src)))
	if err != nil || !within(x.dest, real) {
		return badEntry(name, "is a hard link to %q, outside the destination directory", hdr.Linkname)
	}
	if fi, err := os.Lstat(real); err != nil || !fi.Mode().IsRegular() {
		return badEntry(name, "is a hard link to %q, which is not a regular file extracted earlier", hdr.Linkname)
	}
	if err := os.Link(real, host); err != nil {
		return fmt.Errorf("create hard link %s: %w", name, err)
	}
	x.result.Files++
	return nil
}

// finish gives directories their modes and mtimes, deepest first, so
// setting a parent's mtime comes after every change inside it.
func (x *extractor) finish() {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		if fi, err := os.Lstat(d.host); err != nil || !fi.IsDir() {
			continue // replaced by a later entry
		}
		_ = os.Chmod(d.host, d.mode)
		_ = os.Chtimes(d.host, d.mtime, d.mtime)
	}
}

// getArchive streams the directory ?path= as a tar (?gzip=1: tar.gz) with
// names relative to it. Symlinks are stored as symlinks, never followed;
// FIFOs, sockets and devices are left out.
func (h *Handler) getArchive(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	res, err := h.paths().resolve(p, false)
	if err != nil {
		return err
	}
	fi, err := os.Stat(res.host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "Directory not found: %s", p)
	case err != nil:
		return fmt.Errorf("stat: %w", err)
	case !fi.IsDir():
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a directory: %s", p).
			WithHint("download a file with GET /files/raw")
	}
	gz := r.URL.Query().Get("gzip")
	zipped := gz == "1" || gz == "true"
	w.Header().Set("Content-Type", "application/x-tar")
	if zipped {
		w.Header().Set("Content-Type", "application/gzip")
	}
	w.WriteHeader(http.StatusOK)
	if err := writeTar(w, res.host, zipped); err != nil {
		h.abortStream(r, "archive download", err)
	}
	return nil
}

// writeTar writes the tree under dir to w.
func writeTar(w io.Writer, dir string, zipped bool) error {
	var zw *gzip.Writer
	if zipped {
		zw = gzip.NewWriter(w)
		w = zw
	}
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		return addTarEntry(tw, p, filepath.ToSlash(strings.TrimPrefix(p, dir+"/")), d)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	return err
}

func addTarEntry(tw *tar.Writer, host, rel string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return err
	}
	var link string
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if link, err = os.Readlink(host); err != nil {
			return err
		}
	case !fi.IsDir() && !fi.Mode().IsRegular():
		return nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uname, hdr.Gname = rel, "", ""
	if fi.IsDir() {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(host, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyN(tw, f, hdr.Size) // exactly what the header announced
	return err
}
