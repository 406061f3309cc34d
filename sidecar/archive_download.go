package sidecar

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
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
	v, err := h.openView()
	if err != nil {
		return err
	}
	defer v.close()
	t, err := v.resolve(p, false)
	if err != nil {
		return err
	}
	defer t.close()
	switch {
	case !t.exists:
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "Directory not found: %s", p)
	case !t.isDir():
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
	if err := writeTar(w, v, t.cur, zipped); err != nil {
		h.abortStream(r, "archive download", err)
	}
	return nil
}

// writeTar writes the tree under the directory at cur to w.
func writeTar(w io.Writer, v *fsView, cur *cursor, zipped bool) error {
	var zw *gzip.Writer
	if zipped {
		zw = gzip.NewWriter(w)
		w = zw
	}
	tw := tar.NewWriter(w)
	err := tarDir(tw, v, cur.sub(), "")
	if err == nil {
		err = tw.Close()
	}
	if err == nil && zw != nil {
		err = zw.Close()
	}
	return err
}

// tarDir adds the entries of the directory at cur, named below prefix, and
// everything under them. It closes cur.
func tarDir(tw *tar.Writer, v *fsView, cur *cursor, prefix string) error {
	defer cur.close()
	var des []dirEntry
	if err := v.user.do(func() (err error) { des, err = readDir(cur.dir()); return err }); err != nil {
		return err
	}
	for _, de := range des {
		if err := addTarEntry(tw, v, cur, prefix+de.name, de); err != nil {
			return err
		}
	}
	return nil
}

func addTarEntry(tw *tar.Writer, v *fsView, cur *cursor, rel string, de dirEntry) error {
	var link string
	switch de.kind() {
	case unix.S_IFLNK:
		if err := v.user.do(func() (err error) { link, err = readlinkat(cur.dir(), de.name); return err }); err != nil {
			return err
		}
	case unix.S_IFDIR, unix.S_IFREG:
	default:
		return nil
	}
	hdr, err := tar.FileInfoHeader(de.info(), link)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uid, hdr.Gid = rel, int(de.st.Uid), int(de.st.Gid)
	if de.kind() == unix.S_IFDIR {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	switch de.kind() {
	case unix.S_IFDIR:
		sub := cur.sub()
		err := v.user.do(func() error {
			fd, err := unix.Openat(cur.dir(), de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				sub.push(fd, de.name)
			}
			return err
		})
		if err != nil {
			return err
		}
		return tarDir(tw, v, sub, hdr.Name)
	case unix.S_IFREG:
		var fd int
		if err := v.user.do(func() (err error) {
			fd, err = unix.Openat(cur.dir(), de.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			return err
		}); err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%s changed while archived", rel)
		}
		_, err = io.CopyN(tw, f, hdr.Size) // exactly what the header announced
		return err
	}
	return nil
}
