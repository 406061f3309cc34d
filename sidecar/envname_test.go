package sidecar

import (
	"regexp"
	"testing"
)

// TestValidEnvName checks validEnvName against the pattern it replaced.
func TestValidEnvName(t *testing.T) {
	pattern := regexp.MustCompile(envNamePattern)
	for _, name := range []string{
		"", "A", "_", "a1", "1a", "A_B_9", "a-b", "a b", "a=b", "é", "a\x00", "PATH", "_9", "9",
	} {
		if got, want := validEnvName(name), pattern.MatchString(name); got != want {
			t.Errorf("validEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzValidEnvName(f *testing.F) {
	pattern := regexp.MustCompile(envNamePattern)
	f.Add("A_1")
	f.Add("1A")
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := validEnvName(name), pattern.MatchString(name); got != want {
			t.Errorf("validEnvName(%q) = %v, want %v", name, got, want)
		}
	})
}
