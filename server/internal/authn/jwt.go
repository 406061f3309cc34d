package authn

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Access tokens are HS256 JWTs, written by hand: the format is three
// base64url parts, and a library would bring algorithms ("none", RS256
// with a confusable key) we must refuse anyway.

// TokenTypeAccess is the "type" claim of the tokens signup and login issue.
// Other token types (takeover, preview) will use other values, so one can
// never be used as another.
const TokenTypeAccess = "access"

// DefaultAccessTokenTTL is how long an access token is valid, as in the reference.
const DefaultAccessTokenTTL = 30 * time.Minute

// MinJWTSecretLen is the shortest Config.JWTSecret accepted: HS256 wants
// at least as many key bytes as the hash has.
const MinJWTSecretLen = 32

// jwtClockSkew is how far in the future an iat may be, for servers whose
// clocks disagree slightly.
const ClockSkew = time.Minute

// SettingJWTSecret names the generated signing key in the store's settings.
const SettingJWTSecret = "jwt_secret"

// jwtHeader is the only header we issue or accept.
var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// AccessClaims are the claims of an access token.
type AccessClaims struct {
	Sub   string `json:"sub"` // account id
	Email string `json:"email"`
	Type  string `json:"type"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
}

var (
	errTokenMalformed = errors.New("malformed token")
	errTokenSignature = errors.New("bad token signature")
	ErrTokenExpired   = errors.New("token expired")
	errTokenType      = errors.New("wrong token type")
)

// SignJWT returns claims as a signed token.
func SignJWT(key []byte, c AccessClaims) (string, error) { return SignToken(key, c) }

func MAC(key []byte, signed string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// SignToken returns claims, any JSON object with a "type", as a signed token.
func SignToken(key []byte, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode claims: %w", err)
	}
	signed := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(payload)
	return signed + "." + base64.RawURLEncoding.EncodeToString(MAC(key, signed)), nil
}

// VerifyJWT checks token's header (HS256 only) and signature and returns
// its payload, not yet decoded: each token type checks its own claims.
func VerifyJWT(key []byte, token string) ([]byte, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errTokenMalformed
	}
	hdr, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, errTokenMalformed
	}
	var h struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(hdr, &h); err != nil {
		return nil, errTokenMalformed
	}
	if h.Alg != "HS256" {
		return nil, fmt.Errorf("%w: algorithm %q", errTokenMalformed, h.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, errTokenMalformed
	}
	if !hmac.Equal(sig, MAC(key, parts[0]+"."+parts[1])) {
		return nil, errTokenSignature
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errTokenMalformed
	}
	return payload, nil
}

// ParseJWT verifies token and returns its claims: the header must be
// HS256, the signature must match key, the type must be access and now
// must be before exp.
func ParseJWT(key []byte, token string, now time.Time) (AccessClaims, error) {
	var c AccessClaims
	payload, err := VerifyJWT(key, token)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, errTokenMalformed
	}
	switch {
	case c.Type != TokenTypeAccess:
		return c, errTokenType
	case c.Sub == "" || c.Exp == 0:
		return c, errTokenMalformed
	case now.Unix() >= c.Exp:
		return c, ErrTokenExpired
	case time.Unix(c.Iat, 0).After(now.Add(ClockSkew)):
		return c, fmt.Errorf("%w: issued in the future", errTokenMalformed)
	}
	return c, nil
}

// LooksLikeJWT reports whether token has the shape of a JWT (three
// base64url parts, a JSON header), to tell a wrong credential type from
// a garbled one.
func LooksLikeJWT(token string) bool {
	return strings.HasPrefix(token, "eyJ") && strings.Count(token, ".") == 2
}
