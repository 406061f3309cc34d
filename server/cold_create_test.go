package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// reserveGate is a store whose ReserveSandboxes first waits for started
// (the driver's create entered), then fails with fail when set.
type reserveGate struct {
	model.Store
	started chan struct{}
	fail    error
}

// rendezvous bounds a wait that only a create which runs the reservation
// before the driver (the order this test rules out) would exceed; it is
// not a measure of speed.
const rendezvous = 20 * time.Second

func (g *reserveGate) ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time, check func(model.Usage) error, sbs []*model.Sandbox) error {
	select {
	case <-g.started:
	case <-time.After(rendezvous):
		return fmt.Errorf("the driver's create had not started %v after the reservation did", rendezvous)
	}
	if g.fail != nil {
		return g.fail
	}
	return g.Store.ReserveSandboxes(ctx, accountID, since, now, check, sbs)
}

// gatedEnv is an env whose reservations wait for the driver's create to
// start and then fail with fail when set; its driver's create then waits
// to be cancelled.
func gatedEnv(t *testing.T, fail error) (*env, *reserveGate) {
	t.Helper()
	g := &reserveGate{Store: openStore(t, t.TempDir()), started: make(chan struct{}), fail: fail}
	e := newEnvWithStore(t, server.Config{}, g)
	var once sync.Once
	e.Driver.CreateFunc = func(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
		once.Do(func() { close(g.started) })
		if fail != nil {
			<-ctx.Done() // the failed reservation cancels the jail's start
			return model.Endpoint{}, ctx.Err()
		}
		return e.Sidecar.Endpoint(), nil
	}
	return e, g
}

// TestColdCreateReservesWhileStarting: a plain cold create commits its
// reservation while the driver starts the sandbox (the store's reservation
// waits for the driver's create to begin), and answers only once the row
// is active.
func TestColdCreateReservesWhileStarting(t *testing.T) {
	e, _ := gatedEnv(t, nil)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	got, err := e.Store.Sandbox(context.Background(), e.AcctA.ID, sb.ID)
	if err != nil {
		t.Fatalf("the created sandbox has no row: %v", err)
	}
	if got.Status != api.StatusActive || got.Endpoint.Address != e.Sidecar.Endpoint().Address {
		t.Errorf("row after the answer: status %q endpoint %v; want active at %v", got.Status, got.Endpoint, e.Sidecar.Endpoint())
	}
	e.exec(e.KeyA, sb.ID, "true")
}

// TestColdCreateReservationFails: a reservation that fails while the
// driver starts the sandbox cancels the start, tears the sandbox down and
// leaves no row; the answer is the store's.
func TestColdCreateReservationFails(t *testing.T) {
	e, _ := gatedEnv(t, fmt.Errorf("reserve: %w", model.ErrStoreReadOnly))
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("create = %d %s; want 503", resp.StatusCode, body)
	}
	created := e.Driver.Created()
	if len(created) != 1 {
		t.Fatalf("driver creates: %d; want 1", len(created))
	}
	if !contains(e.Driver.Deleted(), created[0].ID) {
		t.Errorf("the sandbox the driver started (%s) was not deleted; deleted %v", created[0].ID, e.Driver.Deleted())
	}
	if sbs, err := e.Store.ListSandboxes(context.Background(), e.AcctA.ID, false); err != nil || len(sbs) != 0 {
		t.Errorf("rows after the failed create: %v %v; want none", sbs, err)
	}
}

// TestColdCreateCrashBeforeReservation: a server that stops after the
// driver started a plain sandbox but before its reservation was written
// leaves a sandbox no row claims; the next start's Reconcile deletes it.
func TestColdCreateCrashBeforeReservation(t *testing.T) {
	st := openStore(t, t.TempDir())
	g := &reserveGate{Store: st, started: make(chan struct{})}
	e := newEnvWithStore(t, server.Config{}, g)
	crashed := make(chan struct{})
	ids := make(chan string, 1)
	e.Driver.CreateFunc = func(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
		ids <- spec.ID
		<-crashed // the process is gone before the start returns
		return model.Endpoint{}, context.Canceled
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
	}()
	var id string
	select {
	case id = <-ids: // the driver holds the sandbox; the reservation waits for g.started
	case <-done:
		t.Fatal("the create ended without the driver starting a sandbox")
	}
	if sbs, err := st.ListSandboxes(context.Background(), e.AcctA.ID, false); err != nil || len(sbs) != 0 {
		t.Fatalf("rows while the reservation waits: %v %v; want none", sbs, err)
	}

	// "Restart" on the same store: the driver still has the sandbox.
	driver := &fakeDriver{ListFunc: func(context.Context) ([]model.Observed, error) {
		return []model.Observed{{ID: id, Alive: true}}, nil
	}}
	srv, err := server.New(server.Config{}, st, driver, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if !contains(driver.Deleted(), id) {
		t.Errorf("Reconcile did not delete the sandbox no row claims (%s); deleted %v", id, driver.Deleted())
	}
	close(crashed)
	close(g.started)
	<-done
}

// startedEnv is an env whose driver says the sandbox started
// (model.Spec.Started), then waits, at most rendezvous, until the store
// holds the sandbox's row active, and returns fail when set. activeErr,
// when set, is the store's answer to marking a row.
func startedEnv(t *testing.T, fail, activeErr error) (*env, chan bool) {
	t.Helper()
	st := &updateGate{Store: openStore(t, t.TempDir()), fail: activeErr}
	e := newEnvWithStore(t, server.Config{}, st)
	sawActive := make(chan bool, 1)
	e.Driver.CreateFunc = func(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
		if spec.Started == nil {
			sawActive <- false
			return model.Endpoint{}, fmt.Errorf("a plain cold create gave no Started")
		}
		ep := e.Sidecar.Endpoint()
		spec.Started(ep)
		sawActive <- st.waitActive(spec.ID)
		if fail != nil {
			return model.Endpoint{}, fail
		}
		return ep, nil
	}
	return e, sawActive
}

// updateGate is a store that reports each row it marks active, and
// refuses to mark any with fail when set.
type updateGate struct {
	model.Store
	fail   error
	mu     sync.Mutex
	active map[string]bool // id: marked active (true) or refused (false)
}

func (g *updateGate) UpdateSandbox(ctx context.Context, id string, fn func(*model.Sandbox) error) (*model.Sandbox, error) {
	var sb *model.Sandbox
	err := g.fail
	if err == nil {
		sb, err = g.Store.UpdateSandbox(ctx, id, fn)
	}
	if err != nil || sb.Status == api.StatusActive {
		g.mu.Lock()
		if g.active == nil {
			g.active = map[string]bool{}
		}
		g.active[id] = err == nil
		g.mu.Unlock()
	}
	return sb, err
}

// waitActive reports whether row id was marked active within rendezvous;
// false at once when marking it was refused.
func (g *updateGate) waitActive(id string) bool {
	for deadline := time.Now().Add(rendezvous); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		ok, tried := g.active[id]
		g.mu.Unlock()
		if tried {
			return ok
		}
	}
	return false
}

// TestColdCreateActivatesWhileStarting: once the driver says a plain cold
// sandbox started, its row is committed active while the driver still
// waits for the sidecar to answer (here the driver returns only after
// seeing it), and the create answers with the row active.
func TestColdCreateActivatesWhileStarting(t *testing.T) {
	e, sawActive := startedEnv(t, nil, nil)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if !<-sawActive {
		t.Fatalf("the row was not active within %v of the driver's Started", rendezvous)
	}
	got, err := e.Store.Sandbox(context.Background(), e.AcctA.ID, sb.ID)
	if err != nil || got.Status != api.StatusActive || got.Endpoint.Address != e.Sidecar.Endpoint().Address {
		t.Fatalf("row after the answer: %+v %v; want active at %v", got, err, e.Sidecar.Endpoint())
	}
	e.exec(e.KeyA, sb.ID, "true")
}

// TestColdCreateFailsAfterActive: a driver whose sandbox never answers
// after the row went active (Started, then an error) gets it torn down,
// and the row removed: no create was answered, none is left.
func TestColdCreateFailsAfterActive(t *testing.T) {
	e, sawActive := startedEnv(t, errors.New("sidecar did not answer"), nil)
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
	if resp.StatusCode == http.StatusCreated {
		t.Fatalf("create = %d %s; want a failure", resp.StatusCode, body)
	}
	if !<-sawActive {
		t.Fatalf("the row was not active within %v of the driver's Started", rendezvous)
	}
	created := e.Driver.Created()
	if len(created) != 1 || !contains(e.Driver.Deleted(), created[0].ID) {
		t.Errorf("driver created %v, deleted %v; want the one created deleted", created, e.Driver.Deleted())
	}
	if sbs, err := e.Store.ListSandboxes(context.Background(), e.AcctA.ID, false); err != nil || len(sbs) != 0 {
		t.Errorf("rows after the failed create: %v %v; want none", sbs, err)
	}
}

// TestColdCreateActiveCommitFails: when the store refuses the early
// "active" commit, the create fails though the sidecar answered, the
// sandbox is torn down and no row is left.
func TestColdCreateActiveCommitFails(t *testing.T) {
	e, sawActive := startedEnv(t, nil, fmt.Errorf("update: %w", model.ErrStoreReadOnly))
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{})
	if resp.StatusCode == http.StatusCreated {
		t.Fatalf("create = %d %s; want a failure", resp.StatusCode, body)
	}
	if <-sawActive {
		t.Fatal("a refused commit marked the row active")
	}
	created := e.Driver.Created()
	if len(created) != 1 || !contains(e.Driver.Deleted(), created[0].ID) {
		t.Errorf("driver created %v, deleted %v; want the one created deleted", created, e.Driver.Deleted())
	}
	if sbs, err := e.Store.ListSandboxes(context.Background(), e.AcctA.ID, false); err != nil || len(sbs) != 0 {
		t.Errorf("rows after the failed create: %v %v; want none", sbs, err)
	}
}
