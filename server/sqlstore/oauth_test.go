package sqlstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/oauth"
)

// testOAuth: clients, codes, grants and refresh tokens round-trip; a
// code is taken once; of concurrent rotations of one refresh token one
// spends it; revoking and deleting the client reach the grant.
func testOAuth(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(oauth.Store)
	ctx := t.Context()
	a := mustAccount(t, st.(model.Store), "a@example.com")
	c := &oauth.Client{ID: "mcp_client_x", Name: "n", RedirectURIs: []string{"http://127.0.0.1:1/cb", "https://x.example/cb"}, RegistrationHash: "h", CreatedAt: base}
	if err := st.CreateOAuthClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := st.OAuthClient(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Errorf("client (-want +got):\n%s", d)
	}
	code := &oauth.Code{Hash: "c1", ClientID: c.ID, AccountID: a.ID, RedirectURI: "u", Challenge: "ch", Resource: "r", CreatedAt: base, ExpiresAt: base.Add(time.Minute)}
	if err := st.CreateOAuthCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SpendOAuthCode(ctx, "c1", "g1"); err != nil || cmp.Diff(code, got) != "" {
		t.Errorf("SpendOAuthCode = %+v, %v", got, err)
	}
	spentCode := *code
	spentCode.GrantID = "g1"
	if got, err := st.SpendOAuthCode(ctx, "c1", "g2"); err != nil || cmp.Diff(&spentCode, got) != "" {
		t.Errorf("second spend = %+v, %v; want the first's grant", got, err)
	}
	if _, err := st.SpendOAuthCode(ctx, "none", "g3"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("spend of an unknown code: %v, want ErrNotFound", err)
	}
	g := &oauth.Grant{ID: model.NewID(), ClientID: c.ID, AccountID: a.ID, Resource: "r", CreatedAt: base}
	first := &oauth.RefreshToken{Hash: "r1", GrantID: g.ID, CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	if err := st.CreateOAuthGrant(ctx, g, first); err != nil {
		t.Fatal(err)
	}
	// Eight concurrent rotations: one spends it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	spent := 0
	for i := range 8 {
		wg.Go(func() {
			next := &oauth.RefreshToken{Hash: "r2-" + string(rune('a'+i)), GrantID: g.ID, CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
			ok, err := st.RotateOAuthRefreshToken(ctx, "r1", base.Add(time.Second), next)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				spent++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if spent != 1 {
		t.Errorf("%d rotations spent one token", spent)
	}
	if rt, err := st.OAuthRefreshToken(ctx, "r1"); err != nil || !rt.UsedAt.Equal(base.Add(time.Second)) {
		t.Errorf("spent token = %+v, %v", rt, err)
	}
	if err := st.RevokeOAuthGrant(ctx, g.ID, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := st.OAuthGrant(ctx, g.ID); err != nil || !got.RevokedAt.Equal(base.Add(time.Minute)) {
		t.Errorf("revoked grant = %+v, %v", got, err)
	}
	if err := st.RevokeOAuthGrant(ctx, "nope", base); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("revoking no grant: %v", err)
	}
	if err := st.DeleteOAuthClient(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.OAuthGrant(ctx, g.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("grant after its client was deleted: %v", err)
	}
	if _, err := st.OAuthRefreshToken(ctx, "r1"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("refresh token after its client was deleted: %v", err)
	}
	if err := st.DeleteOAuthClient(ctx, c.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
}
