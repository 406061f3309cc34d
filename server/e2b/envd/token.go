package envd

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Tokens issues and checks the per-sandbox credentials of envd. The E2B
// SDK never sends the API key to envd: the access token (the create
// response's envdAccessToken) is its only credential there, and the traffic
// token (trafficAccessToken) is what the code interpreter's SDK sends on
// its routes, which do not all carry the access token.
//
// A token is the sandbox's and the API key's that asked for it:
// "bxe2b.<key id>.<HMAC of both under the server's secret>". So every
// server sharing the store derives the same one, it needs no storage, and
// revoking the key revokes every token it was handed (the session refuses
// a revoked key; its streams end).
type Tokens struct {
	key func(ctx context.Context) ([]byte, error)
}

// Token purposes.
const (
	purposeAccess  = "envd-access"
	purposeTraffic = "envd-traffic"
)

// NewTokens returns Tokens keyed by what key returns (a secret of at least
// 32 bytes, the same on every server).
func NewTokens(key func(ctx context.Context) ([]byte, error)) *Tokens {
	return &Tokens{key: key}
}

// Access returns the envd access token of a sandbox for an API key.
func (t *Tokens) Access(ctx context.Context, sandboxID, keyID string) (string, error) {
	return t.derive(ctx, purposeAccess, sandboxID, keyID)
}

// Traffic returns the code interpreter's traffic token of a sandbox for
// an API key.
func (t *Tokens) Traffic(ctx context.Context, sandboxID, keyID string) (string, error) {
	return t.derive(ctx, purposeTraffic, sandboxID, keyID)
}

func (t *Tokens) derive(ctx context.Context, purpose, sandboxID, keyID string) (string, error) {
	key, err := t.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("boxkite e2b " + purpose + "\x00" + sandboxID + "\x00" + keyID))
	return tokenPrefix + keyID + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

const tokenPrefix = "bxe2b."

// verify returns the API key id a token for purpose on the sandbox was
// derived for, or ok false when it is not such a token.
func (t *Tokens) verify(ctx context.Context, purpose, sandboxID, token string) (keyID string, ok bool, err error) {
	rest, found := strings.CutPrefix(token, tokenPrefix)
	keyID, _, found2 := strings.Cut(rest, ".")
	if !found || !found2 || !validKeyID(keyID) {
		return "", false, nil
	}
	want, err := t.derive(ctx, purpose, sandboxID, keyID)
	if err != nil {
		return "", false, err
	}
	return keyID, equal(token, want), nil
}

// validKeyID accepts what a key id may look like (a UUID): letters,
// digits and dashes, so the token's dots stay separators.
func validKeyID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// equal compares a presented token with the expected one in constant time.
func equal(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signature is the E2B SDK's signed-URL signature of a /files request:
// "v1_" and unpadded standard base64 of
// sha256("<path>:<read|write>:<user>:<access token>[:<expiry>]").
func signature(path, op, user, token string, expiry string) string {
	s := path + ":" + op + ":" + user + ":" + token
	if expiry != "" {
		s += ":" + expiry
	}
	sum := sha256.Sum256([]byte(s))
	return "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

// signedURLValid checks the signature query parameters that
// sandbox.uploadUrl()/downloadUrl() put in place of X-Access-Token.
func signedURLValid(q url.Values, op, token string, now time.Time) bool {
	sig := q.Get("signature")
	if sig == "" {
		return false
	}
	exp := q.Get("signature_expiration")
	if exp != "" {
		sec, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || now.Unix() > sec {
			return false
		}
	}
	return equal(sig, signature(q.Get("path"), op, q.Get("username"), token, exp))
}
