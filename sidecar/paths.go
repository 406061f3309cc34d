package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// The typed roots as requests and responses name them (reference §2.2).
const (
	vWorkspace = "/workspace"
	vTmp       = "/tmp"
	vOutputs   = "/mnt/user-data/outputs"
	vUploads   = "/mnt/user-data/uploads"
	vSkills    = "/mnt/skills"
	vMnt       = "/mnt"           // listable by ls and watch, nothing else
	vUserData  = "/mnt/user-data" // likewise
)

// Roots places the typed roots on the filesystem the sidecar sees. Inside
// the jail every field is its virtual path, which the zero value means;
// tests point them at temp dirs and get the jail's behaviour, since requests
// and responses keep naming /workspace/…, /tmp/… and so on.
//
// /mnt and /mnt/user-data, which ls and watch may show, are taken to be the
// parents of Skills and Outputs, so a relocated layout should mirror the
// jail's (<dir>/mnt/skills, <dir>/mnt/user-data/{outputs,uploads}).
type Roots struct {
	Workspace string // "" means Options.Workspace, then /workspace
	Tmp       string // "" means /tmp
	Outputs   string // writable; "" means /mnt/user-data/outputs
	Uploads   string // read-only through the API; "" means /mnt/user-data/uploads
	Skills    string // read-only through the API; "" means /mnt/skills
}

// root is one typed root: where requests see it and where it really is.
type root struct {
	virt, host string
	readOnly   bool
	listOnly   bool // the path itself is allowed to ls and watch; nothing under it
}

// pathMap translates request paths to host paths and back. Build it with
// Handler.paths; it does no I/O until used.
type pathMap struct {
	roots []root
}

// resolved is a request path after resolution.
type resolved struct {
	host string // real path: symlinks in its existing prefix resolved
	virt string // the same place as requests name it
	root root   // the typed root holding it, by its real path
}

// paths returns the pathMap of h's Options.
func (h *Handler) paths() pathMap {
	r := h.opts.Roots
	or := func(s, def string) string {
		if s == "" {
			s = def
		}
		return filepath.Clean(s)
	}
	skills, outputs := or(r.Skills, vSkills), or(r.Outputs, vOutputs)
	return pathMap{roots: []root{
		{virt: vWorkspace, host: or(r.Workspace, h.workspace)},
		{virt: vTmp, host: or(r.Tmp, vTmp)},
		{virt: vOutputs, host: outputs},
		{virt: vUploads, host: or(r.Uploads, vUploads), readOnly: true},
		{virt: vSkills, host: skills, readOnly: true},
		{virt: vMnt, host: filepath.Dir(skills), readOnly: true, listOnly: true},
		{virt: vUserData, host: filepath.Dir(outputs), readOnly: true, listOnly: true},
	}}
}

// resolve maps a path from exec's cwd to a real path inside a root. Unlike
// the file routes it takes "/" literally, and refuses it: a command asking
// for cwd "/" does not mean the workspace. The jail's mount namespace is the
// real boundary; this check keeps a request from wandering into the
// sidecar's own files inside it.
func (h *Handler) resolve(p string) (string, error) {
	if strings.IndexByte(p, 0) < 0 && path.Clean(strings.ReplaceAll(p, `\`, "/")) == "/" {
		return "", outsideRoots(p)
	}
	r, err := h.paths().resolve(p, false)
	return r.host, err
}

// virtual normalises a request path to a clean absolute virtual path:
// backslashes become slashes; "", "/", "." and "workspace" mean the
// workspace; relative paths are under it (a leading "workspace/" is the
// workspace itself, as in the reference); /uploads, /outputs and /skills are
// aliases of their roots. ".." is applied lexically, so it cannot climb
// out of a root by name; symlinks are the resolver's business.
func virtual(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if !strings.HasPrefix(p, "/") {
		c := path.Clean(p)
		switch {
		case c == "." || c == "workspace":
			return vWorkspace
		case strings.HasPrefix(c, "workspace/"):
			return "/" + c
		}
		return path.Join(vWorkspace, c)
	}
	c := path.Clean(p)
	if c == "/" {
		return vWorkspace
	}
	for alias, target := range map[string]string{"/uploads": vUploads, "/outputs": vOutputs, "/skills": vSkills} {
		if rest, ok := strings.CutPrefix(c, alias); ok && (rest == "" || rest[0] == '/') {
			return target + rest
		}
	}
	return c
}

// resolve maps a request path to a real host path inside the typed roots.
// The path need not exist: its longest existing prefix is resolved and the
// rest appended, so routes can resolve files they are about to create. A
// dangling symlink anywhere in p is refused, because creating through it
// would land wherever it points. listing also admits /mnt and
// /mnt/user-data themselves, for ls and watch.
func (m pathMap) resolve(p string, listing bool) (resolved, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return resolved{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path: contains a NUL byte")
	}
	v := virtual(p)
	var host string
	for _, r := range m.roots {
		rest, ok := strings.CutPrefix(v, r.virt)
		if !ok || (rest != "" && rest[0] != '/') || (r.listOnly && (rest != "" || !listing)) {
			continue
		}
		host = r.host + rest
		break
	}
	if host == "" {
		return resolved{}, outsideRoots(p)
	}
	real, err := realPath(host)
	if err != nil {
		return resolved{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path %s: %v", p, err)
	}
	res, ok := m.real().locate(real, listing)
	if !ok {
		return resolved{}, outsideRoots(p)
	}
	return res, nil
}

func outsideRoots(p string) error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Invalid path outside allowed roots: %s", p)
}

// realRoots are the roots that exist, with their host paths resolved, for
// checking many paths in one request.
type realRoots []root

// real resolves the roots' host paths, dropping roots that do not exist:
// they hold nothing.
func (m pathMap) real() realRoots {
	var rs realRoots
	for _, r := range m.roots {
		h, err := filepath.EvalSymlinks(r.host)
		if err != nil {
			continue
		}
		r.host = h
		rs = append(rs, r)
	}
	return rs
}

// locate finds the innermost root holding the real path p (roots may nest
// on the host, as a test's workspace under /tmp does) and names p as
// requests do. List-only roots count only for listing, and only for
// themselves.
func (rs realRoots) locate(p string, listing bool) (resolved, bool) {
	best := -1
	for i, r := range rs {
		if r.listOnly && (!listing || p != r.host) {
			continue
		}
		if within(r.host, p) && (best < 0 || len(r.host) > len(rs[best].host)) {
			best = i
		}
	}
	if best < 0 {
		return resolved{}, false
	}
	r := rs[best]
	return resolved{host: p, virt: r.virt + strings.TrimPrefix(p, r.host), root: r}, true
}

// contains resolves the host path p (an entry found by walking a root) and
// reports whether its real path stays inside the roots: ls, glob and grep
// silently skip entries that do not, so they are no oracle for what lies
// outside.
func (rs realRoots) contains(p string, listing bool) bool {
	_, ok := rs.realInside(p, listing)
	return ok
}

// realInside is contains that also returns the real path.
func (rs realRoots) realInside(p string, listing bool) (string, bool) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	_, ok := rs.locate(real, listing)
	return real, ok
}

// recheck resolves host again right before it is opened, created or renamed
// onto, and refuses it if a symlink appeared in the meantime. With O_NOFOLLOW
// on the last element this closes the window between resolve and use.
func (rs realRoots) recheck(host string) error {
	real, err := realPath(host)
	if err != nil || real != host {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path changed while in use: %s", host)
	}
	if _, ok := rs.locate(real, false); !ok {
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path changed while in use: %s", host)
	}
	return nil
}

// writable refuses writes to the read-only roots; verb is "write to" or "edit".
func (r resolved) writable(verb, p string) error {
	if r.root.readOnly {
		return api.Errorf(http.StatusForbidden, api.CodeForbidden, "Cannot %s read-only path: %s", verb, p)
	}
	return nil
}

// realPath resolves every symlink in the longest existing prefix of the
// clean absolute path p and appends the missing rest unchanged.
func realPath(p string) (string, error) {
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		r, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("resolve: %w", unwrapPathError(err))
		}
		if _, lerr := os.Lstat(dir); lerr == nil {
			return "", errors.New("dangling symlink")
		}
		if dir == "/" {
			return "", fmt.Errorf("resolve: %w", unwrapPathError(err))
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// unwrapPathError drops the *fs.PathError wrapper so messages name the
// request's path once, not a resolved one the caller never sent.
func unwrapPathError(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// within reports whether the clean absolute path p is root or under it.
func within(root, p string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
