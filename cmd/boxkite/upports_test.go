package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/internal/testport"
	"github.com/rogpeppe/go-internal/testscript"
)

// upAttempts bounds how often a test's `boxkite up` moves to other ports.
const upAttempts = 5

// takenPort says which of ports (the server's and the bastion's a test
// handed to `boxkite up`; ports[bastion] the bastion's, or bastion -1)
// up found taken, from up's stderr, or -1. Ports
// are picked by hand (internal/testport), so another test may bind one
// between the pick and up: up refuses a server port in use, and goes on
// without its bastion when the bastion's port is taken (checked before the
// start, or lost between the check and the bastion's bind).
func takenPort(stderr string, ports []int, bastion int) int {
	for i, p := range ports {
		if strings.Contains(stderr, fmt.Sprintf("port %d on 127.0.0.1 is already in use", p)) {
			return i
		}
	}
	if bastion < 0 || !strings.Contains(stderr, "boxkite-bastion did not start") {
		return -1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[bastion])))
	if err != nil {
		return bastion
	}
	ln.Close()
	return -1
}

// otherPort picks a port that is none of ports.
func otherPort(ports []int) (int, error) {
	for {
		p, err := testport.Pick()
		if err != nil || !slices.Contains(ports, p) {
			return p, err
		}
	}
}

// cmdBoxkiteUp runs `boxkite up ARGS...` as exec would: boxkiteup ARGS...
// A port of $PORT, $PORT2 or $BASTIONPORT that up finds taken (see
// takenPort) is not the script's failure: the variable gets a fresh port,
// a server left without its bastion is stopped, and up runs again with
// the new port in place of the old, so lines after it see the new value.
func cmdBoxkiteUp(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: boxkiteup ARGS... (use exec or exitcode for an up that fails)")
	}
	args = slices.Clone(args)
	vars := []string{"PORT", "PORT2", "BASTIONPORT"} // the last the bastion's
	for attempt := 1; ; attempt++ {
		err := ts.Exec("boxkite", append([]string{"up"}, args...)...)
		ports := make([]int, len(vars))
		for i, v := range vars {
			ports[i], _ = strconv.Atoi(ts.Getenv(v))
		}
		i := takenPort(ts.ReadFile("stderr"), ports, len(vars)-1)
		if i < 0 || attempt == upAttempts {
			if err != nil {
				ts.Fatalf("boxkite up: %v", err)
			}
			return
		}
		if err == nil { // up, without its bastion
			if err := ts.Exec("boxkite", "down", "--yes"); err != nil {
				ts.Fatalf("boxkite down, to move the bastion: %v", err)
			}
		}
		p, perr := otherPort(ports)
		if perr != nil {
			ts.Fatalf("%v", perr)
		}
		old := strconv.Itoa(ports[i])
		for j, a := range args {
			if a == old {
				args[j] = strconv.Itoa(p)
			}
		}
		ts.Logf("boxkite up: port %s ($%s) is taken (another test's); moving to %d", old, vars[i], p)
		ts.Setenv(vars[i], strconv.Itoa(p))
	}
}

// cmdHoldPort listens on the port a variable holds until the script ends,
// as another test's server that picked the same port would: holdport VAR.
// Connections are accepted and closed.
func cmdHoldPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdport VAR")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", ts.Getenv(args[0])))
	if err != nil {
		ts.Fatalf("holdport: %v", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ts.Defer(func() { ln.Close() })
}
