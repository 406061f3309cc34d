package secrets

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// storeRules is every Store method's authorization, as authorized should
// implement it (authz.go). A new Store method fails TestStoreAuthorized
// until it has a row here.
var storeRules = map[string]string{
	"Secrets": "account", "DeleteSecret": "account", "TouchSecrets": "account",
	"CreateSecret": "record", "UpdateSecret": "record",
	"AllSecrets": "system", "RewrapSecret": "system",
	"GrantSecrets": "scoped", "SandboxSecretNames": "scoped",
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
	typ := m.Type()
	args := make([]reflect.Value, typ.NumIn())
	first := true
	for i := range args {
		pt := typ.In(i)
		v := reflect.New(pt).Elem()
		switch {
		case pt == reflect.TypeFor[context.Context]():
			v = reflect.ValueOf(&ctx).Elem()
		case pt.Kind() == reflect.String && first:
			v.SetString(acct)
			first = false
		case pt == reflect.TypeFor[*Record]():
			v = reflect.ValueOf(&Record{AccountID: acct})
		}
		args[i] = v
	}
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

// asCaller is a request context whose caller is the account id.
func asCaller(id string) context.Context {
	ctx := httpx.WithInfo(context.Background(), &httpx.Info{ID: "req"})
	authz.From(ctx).Account = &model.Account{ID: id}
	return ctx
}

// TestStoreAuthorized: every Store method has a rule, New keeps the store
// behind authorized, and each wrapper lets the system, the owner and
// another account through or refuses them as its rule says.
func TestStoreAuthorized(t *testing.T) {
	st := reflect.TypeFor[Store]()
	for i := range st.NumMethod() {
		if _, ok := storeRules[st.Method(i).Name]; !ok {
			t.Errorf("Store.%s has no authorization test: add its rule to storeRules", st.Method(i).Name)
		}
	}
	for name := range storeRules {
		if _, ok := st.MethodByName(name); !ok {
			t.Errorf("storeRules names %s, which Store does not have", name)
		}
	}
	kr, err := ParseKeyring(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	if s := New(panicStore{}, Config{Keyring: kr}); reflect.TypeOf(s.store) != reflect.TypeFor[authorized]() {
		t.Errorf("New keeps a %T, want the store behind authorized", s.store)
	}

	for name, kind := range storeRules {
		t.Run(name, func(t *testing.T) {
			if reached, err := callAs(t, name, context.Background(), "acct-b"); !reached {
				t.Errorf("as the system: err %v; want it let through", err)
			}
			reached, err := callAs(t, name, asCaller("acct-a"), "acct-a")
			if kind == "system" {
				if reached || !errors.Is(err, authz.ErrSystemOnly) {
					t.Errorf("as a caller: reached %v, err %v; want ErrSystemOnly", reached, err)
				}
				return
			}
			if !reached {
				t.Errorf("as the owner: err %v; want it let through", err)
			}
			reached, err = callAs(t, name, asCaller("acct-a"), "acct-b")
			if kind == "scoped" {
				if !reached {
					t.Errorf("scoped, as another account: err %v; want it let through (checked where the sandbox was loaded)", err)
				}
				return
			}
			if reached || !errors.Is(err, ErrNotFound) {
				t.Errorf("as another account: reached %v, err %v; want ErrNotFound", reached, err)
			}
		})
	}
}
