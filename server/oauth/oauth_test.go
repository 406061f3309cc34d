package oauth

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

func TestCheckRedirectURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uri string
		ok  bool
	}{
		{"https://app.example.com/callback", true},
		{"http://127.0.0.1:53682/callback", true},
		{"http://[::1]:8080/cb", true},
		{"http://localhost/cb", true},
		{"http://127.0.0.2/cb", true}, // all of 127/8 is loopback
		{"http://example.com/cb", false},
		{"http://localhost.evil.example/cb", false},
		{"http://10.0.0.1/cb", false},
		{"https://app.example.com/cb#x", false},
		{"https://user:pw@app.example.com/cb", false},
		{"myapp://cb", false},
		{"/relative", false},
		{"https:opaque", false},
		{"javascript:alert(1)", false},
		{"", false},
	}
	for _, tt := range tests {
		if err := CheckRedirectURI(tt.uri); (err == nil) != tt.ok {
			t.Errorf("CheckRedirectURI(%q) = %v, want ok %v", tt.uri, err, tt.ok)
		}
	}
}

func FuzzCheckRedirectURI(f *testing.F) {
	for _, s := range []string{"https://a.example/cb", "http://127.0.0.1:1/x", "http://example.com", "http://[::1]/", "x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if CheckRedirectURI(raw) != nil {
			return
		}
		// Accepted: https, or http on a loopback host; never a fragment.
		if strings.Contains(raw, "#") {
			t.Fatalf("accepted %q with a fragment", raw)
		}
		if !strings.HasPrefix(raw, "https://") && !strings.HasPrefix(raw, "http://") {
			t.Fatalf("accepted %q", raw)
		}
	})
}

// TestStoreAuthorized: every method of the store refuses a caller; the
// endpoints run before one exists.
func TestStoreAuthorized(t *testing.T) {
	t.Parallel()
	st := authorized{inner: nil}
	info := &httpx.Info{}
	ctx := httpx.WithInfo(context.Background(), info)
	authz.From(ctx).Account = &model.Account{ID: "a"}
	v := reflect.ValueOf(st)
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		args := []reflect.Value{reflect.ValueOf(ctx)}
		for j := 2; j < m.Type.NumIn(); j++ {
			args = append(args, reflect.Zero(m.Type.In(j)))
		}
		out := v.Method(i).Call(args)
		err, _ := out[len(out)-1].Interface().(error)
		if !errors.Is(err, errSystemOnly) {
			t.Errorf("%s with a caller: %v, want errSystemOnly", m.Name, err)
		}
	}
}

func TestAccessTokenChecks(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := &Service{d: Deps{Now: func() time.Time { return now }}}
	key := []byte(strings.Repeat("k", 32))
	sign := func(typ, aud string, exp time.Time) string {
		tok, err := signTestAccess(key, typ, aud, now, exp)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	const aud = "https://b.example/mcp/"
	if _, err := s.parseAccess(key, sign(typeAccess, aud, now.Add(time.Minute)), aud, now); err != nil {
		t.Errorf("good token: %v", err)
	}
	for name, tok := range map[string]string{
		"expired":      sign(typeAccess, aud, now),
		"other aud":    sign(typeAccess, "https://c.example/mcp/", now.Add(time.Minute)),
		"session type": sign(typeSession, aud, now.Add(time.Minute)),
		"other key": func() string {
			t, _ := signTestAccess([]byte(strings.Repeat("x", 32)), typeAccess, aud, now, now.Add(time.Minute))
			return t
		}(),
		"not a JWT": "abc",
		"alg none":  "eyJhbGciOiJub25lIn0.eyJ0eXBlIjoibWNwX2FjY2VzcyJ9.",
	} {
		if _, err := s.parseAccess(key, tok, aud, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
