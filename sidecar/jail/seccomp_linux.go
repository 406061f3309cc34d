package jail

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM, so tools print "Operation not permitted".
// It is Docker's default profile read as a deny-list: what it allows only
// with capabilities the jail never has, plus what it blocks outright.
// Names the running architecture lacks (iopl on arm64) are skipped.
var deniedSyscalls = []string{
	// Mounts and the root: the jail's mounts are final once Setup is done.
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
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

// allowedPersonalities are the personality(2) arguments Docker allows: the
// default, 32-bit uname, and the query 0xffffffff.
var allowedPersonalities = []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff}

// seccompPolicy is the filter of everything in the jail. A nested jail's
// sidecar reaches the sandbox user through a new user namespace per
// command, so clone may still make one there (and only that kind).
func seccompPolicy(nested bool) (seccomp.Policy, error) {
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
				Names: known(deniedSyscalls),
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: cloneArg, Operation: seccomp.BitsSet, Value: cloneFlags}}},
					{Name: "unshare", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: nsFlags | unix.CLONE_NEWTIME}}},
					{Name: "personality", Conditions: notAllowed},
				},
				Action: seccomp.ActionErrno, // EPERM
			},
		},
	}, nil
}

// installSeccomp loads the jail's filter into every thread of the process,
// after a filter that refuses every syscall of a foreign ABI (i386 through
// int 0x80 on x86-64): the policy's deny-list names native numbers only.
// The calling thread must have no_new_privs.
func installSeccomp(nested bool) error {
	info, err := arch.GetInfo("")
	if err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	if err := loadRaw(nativeOnly(uint32(info.ID))); err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	policy, err := seccompPolicy(nested)
	if err != nil {
		return err
	}
	filter := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: policy}
	if err := seccomp.LoadFilter(filter); err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	return nil
}

// nativeOnly is a BPF program failing, with ENOSYS, every syscall whose
// audit architecture is not archID.
func nativeOnly(archID uint32) []unix.SockFilter {
	const archOffset = 4 // of struct seccomp_data
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: archOffset},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: archID},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
}

func loadRaw(prog []unix.SockFilter) error {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno != 0:
		return errno
	case tid != 0: // TSYNC names the thread it could not synchronise
		return fmt.Errorf("thread %d keeps another filter", tid)
	}
	return nil
}
