package cli

import "testing"

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: an error
	}{
		{"4096", 4096},
		{"512K", 512 << 10},
		{"16M", 16 << 20},
		{"16MiB", 16 << 20},
		{"1g", 1 << 30},
		{"2kib", 2048},
		{"10b", 10},
		{" 5M ", 5 << 20},
		{"", 0},
		{"0", 0},
		{"-1M", 0},
		{"1.5M", 0},
		{"M", 0},
		{"1T", 0},
		{"99999999999G", 0},
	}
	for _, tt := range tests {
		got, err := parseByteSize(tt.in)
		if tt.want == 0 {
			if err == nil {
				t.Errorf("parseByteSize(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
		if back, err := parseByteSize(compactByteSize(got)); err != nil || back != got {
			t.Errorf("compactByteSize(%d) = %q does not read back", got, compactByteSize(got))
		}
	}
}

// FuzzParseByteSize: whatever it accepts is positive and writes back to
// the same count.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"1", "16M", "1GiB", "-3k", "9223372036854775807", "4611686018427387904b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseByteSize(s)
		if err != nil {
			return
		}
		if n < 1 {
			t.Fatalf("parseByteSize(%q) = %d", s, n)
		}
		if back, err := parseByteSize(compactByteSize(n)); err != nil || back != n {
			t.Fatalf("%q → %d → %q → %d, %v", s, n, compactByteSize(n), back, err)
		}
	})
}
