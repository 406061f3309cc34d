package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// sinceStore records the since of every usage read a create makes.
type sinceStore struct {
	model.Store
	mu     sync.Mutex
	sinces []time.Time
}

func (s *sinceStore) record(since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinces = append(s.sinces, since)
}

func (s *sinceStore) Usage(ctx context.Context, accountID string, since, now time.Time) (model.Usage, error) {
	s.record(since)
	return s.Store.Usage(ctx, accountID, since, now)
}

func (s *sinceStore) ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time, check func(model.Usage) error, sbs []*model.Sandbox) error {
	s.record(since)
	return s.Store.ReserveSandboxes(ctx, accountID, since, now, check, sbs)
}

func (s *sinceStore) take() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sinces
	s.sinces = nil
	return out
}

// TestCreateSumsHoursOnlyUnderAMonthlyLimit: a create's usage reads (the
// check before it starts and the reservation's) ask the store for the
// month's sandbox-hours only when a monthly limit applies; without one
// they pass a zero since, and the store does not read every sandbox the
// account created this month (issue 27: twice per create, once in the
// write slot).
func TestCreateSumsHoursOnlyUnderAMonthlyLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		limits    server.Limits
		wantHours bool
	}{
		{"no monthly limit", server.Limits{}, false},
		{"monthly limit", server.Limits{MonthlySandboxHours: 100}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &sinceStore{Store: openStore(t, t.TempDir())}
			e := newEnvWithStore(t, server.Config{Limits: tt.limits}, st)
			st.take()
			e.create(e.KeyA, api.CreateSandboxRequest{})
			sinces := st.take()
			if len(sinces) < 2 {
				t.Fatalf("a create read its usage %d times, want the check and the reservation", len(sinces))
			}
			for _, since := range sinces {
				if since.IsZero() == tt.wantHours {
					t.Errorf("usage read since %v; want the month's start: %v", since, tt.wantHours)
				}
			}
		})
	}
}
