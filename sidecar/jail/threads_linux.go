package jail

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// An idle jail's sidecar should hold four threads (issue 27): the main
// thread, locked in ReapOrphans; the runtime's sysmon; its template
// thread (which any runtime.LockOSThread starts); and one thread that runs
// goroutines and waits in the netpoller. The runtime never ends an idle
// thread by itself, so every thread a burst of blocking syscalls made
// (an exec's wait, file syscalls, the start) stays for good. TrimThreads
// ends the idle ones: a goroutine that exits while locked to its thread
// ends that thread, and the runtime hands its P to an idle thread.

// threadGone bounds how long TrimThreads waits for a thread it ended to
// leave /proc/self/task: the thread exits once the kernel runs it again,
// which on a loaded host can take a while; a thread still there by then
// counts as one that could not be ended.
const threadGone = time.Second

// TrimThreads ends idle OS threads of this process until it has at most
// max, and returns how many it has then. It stops early when ending one
// gains nothing (no thread is idle: the runtime made a new one to run
// goroutines on), so it is cheap to call when nothing can be trimmed.
// Call it from a goroutine not locked to its thread.
func TrimThreads(max int) (int, error) {
	release := make(chan struct{})
	defer close(release)
	n, err := CountThreads()
	for misses := 0; err == nil && n > max && misses < trimMisses; {
		ended := make(chan int, 1)
		go endThread(ended, release)
		tid := <-ended
		if tid != 0 {
			// Counted once it is gone, not after a fixed time: a slow exit
			// is not the runtime starting a thread in its place.
			waitThreadGone(tid)
		}
		m, err := CountThreads()
		if err != nil {
			return n, err
		}
		switch {
		case tid == 0:
			// Kept, and held until we return: the next goroutine runs on
			// another thread, not on this one again.
		case m >= n:
			misses++ // the runtime started a thread as one ended
		default:
			misses = 0
		}
		n = m
	}
	return n, err
}

// endThread ends the thread it runs on and sends its id on ended, or
// sends 0 and holds the thread until release is closed if it must stay:
// the main thread (the runtime would park it for good), or a thread with
// children (they would pass to the main thread, whose orphan reaper would
// take their exit status from the goroutine waiting for them: an exec's
// answer lost).
func endThread(ended chan<- int, release <-chan struct{}) {
	runtime.LockOSThread()
	if tid := unix.Gettid(); tid != unix.Getpid() && childless() {
		ended <- tid
		return // locked: the runtime ends this thread
	}
	ended <- 0
	<-release
	runtime.UnlockOSThread()
}

// waitThreadGone waits, at most threadGone, until thread tid of this
// process has exited.
func waitThreadGone(tid int) {
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	for deadline := time.Now().Add(threadGone); time.Now().Before(deadline); {
		if _, err := os.Lstat(task); errors.Is(err, fs.ErrNotExist) {
			return
		}
		time.Sleep(time.Millisecond)
	}
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
