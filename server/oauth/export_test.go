package oauth

import (
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxkite/boxkite/server/internal/authn"
)

func signTestAccess(key []byte, typ, aud string, now, exp time.Time) (string, error) {
	return authn.SignToken(key, AccessClaims{
		Type: typ, ClientID: "c", GrantID: "g",
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: "acct", Audience: jwt.ClaimStrings{aud}, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
		},
	})
}
