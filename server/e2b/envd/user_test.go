package envd

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process/processconnect"
)

// TestUnknownUserRefused: the SDK's user option (files.write(…, {user}),
// commands.run(…, {user})) was accepted whatever it named, and the call
// ran as the sandbox user; envd refuses a user it does not have, 401 on
// /files and unauthenticated on an RPC, before anything runs. E2B's two
// users and the sandbox's own still pass (on to the sandbox, which is
// gone here: 502).
func TestUnknownUserRefused(t *testing.T) {
	now := time.Now()
	f := newFakeRunning(1)
	h := signedTestHandler(f, 0, &now)
	tok, err := h.tokens.Access(context.Background(), "sb0", f.all[0].KeyIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, user string
		files      bool
		stream     bool // Start, as the SDK's commands.run sends it
		want       int
	}{
		{"rpc none", "", false, false, http.StatusBadGateway},
		{"rpc user", "user", false, false, http.StatusBadGateway},
		{"rpc root", "root", false, false, http.StatusBadGateway},
		{"rpc sandbox", UserName, false, false, http.StatusBadGateway},
		{"rpc unknown", "nosuchuser", false, false, http.StatusUnauthorized},
		{"stream user", "user", false, true, http.StatusBadGateway},
		{"stream unknown", "nosuchuser", false, true, http.StatusOK},
		{"files none", "", true, false, http.StatusBadGateway},
		{"files user", "user", true, false, http.StatusBadGateway},
		{"files unknown", "nosuchuser", true, false, http.StatusUnauthorized},
		{"files unknown unicode", "ünknown user", true, false, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *http.Request
			switch {
			case tt.files:
				r = httptest.NewRequest(http.MethodGet, "/files?path=a.txt&username="+strings.ReplaceAll(tt.user, " ", "%20"), nil)
			case tt.stream:
				r = httptest.NewRequest(http.MethodPost, processconnect.ProcessStartProcedure, strings.NewReader("\x00\x00\x00\x00\x02{}"))
				r.Header.Set("Content-Type", "application/connect+json")
			default:
				r = httptest.NewRequest(http.MethodPost, processconnect.ProcessListProcedure, strings.NewReader("{}"))
				r.Header.Set("Content-Type", "application/json")
			}
			if tt.user != "" && !tt.files {
				r.SetBasicAuth(tt.user, "")
			}
			r.Header.Set(HeaderSandboxID, "sb0")
			r.Header.Set(HeaderSandboxPort, PortEnvd)
			r.Header.Set(HeaderAccessToken, tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("user %q: %d %s, want %d", tt.user, w.Code, w.Body, tt.want)
			}
			if tt.stream && tt.want == http.StatusOK {
				// the end-of-stream message (flag 2) carries the error
				b := w.Body.Bytes()
				if len(b) < 5 || b[0] != 2 || !strings.Contains(string(b[5:]), `"code":"unauthenticated"`) ||
					!strings.Contains(string(b[5:]), "invalid username: 'nosuchuser'") {
					t.Errorf("user %q: end of stream %q, want unauthenticated and envd's message", tt.user, b)
				}
				return
			}
			if tt.want != http.StatusUnauthorized {
				return
			}
			var body struct {
				Code    any
				Message string
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			wantCode := any("unauthenticated") // Connect's, which the SDK reads as AuthenticationError
			if tt.files {
				wantCode = float64(http.StatusUnauthorized) // envd's REST shape
			}
			if body.Code != wantCode || !strings.HasPrefix(body.Message, "invalid username: '"+tt.user+"'") {
				t.Errorf("user %q: %s, want code %v and envd's message", tt.user, w.Body, wantCode)
			}
		})
	}
}

// TestCommandUserEnv: commands had HOME but no USER or LOGNAME, which
// envd sets to its user's name; the caller's envs (and the create's)
// still win.
func TestCommandUserEnv(t *testing.T) {
	s := processService{h: &Handler{log: slog.New(slog.DiscardHandler)}}
	for _, tt := range []struct {
		envs map[string]string
		want []string
	}{
		{nil, []string{"export HOME='/home/user'; ", "export LOGNAME='sandbox'; ", "export USER='sandbox'; "}},
		{map[string]string{"USER": "me"}, []string{"export LOGNAME='sandbox'; ", "export USER='me'; "}},
	} {
		sess := &ptySession{}
		ctx := context.WithValue(context.Background(), sessionKey{}, Session(sess))
		req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "echo $USER"}, Envs: tt.envs}})
		_ = s.Start(ctx, req, nil)
		if len(sess.started) != 1 {
			t.Fatalf("envs %v: started %d commands", tt.envs, len(sess.started))
		}
		for _, w := range tt.want {
			if !strings.Contains(sess.started[0].Command, w) {
				t.Errorf("envs %v: command %q does not have %q", tt.envs, sess.started[0].Command, w)
			}
		}
	}
}
