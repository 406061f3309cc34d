package cli

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestHandoffInterruptedUpload: Ctrl-C (the context cancelled) while the
// handoff uploads removes the sandbox made for it, exits 130 and says so
// with an error line, where it exited 130 without a word.
func TestHandoffInterruptedUpload(t *testing.T) {
	handoffEnv(t)
	const id = "sb_0123abcd"
	uploading, release := make(chan struct{}), make(chan struct{})
	var (
		mu      sync.Mutex
		deleted []string
	)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/sandboxes":               replyJSON(201, api.Sandbox{ID: id, Status: api.StatusActive}),
		"POST /v1/sandboxes/{id}/exec":     replyJSON(200, api.ExecResult{Stdout: "2.1.0 (Claude Code)\n"}),
		"GET /v1/sandboxes/{id}/files/raw": replyJSON(404, api.Error{Code: api.CodeNotFound, Message: "no such file"}),
		"POST /v1/sandboxes/{id}/files/archive": func(w http.ResponseWriter, r *http.Request) {
			close(uploading)
			io.Copy(io.Discard, r.Body) // until the client gives up, or all is sent
			select {
			case <-r.Context().Done():
			case <-release: // the server notices a gone client only once the body is read
			}
		},
		"DELETE /v1/sandboxes/{id}": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			deleted = append(deleted, r.PathValue("id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
	})
	t.Cleanup(func() { close(release) }) // before the server closes
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-uploading:
			cancel() // as main's signal.NotifyContext does on Ctrl-C
		case <-time.After(60 * time.Second): // a hang guard only
		}
	}()
	var out, errOut strings.Builder
	code := Execute(ctx, NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test")),
		[]string{"handoff", "claude-code", "--image", "img_claude", "--no-attach"})
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInterrupted, errOut.String())
	}
	if want := "error: interrupted; removed sandbox " + id; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deleted) != 1 || deleted[0] != id {
		t.Errorf("deleted %q, want [%s]", deleted, id)
	}
}

// TestHandoffInterruptedBeforeUpload: Ctrl-C while the agent's image
// builds, or while the sandbox is created, exits 130 with an error line
// saying that nothing was sent (and, for the create, how to remove the
// sandbox if the server made it), where it exited 130 without a word.
func TestHandoffInterruptedBeforeUpload(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		routes func(block http.HandlerFunc) map[string]http.HandlerFunc
		want   *regexp.Regexp
	}{
		{
			name: "image build",
			args: []string{"handoff", "claude-code", "--no-attach"},
			routes: func(block http.HandlerFunc) map[string]http.HandlerFunc {
				return map[string]http.HandlerFunc{
					"POST /v1/images":          replyJSON(202, api.Image{ID: "img_0123", Status: api.ImageBuilding}),
					"GET /v1/images/{id}/logs": block,
				}
			},
			want: regexp.MustCompile(`(?m)^error: interrupted while building the claude-code image; nothing was sent \(a build the server started goes on, and the next handoff reuses it\)$`),
		},
		{
			name: "sandbox create",
			args: []string{"handoff", "claude-code", "--image", "img_claude", "--no-attach"},
			routes: func(block http.HandlerFunc) map[string]http.HandlerFunc {
				return map[string]http.HandlerFunc{"POST /v1/sandboxes": block}
			},
			want: regexp.MustCompile(`(?m)^error: interrupted while creating sandbox (handoff-claude-code-[0-9a-f]{6}); nothing was sent \(if the server made it, remove it with 'boxkite session rm handoff-claude-code-[0-9a-f]{6} --yes'\)$`),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			handoffEnv(t)
			// block answers once the client gives up (or the test ends),
			// having said it was reached. The body is read first: the
			// server notices a gone client only then.
			reached, release := make(chan struct{}), make(chan struct{})
			block := func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				close(reached)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}
			srv := fakeAPI(t, tt.routes(block))
			t.Cleanup(func() { close(release) }) // before the server closes
			t.Setenv(envURL, srv.URL)
			t.Setenv(envAPIKey, "bxk_live_test")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-reached:
					cancel() // as main's signal.NotifyContext does on Ctrl-C
				case <-time.After(60 * time.Second): // a hang guard only
				}
			}()
			var out, errOut strings.Builder
			code := Execute(ctx, NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, "test")), tt.args)
			if code != exitInterrupted || !tt.want.MatchString(errOut.String()) {
				t.Errorf("exit %d, want %d and stderr matching %s; stderr:\n%s", code, exitInterrupted, tt.want, errOut.String())
			}
			if out.String() != "" {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}
