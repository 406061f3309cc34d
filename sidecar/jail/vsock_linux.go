package jail

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RefuseVsock makes the process, every thread of it and everything it
// starts refuse socket(AF_VSOCK) with EPERM (a family with any of the high
// 32 bits set too: the kernel reads an int, a filter all 64 bits) and every
// syscall of a foreign ABI (i386's socketcall passes the family in memory,
// where no filter reads it; x32) with ENOSYS. It is for a sidecar outside
// a jail, in a Kubernetes pod: vsock is not network-namespaced, and the
// runtimes' default profiles compare the family as 64 bits (containerd's
// RuntimeDefault allows socket when it is not 40, so AF_VSOCK|1<<32 passes)
// or not at all. It refuses the kernel's device event socket
// (AF_NETLINK, NETLINK_KOBJECT_UEVENT, the protocol's high bits set too)
// as well: a pod's network namespace belongs to the node's initial user
// namespace, so the node's uevents (its disks, devices and other pods'
// volumes coming and going) reach every listener in it. A jail's own
// filter (internal/seccomppolicy) refuses the same. It sets no_new_privs,
// which a filter needs without CAP_SYS_ADMIN.
func RefuseVsock() error {
	runtime.LockOSThread() // no_new_privs and the filter on the same thread
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("refuse vsock: set no_new_privs: %w", err)
	}
	_, archID, err := seccompProgram(false)
	if err != nil {
		return fmt.Errorf("refuse vsock: %w", err)
	}
	if err := loadRaw(vsockFilter(archID)); err != nil {
		return fmt.Errorf("refuse vsock: %w", err)
	}
	return nil
}

// vsockFilter is RefuseVsock's program for the architecture archID.
func vsockFilter(archID uint32) []unix.SockFilter {
	const (
		archOffset = 4  // of struct seccomp_data
		argsOffset = 16 // args[0], 8 bytes each
		x32Bit     = 0x40000000
		afVsock    = 40
	)
	// The low and high words of socket's family (args[0]) and protocol (args[2]).
	famLo, famHi := uint32(argsOffset), uint32(argsOffset+4)
	protoLo, protoHi := uint32(argsOffset+16), uint32(argsOffset+20)
	if !littleEndian() {
		famLo, famHi = famHi, famLo
		protoLo, protoHi = protoHi, protoLo
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Jumps count instructions after the jump; the three returns end it.
	return []unix.SockFilter{
		/* 0 */ {Code: ld, K: archOffset},
		/* 1 */ {Code: jeq, Jt: 0, Jf: 14, K: archID}, // → ENOSYS
		/* 2 */ {Code: ld, K: 0}, // nr
		/* 3 */ {Code: jge, Jt: 12, Jf: 0, K: x32Bit}, // → ENOSYS
		/* 4 */ {Code: jeq, Jt: 0, Jf: 9, K: uint32(unix.SYS_SOCKET)}, // → ALLOW
		/* 5 */ {Code: ld, K: famHi},
		/* 6 */ {Code: jeq, Jt: 0, Jf: 8, K: 0}, // high bits → EPERM
		/* 7 */ {Code: ld, K: famLo},
		/* 8 */ {Code: jeq, Jt: 6, Jf: 0, K: afVsock}, // → EPERM
		/* 9 */ {Code: jeq, Jt: 0, Jf: 4, K: unix.AF_NETLINK}, // → ALLOW
		/* 10 */ {Code: ld, K: protoHi},
		/* 11 */ {Code: jeq, Jt: 0, Jf: 3, K: 0}, // high bits → EPERM
		/* 12 */ {Code: ld, K: protoLo},
		/* 13 */ {Code: jeq, Jt: 1, Jf: 0, K: unix.NETLINK_KOBJECT_UEVENT}, // → EPERM
		/* 14 */ {Code: ret, K: unix.SECCOMP_RET_ALLOW},
		/* 15 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		/* 16 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
