// Package oauth is the OAuth 2.1 authorization server of the hosted MCP
// endpoint (/mcp/): authorization-server (RFC 8414) and protected-resource
// (RFC 9728) metadata, dynamic registration of public clients (RFC 7591)
// and their deletion (RFC 7592), the authorization code grant with PKCE
// S256 behind a consent page where the user signs in with the account
// password, refresh tokens rotated on every use with reuse detection that
// revokes the whole grant, revocation (RFC 7009), and the
// audience-checked access tokens /mcp/ accepts beside API keys
// (Authenticate). Tokens are JWTs made by github.com/golang-jwt/jwt/v5;
// PKCE's S256 is golang.org/x/oauth2's. docs/oauth.md is the user's guide.
package oauth
