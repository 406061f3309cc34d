package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// maxStdin bounds the piped stdin that exec forwards; it travels in one JSON request.
const maxStdin = 10 << 20

type execOptions struct {
	sandbox    string
	timeout    time.Duration
	cwd        string
	env        []string
	background bool
	maxRuntime time.Duration
	maxOutput  int64 // per stream; 0 means the server's default
	stopAtCap  bool
	out        outputFlags
}

func newExecCmd(app *App) *cobra.Command {
	var opts execOptions
	cmd := &cobra.Command{
		Use:     "exec [flags] -- COMMAND [ARG...]",
		Short:   "Run a command in a sandbox",
		GroupID: groupSandboxes,
		Long: `Run a command in a sandbox with /bin/sh -c and stream its output live:
its stdout to stdout, its stderr to stderr. Stdin that is not a terminal is read
to the end and forwarded (redirect it from /dev/null to send none). boxkite
exits with the command's exit code, or 124 when it ran out of time. A command
killed at the sandbox's memory limit exits 137, and boxkite says so and how to
get a sandbox with more memory (--size of 'boxkite session create').

Ctrl-C is sent to the command as SIGINT (SIGTERM and SIGHUP to boxkite go
as themselves): it ends its own way, and boxkite exits with its code (130
when SIGINT ended it); with --json, after printing the result it ended
with. A second Ctrl-C within 2 s kills the command and exits 130 at once,
printing nothing more.

Stdin and output travel as text: stdin that is not UTF-8 (a tar stream, an
image) is refused, and output bytes that are not UTF-8 are shown as U+FFFD,
with a note on stderr. Binary data goes byte for byte with 'boxkite files cp':
'... | boxkite files cp - :PATH' in, 'boxkite files cp :PATH -' out.

Words after -- are quoted for the shell and joined, so they arrive exactly as
typed; a single argument is used as the shell command as it is.

Each of stdout and stderr keeps at most --max-output (1M unless set; the
server has a maximum, 16M by default). Output past it is dropped, the
command runs on to its end, and a note on stderr says how much was cut
(--json: "truncated": true with the byte counts of each stream). With
--stop-on-output-limit the command is killed at the limit instead.

With -b the command runs in the background: its process id is printed and
boxkite returns at once. Follow it with 'boxkite logs', list it with
'boxkite ps' and stop it with 'boxkite kill'. It is stopped when it has run
--max-runtime.

Without --sandbox, the only active sandbox is used; in local mode one is created
when none is active.`,
		Example: `  boxkite exec -- python3 -c 'print(1+1)'
  boxkite exec "ls -la | head -3"
  echo hello | boxkite exec -- cat
  boxkite exec -s build --timeout 5m --cwd /workspace/app -e CI=1 -- make test
  boxkite exec -b --max-runtime 2h -- python3 -m http.server 8000
  boxkite exec --max-output 8M -- cat big.log`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := opts.out.wantJSON(cmd)
			if err != nil {
				return err
			}
			req, err := opts.request(cmd, args)
			if err != nil {
				return err
			}
			if opts.background {
				start, err := opts.startRequest(cmd, req)
				if err != nil {
					return err
				}
				return runExecBackground(cmd.Context(), app, opts, start, asJSON)
			}
			return runExec(cmd.Context(), app, opts, req, asJSON)
		},
	}
	// Everything after the command's first word belongs to the command, so
	// `boxkite exec ls -la` works without --.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVarP(&opts.sandbox, "sandbox", "s", "", "sandbox `ID`, unique id prefix or label")
	cmd.Flags().Var(newDurationValue(&opts.timeout, api.DefaultExecTimeout*time.Second, time.Second), "timeout",
		"how long the command may run (30s, 5m, 1h; a bare number is seconds; at most 1h)")
	cmd.Flags().StringVar(&opts.cwd, "cwd", "", "working `directory` in the sandbox (default /workspace)")
	cmd.Flags().StringArrayVarP(&opts.env, "env", "e", nil, "set an environment variable, `KEY=VALUE` (repeatable)")
	cmd.Flags().BoolVarP(&opts.background, "background", "b", false, "start the command in the background and print its process id")
	cmd.Flags().Var(newDurationValue(&opts.maxRuntime, time.Hour, time.Second), "max-runtime",
		"with -b: stop the process after this long (at most 4h)")
	cmd.Flags().Var(newByteSizeValue(&opts.maxOutput, 0), "max-output",
		"keep at most `SIZE` of each of stdout and stderr (512K, 8M; default 1M, at most the server's maximum)")
	cmd.Flags().BoolVar(&opts.stopAtCap, "stop-on-output-limit", false, "kill the command when a stream passes --max-output, instead of dropping the rest")
	opts.out.register(cmd, api.ExecResult{})
	cmd.RegisterFlagCompletionFunc("sandbox", completeSandboxes(app, true))
	return cmd
}

// startRequest turns an exec request into a background process start.
// Processes take no cwd or environment of their own, so both become part
// of the shell command.
func (o *execOptions) startRequest(cmd *cobra.Command, req api.ExecRequest) (api.ProcessStartRequest, error) {
	if cmd.Flags().Changed("timeout") {
		return api.ProcessStartRequest{}, usageErrorf("limit a background process with --max-runtime", "--timeout does not apply with -b")
	}
	if cmd.Flags().Changed("max-output") || o.stopAtCap {
		return api.ProcessStartRequest{}, usageErrorf("a background process keeps its newest output; read it with 'boxkite logs'",
			"--max-output and --stop-on-output-limit do not apply with -b")
	}
	secs := wholeUnits(o.maxRuntime, time.Second)
	if secs < 1 || secs > api.MaxProcessRuntime {
		return api.ProcessStartRequest{}, usageErrorf(helpHint(cmd), "--max-runtime must be between 1s and 4h, got %s", compactDuration(o.maxRuntime))
	}
	command := req.Command
	if len(req.Env) > 0 {
		keys := make([]string, 0, len(req.Env))
		for k := range req.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		assign := make([]string, len(keys))
		for i, k := range keys {
			assign[i] = k + "=" + shellQuote(req.Env[k])
		}
		command = "export " + strings.Join(assign, " ") + " && " + command
	}
	if req.Cwd != "" {
		command = "cd " + shellQuote(req.Cwd) + " && " + command
	}
	return api.ProcessStartRequest{Command: command, MaxRuntimeSeconds: secs}, nil
}

func runExecBackground(ctx context.Context, app *App, opts execOptions, req api.ProcessStartRequest, asJSON bool) error {
	c, sb, err := target(ctx, app, opts.sandbox, true)
	if err != nil {
		return err
	}
	res, err := c.StartProcess(ctx, sb.ID, req)
	if err != nil {
		return fmt.Errorf("start process in sandbox %s: %w", sb.ID, err)
	}
	if asJSON {
		return opts.out.write(app.IO, res)
	}
	fmt.Fprintln(app.IO.Out, res.ProcessID)
	if app.IO.ErrTTY {
		fmt.Fprintf(app.IO.ErrOut, "follow its output with 'boxkite logs -f %s'\n", res.ProcessID)
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// request validates the flags and builds the API request; stdin is added later.
func (o *execOptions) request(cmd *cobra.Command, args []string) (api.ExecRequest, error) {
	secs := wholeUnits(o.timeout, time.Second)
	if secs < 1 || secs > api.MaxExecTimeout {
		return api.ExecRequest{}, usageErrorf(helpHint(cmd), "--timeout must be between 1s and 1h, got %s", compactDuration(o.timeout))
	}
	req := api.ExecRequest{Command: commandString(args), Timeout: secs, Cwd: o.cwd, MaxOutputBytes: o.maxOutput}
	if o.stopAtCap {
		req.OnOutputLimit = api.OutputLimitStop
	}
	for _, kv := range o.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(k) {
			return api.ExecRequest{}, usageErrorf("write it as -e NAME=VALUE", "invalid --env %q", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	return req, nil
}

// readStdin reads the piped stdin that exec forwards: at most maxStdin
// bytes of UTF-8 text.
func readStdin(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxStdin+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	if len(b) > maxStdin {
		return "", &hintError{err: fmt.Errorf("stdin is larger than %d MiB", maxStdin>>20), hint: "copy large inputs into the sandbox as files"}
	}
	if err := textStdin(b); err != nil {
		return "", err
	}
	return string(b), nil
}

// binaryAltered reports whether stdout was not all UTF-8 text: output
// travels as JSON strings, which carry each byte that is not UTF-8 as
// U+FFFD (3 bytes), so what was shown differs from what the command
// wrote. shown is the length of the stdout shown, replaced whether it
// holds a U+FFFD; both are needed, as a redacted secret changes the length
// too. Truncated output is not compared.
func binaryAltered(shown int64, replaced bool, o api.ExecOutputInfo) bool {
	return !o.Truncated && replaced && shown != o.StdoutBytes
}

// binaryNote says, on stderr, that stdout arrived altered and how to copy
// it as it is.
func binaryNote(w io.Writer) {
	fmt.Fprintln(w, "note: stdout was not all UTF-8 text: each byte that is not was shown as U+FFFD, so binary output arrived altered")
	fmt.Fprintln(w, "note: copy binary output byte for byte: have the command write a file, then 'boxkite files cp :PATH -'")
}

// textStdin refuses stdin that is not UTF-8 text: it travels as a JSON
// string, which would carry each byte that is not UTF-8 as U+FFFD, so the
// command would read other bytes than were piped (a tar stream arrives
// altered and unpacks without a word).
func textStdin(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	at := 0
	for at < len(b) {
		r, n := utf8.DecodeRune(b[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return &hintError{
		err:  fmt.Errorf("stdin is not UTF-8 text (byte %d is 0x%02x): exec forwards text only", at, b[at]),
		hint: "send binary data as a file, byte for byte: '... | boxkite files cp - :/workspace/FILE', then exec a command that reads it",
	}
}

func runExec(ctx context.Context, app *App, opts execOptions, req api.ExecRequest, asJSON bool) error {
	if !app.IO.InTTY && app.IO.In != nil {
		in, err := readStdin(app.IO.In)
		if err != nil {
			return err
		}
		req.Stdin = in
	}
	cfg, c, err := app.configClient()
	if err != nil {
		return err
	}
	sb, err := pickSandbox(ctx, c, opts.sandbox, cfg.Local, app.IO.ErrOut)
	if err != nil {
		return err
	}
	// The stream outlives this command's context, which an interrupt
	// ends: the interrupt goes to the command instead (exec_signal.go).
	streamCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	defer kill()
	interrupts := forwardInterrupts(c, sb.ID, kill)
	if asJSON {
		return runExecJSON(streamCtx, app, opts, c, sb, req, interrupts)
	}
	stderr := &lineEnd{w: app.IO.ErrOut, atStart: true}
	errOut := &noteHold{w: stderr, note: timeoutNote(req.Timeout)}
	var shown int64 // stdout bytes shown
	replaced := false
	res, err := c.ExecStreamStarted(streamCtx, sb.ID, req, interrupts.started, func(ev api.ExecEvent) error {
		var w io.Writer = app.IO.Out
		if ev.Type == api.EventStderr {
			w = errOut
		} else {
			shown += int64(len(ev.Data))
			replaced = replaced || strings.Contains(ev.Data, "\uFFFD")
		}
		_, err := io.WriteString(w, ev.Data)
		return err
	})
	if interrupts.stop() {
		return context.Canceled // killed by a second interrupt: exit 130 at once, quietly
	}
	if err != nil {
		_ = errOut.end(false)
		// Our "error: …" line must not be glued to the command's last,
		// unterminated line of stderr.
		stderr.finishLine()
		return fmt.Errorf("exec in sandbox %s: %w", sb.ID, err)
	}
	// A timed-out command's "error: the command timed out …" says what
	// the sandbox's note says: once is enough.
	if err := errOut.end(res.StopReason == api.StopReasonTimeout); err != nil {
		return err
	}
	if res.Truncated {
		stderr.finishLine()
		truncationNote(app.IO.ErrOut, res.ExecOutputInfo)
	}
	if binaryAltered(shown, replaced, res.ExecOutputInfo) {
		stderr.finishLine()
		binaryNote(app.IO.ErrOut)
	}
	err = exitFor(res.ExitCode, res.StopReason, opts.timeout, sb.Size)
	if es, ok := errors.AsType[*exitStatus](err); ok && es.msg != "" {
		stderr.finishLine()
	}
	return err
}

// runExecJSON is exec --json: it streams as exec does, so that the
// interrupts have the exec's id to go to the command by, and gathers the
// output into the one result it prints, shaped as the plain exec's.
func runExecJSON(ctx context.Context, app *App, opts execOptions, c *client.Client, sb api.Sandbox, req api.ExecRequest, interrupts *execInterrupts) error {
	var stdout, stderr strings.Builder
	res, err := c.ExecStreamStarted(ctx, sb.ID, req, interrupts.started, func(ev api.ExecEvent) error {
		if ev.Type == api.EventStderr {
			stderr.WriteString(ev.Data)
		} else {
			stdout.WriteString(ev.Data)
		}
		return nil
	})
	if interrupts.stop() {
		return context.Canceled // killed by a second interrupt: exit 130 at once, quietly
	}
	if err != nil {
		return fmt.Errorf("exec in sandbox %s: %w", sb.ID, err)
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if err := opts.out.write(app.IO, res); err != nil {
		return err
	}
	truncationNote(app.IO.ErrOut, res.ExecOutputInfo)
	if binaryAltered(int64(len(res.Stdout)), strings.Contains(res.Stdout, "\uFFFD"), res.ExecOutputInfo) {
		binaryNote(app.IO.ErrOut)
	}
	return exitFor(res.ExitCode, res.StopReason, opts.timeout, sb.Size)
}

// truncationNote tells, on stderr, which streams were cut at the output
// limit and how much the command wrote; nothing when none was.
func truncationNote(w io.Writer, o api.ExecOutputInfo) {
	if !o.Truncated {
		return
	}
	var cut []string
	for _, s := range []struct {
		name string
		n    int64
	}{{"stdout", o.StdoutBytes}, {"stderr", o.StderrBytes}} {
		if s.n > o.OutputLimitBytes {
			cut = append(cut, fmt.Sprintf("%s wrote %s", s.name, humanBytes(s.n)))
		}
	}
	fmt.Fprintf(w, "note: output truncated: %s; only the first %s of each stream is shown\n",
		strings.Join(cut, ", "), humanBytes(o.OutputLimitBytes))
	if o.StopReason == api.StopReasonOutputLimit {
		fmt.Fprintln(w, "note: the command was stopped at the limit (--stop-on-output-limit)")
		return
	}
	fmt.Fprintln(w, "note: the command ran to its end; raise the limit with --max-output, or write the output to a file")
}

// lineEnd is a writer that remembers whether it is at the start of a line.
type lineEnd struct {
	w       io.Writer
	atStart bool
}

func (l *lineEnd) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.atStart = p[len(p)-1] == '\n'
	}
	return l.w.Write(p)
}

// finishLine ends a partial line so that what follows starts on its own.
func (l *lineEnd) finishLine() {
	if !l.atStart {
		l.Write([]byte("\n"))
	}
}

// exitFor turns the remote exit code into this process's exit status,
// saying the command timed out, or ran out of memory, only when the
// sandbox says it killed it so: a command's own exit 124, or a kill -9's
// 137, is just an exit code. size is the sandbox's.
func exitFor(code int, stopReason string, timeout time.Duration, size string) error {
	switch {
	case code == 0:
		return nil
	case stopReason == api.StopReasonTimeout:
		return &exitStatus{code: code, msg: fmt.Sprintf("the command timed out after %s (exit code %d)", compactDuration(timeout), code), hint: timeoutHint(timeout)}
	case stopReason == api.StopReasonMemoryLimit:
		return &exitStatus{code: code, msg: fmt.Sprintf("the command was killed at the sandbox's memory limit (%sexit code %d)", sizeNote(size), code), hint: memoryHint(size)}
	}
	return &exitStatus{code: code}
}

// sizeNote names the size whose memory limit applied, when known.
func sizeNote(size string) string {
	if size == "" {
		return ""
	}
	return "size " + size + ", "
}

// memoryHint says how to give a command the memory limit killed more: a
// sandbox of a larger size (its memory is the size preset's), or, at the
// largest, less use.
func memoryHint(size string) string {
	switch size {
	case api.SizeSmall:
		return "create a sandbox with more memory: 'boxkite session create --size medium' (or large), or make the command use less"
	case api.SizeMedium:
		return "create a sandbox with more memory: 'boxkite session create --size large', or make the command use less"
	case api.SizeLarge:
		return "large is the largest --size: make the command use less memory (work in parts, stream instead of loading whole)"
	}
	return "a larger --size of 'boxkite session create' (small, medium, large) gives a sandbox more memory"
}

// timeoutHint says how to give a command that ran out of time more: a
// longer --timeout while there is room under its maximum, else the
// background, where --max-runtime allows hours.
func timeoutHint(timeout time.Duration) string {
	const bg = "run it in the background with -b (up to --max-runtime 4h) and follow it with 'boxkite logs -f'"
	if wholeUnits(timeout, time.Second) >= api.MaxExecTimeout {
		return "1h is the longest --timeout; " + bg
	}
	return "give it longer with --timeout (at most 1h), or " + bg
}

// commandString is the shell command for exec's arguments: one argument is
// already a command line; several are words to quote and join.
func commandString(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return shellJoin(args)
}

// shellJoin quotes each word for a POSIX shell and joins them with spaces,
// so that sh -c sees exactly these words.
func shellJoin(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(w string) string {
	if shellSafe.MatchString(w) {
		return w
	}
	// Inside single quotes nothing is special except the quote itself,
	// which is closed, escaped and reopened: ' → '\''.
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
