//go:build linux

// Package seccomppolicy is the seccomp filter of every jail, written with
// go-seccomp-bpf, and its assembly into a BPF program. The jail package
// loads the program assembled ahead of time where a table of it exists
// (seccomp_amd64.go, checked against Program by its test) and imports
// this package only elsewhere: the library's package init builds syscall
// tables of every architecture, about 45 page faults of each jail's start
// (issue 27).
package seccomppolicy

import (
	"fmt"
	"runtime"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM, so tools print "Operation not permitted".
// It is Docker's default profile read as a deny-list: what it allows only
// with capabilities the jail never has, plus what it blocks outright.
// Names the running architecture lacks (iopl on arm64) are skipped.
var deniedSyscalls = []string{
	// Mounts and the root: the jail's mounts are final once Setup is done.
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	// Joining namespaces (new ones are filtered by flag below).
	"setns",
	// Other processes' memory and handles.
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd",
	// The kernel: modules, kexec, bpf, perf, keys, swap, reboot, accounting.
	"init_module", "finit_module", "delete_module", "create_module",
	"kexec_load", "kexec_file_load", "bpf", "perf_event_open",
	"keyctl", "add_key", "request_key",
	"swapon", "swapoff", "reboot", "acct", "syslog", "vhangup",
	"quotactl", "quotactl_fd", "lookup_dcookie", "nfsservctl", "uselib", "userfaultfd",
	// Files by handle bypass the path walk (the "shocker" escape).
	"open_by_handle_at", "name_to_handle_at",
	// The clock and the hardware.
	"settimeofday", "stime", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "vm86", "vm86old",
	// io_uring runs syscalls no filter sees and is a steady source of bugs.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
}

// nsFlags are the clone and unshare flags that make namespaces.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// afVsock is AF_VSOCK. Its sockets are not network-namespaced: they
// reach the hypervisor's services (CID 2), the host's own listeners
// (CID 1, with vsock_loopback) and share one port space with the host
// and every other sandbox, so a jail with only lo could still talk out.
const afVsock = 40

// afNetlink and netlinkKobjectUevent are the socket of the kernel's device
// events (uevents). The kernel sends every untagged uevent of the host
// (each loop device another sandbox's disk attaches, block and network
// devices, USB) to the uevent sockets of every network namespace its
// initial user namespace owns, and a prepared slot's namespace is one
// (server/local, prepared.go): a sandbox listening there watched the
// host's and other sandboxes' devices come and go. Nothing in a sandbox
// has a use for them (no udev).
const (
	afNetlink            = 16
	netlinkKobjectUevent = 15
)

// allowedPersonalities are the personality(2) arguments Docker allows: the
// default, 32-bit uname, and the query 0xffffffff.
var allowedPersonalities = []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff}

// Policy is the filter of everything in the jail. A nested jail's
// sidecar reaches the sandbox user through a new user namespace per
// command, so clone may still make one there (and only that kind).
func Policy(nested bool) (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, fmt.Errorf("build seccomp policy: %w", err)
	}
	known := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
			_, ok := info.SyscallNames[n]
			return !ok
		})
	}
	cloneFlags := uint64(nsFlags)
	if nested {
		cloneFlags &^= unix.CLONE_NEWUSER
	}
	// clone's flags are its first argument except on s390x.
	cloneArg := uint32(0)
	if runtime.GOARCH == "s390x" {
		cloneArg = 1
	}
	var notAllowed seccomp.ArgumentConditions
	for _, p := range allowedPersonalities {
		notAllowed = append(notAllowed, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: p})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				// clone3 passes its flags in memory a filter cannot read.
				// ENOSYS makes glibc fall back to clone, whose flags it can.
				Names:  []string{"clone3"},
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
			},
			{
				// Native AIO's contexts come from one host-wide pool
				// (fs.aio-max-nr): a few io_setup calls in one sandbox
				// took it all from every other and the host. ENOSYS is a
				// kernel without AIO, which libaio's users fall back from;
				// without a context the other io_* calls do nothing.
				Names:  []string{"io_setup"},
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
			},
			{
				Names: known(deniedSyscalls),
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: cloneArg, Operation: seccomp.BitsSet, Value: cloneFlags}}},
					{Name: "unshare", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: nsFlags | unix.CLONE_NEWTIME}}},
					{Name: "personality", Conditions: notAllowed},
					// socket's family is an int: the kernel reads the low 32
					// bits, the filter all 64, so a family with high bits set
					// is refused too, or AF_VSOCK|1<<32 would pass as another.
					{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: afVsock}}},
					{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.GreaterThan, Value: 0xffffffff}}},
					// A netlink socket's protocol is an int as well: a
					// protocol with high bits set is refused, or
					// NETLINK_KOBJECT_UEVENT|1<<32 would pass.
					{Name: "socket", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.Equal, Value: afNetlink},
						{Argument: 2, Operation: seccomp.Equal, Value: netlinkKobjectUevent},
					}},
					{Name: "socket", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.Equal, Value: afNetlink},
						{Argument: 2, Operation: seccomp.GreaterThan, Value: 0xffffffff},
					}},
				},
				Action: seccomp.ActionErrno, // EPERM
			},
		},
	}, nil
}

// Program is Policy(nested) assembled for the running architecture, with
// the architecture's audit id (for a filter refusing every other ABI).
func Program(nested bool) ([]unix.SockFilter, uint32, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, 0, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	p, err := Policy(nested)
	if err != nil {
		return nil, 0, err
	}
	insts, err := p.Assemble()
	if err != nil {
		return nil, 0, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, 0, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, uint32(info.ID), nil
}
