package e2b

import (
	"context"
	"reflect"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authz/authztest"
)

// storeRules is every Store method's authorization, as authorized should
// implement it (authz.go). A new Store method fails TestStoreAuthorized
// until it has a row here.
var storeRules = map[string]string{
	"E2BSandboxes": "account", "PutE2BSandbox": "record", "E2BSandbox": "result",
}

// ownedStore records whether a call reached it; what it finds belongs to
// owner.
type ownedStore struct {
	owner   string
	reached *bool
}

func (s ownedStore) PutE2BSandbox(context.Context, Record) error { *s.reached = true; return nil }

func (s ownedStore) E2BSandbox(_ context.Context, id string) (Record, error) {
	*s.reached = true
	return Record{SandboxID: id, AccountID: s.owner}, nil
}

func (s ownedStore) E2BSandboxes(context.Context, string) ([]Record, error) {
	*s.reached = true
	return nil, nil
}

// noPlane is a ControlPlane for building a Handler that serves nothing.
type noPlane struct{ ControlPlane }

func (noPlane) TokenKey(context.Context) ([]byte, error) { return nil, nil }

// callAs calls method on the authorized wrapper of a store whose records
// belong to owner, as ctx's actor, with the account id argument and the
// AccountID of record arguments set to acct; it reports whether the call
// reached the store and the error the wrapper returned.
func callAs(t *testing.T, method string, ctx context.Context, owner, acct string) (bool, error) {
	t.Helper()
	var reached bool
	m := reflect.ValueOf(authorized{ownedStore{owner: owner, reached: &reached}}).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("authorized has no method %s", method)
	}
	args := []reflect.Value{reflect.ValueOf(&ctx).Elem()}
	switch method {
	case "PutE2BSandbox":
		args = append(args, reflect.ValueOf(Record{SandboxID: "sb", AccountID: acct}))
	default:
		args = append(args, reflect.ValueOf(acct))
	}
	out := m.Call(args)
	err, _ := out[len(out)-1].Interface().(error)
	return reached, err
}

// TestStoreAuthorized: every Store method has a rule, New keeps the store
// behind authorized, and each wrapper lets the system and the owner
// through and refuses another account as not found.
func TestStoreAuthorized(t *testing.T) {
	authztest.Rules(t, reflect.TypeFor[Store](), storeRules)
	if h := New(noPlane{}, ownedStore{}, nil); reflect.TypeOf(h.store) != reflect.TypeFor[authorized]() {
		t.Errorf("New keeps a %T, want the store behind authorized", h.store)
	}
	// E2BSandbox's argument is a sandbox id; what it finds is the owner's.
	authztest.Check(t, storeRules, authztest.Refusals{NotFound: ErrNotFound}, func(t *testing.T, method string, ctx context.Context, acct string) (bool, error) {
		return callAs(t, method, ctx, acct, acct)
	})
}
