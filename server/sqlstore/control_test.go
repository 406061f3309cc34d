package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Store behaviour of issue 5: passwords, key listings, settings, SSH keys,
// quota reservations and idempotency records.

func testCredentials(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := &model.Account{ID: model.NewID(), Email: "p@example.com", CreatedAt: base}
	if err := st.CreateAccountWithPassword(ctx, a, "$argon2id$hash"); err != nil {
		t.Fatalf("CreateAccountWithPassword: %v", err)
	}
	dup := &model.Account{ID: model.NewID(), Email: "p@example.com", CreatedAt: base}
	if err := st.CreateAccountWithPassword(ctx, dup, "x"); !errors.Is(err, model.ErrConflict) {
		t.Errorf("CreateAccountWithPassword(taken email) = %v, want ErrConflict", err)
	}
	got, hash, err := st.PasswordHash(ctx, "p@example.com")
	if err != nil || hash != "$argon2id$hash" || !cmp.Equal(got, a) {
		t.Errorf("PasswordHash = %+v, %q, %v", got, hash, err)
	}
	nopw := mustAccount(t, st, "nopw@example.com")
	if _, hash, err := st.PasswordHash(ctx, nopw.Email); err != nil || hash != "" {
		t.Errorf("PasswordHash(account without one) = %q, %v; want empty", hash, err)
	}
	if _, _, err := st.PasswordHash(ctx, "none@example.com"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("PasswordHash(unknown) = %v, want ErrNotFound", err)
	}
	if got, err := st.AccountByID(ctx, a.ID); err != nil || !cmp.Equal(got, a) {
		t.Errorf("AccountByID = %+v, %v", got, err)
	}
	if _, err := st.AccountByID(ctx, "nope"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("AccountByID(unknown) = %v, want ErrNotFound", err)
	}

	// Keys list newest first, revoked ones too, only the account's.
	_, k1 := mustKey(t, st, a)
	k2 := &model.APIKey{ID: model.NewID(), AccountID: a.ID, Name: "second", Hash: "h2", Prefix: "p", Role: model.RoleMember, CreatedAt: base.Add(time.Second)}
	if err := st.CreateAPIKey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	mustKey(t, st, nopw)
	if err := st.RevokeAPIKey(ctx, a.ID, k1.ID, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	keys, err := st.ListAPIKeys(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != k2.ID || keys[1].ID != k1.ID || keys[1].RevokedAt == nil {
		t.Errorf("ListAPIKeys = %+v, want [second, first (revoked)]", keys)
	}
	if keys, err := st.ListAPIKeys(ctx, "nobody"); err != nil || keys == nil || len(keys) != 0 {
		t.Errorf("ListAPIKeys(unknown) = %v, %v; want an empty, non-nil list", keys, err)
	}
}

// testSettings: the first value stored wins, across concurrent callers
// and reopens.
func testSettings(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st := open(t)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			v, err := st.EnsureSetting(t.Context(), "jwt_secret", fmt.Sprintf("value-%d", i))
			if err != nil {
				t.Errorf("EnsureSetting: %v", err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	for _, v := range got {
		if v != got[0] {
			t.Fatalf("EnsureSetting answers differ: %v", got)
		}
	}
	st.Close()
	st = open(t)
	if v, err := st.EnsureSetting(t.Context(), "jwt_secret", "later"); err != nil || v != got[0] {
		t.Errorf("EnsureSetting after reopen = %q, %v; want %q", v, err, got[0])
	}
	if v, err := st.EnsureSetting(t.Context(), "other", "x"); err != nil || v != "x" {
		t.Errorf("EnsureSetting(other) = %q, %v", v, err)
	}
}

func testSSHKeys(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	b := mustAccount(t, st, "b@example.com")
	k1 := &model.SSHKey{ID: model.NewID(), AccountID: a.ID, Name: "laptop", PublicKey: "ssh-ed25519 AAAA1", Fingerprint: "SHA256:one", CreatedAt: base}
	k2 := &model.SSHKey{ID: model.NewID(), AccountID: a.ID, Name: "desk", PublicKey: "ssh-ed25519 AAAA2", Fingerprint: "SHA256:two", CreatedAt: base.Add(time.Second)}
	for _, k := range []*model.SSHKey{k1, k2} {
		if err := st.CreateSSHKey(ctx, k); err != nil {
			t.Fatalf("CreateSSHKey: %v", err)
		}
	}
	dup := *k1
	dup.ID, dup.AccountID = model.NewID(), b.ID
	if err := st.CreateSSHKey(ctx, &dup); !errors.Is(err, model.ErrConflict) {
		t.Errorf("CreateSSHKey(same fingerprint, other account) = %v, want ErrConflict", err)
	}
	got, err := st.ListSSHKeys(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*model.SSHKey{k1, k2}, got); diff != "" {
		t.Errorf("ListSSHKeys (-want +got):\n%s", diff)
	}
	if got, err := st.ListSSHKeys(ctx, b.ID); err != nil || len(got) != 0 || got == nil {
		t.Errorf("ListSSHKeys(b) = %v, %v; want an empty, non-nil list", got, err)
	}
	if got, err := st.SSHKeyByFingerprint(ctx, "SHA256:two"); err != nil || !cmp.Equal(got, k2) {
		t.Errorf("SSHKeyByFingerprint(two) = %v, %v; want %v", got, err, k2)
	}
	if _, err := st.SSHKeyByFingerprint(ctx, "SHA256:none"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("SSHKeyByFingerprint(none) = %v, want ErrNotFound", err)
	}
	if err := st.DeleteSSHKey(ctx, b.ID, k1.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("DeleteSSHKey(other account) = %v, want ErrNotFound", err)
	}
	if err := st.DeleteSSHKey(ctx, a.ID, k1.ID); err != nil {
		t.Errorf("DeleteSSHKey: %v", err)
	}
	if err := st.DeleteSSHKey(ctx, a.ID, k1.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("DeleteSSHKey(again) = %v, want ErrNotFound", err)
	}
}

// testUsage: what counts, for whom, since when.
func testUsage(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	b := mustAccount(t, st, "b@example.com")
	month := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	now := month.Add(10 * 24 * time.Hour)
	at := func(acct *model.Account, created time.Time, status string, ran time.Duration) {
		sb := newSandbox(acct, created)
		sb.Status = status
		if status == api.StatusDestroyed || status == api.StatusLost {
			d := created.Add(ran)
			sb.DestroyedAt = &d
		}
		mustSandbox(t, st, sb)
	}
	at(a, now.Add(-2*time.Hour), api.StatusActive, 0)                // 2 h so far
	at(a, now.Add(-time.Hour), model.StatusCreating, 0)              // holds a slot, 1 h
	at(a, month.Add(time.Hour), api.StatusDestroyed, 90*time.Minute) // 1.5 h
	at(a, month.Add(2*time.Hour), api.StatusLost, 30*time.Minute)    // 0.5 h
	at(a, month.Add(-time.Hour), api.StatusDestroyed, 5*time.Hour)   // last month: not counted
	at(b, now.Add(-time.Hour), api.StatusActive, 0)                  // another account
	u, err := st.Usage(ctx, a.ID, month, now)
	if err != nil {
		t.Fatal(err)
	}
	// Every sandbox of newSandbox is labelled "lbl": a's active and
	// creating ones hold it, its destroyed and lost ones do not.
	want := model.Usage{GlobalActive: 3, AccountActive: 2, MonthlyHours: 5, ActiveLabels: map[string]bool{"lbl": true}}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("Usage (-want +got):\n%s", diff)
	}
	// A zero since asks for no hours (no monthly limit applies): the
	// rest is counted as before.
	u, err = st.Usage(ctx, a.ID, time.Time{}, now)
	if err != nil {
		t.Fatal(err)
	}
	want.MonthlyHours = 0
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("Usage without hours (-want +got):\n%s", diff)
	}
}

// testReserveSandboxes: check sees the usage, refusal inserts nothing,
// and concurrent reservations never overshoot.
func testReserveSandboxes(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st1, st2 := twoHandles(t, open)
	ctx := t.Context()
	a := mustAccount(t, st1, "a@example.com")
	refuse := errors.New("over the limit")
	sbs := []*model.Sandbox{newSandbox(a, base), newSandbox(a, base)}
	for _, sb := range sbs {
		sb.Status = model.StatusCreating
	}
	var seen model.Usage
	err := st1.ReserveSandboxes(ctx, a.ID, base, base, func(u model.Usage) error { seen = u; return refuse }, sbs)
	if !errors.Is(err, refuse) {
		t.Fatalf("ReserveSandboxes(refused) = %v, want the check's error", err)
	}
	if u, _ := st1.Usage(ctx, a.ID, base, base); u.AccountActive != 0 || cmp.Diff(seen, u) != "" {
		t.Errorf("after a refusal: usage %+v (check saw %+v), want nothing inserted", u, seen)
	}
	if err := st1.ReserveSandboxes(ctx, a.ID, base, base, func(model.Usage) error { return nil }, sbs); err != nil {
		t.Fatalf("ReserveSandboxes: %v", err)
	}
	if got, _ := st1.SandboxesWithStatus(ctx, model.StatusCreating); len(got) != 2 {
		t.Errorf("%d rows creating, want 2", len(got))
	}

	// Two handles (as two servers) race to fill a limit of 5.
	const limit, workers = 5, 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range workers {
		st := []model.Store{st1, st2}[i%2]
		wg.Go(func() {
			sb := newSandbox(a, base)
			err := st.ReserveSandboxes(ctx, a.ID, base, base, func(u model.Usage) error {
				if u.AccountActive >= limit {
					return refuse
				}
				return nil
			}, []*model.Sandbox{sb})
			switch {
			case err == nil:
				mu.Lock()
				won++
				mu.Unlock()
			case !errors.Is(err, refuse):
				t.Errorf("ReserveSandboxes: %v", err)
			}
		})
	}
	wg.Wait()
	if u, _ := st1.Usage(ctx, a.ID, base, base); won != limit-2 || u.AccountActive != limit {
		t.Errorf("%d reservations won, %d slots held; want %d and %d", won, u.AccountActive, limit-2, limit)
	}
}

func idemRecord(key, hash string, created time.Time) *model.IdempotencyRecord {
	return &model.IdempotencyRecord{
		Credential: "key:k1", Method: "POST", Path: "/v1/sandboxes", Key: key, RequestHash: hash,
		State: model.IdempotencyInProgress, CreatedAt: created, ExpiresAt: created.Add(24 * time.Hour),
	}
}

func testIdempotency(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st := open(t)
	ctx := t.Context()
	stale := base.Add(-time.Hour)
	rec := idemRecord("k", "h1", base)
	if old, err := st.ClaimIdempotencyKey(ctx, rec, stale); err != nil || old != nil {
		t.Fatalf("first claim = %+v, %v; want claimed", old, err)
	}
	old, err := st.ClaimIdempotencyKey(ctx, idemRecord("k", "h2", base.Add(time.Second)), stale)
	if err != nil || old == nil || old.State != model.IdempotencyInProgress || old.RequestHash != "h1" {
		t.Fatalf("second claim = %+v, %v; want the first, in progress", old, err)
	}
	// Another scope is independent.
	other := idemRecord("k", "h1", base)
	other.Credential = "key:k2"
	if old, err := st.ClaimIdempotencyKey(ctx, other, stale); err != nil || old != nil {
		t.Errorf("claim with another credential = %+v, %v; want claimed", old, err)
	}

	rec.State, rec.Status, rec.ContentType, rec.Body = model.IdempotencyCompleted, 201, "application/json", []byte("{\"id\":1}\n\x00\xff")
	if err := st.CompleteIdempotencyKey(ctx, rec); err != nil {
		t.Fatalf("CompleteIdempotencyKey: %v", err)
	}
	st.Close()
	st = open(t) // kept across restarts
	old, err = st.ClaimIdempotencyKey(ctx, idemRecord("k", "h1", base.Add(time.Minute)), stale)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, old); diff != "" {
		t.Errorf("completed record (-want +got):\n%s", diff)
	}
	// Released (a 5xx): the key is free again.
	rel := idemRecord("r", "h", base)
	if _, err := st.ClaimIdempotencyKey(ctx, rel, stale); err != nil {
		t.Fatal(err)
	}
	if err := st.ReleaseIdempotencyKey(ctx, rel); err != nil {
		t.Fatal(err)
	}
	if old, err := st.ClaimIdempotencyKey(ctx, idemRecord("r", "h", base), stale); err != nil || old != nil {
		t.Errorf("claim after release = %+v, %v; want claimed", old, err)
	}
	// Expired records and stale claims are replaced.
	if old, err := st.ClaimIdempotencyKey(ctx, idemRecord("k", "h9", base.Add(25*time.Hour)), stale); err != nil || old != nil {
		t.Errorf("claim after expiry = %+v, %v; want claimed", old, err)
	}
	if old, err := st.ClaimIdempotencyKey(ctx, idemRecord("r", "h", base.Add(2*time.Hour)), base.Add(time.Hour)); err != nil || old != nil {
		t.Errorf("claim over a stale in-progress record = %+v, %v; want claimed", old, err)
	}
	// Purge drops what expired.
	if err := st.PurgeIdempotencyKeys(ctx, base.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if old, err := st.ClaimIdempotencyKey(ctx, idemRecord("k", "h9", base.Add(25*time.Hour)), stale); err != nil || old == nil {
		t.Errorf("the unexpired record was purged: %+v, %v", old, err)
	}

	// Concurrent claims of one key: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 10 {
		wg.Go(func() {
			old, err := st.ClaimIdempotencyKey(ctx, idemRecord("race", "h", base), stale)
			if err != nil {
				t.Errorf("ClaimIdempotencyKey: %v", err)
				return
			}
			if old == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d concurrent claims won, want 1", wins)
	}
}

func testRecordings(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a := mustAccount(t, st, "a@example.com")
	b := mustAccount(t, st, "b@example.com")
	r := &model.Recording{ID: model.NewID(), SandboxID: "sb1", AccountID: a.ID, Data: []byte("{\"version\":2}\n[0.1,\"o\",\"hi\"]\n"), Truncated: true, CreatedAt: base}
	if err := st.SaveRecording(ctx, r); err != nil {
		t.Fatalf("SaveRecording: %v", err)
	}
	got, err := st.Recording(ctx, a.ID, "sb1", r.ID)
	if err != nil {
		t.Fatalf("Recording: %v", err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("Recording (-want +got):\n%s", diff)
	}
	for _, q := range [][3]string{{b.ID, "sb1", r.ID}, {a.ID, "sb2", r.ID}, {a.ID, "sb1", "nope"}} {
		if _, err := st.Recording(ctx, q[0], q[1], q[2]); !errors.Is(err, model.ErrNotFound) {
			t.Errorf("Recording(%v) = %v, want ErrNotFound", q, err)
		}
	}
}

// testSpentTokens: a token is spent once across two stores on one
// database, even when both try at the same moment; expired entries are
// forgotten by the caller's clock.
func testSpentTokens(t *testing.T, newStore storeFactory) {
	open := newStore(t)
	st1, st2 := twoHandles(t, open)
	ctx := t.Context()
	exp := base.Add(30 * time.Second)
	const tries = 16
	wins := make(chan bool, tries)
	var wg sync.WaitGroup
	for i := range tries {
		st := []model.Store{st1, st2}[i%2]
		wg.Go(func() {
			ok, err := st.SpendToken(ctx, "jti-1", exp, base)
			if err != nil {
				t.Errorf("SpendToken: %v", err)
			}
			wins <- ok
		})
	}
	wg.Wait()
	close(wins)
	n := 0
	for ok := range wins {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("jti-1 was spent %d times, want exactly once", n)
	}
	if ok, err := st2.SpendToken(ctx, "jti-2", exp, base); err != nil || !ok {
		t.Errorf("SpendToken(jti-2) = %v, %v; want a fresh token", ok, err)
	}
	// Once jti-1 has expired its row may go; spending it again is then
	// the JWT check's to refuse, and the store takes it as new.
	later := exp.Add(time.Second)
	if ok, err := st1.SpendToken(ctx, "jti-3", later.Add(30*time.Second), later); err != nil || !ok {
		t.Fatalf("SpendToken(jti-3) = %v, %v", ok, err)
	}
	if ok, err := st1.SpendToken(ctx, "jti-1", later.Add(30*time.Second), later); err != nil || !ok {
		t.Errorf("SpendToken(jti-1) after expiry = %v, %v; want its old row forgotten", ok, err)
	}
}
