package jail

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

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
	task := []byte(fmt.Sprintf("/proc/self/task/%d\x00", tid))
	for deadline := time.Now().Add(threadGone); time.Now().Before(deadline); {
		_, _, e := syscall.RawSyscall6(unix.SYS_FACCESSAT, cwd(), uintptr(unsafe.Pointer(&task[0])), unix.F_OK, 0, 0, 0)
		if e == unix.ENOENT {
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
	fd, e := rawOpen(threadChildren)
	if e != 0 {
		return false
	}
	defer rawClose(fd)
	var b [64]byte
	for {
		n, e := rawRead(unix.SYS_READ, fd, b[:])
		switch {
		case e != 0:
			return false
		case n == 0:
			return true // empty, or blanks alone
		case len(bytes.TrimSpace(b[:n])) > 0:
			return false
		}
	}
}

// trimMisses is how many endings in a row that gain nothing make
// TrimThreads stop: the first can be undone by the runtime waking a
// thread to run the goroutine that waits for it.
const trimMisses = 3

// CountThreads is the number of this process's threads.
func CountThreads() (int, error) {
	fd, e := rawOpen(taskDir)
	if e != 0 {
		return 0, fmt.Errorf("count threads: open /proc/self/task: %w", e)
	}
	defer rawClose(fd)
	n := 0
	var buf [2048]byte
	for {
		got, e := rawRead(unix.SYS_GETDENTS64, fd, buf[:])
		switch {
		case e != 0:
			return 0, fmt.Errorf("count threads: read /proc/self/task: %w", e)
		case got == 0:
			return n, nil
		}
		_, entries, _ := unix.ParseDirent(buf[:got], -1, nil) // without "." and ".."
		n += entries
	}
}

// The trimmer's own system calls (CountThreads, childless,
// waitThreadGone) are raw: the runtime does not know of them, so they
// never hand the one P off. A call it knows of (os.ReadFile, say) leaves
// the P in a syscall state, and on a loaded host sysmon takes the P from
// it and, when no thread idles, starts a new one to run it (the runtime's
// handoffp). When that was the last count's own call, the count missed
// the thread it made, the trimmer stopped at "four" and a fifth thread
// stayed for good: 1-2 of 40 sidecars made under load (issue 27 item 4,
// TestIdleThreadsUnderLoad in server/local). They are calls on /proc that
// never block.
var (
	taskDir        = []byte("/proc/self/task\x00")
	threadChildren = []byte("/proc/thread-self/children\x00")
)

// rawOpen opens a NUL-terminated path read-only without the runtime.
func rawOpen(path []byte) (int, syscall.Errno) {
	for {
		fd, _, e := syscall.RawSyscall6(unix.SYS_OPENAT, cwd(), uintptr(unsafe.Pointer(&path[0])),
			unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
		if e != unix.EINTR {
			return int(fd), e
		}
	}
}

// cwd is AT_FDCWD as a system call's argument (a negative constant does
// not convert to uintptr).
func cwd() uintptr {
	fd := unix.AT_FDCWD
	return uintptr(fd)
}

// rawRead is read(2) or getdents64(2), by trap, into b without the
// runtime, retried on EINTR.
func rawRead(trap uintptr, fd int, b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != unix.EINTR {
			return int(n), e
		}
	}
}

func rawClose(fd int) {
	_, _, _ = syscall.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// ReaperAsleep reports whether this process's main thread is asleep in
// ReapOrphans (in wait4 or ppoll), read from its /proc syscall file. Each
// time the reaper goes back to sleep the runtime hands the one P it held
// to another thread, and starts a new thread for it when none idles
// (handoffp); a trim that ran before that, while the reaper was still
// awake, missed the thread, which then stayed for good (issue 27 item 4).
// A goroutine that finds the reaper asleep holds the one P, so that
// handoff is behind it (with GOMAXPROCS 1, a jail's sidecar's).
func ReaperAsleep() bool {
	path := []byte(fmt.Sprintf("/proc/self/task/%d/syscall\x00", unix.Getpid()))
	fd, e := rawOpen(path)
	if e != 0 {
		return false
	}
	defer rawClose(fd)
	var b [16]byte
	n, e := rawRead(unix.SYS_READ, fd, b[:])
	if e != 0 {
		return false
	}
	nr, _, _ := bytes.Cut(b[:n], []byte(" "))
	return string(nr) == strconv.Itoa(unix.SYS_PPOLL) || string(nr) == strconv.Itoa(unix.SYS_WAIT4)
}
