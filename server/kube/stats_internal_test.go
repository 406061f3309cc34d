package kube

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/google/go-cmp/cmp"
)

// TestStatsOlderSidecar: the usage a sidecar reads (its OOM kills too)
// is the sandbox's Stats and MemoryKilled's count; a sidecar older than GET /usage (its own "no route" 404, an
// older protocol) is a 501 not_supported that says so and how to get a
// sandbox that reports it, not a bare 404; a container without
// accounting is model.ErrNoStats; a 404 of a sidecar that serves /usage
// passes as an error.
func TestStatsOlderSidecar(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, protocol string
		status         int
		body           string
		want           api.SidecarUsage
		wantCode       string // of an *api.Error
		wantErr        error
	}{
		{
			"sidecar that serves it", "2", 200, `{"memory_bytes":3,"memory_anon_bytes":2,"pids":4,"cpu_micros":5,"oom_kills":1}`,
			api.SidecarUsage{MemoryBytes: 3, MemoryAnonBytes: 2, Pids: 4, CPUMicros: 5, OOMKills: 1},
			"", nil,
		},
		{"older sidecar", "1", 404, `{"error":{"code":"not_found","message":"no route GET /usage"}}`, api.SidecarUsage{}, api.CodeNotSupported, nil},
		{"sidecar before protocol versions", "", 404, `{"error":{"code":"not_found","message":"no route GET /usage"}}`, api.SidecarUsage{}, api.CodeNotSupported, nil},
		{"no accounting", "2", 501, `{"error":{"code":"not_supported","message":"no resource accounting"}}`, api.SidecarUsage{}, "", model.ErrNoStats},
		{"404 of a sidecar that serves it", "2", 404, `{"error":{"code":"not_found","message":"x"}}`, api.SidecarUsage{}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/usage" || r.Header.Get(api.HeaderSidecarToken) != "tok" {
					http.Error(w, "bad request", http.StatusBadRequest)
					return
				}
				if c.protocol != "" {
					w.Header().Set(api.HeaderSidecarProtocol, c.protocol)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			srv.EnableHTTP2 = false
			srv.StartTLS()
			defer srv.Close()
			cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			ep := model.Endpoint{Network: "tcp", Address: srv.Listener.Addr().String(), Token: "tok", CertPEM: cert}
			var kept keptSidecars
			hc, err := kept.client(cert)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sidecarUsage(t.Context(), hc, ep, "sb1")
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			ae, isAPI := errors.AsType[*api.Error](err)
			switch {
			case c.status == 200:
				if err != nil {
					t.Fatal(err)
				}
			case c.wantCode != "":
				if !isAPI || ae.Code != c.wantCode || ae.Status != http.StatusNotImplemented || ae.Hint == "" {
					t.Errorf("err %#v, want a 501 %s with a hint", err, c.wantCode)
				}
			case c.wantErr != nil:
				if !errors.Is(err, c.wantErr) {
					t.Errorf("err %v, want %v", err, c.wantErr)
				}
			default:
				if err == nil || isAPI || errors.Is(err, model.ErrNoStats) {
					t.Errorf("err %#v, want a plain error", err)
				}
			}
		})
	}
}
