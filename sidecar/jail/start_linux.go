package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Descriptors init inherits. Fixed numbers keep argv free of anything but the
// subcommand.
const (
	launchFD     = 3 // read end of the pipe carrying the Launch document
	firstMountFD = 5 // detached mounts follow, in Launch.MountFDs order
	// fd 4 is the sidecar binary itself, opened by the caller: the jail's root
	// may not be allowed to walk the host path to it (e.g. /root/go/bin).
)

// maxLaunch bounds the Launch document so writing it to the pipe before the
// child runs can never block on a full pipe buffer.
const maxLaunch = 60 << 10

// cloneFlags are the namespaces every jail gets.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// minimalEnv is init's environment: never the driver's, which may hold secrets.
// GOMAXPROCS=1 from the runtime's start: a jail's sidecar serves with one P
// (cmd/boxkite-sidecar), and setting it once running stopped the world and
// freed a P's caches, ~60 of its start's page faults (issue 27). Commands
// never see it: the sidecar gives them an environment of their own.
var minimalEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GOMAXPROCS=1"}

// Start launches cmd as the init of a new jail described by spec. listener,
// when not nil, is a listening socket the caller made outside the jail:
// init hands it to the sidecar (Launch.ListenFD), which serves on it, so
// nothing of the control plane's channel is a path the jail could touch.
// cmd.Path is
// the boxkite-sidecar binary and cmd.Args its arguments (e.g. "init"); Start
// sets SysProcAttr, Dir and, when nil, Env. cmd.Stdin, cmd.Stdout and
// cmd.Stderr must be files or nil (a build's may be any writer): the jail
// is cloned from descriptors (forkJail), and it outlives the caller, so
// pipes to the caller would break. Files the
// caller puts in cmd.ExtraFiles are held by the jail's init, open, until it
// exits, and never reach the sidecar: a lock the driver takes on a file
// lasts as long as the jail (the local driver's uid range lease).
//
// With a host id range (spec.HostIDBase), the jail's user namespace is
// owned by the range's base uid, not by the caller (see startOwned), and
// the writable host directories are idmapped mounts through it, so what
// they hold on disk is owned by the ids the sandbox sees (see idmapData).
//
// With spec.CgroupDirs, the jail starts in that cgroup: its clone places
// it there before it runs anything (cgroup_place_linux.go), or, for a
// build or a nested jail, it is moved there (Cgroup.Add) before its launch
// document. A placement that fails fails the start.
//
// When started is not nil it runs with the new pid before init is handed
// its launch document, so nothing inside the jail has run yet (beyond its
// clone's own steps). If started fails, Start kills and
// reaps the jail and returns the error. Init exits, failing closed, if the
// caller dies before handing the document over.
//
// The jail is its own session with no parent-death signal, so it survives
// the caller being killed; stop it by killing its pid. The caller should
// still Wait for cmd to reap it.
func Start(cmd *exec.Cmd, spec Spec, token string, listener *os.File, started func(pid int) error) error {
	return start(cmd, spec, token, listener, started, startOwned)
}

// start is Start with the clone itself left to clone, which starts cmd
// (its SysProcAttr, ExtraFiles, Path, Dir and Env set) and sets
// cmd.Process: startOwned from this process, or a Spawner's.
func start(cmd *exec.Cmd, spec Spec, token string, listener *os.File, started func(pid int) error, clone func(*exec.Cmd, Spec) error) error {
	if err := spec.validate(); err != nil {
		return err
	}
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}()

	bin, err := os.Open(cmd.Path)
	if err != nil {
		return fmt.Errorf("open sidecar binary: %w", err)
	}
	closers = append(closers, bin)

	launch := Launch{Spec: spec, Token: token, CgroupNS: placesItself(spec)}
	mounts, err := detachHostDirs(spec)
	for _, m := range mounts {
		closers = append(closers, m.file)
	}
	if err != nil {
		return err
	}
	extra := []*os.File{nil, bin} // fd 3 filled below
	for i, m := range mounts {
		if launch.MountFDs == nil {
			launch.MountFDs = map[string]int{}
		}
		launch.MountFDs[m.target] = firstMountFD + i
		extra = append(extra, m.file)
	}
	if listener != nil {
		launch.ListenFD = launchFD + len(extra)
		extra = append(extra, listener)
	}
	extra = append(extra, cmd.ExtraFiles...) // held by init, see above

	doc, err := encodeBounded(launch, maxLaunch, "launch")
	if err != nil {
		return err
	}
	cmd.ExtraFiles = extra
	cmd.Path = fmt.Sprintf("/proc/self/fd/%d", launchFD+1)
	cmd.Dir = "/" // the server's cwd may be unreachable for the jail's root
	if cmd.Env == nil {
		cmd.Env = minimalEnv
	}
	cmd.SysProcAttr = sysProcAttr(spec)
	w, err := cloneLaunched(cmd, spec, clone, &closers)
	if err != nil {
		return err
	}
	err = idmapData(cmd.Process.Pid, mounts)
	if err == nil && len(spec.CgroupDirs) > 0 && !placesItself(spec) {
		err = Cgroup{Dirs: spec.CgroupDirs}.Add(cmd.Process.Pid)
	}
	if err == nil && started != nil {
		err = started(cmd.Process.Pid)
	}
	if err == nil {
		// The document fits the pipe buffer (maxLaunch), so this cannot
		// block even if init never reads.
		_, err = w.Write(doc)
		err = errors.Join(err, w.Close())
		if err != nil {
			err = fmt.Errorf("write launch: %w", err)
		}
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

func sysProcAttr(spec Spec) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: cloneFlags,
		// Its own session and no Pdeathsig: the jail must survive the server
		// being SIGKILLed, and a restarted server re-adopts it by pid.
		Setsid: true,
	}
	if spec.Build != nil {
		// The caller's network namespace (Build), and no life beyond the
		// thread that waits for it: nothing adopts a build.
		attr.Cloneflags &^= unix.CLONE_NEWNET
		attr.Pdeathsig = syscall.SIGKILL
	}
	if spec.NetNS != nil {
		attr.Cloneflags &^= unix.CLONE_NEWNET // cloned inside it (inNetNS)
	}
	if spec.Nested() {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false // an unprivileged writer must deny setgroups
		return attr
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: spec.HostIDBase, Size: IDRange}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: spec.HostIDBase, Size: IDRange}}
	attr.GidMappingsEnableSetgroups = true
	// The child keeps the host's root ids, unmapped in the new namespace
	// (so "nobody"), until it switches to the inside root, which also drops
	// the host root's supplementary groups.
	attr.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	return attr
}

type hostMount struct {
	target string
	file   *os.File
	idmap  bool // hostDir.idmap
}

// detachHostDirs clones the host directories bound into the jail as detached
// mounts, with their final attributes, while the caller can still reach them.
// Without the privilege to do so (an unprivileged driver) it returns nothing
// and init binds by path, which works because then the jail's root is the
// caller's own uid.
func detachHostDirs(spec Spec) ([]hostMount, error) {
	var out []hostMount
	for _, d := range hostDirs(spec) {
		flags, setFlags := uint(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC), uint(unix.AT_EMPTY_PATH)
		if d.recursive {
			flags |= unix.AT_RECURSIVE
			setFlags |= unix.AT_RECURSIVE
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, d.source, flags)
		if errors.Is(err, unix.EPERM) && len(out) == 0 {
			return nil, nil
		}
		if err != nil {
			return out, fmt.Errorf("clone mount of %s: %w", d.source, err)
		}
		out = append(out, hostMount{target: d.target, file: os.NewFile(uintptr(fd), d.source), idmap: d.idmap})
		if err := unix.MountSetattr(fd, "", setFlags, &unix.MountAttr{Attr_set: d.attrs}); err != nil {
			return out, fmt.Errorf("set attributes of %s: %w", d.source, err)
		}
	}
	return out, nil
}

// A hostDir is a host directory bound into the jail.
type hostDir struct {
	target, source string
	attrs          uint64
	recursive      bool // with the mounts below source
	// idmap marks the sandbox's data (see idmapData). Not the run dir,
	// which holds the host's sockets, nor an image: a built image's root
	// is overlays of the host's own system directories, whose root-owned
	// files (/etc/shadow) an idmap would hand to the jail's root (and
	// overlayfs cannot be idmapped anyway). Image files stay owned by ids
	// the jail does not map, readable as their mode allows.
	idmap bool
}

func hostDirs(spec Spec) []hostDir {
	if spec.Build != nil {
		// A build's root, writable; Setup splits it into top-level binds.
		// Not idmapped here: its layers are (server/images).
		return []hostDir{{target: imageStage, source: spec.Image, attrs: rwAttrs, recursive: true}}
	}
	dirs := []hostDir{{target: RunDir, source: spec.RunDir, attrs: runAttrs}}
	if spec.Image != "" {
		// Detached as a whole by the driver, which can reach its state dir;
		// Setup splits it into the top-level binds.
		// Recursive: a built image's root is made of overlay mounts.
		dirs = append(dirs, hostDir{target: imageStage, source: spec.Image, attrs: roAttrs, recursive: true})
	}
	if spec.Workspace != "" {
		dirs = append(dirs, hostDir{target: WorkspaceDir, source: spec.Workspace, attrs: rwAttrs, idmap: true})
	}
	if spec.Outputs != "" {
		dirs = append(dirs, hostDir{target: OutputsDir, source: spec.Outputs, attrs: rwAttrs, idmap: true})
	}
	for _, b := range spec.Binds {
		dirs = append(dirs, hostDir{target: b.Target, source: b.Source, attrs: rwAttrs, idmap: true})
	}
	return dirs
}

func (s Spec) validate() error {
	if s.ID == "" {
		return errors.New("validate jail spec: empty id")
	}
	if s.HostIDBase < 0 || (s.HostIDBase > 0 && s.HostIDBase < IDRange) {
		return fmt.Errorf("validate jail spec: host id base %d overlaps the host's own ids", s.HostIDBase)
	}
	if s.HostIDBase > MaxHostIDBase {
		return fmt.Errorf("validate jail spec: host id base %d leaves no room for %d ids", s.HostIDBase, IDRange)
	}
	if s.NetNS != nil && (s.Build != nil || s.Nested()) {
		return errors.New("validate jail spec: a network namespace made ahead is for a sandbox's jail with a host id range")
	}
	if s.Build != nil {
		return s.Build.validate(s)
	}
	required := map[string]string{"run dir": s.RunDir}
	if s.WorkspaceTmpfs <= 0 {
		required["workspace"] = s.Workspace
	} else if s.Workspace != "" || s.Outputs != "" {
		return errors.New("validate jail spec: a tmpfs workspace takes no workspace or outputs dir")
	}
	for name, p := range required {
		if p == "" || !filepath.IsAbs(p) {
			return fmt.Errorf("validate jail spec: %s %q is not an absolute path", name, p)
		}
	}
	if s.Image != "" && !filepath.IsAbs(s.Image) {
		return fmt.Errorf("validate jail spec: image %q is not an absolute path", s.Image)
	}
	if err := validateBinds(s.Binds); err != nil {
		return err
	}
	if s.Outputs != "" && !filepath.IsAbs(s.Outputs) {
		return fmt.Errorf("validate jail spec: outputs %q is not an absolute path", s.Outputs)
	}
	return nil
}

// cloneLaunched clones cmd's jail with a new launch pipe as its fd 3
// (cmd.ExtraFiles[0]) and returns the pipe's write end; both ends join
// closers. A spawner's helper that died with the request unanswered
// (errSpawnerDied) is replaced and the clone tried once more, with a new
// pipe: a jail the dead helper did clone is not known (a zombie child
// until the caller exits, as a failed exec's), and ends at once reading
// the closed end of its own pipe, never a launch document meant for
// another.
func cloneLaunched(cmd *exec.Cmd, spec Spec, clone func(*exec.Cmd, Spec) error, closers *[]io.Closer) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("create launch pipe: %w", err)
		}
		*closers = append(*closers, r, w)
		cmd.ExtraFiles[0] = r
		err = clone(cmd, spec)
		if err == nil {
			return w, nil
		}
		if !errors.Is(err, errSpawnerDied) || attempt > 0 {
			return nil, fmt.Errorf("start jail: %w", err)
		}
		_ = w.Close() // now: an orphan clone's init reads the end
	}
}

// ReadLaunch reads the Launch document init inherited on fd 3 and closes it.
// Zero fields of the Spec come back with their defaults.
func ReadLaunch() (Launch, error) {
	f := os.NewFile(launchFD, "launch")
	if f == nil {
		return Launch{}, errors.New("read launch: fd 3 is not open")
	}
	defer f.Close()
	var l Launch
	if err := json.NewDecoder(io.LimitReader(f, maxLaunch)).Decode(&l); err != nil {
		return Launch{}, fmt.Errorf("read launch: %w", err)
	}
	// Nothing else init inherited may reach the sidecar: not the binary
	// (init re-executes via /proc/self/exe), nor the files the driver has
	// init hold (Start), nor anything it leaked. Init itself keeps them,
	// and hands the sidecar its listener explicitly.
	_ = unix.CloseRange(launchFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	l.Spec = l.Spec.withDefaults()
	return l, nil
}

// encodeBounded marshals v as JSON and refuses a document longer than limit
// bytes: the reader on the other side (the jail's init, the spawner) reads
// at most that much in one go. what names the document in errors.
func encodeBounded(v any, limit int, what string) ([]byte, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	if len(doc) > limit {
		return nil, fmt.Errorf("encode %s: %d bytes, more than %d", what, len(doc), limit)
	}
	return doc, nil
}
