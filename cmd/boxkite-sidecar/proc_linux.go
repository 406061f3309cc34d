package main

import (
	"fmt"
	"os/signal"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// selfCommand runs this binary again with args (the sftp subsystem's
// `sftp-server`): through the host's loader when the jail placed one, as
// it started serve.
func selfCommand(args ...string) (string, []string) {
	return jail.ServeCommand(append([]string{"boxkite-sidecar"}, args...))
}

// lockDownServe readies a serving sidecar: non-dumpable (noDump), and
// refusing AF_VSOCK sockets for itself and every command it starts
// (jail.RefuseVsock). In a jail the jail's filter refuses them already; in
// a pod nothing else does reliably: the runtime's default profile lets
// AF_VSOCK|1<<32 through (containerd's), and vsock reaches past the pod's
// network namespace and NetworkPolicy to the node and its hypervisor.
func lockDownServe() error {
	if err := noDump(); err != nil {
		return err
	}
	return jail.RefuseVsock()
}

// noDump makes the process non-dumpable. Exec resets the flag, so the serve
// process sets it itself even though init already did.
func noDump() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("clear dumpable: %w", err)
	}
	return nil
}

// nameProcess sets the name ps shows. The jail executes this binary through
// its descriptor (execveat, or /proc/self/fd/N) and /proc/self/exe, which
// would name it after the file (the huge-page copy's hash), "4" or "exe".
// With prctl, not /proc/self/comm: a Spawner's jail starts where /proc
// shows no process (sidecar/jail/skeleton_linux.go). It names the calling
// thread, which is the main one: run calls it while the main goroutine is
// still locked there (init_linux.go).
func nameProcess() {
	name := []byte("boxkite-sidecar\x00")
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
}

// defaultSignals gives SIGHUP and SIGINT their default action when this
// process started with them ignored. A server started under nohup, or in
// the background of a script, ignores them, and the ignoring passes to
// every process it starts: the Go runtime keeps an inherited SIG_IGN for
// these two signals only, and execve keeps it. Without this every command
// in such a server's sandboxes would ignore the hang-up or Ctrl-C that
// `boxkite exec`, the bastion or the API forwards. A sandbox's processes
// start from the defaults, as a login's do; the sidecar itself then ends
// on either signal, as it does when started normally.
func defaultSignals() {
	for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT} {
		if !signal.Ignored(sig) {
			continue
		}
		// A zeroed kernel sigaction is SIG_DFL with no flags and an
		// empty mask; 8 is the size of the kernel's sigset.
		var act [4]uint64
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
}
