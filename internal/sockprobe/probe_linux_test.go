package sockprobe

import (
	"strings"
	"testing"
)

// TestProbe: a line a family, in order, and AF_INET works in the test
// process, which loads no filter.
func TestProbe(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(Probe(), "\n"), "\n")
	want := []string{"0x28 ", "0x100000028 ", "0x2 ok"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines %q, want %d", len(lines), lines, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q, want it to start %q", i, lines[i], w)
		}
	}
}
