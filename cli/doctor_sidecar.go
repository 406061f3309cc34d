package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// doctorSidecars checks the sidecar protocol (docs/architecture.md,
// "Sidecar protocol versions") of the local server and of its active
// sandboxes, from GET /v1/host: a sandbox started before an upgrade keeps
// its older sidecar, which lacks what newer ones do, until it is forked.
// No check when the server does not answer (the bastion check says so).
func doctorSidecars(ctx context.Context, app *App) (doctorCheck, bool) {
	c, err := app.Client()
	if err != nil {
		return doctorCheck{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := c.Host(ctx)
	if e, ok := errors.AsType[*api.Error](err); ok {
		fix := e.Hint
		if fix == "" {
			fix = "see the server's log"
		}
		return doctorCheck{Name: "sidecar protocol", Status: checkWarn, Detail: "the server did not say: " + message(err), Fix: fix}, true
	}
	if err != nil {
		return doctorCheck{}, false
	}
	return sidecarCheck(h), true
}

// sidecarCheck is the check of GET /v1/host's answer h.
func sidecarCheck(h *api.HostStatus) doctorCheck {
	c := doctorCheck{Name: "sidecar protocol", Status: checkOK}
	if h.SidecarProtocol < api.SidecarProtocol {
		c.Status = checkWarn
		c.Detail = fmt.Sprintf("the server speaks %d, older than this boxkite's %d", h.SidecarProtocol, api.SidecarProtocol)
		if h.SidecarProtocol == 0 {
			c.Detail = fmt.Sprintf("the server does not say (older than this boxkite, which speaks %d)", api.SidecarProtocol)
		}
		c.Fix = "the server runs an older build than this boxkite: 'boxkite down' and then 'boxkite up' start this one"
		return c
	}
	c.Detail = fmt.Sprintf("the server speaks %d", h.SidecarProtocol)
	if len(h.OlderSidecars) == 0 {
		c.Detail += ", and so does every active sandbox's sidecar"
		return c
	}
	old := make([]string, len(h.OlderSidecars))
	for i, sb := range h.OlderSidecars {
		name := sb.ID
		if sb.Label != "" {
			name += " (" + sb.Label + ")"
		}
		old[i] = fmt.Sprintf("%s speaks %d", name, sb.SidecarProtocol)
	}
	c.Status = checkWarn
	c.Detail += fmt.Sprintf("; older in %d %s: %s", len(old), plural(len(old), "sandbox"), strings.Join(old, ", "))
	c.Fix = fmt.Sprintf("they started before an upgrade and lack what newer sidecars do: 'boxkite session fork %s' gives a copy with the current sidecar, then remove the old one", h.OlderSidecars[0].ID)
	return c
}
