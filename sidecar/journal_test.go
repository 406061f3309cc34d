//go:build linux

package sidecar

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
)

// journalServer is a sidecar whose Handler the test can reach.
type journalServer struct {
	tree
	h   *Handler
	url string
}

func newJournalServer(t *testing.T) journalServer {
	t.Helper()
	tr := plantTree(t)
	h := New(Options{Token: testToken, Workspace: tr.ws, Roots: tr.roots()})
	srv := serve(t, h)
	t.Cleanup(func() { // the reader goroutine ends with the instance
		if h.jrn != nil {
			h.jrn.mu.Lock()
			h.jrn.stopLocked("")
			h.jrn.mu.Unlock()
		}
	})
	return journalServer{tree: tr, h: h, url: srv.URL}
}

// changes asks the journal what changed since tok, as the storage sync does.
func (js journalServer) changes(t *testing.T, since string, maxDirs int) api.TreeResult {
	t.Helper()
	q := url.Values{"path": {"/workspace"}, "since": {since}, "skip": {"node_modules", ".git"}}
	if maxDirs > 0 {
		q.Set("max_dirs", strconv.Itoa(maxDirs))
	}
	status, body := call(t, http.MethodGet, js.url+"/files/tree?"+q.Encode(), authHeader, "")
	if status != http.StatusOK {
		t.Fatalf("GET /files/tree?since=%s = %d %s", since, status, body)
	}
	var out api.TreeResult
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// entryPaths lists an answer's entries as "path kind size".
func entryPaths(r api.TreeResult) []string {
	out := []string{}
	for _, e := range r.Entries {
		out = append(out, fmt.Sprintf("%s %s %d", e.Path, e.Kind, e.Size))
	}
	slices.Sort(out)
	return out
}

// TestSyncJournal: after a first full walk, each answer names exactly the
// subtrees that changed since the token before it, with their entries:
// files created, modified, renamed and deleted, directories created (and
// the files in them, then later files in their subdirectories) and
// renamed (reported under the new name afterwards), never what an ignored
// directory holds, and a planted link as a link, never what it leads to.
func TestSyncJournal(t *testing.T) {
	t.Parallel()
	js := newJournalServer(t)
	ws := js.ws
	// No instance before the sync asks.
	status, body := call(t, http.MethodGet, js.url+"/files/tree?path=/workspace", authHeader, "")
	if status != http.StatusOK || js.h.jrn != nil {
		t.Fatalf("plain tree: %d %s, journal %v", status, body, js.h.jrn)
	}
	first := js.changes(t, "", 0)
	if first.Partial || first.Token == "" || first.Journal != journalWatching || first.WatchedDirs != 4 {
		t.Fatalf("first answer: partial %v token %q journal %q watched %d, want a full walk watching 4 directories",
			first.Partial, first.Token, first.Journal, first.WatchedDirs)
	}
	if !slices.Contains(entryPaths(first), "file file 15") {
		t.Fatalf("first answer is no full walk: %v", entryPaths(first))
	}
	tok := first.Token
	steps := []struct {
		name    string
		act     func()
		changed []string
		entries []string
	}{
		{"nothing", func() {}, nil, []string{}},
		{"create", func() { writeFile(t, ws+"/a.txt", "aaa", 0o644) }, []string{"a.txt"}, []string{"a.txt file 3"}},
		{"modify", func() { appendFile(t, ws+"/a.txt", "aa") }, []string{"a.txt"}, []string{"a.txt file 5"}},
		{"nested dirs", func() { writeFile(t, ws+"/n1/n2/n3/f.txt", "f", 0o644) }, []string{"n1"}, []string{"n1/n2/n3/f.txt file 1"}},
		{"in a new subdirectory", func() { writeFile(t, ws+"/n1/n2/n3/g.txt", "gg", 0o644) }, []string{"n1/n2/n3/g.txt"}, []string{"n1/n2/n3/g.txt file 2"}},
		{"rename file", func() { mustDo(t, os.Rename(ws+"/a.txt", ws+"/b.txt")) }, []string{"a.txt", "b.txt"}, []string{"b.txt file 5"}},
		{"rename dir", func() { mustDo(t, os.Rename(ws+"/n1", ws+"/m1")) }, []string{"m1", "n1"}, []string{"m1/n2/n3/f.txt file 1", "m1/n2/n3/g.txt file 2"}},
		{"in the renamed dir", func() { writeFile(t, ws+"/m1/n2/x", "x", 0o644) }, []string{"m1/n2/x"}, []string{"m1/n2/x file 1"}},
		{"delete", func() { mustDo(t, os.Remove(ws+"/b.txt")) }, []string{"b.txt"}, []string{}},
		{"ignored", func() { writeFile(t, ws+"/node_modules/pkg/index.js", "js", 0o644) }, nil, []string{}},
		{"in an ignored dir later", func() { writeFile(t, ws+"/node_modules/pkg/more.js", "js", 0o644) }, nil, []string{}},
		{"link planted", func() { mustDo(t, os.Symlink(js.outside, ws+"/evil")) }, []string{"evil"}, []string{"evil symlink 0"}},
		{"where the link leads", func() { writeFile(t, js.outside+"/new.txt", "secret", 0o644) }, nil, []string{}},
		{"dir swapped for a link", func() {
			mustDo(t, os.Rename(ws+"/m1/n2", ws+"/n2.old"))
			mustDo(t, os.Symlink(js.outside, ws+"/m1/n2"))
		}, []string{"m1/n2", "n2.old"}, []string{"m1/n2 symlink 0", "n2.old/n3/f.txt file 1", "n2.old/n3/g.txt file 2", "n2.old/x file 1"}},
		{"behind the swapped link", func() { writeFile(t, js.outside+"/n3/f.txt", "secret", 0o644) }, nil, []string{}},
	}
	for _, s := range steps {
		s.act()
		got := js.changes(t, tok, 0)
		if !got.Partial || got.Journal != journalWatching {
			t.Fatalf("%s: partial %v journal %q, want a partial answer", s.name, got.Partial, got.Journal)
		}
		if d := cmp.Diff(s.changed, got.Changed); d != "" {
			t.Errorf("%s: changed (-want +got):\n%s", s.name, d)
		}
		if d := cmp.Diff(s.entries, entryPaths(got)); d != "" {
			t.Errorf("%s: entries (-want +got):\n%s", s.name, d)
		}
		for _, e := range got.Entries {
			if strings.Contains(e.Path, "secret") || strings.HasPrefix(e.Path, "evil/") {
				t.Errorf("%s: %s came through a link", s.name, e.Path)
			}
		}
		tok = got.Token
	}
	// A token the journal has moved past is answered with a full walk.
	if old := js.changes(t, first.Token, 0); old.Partial {
		t.Errorf("an old token was answered in part: %v", old.Changed)
	}
	if bad := js.changes(t, "not-a-token", 0); bad.Partial || bad.Token == "" {
		t.Errorf("a malformed token: partial %v token %q, want a full walk and a token", bad.Partial, bad.Token)
	}
}

// TestSyncJournalOverflow: events lost (IN_Q_OVERFLOW) make the next answer
// a full walk, which re-arms the journal; later answers are partial again.
func TestSyncJournalOverflow(t *testing.T) {
	t.Parallel()
	js := newJournalServer(t)
	tok := js.changes(t, "", 0).Token
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatal(err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The reader cannot drain while the journal's lock is held: each file
	// queues IN_CREATE and IN_CLOSE_WRITE.
	js.h.jrn.mu.Lock()
	for i := range max/2 + 100 {
		f, err := os.Create(filepath.Join(js.ws, "sub2", strconv.Itoa(i)))
		if err != nil {
			js.h.jrn.mu.Unlock()
			t.Fatal(err)
		}
		f.Close()
	}
	js.h.jrn.mu.Unlock()
	got := js.changes(t, tok, 0)
	if got.Partial || got.Token == "" || got.Journal != journalWatching || len(got.Entries) < max/2+100 {
		t.Fatalf("after an overflow: partial %v token %q journal %q, %d entries; want a full walk", got.Partial, got.Token, got.Journal, len(got.Entries))
	}
	writeFile(t, js.ws+"/after.txt", "x", 0o644)
	if again := js.changes(t, got.Token, 0); !again.Partial || !slices.Equal(again.Changed, []string{"after.txt"}) {
		t.Errorf("after the re-arming walk: partial %v changed %v, want after.txt", again.Partial, again.Changed)
	}
}

// TestSyncJournalBudget: a tree past the directory budget is answered with
// full walks (journal "over_budget", no token, no instance); once it is
// back under the budget, the journal watches again.
func TestSyncJournalBudget(t *testing.T) {
	t.Parallel()
	js := newJournalServer(t)
	first := js.changes(t, "", 4) // the workspace, sub, sub/deep, sub2
	if first.Journal != journalWatching || first.WatchedDirs != 4 {
		t.Fatalf("at the budget: journal %q watching %d", first.Journal, first.WatchedDirs)
	}
	mustDo(t, os.Mkdir(js.ws+"/fifth", 0o755))
	over := js.changes(t, first.Token, 4)
	if over.Partial || over.Token != "" || over.Journal != journalOverBudget {
		t.Fatalf("past the budget: partial %v token %q journal %q, want a full walk over_budget", over.Partial, over.Token, over.Journal)
	}
	if js.h.jrn.w != nil {
		t.Error("the inotify instance is still open past the budget")
	}
	if again := js.changes(t, "", 4); again.Journal != journalOverBudget || again.Token != "" {
		t.Errorf("still past the budget: journal %q token %q", again.Journal, again.Token)
	}
	mustDo(t, os.Remove(js.ws+"/fifth"))
	js.changes(t, "", 4) // counts 4 directories
	back := js.changes(t, "", 4)
	if back.Journal != journalWatching || back.Token == "" {
		t.Errorf("back under the budget: journal %q token %q, want watching", back.Journal, back.Token)
	}
}

// TestSyncJournalUnavailable: when the kernel has no inotify instance to
// give (EMFILE: fs.inotify.max_user_instances taken by the uid's other
// sidecars), every answer is a full walk of the right tree (journal
// "unavailable", no token), each trying again for an instance; once one
// is to be had, the journal watches.
func TestSyncJournalUnavailable(t *testing.T) {
	t.Parallel()
	js := newJournalServer(t)
	var tries atomic.Int32
	refuse := atomic.Bool{}
	refuse.Store(true)
	js.h.newInotify = func() (int, error) {
		tries.Add(1)
		if refuse.Load() {
			return -1, unix.EMFILE
		}
		return newInotify()
	}
	walk := func() []string { // the tree as a plain GET /files/tree walks it
		t.Helper()
		q := url.Values{"path": {"/workspace"}, "skip": {"node_modules", ".git"}}
		status, body := call(t, http.MethodGet, js.url+"/files/tree?"+q.Encode(), authHeader, "")
		var out api.TreeResult
		if status != http.StatusOK || json.Unmarshal(body, &out) != nil {
			t.Fatalf("GET /files/tree = %d %s", status, body)
		}
		return entryPaths(out)
	}
	steps := []struct {
		name  string
		act   func()
		since string
	}{
		{"first", func() {}, ""},
		{"create", func() { writeFile(t, js.ws+"/a.txt", "aaa", 0o644) }, ""},
		{"nested", func() { writeFile(t, js.ws+"/n1/n2/f.txt", "f", 0o644) }, ""},
		{"delete", func() { mustDo(t, os.Remove(js.ws+"/a.txt")) }, ""},
		{"a token of another journal", func() { writeFile(t, js.ws+"/b.txt", "b", 0o644) }, "0123456789abcdef.1"},
	}
	for i, s := range steps {
		s.act()
		got := js.changes(t, s.since, 0)
		if got.Partial || got.Token != "" || got.Journal != journalUnavailable || got.WatchedDirs != 0 {
			t.Fatalf("%s: partial %v token %q journal %q watching %d, want a full walk, unavailable", s.name, got.Partial, got.Token, got.Journal, got.WatchedDirs)
		}
		if d := cmp.Diff(walk(), entryPaths(got)); d != "" {
			t.Errorf("%s: entries (-walk +journal):\n%s", s.name, d)
		}
		if n := int(tries.Load()); n != i+1 {
			t.Errorf("%s: %d tries for an instance, want %d (one per answer)", s.name, n, i+1)
		}
	}
	if js.h.jrn.w != nil {
		t.Fatal("an instance without inotify")
	}
	refuse.Store(false) // another sidecar of the uid went away
	back := js.changes(t, "", 0)
	if back.Journal != journalWatching || back.Token == "" {
		t.Fatalf("with an instance to be had: journal %q token %q, want watching", back.Journal, back.Token)
	}
	writeFile(t, js.ws+"/c.txt", "c", 0o644)
	if got := js.changes(t, back.Token, 0); !got.Partial || !slices.Equal(got.Changed, []string{"c.txt"}) {
		t.Errorf("watching again: partial %v changed %v, want c.txt", got.Partial, got.Changed)
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestParseToken(t *testing.T) {
	for s, ok := range map[string]bool{
		"0123456789abcdef.0": true, "0123456789abcdef.42": true, "0123456789abcdef.042": false,
		"0123456789abcdef.": false, "0123456789ABCDEF.1": false, "0123456789abcde.1": false,
		"0123456789abcdef.-1": false, "0123456789abcdef.1.2": false, "": false, ".": false,
		"0123456789abcdef.18446744073709551616": false,
	} {
		if _, _, got := parseToken(s); got != ok {
			t.Errorf("parseToken(%q) ok = %v, want %v", s, got, ok)
		}
	}
}

// FuzzParseToken: a token is accepted in one spelling only, the one the
// journal writes.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"0123456789abcdef.0", "0123456789abcdef.17", "x.1", "0123456789abcdef.01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		epoch, seq, ok := parseToken(s)
		if !ok {
			return
		}
		if again := (&journal{epoch: epoch, seq: seq}).token(); again != s {
			t.Errorf("parseToken(%q) = %q, %d: written back as %q", s, epoch, seq, again)
		}
	})
}

// FuzzTopScopes: the scopes cover every changed path, and none lies below
// another.
func FuzzTopScopes(f *testing.F) {
	f.Add("a/b\na\nc")
	f.Add("a.b\na\na/b")
	f.Fuzz(func(t *testing.T, s string) {
		paths := strings.Split(s, "\n")
		scopes := topScopes(slices.Clone(paths))
		for _, p := range paths {
			if !slices.ContainsFunc(scopes, func(sc string) bool { return p == sc || strings.HasPrefix(p, sc+"/") }) {
				t.Errorf("%q is in no scope of %q", p, scopes)
			}
		}
		for i, a := range scopes {
			for j, b := range scopes {
				if i != j && strings.HasPrefix(b, a+"/") {
					t.Errorf("scope %q lies below %q", b, a)
				}
			}
		}
	})
}
