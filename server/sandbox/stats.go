package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// sandboxStats serves GET /v1/sandboxes/{id}/stats: the sandbox's memory
// and task counts from the driver's accounting, e.g. for `boxkite bench`.
func (s *Service) sandboxStats(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return err
	}
	if !sb.Active() {
		return NotActive(sb)
	}
	sd, ok := driverAs[model.StatsDriver](s)
	if !ok {
		return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "the %s driver does not report sandbox usage", sb.Driver)
	}
	st, err := sd.Stats(r.Context(), sb.ID)
	switch {
	case errors.Is(err, model.ErrNoStats) && sb.Driver == "kube": // a pod whose container has no cgroup the sidecar can read
		return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "sandbox %s's pod has no resource accounting its sidecar can read", sb.ID).
			WithHint(fmt.Sprintf("the cluster's metrics have its pod's: kubectl top pod -l boxkite.dev/sandbox=%s in the sandbox namespace", sb.ID))
	case errors.Is(err, model.ErrNoStats):
		return api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "this server has no resource accounting for sandboxes").
			WithHint("run boxkite-server as root on a host with cgroups so each sandbox gets its own")
	case err != nil:
		return fmt.Errorf("sandbox stats: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, statsAnswer(st))
	return nil
}

// statsAnswer is the API's shape of a driver's stats: a frozen sandbox
// says why, the host's disk when the driver does not say.
func statsAnswer(st model.Stats) api.SandboxStats {
	out := api.SandboxStats{
		MemoryBytes: st.MemoryBytes, MemoryAnonBytes: st.MemoryAnonBytes, Pids: st.Pids,
		DiskUsedBytes: st.DiskUsedBytes, DiskQuotaBytes: st.DiskQuotaBytes, Frozen: st.Frozen,
	}
	if st.Frozen {
		out.FrozenReason = cmp.Or(st.FrozenReason, api.FrozenHostDisk)
	}
	return out
}
