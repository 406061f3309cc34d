package sockprobe

import (
	"strings"
	"testing"
)

// TestProbe: a line a family, then one a netlink protocol, in order;
// AF_INET and NETLINK_ROUTE work in the test process, which loads no
// filter.
func TestProbe(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(Probe(), "\n"), "\n")
	want := []string{"0x28 ", "0x100000028 ", "0x2 ok", "netlink 0xf ", "netlink 0x10000000f ", "netlink 0x0 ok"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines %q, want %d", len(lines), lines, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q, want it to start %q", i, lines[i], w)
		}
	}
}
