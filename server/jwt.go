package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Access tokens are HS256 JWTs, written by hand: the format is three
// base64url parts, and a library would bring algorithms ("none", RS256
// with a confusable key) we must refuse anyway.

// tokenTypeAccess is the "type" claim of the tokens signup and login issue.
// Other token types (takeover, preview) will use other values, so one can
// never be used as another.
const tokenTypeAccess = "access"

// DefaultAccessTokenTTL is how long an access token is valid, as in the reference.
const DefaultAccessTokenTTL = 30 * time.Minute

// minJWTSecretLen is the shortest Config.JWTSecret accepted: HS256 wants
// at least as many key bytes as the hash has.
const minJWTSecretLen = 32

// jwtClockSkew is how far in the future an iat may be, for servers whose
// clocks disagree slightly.
const jwtClockSkew = time.Minute

// settingJWTSecret names the generated signing key in the store's settings.
const settingJWTSecret = "jwt_secret"

// jwtHeader is the only header we issue or accept.
var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// accessClaims are the claims of an access token.
type accessClaims struct {
	Sub   string `json:"sub"` // account id
	Email string `json:"email"`
	Type  string `json:"type"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
}

var (
	errTokenMalformed = errors.New("malformed token")
	errTokenSignature = errors.New("bad token signature")
	errTokenExpired   = errors.New("token expired")
	errTokenType      = errors.New("wrong token type")
)

// signJWT returns claims as a signed token.
func signJWT(key []byte, c accessClaims) (string, error) { return signToken(key, c) }

func jwtMAC(key []byte, signed string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// signToken returns claims, any JSON object with a "type", as a signed token.
func signToken(key []byte, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode claims: %w", err)
	}
	signed := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(payload)
	return signed + "." + base64.RawURLEncoding.EncodeToString(jwtMAC(key, signed)), nil
}

// verifyJWT checks token's header (HS256 only) and signature and returns
// its payload, not yet decoded: each token type checks its own claims.
func verifyJWT(key []byte, token string) ([]byte, error) {
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
	if !hmac.Equal(sig, jwtMAC(key, parts[0]+"."+parts[1])) {
		return nil, errTokenSignature
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errTokenMalformed
	}
	return payload, nil
}

// parseJWT verifies token and returns its claims: the header must be
// HS256, the signature must match key, the type must be access and now
// must be before exp.
func parseJWT(key []byte, token string, now time.Time) (accessClaims, error) {
	var c accessClaims
	payload, err := verifyJWT(key, token)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, errTokenMalformed
	}
	switch {
	case c.Type != tokenTypeAccess:
		return c, errTokenType
	case c.Sub == "" || c.Exp == 0:
		return c, errTokenMalformed
	case now.Unix() >= c.Exp:
		return c, errTokenExpired
	case time.Unix(c.Iat, 0).After(now.Add(jwtClockSkew)):
		return c, fmt.Errorf("%w: issued in the future", errTokenMalformed)
	}
	return c, nil
}

// looksLikeJWT reports whether token has the shape of a JWT (three
// base64url parts, a JSON header), to tell a wrong credential type from
// a garbled one.
func looksLikeJWT(token string) bool {
	return strings.HasPrefix(token, "eyJ") && strings.Count(token, ".") == 2
}

// jwtKeys holds the signing key, loaded once from the config or the store.
type jwtKeys struct {
	mu  sync.Mutex
	key []byte
}

// jwtKey returns the signing key: Config.JWTSecret, else a random key
// generated on first use and kept in the store, so tokens survive restarts
// and every server sharing the database accepts them.
func (s *Server) jwtKey(ctx context.Context) ([]byte, error) {
	if s.cfg.JWTSecret != "" {
		return []byte(s.cfg.JWTSecret), nil
	}
	s.jwt.mu.Lock()
	defer s.jwt.mu.Unlock()
	if s.jwt.key != nil {
		return s.jwt.key, nil
	}
	v, err := s.store.EnsureSetting(ctx, settingJWTSecret, hex.EncodeToString(randBytes(32)))
	if err != nil {
		return nil, fmt.Errorf("load token signing key: %w", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) < minJWTSecretLen {
		return nil, errors.New("the stored token signing key is malformed")
	}
	s.jwt.key = key
	return key, nil
}

// issueAccessToken returns a fresh access token for acct and its lifetime.
func (s *Server) issueAccessToken(ctx context.Context, acct *model.Account) (string, time.Duration, error) {
	key, err := s.jwtKey(ctx)
	if err != nil {
		return "", 0, err
	}
	now := s.now()
	ttl := s.cfg.AccessTokenTTL
	tok, err := signJWT(key, accessClaims{
		Sub: acct.ID, Email: acct.Email, Type: tokenTypeAccess,
		Iat: now.Unix(), Exp: now.Add(ttl).Unix(),
	})
	return tok, ttl, err
}
