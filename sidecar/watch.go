package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
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
	res, err := h.paths().resolve(req.Path, true)
	if err != nil {
		return err
	}
	fi, err := os.Stat(res.host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "Directory not found: %s", req.Path)
	case err != nil:
		return fmt.Errorf("stat: %w", err)
	case !fi.IsDir():
		return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "Not a directory: %s", req.Path)
	}
	changes, err := watchDir(r.Context(), res.host, req.Recursive, watchTimeout(req.TimeoutSeconds), h.limits().WatchMaxDirs)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.WatchResult{Changes: changes, TimedOut: len(changes) == 0})
}

// watchTimeout applies the default and the reference's 0.1..60 s clamp.
func watchTimeout(s float64) time.Duration {
	if s == 0 {
		s = api.DefaultWatchSeconds
	}
	s = min(max(s, api.MinWatchSeconds), api.MaxWatchSeconds)
	return time.Duration(s * float64(time.Second))
}
