package sidecar

import (
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// watchSettle is how long a watch keeps collecting after the first change,
// so one save (create, write, close) comes back as one batch.
const watchSettle = 50 * time.Millisecond

// watch serves POST /watch: the first batch of changes under the
// directory, or none once the timeout passes.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request) error {
	req, in, end, err := h.armWatch(w, r)
	if err != nil {
		return err
	}
	defer end()
	changes, err := in.next(r.Context(), time.Now().Add(watchTimeout(req.TimeoutSeconds)))
	if err != nil {
		return fileError(err, "watch", req.Path)
	}
	return writeJSON(w, http.StatusOK, api.WatchResult{Changes: changes, TimedOut: len(changes) == 0})
}

// armWatch decodes r's api.WatchRequest and arms inotify on the directory
// it names, the set-up /watch and /watch/stream share; from its return on,
// changes are seen. end closes the watch, then the directory.
func (h *Handler) armWatch(w http.ResponseWriter, r *http.Request) (req api.WatchRequest, in *inotify, end func(), err error) {
	if err := decodeJSON(w, r, &req); err != nil {
		return req, nil, nil, err
	}
	v, t, done, err := h.openTarget(req.Path, true)
	if err != nil {
		return req, nil, nil, err
	}
	switch {
	case !t.exists:
		done()
		return req, nil, nil, errDirNotFound(req.Path)
	case !t.isDir():
		done()
		return req, nil, nil, errNotDirectory(req.Path)
	}
	in, err = openWatch(v, t.cur, req.Recursive, h.limits().WatchMaxDirs)
	if err != nil {
		done()
		return req, nil, nil, fileError(err, "watch", req.Path)
	}
	return req, in, func() { in.close(); done() }, nil
}

// watchTimeout applies the default and the reference's 0.1..60 s clamp
// (boxkite-reference.md, POST /watch): clamped, not refused, though the
// watch_directory tool refuses.
func watchTimeout(s float64) time.Duration {
	if s == 0 {
		s = api.DefaultWatchSeconds
	}
	s = min(max(s, api.MinWatchSeconds), api.MaxWatchSeconds)
	return time.Duration(s * float64(time.Second))
}
