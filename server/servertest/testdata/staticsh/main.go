// Command staticsh stands in for /bin/sh in a test image that has no libc
// at all: built with CGO_ENABLED=0, it answers `sh -c CMD` by printing the
// image's marker, any glibc file it can see, and CMD.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "-c" {
		fmt.Fprintln(os.Stderr, "usage: sh -c CMD")
		os.Exit(2)
	}
	m, err := os.ReadFile("/etc/boxkite-image-marker")
	if err != nil {
		fmt.Println("no marker:", err)
	}
	fmt.Printf("marker=%s\n", strings.TrimSpace(string(m)))
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(p); err == nil {
			fmt.Println("has", p)
		}
	}
	fmt.Println("cmd=" + os.Args[2])
}
