package cli

import "testing"

// TestContextLabel: status and the TUI name the context plainly only when
// its file supplies both the URL and the key.
func TestContextLabel(t *testing.T) {
	for _, tc := range []struct{ url, key, want string }{
		{"file /h/local.toml", "file /h/local.toml", "local"},
		{"default", "default", "local"},
		{"env BOXKITE_URL", "file /h/local.toml", "local (url from BOXKITE_URL)"},
		{"file /h/local.toml", "env BOXKITE_API_KEY", "local (key from BOXKITE_API_KEY)"},
		{"env BOXKITE_URL", "env BOXKITE_API_KEY", "local (not in use: url from BOXKITE_URL, key from BOXKITE_API_KEY)"},
		{"flag --url", "default", "local (url from --url)"},
	} {
		if got := contextLabel("local", tc.url, tc.key); got != tc.want {
			t.Errorf("contextLabel(local, %q, %q) = %q, want %q", tc.url, tc.key, got, tc.want)
		}
	}
}
