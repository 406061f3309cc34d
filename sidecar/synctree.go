package sidecar

import (
	"archive/tar"
	"fmt"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// The storage sync's reads (docs/storage.md). The control plane copies a
// workspace to object storage from outside the sandbox, through these two
// routes, which never follow a link: the tree reports links as links, and
// a bundle reaches each file one O_NOFOLLOW component at a time from the
// tree's root, so a link planted anywhere on the way is skipped, not
// followed, whatever the agent swaps meanwhile.

// maxTreeEntries caps one GET /files/tree.
const maxTreeEntries = 200000

// syncRoutes registers the storage sync's routes.
func (h *Handler) syncRoutes(m *http.ServeMux) {
	h.handle(m, "GET /files/tree", h.tree)
	h.handle(m, "POST /files/bundle", h.bundle)
}

// tree lists the regular files and links under ?path=, skipping
// directories named by ?skip= at any depth. With ?since= (a token, or
// empty the first time) on the workspace, the change journal answers
// (journal.go): only what changed since, or a full walk and a token.
func (h *Handler) tree(w http.ResponseWriter, r *http.Request) error {
	p, err := queryPath(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	skip := q["skip"]
	v, t, done, err := h.openTarget(p, false)
	if err != nil {
		return err
	}
	defer done()
	out := api.TreeResult{Entries: []api.TreeEntry{}}
	if !t.exists {
		return writeJSON(w, http.StatusOK, out)
	}
	if !t.isDir() {
		return errNotDirectory(p)
	}
	// since and max_dirs, like skip, are the host's own: GET /files/tree
	// is not proxied to the public API.
	if since, maxDirs := q["since"], q["max_dirs"]; len(since) > 0 && t.virt() == vWorkspace {
		out, err := h.syncJournal().answer(v, t.cur, since[0], skip, journalMaxDirs(append(maxDirs, "")[0]))
		if err != nil {
			return fileError(err, "read", p)
		}
		return writeJSON(w, http.StatusOK, out)
	}
	if err := walkTree(v, t.cur.sub(), "", skip, &out, nil); err != nil {
		return fileError(err, "read", p)
	}
	return writeJSON(w, http.StatusOK, out)
}

// walkTree adds the entries under the directory at cur, named below
// prefix. It closes cur. onDir, when set, is told of each directory it
// enters (its path without the trailing slash and a descriptor), as the
// sandbox user.
func walkTree(v *fsView, cur *cursor, prefix string, skip []string, out *api.TreeResult, onDir func(rel string, fd int)) error {
	defer cur.close()
	var des []dirEntry
	if err := v.user.do(func() (err error) { des, err = readDir(cur.dir()); return err }); err != nil {
		return err
	}
	for _, de := range des {
		if len(out.Entries) >= maxTreeEntries {
			out.Truncated = true
			return nil
		}
		rel := prefix + de.name
		mtime := de.st.Mtim.Nano()
		switch de.kind() {
		case unix.S_IFLNK:
			out.Entries = append(out.Entries, api.TreeEntry{Path: rel, Kind: "symlink", ModifiedNS: mtime})
		case unix.S_IFREG:
			out.Entries = append(out.Entries, api.TreeEntry{Path: rel, Kind: "file", Size: de.st.Size, ModifiedNS: mtime})
		case unix.S_IFDIR:
			if slices.Contains(skip, de.name) {
				continue
			}
			sub := cur.sub()
			err := v.user.do(func() error {
				fd, err := unix.Openat(cur.dir(), de.name, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				sub.push(fd, de.name)
				if onDir != nil {
					onDir(rel, fd)
				}
				return nil
			})
			if err != nil {
				continue // gone or swapped for a link meanwhile
			}
			if err := walkTree(v, sub, rel+"/", skip, out, onDir); err != nil {
				return err
			}
		}
	}
	return nil
}

// bundle answers a tar of the regular files the request names under its
// root. A file that is missing, is no longer regular or sits behind a link
// is left out; a small one is given as one read saw it, and a larger one
// that shrinks below its size at its first read cuts the stream.
func (h *Handler) bundle(w http.ResponseWriter, r *http.Request) error {
	var req api.BundleRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	for _, p := range req.Paths {
		if !validRel(p) {
			return api.Invalid("paths", fmt.Sprintf("%q is not a clean relative path", p), "name files relative to root, without . or .. components")
		}
	}
	v, t, done, err := h.openTarget(req.Root, false)
	if err != nil {
		return err
	}
	defer done()
	if !t.exists || !t.isDir() {
		return errDirNotFound(req.Root)
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	tw := tar.NewWriter(w)
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	for _, p := range req.Paths {
		if err := bundleFile(tw, v, t.cur, p, *bp); err != nil {
			h.abortStream(r, "bundle", err)
		}
	}
	if err := tw.Close(); err != nil {
		h.abortStream(r, "bundle", err)
	}
	return nil
}

// validRel reports whether p is a clean relative path: no empty, "." or
// ".." component, no NUL.
func validRel(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." || c == "." {
			return false
		}
	}
	return true
}

// bundleFile adds the regular file at rel below root, reached one
// O_NOFOLLOW component at a time; anything else is left out. buf is the
// read buffer (readChunk bytes).
func bundleFile(tw *tar.Writer, v *fsView, root *cursor, rel string, buf []byte) error {
	comps := strings.Split(rel, "/")
	var f *os.File
	err := v.user.do(func() error {
		dir := root.dir()
		var opened []int
		defer func() {
			for _, fd := range opened {
				unix.Close(fd)
			}
		}()
		for _, c := range comps[:len(comps)-1] {
			fd, err := unix.Openat(dir, c, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			opened = append(opened, fd)
			dir = fd
		}
		fd, err := unix.Openat(dir, comps[len(comps)-1], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f = os.NewFile(uintptr(fd), rel)
		return nil
	})
	if err != nil {
		return nil // missing, or a link (ELOOP, ENOTDIR): left out
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil
	}
	// The size is what headRead gives: a small file rewritten meanwhile
	// (`echo $i > n`) is stored as one read saw it, where announcing the
	// stat's size and reading fewer bytes cut the bundle and failed the
	// whole flush. The modification time is the one from before the read,
	// so a file rewritten after it is newer in the next tree and is
	// stored again.
	n, size, err := headRead(f, buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	// PAX keeps the modification time to the nanosecond, as the tree
	// reports it, so the control plane can tell which version it stored.
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: rel, Size: size, Mode: int64(fi.Mode().Perm()),
		ModTime: time.Unix(0, st.Mtim.Nano()), Format: tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	return sendSized(tw, f, buf, n, size) // exactly what the header announced
}
