// Package testport picks loopback ports for tests that start a server,
// stop it and start it again on the same port.
//
// A port the kernel picks (a listen on port 0) lies in its ephemeral range,
// and while the server is down any port in that range can be taken: by
// another test's listen on port 0, or by the local end of any outgoing
// connection. CI saw this happen (SeaweedFS's master could not bind its
// gRPC port again after an outage test). Pick chooses below the range,
// where only a port chosen by hand can collide, and chooses at random.
package testport

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Floor is the lowest port Pick chooses: above the well-known and most
// registered service ports, and above every port the WHATWG fetch standard
// blocks (the highest is 10080). Tests hand picks to `boxkite up --port`,
// which refuses a fetch-blocked port because the E2B SDKs could not reach
// it; CI once picked 10080 and failed that way.
const Floor = 10100

// Pick returns a port free on 127.0.0.1 now, in [Floor, the first port of
// the kernel's ephemeral range).
func Pick() (int, error) {
	low := ephemeralLow()
	for range 200 {
		port := Floor + rand.IntN(low-Floor)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("pick a port: none free in [%d, %d) after 200 tries", Floor, low)
}

// PickN returns n distinct ports, each as Pick's. Two Pick calls can
// return the same port (both free when looked at), and a process handed
// the same port twice for two listeners cannot start.
func PickN(n int) ([]int, error) { return pickN(n, Pick) }

func pickN(n int, pick func() (int, error)) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		port, err := pick()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// Refused returns a port of 127.0.0.1 where connections are refused for
// as long as closer is open: a socket bound to it that never listens, so
// no other test can bind it. A port merely free when looked at can be
// bound by another test before the dial that expects a refusal.
func Refused() (port int, closer io.Closer, err error) {
	// Close-on-exec under ForkLock, as the net package does where
	// socket(2) takes no SOCK_CLOEXEC (darwin), so no child inherits it.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return 0, nil, fmt.Errorf("hold a refused port: %w", err)
	}
	f := os.NewFile(uintptr(fd), "refused-port")
	// No SO_REUSEADDR: a listener that sets it still cannot share the port.
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		f.Close()
		return 0, nil, fmt.Errorf("hold a refused port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		f.Close()
		return 0, nil, fmt.Errorf("hold a refused port: %w", err)
	}
	return sa.(*syscall.SockaddrInet4).Port, f, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): 32768 when it cannot be read or leaves
// too little room below it.
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < Floor+2000 {
		return fallback
	}
	return low
}
