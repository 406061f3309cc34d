package allowlists

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the allowlist's routes; changing it takes an admin key.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/account/allowed-commands", Summary: "The account's command allowlist (no rules: everything allowed)", Response: api.AllowedCommands{}}, Cred: httpx.CredAPIKey, Handler: s.get},
		{RouteDoc: httpx.RouteDoc{Pattern: "PUT /v1/account/allowed-commands", Summary: "Replace the command allowlist (admin keys)", Request: api.AllowedCommands{}, Response: api.AllowedCommands{}}, Cred: httpx.CredAPIKey, Handler: s.put},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/account/allowed-commands", Summary: "Remove the command allowlist (admin keys)", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: s.delete},
	}
}
