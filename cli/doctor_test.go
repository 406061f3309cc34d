package cli

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestDoctorSidecarProtocol: with the local server up, doctor shows the
// sidecar protocol the server speaks and warns, with what to do, about
// sandboxes whose sidecar speaks an older one and about a server older
// than this boxkite; a server that refuses the question is a warning with
// its hint. The check's lines are against goldens in testdata/doctor.
func TestDoctorSidecarProtocol(t *testing.T) {
	for _, tt := range []struct {
		name string
		host http.HandlerFunc
	}{
		{"current", replyJSON(http.StatusOK, api.HostStatus{SidecarProtocol: api.SidecarProtocol, OlderSidecars: []api.SandboxSidecar{}})},
		{"older-sandboxes", replyJSON(http.StatusOK, api.HostStatus{SidecarProtocol: api.SidecarProtocol, OlderSidecars: []api.SandboxSidecar{
			{ID: "sb1", Label: "web", SidecarProtocol: 0},
			{ID: "sb2", SidecarProtocol: api.SidecarProtocol - 1},
		}})},
		{"older-server", replyJSON(http.StatusOK, api.HostStatus{SidecarProtocol: api.SidecarProtocol - 1})},
		{"unsaid", replyJSON(http.StatusOK, api.HostStatus{})},
		{"refused", replyJSON(http.StatusForbidden, api.ErrorEnvelope{Error: api.Errorf(http.StatusForbidden, api.CodeForbidden, "only admin keys may read the host's status").WithHint("use an admin API key")})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			srv := fakeAPI(t, map[string]http.HandlerFunc{"GET /v1/host": tt.host})
			writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
			r := runCLI(t, "", "doctor")
			var got strings.Builder
			in := false
			for line := range strings.Lines(r.stdout) {
				f := strings.Fields(line)
				switch {
				case len(f) >= 3 && f[1] == "sidecar" && f[2] == "protocol":
					in = true
				case in && len(f) > 0 && f[0] == "fix:":
				default:
					in = false
				}
				if in {
					got.WriteString(line)
				}
			}
			if got.Len() == 0 {
				t.Fatalf("no sidecar protocol check in:\n%s%s", r.stdout, r.stderr)
			}
			golden(t, filepath.Join("testdata", "doctor", "sidecar-"+tt.name+".golden"), []byte(got.String()))
		})
	}
}
