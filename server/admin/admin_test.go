package admin

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

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

// TestRefusalWindowBounded: a flood of unauthenticated attempts writes at
// most refusedPerMinute rows a minute; the next minute writes again and
// reports how many the last one dropped.
func TestRefusalWindowBounded(t *testing.T) {
	t.Parallel()
	var w refusalWindow
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	written := 0
	for range 10 * refusedPerMinute {
		if ok, _ := w.admit(now); ok {
			written++
		}
	}
	if written != refusedPerMinute {
		t.Errorf("%d rows written in a minute, want %d", written, refusedPerMinute)
	}
	ok, dropped := w.admit(now.Add(time.Minute))
	if !ok || dropped != 9*refusedPerMinute {
		t.Errorf("next minute: admitted %v, dropped %d, want true, %d", ok, dropped, 9*refusedPerMinute)
	}
}

func TestRedactQuery(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                     "",
		"limit=5":              "limit=5",
		"api_key=bxk_live_x&a": "a=&api_key=REDACTED",
		"token=t":              "token=REDACTED",
		"%zz":                  "(unparsable query not kept)",
	} {
		if got := redactQuery(in); got != want {
			t.Errorf("redactQuery(%q) = %q, want %q", in, got, want)
		}
	}
	if got := redactQuery("x=" + strings.Repeat("a", 5000)); len(got) != maxRefusedQuery {
		t.Errorf("a long query kept %d bytes, want %d", len(got), maxRefusedQuery)
	}
}
