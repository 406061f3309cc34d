//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"golang.org/x/sys/unix"
)

// The warm pool keeps Config.WarmPool sandboxes started ahead of need, in
// StateDir/pool/<name>, so that Create can hand one out instead of paying
// for a jail's set-up and its sidecar's start.
//
// A member is an ordinary jail of the default size and storage whose
// sidecar was started with --claimable and a pool token that only this
// driver knows (it is in the member's state.json). Nothing ever runs in it.
// Claiming it for a sandbox:
//
//  1. renames StateDir/pool/<name> to StateDir/sandboxes/<id> (the jail's
//     mounts are detached clones or path-independent binds, and the loop
//     mount moves with its directory);
//  2. applies the requested size's cgroup limits if they differ;
//  3. POST /claim with the pool token, which makes the sidecar replace it
//     with a fresh token; the sidecar refuses unless it has served nothing
//     but /health, so a claimed sandbox is as clean as a fresh one (empty
//     workspace and outputs, only the sidecar running, no interpreter,
//     terminal or LSP, the whole exec budget) without resetting anything;
//  4. records the new token and socket path in state.json (while 3 runs).
//
// Only requests a member fits are served from the pool: no image, no
// volumes, the default storage quota (the disk image's size is fixed), and
// a size with the pool's pids limit (the jail's RLIMIT_NPROC derives from
// it and cannot be raised). Others, and creates that find the pool empty,
// start cold. A failed claim deletes the member and falls back to a cold
// start. One goroutine refills the pool, one member at a time, once
// claims have paused for refillDelay and, while the pool holds its
// reserve, calls to sandboxes have paused too (hold.go).
//
// Members are not sandboxes: List does not report them. Shutdown deletes
// them, and New deletes those a previous driver left behind (a member's
// state is the pool's business, and the configuration may have changed).
// A member's cgroup keeps its pool name after the claim; state.json
// records it.

// poolPrefix starts every member's name, which is also its jail and cgroup id.
const poolPrefix = "warm-"

// refillDelay is how long the pool waits after a claim before starting a
// member: a member's start takes about two cores' worth of 50 ms, which
// would otherwise compete with the first commands of the sandbox just
// handed out (and with the next claims of a burst). Then it waits for
// calls to pause (holdFor).
const refillDelay = 250 * time.Millisecond

func (d *Driver) poolDir() string { return filepath.Join(d.data, "pool") }

// pool is the set of members ready to claim and the goroutine filling it.
type pool struct {
	d              *Driver
	size           int
	filler[string]           // member names
	lastTake       time.Time // of the latest claim (refillDelay); under mu
	callWatch                // refills wait for calls to pause (hold.go)
}

// startPool deletes the members a previous driver left and starts
// filling a pool of Config.WarmPool members in the background.
func (d *Driver) startPool() error {
	if err := d.clearPool(context.Background()); err != nil {
		return fmt.Errorf("clear warm pool: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{d: d, size: max(0, d.cfg.WarmPool), filler: newFiller[string](cancel)}
	p.hold = refillHold
	d.pool = p
	if p.size == 0 {
		close(p.done)
		return nil
	}
	go p.fill(ctx)
	return nil
}

// clearPool deletes every member in the pool directory, and in the
// other root's (cow.go), where an earlier start may have left some.
func (d *Driver) clearPool(ctx context.Context) error {
	var errs []error
	entries, err := os.ReadDir(d.poolDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		errs = append(errs, d.removeMember(ctx, e.Name()))
	}
	if root := d.otherRoot(); root != "" {
		dir := filepath.Join(root, "pool")
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			errs = append(errs, d.remove(ctx, e.Name(), filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// removeMember deletes an unclaimed member like a sandbox.
func (d *Driver) removeMember(ctx context.Context, name string) error {
	if name == "" || filepath.Base(name) != name {
		return fmt.Errorf("remove warm sandbox: invalid name %q", name)
	}
	return d.remove(ctx, name, filepath.Join(d.poolDir(), name))
}

// fill keeps the pool at its size until ctx ends. A failing start is
// retried with a growing pause, so a broken host does not spin.
func (p *pool) fill(ctx context.Context) {
	defer close(p.done)
	pause := minRetry
	var held time.Time // since when the next member waits for calls to pause
	for {
		for p.short() {
			if wait := p.quietFor(); wait > 0 {
				if !sleep(ctx, wait) {
					return
				}
				continue
			}
			if held.IsZero() {
				held = time.Now()
			}
			if wait := p.holdFor(time.Since(held)); wait > 0 {
				if !sleep(ctx, wait) {
					return
				}
				continue
			}
			held = time.Time{}
			name, err := p.d.startMember(ctx)
			if ctx.Err() != nil {
				if err == nil {
					p.add(name) // deleted by stop, which waits for this goroutine
				}
				return
			}
			if err != nil {
				p.d.log.Warn("warm pool: start a sandbox", "err", err, "retry_in", pause)
				if !sleep(ctx, pause) {
					return
				}
				pause = min(2*pause, maxRetry)
				continue
			}
			pause = minRetry
			p.add(name)
		}
		if !p.idle(ctx) {
			return
		}
	}
}

// quietFor is how much longer the filler should wait for claims to pause.
func (p *pool) quietFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return refillDelay - time.Since(p.lastTake)
}

func (p *pool) short() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready) < p.size
}

// WarmReady reports how many warm pool members are ready to be claimed
// (benchmarks wait for the pool to fill).
func (d *Driver) WarmReady() int {
	if d.pool == nil {
		return 0
	}
	d.pool.mu.Lock()
	defer d.pool.mu.Unlock()
	return len(d.pool.ready)
}

// WriteMetrics writes the warm pool's fill in the Prometheus text format
// (/metrics appends it): `boxkite bench` waits for a full pool before it
// measures, and an operator sees a pool that cannot fill.
func (d *Driver) WriteMetrics(w io.Writer) {
	target := 0
	if d.pool != nil {
		target = d.pool.size
	}
	fmt.Fprintf(w, "# HELP boxkite_local_warm_pool_ready Warm sandboxes ready to claim.\n# TYPE boxkite_local_warm_pool_ready gauge\nboxkite_local_warm_pool_ready %d\n", d.WarmReady())
	fmt.Fprintf(w, "# HELP boxkite_local_warm_pool_target Warm sandboxes the pool keeps.\n# TYPE boxkite_local_warm_pool_target gauge\nboxkite_local_warm_pool_target %d\n", target)
}

func (p *pool) add(name string) {
	p.mu.Lock()
	p.ready = append(p.ready, name)
	p.mu.Unlock()
}

// take removes the oldest ready member and wakes the filler.
func (p *pool) take() (string, bool) {
	p.mu.Lock()
	var name string
	ok := len(p.ready) > 0 && !p.closed
	if ok {
		name, p.ready = p.ready[0], p.ready[1:]
		p.lastTake = time.Now()
	}
	p.mu.Unlock()
	p.wake()
	return name, ok
}

// putBack returns an intact member that could not be claimed.
func (p *pool) putBack(name string) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.ready = append([]string{name}, p.ready...)
	}
	p.mu.Unlock()
	if closed { // stop has collected the others already
		_ = p.d.removeMember(context.Background(), name)
	}
}

// stop ends the filler and deletes every member.
func (p *pool) stop(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.filler.stop(ctx, "warm pool", p.d.removeMember)
}

// poolSpec is what every member is made from: the default size and storage.
var poolSpec = model.Spec{}

// fits reports whether a member can become the sandbox spec asks for.
func (d *Driver) fits(spec model.Spec) bool {
	if spec.ImageRoot != "" || len(spec.Volumes) > 0 || spec.FromSnapshot != "" {
		return false
	}
	if d.quota(spec.StorageGB) != d.quota(poolSpec.StorageGB) {
		return false
	}
	lim, ok := d.limits(spec.Size)
	base, _ := d.limits(poolSpec.Size)
	return ok && lim.Pids == base.Pids
}

// startMember starts one member and returns its name once its sidecar
// answers /health. On failure nothing of it is left.
func (d *Driver) startMember(ctx context.Context) (_ string, err error) {
	token, err := newToken()
	if err != nil {
		return "", err
	}
	name := poolPrefix + token[:16]
	dir := filepath.Join(d.poolDir(), name)
	if err := os.MkdirAll(d.poolDir(), 0o700); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			if rerr := d.removeMember(context.WithoutCancel(ctx), name); rerr != nil {
				d.log.Error("warm pool: clean up a failed start", "name", name, "err", rerr)
			}
		}
	}()
	if token, err = newToken(); err != nil { // the pool token, unrelated to the name
		return "", err
	}
	spec := poolSpec
	spec.ID = name
	lim, _ := d.limits(spec.Size)
	p, err := d.prepare(spec, dir, lim)
	if err != nil {
		return "", err
	}
	defer p.lease.Close() // the jail holds its own copy once started
	done, err := d.start(p, token, dir, "--claimable")
	if err != nil {
		return "", err
	}
	ep := model.Endpoint{Network: "unix", Address: filepath.Join(dir, sidecarSocket), Token: token}
	if err := waitHealthy(ctx, nil, ep, d.cfg.HealthTimeout, done); err != nil {
		return "", fmt.Errorf("%w%s", err, logTail(dir))
	}
	// Opened now rather than at the claim, which hands them over
	// (moveDisks): this is the first open of the disk, as at a create.
	d.openDisksIn(name, dir)
	d.log.Debug("warm pool: sandbox ready", "name", name)
	return name, nil
}

// ClaimWarm implements model.WarmClaimer: spec's sandbox from the warm
// pool, if a member fits and is ready. The claim goes over via's client
// for spec.ID when via is given (see adopt).
func (d *Driver) ClaimWarm(ctx context.Context, spec model.Spec, via model.SidecarClients, record func(model.Endpoint) error) (model.Endpoint, bool, error) {
	if !validID.MatchString(spec.ID) {
		return model.Endpoint{}, false, nil // Create refuses it
	}
	if _, ok := d.limits(spec.Size); !ok {
		return model.Endpoint{}, false, nil
	}
	// A warm member has no egress socket, which must exist before the
	// sidecar starts (it looks once); one with egress starts cold.
	if spec.Egress != nil {
		return model.Endpoint{}, false, nil
	}
	return d.claimWarm(ctx, spec, via, record)
}

// claimWarm makes spec's sandbox out of a pool member if one fits and is
// ready. handled false means the caller must start the sandbox cold; a
// member that fails to be claimed is deleted and does not fail the create.
func (d *Driver) claimWarm(ctx context.Context, spec model.Spec, via model.SidecarClients, record func(model.Endpoint) error) (ep model.Endpoint, handled bool, err error) {
	if d.pool == nil || !d.fits(spec) {
		return ep, false, nil
	}
	name, ok := d.pool.take()
	if !ok {
		return ep, false, nil
	}
	src, dst := filepath.Join(d.poolDir(), name), d.sandboxDir(spec.ID)
	if err := renameNoReplace(src, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			d.pool.putBack(name)
			return ep, true, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
		d.log.Warn("warm pool: claim failed; starting cold", "name", name, "err", err)
		go func() { _ = d.removeMember(context.WithoutCancel(ctx), name) }()
		return ep, false, nil
	}
	d.mu.Lock()
	if done, ok := d.children[name]; ok {
		d.children[spec.ID] = done
		delete(d.children, name)
	}
	d.mu.Unlock()
	// From here the member is the sandbox and goes by its id.
	disks := d.moveDisks(name, spec.ID, dst)
	ep, err = d.adopt(ctx, spec, dst, via, record)
	if err == nil {
		d.trackClaimed(spec.ID, disks)
		d.log.Debug("sandbox created from the warm pool", "id", spec.ID, "member", name)
		return ep, true, nil
	}
	d.log.Warn("warm pool: claim failed; starting cold", "name", name, "err", err)
	if derr := d.Delete(context.WithoutCancel(ctx), spec.ID); derr != nil {
		return ep, true, fmt.Errorf("create sandbox %s: %w (and removing the warm sandbox: %v)", spec.ID, err, derr)
	}
	return ep, false, nil
}

// adopt turns the member now at dir into spec's sandbox: its size's
// limits, a fresh token, and its state file.
//
// With via, the claim is sent with the control plane's own client for
// the sandbox, which keeps the connection for the sandbox's first
// request: the first exec then needs no dial, and the sidecar accepts
// one connection instead of two (a connection, its goroutine and its
// buffers; bench/issue27/session8-claim8.md). Without (Create's own
// claims, tests), a client of its own that closes the connection.
//
// With record (model.WarmClaimer), record runs once the state file
// holds the new endpoint and the claim's request is in the sidecar's
// socket: when via's transport reports the request written
// (model.WithRequestWritten), before the sidecar's answer is read, so the
// record's commit overlaps the claim's round trip (bench/issue27/
// session12-warm12.md); else after the answer. Either way a record that
// committed names a sidecar that takes the claim, even if this process
// dies the next instant: a request whose client has gone is still served
// (sidecar TestClaimServedAfterClientGone).
func (d *Driver) adopt(ctx context.Context, spec model.Spec, dir string, via model.SidecarClients, record func(model.Endpoint) error) (model.Endpoint, error) {
	st, err := readState(dir)
	if err != nil {
		return model.Endpoint{}, err
	}
	lim, _ := d.limits(spec.Size)
	if base, _ := d.limits(poolSpec.Size); lim != base && len(st.Cgroup.Dirs) > 0 {
		if err := st.Cgroup.SetLimits(lim); err != nil {
			return model.Endpoint{}, err
		}
	}
	token, err := newToken()
	if err != nil {
		return model.Endpoint{}, err
	}
	socket := filepath.Join(dir, sidecarSocket)
	ep := model.Endpoint{Network: "unix", Address: socket, Token: token}
	client := unixClient(socket)
	if via != nil {
		if client, err = via.Client(spec.ID, ep); err != nil {
			return model.Endpoint{}, err
		}
	}
	poolToken := st.Token
	st.Socket, st.Token, st.Limits = socket, token, lim
	// The state file and the claim do not depend on each other, so they
	// overlap (each costs about a millisecond). If either fails, the
	// caller deletes the sandbox whatever the file says.
	written := make(chan error, 1)
	go func() { written <- writeState(dir, st) }()
	if record == nil {
		err = claimSidecar(ctx, client, poolToken, token)
		if err := errors.Join(err, <-written); err != nil {
			return model.Endpoint{}, err
		}
		return ep, nil
	}
	if err := claimRecorded(ctx, client, poolToken, token, written, func() { _ = record(ep) }); err != nil {
		return model.Endpoint{}, err // record's error is the caller's
	}
	return ep, nil
}

// claimRecorded sends the claim as claimSidecar does and runs record
// once the state file is written (stateWritten answers) and the claim's
// request is in the sidecar's socket: at the transport's signal that it
// wrote the request, or, from a transport that gives none, after the
// sidecar's answer. A claim that fails before either runs no record; one
// that fails after returns its error once record has run.
func claimRecorded(ctx context.Context, client *http.Client, poolToken, token string, stateWritten <-chan error, record func()) error {
	sent, claimed := make(chan struct{}), make(chan error, 1)
	var once sync.Once
	ctx = model.WithRequestWritten(ctx, func() { once.Do(func() { close(sent) }) })
	go func() { claimed <- claimSidecar(ctx, client, poolToken, token) }()
	var claimErr error
	answered := false
	select {
	case <-sent:
	case claimErr = <-claimed:
		answered = true
	}
	if err := <-stateWritten; err != nil {
		if !answered {
			claimErr = <-claimed
		}
		return errors.Join(err, claimErr)
	}
	if claimErr != nil {
		return claimErr // failed with no record made
	}
	record()
	if !answered {
		claimErr = <-claimed
	}
	return claimErr
}

// claimSidecar asks a member's sidecar, through client, to swap the pool
// token for token.
func claimSidecar(ctx context.Context, client *http.Client, poolToken, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := json.Marshal(map[string]string{"token": token})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://sidecar/claim", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HeaderSidecarToken, poolToken)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("claim sidecar: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("claim sidecar: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// renameNoReplace renames a directory, failing with fs.ErrExist rather
// than replacing an existing (empty) one.
func renameNoReplace(src, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A filesystem without RENAME_NOREPLACE: ids are unique, so a
		// check first is as good in practice.
		if _, serr := os.Lstat(dst); serr == nil {
			return &os.LinkError{Op: "rename", Old: src, New: dst, Err: fs.ErrExist}
		}
		err = os.Rename(src, dst)
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: fs.ErrExist}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: err}
	}
	return nil
}
