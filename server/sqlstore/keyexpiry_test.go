package sqlstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// testKeyExpiry: a key's expiry round-trips through the key lookup (twice,
// so that SQLite's lookup cache answers the second) and the list, and a
// key without one never expires.
func testKeyExpiry(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	forever, _ := mustKey(t, st, a)
	expires := base.Add(time.Hour)
	secret, k := mustExpiringKey(t, st, a, expires)
	for i := range 2 {
		got, _, err := st.APIKeyByHash(ctx, model.HashAPIKey(secret))
		if err != nil {
			t.Fatalf("APIKeyByHash #%d: %v", i, err)
		}
		if got.ExpiresAt == nil || !got.ExpiresAt.Equal(expires) {
			t.Fatalf("APIKeyByHash #%d: ExpiresAt = %v, want %v", i, got.ExpiresAt, expires)
		}
		if got.Expired(expires.Add(-time.Microsecond)) || !got.Expired(expires) || !got.Expired(expires.Add(time.Hour)) {
			t.Errorf("APIKeyByHash #%d: Expired wrong around %v", i, expires)
		}
		got.ExpiresAt = nil // a caller's change must not reach the cache
		never, _, err := st.APIKeyByHash(ctx, model.HashAPIKey(forever))
		if err != nil {
			t.Fatalf("APIKeyByHash(no expiry) #%d: %v", i, err)
		}
		if never.ExpiresAt != nil || never.Expired(base.AddDate(100, 0, 0)) {
			t.Errorf("key without expiry: ExpiresAt = %v", never.ExpiresAt)
		}
	}
	keys, err := st.ListAPIKeys(ctx, a.ID)
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	n := 0
	for _, lk := range keys {
		if lk.ID == k.ID {
			n++
			if lk.ExpiresAt == nil || !lk.ExpiresAt.Equal(expires) {
				t.Errorf("ListAPIKeys: ExpiresAt = %v, want %v", lk.ExpiresAt, expires)
			}
		} else if lk.ExpiresAt != nil {
			t.Errorf("ListAPIKeys: key %s ExpiresAt = %v, want none", lk.Name, lk.ExpiresAt)
		}
	}
	if n != 1 {
		t.Errorf("ListAPIKeys: the expiring key listed %d times", n)
	}
}

// testKeyExpiryCredentials: RevokedCredentials, which a server's
// reconnect recheck and takeover tokens ask, counts a key at or past its
// expiry as no longer valid, and a key without one as valid.
func testKeyExpiryCredentials(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	_, forever := mustKey(t, st, a)
	expires := base.Add(time.Hour)
	_, k := mustExpiringKey(t, st, a, expires)
	for _, tt := range []struct {
		at   time.Time
		gone []string
	}{
		{expires.Add(-time.Microsecond), nil},
		{expires, []string{k.ID}},
		{expires.AddDate(100, 0, 0), []string{k.ID}},
	} {
		gone, err := st.RevokedCredentials(ctx, []string{forever.ID, k.ID}, tt.at)
		if err != nil {
			t.Fatalf("RevokedCredentials: %v", err)
		}
		if !slices.Equal(gone, tt.gone) {
			t.Errorf("RevokedCredentials at expiry%+v: %v, want %v", tt.at.Sub(expires), gone, tt.gone)
		}
	}
}

// mustExpiringKey is mustKey for a key named "expiring" that expires at
// expires.
func mustExpiringKey(t *testing.T, st model.Store, a *model.Account, expires time.Time) (string, *model.APIKey) {
	t.Helper()
	secret := model.NewAPIKey()
	k := &model.APIKey{
		ID: model.NewID(), AccountID: a.ID, Name: "expiring", Hash: model.HashAPIKey(secret),
		Prefix: secret[:17], Role: model.RoleAdmin, CreatedAt: base, ExpiresAt: &expires,
	}
	if err := st.CreateAPIKey(t.Context(), k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return secret, k
}
