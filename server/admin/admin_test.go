package admin

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// TestStoreAuthorized: every method but AppendAdminAccess refuses a
// caller who is not an operator (AppendAdminAccess logs refused calls too).
func TestStoreAuthorized(t *testing.T) {
	t.Parallel()
	st := authorized{inner: nil, isOperator: func(id string) bool { return id == "op" }}
	ctx := httpx.WithInfo(context.Background(), &httpx.Info{})
	authz.From(ctx).Account = &model.Account{ID: "someone"}
	v := reflect.ValueOf(st)
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		if m.Name == "AppendAdminAccess" {
			continue
		}
		args := []reflect.Value{reflect.ValueOf(ctx)}
		for j := 2; j < m.Type.NumIn(); j++ {
			args = append(args, reflect.Zero(m.Type.In(j)))
		}
		out := v.Method(i).Call(args)
		if err, _ := out[len(out)-1].Interface().(error); !errors.Is(err, errOperatorOnly) {
			t.Errorf("%s by a non-operator: %v, want errOperatorOnly", m.Name, err)
		}
	}
}
