package sidecar

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestRoutesBuiltLazily checks that a new sidecar answers /health and POST
// /exec without building the mux of every route (issue 27: registering the
// ~45 patterns was ~26 page faults of each jail's start), and that the
// first other request builds it and is
// routed as before: its pattern, the 405 of a known path's other method
// (with Allow), the 404 of an unknown path, and the token check.
func TestRoutesBuiltLazily(t *testing.T) {
	h := New(Options{Token: testToken, Workspace: t.TempDir(), Log: slog.New(slog.DiscardHandler)})
	builds := 0
	full := h.full
	h.full = func() *http.ServeMux { builds++; return full() }
	serve := func(method, path, body string, token bool) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
		if token {
			r.Header.Set(api.HeaderSidecarToken, testToken)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r) // on this goroutine: builds is not shared
		return w
	}

	if w := serve(http.MethodGet, "/health", "", false); w.Code != http.StatusOK {
		t.Fatalf("GET /health = %d %s", w.Code, w.Body)
	}
	if w := serve(http.MethodPost, "/exec", `{"command":"true"}`, true); w.Code != http.StatusOK {
		t.Fatalf("POST /exec = %d %s", w.Code, w.Body)
	}
	if w := serve(http.MethodPost, "/exec", `{"command":"true"}`, false); w.Code != http.StatusUnauthorized {
		t.Errorf("POST /exec without the token = %d, want 401", w.Code)
	}
	if builds != 0 {
		t.Fatalf("the mux of every route was built %d times by /health and POST /exec, want 0", builds)
	}

	for _, tc := range []struct {
		method, path string
		token        bool
		want         int
		allow        string
	}{
		{http.MethodGet, "/exec", true, http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/health", true, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodGet, "/no-such-route", true, http.StatusNotFound, ""},
		{http.MethodGet, "/process", false, http.StatusUnauthorized, ""},
		{http.MethodGet, "/process", true, http.StatusOK, ""},
	} {
		w := serve(tc.method, tc.path, "", tc.token)
		if w.Code != tc.want || w.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d (Allow %q), want %d (Allow %q); body %s",
				tc.method, tc.path, w.Code, w.Header().Get("Allow"), tc.want, tc.allow, w.Body)
		}
	}
	if builds == 0 {
		t.Error("the other routes were served without the mux of every route")
	}
	metrics := serve(http.MethodGet, "/metrics", "", true).Body.String()
	for _, want := range []string{
		`boxkite_sidecar_requests_total{route="POST /exec"} 2` + "\n",
		`boxkite_sidecar_requests_total{route="GET /process"} 2` + "\n",
		`boxkite_sidecar_requests_total{route="GET /health"} 1` + "\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}
}
