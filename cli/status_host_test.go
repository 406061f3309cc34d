package cli

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestStatusShowsHost: status shows the host's disk against the
// watermark, its limits, the audit log's state and each active sandbox's
// disk; --json carries the same; and when the audit log is down, ready
// says why while the host lines still show.
func TestStatusShowsHost(t *testing.T) {
	home := isolate(t)
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	host := api.HostStatus{
		Driver: "local", Audit: api.HostAudit{Writable: true},
		Disk: &api.HostDisk{Path: "/bh/server", TotalBytes: 100 << 30, FreeBytes: 900 << 20, WatermarkBytes: 1 << 30, FreezeBelowBytes: 512 << 20, Refusing: true},
		Limits: []api.HostLimit{
			{Resource: api.HostThreads, Unit: "count", Used: 534, Limit: 32768, RefuseAt: 29492},
			{Resource: api.HostMemory, Unit: "bytes", Used: 4 << 30, Limit: 24 << 30, RefuseAt: 22 << 30},
		},
		Sandboxes: []api.SandboxDisk{
			{ID: "sb1", Label: "build", UsedBytes: 310 << 20, QuotaBytes: 5 << 30, Frozen: true, FrozenReason: api.FrozenHostDisk},
			{ID: "sb2", Label: "bench", UsedBytes: 310 << 20, QuotaBytes: 5 << 30, Frozen: true, FrozenReason: api.FrozenClonePool},
		},
	}
	for _, tt := range []struct {
		name  string
		ready http.HandlerFunc
		audit api.HostAudit
		want  []string
	}{
		{
			"ready", replyJSON(200, api.Health{Status: "ready"}),
			api.HostAudit{Writable: true},
			[]string{
				"ready:      yes", "sandboxes:  1 active",
				"disk:       900.0MiB free of 100.0GiB on /bh/server, watermark 1.0GiB (below it: creates and uploads are refused)",
				"threads:    534 of 32768 in use, creates refused past 29492",
				"memory:     4.0GiB of 24.0GiB in use, creates refused past 22.0GiB",
				"audit log:  writable",
				"sb1      build  310.0MiB of 5.0GiB (frozen: the host is out of disk)",
				"sb2      bench  310.0MiB of 5.0GiB (frozen: the clone pool is out of space)",
			},
		},
		{
			"audit down", replyJSON(503, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeAuditUnavailable, Message: "the audit log cannot be written (the database is read-only): audited operations are refused until it can"}}),
			api.HostAudit{Reason: "the database is read-only", Since: &since},
			[]string{
				"ready:      no (the audit log cannot be written (the database is read-only)",
				"audit log:  not writable: the database is read-only; audited operations are refused",
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := host
			h.Audit = tt.audit
			srv := fakeAPI(t, map[string]http.HandlerFunc{
				"GET /health/ready": tt.ready,
				"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb1", Status: api.StatusActive, Label: "build"}}),
				"GET /v1/host":      replyJSON(200, h),
			})
			writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
			r := runCLI(t, "", "status")
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("status lacks %q:\n%s", w, r.stdout)
				}
			}
			r = runCLI(t, "", "status", "--json")
			var st serverStatus
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Host == nil || st.Host.Disk.FreeBytes != 900<<20 || st.Host.Audit.Writable != tt.audit.Writable {
				t.Errorf("status --json: %v\n%s", err, r.stdout)
			}
		})
	}
}
