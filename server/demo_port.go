package server

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/demo"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// demoEmail is the demo playground's account: its sandboxes are that
// account's, so quotas, the allowlist and the audit log apply to them.
const demoEmail = "demo-playground@boxkite.invalid"

// bucketDemo is the playground's create rate limit, per client address.
const bucketDemo = "demo"

// demoRatePerMinute is the reference's: 3 creates a minute per address.
const demoRatePerMinute = 3

// newDemo builds the demo playground when Config.DemoPlayground asks.
func (s *Server) newDemo() error {
	if !s.cfg.DemoPlayground {
		return nil
	}
	var once sync.Once
	var key string
	var keyErr error
	svc, err := demo.New(demo.Deps{
		Log: s.log, Now: func() time.Time { return s.now() }, Serve: s,
		Key: func(ctx context.Context) (string, error) {
			once.Do(func() { key, keyErr = s.demoKey(ctx) })
			return key, keyErr
		},
		Rate: func(w http.ResponseWriter, r *http.Request) error {
			return s.limitRate(w, bucketDemo, limits.ClientSource(r))
		},
	})
	if err != nil {
		return err
	}
	s.demo = svc
	return nil
}

// demoKey registers the demo account's API key: derived from the token
// signing key, so every server sharing the database (and every restart)
// uses the same one and no keys pile up.
func (s *Server) demoKey(ctx context.Context) (string, error) {
	jk, err := s.jwtKey(ctx)
	if err != nil {
		return "", err
	}
	raw, err := hkdf.Key(sha256.New, jk, nil, "boxkite demo playground key v1", 32)
	if err != nil {
		return "", fmt.Errorf("derive demo key: %w", err)
	}
	key := "bxk_live_" + base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	_, _, err = s.store.EnsureAccountKey(context.WithoutCancel(ctx),
		&model.Account{ID: model.NewID(), Email: demoEmail, CreatedAt: now},
		&model.APIKey{ID: model.NewID(), Name: "demo playground", Hash: model.HashAPIKey(key), Prefix: model.DisplayPrefix(key), Role: model.RoleMember, CreatedAt: now})
	if err != nil {
		return "", fmt.Errorf("register the demo account's key: %w", err)
	}
	return key, nil
}
