package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

func TestSandboxStats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		status   int
		reply    string
		want     *api.SandboxStats
		wantCode string
	}{
		{
			"ok", 200, `{"memory_bytes":9437184,"memory_anon_bytes":4194304,"pids":2}`,
			&api.SandboxStats{MemoryBytes: 9437184, MemoryAnonBytes: 4194304, Pids: 2}, "",
		},
		{"not supported", 501, `{"error":{"code":"not_supported","message":"no accounting"}}`, nil, api.CodeNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Method + " " + r.URL.Path
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.reply))
			}))
			defer srv.Close()
			st, err := client.New(srv.URL, "k").SandboxStats(context.Background(), "sb")
			if got != "GET /v1/sandboxes/sb/stats" {
				t.Errorf("request %q, want GET /v1/sandboxes/sb/stats", got)
			}
			if tt.wantCode != "" {
				e, ok := errors.AsType[*api.Error](err)
				if !ok || e.Code != tt.wantCode {
					t.Fatalf("err = %v, want code %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, st); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}
