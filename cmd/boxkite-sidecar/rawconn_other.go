//go:build !linux

package main

import "net"

// rawListener is Linux's (rawconn_linux.go); elsewhere connections are
// served as they are.
type rawListener struct{ net.Listener }
