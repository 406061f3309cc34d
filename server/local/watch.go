//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/model"
)

// Watching sidecars (issue 19). Each sandbox's jail init is watched
// through a pidfd registered with the Go runtime's poller, so a sidecar
// that dies while the server runs (killed, crashed, out of memory) is
// reported at once (WatchLost) and the server marks it lost, instead of
// the sandbox staying active and failing every call until a restart.
// Waiting through the poller rather than in waitid(2) also means no
// thread of this process sits blocked per sandbox: with thousands of
// sandboxes, that alone was thousands of host threads.

var (
	_ model.LossWatcher = (*Driver)(nil)
	_ model.LossGracer  = (*Driver)(nil)
	_ model.Prober      = (*Driver)(nil)
)

// onExit calls fn once the process pid (started at startTime) has exited,
// from a goroutine parked in the runtime's poller. The returned stop
// cancels the watch without calling fn. A process already gone, or a pid
// that now names another process, calls fn at once.
func onExit(pid int, startTime uint64, fn func()) (stop func(), err error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		go fn()
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open pidfd of %d: %w", pid, err)
	}
	// Checked after the pidfd is open, so the pidfd is the process
	// whose start time matches, not a successor that reused the pid.
	if s, letter, err := procStat(pid); err != nil || s != startTime || letter == 'Z' || letter == 'X' {
		_ = unix.Close(fd)
		go fn()
		return func() {}, nil
	}
	// Non-blocking, so os.NewFile registers it with the poller: a pidfd
	// polls readable once its process has exited.
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("watch pidfd of %d: %w", pid, err)
	}
	var once sync.Once
	stopped := make(chan struct{})
	go func() {
		err := rc.Read(func(fd uintptr) bool {
			n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return n > 0
		})
		f.Close()
		select {
		case <-stopped:
			return // stop closed the file under the wait
		default:
		}
		if err == nil || !errors.Is(err, fs.ErrClosed) {
			fn()
		}
	}()
	return func() {
		once.Do(func() {
			close(stopped)
			f.Close() // wakes the wait with ErrClosed
		})
	}, nil
}

// reapOnExit calls reap once the child pid has exited.
func reapOnExit(pid int, startTime uint64, reap func()) error {
	_, err := onExit(pid, startTime, reap)
	return err
}

// lossWatch holds the sandboxes whose exits are reported and the exits
// not yet handed to WatchLost.
type lossWatch struct {
	mu      sync.Mutex
	stops   map[string]func() // by sandbox id
	lost    []string          // exited on their own, not yet reported
	changed chan struct{}     // buffered, one slot: lost grew
}

func newLossWatch() *lossWatch {
	return &lossWatch{stops: map[string]func(){}, changed: make(chan struct{}, 1)}
}

// watchSandbox starts watching the sandbox in dir (whose state file names
// its jail) for an exit this driver did not cause.
func (d *Driver) watchSandbox(id string) {
	d.mu.Lock()
	done, child := d.children[id]
	d.mu.Unlock()
	if child {
		// This driver's child: the reap start set up reports its exit
		// (childExited), so the watch needs no pidfd and goroutine of
		// its own beside the reaper's (issue 27 item 4: one goroutine
		// per idle sandbox fewer in the server).
		d.loss.watch(id, func() {})
		select {
		case <-done:
			d.loss.exited(id) // reaped before it was watched
		default:
		}
		return
	}
	st, err := readState(d.sandboxDir(id))
	if err != nil || st.PID == 0 {
		d.log.Warn("watch sandbox: no state to watch", "id", id, "err", err)
		return
	}
	w := d.loss
	stop, err := onExit(st.PID, st.StartTime, func() { w.exited(id) })
	if err != nil {
		d.log.Warn("watch sandbox", "id", id, "err", err)
		return
	}
	w.watch(id, stop)
}

// childExited reports the exit of a jail this driver started, once
// reaped (done is closed), under the id it has now: a warm pool member is
// renamed when it is handed out. A jail being deleted or paused is no
// longer watched by then, so its exit is not a loss.
func (d *Driver) childExited(done <-chan struct{}) {
	id := ""
	d.mu.Lock()
	for k, v := range d.children {
		if v == done {
			id = k
			break
		}
	}
	d.mu.Unlock()
	if id != "" {
		d.loss.exited(id)
	}
}

// watch records that id is watched; stop cancels the watch. A previous
// watch of id is stopped.
func (w *lossWatch) watch(id string, stop func()) {
	w.mu.Lock()
	old := w.stops[id]
	w.stops[id] = stop
	w.mu.Unlock()
	if old != nil {
		old()
	}
}

// unwatch stops watching id: Delete calls it before it kills the jail,
// so a deletion is never reported as a loss.
func (w *lossWatch) unwatch(id string) {
	w.mu.Lock()
	stop := w.stops[id]
	delete(w.stops, id)
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// unwatchAll stops every watch.
func (w *lossWatch) unwatchAll() {
	w.mu.Lock()
	stops := w.stops
	w.stops = map[string]func(){}
	w.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// exited records that id's jail went while it was still watched.
func (w *lossWatch) exited(id string) {
	w.mu.Lock()
	if _, watched := w.stops[id]; !watched {
		w.mu.Unlock()
		return // unwatched meanwhile: being deleted
	}
	delete(w.stops, id)
	w.lost = append(w.lost, id)
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// take returns and clears the exits not yet reported.
func (w *lossWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lost := w.lost
	w.lost = nil
	return lost
}

// WatchLost implements model.LossWatcher: it calls lost with the id of
// each sandbox whose sidecar exited without Delete, as soon as it exits,
// until ctx is done. Exits before the call are reported by it.
func (d *Driver) WatchLost(ctx context.Context, lost func(id string)) error {
	for {
		for _, id := range d.loss.take() {
			lost(id)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.loss.changed:
		}
	}
}

// LostGrace implements model.LossGracer: reports need no grace, since
// the driver never reports a sandbox it is deleting.
func (d *Driver) LostGrace() time.Duration { return 0 }

// Probe implements model.Prober: whether the sandbox's jail still runs,
// for a call that could not reach its sidecar.
func (d *Driver) Probe(_ context.Context, id string) (bool, error) {
	if !validID.MatchString(id) {
		return false, nil
	}
	st, err := readState(d.sandboxDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.PID != 0 && alive(st), nil
}

// watchExisting watches the live sandboxes a previous driver on this
// state directory left running (New calls it). Dead ones are left to the
// server's reconciliation, which marks them lost at start-up.
func (d *Driver) watchExisting() {
	obs, err := d.List(context.Background())
	if err != nil {
		d.log.Warn("watch existing sandboxes", "err", err)
		return
	}
	for _, o := range obs {
		if o.Alive {
			d.watchSandbox(o.ID)
			d.openDisks(o.ID)
			d.thawInterruptedSnapshot(o.ID)
			d.adoptFrozen(o.ID)
		}
	}
}

// track starts looking after a sandbox Create just made: its sidecar is
// watched, its disks kept open to flush them, and the host's accounting
// counts it.
func (d *Driver) track(id string) { d.trackClaimed(id, false) }

// trackClaimed is track for a sandbox claimed from the warm pool or made
// from a prepared slot; opened says whether its disks were opened when the
// member was started or the slot made (moveDisks).
func (d *Driver) trackClaimed(id string, opened bool) {
	d.watchSandbox(id)
	if !opened {
		d.openDisks(id)
	}
	d.noteCreated()
}
