package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
)

// TestConfirmation drives session rm, keys rm and a generic rm with each
// kind of stdin: a terminal answering yes or no, a pipe, and --yes
// (issue 28, acceptance 2).
func TestConfirmation(t *testing.T) {
	isolate(t)
	var (
		mu      sync.Mutex
		deleted []string
	)
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deleted = append(deleted, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{
			{ID: "aaa111", Status: api.StatusActive, Label: "one"},
			{ID: "bbb222", Status: api.StatusActive},
		}),
		"GET /v1/sandboxes/{id}":    replyJSON(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no such sandbox"}}),
		"DELETE /v1/sandboxes/{id}": record,
		"GET /v1/volumes":           replyJSON(200, []api.Volume{{ID: "v1"}}),
		"DELETE /v1/volumes/{id}":   record,
		"GET /v1/api-keys":          replyJSON(200, []api.APIKey{{ID: "k1", Name: "ci", Prefix: "bxk_live_ci"}}),
		"DELETE /v1/api-keys/{id}":  record,
	})
	t.Setenv(envURL, srv.URL)
	tests := []struct {
		name       string
		tty        bool
		stdin      string
		args       []string
		wantCode   int
		wantErr    []string
		wantDelete []string
	}{
		{
			name: "a pipe without --yes is refused before any request", stdin: "y\n",
			args: []string{"session", "rm", "one"}, wantCode: exitUsage,
			wantErr: []string{
				"error: boxkite session rm needs confirmation, and stdin is not a terminal to ask on\n",
				"hint: pass --yes to confirm: boxkite session rm one --yes\n",
			},
		},
		{
			name: "the hint quotes what a shell would split", args: []string{"session", "rm", "my box"}, wantCode: exitUsage,
			wantErr: []string{"hint: pass --yes to confirm: boxkite session rm 'my box' --yes\n"},
		},
		{
			// Copied as it is, the hint must do what was asked: without
			// --all, "session rm --yes" would pick the only sandbox.
			name: "the hint keeps the flags given, but not the API key", args: []string{"session", "rm", "--all", "--api-key", "bxk_live_secret"}, wantCode: exitUsage,
			wantErr: []string{"hint: pass --yes to confirm: boxkite session rm --all --yes\n"},
		},
		{
			name: "the hint keeps a flag's value, quoted", args: []string{"--context", "my ctx", "volumes", "rm", "v1"}, wantCode: exitUsage,
			wantErr: []string{"hint: pass --yes to confirm: boxkite volumes rm v1 --context 'my ctx' --yes\n"},
		},
		{name: "--yes on a pipe", args: []string{"session", "rm", "one", "--yes"}, wantDelete: []string{"/v1/sandboxes/aaa111"}},
		{name: "-y on a pipe", args: []string{"volumes", "rm", "v1", "-y"}, wantDelete: []string{"/v1/volumes/v1"}},
		{
			name: "a terminal answering y", tty: true, stdin: "y\n", args: []string{"session", "rm", "one"},
			wantErr:    []string{"Destroy sandbox aaa111 (one)? Their files and processes go with them. [y/N] "},
			wantDelete: []string{"/v1/sandboxes/aaa111"},
		},
		{
			name: "a terminal answering yes for two", tty: true, stdin: "YES\n", args: []string{"session", "rm", "--all"},
			wantErr:    []string{"Destroy 2 sandboxes (aaa111 (one) and bbb222)?"},
			wantDelete: []string{"/v1/sandboxes/aaa111", "/v1/sandboxes/bbb222"},
		},
		{
			name: "a terminal answering n", tty: true, stdin: "n\n", args: []string{"session", "rm", "one"}, wantCode: exitError,
			wantErr: []string{"[y/N] error: cancelled: nothing was changed\n"},
		},
		{
			name: "a terminal answering nothing (Enter)", tty: true, stdin: "\n", args: []string{"keys", "rm", "ci"}, wantCode: exitError,
			wantErr: []string{"Revoke API key k1 (ci)? It stops working at once. [y/N] ", "cancelled"},
		},
		{
			name: "a terminal closed (EOF)", tty: true, stdin: "", args: []string{"volumes", "rm", "v1"}, wantCode: exitError,
			wantErr: []string{"Remove volume v1? [y/N] \nerror: cancelled"},
		},
		{name: "not found is said before asking", tty: true, stdin: "", args: []string{"session", "rm", "zzz"}, wantCode: exitNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			deleted = nil
			mu.Unlock()
			var out, errOut strings.Builder
			stdio := IO{In: strings.NewReader(tt.stdin), Out: &out, ErrOut: &errOut, InTTY: tt.tty}
			code := Execute(context.Background(), NewRoot(NewApp(stdio, "test")), tt.args)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, errOut.String())
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr %q does not contain %q", errOut.String(), want)
				}
			}
			mu.Lock()
			got := slices.Clone(deleted)
			mu.Unlock()
			slices.Sort(got)
			if !slices.Equal(got, tt.wantDelete) {
				t.Errorf("deleted %v, want %v", got, tt.wantDelete)
			}
		})
	}
}

// TestDestructiveCommandsConfirm walks the tree: every command that
// removes, revokes or clears something takes --yes. files rm is rm(1) in
// the sandbox, and kill is kill(1): like those, they do not ask.
func TestDestructiveCommandsConfirm(t *testing.T) {
	t.Parallel()
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, "test"))
	exempt := []string{"boxkite files rm"}
	var found []string
	walk(root, func(c *cobra.Command) {
		destructive := c.Name() == "rm" || c.Name() == "clear" || c.Name() == "down"
		if !destructive || slices.Contains(exempt, c.CommandPath()) {
			return
		}
		found = append(found, c.CommandPath())
		if c.Flags().Lookup("yes") == nil || c.Flags().ShorthandLookup("y") == nil {
			t.Errorf("%s destroys something but takes no --yes/-y", c.CommandPath())
		}
		if c.Annotations[annotationDestructive] != "true" {
			t.Errorf("%s: --yes not registered through confirmation", c.CommandPath())
		}
	})
	for _, want := range []string{"boxkite session rm", "boxkite keys rm", "boxkite ssh-keys rm", "boxkite volumes rm", "boxkite images rm", "boxkite mcp-connections rm", "boxkite down", "boxkite allowlist clear"} {
		if !slices.Contains(found, want) {
			t.Errorf("%s is missing from the walk", want)
		}
	}
}

func TestItemList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a and b"},
		{[]string{"a", "b", "c"}, "a, b and c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"},
	}
	for _, tt := range tests {
		if got := itemList(tt.in); got != tt.want {
			t.Errorf("itemList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestConfirmInterrupted: Ctrl-C at the prompt ends the command at once
// (exit 130) and changes nothing. The terminal is in cooked mode, so
// Ctrl-C is a SIGINT, which main turns into a cancelled context; the
// prompt must not go on waiting for a line that never comes.
func TestConfirmInterrupted(t *testing.T) {
	isolate(t)
	var deleted sync.Map
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/volumes": replyJSON(200, []api.Volume{{ID: "v1"}}),
		"DELETE /v1/volumes/{id}": func(w http.ResponseWriter, r *http.Request) {
			deleted.Store(r.URL.Path, true)
			w.WriteHeader(http.StatusNoContent)
		},
	})
	t.Setenv(envURL, srv.URL)
	in, _ := io.Pipe() // a terminal nobody types on
	prompted := make(chan struct{})
	errOut := &signalWriter{want: "[y/N] ", seen: prompted}
	stdio := IO{In: in, Out: &bytes.Buffer{}, ErrOut: errOut, InTTY: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- Execute(ctx, NewRoot(NewApp(stdio, "test")), []string{"volumes", "rm", "v1"}) }()
	select {
	case <-prompted:
	case <-time.After(30 * time.Second):
		t.Fatalf("no prompt; stderr:\n%s", errOut)
	}
	cancel() // Ctrl-C
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still asking after Ctrl-C; stderr:\n%s", errOut)
	}
	if !strings.Contains(errOut.String(), "[y/N] \n") {
		t.Errorf("the prompt's line is not ended: %q", errOut)
	}
	deleted.Range(func(k, _ any) bool {
		t.Errorf("deleted %v after Ctrl-C", k)
		return true
	})
}

// signalWriter collects what is written and closes seen once it holds want.
type signalWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
