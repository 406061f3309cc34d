package imagesapi

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz/authztest"
	"github.com/boxkite/boxkite/server/model"
)

// storeRules is every Store method's authorization, as authorized should
// implement it (authz.go). A new Store method fails TestStoreAuthorized
// until it has a row here.
var storeRules = map[string]string{
	"Import": "account", "Build": "account", "Logs": "account", "List": "account",
	"Get": "account", "Delete": "account", "RootFS": "account",
	"Use": "scoped",
}

// reachedStore records that a call reached it.
type reachedStore struct{ reached *bool }

func (s reachedStore) Import(context.Context, string, string, io.Reader) (api.Image, error) {
	*s.reached = true
	return api.Image{}, nil
}

func (s reachedStore) Build(context.Context, string, string, api.ImageSpec, func(string, string, map[string]any)) (api.Image, bool, error) {
	*s.reached = true
	return api.Image{}, false, nil
}

func (s reachedStore) Logs(context.Context, string, string, io.Writer, bool, func()) error {
	*s.reached = true
	return nil
}

func (s reachedStore) List(context.Context, string) ([]api.Image, error) {
	*s.reached = true
	return nil, nil
}

func (s reachedStore) Get(context.Context, string, string) (api.Image, error) {
	*s.reached = true
	return api.Image{}, nil
}

func (s reachedStore) Delete(context.Context, string, string, func(string) bool) error {
	*s.reached = true
	return nil
}

func (s reachedStore) RootFS(context.Context, string, string) (string, error) {
	*s.reached = true
	return "", nil
}

func (s reachedStore) Use(context.Context, string, string) error { *s.reached = true; return nil }

// callAs calls method on the authorized wrapper as ctx's actor, with the
// first string argument (the account id where the method takes one) set
// to acct; it reports whether the call reached the store and the error
// the wrapper returned.
func callAs(t *testing.T, method string, ctx context.Context, acct string) (bool, error) {
	t.Helper()
	var reached bool
	m := reflect.ValueOf(authorized{reachedStore{&reached}}).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("authorized has no method %s", method)
	}
	out := m.Call(authztest.Args(m.Type(), ctx, acct, nil))
	err, _ := out[len(out)-1].Interface().(error)
	return reached, err
}

// TestStoreAuthorized: every Store method has a rule, New keeps the image
// store behind authorized, and each wrapper lets the system and the owner
// through and refuses another account as its rule says.
func TestStoreAuthorized(t *testing.T) {
	authztest.Rules(t, reflect.TypeFor[Store](), storeRules)
	var reached bool
	s, err := New(Deps{
		Images: reachedStore{&reached}, Store: struct{ model.SandboxStore }{}, Snapshots: struct{ model.SnapshotStore }{}, Audit: &audit.Log{}, Now: time.Now,
		WriteLogPage: func(http.ResponseWriter, *http.Request, string, int, int) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.TypeOf(s.d.Images) != reflect.TypeFor[authorized]() {
		t.Errorf("New keeps a %T, want the image store behind authorized", s.d.Images)
	}
	authztest.Check(t, storeRules, authztest.Refusals{NotFound: errNotFound}, callAs)
}
