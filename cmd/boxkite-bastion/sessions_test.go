//go:build linux

package main

import (
	"bytes"
	"errors"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// testSessionsPerConnection: one authenticated connection holds at most
// maxSessions session channels at once; the next is refused (resource
// shortage), and a closed one makes room for a session that runs a
// command. Without the bound a client opened any number
// (20000 idle channels took 120 MB of the bastion shared by every tenant).
func (f *fixture) testSessionsPerConnection(t *testing.T) {
	c, err := gossh.Dial("tcp", f.addr, f.goClientConfig(t))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	var open []gossh.Channel
	for i := range maxSessions {
		ch, reqs, err := c.OpenChannel("session", nil)
		if err != nil {
			t.Fatalf("session %d of %d: %v", i+1, maxSessions, err)
		}
		go gossh.DiscardRequests(reqs)
		open = append(open, ch)
	}
	_, _, err = c.OpenChannel("session", nil)
	if oc, ok := errors.AsType[*gossh.OpenChannelError](err); !ok || oc.Reason != gossh.ResourceShortage {
		t.Fatalf("session %d: %v, want refused (resource shortage)", maxSessions+1, err)
	}
	open[0].Close()
	// The bastion counts the closed one off once it has seen the close:
	// retry until then (the deadline only guards against a hang).
	deadline := time.Now().Add(30 * time.Second)
	var s *gossh.Session
	for {
		s, err = c.NewSession()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session after closing one: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var out bytes.Buffer
	s.Stdout = &out
	if err := s.Run("echo ok"); err != nil || out.String() != "ok\n" {
		t.Errorf("command in the freed session: %v, %q; want ok", err, out.String())
	}
}
