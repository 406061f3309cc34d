package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/admin"
	"github.com/boxkite/boxkite/server/model"
)

// operators are the accounts holding the operator role: those whose
// emails Config.Operators names, and in local mode (a bootstrap key) the
// bootstrap account, the one user, resolved to account ids once (Init
// refuses to start when one has no account, so nobody can sign up with an
// operator's email before the operator does).
type operators struct {
	once sync.Once
	ids  map[string]bool
	err  error
}

// resolveOperators looks the operator emails up.
func (s *Server) resolveOperators(ctx context.Context) error {
	s.ops.once.Do(func() {
		s.ops.ids = map[string]bool{}
		var missing []string
		for _, email := range s.operatorEmails() {
			email = strings.ToLower(strings.TrimSpace(email))
			acct, err := s.store.AccountByEmail(ctx, email)
			if errors.Is(err, model.ErrNotFound) {
				missing = append(missing, email)
				continue
			}
			if err != nil {
				s.ops.err = fmt.Errorf("look up operator %s: %w", email, err)
				return
			}
			s.ops.ids[acct.ID] = true
		}
		if len(missing) > 0 {
			s.ops.err = fmt.Errorf("--operator names accounts that do not exist: %s (sign them up first)", strings.Join(missing, ", "))
		}
	})
	return s.ops.err
}

// operatorEmails are Config.Operators, with the bootstrap account's in
// local mode.
func (s *Server) operatorEmails() []string {
	if s.cfg.BootstrapAPIKey != "" {
		return append(slices.Clone(s.cfg.Operators), s.cfg.BootstrapEmail)
	}
	return s.cfg.Operators
}

// isOperator reports whether accountID holds the operator role.
func (s *Server) isOperator(accountID string) bool {
	if accountID == "" || len(s.operatorEmails()) == 0 {
		return false
	}
	if err := s.resolveOperators(context.Background()); err != nil {
		s.log.Error("resolve operators", "err", err)
	}
	return s.ops.ids[accountID]
}

// newAdmin builds the operator's routes when the store keeps the admin
// access log (the SQL store does).
func (s *Server) newAdmin() error {
	st, ok := s.rawStore().(admin.Store)
	if !ok {
		return nil
	}
	svc, err := admin.New(admin.Deps{
		Store: st, Log: s.log, Now: func() time.Time { return s.now() },
		IsOperator: s.isOperator, GlobalLimit: s.cfg.Limits.GlobalConcurrent,
	})
	if err != nil {
		return err
	}
	s.admin = svc
	return nil
}
