package e2bport

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// TestNewRefusesMissingDeps: a port without its dependencies is refused
// at wiring, not at a request.
func TestNewRefusesMissingDeps(t *testing.T) {
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New(Deps{}) = nil error, want a refusal")
	}
}

// TestAuthenticateRefusesBeforeTheStore: a missing or malformed key is
// refused with the guard's answers without a store look-up.
func TestAuthenticateRefusesBeforeTheStore(t *testing.T) {
	a := &Auth{} // no store: a look-up would panic
	for _, tt := range []struct {
		key  string
		want error
	}{
		{"", httpx.ErrNoCredentials},
		{"bxk_live_short", httpx.ErrInvalidKey},
		{"not a key", httpx.ErrInvalidKey},
	} {
		if _, err := a.Authenticate(context.Background(), tt.key); !errors.Is(err, tt.want) {
			t.Errorf("Authenticate(%q) = %v, want %v", tt.key, err, tt.want)
		}
	}
}

// keyStore answers APIKeyByHash with one key; the port reads nothing else
// to authenticate.
type keyStore struct {
	Store
	key *model.APIKey
}

func (s keyStore) ListAPIKeys(context.Context, string) ([]*model.APIKey, error) {
	if s.key == nil {
		return nil, nil
	}
	k := *s.key
	return []*model.APIKey{&k}, nil
}

// TestValidKeysLeaveOutExpired: an envd token issued to a key stops
// working when the key expires, as when it is revoked (Session and Running
// go by validKeys): a token outlived its key's expiry.
func TestValidKeysLeaveOutExpired(t *testing.T) {
	now := time.Unix(1000, 0)
	before, after := now.Add(-time.Second), now.Add(time.Second)
	for _, tt := range []struct {
		name string
		key  model.APIKey
		want bool
	}{
		{"no expiry", model.APIKey{ID: "k"}, true},
		{"expires later", model.APIKey{ID: "k", ExpiresAt: &after}, true},
		{"expires now", model.APIKey{ID: "k", ExpiresAt: &now}, false},
		{"expired", model.APIKey{ID: "k", ExpiresAt: &before}, false},
		{"revoked", model.APIKey{ID: "k", RevokedAt: &before}, false},
	} {
		k := tt.key
		a := &Auth{d: Deps{Store: keyStore{key: &k}, Now: func() time.Time { return now }}}
		ids, err := a.validKeys(context.Background(), "acct")
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(ids, "k"); got != tt.want {
			t.Errorf("%s: valid = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func (s keyStore) APIKeyByHash(_ context.Context, hash string) (*model.APIKey, *model.Account, error) {
	if s.key == nil || hash != s.key.Hash {
		return nil, nil, model.ErrNotFound
	}
	k := *s.key
	return &k, &model.Account{ID: "org-account"}, nil
}

// TestAuthenticateOrgKeyEffectiveRole: an organization's key acts on the
// E2B API with the role it has on the REST API (authz.AuthenticateKey):
// lowered to its holder's current organization role, refused once the
// holder is no longer a member, even before the key's revocation lands.
func TestAuthenticateOrgKeyEffectiveRole(t *testing.T) {
	token := model.NewAPIKey()
	revoked := time.Unix(1, 0)
	now := time.Unix(1000, 0)
	later := now.Add(time.Second)
	for _, tt := range []struct {
		name     string
		key      model.APIKey
		wantRole string
		wantErr  error
	}{
		{name: "personal admin", key: model.APIKey{Role: model.RoleAdmin}, wantRole: model.RoleAdmin},
		{name: "org admin key, admin member", key: model.APIKey{Role: model.RoleAdmin, MemberID: "m", MemberRole: model.RoleAdmin}, wantRole: model.RoleAdmin},
		{name: "org admin key, member demoted to member", key: model.APIKey{Role: model.RoleAdmin, MemberID: "m", MemberRole: model.RoleMember}, wantRole: model.RoleMember},
		{name: "org admin key, member removed", key: model.APIKey{Role: model.RoleAdmin, MemberID: "m"}, wantErr: httpx.ErrInvalidKey},
		{name: "revoked", key: model.APIKey{Role: model.RoleAdmin, RevokedAt: &revoked}, wantErr: httpx.ErrInvalidKey},
		{name: "expired", key: model.APIKey{Role: model.RoleAdmin, ExpiresAt: &now}, wantErr: httpx.ErrExpiredKey},
		{name: "not yet expired", key: model.APIKey{Role: model.RoleAdmin, ExpiresAt: &later}, wantRole: model.RoleAdmin},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.key
			k.ID, k.Hash = "key-1", model.HashAPIKey(token)
			a := &Auth{d: Deps{Store: keyStore{key: &k}, Touch: func(*model.APIKey) {}, Now: func() time.Time { return now }}}
			ctx := httpx.WithInfo(context.Background(), &httpx.Info{})
			c, err := a.Authenticate(ctx, token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Authenticate = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := authz.From(ctx).Key.Role; got != tt.wantRole {
				t.Errorf("the request's key role = %q, want %q", got, tt.wantRole)
			}
			if got := c.(caller).key.Role; got != tt.wantRole {
				t.Errorf("the caller's key role = %q, want %q", got, tt.wantRole)
			}
		})
	}
	if _, err := (&Auth{d: Deps{Store: keyStore{}, Touch: func(*model.APIKey) {}, Now: time.Now}}).Authenticate(context.Background(), token); !errors.Is(err, httpx.ErrInvalidKey) {
		t.Errorf("an unknown key: %v, want %v", err, httpx.ErrInvalidKey)
	}
}

// TestSessionWatchesKeyExpiry: an envd session's requests end at their
// key's expiry as at its revocation: accountKey answers the key with its
// expiry (and no key once it has passed), and Revocable hands that expiry
// to WatchRevocation, whose timer the server's REST requests share
// (TestKeyExpiryEndsLongPoll).
func TestSessionWatchesKeyExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	exp := now.Add(time.Hour)
	k := model.APIKey{ID: "k", ExpiresAt: &exp}
	clock := now
	a := &Auth{d: Deps{
		Store: keyStore{key: &k}, Now: func() time.Time { return clock },
		CredentialValid: func(context.Context, string) (bool, error) { return true, nil },
	}}
	key, err := a.accountKey(context.Background(), "acct", "k")
	if err != nil || key == nil || key.ExpiresAt == nil || !key.ExpiresAt.Equal(exp) {
		t.Fatalf("accountKey = %+v, %v; want the key expiring at %v", key, err, exp)
	}
	var watched *time.Time
	s := &session{d: Deps{WatchRevocation: func(_ string, expires *time.Time, _ int64, _ context.CancelCauseFunc) func() {
		watched = expires
		return func() {}
	}}, keyID: "k", expires: key.ExpiresAt}
	_, stop := s.Revocable(context.Background())
	stop()
	if watched == nil || !watched.Equal(exp) {
		t.Errorf("Revocable watched expiry %v, want %v", watched, exp)
	}
	clock = exp
	if key, err := a.accountKey(context.Background(), "acct", "k"); err != nil || key != nil {
		t.Errorf("accountKey at expiry = %+v, %v; want none", key, err)
	}
}
