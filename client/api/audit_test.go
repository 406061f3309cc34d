package api_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// The expected values below were produced by Python (the reference's
// language) with json.dumps(v, sort_keys=True, separators=(",", ":")) and
// hashlib.sha256, so a chain we write verifies with the reference's script.
const pythonDetail = `{"b":true,"f":1.5,"n":null,"path":"/workspace/\u00e9 \ud83d\ude00\u0007<&>\"\\\n","view_range":[1,-1],"z":{"a":[{"k":"v"}],"y":1}}`

func TestCanonicalJSONMatchesPython(t *testing.T) {
	in := `{"z": {"y": 1, "a": [{"k": "v"}]}, "path": "/workspace/é 😀\u0007<&>\"\\\n",
		"view_range": [1, -1], "b": true, "n": null, "f": 1.5}`
	got, err := api.CanonicalJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != pythonDetail {
		t.Errorf("CanonicalJSON =\n%s\nwant\n%s", got, pythonDetail)
	}
	again, err := api.CanonicalJSON(got)
	if err != nil || string(again) != string(got) {
		t.Errorf("CanonicalJSON is not idempotent: %s, %v", again, err)
	}
	for _, bad := range []string{``, `{`, `{} {}`, `{"a":}`} {
		if _, err := api.CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q) = nil error, want one", bad)
		}
	}
}

func TestLogEntryHashMatchesPython(t *testing.T) {
	three := 3
	tests := []struct {
		name string
		e    api.LogEntry
		want string
	}{
		{"microseconds, null exit", api.LogEntry{
			ID: "e1", SessionID: "s1", AccountID: "a1", Source: "agent", Operation: "view",
			Detail: json.RawMessage(pythonDetail), StartedAt: time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC), DurationMS: 42,
		}, "1b205b97d2031e495f4d4a1f6e26f7669b4b5990c0e2319c9ef04dfa72c84a69"},
		{"whole second, exit code, truncated, other zone", api.LogEntry{
			ID: "e1", SessionID: "s1", AccountID: "a1", Source: "agent", Operation: "view",
			Detail: json.RawMessage(pythonDetail), ExitCode: &three, OutputTruncated: true,
			StartedAt: time.Date(2024, 5, 6, 9, 8, 9, 0, time.FixedZone("CEST", 2*3600)), DurationMS: 42,
		}, "e0c56d8dbcc165f9d558c7609db69c1545a518c431d78e4e3f6dfd93f1b6ed52"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.Hash(api.GenesisHash)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Hash = %s, want %s", got, tt.want)
			}
		})
	}
}

// logChain is an intact chain of one entry an operation, from the
// genesis hash, numbered (Seq) from 1.
func logChain(t *testing.T, ops ...string) []api.LogEntry {
	t.Helper()
	prev := api.GenesisHash
	var out []api.LogEntry
	for i, op := range ops {
		e := api.LogEntry{
			ID: string(rune('a' + i)), SessionID: "s", AccountID: "acct", Source: api.LogSourceAgent, Operation: op,
			Detail: json.RawMessage(`{"path":"/workspace/x"}`), StartedAt: time.Unix(int64(1000+i), 0), PrevHash: prev, Seq: int64(i + 1),
		}
		h, err := e.Hash(prev)
		if err != nil {
			t.Fatal(err)
		}
		e.RowHash, prev = h, h
		out = append(out, e)
	}
	return out
}

func TestVerifyLogChain(t *testing.T) {
	chain := func() []api.LogEntry { return logChain(t, "exec", "file_create", "view") }
	if err := api.VerifyLogChain(api.GenesisHash, chain()); err != nil {
		t.Fatalf("intact chain: %v", err)
	}
	tamper := []struct {
		name string
		edit func([]api.LogEntry) []api.LogEntry
	}{
		{"detail edited", func(c []api.LogEntry) []api.LogEntry { c[1].Detail = json.RawMessage(`{"path":"/etc"}`); return c }},
		{"operation edited", func(c []api.LogEntry) []api.LogEntry { c[0].Operation = "ls"; return c }},
		{"row removed", func(c []api.LogEntry) []api.LogEntry { return append(c[:1], c[2:]...) }},
		{"rows swapped", func(c []api.LogEntry) []api.LogEntry { c[1], c[2] = c[2], c[1]; return c }},
		{"time edited", func(c []api.LogEntry) []api.LogEntry { c[2].StartedAt = c[2].StartedAt.Add(time.Microsecond); return c }},
		{"account edited", func(c []api.LogEntry) []api.LogEntry { c[0].AccountID = "other"; return c }},
	}
	for _, tt := range tamper {
		t.Run(tt.name, func(t *testing.T) {
			err := api.VerifyLogChain(api.GenesisHash, tt.edit(chain()))
			if !errors.Is(err, api.ErrChainBroken) {
				t.Errorf("VerifyLogChain = %v, want ErrChainBroken", err)
			}
		})
	}
	// A page from the middle verifies from the row_hash before it.
	c := chain()
	if err := api.VerifyLogChain(c[0].RowHash, c[1:]); err != nil {
		t.Errorf("page from the middle: %v", err)
	}
}

// TestVerifyLogNumbersFromOne: every error of VerifyLog and VerifyLogChain
// names the entry as a user counts them, from 1 (its Seq), whatever broke.
func TestVerifyLogNumbersFromOne(t *testing.T) {
	chain := func() []api.LogEntry { return logChain(t, "exec", "exec", "exec", "exec") }
	c := chain()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"first edited", func() error { c := chain(); c[0].Operation = "ls"; return api.VerifyLog(c, 4, c[3].RowHash) }(), "at entry 1 (a): row_hash"},
		{"third's link edited", func() error { c := chain(); c[2].PrevHash = c[0].RowHash; return api.VerifyLog(c, 4, c[3].RowHash) }(), "at entry 3 (c): prev_hash"},
		{"second missing", api.VerifyLog(append(c[:1:1], c[2:]...), 4, c[3].RowHash), "at entry 2 (c): sequence number 3, want 2 (1 entry missing before it)"},
		{"newest missing", api.VerifyLog(c[:3], 4, c[3].RowHash), "the log ends at entry 3 but the server recorded 4 (1 entry missing at the end)"},
		{"head not the fourth", api.VerifyLog(c, 4, c[2].RowHash), "at entry 4 (d): row_hash"},
		{"a page from the middle", func() error { c := chain(); c[3].Operation = "ls"; return api.VerifyLogChain(c[1].RowHash, c[2:]) }(), "at entry 4 (d): row_hash"},
		{"entries without seq", func() error {
			c := chain()
			for i := range c {
				c[i].Seq = 0
			}
			c[1].Operation = "ls"
			return api.VerifyLog(c, 0, "")
		}(), "at entry 2 (b): row_hash"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", tt.err, tt.want)
			}
		})
	}
}
