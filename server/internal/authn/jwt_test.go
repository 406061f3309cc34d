package authn

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// legacyToken was issued by the hand-written HS256 signer this package
// had before it used github.com/golang-jwt/jwt/v5 (key: 32 × "k").
const legacyToken = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
	"eyJzdWIiOiJhY2NfMDEiLCJlbWFpbCI6ImFAZXhhbXBsZS5jb20iLCJ0eXBlIjoiYWNjZXNzIiwiaWF0IjoxNzAwMDAwMDAwLCJleHAiOjE3MDAwMDE4MDB9." +
	"x1s-thMeF_2A2-cZrXtez9He5cMGVKi0wXAaCHImqBQ"

var (
	testKey     = []byte(strings.Repeat("k", 32))
	legacyClaim = AccessClaims{
		Sub: "acc_01", Email: "a@example.com", Type: TokenTypeAccess,
		Times: Times{Iat: 1700000000, Exp: 1700001800},
	}
)

// TestLegacyTokens: a token from before the library still verifies with
// the same claims, and the library signs the same claims to the same bytes.
func TestLegacyTokens(t *testing.T) {
	t.Parallel()
	got, err := ParseJWT(testKey, legacyToken, time.Unix(1700000100, 0))
	if err != nil {
		t.Fatalf("legacy token refused: %v", err)
	}
	if d := cmp.Diff(legacyClaim, got); d != "" {
		t.Errorf("claims differ (-want +got):\n%s", d)
	}
	tok, err := SignJWT(testKey, legacyClaim)
	if err != nil {
		t.Fatal(err)
	}
	if tok != legacyToken {
		t.Errorf("library token differs from the hand-written one:\n got %s\nwant %s", tok, legacyToken)
	}
}

func TestParseJWTRefusals(t *testing.T) {
	t.Parallel()
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Unix(1700000100, 0)
	parts := strings.Split(legacyToken, ".")
	sign := func(c AccessClaims) string {
		tok, err := SignJWT(testKey, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	with := func(f func(*AccessClaims)) string {
		c := legacyClaim
		f(&c)
		return sign(c)
	}
	tests := []struct {
		name, token string
		expired     bool
	}{
		{"alg none", enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + ".", false},
		{"alg HS512 header", enc([]byte(`{"alg":"HS512","typ":"JWT"}`)) + "." + parts[1] + "." + parts[2], false},
		{"alg RS256 header", enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + parts[1] + "." + parts[2], false},
		{"other key", func() string { tok, _ := SignJWT([]byte(strings.Repeat("x", 32)), legacyClaim); return tok }(), false},
		{"payload tampered", parts[0] + "." + enc([]byte(`{"sub":"acc_02","type":"access","iat":1700000000,"exp":1700001800}`)) + "." + parts[2], false},
		{"two parts", parts[0] + "." + parts[1], false},
		{"expired", with(func(c *AccessClaims) { c.Exp = now.Unix() }), true},
		{"no exp", with(func(c *AccessClaims) { c.Exp = 0 }), false},
		{"issued in the future", with(func(c *AccessClaims) { c.Iat = now.Add(2 * ClockSkew).Unix(); c.Exp = now.Add(time.Hour).Unix() }), false},
		{"wrong type", with(func(c *AccessClaims) { c.Type = "sandbox_takeover" }), false},
		{"no subject", with(func(c *AccessClaims) { c.Sub = "" }), false},
		{"garbage", "eyJ.x.y", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJWT(testKey, tt.token, now)
			if err == nil {
				t.Fatal("accepted")
			}
			if got := errors.Is(err, ErrTokenExpired); got != tt.expired {
				t.Errorf("err = %v; expired = %v, want %v", err, got, tt.expired)
			}
		})
	}
	// Slight clock skew is tolerated.
	if _, err := ParseJWT(testKey, with(func(c *AccessClaims) { c.Iat = now.Add(ClockSkew / 2).Unix() }), now); err != nil {
		t.Errorf("iat within the skew refused: %v", err)
	}
}

func FuzzParseJWT(f *testing.F) {
	f.Add(legacyToken)
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := ParseJWT(testKey, token, time.Unix(1700000100, 0))
		if err != nil {
			return
		}
		if c.Type != TokenTypeAccess || c.Sub == "" || c.Exp <= 1700000100 {
			t.Fatalf("accepted bad claims %+v", c)
		}
	})
}
