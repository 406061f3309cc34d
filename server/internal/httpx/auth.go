package httpx

import (
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Refusals of a request's Authorization header.
var (
	ErrNoCredentials = api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "missing API key").
				WithHint("send Authorization: Bearer bxk_live_…; in local mode `boxkite up` writes a key to ~/.boxkite/local.toml")
	ErrMalformedAuth = api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "malformed Authorization header").
				WithHint("use Authorization: Bearer <api key>")
	// ErrInvalidKey is the one answer for unknown, malformed and revoked
	// keys, so it does not tell a guesser which keys exist.
	ErrInvalidKey = api.Errorf(http.StatusUnauthorized, api.CodeInvalidAPIKey, "invalid API key").
			WithHint("check the key (bxk_live_ followed by 43 characters); revoked keys stop working at once")
)

// BearerToken returns the credential of the Authorization header.
func BearerToken(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrNoCredentials
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrMalformedAuth
	}
	return strings.TrimSpace(token), nil
}
