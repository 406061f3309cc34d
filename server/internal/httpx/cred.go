package httpx

import "net/http"

// Cred is the credential a route takes. API keys and access tokens
// are not interchangeable (reference §3.2): each is refused with
// wrong_credential_type where the other is expected.
type Cred int

const (
	CredNone         Cred = iota // public
	CredAPIKey                   // Authorization: Bearer <API key>
	CredAPIKeyQuery              // the same, or ?api_key= (event streams)
	CredToken                    // Authorization: Bearer <access token>
	CredTokenOrAdmin             // an access token, or an admin API key
	CredTakeover                 // an API key, or a takeover token (takeover_token.go)
	CredBastion                  // the bastion's key (Config.BastionKey)
	CredMCP                      // an API key, or an MCP OAuth access token (server/oauth)
)

// String names the credential kind, as the route list (docs/routes.md)
// shows it.
func (c Cred) String() string {
	switch c {
	case CredNone:
		return "none"
	case CredAPIKey:
		return "api key"
	case CredAPIKeyQuery:
		return "api key, or ?api_key="
	case CredToken:
		return "access token"
	case CredTokenOrAdmin:
		return "access token, or admin api key"
	case CredTakeover:
		return "api key, or takeover token"
	case CredBastion:
		return "bastion key"
	case CredMCP:
		return "api key, or mcp oauth access token"
	}
	return "unknown"
}

// DocAuth is how /openapi.json documents a route taking c, unless its
// RouteDoc names another (a WebSocket that also takes ?api_key=).
func (c Cred) DocAuth() AuthKind {
	switch c {
	case CredNone:
		return AuthNone
	case CredAPIKeyQuery:
		return AuthKeyQuery
	case CredToken:
		return AuthToken
	case CredTokenOrAdmin:
		return AuthTokenOrAdmin
	}
	return AuthKey
}

// Handler is an error-returning HTTP handler. A returned *api.Error is the
// answer, in the error envelope; any other error is logged with its cause
// and answered 500, so internals never reach the client.
type Handler func(http.ResponseWriter, *http.Request) error

// Route is one route a subsystem serves: its pattern and how
// /openapi.json documents it (RouteDoc), the credential it takes and its
// handler. Each subsystem lists its routes in its routes.go; the server
// registers them behind its guard (rate limit, authentication,
// Idempotency-Key) and documents them.
type Route struct {
	RouteDoc
	Cred    Cred
	Handler Handler
	// Streaming: the route's POST bodies or answers are streamed, not
	// buffered, so Idempotency-Key does not apply to it.
	Streaming bool
	// Refused, if set, is told of each request the credential check
	// refused (the 401s that never reach Handler), with the refusal.
	Refused func(r *http.Request, err error)
	// OwnText: the guard does not refuse the route's query string and
	// headers for a NUL or bytes that are not UTF-8
	// (apihttp.CheckRequestText): a preview passes its app's on as they
	// came, and OAuth's endpoints check them themselves, to answer in the
	// protocol's error shape.
	OwnText bool
}
