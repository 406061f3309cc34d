package jail

import "os"

// Paths inside the jail. The sidecar and the driver agree on them through
// these constants rather than through configuration.
const (
	WorkspaceDir = "/workspace"             // writable, bind of Spec.Workspace
	RunDir       = "/run/boxkite"           // read-only bind of Spec.RunDir; holds the egress socket, if any
	OutputsDir   = "/mnt/user-data/outputs" // writable, bind of Spec.Outputs when set
	UploadsDir   = "/mnt/user-data/uploads" // read-only, empty: nothing uploads into it yet
	SkillsDir    = "/mnt/skills"            // read-only, empty: nothing installs skills yet
	// HomeDir is E2B's home: the workspace again (placeHome), so that
	// what E2B's SDKs and examples write to /home/user is found there.
	HomeDir = "/home/user"
)

// Defaults for a zero Spec field.
const (
	DefaultUID      = 1001      // the sandbox user inside the jail
	IDRange         = 65536     // ids mapped when running as root
	DefaultTmpSize  = 512 << 20 // bytes of /tmp and /dev/shm each
	DefaultHostname = "sandbox"

	// MaxHostIDBase is the highest HostIDBase: ids are 32 bits and
	// 4294967295 ((uid_t)-1) is no id.
	MaxHostIDBase   = 1<<32 - 1 - IDRange
	DefaultMaxProcs = 448 // RLIMIT_NPROC: below a 512 pids cgroup, so the sidecar can still fork

	// MaxPTYs is how many pseudo-terminals a jail's devpts hands out at
	// once (its max= option). The kernel's own limit, kernel.pty.max
	// (4096, less the 1024 reserved for the host's devpts), is one for
	// the whole host: without this, one sandbox could take them all, and
	// every other sandbox's terminals would fail.
	MaxPTYs = 64
)

// DefaultSystemBinds are the host paths bound read-only into every jail when
// Spec.SystemBinds is nil. Missing paths are skipped; symlinks (merged-/usr
// systems) are copied as symlinks.
func DefaultSystemBinds() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc"}
}

// Spec describes one jail. It travels as JSON from the driver to the jail's
// init over a pipe, so every field is plain data.
type Spec struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname,omitempty"` // "" means DefaultHostname

	// Host directories bound into the jail. RunDir is required, and so is
	// Workspace unless WorkspaceTmpfs is set.
	Workspace string `json:"workspace,omitempty"` // → /workspace
	RunDir    string `json:"run_dir"`             // → /run/boxkite, read-only; the driver's, readable by the jail's root
	Outputs   string `json:"outputs,omitempty"`   // → /mnt/user-data/outputs; "" means none

	// WorkspaceTmpfs, when positive, replaces the Workspace and Outputs binds
	// with one tmpfs of that many bytes made inside the jail, holding both:
	// the storage quota of a driver that cannot loop-mount a disk image.
	WorkspaceTmpfs int64 `json:"workspace_tmpfs,omitempty"`

	// UID and GID are the sandbox user's ids inside the jail (0 means DefaultUID).
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`

	// HostIDBase is where inside ids 0..IDRange-1 start on the host when the
	// driver is root: the jail's root is then an unprivileged host user and
	// host-root-owned files stay unreadable. Each jail should have a range of
	// its own, so that per-user kernel counters are per jail; the jail's user
	// namespace is created by HostIDBase (its owner), not by root, and the
	// writable host directories (Workspace, Outputs, Binds) are idmapped
	// mounts that store the inside ids on disk (see Start). 0 means the
	// driver is not root: the caller's own uid and gid become root inside
	// and nothing else is mapped, so the sandbox user exists only in a
	// nested user namespace.
	HostIDBase int `json:"host_id_base,omitempty"`

	TmpSize     int64    `json:"tmp_size,omitempty"`     // bytes; 0 means DefaultTmpSize
	SystemBinds []string `json:"system_binds,omitempty"` // nil means DefaultSystemBinds()

	// Binds are further host directories bound read-write (nosuid, nodev)
	// at their targets, after /workspace, so they may sit below it.
	Binds []Bind `json:"binds,omitempty"`

	// Image, when set, is the host path of an image's root filesystem. Its
	// top-level directories replace SystemBinds, read-only; /etc keeps the
	// synthesised passwd, group, hostname and hosts over the image's.
	Image string `json:"image,omitempty"`

	// Rlimits of everything in the jail. They can only be lowered: the
	// host's root may lack CAP_SYS_RESOURCE.
	MaxProcs    int   `json:"max_procs,omitempty"`     // RLIMIT_NPROC per user; 0 means DefaultMaxProcs
	MaxFileSize int64 `json:"max_file_size,omitempty"` // RLIMIT_FSIZE in bytes; 0 means unlimited

	// MaxExecCount and MaxExecSeconds are the sandbox's exec budget
	// (sidecar.ToolLimits): 0 means the sidecar's default, negative no
	// limit. The jail does not enforce them; init hands them to the sidecar.
	MaxExecCount   int `json:"max_exec_count,omitempty"`
	MaxExecSeconds int `json:"max_exec_seconds,omitempty"`

	// Build, when set, makes the jail an image build rather than a
	// sandbox (see Build): Image is bound writable and init runs the
	// build's steps instead of the sidecar.
	Build *Build `json:"build,omitempty"`

	// NetNS, when not nil, is a network namespace made ahead of the jail
	// (NewNetNS, by a local driver's prepared pool): the jail is cloned
	// into it instead of into a new one. It is owned by the caller's user
	// namespace, not the jail's, so nothing in the jail may configure it
	// (its loopback is up already; egress goes through the driver's
	// socket). Each namespace serves one jail: the caller closes its file
	// once Start returns, whatever the outcome. Never a build's or a
	// nested jail's; never serialised (the jail's init has no use for it).
	NetNS *os.File `json:"-"`

	// CgroupDirs, when set, are the directories of the cgroup the jail
	// starts in (Cgroup.Dirs, made by Cgroups.Create): its clone places it
	// there before it runs anything (see Start). Never serialised with the
	// spec (a Spawner's request carries them apart; init has no use for
	// them).
	CgroupDirs []string `json:"-"`
}

// Nested reports whether the sandbox user must live in a nested user
// namespace because the jail maps a single id.
func (s Spec) Nested() bool { return s.HostIDBase == 0 }

// withDefaults returns s with zero fields filled in.
func (s Spec) withDefaults() Spec {
	if s.Hostname == "" {
		s.Hostname = DefaultHostname
	}
	if s.UID == 0 {
		s.UID = DefaultUID
	}
	if s.GID == 0 {
		s.GID = DefaultUID
	}
	if s.TmpSize == 0 {
		s.TmpSize = DefaultTmpSize
	}
	if s.SystemBinds == nil && s.Image == "" && s.Build == nil {
		s.SystemBinds = DefaultSystemBinds()
	}
	if s.MaxProcs == 0 {
		s.MaxProcs = DefaultMaxProcs
	}
	return s
}

// Launch is the document the driver hands to the jail's init on fd 3.
type Launch struct {
	Spec Spec `json:"spec"`
	// Token is the sidecar's auth token. It goes through this pipe, never argv
	// or the environment, because both are readable in /proc.
	Token string `json:"token"`
	// MountFDs maps a jail path to an inherited descriptor holding a detached
	// mount of its host directory. Start fills it when it can (as root), so
	// init need not resolve host paths the jail's unprivileged root cannot
	// traverse (e.g. under /root).
	MountFDs map[string]int `json:"mount_fds,omitempty"`
	// ListenFD is the inherited descriptor of the sidecar's listening
	// socket, made by the driver in a directory of its own that no jail
	// can reach; 0 means none (the sidecar then listens where --listen
	// says).
	ListenFD int `json:"listen_fd,omitempty"`
	// CgroupNS: init was born in its cgroup namespace, rooted at its
	// cgroup (its clone entered one once placed: forkJail), and so is
	// every thread its runtime starts. Setup then enters none, and no
	// thread needs moving (ShareCgroupNamespace). Start sets it for a
	// jail no one moves after its clone (placesItself).
	CgroupNS bool `json:"cgroup_ns,omitempty"`
}
