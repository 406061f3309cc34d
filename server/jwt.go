package server

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/internal/authn"
	"github.com/boxkite/boxkite/server/model"
)

// Access tokens (server/internal/authn signs and checks them): the
// server keeps their signing key and issues them at signup and login.

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
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // never fails on Linux (Go 1.24+ crashes the program instead)
	v, err := s.store.EnsureSetting(ctx, authn.SettingJWTSecret, hex.EncodeToString(secret))
	if err != nil {
		return nil, fmt.Errorf("load token signing key: %w", err)
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) < authn.MinJWTSecretLen {
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
	tok, err := authn.SignJWT(key, authn.AccessClaims{
		Sub: acct.ID, Email: acct.Email, Type: authn.TokenTypeAccess,
		Times: authn.Times{Iat: now.Unix(), Exp: now.Add(ttl).Unix()},
	})
	return tok, ttl, err
}

// ConsoleLinkKey returns the key the web console seals its one-time
// sign-in links with (server/console): derived from the token signing
// key, so every server sharing the database opens the links of any.
func (s *Server) ConsoleLinkKey(ctx context.Context) ([]byte, error) {
	key, err := s.jwtKey(ctx)
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, key, nil, "boxkite console links v1", 32)
}
