// Package authztest checks a subsystem's authorization wrapper (the
// authz.go beside a store of its own, docs/architecture.md): that every
// method of the store has a rule, and that each wrapper lets the system,
// the owner and another account through or refuses them as its rule
// says. Tests only.
package authztest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// The rules a wrapper method may have.
const (
	Account = "account" // the account id argument must be the caller's
	Record  = "record"  // the record written must be the caller's
	Result  = "result"  // what it finds must be the caller's
	Scoped  = "scoped"  // keyed by what the handler loaded for the caller
	System  = "system"  // the server itself only
	Open    = "open"    // needs no caller
)

// Rules fails t for a method of the store interface st without a rule,
// and for a rule that names no method of st.
func Rules(t *testing.T, st reflect.Type, rules map[string]string) {
	t.Helper()
	for i := range st.NumMethod() {
		if _, ok := rules[st.Method(i).Name]; !ok {
			t.Errorf("Store.%s has no authorization test: add its rule to storeRules", st.Method(i).Name)
		}
	}
	for name := range rules {
		if _, ok := st.MethodByName(name); !ok {
			t.Errorf("storeRules names %s, which Store does not have", name)
		}
	}
}

// AsCaller is a request context whose caller is the account id.
func AsCaller(id string) context.Context {
	ctx := httpx.WithInfo(context.Background(), &httpx.Info{ID: "req"})
	authz.From(ctx).Account = &model.Account{ID: id}
	return ctx
}

// Args are the arguments of a call of a method of type typ as ctx's
// actor: ctx, acct for the first string, a record of acct (records) for
// the types it has one for, and zero values for the rest.
func Args(typ reflect.Type, ctx context.Context, acct string, records map[reflect.Type]func(acct string) any) []reflect.Value {
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
		case records[pt] != nil:
			v = reflect.ValueOf(records[pt](acct))
		}
		args[i] = v
	}
	return args
}

// Call calls method of the wrapper under test as ctx's actor, on
// acct's records, and reports whether it reached the store behind.
type Call func(t *testing.T, method string, ctx context.Context, acct string) (reached bool, err error)

// Refusals are the errors a wrapper refuses with.
type Refusals struct {
	NotFound   error // another account's record
	SystemOnly error // a caller, for a system method
}

// Check checks each rule: the system reaches every method; a caller is
// refused a system method; the owner reaches the others; another account
// reaches scoped and open ones, may reach a result one (which then
// refuses what it found), and is refused the rest as not found.
func Check(t *testing.T, rules map[string]string, refused Refusals, call Call) {
	t.Helper()
	for name, kind := range rules {
		t.Run(name, func(t *testing.T) {
			if reached, err := call(t, name, context.Background(), "acct-b"); !reached || err != nil {
				t.Errorf("as the system: reached %v, err %v; want it let through", reached, err)
			}
			reached, err := call(t, name, AsCaller("acct-a"), "acct-a")
			if kind == System {
				if reached || !errors.Is(err, refused.SystemOnly) {
					t.Errorf("system, as a caller: reached %v, err %v; want the system-only refusal", reached, err)
				}
				return
			}
			if !reached || err != nil {
				t.Errorf("as the owner: reached %v, err %v; want it let through", reached, err)
			}
			reached, err = call(t, name, AsCaller("acct-a"), "acct-b")
			switch kind {
			case Scoped, Open:
				if !reached || err != nil {
					t.Errorf("%s, as another account: reached %v, err %v; want it let through", kind, reached, err)
				}
			case Result:
				if !errors.Is(err, refused.NotFound) {
					t.Errorf("result, as another account: reached %v, err %v; want ErrNotFound", reached, err)
				}
			default:
				if reached || !errors.Is(err, refused.NotFound) {
					t.Errorf("as another account: reached %v, err %v; want ErrNotFound", reached, err)
				}
			}
		})
	}
}
