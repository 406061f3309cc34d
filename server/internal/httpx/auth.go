package httpx

import (
	"fmt"
	"net/http"
	"strings"
	"time"

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
	// ErrExpiredKey refuses a key past its expiry. Only the key's holder
	// can be told so: the key has to match to get this far.
	ErrExpiredKey = api.Errorf(http.StatusUnauthorized, api.CodeInvalidAPIKey, "API key expired").
			WithHint("make a new key with `boxkite keys create` (POST /v1/api-keys), or sign in again with `boxkite login`")
)

// KeyExpiry is when a key made at now with CreateAPIKeyRequest's
// expires_in_seconds secs expires: nil for none, a 422 outside the bounds.
func KeyExpiry(now time.Time, secs *int64) (*time.Time, error) {
	if secs == nil {
		return nil, nil
	}
	if *secs < api.MinKeyExpiresInSeconds || *secs > api.MaxKeyExpiresInSeconds {
		return nil, Invalid("expires_in_seconds",
			fmt.Sprintf("expires_in_seconds %d is not between %d (a minute) and %d (a year)", *secs, api.MinKeyExpiresInSeconds, api.MaxKeyExpiresInSeconds),
			`e.g. {"expires_in_seconds": 86400} for a day; leave it out for a key that does not expire`)
	}
	t := now.Add(time.Duration(*secs) * time.Second).Truncate(time.Microsecond)
	return &t, nil
}

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
