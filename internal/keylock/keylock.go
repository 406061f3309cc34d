// Package keylock is a mutex per key, made on first use and dropped when
// no one holds or waits for it: the sidecar's str-replace per file, the
// local driver's snapshots per sandbox, the control plane's lifecycle
// changes per sandbox. Standard library only.
package keylock

import "sync"

// Locks is a mutex per key. The zero value is ready to use; it must not
// be copied after first use.
type Locks[K comparable] struct {
	// Waiting, when set, runs before Lock waits for a key another holds
	// (tests use it to know a caller is queued).
	Waiting func(K)

	mu sync.Mutex
	m  map[K]*entry
}

type entry struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when none is left
}

// Lock takes k's mutex and returns its release, which must be called once.
func (l *Locks[K]) Lock(k K) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*entry{}
	}
	e := l.m[k]
	if e == nil {
		e = &entry{}
		l.m[k] = e
	}
	e.users++
	contended := e.users > 1
	l.mu.Unlock()
	if contended && l.Waiting != nil {
		l.Waiting(k)
	}
	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, k)
		}
		l.mu.Unlock()
	}
}

// held is how many keys have an entry, for tests.
func (l *Locks[K]) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
