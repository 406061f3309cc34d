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
// or not at all. A jail's own filter (internal/seccomppolicy) refuses the
// same. It sets no_new_privs, which a filter needs without CAP_SYS_ADMIN.
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
		argsOffset = 16 // args[0], 8 bytes
		x32Bit     = 0x40000000
		afVsock    = 40
	)
	lo, hi := uint32(argsOffset), uint32(argsOffset+4)
	if !littleEndian() {
		lo, hi = hi, lo
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
		/* 1 */ {Code: jeq, Jt: 0, Jf: 9, K: archID}, // → ENOSYS
		/* 2 */ {Code: ld, K: 0}, // nr
		/* 3 */ {Code: jge, Jt: 7, Jf: 0, K: x32Bit}, // → ENOSYS
		/* 4 */ {Code: jeq, Jt: 0, Jf: 4, K: uint32(unix.SYS_SOCKET)}, // → ALLOW
		/* 5 */ {Code: ld, K: hi},
		/* 6 */ {Code: jeq, Jt: 0, Jf: 3, K: 0}, // high bits → EPERM
		/* 7 */ {Code: ld, K: lo},
		/* 8 */ {Code: jeq, Jt: 1, Jf: 0, K: afVsock}, // → EPERM
		/* 9 */ {Code: ret, K: unix.SECCOMP_RET_ALLOW},
		/* 10 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		/* 11 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
