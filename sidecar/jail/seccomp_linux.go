package jail

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// installSeccomp loads the jail's filter (internal/seccomppolicy) into
// every thread of the process, after a filter that refuses every syscall
// of a foreign ABI (i386 through int 0x80 on x86-64): the policy's
// deny-list names native numbers only. The calling thread must have
// no_new_privs. The program comes assembled (seccompProgram): on amd64
// from a table made ahead of time, so a jail's start neither assembles
// it nor runs the assembler library's package init.
func installSeccomp(nested bool) error {
	prog, archID, err := seccompProgram(nested)
	if err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	if err := loadRaw(nativeOnly(archID)); err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	if err := loadRaw(prog); err != nil {
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

// loadRaw loads prog into every thread (TSYNC).
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
