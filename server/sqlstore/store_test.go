package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// A storeFactory makes a fresh, empty database and returns a function that
// opens it; calling that function again after Close reopens the same data.
type storeFactory func(t *testing.T) (open func(t *testing.T) model.Store)

func sqliteFactory(t *testing.T) func(t *testing.T) model.Store {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "boxkite.db")
	return func(t *testing.T) model.Store {
		t.Helper()
		st, err := sqlstore.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

func TestSQLite(t *testing.T) {
	runStoreSuite(t, sqliteFactory)
}

// postgresFactory makes a fresh database on the server of
// servertest.PostgresEnv for each test.
func postgresFactory(t *testing.T) func(t *testing.T) model.Store {
	dsn := servertest.PostgresDSN(t)
	return func(t *testing.T) model.Store {
		t.Helper()
		st, err := sqlstore.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("Open(postgres): %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

// TestPostgres runs the suite on Postgres when servertest.PostgresEnv
// names a server (always in CI).
func TestPostgres(t *testing.T) {
	if servertest.PostgresDSN(t) == "" {
		t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
	}
	runStoreSuite(t, postgresFactory)
}

// runStoreSuite is the behaviour every model.Store implementation must have.
func runStoreSuite(t *testing.T, newStore storeFactory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, newStore storeFactory)
	}{
		{"Accounts", testAccounts},
		{"EnsureAccountKey", testEnsureAccountKey},
		{"RevokeAndTouch", testRevokeAndTouch},
		{"KeyExpiry", testKeyExpiry},
		{"KeyExpiryCredentials", testKeyExpiryCredentials},
		{"SandboxRoundTrip", testSandboxRoundTrip},
		{"SandboxScoping", testSandboxScoping},
		{"SandboxLists", testSandboxLists},
		{"SandboxPages", testSandboxPages},
		{"UpdateSandbox", testUpdateSandbox},
		{"RestartDurability", testRestartDurability},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ExecLogChain", testExecLogChain},
		{"ExecLogConcurrentAppends", testExecLogConcurrentAppends},
		{"ExecLogGroupCommit", testExecLogGroupCommit},
		{"Credentials", testCredentials},
		{"Settings", testSettings},
		{"SSHKeys", testSSHKeys},
		{"Recordings", testRecordings},
		{"SpentTokens", testSpentTokens},
		{"Usage", testUsage},
		{"ReserveSandboxes", testReserveSandboxes},
		{"Idempotency", testIdempotency},
		{"ExecLogAfter", testExecLogAfter},
		{"AllowedCommands", testAllowedCommands},
		{"Images", testImages},
		{"Snapshots", testSnapshots},
		{"SnapshotKeyClaims", testSnapshotKeyClaims},
		{"SnapshotKeyRace", testSnapshotKeyRace},
		{"SandboxLease", testSandboxLease},
		{"Instances", testInstances},
		{"Secrets", testSecrets},
		{"SecretInherit", testSecretInherit},
		{"Webhooks", testWebhooks},
		{"WebhookFairClaim", testWebhookFairClaim},
		{"WebhookLimit", testWebhookLimit},
		{"WebhookDeliveryPages", testWebhookDeliveryPages},
		{"StorageSync", testStorageSync},
		{"OAuth", testOAuth},
		{"Admin", testAdmin},
		{"RefusedValues", testRefusedValues},
		{"Orgs", testOrgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore)
		})
	}
}

// base is a fixed instant with microsecond precision, what stores keep.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// after is s seconds after base: the clock of the tests that step one
// through the heartbeats and leases of two servers.
func after(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }

func mustAccount(t *testing.T, st model.Store, email string) *model.Account {
	t.Helper()
	a := &model.Account{ID: model.NewID(), Email: email, CreatedAt: base}
	if err := st.CreateAccount(t.Context(), a); err != nil {
		t.Fatalf("CreateAccount(%s): %v", email, err)
	}
	return a
}

func mustKey(t *testing.T, st model.Store, a *model.Account) (string, *model.APIKey) {
	t.Helper()
	secret := model.NewAPIKey()
	k := &model.APIKey{
		ID: model.NewID(), AccountID: a.ID, Name: "test", Hash: model.HashAPIKey(secret),
		Prefix: secret[:17], Role: model.RoleAdmin, CreatedAt: base,
	}
	if err := st.CreateAPIKey(t.Context(), k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return secret, k
}

func newSandbox(a *model.Account, created time.Time) *model.Sandbox {
	return &model.Sandbox{
		ID: model.NewID(), AccountID: a.ID, Label: "lbl", Size: api.SizeSmall, StorageGB: 1.5,
		LifetimeMinutes: 30, Status: api.StatusActive, CreatedAt: created, ExpiresAt: created.Add(30 * time.Minute),
		Driver: "fake", Endpoint: model.Endpoint{Network: "unix", Address: "/run/x.sock", Token: "tok", CertPEM: []byte("PEM")},
	}
}

func mustSandbox(t *testing.T, st model.Store, sb *model.Sandbox) *model.Sandbox {
	t.Helper()
	if err := st.CreateSandbox(t.Context(), sb); err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	return sb
}

func ids(sbs []*model.Sandbox) []string {
	out := []string{}
	for _, sb := range sbs {
		out = append(out, sb.ID)
	}
	return out
}

func testAccounts(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	if err := st.CreateAccount(ctx, &model.Account{ID: model.NewID(), Email: "a@example.com", CreatedAt: base}); !errors.Is(err, model.ErrConflict) {
		t.Errorf("CreateAccount(duplicate email) = %v, want ErrConflict", err)
	}
	got, err := st.AccountByEmail(ctx, "a@example.com")
	if err != nil {
		t.Fatalf("AccountByEmail: %v", err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("AccountByEmail mismatch (-want +got):\n%s", diff)
	}
	if _, err := st.AccountByEmail(ctx, "nobody@example.com"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("AccountByEmail(unknown) = %v, want ErrNotFound", err)
	}

	secret, k := mustKey(t, st, a)
	gotK, gotA, err := st.APIKeyByHash(ctx, model.HashAPIKey(secret))
	if err != nil {
		t.Fatalf("APIKeyByHash: %v", err)
	}
	if diff := cmp.Diff(k, gotK); diff != "" {
		t.Errorf("APIKeyByHash key mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(a, gotA); diff != "" {
		t.Errorf("APIKeyByHash account mismatch (-want +got):\n%s", diff)
	}
	if _, _, err := st.APIKeyByHash(ctx, model.HashAPIKey("bxk_live_other")); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("APIKeyByHash(unknown) = %v, want ErrNotFound", err)
	}
	dup := *k
	dup.ID = model.NewID()
	if err := st.CreateAPIKey(ctx, &dup); !errors.Is(err, model.ErrConflict) {
		t.Errorf("CreateAPIKey(duplicate hash) = %v, want ErrConflict", err)
	}
	orphan := *k
	orphan.ID, orphan.Hash, orphan.AccountID = model.NewID(), "ff", "no-such-account"
	if err := st.CreateAPIKey(ctx, &orphan); err == nil {
		t.Error("CreateAPIKey(unknown account) succeeded; foreign keys are not enforced")
	}
}

func testEnsureAccountKey(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	secret := model.NewAPIKey()
	mk := func() (*model.Account, *model.APIKey) {
		return &model.Account{ID: model.NewID(), Email: "local@localhost", CreatedAt: base},
			&model.APIKey{ID: model.NewID(), Name: "bootstrap", Hash: model.HashAPIKey(secret), Prefix: "p", Role: model.RoleAdmin, CreatedAt: base}
	}
	a1, k1 := mk()
	gotA1, gotK1, err := st.EnsureAccountKey(ctx, a1, k1)
	if err != nil {
		t.Fatalf("EnsureAccountKey (first): %v", err)
	}
	if gotA1.ID != a1.ID || gotK1.ID != k1.ID || gotK1.AccountID != a1.ID {
		t.Errorf("first EnsureAccountKey returned account %s key %s (of %s), want the new ones %s, %s", gotA1.ID, gotK1.ID, gotK1.AccountID, a1.ID, k1.ID)
	}
	a2, k2 := mk() // as after a restart: fresh ids, same email and key
	gotA2, gotK2, err := st.EnsureAccountKey(ctx, a2, k2)
	if err != nil {
		t.Fatalf("EnsureAccountKey (again): %v", err)
	}
	if gotA2.ID != a1.ID || gotK2.ID != k1.ID {
		t.Errorf("second EnsureAccountKey returned account %s key %s, want the originals %s, %s", gotA2.ID, gotK2.ID, a1.ID, k1.ID)
	}
	// A second key for the same account is added, not refused.
	other := model.NewAPIKey()
	_, k3, err := st.EnsureAccountKey(ctx, &model.Account{ID: model.NewID(), Email: "local@localhost", CreatedAt: base},
		&model.APIKey{ID: model.NewID(), Hash: model.HashAPIKey(other), Prefix: "p", Role: model.RoleAdmin, CreatedAt: base})
	if err != nil || k3.AccountID != a1.ID {
		t.Errorf("EnsureAccountKey(new key) = %+v, %v; want a key of account %s", k3, err, a1.ID)
	}
	// The same key claimed for another account is a conflict.
	b := mustAccount(t, st, "b@example.com")
	_, _, err = st.EnsureAccountKey(ctx, b, &model.APIKey{ID: model.NewID(), Hash: model.HashAPIKey(secret), Prefix: "p", Role: model.RoleAdmin, CreatedAt: base})
	if !errors.Is(err, model.ErrConflict) {
		t.Errorf("EnsureAccountKey(key of another account) = %v, want ErrConflict", err)
	}
}

func testRevokeAndTouch(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	b := mustAccount(t, st, "b@example.com")
	secret, k := mustKey(t, st, a)
	if err := st.RevokeAPIKey(ctx, b.ID, k.ID, base); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("RevokeAPIKey(other account) = %v, want ErrNotFound", err)
	}
	used := base.Add(time.Minute)
	if err := st.TouchAPIKey(ctx, k.ID, used); err != nil {
		t.Fatalf("TouchAPIKey: %v", err)
	}
	revoked := base.Add(2 * time.Minute)
	if err := st.RevokeAPIKey(ctx, a.ID, k.ID, revoked); err != nil {
		t.Fatalf("RevokeAPIKey: %v", err)
	}
	got, _, err := st.APIKeyByHash(ctx, model.HashAPIKey(secret))
	if err != nil {
		t.Fatalf("APIKeyByHash: %v", err)
	}
	if got.LastUsedAt == nil || !got.LastUsedAt.Equal(used) {
		t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, used)
	}
	if got.RevokedAt == nil || !got.RevokedAt.Equal(revoked) {
		t.Errorf("RevokedAt = %v, want %v", got.RevokedAt, revoked)
	}
}

func testSandboxRoundTrip(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	sb := mustSandbox(t, st, newSandbox(a, base.Add(123456*time.Microsecond)))
	got, err := st.Sandbox(ctx, a.ID, sb.ID)
	if err != nil {
		t.Fatalf("Sandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("Sandbox round trip (-want +got):\n%s", diff)
	}
	if err := st.CreateSandbox(ctx, sb); !errors.Is(err, model.ErrConflict) {
		t.Errorf("CreateSandbox(same id) = %v, want ErrConflict", err)
	}
	if err := st.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if _, err := st.Sandbox(ctx, a.ID, sb.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("Sandbox after DeleteSandbox = %v, want ErrNotFound", err)
	}
	if err := st.DeleteSandbox(ctx, sb.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("DeleteSandbox(gone) = %v, want ErrNotFound", err)
	}
}

func testSandboxScoping(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	b := mustAccount(t, st, "b@example.com")
	sb := mustSandbox(t, st, newSandbox(a, base))
	if _, err := st.Sandbox(ctx, b.ID, sb.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("Sandbox(other account) = %v, want ErrNotFound", err)
	}
	list, err := st.ListSandboxes(ctx, b.ID, false)
	if err != nil || len(list) != 0 {
		t.Errorf("ListSandboxes(other account) = %v, %v; want none", ids(list), err)
	}
	if n, err := st.CountActiveSandboxes(ctx, b.ID); err != nil || n != 0 {
		t.Errorf("CountActiveSandboxes(other account) = %d, %v; want 0", n, err)
	}
}

func testSandboxLists(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	b := mustAccount(t, st, "b@example.com")
	old := mustSandbox(t, st, newSandbox(a, base))
	dead := newSandbox(a, base.Add(time.Minute))
	dead.Status, dead.DestroyReason = api.StatusDestroyed, model.ReasonDeleted
	mustSandbox(t, st, dead)
	creating := newSandbox(a, base.Add(2*time.Minute))
	creating.Status = model.StatusCreating
	mustSandbox(t, st, creating)
	newest := mustSandbox(t, st, newSandbox(a, base.Add(3*time.Minute)))
	other := mustSandbox(t, st, newSandbox(b, base.Add(40*time.Minute)))

	for _, tt := range []struct {
		name string
		get  func() ([]*model.Sandbox, error)
		want []string
	}{
		{"all, newest first, no creating", func() ([]*model.Sandbox, error) { return st.ListSandboxes(ctx, a.ID, false) }, []string{newest.ID, dead.ID, old.ID}},
		{"active only", func() ([]*model.Sandbox, error) { return st.ListSandboxes(ctx, a.ID, true) }, []string{newest.ID, old.ID}},
		{"status creating", func() ([]*model.Sandbox, error) { return st.SandboxesWithStatus(ctx, model.StatusCreating) }, []string{creating.ID}},
		{"status active, all accounts", func() ([]*model.Sandbox, error) { return st.SandboxesWithStatus(ctx, api.StatusActive) }, []string{old.ID, newest.ID, other.ID}},
		{"expired before anything", func() ([]*model.Sandbox, error) { return st.ExpiredSandboxes(ctx, base) }, []string{}},
		{"expired at the boundary", func() ([]*model.Sandbox, error) { return st.ExpiredSandboxes(ctx, base.Add(30*time.Minute)) }, []string{old.ID}},
		{"expired later, active only", func() ([]*model.Sandbox, error) { return st.ExpiredSandboxes(ctx, base.Add(time.Hour)) }, []string{old.ID, newest.ID}},
	} {
		got, err := tt.get()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for acct, want := range map[string]int{a.ID: 2, b.ID: 1, "": 3} {
		if n, err := st.CountActiveSandboxes(ctx, acct); err != nil || n != want {
			t.Errorf("CountActiveSandboxes(%q) = %d, %v; want %d", acct, n, err, want)
		}
	}
}

func testUpdateSandbox(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	sb := mustSandbox(t, st, newSandbox(a, base))
	destroyed := base.Add(time.Hour)
	got, err := st.UpdateSandbox(ctx, sb.ID, func(s *model.Sandbox) error {
		s.Status, s.DestroyReason, s.DestroyedAt = api.StatusDestroyed, model.ReasonExpired, &destroyed
		s.ExpiresAt = base.Add(2 * time.Hour)
		s.Endpoint = model.Endpoint{}
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateSandbox: %v", err)
	}
	want := *sb
	want.Status, want.DestroyReason, want.DestroyedAt = api.StatusDestroyed, model.ReasonExpired, &destroyed
	want.ExpiresAt = base.Add(2 * time.Hour)
	want.Endpoint = model.Endpoint{}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("UpdateSandbox result (-want +got):\n%s", diff)
	}
	reread, err := st.Sandbox(ctx, a.ID, sb.ID)
	if err != nil {
		t.Fatalf("Sandbox: %v", err)
	}
	if diff := cmp.Diff(&want, reread); diff != "" {
		t.Errorf("Sandbox after UpdateSandbox (-want +got):\n%s", diff)
	}

	abort := errors.New("abort")
	if _, err := st.UpdateSandbox(ctx, sb.ID, func(s *model.Sandbox) error {
		s.Label = "changed"
		return abort
	}); !errors.Is(err, abort) {
		t.Errorf("UpdateSandbox(fn fails) = %v, want the fn's error", err)
	}
	if reread, _ := st.Sandbox(ctx, a.ID, sb.ID); reread.Label != sb.Label {
		t.Errorf("label after an aborted update = %q, want %q", reread.Label, sb.Label)
	}
	if _, err := st.UpdateSandbox(ctx, "missing", func(*model.Sandbox) error { return nil }); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("UpdateSandbox(missing) = %v, want ErrNotFound", err)
	}
}

func testRestartDurability(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st := open(t)
	a := mustAccount(t, st, "a@example.com")
	secret, _ := mustKey(t, st, a)
	sb := mustSandbox(t, st, newSandbox(a, base))
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	st = open(t) // reopening also re-runs migrations, which must be a no-op
	if _, _, err := st.APIKeyByHash(t.Context(), model.HashAPIKey(secret)); err != nil {
		t.Errorf("APIKeyByHash after reopen: %v", err)
	}
	got, err := st.Sandbox(t.Context(), a.ID, sb.ID)
	if err != nil {
		t.Fatalf("Sandbox after reopen: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("Sandbox after reopen (-want +got):\n%s", diff)
	}
}

// testConcurrentWriters runs read-modify-write transactions from several
// goroutines and two store handles on the same database at once: none may
// fail with "database is locked" and no increment may be lost.
func testConcurrentWriters(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st1, st2 := twoHandles(t, open)
	a := mustAccount(t, st1, "a@example.com")
	sb := mustSandbox(t, st1, newSandbox(a, base))
	sb.LifetimeMinutes = 0
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		st := []model.Store{st1, st2}[w%2]
		wg.Go(func() {
			for i := range each {
				if _, err := st.UpdateSandbox(t.Context(), sb.ID, func(s *model.Sandbox) error {
					s.LifetimeMinutes++
					return nil
				}); err != nil {
					errs <- fmt.Errorf("worker %d update %d: %w", w, i, err)
				}
				if err := st.CreateSandbox(t.Context(), newSandbox(a, base)); err != nil {
					errs <- fmt.Errorf("worker %d insert %d: %w", w, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := st2.Sandbox(context.Background(), a.ID, sb.ID)
	if err != nil {
		t.Fatalf("Sandbox: %v", err)
	}
	if got.LifetimeMinutes != 30+workers*each {
		t.Errorf("LifetimeMinutes after %d increments = %d, want %d (lost updates)", workers*each, got.LifetimeMinutes, 30+workers*each)
	}
	if n, err := st1.CountActiveSandboxes(t.Context(), a.ID); err != nil || n != 1+workers*each {
		t.Errorf("CountActiveSandboxes = %d, %v; want %d", n, err, 1+workers*each)
	}
}

// BenchmarkAPIKeyByHash measures the per-request authentication lookup.
func BenchmarkAPIKeyByHash(b *testing.B) {
	st, err := sqlstore.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := b.Context()
	var hash string
	for i := range 1000 {
		a := &model.Account{ID: model.NewID(), Email: fmt.Sprintf("u%d@example.com", i), CreatedAt: base}
		if err := st.CreateAccount(ctx, a); err != nil {
			b.Fatal(err)
		}
		secret := model.NewAPIKey()
		hash = model.HashAPIKey(secret)
		if err := st.CreateAPIKey(ctx, &model.APIKey{ID: model.NewID(), AccountID: a.ID, Hash: hash, Prefix: "p", Role: model.RoleAdmin, CreatedAt: base}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, _, err := st.APIKeyByHash(ctx, hash); err != nil {
			b.Fatal(err)
		}
	}
}
