package sidecar

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// emfileOnce is a listener whose first Accept fails as one does when the
// process is out of descriptors.
type emfileOnce struct {
	net.Listener
	failed bool
}

func (l *emfileOnce) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestForwardEgressSurvivesEMFILE: an agent holding connections to the
// egress port ran the sidecar out of descriptors, its accept failed with
// EMFILE and the forwarder returned, closing the port: the sandbox had no
// egress until it was recreated. A failed accept is retried now.
func TestForwardEgressSurvivesEMFILE(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	up, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &emfileOnce{Listener: tl}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ForwardEgress(l, sock, slog.New(slog.DiscardHandler))
	}()
	c, err := net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("through the forwarder after a failed accept: %q, %v", line, err)
	}
	c.Close()
	tl.Close()
	<-done
}
