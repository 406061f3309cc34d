package takeover

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the takeover routes. The terminal itself takes an API key
// or a takeover token (AuthenticateTakeover), and documents ?api_key= for
// browsers' WebSockets; the bastion's route takes its key
// (AuthenticateBastion).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/takeover", Summary: "WebSocket relay to the sandbox's terminal (binary frames; text frames for resize)", Auth: httpx.AuthKeyQuery, Status: http.StatusSwitchingProtocols, Query: []string{"token", "read_only"}}, Cred: httpx.CredTakeover, Handler: s.takeover},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/sandboxes/{id}/takeover-token", Summary: "Mint a single-use takeover token, valid 30 s (admin keys only)", Request: api.TakeoverTokenRequest{}, Response: api.TakeoverToken{}}, Cred: httpx.CredAPIKey, Handler: s.createTakeoverToken},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/takeover-recordings/{recording_id}", Summary: "A takeover's asciicast v2 recording (servers started with takeover recording on); works after the sandbox is gone", Produces: "application/x-asciicast"}, Cred: httpx.CredAPIKey, Handler: s.getRecording},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/bastion/takeover-token", Summary: "boxkite-bastion only (Bearer <bastion key>): a takeover token for the holder of a registered SSH key", Request: api.BastionTokenRequest{}, Response: api.TakeoverToken{}}, Cred: httpx.CredBastion, Handler: s.bastionTakeoverToken},
	}
}
