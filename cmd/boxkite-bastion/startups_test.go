//go:build linux

package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

func TestSourceKey(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"192.0.2.1:22":               "192.0.2.1",
		"[::ffff:192.0.2.1]:22":      "192.0.2.1",
		"[2001:db8::1]:22":           "2001:db8::/64",
		"[2001:db8::ffff:ffff:1]:22": "2001:db8::/64",
		"[2001:db8:0:1::1]:22":       "2001:db8:0:1::/64",
		"[fe80::1%eth0]:22":          "fe80::/64",
		"[::1]:22":                   "::/64",
		"pipe":                       "pipe",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		var got string
		if err != nil {
			got = sourceKey(stringAddr(addr))
		} else {
			got = sourceKey(a)
		}
		if got != want {
			t.Errorf("sourceKey(%s) = %q, want %q", addr, got, want)
		}
	}
}

type stringAddr string

func (a stringAddr) Network() string { return "test" }
func (a stringAddr) String() string  { return string(a) }

// TestAdmit: --max-per-source counts an IPv6 /64 as one source (2^64
// addresses were 2^64 sources), and --max-startups bounds the
// unauthenticated connections of all sources together, logging once when
// it starts refusing and once when it accepts again, with the count.
func TestAdmit(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	b := &bastion{
		log: slog.New(slog.NewTextHandler(&logs, nil)), maxPerSource: 2, maxStartups: 4,
		perSource: map[string]int{},
	}
	src := func(s string) string { return sourceKey(stringAddr(s)) }
	if !b.admit(src("[2001:db8::1]:1")) || !b.admit(src("[2001:db8::2]:1")) {
		t.Fatal("the first two connections of a /64 refused")
	}
	if b.admit(src("[2001:db8::ffff:3]:1")) {
		t.Error("a third address of the same /64 admitted past --max-per-source 2")
	}
	if !b.admit(src("[2001:db8:0:1::1]:1")) || !b.admit(src("192.0.2.1:1")) {
		t.Fatal("other sources refused under --max-startups")
	}
	for range 3 {
		if b.admit(src("192.0.2.2:1")) {
			t.Fatal("a connection admitted past --max-startups 4")
		}
	}
	if n := strings.Count(logs.String(), "too many unauthenticated connections"); n != 1 {
		t.Errorf("%d refusal lines, want 1:\n%s", n, &logs)
	}
	once := new(sync.Once)
	b.endStartup(once)
	b.endStartup(once) // authenticated, then closed: counted off once
	if !strings.Contains(logs.String(), "accepting connections again") || !strings.Contains(logs.String(), "refused=3") {
		t.Errorf("no line saying it accepts again after 3 refusals:\n%s", &logs)
	}
	if !b.admit(src("192.0.2.2:1")) {
		t.Error("refused after one connection authenticated")
	}
	if b.admit(src("192.0.2.3:1")) {
		t.Error("admitted past --max-startups: a startup was counted off twice")
	}
}

// testStartups: connections that have not authenticated count against
// --max-startups, a refused one is closed before the handshake, one that
// authenticated no longer counts, and a closed one makes room.
func (f *fixture) testStartups(t *testing.T) {
	// The login timeout outlasts the test: a connection it closed would
	// make room the test does not expect, however slow the machine.
	addr := startBastion(t, f.srv.BaseURL, func(o *options) { o.maxStartups, o.loginTimeout = 2, 10*time.Minute })
	var raw []net.Conn
	for range 2 {
		c, banner := dialBanner(t, addr)
		if !strings.HasPrefix(banner, "SSH-2.0-boxkite-bastion") {
			t.Fatal("no SSH banner within --max-startups")
		}
		raw = append(raw, c)
	}
	if _, got := dialBanner(t, addr); got != "" {
		t.Fatalf("a third unauthenticated connection got %q, want it closed", got)
	}
	raw[0].Close()
	// The bastion counts the closed one off once it has seen the close:
	// retry until then (the deadline only guards against a hang).
	cfg := f.goClientConfig(t)
	deadline := time.Now().Add(30 * time.Second)
	var authed *gossh.Client
	var err error
	for authed, err = gossh.Dial("tcp", addr, cfg); err != nil; authed, err = gossh.Dial("tcp", addr, cfg) {
		if time.Now().After(deadline) {
			t.Fatalf("no connection after closing one: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer authed.Close()
	// One unauthenticated connection (raw[1]) and one authenticated:
	// there is room for a second unauthenticated one.
	if _, banner := dialBanner(t, addr); !strings.HasPrefix(banner, "SSH-2.0-boxkite-bastion") {
		t.Error("an authenticated connection still counts against --max-startups")
	}
}
