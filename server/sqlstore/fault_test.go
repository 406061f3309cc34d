package sqlstore

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// TestFullDatabaseSaysSo: once the database cannot grow (SQLite's
// max_page_count here, a full disk on a host), every kind of write says
// model.ErrStoreFull, lone writes (an API key, a webhook) as well as
// transactions, so the server answers 507 insufficient_storage instead
// of a bare 500 for the key a user tried to create on a full disk.
func TestFullDatabaseSaysSo(t *testing.T) {
	s := openSQLiteStore(t)
	ctx := t.Context()
	acct := &model.Account{ID: model.NewID(), Email: "full@example.com", CreatedAt: t0}
	if err := s.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	// One connection, so the limit holds for every write that follows.
	s.db.SetMaxOpenConns(1)
	// untilFull caps the file at its size, as a full disk would, and
	// writes until the database refuses. A connection the driver drops
	// after a failure comes back without the cap, so it is set each time.
	untilFull := func(write func(i int) error) error {
		for i := range 100_000 {
			var pages int
			if err := s.db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
				t.Fatal(err)
			}
			if err := write(i); err != nil {
				return err
			}
		}
		t.Fatal("the database never filled")
		return nil
	}
	err := untilFull(func(i int) error {
		return s.CreateAPIKey(ctx, &model.APIKey{
			ID: model.NewID(), AccountID: acct.ID, Name: fmt.Sprintf("k%d", i), Hash: fmt.Sprintf("%064x", i),
			Prefix: "bxk_live_" + strings.Repeat("x", 8), Role: model.RoleAdmin, CreatedAt: t0,
		})
	})
	if !errors.Is(err, model.ErrStoreFull) {
		t.Errorf("CreateAPIKey on a full database: %v, want model.ErrStoreFull", err)
	}
	err = untilFull(func(int) error {
		return s.CreateWebhook(ctx, &webhooks.Subscription{
			ID: model.NewID(), AccountID: acct.ID, URL: "https://hooks.example.com/x",
			EventTypes: []string{"sandbox.created"}, Secret: "s", Active: true, CreatedAt: t0,
		}, math.MaxInt)
	})
	if !errors.Is(err, model.ErrStoreFull) {
		t.Errorf("CreateWebhook on a full database: %v, want model.ErrStoreFull", err)
	}
	err = untilFull(func(int) error {
		return s.CreateVolume(ctx, &model.Volume{ID: model.NewID(), AccountID: acct.ID, SizeGB: 1, Status: "ready", CreatedAt: t0})
	})
	if !errors.Is(err, model.ErrStoreFull) {
		t.Errorf("CreateVolume on a full database: %v, want model.ErrStoreFull", err)
	}
}
