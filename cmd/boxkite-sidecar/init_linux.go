package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/sidecar/jail"
	"golang.org/x/sys/unix"
)

// init keeps the main goroutine on the process's first thread, its
// leader, for runInit: the runtime unlocks it after the package inits, and
// from then until runInit locks a thread the goroutine can move to another
// (it did in about one jail in thirty under load, issue 27). A jail's init
// must reap on the leader: the kernel gives orphans to the pid namespace's
// child reaper, the leader thread, and jail.ReapOrphans waits with
// __WNOTHREAD for the calling thread's children alone, so on any other
// thread orphans would stay zombies, and the idle leader was a fifth thread
// TrimThreads cannot end. run unlocks it for the other commands. Only an
// init function runs on the leader for certain.
func init() { runtime.LockOSThread() }

// serveEnv is the sidecar server's environment inside the jail.
var serveEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"}

// runInit is PID 1 of a jail: build it, drop privileges, then serve and
// reap. A static binary does both in this one process (serveAsInit); one
// linked with cgo cannot lock down every thread, so it runs `serve` as its
// only child, started from the locked-down thread, and reaps every orphan
// with wait4(-1) (jail.Init). An image build runs its steps that way too.
//
// With --claimable the sidecar waits in a driver's warm pool: it serves
// POST /claim, which swaps the pool's token for the sandbox's own.
func runInit(args []string) (int, error) {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	claimable := fs.Bool("claimable", false, "serve POST /claim (a warm pool's sidecar)")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	// Lockdown's capability and no_new_privs changes are per thread; serve
	// is forked from this one.
	runtime.LockOSThread()
	l, err := jail.ReadLaunch()
	if err != nil {
		return 0, err
	}
	if err := jail.Setup(l); err != nil {
		return 0, err
	}
	if l.Spec.Build == nil {
		// Every thread in the jail's cgroup namespace: born there
		// (l.CgroupNS), or moved with an all-thread call. The first
		// all-thread call (that, or serveAsInit's lockdown) is the probe:
		// it fails, changing nothing but the process's rlimits and
		// dumpable flag, which Lockdown sets alike, only in a binary
		// linked with cgo.
		var err error
		if !l.CgroupNS {
			err = jail.ShareCgroupNamespace()
		}
		if err == nil {
			err = serveAsInit(l, *claimable)
		}
		if !errors.Is(err, jail.ErrThreadsUnreachable) {
			return 0, err
		}
	}
	if err := jail.Lockdown(l.Spec); err != nil {
		return 0, err
	}
	if l.Spec.Build != nil {
		return runBuild(l.Spec.Build)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("create token pipe: %w", err)
	}
	// A token is far smaller than a pipe buffer, so this cannot block.
	_, err = w.WriteString(l.Token)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("write token: %w", err)
	}
	if l.ListenFD <= 0 {
		return 0, errors.New("read launch: no listener for the sidecar")
	}
	// The driver made the socket outside the jail; serve gets it as fd 4.
	ln := os.NewFile(uintptr(l.ListenFD), "listener")
	argv := append([]string{"boxkite-sidecar", "serve", "--listen", "fd:4", "--token-fd", "3"}, jailServeArgs(l, claimable)...)
	// /proc/self/exe still reaches this binary after pivot_root, though no
	// path inside the jail names it; in an image, the host's loader runs
	// it (jail.LoaderDir).
	path, argv := jail.ServeCommand(argv)
	// The start's blocking calls (mounts, reads of /proc, the lockdown)
	// left the threads the runtime made meanwhile, more the higher the
	// host's load (13-17 per sandbox in the two processes at load 15,
	// issue 27); init is idle from here, so end them, as serve does after
	// its requests (--idle-threads). Safe while serve runs: it is a child
	// of this locked main thread, which is never ended, and the others
	// are ended only while they have no child (jail.TrimThreads).
	newThreadTrimmer(jailThreads, func() {}, nil)
	// serve runs with one P, as serveAsInit does: fewer threads.
	env := append(slices.Clip(serveEnv), "GOMAXPROCS="+strconv.Itoa(jailMaxProcs))
	code, err := jail.Init(path, argv, env, []*os.File{r, ln})
	if errors.Is(err, os.ErrNotExist) {
		err = explainLoader(err)
	}
	return code, err
}

// jailServeArgs are serve's flags in a jail, but for --listen and
// --token-fd.
func jailServeArgs(l jail.Launch, claimable *bool) []string {
	argv := []string{
		"--workspace", jail.WorkspaceDir,
		"--run-as", strconv.Itoa(l.Spec.UID) + ":" + strconv.Itoa(l.Spec.GID),
		"--nested-userns=" + strconv.FormatBool(l.Spec.Nested()),
		"--max-exec-count=" + strconv.Itoa(l.Spec.MaxExecCount),
		"--max-exec-seconds=" + strconv.Itoa(l.Spec.MaxExecSeconds),
		"--claimable=" + strconv.FormatBool(*claimable),
		"--idle-threads=" + strconv.Itoa(jailThreads),
	}
	// The driver made the egress socket before the jail started when it
	// granted egress; only then does the sidecar forward to it.
	if egress := jail.RunDir + "/" + jail.EgressSocketName; socketExists(egress) {
		argv = append(argv, "--egress-socket", egress)
	}
	return argv
}

// serveAsInit is the jail's one process: init and sidecar at once, with no
// second start of this binary (the second start was two thirds of a cold
// create; issue 27). Call it once every thread is in the jail's cgroup
// namespace (runInit). It locks every thread down (jail.LockdownProcess),
// serves on the driver's listener from the other goroutines and reaps
// orphans on the main thread (jail.ReapOrphans), which it never leaves.
// Only a binary without cgo can lock every thread down: in the others it
// returns the lockdown's jail.ErrThreadsUnreachable, having served
// nothing, and runInit keeps the two-process start for them.
func serveAsInit(l jail.Launch, claimable bool) error {
	if l.ListenFD <= 0 {
		return errors.New("read launch: no listener for the sidecar")
	}
	if tid, pid := unix.Gettid(), unix.Getpid(); tid != pid {
		return fmt.Errorf("reap orphans: on thread %d, not the leader %d (see init)", tid, pid)
	}
	// Every thread is in the jail's cgroup namespace (runInit).
	if err := jail.LockdownProcess(l.Spec); err != nil {
		return err
	}
	for _, kv := range serveEnv {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	if os.Getenv("GOMAXPROCS") == "" {
		// Few threads for an idle sandbox; the commands do the work.
		// jail.Start sets it in init's environment already: changing it
		// now stops the world and frees a P's caches (page faults).
		runtime.GOMAXPROCS(jailMaxProcs)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var f serveFlags
	f.listen = "fd:" + strconv.Itoa(l.ListenFD)
	bindServeFlags(fs, &f)
	if err := fs.Parse(jailServeArgs(l, &claimable)); err != nil {
		return err
	}
	trim := newThreadTrimmer(jailThreads, wakeReaper, jail.ReaperAsleep)
	_, errc, err := startServing(f, l.Token, trim.connState)
	if err != nil {
		return err
	}
	go func() {
		err := <-errc
		fmt.Fprintf(os.Stderr, "boxkite-sidecar init: serve: %v\n", err)
		os.Exit(1)
	}()
	// Each reaper wake leaves a spare thread behind (see threadTrimmer).
	jail.ReapOrphans(reapWake, func() { trim.after(trimAfterWake) }) // on the locked main thread, for good
	return nil
}

// reapWake bounds how long an orphan can stay a zombie when the reaper,
// asleep with no child, missed its exit (jail.ReapOrphans) and no request
// came since; a reaper with a child waits for it in wait4 and misses
// nothing. Each wake costs an idle sidecar a thread start and end: ~2 ms
// of CPU on this guest under load, which at 5 s had 2,000 idle sandboxes
// saturate two cores (issue 27 item 4, BENCHMARKS.md session 9).
const reapWake = 10 * time.Minute

// jailThreads is the threads an idle jail's sidecar keeps (issue 27: at
// most four per idle sandbox): its main thread reaping orphans, sysmon,
// the runtime's template thread and one running goroutines.
const jailThreads = 4

// trimDelay is how long after its last request ended the sidecar ends
// the threads that request left idle.
const trimDelay = time.Second

// trimAfterWake is how long after the orphan reaper's wake the sidecar
// ends the thread that wake made: by then the runtime has handed the
// sleeping main thread's P off.
const trimAfterWake = 100 * time.Millisecond

// threadTrimmer ends a jail sidecar's idle threads (jail.TrimThreads) a
// while after each request and each reaper wake, and once after the
// start; an idle sidecar is not woken for it. Each wake of the reaper
// leaves a spare thread: the main thread's P is handed off as it sleeps
// again, and with GOMAXPROCS 1 the runtime starts a spinning thread for
// it, which then idles for good.
//
// The trim after requests also returns the heap's free pages to the host
// (debug.FreeOSMemory: a collection, then every free page released) once
// that pays (heapWorthFreeing). A sidecar that ran 60 small execs held
// 4.3 MiB anonymous memory idle, 2.4 MiB with this (issue 27 item 4): its
// live heap is ~220 KiB, but the runtime collects only at its 4 MiB
// minimum goal and keeps the pages under that goal, so a used sidecar
// idled with its garbage and spare pages resident. The next request
// faults a few more pages in (12-20 faults, 8-15 before). The reaper's wakes
// (reapWake) do not free: they allocate nothing, and a collection each
// wake in every idle sandbox would be CPU for nothing.
//
// That trim also wakes the orphan reaper (wakeReaper), once per burst of
// requests: an exec's orphans are reparented to it as the exec's shell
// exits, which wakes nothing, and a reaper asleep with no child relies on
// each orphan's SIGCHLD to learn of its exit, which can be missed
// (jail.ReapOrphans). Woken, it finds them and waits for them in wait4.
//
// A trim counts as done only once the reaper is back asleep
// (jail.ReaperAsleep): as it goes back to sleep the runtime hands its P
// to another thread, starting one when none idles, and a trim that ran
// before (a reaper held up past the trim's 100 ms on a loaded host) would
// leave that thread for good. Nor does a trim make a thread itself after
// its last count (jail.CountThreads). Before both, 1-2 of 40 sidecars
// made under load kept a fifth thread (TestIdleThreadsUnderLoad in
// server/local; issue 27 item 4).
type threadTrimmer struct {
	mu     sync.Mutex
	max    int
	wake   func()      // wakes the orphan reaper
	asleep func() bool // whether the reaper sleeps; nil: there is none
	trim   *time.Timer
	freed  bool // no request ended since the heap was last returned
	tries  int  // trims since the last request or wake that left threads over max
}

// trimTries is how many times in a row the sidecar trims when threads
// stay over max: an ending thread hands its P to an idle thread, and when
// the only other one is blocked in the netpoller rather than idle, the
// runtime starts a new one in its place and TrimThreads gains nothing
// (jail.TrimThreads stops on that). A while later the netpoller's thread
// has run the timer and the other one idles, so a later trim gains. The
// retries back off from trimAfterWake, doubling (100 ms ... 12.8 s, 25 s
// in all): on a loaded host five retries 100 ms apart all fell in a
// stretch where no thread idled, and the spare thread stayed until the
// next request (CI, stop 39), while a few more tries spread over seconds
// cost an idle sidecar nothing it would notice.
const trimTries = 8

func newThreadTrimmer(max int, wakeReaper func(), reaperAsleep func() bool) *threadTrimmer {
	t := &threadTrimmer{max: max, wake: wakeReaper, asleep: reaperAsleep}
	t.trim = time.AfterFunc(trimDelay, t.run)
	return t
}

// run trims the threads and, if a request ended (or the sidecar started)
// since it last did, returns the heap's free pages and wakes the reaper.
// It tries again later while threads stay over max or the reaper was
// awake as it began.
func (t *threadTrimmer) run() {
	asleep := t.asleep == nil || t.asleep()
	n, err := jail.TrimThreads(t.max)
	t.mu.Lock()
	free := !t.freed
	t.freed = true
	if err == nil && (n > t.max || !asleep) && t.tries < trimTries {
		t.trim.Reset(trimAfterWake << t.tries)
		t.tries++
	}
	t.mu.Unlock()
	if !free {
		return
	}
	if heapWorthFreeing() {
		debug.FreeOSMemory()
	}
	t.wake()
}

// wakeReaper ends the orphan reaper's sleep on this process's main
// thread with a SIGCHLD, as an orphan's exit would (a thread-directed
// signal reaches that thread alone). In a wait4 the signal does nothing.
func wakeReaper() {
	pid := os.Getpid()
	_ = unix.Tgkill(pid, pid, unix.SIGCHLD)
}

// freeAnonAbove is the anonymous memory above which an idle sidecar that
// never collected returns its heap: a 1.5 MiB heap and the ~0.3 MiB the
// runtime holds besides. The first collection costs ~400 KiB of the
// runtime's own (mark bits, work buffers) for good, and leaves ~0.7 MiB
// of heap: a sidecar fresh from its start and one exec holds a ~0.9 MiB
// heap, ~1.2 MiB anonymous memory in all, and held 1.6 MiB after a
// collection.
const freeAnonAbove = 1800 << 10

// heapWorthFreeing reports whether returning the heap gains more than it
// costs: a collection has run already (its cost is paid), or the
// process's anonymous memory outgrew freeAnonAbove. It reads neither
// runtime/metrics, whose init builds its table of descriptions (~15 KiB
// of strings, ~8 page faults) in every start of this binary (issue 27),
// nor runtime.ReadMemStats, which flushes every cache of the allocator:
// a sidecar that read it once after one exec idled with ~0.5 MiB more.
func heapWorthFreeing() bool {
	var gc debug.GCStats
	debug.ReadGCStats(&gc)
	if gc.NumGC > 0 {
		return true
	}
	anon, err := anonymousMemory()
	return err == nil && anon > freeAnonAbove
}

// anonymousMemory is the process's resident anonymous memory in bytes
// (/proc/self/statm: resident less file-backed and shared pages).
func anonymousMemory() (int, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, fmt.Errorf("read statm: %q", b)
	}
	resident, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, fmt.Errorf("read statm: %w", err)
	}
	shared, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, fmt.Errorf("read statm: %w", err)
	}
	return (resident - shared) * os.Getpagesize(), nil
}

// idleTrim is the serve command's http.Server.ConnState for
// --idle-threads max: a threadTrimmer's, or nil when max is 0. It wakes no
// reaper: serve runs under a jail's init (the two-process start of a
// binary linked with cgo), which reaps the orphans itself (jail.Init).
func idleTrim(max int) func(net.Conn, http.ConnState) {
	if max <= 0 {
		return nil
	}
	return newThreadTrimmer(max, func() {}, nil).connState
}

// after makes the next trim happen after d.
func (t *threadTrimmer) after(d time.Duration) {
	t.mu.Lock()
	t.tries = 0
	t.trim.Reset(d)
	t.mu.Unlock()
}

// connState is the sidecar server's http.Server.ConnState: a connection
// that goes idle or closes ended a request.
func (t *threadTrimmer) connState(_ net.Conn, state http.ConnState) {
	if state == http.StateIdle || state == http.StateClosed {
		t.mu.Lock()
		t.freed = false
		t.tries = 0
		t.trim.Reset(trimDelay)
		t.mu.Unlock()
	}
}

// jailMaxProcs is GOMAXPROCS of a jail's sidecar (serveAsInit) unless the
// environment sets it.
const jailMaxProcs = 1

// explainLoader turns the bare ENOENT of executing a dynamically linked
// sidecar in an image root without its loader (a musl or distroless
// image, say) into an error that says so.
func explainLoader(err error) error {
	interp, _, ferr := jail.ELFDeps("/proc/self/exe")
	if ferr != nil || interp == "" {
		return err
	}
	if _, serr := os.Stat(interp); serr == nil {
		return err
	}
	return fmt.Errorf("%w: boxkite-sidecar is dynamically linked and this root has no %s; "+
		"build it with CGO_ENABLED=0 to boot images without glibc", err, interp)
}

// runBuild runs an image build's steps in order, each as init's one child
// (so init still reaps whatever a package script leaves behind), and
// returns the first failing step's status. Their output goes to init's
// own stdout and stderr: the build log.
func runBuild(b *jail.Build) (int, error) {
	for _, kv := range b.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			// exec.LookPath reads this process's PATH.
			if err := os.Setenv("PATH", v); err != nil {
				return 0, err
			}
		}
	}
	for _, argv := range b.Steps {
		fmt.Printf("$ %s\n", strings.Join(argv, " "))
		path, err := exec.LookPath(argv[0])
		if err != nil {
			return 0, fmt.Errorf("build step %s: %w", argv[0], err)
		}
		code, err := jail.Init(path, argv, b.Env, nil)
		if err != nil {
			return 0, fmt.Errorf("build step %s: %w", argv[0], err)
		}
		if code != 0 {
			fmt.Fprintln(os.Stderr, jail.StepFailed(argv[0], code))
			return code, nil
		}
	}
	return 0, nil
}

// socketExists reports whether path is a socket (not following a link).
func socketExists(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().Type() == os.ModeSocket
}

// runSpawner clones jails for the local driver (jail.Spawner); args is
// the binary those jails execute, when given.
func runSpawner(args []string) error {
	if len(args) > 1 {
		return errors.New("usage: boxkite-sidecar spawner [PATH]")
	}
	return jail.ServeSpawner(strings.Join(args, ""))
}

// runSkeletonProc mounts the spawner's skeleton proc: the helper runs it
// as the only process of a new PID namespace (jail.ServeSkeletonProc).
func runSkeletonProc(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: boxkite-sidecar skeleton-proc DIR")
	}
	return jail.ServeSkeletonProc(args[0])
}
