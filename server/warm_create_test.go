package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// warmDriver is the fake driver with a warm pool of ready members
// (model.WarmClaimer).
type warmDriver struct {
	*fakeDriver
	ep     func() model.Endpoint
	mu     sync.Mutex
	ready  int
	claims []string
	// afterRecord, when set, is the claim's outcome after the record:
	// a claim that fails once its row is written answers ok false, as
	// the local driver's does (it has deleted the sandbox).
	afterRecord func() (ok bool, err error)
	noRecord    bool // a driver that leaves the write to the caller
}

// ClaimWarm hands out a member; with via, it talks to the member's
// sidecar (GET /health, where the local driver sends its claim) with
// via's client for the sandbox; with record, it records the sandbox
// before it returns, as the local driver does while its sidecar answers.
func (d *warmDriver) ClaimWarm(ctx context.Context, spec model.Spec, via model.SidecarClients, record func(model.Endpoint) error) (model.Endpoint, bool, error) {
	d.mu.Lock()
	if d.ready == 0 {
		d.mu.Unlock()
		return model.Endpoint{}, false, nil
	}
	d.ready--
	d.claims = append(d.claims, spec.ID)
	d.mu.Unlock()
	ep := d.ep()
	if record != nil && !d.noRecord {
		_ = record(ep) // its error is the caller's
		if d.afterRecord != nil {
			if ok, err := d.afterRecord(); !ok || err != nil {
				return model.Endpoint{}, ok, err
			}
		}
	}
	if via == nil {
		return ep, true, nil
	}
	c, err := via.Client(spec.ID, ep)
	if err != nil {
		return model.Endpoint{}, true, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sidecar/health", nil)
	if err != nil {
		return model.Endpoint{}, true, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return model.Endpoint{}, true, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return ep, true, nil
}

// writeCountingStore records the sandbox writes of each create: the
// statuses of the rows a reservation inserts, and every update.
type writeCountingStore struct {
	model.Store
	mu       sync.Mutex
	reserved []string // status of each row reserved, in order
	updates  int
	fail     error // the next reservation's answer, once
}

func (s *writeCountingStore) ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time, check func(model.Usage) error, sbs []*model.Sandbox) error {
	s.mu.Lock()
	for _, sb := range sbs {
		s.reserved = append(s.reserved, sb.Status)
	}
	fail := s.fail
	s.fail = nil
	s.mu.Unlock()
	if fail != nil {
		return fail
	}
	return s.Store.ReserveSandboxes(ctx, accountID, since, now, check, sbs)
}

func (s *writeCountingStore) UpdateSandbox(ctx context.Context, id string, fn func(*model.Sandbox) error) (*model.Sandbox, error) {
	s.mu.Lock()
	s.updates++
	s.mu.Unlock()
	return s.Store.UpdateSandbox(ctx, id, fn)
}

func (s *writeCountingStore) take() (reserved []string, updates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reserved, updates = s.reserved, s.updates
	s.reserved, s.updates = nil, 0
	return reserved, updates
}

// TestWarmCreateOneWrite: a sandbox claimed from the driver's warm pool is
// recorded in one write, its row inserted active with its endpoint by the
// reservation (no "creating" row, no update); a create the pool cannot
// serve writes twice as before; a create the limits refuse takes no
// member; and a reservation that fails after the claim (here: a label
// taken meanwhile) deletes the claimed sandbox and leaves no row.
func TestWarmCreateOneWrite(t *testing.T) {
	st := &writeCountingStore{Store: openStore(t, t.TempDir())}
	var wd *warmDriver
	e := newEnvWithDriver(t, server.Config{}, st, func(f *fakeDriver) model.Driver {
		wd = &warmDriver{fakeDriver: f, ready: 1}
		return wd
	})
	wd.ep = e.Sidecar.Endpoint
	ctx := context.Background()

	warm := e.create(e.KeyA, api.CreateSandboxRequest{Label: "warm"})
	reserved, updates := st.take()
	if !slices.Equal(wd.claims, []string{warm.ID}) || len(e.Driver.created) != 0 {
		t.Fatalf("claims %v, creates %d: want the one create claimed", wd.claims, len(e.Driver.created))
	}
	if !slices.Equal(reserved, []string{api.StatusActive}) || updates != 0 {
		t.Errorf("warm create wrote rows %v and %d updates; want one active row, no update", reserved, updates)
	}
	row, err := e.Store.Sandbox(ctx, e.AcctA.ID, warm.ID)
	if err != nil || row.Status != api.StatusActive || row.Endpoint.Address != e.Sidecar.Endpoint().Address {
		t.Fatalf("row of the warm sandbox: %+v, %v", row, err)
	}
	if warm.Status != api.StatusActive || !warm.CreatedAt.Equal(row.CreatedAt) || !warm.ExpiresAt.Equal(row.ExpiresAt) {
		t.Errorf("answer %+v, row %+v: want the row as stored", warm, row)
	}
	e.exec(e.KeyA, warm.ID, "true")

	// The pool is empty: a cold create, two writes as before.
	cold := e.create(e.KeyA, api.CreateSandboxRequest{})
	reserved, updates = st.take()
	if !slices.Equal(reserved, []string{model.StatusCreating}) || updates != 1 {
		t.Errorf("cold create wrote rows %v and %d updates; want one creating row, one update", reserved, updates)
	}

	// Refused by the limits (the label is taken): no member taken.
	wd.mu.Lock()
	wd.ready = 1
	wd.mu.Unlock()
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "warm"})
	if resp.StatusCode == http.StatusCreated {
		t.Fatalf("a second sandbox labelled warm was created: %s", body)
	}
	if len(wd.claims) != 1 {
		t.Errorf("a refused create claimed a member: %v", wd.claims)
	}

	// The limits pass the read but not the reservation (another create
	// took the last slot meanwhile): the claimed sandbox is deleted and
	// no row is left.
	st.mu.Lock()
	st.fail = &api.Error{Status: http.StatusTooManyRequests, Code: api.CodeRateLimited, Message: "raced"}
	st.mu.Unlock()
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("create whose reservation fails: %d %s, want 429", resp.StatusCode, body)
	}
	if len(wd.claims) != 2 {
		t.Fatalf("claims %v: want the second claimed", wd.claims)
	}
	raced := wd.claims[1]
	e.Driver.mu.Lock()
	deleted := slices.Contains(e.Driver.deleted, raced)
	e.Driver.mu.Unlock()
	if !deleted {
		t.Errorf("the sandbox claimed for a refused reservation was not deleted")
	}
	if _, err := e.Store.Sandbox(ctx, e.AcctA.ID, raced); err == nil {
		t.Errorf("a row is left for the refused sandbox %s", raced)
	}
	if _, err := e.Store.Sandbox(ctx, e.AcctA.ID, cold.ID); err != nil {
		t.Errorf("cold sandbox: %v", err)
	}
}

// TestWarmCreateClaimConnection: the driver claims a warm sandbox with the
// server's own client for it (ClaimWarm's via), so the connection the
// claim opened serves the first exec: the sidecar accepts one connection
// for both.
func TestWarmCreateClaimConnection(t *testing.T) {
	var wd *warmDriver
	e := newEnvWithDriver(t, server.Config{}, openStore(t, t.TempDir()), func(f *fakeDriver) model.Driver {
		wd = &warmDriver{fakeDriver: f, ready: 1}
		return wd
	})
	sock, conns := countingSidecar(t, e)
	wd.ep = func() model.Endpoint { return model.Endpoint{Network: "unix", Address: sock, Token: e.Sidecar.Token} }

	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if n := conns(); n != 1 {
		t.Fatalf("the sidecar accepted %d connections by the create's answer; want 1, the claim's", n)
	}
	e.exec(e.KeyA, sb.ID, "true")
	if n := conns(); n != 1 {
		t.Errorf("the sidecar accepted %d connections after the first exec; want 1, the claim's serving it", n)
	}
}

// countingSidecar serves the test sidecar's handler on a unix socket of
// its own and counts the connections it accepts.
func countingSidecar(t *testing.T, e *env) (sock string, conns func() int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "bxk-") // a socket path must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock = filepath.Join(dir, "sidecar.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	hs := &http.Server{Handler: e.Sidecar.Server.Config.Handler, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return sock, func() int { return int(accepted.Load()) }
}

// TestColdCreateHealthConnection: a cold create gives the driver the
// server's own clients (Spec.Via), so the driver's check that the new
// sidecar answers goes over the sandbox's client and its connection then
// serves the first exec: the sidecar accepts one connection for both. The
// fake driver asks as the local driver does: with via's client when it has
// one, else with a client of its own that closes its connection.
func TestColdCreateHealthConnection(t *testing.T) {
	e := newEnv(t, server.Config{})
	sock, conns := countingSidecar(t, e)
	ep := model.Endpoint{Network: "unix", Address: sock, Token: e.Sidecar.Token}
	e.Driver.CreateFunc = func(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
		c := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			},
			DisableKeepAlives: true,
		}}
		if spec.Via != nil {
			var err error
			if c, err = spec.Via.Client(spec.ID, ep); err != nil {
				return model.Endpoint{}, err
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sidecar/health", nil)
		if err != nil {
			return model.Endpoint{}, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return model.Endpoint{}, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return ep, nil
	}

	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if n := conns(); n != 1 {
		t.Fatalf("the sidecar accepted %d connections by the create's answer; want 1, the health check's", n)
	}
	e.exec(e.KeyA, sb.ID, "true")
	if n := conns(); n != 1 {
		t.Errorf("the sidecar accepted %d connections after the first exec; want 1, the health check's serving it", n)
	}
}

// TestWarmCreateClaimFailsAfterRecord: the driver writes the row while the
// claim is answered (ClaimWarm's record). A claim that fails after that
// write leaves no row of its own: one that falls back (ok false) is
// created cold under the same id, the warm row removed first (else the
// cold create's row would collide with it); one that fails outright
// answers an error and leaves no row. A driver that never calls record
// still gets its sandbox recorded.
func TestWarmCreateClaimFailsAfterRecord(t *testing.T) {
	st := &writeCountingStore{Store: openStore(t, t.TempDir())}
	var wd *warmDriver
	e := newEnvWithDriver(t, server.Config{}, st, func(f *fakeDriver) model.Driver {
		wd = &warmDriver{fakeDriver: f}
		return wd
	})
	wd.ep = e.Sidecar.Endpoint
	ctx := context.Background()
	setup := func(afterRecord func() (bool, error), noRecord bool) {
		wd.mu.Lock()
		wd.ready, wd.afterRecord, wd.noRecord = 1, afterRecord, noRecord
		wd.mu.Unlock()
		st.take()
	}

	setup(func() (bool, error) { return false, nil }, false)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	reserved, _ := st.take()
	if !slices.Equal(reserved, []string{api.StatusActive, model.StatusCreating}) {
		t.Errorf("fallen back create wrote rows %v; want the warm row, then the cold create's", reserved)
	}
	if created := e.Driver.Created(); len(created) != 1 || created[0].ID != sb.ID {
		t.Errorf("cold creates %v; want %s created cold", created, sb.ID)
	}
	if row, err := e.Store.Sandbox(ctx, e.AcctA.ID, sb.ID); err != nil || row.Status != api.StatusActive {
		t.Errorf("row of the sandbox created cold: %+v, %v", row, err)
	}

	setup(func() (bool, error) { return true, errors.New("claim failed") }, false)
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
	if resp.StatusCode < 500 {
		t.Fatalf("create whose claim failed: %d %s, want a 5xx", resp.StatusCode, body)
	}
	failed := wd.claims[len(wd.claims)-1]
	if _, err := e.Store.Sandbox(ctx, e.AcctA.ID, failed); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("row of the sandbox whose claim failed: %v, want none", err)
	}

	setup(nil, true)
	sb = e.create(e.KeyA, api.CreateSandboxRequest{})
	if reserved, _ := st.take(); !slices.Equal(reserved, []string{api.StatusActive}) {
		t.Errorf("create from a driver without record wrote rows %v; want one active row", reserved)
	}
	if row, err := e.Store.Sandbox(ctx, e.AcctA.ID, sb.ID); err != nil || row.Status != api.StatusActive {
		t.Errorf("row of the sandbox claimed without record: %+v, %v", row, err)
	}
}
