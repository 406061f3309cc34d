package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestSessionLsLimit: on a terminal session ls shows the newest 30 and says
// on stderr how to see more; piped or as JSON it lists every sandbox unless
// --limit is given; a limit larger than the server's pages is read across
// pages, and a server from before paging (no Link) is cut here.
func TestSessionLsLimit(t *testing.T) {
	isolate(t)
	const total = 75
	now := time.Now().UTC()
	sbs := make([]api.Sandbox, total)
	for i := range sbs {
		sbs[i] = api.Sandbox{ID: fmt.Sprintf("sb%03d", i), Status: api.StatusActive, Size: api.SizeSmall, CreatedAt: now.Add(-time.Duration(i) * time.Minute)}
	}
	// The handler runs on the server's goroutines: what it shares with
	// the test is behind mu.
	var (
		mu     sync.Mutex
		paging = true
		limits []string
	)
	setPaging := func(on bool) { mu.Lock(); paging = on; mu.Unlock() }
	asked := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(limits, ",") }
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			mu.Lock()
			limits = append(limits, q.Get("limit"))
			pages := paging
			mu.Unlock()
			from, _ := strconv.Atoi(q.Get("cursor"))
			page := sbs[from:]
			if n, _ := strconv.Atoi(q.Get("limit")); pages && n > 0 {
				n = min(n, 20) // the server's pages may be smaller than asked
				if n < len(page) {
					page = page[:n]
					w.Header().Set("Link", fmt.Sprintf(`</v1/sandboxes?cursor=%d&limit=%d>; rel="next"`, from+n, n))
				}
			}
			replyJSON(200, page)(w, r)
		},
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_secret")
	run := func(tty bool, args ...string) result {
		t.Helper()
		var out, errOut strings.Builder
		stdio := IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, OutTTY: tty}
		code := Execute(context.Background(), NewRoot(NewApp(stdio, "test")), append([]string{"session", "ls"}, args...))
		return result{out.String(), errOut.String(), code}
	}
	rows := func(r result) int { return strings.Count(r.stdout, "\nsb") }
	for _, tt := range []struct {
		name     string
		tty, old bool
		args     []string
		rows     int
		note     string
	}{
		{name: "terminal: the newest 30 and a note", tty: true, rows: 30, note: "showing the newest 30; there are more: 'boxkite session ls --limit 60' shows more, 'boxkite session ls --limit 0' all\n"},
		{name: "terminal, --all: the note keeps --all", tty: true, args: []string{"--all"}, rows: 30, note: "'boxkite session ls --all --limit 60'"},
		{name: "terminal, --limit 0: all", tty: true, args: []string{"--limit", "0"}, rows: total},
		{name: "terminal, --limit 75: all, no note", tty: true, args: []string{"-L", "75"}, rows: total},
		{name: "piped: all", rows: total},
		{name: "piped, --limit 40", args: []string{"--limit", "40"}, rows: 40, note: "'boxkite session ls --limit 80'"},
		{name: "terminal, old server: cut here", tty: true, old: true, rows: 30, note: "showing the newest 30"},
	} {
		setPaging(!tt.old)
		r := run(tt.tty, tt.args...)
		if r.code != 0 || rows(r) != tt.rows {
			t.Errorf("%s: exit %d, %d rows, want 0, %d\nstdout:\n%s\nstderr:\n%s", tt.name, r.code, rows(r), tt.rows, r.stdout, r.stderr)
		}
		if tt.note == "" && r.stderr != "" || !strings.Contains(r.stderr, tt.note) {
			t.Errorf("%s: stderr %q, want %q", tt.name, r.stderr, tt.note)
		}
	}
	setPaging(true)

	// JSON is complete on a terminal too, and the same shape with --limit.
	for _, tt := range []struct {
		args []string
		n    int
	}{{[]string{"--json"}, total}, {[]string{"--json", "id", "--limit", "25"}, 25}} {
		r := run(true, tt.args...)
		var got []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != tt.n || r.stderr != "" {
			t.Errorf("%v: %d items, %v, stderr %q; want %d, no note", tt.args, len(got), err, r.stderr, tt.n)
		}
	}
	mu.Lock()
	limits = nil
	mu.Unlock()
	if r := run(false, "--json", "--limit", "45"); r.code != 0 || asked() != "46,26,6" {
		t.Errorf("--limit 45 asked limit=%v, want 46,26,6 (one more than left, across pages of 20)", asked())
	}
	if r := run(false, "--limit", "-1"); r.code != exitUsage || !strings.Contains(r.stderr, "hint: pass --limit 1 or more") {
		t.Errorf("--limit -1: exit %d, stderr %q; want 2 and a hint", r.code, r.stderr)
	}
}
