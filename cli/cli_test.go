package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// result is what one CLI invocation did.
type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs the boxkite command tree in-process with stdin and fresh buffers.
// It reads the real environment, so callers set BOXKITE_HOME (t.Setenv).
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut strings.Builder
	stdio := IO{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	code := Execute(context.Background(), NewRoot(NewApp(stdio, "test")), args)
	return result{out.String(), errOut.String(), code}
}

// isolate points BOXKITE_HOME at a fresh directory and clears the variables
// that would otherwise leak in from the developer's shell.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv(envHome, home)
	t.Setenv(envURL, "")
	t.Setenv(envAPIKey, "")
	t.Setenv(envContext, "")
	t.Setenv("NO_COLOR", "")
	return home
}

// fakeAPI serves routes from a map of "METHOD /path" to handlers and fails
// the test on any other request.
func fakeAPI(t *testing.T, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.Error(w, "unexpected", http.StatusTeapot)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func replyJSON(status int, v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
}

// TestBoldHeaderAligns checks that a bold header lines up with its rows:
// the escape codes must not count as column width.
func TestBoldHeaderAligns(t *testing.T) {
	t.Parallel()
	var plain, colored bytes.Buffer
	for _, c := range []struct {
		buf   *bytes.Buffer
		color bool
	}{{&plain, false}, {&colored, true}} {
		tw := newTable(c.buf)
		tw.Header(c.color, "ID\tSTATUS\tLABEL")
		fmt.Fprintln(tw, "3f2a\tactive\tdemo")
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	stripped := strings.NewReplacer("\x1b[1m", "", "\x1b[0m", "").Replace(colored.String())
	if stripped != plain.String() {
		t.Errorf("with colour, the table is laid out differently:\n%q\nwant\n%q", stripped, plain.String())
	}
	if !strings.HasPrefix(colored.String(), "\x1b[1mID") {
		t.Errorf("no bold header: %q", colored.String())
	}
}
