package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// sseEvent is one server-sent event, or a comment line (comment set).
type sseEvent struct {
	id      string
	data    string
	comment string
	at      time.Time
}

// watchStream is an open GET …/watch.
type watchStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openWatch opens the sandbox's watch stream with key (as ?api_key= when
// query says so, else in the Authorization header), the query string and
// extra headers; it fails the test unless the answer is a 200 event stream.
func openWatch(t testing.TB, baseURL, id, key, query string, header ...string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := baseURL + sandboxPath(id, "/watch")
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(query, "api_key=") {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("open watch: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("open watch: %d %s", resp.StatusCode, b)
	}
	ws := &watchStream{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel}
	go ws.read()
	t.Cleanup(ws.close)
	return ws
}

func (ws *watchStream) close() {
	ws.cancel()
	ws.resp.Body.Close()
}

// read parses the stream into events until it ends.
func (ws *watchStream) read() {
	defer close(ws.events)
	br := bufio.NewReader(ws.resp.Body)
	var ev sseEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.id != "" || ev.data != "" || ev.comment != "" {
				ev.at = time.Now()
				ws.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "id: "):
			ev.id = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		}
	}
}

// next returns the next entry event, skipping comments.
func (ws *watchStream) next(t testing.TB, within time.Duration) (api.LogEntry, sseEvent) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-ws.events:
			if !ok {
				t.Fatalf("watch stream ended")
			}
			if ev.comment != "" {
				continue
			}
			var e api.LogEntry
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
				t.Fatalf("event data %q: %v", ev.data, err)
			}
			if e.ID != ev.id {
				t.Errorf("event id %q, entry id %q", ev.id, e.ID)
			}
			return e, ev
		case <-timeout:
			t.Fatalf("no watch event within %v", within)
		}
	}
}

// nextIDs reads n entry events and returns their ids.
func (ws *watchStream) nextIDs(t testing.TB, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		e, _ := ws.next(t, 5*time.Second)
		ids = append(ids, e.ID)
	}
	return ids
}

// quiet checks that no entry event arrives for a while.
func (ws *watchStream) quiet(t testing.TB, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-ws.events:
			if ok && ev.comment == "" {
				t.Fatalf("unexpected event %s", ev.data)
			}
		case <-timeout:
			return
		}
	}
}

// logIDs returns the ids of all of the sandbox's entries, oldest first.
func logIDs(t testing.TB, st model.Store, id string) []string {
	t.Helper()
	entries, _, err := st.ExecLog(context.Background(), id, 10000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return ids
}

func (e *env) exec(key, id, command string) {
	e.t.Helper()
	resp, body := e.do("POST", sandboxPath(id, "/exec"), key, api.ExecRequest{Command: command})
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("exec %q: %d %s", command, resp.StatusCode, body)
	}
}

func TestWatchReplaysThenPushes(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for i := range 3 {
		e.exec(e.KeyA, sb.ID, fmt.Sprint("echo ", i))
	}
	ws := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	h := ws.resp.Header
	for name, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if diff := cmp.Diff(logIDs(t, e.Store, sb.ID), ws.nextIDs(t, 3)); diff != "" {
		t.Errorf("replayed ids (-log +events):\n%s", diff)
	}
	// Pushed, not polled: the entry arrives as the exec returns.
	e.exec(e.KeyA, sb.ID, "echo pushed")
	got, _ := ws.next(t, 2*time.Second)
	if got.Operation != "exec" {
		t.Errorf("pushed entry = %+v, want an exec", got)
	}
	var detail struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(got.Detail, &detail); err != nil || detail.Command != "echo pushed" {
		t.Errorf("pushed entry detail = %s, want the exec's command", got.Detail)
	}
	// The entry is the stored one, hash chain included.
	all, _, err := e.Store.ExecLog(context.Background(), sb.ID, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := all[len(all)-1]; got.ID != last.ID || got.RowHash != last.RowHash || got.PrevHash != last.PrevHash {
		t.Errorf("pushed entry %s (%s) is not the stored last entry %s (%s)", got.ID, got.RowHash, last.ID, last.RowHash)
	}
	ws.quiet(t, 100*time.Millisecond)
}

func TestWatchReplaysNewest100(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for range 130 {
		if err := e.Server.AppendAudit(context.Background(), sb.ID, e.AcctA.ID, "view"); err != nil {
			t.Fatal(err)
		}
	}
	ws := openWatch(t, e.URL, sb.ID, e.KeyA, "api_key="+e.KeyA)
	want := logIDs(t, e.Store, sb.ID)[30:]
	if diff := cmp.Diff(want, ws.nextIDs(t, 100)); diff != "" {
		t.Errorf("replayed ids (-newest 100 +events):\n%s", diff)
	}
	ws.quiet(t, 100*time.Millisecond)
}

func TestWatchResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	ctx := context.Background()
	for range 5 {
		if err := e.Server.AppendAudit(ctx, sb.ID, e.AcctA.ID, "view"); err != nil {
			t.Fatal(err)
		}
	}
	first := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	seen := first.nextIDs(t, 5)
	first.close()
	// Written while no one watched.
	for range 150 {
		if err := e.Server.AppendAudit(ctx, sb.ID, e.AcctA.ID, "ls"); err != nil {
			t.Fatal(err)
		}
	}
	all := logIDs(t, e.Store, sb.ID)
	tests := []struct {
		name   string
		query  string
		header []string
		after  int // index in all of the last event seen
	}{
		{"header", "", []string{"Last-Event-ID", seen[2]}, 2},
		{"query parameter", "last_event_id=" + seen[4], nil, 4},
		{"header wins", "last_event_id=" + seen[0], []string{"Last-Event-ID", seen[3]}, 3},
		{"the newest", "last_event_id=" + all[len(all)-1], nil, len(all) - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := openWatch(t, e.URL, sb.ID, e.KeyA, tt.query, tt.header...)
			want := all[tt.after+1:]
			if diff := cmp.Diff(want, ws.nextIDs(t, len(want)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("resumed ids (-log after %d +events):\n%s", tt.after, diff)
			}
			ws.quiet(t, 50*time.Millisecond)
		})
	}
	t.Run("unknown id replays the newest", func(t *testing.T) {
		ws := openWatch(t, e.URL, sb.ID, e.KeyA, "", "Last-Event-ID", "no-such-entry")
		if diff := cmp.Diff(all[len(all)-100:], ws.nextIDs(t, 100)); diff != "" {
			t.Errorf("ids (-newest 100 +events):\n%s", diff)
		}
	})
}

// TestWatchConcurrentWriters: entries appended concurrently while the
// stream replays and pushes arrive once each, in chain order.
func TestWatchConcurrentWriters(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	ctx := context.Background()
	for range 20 {
		if err := e.Server.AppendAudit(ctx, sb.ID, e.AcctA.ID, "view"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	const writers, each = 8, 25
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range each {
				if w%2 == 0 {
					e.exec(e.KeyA, sb.ID, fmt.Sprint("echo ", w, i))
				} else if err := e.Server.AppendAudit(ctx, sb.ID, e.AcctA.ID, "ls"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	close(start) // writers race the stream's replay
	ws := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	wg.Wait()
	all := logIDs(t, e.Store, sb.ID)
	if len(all) != 20+writers*each {
		t.Fatalf("%d entries, want %d", len(all), 20+writers*each)
	}
	// The stream starts at one of the newest 100 entries at the moment it
	// opened and must then have every later entry, once, in order.
	got := ws.nextIDs(t, 1)
	i := slices.Index(all, got[0])
	if i < 0 {
		t.Fatalf("first event %s is not in the log", got[0])
	}
	got = append(got, ws.nextIDs(t, len(all)-i-1)...)
	if diff := cmp.Diff(all[i:], got); diff != "" {
		t.Errorf("events (-log +stream):\n%s", diff)
	}
	ws.quiet(t, 100*time.Millisecond)
}

func TestWatchKeepAlive(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetWatchKeepAlive(20 * time.Millisecond)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	ws := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	select {
	case ev := <-ws.events:
		if ev.comment != "keep-alive" {
			t.Errorf("first event = %+v, want a keep-alive comment", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no keep-alive")
	}
}

func TestWatchDestroyedSandbox(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.exec(e.KeyA, sb.ID, "true")
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	ws := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	if got, _ := ws.next(t, 5*time.Second); got.Operation != "exec" {
		t.Errorf("replayed %+v, want the exec", got)
	}
}

func TestWatchAuth(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("GET", sandboxPath(sb.ID, "/watch"), "", nil)
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeUnauthorized)
	resp, body = e.do("GET", sandboxPath(sb.ID, "/watch?api_key=bxk_live_nope"), "", nil)
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidAPIKey)
	resp, body = e.do("GET", sandboxPath(sb.ID, "/watch?api_key="+e.KeyB), "", nil)
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
}

// BenchmarkWatchLatency measures how long an audit entry takes from the
// write (the store append, as after an operation) to the event a watcher
// reads through the real HTTP handler, over loopback. It reports the
// latency percentiles (design/PERFORMANCE.md: p99 ≤ 100 ms).
func BenchmarkWatchLatency(b *testing.B) {
	e := newEnv(b, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	ws := openWatch(b, e.URL, sb.ID, e.KeyA, "")
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := e.Server.AppendAudit(ctx, sb.ID, e.AcctA.ID, "exec"); err != nil {
			b.Fatal(err)
		}
		_, ev := ws.next(b, 10*time.Second)
		lat = append(lat, ev.at.Sub(start))
	}
	reportPercentiles(b, lat)
}

// reportPercentiles reports p50, p95 and p99 of lat in microseconds.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.95), "p95-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// TestWatchEndsOnShutdown: open watch streams do not hold up a server's
// shutdown for its whole grace period. The grace is ten minutes here, so a
// Serve that returns before the hang guard did not wait it out, however
// loaded the machine (a wall-clock bound of 2 s against the default 5 s
// grace could fail under CI's load).
func TestWatchEndsOnShutdown(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Server.SetShutdownTimeout(10 * time.Minute)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Server.Serve(ctx, ln) }()
	ws := openWatch(t, "http://"+ln.Addr().String(), sb.ID, e.KeyA, "")
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Serve did not return: the watch stream held up shutdown")
	}
	for range ws.events { // the stream ends
	}
}
