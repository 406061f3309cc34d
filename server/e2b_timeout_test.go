package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
)

// TestE2BTimeoutCutToMaximum: an E2B create, setTimeout or connect whose
// timeout passes the server's maximum lifetime is cut to it, as E2B's
// KeepAliveFor cuts one to what the team's maximum leaves (it was
// refused, 400); a negative setTimeout is 0, which ends the sandbox now,
// as on E2B; a create of less than 1 second is still refused.
func TestE2BTimeoutCutToMaximum(t *testing.T) {
	t.Parallel()
	const most = 2 * time.Hour
	e := newEnv(t, server.Config{MaxLifetime: most})
	e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
	hdr := http.Header{"X-API-Key": {e.KeyA}}
	endAt := func(id string) time.Time {
		t.Helper()
		status, body := e2bsdk.Do(t, e.URL, "GET", "/sandboxes/"+id, hdr, "")
		var got struct{ EndAt time.Time }
		if err := json.Unmarshal(body, &got); status != http.StatusOK || err != nil {
			t.Fatalf("GET /sandboxes/%s = %d %s", id, status, body)
		}
		return got.EndAt
	}
	wantMost := e.clock.Now().Add(most)

	status, body := e2bsdk.Do(t, e.URL, "POST", "/sandboxes", hdr, `{"templateID":"base","timeout":100000000}`)
	var sb struct{ SandboxID string }
	if err := json.Unmarshal(body, &sb); status != http.StatusCreated || err != nil {
		t.Fatalf("create with a timeout past the maximum = %d %s, want 201", status, body)
	}
	if got := endAt(sb.SandboxID); !got.Equal(wantMost) {
		t.Errorf("create's endAt = %v, want the maximum, %v", got, wantMost)
	}
	for _, timeout := range []string{"60", "100000000", "9223372036854775807"} {
		if status, body := e2bsdk.Do(t, e.URL, "POST", "/sandboxes/"+sb.SandboxID+"/timeout", hdr, `{"timeout":`+timeout+`}`); status != http.StatusNoContent {
			t.Fatalf("setTimeout(%s s) = %d %s, want 204", timeout, status, body)
		}
	}
	if got := endAt(sb.SandboxID); !got.Equal(wantMost) {
		t.Errorf("setTimeout's endAt = %v, want the maximum, %v", got, wantMost)
	}
	if status, body := e2bsdk.Do(t, e.URL, "POST", "/sandboxes/"+sb.SandboxID+"/timeout", hdr, `{"timeout":60}`); status != http.StatusNoContent {
		t.Fatalf("setTimeout(60 s) = %d %s", status, body)
	}
	status, body = e2bsdk.Do(t, e.URL, "POST", "/sandboxes/"+sb.SandboxID+"/connect", hdr, `{"timeout":100000000}`)
	if status != http.StatusOK {
		t.Fatalf("connect with a timeout past the maximum = %d %s, want 200", status, body)
	}
	if got := endAt(sb.SandboxID); !got.Equal(wantMost) {
		t.Errorf("connect's endAt = %v, want the maximum, %v", got, wantMost)
	}

	before := time.Now()
	if status, body := e2bsdk.Do(t, e.URL, "POST", "/sandboxes/"+sb.SandboxID+"/timeout", hdr, `{"timeout":-5}`); status != http.StatusNoContent {
		t.Fatalf("setTimeout(-5 s) = %d %s, want 204 (0: it ends now)", status, body)
	}
	if got, after := endAt(sb.SandboxID), time.Now(); got.Before(before.Add(-time.Second)) || got.After(after) {
		t.Errorf("setTimeout(-5 s)'s endAt = %v, want now (%v to %v)", got, before, after)
	}

	for _, timeout := range []int{0, -1} {
		status, body := e2bsdk.Do(t, e.URL, "POST", "/sandboxes", hdr, fmt.Sprintf(`{"templateID":"base","timeout":%d}`, timeout))
		if status != http.StatusBadRequest {
			t.Errorf("create with timeout %d = %d %s, want 400", timeout, status, body)
		}
	}
}
