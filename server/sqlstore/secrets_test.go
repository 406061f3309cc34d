package sqlstore_test

import (
	"database/sql"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/sqlstore"
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
	// X is no secret of A's: not granted.
	if names, err := st.SandboxSecretNames(ctx, sb.ID); err != nil || !cmp.Equal(names, []string{"TOKEN"}) {
		t.Errorf("SandboxSecretNames = %v, %v", names, err)
	}
	if err := st.DeleteSecret(ctx, a.ID, r.ID); err != nil {
		t.Errorf("DeleteSecret: %v", err)
	}
	if all, _ := st.AllSecrets(ctx); len(all) != 3 {
		t.Errorf("AllSecrets after delete: %d", len(all))
	}
	// A's TOKEN deleted (B's TOKEN remains): the grant is gone, and stays
	// gone when A makes a TOKEN again; a sandbox made after gets it.
	if names, err := st.SandboxSecretNames(ctx, sb.ID); err != nil || len(names) != 0 {
		t.Errorf("SandboxSecretNames after delete = %v, %v", names, err)
	}
	rest, _ := st.Secrets(ctx, a.ID)
	for _, c := range rest { // make room under the limit of 3
		if err := st.DeleteSecret(ctx, a.ID, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateSecret(ctx, rec(a.ID, "TOKEN"), 3); err != nil {
		t.Fatalf("CreateSecret again: %v", err)
	}
	if names, err := st.SandboxSecretNames(ctx, sb.ID); err != nil || len(names) != 0 {
		t.Errorf("SandboxSecretNames after TOKEN is made again = %v, %v (re-granted by name)", names, err)
	}
	sb2 := &model.Sandbox{ID: model.NewID(), AccountID: a.ID, Size: "small", Status: model.StatusCreating, CreatedAt: base, ExpiresAt: base.Add(1e12)}
	if err := st.(model.Store).CreateSandbox(ctx, sb2); err != nil {
		t.Fatal(err)
	}
	if err := st.GrantSecrets(ctx, sb2.ID, []string{"TOKEN"}); err != nil {
		t.Fatalf("GrantSecrets: %v", err)
	}
	if names, err := st.SandboxSecretNames(ctx, sb2.ID); err != nil || !cmp.Equal(names, []string{"TOKEN"}) {
		t.Errorf("SandboxSecretNames of a sandbox made after = %v, %v", names, err)
	}
}

// testSecretInherit: a sandbox's grants are read with their secrets' ids,
// and inherited by another sandbox of the account by id: a secret
// deleted since, one created again under the name, and another account's
// secret (even named as the grant says) are not granted.
func testSecretInherit(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(secrets.Store)
	ctx := t.Context()
	a := mustAccount(t, st.(model.Store), "a@example.com")
	b := mustAccount(t, st.(model.Store), "b@example.com")
	secret := func(acct, name string) *secrets.Record {
		r := &secrets.Record{ID: model.NewID(), AccountID: acct, Name: name, KeyID: "k1", CreatedAt: base, UpdatedAt: base}
		if err := st.CreateSecret(ctx, r, 10); err != nil {
			t.Fatalf("CreateSecret: %v", err)
		}
		return r
	}
	sandbox := func(acct string) string {
		sb := &model.Sandbox{ID: model.NewID(), AccountID: acct, Size: "small", Status: model.StatusCreating, CreatedAt: base, ExpiresAt: base.Add(1e12)}
		if err := st.(model.Store).CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		return sb.ID
	}
	token, gone, again := secret(a.ID, "TOKEN"), secret(a.ID, "GONE"), secret(a.ID, "AGAIN")
	bTok := secret(b.ID, "BTOK")
	parent := sandbox(a.ID)
	if err := st.GrantSecrets(ctx, parent, []string{"TOKEN", "GONE", "AGAIN"}); err != nil {
		t.Fatal(err)
	}
	grants, err := st.SandboxSecretGrants(ctx, parent)
	want := []model.SecretGrant{{Name: "AGAIN", SecretID: again.ID}, {Name: "GONE", SecretID: gone.ID}, {Name: "TOKEN", SecretID: token.ID}}
	if err != nil || !cmp.Equal(grants, want) {
		t.Fatalf("SandboxSecretGrants = %v, %v; want %v", grants, err, want)
	}
	if err := st.DeleteSecret(ctx, a.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSecret(ctx, a.ID, again.ID); err != nil {
		t.Fatal(err)
	}
	secret(a.ID, "AGAIN") // a new secret under the name: not the one granted
	// B's secret, under its own name and under one of A's: never granted
	// to A's sandbox.
	aGrants := slices.Clone(grants)
	grants = append(grants, model.SecretGrant{Name: "BTOK", SecretID: bTok.ID}, model.SecretGrant{Name: "TOKEN", SecretID: bTok.ID},
		model.SecretGrant{Name: "OTHER", SecretID: token.ID}) // and a grant whose name is not its secret's
	child := sandbox(a.ID)
	if err := st.InheritSecrets(ctx, child, grants); err != nil {
		t.Fatalf("InheritSecrets: %v", err)
	}
	if names, err := st.SandboxSecretNames(ctx, child); err != nil || !cmp.Equal(names, []string{"TOKEN"}) {
		t.Errorf("the child's secrets = %v, %v; want TOKEN only", names, err)
	}
	// Nor does B's sandbox inherit A's grants.
	other := sandbox(b.ID)
	if err := st.InheritSecrets(ctx, other, aGrants); err != nil {
		t.Fatalf("InheritSecrets: %v", err)
	}
	if names, err := st.SandboxSecretNames(ctx, other); err != nil || len(names) != 0 {
		t.Errorf("B's sandbox inherited A's grants: %v, %v", names, err)
	}
}

// TestSandboxSecretIDsBackfill: grants made before migration 0266 are
// tied to the account's secret of that name then (not another account's),
// and a grant whose secret was gone stays dead when one of that name is
// made again.
func TestSandboxSecretIDsBackfill(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "boxkite.db")
	open := func() secrets.Store {
		st, err := sqlstore.Open(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := open()
	a := mustAccount(t, st.(model.Store), "a@example.com")
	b := mustAccount(t, st.(model.Store), "b@example.com")
	rec := func(acct, name string) *secrets.Record {
		return &secrets.Record{ID: model.NewID(), AccountID: acct, Name: name, AllowedHosts: []string{"api.example.com"}, CreatedAt: base, UpdatedAt: base}
	}
	tokA := rec(a.ID, "TOKEN")
	for _, r := range []*secrets.Record{tokA, rec(b.ID, "TOKEN"), rec(b.ID, "GONE")} {
		if err := st.CreateSecret(ctx, r, 10); err != nil {
			t.Fatal(err)
		}
	}
	sb := &model.Sandbox{ID: model.NewID(), AccountID: a.ID, Size: "small", Status: model.StatusCreating, CreatedAt: base, ExpiresAt: base.Add(1e12)}
	if err := st.(model.Store).CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	st.(io.Closer).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Back to the schema before the migration, with grants by name only.
	if _, err := db.ExecContext(ctx, `ALTER TABLE sandbox_secrets DROP COLUMN secret_id;
		DELETE FROM schema_migrations WHERE name = '0266_sandbox_secret_ids';
		INSERT INTO sandbox_secrets (sandbox_id, name) VALUES (?, 'TOKEN'), (?, 'GONE')`, sb.ID, sb.ID); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st = open()
	if names, err := st.SandboxSecretNames(ctx, sb.ID); err != nil || !cmp.Equal(names, []string{"TOKEN"}) {
		t.Errorf("SandboxSecretNames after the migration = %v, %v, want [TOKEN]", names, err)
	}
	if err := st.CreateSecret(ctx, rec(a.ID, "GONE"), 10); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSecret(ctx, a.ID, tokA.ID); err != nil {
		t.Fatal(err)
	}
	if names, err := st.SandboxSecretNames(ctx, sb.ID); err != nil || len(names) != 0 {
		t.Errorf("SandboxSecretNames after A's TOKEN is deleted and A makes GONE = %v, %v, want none", names, err)
	}
}
