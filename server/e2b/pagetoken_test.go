package e2b

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

func TestPageAfter(t *testing.T) {
	t.Parallel()
	id := model.NewID()
	enc := base64.RawURLEncoding.EncodeToString
	for _, tc := range []struct {
		name, token, want string
	}{
		{"a token this server gave", enc([]byte(id)), id},
		{"garbage (valid base64url)", "garbage", ""},
		{"not base64url", "***", ""},
		{"an id in upper case", enc([]byte(strings.ToUpper(id))), ""},
		{"an id and more", enc([]byte(id + "x")), ""},
		{"a name", enc([]byte("sandbox-1")), ""},
		{"unicode", enc([]byte("ßandbox")), ""},
		{"huge", strings.Repeat("A", 1<<16), ""},
	} {
		got, err := pageAfter(tc.token)
		if tc.want != "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: %q, %v, want %q", tc.name, got, err, tc.want)
			}
			continue
		}
		e, ok := errors.AsType[*api.Error](err)
		if !ok || e.Status != http.StatusBadRequest || e.Code != api.CodeBadRequest || e.Hint == "" {
			t.Errorf("%s: %q, %v, want 400 bad_request with a hint", tc.name, got, err)
		}
	}
}

// listPlane answers the facade's authentication and counts what reaches
// its lists.
type listPlane struct {
	ControlPlane
	reached *int
}

type listCaller struct{}

func (listCaller) AccountID() string { return "acct" }
func (listCaller) KeyID() string     { return "key" }

func (listPlane) TokenKey(context.Context) ([]byte, error) { return nil, nil }
func (listPlane) Authenticate(context.Context, string) (Caller, error) {
	return listCaller{}, nil
}

func (p listPlane) Sandboxes(context.Context, Caller) ([]Sandbox, error) {
	*p.reached++
	return nil, nil
}

func (p listPlane) Snapshots(context.Context, Caller, string) ([]SnapshotInfo, error) {
	*p.reached++
	return nil, nil
}

// TestNextTokenRefused: nextToken=garbage is valid base64url, so it
// decoded to an "id" no sandbox has and the list started over from its
// first page; each list (both sandbox routes and the snapshots) refuses
// it now, 400 with a hint, before listing anything.
func TestNextTokenRefused(t *testing.T) {
	t.Parallel()
	var reached int
	h := New(listPlane{reached: &reached}, ownedStore{reached: new(bool)}, nil)
	for _, path := range []string{"/sandboxes", "/v2/sandboxes", "/snapshots"} {
		for _, token := range []string{"garbage", "***", base64.RawURLEncoding.EncodeToString([]byte("not-an-id"))} {
			w := httptest.NewRecorder()
			h.mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path+"?nextToken="+token, nil))
			var body errorBody
			_ = json.Unmarshal(w.Body.Bytes(), &body)
			if w.Code != http.StatusBadRequest || body.Code != http.StatusBadRequest ||
				!strings.Contains(body.Message, "nextToken") || !strings.Contains(body.Message, "X-Next-Token") {
				t.Errorf("GET %s?nextToken=%s: %d %s, want 400 naming nextToken with a hint", path, token, w.Code, w.Body)
			}
		}
	}
	if reached != 0 {
		t.Errorf("%d lists were read for a refused token", reached)
	}
	w := httptest.NewRecorder()
	h.mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/snapshots?nextToken="+base64.RawURLEncoding.EncodeToString([]byte(model.NewID())), nil))
	if w.Code != http.StatusOK || reached != 1 {
		t.Errorf("GET /snapshots with a well-formed token: %d %s, want 200", w.Code, w.Body)
	}
}

// TestListQueryRefused400: E2B's API answers a list query its OpenAPI
// spec refuses (limit outside 1-100, an order or state not in the enum)
// and metadata it cannot parse with 400 {code: 400, message}; the facade
// answered 422 and clamped limit=1000 to 1000.
func TestListQueryRefused400(t *testing.T) {
	t.Parallel()
	var reached int
	h := New(listPlane{reached: &reached}, ownedStore{reached: new(bool)}, nil)
	sandboxes := []string{
		"limit=0", "limit=x", "limit=101", "limit=-1", "order=up", "state=stopped", "state=running,x",
		"metadata=%25zz", "metadata=%zz", "startedAfter=yesterday",
	}
	for path, queries := range map[string][]string{
		"/sandboxes": sandboxes, "/v2/sandboxes": sandboxes, "/snapshots": {"limit=0", "limit=x", "limit=101"},
	} {
		for _, query := range queries {
			w := httptest.NewRecorder()
			h.mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path+"?"+query, nil))
			var body errorBody
			_ = json.Unmarshal(w.Body.Bytes(), &body)
			if w.Code != http.StatusBadRequest || body.Code != http.StatusBadRequest || body.Message == "" {
				t.Errorf("GET %s?%s: %d %s, want 400 with a message", path, query, w.Code, w.Body)
			}
		}
	}
	if reached != 0 {
		t.Errorf("%d lists were read for a refused query", reached)
	}
	for _, path := range []string{"/v2/sandboxes?limit=100&order=asc&state=paused", "/snapshots?limit=1"} {
		w := httptest.NewRecorder()
		h.mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d %s, want 200", path, w.Code, w.Body)
		}
	}
}
