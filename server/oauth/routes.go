package oauth

import (
	"net/http"

	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the authorization server's routes. All are public: the
// OAuth endpoints authenticate what they are sent themselves (a code and
// its verifier, a refresh token, the account password on the consent
// page, a registration access token). The protocol endpoints answer
// errors in OAuth's JSON format ({"error", "error_description"}), a query
// parameter, header or form value that is not UTF-8 text too (OwnText);
// the pages a browser opens (authorize, its sign-in and decision forms)
// answer with a page, or a redirect to the client with error= (OwnText,
// refuseText).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /.well-known/oauth-authorization-server", Summary: "OAuth authorization server metadata (RFC 8414) for the hosted MCP endpoint", Response: ServerMetadata{}}, Cred: httpx.CredNone, Handler: s.serverMetadata},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /.well-known/oauth-protected-resource", Summary: "OAuth protected resource metadata (RFC 9728) of /mcp/", Response: ResourceMetadata{}}, Cred: httpx.CredNone, Handler: s.resourceMetadata},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /.well-known/oauth-protected-resource/mcp", Summary: "OAuth protected resource metadata of /mcp/, at its path-aware location", Response: ResourceMetadata{}}, Cred: httpx.CredNone, Handler: s.resourceMetadata},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /oauth/register", Summary: "Register a public OAuth client (RFC 7591): https or loopback redirect URIs", Request: RegistrationRequest{}, Response: RegistrationResponse{}, Status: http.StatusCreated}, Cred: httpx.CredNone, Handler: s.register, OwnText: true},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /oauth/register/{client_id}", Summary: "Delete an OAuth client and its grants, with its registration access token (RFC 7592)", Status: http.StatusNoContent}, Cred: httpx.CredNone, Handler: s.deleteClient, OwnText: true},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /oauth/authorize", Summary: "The consent page (HTML): sign in with the account password, then allow or deny"}, Cred: httpx.CredNone, Handler: s.authorize, OwnText: true},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /oauth/authorize/login", Summary: "The consent page's sign-in form (email, password)"}, Cred: httpx.CredNone, Handler: s.login, OwnText: true},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /oauth/authorize/decide", Summary: "The consent page's decision: allow (an authorization code to the client) or deny"}, Cred: httpx.CredNone, Handler: s.decide, OwnText: true},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /oauth/token", Summary: "Exchange an authorization code (PKCE S256) or a refresh token (rotated) for tokens", Response: AccessTokenResponse{}}, Cred: httpx.CredNone, Handler: s.token, OwnText: true},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /oauth/revoke", Summary: "Revoke a refresh or access token and its whole grant (RFC 7009)"}, Cred: httpx.CredNone, Handler: s.revoke, OwnText: true},
	}
}
