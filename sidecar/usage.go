package sidecar

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// usage serves GET /usage: what the sandbox's processes hold in memory
// and the CPU time they used so far, read from the cgroup the sidecar
// runs in (a pod's container: the sidecar and every command it starts),
// for the kube driver's Stats and through it E2B's getMetrics. Nothing is
// read but on a call. 501 not_supported when there is no cgroup to read
// (Options.Usage unset, or none mounted).
func (h *Handler) usage(w http.ResponseWriter, r *http.Request) error {
	if h.opts.Usage == nil {
		return errNoUsage
	}
	u, err := h.opts.Usage()
	if err != nil {
		h.log.WarnContext(r.Context(), "read the sandbox's usage", "err", err)
		return errNoUsage
	}
	return writeJSON(w, http.StatusOK, u)
}

// errNoUsage is GET /usage where the sidecar has no cgroup to read.
var errNoUsage = api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "this sandbox's container has no resource accounting the sidecar can read").
	WithHint("the cluster's metrics have its pod's use: kubectl top pod")
