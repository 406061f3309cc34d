package server

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Hooks for the external tests of accounts, tokens and limits.

// SignHS256 is the MAC of access tokens, for tests that forge them.
func SignHS256(key []byte, signed string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	return m.Sum(nil)
}
