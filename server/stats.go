package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// Stats is what one sandbox holds on its host now.
type Stats struct {
	MemoryBytes     int64 // all memory charged to it, page cache and kernel memory included
	MemoryAnonBytes int64 // of which anonymous
	Pids            int64 // tasks, threads included
	// DiskUsedBytes and DiskQuotaBytes are its own disk's use and size;
	// 0 when it has none of its own.
	DiskUsedBytes, DiskQuotaBytes int64
	Frozen                        bool // stopped while the host's disk is full
}

// StatsDriver is a Driver that can report a sandbox's usage. It is
// optional: GET /v1/sandboxes/{id}/stats answers not_supported without it.
type StatsDriver interface {
	Stats(ctx context.Context, id string) (Stats, error)
}

// ErrNoStats is returned by a StatsDriver that has no accounting for its
// sandboxes (the local driver without cgroups).
var ErrNoStats = errors.New("no resource accounting")

// statsDriver finds the StatsDriver behind the server's driver wrappers.
func statsDriver(d Driver) (StatsDriver, bool) {
	if cd, ok := d.(countingDriver); ok {
		d = cd.Driver
	}
	sd, ok := d.(StatsDriver)
	return sd, ok
}

// sandboxStats serves GET /v1/sandboxes/{id}/stats: the sandbox's memory
// and task counts from the driver's accounting, e.g. for `boxkite bench`.
func (s *Server) sandboxStats(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.loadSandbox(r)
	if err != nil {
		return err
	}
	if !sb.Active() {
		return notActive(sb)
	}
	sd, ok := statsDriver(s.driver)
	if !ok {
		return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "the %s driver does not report sandbox usage", sb.Driver)
	}
	st, err := sd.Stats(r.Context(), sb.ID)
	switch {
	case errors.Is(err, ErrNoStats):
		return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "this server has no resource accounting for sandboxes").
			WithHint("run boxkite-server as root on a host with cgroups so each sandbox gets its own")
	case err != nil:
		return fmt.Errorf("sandbox stats: %w", err)
	}
	writeJSON(w, http.StatusOK, api.SandboxStats{
		MemoryBytes: st.MemoryBytes, MemoryAnonBytes: st.MemoryAnonBytes, Pids: st.Pids,
		DiskUsedBytes: st.DiskUsedBytes, DiskQuotaBytes: st.DiskQuotaBytes, Frozen: st.Frozen,
	})
	return nil
}
