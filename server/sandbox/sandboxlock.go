package sandbox

import "sync"

// sandboxLocks serialise the lifecycle changes of one sandbox — pause,
// resume, destroy, the copy of a snapshot or a fork — in this process, so
// a resume racing another resume or a delete acts on the state the other
// left: one driver resume, never a resume of a sandbox whose teardown
// began, and a delete waits for a snapshot's copy under way. Each holder
// reloads the row after it got the lock.
type sandboxLocks struct {
	mu sync.Mutex
	m  map[string]*sandboxLock
	// waiting, when set, runs before a lock another holds is waited for
	// (Config.LockWaitForTests).
	waiting func(id string)
}

type sandboxLock struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when none is left
}

// lock takes id's lock and returns its release.
func (l *sandboxLocks) lock(id string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sandboxLock{}
	}
	e := l.m[id]
	if e == nil {
		e = &sandboxLock{}
		l.m[id] = e
	}
	e.users++
	contended := e.users > 1
	l.mu.Unlock()
	if contended && l.waiting != nil {
		l.waiting(id)
	}
	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}
