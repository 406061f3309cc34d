package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// tmpRoot is the scratch root every sandbox has next to its workspace.
const tmpRoot = "/tmp"

// resolve maps a path from a request to a real path inside the workspace or
// /tmp: relative paths are taken under the workspace, symlinks are followed,
// and the result must stay under one of those roots. The jail's mount
// namespace is the real boundary; this check keeps a request from wandering
// into the sidecar's own files inside it.
func (h *Handler) resolve(p string) (string, error) {
	return resolvePath(h.workspace, []string{h.workspace, tmpRoot}, p)
}

// resolvePath is resolve with explicit roots, for tests and fuzzing.
// The path need not exist: its longest existing prefix is resolved and the
// rest appended, so later routes can resolve files they are about to create.
// A dangling symlink anywhere in p is refused, because creating through it
// would land wherever it points.
func resolvePath(workspace string, roots []string, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path: contains a NUL byte")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(workspace, abs)
	}
	// Clean before resolving: "link/.." then means the directory holding link,
	// not the parent of link's target. Either reading is safe because the
	// returned path, not p, is what gets used.
	real, err := realPath(filepath.Clean(abs))
	if err != nil {
		return "", api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path %s: %v", p, err)
	}
	for _, root := range roots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue // a root that does not exist holds nothing
		}
		if within(r, real) {
			return real, nil
		}
	}
	return "", api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Invalid path outside allowed roots: %s", p)
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
