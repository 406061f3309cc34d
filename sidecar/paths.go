package sidecar

import (
	"path"
	"path/filepath"
	"strings"
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

// pathMap is where the typed roots are. Requests are resolved beneath
// them by an fsView (resolve.go).
type pathMap struct {
	roots []root
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
// for cwd "/" does not mean the workspace. The path is only handed on, to a
// command that changes to it as the sandbox user or to a language server
// as a document URI; the sidecar itself opens nothing by it.
func (h *Handler) resolve(p string) (handedOn, error) {
	if strings.IndexByte(p, 0) < 0 && path.Clean(strings.ReplaceAll(p, `\`, "/")) == "/" {
		return handedOn{}, outsideRoots(p)
	}
	_, t, done, err := h.openTarget(p, false)
	if err != nil {
		return handedOn{}, err
	}
	defer done()
	return handedOn{host: t.host(), exists: t.exists, dir: t.isDir()}, nil
}

// handedOn is a resolved path that is handed on by name.
type handedOn struct {
	host        string
	exists, dir bool
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

// within reports whether the clean absolute path p is root or under it.
func within(root, p string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}
