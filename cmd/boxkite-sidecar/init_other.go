//go:build !linux

package main

import (
	"errors"
	"net"
	"net/http"
)

func runInit([]string) (int, error) { return 0, errors.New("jails need Linux") }

func runSpawner([]string) error { return errors.New("jails need Linux") }

func runSkeletonProc([]string) error { return errors.New("jails need Linux") }

// idleTrim is nil: only Linux counts and ends threads.
func idleTrim(int) func(net.Conn, http.ConnState) { return nil }
