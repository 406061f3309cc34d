package api

import (
	"strings"
	"testing"
)

func TestInScope(t *testing.T) {
	for _, c := range []struct {
		p, scope string
		want     bool
	}{
		{"a", "a", true},
		{"a/b", "a", true},
		{"a/b/c", "a/b", true},
		{"ab", "a", false},
		{"a.b", "a", false},
		{"b/a", "a", false},
		{"a", "a/b", false},
		{"", "", true},   // the workspace itself
		{"a", "", false}, // a path below it names no leading slash
	} {
		if got := InScope(c.p, c.scope); got != c.want {
			t.Errorf("InScope(%q, %q) = %v", c.p, c.scope, got)
		}
	}
}

// FuzzInScope: a path is in a scope exactly when it is the scope or
// starts with the scope and a slash.
func FuzzInScope(f *testing.F) {
	f.Add("a/b", "a")
	f.Add("a.b", "a")
	f.Fuzz(func(t *testing.T, p, scope string) {
		if got, want := InScope(p, scope), p == scope || strings.HasPrefix(p, scope+"/"); got != want {
			t.Errorf("InScope(%q, %q) = %v, want %v", p, scope, got, want)
		}
	})
}
