package sidecar

import (
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// FileLimits cap the file routes. Zero fields take the reference's values;
// tests shrink them so a cap is reached without writing 100 MiB.
type FileLimits struct {
	ViewMaxFile    int64         // bytes of a file /view reads; api.MaxViewFile
	GrepMaxBytes   int64         // bytes /grep scans before it stops, truncated; 100 MiB
	GrepTimeout    time.Duration // wall clock of one /grep; 10 s
	GlobMaxMatches int           // matches /glob returns before it stops, truncated; 10,000
	WatchMaxDirs   int           // directories one recursive /watch watches; 4096
}

// Reference values of FileLimits.
const (
	defaultGrepMaxBytes   = 100 << 20
	defaultGrepTimeout    = 10 * time.Second
	defaultGlobMaxMatches = 10000
	defaultWatchMaxDirs   = 4096
)

// limits returns h's FileLimits with the defaults filled in.
func (h *Handler) limits() FileLimits {
	l := h.opts.Limits
	if l.ViewMaxFile <= 0 {
		l.ViewMaxFile = api.MaxViewFile
	}
	if l.GrepMaxBytes <= 0 {
		l.GrepMaxBytes = defaultGrepMaxBytes
	}
	if l.GrepTimeout <= 0 {
		l.GrepTimeout = defaultGrepTimeout
	}
	if l.GlobMaxMatches <= 0 {
		l.GlobMaxMatches = defaultGlobMaxMatches
	}
	if l.WatchMaxDirs <= 0 {
		l.WatchMaxDirs = defaultWatchMaxDirs
	}
	return l
}

// fileRoutes registers the file, search, watch and transfer routes.
func (h *Handler) fileRoutes(m *http.ServeMux) {
	h.handle(m, "POST /file-create", h.fileCreate)
	h.handle(m, "POST /view", h.view)
	h.handle(m, "POST /str-replace", h.strReplace)
	h.handle(m, "POST /present-files", h.presentFiles)
	h.handle(m, "POST /ls", h.ls)
	h.handle(m, "POST /glob", h.glob)
	h.handle(m, "POST /grep", h.grep)
	h.handle(m, "POST /watch", h.watch)
	h.handle(m, "POST /watch/stream", h.watchStream) // watch_stream.go
	h.handle(m, "PUT /files/raw", h.putRaw)
	h.handle(m, "GET /files/raw", h.getRaw)
	h.handle(m, "POST /files/archive", h.putArchive)
	h.handle(m, "GET /files/archive", h.getArchive)
}
