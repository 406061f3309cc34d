package main

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawListener serves unix connections (a jail's, from the driver) as
// rawConns; any other connection as it is.
type rawListener struct{ net.Listener }

func (l rawListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c, nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return c, nil
	}
	return &rawConn{UnixConn: uc, rc: rc}, nil
}

// rawConn reads and writes its socket, which is non-blocking, with raw
// syscalls and waits for it in the netpoller as net.Conn does. The first
// syscall.Syscall after the process idled wakes the runtime's sysmon
// thread, which then polls every 20-70 µs until the process idles again;
// an exec waits for its command without one (sidecar's execwait_linux.go),
// so with this the answer's write and the next request's read do not wake
// it either (issue 27: sysmon's wakes were half the sidecar's context
// switches per exec). Deadlines, close and everything else are the
// UnixConn's.
type rawConn struct {
	*net.UnixConn
	rc syscall.RawConn
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		n, _, errno = syscall.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		return errno != unix.EAGAIN && errno != unix.EINTR
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		var n uintptr
		var errno syscall.Errno
		rest := p[written:]
		err := c.rc.Write(func(fd uintptr) bool {
			n, _, errno = syscall.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
			return errno != unix.EAGAIN && errno != unix.EINTR
		})
		switch {
		case err != nil:
			return written, err
		case errno != 0:
			return written, c.opError("write", errno)
		}
		written += int(n)
	}
	return written, nil
}

func (c *rawConn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "unix", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
