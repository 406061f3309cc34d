package sidecar

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// The file routes' refusals of a path that is missing or of the wrong
// kind, each with the hint a caller (an agent, often) acts on.

// lsHint is the CLI's own hint for a missing path (cli/files.go pathHint),
// so its output reads the same whichever side gave it.
const lsHint = "list what is there with 'boxkite files ls DIR' (relative paths are in /workspace)"

func errFileNotFound(p string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "File not found: %s", p).WithHint(lsHint)
}

func errDirNotFound(p string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "Directory not found: %s", p).WithHint(lsHint)
}

// errIsDir refuses a directory where a file is read or edited.
func errIsDir(p string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Path is a directory: %s", p).
		WithHint("name a file in it; list it with GET /files?path=DIR, download it whole with GET /files/archive")
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

func errNotDirectory(p string) *api.Error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a directory: %s", p).
		WithHint("name a directory; read a file with GET /files/raw")
}
