// Command boxkite-mcp is the boxkite MCP server over stdio: the 31 tools of
// reference §5.1 and issue 22 (sandboxes, their pause, snapshots and forks, images, volumes, MCP connections, exec, files,
// language servers), each a call to a boxkite control plane.
//
// It reads BOXKITE_BASE_URL and BOXKITE_API_KEY, else the CLI's
// configuration (~/.boxkite/config.toml, or local.toml written by
// `boxkite up`). `boxkite mcp init <client>` wires it into an MCP client.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
	"github.com/boxkite/boxkite/tools/mcpserver"
)

// version is set at release time with -ldflags "-X main.version=…".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "boxkite-mcp: error:", err)
		var he *hintError
		if errors.As(err, &he) {
			fmt.Fprintln(os.Stderr, "boxkite-mcp: hint:", he.hint)
		}
		os.Exit(1)
	}
}

// run serves MCP on stdin/stdout until the client closes stdin. stdout
// carries the protocol only; everything for people goes to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var enable []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--version" || a == "version":
			fmt.Fprintln(stdout, "boxkite-mcp", buildVersion())
			return nil
		case a == "-h" || a == "--help" || a == "help":
			fmt.Fprint(stdout, usage)
			return nil
		case a == "--enable" && i+1 < len(args):
			i++
			enable = append(enable, strings.Split(args[i], ",")...)
		case strings.HasPrefix(a, "--enable="):
			enable = append(enable, strings.Split(strings.TrimPrefix(a, "--enable="), ",")...)
		default:
			return &hintError{err: fmt.Errorf("unknown argument %q", a), hint: "boxkite-mcp takes only --enable TOOL,…; it is started by an MCP client (see `boxkite mcp init`)"}
		}
	}
	optional, err := tools.Enabled(enable)
	if err != nil {
		return &hintError{err: fmt.Errorf("--enable: %w", err), hint: "name opt-in tools, comma-separated"}
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	c := client.New(cfg.BaseURL, cfg.APIKey)
	c.UserAgent = "boxkite-mcp/" + buildVersion()
	c.BadResponseHint = badResponseHint(cfg.URLSource)
	bind := func(id string) tools.Sandbox { return c.Bind(id) }
	s := mcpserver.New(buildVersion(), mcpserver.Static(c, bind), optional...)
	fmt.Fprintf(stderr, "boxkite-mcp %s: serving %s (key from %s)\n", buildVersion(), cfg.BaseURL, cfg.KeySource)
	if err := s.Run(ctx, stdioTransport(stdin, stdout)); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

const usage = `boxkite-mcp: the boxkite MCP server (stdio).

It is started by an MCP client; set it up with ` + "`boxkite mcp init <client>`" + `.
Configuration: BOXKITE_BASE_URL and BOXKITE_API_KEY, else the boxkite CLI's
config (BOXKITE_HOME, default ~/.boxkite: config.toml, else local.toml).

  --enable TOOL,…   add opt-in tools to the 31: http_request (secrets broker),
                    pty_exec, node_interpreter, run_tests, browser_navigate,
                    browser_exec, browser_screenshot, browser_close
`

// maxFrame bounds one inbound JSON-RPC line. The SDK's default (16 MiB)
// is less than a file_create within its 10 MiB limit can take once JSON
// escapes it (a newline is 2 bytes, a control character 6), and a line
// past the bound ends the server, taking every tool from the agent.
const maxFrame = 6*api.MaxFileContent + 1<<20

// stdioTransport is the MCP transport over the client's pipes.
func stdioTransport(stdin io.Reader, stdout io.Writer) *mcp.IOTransport {
	return &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}, MaxLineLength: maxFrame}
}

// badResponseHint is the hint the tools show when the server URL answers
// with something that is not boxkite (client.CodeBadResponse): what the
// user set, in the MCP client's config or the CLI's, not the Go client's
// field.
func badResponseHint(urlSource string) string {
	return "check the server URL boxkite-mcp uses (from " + urlSource + "; it reads BOXKITE_BASE_URL, else BOXKITE_URL, " +
		"else base_url of the boxkite CLI's config, see `boxkite config show`) and any proxy in between"
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

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
