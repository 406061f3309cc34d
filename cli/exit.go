package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes; see design/CLI.md. exec also passes the remote exit code through.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitAuth        = 4
	exitLimit       = 5
	exitTimeout     = api.ExitCodeTimeout // 124, as timeout(1)
	exitInterrupted = 130                 // 128 + SIGINT
)

// usageError is a mistake on the command line: a bad flag, a missing or
// extra argument. It exits 2. A pointer type, so errors.AsType finds it
// through any amount of wrapping.
type usageError struct {
	err  error
	hint string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(hint, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), hint: hint}
}

// notFoundError is something the CLI itself could not find (a sandbox
// reference that matches nothing). It exits 3, like the API's not_found.
type notFoundError struct {
	err  error
	hint string
}

func (e *notFoundError) Error() string { return e.err.Error() }
func (e *notFoundError) Unwrap() error { return e.err }

// hintError is an ordinary failure (exit 1) with advice for the user.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// exitStatus ends the program with code and an optional message; it is how
// exec passes the remote command's exit code through. The command's own
// output has already been shown, so nothing else is printed.
type exitStatus struct {
	code int
	msg  string
	hint string // printed after msg, when both are set
}

func (e *exitStatus) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit status %d", e.code)
}

// Execute runs root with args and is the only place that prints an error or
// picks an exit code. Commands return errors; they never print or exit.
func Execute(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(joinJSONFields(root, args))
	root.SilenceErrors, root.SilenceUsage = true, true
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	stderr := root.ErrOrStderr()
	if e, ok := errors.AsType[*exitStatus](err); ok {
		if e.msg != "" {
			fmt.Fprintf(stderr, "error: %s\n", e.msg)
			if e.hint != "" {
				fmt.Fprintf(stderr, "hint: %s\n", e.hint)
			}
		}
		return e.code
	}
	code := exitCode(err)
	if code == exitInterrupted {
		return code // the user pressed Ctrl-C; they know
	}
	fmt.Fprintf(stderr, "error: %s\n", message(err))
	if hint := hintOf(err, root.PersistentFlags()); hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	}
	return code
}

// message is the text after "error: ". A connection failure is stated
// plainly instead of through the chain of wrapping operations.
func message(err error) string {
	if e, ok := errors.AsType[*client.ConnError](err); ok {
		if errors.Is(e.Err, syscall.ECONNREFUSED) {
			return "cannot reach the boxkite server at " + e.URL
		}
		return e.Error()
	}
	// A server-side failure is logged under its request id; the server's
	// hint tells users to look it up, so show it.
	if e, ok := errors.AsType[*api.Error](err); ok && e.Status >= 500 && e.RequestID != "" {
		return fmt.Sprintf("%s (request id %s)", err, e.RequestID)
	}
	return err.Error()
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	if _, ok := errors.AsType[*usageError](err); ok {
		return exitUsage
	}
	if _, ok := errors.AsType[*notFoundError](err); ok {
		return exitNotFound
	}
	if e, ok := errors.AsType[*rawAnswerError](err); ok {
		return statusExitCode(e.status)
	}
	if e, ok := errors.AsType[*api.Error](err); ok {
		return apiExitCode(e)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		return exitTimeout
	}
	return exitError
}

// apiExitCode branches on the stable code first and the status second.
func apiExitCode(e *api.Error) int {
	switch e.Code {
	case api.CodeNotFound:
		return exitNotFound
	case api.CodeUnauthorized, api.CodeInvalidAPIKey, api.CodeForbidden:
		return exitAuth
	case api.CodeLimitExceeded, api.CodeRateLimited, api.CodeInsufficientStorage, api.CodeHostCapacity:
		return exitLimit
	case api.CodeSessionBudgetExceeded:
		return exitLimit // a sandbox's spent exec budget is a limit, though the sidecar answers 403
	case api.CodeSidecarAuth, api.CodeSidecarNotReady:
		return exitError // between the server and a sandbox, not the user's credentials
	case api.CodePermissionDenied:
		return exitError // a file the sandbox user may not touch, not the caller's credentials
	case client.CodeBadResponse:
		return exitError // not boxkite answered: its 404 or 401 says nothing of boxkite's sandboxes or keys
	}
	return statusExitCode(e.Status)
}

// statusExitCode is the exit code of an error answer's HTTP status.
func statusExitCode(status int) int {
	switch status {
	case 404:
		return exitNotFound
	case 401, 403:
		return exitAuth
	case 429:
		return exitLimit
	}
	return exitError
}

// rawAnswerError is a failed answer `boxkite api` printed as it came (not
// boxkite's envelope): it exits by its HTTP status, a page's too, since
// the caller asked for that path and reads the status, as with gh api.
type rawAnswerError struct {
	err    error
	status int
}

func (e *rawAnswerError) Error() string { return e.err.Error() }
func (e *rawAnswerError) Unwrap() error { return e.err }

// badResponseHint is the CLI's hint for an answer that is not boxkite's
// (client.CodeBadResponse), naming where the CLI's base URL comes from.
const badResponseHint = "check the base URL (--url, BOXKITE_URL or base_url: 'boxkite config show' says which is used) and any proxy in between"

// cutHint is the CLI's words for client.CutError's hint.
const cutHint = "the server stopped, restarted or dropped the connection before it answered: check it with 'boxkite status' and run this again; an exec that was cut may have run in part"

// hintOf lists the error types that carry hints; explicit beats a clever
// interface. flags are the root's, for the configuration a connection
// failure's hint depends on (nil: decide by the URL alone).
func hintOf(err error, flags *pflag.FlagSet) string {
	if e, ok := errors.AsType[*usageError](err); ok {
		return e.hint
	}
	if e, ok := errors.AsType[*notFoundError](err); ok {
		return e.hint
	}
	if e, ok := errors.AsType[*hintError](err); ok {
		return e.hint
	}
	if e, ok := errors.AsType[*handoff.Error](err); ok {
		return e.Hint
	}
	if e, ok := errors.AsType[*client.ConnError](err); ok {
		return connHint(e, flags)
	}
	if _, ok := errors.AsType[*client.CutError](err); ok {
		return cutHint
	}
	if e, ok := errors.AsType[*api.Error](err); ok {
		if e.Code == client.CodeBadResponse {
			return badResponseHint
		}
		if e.Hint != "" {
			return e.Hint
		}
		switch apiExitCode(e) {
		case exitAuth:
			return "check the API key: 'boxkite config show' tells which one is used and where it comes from"
		case exitLimit:
			return "wait a moment, or free capacity with 'boxkite session rm'"
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the server took too long to answer"
	}
	return ""
}

// flagError turns cobra's and pflag's flag errors into usage errors (exit 2).
func flagError(cmd *cobra.Command, err error) error {
	// A group ('boxkite files') parses the flags meant for a subcommand it
	// does not have: 'files cat -s demo x' is an unknown command, not an
	// unknown -s.
	if args := cmd.Flags().Args(); cmd.HasSubCommands() && len(args) > 0 {
		return unknownSubcommand(cmd, args)
	}
	return &usageError{err: numberFlagError(err), hint: helpHint(cmd)}
}

// numberFlagError says in words what pflag's error for a number flag's
// bad value says in Go ('strconv.ParseInt: parsing "x": invalid
// syntax'); other errors are returned as they are.
func numberFlagError(err error) error {
	iv, ok := errors.AsType[*pflag.InvalidValueError](err)
	if !ok {
		return err
	}
	ne, ok := errors.AsType[*strconv.NumError](err)
	if !ok {
		return err
	}
	name := "--" + iv.GetFlag().Name
	if errors.Is(ne.Err, strconv.ErrRange) {
		return fmt.Errorf("%s %q is out of range", name, iv.GetValue())
	}
	want := "a number"
	switch {
	case strings.HasPrefix(ne.Func, "ParseInt"), strings.HasPrefix(ne.Func, "ParseUint"), strings.HasPrefix(ne.Func, "Atoi"):
		want = "a whole number"
	case ne.Func == "ParseBool":
		want = "true or false"
	}
	return fmt.Errorf("%s %q is not %s", name, iv.GetValue(), want)
}

func helpHint(cmd *cobra.Command) string {
	return fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath())
}

// usageArgs wraps a cobra positional-argument validator so that its errors
// are usage errors (exit 2). cobra's count errors are put in words, with
// the command's use line as the hint.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := v(cmd, args)
		if err == nil {
			return nil
		}
		if field := unknownFieldArg(cmd, v, args); field != nil {
			return field
		}
		if counted := argCountError(cmd, err, args); counted != nil {
			return &usageError{err: counted, hint: "usage: " + cmd.UseLine() + "; '" + cmd.CommandPath() + " --help' has more"}
		}
		return &usageError{err: err, hint: helpHint(cmd)}
	}
}

// argCountError says what cobra's "accepts 1 arg(s), received 0" and, for
// a command without subcommands, NoArgs' "unknown command" mean, naming
// the command; nil for other errors.
func argCountError(cmd *cobra.Command, err error, args []string) error {
	if strings.HasPrefix(err.Error(), "unknown command ") && !cmd.HasSubCommands() && len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (got %q)", cmd.CommandPath(), args[0])
	}
	m := regexp.MustCompile(`^(accepts|requires) (at least |at most |between )?(\d+)( and \d+)? arg\(s\), (?:only )?received (\d+)$`).
		FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	want, last := m[2]+m[3]+m[4], m[3]
	if m[4] != "" {
		last = strings.TrimPrefix(m[4], " and ")
	}
	lo, _ := strconv.Atoi(m[3])
	hi, _ := strconv.Atoi(last)
	switch {
	case m[2] == "between " && lo == 0:
		want = "at most " + last
	case m[2] == "between " && hi == lo+1:
		want = m[3] + " or " + last
	}
	noun := "arguments"
	if last == "1" {
		noun = "argument"
	}
	return fmt.Errorf("%s takes %s %s (got %s)", cmd.CommandPath(), want, noun, m[5])
}

// idsOrAll takes ids as arguments or the --all flag (*all, read when the
// arguments are checked), not both and not neither: ids names them in the
// refusal of both, none is the refusal of neither.
func idsOrAll(all *bool, ids, none string) cobra.PositionalArgs {
	return usageArgs(func(_ *cobra.Command, args []string) error {
		switch {
		case *all && len(args) > 0:
			return errors.New("give " + ids + " or --all, not both")
		case !*all && len(args) == 0:
			return errors.New(none)
		}
		return nil
	})
}

// groupCmd makes a command that only holds subcommands reject unknown
// subcommands (exit 2) instead of printing help and exiting 0, which is
// cobra's default for every command but the root.
func groupCmd(cmd *cobra.Command) *cobra.Command {
	cmd.Args = unknownSubcommand
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}

// unknownSubcommand is the Args validator of commands that only hold subcommands.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := helpHint(c)
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		hint = "did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{err: fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath()), hint: hint}
}

// connHint is what to do when nothing answers at the server's URL. 'boxkite
// up' only helps when that URL is the local stack's (local.toml's, or the
// default); a loopback URL from another context, a flag or the environment
// is some other server, tunnel or port-forward, which up does not start.
func connHint(e *client.ConnError, flags *pflag.FlagSet) string {
	if !isLoopbackURL(e.URL) {
		return "check the server URL ('boxkite config show') and your network"
	}
	cfg, err := LoadConfig(flags)
	if err != nil || cfg.BaseURL != e.URL || cfg.localStack() {
		return "run 'boxkite up' to start the local server"
	}
	hint := fmt.Sprintf("nothing listens at %s (the base URL from %s), which is not the server 'boxkite up' starts: "+
		"start the server there, or the tunnel or port-forward to it", e.URL, cfg.Sources[keyBaseURL])
	switch cfg.Context {
	case contextLocal, contextHosted:
		return hint + "; 'boxkite config show' tells which values are in use"
	}
	return hint + fmt.Sprintf("; or point the context elsewhere with 'boxkite --context %s config set-url URL'", cfg.Context)
}
