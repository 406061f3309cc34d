package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
)

// errOwn is a write's own failure in the batch tests.
var errOwn = errors.New("the write's own failure")

// TestWriteBatchFailureIsolated: writes queued together are committed
// together, and one that fails (its own error after it wrote, a unique
// conflict, a panic, or a failure that takes the transaction down with
// it) fails alone: its neighbours, before and after it, are committed and
// its own changes are not.
func TestWriteBatchFailureIsolated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing func(s *Store, ctx context.Context) error
		wantErr func(error) bool
		batched int64 // writes committed by a shared transaction
	}{
		{
			"its own error after writing",
			func(s *Store, ctx context.Context) error {
				return s.inTx(ctx, func(tx *sql.Tx) error {
					if err := s.createAccount(ctx, tx, account("bad")); err != nil {
						return err
					}
					return errOwn
				})
			},
			func(err error) bool { return errors.Is(err, errOwn) },
			4,
		},
		{
			"a unique conflict in a lone statement",
			func(s *Store, ctx context.Context) error {
				return s.CreateAccount(ctx, &model.Account{ID: model.NewID(), Email: "w0@example.com", CreatedAt: time.Now()})
			},
			func(err error) bool { return errors.Is(err, model.ErrConflict) },
			4,
		},
		{
			"a panic",
			func(s *Store, ctx context.Context) (err error) {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("%w: %v", errOwn, v)
					}
				}()
				return s.inTx(ctx, func(tx *sql.Tx) error {
					if err := s.createAccount(ctx, tx, account("bad")); err != nil {
						return err
					}
					panic("a bug in the write")
				})
			},
			func(err error) bool {
				return errors.Is(err, errOwn) && strings.Contains(err.Error(), "a bug in the write")
			},
			4,
		},
		{
			// As an interrupt (the write's context ending in a statement)
			// rolls back SQLite's whole transaction: the others run again,
			// one transaction each.
			"one that takes the transaction down",
			func(s *Store, ctx context.Context) error {
				return s.inTx(ctx, func(tx *sql.Tx) error {
					if err := s.createAccount(ctx, tx, account("bad")); err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, "ROLLBACK"); err != nil {
						return err
					}
					return errOwn
				})
			},
			func(err error) bool { return errors.Is(err, errOwn) },
			0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openSlotStore(t)
			ctx := t.Context()
			release := holdSlot(t, s)
			var wg sync.WaitGroup
			errs := make([]error, 5)
			for i := range errs {
				wg.Go(func() {
					switch i {
					case 2:
						errs[i] = tc.failing(s, ctx)
					case 0, 3: // a lone INSERT
						errs[i] = s.CreateAccount(ctx, account(fmt.Sprintf("w%d", i)))
					default: // a transaction
						a := account(fmt.Sprintf("w%d", i))
						_, _, errs[i] = s.EnsureAccountKey(ctx, a, &model.APIKey{
							ID: model.NewID(), Hash: a.ID, Prefix: "bxk_live_x", Role: model.RoleAdmin, CreatedAt: time.Now(),
						})
					}
				})
				waitSlotQueue(t, s.slot, i+1)
			}
			release()
			wg.Wait()
			for i, err := range errs {
				if i == 2 {
					if !tc.wantErr(err) {
						t.Errorf("the failing write got %v", err)
					}
					continue
				}
				if err != nil {
					t.Errorf("write %d beside the failing one: %v", i, err)
				}
			}
			want := []string{"w0@example.com", "w1@example.com", "w3@example.com", "w4@example.com"}
			if diff := cmp.Diff(want, accountEmails(t, s)); diff != "" {
				t.Errorf("accounts committed (-want +got):\n%s", diff)
			}
			if _, n := s.WriteStats(); n != tc.batched {
				t.Errorf("writes committed in a shared transaction: %d; want %d", n, tc.batched)
			}
		})
	}
}

func account(name string) *model.Account {
	return &model.Account{ID: model.NewID(), Email: name + "@example.com", CreatedAt: time.Now()}
}

// accountEmails returns the accounts' emails in insertion order.
func accountEmails(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), `SELECT email FROM accounts ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
