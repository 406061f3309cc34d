package secrets

import (
	"context"
	"reflect"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/authz/authztest"
)

// storeRules is every Store method's authorization, as authorized should
// implement it (authz.go). A new Store method fails TestStoreAuthorized
// until it has a row here.
var storeRules = map[string]string{
	"Secrets": "account", "DeleteSecret": "account", "TouchSecrets": "account",
	"CreateSecret": "record", "UpdateSecret": "record",
	"AllSecrets": "system", "RewrapSecret": "system",
	"GrantSecrets": "scoped", "SandboxSecretNames": "scoped",
	"SandboxSecretGrants": "scoped", "InheritSecrets": "scoped",
}

// panicStore panics for every method: a call that reached it.
type panicStore struct{ Store }

// callAs calls method on the authorized wrapper as ctx's actor, with the
// first string argument (an account id where the method takes one) and
// the AccountID of record arguments set to acct, and reports whether the
// call reached the inner store and the error the wrapper returned.
func callAs(t *testing.T, method string, ctx context.Context, acct string) (reached bool, err error) {
	t.Helper()
	m := reflect.ValueOf(authorized{panicStore{}}).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("authorized has no method %s", method)
	}
	args := authztest.Args(m.Type(), ctx, acct, map[reflect.Type]func(string) any{
		reflect.TypeFor[*Record](): func(acct string) any { return &Record{AccountID: acct} },
	})
	defer func() {
		if recover() != nil {
			reached = true
		}
	}()
	out := m.Call(args)
	if last := out[len(out)-1]; !last.IsNil() {
		err = last.Interface().(error)
	}
	return false, err
}

// TestStoreAuthorized: every Store method has a rule, New keeps the store
// behind authorized, and each wrapper lets the system, the owner and
// another account through or refuses them as its rule says.
func TestStoreAuthorized(t *testing.T) {
	authztest.Rules(t, reflect.TypeFor[Store](), storeRules)
	kr, err := ParseKeyring(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	if s := New(panicStore{}, Config{Keyring: kr}); reflect.TypeOf(s.store) != reflect.TypeFor[authorized]() {
		t.Errorf("New keeps a %T, want the store behind authorized", s.store)
	}
	authztest.Check(t, storeRules, authztest.Refusals{NotFound: ErrNotFound, SystemOnly: authz.ErrSystemOnly}, callAs)
}
