package sidecar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// owner is who files the sidecar creates belong to.
type owner struct {
	uid, gid int
	set      bool // false: leave them to the sidecar's own user
}

// newOwner returns the sandbox user when commands run as it directly. With a
// nested user namespace commands map back to the sidecar's own ids, so the
// sidecar's files are already theirs.
func (h *Handler) newOwner() owner {
	if ra := h.opts.RunAs; ra != nil && !ra.NestedUserNS {
		return owner{uid: ra.UID, gid: ra.GID, set: true}
	}
	return owner{}
}

func (o owner) lchown(p string) error {
	if !o.set {
		return nil
	}
	return os.Lchown(p, o.uid, o.gid)
}

// fileMeta is what an overwrite keeps of the file it replaces.
type fileMeta struct {
	mode   fs.FileMode
	owner  owner
	exists bool
	mtime  time.Time // zero: now
}

// metaOf stats an existing file so replacing it keeps its mode and owner;
// a missing file gets 0644 and the sandbox user. p names it in messages.
func (h *Handler) metaOf(host, p string) (fileMeta, error) {
	fi, err := os.Lstat(host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileMeta{mode: 0o644, owner: h.newOwner()}, nil
	case err != nil:
		return fileMeta{}, err
	case fi.IsDir():
		return fileMeta{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p)
	case !fi.Mode().IsRegular():
		return fileMeta{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a regular file: %s", p)
	}
	m := fileMeta{mode: fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid), exists: true}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		m.owner = owner{uid: int(st.Uid), gid: int(st.Gid), set: int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()}
	}
	return m, nil
}

// mkdirAll creates the missing directories of the real path dir, each owned
// by o, and checks that no symlink crept into it while doing so.
func (rs realRoots) mkdirAll(dir string, o owner) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err == nil {
			if !fi.IsDir() {
				return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a directory: %s", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || d == "/" {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := rs.recheck(filepath.Dir(d)); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create directory: %w", err)
		}
		if err := o.lchown(d); err != nil {
			return fmt.Errorf("chown directory: %w", err)
		}
	}
	return rs.recheck(dir)
}

// tempPattern names the temp files writeFile renames into place.
const tempPattern = ".boxkite-*.tmp"

// isTemp reports whether a file name is one of writeFile's temp files,
// which /watch leaves out: they are how the sidecar writes, not changes.
func isTemp(name string) bool {
	ok, _ := path.Match(tempPattern, name)
	return ok
}

// writeFile replaces the real path host with what src yields, atomically: a
// temp file in the same directory is written, given meta's mode and owner,
// and renamed over host after its directory is re-validated. It returns the bytes
// written. Parents are created.
func (rs realRoots) writeFile(host string, src io.Reader, meta fileMeta) (int64, error) {
	dir := filepath.Dir(host)
	if err := rs.mkdirAll(dir, meta.owner); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, tempPattern)
	if err != nil {
		return 0, fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	n, err := writeTemp(f, src, meta)
	if err == nil && !meta.mtime.IsZero() {
		err = os.Chtimes(tmp, meta.mtime, meta.mtime) // tmp is ours until renamed
	}
	if err == nil {
		// Only the directory can redirect the rename: rename replaces a
		// symlink at host itself rather than following it.
		err = rs.recheck(dir)
	}
	if err == nil {
		err = os.Rename(tmp, host)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	return n, nil
}

func writeTemp(f *os.File, src io.Reader, meta fileMeta) (int64, error) {
	n, err := io.Copy(f, src)
	if err != nil {
		f.Close()
		return n, fmt.Errorf("write file: %w", err)
	}
	// Chown before chmod: chown clears setuid and setgid bits.
	if meta.owner.set {
		if err := f.Chown(meta.owner.uid, meta.owner.gid); err != nil && !(meta.exists && errors.Is(err, fs.ErrPermission)) {
			f.Close()
			return n, fmt.Errorf("chown file: %w", err) // an overwrite we may not give away keeps our owner
		}
	}
	if err := f.Chmod(meta.mode); err != nil {
		f.Close()
		return n, fmt.Errorf("chmod file: %w", err)
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("write file: %w", err)
	}
	return n, nil
}

// openRegular opens the real path host for reading after re-validating it,
// without following a symlink swapped in as its last element and without
// blocking on a FIFO. Anything but a regular file is refused; p names the
// path in messages.
func (rs realRoots) openRegular(host, p string) (*os.File, fs.FileInfo, error) {
	if err := rs.recheck(host); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(host, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "File not found: %s", p)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat file: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a regular file: %s", p)
	}
	return f, fi, nil
}
