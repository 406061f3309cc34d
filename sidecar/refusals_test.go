package sidecar

import (
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestKindRefusalHints: a refusal of a file where a directory is worked
// on (a watch, an archive download) or of a directory where a file is
// read or edited names what reads the other kind as the hints name every call, a
// CLI command in the CLI's quotes, which tools and the E2B surface turn
// into their own (TestFileRefusalHints in tools, TestE2BHint in
// server/e2b/envd); it named a route (GET /files/raw, GET /files/archive)
// that neither an agent nor the CLI nor an E2B SDK user calls.
func TestKindRefusalHints(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	for _, tt := range []struct {
		name, method, route, body string
		wantStatus                int
		wantCode, wantHint        string
	}{
		{
			"watch of a file", http.MethodPost, "/watch", `{"path":"file"}`,
			http.StatusBadRequest, api.CodeNotADirectory, "name a directory; read a file with 'boxkite files view PATH'",
		},
		{
			"archive of a file", http.MethodGet, "/files/archive?path=file", "",
			http.StatusBadRequest, api.CodeNotADirectory, "copy a file without -r: 'boxkite files cp ID:PATH DST'",
		},
		{
			"raw download of a directory", http.MethodGet, "/files/raw?path=sub", "",
			http.StatusBadRequest, api.CodeBadRequest, "copy a directory with -r: 'boxkite files cp -r ID:PATH DST'",
		},
		{
			"edit of a directory", http.MethodPost, "/str-replace", `{"path":"sub","old_str":"x"}`,
			http.StatusBadRequest, api.CodeBadRequest, "name a file in it; list it with 'boxkite files ls DIR'; copy it whole with 'boxkite files cp -r ID:PATH DST'",
		},
	} {
		st, b := call(t, tt.method, fs.url+tt.route, authHeader, tt.body)
		if st != tt.wantStatus {
			t.Errorf("%s = %d %s, want %d", tt.name, st, b, tt.wantStatus)
			continue
		}
		if e := decodeError(t, b); e.Code != tt.wantCode || e.Hint != tt.wantHint {
			t.Errorf("%s: code %q hint %q, want %q %q", tt.name, e.Code, e.Hint, tt.wantCode, tt.wantHint)
		}
	}
}
