//go:build linux

package main

import (
	"crypto/ed25519"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gossh "golang.org/x/crypto/ssh"
)

// TestLongUserNameBounded: what the bastion tells a client that failed to
// log in names its user name, but only its first few dozen characters
// (with an ellipsis), however long the name: a 3,000-character probe is
// not echoed back whole, in a refused key's banner, in the prompt of
// keyboard-interactive, or in the refusal of a name shaped like an id.
func TestLongUserNameBounded(t *testing.T) {
	t.Parallel()
	// The control plane: every key unknown. Only 127.0.0.1.
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"not found"}}`))
	}))
	t.Cleanup(cp.Close)
	addr := startBastion(t, cp.URL, nil)
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, want string
		keyboard         bool
	}{
		{"not an id, a key", strings.Repeat("x.", 1500), "is not a sandbox id", false},
		{"not an id, keyboard-interactive", strings.Repeat("x.", 1500), "is not a sandbox id", true},
		{"an id's shape, a key", strings.Repeat("a", 128), "is not registered to the account of sandbox", false},
		{"an id's shape, keyboard-interactive", strings.Repeat("a", 128), "no SSH key registered to the account of sandbox", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var told strings.Builder
			cfg := &gossh.ClientConfig{
				User: tc.user, HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 30 * time.Second,
				BannerCallback: func(m string) error { told.WriteString(m); return nil },
			}
			if tc.keyboard {
				cfg.Auth = []gossh.AuthMethod{gossh.KeyboardInteractive(func(_, instruction string, questions []string, _ []bool) ([]string, error) {
					told.WriteString(instruction)
					return make([]string, len(questions)), nil
				})}
			} else {
				cfg.Auth = []gossh.AuthMethod{gossh.PublicKeys(signer)}
			}
			c, err := gossh.Dial("tcp", addr, cfg)
			if err == nil {
				c.Close()
				t.Fatal("logged in")
			}
			if _, ok := err.(net.Error); ok {
				t.Fatalf("dial: %v", err)
			}
			got := told.String()
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "hint: ") {
				t.Fatalf("told %.400q; want %q and a hint", got, tc.want)
			}
			// The name's first characters, then an ellipsis; never all of it.
			if !strings.Contains(got, tc.user[:maxUserShown]+"…") || strings.Contains(got, tc.user[:maxUserShown+1]) {
				t.Errorf("told %.400q; want the user name cut to %d characters and an ellipsis", got, maxUserShown)
			}
			if n := utf8.RuneCountInString(got); n > 600 {
				t.Errorf("told %d characters: %.400q", n, got)
			}
		})
	}
}

// TestShownUser: a user name in a message is quoted, escaped, and cut to
// maxUserShown characters of its own with an ellipsis; a sandbox id is
// shown whole.
func TestShownUser(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100)
	for _, tc := range []struct{ in, want string }{
		{"0b9e0a5e-0000-4000-8000-000000000000", `"0b9e0a5e-0000-4000-8000-000000000000"`},
		{"", `""`},
		{"a\x00b\xff", `"a\x00b\xff"`},
		{strings.Repeat("a", maxUserShown), `"` + strings.Repeat("a", maxUserShown) + `"`},
		{strings.Repeat("a", maxUserShown+1), `"` + strings.Repeat("a", maxUserShown) + `…"`},
		{long, `"` + long[:2*maxUserShown] + `…"`},
		{strings.Repeat("\x01", 200), `"` + strings.Repeat(`\x01`, maxUserShown/4) + `…"`},
	} {
		if got := shownUser(tc.in); got != tc.want {
			t.Errorf("shownUser(%.60q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
