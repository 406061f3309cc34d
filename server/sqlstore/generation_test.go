package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/orgs"
)

var t0 = time.Date(2026, 12, 4, 13, 0, 0, 0, time.UTC)

func openSQLiteStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "boxkite.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cacheFixture is a personal account with a key and a sandbox, and an
// organization with a member's key and a sandbox.
type cacheFixture struct {
	acct, member *model.Account
	org          *orgs.Org
	key, orgKey  *model.APIKey
	sb, orgSB    *model.Sandbox
}

func newCacheFixture(t *testing.T, s *Store) *cacheFixture {
	t.Helper()
	ctx := t.Context()
	f := &cacheFixture{
		acct:   &model.Account{ID: model.NewID(), Email: "a@example.com", CreatedAt: t0},
		member: &model.Account{ID: model.NewID(), Email: "b@example.com", CreatedAt: t0},
		org:    &orgs.Org{ID: model.NewID(), Name: "acme", CreatedAt: t0},
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateAccount(ctx, f.acct))
	must(s.CreateAccount(ctx, f.member))
	must(s.CreateOrg(ctx, f.org, f.acct.ID))
	must(s.CreateOrgInvite(ctx, &orgs.Invite{ID: model.NewID(), OrgID: f.org.ID, Email: f.member.Email, Role: model.RoleAdmin, TokenHash: "h", InvitedBy: f.acct.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	_, err := s.AcceptOrgInvite(ctx, "h", f.member, t0)
	must(err)
	f.key = &model.APIKey{ID: model.NewID(), AccountID: f.acct.ID, Name: "k", Hash: "hash-a", Prefix: "p", Role: model.RoleAdmin, CreatedAt: t0}
	must(s.CreateAPIKey(ctx, f.key))
	f.orgKey = &model.APIKey{ID: model.NewID(), AccountID: f.org.ID, MemberID: f.member.ID, Name: "m", Hash: "hash-m", Prefix: "p", Role: model.RoleAdmin, CreatedAt: t0}
	must(s.CreateOrgAPIKey(ctx, f.orgKey))
	sandbox := func(accountID string) *model.Sandbox {
		sb := &model.Sandbox{
			ID: model.NewID(), AccountID: accountID, Size: api.SizeSmall, StorageGB: 1, LifetimeMinutes: 30,
			Status: api.StatusActive, CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute), Driver: "fake",
			Endpoint: model.Endpoint{Network: "tcp", Address: "127.0.0.1:1", Token: "tok", CertPEM: []byte("PEM")},
		}
		must(s.CreateSandbox(ctx, sb))
		return sb
	}
	f.sb, f.orgSB = sandbox(f.acct.ID), sandbox(f.org.ID)
	must(s.SetAllowedCommands(ctx, f.acct.ID, []api.CommandRule{{Command: "echo"}, {Command: "true"}}, t0))
	return f
}

// lookedUp is what the cached lookups answer for the fixture.
type lookedUp struct {
	Key, OrgKey     *model.APIKey
	Acct, OrgAcct   *model.Account
	KeyErr, OrgErr  string
	SB, OrgSB       *model.Sandbox
	SBErr, OrgSBErr string
	Rules           []api.CommandRule
	RulesErr        string
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// lookups runs the fixture's lookups through read (cached, or not).
func (f *cacheFixture) lookups(ctx context.Context, keyByHash func(context.Context, string) (*model.APIKey, *model.Account, error),
	sandbox func(context.Context, string, string) (*model.Sandbox, error), rules func(context.Context, string) ([]api.CommandRule, error),
) lookedUp {
	var l lookedUp
	var err error
	l.Key, l.Acct, err = keyByHash(ctx, f.key.Hash)
	l.KeyErr = errString(err)
	l.OrgKey, l.OrgAcct, err = keyByHash(ctx, f.orgKey.Hash)
	l.OrgErr = errString(err)
	l.SB, err = sandbox(ctx, f.acct.ID, f.sb.ID)
	l.SBErr = errString(err)
	l.OrgSB, err = sandbox(ctx, f.org.ID, f.orgSB.ID)
	l.OrgSBErr = errString(err)
	l.Rules, err = rules(ctx, f.acct.ID)
	l.RulesErr = errString(err)
	return l
}

// TestLookupCacheSeesEveryChange: after each store method that changes a
// key, an account, an organization, a membership or a sandbox, the cached
// lookups answer what the database holds, and the generation moved; an
// audit append moves nothing and the lookups are answered from memory.
// Without the generation (a cache dropped by hand, with one call site
// forgotten) one of these rows fails.
func TestLookupCacheSeesEveryChange(t *testing.T) {
	type mutation func(ctx context.Context, s *Store, f *cacheFixture) error
	tests := []struct {
		name   string
		mutate mutation
	}{
		{"RevokeAPIKey", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.RevokeAPIKey(ctx, f.acct.ID, f.key.ID, t0)
		}},
		{"TouchAPIKey", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.TouchAPIKey(ctx, f.key.ID, t0.Add(time.Minute))
		}},
		{"CreateAPIKey", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.CreateAPIKey(ctx, &model.APIKey{ID: model.NewID(), AccountID: f.acct.ID, Hash: "other", Prefix: "p", Role: model.RoleMember, CreatedAt: t0})
		}},
		{"EnsureAccountKey", func(ctx context.Context, s *Store, f *cacheFixture) error {
			_, _, err := s.EnsureAccountKey(ctx, &model.Account{ID: model.NewID(), Email: "c@example.com", CreatedAt: t0},
				&model.APIKey{ID: model.NewID(), Hash: "boot", Prefix: "p", Role: model.RoleAdmin, CreatedAt: t0})
			return err
		}},
		{"SetKeepOutputSecrets", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.SetKeepOutputSecrets(ctx, f.acct.ID, true)
		}},
		{"UpdateOrg", func(ctx context.Context, s *Store, f *cacheFixture) error {
			o := *f.org
			o.Name, o.Quota.MaxConcurrentSandboxes, o.Quota.MonthlySandboxHours = "renamed", 3, 7.5
			return s.UpdateOrg(ctx, &o)
		}},
		{"SetOrgMemberRole", func(ctx context.Context, s *Store, f *cacheFixture) error {
			_, err := s.SetOrgMemberRole(ctx, f.org.ID, f.member.ID, model.RoleMember)
			return err
		}},
		{"RemoveOrgMember", func(ctx context.Context, s *Store, f *cacheFixture) error {
			_, err := s.RemoveOrgMember(ctx, f.org.ID, f.member.ID, t0)
			return err
		}},
		{"UpdateSandbox", func(ctx context.Context, s *Store, f *cacheFixture) error {
			_, err := s.UpdateSandbox(ctx, f.sb.ID, func(sb *model.Sandbox) error {
				sb.Status, sb.DestroyReason = api.StatusDestroyed, "test"
				return nil
			})
			return err
		}},
		{"UpdateSandboxPause", func(ctx context.Context, s *Store, f *cacheFixture) error {
			_, err := s.UpdateSandbox(ctx, f.orgSB.ID, func(sb *model.Sandbox) error {
				at := t0
				sb.Status, sb.PausedWith, sb.PausedAt = api.StatusPaused, api.PauseFilesystem, &at
				return nil
			})
			return err
		}},
		{"DeleteSandbox", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.DeleteSandbox(ctx, f.sb.ID)
		}},
		{"CreateSandbox", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.CreateSandbox(ctx, &model.Sandbox{ID: model.NewID(), AccountID: f.acct.ID, Status: model.StatusCreating, CreatedAt: t0, ExpiresAt: t0})
		}},
		{"ReserveSandboxes", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.ReserveSandboxes(ctx, f.acct.ID, t0.Add(-time.Hour), t0, func(model.Usage) error { return nil }, []*model.Sandbox{
				{ID: model.NewID(), AccountID: f.acct.ID, Status: model.StatusCreating, CreatedAt: t0, ExpiresAt: t0},
			})
		}},
		{"SetAllowedCommands", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.SetAllowedCommands(ctx, f.acct.ID, []api.CommandRule{{Command: "ls", ArgsDeny: []string{"-R"}}}, t0)
		}},
		{"ClearAllowedCommands", func(ctx context.Context, s *Store, f *cacheFixture) error {
			return s.SetAllowedCommands(ctx, f.acct.ID, nil, t0)
		}},
		{"DeleteSSHKey", func(ctx context.Context, s *Store, f *cacheFixture) error {
			k := &model.SSHKey{ID: model.NewID(), AccountID: f.acct.ID, Name: "s", PublicKey: "ssh-ed25519 AAAA", Fingerprint: "SHA256:x", CreatedAt: t0}
			if err := s.CreateSSHKey(ctx, k); err != nil {
				return err
			}
			return s.DeleteSSHKey(ctx, f.acct.ID, k.ID)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openSQLiteStore(t)
			ctx := t.Context()
			f := newCacheFixture(t, s)
			cached := func() lookedUp { return f.lookups(ctx, s.APIKeyByHash, s.Sandbox, s.AllowedCommands) }
			direct := func() lookedUp { return f.lookups(ctx, s.apiKeyByHash, s.sandbox, s.allowedCommands) }
			cached() // fills the cache
			before := s.gen.N()
			// An audit append changes nothing the lookups read.
			if err := s.AppendExecLog(ctx, &model.ExecLogEntry{ID: model.NewID(), SandboxID: f.sb.ID, AccountID: f.acct.ID, Source: api.LogSourceAgent, Operation: "exec", Detail: []byte("{}"), StartedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if n := s.gen.N(); n != before {
				t.Errorf("an audit append moved the generation from %d to %d", before, n)
			}
			if _, ok := s.cache.keys.Get(f.key.Hash); !ok {
				t.Errorf("the key is not answered from the cache after an audit append")
			}
			if err := tt.mutate(ctx, s, f); err != nil {
				t.Fatal(err)
			}
			if n := s.gen.N(); n == before {
				t.Errorf("%s did not move the generation", tt.name)
			}
			want := direct()
			if diff := cmp.Diff(want, cached()); diff != "" {
				t.Errorf("cached lookups after %s (-database +cached):\n%s", tt.name, diff)
			}
		})
	}
}

// TestGenerationEveryTable: a change to any table but the exempt ones
// moves the generation, whoever makes it: a raw statement, a transaction
// (only once it returned), a table the store does not know yet, a
// foreign-key cascade; a rolled-back change settles too.
func TestGenerationEveryTable(t *testing.T) {
	s := openSQLiteStore(t)
	ctx := t.Context()
	f := newCacheFixture(t, s)
	moved := func(name string, fn func() error) {
		t.Helper()
		before := s.gen.N()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n, settled := s.gen.Current(); !settled || n == before {
			t.Errorf("%s: generation %d → %d, settled %v; want it moved and settled", name, before, n, settled)
		}
	}
	exec := func(q string, args ...any) func() error {
		return func() error { _, err := s.db.ExecContext(ctx, q, args...); return err }
	}
	// Every table a cached lookup reads, changed behind the store's methods.
	for _, table := range lookupTables(t) {
		col := firstColumn(t, s, table)
		moved("UPDATE "+table, exec(fmt.Sprintf("UPDATE %s SET %s = %s", table, col, col)))
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE scratch (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	moved("INSERT into a table the store does not know", exec(`INSERT INTO scratch (x) VALUES (1)`))
	moved("a transaction", func() error {
		return s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE scratch SET x = 2`); err != nil {
				return err
			}
			// Not yet returned: nothing may be answered from memory.
			if _, settled := s.gen.Current(); settled {
				return errors.New("the generation is settled inside the transaction that changed a row")
			}
			return nil
		})
	})
	moved("a rolled-back transaction", func() error {
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE scratch SET x = 3`); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			return err
		}
		return nil
	})
	// A statement that fails leaves nothing pending.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO scratch (x) VALUES (5), (6), ((SELECT x FROM nowhere))`); err == nil {
		t.Fatal("a statement on a missing table succeeded")
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO accounts (id, email, created_at) VALUES (?, ?, 0)`, model.NewID(), f.acct.Email); err == nil {
		t.Fatal("a duplicate account was inserted")
	}
	if _, settled := s.gen.Current(); !settled {
		t.Errorf("pending after failed statements")
	}
	moved("a write that returns rows", func() error {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		rows, err := conn.QueryContext(ctx, `UPDATE scratch SET x = 4 RETURNING x`)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			return err
		}
		// Pending until the connection's next call (or its reset).
		if _, settled := s.gen.Current(); settled {
			return errors.New("settled before the connection's next call")
		}
		return conn.PingContext(ctx)
	})
	// A cascade: deleting a sandbox deletes rows that reference it.
	moved("DeleteSandbox", func() error { return s.DeleteSandbox(ctx, f.orgSB.ID) })
	if _, ok := s.cache.sandboxes.Get([2]string{f.org.ID, f.orgSB.ID}); ok {
		t.Errorf("a deleted sandbox is still cached")
	}
}

var errRollback = errors.New("roll back")

// lookupTables are the tables the cached lookups read.
func lookupTables(t *testing.T) []string {
	t.Helper()
	var tables []string
	for _, q := range []string{keyLookupQuery, sandboxLookupQuery, allowlistQuery} {
		words := strings.Fields(q)
		for i, w := range words[:len(words)-1] {
			if w == "FROM" || w == "JOIN" {
				tables = append(tables, words[i+1])
			}
		}
	}
	if len(tables) < 6 {
		t.Fatalf("found only the tables %v in the lookup queries", tables)
	}
	return tables
}

// TestLookupQueriesReadNoExemptTable: the exempt tables' changes do not
// move the generation, so no cached lookup may read them.
func TestLookupQueriesReadNoExemptTable(t *testing.T) {
	for _, table := range lookupTables(t) {
		if exemptTables[table] {
			t.Errorf("a cached lookup reads %s, whose changes do not move the generation", table)
		}
	}
}

func firstColumn(t *testing.T, s *Store, table string) string {
	t.Helper()
	var col string
	if err := s.db.QueryRowContext(t.Context(), `SELECT name FROM pragma_table_info(?) ORDER BY cid LIMIT 1`, table).Scan(&col); err != nil {
		t.Fatalf("columns of %s: %v", table, err)
	}
	return col
}

// TestLookupCacheRevokeThenUse: while other goroutines keep the cache
// full, a key revoked (a sandbox destroyed) is refused by the very next
// lookup after the call returned.
func TestLookupCacheRevokeThenUse(t *testing.T) {
	s := openSQLiteStore(t)
	ctx := t.Context()
	f := newCacheFixture(t, s)
	const n = 60
	keys := make([]*model.APIKey, n)
	sbs := make([]*model.Sandbox, n)
	for i := range n {
		keys[i] = &model.APIKey{ID: model.NewID(), AccountID: f.acct.ID, Hash: fmt.Sprintf("h%d", i), Prefix: "p", Role: model.RoleAdmin, CreatedAt: t0}
		if err := s.CreateAPIKey(ctx, keys[i]); err != nil {
			t.Fatal(err)
		}
		sbs[i] = &model.Sandbox{ID: model.NewID(), AccountID: f.acct.ID, Status: api.StatusActive, CreatedAt: t0, ExpiresAt: t0}
		if err := s.CreateSandbox(ctx, sbs[i]); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				for i := range n {
					select {
					case <-stop:
						return
					default:
					}
					s.APIKeyByHash(ctx, keys[i].Hash)
					s.Sandbox(ctx, f.acct.ID, sbs[i].ID)
				}
			}
		})
	}
	for i := range n {
		if err := s.RevokeAPIKey(ctx, f.acct.ID, keys[i].ID, t0); err != nil {
			t.Fatal(err)
		}
		if k, _, err := s.APIKeyByHash(ctx, keys[i].Hash); err != nil || k.RevokedAt == nil {
			t.Errorf("key %d right after its revocation: %+v, %v", i, k, err)
		}
		if _, err := s.UpdateSandbox(ctx, sbs[i].ID, func(sb *model.Sandbox) error { sb.Status = api.StatusDestroyed; return nil }); err != nil {
			t.Fatal(err)
		}
		if sb, err := s.Sandbox(ctx, f.acct.ID, sbs[i].ID); err != nil || sb.Status != api.StatusDestroyed {
			t.Errorf("sandbox %d right after its destruction: %+v, %v", i, sb, err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestLookupCacheCopies: what a lookup returns is the caller's to change.
func TestLookupCacheCopies(t *testing.T) {
	s := openSQLiteStore(t)
	ctx := t.Context()
	f := newCacheFixture(t, s)
	for range 2 {
		k, a, err := s.APIKeyByHash(ctx, f.orgKey.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if k.Role != model.RoleAdmin || a.Org.Name != "acme" {
			t.Fatalf("lookup = %+v %+v", k, a.Org)
		}
		k.Role, a.Org.Name = "changed", "changed"
		sb, err := s.Sandbox(ctx, f.acct.ID, f.sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(sb.Endpoint.CertPEM) != "PEM" || sb.Label != "" {
			t.Fatalf("sandbox = %+v", sb)
		}
		sb.Endpoint.CertPEM[0], sb.Label = 'X', "changed"
	}
}
