package cli

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/testport"
)

// TestOnBastionPort: a bastion that exits because another process bound
// its port first is started again on another port, unless the port was
// asked for, the exit had another cause, or it lost bastionPortTries times.
func TestOnBastionPort(t *testing.T) {
	const (
		loseRace  = iota // another process binds the port; the bastion exits
		exitAlone        // the bastion exits, its port stays free
		timeOut          // the bastion never answers
		succeed
	)
	tests := []struct {
		name      string
		requested bool
		outcomes  []int // per launch; the last repeats
		wantTries int
		wantErr   error
	}{
		{name: "lost race retried", outcomes: []int{loseRace, succeed}, wantTries: 2},
		{name: "lost twice retried", outcomes: []int{loseRace, loseRace, succeed}, wantTries: 3},
		{name: "gives up", outcomes: []int{loseRace}, wantTries: bastionPortTries, wantErr: errBastionExited},
		{name: "requested port not moved", requested: true, outcomes: []int{loseRace}, wantTries: 1, wantErr: errBastionExited},
		{name: "other exit not retried", outcomes: []int{exitAlone}, wantTries: 1, wantErr: errBastionExited},
		{name: "timeout not retried", outcomes: []int{timeOut}, wantTries: 1, wantErr: errTestTimeout},
		{name: "first try", outcomes: []int{succeed}, wantTries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wish := bastionWish{recorded: net.JoinHostPort("127.0.0.1", strconv.Itoa(freeTestPort(t)))}
			if tt.requested {
				wish = bastionWish{requested: freeTestPort(t)}
			}
			var tried []int
			addr, err := onBastionPort(wish, func(port int) (string, error) {
				tried = append(tried, port)
				switch tt.outcomes[min(len(tried), len(tt.outcomes))-1] {
				case loseRace:
					ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
					if err != nil {
						t.Fatalf("bind %d as the other process: %v", port, err)
					}
					t.Cleanup(func() { ln.Close() })
					return "", &hintError{err: fmt.Errorf("%w: exit status 1", errBastionExited), hint: "see the log"}
				case exitAlone:
					return "", fmt.Errorf("%w: exit status 2", errBastionExited)
				case timeOut:
					return "", errTestTimeout
				}
				return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
			})
			if len(tried) != tt.wantTries {
				t.Fatalf("launched on %v, want %d tries", tried, tt.wantTries)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			seen := map[int]bool{}
			for _, p := range tried {
				if seen[p] {
					t.Errorf("port %d offered again after it was lost: %v", p, tried)
				}
				seen[p] = true
			}
			if tt.requested && tried[0] != wish.requested {
				t.Errorf("launched on %d, asked for %d", tried[0], wish.requested)
			}
			if tt.wantErr == nil {
				want := net.JoinHostPort("127.0.0.1", strconv.Itoa(tried[len(tried)-1]))
				if addr != want {
					t.Errorf("addr = %q, want %q", addr, want)
				}
			}
		})
	}
}

var errTestTimeout = errors.New("boxkite-bastion did not answer")

// freeTestPort is a port nothing listens on right now, below the kernel's
// ephemeral range: the tests bind it later (up, or "the other process"),
// and a port from a listen on port 0 may be any other process's by then.
func freeTestPort(t *testing.T) int {
	t.Helper()
	port, err := testport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestWaitBastionOtherHome: two ups at once (two BOXKITE_HOMEs) both find
// the port free; the other's bastion binds it and this one exits. Its
// banner, with another host key's fingerprint, is not taken for this
// bastion's: up reports the exit (and onBastionPort moves on) instead of
// recording an address where another server's bastion answers.
func TestWaitBastionOtherHome(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "bastion_host_key.pub")
	blob := []byte("\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20this home's key, 32 bytes long!!")
	if err := os.WriteFile(pub, []byte("ssh-ed25519 "+base64.StdEncoding.EncodeToString(blob)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ours, err := bastionBanner(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	if want := "SSH-2.0-boxkite-bastion SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]); ours != want {
		t.Fatalf("banner %q, want %q", ours, want)
	}
	serve := func(banner string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(banner + "\r\n"))
				c.Close()
			}
		}()
		return ln.Addr().String()
	}
	exited := make(chan error, 1)
	exited <- errors.New("exit status 1")
	other := serve("SSH-2.0-boxkite-bastion SHA256:" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)))
	if err := waitBastion(context.Background(), other, pub, exited, time.Minute); !errors.Is(err, errBastionExited) {
		t.Errorf("another home's bastion on the port: %v, want %v", err, errBastionExited)
	}
	if err := waitBastion(context.Background(), serve(ours), pub, make(chan error), time.Minute); err != nil {
		t.Errorf("this home's bastion: %v", err)
	}
}
