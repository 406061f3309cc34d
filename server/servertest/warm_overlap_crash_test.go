package servertest_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestWarmClaimCommitCrash: a create served from the warm pool commits
// its row while the member's sidecar answers the claim (the record
// ClaimWarm runs once the claim's request is written to the socket;
// server/sandbox/warm.go). A control plane that dies at the record, on
// SQLite and on Postgres:
//
//   - right after the commit, the claim's answer unread and its
//     connection closed with the process: the restart adopts the
//     sandbox, and the row's token works (the sidecar served the claim
//     it had in its socket);
//   - before the commit: the claimed sandbox has no row and the restart
//     deletes it.
//
// The dying is the goroutine's end at the record and its connections
// closed: whatever the driver has not written to the socket by then is
// never written. The transport holds its request back a moment before
// writing it, so a driver that committed before the request was written
// (httptrace's WroteRequest comes with the request still buffered) would
// leave a row whose sidecar never got the claim, and an exec with the
// row's token would fail after the restart.
func TestWarmClaimCommitCrash(t *testing.T) {
	needRoot(t)
	onEachStore(t, 1, testWarmClaimCommitCrash)
}

func testWarmClaimCommitCrash(t *testing.T, s *servertest.Server) {
	committed := model.NewID()
	waitWarm(t, s)
	dieAtRecord(t, s, committed, true)
	orphan := model.NewID()
	waitWarm(t, s)
	dieAtRecord(t, s, orphan, false)

	checkCrashRestart(t, s, orphan, committed)
}

// dieAtRecord claims a pool member as id and dies at the record:
// after committing the sandbox's row when commit, before it otherwise.
func dieAtRecord(t *testing.T, s *servertest.Server, id string, commit bool) {
	t.Helper()
	via := &dyingClients{recorded: make(chan struct{})}
	record := func(ep model.Endpoint) error {
		if commit {
			now := time.Now()
			sb := &model.Sandbox{
				ID: id, AccountID: s.Account.ID, Size: api.SizeSmall, LifetimeMinutes: 60,
				Status: api.StatusActive, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Driver: "local", Endpoint: ep,
			}
			if err := s.Store.ReserveSandboxes(context.Background(), s.Account.ID, now.Add(-time.Hour), now,
				func(model.Usage) error { return nil }, []*model.Sandbox{sb}); err != nil {
				t.Errorf("commit the row: %v", err)
			}
		}
		via.die()
		runtime.Goexit() // nothing of the create runs after this
		return nil
	}
	died := make(chan struct{})
	go func() {
		defer close(died)
		_, _, _ = s.Driver.ClaimWarm(context.Background(), model.Spec{ID: id}, via, record)
		t.Errorf("ClaimWarm of %s returned: its record did not run", id)
	}()
	<-died
}

// dyingClients is a model.SidecarClients whose transport writes a request
// on a connection of its own and says when it has
// (model.WithRequestWritten); die closes that connection, as the
// process's end would, and stops any write not made yet.
type dyingClients struct {
	recorded chan struct{}

	mu   sync.Mutex
	dead bool
	conn net.Conn
}

func (c *dyingClients) die() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	close(c.recorded)
	if c.conn != nil {
		_ = c.conn.Close()
	}
}

func (c *dyingClients) Client(_ string, ep model.Endpoint) (*http.Client, error) {
	return &http.Client{Transport: roundTripper(func(req *http.Request) (*http.Response, error) {
		conn, err := (&net.Dialer{}).DialContext(req.Context(), ep.Network, ep.Address)
		if err != nil {
			return nil, err
		}
		// Give a driver that commits before the request is written the
		// moment to do it (and so to die first).
		select {
		case <-c.recorded:
		case <-time.After(100 * time.Millisecond):
		}
		c.mu.Lock()
		if c.dead {
			c.mu.Unlock()
			_ = conn.Close()
			return nil, errors.New("the process died before writing the request")
		}
		c.conn = conn
		c.mu.Unlock()
		if err := req.Write(conn); err != nil { // unbuffered: written when it returns
			return nil, err
		}
		if written := model.RequestWritten(req.Context()); written != nil {
			written()
		}
		return http.ReadResponse(bufio.NewReader(conn), req)
	})}, nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
