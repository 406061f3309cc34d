package sidecar

import (
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// The file routes' refusals of a path that is missing or of the wrong
// kind, each with the hint a caller (an agent, often) acts on.

// lsHint is the CLI's own hint for a missing path (cli/files.go pathHint),
// so its output reads the same whichever side gave it.
const lsHint = "list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)"

// viewHint names the read of a file as the hints name every call: the
// CLI's command, which the CLI prints as it is, an agent reads as its
// `view` tool (tools/hints.go) and an E2B SDK user as sbx.files.read
// (server/e2b/envd/hints.go). A route (GET /files/raw) was what none of
// them calls.
const viewHint = "read a file with 'boxkite files view PATH'"

func errFileNotFound(p string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "File not found: %s", p).WithHint(lsHint)
}

func errDirNotFound(p string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "Directory not found: %s", p).WithHint(lsHint)
}

// errIsDir refuses a directory where a file is read or edited.
func errIsDir(p string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p).
		WithHint("name a file in it; list it with 'boxkite files ls DIR'; copy it whole with 'boxkite files cp -r ID:PATH DST'")
}

// errNoPath refuses a write or an edit that names no file: "" would be
// the workspace, and "Path is a directory: " would name nothing.
func errNoPath(verb string) *api.Error {
	return api.Invalid("path", "path must not be empty", "name the file to "+verb+", e.g. notes.txt (relative paths are in /workspace)")
}

// fileName refuses a write or an edit of a file whose path ends in a
// slash, which names a directory: open(2) refuses "x/" too, where the
// resolver drops the slash and would write (or edit) the file x. A
// directory that exists is refused after, as a directory.
func fileName(t *target, p string) error {
	if t.isDir() || !(strings.HasSuffix(p, "/") || strings.HasSuffix(p, "\\")) {
		return nil
	}
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "invalid path %s: a file's name cannot end in /", p).
		WithHint("name the file without the trailing /, e.g. DIR/name.txt")
}

// errIsDirWrite refuses a directory where a file is written.
func errIsDirWrite(p string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p).
		WithHint("name the file to write inside it, e.g. DIR/name.txt")
}

func errNotRegular(p string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a regular file: %s", p).
		WithHint("the file routes read and write regular files only, not FIFOs, sockets or devices; use exec for those")
}

// errNotDirectory refuses a file where a directory is worked on.
func errNotDirectory(p string) *api.Error {
	return notDirectory(p, "name a directory; "+viewHint)
}

// errLsFile refuses ls of a file: ls lists directories, and the refusal
// tells a file from a directory as the 404 tells a missing path from an
// empty directory. The CLI's files ls prints the file's own entry, as
// ls(1) does (it finds it in the listing of the file's directory).
func errLsFile(p string) *api.Error {
	return notDirectory(p, "ls lists a directory; "+viewHint+", or list the directory it is in")
}

func notDirectory(p, hint string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeNotADirectory, "Not a directory: %s", p).WithHint(hint)
}
