//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// The prepared pool keeps Config.Prepared sandboxes' resources made ahead
// of need, in StateDir/pool/prep-<hex>, so that a cold create (one the warm
// pool does not serve) pays only for its jail: the lease on a host id
// range, the run dir, the disk image (a clone of the formatted template),
// its loop device and mount, the workspace and outputs directories and
// the cgroups are made by prepare before any request asks for them. They
// were more than half of a cold create on the development machine (issue
// 27; BENCHMARKS.md). As root a slot also holds the jail's network
// namespace, made ahead with its loopback up (jail.NewNetNS): the jail is
// cloned into it rather than paying for a new one. Owned by the host's
// user namespace, it is not the jail's to configure (the sandbox has only
// lo either way, and no network capability after its lockdown). A slot's
// namespace serves its one sandbox: Create closes the driver's file
// whatever the start's outcome, and nothing returns a taken slot to the
// pool. Creates no slot serves get a new namespace in their clone.
//
// A slot is what prepare returned for poolSpec: nothing runs in it, and no
// token exists for it yet. Taking one for a sandbox renames its directory
// to StateDir/sandboxes/<id> (the loop mount moves with it), points the
// jail's paths there and applies the requested size's cgroup limits;
// Create then starts the jail as it would in a directory of its own. Only
// creates a slot fits are served (fits, and no egress: the egress socket
// is made for the sandbox's grant before its jail starts). One goroutine
// refills the pool, one slot at a time, as soon as a slot is taken: a slot
// costs a few milliseconds of CPU, much less than a warm member's start.
//
// Slots are not sandboxes: List does not report them. Shutdown deletes
// them, and New deletes those a previous driver left (clearPool).

// preparedPrefix starts every slot's name, which is also its cgroup id.
const preparedPrefix = "prep-"

// preparedPool is the set of slots ready to take and the goroutine filling it.
type preparedPool struct {
	d    *Driver
	size int
	filler[preparedSlot]
}

// A preparedSlot is a slot's name and what prepare made for it; its lease
// stays open, held by the driver, until the slot's jail holds it.
type preparedSlot struct {
	name string
	p    prepared
}

// startPrepared starts filling a prepared pool of Config.Prepared slots in
// the background. The pool directory was cleared by startPool.
func (d *Driver) startPrepared() {
	ctx, cancel := context.WithCancel(context.Background())
	pp := &preparedPool{d: d, size: max(0, d.cfg.Prepared), filler: newFiller[preparedSlot](cancel)}
	d.prepared = pp
	if pp.size == 0 || d.storage != StorageLoop {
		close(pp.done) // tmpfs storage has nothing worth making ahead
		return
	}
	go pp.fill(ctx)
}

// fill keeps the pool at its size until ctx ends; a failing slot is
// retried with a growing pause, so a broken host does not spin.
func (pp *preparedPool) fill(ctx context.Context) {
	defer close(pp.done)
	pause := minRetry
	for {
		for pp.short() {
			slot, err := pp.d.prepareSlot()
			if err == nil && !pp.add(slot) {
				pp.d.removeSlot(context.Background(), slot)
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				pp.d.log.Warn("prepared pool: prepare a sandbox", "err", err, "retry_in", pause)
				if !sleep(ctx, pause) {
					return
				}
				pause = min(2*pause, maxRetry)
				continue
			}
			pause = minRetry
		}
		if !pp.idle(ctx) {
			return
		}
	}
}

func (pp *preparedPool) short() bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return !pp.closed && len(pp.ready) < pp.size
}

// add keeps slot unless stop has begun; false means the caller deletes it.
func (pp *preparedPool) add(slot preparedSlot) bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.closed {
		return false
	}
	pp.ready = append(pp.ready, slot)
	return true
}

// take removes the oldest slot and wakes the filler.
func (pp *preparedPool) take() (preparedSlot, bool) {
	if pp == nil {
		return preparedSlot{}, false
	}
	pp.mu.Lock()
	var slot preparedSlot
	ok := len(pp.ready) > 0 && !pp.closed
	if ok {
		slot, pp.ready = pp.ready[0], pp.ready[1:]
	}
	pp.mu.Unlock()
	pp.wake()
	return slot, ok
}

// stop ends the filler and deletes every slot.
func (pp *preparedPool) stop(ctx context.Context) error {
	if pp == nil {
		return nil
	}
	return pp.filler.stop(ctx, "prepared pool", pp.d.removeSlot)
}

// prepareSlot makes one slot. On failure nothing of it is left.
func (d *Driver) prepareSlot() (_ preparedSlot, err error) {
	tag, err := newToken()
	if err != nil {
		return preparedSlot{}, err
	}
	name := preparedPrefix + tag[:16]
	dir := filepath.Join(d.poolDir(), name)
	if err := os.MkdirAll(d.poolDir(), 0o700); err != nil {
		return preparedSlot{}, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return preparedSlot{}, err
	}
	spec := poolSpec
	spec.ID = name
	lim, _ := d.limits(spec.Size)
	p, err := d.prepare(spec, dir, lim)
	if err != nil {
		_ = p.lease.Close()
		if rerr := d.removeMember(context.Background(), name); rerr != nil {
			d.log.Error("prepared pool: clean up a failed slot", "name", name, "err", rerr)
		}
		return preparedSlot{}, err
	}
	if !p.js.Nested() {
		if p.js.NetNS, err = jail.NewNetNS(); err != nil {
			_ = d.removeSlot(context.Background(), preparedSlot{name: name, p: p})
			return preparedSlot{}, err
		}
	}
	// The first open of the disk, and its syncfs (2.4-5.5 ms on the
	// request path of every cold create, issue 27): made here, handed over
	// by takePrepared (moveDisks) as a warm member's are by its claim.
	d.openDisksIn(name, dir)
	return preparedSlot{name: name, p: p}, nil
}

// removeSlot deletes a slot that was not taken.
func (d *Driver) removeSlot(ctx context.Context, slot preparedSlot) error {
	_ = slot.p.lease.Close()
	if slot.p.js.NetNS != nil {
		_ = slot.p.js.NetNS.Close()
	}
	return d.removeMember(ctx, slot.name)
}

// takePrepared moves a prepared slot to dir, spec's sandbox directory,
// if one fits and is ready. ok false means the caller prepares the
// sandbox itself; err is set only when dir exists already (the id is
// taken), which the caller reports as it would its own mkdir's failure.
func (d *Driver) takePrepared(ctx context.Context, spec model.Spec, dir string) (p prepared, ok bool, err error) {
	if spec.Egress != nil || !d.fits(spec) {
		return p, false, nil
	}
	if _, err := os.Lstat(dir); err == nil {
		return p, false, nil // taken: the caller's mkdir says so, no slot spent
	}
	slot, ok := d.prepared.take()
	if !ok {
		return p, false, nil
	}
	src := filepath.Join(d.poolDir(), slot.name)
	if err := renameNoReplace(src, dir); err != nil {
		go func() { _ = d.removeSlot(context.WithoutCancel(ctx), slot) }()
		if errors.Is(err, fs.ErrExist) {
			return p, false, err
		}
		d.log.Warn("prepared pool: take failed; preparing in place", "name", slot.name, "err", err)
		return p, false, nil
	}
	p = slot.p
	p.disksOpen = d.moveDisks(slot.name, spec.ID, dir)
	p.js.RunDir = filepath.Join(dir, "run")
	if p.js.Workspace != "" {
		mnt := filepath.Join(dir, diskMount)
		p.js.Workspace, p.js.Outputs = filepath.Join(mnt, "workspace"), filepath.Join(mnt, "outputs")
	}
	lim, _ := d.limits(spec.Size)
	if base, _ := d.limits(poolSpec.Size); lim != base && len(p.st.Cgroup.Dirs) > 0 {
		if err := p.st.Cgroup.SetLimits(lim); err != nil {
			return p, true, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
	}
	jsCopy := p.js
	jsCopy.NetNS = nil // the state's spec starts any later jail (a resume) in a new one
	p.st.Jail, p.st.Limits = &jsCopy, lim
	return p, true, nil
}

// preparedReady is how many slots are ready (tests and benchmarks).
func (d *Driver) preparedReady() int {
	pp := d.prepared
	if pp == nil {
		return 0
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return len(pp.ready)
}
