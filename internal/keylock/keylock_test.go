package keylock

import (
	"sync"
	"testing"
)

// One key's holders run one at a time, other keys do not wait for them,
// a waiter is announced, and the entries go with their last user.
func TestLocks(t *testing.T) {
	var waited []string
	var mu sync.Mutex
	l := Locks[string]{Waiting: func(k string) { mu.Lock(); waited = append(waited, k); mu.Unlock() }}
	unlockA := l.Lock("a")
	l.Lock("b")() // another key: not held off by a
	queued := make(chan struct{})
	l.Waiting = func(k string) { mu.Lock(); waited = append(waited, k); mu.Unlock(); close(queued) }
	got := make(chan func())
	go func() { got <- l.Lock("a") }()
	<-queued // the second holder of a waits
	select {
	case <-got:
		t.Fatal("a second Lock of a key returned while the first held it")
	default:
	}
	unlockA()
	(<-got)()
	if len(waited) != 1 || waited[0] != "a" {
		t.Errorf("waited for %v, want [a]", waited)
	}
	if n := l.held(); n != 0 {
		t.Errorf("%d entries left after every release, want 0", n)
	}

	// Many holders of one key never overlap.
	l.Waiting = nil
	var wg sync.WaitGroup
	inside := 0
	for range 50 {
		wg.Go(func() {
			defer l.Lock("c")()
			mu.Lock()
			inside++
			n := inside
			mu.Unlock()
			if n != 1 {
				t.Errorf("%d holders of one key at once", n)
			}
			mu.Lock()
			inside--
			mu.Unlock()
		})
	}
	wg.Wait()
}
