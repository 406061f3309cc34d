package sidecar

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// The descriptors file work holds: the typed roots, opened per request
// (fsView), the directories walked down to from one of them (cursor) and
// what a request path resolved to (target). resolve.go walks them.

// top is a typed root as file work uses it.
type top struct {
	root
	real  string   // host path with every symlink resolved (configuration, trusted)
	comps []string // real, split
	inner []int    // the tops strictly below this one on the host, by index
}

// fsRoots is what every file request shares: the typed roots with their
// real paths, found once per Handler (they are the jail's mount points),
// and the user file work runs as.
type fsRoots struct {
	mu       sync.Mutex
	tops     []top // nil until every root was found at once
	user     fsUser
	userErr  error
	userDone bool
}

// fsView is one request's use of the roots: each root's directory is opened
// on first use and closed with the view.
type fsView struct {
	tops []top
	fds  []int // per top; -1 until opened
	user fsUser
	bufs *sync.Pool // readChunk buffers (*[]byte) that writeFile copies through (Handler.readBufs)
}

// openView returns a view of h's roots. Close it when the request is done.
func (h *Handler) openView() (*fsView, error) {
	fr := &h.fsr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if !fr.userDone {
		fr.user, fr.userErr = newFSUser(h.opts.RunAs)
		fr.userDone = true
	}
	if fr.userErr != nil {
		return nil, fr.userErr
	}
	tops := fr.tops
	if tops == nil {
		var complete bool
		tops, complete = h.findTops()
		if complete {
			fr.tops = tops
		}
	}
	v := &fsView{tops: tops, fds: make([]int, len(tops)), user: fr.user, bufs: &h.readBufs}
	for i := range v.fds {
		v.fds[i] = -1
	}
	return v, nil
}

// openTarget is openView and then the view's resolve(p, listing), the
// start of most file routes; done closes the target and the view.
func (h *Handler) openTarget(p string, listing bool) (v *fsView, t *target, done func(), err error) {
	v, err = h.openView()
	if err != nil {
		return nil, nil, nil, err
	}
	t, err = v.resolve(p, listing)
	if err != nil {
		v.close()
		return nil, nil, nil, err
	}
	return v, t, func() { t.close(); v.close() }, nil
}

// findTops resolves the roots' host paths, dropping roots that do not exist
// (they hold nothing); complete is false when one was missing.
func (h *Handler) findTops() (tops []top, complete bool) {
	complete = true
	for _, r := range h.paths().roots {
		real, err := filepath.EvalSymlinks(r.host)
		if err != nil {
			complete = false
			continue
		}
		tops = append(tops, top{root: r, real: real, comps: splitPath(real)})
	}
	for i := range tops {
		for j := range tops {
			if i != j && tops[i].real != tops[j].real && within(tops[i].real, tops[j].real) {
				tops[i].inner = append(tops[i].inner, j)
			}
		}
	}
	return tops, complete
}

func (v *fsView) close() {
	for i, fd := range v.fds {
		if fd >= 0 {
			unix.Close(fd)
			v.fds[i] = -1
		}
	}
}

// topFD returns the descriptor of top i, opening it on first use.
func (v *fsView) topFD(i int) (int, error) {
	if v.fds[i] >= 0 {
		return v.fds[i], nil
	}
	fd, err := unix.Open(v.tops[i].real, oPath|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open root %s: %w", v.tops[i].virt, err)
	}
	v.fds[i] = fd
	return fd, nil
}

// cursor is a directory reached from a top: the descriptors of every
// directory on the way down, each opened beneath the one before.
type cursor struct {
	v        *fsView
	top      int
	fds      []int    // fds[0] is the top's; fds[i] is names[i-1]
	names    []string // below the top
	borrowed int      // leading fds owned elsewhere (the view, another cursor)
}

func (v *fsView) cursorAt(i int) (*cursor, error) {
	fd, err := v.topFD(i)
	if err != nil {
		return nil, err
	}
	return &cursor{v: v, top: i, fds: []int{fd}, borrowed: 1}, nil
}

func (c *cursor) dir() int      { return c.fds[len(c.fds)-1] }
func (c *cursor) depth() int    { return len(c.names) }
func (c *cursor) topRoot() *top { return &c.v.tops[c.top] }

func (c *cursor) push(fd int, name string) {
	c.fds = append(c.fds, fd)
	c.names = append(c.names, name)
}

func (c *cursor) pop() {
	last := len(c.fds) - 1
	if last >= c.borrowed {
		unix.Close(c.fds[last])
	}
	c.fds, c.names = c.fds[:last], c.names[:len(c.names)-1]
	c.borrowed = min(c.borrowed, len(c.fds))
}

// close closes the descriptors the cursor owns.
func (c *cursor) close() {
	for _, fd := range c.fds[c.borrowed:] {
		unix.Close(fd)
	}
	c.fds, c.names = c.fds[:c.borrowed], c.names[:c.borrowed-1]
}

// sub returns a cursor at the same place that borrows c's descriptors: it
// may walk on and close what it opens, and c stays valid. c must outlive it.
func (c *cursor) sub() *cursor {
	return &cursor{v: c.v, top: c.top, fds: slices.Clone(c.fds), names: slices.Clone(c.names), borrowed: len(c.fds)}
}

// rel is the cursor's place below its top, slash-separated.
func (c *cursor) rel() string { return strings.Join(c.names, "/") }

func (c *cursor) virt() string { return joinPath(c.topRoot().virt, c.rel()) }

func (c *cursor) host() string { return joinPath(c.topRoot().real, c.rel()) }

// joinPath appends the relative rel to the absolute base.
func joinPath(base, rel string) string {
	switch {
	case rel == "":
		return base
	case base == "/":
		return "/" + rel
	}
	return base + "/" + rel
}

// target is a resolved path: an existing directory (name "", the cursor is
// it), or a name in the cursor's directory, which exists or, for writes, is
// to be created together with the missing directories before it.
type target struct {
	cur     *cursor
	name    string
	missing []string // directories between cur and name that do not exist; only when !exists
	exists  bool
	mode    uint32 // file type (S_IFMT) of an existing name
}

func (t *target) isDir() bool   { return t.exists && t.name == "" }
func (t *target) topRoot() *top { return t.cur.topRoot() }
func (t *target) close()        { t.cur.close() }

func (t *target) rel() string {
	parts := slices.Concat([]string{t.cur.rel()}, t.missing, []string{t.name})
	return strings.Trim(strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "/"), "/")
}

// virt is the target as requests name it.
func (t *target) virt() string { return joinPath(t.topRoot().virt, t.rel()) }

// host is the target's path on the sidecar's filesystem, for what must
// name it by path: a command's working directory, an LSP document URI.
func (t *target) host() string { return joinPath(t.topRoot().real, t.rel()) }

// writable refuses writes to the read-only roots; verb is "write to" or "edit".
func (t *target) writable(verb, p string) error {
	if t.topRoot().readOnly {
		// permission_denied, as for a file the sandbox user may not
		// write: the caller's credentials are fine (forbidden would read
		// as an auth failure, and the CLI would exit 4 "check the API key").
		return api.Errorf(http.StatusForbidden, api.CodePermissionDenied, "Cannot %s read-only path: %s", verb, p).
			WithHint("uploads and skills are read-only through the API; write under /workspace, /mnt/user-data/outputs or /tmp")
	}
	return nil
}

// topHolding returns the innermost top at or above the host path comps, or -1.
func (v *fsView) topHolding(comps []string) int {
	best := -1
	for i, t := range v.tops {
		if len(t.comps) <= len(comps) && slices.Equal(comps[:len(t.comps)], t.comps) &&
			(best < 0 || len(t.comps) > len(v.tops[best].comps)) {
			best = i
		}
	}
	return best
}

// aboveTop reports whether the host path comps is a directory above a top.
func (v *fsView) aboveTop(comps []string) bool {
	for _, t := range v.tops {
		if len(t.comps) > len(comps) && slices.Equal(t.comps[:len(comps)], comps) {
			return true
		}
	}
	return false
}
