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

// pagedList answers GET path with items in pages (of at most 20, smaller
// than asked) and Link headers, or all at once when paging is off (a
// server from before paging); it records the limits asked.
type pagedList struct {
	mu     sync.Mutex
	paging bool
	limits []string
}

func (p *pagedList) handler(path string, items []any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		p.limits = append(p.limits, q.Get("limit"))
		pages := p.paging
		p.mu.Unlock()
		from, _ := strconv.Atoi(q.Get("cursor"))
		page := items[from:]
		if n, _ := strconv.Atoi(q.Get("limit")); pages && n > 0 {
			n = min(n, 20)
			if n < len(page) {
				page = page[:n]
				w.Header().Set("Link", fmt.Sprintf(`<%s?cursor=%d&limit=%d>; rel="next"`, path, from+n, n))
			}
		}
		replyJSON(200, page)(w, r)
	}
}

func (p *pagedList) set(paging bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paging, p.limits = paging, nil
}

func (p *pagedList) asked() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.limits, ",")
}

// TestPagedLsLimit: images ls and webhooks ls page as session ls does: on
// a terminal the newest 30 and a note on stderr; piped or as JSON every
// item unless --limit is given; a limit larger than the server's pages is
// read across pages, and a server from before paging is cut here.
func TestPagedLsLimit(t *testing.T) {
	isolate(t)
	const total = 75
	now := time.Now().UTC()
	imgs, hooks := make([]any, total), make([]any, total)
	for i := range total {
		at := now.Add(-time.Duration(i) * time.Minute)
		imgs[i] = api.Image{ID: fmt.Sprintf("img_%024d", i), Status: "ready", CreatedAt: at}
		hooks[i] = api.Webhook{ID: fmt.Sprintf("wh%03d", i), URL: "https://h.example.com/", EventTypes: []string{api.EventAuditLogEntry}, CreatedAt: at}
	}
	lists := map[string]*pagedList{"images": {paging: true}, "webhooks": {paging: true}}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/images":   lists["images"].handler("/v1/images", imgs),
		"GET /v1/webhooks": lists["webhooks"].handler("/v1/webhooks", hooks),
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_secret")
	for noun, prefix := range map[string]string{"images": "\nimg_", "webhooks": "\nwh"} {
		l := lists[noun]
		run := func(tty bool, args ...string) result {
			t.Helper()
			var out, errOut strings.Builder
			stdio := IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, OutTTY: tty}
			code := Execute(context.Background(), NewRoot(NewApp(stdio, "test")), append([]string{noun, "ls"}, args...))
			return result{out.String(), errOut.String(), code}
		}
		for _, tt := range []struct {
			name     string
			tty, old bool
			args     []string
			rows     int
			note     string
		}{
			{name: "terminal: the newest 30 and a note", tty: true, rows: 30, note: "showing the newest 30; there are more: 'boxkite " + noun + " ls --limit 60' shows more, 'boxkite " + noun + " ls --limit 0' all\n"},
			{name: "terminal, --limit 0: all", tty: true, args: []string{"--limit", "0"}, rows: total},
			{name: "terminal, --limit 75: all, no note", tty: true, args: []string{"-L", "75"}, rows: total},
			{name: "piped: all", rows: total},
			{name: "piped, --limit 40", args: []string{"--limit", "40"}, rows: 40, note: "'boxkite " + noun + " ls --limit 80'"},
			{name: "terminal, old server: cut here", tty: true, old: true, rows: 30, note: "showing the newest 30"},
		} {
			l.set(!tt.old)
			r := run(tt.tty, tt.args...)
			if rows := strings.Count(r.stdout, prefix); r.code != 0 || rows != tt.rows {
				t.Errorf("%s ls, %s: exit %d, %d rows, want 0, %d\nstdout:\n%s\nstderr:\n%s", noun, tt.name, r.code, rows, tt.rows, r.stdout, r.stderr)
			}
			if tt.note == "" && r.stderr != "" || !strings.Contains(r.stderr, tt.note) {
				t.Errorf("%s ls, %s: stderr %q, want %q", noun, tt.name, r.stderr, tt.note)
			}
		}
		l.set(true)
		for _, tt := range []struct {
			args []string
			n    int
		}{{[]string{"--json"}, total}, {[]string{"--json", "id", "--limit", "25"}, 25}} {
			r := run(true, tt.args...)
			var got []map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != tt.n || r.stderr != "" {
				t.Errorf("%s ls %v: %d items, %v, stderr %q; want %d, no note", noun, tt.args, len(got), err, r.stderr, tt.n)
			}
		}
		l.set(true)
		if r := run(false, "--json", "--limit", "45"); r.code != 0 || l.asked() != "46,26,6" {
			t.Errorf("%s ls --limit 45 asked limit=%v, want 46,26,6 (one more than left, across pages of 20)", noun, l.asked())
		}
		if r := run(false, "--limit", "-1"); r.code != exitUsage || !strings.Contains(r.stderr, "hint: pass --limit 1 or more") {
			t.Errorf("%s ls --limit -1: exit %d, stderr %q; want 2 and a hint", noun, r.code, r.stderr)
		}
	}
}
