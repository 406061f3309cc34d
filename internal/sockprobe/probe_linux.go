package sockprobe

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Probe tries socket() with AF_VSOCK, AF_VSOCK with a high bit set
// (which a 64-bit compare of the family let through, and the kernel reads
// as AF_VSOCK) and AF_INET, which must keep working, a line each: the
// family in hex and the errno's name, or "ok" ("0x28 EPERM", "0x2 ok").
// Then AF_NETLINK sockets of the protocols NETLINK_KOBJECT_UEVENT, it with a
// high bit set, and NETLINK_ROUTE, which must keep working: "netlink", the
// protocol in hex and the outcome ("netlink 0xf EPERM", "netlink 0x0 ok").
func Probe() string {
	var b strings.Builder
	for _, fam := range []uint64{unix.AF_VSOCK, unix.AF_VSOCK | 1<<32, unix.AF_INET} {
		fmt.Fprintf(&b, "%#x %s\n", fam, try(fam, unix.SOCK_STREAM, 0))
	}
	for _, proto := range []uint64{unix.NETLINK_KOBJECT_UEVENT, unix.NETLINK_KOBJECT_UEVENT | 1<<32, unix.NETLINK_ROUTE} {
		fmt.Fprintf(&b, "netlink %#x %s\n", proto, try(unix.AF_NETLINK, unix.SOCK_DGRAM, proto))
	}
	return b.String()
}

// try makes a socket through the raw syscall and closes it: "ok", or the
// errno's name.
func try(family, typ, proto uint64) string {
	fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ), uintptr(proto))
	if errno != 0 {
		return unix.ErrnoName(errno)
	}
	unix.Close(int(fd))
	return "ok"
}
