package authz

import (
	"context"
	"errors"

	"github.com/boxkite/boxkite/server/model"
)

// ErrSystemOnly refuses a caller a Store method that reads or writes every
// account's records: only the server's own work (no caller) may.
var ErrSystemOnly = errors.New("authz: only the server itself may do this")

// inner is the wrapped store; embedded unexported, so what Store does not
// wrap is promoted but the raw store is not reachable through a Store.
type inner = model.Store

// Store is a model.Store that authorizes every call against the caller
// of the request it serves (From): a caller sees and changes its own
// account's records only. Work the server does on its own (the reaper,
// start-up reconciliation, watchers of the driver and the store) has no
// caller in its context and acts as the system; so do the steps of a
// request before the guard authenticated it (looking the key up, signup,
// login). Each method's rule is in store.go.
type Store struct{ inner }

// Wrap returns st behind the authorization layer. The server wraps its
// store once in New; subsystems only ever see the wrapped one.
func Wrap(st model.Store) *Store { return &Store{inner: st} }

// Unwrap returns the store behind s, for what is not a data access: the
// optional interfaces a store may implement (its LISTEN for other
// servers' notices).
func (s *Store) Unwrap() model.Store { return s.inner }

// caller returns the authenticated caller, nil for the system.
func caller(ctx context.Context) *Caller {
	info := From(ctx)
	if info == nil || info.Account == nil {
		return nil
	}
	return info
}

// ActsFor reports whether ctx may reach accountID's records: it acts as
// the system (no caller) or for a caller of that account. Stores other
// than model.Store (a subsystem's own) authorize with it and IsSystem, as
// Store does.
func ActsFor(ctx context.Context, accountID string) bool {
	c := caller(ctx)
	return c == nil || c.Account.ID == accountID
}

// IsSystem reports whether ctx acts as the system: the server's own work,
// with no caller.
func IsSystem(ctx context.Context) bool { return caller(ctx) == nil }

// account allows the system and a caller of accountID; anyone else gets
// model.ErrNotFound, as for a record that does not exist.
func (s *Store) account(ctx context.Context, accountID string) error {
	if !ActsFor(ctx, accountID) {
		return model.ErrNotFound
	}
	return nil
}

// system allows the system only.
func (s *Store) system(ctx context.Context) error {
	if !IsSystem(ctx) {
		return ErrSystemOnly
	}
	return nil
}
