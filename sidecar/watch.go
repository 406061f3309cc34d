package sidecar

import (
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// watchSettle is how long a watch keeps collecting after the first change,
// so one save (create, write, close) comes back as one batch.
const watchSettle = 50 * time.Millisecond

func (h *Handler) watch(w http.ResponseWriter, r *http.Request) error {
	var req api.WatchRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	v, t, done, err := h.openTarget(req.Path, true)
	if err != nil {
		return err
	}
	defer done()
	switch {
	case !t.exists:
		return errDirNotFound(req.Path)
	case !t.isDir():
		return errNotDirectory(req.Path)
	}
	changes, err := watchDir(r.Context(), v, t.cur, req.Recursive, watchTimeout(req.TimeoutSeconds), h.limits().WatchMaxDirs)
	if err != nil {
		return fileError(err, "watch", req.Path)
	}
	return writeJSON(w, http.StatusOK, api.WatchResult{Changes: changes, TimedOut: len(changes) == 0})
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
