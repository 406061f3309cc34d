package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A Spawner starts jails (Spawner.Start) from a small helper process, the
// sidecar binary run as `boxkite-sidecar spawner`, instead of from the
// caller. A jail's clone makes a new user namespace, which rules out
// CLONE_VM|CLONE_VFORK, so a jail started from the caller is a full fork
// of it: the kernel copies its page tables while holding its mmap lock
// (every page fault of every other thread waits), and each page the
// caller then writes takes a copy-on-write fault. For a server of
// hundreds of MiB serving many creates at once that cost grows with its
// size; the helper's address space is a few MiB whatever the server's.
//
// The helper clones with CLONE_PARENT, so each jail is the caller's child
// exactly as if the caller had cloned it: the caller waits for it (the
// Process Start sets in cmd), signals it, and a restarted caller adopts
// it as before. The helper holds no secret: the caller hands it, over a
// socket only the two share, the jail's argv, environment and spec and
// its descriptors (SCM_RIGHTS), and it answers with the pid. It runs as
// the caller (root), with the caller's capabilities, takes the range's
// owner ids for the clone as startOwned does, and ends when the caller's
// end of the socket closes (Close, or the caller's death).
//
// A jail whose exec fails after the clone (a broken host: no memory, no
// descriptor left) stays a zombie child of the caller, which never learns
// its pid, until the caller exits: the helper cannot reap the caller's
// children. So does one a helper cloned and died before answering for:
// the caller, which cannot tell whether the request was served, starts
// the jail again on a new helper (cloneLaunched) and that one ends at
// once, its launch pipe closed.
//
// The helper clones each jail from its skeleton root (skeleton_linux.go),
// whose root the jail's Setup covers with MS_MOVE and chroot rather than
// pivot_root, which walks every thread of the host.
//
// Builds and nested jails (Spec.Build, Spec.Nested) start from the caller
// as before, and pivot_root: a build's jail shares the caller's network
// namespace and dies with the caller's thread, and an unprivileged caller
// maps its own ids. So do jails that need from the host what the skeleton
// lacks (skeletonServes): other system binds, or an image booted by a
// dynamically linked sidecar. A closed Spawner's jails too: the caller's
// namespace has no skeleton, and these are rare, so they keep the walk.
type Spawner struct {
	path    string      // the sidecar binary
	dynamic func() bool // whether it is dynamically linked (skeletonServes)

	mu      sync.Mutex
	conn    *os.File      // our end of the helper's socket; nil until started
	devNull *os.File      // the standard descriptors a cmd leaves nil
	exited  chan struct{} // closed once the helper is reaped
	pid     int           // the helper's
	closed  bool          // by Close: jails start from the caller again
}

// Bounds of one request: the document (argv, environment, spec) and the
// descriptors: the reply pipe, three standard ones, the jail's extras.
const (
	maxSpawnRequest = 64 << 10
	maxSpawnFDs     = 64
	spawnerConnFD   = 3 // the helper's end of the socket
)

// spawnRequest is what the helper needs to clone a jail; the descriptors
// ride along: the reply pipe first, then the child's 0, 1, 2 and extras.
type spawnRequest struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	Spec Spec     `json:"spec"`
	// NetNS: the last descriptor is Spec.NetNS, which the helper enters
	// to clone the jail there (inNetNS); it is not the jail's.
	NetNS bool `json:"netns,omitempty"`
	// Cgroup is Spec.CgroupDirs, the cgroup the helper's clone places the
	// jail in: the helper opens them itself (it sees /sys whole, and runs
	// as root), sparing the caller the opens and the descriptors' passage.
	Cgroup []string `json:"cgroup,omitempty"`
}

type spawnReply struct {
	PID int    `json:"pid,omitempty"`
	Err string `json:"error,omitempty"`
}

// NewSpawner returns a Spawner that runs sidecarPath as its helper. The
// helper starts with the first jail, or with Prepare.
func NewSpawner(sidecarPath string) *Spawner {
	return &Spawner{path: sidecarPath, dynamic: dynamicBinary(sidecarPath)}
}

// Prepare starts the helper now, so the first jail does not wait for it.
func (s *Spawner) Prepare() error {
	_, _, err := s.helper()
	return err
}

// Start is jail.Start, with the clone made by the helper (see Spawner).
// cmd's Stdin, Stdout and Stderr must be files or nil.
func (s *Spawner) Start(cmd *exec.Cmd, spec Spec, token string, listener *os.File, started func(pid int) error) error {
	if spec.Build != nil || spec.Nested() || s.isClosed() || !skeletonServes(spec, s.dynamic) {
		return Start(cmd, spec, token, listener, started)
	}
	return start(cmd, spec, token, listener, started, s.launch)
}

// Close ends the helper; later jails start from the caller itself. Jails
// it started are not affected. A nil Spawner may be closed.
func (s *Spawner) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn != nil {
		s.stopLocked()
	}
	return nil
}

func (s *Spawner) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// launch has the helper clone cmd's jail and sets cmd.Process.
func (s *Spawner) launch(cmd *exec.Cmd, spec Spec) error {
	req, err := encodeBounded(spawnRequest{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Spec: spec, NetNS: spec.NetNS != nil, Cgroup: spec.CgroupDirs}, maxSpawnRequest, "spawn request")
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create spawn reply pipe: %w", err)
	}
	defer r.Close()
	conn, err := s.send(req, w, cmd, spec.NetNS)
	// The helper holds its own copy; with ours closed, a helper that dies
	// before answering reads as the end of the pipe.
	_ = w.Close()
	if err != nil {
		return err
	}
	var rep spawnReply
	if err := json.NewDecoder(io.LimitReader(r, 4<<10)).Decode(&rep); err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read spawner's answer: %w", err)
		}
		// The helper answers every request it reads, so it died with ours
		// unanswered: killed before it read it (a dying helper's socket
		// takes requests until its last thread is gone), or after it
		// cloned the jail. Drop it, so the next request starts another.
		s.forget(conn)
		return errSpawnerDied
	}
	if rep.Err != "" {
		return errors.New(rep.Err)
	}
	p, err := os.FindProcess(rep.PID) // our child (CLONE_PARENT): a pidfd
	if err != nil {
		return fmt.Errorf("find spawned jail %d: %w", rep.PID, err)
	}
	cmd.Process = p
	return nil
}

// errSpawnerDied: the helper ended without answering a request, which it
// may or may not have served. start retries with a new launch pipe, so a
// jail it did clone reads the end of its old one and exits.
var errSpawnerDied = errors.New("the jail spawner's helper died before answering")

// send writes one request to the helper with its descriptors, starting
// the helper first if it is not running, or again once if it has died,
// and returns the socket it went to.
func (s *Spawner) send(req []byte, reply *os.File, cmd *exec.Cmd, netns *os.File) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		conn, devNull, err := s.helper()
		if err != nil {
			return nil, err
		}
		fds, err := childFDs(reply, devNull, cmd, netns)
		if err != nil {
			return nil, err
		}
		rc, err := conn.SyscallConn()
		if err != nil {
			return nil, fmt.Errorf("send spawn request: %w", err)
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.Sendmsg(int(fd), req, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
		}); err != nil {
			serr = err
		}
		if serr == nil {
			return conn, nil
		}
		dead := errors.Is(serr, unix.EPIPE) || errors.Is(serr, unix.ECONNRESET) || errors.Is(serr, os.ErrClosed)
		if !dead || attempt > 0 {
			return nil, fmt.Errorf("send spawn request: %w", serr)
		}
		s.forget(conn) // the helper died: the request was not received
	}
}

// childFDs lists the request's descriptors: the reply pipe, then the
// child's standard ones (nil ones /dev/null, as os/exec does) and extras,
// then the network namespace to clone it in, if any (spawnRequest.NetNS).
// Like os/exec, it takes each file's descriptor with Fd.
func childFDs(reply, devNull *os.File, cmd *exec.Cmd, netns *os.File) ([]int, error) {
	fds, err := cmdFDs([]int{int(reply.Fd())}, devNull, cmd)
	if err == nil && netns != nil {
		fds = append(fds, int(netns.Fd()))
	}
	if err == nil && len(fds) > maxSpawnFDs {
		err = fmt.Errorf("spawn jail: %d descriptors, more than %d", len(fds), maxSpawnFDs)
	}
	return fds, err
}

// cmdFDs appends cmd's descriptors to fds: its standard ones (nil ones
// devNull, as os/exec does), then its extras.
func cmdFDs(fds []int, devNull *os.File, cmd *exec.Cmd) ([]int, error) {
	for _, std := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f := std.(type) {
		case nil:
			fds = append(fds, int(devNull.Fd()))
		case *os.File:
			fds = append(fds, int(f.Fd()))
		default:
			return nil, fmt.Errorf("spawn jail: standard streams must be files, not %T", std)
		}
	}
	for _, f := range cmd.ExtraFiles {
		if f == nil {
			return nil, errors.New("spawn jail: a nil extra file")
		}
		fds = append(fds, int(f.Fd()))
	}
	return fds, nil
}

// helper returns the running helper's socket, and the /dev/null that
// stands for a nil standard stream, starting the helper if needed.
func (s *Spawner) helper() (conn, devNull *os.File, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		return s.conn, s.devNull, nil
	}
	if s.closed {
		return nil, nil, errors.New("start spawner: closed")
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("start spawner: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "spawner"), os.NewFile(uintptr(pair[1]), "spawner")
	defer theirs.Close()
	devNull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		_ = ours.Close()
		return nil, nil, fmt.Errorf("start spawner: %w", err)
	}
	proc := &exec.Cmd{
		Path: s.path, Args: []string{"boxkite-sidecar", "spawner", s.path},
		Env: minimalEnv, Dir: "/",
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{theirs}, // fd 3, spawnerConnFD
		// A mount namespace of its own, private (os/exec marks / so),
		// which ServeSpawner trims (mountns_linux.go).
		SysProcAttr: &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS},
	}
	if err := proc.Start(); err != nil {
		_ = ours.Close()
		_ = devNull.Close()
		return nil, nil, fmt.Errorf("start spawner: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = proc.Wait()
		close(exited)
	}()
	s.conn, s.devNull, s.exited, s.pid = ours, devNull, exited, proc.Process.Pid
	return ours, devNull, nil
}

// forget drops conn's helper, which has died, so the next request starts
// another.
func (s *Spawner) forget(conn *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == conn {
		s.stopLocked()
	}
}

// stopLocked closes the helper's socket, which ends it, and reaps it.
func (s *Spawner) stopLocked() {
	_ = s.conn.Close()
	<-s.exited
	_ = s.devNull.Close()
	s.conn, s.devNull, s.exited, s.pid = nil, nil, nil, 0
}

// PID is the helper's pid, 0 when none runs (or s is nil).
func (s *Spawner) PID() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// ServeSpawner is the helper's side (`boxkite-sidecar spawner [PATH]`): it
// first trims its own mount namespace to what it reaches by path (self:
// PATH, the binary the caller's jails execute; see mountns_linux.go),
// makes the skeleton namespace its jails are cloned from
// (skeleton_linux.go), then
// reads requests from the socket on fd 3, each served on its own
// goroutine, until the caller closes its end, then waits for those in
// flight. Its caller keeps the main goroutine locked to the main thread:
// the threads that enter the skeleton (skeleton_linux.go) end with their
// goroutines, which the main thread cannot.
//
// The socket is read through the runtime's poller, on a goroutine of its
// own, while the locked main goroutine waits for it: a recvmsg blocked on
// the socket leaves its P in a system call, which sysmon retakes (the
// helper runs with GOMAXPROCS 1, so no P idles) and hands to a thread
// started or woken for it, once per request; and a locked goroutine
// parked on the poller hands its P off each time too (issue 27).
func ServeSpawner(self string) error {
	if _, err := unix.FcntlInt(spawnerConnFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return fmt.Errorf("serve spawner: fd %d: %w", spawnerConnFD, err)
	}
	if err := trimMounts(spawnerKeepTrees(), spawnerPaths(self)); err != nil {
		// Held mounts would pin what they hold (a loop device stays
		// attached until unmounted everywhere): no jail from here.
		return fmt.Errorf("serve spawner: %w", err)
	}
	// The host's /proc, for the jails' id maps: the clones' threads see
	// only the skeleton's (openProc).
	hostProc, err := os.OpenFile("/proc", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("serve spawner: %w", err)
	}
	defer hostProc.Close()
	// Jails are cloned from the skeleton (skeleton_linux.go).
	skeleton, err := makeSkeleton()
	if err != nil {
		return fmt.Errorf("serve spawner: %w", err)
	}
	h := helperNS{skeleton: skeleton, hostProc: hostProc}
	// Descriptors the server inherited without close-on-exec (from
	// whatever started it) reach this process past fd 3; marked so, they
	// never reach a jail's init, which gets exactly what a request sends.
	if err := unix.CloseRange(spawnerConnFD+1, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("serve spawner: mark inherited descriptors close-on-exec: %w", err)
	}
	if err := unix.SetNonblock(spawnerConnFD, true); err != nil {
		return fmt.Errorf("serve spawner: fd %d: %w", spawnerConnFD, err)
	}
	conn := os.NewFile(spawnerConnFD, "spawner") // non-blocking: on the poller
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("serve spawner: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- serveRequests(h, rc) }()
	return <-served
}

// serveRequests reads the spawner's requests from conn (ServeSpawner) and
// serves each on a goroutine of its own until the caller closes its end,
// then waits for those in flight.
func serveRequests(h helperNS, conn syscall.RawConn) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	buf := make([]byte, maxSpawnRequest)
	oob := make([]byte, unix.CmsgSpace(maxSpawnFDs*4))
	for {
		// MSG_CMSG_CLOEXEC: a request's descriptors must never reach
		// another request's jail, cloned meanwhile on another thread.
		var n, oobn, flags int
		var rerr error
		err := conn.Read(func(fd uintptr) bool {
			n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if err == nil {
			err = rerr
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("serve spawner: %w", err)
		}
		fds, err := parseRights(oob[:oobn])
		if n == 0 && len(fds) == 0 {
			return nil // the caller closed its end
		}
		if err == nil && flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			err = errors.New("request truncated")
		}
		if err == nil && len(fds) < 4 {
			err = fmt.Errorf("request with %d descriptors", len(fds))
		}
		if err != nil {
			if len(fds) > 0 {
				answer(fds[0], 0, fmt.Errorf("spawn jail: %w", err))
			}
			closeFDs(fds)
			continue
		}
		req := append([]byte(nil), buf[:n]...)
		wg.Go(func() { serveSpawn(h, req, fds) })
	}
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse descriptors: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("parse descriptors: %w", err)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// helperNS is what the helper's clones need of its namespaces.
type helperNS struct {
	skeleton int      // the skeleton's mount namespace (makeSkeleton)
	hostProc *os.File // the host's /proc, opened before the skeleton (openProc)
}

// serveSpawn clones one jail from the skeleton namespace; fds are the
// reply pipe, then the child's.
func serveSpawn(h helperNS, raw []byte, fds []int) {
	defer closeFDs(fds)
	var req spawnRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		answer(fds[0], 0, fmt.Errorf("spawn jail: decode request: %w", err))
		return
	}
	child := fds[1:]
	netns := -1
	if req.NetNS {
		if len(child) < 4 {
			answer(fds[0], 0, fmt.Errorf("spawn jail: request with %d descriptors and a network namespace", len(fds)))
			return
		}
		netns, child = child[len(child)-1], child[:len(child)-1]
	}
	pid, err := spawnJail(h, req, child, netns)
	answer(fds[0], pid, err)
}

// spawnJail clones one jail from fds (its 0, 1, 2 and extras), in the
// network namespace netns when it is not -1, from a thread in the
// skeleton namespace.
func spawnJail(h helperNS, req spawnRequest, fds []int, netns int) (int, error) {
	spec := req.Spec
	if spec.Build != nil || spec.Nested() {
		return 0, errors.New("spawn jail: builds and nested jails start from the driver")
	}
	if !skeletonServes(spec, selfDynamic) {
		return 0, errors.New("spawn jail: the skeleton lacks the jail's system binds")
	}
	if req.Dir == "" || !filepath.IsAbs(req.Dir) {
		// The clone's thread stands in the skeleton: its working
		// directory is no place to start in.
		return 0, fmt.Errorf("spawn jail: working directory %q", req.Dir)
	}
	if err := spec.validate(); err != nil {
		return 0, err
	}
	attr := sysProcAttr(spec)
	// The caller's child, not ours (see Spawner).
	attr.Cloneflags |= unix.CLONE_PARENT
	var place *cgroupPlace
	if len(req.Cgroup) > 0 {
		// As root, before asOwner (cgroup_place_linux.go).
		var err error
		if place, err = openCgroupPlace(req.Cgroup); err != nil {
			return 0, err
		}
		defer place.close()
	}
	var pid int
	owned := func() error {
		return asOwner(spec, func() (err error) {
			pid, err = forkJail(forkOptions{
				path: req.Path, argv: req.Args, env: req.Env, dir: req.Dir, files: fds,
				attr: attr, keep: SidecarCaps(false), place: place, hostProc: h.hostProc,
				cgroupNS: true, // never a build's or a nested jail's (above)
			})
			return err
		}, func() { _ = unix.Kill(pid, unix.SIGKILL) })
	}
	if netns >= 0 {
		attr.Cloneflags &^= unix.CLONE_NEWNET
	}
	err := inSkeleton(h.skeleton, netns, owned)
	return pid, err
}

// skeletonServes reports whether a jail of spec needs nothing from the
// host by path that the skeleton lacks: its system binds are the default
// ones, and a dynamically linked sidecar does not boot an image (whose
// loader init would clone from the host's paths). Spawner.Start starts
// the others from the caller.
// dynamic reports whether the sidecar binary is dynamically linked.
func skeletonServes(spec Spec, dynamic func() bool) bool {
	if spec.SystemBinds != nil && !slices.Equal(spec.SystemBinds, DefaultSystemBinds()) {
		return false
	}
	return spec.Image == "" || !dynamic()
}

// dynamicBinary reports whether the binary at path is dynamically linked;
// an unreadable one counts as dynamic.
func dynamicBinary(path string) func() bool {
	return sync.OnceValue(func() bool {
		interp, _, err := ELFDeps(path)
		return err != nil || interp != ""
	})
}

// selfDynamic is dynamicBinary of the helper's own binary, the one its
// jails run.
var selfDynamic = dynamicBinary("/proc/self/exe")

// answer writes the reply to the pipe fd; the caller closes fd.
func answer(fd, pid int, err error) {
	rep := spawnReply{PID: pid}
	if err != nil {
		rep = spawnReply{Err: err.Error()}
	}
	b, _ := json.Marshal(rep)
	_, _ = unix.Write(fd, b) // < PIPE_BUF: whole or not at all
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
