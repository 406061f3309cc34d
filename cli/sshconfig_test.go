package cli

import (
	"bufio"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
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

// TestSSHProxyLabels: `ssh LABEL.boxkite` hands the label to ssh-proxy as
// ssh wrote it (%n): one in any script reaches the bastion as its
// sandbox's id; one that ssh_config's ProxyCommand split at a space (an
// ssh that does not refuse the host name itself) is refused with what to
// use instead, not "takes 1 argument".
func TestSSHProxyLabels(t *testing.T) {
	home := isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{
			{ID: "sb1", Status: api.StatusActive, Label: "café ☕"},
			{ID: "sb2", Status: api.StatusActive, Label: "données"},
		}),
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv(envBastion, ln.Addr().String())
	named := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		line, _ := bufio.NewReader(conn).ReadString('\n')
		named <- line
	}()
	if r := runCLI(t, "", "ssh-proxy", "données.boxkite"); r.code != 0 {
		t.Fatalf("ssh-proxy données.boxkite: %+v", r)
	}
	if got := <-named; got != sandboxPreamble+"sb2\r\n" {
		t.Errorf("the bastion was told %q, want sb2", got)
	}
	r := runCLI(t, "", "ssh-proxy", "café", "☕.boxkite")
	if r.code != exitUsage || !strings.Contains(r.stderr, `"café ☕.boxkite"`) || !strings.Contains(r.stderr, "hint: ") ||
		!strings.Contains(r.stderr, "boxkite ssh -s") {
		t.Errorf("ssh-proxy of a split label: %+v, want a usage error naming it with a hint", r)
	}
}
