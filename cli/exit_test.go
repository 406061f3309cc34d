package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

func TestExecuteExitCodes(t *testing.T) {
	t.Parallel()
	refused := &client.ConnError{URL: "http://127.0.0.1:8090", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	tests := []struct {
		name       string
		err        error
		wantCode   int
		wantStderr string
	}{
		{"ok", nil, 0, ""},
		{"plain error", errors.New("boom"), 1, "error: boom\n"},
		{"usage", usageErrorf("try --help", "bad flag"), 2, "error: bad flag\nhint: try --help\n"},
		{"wrapped usage", fmt.Errorf("exec: %w", usageErrorf("", "bad")), 2, "error: exec: bad\n"},
		{"cli not found", &notFoundError{err: errors.New("sandbox x not found"), hint: "list them"}, 3, "error: sandbox x not found\nhint: list them\n"},
		{
			"api not found", fmt.Errorf("get sandbox: %w", &api.Error{Status: 404, Code: api.CodeNotFound, Message: "sandbox not found", Hint: "check the id"}),
			3, "error: get sandbox: sandbox not found [not_found]\nhint: check the id\n",
		},
		{"404 without code", &api.Error{Status: 404, Message: "gone"}, 3, "error: gone\n"},
		{
			"unauthorized", &api.Error{Status: 401, Code: api.CodeInvalidAPIKey, Message: "invalid API key"},
			4, "error: invalid API key [invalid_api_key]\nhint: check the API key: 'boxkite config show' tells which one is used and where it comes from\n",
		},
		{"forbidden", &api.Error{Status: 403, Code: api.CodeForbidden, Message: "no", Hint: "ask an admin"}, 4, "error: no [forbidden]\nhint: ask an admin\n"},
		{"file permission is not auth", &api.Error{Status: 403, Code: api.CodePermissionDenied, Message: "the sandbox user may not write to f"}, 1, "error: the sandbox user may not write to f [permission_denied]\n"},
		{"limit", &api.Error{Status: 429, Code: api.CodeLimitExceeded, Message: "too many sandboxes", Hint: "remove one"}, 5, "error: too many sandboxes [limit_exceeded]\nhint: remove one\n"},
		{
			"exec budget spent is a limit, not auth", &api.Error{Status: 403, Code: api.CodeSessionBudgetExceeded, Message: "session exec budget exceeded: 500 of 500 calls used", Hint: "create a new sandbox to go on"},
			5, "error: session exec budget exceeded: 500 of 500 calls used [session_budget_exceeded]\nhint: create a new sandbox to go on\n",
		},
		{"rate limited by status", &api.Error{Status: 429, Message: "slow down"}, 5, "error: slow down\nhint: wait a moment, or free capacity with 'boxkite session rm'\n"},
		{"host full", &api.Error{Status: 507, Code: api.CodeInsufficientStorage, Message: "the host is low on disk", Hint: "free space", RequestID: "r1"}, 5, "error: the host is low on disk [insufficient_storage] (request id r1)\nhint: free space\n"},
		{"host at capacity", &api.Error{Status: 503, Code: api.CodeHostCapacity, Message: "the host is near its thread limit"}, 5, "error: the host is near its thread limit [host_capacity]\nhint: wait a moment, or free capacity with 'boxkite session rm'\n"},
		{"sandbox lost", &api.Error{Status: 410, Code: api.CodeSandboxLost, Message: "sandbox x is lost"}, 1, "error: sandbox x is lost [sandbox_lost]\n"},
		{"sidecar auth is not the user's auth", &api.Error{Status: 401, Code: api.CodeSidecarAuth, Message: "sidecar refused"}, 1, "error: sidecar refused [sidecar_auth]\n"},
		{"server error", &api.Error{Status: 500, Code: api.CodeInternal, Message: "internal error"}, 1, "error: internal error [internal_error]\n"},
		{
			"server error with request id", fmt.Errorf("create sandbox: %w", &api.Error{Status: 502, Code: api.CodeSandboxFailed, Message: "could not create the sandbox", Hint: "see the log", RequestID: "r42"}),
			1, "error: create sandbox: could not create the sandbox [sandbox_operation_failed] (request id r42)\nhint: see the log\n",
		},
		{
			"not boxkite: its 404 is no not-found", fmt.Errorf("list sandboxes: %w", &api.Error{Status: 404, Code: client.CodeBadResponse, Message: "the server at http://x.example answered 404 text/html, not boxkite's JSON", Hint: client.BadResponseHint}),
			1, "error: list sandboxes: the server at http://x.example answered 404 text/html, not boxkite's JSON [bad_response]\nhint: " + badResponseHint + "\n",
		},
		{"remote exit code", &exitStatus{code: 7}, 7, ""},
		{"remote timeout", &exitStatus{code: 124, msg: "the command timed out after 1s (exit code 124)"}, 124, "error: the command timed out after 1s (exit code 124)\n"},
		{"remote timeout with its hint", exitFor(124, api.StopReasonTimeout, time.Second, api.SizeSmall), 124, "error: the command timed out after 1s (exit code 124)\nhint: " + timeoutHint(time.Second) + "\n"},
		{
			"memory limit with its hint", exitFor(137, api.StopReasonMemoryLimit, time.Second, api.SizeSmall),
			137, "error: the command was killed at the sandbox's memory limit (size small, exit code 137)\nhint: create a sandbox with more memory: 'boxkite session create --size medium' (or large), or make the command use less\n",
		},
		{
			"memory limit of the largest size", exitFor(137, api.StopReasonMemoryLimit, time.Second, api.SizeLarge),
			137, "error: the command was killed at the sandbox's memory limit (size large, exit code 137)\nhint: large is the largest --size: make the command use less memory (work in parts, stream instead of loading whole)\n",
		},
		{"a kill -9 is just an exit code", exitFor(137, "", time.Second, api.SizeSmall), 137, ""},
		{"a hint without a message is not printed", &exitStatus{code: 7, hint: "h"}, 7, ""},
		{
			"connection refused", fmt.Errorf("list sandboxes: %w", refused),
			1, "error: cannot reach the boxkite server at http://127.0.0.1:8090\nhint: run 'boxkite up' to start the local server\n",
		},
		{
			"remote server unreachable", &client.ConnError{URL: "https://b.example", Err: &net.DNSError{Err: "no such host", Name: "b.example"}},
			1, "error: cannot reach the boxkite server at https://b.example: lookup b.example: no such host\nhint: check the server URL ('boxkite config show') and your network\n",
		},
		{"interrupted", fmt.Errorf("exec: %w", context.Canceled), 130, ""},
		{"client deadline", &url.Error{Op: "Post", URL: "x", Err: context.DeadlineExceeded}, 124, "error: Post \"x\": context deadline exceeded\nhint: the server took too long to answer\n"},
		{"hint error", &hintError{err: errors.New("boxkite-server not found"), hint: "go install ./cmd/..."}, 1, "error: boxkite-server not found\nhint: go install ./cmd/...\n"},
		{"joined keeps the code", errors.Join(errors.New("a"), &notFoundError{err: errors.New("b")}), 3, "error: a\nb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr strings.Builder
			root := &cobra.Command{Use: "boxkite", RunE: func(*cobra.Command, []string) error { return tt.err }}
			root.SetErr(&stderr)
			if code := Execute(context.Background(), root, nil); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageErrorsFromCobra(t *testing.T) {
	isolate(t)
	tests := []struct {
		name string
		args []string
		want string // first line of stderr
	}{
		{"unknown flag", []string{"session", "ls", "--bogus"}, "error: unknown flag: --bogus"},
		{"unknown command", []string{"sesion"}, `error: unknown command "sesion" for "boxkite"`},
		{"unknown subcommand", []string{"session", "frobnicate"}, `error: unknown command "frobnicate" for "boxkite session"`},
		// The group parses the subcommand's flags; they are not the error.
		{"unknown subcommand with flags", []string{"files", "cat", "-s", "demo", "/x"}, `error: unknown command "cat" for "boxkite files"`},
		{"unknown subcommand with a long flag", []string{"session", "frobnicate", "--all"}, `error: unknown command "frobnicate" for "boxkite session"`},
		{"flag of a group", []string{"files", "-s", "demo"}, "error: unknown shorthand flag: 's' in -s"},
		{"extra argument", []string{"session", "ls", "x"}, `error: boxkite session ls takes no arguments (got "x")`},
		{"missing argument", []string{"session", "get"}, "error: boxkite session get takes 1 argument (got 0)"},
		{"too many arguments", []string{"preview", "1", "2"}, "error: boxkite preview takes at most 1 argument (got 2)"},
		{"arguments between", []string{"org", "invite"}, "error: boxkite org invite takes 1 or 2 arguments (got 0)"},
		{"bad duration", []string{"exec", "--timeout", "soon", "--", "true"}, `error: invalid argument "soon" for "--timeout" flag: invalid duration "soon" (use e.g. 30s, 5m, 2h)`},
		{"timeout too long", []string{"exec", "--timeout", "2h", "--", "true"}, "error: --timeout must be between 1s and 1h, got 2h"},
		{"bad env", []string{"exec", "-e", "1X=y", "--", "true"}, `error: invalid --env "1X=y"`},
		{"no command", []string{"exec"}, "error: boxkite exec takes at least 1 argument (got 0)"},
		{"bad size", []string{"session", "create", "--size", "huge"}, `error: unknown --size "huge" (want small, medium or large)`},
		{"bad output", []string{"session", "ls", "-o", "yaml"}, `error: unknown output format "yaml" (want text or json)`},
		{"rm needs ids", []string{"session", "rm"}, "error: give the sandboxes to remove, or --all"},
		{"bad shell", []string{"completion", "tcsh"}, `error: invalid argument "tcsh" for "boxkite completion"`},
		// A number flag's bad value in words, not strconv's Go.
		{"not a whole number", []string{"session", "create", "--count", "abc"}, `error: --count "abc" is not a whole number`},
		{"a fraction for a count", []string{"session", "ls", "-L", "1.5"}, `error: --limit "1.5" is not a whole number`},
		{"not a number", []string{"volumes", "create", "--size-gb", "big"}, `error: --size-gb "big" is not a number`},
		{"number out of range", []string{"up", "--port", "99999999999999999999"}, `error: --port "99999999999999999999" is out of range`},
		// As the other flags' values; from a file or the environment it is 1.
		{"bad --url", []string{"session", "ls", "--url", "notaurl"}, `error: invalid base_url "notaurl" (from flag --url): the scheme must be http or https`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != exitUsage {
				t.Errorf("boxkite %v: exit code %d, want %d (stderr %q)", tt.args, r.code, exitUsage, r.stderr)
			}
			first, _, _ := strings.Cut(r.stderr, "\n")
			if first != tt.want {
				t.Errorf("boxkite %v: stderr starts %q, want %q", tt.args, first, tt.want)
			}
			if !strings.Contains(r.stderr, "\nhint: ") {
				t.Errorf("boxkite %v: no hint in %q", tt.args, r.stderr)
			}
		})
	}
}

// TestFilesCatSuggestsView: 'files cat' (the name a newcomer tries first)
// suggests view, also with the flags meant for it; before, the group's
// flag parsing answered "unknown shorthand flag: 's' in -s".
func TestFilesCatSuggestsView(t *testing.T) {
	isolate(t)
	r := runCLI(t, "", "files", "cat", "-s", "demo", "/workspace/x")
	want := "error: unknown command \"cat\" for \"boxkite files\"\nhint: did you mean cp or view?\n"
	if r.code != exitUsage || r.stderr != want {
		t.Errorf("files cat: exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, want)
	}
}

// TestTimeoutHint: a command that ran out of time is told how to get more,
// a longer --timeout only while one is allowed.
func TestTimeoutHint(t *testing.T) {
	for _, tt := range []struct {
		timeout time.Duration
		want    string
	}{
		{30 * time.Second, "give it longer with --timeout (at most 1h), or run it in the background with -b (up to --max-runtime 4h) and follow it with 'boxkite logs -f'"},
		{59 * time.Minute, "give it longer with --timeout (at most 1h), or run it in the background with -b (up to --max-runtime 4h) and follow it with 'boxkite logs -f'"},
		{time.Hour, "1h is the longest --timeout; run it in the background with -b (up to --max-runtime 4h) and follow it with 'boxkite logs -f'"},
	} {
		if got := timeoutHint(tt.timeout); got != tt.want {
			t.Errorf("timeoutHint(%s) = %q, want %q", tt.timeout, got, tt.want)
		}
	}
}
