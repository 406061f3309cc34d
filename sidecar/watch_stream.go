package sidecar

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// watchStreamKeepAlive is how often a quiet watch stream writes a
// keepalive line, which also finds out that the client has gone.
const watchStreamKeepAlive = 15 * time.Second

// watchStream serves POST /watch/stream: the watch of /watch kept open as
// newline-delimited JSON (api.WatchStreamEvent): "armed" once inotify
// watches the tree, so a change made after the client read it is never
// missed; then a "changes" line per batch and "keepalive" lines, until
// timeout_seconds (0: until the client leaves) or an error.
func (h *Handler) watchStream(w http.ResponseWriter, r *http.Request) error {
	req, in, stop, err := h.armWatch(w, r)
	if err != nil {
		return err
	}
	defer stop()
	var end time.Time
	if req.TimeoutSeconds > 0 {
		end = time.Now().Add(time.Duration(req.TimeoutSeconds * float64(time.Second)))
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(ev api.WatchStreamEvent) bool {
		return enc.Encode(ev) == nil && rc.Flush() == nil
	}
	if !send(api.WatchStreamEvent{Type: api.WatchStreamArmed}) {
		return nil
	}
	for {
		deadline := time.Now().Add(watchStreamKeepAlive)
		if !end.IsZero() && end.Before(deadline) {
			deadline = end
		}
		changes, err := in.next(r.Context(), deadline)
		if err != nil {
			if r.Context().Err() == nil {
				h.log.WarnContext(r.Context(), "watch stream ended", "path", req.Path, "err", err)
			}
			return nil // the status is out; the client sees the stream end
		}
		ev := api.WatchStreamEvent{Type: api.WatchStreamKeepAlive}
		if len(changes) > 0 {
			ev = api.WatchStreamEvent{Type: api.WatchStreamChanges, Changes: changes}
		}
		if !send(ev) || (!end.IsZero() && !time.Now().Before(end)) {
			return nil
		}
	}
}
