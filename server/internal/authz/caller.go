package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// Caller is who a request acts for, once the guard authenticated it: the
// account, and the API key or takeover grant it came with (neither for an
// access token).
type Caller struct {
	Account *model.Account
	Key     *model.APIKey // the API key presented; nil otherwise
	Grant   *Grant        // set instead of Key for a takeover token
}

// AccountID is the caller's account, for the request log.
func (c *Caller) AccountID() string {
	if c == nil || c.Account == nil {
		return ""
	}
	return c.Account.ID
}

// From returns the request's caller: an empty Caller before the guard
// authenticated it, nil outside a request served by the control plane.
func From(ctx context.Context) *Caller {
	info := httpx.InfoFrom(ctx)
	if info == nil {
		return nil
	}
	c, _ := info.Caller.(*Caller)
	if c == nil {
		c = &Caller{}
		info.Caller = c
	}
	return c
}

// Account returns the authenticated account. Only handlers behind the
// guard (any credential kind but httpx.CredNone) may call it.
func Account(ctx context.Context) *model.Account { return From(ctx).Account }

// PersonID is the person behind the caller: the holder of an
// organization's key, else the account itself (a personal account's key
// or access token).
func (c *Caller) PersonID() string {
	if c == nil || c.Account == nil {
		return ""
	}
	if c.Key != nil && c.Key.MemberID != "" {
		return c.Key.MemberID
	}
	return c.Account.ID
}

// Org returns the organization the caller acts for with one of its keys,
// nil for a personal account.
func (c *Caller) Org() *model.Org {
	if c == nil || c.Account == nil {
		return nil
	}
	return c.Account.Org
}

// errNotMember refuses the key of an organization its holder no longer
// belongs to.
var errNotMember = errors.New("authz: the key's holder is not a member of its organization")

// OrgKey returns key as it may act: a personal account's key as it is;
// an organization's key with Role lowered to its effective role (the
// lesser of its own and its holder's role in the organization,
// model.EffectiveKeyRole), or an error when the holder is no longer a
// member. Every role check downstream reads Caller.Key.Role, so it sees
// the effective role.
func OrgKey(key *model.APIKey) (*model.APIKey, error) {
	if key.MemberID == "" {
		return key, nil
	}
	eff := model.EffectiveKeyRole(key.Role, key.MemberRole)
	if eff == "" {
		return nil, errNotMember
	}
	k := *key
	k.Role = eff
	return &k, nil
}

// KeyStore is the look-up AuthenticateKey needs: model.AccountStore's.
type KeyStore interface {
	APIKeyByHash(ctx context.Context, hash string) (*model.APIKey, *model.Account, error)
}

// AuthenticateKey resolves a well-formed API key (model.ValidAPIKey) to
// the key as it may act (OrgKey) and its account: httpx.ErrInvalidKey for
// an unknown or revoked key, or the key of a member no longer in its
// organization; httpx.ErrExpiredKey for a key past its expiry at now. The REST guard and the E2B API both authenticate keys
// with it, so an organization key has the same effective role on both.
func AuthenticateKey(ctx context.Context, st KeyStore, token string, now time.Time) (*model.APIKey, *model.Account, error) {
	key, acct, err := st.APIKeyByHash(ctx, model.HashAPIKey(token))
	if errors.Is(err, model.ErrNotFound) {
		return nil, nil, httpx.ErrInvalidKey
	}
	if err != nil {
		return nil, nil, fmt.Errorf("look up api key: %w", err)
	}
	if key.RevokedAt != nil {
		return nil, nil, httpx.ErrInvalidKey
	}
	if key.Expired(now) {
		return nil, nil, httpx.ErrExpiredKey
	}
	if key, err = OrgKey(key); err != nil {
		return nil, nil, httpx.ErrInvalidKey
	}
	return key, acct, nil
}
