package orgs

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzCheckName: an accepted name is trimmed, 1 to limit characters, and
// has no control characters; checkRole accepts the three roles only.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"acme", "  a  ", "", "a\x00b", strings.Repeat("x", 101), "ünïcode", "owner", "admin", "member", "Owner"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, err := checkName("name", s, maxNameLen)
		if err == nil {
			n := utf8.RuneCountInString(name)
			if n < 1 || n > maxNameLen || name != strings.TrimSpace(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
				t.Errorf("checkName(%q) accepted %q", s, name)
			}
		}
		role, err := checkRole(s, "")
		if err == nil && s != "" && rank(role) == 0 {
			t.Errorf("checkRole(%q) accepted %q", s, role)
		}
		if err == nil && s != "" && s != "owner" && s != "admin" && s != "member" {
			t.Errorf("checkRole(%q) accepted it", s)
		}
	})
}
