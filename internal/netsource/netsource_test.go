package netsource

import "testing"

func TestKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7:2222", "192.0.2.7"},
		{"192.0.2.7", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:22", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:22", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::9%eth0]:22", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"@", "@"},
	} {
		if got := Key(tc.addr); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
