package sidecar

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// TestUsageRoute: GET /usage answers what Options.Usage reads (the
// cgroup the sidecar runs in), behind the token; without a reader, or
// when it fails, 501 not_supported with a hint.
func TestUsageRoute(t *testing.T) {
	t.Parallel()
	want := api.SidecarUsage{MemoryBytes: 3 << 20, MemoryAnonBytes: 1 << 20, Pids: 4, CPUMicros: 5}
	for _, c := range []struct {
		name   string
		usage  func() (api.SidecarUsage, error)
		token  bool
		status int
	}{
		{"reads", func() (api.SidecarUsage, error) { return want, nil }, true, http.StatusOK},
		{"without the token", func() (api.SidecarUsage, error) { return want, nil }, false, http.StatusUnauthorized},
		{"no reader", nil, true, http.StatusNotImplemented},
		{"no cgroup", func() (api.SidecarUsage, error) { return api.SidecarUsage{}, errors.New("no cgroup") }, true, http.StatusNotImplemented},
	} {
		h := New(Options{Token: testToken, Workspace: t.TempDir(), Log: slog.New(slog.DiscardHandler), Usage: c.usage})
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/usage", nil)
		if c.token {
			r.Header.Set(api.HeaderSidecarToken, testToken)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.status)
			continue
		}
		switch c.status {
		case http.StatusOK:
			var got api.SidecarUsage
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		case http.StatusNotImplemented:
			var env api.ErrorEnvelope
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Error == nil || env.Error.Code != api.CodeNotSupported || env.Error.Hint == "" {
				t.Errorf("%s: %s, want not_supported with a hint", c.name, w.Body)
			}
		}
	}
}
