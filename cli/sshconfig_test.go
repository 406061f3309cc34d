package cli

import (
	"strings"
	"testing"
)

// TestSSHConfigStanzaQuotes: ssh_config splits an argument at whitespace
// and expands % tokens, so a BOXKITE_HOME (or HOME) with a space made
// UserKnownHostsFile name two files that do not exist, and the host key
// check of every `ssh <sandbox>.boxkite` failed; a % in a path became a
// token. The paths are quoted and their % doubled.
func TestSSHConfigStanzaQuotes(t *testing.T) {
	got := sshConfigStanza("/opt/my tools/boxkite", "/home/ann lee/.bk 100%", "/home/ann lee/.bk 100%/known_hosts")
	for _, want := range []string{
		`    ProxyCommand env BOXKITE_HOME='/home/ann lee/.bk 100%%' '/opt/my tools/boxkite' ssh-proxy %n` + "\n",
		`    UserKnownHostsFile "/home/ann lee/.bk 100%%/known_hosts"` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the stanza lacks\n%s\nit is:\n%s", want, got)
		}
	}
	plain := sshConfigStanza("/usr/local/bin/boxkite", "", "/home/me/.boxkite/known_hosts")
	if !strings.Contains(plain, "    UserKnownHostsFile /home/me/.boxkite/known_hosts\n") ||
		!strings.Contains(plain, "    ProxyCommand /usr/local/bin/boxkite ssh-proxy %n\n") {
		t.Errorf("a plain stanza changed:\n%s", plain)
	}
}
