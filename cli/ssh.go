package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

// envBastion names the bastion's address when --bastion is not given.
const envBastion = "BOXKITE_BASTION"

// defaultBastionPort is where boxkite-bastion listens unless told otherwise.
const defaultBastionPort = "2222"

type sshOptions struct {
	ref      string
	bastion  string
	print    bool
	token    bool
	readOnly bool
	sshArgs  []string
}

func newSSHCmd(app *App) *cobra.Command {
	var o sshOptions
	cmd := &cobra.Command{
		Use:   "ssh [-s ID] [--bastion HOST[:PORT]] [--print] [--token] [-- COMMAND]",
		Short: "Open the sandbox's terminal over SSH through boxkite-bastion",
		Long: `Run (or, with --print, print) the ssh command that reaches the sandbox
through boxkite-bastion. When the account has an SSH key registered
(boxkite ssh-keys add) and ssh here would offer one of them (from its
identity files and the agent), ssh uses it; otherwise (no key registered,
or, when it runs ssh, only other machines' keys), or with --token, a
single-use takeover token valid 30 s is minted (admin keys only) and given
to ssh as the password. --print with a key registered prints the plain
command, for the key you name.
With a COMMAND, ssh runs it in the sandbox and exits with its status.

The bastion is --bastion, else $BOXKITE_BASTION, else the bastion in the
configuration (boxkite up records the local one), else the server's host on
port 2222. For the local bastion, ssh checks its host key against
$BOXKITE_HOME/known_hosts, which up writes.`,
		Example: "  boxkite ssh\n  boxkite ssh -s 3f2a -- 'ls /workspace'\n  boxkite ssh --print --token\n  boxkite ssh --ssh-arg=-i --ssh-arg=~/.ssh/work_ed25519",
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSSH(cmd.Context(), app, o, args)
		},
	}
	sandboxFlag(cmd, app, &o.ref)
	f := cmd.Flags()
	f.StringVar(&o.bastion, "bastion", "", "the bastion's `HOST[:PORT]` (env "+envBastion+")")
	f.BoolVar(&o.print, "print", false, "print the ssh command (and the token, when one is minted) instead of running it")
	f.BoolVar(&o.token, "token", false, "use a takeover token as the password even when a key is registered")
	f.BoolVar(&o.readOnly, "read-only", false, "with a token: watch without typing")
	f.StringArrayVar(&o.sshArgs, "ssh-arg", nil, "an argument for ssh, before the destination (repeatable), e.g. --ssh-arg=-v")
	return cmd
}

func runSSH(ctx context.Context, app *App, o sshOptions, command []string) error {
	c, sb, err := target(ctx, app, o.ref, false)
	if err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	host, port, err := bastionAddr(o.bastion, os.Getenv(envBastion), cfg.Bastion, cfg.BaseURL)
	if err != nil {
		return err
	}
	local := o.bastion == "" && os.Getenv(envBastion) == "" && cfg.Local && cfg.Bastion != ""
	if !o.print {
		if err := checkBastion(net.JoinHostPort(host, port), o.bastion == "" && os.Getenv(envBastion) == "" && cfg.localStack()); err != nil {
			return err
		}
	}
	args := append([]string{}, o.sshArgs...)
	if local {
		// up wrote the bastion's host key there: no prompt, and no entry
		// in the user's own known_hosts for a port that may change.
		args = append(args, "-o", "UserKnownHostsFile="+pathsFor(cfg.Home).knownHosts, "-o", "StrictHostKeyChecking=yes")
	}
	args = append(args, "-p", port)
	if len(command) == 0 {
		args = append(args, "-t")
	}
	args = append(args, sb.ID+"@"+host)
	if len(command) > 0 {
		args = append(args, commandString(command)) // as exec quotes it
	}
	useToken, noKeyOffered, err := chooseSSHAuth(ctx, c, o, args)
	if err != nil {
		return err
	}
	if noKeyOffered {
		fmt.Fprintln(app.IO.ErrOut, "note: ssh here offers none of the account's registered SSH keys; using a single-use takeover token instead")
	}
	token := ""
	if useToken {
		tok, err := c.TakeoverToken(ctx, sb.ID, o.readOnly)
		if err != nil && noKeyOffered {
			return &hintError{
				err:  fmt.Errorf("ssh here offers none of the account's registered SSH keys, and a takeover token could not be minted: %w", err),
				hint: "register this machine's key with 'boxkite ssh-keys add ~/.ssh/id_ed25519.pub', or name a registered key's private file with --ssh-arg=-i --ssh-arg=PATH",
			}
		}
		if err != nil {
			return fmt.Errorf("mint a takeover token: %w", err)
		}
		token = tok.Token
		args = append([]string{"-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no"}, args...)
	}
	if o.print {
		fmt.Fprintln(app.IO.Out, shellJoin(append([]string{"ssh"}, args...)))
		if token != "" {
			fmt.Fprintln(app.IO.Out, token)
			fmt.Fprintf(app.IO.ErrOut, "the password is the token on the second line: single use, valid for %s\n",
				compactDuration(api.TakeoverTokenTTL))
		}
		return nil
	}
	return execSSH(ctx, app, args, token)
}

// chooseSSHAuth tells whether ssh should log in with a takeover token:
// when asked (--token, --read-only), when the account has no SSH key, or,
// when it runs ssh (not --print), when ssh with args would offer none of
// the registered ones (a key registered from another machine);
// noKeyOffered reports the last case.
func chooseSSHAuth(ctx context.Context, c *client.Client, o sshOptions, args []string) (useToken, noKeyOffered bool, err error) {
	if o.token || o.readOnly {
		return true, false, nil
	}
	keys, err := c.SSHKeys(ctx)
	if err != nil {
		return false, false, fmt.Errorf("list ssh keys: %w", err)
	}
	if len(keys) == 0 {
		return true, false, nil
	}
	if o.print {
		// The command may be run elsewhere or with the user's own -i:
		// what this machine's ssh offers says nothing about it.
		return false, false, nil
	}
	bin, err := exec.LookPath("ssh")
	if err != nil {
		return false, false, nil // execSSH reports it
	}
	offered, known := offeredFingerprints(ctx, bin, args)
	if !known {
		return false, false, nil
	}
	for _, k := range keys {
		if offered[k.Fingerprint] {
			return false, false, nil
		}
	}
	return true, true, nil
}

// execSSH runs ssh on this terminal; a token is handed to it through
// SSH_ASKPASS, from a 0700 directory removed when ssh exits.
func execSSH(ctx context.Context, app *App, args []string, token string) error {
	bin, err := exec.LookPath("ssh")
	if err != nil {
		return &hintError{err: errors.New("ssh is not installed"), hint: "install OpenSSH's client, or print the command with --print"}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = app.IO.In, app.IO.Out, app.IO.ErrOut
	cmd.Env = os.Environ()
	if token != "" {
		dir, err := os.MkdirTemp("", "boxkite-ssh-")
		if err != nil {
			return fmt.Errorf("create askpass directory: %w", err)
		}
		defer os.RemoveAll(dir)
		askpass := filepath.Join(dir, "askpass")
		// The token is URL-safe base64 with dots: nothing the shell interprets.
		if err := os.WriteFile(askpass, []byte("#!/bin/sh\necho '"+token+"'\n"), 0o700); err != nil {
			return fmt.Errorf("write askpass: %w", err)
		}
		cmd.Env = append(cmd.Env, "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force")
	}
	err = cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return &exitStatus{code: ee.ExitCode()}
	}
	if err != nil {
		return fmt.Errorf("run ssh: %w", err)
	}
	return nil
}

// checkBastion makes sure something listens at addr before ssh is run, so
// a bastion that is not running is reported with what to do instead of
// ssh's bare "connection refused".
func checkBastion(addr string, local bool) error {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err == nil {
		conn.Close()
		return nil
	}
	hint := "check the address (--bastion, $" + envBastion + " or bastion in config.toml) and that boxkite-bastion runs there"
	if local {
		hint = "run 'boxkite up', which starts the local bastion; 'boxkite status' shows its address"
	}
	return &hintError{err: fmt.Errorf("boxkite-bastion is not reachable at %s: %w", addr, errors.Unwrap(err)), hint: hint}
}

// bastionAddr is the bastion's host and port: flag, else env, else the
// configured one, else the server URL's host on the default port.
func bastionAddr(flag, env, configured, baseURL string) (host, port string, err error) {
	addr := flag
	if addr == "" {
		addr = env
	}
	if addr == "" {
		addr = configured
	}
	if addr == "" {
		u, err := url.Parse(baseURL)
		if err != nil || u.Hostname() == "" {
			return "", "", usageErrorf("pass --bastion HOST[:PORT]", "cannot tell the bastion's host from the server URL %q", baseURL)
		}
		return u.Hostname(), defaultBastionPort, nil
	}
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		// No port, or a bare IPv6 address.
		host, port = strings.Trim(addr, "[]"), defaultBastionPort
	}
	if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, " @/") {
		return "", "", usageErrorf("use HOST or HOST:PORT, e.g. bastion.example.com:2222", "bad bastion address %q", addr)
	}
	return host, port, nil
}
