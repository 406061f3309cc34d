package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// listenFDPrefix marks a --listen value naming an inherited socket: fd:N.
const listenFDPrefix = "fd:"

// listen binds addr, or serves on the listening socket inherited as
// descriptor N when addr is fd:N. `boxkite up` binds its port itself and
// hands the socket over: a port it only looked at could be taken by
// another process before this one started and bound it.
func listen(addr string) (net.Listener, error) {
	if fd, ok := strings.CutPrefix(addr, listenFDPrefix); ok {
		return inheritedListener(fd)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, &hintedError{
				fmt.Errorf("listen on %s: address already in use", addr),
				"another boxkite-server may be running (see `boxkite status`); pick another address with --listen",
			}
		}
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// inheritedListener serves on descriptor fd, which must be a listening
// socket; the descriptor itself is closed (the listener keeps a duplicate).
func inheritedListener(fd string) (net.Listener, error) {
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return nil, fmt.Errorf("parse --listen fd:%s: want a descriptor number of 3 or more", fd)
	}
	// Checked first: a socket that does not listen would make a listener
	// whose every Accept fails.
	if on, err := syscall.GetsockoptInt(n, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || on == 0 {
		return nil, fmt.Errorf("listen on fd %d: not a listening socket (%v)", n, err)
	}
	f := os.NewFile(uintptr(n), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen on fd %d: %w", n, err)
	}
	return ln, nil
}
