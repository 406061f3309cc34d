package sqlstore_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
)

// testSecrets: secrets round-trip, are scoped by account, keep their
// limit under concurrent creates, and sandboxes' grants are kept.
func testSecrets(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(secrets.Store)
	ctx := t.Context()
	a := mustAccount(t, st.(model.Store), "a@example.com")
	b := mustAccount(t, st.(model.Store), "b@example.com")
	rec := func(acct, name string) *secrets.Record {
		return &secrets.Record{
			ID: model.NewID(), AccountID: acct, Name: name, AllowedHosts: []string{"api.example.com", "127.0.0.1"},
			TrustTier: "testnet", KeyID: "k1", WrappedKey: []byte{1, 2, 0, 255}, Ciphertext: []byte("ct\x00"),
			CreatedAt: base, UpdatedAt: base,
		}
	}
	r := rec(a.ID, "TOKEN")
	if err := st.CreateSecret(ctx, r, 3); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	if err := st.CreateSecret(ctx, rec(a.ID, "TOKEN"), 3); !errors.Is(err, secrets.ErrNameTaken) {
		t.Errorf("same name: %v, want ErrNameTaken", err)
	}
	if err := st.CreateSecret(ctx, rec(b.ID, "TOKEN"), 3); err != nil {
		t.Errorf("same name, other account: %v", err)
	}
	got, err := st.Secrets(ctx, a.ID)
	if err != nil || len(got) != 1 {
		t.Fatalf("Secrets = %v, %v", got, err)
	}
	if diff := cmp.Diff(r, got[0]); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Scoped: B's id and account do not reach A's secret.
	r2 := *r
	r2.AccountID = b.ID
	if err := st.UpdateSecret(ctx, &r2); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("UpdateSecret as B: %v", err)
	}
	if err := st.DeleteSecret(ctx, b.ID, r.ID); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("DeleteSecret as B: %v", err)
	}
	r.AllowedHosts, r.Ciphertext, r.UpdatedAt = []string{"b.example.com"}, []byte("new"), base.Add(1e9)
	if err := st.UpdateSecret(ctx, r); err != nil {
		t.Fatalf("UpdateSecret: %v", err)
	}
	if err := st.RewrapSecret(ctx, r.ID, "other", "k2", []byte("w")); !errors.Is(err, secrets.ErrChanged) {
		t.Errorf("RewrapSecret from a stale key: %v", err)
	}
	if err := st.RewrapSecret(ctx, r.ID, "k1", "k2", []byte("w")); err != nil {
		t.Errorf("RewrapSecret: %v", err)
	}
	if err := st.TouchSecrets(ctx, a.ID, []string{"TOKEN"}, base.Add(2e9)); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Secrets(ctx, a.ID)
	if g := got[0]; g.KeyID != "k2" || string(g.WrappedKey) != "w" || string(g.Ciphertext) != "new" || !g.LastUsedAt.Equal(base.Add(2e9)) || g.AllowedHosts[0] != "b.example.com" {
		t.Errorf("after update, rewrap and touch: %+v", g)
	}
	if gotB, _ := st.Secrets(ctx, b.ID); len(gotB) != 1 || !gotB[0].LastUsedAt.IsZero() {
		t.Errorf("B's secret touched: %+v", gotB)
	}

	// The limit holds under concurrent creates.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = st.CreateSecret(ctx, rec(a.ID, "C"+model.NewID()), 3) })
	}
	wg.Wait()
	if all, _ := st.Secrets(ctx, a.ID); len(all) != 3 {
		t.Errorf("%d secrets after concurrent creates, want the limit 3: %v", len(all), errs)
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, secrets.ErrLimit) {
			t.Errorf("concurrent create: %v", err)
		}
	}

	// Grants.
	sb := &model.Sandbox{ID: model.NewID(), AccountID: a.ID, Size: "small", Status: model.StatusCreating, CreatedAt: base, ExpiresAt: base.Add(1e12)}
	if err := st.(model.Store).CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := st.GrantSecrets(ctx, sb.ID, []string{"TOKEN", "X", "TOKEN"}); err != nil {
		t.Fatalf("GrantSecrets: %v", err)
	}
	if names, err := st.SandboxSecretNames(ctx, sb.ID); err != nil || !cmp.Equal(names, []string{"TOKEN", "X"}) {
		t.Errorf("SandboxSecretNames = %v, %v", names, err)
	}
	if err := st.DeleteSecret(ctx, a.ID, r.ID); err != nil {
		t.Errorf("DeleteSecret: %v", err)
	}
	if all, _ := st.AllSecrets(ctx); len(all) != 3 {
		t.Errorf("AllSecrets after delete: %d", len(all))
	}
}
