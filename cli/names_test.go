package cli

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestNameArgsAreCheckedFirst: an organization's or a key's name the
// server would refuse (empty, too long, a control character) is a usage
// error, exit 2 with a hint, and no request is sent.
func TestNameArgsAreCheckedFirst(t *testing.T) {
	isolate(t)
	var sent atomic.Int32
	count := func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		replyJSON(http.StatusTeapot, map[string]any{"error": map[string]string{"code": "teapot", "message": "sent"}})(w, r)
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{"POST /v1/organizations": count, "POST /v1/api-keys": count})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"org", "create", ""}, "NAME must be 1 to 100 printable characters"},
		{[]string{"org", "create", "  "}, "NAME must be 1 to 100 printable characters"},
		{[]string{"org", "create", strings.Repeat("ü", api.MaxOrgNameLen+1)}, "NAME must be 1 to 100 printable characters"},
		{[]string{"org", "create", "a\tb"}, "NAME must be 1 to 100 printable characters"},
		{[]string{"keys", "create", "--name", strings.Repeat("k", api.MaxKeyNameLen+1)}, "--name must be 1 to 200 printable characters"},
		{[]string{"keys", "create", "--name", "ci\x1b[2J"}, "--name must be 1 to 200 printable characters"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "error: "+tt.want+"\nhint: give a name such as") {
			t.Errorf("boxkite %q: exit %d, stderr %q; want exit 2 and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests were sent for names the server refuses", n)
	}
	// The longest names pass the check and are sent.
	for _, args := range [][]string{
		{"org", "create", strings.Repeat("ü", api.MaxOrgNameLen)},
		{"keys", "create", "--name", strings.Repeat("k", api.MaxKeyNameLen)},
	} {
		if r := runCLI(t, "", args...); r.code == exitUsage {
			t.Errorf("boxkite %q: a name at the limit is refused: %q", args[:2], r.stderr)
		}
	}
	if n := sent.Load(); n != 2 {
		t.Errorf("%d requests were sent for the two names at the limit, want 2", n)
	}
}
