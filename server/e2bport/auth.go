package e2bport

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// Auth is the facade's authentication: e2b.Auth.
type Auth struct{ d Deps }

var _ e2b.Auth = (*Auth)(nil)

// Authenticate resolves an API key and records the caller in the
// request's authorization context.
func (a *Auth) Authenticate(ctx context.Context, key string) (e2b.Caller, error) {
	if key == "" {
		return nil, httpx.ErrNoCredentials
	}
	if !model.ValidAPIKey(key) {
		return nil, httpx.ErrInvalidKey
	}
	k, acct, err := authz.AuthenticateKey(ctx, a.d.Store, key, a.d.Now())
	if err != nil {
		return nil, err
	}
	a.d.Touch(k)
	// The request acts for the account from here, as a REST request does
	// once the guard authenticated it: every data access is authorized
	// against it (server/internal/authz).
	if c := authz.From(ctx); c != nil {
		c.Account, c.Key = acct, k
	}
	return caller{acct, k}, nil
}

// TokenKey derives the envd token key from the token signing key, so the
// two never serve each other's purpose.
func (a *Auth) TokenKey(ctx context.Context) ([]byte, error) {
	key, err := a.d.TokenSecret(ctx)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("boxkite e2b envd token key"))
	return m.Sum(nil), nil
}

// accountKey returns keyID if it is a valid key of the account: not
// revoked, not expired, and not revoked a moment ago on another server;
// nil if it is not.
func (a *Auth) accountKey(ctx context.Context, accountID, keyID string) (*model.APIKey, error) {
	keys, err := a.d.Store.ListAPIKeys(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	i := slices.IndexFunc(keys, func(k *model.APIKey) bool { return k.ID == keyID })
	if i < 0 || keys[i].RevokedAt != nil || keys[i].Expired(a.d.Now()) {
		return nil, nil
	}
	if ok, err := a.d.CredentialValid(ctx, keyID); err != nil || !ok {
		return nil, err
	}
	return keys[i], nil
}

// validKeys lists the ids of the account's keys that are neither revoked
// nor expired: an envd token issued to a key works as long as the key.
func (a *Auth) validKeys(ctx context.Context, accountID string) ([]string, error) {
	keys, err := a.d.Store.ListAPIKeys(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	now := a.d.Now()
	var ids []string
	for _, k := range keys {
		if k.RevokedAt == nil && !k.Expired(now) {
			ids = append(ids, k.ID)
		}
	}
	return ids, nil
}
