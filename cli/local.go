package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

type upOptions struct {
	port        int
	bastionPort int
	foreground  bool
	json        *outputFlags // --json, --jq or --template asked; nil prints the URL
}

// upResult is what `boxkite up --json` prints once the server is ready:
// where the local stack runs and what it uses. The key itself stays in
// Config; APIKeyPrefix names it as 'boxkite keys ls' does.
type upResult struct {
	URL            string `json:"url"`
	PID            int    `json:"pid"`
	AlreadyRunning bool   `json:"already_running"` // up found it running
	APIKeyPrefix   string `json:"api_key_prefix"`  // "bxk_live_" and the secret's first 8 characters
	Config         string `json:"config"`          // local.toml: base_url and api_key
	Home           string `json:"home"`            // BOXKITE_HOME
	StateDir       string `json:"state_dir"`       // the server's database, sandboxes and sockets
	Log            string `json:"log"`             // the server's log (none with --foreground: stderr)
	// Bastion is the ssh bastion's "host:port", absent when it did not
	// start (up warns; the server works without it).
	Bastion       string `json:"bastion,omitempty"`
	BastionPID    int    `json:"bastion_pid,omitempty"`
	ConsoleURL    string `json:"console_url"`
	E2BAPIURL     string `json:"e2b_api_url"` // E2B_API_URL and E2B_SANDBOX_URL for E2B's SDKs
	E2BSandboxURL string `json:"e2b_sandbox_url"`
}

func newUpCmd(app *App) *cobra.Command {
	var (
		opts upOptions
		out  outputFlags
	)
	cmd := &cobra.Command{
		Use:   "up [--port N] [--bastion-port N] [--foreground] [--json [FIELDS]]",
		Short: "Start the local boxkite server",
		Long: `Start boxkite-server on 127.0.0.1 with SQLite and the local (Linux
namespaces) driver, write ~/.boxkite/local.toml with its URL and an API key,
and return once it is ready. The URL is printed on stdout; the server's log is
~/.boxkite/server.log. Running up again when the server is up does nothing.

The server also speaks E2B's API: up prints the E2B_API_URL and
E2B_SANDBOX_URL to export for E2B's SDKs (docs/e2b.md).

--json prints, instead of the URL, what up started or found: the URL and
pid, the API key's prefix, the config, state and log paths, the bastion,
the console's and E2B's URLs.

boxkite-server and boxkite-sidecar are looked for next to boxkite, then on PATH.`,
		Example: "  boxkite up\n  boxkite up --port 9000 --bastion-port 2200\n  boxkite up --foreground\n  boxkite up --json url,pid,state_dir",
		GroupID: groupLocal,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.port < 0 || opts.port > 65535 {
				return usageErrorf(helpHint(cmd), "--port must be between 1 and 65535")
			}
			if opts.bastionPort < 0 || opts.bastionPort > 65535 {
				return usageErrorf(helpHint(cmd), "--bastion-port must be between 1 and 65535")
			}
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			opts.json = jsonOut(asJSON, &out)
			return runUp(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().IntVar(&opts.port, "port", 0, "port on 127.0.0.1 (default 8090, or a free one when 8090 is taken)")
	cmd.Flags().IntVar(&opts.bastionPort, "bastion-port", 0, "port of the ssh bastion on 127.0.0.1 (default the previous run's, else 2222, else a free one)")
	cmd.Flags().BoolVar(&opts.foreground, "foreground", false, "run attached, logging to stderr, until interrupted")
	out.register(cmd, upResult{})
	return cmd
}

func runUp(ctx context.Context, app *App, opts upOptions) error {
	home, _, err := resolveHome()
	if err != nil {
		return err
	}
	p := pathsFor(home)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", home, err)
	}
	local, err := readFileConfig(p.config)
	if err != nil {
		return err
	}
	if pid, err := runningServer(p); err != nil {
		return err
	} else if pid != 0 {
		return alreadyUp(ctx, app, p, local, pid, opts)
	}
	server, err := findCompanion(serverBinary)
	if err != nil {
		return err
	}
	sidecar, err := findCompanion(sidecarBinary)
	if err != nil {
		return err
	}
	key := local.APIKey
	if !apiKeyPattern.MatchString(key) {
		if key, err = newAPIKey(); err != nil {
			return err
		}
	}
	ln, err := listenPort(opts.port, local.BaseURL)
	if err != nil {
		return err
	}
	defer ln.Close() // after the start, the server's copy is the one that counts
	lnFile, err := ln.File()
	if err != nil {
		return fmt.Errorf("hand the listening socket to the server: %w", err)
	}
	defer lnFile.Close()
	url := fmt.Sprintf("http://127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)
	if err := updateFileConfig(p.config, func(fc *fileConfig) { fc.BaseURL, fc.APIKey = url, key }); err != nil {
		return err
	}
	noteHostedConfig(app, home)
	c := client.New(url, key)
	if err := ensureBastionKey(p.bastionKey); err != nil {
		return err
	}
	if err := ensureKeyFile(p.secretsKey, "secrets key", 32); err != nil {
		return err
	}
	keyPipe, err := secretPipe(key)
	if err != nil {
		return err
	}
	defer keyPipe.Close() // the server has its own copy
	args, env := serverArgs(p, sidecar), serverEnv(p)
	// Descriptors 3 and 4 (serverArgs). Ours are closed once the server
	// has its copies, so a server that dies leaves no one listening and
	// waitReady's probes are refused instead of queueing.
	inherit := []*os.File{keyPipe, lnFile}
	closeOurs := func() { ln.Close(); lnFile.Close() }
	if opts.foreground {
		return runForeground(ctx, app, p, c, server, args, env, inherit, closeOurs, opts, local.Bastion)
	}

	pid, err := startBackground(ctx, app, p, c, server, args, env, inherit, closeOurs)
	if err != nil {
		return err
	}
	fmt.Fprintf(app.IO.ErrOut, "boxkite server ready at %s (pid %d)\n", url, pid)
	res := upResult{URL: url, PID: pid, APIKeyPrefix: keyPrefix(key), Log: p.log}
	return upReady(ctx, app, p, &res, bastionWish{local.Bastion, opts.bastionPort}, opts.json)
}

// upReady starts (or keeps) the bastion, says how to reach the ready
// server, and prints res: as JSON when out is set, else its URL alone
// on stdout, for scripts.
func upReady(ctx context.Context, app *App, p localPaths, res *upResult, bastion bastionWish, out *outputFlags) error {
	res.Bastion = upBastion(ctx, app, p, res.URL, bastion)
	if res.Bastion != "" {
		res.BastionPID, _ = runningBastion(p)
	}
	printE2BEnv(app, res.URL)
	printConsoleURL(app, res.URL)
	if out == nil {
		fmt.Fprintln(app.IO.Out, res.URL)
		return nil
	}
	res.Home, res.Config, res.StateDir = p.home, p.config, p.state
	res.ConsoleURL = strings.TrimRight(res.URL, "/") + consolePath
	res.E2BAPIURL, res.E2BSandboxURL = res.URL, res.URL
	return out.write(app.IO, res)
}

// keyPrefix is how an API key is named where it is not shown: its
// prefix and the secret's first 8 characters, as the server lists keys.
func keyPrefix(key string) string {
	n := len(api.APIKeyPrefix) + 8
	if len(key) < n {
		return ""
	}
	return key[:n]
}

// startBackground starts the server detached, logging to p.log, records
// its pid and waits until it answers; a server that fails to start is
// stopped, with a hint of its log's new lines.
func startBackground(ctx context.Context, app *App, p localPaths, c *client.Client, bin string, args, env []string, inherit []*os.File, closeOurs func()) (int, error) {
	logStart := fileSize(p.log)
	cmd, exited, err := startDetached(bin, args, env, p.log, inherit...)
	if err != nil {
		return 0, err
	}
	closeOurs()
	pid := cmd.Process.Pid
	if err := writePID(p.pid, pid); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		return 0, err
	}
	progress := newProgress(app, "starting boxkite-server")
	err = waitReady(ctx, c, exited, readyTimeout, progress.tick)
	progress.done()
	if err != nil {
		// Don't leave a half-started server behind; its log says why it failed.
		stopProcess(context.WithoutCancel(ctx), pid, 2*time.Second, nil)
		os.Remove(p.pid)
		return 0, &hintError{err: err, hint: logHint(p.log, logStart)}
	}
	return pid, nil
}

// printE2BEnv tells how to point E2B's SDKs at the server (docs/e2b.md):
// the control plane and every sandbox's traffic are on its one URL. The
// lines go to stderr; stdout keeps the URL alone for scripts.
func printE2BEnv(app *App, url string) {
	fmt.Fprintf(app.IO.ErrOut, "E2B SDKs (docs/e2b.md; E2B_API_KEY is your boxkite API key):\n")
	fmt.Fprintf(app.IO.ErrOut, "export E2B_API_URL=%s\n", url)
	fmt.Fprintf(app.IO.ErrOut, "export E2B_SANDBOX_URL=%s\n", url)
}

// upBastion starts (or keeps) the local boxkite-bastion, says where it
// is and returns its address. A bastion that will not start does not fail
// up, whose server works without it; it is reported with what to do, and
// the address is "".
func upBastion(ctx context.Context, app *App, p localPaths, serverURL string, wish bastionWish) string {
	addr, err := ensureLocalBastion(ctx, p, serverURL, wish)
	if err != nil {
		fmt.Fprintf(app.IO.ErrOut, "warning: boxkite-bastion did not start, so ssh to sandboxes is off: %s\n", message(err))
		hint := "see " + p.bastionLog + "; 'boxkite doctor' checks the binaries"
		if he, ok := errors.AsType[*hintError](err); ok {
			hint = he.hint
		}
		fmt.Fprintf(app.IO.ErrOut, "hint: %s\n", hint)
		return ""
	}
	host, port, _ := net.SplitHostPort(addr)
	fmt.Fprintf(app.IO.ErrOut, "boxkite bastion ready at %s (ssh -p %s <sandbox-id>@%s)\n", addr, port, host)
	return addr
}

// alreadyUp handles up when the pid file names a live server.
func alreadyUp(ctx context.Context, app *App, p localPaths, local fileConfig, pid int, opts upOptions) error {
	if local.BaseURL == "" {
		return &hintError{
			err:  fmt.Errorf("boxkite-server is running (pid %d) but %s is missing", pid, p.config),
			hint: "run 'boxkite down' and then 'boxkite up'",
		}
	}
	c := client.New(local.BaseURL, local.APIKey)
	// It may still be starting (another up is waiting for it).
	if err := waitReady(ctx, c, nil, readyTimeout, nil); err != nil {
		return &hintError{
			err:  fmt.Errorf("boxkite-server is running (pid %d) but not ready at %s: %w", pid, local.BaseURL, err),
			hint: "run 'boxkite down' and then 'boxkite up'; the log is " + p.log,
		}
	}
	fmt.Fprintf(app.IO.ErrOut, "boxkite server already running at %s (pid %d)\n", local.BaseURL, pid)
	if opts.port != 0 && !strings.HasSuffix(local.BaseURL, fmt.Sprintf(":%d", opts.port)) {
		fmt.Fprintf(app.IO.ErrOut, "note: it is not on port %d; run 'boxkite down' first to move it\n", opts.port)
	}
	res := upResult{URL: local.BaseURL, PID: pid, AlreadyRunning: true, APIKeyPrefix: keyPrefix(local.APIKey), Log: p.log}
	return upReady(ctx, app, p, &res, bastionWish{local.Bastion, opts.bastionPort}, opts.json)
}

// noteHostedConfig warns when another context (config.toml, or one
// chosen with context use) would shadow the local server.
func noteHostedConfig(app *App, home string) {
	cfg, err := app.Config()
	if err != nil || (cfg.Local && cfg.Context == contextLocal) {
		return
	}
	if cfg.Context != contextLocal && !strings.HasPrefix(cfg.Sources[keyBaseURL], "flag ") && !strings.HasPrefix(cfg.Sources[keyBaseURL], "env ") {
		fmt.Fprintf(app.IO.ErrOut, "note: commands use context %s (%s), not the local server; run 'boxkite context use local' or pass --context local to use it\n",
			cfg.Context, cfg.BaseURL)
		return
	}
	fmt.Fprintf(app.IO.ErrOut, "note: commands use %s (from %s), not the local server; pass --url or unset it to use the local one\n",
		cfg.BaseURL, cfg.Sources[keyBaseURL])
}

func logHint(path string, offset int64) string {
	tail := logTail(path, offset, 15)
	if tail == "" {
		return "see " + path
	}
	return path + " ends with:\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
}

// runForeground runs the server attached to this terminal until it exits or
// ctx is cancelled (Ctrl-C), which stops it with SIGTERM.
// inherit are its descriptors 3, 4, … (serverArgs); closeOurs runs once it
// has them.
func runForeground(ctx context.Context, app *App, p localPaths, c *client.Client, bin string, args, env []string, inherit []*os.File, closeOurs func(), opts upOptions, recordedBastion string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.ExtraFiles = inherit
	cmd.Stdout, cmd.Stderr = app.IO.ErrOut, app.IO.ErrOut // server logs are chatter
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = serverStopTimeout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	closeOurs()
	if err := writePID(p.pid, cmd.Process.Pid); err != nil {
		return err
	}
	defer os.Remove(p.pid)
	readyCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	pid := cmd.Process.Pid
	go func() {
		if waitReady(readyCtx, c, nil, readyTimeout, nil) == nil {
			res := upResult{URL: c.BaseURL, PID: pid, APIKeyPrefix: keyPrefix(c.APIKey)}
			if err := upReady(readyCtx, app, p, &res, bastionWish{recordedBastion, opts.bastionPort}, opts.json); err != nil {
				fmt.Fprintf(app.IO.ErrOut, "warning: %s\n", message(err))
			}
		}
	}()
	// The bastion is detached like up's; it goes when the server does.
	defer stopLocalBastion(context.WithoutCancel(ctx), p)
	err := cmd.Wait()
	if ctx.Err() != nil {
		return nil // stopped on request
	}
	if err != nil {
		return fmt.Errorf("boxkite-server: %w", err)
	}
	return nil
}

func newDownCmd(app *App) *cobra.Command {
	var conf confirmation
	cmd := &cobra.Command{
		Use: "down",
		Example: `  boxkite down
  boxkite down --yes`,
		Short: "Stop the local boxkite server, its bastion and its sandboxes",
		Long: `Stop the local bastion and server; the server deletes its sandboxes as it
stops. Then, whatever state the server stopped in (cleanly, crashed, killed,
or on a host out of processes), remove what is left of it on the host:
sandbox processes, cgroups, disks and their loop devices, and the mounts of
volumes and images (boxkite-server cleanup). Volumes, images and the
database keep their data. If something cannot be removed, down says what
it is and the command that removes it, and exits 1.

With sandboxes active it asks first on a terminal, and needs --yes elsewhere.`,
		GroupID: groupLocal,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, _, err := resolveHome()
			if err != nil {
				return err
			}
			p := pathsFor(home)
			if sbs := activeLocalSandboxes(cmd.Context(), app, p); len(sbs) > 0 {
				names := make([]string, len(sbs))
				for i, sb := range sbs {
					names[i] = sandboxName(sb)
				}
				q := fmt.Sprintf("Stop the local server and destroy its %d active %s (%s)?", len(sbs), plural(len(sbs), "sandbox"), itemList(names))
				if err := conf.ask(app, q); err != nil {
					return err
				}
			}
			// The bastion first: its sessions are told why they end.
			if bpid, err := stopLocalBastion(cmd.Context(), p); err != nil {
				return err
			} else if bpid != 0 {
				fmt.Fprintf(app.IO.ErrOut, "boxkite bastion stopped (pid %d)\n", bpid)
			}
			if err := stopLocalServer(cmd.Context(), app, p); err != nil {
				return err
			}
			// Whatever state the server stopped in, nothing it made stays.
			return cleanUpLocal(cmd.Context(), p)
		},
	}
	conf.register(cmd)
	return cmd
}

// activeLocalSandboxes lists the local server's active sandboxes, for
// down's question; none when the server is not running or does not
// answer quickly (down must still stop a server that hangs).
func activeLocalSandboxes(ctx context.Context, app *App, p localPaths) []api.Sandbox {
	if pid, err := readPID(p.pid); err != nil || pid == 0 || !isBoxkiteServer(pid) {
		return nil
	}
	fc, err := readFileConfig(p.config)
	if err != nil || fc.BaseURL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c := &client.Client{BaseURL: fc.BaseURL, APIKey: fc.APIKey, UserAgent: "boxkite-cli/" + app.Version}
	sbs, err := c.ListSandboxes(ctx, true)
	if err != nil {
		return nil
	}
	return sbs
}

// stopLocalServer stops the server the pid file names, if it runs.
func stopLocalServer(ctx context.Context, app *App, p localPaths) error {
	pid, err := readPID(p.pid)
	if err != nil {
		return err
	}
	if pid == 0 {
		fmt.Fprintln(app.IO.ErrOut, "boxkite server is not running")
		return nil
	}
	if !isBoxkiteServer(pid) {
		if err := os.Remove(p.pid); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale pid file: %w", err)
		}
		fmt.Fprintln(app.IO.ErrOut, "boxkite server is not running (removed a stale pid file)")
		return nil
	}
	prog := newProgress(app, "stopping the boxkite server (it stores what sandboxes wrote first)")
	err = stopProcess(ctx, pid, serverStopTimeout, prog.tick)
	prog.done()
	if err != nil {
		return err
	}
	if err := os.Remove(p.pid); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pid file: %w", err)
	}
	fmt.Fprintf(app.IO.ErrOut, "boxkite server stopped (pid %d)\n", pid)
	return nil
}

// progress shows "doing something… 1.2s" on a terminal and nothing otherwise.
type progress struct {
	app   *App
	what  string
	shown bool
}

func newProgress(app *App, what string) *progress { return &progress{app: app, what: what} }

func (p *progress) tick(elapsed time.Duration) {
	if !p.app.IO.ErrTTY || elapsed < 300*time.Millisecond {
		return
	}
	p.shown = true
	fmt.Fprintf(p.app.IO.ErrOut, "\r%s… %.1fs", p.what, elapsed.Seconds())
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.app.IO.ErrOut, "\r\x1b[K")
	}
}
