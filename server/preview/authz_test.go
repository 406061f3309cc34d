package preview

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz/authztest"
)

// storeRules is every Store method's authorization, as authorized should
// implement it (authz.go). A new Store method fails TestStoreAuthorized
// until it has a row here.
var storeRules = map[string]string{
	"Previews": "account", "RevokePreviews": "account",
	"CreatePreview":      "record",
	"PreviewByTokenHash": "open",
}

// reachedStore records that a call reached it.
type reachedStore struct{ reached *bool }

func (s reachedStore) CreatePreview(context.Context, *Record) error { *s.reached = true; return nil }

func (s reachedStore) PreviewByTokenHash(context.Context, string) (*Record, error) {
	*s.reached = true
	return &Record{}, nil
}

func (s reachedStore) Previews(context.Context, string, string) ([]*Record, error) {
	*s.reached = true
	return nil, nil
}

func (s reachedStore) RevokePreviews(context.Context, string, string, int, time.Time) ([]*Record, error) {
	*s.reached = true
	return nil, nil
}

// callAs calls method on the authorized wrapper as ctx's actor, with the
// first string argument (an account id where the method takes one) and
// the AccountID of record arguments set to acct; it reports whether the
// call reached the store and the error the wrapper returned.
func callAs(t *testing.T, method string, ctx context.Context, acct string) (bool, error) {
	t.Helper()
	var reached bool
	m := reflect.ValueOf(authorized{reachedStore{&reached}}).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("authorized has no method %s", method)
	}
	out := m.Call(authztest.Args(m.Type(), ctx, acct, map[reflect.Type]func(string) any{
		reflect.TypeFor[*Record](): func(acct string) any { return &Record{AccountID: acct} },
	}))
	err, _ := out[len(out)-1].Interface().(error)
	return reached, err
}

// TestStoreAuthorized: every Store method has a rule, New keeps the store
// behind authorized, and each wrapper lets the system and the owner
// through and refuses another account as its rule says.
func TestStoreAuthorized(t *testing.T) {
	authztest.Rules(t, reflect.TypeFor[Store](), storeRules)
	var reached bool
	s, err := New(reachedStore{&reached}, nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.TypeOf(s.store) != reflect.TypeFor[authorized]() {
		t.Errorf("New keeps a %T, want the store behind authorized", s.store)
	}
	authztest.Check(t, storeRules, authztest.Refusals{NotFound: ErrNotFound}, callAs)
}
