package sidecar

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// getArchive streams the directory ?path= as a tar (?gzip=1: tar.gz) with
// names relative to it. Symlinks are stored as symlinks, never followed;
// FIFOs, sockets and devices are left out.
func (h *Handler) getArchive(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	v, t, done, err := h.openTarget(p, false)
	if err != nil {
		return err
	}
	defer done()
	switch {
	case !t.exists:
		return errDirNotFound(p)
	case !t.isDir():
		return notDirectory(p, "copy a file without -r: 'boxkite files cp ID:PATH DST'")
	}
	gz := r.URL.Query().Get("gzip")
	zipped := gz == "1" || gz == "true"
	one, err := oneFileSystem(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-tar")
	if zipped {
		w.Header().Set("Content-Type", "application/gzip")
	}
	w.WriteHeader(http.StatusOK)
	if err := writeTar(w, v, t.cur, zipped, one); err != nil {
		h.abortStream(r, "archive download", err)
	}
	return nil
}

// oneFileSystem reads ?one_file_system=: true leaves out the directories
// another filesystem is mounted on (as tar's --one-file-system), which
// the kube driver's snapshots and pauses ask for, so that a volume
// mounted below /workspace is neither copied into them nor, at a resume,
// written back over what other sandboxes wrote to it meanwhile.
func oneFileSystem(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("one_file_system"); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "one_file_system=%q is not true or false", v).
			WithHint("omit it to archive every directory below path, mounts too")
	}
}

// writeTar writes the tree under the directory at cur to w; with one,
// the directories of other mounts below it are left out.
func writeTar(w io.Writer, v *fsView, cur *cursor, zipped, one bool) error {
	var zw *gzip.Writer
	if zipped {
		zw = gzip.NewWriter(w)
		w = zw
	}
	a := tarWriter{tw: tar.NewWriter(w), v: v, buf: make([]byte, readChunk)}
	if one {
		m, err := mountOf(cur.dir())
		if err != nil {
			return fmt.Errorf("archive one filesystem: %w", err)
		}
		a.mnt = m
	}
	if v.bufs != nil {
		bp := v.bufs.Get().(*[]byte)
		defer v.bufs.Put(bp)
		a.buf = *bp
	}
	err := a.dir(cur.sub(), "")
	if err == nil {
		err = a.tw.Close()
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	return err
}

// tarWriter adds a tree to an archive through one read buffer.
type tarWriter struct {
	tw  *tar.Writer
	v   *fsView
	buf []byte
	mnt string // set: the mount the archive keeps to (one_file_system, mountOf)
}

// dir adds the entries of the directory at cur, named below prefix, and
// everything under them. It closes cur.
func (a *tarWriter) dir(cur *cursor, prefix string) error {
	defer cur.close()
	des, err := a.list(cur)
	if err != nil {
		return err
	}
	return a.entries(cur, prefix, des)
}

// list reads the entries of the directory at cur.
func (a *tarWriter) list(cur *cursor) ([]dirEntry, error) {
	var des []dirEntry
	err := a.v.user.do(func() (err error) { des, err = readDir(cur.dir()); return err })
	return des, err
}

// entries adds des, the entries of the directory at cur, named below
// prefix, and everything under them.
func (a *tarWriter) entries(cur *cursor, prefix string, des []dirEntry) error {
	for _, de := range des {
		if err := a.entry(cur, prefix+de.name, de); err != nil {
			return err
		}
	}
	return nil
}

// goneMeanwhile reports whether err says an entry listed a moment ago is
// no longer what the listing saw: removed (ENOENT), swapped for a link
// (ELOOP, as O_NOFOLLOW opens it), a directory swapped for a file
// (ENOTDIR), a link for something else (EINVAL from readlink). The
// archive leaves it out, as tar does a file removed before it was read,
// rather than cutting the download short.
func goneMeanwhile(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) ||
		errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EINVAL)
}

// entry adds the entry de of the directory at cur as rel. Each entry is
// opened (a directory listed) before its header is written, and a file's
// header is made from its open descriptor, so the header describes the
// file whose bytes follow: one removed, or renamed over (an editor's
// atomic save), after the listing left the archive broken mid-stream.
func (a *tarWriter) entry(cur *cursor, rel string, de dirEntry) error {
	switch de.kind() {
	case unix.S_IFLNK:
		var link string
		err := a.v.user.do(func() (err error) { link, err = readlinkat(cur.dir(), de.name); return err })
		if goneMeanwhile(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return a.header(de.info(), link, rel)
	case unix.S_IFDIR:
		sub := cur.sub()
		err := a.v.user.do(func() error {
			fd, err := unix.Openat(cur.dir(), de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				sub.push(fd, de.name)
			}
			return err
		})
		defer sub.close()
		if err == nil && a.mnt != "" {
			var m string
			if m, err = mountOf(sub.dir()); err == nil && m != a.mnt {
				return nil // another filesystem's mount point: left out
			}
		}
		var des []dirEntry
		if err == nil {
			// Listed before its header: a directory removed after
			// its open reads as ENOENT, and is left out too.
			des, err = a.list(sub)
		}
		if goneMeanwhile(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := a.header(de.info(), "", rel+"/"); err != nil {
			return err
		}
		return a.entries(sub, rel+"/", des)
	case unix.S_IFREG:
		return a.file(cur, rel, de.name)
	}
	return nil // FIFOs, sockets and devices are left out
}

// file adds the regular file name of the directory at cur as rel: a
// small one as one read saw it, a larger one with the size it has after
// its first read (headRead).
func (a *tarWriter) file(cur *cursor, rel, name string) error {
	var fd int
	err := a.v.user.do(func() (err error) {
		fd, err = unix.Openat(cur.dir(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	if goneMeanwhile(err) {
		return nil
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // swapped for a FIFO or a device meanwhile: left out
	}
	n, size, err := headRead(f, a.buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	st.Size = size
	if err := a.header(statInfo{name, st}, "", rel); err != nil {
		return err
	}
	return sendSized(a.tw, f, a.buf, n, size)
}

// header writes the header of the entry fi as rel.
func (a *tarWriter) header(fi fs.FileInfo, link, rel string) error {
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	var uid, gid int
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		uid, gid = int(st.Uid), int(st.Gid)
	}
	hdr.Name, hdr.Uid, hdr.Gid = rel, uid, gid
	return a.tw.WriteHeader(hdr)
}
