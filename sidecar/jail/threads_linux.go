package jail

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"time"
)

// An idle jail's sidecar should hold four threads (issue 27): the main
// thread, locked in ReapOrphans; the runtime's sysmon; its template
// thread (which any runtime.LockOSThread starts); and one thread that runs
// goroutines and waits in the netpoller. The runtime never ends an idle
// thread by itself, so every thread a burst of blocking syscalls made
// (an exec's wait, file syscalls, the start) stays for good. TrimThreads
// ends the idle ones: a goroutine that exits while locked to its thread
// ends that thread, and the runtime hands its P to an idle thread.

// threadSettle bounds how long TrimThreads waits for an ended thread to
// leave /proc/self/task.
const threadSettle = 20 * time.Millisecond

// TrimThreads ends idle OS threads of this process until it has at most
// max, and returns how many it has then. It stops early when ending one
// gains nothing (no thread is idle: the runtime made a new one to run
// goroutines on), so it is cheap to call when nothing can be trimmed.
// Call it from a goroutine not locked to its thread.
func TrimThreads(max int) (int, error) {
	n, err := CountThreads()
	for misses := 0; err == nil && n > max && misses < trimMisses; {
		ended := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer close(ended)
			if !childless() {
				// Its children would pass to the main thread, whose orphan
				// reaper would take their exit status from the goroutine
				// waiting for them (an exec's answer lost): keep it.
				runtime.UnlockOSThread()
				return
			}
			// Returns locked: the runtime ends this thread.
		}()
		<-ended
		m := n
		for deadline := time.Now().Add(threadSettle); m >= n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			if m, err = CountThreads(); err != nil {
				return n, err
			}
		}
		if m >= n {
			misses++ // the runtime started a thread as one ended
		} else {
			misses = 0
		}
		n = m
	}
	return n, err
}

// childless reports whether the calling thread has no child process. A
// thread's children are its own (a thread that forks an exec's command is
// its parent, not the process): were it to end, Linux would give them to
// another thread of the process, the main thread first, which reaps
// orphans. Only this thread can add to its children, and it is busy here.
// Unknown counts as not childless.
func childless() bool {
	b, err := os.ReadFile("/proc/thread-self/children")
	return err == nil && len(bytes.TrimSpace(b)) == 0
}

// trimMisses is how many endings in a row that gain nothing make
// TrimThreads stop: the first can be undone by the runtime waking a
// thread to run the goroutine that waits for it.
const trimMisses = 3

// CountThreads is the number of this process's threads.
func CountThreads() (int, error) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("count threads: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("count threads: %w", err)
	}
	return len(names), nil
}
