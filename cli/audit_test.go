package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// chain returns n sealed log entries of sandbox sb.
func chain(t *testing.T, sb string, n int) []api.LogEntry {
	t.Helper()
	prev := api.GenesisHash
	var out []api.LogEntry
	for i := range n {
		e := api.LogEntry{
			ID: fmt.Sprintf("e%d", i+1), SessionID: sb, AccountID: "acct", Source: api.LogSourceAgent,
			Operation: "exec", Detail: json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, i)),
			StartedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), PrevHash: prev,
		}
		h, err := e.Hash(prev)
		if err != nil {
			t.Fatal(err)
		}
		e.RowHash, prev, e.Seq = h, h, int64(i+1)
		out = append(out, e)
	}
	return out
}

// logAPI serves the sandboxes list and the log pages of entries, with the
// last entry as the head the server recorded.
func logAPI(entries []api.LogEntry) map[string]http.HandlerFunc {
	head := api.LogPage{HeadHash: api.GenesisHash}
	if n := len(entries); n > 0 {
		head.HeadSeq, head.HeadHash = entries[n-1].Seq, entries[n-1].RowHash
	}
	return logAPIWithHead(entries, head.HeadSeq, head.HeadHash)
}

// logAPIWithHead is logAPI with a recorded head of its own.
func logAPIWithHead(entries []api.LogEntry, headSeq int64, headHash string) map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb1", Status: api.StatusActive, Label: "build"}}),
		"GET /v1/sandboxes/sb1/log": func(w http.ResponseWriter, r *http.Request) {
			var limit, offset int
			fmt.Sscan(r.URL.Query().Get("limit"), &limit)
			fmt.Sscan(r.URL.Query().Get("offset"), &offset)
			end := min(offset+min(limit, 2), len(entries)) // small pages: the command must page
			replyJSON(200, api.LogPage{
				Entries: entries[min(offset, end):end], Limit: limit, Offset: offset, Total: len(entries),
				HeadSeq: headSeq, HeadHash: headHash,
			})(w, r)
		},
	}
}

func TestAuditVerify(t *testing.T) {
	home := isolate(t)
	good := chain(t, "sb1", 5)
	tampered := chain(t, "sb1", 5)
	tampered[3].Detail = json.RawMessage(`{"command":"echo nothing to see"}`)
	// The middle entry removed and the chain re-hashed around it: only
	// the sequence numbers tell.
	rehashed := chain(t, "sb1", 4)
	rehashed[2].Seq, rehashed[3].Seq = 4, 5
	for _, tt := range []struct {
		name     string
		entries  []api.LogEntry
		headSeq  int64
		headHash string
		code     int
		stdout   string
		stderr   string
		gap      bool
	}{
		{"intact", good, 5, good[4].RowHash, 0, "sandbox sb1: 5 entries, hash chain verified; head " + good[4].RowHash + "\n", "", false},
		{"one entry", good[:1], 1, good[0].RowHash, 0, "sandbox sb1: 1 entry, hash chain verified; head " + good[0].RowHash + "\n", "", false},
		{"newest entry cut", good[:4], 5, good[4].RowHash, 1, "", "the log ends at entry 4 but the server recorded 5 (1 entry missing at the end)", true},
		{"empty", nil, 0, api.GenesisHash, 0, "sandbox sb1: 0 entries, hash chain verified; head " + api.GenesisHash + "\n", "", false},
		{"tampered", tampered, 5, good[4].RowHash, 1, "", "does not verify: audit log hash chain is broken at entry 4 (e4)", false},
		{"head moved", good, 5, good[3].RowHash, 1, "", "does not verify: audit log hash chain is broken at entry 5 (e5): row_hash", false},
		{"newest entries cut", good[:3], 5, good[4].RowHash, 1, "", "the log ends at entry 3 but the server recorded 5 (2 entries missing at the end)", true},
		{"every entry cut", nil, 5, good[4].RowHash, 1, "", "5 entries missing at the end", true},
		{"middle entry cut and re-hashed", rehashed, 5, rehashed[3].RowHash, 1, "", "at entry 3 (e3): sequence number 4, want 3 (1 entry missing before it)", true},
		{"appended after the first page", good, 3, good[2].RowHash, 0, "sandbox sb1: 5 entries, hash chain verified; head " + good[4].RowHash + "\n", "", false},
		{"head from a server that keeps none", good, 0, "", 0, "sandbox sb1: 5 entries, hash chain verified; head " + good[4].RowHash + "\n", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeAPI(t, logAPIWithHead(tt.entries, tt.headSeq, tt.headHash))
			writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
			r := runCLI(t, "", "audit", "verify", "-s", "build")
			if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("audit verify = %+v, want code %d, stdout %q, stderr containing %q", r, tt.code, tt.stdout, tt.stderr)
			}
			r = runCLI(t, "", "audit", "verify", "--json")
			var v auditVerdict
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
				t.Fatalf("audit verify --json: %v in %+v", err, r)
			}
			if v.Verified != (tt.code == 0) || v.Entries != len(tt.entries) || v.SandboxID != "sb1" || v.Gap != tt.gap {
				t.Errorf("audit verify --json = %+v", v)
			}
		})
	}
}

// TestWatch: entries are printed as they come; a broken stream is resumed
// after the last entry printed; an error answer ends the command.
func TestWatch(t *testing.T) {
	home := isolate(t)
	entries := chain(t, "sb1", 3)
	var (
		mu      sync.Mutex
		resumes []string
	)
	routes := logAPI(entries)
	routes["GET /v1/sandboxes/sb1/watch"] = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resumes = append(resumes, r.Header.Get("Last-Event-ID"))
		n := len(resumes)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(e api.LogEntry) {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "id: %s\ndata: %s\n\n", e.ID, b)
		}
		switch n {
		case 1: // two entries, a keep-alive, then the connection breaks
			send(entries[0])
			send(entries[1])
			fmt.Fprint(w, ": keep-alive\n\n")
		case 2:
			send(entries[2])
		default:
			replyJSON(404, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeNotFound, Message: "sandbox sb1 not found"}})(w, r)
		}
	}
	srv := fakeAPI(t, routes)
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	r := runCLI(t, "", "watch", "--json")
	if r.code != exitNotFound {
		t.Errorf("watch ended with %d, want %d (the 404 that ended it): %+v", r.code, exitNotFound, r)
	}
	var got []string
	for line := range strings.Lines(r.stdout) {
		var e api.LogEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, e.ID)
	}
	if diff := cmp.Diff([]string{"e1", "e2", "e3"}, got); diff != "" {
		t.Errorf("entries printed (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"", "e2", "e3"}, resumes); diff != "" {
		t.Errorf("Last-Event-ID of each connection (-want +got):\n%s", diff)
	}
}

func TestAllowlistCommands(t *testing.T) {
	home := isolate(t)
	var (
		mu     sync.Mutex
		stored []api.CommandRule
	)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/account/allowed-commands": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			rules := stored
			if rules == nil {
				rules = []api.CommandRule{}
			}
			replyJSON(200, api.AllowedCommands{Rules: rules})(w, r)
		},
		"PUT /v1/account/allowed-commands": func(w http.ResponseWriter, r *http.Request) {
			var req api.AllowedCommands
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				t.Errorf("PUT body: %v", err)
			}
			if len(req.Rules) > 2 {
				replyJSON(400, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeTooManyRules, Message: "too many"}})(w, r)
				return
			}
			mu.Lock()
			stored = req.Rules
			mu.Unlock()
			replyJSON(200, req)(w, r)
		},
		"DELETE /v1/account/allowed-commands": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			stored = nil
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	if r := runCLI(t, "", "allowlist", "get"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "every command is allowed") {
		t.Errorf("get with none: %+v", r)
	}
	rulesFile := filepath.Join(t.TempDir(), "rules.json")
	writeFile(t, rulesFile, `["ls", {"command": "curl", "args_allow": ["^https://"], "args_deny": ["-o"]}]`)
	if r := runCLI(t, "", "allowlist", "set", rulesFile); r.code != 0 || !strings.Contains(r.stderr, "2 rules") {
		t.Errorf("set: %+v", r)
	}
	r := runCLI(t, "", "allowlist", "get")
	if got := fields(r.stdout); len(got) != 3 || got[1][0] != "ls" || got[2][0] != "curl" || got[2][1] != "^https://" || got[2][2] != "-o" {
		t.Errorf("get:\n%s", r.stdout)
	}
	r = runCLI(t, "", "allowlist", "get", "--json")
	var rules []api.CommandRule
	if err := json.Unmarshal([]byte(r.stdout), &rules); err != nil || len(rules) != 2 {
		t.Errorf("get --json: %v %+v", err, r)
	}
	// {"rules": [...]} on stdin works too, and the server's refusal is shown.
	if r := runCLI(t, `{"rules": ["a", "b", "c"]}`, "allowlist", "set", "-"); r.code != 1 || !strings.Contains(r.stderr, "too_many_rules") {
		t.Errorf("set too many: %+v", r)
	}
	if r := runCLI(t, "", "allowlist", "set", filepath.Join(t.TempDir(), "missing.json")); r.code != exitUsage {
		t.Errorf("set missing file: %+v", r)
	}
	if r := runCLI(t, `{"rules": 7}`, "allowlist", "set", "-"); r.code != exitUsage {
		t.Errorf("set malformed: %+v", r)
	}
	if r := runCLI(t, "", "allowlist", "clear", "--yes"); r.code != 0 {
		t.Errorf("clear: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if stored != nil {
		t.Errorf("rules after clear: %v", stored)
	}
}

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n          int
		word, want string
	}{
		{1, "entry", "entry"},
		{0, "entry", "entries"},
		{2, "entry", "entries"},
		{2, "key", "keys"},
		{2, "process", "processes"},
		{2, "sandbox", "sandboxes"},
		{2, "rule", "rules"},
		{1, "rule", "rule"},
	} {
		if got := plural(tt.n, tt.word); got != tt.want {
			t.Errorf("plural(%d, %q) = %q, want %q", tt.n, tt.word, got, tt.want)
		}
	}
}
