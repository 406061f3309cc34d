// Command boxkite is the boxkite command line: it starts the local server
// (boxkite up), runs commands in sandboxes (boxkite exec) and manages them
// (boxkite session …), locally or against a hosted boxkite server.
package main

//go:generate go run . docs --man ../../man --completions ../../completions

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/boxkite/boxkite/cli"
)

// version is set at release time with -ldflags "-X main.version=…".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], cli.Stdio())
	stop()
	os.Exit(code)
}

// run is the whole program; testscript installs it as the `boxkite` command.
func run(ctx context.Context, args []string, stdio cli.IO) int {
	root := cli.NewRoot(cli.NewApp(stdio, buildVersion()))
	return cli.Execute(ctx, root, args)
}

// buildVersion is the release version when set by the linker, else the
// module version go install recorded, else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
