package sidecar

import (
	"errors"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// A request path is resolved once, one component at a time, beneath the
// descriptor of its typed root. Every directory is opened relative to the
// one before it with O_NOFOLLOW; a symlink is read and followed here, not by
// the kernel, and only while it leads to places inside the roots; ".." pops
// back to a directory already held and never climbs above a root's
// descriptor. The routes then work on the descriptors and never look a
// path up again, so an agent that swaps a directory for a symlink between
// two system calls (renameat2 RENAME_EXCHANGE in a loop) can make a
// request fail but never make it act outside the roots.
//
// Why not os.Root or openat2(RESOLVE_BENEATH) alone: a symlink from the
// workspace to /tmp or to the outputs is legitimate (the reference follows
// it), and both refuse every link that leaves the one directory they start
// from. The walker does what RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS does for
// one root and crosses into another typed root only through that root's own
// descriptor, opened from its configured path (the jail's mount points,
// which agents cannot move). Descriptors held stay inside their root's mount
// whatever an agent renames meanwhile: rename never crosses a mount.

// maxLinkHops bounds symlinks followed in one resolution, as the kernel's
// ELOOP does.
const maxLinkHops = 40

// maxRetries bounds how often one component is looked at again after it
// changed between two system calls (an agent swapping it on purpose).
const maxRetries = 8

// Resolution failures, turned into answers by resolveError.
var (
	errOutside  = errors.New("outside the allowed roots")
	errDangling = errors.New("dangling symlink")
	errEscapes  = errors.New("escapes the destination directory")
	errChanged  = errors.New("path changed while in use")
	errNotDir   = errors.New("not a directory")
	errLoop     = errors.New("too many levels of symbolic links")
)

// resolve resolves the request path p beneath the typed roots, as the
// sandbox user. listing also admits /mnt and /mnt/user-data themselves,
// for ls and watch. The caller closes the target.
func (v *fsView) resolve(p string, listing bool) (*target, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path: contains a NUL byte").
			WithHint("remove the NUL byte: no file name can hold one")
	}
	vp := virtual(p)
	best, rest := -1, ""
	for i, t := range v.tops {
		r, ok := strings.CutPrefix(vp, t.virt)
		if !ok || (r != "" && r[0] != '/') || (best >= 0 && len(t.virt) <= len(v.tops[best].virt)) {
			continue
		}
		best, rest = i, r
	}
	if best < 0 || (v.tops[best].listOnly && (rest != "" || !listing)) {
		return nil, outsideRoots(p)
	}
	var t *target
	err := v.user.do(func() error {
		cur, err := v.cursorAt(best)
		if err != nil {
			return err
		}
		w := walker{v: v, listing: listing}
		t, err = w.walk(cur, splitPath(rest))
		return err
	})
	if err != nil {
		return nil, resolveError(err, p)
	}
	return t, nil
}

// resolveError turns a failed resolution of the request path p into an answer.
func resolveError(err error, p string) error {
	switch {
	case errors.Is(err, errOutside):
		return outsideRoots(p)
	case errors.Is(err, errChanged):
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path changed while in use: %s", p).
			WithHint("something in the sandbox is renaming the path's directories; retry when it stops")
	case errors.Is(err, unix.ENAMETOOLONG):
		// It had the hint about symlinks and files below, which does
		// not fit a name too long.
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path %s: %v", p, err).
			WithHint("each name in a path is at most 255 bytes; use a shorter one")
	case errors.Is(err, errDangling), errors.Is(err, errNotDir), errors.Is(err, errLoop):
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path %s: %v", p, err).
			WithHint("a component of the path is a dangling or looping symlink, or a file where a directory must be; check it with exec (ls -l)")
	}
	return fileError(err, "reach", p)
}

func outsideRoots(p string) error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Invalid path outside allowed roots: %s", p).
		WithHint("use a path under /workspace (relative paths start there), /tmp, /mnt/user-data/outputs, /mnt/user-data/uploads or /mnt/skills")
}

// splitPath splits a slash-separated path into its components, dropping
// empty ones and ".", which change nothing.
func splitPath(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// walker resolves path components from a cursor.
type walker struct {
	v       *fsView
	listing bool    // the list-only roots themselves are a result
	within  *cursor // when set, nothing may lead out of this directory (archive entries)
	probe   bool    // a missing component named by a symlink is no error (checking a link's target)
}

// walk resolves comps from cur, which it takes over: on error cur is
// closed, else it is the result's.
func (w *walker) walk(cur *cursor, comps []string) (t *target, err error) {
	defer func() {
		if err == nil {
			err = w.admit(t)
		}
		if err != nil {
			cur.close()
		}
	}()
	queue := comps
	fromLink, hops, retries := 0, 0, 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		linked := fromLink > 0
		if linked {
			fromLink--
		}
		if c == ".." {
			if w.up(cur) {
				continue
			}
			if w.within != nil {
				return nil, errEscapes
			}
			// At a top: on from its parent on the host, which is another
			// root (the outputs' parent, /mnt/user-data, is list-only), a
			// directory above the roots, or outside.
			parent := splitPath(filepath.Dir(cur.topRoot().real))
			queue, fromLink = append(parent, queue...), fromLink+len(parent)
			var err error
			if queue, fromLink, err = w.jump(&cur, queue, fromLink); err != nil {
				return nil, err
			}
			continue
		}
		st, err := w.step(cur, c, len(queue) == 0)
		switch {
		case errors.Is(err, errChanged):
			if retries++; retries > maxRetries {
				return nil, err
			}
			queue = append([]string{c}, queue...)
			if linked {
				fromLink++
			}
		case errors.Is(err, unix.ENOENT):
			if linked && !w.probe {
				return nil, errDangling
			}
			rest := append([]string{c}, queue...)
			return &target{cur: cur, name: rest[len(rest)-1], missing: rest[:len(rest)-1]}, nil
		case err != nil:
			return nil, err
		case st.kind == stepLink:
			if hops++; hops > maxLinkHops {
				return nil, errLoop
			}
			more := splitPath(st.link)
			queue, fromLink = append(more, queue...), fromLink+len(more)
			if path.IsAbs(st.link) {
				if queue, fromLink, err = w.jump(&cur, queue, fromLink); err != nil {
					return nil, err
				}
			}
		case st.kind == stepFile:
			if len(queue) > 0 {
				return nil, errNotDir
			}
			return &target{cur: cur, name: c, exists: true, mode: st.mode}, nil
		}
	}
	return &target{cur: cur, exists: true, mode: unix.S_IFDIR}, nil
}

// Kinds of one step.
const (
	stepDir  = iota // pushed onto the cursor
	stepLink        // a symlink
	stepFile        // anything else; only the last component may be one
)

// stepped is what one step found.
type stepped struct {
	kind int
	link string // a symlink's text
	mode uint32 // a file's type (S_IFMT), when the last component is one
}

// step looks at the component c of cur's directory. A directory is opened
// and pushed; a symlink is read. errChanged means c changed between two
// calls and is worth another look.
func (w *walker) step(cur *cursor, c string, last bool) (stepped, error) {
	if last {
		// Most paths end in a file: one fstatat tells which kind it is.
		var s unix.Stat_t
		if err := unix.Fstatat(cur.dir(), c, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return stepped{}, err
		}
		switch mode := uint32(s.Mode) & unix.S_IFMT; mode {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			link, err := readlinkat(cur.dir(), c)
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
				return stepped{}, errChanged // no longer a symlink
			}
			return stepped{kind: stepLink, link: link}, err
		default:
			return stepped{kind: stepFile, mode: mode}, nil
		}
	}
	fd, err := unix.Openat(cur.dir(), c, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		cur.push(fd, c)
		w.enterInner(cur)
		return stepped{kind: stepDir}, nil
	}
	if !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		return stepped{}, err
	}
	link, lerr := readlinkat(cur.dir(), c)
	switch {
	case lerr == nil:
		return stepped{kind: stepLink, link: link}, nil
	case errors.Is(lerr, unix.EINVAL) && !last:
		return stepped{kind: stepFile}, nil
	case errors.Is(lerr, unix.EINVAL), errors.Is(lerr, unix.ENOENT):
		return stepped{}, errChanged // a directory a moment ago
	}
	return stepped{}, lerr
}

// enterInner moves cur to another top when it just stepped onto one (roots
// nest on the host: outputs below /mnt/user-data, or a test's workspace
// below /tmp), so the result names the innermost root, as requests do.
// Inside an archive's destination the walk stays on its own descriptors.
func (w *walker) enterInner(cur *cursor) {
	inner := cur.topRoot().inner
	if len(inner) == 0 || w.within != nil {
		return
	}
	host := cur.host()
	for _, i := range inner {
		if cur.v.tops[i].real != host {
			continue
		}
		fd := cur.fds[len(cur.fds)-1]
		if cur.v.fds[i] < 0 {
			cur.fds = cur.fds[:len(cur.fds)-1] // the directory just opened is that root's
			cur.v.fds[i] = fd
		}
		cur.close()
		cur.top, cur.fds, cur.names, cur.borrowed = i, []int{cur.v.fds[i]}, nil, 1
		return
	}
}

// up applies ".." to cur if it is below its top (or, in an archive's
// destination, below the destination): back to the directory it came
// from. It reports whether it did.
func (w *walker) up(cur *cursor) bool {
	floor := 0
	if w.within != nil {
		floor = w.within.depth()
	}
	if cur.depth() <= floor {
		return false
	}
	cur.pop()
	return true
}

// jump moves *cur to the root of the host's filesystem, to walk comps from
// there (a symlink's absolute text, and what follows it): to the top
// holding them, or within an archive's destination, to that directory.
// Directories above the tops (/, /mnt in the jail: the jail's own,
// read-only) are passed by name, without opening anything outside the
// roots. It returns what is left to walk, and how much of that came from
// symlinks.
func (w *walker) jump(cur **cursor, comps []string, fromLink int) ([]string, int, error) {
	if w.within != nil {
		base := slices.Concat(w.within.topRoot().comps, w.within.names)
		if len(comps) < len(base) || !slices.Equal(comps[:len(base)], base) {
			return nil, 0, errEscapes
		}
		(*cur).close()
		*cur = w.within.sub()
		return comps[len(base):], max(fromLink-len(base), 0), nil
	}
	var pos []string
	for i := 0; ; i++ {
		if t := w.v.topHolding(pos); t >= 0 {
			next, err := w.v.cursorAt(t)
			if err != nil {
				return nil, 0, err
			}
			(*cur).close()
			*cur = next
			return comps[i:], max(fromLink-i, 0), nil
		}
		if i == len(comps) || !w.v.aboveTop(pos) {
			return nil, 0, errOutside
		}
		if comps[i] == ".." {
			pos = pos[:max(len(pos)-1, 0)]
		} else {
			pos = append(pos, comps[i])
		}
	}
}

// admit refuses results below the list-only roots, and the list-only roots
// themselves unless listing.
func (w *walker) admit(t *target) error {
	if !t.topRoot().listOnly {
		return nil
	}
	if w.listing && t.isDir() && t.cur.depth() == 0 {
		return nil
	}
	return errOutside
}

// readlinkat reads the symlink name in dir.
func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size >= unix.PathMax {
			return "", unix.ENAMETOOLONG
		}
	}
}
