package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestUI: ui mints a one-time link with the configured key and prints it
// when not on a terminal (no browser), prints {url, expires_at} with
// --json, opens $BROWSER on a terminal, and explains a refusal.
func TestUI(t *testing.T) {
	isolate(t)
	var auth []string
	exp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /ui/links": func(w http.ResponseWriter, r *http.Request) {
			auth = append(auth, r.Header.Get("Authorization"))
			if r.Header.Get("Authorization") == "Bearer bxk_live_member" {
				replyJSON(http.StatusForbidden, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeForbidden, Message: "member keys cannot manage API keys", Hint: "use an admin key"}})(w, r)
				return
			}
			replyJSON(http.StatusCreated, map[string]any{"path": "/ui/link/abc_DEF-123", "expires_at": exp})(w, r)
		},
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_admin")
	// A browser that must not be started when ui is not on a terminal.
	marker := filepath.Join(t.TempDir(), "opened")
	browser := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", browser)

	link := srv.URL + "/ui/link/abc_DEF-123"
	r := runCLI(t, "", "ui")
	if r.code != 0 || r.stdout != link+"\n" {
		t.Fatalf("ui: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "ui", "--json")
	var got consoleLink
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || got.URL != link || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("ui --json: code %d, %q (%v)", r.code, r.stdout, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("ui started a browser while not on a terminal")
	}
	if strings.Join(auth, ",") != "Bearer bxk_live_admin,Bearer bxk_live_admin" {
		t.Errorf("Authorization sent = %q", auth)
	}

	// On a terminal it opens the browser and prints no link.
	var out, errOut strings.Builder
	code := Execute(context.Background(), NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, OutTTY: true}, "test")), []string{"ui"})
	if code != 0 || out.Len() != 0 || !strings.Contains(errOut.String(), "opened the web console") {
		t.Fatalf("ui on a terminal: code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(marker)
		if err == nil && strings.TrimSpace(string(b)) == link {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser was not opened with %s: %q, %v", link, b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	t.Setenv(envAPIKey, "bxk_live_member")
	r = runCLI(t, "", "ui")
	if r.code != exitAuth || !strings.Contains(r.stderr, "error: ") || !strings.Contains(r.stderr, "hint: use an admin key") {
		t.Errorf("ui with a member key: code %d, stderr %q", r.code, r.stderr)
	}
}

// TestUIWithoutConsole: a server without a console (404) is explained.
func TestUIWithoutConsole(t *testing.T) {
	isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /ui/links": replyJSON(http.StatusNotFound, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeNotFound, Message: "no route"}}),
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_admin")
	r := runCLI(t, "", "ui")
	if r.code == 0 || !strings.Contains(r.stderr, "error: this server has no web console") || !strings.Contains(r.stderr, "hint: ") {
		t.Errorf("ui against a server without a console: code %d, stderr %q", r.code, r.stderr)
	}
}
