package cli

import "testing"

// TestCheckBaseURL: what context add, config set-url and a loaded config
// accept as a control plane's base URL.
func TestCheckBaseURL(t *testing.T) {
	t.Parallel()
	good := []string{
		"https://boxkite.example.com", "http://127.0.0.1:8090", "https://boxkite.example.com/prefix",
		"https://[::1]:8443", "https://box_kite.internal", "https://example.com.", "http://localhost:1",
	}
	bad := []string{
		"https://x.example/a b", "https://x.example/\t", "https://x .example", " https://x.example",
		"https://x.example?k=v", "https://x.example?", "https://x.example#top", "https://u:p@x.example",
		"https://:8443", "https://x.example:", "https://x.example:0", "https://x.example:65536",
		"https://x..example", "https://-x.example", "https://x-.example", "https://x!.example",
		"ftp://x.example", "https:x.example", "x.example", "",
	}
	for _, s := range good {
		if err := checkBaseURL(s); err != nil {
			t.Errorf("checkBaseURL(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range bad {
		if err := checkBaseURL(s); err == nil {
			t.Errorf("checkBaseURL(%q) = nil, want an error", s)
		}
	}
}
