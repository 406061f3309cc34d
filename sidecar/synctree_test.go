package sidecar

import (
	"path"
	"strings"
	"testing"
)

func TestValidRel(t *testing.T) {
	for p, want := range map[string]bool{
		"a": true, "a/b.txt": true, "": false, "/a": false, "../a": false, "a/../b": false,
		"a/./b": false, "a//b": false, "a/": false, ".": false, "..": false, "a\x00b": false,
	} {
		if got := validRel(p); got != want {
			t.Errorf("validRel(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzValidRel: an accepted path has only plain components, so walking
// it one O_NOFOLLOW component at a time never climbs out of the root.
func FuzzValidRel(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "a/../b", "/abs", "a//b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !validRel(p) {
			return
		}
		for c := range strings.SplitSeq(p, "/") {
			if c == "" || c == "." || c == ".." {
				t.Errorf("validRel(%q) accepted component %q", p, c)
			}
		}
		if path.IsAbs(p) || strings.HasPrefix(path.Clean(p), "..") {
			t.Errorf("validRel(%q) accepted a path leaving the root", p)
		}
	})
}
