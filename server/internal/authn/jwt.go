package authn

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Access tokens are HS256 JWTs made and checked by
// github.com/golang-jwt/jwt/v5. The parser is pinned to HS256, so "none"
// and the algorithm-confusion tricks are refused by the library; the
// claims keep the JSON they had when the tokens were written by hand
// (sub, email, type, iat, exp as integers), so tokens issued before the
// switch still verify.

// TokenTypeAccess is the "type" claim of the tokens signup and login issue.
// Other token types (takeover, preview) will use other values, so one can
// never be used as another.
const TokenTypeAccess = "access"

// DefaultAccessTokenTTL is how long an access token is valid, as in the reference.
const DefaultAccessTokenTTL = 30 * time.Minute

// MinJWTSecretLen is the shortest Config.JWTSecret accepted: HS256 wants
// at least as many key bytes as the hash has.
const MinJWTSecretLen = 32

// ClockSkew is how far in the future an iat may be, for servers whose
// clocks disagree slightly.
const ClockSkew = time.Minute

// SettingJWTSecret names the generated signing key in the store's settings.
const SettingJWTSecret = "jwt_secret"

// Times are the iat and exp claims as integers, the way boxkite has
// always written them; embedded last in a claims struct, they give it
// the methods of jwt.Claims without changing its JSON.
type Times struct {
	Iat int64 `json:"iat"`
	Exp int64 `json:"exp"`
}

// GetExpirationTime implements jwt.Claims.
func (t Times) GetExpirationTime() (*jwt.NumericDate, error) {
	if t.Exp == 0 {
		return nil, nil
	}
	return jwt.NewNumericDate(time.Unix(t.Exp, 0)), nil
}

// GetIssuedAt implements jwt.Claims.
func (t Times) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(t.Iat, 0)), nil
}

// GetNotBefore implements jwt.Claims: boxkite tokens carry no nbf.
func (Times) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer implements jwt.Claims: boxkite tokens carry no iss.
func (Times) GetIssuer() (string, error) { return "", nil }

// GetSubject implements jwt.Claims; a claims type with a sub checks it itself.
func (Times) GetSubject() (string, error) { return "", nil }

// GetAudience implements jwt.Claims: these tokens carry no aud.
func (Times) GetAudience() (jwt.ClaimStrings, error) { return nil, nil }

// AccessClaims are the claims of an access token.
type AccessClaims struct {
	Sub   string `json:"sub"` // account id
	Email string `json:"email"`
	Type  string `json:"type"`
	Times
}

var (
	errTokenMalformed = errors.New("malformed token")
	// ErrTokenExpired is returned for a token whose exp has passed.
	ErrTokenExpired = errors.New("token expired")
	errTokenType    = errors.New("wrong token type")
)

// SignJWT returns claims as a signed token.
func SignJWT(key []byte, c AccessClaims) (string, error) { return SignToken(key, c) }

// SignToken returns claims, any claims with a "type", as an HS256 token.
func SignToken(key []byte, claims jwt.Claims) (string, error) {
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return tok, nil
}

// VerifyToken checks token's algorithm (HS256 only), signature and exp
// (required, by now) and its iat (at most ClockSkew ahead of now), and
// decodes its payload into claims; each token type checks its own
// claims after.
func VerifyToken(key []byte, token string, claims jwt.Claims, now time.Time) error {
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	_, err := p.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return key, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrTokenExpired
	case err != nil:
		return fmt.Errorf("%w: %w", errTokenMalformed, err)
	}
	iat, err := claims.GetIssuedAt()
	if err != nil {
		return fmt.Errorf("%w: %w", errTokenMalformed, err)
	}
	if iat != nil && iat.After(now.Add(ClockSkew)) {
		return fmt.Errorf("%w: issued in the future", errTokenMalformed)
	}
	return nil
}

// ParseJWT verifies token and returns its claims: the header must be
// HS256, the signature must match key, the type must be access and now
// must be before exp.
func ParseJWT(key []byte, token string, now time.Time) (AccessClaims, error) {
	var c AccessClaims
	if err := VerifyToken(key, token, &c, now); err != nil {
		return c, err
	}
	switch {
	case c.Type != TokenTypeAccess:
		return c, errTokenType
	case c.Sub == "":
		return c, errTokenMalformed
	}
	return c, nil
}

// LooksLikeJWT reports whether token has the shape of a JWT (three
// base64url parts, a JSON header), to tell a wrong credential type from
// a garbled one.
func LooksLikeJWT(token string) bool {
	return strings.HasPrefix(token, "eyJ") && strings.Count(token, ".") == 2
}
