// Command boxkite-sidecar is the in-sandbox agent: it serves the sidecar API
// (exec, files, PTY) to the control plane. With the local driver it is also
// the jail's init.
//
// Usage:
//
//	boxkite-sidecar init [--claimable]            # PID 1 of a jail; launch document on fd 3
//	boxkite-sidecar serve --listen unix:PATH      # token on --token-fd or $BOXKITE_SIDECAR_TOKEN_FILE
//	boxkite-sidecar sftp-server DIR                # SFTP on stdin/stdout, started by the sidecar as the sandbox user
//	boxkite-sidecar spawner                       # clones jails for the local driver; its socket on fd 3
//	boxkite-sidecar skeleton-proc DIR             # mounts an empty proc on DIR for the spawner's skeleton root
//	boxkite-sidecar version
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/boxkite/boxkite/sidecar"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: boxkite-sidecar init | serve [flags] | version")
		return 2
	}
	var err error
	nameProcess()
	defaultSignals()
	// Locked for init (init_linux.go) and the spawner: the spawner's
	// helper moves threads of its own into the skeleton's namespace
	// (jail.ServeSpawner), and the main thread, which never ends, must
	// not be one of them.
	if args[0] != "init" && args[0] != "spawner" {
		runtime.UnlockOSThread()
	}
	switch args[0] {
	case "init":
		var code int
		code, err = runInit(args[1:])
		if err == nil {
			return code
		}
	case "serve":
		err = runServe(args[1:])
	case "sftp-server":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, "usage: boxkite-sidecar sftp-server DIR")
			return 2
		}
		err = sidecar.ServeSFTPStdio(args[1])
	case "spawner":
		err = runSpawner(args[1:])
	case "skeleton-proc":
		err = runSkeletonProc(args[1:])
	case "version":
		fmt.Println(buildVersion())
		return 0
	default:
		fmt.Fprintf(os.Stderr, "boxkite-sidecar: unknown command %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "boxkite-sidecar %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
