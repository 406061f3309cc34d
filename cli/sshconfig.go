package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// sshHostSuffix is the host-name suffix `boxkite ssh-config` routes:
// `ssh <sandbox>.boxkite`.
const sshHostSuffix = ".boxkite"

// sandboxPreamble names the sandbox ahead of the SSH version line; the
// bastion reads it (cmd/boxkite-bastion/preamble.go) because an ssh_config
// cannot turn the host name into the user name.
const sandboxPreamble = "BOXKITE-SANDBOX "

func newSSHConfigCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "ssh-config",
		Short: "Print an ssh_config stanza so that `ssh <sandbox>.boxkite` works",
		Long: `Print a Host stanza for ~/.ssh/config with which plain ssh, scp, sftp,
rsync -e ssh and editors' remote-SSH modes reach a sandbox as
<sandbox>.boxkite, where <sandbox> is an id, a unique id prefix or a label.
ssh runs 'boxkite ssh-proxy' to reach the bastion, which names the sandbox
to it, and checks the bastion's host key against $BOXKITE_HOME/known_hosts
(boxkite up writes it). Authentication is a key registered with 'boxkite
ssh-keys add', as for 'ssh <sandbox-id>@HOST'.`,
		Example: "  boxkite ssh-config >> ~/.ssh/config\n  ssh demo.boxkite\n  scp report.txt demo.boxkite:/workspace/",
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the boxkite binary: %w", err)
			}
			if real, err := filepath.EvalSymlinks(exe); err == nil {
				exe = real
			}
			fmt.Fprint(app.IO.Out, sshConfigStanza(exe, os.Getenv(envHome), pathsFor(cfg.Home).knownHosts))
			return nil
		},
	}
}

// sshConfigStanza is the Host block for *.boxkite. home is BOXKITE_HOME
// when set, carried into the proxy command so it finds the same config.
func sshConfigStanza(exe, home, knownHosts string) string {
	proxy := sshPercent(shellQuote(exe)) + " ssh-proxy %n"
	if home != "" {
		proxy = "env " + envHome + "=" + sshPercent(shellQuote(home)) + " " + proxy
	}
	knownHosts = sshPercent(knownHosts)
	if strings.ContainsAny(knownHosts, " \t") {
		// ssh_config splits arguments at whitespace: a home with a space
		// would name two files and fail the host key check.
		knownHosts = `"` + knownHosts + `"`
	}
	return fmt.Sprintf(`# boxkite: ssh <sandbox>%[1]s reaches a sandbox through boxkite-bastion
Host *%[1]s
    ProxyCommand %[2]s
    HostKeyAlias %[3]s
    UserKnownHostsFile %[4]s
    StrictHostKeyChecking yes
`, sshHostSuffix, proxy, bastionHostKeyAlias, knownHosts)
}

// sshPercent escapes ssh_config's % tokens (%n, %h, …) in a literal.
func sshPercent(s string) string { return strings.ReplaceAll(s, "%", "%%") }

func newSSHProxyCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "ssh-proxy HOST",
		Short: "Connect stdin and stdout to the bastion for ssh's ProxyCommand",
		Long: `Used by the stanza 'boxkite ssh-config' prints, as ssh's ProxyCommand:
HOST is <sandbox>.boxkite; the sandbox reference is resolved, named to the
bastion ahead of the SSH handshake, and stdin and stdout are connected to it.`,
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				// ProxyCommand's shell split %n: a label with a space,
				// from an ssh that does not refuse it as a host name.
				return usageErrorf("a label with a space cannot be an ssh host name: use `boxkite ssh -s 'LABEL'`, or the sandbox's id (`boxkite session ls`) as ID"+sshHostSuffix,
					"%q is not one host name", strings.Join(args, " "))
			}
			return runSSHProxy(cmd.Context(), app, args[0])
		},
	}
}

func runSSHProxy(ctx context.Context, app *App, host string) error {
	ref := strings.TrimSuffix(host, sshHostSuffix)
	if ref == "" || ref == host {
		return usageErrorf("use ssh <sandbox>"+sshHostSuffix, "%q does not end in %s", host, sshHostSuffix)
	}
	_, sb, err := target(ctx, app, ref, false)
	if err != nil {
		return err
	}
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	bhost, port, err := bastionAddr("", os.Getenv(envBastion), cfg.Bastion, cfg.BaseURL)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(bhost, port)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return checkBastion(addr, os.Getenv(envBastion) == "" && cfg.localStack())
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, sandboxPreamble+sb.ID+"\r\n"); err != nil {
		return fmt.Errorf("write to the bastion: %w", err)
	}
	return splice(conn.(*net.TCPConn), app.IO.In, app.IO.Out)
}

// splice copies in to conn and conn to out until the bastion closes,
// passing ssh's end of input on as a half-close.
func splice(conn *net.TCPConn, in io.Reader, out io.Writer) error {
	go func() {
		_, _ = io.Copy(conn, in)
		_ = conn.CloseWrite()
	}()
	_, err := io.Copy(out, conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("read from the bastion: %w", err)
	}
	// ssh closes our stdin once it has read everything; don't wait for
	// the copy of a stdin nobody will close.
	return nil
}
