package handoff

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
)

func TestClaudeProjectDir(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/Users/me/my_app.v2", "-Users-me-my-app-v2"},
		{"/home/u/.config", "-home-u--config"},
		{`C:\Users\me\proj`, "C--Users-me-proj"},
		{"/home/USER/projects/spotter-worktrees/spotter-dov", "-home-USER-projects-spotter-worktrees-spotter-dov"},
		{"/workspace", "-workspace"},
		{"/tmp/déjà vu", "-tmp-d-j--vu"},
		{"/a/😀", "-a---"}, // a surrogate pair is two code units
	}
	for _, tt := range tests {
		if got := claudeProjectDir(tt.in); got != tt.want {
			t.Errorf("claudeProjectDir(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEditStrings(t *testing.T) {
	m := Mapping{Rules: []Rule{{From: "/src/app", To: "/workspace/app"}}}
	cwdOnly := func(p []string, s string) (string, bool) {
		if len(p) == 1 && p[0] == "cwd" {
			return m.Rebase(s)
		}
		return s, false
	}
	tests := []struct {
		name, in, want string
		edit           stringEdit
	}{
		{
			"top-level cwd only, key order and spelling kept",
			`{"z":1.50,"cwd":"/src/app","a":{"cwd":"/src/app"},"t":"\u00e9<&>"}`,
			`{"z":1.50,"cwd":"/workspace/app","a":{"cwd":"/src/app"},"t":"\u00e9<&>"}`,
			cwdOnly,
		},
		{
			"sibling directory untouched",
			`{"cwd":"/src/app-old"}`, `{"cwd":"/src/app-old"}`, cwdOnly,
		},
		{
			"below the directory, with spaces around",
			"{ \"cwd\" : \"/src/app/sub\" , \"x\":[] }", "{ \"cwd\" : \"/workspace/app/sub\" , \"x\":[] }", cwdOnly,
		},
		{
			"escaped key and value",
			`{"c\u0077d":"\/src\/app"}`, `{"c\u0077d":"/workspace/app"}`, cwdOnly,
		},
		{
			"array elements by path",
			`{"p":{"roots":["/src/app","/tmp",3,{"x":"/src/app"}]}}`,
			`{"p":{"roots":["/workspace/app","/tmp",3,{"x":"/src/app"}]}}`,
			func(p []string, s string) (string, bool) {
				if equalPath(p, []string{"p", "roots", "[]"}) {
					return m.Rebase(s)
				}
				return s, false
			},
		},
		{
			"no HTML escaping in a changed value",
			`{"cwd":"/src/app/<&>"}`, `{"cwd":"/workspace/app/<&>"}`, cwdOnly,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(editStrings([]byte(tt.in), tt.edit))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("editStrings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStringAt(t *testing.T) {
	b := []byte(`{"type":"turn_context","payload":{"cwd":"/a","n":[{"cwd":"/b"}]}}`)
	if got, ok := stringAt(b, "payload", "cwd"); !ok || got != "/a" {
		t.Errorf(`stringAt(payload.cwd) = %q, %v`, got, ok)
	}
	if got, ok := stringAt(b, "payload", "n", "[]", "cwd"); !ok || got != "/b" {
		t.Errorf(`stringAt(payload.n[].cwd) = %q, %v`, got, ok)
	}
	if _, ok := stringAt(b, "cwd"); ok {
		t.Error("stringAt(cwd) found a value that is not there")
	}
}

func TestRebase(t *testing.T) {
	tests := []struct {
		p, from, to, want string
		ok                bool
	}{
		{"/a/b", "/a/b", "/w", "/w", true},
		{"/a/b/c", "/a/b", "/w", "/w/c", true},
		{"/a/bc", "/a/b", "/w", "/a/bc", false},
		{"/a", "/a/b", "/w", "/a", false},
		{"x /a/b", "/a/b", "/w", "x /a/b", false},
		{"/anything", "/", "/w", "/anything", false},
	}
	for _, tt := range tests {
		got, ok := rebase(tt.p, tt.from, tt.to)
		if got != tt.want || ok != tt.ok {
			t.Errorf("rebase(%q, %q, %q) = %q, %v, want %q, %v", tt.p, tt.from, tt.to, got, ok, tt.want, tt.ok)
		}
	}
}

// jsonSeeds are lines of every shape the fixtures hold.
var jsonSeeds = []string{
	`{"type":"user","cwd":"/src/app","message":{"content":[{"type":"text","text":"a\"b\\c"}]}}`,
	`{"z":1.5e3,"t":true,"f":false,"n":null,"a":[[],{}],"s":"\u00e9\ud83d\ude00<>&"}`,
	`{"timestamp":"x","type":"turn_context","payload":{"cwd":"/src/app","sandbox_policy":{"writable_roots":["/src/app","/tmp"]}}}`,
	`  { "k" : [ 1 , "two" , { "three" : 3 } ] }  `,
	`"just a string"`,
	`[]`,
}

func FuzzEditStrings(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if got := editStrings(b, func(_ []string, s string) (string, bool) { return s, false }); string(got) != string(b) {
			t.Fatalf("an edit that changes nothing changed %q to %q", b, got)
		}
		upper := func(_ []string, s string) (string, bool) { return strings.ToUpper(s) + "/x", true }
		got := editStrings(b, upper)
		if !json.Valid(got) {
			t.Fatalf("edited %q into invalid JSON %q", b, got)
		}
		var want, have any
		_ = json.Unmarshal(b, &want)
		_ = json.Unmarshal(got, &have)
		if diff := cmp.Diff(mapStrings(want), have); diff != "" {
			t.Fatalf("edit of %q (-want +got):\n%s", b, diff)
		}
	})
}

// mapStrings applies the fuzz edit to every string value of a decoded
// document, the slow way.
func mapStrings(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ToUpper(v) + "/x"
	case []any:
		for i := range v {
			v[i] = mapStrings(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = mapStrings(v[k])
		}
	}
	return v
}

func FuzzRebase(f *testing.F) {
	f.Add("/src/app/x", "/src/app", "/workspace/app")
	f.Add("/src/app-old", "/src/app", "/workspace/app")
	f.Add("/src/app", "/src/app", "/workspace/app")
	f.Fuzz(func(t *testing.T, p, from, to string) {
		got, ok := rebase(p, from, to)
		if !ok {
			if got != p {
				t.Fatalf("rebase(%q, %q, %q) changed the path without saying so", p, from, to)
			}
			return
		}
		rest, cut := strings.CutPrefix(got, to)
		if !cut || rest != strings.TrimPrefix(p, from) || !(rest == "" || rest[0] == '/') {
			t.Fatalf("rebase(%q, %q, %q) = %q: not to plus a path below it", p, from, to, got)
		}
	})
}

var encodedRE = regexp.MustCompile(`^[A-Za-z0-9-]*$`)

func FuzzClaudeProjectDir(f *testing.F) {
	for _, s := range []string{"/Users/me/my_app.v2", "C:\\x", "/a/😀", "/tmp/déjà vu", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := claudeProjectDir(p)
		if !encodedRE.MatchString(got) {
			t.Fatalf("claudeProjectDir(%q) = %q: not only letters, digits and dashes", p, got)
		}
		if n := len(utf16.Encode([]rune(p))); len(got) != n {
			t.Fatalf("claudeProjectDir(%q) has %d characters, want one per UTF-16 unit (%d)", p, len(got), n)
		}
	})
}
