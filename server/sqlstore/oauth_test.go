package sqlstore_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/oauth"
)

// testOAuth: clients, codes, grants and refresh tokens round-trip; a
// code is spent once, with its grant, or not at all (testOAuthCodeSpend);
// of concurrent rotations of one refresh token one spends it; revoking
// and deleting the client reach the grant.
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
	if got, err := st.OAuthCode(ctx, "c1"); err != nil || cmp.Diff(code, got) != "" {
		t.Errorf("OAuthCode = %+v, %v", got, err)
	}
	g := testOAuthCodeSpend(t, st, code)
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

// testOAuthCodeSpend: spending code stores its grant and the grant's first
// refresh token with it; a second spend reports the first's grant and
// stores none; a failure after the spend (here the first refresh token's
// insert) leaves the code unspent and no grant, so a retry succeeds; of
// concurrent spends, one wins. It returns the grant, whose first refresh
// token is "r1".
func testOAuthCodeSpend(t *testing.T, st oauth.Store, code *oauth.Code) *oauth.Grant {
	t.Helper()
	ctx := t.Context()
	grant := func(refresh string) (*oauth.Grant, *oauth.RefreshToken) {
		g := &oauth.Grant{ID: model.NewID(), ClientID: code.ClientID, AccountID: code.AccountID, Resource: code.Resource, CreatedAt: base}
		return g, &oauth.RefreshToken{Hash: refresh, GrantID: g.ID, CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	}
	stored := func(g *oauth.Grant) bool {
		t.Helper()
		_, err := st.OAuthGrant(ctx, g.ID)
		if err != nil && !errors.Is(err, model.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	g, first := grant("r1")
	if got, err := st.SpendOAuthCode(ctx, code.Hash, g, first); err != nil || cmp.Diff(code, got) != "" {
		t.Errorf("SpendOAuthCode = %+v, %v", got, err)
	}
	if rt, err := st.OAuthRefreshToken(ctx, "r1"); err != nil || !stored(g) || rt.GrantID != g.ID {
		t.Errorf("after the spend: grant stored %v, first refresh token %+v, %v", stored(g), rt, err)
	}
	spentCode := *code
	spentCode.GrantID = g.ID
	g2, first2 := grant("r2")
	if got, err := st.SpendOAuthCode(ctx, code.Hash, g2, first2); err != nil || cmp.Diff(&spentCode, got) != "" || stored(g2) {
		t.Errorf("second spend = %+v, %v, its grant stored %v; want the first's grant and no other", got, err, stored(g2))
	}
	if _, err := st.SpendOAuthCode(ctx, "none", g2, first2); !errors.Is(err, model.ErrNotFound) || stored(g2) {
		t.Errorf("spend of an unknown code: %v, grant stored %v; want ErrNotFound and no grant", err, stored(g2))
	}

	// A failure after the spend: the first refresh token's hash is taken.
	retry := *code
	retry.Hash = "c-retry"
	if err := st.CreateOAuthCode(ctx, &retry); err != nil {
		t.Fatal(err)
	}
	g3, clash := grant("r1")
	if _, err := st.SpendOAuthCode(ctx, retry.Hash, g3, clash); err == nil {
		t.Fatal("a spend whose refresh token could not be stored succeeded")
	}
	if got, err := st.OAuthCode(ctx, retry.Hash); err != nil || got.GrantID != "" || stored(g3) {
		t.Fatalf("after a failed spend: code %+v, %v, grant stored %v; want the code unspent and no grant", got, err, stored(g3))
	}
	g4, first4 := grant("r4")
	if got, err := st.SpendOAuthCode(ctx, retry.Hash, g4, first4); err != nil || got.GrantID != "" || !stored(g4) {
		t.Errorf("retry after a failed spend = %+v, %v, grant stored %v; want it spent by its grant", got, err, stored(g4))
	}

	// Eight concurrent spends of one code: one wins, the others see its grant.
	race := *code
	race.Hash = "c-race"
	if err := st.CreateOAuthCode(ctx, &race); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	grants := make([]*oauth.Grant, 8)
	spentBy := make([]string, 8)
	for i := range grants {
		g, first := grant("r-race-" + strconv.Itoa(i))
		grants[i] = g
		wg.Go(func() {
			got, err := st.SpendOAuthCode(ctx, race.Hash, g, first)
			if err != nil {
				t.Error(err)
				return
			}
			spentBy[i] = got.GrantID // "": this spend won
			if spentBy[i] == "" {
				spentBy[i] = g.ID
			}
		})
	}
	wg.Wait()
	won := 0
	for i, g := range grants {
		if stored(g) {
			won++
		}
		if spentBy[i] != spentBy[0] {
			t.Errorf("concurrent spends report grants %q and %q", spentBy[0], spentBy[i])
		}
	}
	if won != 1 {
		t.Errorf("%d of 8 concurrent spends stored a grant, want 1", won)
	}
	return g
}
