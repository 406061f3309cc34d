package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// contextServer is a fake control plane whose only sandbox is labelled
// with its name, and which refuses any key but its own.
func contextServer(t *testing.T, name, key string) string {
	t.Helper()
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+key {
				replyJSON(401, api.Error{Code: api.CodeInvalidAPIKey, Message: "wrong key for " + name})(w, r)
				return
			}
			replyJSON(200, []api.Sandbox{{ID: name + "-1", Status: api.StatusActive, Label: "on-" + name}})(w, r)
		},
	})
	return srv.URL
}

// TestContextCommands walks add, ls, use, --context and rm against two
// fake servers: each command reaches the server of the context in use,
// with that context's key (issue 28, acceptance 4).
func TestContextCommands(t *testing.T) {
	home := isolate(t)
	localURL := contextServer(t, "local", "bxk_live_local")
	otherURL := contextServer(t, "other", "bxk_live_otherotherotherotherotherotherotherotheroth")
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+localURL+"'\napi_key = 'bxk_live_local'\n")

	labels := func(args ...string) string {
		t.Helper()
		r := runCLI(t, "", append(args, "session", "ls", "--jq", ".[].label")...)
		if r.code != 0 {
			t.Fatalf("%v session ls: exit %d, %s", args, r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	if got := labels(); got != "on-local" {
		t.Errorf("before any context: session ls reached %q, want on-local", got)
	}

	r := runCLI(t, "bxk_live_otherotherotherotherotherotherotherotheroth\n", "context", "add", "other", otherURL+"/", "--api-key", "-")
	if r.code != 0 || !strings.Contains(r.stderr, "added context other") {
		t.Fatalf("context add: %+v", r)
	}
	for path, want := range map[string]os.FileMode{filepath.Join(home, contextsDir): 0o700, contextFile(home, "other"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", path, err, fi.Mode().Perm(), want)
		}
	}
	if got := labels("--context", "other"); got != "on-other" {
		t.Errorf("--context other: session ls reached %q", got)
	}
	t.Setenv(envContext, "other")
	if got := labels(); got != "on-other" {
		t.Errorf("BOXKITE_CONTEXT=other: session ls reached %q", got)
	}
	t.Setenv(envContext, "")
	if got := labels(); got != "on-local" {
		t.Errorf("--context is for one command only: session ls then reached %q", got)
	}

	if r := runCLI(t, "", "context", "use", "other"); r.code != 0 || !strings.Contains(r.stderr, "switched to context other ("+otherURL+")") {
		t.Fatalf("context use other: %+v", r)
	}
	if got := labels(); got != "on-other" {
		t.Errorf("after context use other: session ls reached %q", got)
	}
	r = runCLI(t, "", "context", "ls", "--json", "name,current", "--jq", `.[] | "\(.name) \(.current)"`)
	if want := "local false\nother true\n"; r.stdout != want {
		t.Errorf("context ls --jq = %q, want %q", r.stdout, want)
	}
	r = runCLI(t, "", "context", "ls")
	if strings.Contains(r.stdout, "bxk_live_otherotherotherotherotherotherotherotheroth") || !strings.Contains(r.stdout, "bxk_live_****") {
		t.Errorf("context ls must mask keys:\n%s", r.stdout)
	}
	if r := runCLI(t, "", "config", "show", "--jq", `.[] | select(.key == "context") | .source`); !strings.Contains(r.stdout, filepath.Join(home, currentFile)) {
		t.Errorf("config show names the context's source %q", r.stdout)
	}
	// config set-key changes the chosen context's file, not config.toml.
	if r := runCLI(t, "", "config", "set-key", "bxk_live_rotatedrotatedrotatedrotatedrotatedrotatedr"); r.code != 0 {
		t.Fatalf("config set-key: %+v", r)
	}
	if b, _ := os.ReadFile(contextFile(home, "other")); !strings.Contains(string(b), "bxk_live_rotatedrotatedrotatedrotatedrotatedrotatedr") {
		t.Errorf("contexts/other.toml after set-key:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(home, hostedFile)); err == nil {
		t.Errorf("set-key on context other wrote config.toml")
	}
	if r := runCLI(t, "", "session", "ls"); r.code != exitAuth {
		t.Errorf("with the rotated (wrong) key: exit %d, want %d", r.code, exitAuth)
	}

	if r := runCLI(t, "", "context", "rm", "other"); r.code != exitUsage || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("context rm without a terminal or --yes: %+v", r)
	}
	r = runCLI(t, "", "context", "rm", "other", "--yes")
	if r.code != 0 {
		t.Fatalf("context rm --yes: %+v", r)
	}
	// Removing the current context switches: say so, and to which.
	if want := "other was the current context; commands now use local"; !strings.Contains(r.stderr, want) {
		t.Errorf("context rm of the current one: stderr %q lacks %q", r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(home, currentFile)); err == nil {
		t.Errorf("removing the current context left context.toml naming it")
	}
	if got := labels(); got != "on-local" {
		t.Errorf("after rm: session ls reached %q, want on-local", got)
	}
}

func TestContextErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"unknown context", []string{"--context", "nope", "session", "ls"}, exitNotFound, "hint: list them with 'boxkite context ls'"},
		{"invalid name", []string{"--context", "../x", "session", "ls"}, exitUsage, `invalid context name "../x"`},
		{"use unknown", []string{"context", "use", "nope"}, exitNotFound, `no context named "nope"`},
		{"add built-in", []string{"context", "add", "local", "http://127.0.0.1:1"}, exitUsage, "local is a built-in context"},
		{"add bad name", []string{"context", "add", "a/b", "https://x.example"}, exitUsage, "invalid context name"},
		{"add plain http far away", []string{"context", "add", "far", "http://x.example"}, exitUsage, "refusing plain http"},
		{"add no URL", []string{"context", "add", "far"}, exitUsage, "takes 2 arguments (got 1)"},
		{"add URL with a space", []string{"context", "add", "far", "https://x.example/a b"}, exitUsage, "space or control character at byte 20\nhint: use a URL such as"},
		{"add URL with a query", []string{"context", "add", "far", "https://x.example?k=v"}, exitUsage, "has a query"},
		{"add URL without a host name", []string{"context", "add", "far", "https://:8443"}, exitUsage, "has no host"},
		{"add URL with a bad port", []string{"context", "add", "far", "https://x.example:99999"}, exitUsage, "out of range"},
		{"add URL with a bad host", []string{"context", "add", "far", "https://x..example"}, exitUsage, "not a valid host name"},
		{"add empty key", []string{"context", "add", "far", "https://x.example", "--api-key", "-"}, exitUsage, "nothing on stdin"},
		{"rm local", []string{"context", "rm", "local", "--yes"}, exitUsage, "the local context cannot be removed"},
		{"rm unknown", []string{"context", "rm", "nope", "--yes"}, exitNotFound, `no context named "nope"`},
		{"login into an unknown context", []string{"--context", "nope", "logout"}, exitNotFound, `no context named "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
	t.Run("add twice", func(t *testing.T) {
		isolate(t)
		runCLI(t, "", "context", "add", "twice", "https://x.example")
		r := runCLI(t, "", "context", "add", "twice", "https://y.example")
		if r.code != exitError || !strings.Contains(r.stderr, "exists already") {
			t.Errorf("second add: %+v", r)
		}
	})
	t.Run("a broken context.toml says how to fix it", func(t *testing.T) {
		home := isolate(t)
		writeFile(t, filepath.Join(home, currentFile), "current = '../../etc'\n")
		r := runCLI(t, "", "session", "ls")
		if r.code != exitError || !strings.Contains(r.stderr, "hint: choose a context again with 'boxkite context use NAME'") {
			t.Errorf("session ls: %+v", r)
		}
	})
}

// FuzzContextName: whatever passes checkContextName names a file directly
// inside contexts/, so --context cannot read or context add write
// anywhere else.
func FuzzContextName(f *testing.F) {
	for _, s := range []string{"other", "local", "a-b_c", "../x", "x/..", ".", "", "-x", "a.b", "x\x00y", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if checkContextName(name) != nil {
			return
		}
		home := "/h"
		got := contextFile(home, name)
		if name == contextLocal || name == contextHosted {
			if filepath.Dir(got) != home {
				t.Fatalf("built-in %q maps to %q", name, got)
			}
			return
		}
		if filepath.Dir(got) != filepath.Join(home, contextsDir) || filepath.Base(got) != name+".toml" || filepath.Clean(got) != got {
			t.Fatalf("context %q maps to %q, outside %s", name, got, filepath.Join(home, contextsDir))
		}
	})
}
